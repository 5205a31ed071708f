"""Functions and methods with PyTorch's names and keyword arguments, values and errors."""
import pytest
import torch
import ctorch
from conftest import both


def A(L):
    return L.tensor([[1.5, -2.0, 3.0, 0.5], [4.0, 0.25, -1.0, 2.0], [0.0, 1.0, -3.5, 2.5]])


def I(L):
    return L.tensor([[3, -1, 4], [1, 5, -9], [2, 6, 5]])


CASES = {
    # unary
    "exp": lambda L: A(L).exp(), "log_abs": lambda L: A(L).abs().log(), "sqrt": lambda L: L.sqrt(A(L).abs()),
    "sin": lambda L: L.sin(A(L)), "tanh_": lambda L: A(L).tanh_(), "sigmoid": lambda L: L.sigmoid(A(L)),
    "neg": lambda L: L.neg(I(L)), "sign": lambda L: I(L).sign(), "floor": lambda L: A(L).floor(),
    "round": lambda L: L.round(A(L)), "round_dec": lambda L: L.round(A(L) / 3, decimals=2),
    "clamp": lambda L: A(L).clamp(-1, 2), "clamp_min_kw": lambda L: L.clamp(A(L), min=0),
    "clamp_max_kw": lambda L: A(L).clamp(max=1), "clip": lambda L: A(L).clip(-0.5, 0.5),
    "clamp_tensor": lambda L: A(L).clamp(min=L.zeros(4)), "relu": lambda L: L.relu(A(L)),
    "exp_int": lambda L: L.exp(I(L)), "isnan": lambda L: L.isnan(L.tensor([1.0, float("nan")])),
    "abs_int": lambda L: abs(I(L)), "reciprocal": lambda L: A(L).reciprocal(), "erf": lambda L: A(L).erf(),
    "square_int": lambda L: I(L).square(), "frac": lambda L: A(L).frac(), "logit": lambda L: L.rand(0).logit(),
    # binary
    "add_alpha": lambda L: L.add(A(L), A(L), alpha=2), "add_scalar": lambda L: A(L).add(1),
    "sub_alpha": lambda L: A(L).sub(A(L).t().t(), alpha=0.5), "mul": lambda L: L.mul(I(L), 3),
    "div_floor": lambda L: L.div(I(L), 2, rounding_mode="floor"), "div_trunc": lambda L: I(L).div(-2, rounding_mode="trunc"),
    "true_divide": lambda L: L.true_divide(I(L), 2), "pow_scalar": lambda L: A(L).pow(2),
    "pow_rev": lambda L: L.pow(2, I(L).abs()), "pow_tensor": lambda L: L.pow(A(L).abs(), A(L)),
    "remainder": lambda L: L.remainder(I(L), 4), "fmod": lambda L: L.fmod(I(L), 4),
    "maximum": lambda L: L.maximum(A(L), L.zeros(4)), "minimum": lambda L: L.minimum(I(L), I(L).t()),
    "atan2": lambda L: L.atan2(A(L), A(L) + 1), "eq": lambda L: L.eq(I(L), 5), "gt": lambda L: I(L).gt(I(L).t()),
    "ne_m": lambda L: A(L).ne(0.5), "logical_and": lambda L: L.logical_and(I(L), A(L)[:, :3]),
    "bitwise_xor": lambda L: L.bitwise_xor(I(L), 6), "floor_divide": lambda L: L.floor_divide(I(L), 2),
    "isclose": lambda L: L.isclose(A(L), A(L) + 1e-9), "allclose": lambda L: L.allclose(A(L), A(L) * 1.1),
    "equal": lambda L: L.equal(I(L), I(L)), "where": lambda L: L.where(A(L) > 0, A(L), L.zeros(4)),
    "where_scalar": lambda L: L.where(A(L) > 0, A(L), 0.0), "where_m": lambda L: A(L).where(A(L) > 1, -A(L)),
    "where1": lambda L: L.where(I(L) > 2), "lerp": lambda L: L.lerp(A(L), L.zeros(3, 4), 0.25),
    "addcmul": lambda L: L.addcmul(A(L), A(L), A(L), value=0.5), "addcdiv": lambda L: A(L).addcdiv(A(L), A(L) + 10, value=2),
    "xlogy": lambda L: L.xlogy(A(L).abs(), A(L).abs() + 1), "hypot": lambda L: L.hypot(A(L), A(L)),
    # reductions
    "sum": lambda L: A(L).sum(), "sum_dim": lambda L: L.sum(A(L), dim=1), "sum_keep": lambda L: A(L).sum(0, keepdim=True),
    "sum_dims": lambda L: A(L).sum((0, 1)), "sum_dtype": lambda L: I(L).sum(dtype=L.float64),
    "sum_int": lambda L: I(L).sum(), "sum_bool": lambda L: (I(L) > 0).sum(1),
    "mean": lambda L: A(L).mean(), "mean_dim": lambda L: A(L).mean(dim=-1, keepdim=True),
    "mean_int": lambda L: I(L).mean(), "prod": lambda L: I(L).prod(1), "prod_all": lambda L: A(L).prod(),
    "max": lambda L: A(L).max(), "max_dim": lambda L: L.max(A(L), dim=1), "max_keep": lambda L: A(L).max(0, keepdim=True),
    "max_other": lambda L: L.max(A(L), L.zeros(4)), "min_dim": lambda L: I(L).min(0),
    "amax": lambda L: A(L).amax(dim=(0, 1)), "argmax": lambda L: A(L).argmax(), "argmax_dim": lambda L: L.argmax(A(L), 1),
    "argmin_keep": lambda L: A(L).argmin(dim=0, keepdim=True), "var": lambda L: A(L).var(),
    "var_dim": lambda L: A(L).var(1, unbiased=False), "var_corr": lambda L: L.var(A(L), dim=0, correction=0),
    "std": lambda L: A(L).std(0), "std_mean": lambda L: L.std_mean(A(L), 1), "var_mean": lambda L: L.var_mean(A(L)),
    "norm": lambda L: A(L).norm(), "norm_p1": lambda L: A(L).norm(p=1, dim=1), "norm_inf": lambda L: L.norm(A(L), float("inf")),
    "logsumexp": lambda L: A(L).logsumexp(1), "all": lambda L: (I(L) > -10).all(), "any_dim": lambda L: (I(L) > 4).any(1),
    "count_nonzero": lambda L: L.count_nonzero(I(L) > 2, dim=0), "cumsum": lambda L: A(L).cumsum(1),
    "cumsum_int": lambda L: I(L).cumsum(dim=0), "cumprod": lambda L: L.cumprod(A(L), 0), "cummax": lambda L: I(L).cummax(1),
    "sort": lambda L: A(L).sort(), "sort_desc": lambda L: L.sort(A(L), dim=0, descending=True),
    "argsort": lambda L: A(L).argsort(dim=1), "topk": lambda L: A(L).topk(2), "topk_small": lambda L: L.topk(A(L), 2, dim=0, largest=False),
    "kthvalue": lambda L: A(L).kthvalue(2, 1), "median": lambda L: A(L).median(), "median_dim": lambda L: A(L).median(1),
    "mode": lambda L: L.tensor([1, 2, 2, 3, 3, 3]).mode(), "unique": lambda L: L.unique(L.tensor([3, 1, 3, 2])),
    "unique_inv": lambda L: L.tensor([3, 1, 3, 2]).unique(return_inverse=True, return_counts=True),
    # views and shapes
    "view": lambda L: A(L).view(4, 3), "view_tuple": lambda L: A(L).view((2, -1)), "view_m1": lambda L: A(L).view(-1),
    "reshape": lambda L: L.reshape(A(L), (6, 2)), "reshape_m": lambda L: A(L).t().reshape(-1),
    "permute": lambda L: L.arange(24).reshape(2, 3, 4).permute(2, 0, 1), "permute_f": lambda L: L.permute(A(L), (1, 0)),
    "transpose": lambda L: A(L).transpose(0, 1), "t": lambda L: L.t(A(L)), "squeeze": lambda L: L.zeros(1, 3, 1).squeeze(),
    "squeeze_dim": lambda L: L.zeros(1, 3, 1).squeeze(2), "unsqueeze": lambda L: A(L).unsqueeze(1),
    "flatten": lambda L: L.arange(24).reshape(2, 3, 4).flatten(1), "unflatten": lambda L: A(L).unflatten(1, (2, 2)),
    "expand": lambda L: L.tensor([[1], [2]]).expand(2, 3), "expand_m1": lambda L: L.tensor([[1], [2]]).expand(-1, 4),
    "expand_as": lambda L: L.tensor([1, 2, 3, 4]).expand_as(A(L)), "narrow": lambda L: A(L).narrow(1, 1, 2),
    "select": lambda L: A(L).select(1, 2), "diagonal": lambda L: I(L).diagonal(), "movedim": lambda L: L.movedim(A(L), 0, 1),
    "contiguous": lambda L: A(L).t().contiguous().is_contiguous(), "clone": lambda L: I(L).clone(),
    "cat": lambda L: L.cat([A(L), A(L)], dim=1), "cat_default": lambda L: L.cat((I(L), I(L))),
    "cat_promote": lambda L: L.cat([I(L), A(L)[:, :3]]), "concat": lambda L: L.concat([I(L), I(L)], 1),
    "stack": lambda L: L.stack([I(L), I(L)], 1), "hstack": lambda L: L.hstack([I(L), I(L)]), "vstack": lambda L: L.vstack([I(L), I(L)]),
    "split": lambda L: A(L).split(2, dim=1), "split_sizes": lambda L: L.split(A(L), [1, 3], 1), "chunk": lambda L: A(L).chunk(2),
    "unbind": lambda L: L.unbind(A(L), 1), "flip": lambda L: A(L).flip(0), "flip_f": lambda L: L.flip(A(L), [0, 1]),
    "roll": lambda L: L.roll(I(L), 1, 0), "repeat": lambda L: I(L).repeat(2, 1), "tile": lambda L: L.tile(I(L), (2,)),
    "repeat_interleave": lambda L: I(L).repeat_interleave(2, dim=0), "tril": lambda L: L.tril(I(L)), "triu": lambda L: I(L).triu(1),
    "meshgrid": lambda L: L.meshgrid(L.arange(2), L.arange(3), indexing="ij"), "broadcast_tensors": lambda L: L.broadcast_tensors(L.zeros(2, 1), L.zeros(3)),
    # indexing ops
    "index_select": lambda L: A(L).index_select(1, L.tensor([0, 2])), "gather": lambda L: L.gather(I(L), 1, L.tensor([[0], [2], [1]])),
    "scatter": lambda L: L.zeros(3, 3).scatter(1, L.tensor([[0], [2], [1]]), 1.0), "scatter_add": lambda L: L.zeros(3, 3).scatter_add(0, L.tensor([[0, 1, 2]]), L.ones(1, 3)),
    "masked_fill": lambda L: A(L).masked_fill(A(L) < 0, 0.0), "masked_select": lambda L: A(L).masked_select(A(L) > 1),
    "nonzero": lambda L: L.nonzero(I(L) > 3), "nonzero_tuple": lambda L: (I(L) > 3).nonzero(as_tuple=True),
    "index_add": lambda L: L.zeros(3, 2).index_add(0, L.tensor([0, 2]), L.ones(2, 2)), "take": lambda L: L.take(I(L), L.tensor([0, 8])),
    # linalg
    "matmul": lambda L: L.matmul(A(L), A(L).t()), "mm": lambda L: A(L).mm(A(L).t()), "mv": lambda L: L.mv(A(L), L.ones(4)),
    "dot": lambda L: L.dot(L.ones(3), L.arange(3.0)), "bmm": lambda L: L.bmm(L.ones(2, 2, 3), L.ones(2, 3, 4)),
    "outer": lambda L: L.outer(L.arange(3.0), L.arange(2.0)), "addmm": lambda L: L.addmm(L.ones(3, 3), A(L), A(L).t(), beta=0.5, alpha=2),
    "einsum": lambda L: L.einsum("ij,kj->ik", A(L), A(L)), "einsum_list": lambda L: L.einsum("ii", [I(L)]),
    # conversions
    "to_dtype": lambda L: A(L).to(L.int32), "to_kw": lambda L: A(L).to(dtype=L.float64), "to_other": lambda L: I(L).to(A(L)),
    "type_as": lambda L: I(L).type_as(A(L)), "float": lambda L: I(L).float(), "bool": lambda L: I(L).bool(),
    # nn ops on torch
    "softmax": lambda L: L.softmax(A(L), dim=1), "softmax_m": lambda L: A(L).softmax(0), "log_softmax": lambda L: A(L).log_softmax(-1),
    "softmax_dtype": lambda L: L.softmax(A(L), 1, dtype=L.float64),
    # in-place forms
    "add_": lambda L: A(L).add_(1, alpha=2), "mul_": lambda L: A(L).mul_(A(L)), "clamp_": lambda L: A(L).clamp_(min=0),
    "fill_": lambda L: A(L).fill_(3), "zero_": lambda L: A(L).zero_(), "copy_": lambda L: L.zeros(3, 4).copy_(A(L)),
    "masked_fill_": lambda L: A(L).masked_fill_(A(L) > 0, -1), "index_fill_": lambda L: A(L).index_fill_(1, L.tensor([0]), 9),
    "scatter_": lambda L: L.zeros(2, 2).scatter_(1, L.tensor([[1], [0]]), L.ones(2, 1)),
    "exp_": lambda L: A(L).exp_(), "neg_": lambda L: I(L).neg_(), "div_": lambda L: A(L).div_(2), "pow_": lambda L: A(L).pow_(2),
    "unsqueeze_chain": lambda L: A(L).unsqueeze(0).expand(2, 3, 4).sum(0),
}

ERRORS = {
    "matmul_shape": lambda L: L.ones(2, 3) @ L.ones(2, 3),
    "mm_shape": lambda L: L.mm(L.ones(2, 3), L.ones(4, 2)),
    "cat_shape": lambda L: L.cat([L.ones(2, 3), L.ones(2, 4)]),
    "cat_dim": lambda L: L.cat([L.ones(2, 3), L.ones(2, 3)], dim=2),
    "stack_shape": lambda L: L.stack([L.ones(2), L.ones(3)]),
    "view_bad": lambda L: L.ones(2, 3).view(4),
    "view_noncontig": lambda L: L.ones(2, 3).t().view(6),
    "reshape_bad": lambda L: L.ones(2, 3).reshape(5, -1),
    "sum_dim": lambda L: L.ones(2, 3).sum(2),
    "softmax_dim": lambda L: L.ones(2, 3).softmax(3),
    "transpose_dim": lambda L: L.ones(2, 3).transpose(0, 2),
    "add_shape": lambda L: L.ones(2, 3) + L.ones(4),
    "add_inplace_dtype": lambda L: L.ones(2, dtype=L.int64).add_(1.5),
    "sub_bool": lambda L: L.tensor([True]) - L.tensor([False]),
    "mean_int": lambda L: L.tensor([1, 2]).mean(),
    "index_oob": lambda L: L.ones(3)[5],
    "select_oob": lambda L: L.ones(3).select(0, 3),
    "leaf_inplace": lambda L: L.ones(2, requires_grad=True).add_(1),
    "int_requires_grad": lambda L: L.ones(2, dtype=L.int64).requires_grad_(),
    "backward_twice": lambda L: _backward_twice(L),
    "backward_nonscalar": lambda L: (L.ones(2, requires_grad=True) * 2).backward(),
    "backward_no_grad": lambda L: L.ones(2).sum().backward(),
    "modified_saved": lambda L: _modified_saved(L),
    "expand_bad": lambda L: L.ones(2, 3).expand(3, 3),
    "permute_bad": lambda L: L.ones(2, 3).permute(0),
    "item_many": lambda L: L.ones(3).item(),
    "bool_many": lambda L: bool(L.ones(3)),
    "matmul_0d": lambda L: L.tensor(1.0) @ L.tensor(2.0),
    "gather_dim": lambda L: L.ones(2, 2).gather(2, L.zeros(2, 2, dtype=L.int64)),
    "div_mode_bad": lambda L: L.ones(2).div(2, rounding_mode="round"),
    "pow_int_neg": lambda L: L.tensor([2]) ** -1,
    "squeeze_dim": lambda L: L.ones(2).squeeze(3),
    "unsqueeze_dim": lambda L: L.ones(2).unsqueeze(3),
    "flatten_dims": lambda L: L.ones(2, 3).flatten(1, 0),
    "narrow_oob": lambda L: L.ones(3).narrow(0, 2, 2),
    "split_zero": lambda L: L.ones(3).split(0),
    "chunk_zero": lambda L: L.ones(3).chunk(0),
    "repeat_few": lambda L: L.ones(2, 3).repeat(2),
    "masked_fill_shape": lambda L: L.ones(2, 3).masked_fill(L.ones(4, dtype=L.bool), 0),
    "where_shape": lambda L: L.where(L.ones(2, dtype=L.bool), L.ones(3), L.ones(3)),
    "cross_entropy_target": lambda L: L.nn.functional.cross_entropy(L.ones(2, 3), L.tensor([0, 3])),
    "linear_shape": lambda L: L.nn.functional.linear(L.ones(2, 3), L.ones(4, 5)),
    "conv_channels": lambda L: L.nn.functional.conv2d(L.ones(1, 2, 5, 5), L.ones(3, 3, 3, 3)),
    "embedding_oob": lambda L: L.nn.functional.embedding(L.tensor([5]), L.ones(3, 2)),
    "bitwise_float": lambda L: L.ones(2).bitwise_and(L.ones(2)),
    "arange_step0": lambda L: L.arange(0, 5, 0),
    "zeros_neg": lambda L: L.zeros(-1),
    "randint_bad": lambda L: L.randint(5, 2, (3,)),
    "tensor_ragged": lambda L: L.tensor([[1, 2], [3]]),
    "len_0d": lambda L: len(L.tensor(1)),
    "iter_0d": lambda L: iter(L.tensor(1)),
    "grad_nonleaf_setter": lambda L: setattr(L.ones(2, requires_grad=True) * 2, "requires_grad", False),
    "numpy_grad": lambda L: L.ones(2, requires_grad=True).numpy(),
    "index_float": lambda L: L.ones(3)[L.tensor([0.0])],
    "cuda_device": lambda L: L.zeros(2, device="cuda"),
    "bad_device": lambda L: L.zeros(2, device="foo"),
    "dtype_mismatch_mm": lambda L: L.mm(L.ones(2, 2), L.ones(2, 2, dtype=L.float64)),
    "unbind_dim": lambda L: L.ones(2).unbind(1),
    "topk_k": lambda L: L.ones(3).topk(4),
    "layer_norm_shape": lambda L: L.nn.functional.layer_norm(L.ones(2, 3), (4,)),
}


def _backward_twice(L):
    x = L.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _modified_saved(L):
    x = L.ones(2, requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)
    z.sum().backward()


@pytest.mark.parametrize("name", sorted(CASES))
def test_op(name):
    both(CASES[name], rtol=1e-5, atol=1e-6)


# Messages the C library words differently from PyTorch (reported to the owners of those files).
KNOWN_CORE_WORDING = set()


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error(name):
    if name in KNOWN_CORE_WORDING:
        pytest.xfail("message worded differently in the C library")
    r = both(ERRORS[name])
    assert isinstance(r[0], Exception) and isinstance(r[1], Exception), "expected both to raise"
    ec, et = r
    # the first line of PyTorch's message (without the C++ context it may add)
    first = str(et).split("\n")[0]
    assert first.strip() in str(ec) or str(ec).split("\n")[0].strip() in first, \
        "message differs:\n ctorch: %s\n torch:  %s" % (ec, et)
