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
