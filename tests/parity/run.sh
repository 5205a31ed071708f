#!/bin/sh
# Parity against PyTorch 1.13: tests/parity/run.sh BUILD [case-name-substring]
# Builds BUILD/test_parity through make (unless CT_PARITY_NO_MAKE=1, as `make sanitize`
# sets after building it with its own flags), writes the fixtures with /usr/bin/python3
# (Debian's python3-torch; a missing torch is a failure, never a skip) into BUILD/parity/,
# then runs BUILD/test_parity on them. Exit status non-zero on any failure.
set -u
BUILD=${1:?usage: tests/parity/run.sh BUILD [case-name-substring]}
FILTER=${2:-}
cd "$(dirname "$0")/../.." || exit 1
if [ -z "${CT_PARITY_NO_MAKE:-}" ]; then
  make -s --no-print-directory BUILD="$BUILD" "$BUILD/test_parity" || { echo "parity: FAILED to build $BUILD/test_parity" >&2; exit 1; }
fi
if [ ! -x "$BUILD/test_parity" ]; then
  echo "parity: FAILED: $BUILD/test_parity does not exist" >&2
  exit 1
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "parity: FAILED: /usr/bin/python3 cannot import torch (make deps installs python3-torch)" >&2
  exit 1
fi
mkdir -p "$BUILD/parity" || exit 1
rm -f "$BUILD/parity/fixtures.bin"
/usr/bin/python3 tests/parity/gen_fixtures.py "$BUILD/parity" ${FILTER:+"$FILTER"}
gen=$?
if [ ! -f "$BUILD/parity/fixtures.bin" ]; then
  echo "parity: FAILED: the fixture generator wrote nothing (exit $gen)" >&2
  exit 1
fi
"$BUILD/test_parity" -f "$BUILD/parity/fixtures.bin" ${FILTER:+"$FILTER"}
rc=$?
[ $rc -eq 0 ] && [ $gen -eq 0 ] && exit 0
exit 1
