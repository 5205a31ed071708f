"""Loss functions and distance ops against torch.nn.functional (PyTorch 1.13)."""
import warnings
import torch
import torch.nn.functional as F
from parity_lib import case, T

warnings.filterwarnings("ignore")  # size-mismatch and 'mean' kl_div warnings of F
CASES = []
RED = ("none", "mean", "sum")


def add(*a, **k):
    CASES.append(case(*a, **k))


# ---- mse / l1 / smooth_l1 / huber ----
for red in RED:
    for dt in ("float32", "float64"):
        add("mse_%s_%s" % (red, dt), "mse_loss", [T((3, 5), dt), T((3, 5), dt)],
            lambda x, y, r=red: F.mse_loss(x, y, reduction=r), attrs={"reduction": red}, gradgrad=True)
        add("l1_%s_%s" % (red, dt), "l1_loss", [T((3, 5), dt), T((3, 5), dt)],
            lambda x, y, r=red: F.l1_loss(x, y, reduction=r), attrs={"reduction": red})
        add("smooth_l1_%s_%s" % (red, dt), "smooth_l1_loss", [T((4, 6), dt), T((4, 6), dt)],
            lambda x, y, r=red: F.smooth_l1_loss(x, y, reduction=r, beta=0.7), attrs={"reduction": red, "beta": 0.7})
        add("huber_%s_%s" % (red, dt), "huber_loss", [T((4, 6), dt), T((4, 6), dt)],
            lambda x, y, r=red: F.huber_loss(x, y, reduction=r, delta=0.8), attrs={"reduction": red, "delta": 0.8})
add("mse_broadcast", "mse_loss", [T((3, 5)), T((5,))], lambda x, y: F.mse_loss(x, y), attrs={"reduction": "mean"}, gradgrad=True)
add("mse_nc", "mse_loss", [T((4, 5), layout="transposed"), T((4, 5), layout="strided")], lambda x, y: F.mse_loss(x, y, reduction="sum"),
    attrs={"reduction": "sum"})
add("mse_0dim", "mse_loss", [T(()), T(())], lambda x, y: F.mse_loss(x, y), attrs={"reduction": "mean"})
add("mse_empty", "mse_loss", [T((0, 3)), T((0, 3))], lambda x, y: F.mse_loss(x, y), attrs={"reduction": "mean"})
add("mse_mixed", "mse_loss", [T((3, 4), requires_grad=False), T((3, 4), "float64", requires_grad=False)], lambda x, y: F.mse_loss(x, y), attrs={"reduction": "mean"})
add("mse_half", "mse_loss", [T((3, 4), "float16", requires_grad=False), T((3, 4), "float16", requires_grad=False)], lambda x, y: F.mse_loss(x, y, reduction="sum"),
    attrs={"reduction": "sum"}, fd=False)
add("mse_long", "mse_loss", [T((3,), "int64"), T((3,), "int64")], lambda x, y: F.mse_loss(x, y), attrs={"reduction": "mean"},
    error="\"mse_cpu\" not implemented for 'Long'")
add("mse_bad_reduction", "mse_loss", [T((3,)), T((3,))], lambda x, y: F.mse_loss(x, y, reduction="bad"), attrs={"reduction": "bad"},
    error="bad is not a valid value for reduction")
add("mse_bad_shape", "mse_loss", [T((3,)), T((4,))], lambda x, y: F.mse_loss(x, y), attrs={"reduction": "mean"},
    error="The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0")
add("l1_bf16", "l1_loss", [T((3, 4), "bfloat16"), T((3, 4), "bfloat16")], lambda x, y: F.l1_loss(x, y), attrs={"reduction": "mean"}, fd=False)
add("l1_broadcast_nc", "l1_loss", [T((5, 4), layout="transposed"), T((1, 4))], lambda x, y: F.l1_loss(x, y), attrs={"reduction": "mean"})
add("smooth_l1_beta0", "smooth_l1_loss", [T((4, 6)), T((4, 6))], lambda x, y: F.smooth_l1_loss(x, y, beta=0.0),
    attrs={"reduction": "mean", "beta": 0.0})
add("smooth_l1_bf16", "smooth_l1_loss", [T((4, 6), "bfloat16"), T((4, 6), "bfloat16")], lambda x, y: F.smooth_l1_loss(x, y, reduction="sum"),
    attrs={"reduction": "sum", "beta": 1.0}, fd=False)
add("smooth_l1_neg_beta", "smooth_l1_loss", [T((3,)), T((3,))], lambda x, y: F.smooth_l1_loss(x, y, beta=-1.0),
    attrs={"reduction": "mean", "beta": -1.0}, error="smooth_l1_loss does not support negative values for beta.")
add("smooth_l1_long", "smooth_l1_loss", [T((3,), "int64"), T((3,), "int64")], lambda x, y: F.smooth_l1_loss(x, y),
    attrs={"reduction": "mean", "beta": 1.0}, error="\"smooth_l1_cpu\" not implemented for 'Long'")
add("huber_bad_delta", "huber_loss", [T((3,)), T((3,))], lambda x, y: F.huber_loss(x, y, delta=0.0),
    attrs={"reduction": "mean", "delta": 0.0}, error="huber_loss does not support non-positive values for delta.")
add("huber_broadcast", "huber_loss", [T((2, 3, 4), low=-3, high=3), T((3, 1), low=-3, high=3)], lambda x, y: F.huber_loss(x, y, delta=1.5),
    attrs={"reduction": "mean", "delta": 1.5})

# ---- binary_cross_entropy ----
for red in RED:
    for dt in ("float32", "float64"):
        add("bce_%s_%s" % (red, dt), "bce", [T((4, 5), dt, low=0.05, high=0.95), T((4, 5), dt, low=0.0, high=1.0)],
            lambda x, y, r=red: F.binary_cross_entropy(x, y, reduction=r), attrs={"reduction": red})
        add("bce_w_%s_%s" % (red, dt), "bce",
            [T((4, 5), dt, low=0.05, high=0.95), T((4, 5), dt, low=0.0, high=1.0), T((5,), dt, low=0.1, high=2.0, requires_grad=False)],
            lambda x, y, w, r=red: F.binary_cross_entropy(x, y, weight=w, reduction=r), attrs={"reduction": red})
add("bce_clamp_log", "bce", [T((4,), values=[0.0, 1.0, 0.5, 1e-50], requires_grad=False), T((4,), values=[1.0, 0.0, 0.3, 1.0])],
    lambda x, y: F.binary_cross_entropy(x, y, reduction="none"), attrs={"reduction": "none"}, fd=False)
add("bce_nc", "bce", [T((4, 5), low=0.05, high=0.95, layout="transposed"), T((4, 5), low=0.0, high=1.0)],
    lambda x, y: F.binary_cross_entropy(x, y), attrs={"reduction": "mean"})
add("bce_out_of_range", "bce", [T((3,), low=1.5, high=2.0), T((3,), low=0.0, high=1.0)], lambda x, y: F.binary_cross_entropy(x, y),
    attrs={"reduction": "mean"}, error="all elements of input should be between 0 and 1")
add("bce_size", "bce", [T((3, 4), low=0.1, high=0.9), T((4,), low=0.0, high=1.0)], lambda x, y: F.binary_cross_entropy(x, y),
    attrs={"reduction": "mean"}, error="Using a target size (torch.Size([4])) that is different to the input size (torch.Size([3, 4])) is deprecated.")
add("bce_dtype", "bce", [T((3,), low=0.1, high=0.9), T((3,), "float64", low=0.0, high=1.0)], lambda x, y: F.binary_cross_entropy(x, y),
    attrs={"reduction": "mean"}, error="Found dtype Double but expected Float")
add("bce_half", "bce", [T((3,), "float16", low=0.1, high=0.9), T((3,), "float16", low=0.0, high=1.0)],
    lambda x, y: F.binary_cross_entropy(x, y), attrs={"reduction": "mean"}, error="\"binary_cross_entropy\" not implemented for 'Half'")
add("bce_weight_grad", "bce", [T((3,), low=0.1, high=0.9), T((3,), low=0.0, high=1.0), T((3,))],
    lambda x, y, w: F.binary_cross_entropy(x, y, weight=w), attrs={"reduction": "mean"},
    error="is not differentiable with respect to argument 'weight'")

# ---- binary_cross_entropy_with_logits ----
for red in RED:
    for dt in ("float32", "float64"):
        add("bcel_%s_%s" % (red, dt), "bce_logits", [T((4, 5), dt, low=-4, high=4), T((4, 5), dt, low=0.0, high=1.0)],
            lambda x, y, r=red: F.binary_cross_entropy_with_logits(x, y, reduction=r), attrs={"reduction": red}, gradgrad=True)
        add("bcel_w_pw_%s_%s" % (red, dt), "bce_logits",
            [T((4, 5), dt, low=-4, high=4), T((4, 5), dt, low=0.0, high=1.0), T((4, 1), dt, low=0.1, high=2.0, requires_grad=False),
             T((5,), dt, low=0.5, high=3.0, requires_grad=False)],
            lambda x, y, w, pw, r=red: F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=pw, reduction=r),
            attrs={"reduction": red, "has_weight": True, "has_pos_weight": True}, gradgrad=True)
add("bcel_pw_only", "bce_logits", [T((3, 4), low=-30, high=30), T((3, 4), low=0.0, high=1.0), T((4,), low=0.5, high=3.0, requires_grad=False)],
    lambda x, y, pw: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw), attrs={"reduction": "mean", "has_pos_weight": True}, gradgrad=True)
add("bcel_big_logits", "bce_logits", [T((6,), values=[-100.0, -30.0, 0.0, 30.0, 100.0, 1e-3]), T((6,), low=0.0, high=1.0)],
    lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"), attrs={"reduction": "none"})
add("bcel_nc", "bce_logits", [T((4, 5), layout="transposed"), T((4, 5), low=0.0, high=1.0, layout="strided")],
    lambda x, y: F.binary_cross_entropy_with_logits(x, y), attrs={"reduction": "mean"})
add("bcel_0dim", "bce_logits", [T(()), T((), low=0.0, high=1.0)], lambda x, y: F.binary_cross_entropy_with_logits(x, y),
    attrs={"reduction": "mean"})
add("bcel_size", "bce_logits", [T((3, 4)), T((4,), low=0.0, high=1.0)], lambda x, y: F.binary_cross_entropy_with_logits(x, y),
    attrs={"reduction": "mean"}, error="Target size (torch.Size([4])) must be the same as input size (torch.Size([3, 4]))")
add("bcel_long_target", "bce_logits", [T((3,)), T((3,), "int64", low=0, high=2)], lambda x, y: F.binary_cross_entropy_with_logits(x, y),
    attrs={"reduction": "mean"}, error="result type Float can't be cast to the desired output type Long")

# ---- kl_div ----
for red in ("none", "mean", "sum", "batchmean"):
    for lt in (False, True):
        add("kl_div_%s_%s" % (red, "lt" if lt else "p"), "kl_div",
            [T((3, 5), low=-3.0, high=0.0), T((3, 5), low=(-3.0 if lt else 0.0), high=(0.0 if lt else 1.0))],
            lambda x, y, r=red, lt=lt: F.kl_div(x, y, reduction=r, log_target=lt), attrs={"reduction": red, "log_target": lt})
add("kl_div_zero_target", "kl_div", [T((4,), low=-2.0, high=0.0), T((4,), values=[0.0, 0.5, 0.0, 0.5], requires_grad=False)],
    lambda x, y: F.kl_div(x, y, reduction="sum"), attrs={"reduction": "sum", "log_target": False})
add("kl_div_f64_broadcast", "kl_div", [T((2, 3, 4), "float64", low=-3.0, high=0.0), T((4,), "float64", low=0.1, high=1.0)],
    lambda x, y: F.kl_div(x, y, reduction="batchmean"), attrs={"reduction": "batchmean", "log_target": False})
add("kl_div_long", "kl_div", [T((3,), "int64"), T((3,), "int64")], lambda x, y: F.kl_div(x, y), attrs={"reduction": "mean"},
    error="kl_div: Integral inputs not supported.")

# ---- nll_loss ----
def nll_case(name, shape, C, red, weight=False, ignore=None, dt="float32", tvals=None, gg=False, layout="contiguous", fd=True):
    N = shape[0] if len(shape) > 1 else None
    tshape = (shape[0],) + tuple(shape[2:]) if len(shape) > 1 else ()
    tgt = T(tshape, "int64", low=0, high=C, values=tvals)
    ins = [T(shape, dt, layout=layout), tgt]
    attrs = {"reduction": red}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    if weight:
        ins.append(T((C,), dt, low=0.2, high=2.0, requires_grad=False))
        attrs["has_weight"] = True
    ii = -100 if ignore is None else ignore
    if weight:
        fn = lambda x, t, w: F.nll_loss(x, t, weight=w, reduction=red, ignore_index=ii)
    else:
        fn = lambda x, t: F.nll_loss(x, t, reduction=red, ignore_index=ii)
    add(name, "nll_loss", ins, fn, attrs=attrs, gradgrad=gg, fd=fd)


for red in RED:
    for dt in ("float32", "float64"):
        nll_case("nll_%s_%s" % (red, dt), (5, 4), 4, red, dt=dt)
        nll_case("nll_w_%s_%s" % (red, dt), (5, 4), 4, red, weight=True, dt=dt)
        nll_case("nll_ign_%s_%s" % (red, dt), (5, 4), 4, red, ignore=1, dt=dt, tvals=[1, 0, 3, 1, 2])
        nll_case("nll_w_ign_%s_%s" % (red, dt), (5, 4), 4, red, weight=True, ignore=2, dt=dt, tvals=[2, 0, 3, 1, 2])
    nll_case("nll_1d_%s" % red, (4,), 4, red, tvals=2)
    nll_case("nll_3d_%s" % red, (2, 3, 4), 3, red, weight=True)
    nll_case("nll_4d_%s" % red, (2, 3, 2, 2), 3, red, ignore=0)
    nll_case("nll_5d_%s" % red, (2, 3, 2, 1, 2), 3, red)
nll_case("nll_all_ignored", (3, 4), 4, "mean", ignore=1, tvals=[1, 1, 1], fd=False)  # the value is nan
nll_case("nll_neg_ignore", (3, 4), 4, "mean", tvals=[-100, 1, 3])
nll_case("nll_bf16", (3, 4), 4, "sum", dt="bfloat16")
nll_case("nll_nc", (4, 5), 5, "mean", layout="transposed")
nll_case("nll_empty", (0, 4), 4, "sum")
add("nll_oob", "nll_loss", [T((3, 4)), T((3,), "int64", values=[0, 5, 1])], lambda x, t: F.nll_loss(x, t), attrs={"reduction": "mean"},
    error="Target 5 is out of bounds.")
add("nll_oob_neg", "nll_loss", [T((3, 4)), T((3,), "int64", values=[0, -1, 1])], lambda x, t: F.nll_loss(x, t), attrs={"reduction": "mean"},
    error="Target -1 is out of bounds.")
add("nll_batch", "nll_loss", [T((3, 4)), T((2,), "int64", low=0, high=4)], lambda x, t: F.nll_loss(x, t), attrs={"reduction": "mean"},
    error="Expected input batch_size (3) to match target batch_size (2).")
add("nll_float_target", "nll_loss", [T((3, 4)), T((3,), low=0, high=3, requires_grad=False)], lambda x, t: F.nll_loss(x, t),
    attrs={"reduction": "mean"}, error="expected scalar type Long but found Float")
add("nll_weight_size", "nll_loss", [T((3, 4)), T((3,), "int64", low=0, high=4), T((3,), requires_grad=False)],
    lambda x, t, w: F.nll_loss(x, t, weight=w), attrs={"reduction": "mean", "has_weight": True},
    error="weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [3]")
add("nll_spatial_size", "nll_loss", [T((2, 3, 4)), T((2, 3), "int64", low=0, high=3)], lambda x, t: F.nll_loss(x, t),
    attrs={"reduction": "mean"}, error="Expected target size [2, 4], got [2, 3]")
add("nll_half", "nll_loss", [T((3, 4), "float16"), T((3,), "int64", low=0, high=4)], lambda x, t: F.nll_loss(x, t),
    attrs={"reduction": "mean"}, error="\"nll_loss_out_frame\" not implemented for 'Half'")


# ---- cross_entropy ----
def ce_case(name, shape, C, red, weight=False, ignore=None, ls=0.0, dt="float32", tvals=None, gg=False, probs=False, layout="contiguous"):
    tshape = ((shape[0],) + tuple(shape[2:]) if len(shape) > 1 else ())
    if probs:
        tgt = T(shape, dt, low=0.0, high=1.0)
    else:
        tgt = T(tshape, "int64", low=0, high=C, values=tvals)
    ins = [T(shape, dt, layout=layout), tgt]
    attrs = {"reduction": red, "label_smoothing": ls}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    if weight:
        ins.append(T((C,), dt, low=0.2, high=2.0, requires_grad=False))
        attrs["has_weight"] = True
    ii = -100 if ignore is None else ignore
    if weight:
        fn = lambda x, t, w: F.cross_entropy(x, t, weight=w, reduction=red, ignore_index=ii, label_smoothing=ls)
    else:
        fn = lambda x, t: F.cross_entropy(x, t, reduction=red, ignore_index=ii, label_smoothing=ls)
    add(name, "cross_entropy", ins, fn, attrs=attrs, gradgrad=gg)


for red in RED:
    for dt in ("float32", "float64"):
        ce_case("ce_%s_%s" % (red, dt), (5, 4), 4, red, dt=dt, gg=True)
        ce_case("ce_w_ign_%s_%s" % (red, dt), (5, 4), 4, red, weight=True, ignore=2, dt=dt, tvals=[2, 0, 3, 1, 2], gg=True)
        ce_case("ce_ls_%s_%s" % (red, dt), (5, 4), 4, red, ls=0.2, dt=dt, gg=True)
        ce_case("ce_ls_w_ign_%s_%s" % (red, dt), (5, 4), 4, red, weight=True, ignore=1, ls=0.15, dt=dt, tvals=[1, 0, 3, 1, 2])
        ce_case("ce_prob_%s_%s" % (red, dt), (5, 4), 4, red, dt=dt, probs=True, gg=True)
        ce_case("ce_prob_w_ls_%s_%s" % (red, dt), (5, 4), 4, red, weight=True, ls=0.1, dt=dt, probs=True)
    ce_case("ce_1d_%s" % red, (4,), 4, red, tvals=3, gg=True)
    ce_case("ce_1d_prob_%s" % red, (4,), 4, red, probs=True)
    ce_case("ce_spatial_%s" % red, (2, 3, 4), 3, red, weight=True, gg=True)
    ce_case("ce_spatial_ls_ign_%s" % red, (2, 3, 2, 2), 3, red, ignore=0, ls=0.1)
    ce_case("ce_spatial_prob_%s" % red, (2, 3, 2, 2), 3, red, probs=True)
ce_case("ce_nc", (4, 5), 5, "mean", layout="transposed")
ce_case("ce_empty", (0, 4), 4, "sum")
ce_case("ce_empty_prob_mean", (0, 4), 4, "mean", probs=True)
add("ce_oob", "cross_entropy", [T((3, 4)), T((3,), "int64", values=[0, 5, 1])], lambda x, t: F.cross_entropy(x, t),
    attrs={"reduction": "mean"}, error="Target 5 is out of bounds.")
add("ce_bad_ls", "cross_entropy", [T((3, 4)), T((3,), "int64", low=0, high=4)], lambda x, t: F.cross_entropy(x, t, label_smoothing=1.5),
    attrs={"reduction": "mean", "label_smoothing": 1.5}, error="label_smoothing must be between 0.0 and 1.0. Got: 1.5")
add("ce_prob_ignore", "cross_entropy", [T((3, 4)), T((3, 4), low=0.0, high=1.0)], lambda x, t: F.cross_entropy(x, t, ignore_index=1),
    attrs={"reduction": "mean", "ignore_index": 1}, error="ignore_index is not supported for floating point target")
add("ce_batch", "cross_entropy", [T((3, 4)), T((2, 4), low=0.0, high=1.0)], lambda x, t: F.cross_entropy(x, t),
    attrs={"reduction": "mean"}, error="Expected input batch_size (3) to match target batch_size (2).")
add("ce_weight_size", "cross_entropy", [T((3, 4)), T((3,), "int64", low=0, high=4), T((2,), requires_grad=False)],
    lambda x, t, w: F.cross_entropy(x, t, weight=w), attrs={"reduction": "mean", "has_weight": True},
    error="weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [2]")

# ---- cosine_similarity / pairwise_distance ----
for dt in ("float32", "float64"):
    add("cos_sim_%s" % dt, "cosine_similarity", [T((4, 6), dt), T((4, 6), dt)], lambda a, b: F.cosine_similarity(a, b),
        attrs={"dim": 1, "eps": 1e-8})
    add("pdist_%s" % dt, "pairwise_distance", [T((4, 6), dt), T((4, 6), dt)], lambda a, b: F.pairwise_distance(a, b),
        attrs={"p": 2.0, "eps": 1e-6, "keepdim": False})
add("cos_sim_dim0_bcast", "cosine_similarity", [T((5, 3)), T((5, 1))], lambda a, b: F.cosine_similarity(a, b, dim=0),
    attrs={"dim": 0, "eps": 1e-8})
add("cos_sim_negdim_nc", "cosine_similarity", [T((3, 4, 5), layout="transposed"), T((4, 5))],
    lambda a, b: F.cosine_similarity(a, b, dim=-1, eps=1e-6), attrs={"dim": -1, "eps": 1e-6})
add("cos_sim_tiny", "cosine_similarity", [T((2, 3), "float64", values=[[1e-8, 0.0, 0.0], [1.0, 2.0, 3.0]]),
                                           T((2, 3), "float64", values=[[2e-8, 0.0, 0.0], [1.0, 2.0, 4.0]])],
    lambda a, b: F.cosine_similarity(a, b, eps=1e-6), attrs={"dim": 1, "eps": 1e-6}, fd=False)
add("cos_sim_int_float", "cosine_similarity", [T((3, 4), "int64", low=-3, high=4), T((3, 4))],
    lambda a, b: F.cosine_similarity(a, b), attrs={"dim": 1, "eps": 1e-8})
add("cos_sim_long", "cosine_similarity", [T((3,), "int64"), T((3,), "int64")], lambda a, b: F.cosine_similarity(a, b, dim=0),
    attrs={"dim": 0, "eps": 1e-8}, error="expected common dtype to be floating point, yet common dtype is Long")
add("cos_sim_shape", "cosine_similarity", [T((3, 4)), T((2, 4))], lambda a, b: F.cosine_similarity(a, b),
    attrs={"dim": 1, "eps": 1e-8}, error="The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0")
add("pdist_keepdim_p1", "pairwise_distance", [T((4, 6)), T((4, 6))], lambda a, b: F.pairwise_distance(a, b, p=1.0, keepdim=True),
    attrs={"p": 1.0, "eps": 1e-6, "keepdim": True})
add("pdist_p3_bcast", "pairwise_distance", [T((4, 6)), T((6,))], lambda a, b: F.pairwise_distance(a, b, p=3.0, eps=1e-4),
    attrs={"p": 3.0, "eps": 1e-4, "keepdim": False})
add("pdist_1d", "pairwise_distance", [T((5,)), T((5,), layout="strided")], lambda a, b: F.pairwise_distance(a, b),
    attrs={"p": 2.0, "eps": 1e-6, "keepdim": False})
add("pdist_int", "pairwise_distance", [T((3, 4), "int64", low=-3, high=4), T((3, 4), "int64", low=-3, high=4)],
    lambda a, b: F.pairwise_distance(a, b), attrs={"p": 2.0, "eps": 1e-6, "keepdim": False}, fd=False)

# ---- one_hot ----
add("one_hot_infer", "one_hot", [T((5,), "int64", values=[0, 2, 1, 4, 2])], lambda t: F.one_hot(t), attrs={"num_classes": -1}, fd=False)
add("one_hot_2d", "one_hot", [T((2, 3), "int64", low=0, high=4)], lambda t: F.one_hot(t, 6), attrs={"num_classes": 6}, fd=False)
add("one_hot_nc", "one_hot", [T((3, 4), "int64", low=0, high=4, layout="transposed")], lambda t: F.one_hot(t, 4), attrs={"num_classes": 4}, fd=False)
add("one_hot_0dim", "one_hot", [T((), "int64", values=2)], lambda t: F.one_hot(t, 4), attrs={"num_classes": 4}, fd=False)
add("one_hot_empty", "one_hot", [T((0,), "int64")], lambda t: F.one_hot(t, 4), attrs={"num_classes": 4}, fd=False)
add("one_hot_empty_infer", "one_hot", [T((0,), "int64")], lambda t: F.one_hot(t), attrs={"num_classes": -1},
    error="Can not infer total number of classes from empty tensor.")
add("one_hot_too_big", "one_hot", [T((2,), "int64", values=[0, 5])], lambda t: F.one_hot(t, 3), attrs={"num_classes": 3},
    error="Class values must be smaller than num_classes.")
add("one_hot_negative", "one_hot", [T((1,), "int64", values=[-1])], lambda t: F.one_hot(t, 3), attrs={"num_classes": 3},
    error="Class values must be non-negative.")
add("one_hot_float", "one_hot", [T((1,), values=[0.0], requires_grad=False)], lambda t: F.one_hot(t, 3), attrs={"num_classes": 3},
    error="one_hot is only applicable to index tensor.")
