"""Parity cases of the index family (src/ops/index.c, runners in run_index.c).

getitem/setitem cases carry their Python expression as the "items" attr, a comma-separated
list (int:K, slice:START:STOP:STEP with empty parts as None, none, ellipsis, tensor:K for
input K, bool:0|1); the case's fn evaluates exactly that expression with PyTorch, so the
encoding and the Python code cannot drift apart."""
import torch
from parity_lib import case, T

CASES = []
ALL = ("float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool")


def add(name, op, inputs, fn, attrs=None, **kw):
    CASES.append(case(name, op, inputs, fn, attrs=attrs, **kw))


def err(name, op, inputs, fn, attrs, msg):
    CASES.append(case(name, op, inputs, fn, attrs=attrs, error=msg))


def I(shape, high, low=0, layout="contiguous", dtype="int64"):
    """An index tensor drawing from [low, high)."""
    return T(shape, dtype, low=low, high=high, layout=layout)


def V(values, dtype="int64"):
    return T(torch.tensor(values).shape, dtype, values=values)


# ---- index_select --------------------------------------------------------------------------
add("index_select_dim0", "index_select", [T((4, 3)), I((5,), 4)], lambda x, i: x.index_select(0, i), {"dim": 0},
    gradgrad=True)
add("index_select_negdim_dup", "index_select", [T((2, 3, 4)), V([3, 0, 3, 3])], lambda x, i: x.index_select(-1, i),
    {"dim": -1})
add("index_select_nc", "index_select", [T((4, 5), layout="transposed"), I((3,), 5, layout="strided")],
    lambda x, i: x.index_select(1, i), {"dim": 1})
add("index_select_int32", "index_select", [T((4, 3)), I((3,), 4, dtype="int32")], lambda x, i: x.index_select(0, i),
    {"dim": 0})
add("index_select_0dim_index", "index_select", [T((4, 3)), I((), 4)], lambda x, i: x.index_select(0, i), {"dim": 0})
add("index_select_0dim_self", "index_select", [T((), requires_grad=False), V([0, 0])], lambda x, i: x.index_select(0, i), {"dim": 0},
    fd=False)
add("index_select_empty", "index_select", [T((4, 3)), I((0,), 4)], lambda x, i: x.index_select(1, i), {"dim": 1})
for dt in ALL:
    add("index_select_dt_" + dt, "index_select", [T((3, 4), dt), I((4,), 3)], lambda x, i: x.index_select(0, i),
        {"dim": 0})
err("index_select_oob", "index_select", [T((4, 3)), V([4])], lambda x, i: x.index_select(0, i), {"dim": 0},
    "index out of range in self")
err("index_select_neg", "index_select", [T((4, 3)), V([-1])], lambda x, i: x.index_select(0, i), {"dim": 0},
    "index out of range in self")
err("index_select_2d", "index_select", [T((4, 3)), I((2, 2), 3)], lambda x, i: x.index_select(0, i), {"dim": 0},
    "Index is supposed to be a vector")
err("index_select_float_index", "index_select", [T((4, 3)), T((2,), requires_grad=False)],
    lambda x, i: x.index_select(0, i), {"dim": 0}, "Expected dtype int32 or int64 for index")

# ---- gather ------------------------------------------------------------------------------------
add("gather_dim1", "gather", [T((3, 4)), I((3, 6), 4)], lambda x, i: x.gather(1, i), {"dim": 1}, gradgrad=True)
add("gather_dim0_small", "gather", [T((3, 4)), I((2, 3), 3)], lambda x, i: x.gather(0, i), {"dim": 0})
add("gather_negdim_3d", "gather", [T((2, 3, 4)), I((2, 2, 5), 4)], lambda x, i: torch.gather(x, -1, i), {"dim": -1})
add("gather_nc", "gather", [T((4, 3), layout="transposed"), I((4, 3), 4, layout="transposed")],
    lambda x, i: x.gather(0, i), {"dim": 0})
add("gather_strided", "gather", [T((3, 4), layout="strided"), I((3, 2), 4, layout="strided")],
    lambda x, i: x.gather(1, i), {"dim": 1})
add("gather_0dim", "gather", [T(()), V(0)], lambda x, i: x.gather(0, i), {"dim": 0})
add("gather_empty", "gather", [T((3, 4)), I((0, 4), 3)], lambda x, i: x.gather(0, i), {"dim": 0})
for dt in ALL:
    add("gather_dt_" + dt, "gather", [T((3, 4), dt), I((3, 4), 4)], lambda x, i: x.gather(1, i), {"dim": 1})
err("gather_int32", "gather", [T((3, 4)), I((3, 4), 4, dtype="int32")], lambda x, i: x.gather(1, i), {"dim": 1},
    "gather(): Expected dtype int64 for index")
err("gather_oob", "gather", [T((3, 4)), V([[0, 4]])], lambda x, i: x.gather(1, i), {"dim": 1},
    "index 4 is out of bounds for dimension 1 with size 4")
err("gather_neg", "gather", [T((3, 4)), V([[0, -1]])], lambda x, i: x.gather(1, i), {"dim": 1},
    "index -1 is out of bounds for dimension 1 with size 4")
err("gather_ndim", "gather", [T((3, 4)), V([0, 1])], lambda x, i: x.gather(1, i), {"dim": 1},
    "Index tensor must have the same number of dimensions as input tensor")
err("gather_size", "gather", [T((3, 4)), I((4, 1), 4)], lambda x, i: x.gather(1, i), {"dim": 1},
    "Size does not match at dimension 0 expected index [4, 1] to be smaller than self [3, 4] apart from dimension 1")

# ---- scatter / scatter_add ----------------------------------------------------------------------
# scatter with duplicate targets is nondeterministic in PyTorch: these indices are permutations
PERM = [[2, 0, 1, 3], [1, 3, 0, 2]]
add("scatter_src", "scatter", [T((2, 4)), V(PERM), T((2, 4))], lambda x, i, s: x.scatter(1, i, s), {"dim": 1},
    gradgrad=True)
add("scatter_src_small_index", "scatter", [T((3, 4)), V([[1, 0], [2, 1]]), T((2, 2))],
    lambda x, i, s: x.scatter(0, i, s), {"dim": 0})
add("scatter_src_nc", "scatter", [T((4, 2), layout="transposed"), V([[2, 1], [0, 3], [1, 0], [3, 2]]),
    T((4, 2), layout="transposed")], lambda x, i, s: x.scatter(0, i, s), {"dim": 0})
add("scatter_inplace", "scatter", [T((2, 4)), V(PERM), T((2, 4))], lambda x, i, s: x.clone().scatter_(1, i, s),
    {"dim": 1, "inplace": True})
add("scatter_value", "scatter", [T((2, 4)), V([[2, 2, 1], [0, 3, 0]])], lambda x, i: x.scatter(1, i, 1.5),
    {"dim": 1, "value": 1.5})
add("scatter_value_int_trunc", "scatter", [T((2, 4), "int64"), V([[2], [0]])], lambda x, i: x.scatter(1, i, 2.7),
    {"dim": 1, "value": 2.7})
add("scatter_value_inplace", "scatter", [T((2, 4)), V([[2, 2, 1], [0, 3, 0]])],
    lambda x, i: x.clone().scatter_(1, i, -3), {"dim": 1, "value": -3, "inplace": True})
add("scatter_empty_index", "scatter", [T((2, 4)), I((0, 4), 2), T((2, 4), requires_grad=False)], lambda x, i, s: x.scatter(0, i, s),
    {"dim": 0})
for dt in ALL:
    add("scatter_dt_" + dt, "scatter", [T((2, 4), dt), V(PERM), T((2, 4), dt)], lambda x, i, s: x.scatter(1, i, s),
        {"dim": 1})
err("scatter_dtype", "scatter", [T((2, 4)), V(PERM), T((2, 4), "float64")], lambda x, i, s: x.scatter(1, i, s),
    {"dim": 1}, "scatter(): Expected self.dtype to be equal to src.dtype")
err("scatter_oob", "scatter", [T((2, 4)), V([[4]]), T((2, 4))], lambda x, i, s: x.scatter(1, i, s), {"dim": 1},
    "index 4 is out of bounds for dimension 1 with size 4")
err("scatter_shape", "scatter", [T((2, 4)), I((2, 5), 2), T((2, 4))], lambda x, i, s: x.scatter(0, i, s),
    {"dim": 0}, "Expected index [2, 5] to be smaller than self [2, 4] apart from dimension 0 and to be smaller size "
    "than src [2, 4]")
add("scatter_add_dups", "scatter_add", [T((3, 4)), I((5, 4), 3), T((5, 4))], lambda x, i, s: x.scatter_add(0, i, s),
    {"dim": 0}, gradgrad=True)
add("scatter_add_negdim", "scatter_add", [T((2, 3, 4)), I((2, 3, 6), 4), T((2, 3, 6))],
    lambda x, i, s: torch.scatter_add(x, -1, i, s), {"dim": -1})
add("scatter_add_inplace", "scatter_add", [T((3, 4)), I((5, 4), 3), T((5, 4))],
    lambda x, i, s: x.clone().scatter_add_(0, i, s), {"dim": 0, "inplace": True})
add("scatter_add_nc", "scatter_add", [T((4, 3), layout="transposed"), I((4, 3), 4, layout="transposed"),
    T((4, 3), layout="strided")], lambda x, i, s: x.scatter_add(0, i, s), {"dim": 0})
for dt in ALL:
    add("scatter_add_dt_" + dt, "scatter_add", [T((3, 4), dt), I((5, 4), 3), T((5, 4), dt)],
        lambda x, i, s: x.scatter_add(0, i, s), {"dim": 0},
        rtol=1e-2 if dt in ("float16", "bfloat16") else None)  # half sums round after each add

# ---- scatter_reduce ------------------------------------------------------------------------------
for red in ("sum", "prod", "mean", "amax", "amin"):
    for inc in (True, False):
        nm = "scatter_reduce_%s_%s" % (red, "incl" if inc else "excl")
        smooth = red in ("sum", "mean", "prod")
        add(nm, "scatter_reduce", [T((3, 4)), I((5, 4), 3), T((5, 4))],
            lambda x, i, s, red=red, inc=inc: x.scatter_reduce(0, i, s, red, include_self=inc),
            {"dim": 0, "reduce": red, "include_self": inc}, fd=smooth)
        add(nm + "_int", "scatter_reduce", [T((3, 4), "int64", -5, 5), I((5, 4), 3), T((5, 4), "int64", -5, 5)],
            lambda x, i, s, red=red, inc=inc: x.scatter_reduce(0, i, s, red, include_self=inc),
            {"dim": 0, "reduce": red, "include_self": inc})
add("scatter_reduce_inplace", "scatter_reduce", [T((3, 4)), I((5, 4), 3), T((5, 4))],
    lambda x, i, s: x.clone().scatter_reduce_(0, i, s, "sum"), {"dim": 0, "reduce": "sum", "inplace": True})
add("scatter_reduce_amax_nan", "scatter_reduce", [T((3,), values=[1.0, 7.0, 3.0], requires_grad=False), V([0, 0, 1, 1]),
    T((4,), values=[4.0, float("nan"), 6.0, 8.0], requires_grad=False)],
    lambda x, i, s: x.scatter_reduce(0, i, s, "amax"), {"dim": 0, "reduce": "amax"})
for dt in ("float16", "bfloat16", "int8", "uint8", "int16", "int32"):
    add("scatter_reduce_amin_" + dt, "scatter_reduce", [T((3, 4), dt), I((5, 4), 3), T((5, 4), dt)],
        lambda x, i, s: x.scatter_reduce(0, i, s, "amin", include_self=False),
        {"dim": 0, "reduce": "amin", "include_self": False}, fd=False)
err("scatter_reduce_bad", "scatter_reduce", [T((3, 4)), I((5, 4), 3), T((5, 4))],
    lambda x, i, s: x.scatter_reduce(0, i, s, "max"), {"dim": 0, "reduce": "max"},
    "reduce argument must be either sum, prod, mean, amax or amin")

# ---- index_add / index_copy / index_fill ------------------------------------------------------------
add("index_add_dups", "index_add", [T((4, 3)), V([3, 0, 3]), T((3, 3))], lambda x, i, s: x.index_add(0, i, s),
    {"dim": 0}, gradgrad=True)
add("index_add_alpha", "index_add", [T((2, 5)), I((3,), 5), T((2, 3))], lambda x, i, s: x.index_add(1, i, s, alpha=2.5),
    {"dim": 1, "alpha": 2.5})
add("index_add_int32", "index_add", [T((4, 3)), I((6,), 4, dtype="int32"), T((6, 3))],
    lambda x, i, s: x.index_add(0, i, s), {"dim": 0})
add("index_add_inplace_nc", "index_add", [T((4, 3), layout="transposed"), I((6,), 4), T((6, 3), layout="strided")],
    lambda x, i, s: x.clone().index_add_(0, i, s), {"dim": 0, "inplace": True})
add("index_add_0dim_source", "index_add", [T((3,)), V([1]), T(())], lambda x, i, s: x.index_add(0, i, s), {"dim": 0})
add("index_add_int_alpha", "index_add", [T((3,), "int8", -100, 100), V([1, 1]), T((2,), "int8", -100, 100)],
    lambda x, i, s: x.index_add(0, i, s, alpha=2), {"dim": 0, "alpha": 2})
for dt in ALL:
    add("index_add_dt_" + dt, "index_add", [T((4, 3), dt), I((5,), 4), T((5, 3), dt)],
        lambda x, i, s: x.index_add(0, i, s), {"dim": 0}, rtol=1e-2 if dt in ("float16", "bfloat16") else None)
err("index_add_oob", "index_add", [T((4, 3)), V([4]), T((1, 3))], lambda x, i, s: x.index_add(0, i, s), {"dim": 0},
    "index out of range in self")
err("index_add_dtype", "index_add", [T((4, 3)), V([1]), T((1, 3), "float64")], lambda x, i, s: x.index_add(0, i, s),
    {"dim": 0}, "index_add_(): self (Float) and source (Double) must have the same scalar type")
err("index_add_count", "index_add", [T((4, 3)), V([1]), T((2, 3))], lambda x, i, s: x.index_add(0, i, s), {"dim": 0},
    "index_add_(): Number of indices (1) should be equal to source.size(dim): (2), for dim: 0")

add("index_copy_basic", "index_copy", [T((4, 3)), V([3, 0]), T((2, 3))], lambda x, i, s: x.index_copy(0, i, s),
    {"dim": 0}, gradgrad=True)
add("index_copy_dim1_inplace", "index_copy", [T((3, 4), layout="transposed"), V([2, 0, 1]), T((3, 3))],
    lambda x, i, s: x.clone().index_copy_(1, i, s), {"dim": 1, "inplace": True})
add("index_copy_0dim", "index_copy", [T((3,)), V([1]), T(())], lambda x, i, s: x.index_copy(0, i, s), {"dim": 0})
for dt in ALL:
    add("index_copy_dt_" + dt, "index_copy", [T((4, 3), dt), V([3, 1]), T((2, 3), dt)],
        lambda x, i, s: x.index_copy(0, i, s), {"dim": 0})
err("index_copy_int32", "index_copy", [T((4, 3)), V([1], "int32"), T((1, 3))], lambda x, i, s: x.index_copy(0, i, s),
    {"dim": 0}, "index_copy_(): Expected a long tensor for index, but got Int")
err("index_copy_oob", "index_copy", [T((4, 3)), V([-1]), T((1, 3))], lambda x, i, s: x.index_copy(0, i, s), {"dim": 0},
    "index_copy_(): index -1 is out of bounds for dimension 0 with size 4")

add("index_fill_scalar", "index_fill", [T((4, 3)), V([3, -1, 0])], lambda x, i: x.index_fill(0, i, -2.5),
    {"dim": 0, "value": -2.5}, gradgrad=True)
add("index_fill_dim1_inplace", "index_fill", [T((3, 4), layout="transposed"), V([1])],
    lambda x, i: x.clone().index_fill_(1, i, 7), {"dim": 1, "value": 7, "inplace": True})
add("index_fill_tensor_value", "index_fill", [T((4, 3)), V([2, 0, 2]), T(())], lambda x, i, v: x.index_fill(0, i, v),
    {"dim": 0})
add("index_fill_int_float_value", "index_fill", [T((4,), "int32"), V([1])], lambda x, i: x.index_fill(0, i, 2.5),
    {"dim": 0, "value": 2.5})
for dt in ALL:
    add("index_fill_dt_" + dt, "index_fill", [T((4, 3), dt), V([1, 2])], lambda x, i: x.index_fill(1, i, True),
        {"dim": 1, "value": True})
err("index_fill_oob", "index_fill", [T((4, 3)), V([4])], lambda x, i: x.index_fill(0, i, 1.0), {"dim": 0, "value": 1.0},
    "index 4 is out of bounds for dimension 0 with size 4")
err("index_fill_int32", "index_fill", [T((4, 3)), V([1], "int32")], lambda x, i: x.index_fill(0, i, 1.0),
    {"dim": 0, "value": 1.0}, "index_fill_(): Expected dtype int64 for index.")

# ---- masked_fill / masked_scatter / masked_select -------------------------------------------------------
add("masked_fill_scalar", "masked_fill", [T((3, 4)), T((3, 4), "bool")], lambda x, m: x.masked_fill(m, -1.5),
    {"value": -1.5}, gradgrad=True)
add("masked_fill_broadcast", "masked_fill", [T((4,)), T((3, 1), "bool")], lambda x, m: x.masked_fill(m, 2.0),
    {"value": 2.0})
add("masked_fill_inplace_bcast_mask", "masked_fill", [T((3, 4), layout="transposed"), T((4,), "bool")],
    lambda x, m: x.clone().masked_fill_(m, 0.25), {"value": 0.25, "inplace": True})
add("masked_fill_tensor", "masked_fill", [T((3, 4)), T((3, 4), "bool"), T(())], lambda x, m, v: x.masked_fill(m, v))
add("masked_fill_uint8", "masked_fill", [T((3, 4)), T((3, 4), "uint8", 0, 2)], lambda x, m: x.masked_fill(m, 3),
    {"value": 3})
add("masked_fill_int_float", "masked_fill", [T((5,), "int64"), T((5,), "bool")], lambda x, m: x.masked_fill(m, 2.5),
    {"value": 2.5})
add("masked_fill_0dim", "masked_fill", [T(()), T((), "bool", values=True)], lambda x, m: x.masked_fill(m, 4.0),
    {"value": 4.0})
for dt in ALL:
    add("masked_fill_dt_" + dt, "masked_fill", [T((3, 4), dt), T((3, 4), "bool")], lambda x, m: x.masked_fill(m, 1),
        {"value": 1})
err("masked_fill_value_dim", "masked_fill", [T((3,)), T((3,), "bool"), T((1,))], lambda x, m, v: x.masked_fill(m, v),
    {}, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).")
err("masked_fill_inplace_shape", "masked_fill", [T((3,)), T((2, 3), "bool")], lambda x, m: x.clone().masked_fill_(m, 1.0),
    {"value": 1.0, "inplace": True}, "output with shape [3] doesn't match the broadcast shape [2, 3]")
# out of place, PyTorch broadcasts (mask, self): the mask is "tensor a" in the size error; in place self is
err("masked_fill_bcast_order", "masked_fill", [T((2, 3)), T((4, 3), "bool")], lambda x, m: x.masked_fill(m, 1.0),
    {"value": 1.0}, "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 0")
err("masked_fill_tensor_bcast_order", "masked_fill", [T((2, 3)), T((2, 1, 4), "bool"), T(())],
    lambda x, m, v: x.masked_fill(m, v), {},
    "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 2")
err("masked_fill_inplace_bcast_order", "masked_fill", [T((3,)), T((2,), "bool")],
    lambda x, m: x.clone().masked_fill_(m, 1.0), {"value": 1.0, "inplace": True},
    "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0")
err("masked_select_bcast_order", "masked_select", [T((3,)), T((2,), "bool")], lambda x, m: x.masked_select(m), {},
    "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0")
err("masked_scatter_bcast_order", "masked_scatter", [T((3,)), T((2,), "bool"), T((6,))],
    lambda x, m, s: x.masked_scatter(m, s), {},
    "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0")
err("masked_scatter_inplace_expand", "masked_scatter", [T((3,)), T((2,), "bool"), T((6,))],
    lambda x, m, s: x.clone().masked_scatter_(m, s), {"inplace": True},
    "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0")

add("masked_scatter_basic", "masked_scatter", [T((3, 4)), T((3, 4), "bool"), T((14,))],
    lambda x, m, s: x.masked_scatter(m, s), gradgrad=True)
add("masked_scatter_broadcast", "masked_scatter", [T((4,)), T((2, 1), "bool", values=[[True], [False]]), T((2, 5))],
    lambda x, m, s: x.masked_scatter(m, s))
add("masked_scatter_inplace_nc", "masked_scatter", [T((3, 4), layout="transposed"), T((3, 4), "bool"),
    T((3, 4), layout="strided")], lambda x, m, s: x.clone().masked_scatter_(m, s), {"inplace": True})
for dt in ALL:
    add("masked_scatter_dt_" + dt, "masked_scatter", [T((3, 4), dt), T((3, 4), "bool"), T((12,), dt)],
        lambda x, m, s: x.masked_scatter(m, s))
err("masked_scatter_short", "masked_scatter", [T((3,)), T((3,), "bool", values=[True, True, False]), T((1,))],
    lambda x, m, s: x.masked_scatter(m, s), {}, "Number of elements of source < number of ones in mask")
err("masked_scatter_dtype", "masked_scatter", [T((3,)), T((3,), "bool"), T((3,), "float64")],
    lambda x, m, s: x.masked_scatter(m, s), {}, "masked_scatter: expected self and source to have same dtypes")

add("masked_select_basic", "masked_select", [T((3, 4)), T((3, 4), "bool")], lambda x, m: x.masked_select(m),
    gradgrad=True)
add("masked_select_broadcast", "masked_select", [T((4,)), T((3, 1), "bool")], lambda x, m: x.masked_select(m))
# PyTorch 1.13's masked_select backward scatters the gradient in memory order when self is not
# contiguous (zeros_like keeps the strides, masked_scatter_ then walks memory); ctorch keeps the
# logical order, so non-contiguous selves are checked on values only.
add("masked_select_nc_mask", "masked_select", [T((4, 3)), T((4, 3), "bool", layout="transposed")],
    lambda x, m: x.masked_select(m))
add("masked_select_nc_self", "masked_select", [T((4, 3), layout="transposed", requires_grad=False),
    T((4, 3), "bool", layout="strided")], lambda x, m: x.masked_select(m))
add("masked_select_uint8", "masked_select", [T((5,)), T((5,), "uint8", 0, 2)], lambda x, m: x.masked_select(m))
add("masked_select_empty", "masked_select", [T((0, 3)), T((0, 3), "bool")], lambda x, m: x.masked_select(m))
for dt in ALL:
    add("masked_select_dt_" + dt, "masked_select", [T((3, 4), dt), T((3, 4), "bool")], lambda x, m: x.masked_select(m))
err("masked_select_float_mask", "masked_select", [T((3,)), T((3,), requires_grad=False)],
    lambda x, m: x.masked_select(m), {}, "masked_select: expected BoolTensor or ByteTensor for mask")

# ---- take / put / take_along_dim / nonzero ------------------------------------------------------------------
add("take_basic", "take", [T((3, 4)), I((2, 5), 12, -12)], lambda x, i: x.take(i), gradgrad=True)
add("take_nc", "take", [T((4, 3), layout="transposed"), I((6,), 12, -12, layout="strided")], lambda x, i: x.take(i))
add("take_0dim", "take", [T(()), V([0, -1, 0])], lambda x, i: x.take(i))
add("take_empty", "take", [T((3,)), I((0,), 3)], lambda x, i: x.take(i))
for dt in ALL:
    add("take_dt_" + dt, "take", [T((3, 4), dt), I((5,), 12)], lambda x, i: x.take(i))
err("take_oob", "take", [T((3, 4)), V([12])], lambda x, i: x.take(i), {},
    "out of range: tried to access index 12 on a tensor of 12 elements.")
err("take_oob_neg", "take", [T((3, 4)), V([-13])], lambda x, i: x.take(i), {},
    "out of range: tried to access index -13 on a tensor of 12 elements.")
err("take_int32", "take", [T((3, 4)), V([1], "int32")], lambda x, i: x.take(i), {},
    "take(): Expected a long tensor for index, but got Int")
add("put_accumulate", "put", [T((3, 4)), I((6,), 12, -12), T((2, 3))], lambda x, i, s: x.put(i, s, accumulate=True),
    {"accumulate": True}, gradgrad=True)
add("put_noacc_inplace", "put", [T((3, 4)), V([5, 0, -1]), T((3,))], lambda x, i, s: x.clone().put_(i, s),
    {"inplace": True})
for dt in ("float16", "int32", "bool"):
    add("put_dt_" + dt, "put", [T((3, 4), dt), V([5, 0, -1]), T((3,), dt)], lambda x, i, s: x.put(i, s))
add("take_along_dim_basic", "take_along_dim", [T((3, 4)), I((3, 2), 4)], lambda x, i: torch.take_along_dim(x, i, 1),
    {"dim": 1}, gradgrad=True)
add("take_along_dim_bcast", "take_along_dim", [T((3, 4)), I((5, 1), 3)], lambda x, i: torch.take_along_dim(x, i, 0),
    {"dim": 0})
add("take_along_dim_flat", "take_along_dim", [T((3, 4)), I((5,), 12)], lambda x, i: torch.take_along_dim(x, i))
err("take_along_dim_int32", "take_along_dim", [T((3, 4)), I((3, 2), 4, dtype="int32")],
    lambda x, i: torch.take_along_dim(x, i, 1), {"dim": 1}, "torch.take_along_dim(): dtype of indices should be Long")
add("nonzero_float", "nonzero", [T((3, 4), values=[[0, 1.5, 0, -2], [0, 0, 0, 0], [0.25, 0, 3, 0]],
    requires_grad=False)], lambda x: torch.nonzero(x))
add("nonzero_bool_nc", "nonzero", [T((4, 3), "bool", layout="transposed")], lambda x: torch.nonzero(x))
add("nonzero_int_3d", "nonzero", [T((2, 3, 2), "int32", -1, 2)], lambda x: torch.nonzero(x))
add("nonzero_0dim", "nonzero", [T((), values=3.0, requires_grad=False)], lambda x: torch.nonzero(x))
add("nonzero_empty", "nonzero", [T((0, 3), requires_grad=False)], lambda x: torch.nonzero(x))
add("nonzero_tuple", "nonzero", [T((3, 4), "int64", -1, 2)], lambda x: torch.nonzero(x, as_tuple=True),
    {"as_tuple": True})
add("nonzero_tuple_0dim", "nonzero", [T((), "bool", values=True)], lambda x: torch.nonzero(x, as_tuple=True),
    {"as_tuple": True})
for dt in ("float16", "bfloat16", "int8", "uint8", "int16", "int64", "float64"):
    add("nonzero_" + dt, "nonzero", [T((3, 4), dt, -1, 2, requires_grad=False)], lambda x: torch.nonzero(x))

# ---- aten::index / index_put (lists of optional tensors) ------------------------------------------------------
add("index_tensors_two", "index_tensors", [T((3, 4, 5)), I((2, 3), 3, -3), I((3,), 4)],
    lambda x, a, b: torch.ops.aten.index(x, [a, b]), gradgrad=True)
add("index_tensors_none_gap", "index_tensors", [T((3, 4, 5)), I((2,), 3), I((2,), 5)],
    lambda x, a, b: torch.ops.aten.index(x, [a, None, b]), {"present": [1, 0, 1]})
add("index_tensors_mask", "index_tensors", [T((3, 4)), T((3, 4), "bool")], lambda x, m: torch.ops.aten.index(x, [m]))
add("index_put_accumulate_dups", "index_put_tensors", [T((4, 3)), V([1, 3, 1, 1]), T((4, 3))],
    lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True), {"accumulate": True}, gradgrad=True)
add("index_put_two_bcast", "index_put_tensors", [T((4, 3)), V([[0], [2]]), V([0, 2]), T((2,))],
    lambda x, a, b, v: torch.index_put(x, (a, b), v))
add("index_put_inplace_acc", "index_put_tensors", [T((5,)), V([0, 0, 4, -1]), T((4,))],
    lambda x, i, v: x.clone().index_put_((i,), v, accumulate=True), {"accumulate": True, "inplace": True})
for dt in ALL:
    add("index_put_acc_dt_" + dt, "index_put_tensors", [T((4, 3), dt), V([1, 3, 1]), T((3, 3), dt)],
        lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True), {"accumulate": True})
err("index_put_dtype", "index_put_tensors", [T((4, 3)), V([1]), T((3,), "float64")],
    lambda x, i, v: torch.index_put(x, (i,), v), {},
    "Index put requires the source and destination dtypes match, got Float for the destination and Double for the source.")
err("index_put_oob", "index_put_tensors", [T((4, 3)), V([0, 0]), V([5]), T((1,))],
    lambda x, a, b, v: torch.index_put(x, (a, b), v, accumulate=True), {"accumulate": True},
    "index 5 is out of bounds for dimension 1 with size 3")
err("index_put_value_shape", "index_put_tensors", [T((4, 3)), V([0, 0]), V([1]), T((3,))],
    lambda x, a, b, v: torch.index_put(x, (a, b), v), {},
    "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2]")


# ---- x[...] (getitem) -------------------------------------------------------------------------------------
def build_items(spec, xs):
    out = []
    for tok in spec.split(","):
        if tok.startswith("int:"):
            out.append(int(tok[4:]))
        elif tok == "none":
            out.append(None)
        elif tok == "ellipsis":
            out.append(Ellipsis)
        elif tok.startswith("bool:"):
            out.append(tok[5:] == "1")
        elif tok.startswith("tensor:"):
            out.append(xs[int(tok[7:])])
        elif tok.startswith("slice:"):
            parts = tok[6:].split(":")
            parts += [""] * (3 - len(parts))
            out.append(slice(*[int(p) if p else None for p in parts]))
        else:
            raise ValueError(tok)
    return tuple(out)


def gi(name, inputs, items, view=False, **kw):
    """x[items]; basic-only expressions must give views sharing storage (check_strides)."""
    kw.setdefault("check_strides", view)
    add("getitem_" + name, "getitem", inputs, lambda *xs: xs[0][build_items(items, xs)], {"items": items}, **kw)


def gi_err(name, inputs, items, msg):
    err("getitem_" + name, "getitem", inputs, lambda *xs: xs[0][build_items(items, xs)], {"items": items}, msg)


X = (2, 3, 4)
gi("int", [T(X)], "int:1", view=True)
gi("neg_int", [T(X)], "int:-1,int:0", view=True)
gi("slices", [T(X)], "slice:1:,slice::2,slice:-3:-1", view=True, gradgrad=True)
gi("slice_clamp", [T(X)], "slice:-10:10,slice:5:", view=True)
gi("none_ellipsis", [T(X)], "none,ellipsis,none,int:0", view=True)
gi("ellipsis_mid", [T(X)], "int:0,ellipsis,int:1", view=True)
gi("ellipsis_only", [T(X)], "ellipsis", view=True)
gi("mixed_basic_nc", [T(X, layout="transposed")], "slice:::2,int:-1,none", view=True)
gi("int_0dim_tensor", [T(X), V(1)], "tensor:1", view=True)
gi("tensor_first", [T(X), I((2, 2), 2)], "tensor:1", gradgrad=True)
gi("tensor_dups", [T(X), V([1, 1, 0, 1])], "tensor:1")
gi("tensor_neg", [T(X), V([-1, -3, 2])], "slice::,tensor:1")
gi("two_adjacent", [T(X), I((3,), 3), I((3,), 4)], "slice::,tensor:1,tensor:2", gradgrad=True)
gi("two_separated", [T(X), I((3,), 2), I((3,), 4)], "tensor:1,slice::,tensor:2", gradgrad=True)
gi("sep_by_int", [T(X), V([1, 0]), V([0, 0])], "tensor:1,int:0,tensor:2")
gi("int_then_sep", [T(X), V([0, 1])], "tensor:1,slice::,int:0")
gi("broadcast_2d", [T(X), V([[1], [0]]), V([0, 3])], "tensor:1,slice::,tensor:2")
gi("none_between", [T(X), V([1, 0]), V([0, 0])], "tensor:1,none,tensor:2")
gi("none_before", [T(X), V([1, 0]), V([0, 0])], "none,tensor:1,tensor:2")
gi("python_mix", [T(X), V([1, 0]), T((4,), "bool", values=[True, False, True, False])],
   "slice:1:,tensor:1,none,ellipsis,tensor:2")
gi("mask_full", [T(X), T(X, "bool")], "tensor:1", gradgrad=True)
gi("mask_2d", [T(X), T((3, 4), "bool")], "int:1,tensor:1")
gi("mask_lead", [T(X), T((2, 3), "bool")], "tensor:1,slice::,none")
gi("mask_and_index", [T(X), T((2, 3), "bool", values=[[True, False, True], [False, True, True]]), V([0, 1, 2, 3])],
   "tensor:1,tensor:2")
gi("mask_uint8", [T(X), T((2,), "uint8", values=[1, 0])], "tensor:1")
gi("mask_0dim_true", [T(X), T((), "bool", values=True)], "tensor:1")
gi("bool_true", [T(X)], "bool:1")
gi("bool_false", [T(X)], "bool:0")
gi("bool_with_slice", [T(X)], "slice:1:,bool:1,int:0")
gi("empty_index", [T(X), I((0,), 2)], "tensor:1")
gi("empty_mask", [T(X), T((3,), "bool", values=[False, False, False])], "slice::,tensor:1")
gi("nc_self_tensor", [T(X, layout="strided"), I((2, 2), 4)], "ellipsis,tensor:1")
gi("int_self", [T((4, 5), "int32"), V([3, 0])], "tensor:1,slice:1:3")
for dt in ALL:
    gi("adv_" + dt, [T((3, 4), dt), V([2, 0, 2])], "tensor:1,slice:1:")
gi_err("too_many", [T(X)], "int:0,int:0,int:0,int:0", "too many indices for tensor of dimension 3")
gi_err("int_oob", [T(X)], "int:1,int:5", "index 5 is out of bounds for dimension 1 with size 3")
gi_err("tensor_oob", [T(X), V([4])], "slice::,slice::,tensor:1", "index 4 is out of bounds for dimension 0 with size 4")
gi_err("tensor_oob_sep", [T(X), V([0]), V([-7])], "tensor:1,slice::,tensor:2",
       "index -7 is out of bounds for dimension 1 with size 4")
gi_err("zero_step", [T(X)], "slice:::0", "slice step cannot be zero")
gi_err("neg_step", [T(X)], "slice:::-1", "step must be greater than zero")
gi_err("bcast", [T(X), V([0, 1]), V([0, 1, 2])], "tensor:1,tensor:2",
       "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]")
gi_err("mask_shape", [T(X), T((3,), "bool")], "tensor:1",
       "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3, 4] at index 0")
gi_err("mask_then_int", [T(X), T((2, 3), "bool")], "tensor:1,int:0",
       "The shape of the mask [2, 3] at index 1 does not match the shape of the indexed tensor [2, 4] at index 1")
gi_err("int32_index", [T(X), V([0], "int32")], "tensor:1", "tensors used as indices must be long, byte or bool tensors")
gi_err("float_index", [T(X), T((1,), requires_grad=False)], "tensor:1",
       "tensors used as indices must be long, byte or bool tensors")
gi_err("0dim_int", [T(())], "int:0", "too many indices for tensor of dimension 0")
gi("two_ellipsis", [T(X)], "ellipsis,int:0,ellipsis", view=True)


# ---- x[...] = v (setitem) ------------------------------------------------------------------------------------
def si(name, inputs, items, scalar=None, **kw):
    attrs = {"items": items}
    if scalar is not None:
        attrs["scalar"] = scalar

    def fn(*xs):
        y = xs[0].clone()
        y[build_items(items, xs)] = scalar if scalar is not None else xs[-1]
        return y
    add("setitem_" + name, "setitem", inputs, fn, attrs, **kw)


def si_err(name, inputs, items, msg):
    def fn(*xs):
        y = xs[0].clone()
        y[build_items(items, xs)] = xs[-1]
        return y
    err("setitem_" + name, "setitem", inputs, fn, {"items": items}, msg)


si("basic_row", [T(X), T((4,))], "int:0,int:1", gradgrad=True)
si("basic_broadcast", [T(X), T((3, 1))], "int:1")
si("basic_leading_ones", [T(X), T((1, 1, 4))], "int:0")
si("basic_dtype_convert", [T(X), T((4,), "float64")], "slice::,int:2")
si("basic_scalar", [T(X)], "slice:1:,slice::2", scalar=2.5)
si("basic_int_self", [T(X, "int64")], "ellipsis,int:0", scalar=-3)
si("tensor_rows", [T(X), V([1, 0]), T((2, 3, 4))], "tensor:1", gradgrad=True)
si("tensor_bcast", [T(X), V([2, 0]), T((4,))], "slice::,tensor:1")
si("tensor_sep", [T(X), V([1, 0]), V([3, 0]), T((2, 3))], "tensor:1,slice::,tensor:2")
si("tensor_leading_ones", [T(X), V([1]), T((1, 1, 1, 4))], "tensor:1")
si("mask_scalar", [T(X), T(X, "bool")], "tensor:1", scalar=0.0)
si("mask_values", [T(X), T((2, 3), "bool", values=[[True, False, True], [False, False, True]]), T((3, 4))], "tensor:1")
si("mixed", [T(X), V([1, 0]), T((4,), "bool", values=[True, False, True, False]), T((2, 1, 1))], "slice:1:,tensor:1,none,tensor:2")
si("nc_self", [T(X, layout="transposed"), V([2, 0]), T((2,))], "int:1,slice::,tensor:1")
si("bool_item", [T(X), T((1, 2, 3, 4))], "bool:1")
for dt in ALL:
    si("tensor_" + dt, [T((3, 4), dt), V([2, 0]), T((2, 4), dt)], "tensor:1")
si_err("value_shape", [T(X), V([0]), T((2,))], "tensor:1",
       "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape [1, 3, 4]")
si_err("value_dtype", [T(X), V([0]), T((4,), "float64")], "tensor:1",
       "Index put requires the source and destination dtypes match, got Float for the destination and Double for the source.")
si_err("basic_shape", [T(X), T((2, 4))], "int:0", "The expanded size of the tensor (3) must match the existing size (2)")
