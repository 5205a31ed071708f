"""out= of torch.where and the tuple out=(values, indices) of max/min/sort/topk/kthvalue/mode/median,
with torch and with ctorch in one process: same values, dtypes and shapes, the result holds the out
tensors themselves (a namedtuple <op>_out), and the same exception type and message on misuse."""
import warnings

import pytest
import torch
import ctorch


def _run(L, case):
    t = L.tensor([[3., 1., 2.], [0., 5., 4.]])
    o = (L.empty(0), L.empty(0, dtype=L.int64))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = eval(case, {"L": L, "t": t, "o": o})
        except Exception as e:  # noqa: BLE001
            return ("error", type(e).__name__, str(e))
    res = r if isinstance(r, tuple) else (r,)
    same = [x is y for x, y in zip(res, o)] if isinstance(r, tuple) else []
    return ("ok", type(r).__name__, [(str(x.dtype), tuple(x.shape), x.tolist()) for x in res], same,
            [str(x.message) for x in w], [(str(x.dtype), tuple(x.shape), x.tolist()) for x in o])


CASES = [
    "L.max(t, 1, out=o)", "L.min(t, 0, True, out=o)", "L.max(t, dim=0, keepdim=False, out=o)",
    "L.sort(t, out=o)", "L.sort(t, 0, True, out=o)", "L.sort(t, stable=True, out=o)",
    "L.topk(t, 2, out=o)", "L.topk(t, 2, 0, False, True, out=o)", "L.kthvalue(t, 2, out=o)",
    "L.mode(t, out=o)", "L.median(t, 1, out=o)", "L.max(t, 1, out=list(o))",
    "L.max(t, 1, out=(L.empty(2), L.empty(2, dtype=L.int64)))",
    # misuse
    "L.max(t, 1, out=(L.empty(0),))", "L.max(t, 1, out=(L.empty(0), L.empty(0)))",
    "L.max(t, 1, out=(L.empty(0, dtype=L.int64), L.empty(0, dtype=L.int64)))",
    "L.sort(t, out=(L.empty(0), L.empty(0, dtype=L.int32)))", "L.max(t, 1, out=L.empty(0))", "L.median(t, out=o)",
    # where
    "L.where(t > 1, t, L.zeros(2, 3), out=L.empty(0))", "L.where(t > 1, t, L.zeros(3), out=L.empty(2, 3))",
    "L.where(t > 1, t, 0., out=L.empty(0))", "L.where(t > 1, out=L.empty(0))",
]


@pytest.mark.parametrize("case", CASES)
def test_out_like_pytorch(case):
    assert _run(ctorch, case) == _run(torch, case)


def test_where_out_is_the_result():
    t = ctorch.tensor([1., -1.])
    o = ctorch.empty(2)
    r = ctorch.where(t > 0, t, -t, out=o)
    assert r is o and o.tolist() == [1.0, 1.0]
