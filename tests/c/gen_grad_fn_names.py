#!/usr/bin/python3
"""Writes tests/c/grad_fn_names.h from PyTorch 1.13 (run by hand when the table must change):
the grad_fn name of the result of each program below, as Python prints it (`grad_fn=<...>`,
the node's class name). tests/c/test_grad_fn_names.c runs the same program, by key, with the
C API on the same inputs and checks that ctorch's node has that name."""
import math
import os
import torch
import torch.nn.functional as F


def mk(*s):
    return (torch.arange(1, 1 + math.prod(s), dtype=torch.float32).reshape(*s) / 10).requires_grad_()


# the inputs, built the same way in test_grad_fn_names.c
x, x3, v, x4, img, k2 = mk(2, 3), mk(2, 3, 4), mk(3), mk(2, 3, 2, 2), mk(1, 1, 4, 4), mk(1, 1, 2, 2)
xd = x.detach() * 2  # a target without grad
tgt = torch.tensor([0, 2])
t3 = torch.zeros(2, 4, dtype=torch.long)
t4 = torch.zeros(2, 2, 2, dtype=torch.long)

PROGRAMS = [
    # views and shape
    ("t", lambda: x.t()), ("t_1d", lambda: v.t()), ("transpose", lambda: x.transpose(0, 1)),
    ("permute", lambda: x3.permute(2, 0, 1)), ("movedim", lambda: x3.movedim(0, 2)),
    ("view", lambda: x.view(6)), ("reshape", lambda: x.reshape(3, 2)), ("reshape_copy", lambda: x.t().reshape(6)),
    ("reshape_same", lambda: x.reshape(2, 3)), ("flatten", lambda: x3.flatten()), ("flatten_range", lambda: x3.flatten(1)),
    ("flatten_0d", lambda: x.sum().flatten()), ("unflatten", lambda: v.unflatten(0, (1, 3))),
    ("unsqueeze", lambda: x.unsqueeze(0)), ("squeeze", lambda: x.unsqueeze(0).squeeze()),
    ("squeeze_dim", lambda: x.unsqueeze(0).squeeze(0)), ("squeeze_dim_noop", lambda: x.squeeze(0)),
    ("expand", lambda: v.expand(2, 3)), ("select", lambda: x.select(0, 1)), ("slice", lambda: x[:, 1:]),
    ("narrow", lambda: x.narrow(1, 0, 2)), ("diagonal", lambda: x.diagonal()), ("contiguous", lambda: x.t().contiguous()),
    ("clone", lambda: x.clone()), ("to_double", lambda: x.double()),
    ("cat", lambda: torch.cat([x, x])), ("stack", lambda: torch.stack([x, x])), ("split", lambda: x.split(1)[0]),
    ("chunk", lambda: x.chunk(3, 1)[0]), ("unbind", lambda: x.unbind(0)[0]), ("flip", lambda: x.flip(0)),
    ("roll", lambda: x.roll(1)), ("roll_dim", lambda: x.roll(1, 0)), ("rot90", lambda: x.rot90()),
    ("rot90_2", lambda: x.rot90(2)), ("repeat", lambda: x.repeat(2, 1)), ("tril", lambda: x.tril()),
    ("pad", lambda: F.pad(x, (1, 1))), ("pad_reflect", lambda: F.pad(x3, (1, 1), mode="reflect")),
    ("pad_circular", lambda: F.pad(x3, (1, 1), mode="circular")), ("sum_to_size", lambda: x.sum_to_size(1, 3)),
    ("sum_to_size_lead", lambda: x.sum_to_size(3)),
    # reductions
    ("sum", lambda: x.sum()), ("sum_dim", lambda: x.sum(1)), ("mean", lambda: x.mean()), ("mean_dim", lambda: x.mean(1)),
    ("prod_dim", lambda: x.prod(1)), ("amax", lambda: x.amax(1)), ("max", lambda: x.max()),
    ("max_dim", lambda: x.max(1)[0]), ("logsumexp", lambda: x.logsumexp(1)), ("var", lambda: x.var(1)),
    ("std", lambda: x.std(1)), ("norm", lambda: x.norm()), ("cumsum", lambda: x.cumsum(1)),
    ("sort", lambda: x.sort(1)[0]), ("topk", lambda: x.topk(2)[0]), ("median", lambda: x.median()),
    # elementwise
    ("add", lambda: x + x), ("mul_scalar", lambda: x * 2), ("pow_scalar", lambda: x.pow(2)), ("pow_tensor", lambda: x.pow(x)),
    ("pow_scalar_base", lambda: torch.pow(2, x)), ("relu", lambda: F.relu(x)), ("gelu", lambda: F.gelu(x)),
    ("silu", lambda: F.silu(x)), ("tanh", lambda: x.tanh()), ("sigmoid", lambda: x.sigmoid()),
    ("where", lambda: torch.where(x > 0.3, x, x * 2)), ("clamp", lambda: x.clamp(0.2, 0.4)),
    ("softmax", lambda: x.softmax(1)), ("log_softmax", lambda: x.log_softmax(1)),
    # linear algebra
    ("mm", lambda: x.mm(x.t())), ("matmul_2d", lambda: x @ x.t()), ("matmul_1d", lambda: v @ v),
    ("matmul_mv", lambda: x @ v), ("matmul_1d2d", lambda: v[:2] @ x), ("matmul_3d", lambda: x3 @ x3.transpose(1, 2)),
    ("matmul_3d2d", lambda: x3 @ x3[0].t()), ("bmm", lambda: torch.bmm(x3, x3.transpose(1, 2))),
    ("linear_2d", lambda: F.linear(x, x)), ("linear_2d_bias", lambda: F.linear(x, x, v[:2])),
    ("linear_3d", lambda: F.linear(x3, x3[0])), ("linear_3d_bias", lambda: F.linear(x3, x3[0], v)),
    ("linear_1d", lambda: F.linear(v, x)), ("addmm", lambda: torch.addmm(x[:, :2], x, x.t())),
    ("outer", lambda: torch.outer(v, v)), ("einsum", lambda: torch.einsum("ij,kj->ik", x, x)),
    ("einsum_batched", lambda: torch.einsum("bij,bkj->bik", x3, x3)),
    # losses
    ("mse_loss", lambda: F.mse_loss(x, xd)), ("mse_loss_sum", lambda: F.mse_loss(x, xd, reduction="sum")),
    ("mse_loss_none", lambda: F.mse_loss(x, xd, reduction="none")), ("l1_loss", lambda: F.l1_loss(x, xd)),
    ("l1_loss_none", lambda: F.l1_loss(x, xd, reduction="none")), ("smooth_l1_loss", lambda: F.smooth_l1_loss(x, xd)),
    ("smooth_l1_loss_beta0", lambda: F.smooth_l1_loss(x, xd, beta=0.0)),
    ("smooth_l1_loss_none", lambda: F.smooth_l1_loss(x, xd, reduction="none")),
    ("huber_loss", lambda: F.huber_loss(x, xd)), ("huber_loss_sum", lambda: F.huber_loss(x, xd, reduction="sum")),
    ("kl_div_batchmean", lambda: F.kl_div(x, xd, reduction="batchmean")),
    ("kl_div_sum", lambda: F.kl_div(x, xd, reduction="sum")), ("nll_loss", lambda: F.nll_loss(x, tgt)),
    ("nll_loss_none", lambda: F.nll_loss(x, tgt, reduction="none")), ("nll_loss_1d", lambda: F.nll_loss(v, tgt[1])),
    ("nll_loss_3d", lambda: F.nll_loss(x3, t3)), ("nll_loss_3d_none", lambda: F.nll_loss(x3, t3, reduction="none")),
    ("nll_loss_4d_none", lambda: F.nll_loss(x4, t4, reduction="none")), ("cross_entropy", lambda: F.cross_entropy(x, tgt)),
    ("cross_entropy_sum", lambda: F.cross_entropy(x, tgt, reduction="sum")),
    ("cross_entropy_smooth", lambda: F.cross_entropy(x, tgt, label_smoothing=0.1)),
    ("cross_entropy_prob", lambda: F.cross_entropy(x, xd / 2)),
    ("binary_cross_entropy", lambda: F.binary_cross_entropy(x.detach().sigmoid().requires_grad_(), xd / 4)),
    ("binary_cross_entropy_sum", lambda: F.binary_cross_entropy(x.detach().sigmoid().requires_grad_(), xd / 4,
                                                                reduction="sum")),
    ("bce_with_logits", lambda: F.binary_cross_entropy_with_logits(x, xd / 4)),
    ("bce_with_logits_none", lambda: F.binary_cross_entropy_with_logits(x, xd / 4, reduction="none")),
    ("cosine_similarity", lambda: F.cosine_similarity(x, x * 1)), ("pairwise_distance", lambda: F.pairwise_distance(x, xd)),
    # nn
    ("layer_norm", lambda: F.layer_norm(x, (3,))), ("layer_norm_affine", lambda: F.layer_norm(x, (3,), v, v)),
    ("batch_norm", lambda: F.batch_norm(x, None, None, training=True)),
    ("batch_norm_affine", lambda: F.batch_norm(x4, None, None, v, v, training=True)),
    ("batch_norm_eval", lambda: F.batch_norm(x, torch.zeros(3), torch.ones(3), training=False)),
    ("group_norm", lambda: F.group_norm(x4, 3)), ("dropout", lambda: F.dropout(x, 0.5, True)),
    ("conv2d", lambda: F.conv2d(img, k2)), ("max_pool2d", lambda: F.max_pool2d(img, 2)),
    ("avg_pool2d", lambda: F.avg_pool2d(img, 2)), ("adaptive_avg_pool2d", lambda: F.adaptive_avg_pool2d(img, 2)),
    ("adaptive_avg_pool2d_1", lambda: F.adaptive_avg_pool2d(img, 1)),
    ("adaptive_avg_pool2d_1_3d", lambda: F.adaptive_avg_pool2d(img[0], 1)),
    ("embedding", lambda: F.embedding(tgt, x.t())),
    ("index_select", lambda: x.index_select(0, tgt[:1])), ("gather", lambda: x.gather(1, tgt.view(2, 1))),
    ("masked_fill", lambda: x.masked_fill(x > 0.3, 0)),
]


def name_of(r):
    return "None" if r.grad_fn is None else type(r.grad_fn).__name__


lines = ["/* Generated by tests/c/gen_grad_fn_names.py from PyTorch %s: do not edit. */" % torch.__version__,
         "static const struct { const char *key, *name; } grad_fn_names[] = {"]
for key, fn in PROGRAMS:
    lines.append('  {"%s", "%s"},' % (key, name_of(fn())))
lines.append("};")
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grad_fn_names.h")
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print("wrote %s (%d programs)" % (out, len(PROGRAMS)))
