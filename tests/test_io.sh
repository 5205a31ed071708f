#!/usr/bin/env bash
# safetensors against an independent Python implementation (tests/safetensors_ref.py, with
# PyTorch) in both directions, and `ctorch inspect` on plain files, checkpoints and every
# damaged file of tests/fuzz/damaged. Usage: tests/test_io.sh BUILD_DIR (from the repo root).
set -u
B=${1:-build}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# 1. the reference writer's files are reproducible and equal the committed fixtures
if $PY tests/safetensors_ref.py write "$tmp/ref" >/dev/null; then
  for f in tests/fixtures/safetensors/*.safetensors; do
    cmp -s "$f" "$tmp/ref/$(basename "$f")" && ok || bad "fixture $f differs from safetensors_ref.py's output"
  done
else bad "safetensors_ref.py write"; fi

# 2. ctorch writes files; the Python reader checks them (and torch takes the RNG bytes)
mkdir -p "$tmp/c"
if CT_ST_OUT="$tmp/c" "$B/test_ctorch" io_writes_for_python >"$tmp/log" 2>&1 && $PY tests/safetensors_ref.py check "$tmp/c" >>"$tmp/log" 2>&1
then ok; else bad "ctorch-written files rejected by the Python reader:"; cat "$tmp/log" >&2; fi

# 3. ctorch inspect: plain file, checkpoint, usage
out=$("$B/ctorch" inspect tests/fixtures/safetensors/all_dtypes.safetensors 2>&1); rc=$?
expect() { case "$out" in *"$1"*) ok ;; *) bad "inspect output lacks '$1':"; echo "$out" >&2 ;; esac; }
[ $rc = 0 ] && ok || bad "inspect all_dtypes: exit $rc"
expect "format: safetensors"
expect "format = pt"
expect "w.bf16   BF16    [5]                                10"
expect "empty    F32     [0, 3]                              0"
expect "scalar   F64     []                                  8"
expect "total: 13 tensors, 40 elements, 133 bytes"
out=$("$B/ctorch" inspect "$tmp/c/c_checkpoint.safetensors" 2>&1); rc=$?
[ $rc = 0 ] && ok || bad "inspect checkpoint: exit $rc"
expect "format: ctorch checkpoint (version 1, step 3)"
expect "rng.cpu"
expect "model.fc.weight"
expect "rng.   1 tensors, 5056 bytes"
mkdir -p "$tmp/ckdir" && cp "$tmp/c/c_checkpoint.safetensors" "$tmp/ckdir/checkpoint.safetensors"
out=$("$B/ctorch" inspect "$tmp/ckdir" 2>&1); rc=$?   # a checkpoint directory
[ $rc = 0 ] && ok || bad "inspect checkpoint directory: exit $rc"
expect "format: ctorch checkpoint (version 1, step 3)"
"$B/ctorch" inspect >/dev/null 2>&1; [ $? = 2 ] && ok || bad "inspect without FILE should exit 2"
out=$("$B/ctorch" inspect "$tmp/none.safetensors" 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] && ok || bad "inspect of a missing file: exit $rc"
expect "cannot open"

# 4. every damaged file: exit 1, nothing on stdout, the expected reason on stderr
while IFS=$'\t' read -r file want; do
  case "$file" in '#'*|'') continue ;; esac
  stdout=$("$B/ctorch" inspect "tests/fuzz/damaged/$file" 2>"$tmp/err"); rc=$?
  err=$(cat "$tmp/err")
  if [ $rc != 1 ] || [ -n "$stdout" ]; then bad "inspect $file: exit $rc, stdout '$stdout'"
  else case "$err" in *"ctorch inspect: invalid safetensors file"*"$want"*) ok ;; *) bad "inspect $file: '$err' lacks '$want'" ;; esac; fi
done < tests/fuzz/damaged/MANIFEST

echo "test_io.sh: $pass passed, $fail failed"
[ $fail = 0 ]
