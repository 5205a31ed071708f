"""Parity cases of the shape family: cat/stack/hstack/vstack/dstack, split/chunk/tensor_split/
unbind, flip, roll, rot90, repeat, tile, repeat_interleave, tril/triu, pad, meshgrid,
broadcast_tensors."""
import torch
import torch.nn.functional as F
from parity_lib import case, T

ALL = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]

CASES = []
add = CASES.append

# ---- cat and friends --------------------------------------------------------------------------
for dt in ALL:
    add(case("cat_%s" % dt, "cat", [T((2, 3), dt), T((2, 1), dt)], lambda a, b: torch.cat([a, b], 1),
             attrs={"dim": 1}))
    add(case("stack_%s" % dt, "stack", [T((2, 3), dt), T((2, 3), dt)], lambda a, b: torch.stack([a, b], 1),
             attrs={"dim": 1}))
add(case("cat_dim0_gradgrad", "cat", [T((2, 3), "float64"), T((1, 3), "float64"), T((4, 3), "float64")],
         lambda *xs: torch.cat(xs, 0), attrs={"dim": 0}, gradgrad=True))
add(case("cat_neg_dim_nc", "cat", [T((2, 3, 2), layout="transposed"), T((2, 3, 1), layout="strided")],
         lambda a, b: torch.cat([a, b], -1), attrs={"dim": -1}, gradgrad=True))
add(case("cat_promote", "cat", [T((2, 2)), T((2, 2), "float64"), T((1, 2), "int64")],
         lambda *xs: torch.cat(xs, 0), attrs={"dim": 0}))
add(case("cat_promote_bool_uint8", "cat", [T((2,), "bool"), T((2,), "uint8")], lambda *xs: torch.cat(xs), attrs={"dim": 0}))
add(case("cat_legacy_empty", "cat", [T((2, 3)), T((0,)), T((1, 3))], lambda *xs: torch.cat(xs, 0), attrs={"dim": 0}))
add(case("cat_legacy_empty_promotes", "cat", [T((2, 3)), T((0,), "float64")], lambda *xs: torch.cat(xs, 1),
         attrs={"dim": 1}))
add(case("cat_all_empty", "cat", [T((0,)), T((0,))], lambda *xs: torch.cat(xs), attrs={"dim": 0}))
add(case("cat_zero_size", "cat", [T((2, 0)), T((2, 3)), T((2, 0))], lambda *xs: torch.cat(xs, 1), attrs={"dim": 1}))
add(case("cat_many", "cat", [T((1, 2)) for _ in range(8)], lambda *xs: torch.cat(xs, 0), attrs={"dim": 0},
         gradgrad=True))
add(case("cat_out", "cat", [T((2, 2), requires_grad=False), T((1, 2), requires_grad=False)],
         lambda a, b: torch.cat([a, b], 0, out=torch.empty(0)), attrs={"dim": 0, "out": 1}))
add(case("cat_err_sizes", "cat", [T((2, 3)), T((2, 4))], lambda a, b: torch.cat([a, b]), attrs={"dim": 0},
         error="Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list."))
add(case("cat_err_ndim", "cat", [T((2, 3)), T((3,))], lambda a, b: torch.cat([a, b]), attrs={"dim": 0},
         error="Tensors must have same number of dimensions: got 2 and 1"))
add(case("cat_err_0dim", "cat", [T(()), T((2,))], lambda a, b: torch.cat([a, b]), attrs={"dim": 0},
         error="zero-dimensional tensor (at position 0) cannot be concatenated"))
add(case("cat_err_dim", "cat", [T((2, 3)), T((2, 3))], lambda a, b: torch.cat([a, b], 2), attrs={"dim": 2},
         error="Dimension out of range (expected to be in range of [-2, 1], but got 2)"))
add(case("stack_0dim", "stack", [T(()), T(())], lambda a, b: torch.stack([a, b]), attrs={"dim": 0}))
add(case("stack_last_nc", "stack", [T((2, 3), layout="transposed"), T((2, 3))], lambda a, b: torch.stack([a, b], -1),
         attrs={"dim": -1}, gradgrad=True))
add(case("stack_err", "stack", [T((2, 3)), T((2, 4))], lambda a, b: torch.stack([a, b]), attrs={"dim": 0},
         error="stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1"))
for name, fn in [("hstack", torch.hstack), ("vstack", torch.vstack), ("dstack", torch.dstack)]:
    add(case("%s_1d" % name, name, [T((3,)), T((3,))], (lambda fn: lambda a, b: fn([a, b]))(fn)))
    add(case("%s_2d" % name, name, [T((2, 3)), T((2, 3), "float64")], (lambda fn: lambda a, b: fn([a, b]))(fn)))
    add(case("%s_0d" % name, name, [T(()), T(())], (lambda fn: lambda a, b: fn([a, b]))(fn)))
add(case("hstack_3d_int", "hstack", [T((2, 1, 2), "int32"), T((2, 3, 2), "int32")], lambda a, b: torch.hstack([a, b])))

# ---- split family (views) -----------------------------------------------------------------
for dt in ["float32", "int64", "bool", "float16"]:
    add(case("split_%s" % dt, "split", [T((5, 2), dt)], lambda t: torch.split(t, 2), attrs={"size": 2, "dim": 0}))
add(case("split_dim1_nc", "split", [T((3, 5), layout="transposed")], lambda t: torch.split(t, 2, 1),
         attrs={"size": 2, "dim": 1}, gradgrad=True))
add(case("split_sizes", "split", [T((6, 2), "float64")], lambda t: torch.split(t, [1, 0, 5]),
         attrs={"sizes": [1, 0, 5], "dim": 0}))
add(case("split_zero", "split", [T((0, 2))], lambda t: torch.split(t, 0), attrs={"size": 0, "dim": 0}))
add(case("split_err_neg", "split", [T((5,))], lambda t: torch.split(t, -1), attrs={"size": -1, "dim": 0},
         error="split expects split_size be non-negative, but got split_size=-1"))
add(case("split_err_sum", "split", [T((5,))], lambda t: torch.split(t, [2, 2]), attrs={"sizes": [2, 2], "dim": 0},
         error="split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), but got split_sizes=[2, 2]"))
add(case("split_err_0dim", "split", [T(())], lambda t: torch.split(t, 1), attrs={"size": 1, "dim": 0},
         error="split expects at least a 1-dimensional tensor"))
add(case("chunk_5_3", "chunk", [T((5, 3))], lambda t: torch.chunk(t, 3), attrs={"chunks": 3, "dim": 0}))
add(case("chunk_6_4_dim1", "chunk", [T((2, 6), "int16")], lambda t: torch.chunk(t, 4, 1), attrs={"chunks": 4, "dim": 1}))
add(case("chunk_empty", "chunk", [T((0, 2))], lambda t: torch.chunk(t, 3), attrs={"chunks": 3, "dim": 0}))
add(case("chunk_err", "chunk", [T((5,))], lambda t: torch.chunk(t, 0), attrs={"chunks": 0, "dim": 0},
         error="chunk expects `chunks` to be greater than 0, got: 0"))
add(case("tensor_split_sections", "tensor_split", [T((7, 2))], lambda t: torch.tensor_split(t, 3),
         attrs={"sections": 3, "dim": 0}))
add(case("tensor_split_indices", "tensor_split", [T((7,), "float64")], lambda t: torch.tensor_split(t, [1, 5, 3]),
         attrs={"indices": [1, 5, 3], "dim": 0}))
add(case("tensor_split_dim1", "tensor_split", [T((2, 5), "uint8")], lambda t: torch.tensor_split(t, 2, dim=1),
         attrs={"sections": 2, "dim": 1}))
add(case("tensor_split_err", "tensor_split", [T((5,))], lambda t: torch.tensor_split(t, 0), attrs={"sections": 0, "dim": 0},
         error="number of sections must be larger than 0, got 0"))
add(case("unbind_0", "unbind", [T((3, 2))], lambda t: torch.unbind(t), attrs={"dim": 0}))
add(case("unbind_1_nc_f64", "unbind", [T((3, 2), "float64", layout="transposed")], lambda t: torch.unbind(t, 1),
         attrs={"dim": 1}, gradgrad=True))
add(case("unbind_int8", "unbind", [T((2, 2), "int8")], lambda t: torch.unbind(t, -1), attrs={"dim": -1}))
add(case("unbind_err_0dim", "unbind", [T(())], lambda t: torch.unbind(t), attrs={"dim": 0},
         error="Dimension specified as 0 but tensor has no dimensions"))

# ---- flip / roll / rot90 -------------------------------------------------------------------
for dt in ALL:
    add(case("flip_%s" % dt, "flip", [T((2, 3, 2), dt)], lambda t: torch.flip(t, [0, 2]), attrs={"dims": [0, 2]}))
    add(case("roll_%s" % dt, "roll", [T((3, 4), dt)], lambda t: torch.roll(t, (1, -5), (0, 1)),
             attrs={"shifts": [1, -5], "dims": [0, 1]}))
add(case("flip_nc_gradgrad", "flip", [T((3, 4), "float64", layout="transposed")], lambda t: torch.flip(t, [-1]),
         attrs={"dims": [-1]}, gradgrad=True))
add(case("flip_0dim", "flip", [T(())], lambda t: torch.flip(t, [0]), attrs={"dims": [0]}))
add(case("flip_empty", "flip", [T((0, 3))], lambda t: torch.flip(t, [0, 1]), attrs={"dims": [0, 1]}))
add(case("flip_err_dup", "flip", [T((2, 3))], lambda t: torch.flip(t, [0, 0]), attrs={"dims": [0, 0]},
         error="dim 0 appears multiple times in the list of dims"))
add(case("roll_flat", "roll", [T((2, 3), layout="strided")], lambda t: torch.roll(t, 4), attrs={"shifts": [4]},
         gradgrad=True))
add(case("roll_same_dim_twice", "roll", [T((5,), "float64")], lambda t: torch.roll(t, (1, 2), (0, 0)),
         attrs={"shifts": [1, 2], "dims": [0, 0]}))
add(case("roll_0dim", "roll", [T(())], lambda t: torch.roll(t, 3), attrs={"shifts": [3]}))
add(case("roll_empty", "roll", [T((0, 3))], lambda t: torch.roll(t, 1, 0), attrs={"shifts": [1], "dims": [0]}))
add(case("roll_gradgrad", "roll", [T((3, 4), "float64")], lambda t: torch.roll(t, (2, 1), (1, 0)),
         attrs={"shifts": [2, 1], "dims": [1, 0]}, gradgrad=True))
add(case("roll_err_align", "roll", [T((2, 3))], lambda t: torch.roll(t, [1, 2], [0]), attrs={"shifts": [1, 2], "dims": [0]},
         error="shifts and dimensions must align. shifts: 2, dims:1"))
for k in [1, 2, 3, 4, -1]:
    add(case("rot90_k%d" % (k + 10), "rot90", [T((2, 3, 2))], (lambda k: lambda t: torch.rot90(t, k, [0, 2]))(k),
             attrs={"k": k, "dims": [0, 2]}))
add(case("rot90_int_nc", "rot90", [T((3, 4), "int64", layout="transposed")], lambda t: torch.rot90(t, 1, [1, 0]),
         attrs={"k": 1, "dims": [1, 0]}))
add(case("rot90_err_dims", "rot90", [T((2, 3))], lambda t: torch.rot90(t, 1, [0, 0]), attrs={"k": 1, "dims": [0, 0]},
         error="expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"))

# ---- repeat / tile / repeat_interleave -----------------------------------------------------
for dt in ALL:
    add(case("repeat_%s" % dt, "repeat", [T((2, 3), dt)], lambda t: t.repeat(2, 1, 3), attrs={"repeats": [2, 1, 3]}))
add(case("repeat_gradgrad_nc", "repeat", [T((2, 3), "float64", layout="transposed")], lambda t: t.repeat(3, 2),
         attrs={"repeats": [3, 2]}, gradgrad=True))
add(case("repeat_size1", "repeat", [T((1, 3, 1))], lambda t: t.repeat(2, 2, 4), attrs={"repeats": [2, 2, 4]}))
add(case("repeat_zero", "repeat", [T((2, 3))], lambda t: t.repeat(2, 0), attrs={"repeats": [2, 0]}))
add(case("repeat_0dim", "repeat", [T(())], lambda t: t.repeat(3, 2), attrs={"repeats": [3, 2]}))
add(case("repeat_err", "repeat", [T((2, 3))], lambda t: t.repeat(2), attrs={"repeats": [2]},
         error="Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"))
add(case("tile_short", "tile", [T((2, 3))], lambda t: torch.tile(t, (2,)), attrs={"reps": [2]}))
add(case("tile_long_int", "tile", [T((2,), "int32")], lambda t: torch.tile(t, (2, 2)), attrs={"reps": [2, 2]}))
for dt in ["float32", "float64", "int64", "bool", "bfloat16"]:
    add(case("repeat_interleave_%s" % dt, "repeat_interleave", [T((2, 3), dt)],
             lambda t: torch.repeat_interleave(t, 2, 0), attrs={"repeats": 2, "dim": 0}))
add(case("repeat_interleave_flat", "repeat_interleave", [T((2, 3), layout="transposed")],
         lambda t: torch.repeat_interleave(t, 3), attrs={"repeats": 3}, gradgrad=True))
add(case("repeat_interleave_tensor", "repeat_interleave", [T((3, 2), "float64"), T((3,), "int64", low=0, high=4)],
         lambda t, r: torch.repeat_interleave(t, r, 0), attrs={"dim": 0}, gradgrad=True))
add(case("repeat_interleave_tensor_dim1", "repeat_interleave", [T((2, 3)), T((3,), "int32", low=0, high=3)],
         lambda t, r: torch.repeat_interleave(t, r, dim=1), attrs={"dim": 1}))
add(case("repeat_interleave_tensor_1", "repeat_interleave", [T((2, 3)), T((1,), "int64", values=[2])],
         lambda t, r: torch.repeat_interleave(t, r, dim=-1), attrs={"dim": -1}))
add(case("repeat_interleave_index", "repeat_interleave", [T((4,), "int64", low=0, high=3)],
         lambda r: torch.repeat_interleave(r), attrs={"index": 1}))
add(case("repeat_interleave_err_neg", "repeat_interleave", [T((2, 3)), T((2,), "int64", values=[1, -2])],
         lambda t, r: torch.repeat_interleave(t, r, 0), attrs={"dim": 0}, error="repeats can not be negative"))
add(case("repeat_interleave_err_size", "repeat_interleave", [T((2, 3)), T((3,), "int64", values=[1, 2, 3])],
         lambda t, r: torch.repeat_interleave(t, r, 0), attrs={"dim": 0},
         error="repeats must have the same size as input along dim"))

# ---- tril / triu -----------------------------------------------------------------------------
for dt in ALL:
    add(case("tril_%s" % dt, "tril", [T((3, 4), dt)], lambda t: torch.tril(t), attrs={"diagonal": 0}))
    add(case("triu_%s" % dt, "triu", [T((2, 3, 3), dt)], lambda t: torch.triu(t, 1), attrs={"diagonal": 1}))
add(case("tril_neg_nc", "tril", [T((4, 3), "float64", layout="transposed")], lambda t: torch.tril(t, -1),
         attrs={"diagonal": -1}, gradgrad=True))
add(case("triu_big_diag", "triu", [T((3, 3))], lambda t: torch.triu(t, 5), attrs={"diagonal": 5}))
add(case("tril_inplace", "tril", [T((3, 3), requires_grad=False)], lambda t: t.clone().tril_(1),
         attrs={"diagonal": 1, "inplace": 1}))
add(case("tril_empty", "tril", [T((0, 3))], lambda t: torch.tril(t), attrs={"diagonal": 0}))
add(case("tril_err_1d", "tril", [T((3,))], lambda t: torch.tril(t), attrs={"diagonal": 0},
         error="Dimension out of range (expected to be in range of [-1, 0], but got -2)"))

# ---- pad -------------------------------------------------------------------------------------
for dt in ALL:
    v = 1 if dt == "bool" else 2.0 if dt in ("float32", "float64", "float16", "bfloat16") else 3
    add(case("pad_constant_%s" % dt, "pad", [T((2, 3), dt)], (lambda v: lambda t: F.pad(t, (1, 2, 0, 1), value=v))(v),
             attrs={"pad": [1, 2, 0, 1], "value": float(v)}))
add(case("pad_constant_negative", "pad", [T((3, 4), "float64")], lambda t: F.pad(t, (-1, 2, 1, -2)),
         attrs={"pad": [-1, 2, 1, -2]}, gradgrad=True))
add(case("pad_constant_crop_only", "pad", [T((3, 4))], lambda t: F.pad(t, (-2, -1)), attrs={"pad": [-2, -1]}))
add(case("pad_constant_nc_3d", "pad", [T((2, 3, 2), layout="transposed")], lambda t: F.pad(t, (1, 1, 2, 0, 1, 1), value=-1.5),
         attrs={"pad": [1, 1, 2, 0, 1, 1], "value": -1.5}, gradgrad=True))
add(case("pad_constant_empty", "pad", [T((0, 2))], lambda t: F.pad(t, (1, 1)), attrs={"pad": [1, 1]}))
for mode in ["reflect", "replicate"]:
    for dt in ["float32", "float64"]:
        add(case("pad_%s_1d_%s" % (mode, dt), "pad", [T((2, 5), dt)],
                 (lambda m: lambda t: F.pad(t, (3, 2), mode=m))(mode), attrs={"pad": [3, 2], "mode": mode},
                 gradgrad=dt == "float64"))
    add(case("pad_%s_2d" % mode, "pad", [T((2, 3, 4), layout="transposed")],
             (lambda m: lambda t: F.pad(t, (1, 2, 2, 1), mode=m))(mode), attrs={"pad": [1, 2, 2, 1], "mode": mode},
             gradgrad=True))
    add(case("pad_%s_3d" % mode, "pad", [T((1, 2, 3, 3, 4), "float64")],
             (lambda m: lambda t: F.pad(t, (1, 1, 2, 1, 0, 1), mode=m))(mode),
             attrs={"pad": [1, 1, 2, 1, 0, 1], "mode": mode}, gradgrad=True))
    add(case("pad_%s_negative" % mode, "pad", [T((2, 5))], (lambda m: lambda t: F.pad(t, (-1, 2), mode=m))(mode),
             attrs={"pad": [-1, 2], "mode": mode}))
add(case("pad_circular_1d", "pad", [T((1, 2, 4), "float64")], lambda t: F.pad(t, (3, 2), mode="circular"),
         attrs={"pad": [3, 2], "mode": "circular"}, gradgrad=True))
add(case("pad_circular_2d_int", "pad", [T((1, 1, 3, 4), "int64")], lambda t: F.pad(t, (1, 1, 2, 0), mode="circular"),
         attrs={"pad": [1, 1, 2, 0], "mode": "circular"}))
add(case("pad_circular_negative", "pad", [T((1, 2, 4))], lambda t: F.pad(t, (-1, 2), mode="circular"),
         attrs={"pad": [-1, 2], "mode": "circular"}))
add(case("pad_err_odd", "pad", [T((2, 3))], lambda t: F.pad(t, (1,)), attrs={"pad": [1]},
         error="Padding length must be divisible by 2"))
add(case("pad_err_reflect_size", "pad", [T((2, 3))], lambda t: F.pad(t, (3, 1), mode="reflect"),
         attrs={"pad": [3, 1], "mode": "reflect"},
         error="Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, 1) at dimension 1 of input [2, 3]"))
add(case("pad_err_reflect_dims", "pad", [T((2, 3))], lambda t: F.pad(t, (1, 1, 1, 1), mode="reflect"),
         attrs={"pad": [1, 1, 1, 1], "mode": "reflect"},
         error="Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"))
add(case("pad_err_circular_wrap", "pad", [T((1, 2, 3))], lambda t: F.pad(t, (4, 3), mode="circular"),
         attrs={"pad": [4, 3], "mode": "circular"}, error="Padding value causes wrapping around more than once."))
add(case("pad_err_reflect_long", "pad", [T((1, 2, 3), "int64")], lambda t: F.pad(t, (1, 1), mode="reflect"),
         attrs={"pad": [1, 1], "mode": "reflect"}, error="\"reflection_pad1d\" not implemented for 'Long'"))

# ---- meshgrid / broadcast_tensors ----------------------------------------------------------
add(case("meshgrid_ij", "meshgrid", [T((2,)), T((3,)), T((4,))], lambda *xs: torch.meshgrid(*xs, indexing="ij"),
         attrs={"indexing": "ij"}))
add(case("meshgrid_xy", "meshgrid", [T((2,), "float64"), T((3,), "float64"), T((4,), "float64")],
         lambda *xs: torch.meshgrid(*xs, indexing="xy"), attrs={"indexing": "xy"}, gradgrad=True))
add(case("meshgrid_0d_int", "meshgrid", [T((2,), "int64"), T((), "int64")], lambda *xs: torch.meshgrid(*xs, indexing="xy"),
         attrs={"indexing": "xy"}))
add(case("meshgrid_err_dtype", "meshgrid", [T((2,)), T((3,), "float64")], lambda *xs: torch.meshgrid(*xs, indexing="ij"),
         attrs={"indexing": "ij"}, error="meshgrid expects all tensors to have the same dtype"))
add(case("broadcast_tensors", "broadcast_tensors", [T((2, 1)), T((3,)), T(())], lambda *xs: torch.broadcast_tensors(*xs)))
add(case("broadcast_tensors_int_nc", "broadcast_tensors", [T((1, 3), "int32"), T((2, 1), "int32", layout="strided")],
         lambda *xs: torch.broadcast_tensors(*xs)))
add(case("broadcast_tensors_err", "broadcast_tensors", [T((2, 1)), T((3, 2))], lambda *xs: torch.broadcast_tensors(*xs),
         error="The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"))
