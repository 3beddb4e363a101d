#!/bin/sh
# Fails if a qcoll shared-memory segment is left in /dev/shm. A segment exists for a moment
# while a communicator is made (another program on this machine may be making one right now),
# so only a name that is still there 3 seconds later counts as left over.
first=$(ls /dev/shm | grep '^qcoll-')
[ -n "$first" ] && sleep 3
left=""
for name in $first; do
  [ -e "/dev/shm/$name" ] && left="$left $name"
done
if [ -n "$left" ]; then
  echo "FAIL: qcoll segments left in /dev/shm:$left"
  exit 1
fi
echo "PASS: no qcoll segment left in /dev/shm"
