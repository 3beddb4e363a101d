#!/bin/sh
# Fails if a qcoll shared-memory segment of this test run is left in /dev/shm. The run's
# segments carry its QCOLL_SHM_TAG (set by tests/CMakeLists.txt for every test), so other
# programs' segments do not count. A segment exists for a moment while a communicator is made
# (a test running beside this one may be making one right now), so only a name that is still
# there 3 seconds later counts as left over.
prefix="qcoll-${QCOLL_SHM_TAG:+$QCOLL_SHM_TAG-}"
first=$(ls /dev/shm | grep "^$prefix")
[ -n "$first" ] && sleep 3
left=""
for name in $first; do
  [ -e "/dev/shm/$name" ] && left="$left $name"
done
if [ -n "$left" ]; then
  echo "FAIL: qcoll segments left in /dev/shm:$left"
  exit 1
fi
echo "PASS: no $prefix* segment left in /dev/shm"
