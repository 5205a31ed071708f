#!/bin/sh
# The Python CUDA tests (tests/python/test_cuda_device.py, test_cuda_graph.py) on a GPU machine whose Python is
# not the development machine's (the H200 image: Python 3.12): the extension is compiled there against that
# Python's headers and BUILD's libctorch.so (a CUDA build: cudart is linked into it), then both tests run.
#   tests/cross_backend/python_cuda.sh BUILD        PYTHON (default python3), logs in $OUT (default /tmp/python_cuda)
set -u
B=${1:?usage: tests/cross_backend/python_cuda.sh BUILD}
PY=${PYTHON:-python3}
O=${OUT:-/tmp/python_cuda}
cd "$(dirname "$0")/../.." || exit 1
D=$O/python-ext
rm -rf "$D"
mkdir -p "$D"
cp -r python/ctorch "$D/" && rm -rf "$D/ctorch/_C" # the C sources; the module is _C<suffix> beside them
INC=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
SUF=$($PY -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
LIB=$(cd "$B" && pwd)
cc -O2 -std=c11 -D_GNU_SOURCE -fPIC -shared -Iinclude -Isrc -I"$INC" -o "$D/ctorch/_C$SUF" python/ctorch/_C/*.c \
  -L"$LIB" -lctorch -Wl,-rpath,"$LIB" -lm -lpthread || exit 1
rc=0
for t in test_cuda_device test_cuda_graph; do
  PYTHONPATH=$D PYTHONUNBUFFERED=1 $PY "tests/python/$t.py" >"$O/$t.log" 2>&1
  e=$?
  echo "$t exit $e: $(tail -1 "$O/$t.log")"
  [ $e = 0 ] || { tail -25 "$O/$t.log"; rc=1; }
done
exit $rc
