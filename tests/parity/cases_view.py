"""Parity cases of the view ops (src/ops/view.c). check_strides=True: the outputs' strides,
storage offsets and storage sharing must equal PyTorch's, not only their values."""
import torch
from parity_lib import case, T

CASES = []


def v(name, op, inputs, fn, attrs=None, **kw):
    kw.setdefault("check_strides", True)
    kw.setdefault("gradgrad", False)
    CASES.append(case(name, op, inputs, fn, attrs=attrs, **kw))


def err(name, op, inputs, fn, attrs, msg):
    CASES.append(case(name, op, inputs, fn, attrs=attrs, error=msg))


# view / reshape
v("view_basic", "view", [T((2, 3, 4))], lambda x: x.view(6, 4), {"shape": [6, 4]}, gradgrad=True)
v("view_infer", "view", [T((2, 3, 4))], lambda x: x.view(-1, 2), {"shape": [-1, 2]})
v("view_0dim_to_1", "view", [T(())], lambda x: x.view(1, 1), {"shape": [1, 1]})
v("view_to_0dim", "view", [T((1,))], lambda x: x.view(()), {"shape": []})
v("view_empty", "view", [T((0, 4))], lambda x: x.view(2, 0, 2), {"shape": [2, 0, 2]})
v("view_transposed_ok", "view", [T((4, 3), layout="transposed")], lambda x: x.view(2, 2, 3), {"shape": [2, 2, 3]})
v("view_strided_split", "view", [T((3, 4), layout="strided")], lambda x: x.view(3, 2, 2), {"shape": [3, 2, 2]})
v("view_int", "view", [T((2, 3), "int32")], lambda x: x.view(3, 2), {"shape": [3, 2]})
err("view_incompatible", "view", [T((4, 3), layout="transposed")], lambda x: x.view(12), {"shape": [12]},
    "view size is not compatible with input tensor's size and stride")
err("view_bad_numel", "view", [T((2, 3))], lambda x: x.view(4, 2), {"shape": [4, 2]},
    "shape '[4, 2]' is invalid for input of size 6")
err("view_two_infer", "view", [T((2, 3))], lambda x: x.view(-1, -1), {"shape": [-1, -1]},
    "only one dimension can be inferred")
v("reshape_view_path", "reshape", [T((2, 3, 4))], lambda x: x.reshape(4, 6), {"shape": [4, 6]})
v("reshape_copy_path", "reshape", [T((4, 3), layout="transposed")], lambda x: x.reshape(12), {"shape": [12]},
  gradgrad=True)
v("reshape_strided_copy", "reshape", [T((3, 4), layout="strided")], lambda x: x.reshape(12), {"shape": [12]})
v("reshape_infer_0dim", "reshape", [T(())], lambda x: x.reshape(-1), {"shape": [-1]})
v("reshape_bool", "reshape", [T((2, 3), "bool")], lambda x: x.reshape(3, 2), {"shape": [3, 2]})
v("view_as", "view_as", [T((2, 6)), T((3, 4), requires_grad=False)], lambda x, o: x.view_as(o))
v("reshape_as_copy", "reshape_as", [T((4, 3), layout="transposed"), T((12,), requires_grad=False)],
  lambda x, o: x.reshape_as(o))

# permute / transpose / t / mT / movedim
v("permute_3d", "permute", [T((2, 3, 4))], lambda x: x.permute(2, 0, 1), {"dims": [2, 0, 1]}, gradgrad=True)
v("permute_neg", "permute", [T((2, 3, 4), layout="transposed")], lambda x: x.permute(-1, 1, 0), {"dims": [-1, 1, 0]})
v("permute_0dim", "permute", [T(())], lambda x: x.permute(()), {"dims": []})
err("permute_dup", "permute", [T((2, 3))], lambda x: x.permute(0, 0), {"dims": [0, 0]}, "duplicate dims are not allowed")
err("permute_len", "permute", [T((2, 3))], lambda x: x.permute(0,), {"dims": [0]},
    "number of dimensions in the tensor input does not match the length of the desired ordering of dimensions")
v("transpose_basic", "transpose", [T((2, 3, 4))], lambda x: x.transpose(0, 2), {"dim0": 0, "dim1": 2})
v("transpose_neg", "transpose", [T((2, 3, 4), layout="strided")], lambda x: x.transpose(-1, -2), {"dim0": -1, "dim1": -2})
v("transpose_same", "transpose", [T((2, 3))], lambda x: x.transpose(1, 1), {"dim0": 1, "dim1": 1})
err("transpose_range", "transpose", [T((2, 3))], lambda x: x.transpose(0, 2), {"dim0": 0, "dim1": 2},
    "Dimension out of range (expected to be in range of [-2, 1], but got 2)")
v("t_2d", "t", [T((2, 3))], lambda x: x.t())
v("t_1d", "t", [T((3,))], lambda x: x.t())
v("t_0dim", "t", [T(())], lambda x: x.t())
err("t_3d", "t", [T((2, 3, 4))], lambda x: x.t(), {}, "t() expects a tensor with <= 2 dimensions, but self is 3D")
v("mT_3d", "mT", [T((2, 3, 4))], lambda x: x.mT)
err("mT_1d", "mT", [T((3,))], lambda x: x.mT, {}, "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
v("movedim_one", "movedim", [T((2, 3, 4))], lambda x: torch.movedim(x, 0, 2), {"source": [0], "destination": [2]})
v("movedim_two", "movedim", [T((2, 3, 4, 5))], lambda x: torch.movedim(x, (0, 1), (3, 0)),
  {"source": [0, 1], "destination": [3, 0]})
v("movedim_neg", "movedim", [T((2, 3, 4))], lambda x: torch.movedim(x, -1, 0), {"source": [-1], "destination": [0]})

# expand / broadcast
v("expand_basic", "expand", [T((3, 1))], lambda x: x.expand(3, 4), {"shape": [3, 4]}, gradgrad=True)
v("expand_new_dims", "expand", [T((3, 1))], lambda x: x.expand(2, 3, 5), {"shape": [2, 3, 5]})
v("expand_keep", "expand", [T((3, 1))], lambda x: x.expand(-1, 4), {"shape": [-1, 4]})
v("expand_0dim", "expand", [T(())], lambda x: x.expand(2, 3), {"shape": [2, 3]})
v("expand_zero", "expand", [T((1, 3))], lambda x: x.expand(0, 3), {"shape": [0, 3]})
v("expand_transposed", "expand", [T((1, 3, 1), layout="transposed")], lambda x: x.expand(2, 3, 4), {"shape": [2, 3, 4]})
err("expand_bad", "expand", [T((3, 2))], lambda x: x.expand(3, 4), {"shape": [3, 4]},
    "The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 1.  Target sizes: [3, 4].  Tensor sizes: [3, 2]")
err("expand_fewer", "expand", [T((3, 2))], lambda x: x.expand(2), {"shape": [2]},
    "the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)")
err("expand_leading_neg", "expand", [T((3,))], lambda x: x.expand(-1, 3), {"shape": [-1, 3]},
    "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0")
v("expand_as", "expand_as", [T((1, 4)), T((3, 4), requires_grad=False)], lambda x, o: x.expand_as(o))
v("broadcast_to", "broadcast_to", [T((4,))], lambda x: torch.broadcast_to(x, (2, 3, 4)), {"shape": [2, 3, 4]})

# squeeze / unsqueeze / flatten / unflatten
v("squeeze_all", "squeeze", [T((1, 3, 1, 2))], lambda x: x.squeeze())
v("squeeze_dim", "squeeze", [T((1, 3, 1, 2))], lambda x: x.squeeze(2), {"dim": 2})
v("squeeze_dim_noop", "squeeze", [T((2, 3))], lambda x: x.squeeze(1), {"dim": 1})
v("squeeze_0dim", "squeeze", [T(())], lambda x: x.squeeze())
v("squeeze_0dim_dim", "squeeze", [T(())], lambda x: x.squeeze(0), {"dim": 0})
v("squeeze_transposed", "squeeze", [T((3, 1, 2), layout="transposed")], lambda x: x.squeeze())
v("unsqueeze_front", "unsqueeze", [T((2, 3))], lambda x: x.unsqueeze(0), {"dim": 0}, gradgrad=True)
v("unsqueeze_end", "unsqueeze", [T((2, 3))], lambda x: x.unsqueeze(-1), {"dim": -1})
v("unsqueeze_mid_strided", "unsqueeze", [T((2, 3), layout="strided")], lambda x: x.unsqueeze(1), {"dim": 1})
v("unsqueeze_0dim", "unsqueeze", [T(())], lambda x: x.unsqueeze(0), {"dim": 0})
err("unsqueeze_range", "unsqueeze", [T((2, 3))], lambda x: x.unsqueeze(3), {"dim": 3},
    "Dimension out of range (expected to be in range of [-3, 2], but got 3)")
v("flatten_all", "flatten", [T((2, 3, 4))], lambda x: x.flatten())
v("flatten_mid", "flatten", [T((2, 3, 4, 5))], lambda x: x.flatten(1, 2), {"start_dim": 1, "end_dim": 2})
v("flatten_copy", "flatten", [T((2, 3, 4), layout="transposed")], lambda x: x.flatten(0, 1), {"start_dim": 0, "end_dim": 1})
v("flatten_0dim", "flatten", [T(())], lambda x: x.flatten())
err("flatten_bad", "flatten", [T((2, 3, 4))], lambda x: x.flatten(2, 1), {"start_dim": 2, "end_dim": 1},
    "flatten() has invalid args: start_dim cannot come after end_dim")
v("unflatten", "unflatten", [T((2, 12))], lambda x: x.unflatten(1, (3, 4)), {"dim": 1, "sizes": [3, 4]})
v("unflatten_infer", "unflatten", [T((2, 12))], lambda x: x.unflatten(-1, (-1, 2)), {"dim": -1, "sizes": [-1, 2]})

# narrow / select / slice
v("narrow", "narrow", [T((4, 5))], lambda x: x.narrow(1, 1, 3), {"dim": 1, "start": 1, "length": 3}, gradgrad=True)
v("narrow_neg_start", "narrow", [T((4, 5))], lambda x: x.narrow(0, -2, 2), {"dim": 0, "start": -2, "length": 2})
v("narrow_empty", "narrow", [T((4, 5))], lambda x: x.narrow(0, 4, 0), {"dim": 0, "start": 4, "length": 0})
err("narrow_too_long", "narrow", [T((4, 5))], lambda x: x.narrow(0, 2, 3), {"dim": 0, "start": 2, "length": 3},
    "start (2) + length (3) exceeds dimension size (4).")
err("narrow_0dim", "narrow", [T(())], lambda x: x.narrow(0, 0, 1), {"dim": 0, "start": 0, "length": 1},
    "narrow() cannot be applied to a 0-dim tensor.")
v("select", "select", [T((3, 4))], lambda x: x.select(1, 2), {"dim": 1, "index": 2}, gradgrad=True)
v("select_neg", "select", [T((3, 4), layout="transposed")], lambda x: x.select(0, -1), {"dim": 0, "index": -1})
v("select_to_0dim", "select", [T((3,))], lambda x: x.select(0, 1), {"dim": 0, "index": 1})
err("select_range", "select", [T((3, 4))], lambda x: x.select(0, 3), {"dim": 0, "index": 3},
    "select(): index 3 out of range for tensor of size [3, 4] at dimension 0")
err("select_0dim", "select", [T(())], lambda x: x.select(0, 0), {"dim": 0, "index": 0},
    "select() cannot be applied to a 0-dim tensor.")
v("slice_step", "slice", [T((10, 3))], lambda x: x[1:8:3], {"dim": 0, "start": 1, "end": 8, "step": 3}, gradgrad=True)
v("slice_open", "slice", [T((4, 6))], lambda x: x[:, 2:], {"dim": 1, "start": 2})
v("slice_neg", "slice", [T((4, 6))], lambda x: x[:, -4:-1], {"dim": 1, "start": -4, "end": -1})
v("slice_clamp", "slice", [T((4, 6))], lambda x: x[-100:100], {"dim": 0, "start": -100, "end": 100})
v("slice_empty", "slice", [T((4, 6))], lambda x: x[3:1], {"dim": 0, "start": 3, "end": 1})
v("slice_strided_input", "slice", [T((4, 6), layout="strided")], lambda x: x[:, 1::2], {"dim": 1, "start": 1, "step": 2})

# diagonal / as_strided / unfold / alias
v("diagonal", "diagonal", [T((3, 4))], lambda x: x.diagonal(), gradgrad=True)
v("diagonal_offset", "diagonal", [T((3, 4))], lambda x: x.diagonal(1), {"offset": 1})
v("diagonal_neg_offset", "diagonal", [T((4, 3))], lambda x: x.diagonal(-2), {"offset": -2})
v("diagonal_dims", "diagonal", [T((2, 3, 4), layout="transposed")], lambda x: x.diagonal(0, 0, 2),
  {"offset": 0, "dim1": 0, "dim2": 2})
v("diagonal_out_of_range_offset", "diagonal", [T((3, 4))], lambda x: x.diagonal(10), {"offset": 10})
err("diagonal_same_dims", "diagonal", [T((3, 4))], lambda x: x.diagonal(0, 1, 1), {"offset": 0, "dim1": 1, "dim2": 1},
    "diagonal dimensions cannot be identical 1, 1")
v("as_strided", "as_strided", [T((4, 4))], lambda x: x.as_strided((2, 3), (4, 1), 1),
  {"size": [2, 3], "stride": [4, 1], "storage_offset": 1})
v("as_strided_overlap", "as_strided", [T((6,))], lambda x: x.as_strided((3, 3), (1, 1)),
  {"size": [3, 3], "stride": [1, 1]})
v("as_strided_transposed", "as_strided", [T((3, 4), layout="transposed")], lambda x: x.as_strided((2, 2), (1, 3)),
  {"size": [2, 2], "stride": [1, 3]})
err("as_strided_oob", "as_strided", [T((4,))], lambda x: x.as_strided((3,), (2,)), {"size": [3], "stride": [2]},
    "out of bounds for storage of size")
v("unfold", "unfold", [T((7,))], lambda x: x.unfold(0, 3, 2), {"dimension": 0, "size": 3, "step": 2}, gradgrad=True)
v("view_chain_unfold_unfold", "view_chain", [T((1, 1, 3, 4))], lambda x: x.unfold(2, 2, 1).unfold(3, 2, 1),
  {"variant": 0}, gradgrad=True)
v("view_chain_diag_unfold_select", "view_chain", [T((2, 3, 4), layout="transposed")],
  lambda x: x.diagonal(0, 1, 2).unfold(1, 2, 1).select(0, 1), {"variant": 1})
v("view_chain_unfold_slice_unfold_diag", "view_chain", [T((5, 6))],
  lambda x: x.unfold(1, 3, 2)[1:4:2].unfold(0, 2, 1).diagonal(0, 0, 1), {"variant": 2})
v("unfold_2d", "unfold", [T((3, 8), layout="transposed")], lambda x: x.unfold(1, 4, 1), {"dimension": 1, "size": 4, "step": 1})
v("unfold_0dim", "unfold", [T(())], lambda x: x.unfold(0, 1, 1), {"dimension": 0, "size": 1, "step": 1})
err("unfold_too_big", "unfold", [T((3,))], lambda x: x.unfold(0, 4, 1), {"dimension": 0, "size": 4, "step": 1},
    "maximum size for tensor at dimension 0 is 3 but size is 4")
err("unfold_step0", "unfold", [T((3,))], lambda x: x.unfold(0, 2, 0), {"dimension": 0, "size": 2, "step": 0},
    "step is 0 but must be > 0")
v("alias", "alias", [T((2, 3))], lambda x: x.view_as(x))

# views of other dtypes
for dt in ["float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]:
    v("transpose_%s" % dt, "transpose", [T((2, 3), dt)], lambda x: x.transpose(0, 1), {"dim0": 0, "dim1": 1})


# in place through a view of a non-leaf: CopySlices
def narrow_mul(x, dim, start, length, k):
    b = x * 1
    vw = b.narrow(dim, start, length)
    vw.mul_(k)
    return b, vw


def narrow_add(x, y, dim, start, length):
    b = x * 1
    vw = b.narrow(dim, start, length)
    vw.add_(y)
    return b, vw


CASES.append(case("view_inplace_mul", "view_inplace", [T((4, 3))], lambda x: narrow_mul(x, 0, 0, 2, 2),
                  attrs={"dim": 0, "start": 0, "length": 2, "k": 2}, gradgrad=True))
CASES.append(case("view_inplace_mul_col", "view_inplace", [T((3, 4))], lambda x: narrow_mul(x, 1, 1, 2, -1.5),
                  attrs={"dim": 1, "start": 1, "length": 2, "k": -1.5}))
CASES.append(case("view_inplace_add_other", "view_inplace", [T((4, 3)), T((3,))], lambda x, y: narrow_add(x, y, 0, 1, 2),
                  attrs={"dim": 0, "start": 1, "length": 2}, gradgrad=True))
