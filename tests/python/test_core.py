"""Module skeleton: dtypes, factories, properties, item/tolist, operators, indexing, numpy."""
import math

import numpy as np
import pytest
import torch
import ctorch
from conftest import both, assert_same

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]


@pytest.mark.parametrize("name", DTYPES + ["float", "double", "half", "long", "int", "short"])
def test_dtype_objects(name):
    c, t = getattr(ctorch, name), getattr(torch, name)
    assert repr(c) == repr(t) and str(c) == str(t)
    assert c.is_floating_point == t.is_floating_point
    assert c.is_signed == t.is_signed


DATA = [
    1, 2.5, True, [1, 2, 3], [1.0, 2, 3], [[1, 2], [3, 4]], [True, False], [1, True], [1.5, True],
    [], [[]], [[1.0], [2.0]], 0, -7, [[[1]]],
]


@pytest.mark.parametrize("data", DATA, ids=[repr(d) for d in DATA])
def test_tensor_inference(data):
    both(lambda L: L.tensor(data))


@pytest.mark.parametrize("dt", DTYPES)
def test_tensor_with_dtype(dt):
    both(lambda L: L.tensor([[1.7, -2.2], [0, 3]], dtype=getattr(L, dt)), rtol=1e-2)


@pytest.mark.parametrize("bad", [[[1, 2], [3]], "abc", [1, "a"], [[1], 2]])
def test_tensor_bad_data(bad):
    both(lambda L: L.tensor(bad))


FACTORIES = [
    lambda L: L.zeros(2, 3),
    lambda L: L.zeros((2, 3), dtype=L.int64),
    lambda L: L.ones([4]),
    lambda L: L.ones(2, 2, dtype=L.bool),
    lambda L: L.full((2, 2), 7),
    lambda L: L.full((2, 2), 7.5),
    lambda L: L.full((2,), True),
    lambda L: L.arange(5),
    lambda L: L.arange(1, 4, 0.5),
    lambda L: L.arange(0, 10, 3, dtype=L.float64),
    lambda L: L.linspace(0, 1, 5),
    lambda L: L.logspace(0, 2, 3),
    lambda L: L.eye(3),
    lambda L: L.eye(2, 3, dtype=L.int32),
    lambda L: L.zeros_like(L.ones(2, 3, dtype=L.int16)),
    lambda L: L.ones_like(L.zeros(3), dtype=L.float64),
    lambda L: L.full_like(L.zeros(2), 3),
    lambda L: L.empty(2, 3).shape,
    lambda L: L.tensor([1, 2]).new_zeros(3),
    lambda L: L.tensor([1.0]).new_ones((2, 2)),
    lambda L: L.tensor([1.0]).new_full((2,), 4),
    lambda L: L.tensor([1.0]).new_tensor([1, 2]),
    lambda L: L.scalar_tensor(3),
]


@pytest.mark.parametrize("i", range(len(FACTORIES)))
def test_factories(i):
    both(FACTORIES[i])


def _seeded(L, fn):
    L.manual_seed(1234)
    return fn(L)


RANDOM = [
    lambda L: L.rand(3, 4),
    lambda L: L.randn(5),
    lambda L: L.randn(20, dtype=L.float64),
    lambda L: L.randint(0, 10, (6,)),
    lambda L: L.randint(5, (2, 3)),
    lambda L: L.randperm(10),
    lambda L: L.rand_like(L.zeros(4)),
    lambda L: L.randn_like(L.zeros(2, 2)),
    lambda L: L.empty(5).uniform_(-1, 1),
    lambda L: L.empty(5).normal_(2, 3),
    lambda L: L.empty(8).bernoulli_(0.3),
    lambda L: L.bernoulli(L.full((6,), 0.5)),
    lambda L: L.multinomial(L.tensor([0.1, 0.5, 0.4]), 5, True),
    lambda L: (L.rand(2), L.randn(3), L.randint(0, 5, (2,))),
    lambda L: L.normal(0.0, 1.0, (4,)),
]


@pytest.mark.parametrize("i", range(len(RANDOM)))
def test_random_streams(i):
    both(lambda L: _seeded(L, RANDOM[i]), rtol=0, atol=0)


def test_generator_object():
    def f(L):
        g = L.Generator().manual_seed(42)
        a = L.rand(3, generator=g)
        b = L.randn(2, generator=g)
        return a, b, g.initial_seed()
    both(f, rtol=0, atol=0)


def test_rng_state_roundtrip():
    ctorch.manual_seed(3)
    s = ctorch.get_rng_state()
    a = ctorch.rand(4)
    ctorch.set_rng_state(s)
    assert ctorch.rand(4).tolist() == a.tolist()
    torch.manual_seed(3)
    assert torch.get_rng_state().tolist() == s.tolist()


PROPS = [
    lambda L: L.zeros(2, 3).shape,
    lambda L: L.zeros(2, 3).size(),
    lambda L: L.zeros(2, 3).size(1),
    lambda L: L.zeros(2, 3).size(-1),
    lambda L: L.zeros(2, 3).dtype,
    lambda L: str(L.zeros(2, 3).device),
    lambda L: repr(L.zeros(1).device),
    lambda L: L.zeros(2, 3).ndim,
    lambda L: L.zeros(2, 3).dim(),
    lambda L: L.zeros(2, 3).numel(),
    lambda L: L.zeros(2, 3, dtype=L.float64).element_size(),
    lambda L: L.zeros(2, 3).stride(),
    lambda L: L.zeros(2, 3).t().stride(),
    lambda L: L.zeros(2, 3).t().is_contiguous(),
    lambda L: L.zeros(4, 3)[1:].storage_offset(),
    lambda L: L.zeros(2, 3).T.shape,
    lambda L: L.zeros(4, 2, 3).mT.shape,
    lambda L: L.zeros(2).requires_grad,
    lambda L: L.zeros(2, requires_grad=True).is_leaf,
    lambda L: (L.zeros(2, requires_grad=True) * 2).is_leaf,
    lambda L: L.zeros(2).grad,
    lambda L: L.zeros(2).grad_fn,
    lambda L: (L.zeros(2, requires_grad=True) + 1).grad_fn.name(),
    lambda L: type((L.zeros(2, requires_grad=True) * 2).grad_fn).__name__,
    lambda L: repr(L.zeros(2, 3).shape),
    lambda L: str(L.zeros(2, 3).shape),
    lambda L: L.zeros(2, 3).shape[1:],
    lambda L: L.zeros(2, 3).shape.numel(),
    lambda L: L.tensor(2.5).item(),
    lambda L: L.tensor(7).item(),
    lambda L: L.tensor(True).item(),
    lambda L: L.tensor([[1, 2], [3, 4]]).tolist(),
    lambda L: L.tensor([1.5, 2]).tolist(),
    lambda L: L.tensor([1, 2]).item(),
    lambda L: len(L.zeros(5, 2)),
    lambda L: len(L.zeros(())),
    lambda L: bool(L.tensor([0.0])),
    lambda L: bool(L.tensor([1, 2])),
    lambda L: float(L.tensor(3)),
    lambda L: int(L.tensor(-3.7)),
    lambda L: [10, 20, 30][L.tensor(1)],
    lambda L: [10, 20, 30][L.tensor(1.0)],
    lambda L: [t.tolist() for t in L.tensor([[1, 2], [3, 4]])],
    lambda L: list(L.tensor(3)),
    lambda L: 2 in L.tensor([1, 2, 3]),
    lambda L: "{:.2f}".format(L.tensor(3.14159)),
    lambda L: L.zeros(2, 3).is_floating_point(),
    lambda L: L.zeros(2, dtype=L.int8).is_floating_point(),
    lambda L: L.zeros(3).data.requires_grad,
    lambda L: L.zeros(3).type(),
    lambda L: L.zeros(3).type(L.int64).dtype,
    lambda L: L.is_tensor(L.zeros(1)),
    lambda L: L.numel(L.zeros(3, 4)),
    lambda L: L.zeros(2, 3, dtype=L.int64).to(L.float32).dtype,
    lambda L: L.zeros(2).to("cpu").dtype,
    lambda L: L.zeros(2).float().dtype,
    lambda L: L.zeros(2).long().dtype,
    lambda L: L.zeros(2).bool().dtype,
    lambda L: L.zeros(2).half().dtype,
    lambda L: L.zeros(2).double().dtype,
    lambda L: L.zeros(2).int().dtype,
    lambda L: L.get_default_dtype(),
    lambda L: L.promote_types(L.int32, L.float16),
    lambda L: L.can_cast(L.float32, L.int32),
    lambda L: L.result_type(L.tensor([1, 2]), 1.0),
    lambda L: L.result_type(L.tensor([1, 2], dtype=L.int8), L.tensor(1000)),
]


@pytest.mark.parametrize("i", range(len(PROPS)))
def test_properties(i):
    both(PROPS[i])


def test_data_ptr_and_storage():
    x = ctorch.arange(12.0).reshape(3, 4)
    y = x[1]
    assert y.data_ptr() == x.data_ptr() + 4 * 4
    assert y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert x.untyped_storage().nbytes() == 48


OPS = [
    lambda L, a, b: a + b, lambda L, a, b: a - b, lambda L, a, b: a * b, lambda L, a, b: a / b,
    lambda L, a, b: a // b, lambda L, a, b: a % b, lambda L, a, b: a ** b, lambda L, a, b: a == b,
    lambda L, a, b: a != b, lambda L, a, b: a < b, lambda L, a, b: a <= b, lambda L, a, b: a > b,
    lambda L, a, b: a >= b,
]
OPERANDS = [
    lambda L: (L.tensor([1.5, -2.0, 3.0]), L.tensor([2.0, 4.0, -1.5])),
    lambda L: (L.tensor([7, -3, 4]), L.tensor([2, 5, -3])),
    lambda L: (L.tensor([7, -3, 4]), 2),
    lambda L: (L.tensor([7, -3, 4]), 2.5),
    lambda L: (3, L.tensor([1, 2, 4])),
    lambda L: (1.5, L.tensor([1, 2, 4])),
    lambda L: (L.tensor([1, 2], dtype=L.int8), L.tensor(300)),
    lambda L: (L.tensor([1.0, 2.0]), L.tensor([[1], [2]])),
    lambda L: (L.tensor([1.0, 2.0], dtype=L.float64), L.tensor([1.0, 2.0])),
    lambda L: (L.tensor([True, False]), L.tensor([1.5, 2.5])),
    lambda L: (L.tensor([1, 2], dtype=L.uint8), -1),
]


@pytest.mark.parametrize("op", range(len(OPS)))
@pytest.mark.parametrize("operands", range(len(OPERANDS)))
def test_binary_operators(op, operands):
    both(lambda L: OPS[op](L, *OPERANDS[operands](L)))


BITOPS = [lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b, lambda a, b: a << b, lambda a, b: a >> b]


@pytest.mark.parametrize("op", range(len(BITOPS)))
def test_bitwise_operators(op):
    both(lambda L: BITOPS[op](L.tensor([12, 5, -3]), L.tensor([2, 1, 1])))
    both(lambda L: BITOPS[op](L.tensor([12, 5, 3]), 1))
    if op < 3:
        both(lambda L: BITOPS[op](L.tensor([True, False]), L.tensor([True, True])))


UNARY_OPS = [lambda x: -x, lambda x: abs(x), lambda x: ~x, lambda x: +x]


@pytest.mark.parametrize("op", range(len(UNARY_OPS)))
@pytest.mark.parametrize("data", [[1, -2], [1.5, -2.5], [True, False]])
def test_unary_operators(op, data):
    both(lambda L: UNARY_OPS[op](L.tensor(data)))


def test_matmul_operator():
    both(lambda L: L.arange(6.0).reshape(2, 3) @ L.arange(3.0))
    both(lambda L: L.arange(6.0).reshape(2, 3) @ L.arange(6.0).reshape(3, 2))
    both(lambda L: L.ones(2, 3) @ L.ones(2, 3))


INPLACE = [
    lambda x: x.__iadd__(2), lambda x: x.__isub__(1.5), lambda x: x.__imul__(3), lambda x: x.__itruediv__(2),
    lambda x: x.__ifloordiv__(2), lambda x: x.__imod__(2), lambda x: x.__ipow__(2),
]


@pytest.mark.parametrize("op", range(len(INPLACE)))
@pytest.mark.parametrize("dt", ["float32", "int64"])
def test_inplace_operators(op, dt):
    def f(L):
        x = L.tensor([3, 4, 5], dtype=getattr(L, dt))
        r = INPLACE[op](x)
        return x, r is x
    both(f)


def test_inplace_keeps_identity():
    x = ctorch.ones(3)
    y = x
    x += 1
    assert x is y and x.tolist() == [2.0, 2.0, 2.0]


INDEX = [
    lambda x: x[1], lambda x: x[-1], lambda x: x[1:3], lambda x: x[::2], lambda x: x[1, 2], lambda x: x[:, 1],
    lambda x: x[..., 0], lambda x: x[None], lambda x: x[:, None, 1], lambda x: x[[0, 2]], lambda x: x[[0, 2], [1, 3]],
    lambda x: x[x > 5], lambda x: x[:, [True, False, True, False]], lambda x: x[1:, ::3], lambda x: x[-2:, -1],
    lambda x: x[5:], lambda x: x[0, ..., None], lambda x: x[True], lambda x: x[2, -4],
]


@pytest.mark.parametrize("i", range(len(INDEX)))
def test_getitem(i):
    both(lambda L: INDEX[i](L.arange(12).reshape(3, 4)))


def test_getitem_tensor_indices():
    both(lambda L: L.arange(12).reshape(3, 4)[L.tensor([2, 0])])
    both(lambda L: L.arange(12).reshape(3, 4)[L.tensor([[0, 1], [2, 2]])])
    both(lambda L: L.arange(12).reshape(3, 4)[:, L.tensor([1, 3], dtype=L.int32)])
    both(lambda L: L.arange(12).reshape(3, 4)[L.tensor([True, False, True])])


def test_getitem_errors():
    both(lambda L: L.arange(12).reshape(3, 4)[3])
    both(lambda L: L.arange(12).reshape(3, 4)[0, 0, 0])
    both(lambda L: L.tensor(5)[0])
    both(lambda L: L.arange(4)[L.tensor([4])])


SETITEM = [
    lambda L, x: x.__setitem__(1, 0), lambda L, x: x.__setitem__((slice(None), 1), L.tensor([7, 8, 9])),
    lambda L, x: x.__setitem__(x > 5, -1), lambda L, x: x.__setitem__([0, 2], 100),
    lambda L, x: x.__setitem__((Ellipsis, 0), L.tensor(5)), lambda L, x: x.__setitem__(slice(None, None, 2), 3),
    lambda L, x: x.__setitem__(0, [9, 9, 9, 9]), lambda L, x: x.__setitem__(0, 2.7),
]


@pytest.mark.parametrize("i", range(len(SETITEM)))
def test_setitem(i):
    def f(L):
        x = L.arange(12).reshape(3, 4)
        SETITEM[i](L, x)
        return x
    both(f)


def test_view_semantics():
    def f(L):
        x = L.zeros(3, 4)
        v = x[1]
        v += 5
        x[:, 0] = 1
        return x, v, x._version if hasattr(x, "_version") else None
    c, t = both(f)


def test_numpy_shares_memory():
    x = ctorch.arange(6.0).reshape(2, 3)
    a = x.numpy()
    a[0, 0] = 42
    assert x[0, 0].item() == 42
    x[1, 2] = -1
    assert a[1, 2] == -1
    del x
    assert a.sum() == 42 + 1 + 2 + 3 + 4 - 1  # the array keeps the memory alive
    t = ctorch.arange(6).reshape(2, 3).t()
    assert (np.asarray(t) == np.arange(6).reshape(2, 3).T).all()
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        ctorch.ones(2, requires_grad=True).numpy()


def test_from_numpy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = ctorch.from_numpy(a)
    assert x.dtype == ctorch.float32 and x.tolist() == a.tolist()
    a[0, 1] = 9
    assert x[0, 1].item() == 9
    x[1, 1] = -5
    assert a[1, 1] == -5
    for dt in [np.float64, np.int64, np.int32, np.uint8, np.bool_, np.int8, np.int16, np.float16]:
        b = np.zeros(3, dtype=dt)
        assert str(ctorch.from_numpy(b).dtype) == str(torch.from_numpy(b).dtype)
    with pytest.raises(TypeError):
        ctorch.from_numpy(np.zeros(2, dtype=np.uint16))
    assert ctorch.from_numpy(a[:, ::2]).tolist() == torch.from_numpy(a[:, ::2]).tolist()
    assert ctorch.tensor(np.array([1.5, 2.5])).dtype == ctorch.float64


def test_array_protocol():
    x = ctorch.tensor([1, 2, 3])
    assert np.array(x).tolist() == [1, 2, 3]
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
