"""nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder against PyTorch 1.13:
state_dict names, default initialisation bit for bit after the same manual_seed, outputs, attention
weights and gradients given the same weights and inputs, dropout's random draws, and errors."""
import numpy as np
import pytest
import torch
import ctorch

from conftest import both


def _np(t):
    return t.detach().numpy()


def _build(make, seed=0):
    """The module from make(lib) in torch and ctorch after the same seed."""
    torch.manual_seed(seed)
    mt = make(torch)
    ctorch.manual_seed(seed)
    mc = make(ctorch)
    return mt, mc


def _inputs(shapes, seed=1):
    g = np.random.RandomState(seed)
    arrs = [g.standard_normal(s).astype(np.float32) for s in shapes]
    return ([torch.tensor(a, requires_grad=True) for a in arrs], [ctorch.tensor(a, requires_grad=True) for a in arrs])


def _close(c, t, rtol=1e-5, atol=2e-6, what=""):
    # float32 with reordered sums (packed GEMM vs MKL): differences of a few ulps
    assert c is not None and t is not None, what
    a, b = _np(c), _np(t)
    assert a.shape == b.shape, "%s: shape %s vs %s" % (what, a.shape, b.shape)
    assert str(c.dtype) == str(t.dtype), what
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)


def _check_init(mt, mc):
    kt, kc = list(mt.state_dict().keys()), list(mc.state_dict().keys())
    assert kc == kt
    for k in kt:
        # same random stream and same init functions: equal bit for bit
        assert np.array_equal(_np(mc.state_dict()[k]), _np(mt.state_dict()[k])), k
    assert [n for n, _ in mc.named_parameters()] == [n for n, _ in mt.named_parameters()]
    assert repr(mc) == repr(mt)


def _copy_weights(mt, mc):
    sd = {k: ctorch.tensor(_np(v)) for k, v in mt.state_dict().items()}
    r = mc.load_state_dict(sd)
    assert not r.missing_keys and not r.unexpected_keys


def _compare_grads(mt, mc, xt, xc, rtol=1e-4, atol=1e-5):
    for (n, pt), (_, pc) in zip(mt.named_parameters(), mc.named_parameters()):
        if pt.grad is None:
            assert pc.grad is None, n
            continue
        _close(pc.grad, pt.grad, rtol, atol, "grad of " + n)
    for i, (a, b) in enumerate(zip(xc, xt)):
        if b.grad is not None:
            _close(a.grad, b.grad, rtol, atol, "grad of input %d" % i)


# ---- MultiheadAttention ----

MHA_CONFIGS = {
    "default": (dict(embed_dim=8, num_heads=2), "self"),
    "one_head": (dict(embed_dim=6, num_heads=1), "self"),
    "batch_first": (dict(embed_dim=8, num_heads=4, batch_first=True), "self"),
    "no_bias": (dict(embed_dim=8, num_heads=2, bias=False), "self"),
    "kdim_vdim": (dict(embed_dim=8, num_heads=2, kdim=5, vdim=3), "qkv"),
    "kdim_vdim_bf": (dict(embed_dim=8, num_heads=2, kdim=5, vdim=3, batch_first=True), "qkv"),
    "bias_kv": (dict(embed_dim=8, num_heads=2, add_bias_kv=True), "self"),
    "zero_attn": (dict(embed_dim=8, num_heads=2, add_zero_attn=True), "cross"),
    "bias_kv_zero_attn": (dict(embed_dim=8, num_heads=2, add_bias_kv=True, add_zero_attn=True), "qkv"),
    "cross": (dict(embed_dim=8, num_heads=2), "cross"),
    "qkv": (dict(embed_dim=8, num_heads=2, batch_first=True), "qkv"),
    "float64": (dict(embed_dim=8, num_heads=2, dtype="float64"), "self"),
}


def _mha(cfg):
    def make(L):
        kw = dict(cfg)
        if "dtype" in kw:
            kw["dtype"] = getattr(L, kw["dtype"])
        return L.nn.MultiheadAttention(**kw)
    return make


def _mha_inputs(m_kw, mode, T=4, S=5, B=3, batched=True, seed=1):
    E, kd, vd = m_kw["embed_dim"], m_kw.get("kdim") or m_kw["embed_dim"], m_kw.get("vdim") or m_kw["embed_dim"]
    bf = m_kw.get("batch_first", False)

    def shp(L_, e):
        if not batched:
            return (L_, e)
        return (B, L_, e) if bf else (L_, B, e)
    if mode == "self":
        (qt,), (qc,) = _inputs([shp(T, E)], seed)
        return (qt, qt, qt), (qc, qc, qc), [qt], [qc]
    if mode == "cross":
        (qt, kt), (qc, kc) = _inputs([shp(T, E), shp(S, E)], seed)
        return (qt, kt, kt), (qc, kc, kc), [qt, kt], [qc, kc]
    (qt, kt, vt), (qc, kc, vc) = _inputs([shp(T, E), shp(S, kd), shp(S, vd)], seed)
    return (qt, kt, vt), (qc, kc, vc), [qt, kt, vt], [qc, kc, vc]


def _cast(ins, dtype):
    return tuple(x.to(dtype) if x.dtype != dtype else x for x in ins)


@pytest.mark.parametrize("name", sorted(MHA_CONFIGS))
def test_mha_init_and_forward(name):
    cfg, mode = MHA_CONFIGS[name]
    mt, mc = _build(_mha(cfg))
    _check_init(mt, mc)
    _copy_weights(mt, mc)
    it, ic, lt, lc = _mha_inputs(cfg, mode)
    if cfg.get("dtype") == "float64":
        it, ic = _cast(it, torch.float64), _cast(ic, ctorch.float64)
    ot, wt = mt(*it)
    oc, wc = mc(*ic)
    _close(oc, ot, what="output")
    _close(wc, wt, what="weights")
    g = np.random.RandomState(7).standard_normal(tuple(ot.shape)).astype(np.float32)
    (ot * torch.tensor(g, dtype=ot.dtype)).sum().backward()
    (oc * ctorch.tensor(g, dtype=oc.dtype)).sum().backward()
    _compare_grads(mt, mc, lt, lc)


MASK_CASES = {
    "kpm_bool": lambda L, B, S, T, H: dict(key_padding_mask=L.tensor([[False] * (S - 1) + [True]] * B)),
    "kpm_float": lambda L, B, S, T, H: dict(key_padding_mask=L.tensor([[0.0] * (S - 2) + [-1.5, -3.0]] * B)),
    "attn2d_bool": lambda L, B, S, T, H: dict(attn_mask=L.ones(T, S, dtype=L.bool).triu(2)),
    "attn2d_float": lambda L, B, S, T, H: dict(attn_mask=L.arange(T * S, dtype=L.float32).reshape(T, S) / -10),
    "attn3d_float": lambda L, B, S, T, H: dict(attn_mask=L.arange(B * H * T * S, dtype=L.float32)
                                               .reshape(B * H, T, S).remainder(3.0) * -0.5),
    "attn_bool_kpm_bool": lambda L, B, S, T, H: dict(attn_mask=L.ones(T, S, dtype=L.bool).triu(3),
                                                     key_padding_mask=L.tensor([[False] * (S - 1) + [True]] * B)),
    "attn_float_kpm_bool": lambda L, B, S, T, H: dict(attn_mask=L.ones(T, S).triu(1) * -2.0,
                                                      key_padding_mask=L.tensor([[False] * (S - 1) + [True]] * B)),
    "attn_uint8": lambda L, B, S, T, H: dict(attn_mask=L.ones(T, S, dtype=L.uint8).triu(2)),
    "no_weights": lambda L, B, S, T, H: dict(need_weights=False),
    "per_head_weights": lambda L, B, S, T, H: dict(average_attn_weights=False),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("mha", ["default", "batch_first", "bias_kv_zero_attn", "kdim_vdim"])
@pytest.mark.parametrize("mask", sorted(MASK_CASES))
def test_mha_masks(mha, mask):
    cfg, mode = MHA_CONFIGS[mha]
    mt, mc = _build(_mha(cfg))
    _copy_weights(mt, mc)
    T, S, B, H = 4, 5, 3, cfg["num_heads"]
    it, ic, lt, lc = _mha_inputs(cfg, "cross" if mode == "self" else mode, T, S, B)
    ot, wt = mt(*it, **MASK_CASES[mask](torch, B, S, T, H))
    oc, wc = mc(*ic, **MASK_CASES[mask](ctorch, B, S, T, H))
    _close(oc, ot, what="output")
    if wt is None:
        assert wc is None
    else:
        _close(wc, wt, what="weights")
    ot.sum().backward()
    oc.sum().backward()
    _compare_grads(mt, mc, lt, lc)


@pytest.mark.parametrize("mha", ["default", "kdim_vdim", "bias_kv"])
@pytest.mark.parametrize("mask", ["none", "kpm", "attn3d"])
def test_mha_unbatched(mha, mask):
    cfg, mode = MHA_CONFIGS[mha]
    mt, mc = _build(_mha(cfg))
    _copy_weights(mt, mc)
    T, S, H = 4, 5, cfg["num_heads"]
    it, ic, lt, lc = _mha_inputs(cfg, "cross" if mode == "self" else mode, T, S, batched=False)

    def masks(L):
        if mask == "kpm":
            return dict(key_padding_mask=L.tensor([False, True] + [False] * (S - 2)))
        if mask == "attn3d":
            return dict(attn_mask=L.ones(H, T, S + (1 if cfg.get("add_bias_kv") else 0)).tril() * -1.0)
        return {}
    try:
        ot, wt = mt(*it, **masks(torch))
    except Exception as e:  # noqa: BLE001  (torch refuses a 3-D mask with a bias_kv column: so must we)
        with pytest.raises(type(e)):
            mc(*ic, **masks(ctorch))
        return
    oc, wc = mc(*ic, **masks(ctorch))
    _close(oc, ot, what="output")
    _close(wc, wt, what="weights")
    ot.sum().backward()
    oc.sum().backward()
    _compare_grads(mt, mc, lt, lc)


@pytest.mark.parametrize("bf", [False, True])
def test_mha_eval_no_grad(bf):
    """In eval mode without grad PyTorch takes its fused path; the values must still agree."""
    cfg = dict(embed_dim=8, num_heads=2, batch_first=bf)
    mt, mc = _build(_mha(cfg))
    _copy_weights(mt, mc)
    mt.eval()
    mc.eval()
    it, ic, _, _ = _mha_inputs(cfg, "self")
    for kw in ({}, {"need_weights": False}, {"key_padding_mask": "kpm"}):
        kwt, kwc = dict(kw), dict(kw)
        if "key_padding_mask" in kw:
            kwt["key_padding_mask"] = torch.tensor([[False, False, False, True]] * 3)
            kwc["key_padding_mask"] = ctorch.tensor([[False, False, False, True]] * 3)
        with torch.no_grad():
            ot, wt = mt(it[0].detach(), it[0].detach(), it[0].detach(), **kwt)
        with ctorch.no_grad():
            oc, wc = mc(ic[0].detach(), ic[0].detach(), ic[0].detach(), **kwc)
        _close(oc, ot, what="output %r" % kw)
        if wt is None:
            assert wc is None
        else:
            _close(wc, wt, what="weights %r" % kw)


def test_mha_dropout_same_stream():
    """Training with dropout: the same seed gives the same dropout masks as PyTorch."""
    cfg = dict(embed_dim=8, num_heads=2, dropout=0.5)
    mt, mc = _build(_mha(cfg))
    _copy_weights(mt, mc)
    it, ic, lt, lc = _mha_inputs(cfg, "self")
    torch.manual_seed(123)
    ot, wt = mt(*it)
    ctorch.manual_seed(123)
    oc, wc = mc(*ic)
    _close(oc, ot, what="output")
    _close(wc, wt, what="weights")
    ot.sum().backward()
    oc.sum().backward()
    _compare_grads(mt, mc, lt, lc)


MHA_ERRORS = {
    "heads_divide": lambda L: L.nn.MultiheadAttention(10, 3),
    "query_4d": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(1, 2, 3, 4), L.ones(1, 2, 3, 4), L.ones(1, 2, 3, 4)),
    "key_2d_for_3d": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 3, 4), L.ones(2, 4), L.ones(2, 4)),
    "kpm_3d": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 3, 4), L.ones(2, 3, 4), L.ones(2, 3, 4),
                                                      key_padding_mask=L.ones(3, 2, 1, dtype=L.bool)),
    "kpm_shape": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 3, 4), L.ones(2, 3, 4), L.ones(2, 3, 4),
                                                         key_padding_mask=L.ones(3, 5, dtype=L.bool)),
    "kpm_int": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 3, 4), L.ones(2, 3, 4), L.ones(2, 3, 4),
                                                       key_padding_mask=L.ones(3, 2, dtype=L.int64)),
    "attn_mask_2d_shape": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 3, 4), L.ones(2, 3, 4), L.ones(2, 3, 4),
                                                                  attn_mask=L.ones(3, 3)),
    "attn_mask_3d_shape": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 3, 4), L.ones(2, 3, 4), L.ones(2, 3, 4),
                                                                  attn_mask=L.ones(2, 2, 2)),
    "attn_mask_int": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 3, 4), L.ones(2, 3, 4), L.ones(2, 3, 4),
                                                             attn_mask=L.ones(2, 2, dtype=L.int32)),
    "embed_mismatch": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 3, 6), L.ones(2, 3, 6), L.ones(2, 3, 6)),
    "kv_shape": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 3, 4), L.ones(2, 3, 4), L.ones(5, 3, 4)),
    "kdim_wrong": lambda L: L.nn.MultiheadAttention(4, 2, kdim=3, vdim=3)(L.ones(2, 3, 4), L.ones(2, 3, 4),
                                                                         L.ones(2, 3, 3)),
    "unbatched_attn3d": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(2, 4), L.ones(3, 4), L.ones(3, 4),
                                                                attn_mask=L.ones(1, 2, 3)),
    "activation_name": lambda L: L.nn.TransformerEncoderLayer(4, 2, activation="tanh"),
    "tel_kpm_int": lambda L: L.nn.TransformerEncoderLayer(4, 2, 8)(L.ones(3, 2, 4),
                                                                  src_key_padding_mask=L.ones(2, 3, dtype=L.int64)),
    "tel_width": lambda L: L.nn.TransformerEncoderLayer(4, 2, 8)(L.ones(3, 2, 5)),
}


@pytest.mark.parametrize("name", sorted(MHA_ERRORS))
def test_mha_errors(name):
    ec, et = both(MHA_ERRORS[name])
    assert isinstance(et, Exception) and isinstance(ec, Exception)
    first = str(et).split("\n")[0]
    assert str(ec).split("\n")[0] == first, "ctorch: %s\ntorch:  %s" % (ec, et)


# ---- TransformerEncoderLayer / TransformerEncoder ----

TEL_CONFIGS = {
    "default": dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0),
    "norm_first": dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, norm_first=True),
    "gelu": dict(d_model=8, nhead=4, dim_feedforward=12, dropout=0.0, activation="gelu"),
    "gelu_fn": dict(d_model=8, nhead=2, dim_feedforward=12, dropout=0.0, activation="F.gelu"),
    "batch_first": dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True),
    "bf_norm_first_gelu": dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True,
                               norm_first=True, activation="gelu"),
    "eps": dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, layer_norm_eps=1e-3),
    "default_dropout": dict(d_model=8, nhead=2, dim_feedforward=16),
    "big_default": dict(d_model=16, nhead=4),
}


def _tel(cfg):
    def make(L):
        kw = dict(cfg)
        if kw.get("activation") == "F.gelu":
            kw["activation"] = L.nn.functional.gelu
        return L.nn.TransformerEncoderLayer(**kw)
    return make


def _src(cfg, T=5, B=3, seed=2):
    shape = (B, T, cfg["d_model"]) if cfg.get("batch_first") else (T, B, cfg["d_model"])
    (xt,), (xc,) = _inputs([shape], seed)
    return xt, xc


def _src_masks(L, cfg, T=5, B=3, which="none"):
    kw = {}
    if which in ("kpm", "both"):
        kw["src_key_padding_mask"] = L.tensor([[False] * (T - 1 - b % 2) + [True] * (1 + b % 2) for b in range(B)])
    if which in ("mask", "both"):
        kw["src_mask"] = L.ones(T, T, dtype=L.bool).triu(1)
    if which == "mask_float":
        kw["src_mask"] = L.ones(T, T).triu(1) * -1e9
    return kw


@pytest.mark.parametrize("name", sorted(TEL_CONFIGS))
@pytest.mark.parametrize("masks", ["none", "kpm", "mask", "both", "mask_float"])
def test_encoder_layer(name, masks):
    cfg = TEL_CONFIGS[name]
    mt, mc = _build(_tel(cfg))
    _check_init(mt, mc)
    _copy_weights(mt, mc)
    xt, xc = _src(cfg)
    seed = 5
    torch.manual_seed(seed)
    yt = mt(xt, **_src_masks(torch, cfg, which=masks))
    ctorch.manual_seed(seed)
    yc = mc(xc, **_src_masks(ctorch, cfg, which=masks))
    # dropout on (training mode): the same seed must give the same masks
    _close(yc, yt, rtol=1e-4, atol=1e-5, what="output")
    g = np.random.RandomState(3).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yt * torch.tensor(g)).sum().backward()
    (yc * ctorch.tensor(g)).sum().backward()
    _compare_grads(mt, mc, [xt], [xc], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", ["default", "batch_first", "bf_norm_first_gelu", "gelu"])
@pytest.mark.parametrize("masks", ["none", "kpm", "mask"])
def test_encoder_layer_eval(name, masks):
    """eval() and no_grad: PyTorch takes its fused path for some of these; values must agree."""
    cfg = TEL_CONFIGS[name]
    mt, mc = _build(_tel(cfg))
    _copy_weights(mt, mc)
    mt.eval()
    mc.eval()
    xt, xc = _src(cfg)
    with torch.no_grad():
        yt = mt(xt, **_src_masks(torch, cfg, which=masks))
    with ctorch.no_grad():
        yc = mc(xc, **_src_masks(ctorch, cfg, which=masks))
    _close(yc, yt, rtol=1e-4, atol=1e-5, what="output")


ENC_CONFIGS = {
    "plain": (dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0), 2, False),
    "with_norm": (dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0), 3, True),
    "batch_first_norm": (dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True), 2, True),
    "norm_first": (dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.1, norm_first=True, batch_first=True),
                   2, False),
    "dropout": (dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.2, activation="gelu"), 2, True),
}


def _enc(cfg, n, norm):
    def make(L):
        layer = _tel(cfg)(L)
        return L.nn.TransformerEncoder(layer, n, norm=L.nn.LayerNorm(cfg["d_model"]) if norm else None)
    return make


@pytest.mark.parametrize("name", sorted(ENC_CONFIGS))
@pytest.mark.parametrize("masks", ["none", "kpm", "both"])
def test_encoder(name, masks):
    cfg, n, norm = ENC_CONFIGS[name]
    mt, mc = _build(_enc(cfg, n, norm))
    _check_init(mt, mc)
    _copy_weights(mt, mc)
    xt, xc = _src(cfg)
    kt = _src_masks(torch, cfg, which=masks)
    kc = _src_masks(ctorch, cfg, which=masks)
    if "src_mask" in kt:
        kt["mask"], kc["mask"] = kt.pop("src_mask"), kc.pop("src_mask")
    torch.manual_seed(9)
    yt = mt(xt, **kt)
    ctorch.manual_seed(9)
    yc = mc(xc, **kc)
    _close(yc, yt, rtol=1e-4, atol=1e-5, what="output")
    yt.pow(2).sum().backward()
    yc.pow(2).sum().backward()
    _compare_grads(mt, mc, [xt], [xc], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("pad", ["ragged", "trailing_all", "not_left_aligned", "none_padded"])
@pytest.mark.parametrize("norm", [False, True])
def test_encoder_eval_nested(pad, norm):
    """eval + no_grad + batch_first + a padding mask: PyTorch runs on nested tensors, which leaves
    zeros at padded positions and cuts the output at the longest sequence."""
    cfg = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
    mt, mc = _build(_enc(cfg, 2, norm))
    _copy_weights(mt, mc)
    mt.eval()
    mc.eval()
    xt, xc = _src(cfg, T=5, B=3)
    rows = {"ragged": [[0, 0, 0, 0, 1], [0, 0, 0, 1, 1], [0, 0, 0, 0, 0]],
            "trailing_all": [[0, 0, 0, 1, 1], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1]],
            "not_left_aligned": [[1, 0, 0, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 0, 0]],
            "none_padded": [[0] * 5] * 3}[pad]
    with torch.no_grad():
        yt = mt(xt, src_key_padding_mask=torch.tensor(rows, dtype=torch.bool))
    with ctorch.no_grad():
        yc = mc(xc, src_key_padding_mask=ctorch.tensor(rows, dtype=ctorch.bool))
    _close(yc, yt, rtol=1e-4, atol=1e-5, what="output")


def test_encoder_clones_are_independent():
    layer = ctorch.nn.TransformerEncoderLayer(8, 2, 16)
    enc = ctorch.nn.TransformerEncoder(layer, 2)
    a = enc.layers[0].linear1.weight
    b = enc.layers[1].linear1.weight
    assert a is not b and not a._is_same(b)
    assert ctorch.equal(a, b)
    with ctorch.no_grad():
        a.add_(1)
    assert not ctorch.equal(a, b)
    assert a.is_leaf and a.requires_grad


# ---- F.unfold / nn.Unfold, nn.init.dirac_, embedding(max_norm=) ----

UNFOLD = {
    "k2": dict(kernel_size=2),
    "k3_pad1": dict(kernel_size=3, padding=1),
    "k2x3_stride2": dict(kernel_size=(2, 3), stride=2),
    "dilation2": dict(kernel_size=2, dilation=2, padding=1),
    "mixed": dict(kernel_size=(3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1)),
}


@pytest.mark.parametrize("name", sorted(UNFOLD))
@pytest.mark.parametrize("batched", [True, False])
def test_unfold(name, batched):
    shape = (2, 3, 5, 6) if batched else (3, 5, 6)
    (xt,), (xc,) = _inputs([shape], 4)
    yt = torch.nn.functional.unfold(xt, **UNFOLD[name])
    yc = ctorch.nn.functional.unfold(xc, **UNFOLD[name])
    _close(yc, yt, what="unfold")
    g = np.random.RandomState(5).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yt * torch.tensor(g)).sum().backward()
    (yc * ctorch.tensor(g)).sum().backward()
    _close(xc.grad, xt.grad, what="grad")
    mt, mc = torch.nn.Unfold(**UNFOLD[name]), ctorch.nn.Unfold(**UNFOLD[name])
    assert repr(mc) == repr(mt)
    _close(mc(xc), mt(xt), what="module")


UNFOLD_ERRORS = {
    "too_big": lambda L: L.nn.functional.unfold(L.ones(1, 1, 2, 2), 3),
    "zero_kernel": lambda L: L.nn.functional.unfold(L.ones(1, 1, 4, 4), 0),
    "zero_stride": lambda L: L.nn.functional.unfold(L.ones(1, 1, 4, 4), 2, stride=0),
    "dirac_2d": lambda L: L.nn.init.dirac_(L.ones(2, 2)),
    "dirac_groups": lambda L: L.nn.init.dirac_(L.ones(3, 2, 3), groups=2),
}


@pytest.mark.parametrize("name", sorted(UNFOLD_ERRORS))
def test_unfold_dirac_errors(name):
    ec, et = both(UNFOLD_ERRORS[name])
    assert isinstance(ec, Exception) and isinstance(et, Exception)
    assert str(ec).split("\n")[0] == str(et).split("\n")[0]


@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((2, 5, 3, 4), 1),
                                          ((4, 2, 3, 3, 3), 2)])
def test_dirac(shape, groups):
    both(lambda L: L.nn.init.dirac_(L.empty(shape), groups))


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm(norm_type):
    def run(L):
        L.manual_seed(0)
        e = L.nn.Embedding(6, 4, max_norm=1.5, norm_type=norm_type)
        idx = L.tensor([[0, 2, 2], [5, 0, 1]])
        out = e(idx)
        out.sum().backward()
        return out, e.weight, e.weight.grad
    both(run)


# ---- TransformerDecoderLayer / TransformerDecoder / Transformer ----

DEC_CONFIGS = {
    "default": dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0),
    "norm_first_gelu": dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, norm_first=True,
                            activation="gelu"),
    "batch_first": dict(d_model=8, nhead=4, dim_feedforward=12, dropout=0.0, batch_first=True),
    "dropout": dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.25),
}


def _dec_inputs(cfg, T=4, S=5, B=3):
    E = cfg["d_model"]
    shp = (lambda L_: (B, L_, E)) if cfg.get("batch_first") else (lambda L_: (L_, B, E))
    return _inputs([shp(T), shp(S)], 6)


def _dec_masks(L, which, T=4, S=5, B=3):
    kw = {}
    if which in ("causal", "all"):
        kw["tgt_mask"] = L.ones(T, T, dtype=L.bool).triu(1)
    if which == "all":
        kw["memory_mask"] = L.ones(T, S).triu(2) * -1.0
        kw["tgt_key_padding_mask"] = L.tensor([[False] * (T - 1) + [True]] * B)
        kw["memory_key_padding_mask"] = L.tensor([[False] * (S - 1) + [True]] * B)
    return kw


@pytest.mark.parametrize("name", sorted(DEC_CONFIGS))
@pytest.mark.parametrize("masks", ["none", "causal", "all"])
@pytest.mark.parametrize("stack", [False, True])
def test_decoder(name, masks, stack):
    cfg = DEC_CONFIGS[name]

    def make(L):
        layer = L.nn.TransformerDecoderLayer(**cfg)
        return L.nn.TransformerDecoder(layer, 2, norm=L.nn.LayerNorm(cfg["d_model"])) if stack else layer
    mt, mc = _build(make)
    _check_init(mt, mc)
    _copy_weights(mt, mc)
    (tt, mt_), (tc, mc_) = _dec_inputs(cfg)
    torch.manual_seed(4)
    yt = mt(tt, mt_, **_dec_masks(torch, masks))
    ctorch.manual_seed(4)
    yc = mc(tc, mc_, **_dec_masks(ctorch, masks))
    _close(yc, yt, rtol=1e-4, atol=1e-5, what="output")
    yt.pow(2).sum().backward()
    yc.pow(2).sum().backward()
    _compare_grads(mt, mc, [tt, mt_], [tc, mc_], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("bf", [False, True])
def test_transformer(bf):
    def make(L):
        return L.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16,
                                dropout=0.1, batch_first=bf)
    mt, mc = _build(make)
    _check_init(mt, mc)
    _copy_weights(mt, mc)
    (st, tt), (sc, tc) = _inputs([(3, 5, 8), (3, 4, 8)] if bf else [(5, 3, 8), (4, 3, 8)], 8)
    torch.manual_seed(2)
    yt = mt(st, tt, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4))
    ctorch.manual_seed(2)
    yc = mc(sc, tc, tgt_mask=ctorch.nn.Transformer.generate_square_subsequent_mask(4))
    _close(yc, yt, rtol=1e-4, atol=1e-5, what="output")
    yt.sum().backward()
    yc.sum().backward()
    _compare_grads(mt, mc, [st, tt], [sc, tc], rtol=1e-3, atol=1e-4)
    both(lambda L: L.nn.Transformer.generate_square_subsequent_mask(3))
    ec, et = both(lambda L: L.nn.Transformer(8, 2, 1, 1, 16)(L.ones(5, 3, 8), L.ones(4, 2, 8)))
    assert str(ec) == str(et)


# ---- the other layers: padding, 1-d pools, PReLU, Upsample, InstanceNorm, Fold, GaussianNLLLoss ----

LAYERS = {
    "ConstantPad1d": (lambda L: L.nn.ConstantPad1d((2, 1), 3.5), (2, 3, 5)),
    "ConstantPad2d": (lambda L: L.nn.ConstantPad2d(1, -1.0), (2, 3, 4, 5)),
    "ConstantPad3d": (lambda L: L.nn.ConstantPad3d((1, 0, 2, 1, 0, 1), 0.5), (1, 2, 3, 4, 5)),
    "ZeroPad2d": (lambda L: L.nn.ZeroPad2d((1, 2, 0, 1)), (2, 3, 4, 5)),
    "ReflectionPad1d": (lambda L: L.nn.ReflectionPad1d(2), (2, 3, 5)),
    "ReflectionPad2d": (lambda L: L.nn.ReflectionPad2d((1, 2, 2, 1)), (2, 3, 4, 5)),
    "ReplicationPad1d": (lambda L: L.nn.ReplicationPad1d((3, 1)), (2, 3, 5)),
    "ReplicationPad2d": (lambda L: L.nn.ReplicationPad2d(2), (2, 3, 4, 5)),
    "ReplicationPad3d": (lambda L: L.nn.ReplicationPad3d(1), (1, 2, 3, 4, 5)),
    "MaxPool1d": (lambda L: L.nn.MaxPool1d(3, stride=2, padding=1), (2, 3, 9)),
    "MaxPool1d_dil": (lambda L: L.nn.MaxPool1d(2, dilation=2, ceil_mode=True), (2, 3, 9)),
    "AvgPool1d": (lambda L: L.nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), (2, 3, 9)),
    "AdaptiveAvgPool1d": (lambda L: L.nn.AdaptiveAvgPool1d(4), (2, 3, 9)),
    "PReLU": (lambda L: L.nn.PReLU(), (2, 3, 4)),
    "PReLU_channels": (lambda L: L.nn.PReLU(3, init=0.1), (2, 3, 4, 5)),
    "Upsample_nearest": (lambda L: L.nn.Upsample(scale_factor=2), (1, 2, 3, 4)),
    "Upsample_bilinear": (lambda L: L.nn.Upsample(size=(5, 7), mode="bilinear", align_corners=False), (1, 2, 3, 4)),
    "Upsample_bilinear_ac": (lambda L: L.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
                             (1, 2, 3, 4)),
    "InstanceNorm1d": (lambda L: L.nn.InstanceNorm1d(3), (2, 3, 7)),
    "InstanceNorm1d_unbatched": (lambda L: L.nn.InstanceNorm1d(3, affine=True), (3, 7)),
    "InstanceNorm2d_affine": (lambda L: L.nn.InstanceNorm2d(3, affine=True, eps=1e-3), (2, 3, 4, 5)),
    "InstanceNorm2d_running": (lambda L: L.nn.InstanceNorm2d(3, affine=True, track_running_stats=True,
                                                             momentum=0.3), (2, 3, 4, 5)),
    "BatchNorm3d": (lambda L: L.nn.BatchNorm3d(3, momentum=0.2), (2, 3, 2, 3, 4)),
    "InstanceNorm3d": (lambda L: L.nn.InstanceNorm3d(2, affine=True), (2, 2, 3, 3, 4)),
    "LPPool1d": (lambda L: L.nn.LPPool1d(2, 3, stride=2), (2, 3, 9)),
    "LPPool2d": (lambda L: L.nn.LPPool2d(1.5, (2, 3)), (2, 3, 4, 6)),
    "DataParallel": (lambda L: L.nn.DataParallel(L.nn.Linear(6, 2)), (2, 6)),
    "Fold": (lambda L: L.nn.Fold(output_size=(4, 5), kernel_size=2), (2, 12, 12)),
    "Fold_pad_stride": (lambda L: L.nn.Fold((5, 6), (3, 2), padding=1, stride=2, dilation=(1, 2)), (1, 12, 9)),
    "Fold_unbatched": (lambda L: L.nn.Fold((3, 3), 2), (8, 4)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_more_layers(name):
    make, shape = LAYERS[name]
    mt, mc = _build(make)
    _check_init(mt, mc)
    (xt,), (xc,) = _inputs([shape], 9)
    yt, yc = mt(xt), mc(xc)
    _close(yc, yt, what="output")
    g = np.random.RandomState(1).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yt * torch.tensor(g)).sum().backward()
    (yc * ctorch.tensor(g)).sum().backward()
    _compare_grads(mt, mc, [xt], [xc])
    for k, v in mt.state_dict().items():  # running statistics after the step, then eval mode
        _close(mc.state_dict()[k], v, what=k)
    mt.eval()
    mc.eval()
    _close(mc(xc), mt(xt), what="eval output")


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("var_shape", ["same", "drop_last", "last_one"])
def test_gaussian_nll_loss(full, reduction, var_shape):
    (it, tt), (ic, tc) = _inputs([(4, 3), (4, 3)], 11)
    vshape = {"same": (4, 3), "drop_last": (4,), "last_one": (4, 1)}[var_shape]
    (vt,), (vc,) = _inputs([vshape], 12)
    vt = vt.detach().abs().requires_grad_(True)
    vc = vc.detach().abs().requires_grad_(True)
    lt = torch.nn.GaussianNLLLoss(full=full, reduction=reduction)(it, tt, vt)
    lc = ctorch.nn.GaussianNLLLoss(full=full, reduction=reduction)(ic, tc, vc)
    _close(lc, lt, what="loss")
    lt.sum().backward()
    lc.sum().backward()
    for a, b in ((ic, it), (vc, vt)):
        _close(a.grad, b.grad, what="grad")


LAYER_ERRORS = {
    "gnll_var_shape": lambda L: L.nn.functional.gaussian_nll_loss(L.ones(4, 3), L.ones(4, 3), L.ones(3, 4)),
    "gnll_var_negative": lambda L: L.nn.functional.gaussian_nll_loss(L.ones(2), L.ones(2), -L.ones(2)),
    "gnll_reduction": lambda L: L.nn.functional.gaussian_nll_loss(L.ones(2), L.ones(2), L.ones(2), reduction="x"),
    "prelu_channels": lambda L: L.nn.PReLU(4)(L.ones(2, 3, 5)),
    "instance_norm_dims": lambda L: L.nn.InstanceNorm2d(3)(L.ones(2, 3)),
    "fold_blocks": lambda L: L.nn.functional.fold(L.ones(1, 4, 5), (3, 3), 2),
    "fold_divisible": lambda L: L.nn.functional.fold(L.ones(1, 5, 4), (3, 3), 2),
}


@pytest.mark.parametrize("name", sorted(LAYER_ERRORS))
def test_more_layer_errors(name):
    ec, et = both(LAYER_ERRORS[name])
    assert isinstance(ec, Exception) and isinstance(et, Exception)
    assert str(ec).split("\n")[0] == str(et).split("\n")[0]


# ---- RNN / LSTM / GRU and their cells ----

RNN_CONFIGS = {
    "rnn": ("RNN", dict(input_size=5, hidden_size=4)),
    "rnn_relu_2l": ("RNN", dict(input_size=5, hidden_size=4, num_layers=2, nonlinearity="relu")),
    "lstm": ("LSTM", dict(input_size=5, hidden_size=4)),
    "lstm_2l_bi_bf": ("LSTM", dict(input_size=5, hidden_size=3, num_layers=2, bidirectional=True,
                                   batch_first=True)),
    "lstm_nobias": ("LSTM", dict(input_size=5, hidden_size=4, bias=False)),
    "lstm_dropout": ("LSTM", dict(input_size=5, hidden_size=4, num_layers=3, dropout=0.3)),
    "gru": ("GRU", dict(input_size=5, hidden_size=4)),
    "gru_bi_2l": ("GRU", dict(input_size=5, hidden_size=4, num_layers=2, bidirectional=True)),
    "gru_bf_dropout": ("GRU", dict(input_size=5, hidden_size=6, num_layers=2, batch_first=True, dropout=0.5)),
}


@pytest.mark.parametrize("name", sorted(RNN_CONFIGS))
@pytest.mark.parametrize("hidden", ["none", "given", "unbatched"])
def test_rnn(name, hidden):
    kind, cfg = RNN_CONFIGS[name]
    mt, mc = _build(lambda L: getattr(L.nn, kind)(**cfg))
    _check_init(mt, mc)
    dirs = 2 if cfg.get("bidirectional") else 1
    nl, H, T, B = cfg.get("num_layers", 1), cfg["hidden_size"], 6, 3
    if hidden == "unbatched":
        shapes = [(T, 5), (nl * dirs, H), (nl * dirs, H)]
    else:
        shapes = [(B, T, 5) if cfg.get("batch_first") else (T, B, 5), (nl * dirs, B, H), (nl * dirs, B, H)]
    (xt, ht, ct), (xc, hc, cc) = _inputs(shapes, 13)

    def run(m, x, h, c, L):
        L.manual_seed(21)
        if hidden == "none":
            return m(x)
        return m(x, (h, c)) if kind == "LSTM" else m(x, h)
    ot, st = run(mt, xt, ht, ct, torch)
    oc, sc = run(mc, xc, hc, cc, ctorch)
    _close(oc, ot, rtol=1e-4, atol=1e-5, what="output")
    if kind == "LSTM":
        _close(sc[0], st[0], rtol=1e-4, atol=1e-5, what="h_n")
        _close(sc[1], st[1], rtol=1e-4, atol=1e-5, what="c_n")
        lt, lc = ot.sum() + st[1].pow(2).sum(), oc.sum() + sc[1].pow(2).sum()
    else:
        _close(sc, st, rtol=1e-4, atol=1e-5, what="h_n")
        lt, lc = ot.sum() + st.pow(2).sum(), oc.sum() + sc.pow(2).sum()
    lt.backward()
    lc.backward()
    ins_t, ins_c = ([xt] if hidden == "none" else [xt, ht, ct]), ([xc] if hidden == "none" else [xc, hc, cc])
    _compare_grads(mt, mc, ins_t, ins_c, rtol=1e-3, atol=1e-5)


CELL_CONFIGS = {
    "rnn_cell": ("RNNCell", dict(input_size=5, hidden_size=4)),
    "rnn_cell_relu": ("RNNCell", dict(input_size=5, hidden_size=4, nonlinearity="relu", bias=False)),
    "lstm_cell": ("LSTMCell", dict(input_size=5, hidden_size=4)),
    "gru_cell": ("GRUCell", dict(input_size=5, hidden_size=3)),
}


@pytest.mark.parametrize("name", sorted(CELL_CONFIGS))
@pytest.mark.parametrize("hidden", ["none", "given", "unbatched"])
def test_rnn_cells(name, hidden):
    kind, cfg = CELL_CONFIGS[name]
    mt, mc = _build(lambda L: getattr(L.nn, kind)(**cfg))
    _check_init(mt, mc)
    H = cfg["hidden_size"]
    shapes = [(5,), (H,), (H,)] if hidden == "unbatched" else [(3, 5), (3, H), (3, H)]
    (xt, ht, ct), (xc, hc, cc) = _inputs(shapes, 14)
    if hidden == "none":
        rt, rc = mt(xt), mc(xc)
    elif kind == "LSTMCell":
        rt, rc = mt(xt, (ht, ct)), mc(xc, (hc, cc))
    else:
        rt, rc = mt(xt, ht), mc(xc, hc)
    if kind == "LSTMCell":
        _close(rc[0], rt[0], what="h")
        _close(rc[1], rt[1], what="c")
        lt, lc = rt[0].sum() + rt[1].sum(), rc[0].sum() + rc[1].sum()
    else:
        _close(rc, rt, what="h")
        lt, lc = rt.sum(), rc.sum()
    lt.backward()
    lc.backward()
    _compare_grads(mt, mc, [xt, ht, ct], [xc, hc, cc], rtol=1e-4, atol=1e-5)


RNN_ERRORS = {
    "input_size": lambda L: L.nn.LSTM(5, 4)(L.ones(3, 2, 6)),
    "hidden_shape": lambda L: L.nn.GRU(5, 4)(L.ones(3, 2, 5), L.zeros(1, 3, 4)),
    "lstm_cell_shape": lambda L: L.nn.LSTM(5, 4)(L.ones(3, 2, 5), (L.zeros(1, 2, 4), L.zeros(2, 2, 4))),
    "rnn_nonlinearity": lambda L: L.nn.RNN(5, 4, nonlinearity="sigmoid"),
    "dropout_range": lambda L: L.nn.LSTM(5, 4, dropout=1.5),
    "gru_proj": lambda L: L.nn.GRU(5, 4, proj_size=2),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(RNN_ERRORS))
def test_rnn_errors(name):
    ec, et = both(RNN_ERRORS[name])
    assert isinstance(ec, Exception) and isinstance(et, Exception)
    assert str(ec).split("\n")[0] == str(et).split("\n")[0]


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dim", [-1, 0])
def test_gumbel_softmax(hard, dim):
    def run(L):
        L.manual_seed(3)
        x = L.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], requires_grad=True)
        y = L.nn.functional.gumbel_softmax(x, tau=0.7, hard=hard, dim=dim)
        (y * L.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])).sum().backward()
        return y, x.grad
    both(run)


BAG_CASES = {
    "mean_offsets": (dict(mode="mean"), lambda L: (L.tensor([1, 2, 4, 5, 4, 3, 2, 9]), L.tensor([0, 4])), None),
    "sum_2d": (dict(mode="sum"), lambda L: (L.tensor([[1, 2, 4], [4, 3, 9]]), None), None),
    "max_offsets": (dict(mode="max"), lambda L: (L.tensor([1, 2, 4, 5, 4, 3, 2, 9]), L.tensor([0, 3, 5])), None),
    "empty_bag": (dict(mode="mean"), lambda L: (L.tensor([1, 2, 4]), L.tensor([0, 0, 2])), None),
    "last_offset": (dict(mode="sum", include_last_offset=True), lambda L: (L.tensor([1, 2, 4, 5]),
                                                                           L.tensor([0, 1, 4])), None),
    "padding_mean": (dict(mode="mean", padding_idx=2), lambda L: (L.tensor([1, 2, 4, 2, 2, 3]), L.tensor([0, 3, 4])),
                     None),
    "weights_sum": (dict(mode="sum"), lambda L: (L.tensor([1, 2, 4, 5]), L.tensor([0, 2])),
                    lambda L: L.tensor([0.5, -1.0, 2.0, 0.25])),
}


@pytest.mark.parametrize("name", sorted(BAG_CASES))
def test_embedding_bag(name):
    kw, data, psw = BAG_CASES[name]

    def run(L):
        L.manual_seed(0)
        m = L.nn.EmbeddingBag(10, 3, **kw)
        inp, offs = data(L)
        out = m(inp, offs, psw(L) if psw else None)
        (out * L.arange(out.numel(), dtype=L.float32).reshape(out.shape)).sum().backward()
        return repr(m), out, m.weight.grad
    both(run)


BAG_ERRORS = {
    "2d_with_offsets": lambda L: L.nn.functional.embedding_bag(L.tensor([[1, 2]]), L.ones(5, 2), L.tensor([0])),
    "1d_without_offsets": lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.ones(5, 2)),
    "bad_mode": lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.ones(5, 2), L.tensor([0]), mode="min"),
    "weights_mean": lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.ones(5, 2), L.tensor([0]),
                                                            per_sample_weights=L.ones(2)),
    "weights_shape": lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.ones(5, 2), L.tensor([0]),
                                                             mode="sum", per_sample_weights=L.ones(3)),
    "3d_input": lambda L: L.nn.functional.embedding_bag(L.ones(1, 1, 1, dtype=L.int64), L.ones(5, 2)),
}


@pytest.mark.parametrize("name", sorted(BAG_ERRORS))
def test_embedding_bag_errors(name):
    ec, et = both(BAG_ERRORS[name])
    assert isinstance(ec, Exception) and isinstance(et, Exception)
    assert str(ec).split("\n")[0] == str(et).split("\n")[0]


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kind", ["plain", "p1", "distance", "cosine"])
def test_triplet_losses(swap, reduction, kind):
    def run(L):
        (a, p, n), _ = _inputs([(4, 5)] * 3, 15) if L is torch else (_inputs([(4, 5)] * 3, 15)[1], None)
        if kind == "plain":
            m = L.nn.TripletMarginLoss(margin=0.5, swap=swap, reduction=reduction)
        elif kind == "p1":
            m = L.nn.TripletMarginLoss(p=1, swap=swap, reduction=reduction)
        elif kind == "distance":
            m = L.nn.TripletMarginWithDistanceLoss(swap=swap, reduction=reduction)
        else:
            m = L.nn.TripletMarginWithDistanceLoss(
                distance_function=lambda x, y: 1.0 - L.nn.functional.cosine_similarity(x, y), margin=0.3, swap=swap,
                reduction=reduction)
        loss = m(a, p, n)
        loss.sum().backward()
        return loss, a.grad, p.grad, n.grad
    both(run, rtol=1e-5, atol=2e-6)
