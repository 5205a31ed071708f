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


def mnist_subset(dest, n=600):
    """The first n test images of MNIST as IDX files in dest, for datasets.py. From the shared copy
    (../shared/data/mnist) when there is one; else a synthetic set in the same format, so the
    program still runs the whole Dataset/DataLoader path in a clean clone."""
    import gzip
    import struct
    src = os.path.join(os.path.dirname(os.path.dirname(HERE)), "..", "shared", "data", "mnist")
    img_path, lbl_path = (os.path.join(src, "t10k-%s-idx%d-ubyte.gz" % k) for k in (("images", 3), ("labels", 1)))
    if os.path.exists(img_path) and os.path.exists(lbl_path):
        images = gzip.open(img_path).read()[16:16 + n * 784]
        labels = gzip.open(lbl_path).read()[8:8 + n]
        origin = src
    else:
        import numpy as np
        rng = np.random.default_rng(0)
        labels = rng.integers(0, 10, n).astype(np.uint8)
        pics = rng.integers(0, 256, (n, 28, 28)).astype(np.uint8)
        pics[:, :, :6] = 0  # some empty border, like digits
        images, labels = pics.tobytes(), labels.tobytes()
        origin = "synthetic"
    os.makedirs(dest, exist_ok=True)
    with gzip.open(os.path.join(dest, "t10k-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">HBBIII", 0, 8, 3, n, 28, 28) + images)
    with gzip.open(os.path.join(dest, "t10k-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">HBBI", 0, 8, 1, n) + labels)
    return origin


@pytest.fixture(scope="module")
def mnist_dir(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("mnist"))
    print("MNIST subset for datasets.py from", mnist_subset(d))
    return d


def run(src, env_path, mnist_dir=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = env_path
    if mnist_dir:
        env["MNIST_DIR"] = mnist_dir
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env, cwd=PROGRAMS,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


# autograd.py prints loss.grad_fn.name(): the C library composes binary_cross_entropy_with_logits,
# so its node is MeanBackward0 instead of BinaryCrossEntropyWithLogitsBackward0.
KNOWN = set()


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(PROGRAMS) if f.endswith(".py")))
def test_program(name, mnist_dir):
    if name in KNOWN:
        pytest.xfail("grad_fn name of a composed loss differs in the C library")
    import ctorch
    ct_path = os.path.dirname(os.path.dirname(ctorch.__file__))
    src = open(os.path.join(PROGRAMS, name)).read()
    rc_t, out_t, err_t = run(src, os.environ.get("PYTHONPATH", ""), mnist_dir)
    assert rc_t == 0, "torch failed:\n" + err_t
    rc_c, out_c, err_c = run(SHIM + src, ct_path + os.pathsep + os.environ.get("PYTHONPATH", ""), mnist_dir)
    assert rc_c == 0, "ctorch failed:\n" + err_c
    if out_c != out_t:
        lc, lt = out_c.splitlines(), out_t.splitlines()
        for i, (a, b) in enumerate(zip(lc, lt)):
            if a != b:
                pytest.fail("first difference at line %d:\n ctorch: %r\n torch:  %r" % (i + 1, a, b))
        pytest.fail("outputs differ in length: %d vs %d lines" % (len(lc), len(lt)))
