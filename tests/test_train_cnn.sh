#!/usr/bin/env bash
# `ctorch train-cnn`: argument and data errors, a quick run whose outputs are checked (the
# checkpoint opens with `ctorch inspect` and loads into PyTorch), and, when ../shared/data/mnist
# is there, a run stopped after one epoch and resumed ends in the same bytes as an uninterrupted one,
# the default recipe must reach >= 97.5% on its 2,000 held-out images; with --compare
# the same recipe in PyTorch (bench/train_cnn_ref.py) must land within 0.5 points of it.
# Usage: tests/test_train_cnn.sh BUILD_DIR [--quick] [--compare]   (from the repo root)
set -u
B=${1:-build}
shift || true
QUICK=0 COMPARE=0
for a in "$@"; do
  case "$a" in --quick) QUICK=1 ;; --compare) COMPARE=1 ;; esac
done
PY=/usr/bin/python3
MNIST=../shared/data/mnist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
# runs the command, expects exit status $1 and output containing $2
expect_run() {
  local want_rc=$1 want=$2
  shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want_rc" ]; then bad "$* exited $rc (wanted $want_rc): $out"; return; fi
  case "$out" in *"$want"*) ok ;; *) bad "$*: output lacks '$want': $out" ;; esac
}

C="$B/ctorch"
# 1. usage and data errors: a clear message and a non-zero exit
expect_run 2 "--data DIR is required" "$C" train-cnn
expect_run 2 "unknown option '--bogus'" "$C" train-cnn --data . --bogus 1
expect_run 2 "--epochs expects an integer" "$C" train-cnn --data . --epochs 0
expect_run 0 "usage: ctorch train-cnn" "$C" train-cnn --help
expect_run 1 "invalid device string 'gpu'" "$C" train-cnn --data . --device gpu --out "$tmp/od"
# --device cuda where there is no GPU (or no CUDA build): a clear error, no crash
if ! command -v nvidia-smi >/dev/null 2>&1; then
  expect_run 1 "ctorch train-cnn: --device cuda: " "$C" train-cnn --data . --device cuda --out "$tmp/od"
fi
mkdir -p "$tmp/empty"
expect_run 1 "no MNIST IDX pair in $tmp/empty" "$C" train-cnn --data "$tmp/empty" --out "$tmp/o0"
mkdir -p "$tmp/damaged"
cp tests/fuzz/damaged_idx/gz_bad_crc.gz "$tmp/damaged/t10k-images-idx3-ubyte.gz"
cp tests/fuzz/seeds/idx/labels_u8.idx "$tmp/damaged/t10k-labels-idx1-ubyte"
expect_run 1 "CRC-32 mismatch" "$C" train-cnn --data "$tmp/damaged" --out "$tmp/o1"
cp tests/fuzz/seeds/idx/images_u8.idx "$tmp/damaged/t10k-images-idx3-ubyte.gz"
expect_run 1 "has 3 images but" "$C" train-cnn --data "$tmp/damaged" --out "$tmp/o1"
# a label outside the model's 10 classes is refused at load (the --cuda-graph loss cannot check it later)
mkdir -p "$tmp/badlabel"
cp tests/fuzz/seeds/idx/images_u8.idx "$tmp/badlabel/t10k-images-idx3-ubyte"
printf '\000\000\010\001\000\000\000\003\005\014\001' > "$tmp/badlabel/t10k-labels-idx1-ubyte"
expect_run 1 "is 12; the model has 10 classes (0 to 9)" "$C" train-cnn --data "$tmp/badlabel" --train-size 2 --eval-size 1 \
  --out "$tmp/o1"

if [ ! -f "$MNIST/t10k-images-idx3-ubyte.gz" ]; then
  echo "test_train_cnn: $MNIST not present; the training runs are skipped"
  echo "test_train_cnn: $pass passed, $fail failed"
  [ $fail = 0 ]
  exit
fi
expect_run 1 "fewer than --train-size 9000 + --eval-size 2000" "$C" train-cnn --data "$MNIST" --train-size 9000 --out "$tmp/o2"

# 2. a quick run: outputs exist, the checkpoint is a ctorch checkpoint, the weights load in PyTorch
expect_run 0 "accuracy" "$C" train-cnn --data "$MNIST" --train-size 640 --eval-size 500 --epochs 2 --conv1 4 --conv2 8 \
  --hidden 16 --out "$tmp/quick" --quiet
case "$out" in *"epoch 2/2  loss "*"accuracy "*"%"*) ok ;; *) bad "per-epoch line missing: $out" ;; esac
out_quick=$out
for f in training.svg checkpoint.safetensors model.safetensors log.json; do
  [ -s "$tmp/quick/$f" ] && ok || bad "quick run did not write $f"
done
grep -q "<svg" "$tmp/quick/training.svg" && grep -q "held-out accuracy" "$tmp/quick/training.svg" && ok || bad "training.svg"
expect_run 0 "ctorch checkpoint (version 1, step 20)" "$C" inspect "$tmp/quick/checkpoint.safetensors"
case "$out" in *"model.fc2.weight"*"F32"*) ok ;; *) bad "inspect lacks model.fc2.weight: $out" ;; esac
if $PY - "$tmp/quick/model.safetensors" <<'EOF'
import json, struct, sys
import torch
sys.path.insert(0, "bench")
from train_cnn_ref import CNN
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
sd = {}
for k, v in hdr.items():
    if k == "__metadata__":
        continue
    b, e = v["data_offsets"]
    sd[k] = torch.frombuffer(bytearray(raw[8 + n + b:8 + n + e]), dtype=torch.float32).reshape(v["shape"])
m = CNN(4, 8, 16)
m.load_state_dict(sd)  # strict: the same names and shapes as the PyTorch model
EOF
then ok; else bad "model.safetensors does not load into the PyTorch CNN"; fi

# 2b. --resume: the same 2 epochs as one epoch, a stop, and a resumed second epoch must end in the
# same bytes (model, optimizer, scheduler and shuffle-generator state) and print the same epoch line
Q="--data $MNIST --train-size 640 --eval-size 500 --epochs 2 --conv1 4 --conv2 8 --hidden 16 --quiet"
straight_ep2=$(echo "$out_quick" | sed -n 's/^\(epoch 2\/2  loss [0-9.]*  accuracy [0-9.]*%\).*/\1/p')
expect_run 0 "stopped after epoch 1 of 2" "$C" train-cnn $Q --out "$tmp/split" --stop-after-epoch 1
[ -s "$tmp/split/checkpoint.safetensors" ] && ok || bad "--stop-after-epoch 1 wrote no checkpoint"
case "$out" in *"epoch 2/2"*) bad "--stop-after-epoch 1 ran epoch 2: $out" ;; *) ok ;; esac
expect_run 0 "resuming after epoch 1 (step 10)" "$C" train-cnn --resume "$tmp/split" --quiet
resumed_ep2=$(echo "$out" | sed -n 's/^\(epoch 2\/2  loss [0-9.]*  accuracy [0-9.]*%\).*/\1/p')
[ -n "$straight_ep2" ] && [ "$straight_ep2" = "$resumed_ep2" ] && ok \
  || bad "resumed epoch 2 '$resumed_ep2' differs from the uninterrupted '$straight_ep2'"
for f in checkpoint.safetensors model.safetensors training.svg; do
  cmp -s "$tmp/quick/$f" "$tmp/split/$f" && ok || bad "resumed run's $f differs from the uninterrupted run's"
done
# the resumed run keeps the saved recipe, refuses a missing or damaged checkpoint
expect_run 2 "whose lr is 0.002; it cannot be changed" "$C" train-cnn --resume "$tmp/split" --lr 0.01 --quiet
expect_run 1 "cannot resume from $tmp/nowhere" "$C" train-cnn --resume "$tmp/nowhere" --quiet
mkdir -p "$tmp/damaged_ckpt"
head -c 200 "$tmp/split/checkpoint.safetensors" > "$tmp/damaged_ckpt/checkpoint.safetensors"
expect_run 1 "cannot resume from $tmp/damaged_ckpt" "$C" train-cnn --resume "$tmp/damaged_ckpt" --data "$MNIST" --quiet

# 3. the default recipe on the 10k set: >= 97.5% on the last 2,000 images
if [ $QUICK = 0 ]; then
  t0=$(date +%s)
  expect_run 0 "final accuracy" "$C" train-cnn --data "$MNIST" --out "$tmp/full" --quiet
  t1=$(date +%s)
  echo "$out" | sed 's/^/  /'
  acc=$(echo "$out" | sed -n 's/^final accuracy \([0-9.]*\)%.*/\1/p')
  if [ -n "$acc" ] && awk -v a="$acc" 'BEGIN { exit !(a >= 97.5) }'; then ok; else bad "accuracy '$acc' below 97.5%"; fi
  echo "  ctorch: $acc% in $((t1 - t0)) s"
  if [ $COMPARE = 1 ]; then
    t0=$(date +%s)
    threads=$("$C" info | sed -n 's/^threads: //p') # the same thread count as ctorch's run
    ref=$($PY bench/train_cnn_ref.py --data "$MNIST" --threads "${threads:-$(nproc)}" 2>&1)
    t1=$(date +%s)
    echo "$ref" | sed 's/^/  /'
    racc=$(echo "$ref" | sed -n 's/^final accuracy \([0-9.]*\)%.*/\1/p')
    if [ -n "$racc" ] && awk -v a="$acc" -v b="$racc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.5) }'; then ok
    else bad "ctorch $acc% vs PyTorch '$racc%': more than 0.5 points apart"; fi
    echo "  PyTorch: $racc% in $((t1 - t0)) s"
  fi
fi
echo "test_train_cnn: $pass passed, $fail failed"
[ $fail = 0 ]
