"""Devices from Python: .cuda(), .to('cuda'), device='cuda', Module.to/cuda.

Without a usable GPU every CUDA request raises PyTorch's error (AssertionError "Torch not compiled with
CUDA enabled", as Debian's CPU-only PyTorch does) and never crashes. With a GPU (the C library's CUDA
backend finds one) the same calls move tensors and modules there, and values and gradients computed on
the GPU equal the CPU's. This file needs no PyTorch, so it runs as well on a GPU machine without it:
  PYTHONPATH=build/<b>/python-ext python3 tests/python/test_cuda_device.py
"""
import sys

import ctorch
from expect_error import error_of

HAVE_CUDA = ctorch.cuda.is_available()

CUDA_CALLS = {
    "tensor_cuda": lambda: ctorch.ones(2).cuda(),
    "tensor_cuda_index": lambda: ctorch.ones(2).cuda(0),
    "to_str": lambda: ctorch.ones(2).to("cuda"),
    "to_device_obj": lambda: ctorch.ones(2).to(ctorch.device("cuda", 0)),
    "to_kw": lambda: ctorch.ones(2).to(device="cuda:0", dtype=ctorch.float64),
    "zeros_device": lambda: ctorch.zeros(2, 3, device="cuda"),
    "tensor_device": lambda: ctorch.tensor([1.0, 2.0], device="cuda"),
    "randn_device": lambda: ctorch.randn(3, device="cuda"),
    "arange_device": lambda: ctorch.arange(5, device="cuda"),
    "module_cuda": lambda: ctorch.nn.Linear(2, 2).cuda(),
    "module_to": lambda: ctorch.nn.Linear(2, 2).to("cuda"),
}


def _cpu_only_checks():
    for name, fn in CUDA_CALLS.items():
        e = error_of(AssertionError, fn, "%s: no error without a GPU" % name)
        assert e.split("\n")[0] == "Torch not compiled with CUDA enabled", (name, e)
    assert ctorch.cuda.device_count() == 0
    x = ctorch.ones(2)
    assert str(x.device) == "cpu" and not x.is_cuda and x.is_cpu and x.get_device() == -1
    assert x.cpu() is x and x.to("cpu") is x
    for bad, exc in (("cuda:x", RuntimeError), ("gpu", RuntimeError)):
        error_of(exc, lambda: x.to(bad), "to(%r) accepted" % bad)


def _gpu_checks():
    a = ctorch.tensor([[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]])
    g = a.cuda()
    assert g.is_cuda and not g.is_cpu and str(g.device) == "cuda:0" and g.get_device() == 0
    assert g.device == ctorch.device("cuda:0") and g.device.type == "cuda" and g.device.index == 0
    assert g.tolist() == a.tolist() and g.cpu().tolist() == a.tolist()
    assert repr(g) == repr(a)[:-1] + ", device='cuda:0')", repr(g)
    assert g.cuda() is g and g.to("cuda:0") is g
    h = g.to(ctorch.float64)
    assert h.is_cuda and h.dtype == ctorch.float64
    assert ctorch.zeros(2, 3, device="cuda").is_cuda
    assert ctorch.tensor([1, 2], device="cuda:0").tolist() == [1, 2]
    e = error_of(TypeError, g.numpy, "numpy() of a CUDA tensor")
    assert "can't convert cuda:0 device type tensor to numpy" in e, e
    # arithmetic on the device equals the CPU's
    for f in (lambda t: (t * 2 + 1).exp().sum(1), lambda t: t @ t.t(), lambda t: t.softmax(-1),
              lambda t: t.relu().mean()):
        c, d = f(a), f(g)
        assert d.is_cuda
        assert all(abs(x - y) <= 1e-6 * max(1.0, abs(x)) for x, y in zip(c.reshape(-1).tolist(),
                                                                      d.cpu().reshape(-1).tolist()))
    # gradients through a move: the leaf on the CPU gets them
    x = a.clone().requires_grad_(True)
    y = (x.cuda() * x.cuda()).sum()
    y.backward()
    assert x.grad is not None and not x.grad.is_cuda and x.grad.tolist() == (2 * a).tolist()
    # a module moved to the GPU keeps its Parameter objects (an optimizer made before still works)
    ctorch.manual_seed(0)
    m = ctorch.nn.Linear(3, 2)
    ref = m(a).tolist()
    w = m.weight
    opt = ctorch.optim.SGD(m.parameters(), lr=0.1)
    m.cuda()
    assert m.weight is w and w.is_cuda and w.is_leaf and w.requires_grad
    out = m(g)
    assert out.is_cuda
    assert all(abs(p - q) <= 1e-5 for r1, r2 in zip(ref, out.cpu().tolist()) for p, q in zip(r1, r2))
    out.sum().backward()
    assert w.grad is not None and w.grad.is_cuda
    opt.step()
    m.cpu()
    assert not m.weight.is_cuda
    # attention and a Transformer encoder layer on the GPU equal the CPU's (values and a gradient)
    ctorch.manual_seed(0)
    for kw in (dict(), dict(batch_first=True, norm_first=True, activation="gelu")):
        layer = ctorch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw)
        x = ctorch.randn(5, 3, 8)
        kpm = ctorch.tensor([[False, False, True]] * 5) if kw else None  # [batch 5, seq 3]
        ref = layer(x, src_key_padding_mask=kpm)
        ref.sum().backward()
        gref = layer.linear1.weight.grad.clone()
        layer.zero_grad()
        layer.cuda()
        y = layer(x.cuda(), src_key_padding_mask=kpm.cuda() if kpm is not None else None)
        y.sum().backward()
        assert y.is_cuda
        assert (y.cpu() - ref).abs().max().item() < 1e-5
        assert (layer.linear1.weight.grad.cpu() - gref).abs().max().item() < 1e-4
    mha = ctorch.nn.MultiheadAttention(8, 2, kdim=5, vdim=3, add_bias_kv=True, add_zero_attn=True)
    q, k, v = ctorch.randn(4, 2, 8), ctorch.randn(6, 2, 5), ctorch.randn(6, 2, 3)
    kpm = ctorch.tensor([[False] * 5 + [True]] * 2)
    o_ref, w_ref = mha(q, k, v, key_padding_mask=kpm)
    mha.cuda()
    o, w = mha(q.cuda(), k.cuda(), v.cuda(), key_padding_mask=kpm.cuda())
    assert o.is_cuda and w.is_cuda
    assert (o.cpu() - o_ref).abs().max().item() < 1e-5 and (w.cpu() - w_ref).abs().max().item() < 1e-6


def test_devices():
    if HAVE_CUDA:
        _gpu_checks()
    else:
        print("test_cuda_device: no usable GPU (%s): checked the CPU-only errors" %
              ctorch._C._cuda_unavailable_reason())
        _cpu_only_checks()


if __name__ == "__main__":
    test_devices()
    print("ok", "gpu" if HAVE_CUDA else "cpu-only")
    sys.exit(0)
