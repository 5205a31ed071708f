#!/usr/bin/env bash
# `pip install .` offline (issue 4): installs ctorch from a copy of this tree into a temporary target with
# Debian's python3/pip/setuptools, no network and no build isolation, then runs a small program with the
# installed copy and with PyTorch and compares what they print.
# CTORCH_OPT (default -O0 here: this checks the packaging, not the speed) is passed to setup.py.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/tree"
# a copy, so the build directories setuptools makes never meet another build of the working tree
cp -r "$ROOT/setup.py" "$ROOT/python" "$ROOT/src" "$ROOT/include" "$TMP/tree/"
find "$TMP/tree/python" -name '__pycache__' -prune -exec rm -rf {} +
start=$(date +%s)
(cd "$TMP/tree" && CTORCH_OPT="${CTORCH_OPT:--O0}" PIP_ROOT_USER_ACTION=ignore /usr/bin/python3 -m pip install . \
   --no-deps --no-build-isolation --no-index --disable-pip-version-check --target "$TMP/site" -q)
echo "pip install: $(( $(date +%s) - start )) s"
cat > "$TMP/prog.py" <<'PY'
import sys
import importlib
name = sys.argv[1]
torch = importlib.import_module(name)
if name == "ctorch":
    # the installed copy, not a build tree
    assert torch.__file__.startswith(sys.argv[2]), torch.__file__
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
for step in range(5):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(step, "%.5f" % loss.item())
print(torch.arange(6).reshape(2, 3).sum(1), model[0].weight.grad.shape)
PY
cd "$TMP"
PYTHONPATH="$TMP/site" /usr/bin/python3 prog.py ctorch "$TMP/site" > ctorch.out
/usr/bin/python3 prog.py torch > torch.out
if diff torch.out ctorch.out; then
  echo "pip install check: installed ctorch prints what PyTorch prints ($(wc -l < ctorch.out) lines)"
else
  echo "pip install check FAILED: outputs differ" >&2
  exit 1
fi
