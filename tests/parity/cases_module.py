"""Parity cases of the nn modules (src/nn; runners in run_module.c).

Every case describes one module by attrs (the constructor's arguments, "layer" naming the
class); both sides build it from the same attrs (build() here, build() in run_module.c).

- op "module": inputs are the data inputs (n_x of them) then the module's parameters in
  named_parameters order. PyTorch runs torch.nn.utils.stateless.functional_call with those
  tensors as the parameters, ctorch puts them in with ct_module_set_tensor, so outputs AND
  parameter gradients are compared. "steps" lists training flags of successive forwards
  (BatchNorm's running statistics evolve); "buffers": 1 also returns the floating buffers
  after the last step. "checkpoint": 1 runs the C side through ct_checkpoint_module while
  PyTorch runs the plain module: values and gradients must still agree (dropout included,
  "seed" seeds the default generator before the forward on both sides).
- op "module_init": torch.manual_seed(seed); module(...) against ct_manual_seed(seed); the
  C constructor: the state_dict's first (up to 4) tensors must be bit-identical (rtol=atol=0).
- error cases: the constructor (or forward) must fail on both sides with PyTorch's words.

LoRA: PyTorch 1.13 has no LoRA and peft is not installed here, so LoraLinear/LoraConv2d below
restate peft's lora.Linear / lora.Conv2d (old layout: base weight/bias kept, lora_A / lora_B
children; peft's order of random draws) in ~20 lines each, as the reference.
RMSNorm: PyTorch 1.13 has no nn.RMSNorm; RMSNormRef is PyTorch 2.x's formula.

Tolerances: defaults (float32 rel 1e-5) except where noted beside the case."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.stateless import functional_call
from parity_lib import case, T

CASES = []
add = CASES.append


class RMSNormRef(nn.Module):
    def __init__(self, shape, eps=None, affine=True):
        super().__init__()
        self.shape = tuple(shape)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(self.shape)) if affine else None

    def forward(self, x):
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        dims = tuple(range(-len(self.shape), 0))
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * self.weight if self.weight is not None else y


class LoraLinear(nn.Module):
    """peft's lora.Linear (single adapter, fan_in_fan_out=False)."""

    def __init__(self, base, r, alpha, dropout):
        super().__init__()
        self.weight = base.weight
        if base.bias is not None:
            self.bias = base.bias
        else:
            self.bias = None
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r
        self.p = dropout
        self.weight.requires_grad_(False)
        if self.bias is not None:
            self.bias.requires_grad_(False)

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        xd = F.dropout(x, self.p, self.training) if self.p > 0 else x
        return y + self.lora_B(self.lora_A(xd)) * self.scaling


class LoraConv2d(nn.Module):
    """peft's lora.Conv2d; lora_A also takes the base's dilation and padding mode (see lora.c)."""

    def __init__(self, base, r, alpha, dropout):
        super().__init__()
        self.__dict__["_base"] = base  # its forward rule, not its parameters
        self.weight = base.weight
        if base.bias is not None:
            self.bias = base.bias
        else:
            self.bias = None
        self.lora_A = nn.Conv2d(base.in_channels, r, base.kernel_size, base.stride, base.padding, base.dilation,
                                bias=False, padding_mode=base.padding_mode)
        self.lora_B = nn.Conv2d(r, base.out_channels, (1, 1), (1, 1), bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r
        self.p = dropout

    def forward(self, x):
        y = self._base._conv_forward(x, self.weight, self.bias)
        xd = F.dropout(x, self.p, self.training) if self.p > 0 else x
        return y + self.lora_B(self.lora_A(xd)) * self.scaling


def pair(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (v, v)


def conv_kwargs(a):
    kw = {}
    if "stride" in a:
        kw["stride"] = a["stride"]
    if "pad_str" in a:
        kw["padding"] = a["pad_str"]
    elif "padding" in a:
        kw["padding"] = a["padding"]
    if "dilation" in a:
        kw["dilation"] = a["dilation"]
    if "groups" in a:
        kw["groups"] = a["groups"]
    if "bias" in a:
        kw["bias"] = a["bias"]
    if "padding_mode" in a:
        kw["padding_mode"] = a["padding_mode"]
    return kw


def build(a):
    L = a["layer"]
    if L == "Linear":
        return nn.Linear(a["in"], a["out"], bias=a.get("bias", True))
    if L == "Conv1d":
        return nn.Conv1d(a["in"], a["out"], a["k"][0], **conv_kwargs(a))
    if L == "Conv2d":
        return nn.Conv2d(a["in"], a["out"], tuple(a["k"]), **conv_kwargs(a))
    if L == "ConvTranspose2d":
        kw = conv_kwargs(a)
        if "output_padding" in a:
            kw["output_padding"] = a["output_padding"]
        return nn.ConvTranspose2d(a["in"], a["out"], tuple(a["k"]), **kw)
    if L in ("BatchNorm1d", "BatchNorm2d"):
        cls = getattr(nn, L)
        mom = None if a.get("momentum_none", 0) else a.get("momentum", 0.1)
        return cls(a["nf"], eps=a.get("eps", 1e-5), momentum=mom, affine=a.get("affine", True),
                   track_running_stats=a.get("track", True))
    if L == "LayerNorm":
        return nn.LayerNorm(a["shape"], eps=a.get("eps", 1e-5), elementwise_affine=a.get("affine", True))
    if L == "RMSNorm":
        return RMSNormRef(a["shape"], a.get("eps"), a.get("affine", True))
    if L == "GroupNorm":
        return nn.GroupNorm(a["groups"], a["channels"], eps=a.get("eps", 1e-5), affine=a.get("affine", True))
    if L == "Dropout":
        return nn.Dropout(a["p"])
    if L == "Embedding":
        return nn.Embedding(a["num"], a["dim"], padding_idx=a.get("padding_idx"))
    if L == "MaxPool2d":
        return nn.MaxPool2d(tuple(a["k"]), stride=a.get("stride"), padding=a.get("padding", 0),
                            dilation=a.get("dilation", 1), ceil_mode=a.get("ceil_mode", False))
    if L == "AvgPool2d":
        return nn.AvgPool2d(tuple(a["k"]), stride=a.get("stride"), padding=a.get("padding", 0),
                            ceil_mode=a.get("ceil_mode", False), count_include_pad=a.get("count_include_pad", True),
                            divisor_override=a.get("divisor"))
    if L == "AdaptiveAvgPool2d":
        return nn.AdaptiveAvgPool2d(tuple(None if s < 0 else s for s in a["out_size"]))
    if L == "Flatten":
        return nn.Flatten(a.get("start", 1), a.get("end", -1))
    if L == "Identity":
        return nn.Identity()
    if L == "MultiheadAttention":
        return nn.MultiheadAttention(a["E"], a["H"], dropout=a.get("dropout", 0.0), bias=a.get("bias", True),
                                     batch_first=a.get("batch_first", False))
    if L == "LoraLinear":
        base = nn.Linear(a["in"], a["out"], bias=a.get("bias", True))
        return LoraLinear(base, a["r"], a["lora_alpha"], a.get("lora_dropout", 0.0))
    if L == "LoraConv2d":
        base = nn.Conv2d(a["in"], a["out"], tuple(a["k"]), **conv_kwargs(a))
        return LoraConv2d(base, a["r"], a["lora_alpha"], a.get("lora_dropout", 0.0))
    if L == "Net":  # Sequential(Conv2d(3, 4, 3), BatchNorm2d(4), ReLU(), Flatten(), Linear(16, 5))
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(16, 5))
    if L == "MLP":  # Sequential(Linear(6, 8), GELU(), Dropout(p), Linear(8, 4))
        return nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Dropout(a.get("p", 0.0)), nn.Linear(8, 4))
    acts = {
        "ReLU": lambda: nn.ReLU(), "ReLU6": lambda: nn.ReLU6(), "SiLU": lambda: nn.SiLU(), "Mish": lambda: nn.Mish(),
        "Tanh": lambda: nn.Tanh(), "Sigmoid": lambda: nn.Sigmoid(), "Hardswish": lambda: nn.Hardswish(),
        "Hardsigmoid": lambda: nn.Hardsigmoid(), "SELU": lambda: nn.SELU(),
        "GELU": lambda: nn.GELU(approximate=a.get("approximate", "none")),
        "LeakyReLU": lambda: nn.LeakyReLU(a.get("slope", 0.01)), "ELU": lambda: nn.ELU(a.get("alpha", 1.0)),
        "CELU": lambda: nn.CELU(a.get("alpha", 1.0)),
        "Hardtanh": lambda: nn.Hardtanh(a.get("min", -1.0), a.get("max", 1.0)),
        "Softplus": lambda: nn.Softplus(a.get("beta", 1.0), a.get("threshold", 20.0)),
        "Softmax": lambda: nn.Softmax(a["dim"]), "LogSoftmax": lambda: nn.LogSoftmax(a["dim"]),
    }
    return acts[L]()


def param_shapes(a):
    torch.manual_seed(0)
    m = build(a)
    return [(n, tuple(p.shape)) for n, p in m.named_parameters()]


def mod(name, a, xs, dtype="float32", prange=(-2.0, 2.0), **kw):
    """A forward case: xs are the data inputs (T); the parameters follow as inputs, drawn from prange."""
    a = dict(a)
    a.setdefault("n_x", len(xs))
    ps = param_shapes(a)
    inputs = list(xs) + [T(s, dtype, low=prange[0], high=prange[1]) for _, s in ps]
    names = [n for n, _ in ps]
    n_x = a["n_x"]

    def fn(*args):
        x, p = args[:n_x], args[n_x:]
        torch.manual_seed(0)
        m = build(a)
        if p:
            m = m.to(p[0].dtype)
        outs = []
        for step, train in enumerate(a.get("steps", [a.get("train", 1)])):
            m.train(bool(train))
            if "seed" in a:
                torch.manual_seed(a["seed"] + step)
            if a["layer"] == "MultiheadAttention":
                q = x[0]
                k, v = (x[1], x[2]) if a.get("cross", 0) else (q, q)
                i = 3 if a.get("cross", 0) else 1
                kpm = x[i] if a.get("has_kpm", 0) else None
                i += 1 if a.get("has_kpm", 0) else 0
                mask = x[i] if a.get("has_mask", 0) else None
                y, w = functional_call(m, dict(zip(names, p)), (q, k, v),
                                       {"key_padding_mask": kpm, "need_weights": bool(a.get("need_weights", 0)),
                                        "attn_mask": mask, "average_attn_weights": bool(a.get("average", 1))})
                outs.append(y)
                if a.get("need_weights", 0):
                    outs.append(w)
            else:
                outs.append(functional_call(m, dict(zip(names, p)), tuple(x)))
        if a.get("buffers", 0):
            outs += [b.detach().clone() for _, b in m.named_buffers() if b.is_floating_point()]
        return tuple(outs)

    add(case(name, "module", inputs, fn, attrs=a, **kw))


def init(name, a, **kw):
    def fn(_):
        torch.manual_seed(a["seed"])
        m = build(a)
        return tuple(t.detach().clone() for t in list(m.state_dict().values())[:4])

    add(case(name, "module_init", [T((1,), requires_grad=False)], fn, attrs=a, rtol=0.0, atol=0.0, fd=False, **kw))


def err(name, a, msg, xs=None, ctor_only=True):
    xs = xs or [T((1,), requires_grad=False)]

    def fn(*x):
        m = build(a)
        if not ctor_only:
            m(*(x * 3 if a["layer"] == "MultiheadAttention" else x))

    add(case(name, "module", xs, fn, attrs=dict(a, n_x=len(xs), no_params=1), error=msg))


# ---------------------------------------------------------------- init bit-exact with the seed
init("init_linear", {"layer": "Linear", "in": 4, "out": 3, "seed": 0})
init("init_linear_big", {"layer": "Linear", "in": 37, "out": 19, "seed": 1234})
init("init_linear_nobias", {"layer": "Linear", "in": 5, "out": 7, "bias": False, "seed": 3})
init("init_conv2d", {"layer": "Conv2d", "in": 3, "out": 8, "k": [3, 3], "seed": 7})
init("init_conv2d_groups", {"layer": "Conv2d", "in": 4, "out": 6, "k": [3, 2], "groups": 2, "seed": 11})
init("init_conv1d", {"layer": "Conv1d", "in": 3, "out": 5, "k": [4], "seed": 5})
init("init_conv_transpose2d", {"layer": "ConvTranspose2d", "in": 4, "out": 6, "k": [3, 3], "groups": 2, "seed": 2})
init("init_embedding", {"layer": "Embedding", "num": 10, "dim": 6, "seed": 42})
init("init_embedding_pad", {"layer": "Embedding", "num": 9, "dim": 5, "padding_idx": -2, "seed": 4})
init("init_batchnorm", {"layer": "BatchNorm2d", "nf": 5, "seed": 0})
init("init_layernorm", {"layer": "LayerNorm", "shape": [3, 4], "seed": 0})
init("init_groupnorm", {"layer": "GroupNorm", "groups": 2, "channels": 6, "seed": 0})
init("init_mha", {"layer": "MultiheadAttention", "E": 8, "H": 2, "seed": 9})
init("init_mha_nobias", {"layer": "MultiheadAttention", "E": 6, "H": 3, "bias": False, "seed": 9})
init("init_lora_linear", {"layer": "LoraLinear", "in": 6, "out": 5, "r": 3, "lora_alpha": 6.0, "seed": 21})
init("init_lora_conv2d", {"layer": "LoraConv2d", "in": 3, "out": 4, "k": [3, 3], "padding": 1, "r": 2,
                          "lora_alpha": 4.0, "seed": 8})

# ---------------------------------------------------------------- Linear
mod("mod_linear", {"layer": "Linear", "in": 4, "out": 3}, [T((2, 4))])
mod("mod_linear_3d", {"layer": "Linear", "in": 4, "out": 3}, [T((2, 5, 4))])
mod("mod_linear_nobias_nc", {"layer": "Linear", "in": 4, "out": 6, "bias": False}, [T((5, 4), layout="transposed")])
mod("mod_linear_f64", {"layer": "Linear", "in": 3, "out": 2}, [T((4, 3), "float64")], dtype="float64")
mod("mod_linear_1d", {"layer": "Linear", "in": 4, "out": 3}, [T((4,))])
mod("mod_linear_empty", {"layer": "Linear", "in": 4, "out": 3}, [T((0, 4))])
mod("mod_linear_ckpt", {"layer": "Linear", "in": 4, "out": 3, "checkpoint": 1}, [T((2, 4))])
err("mod_linear_shape_err", {"layer": "Linear", "in": 4, "out": 3}, "mat1 and mat2 shapes cannot be multiplied",
    xs=[T((2, 5))], ctor_only=False)

# ---------------------------------------------------------------- convolutions
# Forward atol 2.5e-6 (gradients keep the float32 default): each output is a 27-term float32 dot
# product with sum|x*w| up to ~27; an output that cancels to ~0 keeps an absolute rounding error of
# up to ~eps*sum|x*w| (1.6e-6) in any summation order. In mod_conv2d_replicate one output is -0.0277
# from sum|x*w| = 26.7: PyTorch's own float32 value is 6.9e-7 off the exact (float64) one, a
# multiply-then-add order without FMA (WebAssembly, the portable SIMD path) 9.8e-7 the other way.
for pm in ("zeros", "reflect", "replicate", "circular"):
    mod(f"mod_conv2d_{pm}", {"layer": "Conv2d", "in": 3, "out": 4, "k": [3, 3], "padding": [1, 2], "padding_mode": pm},
        [T((2, 3, 5, 6))], atol=2.5e-6, grad_atol=1e-6)
    mod(f"mod_conv1d_{pm}", {"layer": "Conv1d", "in": 2, "out": 3, "k": [3], "padding": [2], "padding_mode": pm},
        [T((2, 2, 7))])
mod("mod_conv2d_same_reflect", {"layer": "Conv2d", "in": 2, "out": 3, "k": [4, 3], "pad_str": "same",
                                "padding_mode": "reflect", "dilation": [1, 2]}, [T((1, 2, 6, 7))])
mod("mod_conv2d_same", {"layer": "Conv2d", "in": 2, "out": 3, "k": [4, 3], "pad_str": "same"}, [T((1, 2, 6, 7))])
mod("mod_conv2d_valid", {"layer": "Conv2d", "in": 2, "out": 3, "k": [3, 3], "pad_str": "valid"}, [T((1, 2, 5, 5))])
mod("mod_conv2d_stride_groups", {"layer": "Conv2d", "in": 4, "out": 6, "k": [3, 3], "stride": [2, 1], "padding": [1, 1],
                                 "groups": 2, "bias": False}, [T((2, 4, 7, 6))])
mod("mod_conv2d_dilation_circ", {"layer": "Conv2d", "in": 2, "out": 2, "k": [3, 3], "dilation": [2, 2],
                                 "padding": [2, 1], "padding_mode": "circular"}, [T((1, 2, 6, 6))])
mod("mod_conv2d_nc", {"layer": "Conv2d", "in": 3, "out": 2, "k": [2, 2]}, [T((2, 3, 4, 4), layout="transposed")])
mod("mod_conv2d_f64", {"layer": "Conv2d", "in": 2, "out": 3, "k": [3, 3], "padding": [1, 1], "padding_mode": "reflect"},
    [T((1, 2, 4, 5), "float64")], dtype="float64")
mod("mod_conv2d_unbatched", {"layer": "Conv2d", "in": 2, "out": 3, "k": [3, 3], "padding_mode": "replicate",
                             "padding": [1, 1]}, [T((2, 5, 5))])
mod("mod_conv_transpose2d", {"layer": "ConvTranspose2d", "in": 3, "out": 4, "k": [3, 3], "stride": [2, 2],
                             "padding": [1, 1], "output_padding": [1, 1]}, [T((2, 3, 4, 4))])
mod("mod_conv_transpose2d_groups", {"layer": "ConvTranspose2d", "in": 4, "out": 2, "k": [2, 3], "groups": 2,
                                    "bias": False}, [T((1, 4, 3, 3))])
err("mod_conv_groups_in_err", {"layer": "Conv2d", "in": 3, "out": 4, "k": [3, 3], "groups": 2},
    "in_channels must be divisible by groups")
err("mod_conv_groups_out_err", {"layer": "Conv2d", "in": 4, "out": 3, "k": [3, 3], "groups": 2},
    "out_channels must be divisible by groups")
err("mod_conv_groups_zero_err", {"layer": "Conv2d", "in": 4, "out": 4, "k": [3, 3], "groups": 0},
    "groups must be a positive integer")
err("mod_conv_mode_err", {"layer": "Conv2d", "in": 4, "out": 4, "k": [3, 3], "padding_mode": "foo"},
    "padding_mode must be one of")
err("mod_conv_same_stride_err", {"layer": "Conv2d", "in": 4, "out": 4, "k": [3, 3], "stride": [2, 2],
                                 "pad_str": "same"}, "padding='same' is not supported for strided convolutions")
err("mod_conv_padstr_err", {"layer": "Conv2d", "in": 4, "out": 4, "k": [3, 3], "pad_str": "foo"},
    "Invalid padding string 'foo'")
err("mod_convt_mode_err", {"layer": "ConvTranspose2d", "in": 4, "out": 4, "k": [3, 3], "padding_mode": "reflect"},
    "Only \"zeros\" padding mode is supported for ConvTranspose2d")

# ---------------------------------------------------------------- norms
mod("mod_bn1d_train", {"layer": "BatchNorm1d", "nf": 3, "buffers": 1}, [T((6, 3))])
mod("mod_bn1d_3d_train", {"layer": "BatchNorm1d", "nf": 3, "buffers": 1}, [T((4, 3, 5))])
# train-then-eval cases: the eval output depends on running statistics that the train step took from x
# without autograd (in PyTorch too), so a finite-difference check cannot agree with the gradient: fd=False
mod("mod_bn2d_train_eval", {"layer": "BatchNorm2d", "nf": 3, "steps": [1, 0], "buffers": 1}, [T((2, 3, 4, 4))],
    fd=False)
mod("mod_bn2d_eval", {"layer": "BatchNorm2d", "nf": 3, "train": 0}, [T((2, 3, 2, 3))])
mod("mod_bn2d_momentum_none", {"layer": "BatchNorm2d", "nf": 2, "momentum_none": 1, "steps": [1, 1],
                               "buffers": 1}, [T((3, 2, 2, 2))])
mod("mod_bn2d_momentum", {"layer": "BatchNorm2d", "nf": 2, "momentum": 0.3, "steps": [1, 1], "buffers": 1},
    [T((3, 2, 2, 2))])
mod("mod_bn2d_noaffine", {"layer": "BatchNorm2d", "nf": 3, "affine": False, "steps": [1, 0], "buffers": 1},
    [T((2, 3, 3, 3))], fd=False)
mod("mod_bn2d_notrack", {"layer": "BatchNorm2d", "nf": 3, "track": False, "steps": [1, 0]}, [T((2, 3, 3, 3))])
mod("mod_bn2d_f64", {"layer": "BatchNorm2d", "nf": 2, "buffers": 1}, [T((2, 2, 3, 3), "float64")], dtype="float64")
err("mod_bn2d_dim_err", {"layer": "BatchNorm2d", "nf": 3}, "expected 4D input (got 2D input)", xs=[T((2, 3))],
    ctor_only=False)
err("mod_bn1d_dim_err", {"layer": "BatchNorm1d", "nf": 3}, "expected 2D or 3D input (got 4D input)",
    xs=[T((2, 3, 2, 2))], ctor_only=False)
err("mod_bn1d_one_err", {"layer": "BatchNorm1d", "nf": 3}, "Expected more than 1 value per channel when training",
    xs=[T((1, 3))], ctor_only=False)
mod("mod_layernorm", {"layer": "LayerNorm", "shape": [4]}, [T((2, 3, 4))])
mod("mod_layernorm_2d", {"layer": "LayerNorm", "shape": [3, 4], "eps": 1e-3}, [T((2, 3, 4), layout="transposed")])
mod("mod_layernorm_noaffine", {"layer": "LayerNorm", "shape": [5], "affine": False}, [T((3, 5))])
mod("mod_groupnorm", {"layer": "GroupNorm", "groups": 2, "channels": 4}, [T((2, 4, 3, 3))])
mod("mod_groupnorm_noaffine", {"layer": "GroupNorm", "groups": 3, "channels": 6, "affine": False}, [T((2, 6, 5))])
err("mod_groupnorm_err", {"layer": "GroupNorm", "groups": 3, "channels": 4}, "num_channels must be divisible by num_groups")
mod("mod_rmsnorm", {"layer": "RMSNorm", "shape": [4]}, [T((2, 3, 4))])
mod("mod_rmsnorm_eps", {"layer": "RMSNorm", "shape": [3, 4], "eps": 1e-2}, [T((2, 3, 4))])
mod("mod_rmsnorm_noaffine_f64", {"layer": "RMSNorm", "shape": [5], "affine": False}, [T((3, 5), "float64")])

# ---------------------------------------------------------------- dropout, embedding
mod("mod_dropout_train", {"layer": "Dropout", "p": 0.3, "seed": 5}, [T((6, 7))])
mod("mod_dropout_eval", {"layer": "Dropout", "p": 0.3, "train": 0}, [T((6, 7))])
mod("mod_dropout_two_steps", {"layer": "Dropout", "p": 0.5, "seed": 1, "steps": [1, 1]}, [T((4, 5))])
err("mod_dropout_p_err", {"layer": "Dropout", "p": 1.5}, "dropout probability has to be between 0 and 1, but got 1.5")
mod("mod_embedding", {"layer": "Embedding", "num": 10, "dim": 4}, [T((2, 3), "int64", low=0, high=10)])
# the padding row gets no gradient by definition, so finite differences (which see it) cannot agree
mod("mod_embedding_pad", {"layer": "Embedding", "num": 6, "dim": 3, "padding_idx": 2},
    [T((5,), "int64", values=[2, 0, 2, 5, 1])], fd=False)
err("mod_embedding_pad_err", {"layer": "Embedding", "num": 3, "dim": 4, "padding_idx": 3},
    "Padding_idx must be within num_embeddings")
mod("mod_embedding_ckpt", {"layer": "Embedding", "num": 6, "dim": 3, "checkpoint": 1},
    [T((4,), "int64", low=0, high=6)])

# ---------------------------------------------------------------- pools, Flatten, Identity
mod("mod_maxpool", {"layer": "MaxPool2d", "k": [2, 2]}, [T((2, 3, 4, 6))])
mod("mod_maxpool_s_p", {"layer": "MaxPool2d", "k": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": True},
    [T((1, 2, 7, 6))])
mod("mod_avgpool", {"layer": "AvgPool2d", "k": [2, 2]}, [T((2, 3, 4, 6))])
mod("mod_avgpool_opts", {"layer": "AvgPool2d", "k": [3, 3], "stride": [2, 2], "padding": [1, 1],
                         "count_include_pad": False, "ceil_mode": True}, [T((1, 2, 7, 6))])
mod("mod_avgpool_divisor", {"layer": "AvgPool2d", "k": [2, 3], "divisor": 5}, [T((1, 2, 4, 6))])
mod("mod_adaptive_avg", {"layer": "AdaptiveAvgPool2d", "out_size": [2, 3]}, [T((2, 3, 5, 7))])
mod("mod_adaptive_avg_none", {"layer": "AdaptiveAvgPool2d", "out_size": [1, -1]}, [T((1, 2, 5, 4))])
mod("mod_flatten", {"layer": "Flatten"}, [T((2, 3, 4))])
mod("mod_flatten_dims", {"layer": "Flatten", "start": 0, "end": 1}, [T((2, 3, 4), layout="transposed")])
mod("mod_identity", {"layer": "Identity"}, [T((3, 4))])

# ---------------------------------------------------------------- activations
for act, extra in (("ReLU", {}), ("ReLU6", {}), ("SiLU", {}), ("Mish", {}), ("Tanh", {}), ("Sigmoid", {}),
                   ("Hardswish", {}), ("Hardsigmoid", {}), ("SELU", {}), ("GELU", {}),
                   ("GELU", {"approximate": "tanh"}), ("LeakyReLU", {"slope": 0.2}), ("ELU", {"alpha": 0.5}),
                   ("CELU", {"alpha": 1.5}), ("Hardtanh", {"min": -0.5, "max": 1.5}),
                   ("Softplus", {"beta": 2.0, "threshold": 1.0}), ("Softmax", {"dim": 1}),
                   ("LogSoftmax", {"dim": -1})):
    nm = "mod_act_" + act.lower() + ("_" + "_".join(str(v) for v in extra.values()) if extra else "")
    # ReLU-like kinks: finite differences at x ~ 0 are unreliable, the values keep away from them
    add_fd = act not in ("ReLU", "ReLU6", "LeakyReLU", "Hardtanh", "Hardswish", "Hardsigmoid", "ELU", "CELU", "SELU")
    mod(nm, dict({"layer": act}, **extra), [T((3, 5))], fd=add_fd)
mod("mod_act_gelu_f64", {"layer": "GELU"}, [T((3, 4), "float64")])

# ---------------------------------------------------------------- MultiheadAttention
# Weights in [-0.5, 0.5] (an initialised layer's scale); with [-2, 2] the attention scores reach ~30, the
# softmax saturates and float32 rounding of the score sums (PyTorch's sgemm vs ctorch's kernels) shows up
# at ~1e-4 in the gradients (the float64 case below holds 1e-10 either way).
MHA_W = (-0.5, 0.5)
mod("mod_mha_self", {"layer": "MultiheadAttention", "E": 8, "H": 2}, [T((5, 2, 8))], prange=MHA_W)
mod("mod_mha_self_weights", {"layer": "MultiheadAttention", "E": 8, "H": 2, "need_weights": 1}, [T((4, 3, 8))], prange=MHA_W)
mod("mod_mha_weights_per_head", {"layer": "MultiheadAttention", "E": 6, "H": 3, "need_weights": 1, "average": 0},
    [T((4, 2, 6))], prange=MHA_W)
mod("mod_mha_batch_first", {"layer": "MultiheadAttention", "E": 8, "H": 4, "batch_first": True, "need_weights": 1},
    [T((2, 5, 8))], prange=MHA_W)
mod("mod_mha_cross", {"layer": "MultiheadAttention", "E": 6, "H": 2, "cross": 1, "need_weights": 1},
    [T((3, 2, 6)), T((5, 2, 6)), T((5, 2, 6))], prange=MHA_W)
mod("mod_mha_nobias", {"layer": "MultiheadAttention", "E": 6, "H": 2, "bias": False}, [T((3, 2, 6))], prange=MHA_W)
mod("mod_mha_bool_mask", {"layer": "MultiheadAttention", "E": 8, "H": 2, "has_mask": 1, "need_weights": 1},
    [T((4, 2, 8)), T((4, 4), "bool", values=[[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]])], prange=MHA_W)
mod("mod_mha_float_mask", {"layer": "MultiheadAttention", "E": 8, "H": 2, "has_mask": 1},
    [T((4, 2, 8)), T((4, 4), requires_grad=False)], prange=MHA_W)
mod("mod_mha_kpm", {"layer": "MultiheadAttention", "E": 8, "H": 2, "has_kpm": 1, "need_weights": 1},
    [T((4, 2, 8)), T((2, 4), "bool", values=[[0, 0, 0, 1], [0, 1, 0, 1]])], prange=MHA_W)
mod("mod_mha_kpm_mask3d", {"layer": "MultiheadAttention", "E": 4, "H": 2, "has_kpm": 1, "has_mask": 1,
                           "batch_first": True},
    [T((2, 3, 4)), T((2, 3), "bool", values=[[0, 0, 1], [0, 0, 0]]), T((4, 3, 3), requires_grad=False)], prange=MHA_W)
mod("mod_mha_unbatched", {"layer": "MultiheadAttention", "E": 6, "H": 3, "need_weights": 1}, [T((4, 6))], prange=MHA_W)
mod("mod_mha_dropout", {"layer": "MultiheadAttention", "E": 8, "H": 2, "dropout": 0.3, "seed": 3, "need_weights": 1},
    [T((4, 2, 8))], prange=MHA_W)
mod("mod_mha_dropout_eval", {"layer": "MultiheadAttention", "E": 8, "H": 2, "dropout": 0.3, "train": 0},
    [T((4, 2, 8))], prange=MHA_W)
mod("mod_mha_f64", {"layer": "MultiheadAttention", "E": 4, "H": 2, "need_weights": 1}, [T((3, 2, 4), "float64")],
    dtype="float64", prange=MHA_W)
err("mod_mha_heads_err", {"layer": "MultiheadAttention", "E": 6, "H": 4}, "embed_dim must be divisible by num_heads")
err("mod_mha_dim_err", {"layer": "MultiheadAttention", "E": 4, "H": 2},
    "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor", xs=[T((1, 2, 3, 4))],
    ctor_only=False)

# ---------------------------------------------------------------- containers (a nested model)
mod("mod_net_train", {"layer": "Net", "buffers": 1}, [T((2, 3, 4, 4))])
mod("mod_net_train_eval", {"layer": "Net", "steps": [1, 0]}, [T((3, 3, 4, 4))], fd=False)  # see mod_bn2d_train_eval
mod("mod_mlp", {"layer": "MLP"}, [T((5, 6))])

# ---------------------------------------------------------------- activation checkpointing: equal to the plain module
mod("ckpt_mlp_dropout", {"layer": "MLP", "p": 0.4, "seed": 11, "checkpoint": 1}, [T((5, 6))])
mod("ckpt_mlp_dropout_2steps", {"layer": "MLP", "p": 0.5, "seed": 3, "steps": [1, 1], "checkpoint": 1}, [T((4, 6))])
mod("ckpt_net", {"layer": "Net", "checkpoint": 1}, [T((2, 3, 4, 4))])
mod("ckpt_mha_dropout", {"layer": "MultiheadAttention", "E": 8, "H": 2, "dropout": 0.3, "seed": 4, "checkpoint": 1},
    [T((4, 2, 8))], prange=MHA_W)
mod("ckpt_conv_reflect", {"layer": "Conv2d", "in": 2, "out": 3, "k": [3, 3], "padding": [1, 1],
                          "padding_mode": "reflect", "checkpoint": 1}, [T((1, 2, 4, 4))])
mod("ckpt_mlp_f64", {"layer": "MLP", "p": 0.2, "seed": 2, "checkpoint": 1}, [T((3, 6), "float64")], dtype="float64")

# ---------------------------------------------------------------- LoRA
mod("lora_linear", {"layer": "LoraLinear", "in": 5, "out": 4, "r": 2, "lora_alpha": 4.0}, [T((3, 5))])
mod("lora_linear_nobias_3d", {"layer": "LoraLinear", "in": 4, "out": 6, "r": 3, "lora_alpha": 1.5, "bias": False},
    [T((2, 3, 4))])
mod("lora_linear_dropout", {"layer": "LoraLinear", "in": 5, "out": 4, "r": 2, "lora_alpha": 2.0, "lora_dropout": 0.3,
                            "seed": 6}, [T((3, 5))])
mod("lora_linear_dropout_eval", {"layer": "LoraLinear", "in": 5, "out": 4, "r": 2, "lora_alpha": 2.0,
                                 "lora_dropout": 0.3, "train": 0}, [T((3, 5))])
# grad_atol 5e-5: each lora_B gradient element is a 50-term float32 sum of scaling * grad_out * lora_A(x) whose
# |terms| add up to 180-340 while the sum can cancel to ~2 (element [3, 0] is -2.3144 from 337): any float32
# summation order keeps an absolute error up to ~eps * 337 = 4e-5, before the rounding of the 27-term lora_A
# outputs it multiplies. Measured against float64: PyTorch 1.13 3.5e-7, ctorch native 6e-6, ctorch wasm (no FMA
# in SIMD128, another GEMM blocking) 3.0e-5, all inside that bound.
mod("lora_conv2d", {"layer": "LoraConv2d", "in": 3, "out": 4, "k": [3, 3], "padding": [1, 1], "r": 2,
                    "lora_alpha": 3.0}, [T((2, 3, 5, 5))], grad_atol=5e-5)
mod("lora_conv2d_stride_reflect", {"layer": "LoraConv2d", "in": 2, "out": 3, "k": [3, 2], "stride": [2, 1],
                                   "padding": [1, 1], "padding_mode": "reflect", "r": 2, "lora_alpha": 2.0,
                                   "lora_dropout": 0.25, "seed": 9}, [T((1, 2, 6, 5))])
mod("lora_linear_ckpt", {"layer": "LoraLinear", "in": 5, "out": 4, "r": 2, "lora_alpha": 2.0, "lora_dropout": 0.3,
                         "seed": 6, "checkpoint": 1}, [T((3, 5))])
