#!/usr/bin/env bash
# Installs the strong peers of `qcoll bench` on demand (never in CI): Intel oneCCL for CPUs
# from PyPI, and the plugins through which `qcoll bench` loads the peers at run time
# (tools/peer_plugin.h): bench/peers/ccl_peer.cpp against oneCCL's headers, and, when torch
# is importable by $PYTHON, bench/peers/gloo_peer.cpp against torch's (torch itself is not
# installed here: the PyPI wheel brings the whole CUDA stack). qcoll neither needs nor links
# either; without this script `qcoll bench` reports their peers as unavailable.
#
#   bench/install_peers.sh              # into $QCOLL_PEERS_DIR (default ~/.local/qcoll-peers)
#   QCOLL_PEERS_DIR=/opt/peers bench/install_peers.sh
#
# `qcoll bench` finds the plugins at $QCOLL_PEERS_DIR/lib/libqcoll_{ccl,gloo}_peer.so (or
# wherever QCOLL_CCL_PEER / QCOLL_GLOO_PEER point). What makes oneCCL's PyPI wheels run here:
#   - libccl.so.1.0 needs "libccl.so.2" (its own file under another name): a link is made;
#   - it needs libintlc.so.5 without listing it: taken from intel-cmplr-lib-rt and linked
#     into the plugin;
#   - its OFI transport needs libfabric (Debian's libfabric1; installed with apt-get if
#     missing and this runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${QCOLL_PEERS_DIR:-$HOME/.local/qcoll-peers}
CCL_VERSION=${CCL_VERSION:-2022.2.0}
CXX=${CXX:-g++}
PYTHON=${PYTHON:-python3}

mkdir -p "$PREFIX/wheels" "$PREFIX/lib" "$PREFIX/include"
echo "install_peers: oneCCL $CCL_VERSION (CPU) into $PREFIX"
"$PYTHON" -m pip download --quiet --no-deps --dest "$PREFIX/wheels" \
  "oneccl-cpu==$CCL_VERSION" "oneccl-cpu-devel==$CCL_VERSION" intel-cmplr-lib-rt

# A wheel's data files (lib/, include/) lie under <name>.data/data/: unpack those alone.
"$PYTHON" - "$PREFIX" "$CCL_VERSION" <<'PY'
import glob, os, shutil, sys, zipfile
prefix, version = sys.argv[1], sys.argv[2]
wanted = [f"oneccl_cpu-{version}-", f"oneccl_cpu_devel-{version}-", "intel_cmplr_lib_rt-"]
for stem in wanted:
    wheels = sorted(glob.glob(os.path.join(prefix, "wheels", stem + "*.whl")))
    if not wheels:
        sys.exit(f"install_peers: no wheel {stem}* downloaded")
    with zipfile.ZipFile(wheels[-1]) as z:
        for info in z.infolist():
            parts = info.filename.split("/")
            if len(parts) < 4 or not parts[0].endswith(".data") or parts[1] != "data" or info.is_dir():
                continue
            if parts[2] not in ("lib", "include"):
                continue
            dest = os.path.join(prefix, *parts[2:])
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with z.open(info) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out)
            os.chmod(dest, 0o755 if parts[2] == "lib" else 0o644)
PY
ln -sf libccl.so.1.0 "$PREFIX/lib/libccl.so.2"

if ! ldconfig -p | grep -q 'libfabric\.so\.1 '; then
  if [ "$(id -u)" = 0 ]; then
    echo "install_peers: installing libfabric1 (Debian)"
    apt-get install -y -q libfabric1 >/dev/null
  else
    echo "install_peers: libfabric.so.1 not found; install Debian's libfabric1" >&2
    exit 1
  fi
fi

echo "install_peers: building $PREFIX/lib/libqcoll_ccl_peer.so"
"$CXX" -std=c++17 -O2 -fPIC -shared -Wall -Wextra -Wno-deprecated-declarations \
  -I"$PREFIX/include" -Itools -Ibench/peers bench/peers/ccl_peer.cpp -o "$PREFIX/lib/libqcoll_ccl_peer.so" \
  -L"$PREFIX/lib" -Wl,--no-as-needed -l:libccl.so.1.0 -l:libintlc.so.5 -Wl,-rpath,'$ORIGIN'
peers="oneccl-fp32, oneccl-bf16"
if torch_flags=$("$PYTHON" - <<'PY' 2>/dev/null
import os, torch
from torch.utils import cpp_extension
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
inc = " ".join("-I" + p for p in cpp_extension.include_paths())
print(f"{inc} -D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)} -L{lib} -Wl,-rpath,{lib}")
PY
); then
  echo "install_peers: torch found; building $PREFIX/lib/libqcoll_gloo_peer.so (a minute or two)"
  read -r -a torch_args <<< "$torch_flags"
  "$CXX" -std=c++20 -O2 -fPIC -shared -Wall -Wextra -Wno-unused-parameter -DUSE_C10D_GLOO -Itools -Ibench/peers \
    bench/peers/gloo_peer.cpp -o "$PREFIX/lib/libqcoll_gloo_peer.so" "${torch_args[@]}" \
    -Wl,--no-as-needed -ltorch_cpu -lc10
  peers="$peers, gloo-fp32, gloo-bf16"
else
  echo "install_peers: torch is not importable by $PYTHON: no gloo peer"
fi
echo "install_peers: done. qcoll bench under mpirun now also times $peers (plugins in $PREFIX/lib)"
