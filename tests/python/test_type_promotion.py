"""Type promotion: every pair of the ten dtypes, for tensor-tensor, tensor-0-dim and tensor-scalar
(int, float, bool) operands in both orders, across add, sub, mul, div, floor_divide, remainder,
the comparisons (function and operator forms), where and the in-place forms: the result dtype and
values must be PyTorch's, and where PyTorch raises, ctorch raises the same type with the same message.

One pytest test per (op, operand kinds) walks all dtype combinations; the case count goes into
the conformance file as python/test_type_promotion/cases.
"""
import math

import pytest
import torch
import ctorch

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
SCALARS = {"int": -3, "float": 2.5, "bool": True}


def values(dt, side):
    """Four values per dtype: mixed signs where the dtype has them, a zero and (uint8) a value that wraps
    when multiplied on the left; no zero on the right but bool's False (integer division by zero)."""
    if dt == "bool":
        return [True, False, True, False] if side == 0 else [True, True, False, True]
    if dt == "uint8":
        return [7, 1, 0, 200] if side == 0 else [2, 3, 1, 4]
    if dt in ("float16", "bfloat16", "float32", "float64"):
        return [-7.5, 1.25, 0.0, 3.0] if side == 0 else [2.0, -3.0, 0.5, 4.0]
    return [-7, 1, 0, 3] if side == 0 else [2, -3, 1, 4]


def operand(L, kind, dt, side):
    if kind == "tensor":
        return L.tensor(values(dt, side), dtype=getattr(L, dt))
    if kind == "0dim":
        return L.tensor(values(dt, side)[1], dtype=getattr(L, dt))
    return SCALARS[kind]


def fn(name):
    return lambda L, a, b: getattr(L, name)(a, b)


def method_(name):
    return lambda L, a, b: getattr(a, name)(b)


def where_(L, a, b):
    cond = L.tensor([True, False, False, True])
    return L.where(cond, a, b)


FUNCS = {name: fn(name) for name in ("add", "sub", "mul", "div", "floor_divide", "remainder",
                                     "eq", "ne", "lt", "le", "gt", "ge")}
FUNCS["where"] = where_
OPERATORS = {"a+b": lambda L, a, b: a + b, "a-b": lambda L, a, b: a - b, "a*b": lambda L, a, b: a * b,
             "a/b": lambda L, a, b: a / b, "a//b": lambda L, a, b: a // b, "a%b": lambda L, a, b: a % b,
             "a==b": lambda L, a, b: a == b, "a!=b": lambda L, a, b: a != b, "a<b": lambda L, a, b: a < b,
             "a<=b": lambda L, a, b: a <= b, "a>b": lambda L, a, b: a > b, "a>=b": lambda L, a, b: a >= b}
INPLACE = {name: method_(name) for name in ("add_", "mul_", "div_", "floor_divide_")}

TENSOR_KINDS = [("tensor", "tensor"), ("tensor", "0dim"), ("0dim", "tensor"), ("0dim", "0dim")]
SCALAR_KINDS = [(k, s) for k in ("tensor", "0dim") for s in SCALARS] + [(s, "tensor") for s in SCALARS]
ALL_KINDS = TENSOR_KINDS + SCALAR_KINDS

# function forms and where: every kind; operators (the number protocol's own paths, reflected ones
# included): tensor-tensor and the scalar kinds; in-place: a tensor or 0-dim self (a 0-dim self and
# a tensor other is only a broadcast error)
CASES = [(op, kinds) for op in FUNCS for kinds in ALL_KINDS]
CASES += [(op, kinds) for op in OPERATORS for kinds in TENSOR_KINDS[:1] + SCALAR_KINDS]
CASES += [(op, kinds) for op in INPLACE for kinds in [TENSOR_KINDS[i] for i in (0, 1, 3)] + SCALAR_KINDS[:6]]
OPS = dict(FUNCS, **OPERATORS, **INPLACE)


def dtype_pairs(kinds):
    left = DTYPES if kinds[0] in ("tensor", "0dim") else [None]
    right = DTYPES if kinds[1] in ("tensor", "0dim") else [None]
    return [(a, b) for a in left for b in right]


def outcome(L, op, kinds, a_dt, b_dt):
    f = OPS[op]
    try:
        a = operand(L, kinds[0], a_dt, 0)
        b = operand(L, kinds[1], b_dt, 1)
        r = f(L, a, b)
        if not isinstance(r, (torch.Tensor, ctorch.Tensor)):
            return ("value", type(r).__name__, r)
        return ("tensor", str(r.dtype), tuple(r.shape), r.tolist())
    except Exception as e:  # noqa: BLE001  (the exception itself is what is compared)
        return ("error", type(e).__name__, str(e).split("\n")[0])


def close(x, y):
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(close(u, v) for u, v in zip(x, y))
    if isinstance(y, float) and isinstance(x, float):
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return x == y  # one correctly rounded IEEE operation on both sides: bit-exact
    return type(x) is type(y) and x == y


def same(c, t):
    if c[0] != t[0] or c[1] != t[1]:
        return False
    if c[0] == "error":
        return c[2] == t[2]
    if c[0] == "value":
        return c[2] == t[2]
    return c[2] == t[2] and close(c[3], t[3])


@pytest.mark.filterwarnings("ignore:floor_divide")
@pytest.mark.parametrize("op,kinds", CASES, ids=["%s-%s-%s" % (op, k[0], k[1]) for op, k in CASES])
def test_promotion(op, kinds, conformance):
    bad = []
    pairs = dtype_pairs(kinds)
    for a_dt, b_dt in pairs:
        t = outcome(torch, op, kinds, a_dt, b_dt)
        c = outcome(ctorch, op, kinds, a_dt, b_dt)
        if not same(c, t):
            bad.append("%s(%s %s, %s %s):\n  ctorch: %r\n  torch:  %r" % (op, kinds[0], a_dt or "", kinds[1],
                                                                        b_dt or "", c, t))
    conformance(len(pairs) - len(bad), len(pairs))
    assert not bad, "%d of %d dtype combinations differ:\n%s" % (len(bad), len(pairs), "\n".join(bad[:8]))


def test_result_type_and_promote_types():
    """torch.promote_types over all pairs, and torch.result_type for tensor/0-dim/scalar operands."""
    bad = []
    for a in DTYPES:
        for b in DTYPES:
            pc = ctorch.promote_types(getattr(ctorch, a), getattr(ctorch, b))
            pt = torch.promote_types(getattr(torch, a), getattr(torch, b))
            if str(pc) != str(pt):
                bad.append("promote_types(%s, %s): %s vs %s" % (a, b, pc, pt))
            for kb in ("tensor", "0dim", "int", "float", "bool"):
                rc = ctorch.result_type(operand(ctorch, "tensor", a, 0), operand(ctorch, kb, b, 1))
                rt = torch.result_type(operand(torch, "tensor", a, 0), operand(torch, kb, b, 1))
                if str(rc) != str(rt):
                    bad.append("result_type(%s, %s %s): %s vs %s" % (a, kb, b, rc, rt))
    assert not bad, "\n".join(bad[:10])


def test_can_cast():
    bad = ["can_cast(%s, %s)" % (a, b) for a in DTYPES for b in DTYPES
           if ctorch.can_cast(getattr(ctorch, a), getattr(ctorch, b)) != torch.can_cast(getattr(torch, a),
                                                                                      getattr(torch, b))]
    assert not bad, bad
