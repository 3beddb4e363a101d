/* The two departures of SimGrid's SMPI (3.32) from the MPI standard behind the hosts-schedule
   hang (docs/scale.md): MPI_Testall completes (and nulls) requests while it returns flag = 0,
   and MPI_Test on MPI_REQUEST_NULL with MPI_STATUS_IGNORE leaves the flag unset (the
   standard: flag = true). Not part of ctest; by hand:

     smpicc tests/smpi/smpi_null_request.c -o null_request
     printf 'host-0:1\nhost-1:1\n' > hosts
     smpirun -np 2 -platform bench/platforms/cluster_100g.xml -hostfile hosts ./null_request

   SMPI 3.32 prints "flag 0, first request MPI_REQUEST_NULL (completed) after 1 polls" and
   "flag -1"; Open MPI (mpicc, mpirun -np 2) "still active after 1000 polls" and "flag 1". */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, a = 0, b = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    MPI_Send(&a, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);  // the second message only after rank 1 looked
    MPI_Send(&b, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
  } else {
    MPI_Request r[2];
    MPI_Irecv(&a, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(&b, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &r[1]);
    int all = 0, polls = 0;
    for (; polls < 1000 && r[0] != MPI_REQUEST_NULL; ++polls) MPI_Testall(2, r, &all, MPI_STATUSES_IGNORE);
    printf("MPI_Testall: flag %d, first request %s after %d polls\n", all,
           r[0] == MPI_REQUEST_NULL ? "MPI_REQUEST_NULL (completed)" : "still active", polls);
    MPI_Request null_request = MPI_REQUEST_NULL;
    int flag = -1;
    MPI_Test(&null_request, &flag, MPI_STATUS_IGNORE);
    printf("MPI_Test(MPI_REQUEST_NULL, MPI_STATUS_IGNORE): flag %d (the standard: 1)\n", flag);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Wait(&r[1], MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
