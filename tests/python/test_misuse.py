"""Misuse never crashes the interpreter: wrong types, None, huge sizes, negative dims raise exceptions."""
import os
import subprocess
import sys

SCRIPT = r'''
import random, ctorch
random.seed(0)
BAD = [None, "x", -1, -10**20, 10**20, 2**62, 1.5, float("nan"), [], [[1], [2, 3]], (None,), object(), {}, True,
       ctorch.zeros(0), ctorch.ones(2, 3), ctorch.tensor(1), ctorch.ones(2, dtype=ctorch.int64),
       ctorch.ones(3, dtype=ctorch.bool), ctorch.dtype if hasattr(ctorch, "dtype") else None, ctorch.float64]
names = [n for n in dir(ctorch._C) if not n.startswith("_") and callable(getattr(ctorch._C, n))
         and n not in ("manual_seed", "set_num_threads", "set_default_dtype", "Generator")]
methods = [n for n in dir(ctorch.Tensor) if not n.startswith("__") and callable(getattr(ctorch.Tensor, n, None))
           and n not in ("backward", "numpy", "register_hook", "_register_hook", "apply_", "set_", "cuda")]
calls = 0
for _ in range(6000):
    if random.random() < 0.5:
        fn = getattr(ctorch._C, random.choice(names))
    else:
        fn = getattr(random.choice([ctorch.ones(2, 3), ctorch.tensor(2.0), ctorch.zeros(0), ctorch.arange(4)]),
                     random.choice(methods))
    args = [random.choice(BAD) for _ in range(random.randint(0, 4))]
    try:
        fn(*args)
    except Exception:
        pass
    calls += 1
print("ok", calls)
'''


def test_random_wrong_arguments_raise():
    env = dict(os.environ)
    import ctorch
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(ctorch.__file__)) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0 and p.stdout.startswith("ok"), "crashed (rc %d):\n%s" % (p.returncode, p.stderr[-3000:])


# The functions added with torch.linalg, 3-d convolution/pooling and the last API names, including the private
# C entry points of the factorizations (called with raw wrong arguments, not only through the checked wrappers).
SCRIPT_NEW = r'''
import random, warnings, ctorch
warnings.simplefilter("ignore")
random.seed(4)
F = ctorch.nn.functional
BAD = [None, "x", -1, 0, 2, -10**20, 10**20, 2**62, 1.5, float("nan"), [], [1, 2], (2, 2), (0, 1), object(), True,
       ctorch.zeros(0), ctorch.zeros(0, 3), ctorch.zeros(2, 0, 0), ctorch.ones(2, 3), ctorch.ones(3, 3),
       ctorch.eye(3, dtype=ctorch.float64), ctorch.zeros(3, 3), ctorch.ones(3, 3).t(), ctorch.tensor(1.0),
       ctorch.ones(2, dtype=ctorch.int64), ctorch.ones(3, dtype=ctorch.bool), ctorch.ones(2, 3, 4),
       ctorch.ones(1, 2, 3, 3, 3), ctorch.ones(2, 3, 3, 3), ctorch.float64, ctorch.int16, ctorch.complex64,
       ctorch.sparse_csr, "reduced", "complete", "L", "fro", "nuc", float("inf"), bytearray(b"abcd")]
la = ctorch.linalg
fns = [getattr(la, n) for n in dir(la) if not n.startswith("_") and callable(getattr(la, n)) and n != "LinAlgError"]
fns += [getattr(ctorch._C, n) for n in dir(ctorch._C) if n.startswith("_linalg_")]
fns += [F.conv3d, F.max_pool3d, F.avg_pool3d, F.adaptive_avg_pool3d, F.adaptive_max_pool3d, F.conv_transpose3d,
        F.ctc_loss, ctorch.narrow_copy, ctorch.gradient, ctorch.histogram, ctorch.i0, ctorch.frombuffer,
        ctorch.fake_quantize_per_tensor_affine, ctorch.index_reduce, ctorch.geqrf, ctorch.det, ctorch.logdet,
        ctorch.inverse, ctorch.svd, ctorch.qr, ctorch.cholesky, ctorch.lu, ctorch.lu_unpack, ctorch.lu_solve,
        ctorch.cholesky_solve, ctorch.cholesky_inverse, ctorch.triangular_solve, ctorch.symeig, ctorch.pinverse,
        ctorch.matrix_power, ctorch.matrix_exp, ctorch.complex, ctorch.view_as_real, ctorch.sparse_coo_tensor,
        ctorch.quantize_per_tensor, ctorch.from_dlpack, ctorch.relu_, ctorch.exp_, ctorch.clamp_,
        lambda *a: ctorch.zeros(2, dtype=a[0] if a else None), lambda *a: ctorch.ones(2).to(*a),
        lambda *a: ctorch.ones(3).names, lambda *a: ctorch.ones(3).rename(*a), lambda *a: ctorch.ones(3).align_to(*a),
        lambda *a: ctorch.ones(4).index_reduce_(0, *a), lambda *a: ctorch.ones(2).as_subclass(*a),
        lambda *a: ctorch.nn.Conv3d(*a), lambda *a: ctorch.nn.Conv3d(2, 2, 2)(*a), lambda *a: ctorch.nn.MaxPool3d(*a),
        lambda *a: ctorch.nn.AvgPool3d(2)(*a), lambda *a: ctorch.nn.AdaptiveAvgPool3d(*a),
        lambda *a: ctorch.nn.AdaptiveMaxPool3d(2)(*a), lambda *a: ctorch.nn.ConvTranspose3d(*a),
        lambda *a: ctorch.nn.ConvTranspose3d(2, 2, 2)(*a), lambda *a: ctorch.nn.CTCLoss()(*a),
        lambda *a: ctorch.nn.LazyLinear(*a), lambda *a: ctorch.nn.LazyLinear(3)(*a), lambda *a: ctorch.nn.SyncBatchNorm(*a),
        lambda *a: ctorch.utils.data.DataLoader(ctorch.utils.data.TensorDataset(ctorch.ones(4)), *a),
        lambda *a: ctorch.autograd.backward(*a), lambda *a: ctorch.autograd.grad(*a),
        lambda *a: ctorch.ones(2, requires_grad=True).mul(2).backward(*a), lambda *a: ctorch.cat(*a),
        lambda *a: ctorch.cat([ctorch.ones(2)], out=a[0] if a else None), lambda *a: ctorch.sum(ctorch.ones(3), 0, out=a[0] if a else None),
        lambda *a: ctorch.mm(ctorch.ones(2, 2), ctorch.ones(2, 2), out=a[0] if a else None),
        F.fractional_max_pool2d, F.fractional_max_pool3d, ctorch.histogramdd, ctorch.device, ctorch.is_inference,
        ctorch.nn.init.orthogonal_, ctorch.nn.init.sparse_, lambda *a: ctorch.nn.FractionalMaxPool2d(*a),
        lambda *a: ctorch.nn.FractionalMaxPool3d(2, 2)(*a), lambda *a: ctorch.clip(ctorch.ones(2), *a),
        lambda *a: F.fractional_max_pool2d(ctorch.ones(1, 2, 5, 5), *a),
        lambda *a: F.fractional_max_pool2d(ctorch.ones(1, 2, 5, 5), 2, 2, None, False, *a),
        lambda *a: ctorch.histogramdd(ctorch.ones(4, 2), *a)]
n = 0
for _ in range(8000):
    f = random.choice(fns)
    args = [random.choice(BAD) for _ in range(random.randint(0, 4))]
    try:
        f(*args)
    except Exception:
        pass
    n += 1
ctorch.set_default_dtype(ctorch.float32)
print("ok", n)
'''


def test_new_functions_random_wrong_arguments_raise():
    env = dict(os.environ)
    import ctorch
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(ctorch.__file__)) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", SCRIPT_NEW], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0 and p.stdout.startswith("ok"), "crashed (rc %d):\n%s" % (p.returncode, p.stderr[-3000:])
