#!/usr/bin/env bash
# Runs PROGRAM under mpirun (4 ranks, or QCOLL_TEST_NP) in a private mount namespace whose
# /dev/shm is a 64 MB tmpfs, as in a container with the default /dev/shm. Exit 77 (skipped) where mount
# namespaces cannot be made (needs root / CAP_SYS_ADMIN).
# Usage: small_devshm.sh MPIRUN PROGRAM [ARGS...]
set -uo pipefail
MPIRUN=$1; shift
if ! unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm' 2>/dev/null; then
  echo "small_devshm: SKIPPED: cannot make a mount namespace with its own /dev/shm here"
  exit 77
fi
exec unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"' sh \
  "$MPIRUN" --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -np "${QCOLL_TEST_NP:-4}" "$@"
