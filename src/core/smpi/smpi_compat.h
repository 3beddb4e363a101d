/* Included into every compile of the SMPI build (cmake/smpi.cmake), after SimGrid's
 * smpi_helpers.h, which smpicc / smpicxx include first. That header turns sleep, usleep,
 * nanosleep, gettimeofday and clock_gettime into their simulated versions (kept: a rank
 * that naps in a wait loop (comm/backoff.hpp) naps in simulated time), and also exit(x)
 * into smpi_exit(x): a function-like macro that breaks every member named exit (CLI11's
 * App::exit). qcoll calls no exit(); the program's ranks return from main. */
#undef exit
