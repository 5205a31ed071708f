"""CUDA graphs, autocast, the TF32 switches and the memory queries from Python (issue 7): torch.cuda.CUDAGraph / torch.cuda.graph,
torch.cuda.Stream / stream, torch.autocast("cuda", dtype=torch.bfloat16), torch.backends.cuda.matmul.allow_tf32
and torch.set_float32_matmul_precision, over the C library's CUDA backend.

Without a usable GPU: the switches keep their values, autocast on "cuda" warns and disables itself (as PyTorch),
and every graph or stream object refuses with PyTorch's "Torch not compiled with CUDA enabled"; the GPU part is
skipped with a printed line. With a GPU: PyTorch's whole-network capture example (warm-up on a side stream, the
forward, loss, backward and SGD-with-momentum step captured, new data copied into the static input before each
replay) trains the same model as the same steps run eagerly, step for step; a host read inside the capture
raises and leaves no capture behind; Adam(capturable=True) replays equal eager Adam and capturable=False is
refused inside a capture; autocast returns bfloat16 products within bfloat16's rounding of float32.
Needs no PyTorch: PYTHONPATH=build/<b>/python-ext python3 tests/python/test_cuda_graph.py
"""
import sys
import warnings

import ctorch
from expect_error import error_of

HAVE_CUDA = ctorch.cuda.is_available()


def _switch_checks():
    m = ctorch.backends.cuda.matmul
    was = m.allow_tf32
    assert was is False  # PyTorch's default
    try:
        m.allow_tf32 = True
        assert m.allow_tf32 is True and ctorch.get_float32_matmul_precision() == "high"
        ctorch.set_float32_matmul_precision("highest")
        assert m.allow_tf32 is False and ctorch.get_float32_matmul_precision() == "highest"
        ctorch.set_float32_matmul_precision("medium")
        assert m.allow_tf32 is True
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ctorch.set_float32_matmul_precision("fastest")  # PyTorch: a warning, no change
        assert m.allow_tf32 is True and any("has no effect" in str(x.message) for x in w)
    finally:
        m.allow_tf32 = was
    assert ctorch.backends.cuda.matmul.allow_tf32 is was
    # the convolutions' switch apart from the products' (PyTorch's defaults: True and False)
    c = ctorch.backends.cudnn
    assert c.allow_tf32 is True
    try:
        c.allow_tf32 = False
        assert c.allow_tf32 is False and m.allow_tf32 is was
        m.allow_tf32 = True
        assert c.allow_tf32 is False
    finally:
        c.allow_tf32 = True
        m.allow_tf32 = was
    # autocast: the CPU's is refused (it would run float32, not bfloat16); disabled forms are no-ops
    assert "autocast on the CPU is not supported" in error_of(
        RuntimeError, lambda: ctorch.autocast("cpu", dtype=ctorch.bfloat16), "CPU autocast accepted")
    with ctorch.autocast("cpu", enabled=False):
        assert not ctorch.is_autocast_enabled()
    assert "unsupported autocast device_type 'tpu'" in error_of(
        RuntimeError, lambda: ctorch.autocast("tpu"), "autocast('tpu') accepted")


def _cpu_only_checks():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with ctorch.autocast("cuda", dtype=ctorch.bfloat16):
            assert not ctorch.is_autocast_enabled()
            y = ctorch.ones(2, 3) @ ctorch.ones(3, 2)
            assert y.dtype == ctorch.float32
    assert any("CUDA is not available. Disabling" in str(x.message) for x in w)
    for name, fn in (("CUDAGraph", ctorch.cuda.CUDAGraph), ("Stream", ctorch.cuda.Stream),
                     ("Event", ctorch.cuda.Event), ("current_stream", ctorch.cuda.current_stream)):
        e = error_of(AssertionError, fn, "%s: no error without a GPU" % name)
        assert e == "Torch not compiled with CUDA enabled", (name, e)
    assert not ctorch.cuda.is_current_stream_capturing() and not ctorch.cuda.is_bf16_supported()
    # memory queries answer 0 without CUDA (as PyTorch); choosing a device is refused
    assert ctorch.cuda.memory_allocated() == 0 and ctorch.cuda.max_memory_allocated() == 0
    assert ctorch.cuda.memory_reserved() == 0 and ctorch.cuda.empty_cache() is None
    for fn in (lambda: ctorch.cuda.set_device(0), lambda: ctorch.cuda.reset_peak_memory_stats(),
               lambda: ctorch.cuda.get_device_properties(0), lambda: ctorch.cuda.get_device_capability(),
               lambda: ctorch.cuda.mem_get_info(),
               lambda: ctorch.cuda.device(0).__enter__()):
        assert error_of(AssertionError, fn, "no error without a GPU") == "Torch not compiled with CUDA enabled"


def _model():
    ctorch.manual_seed(3)
    return ctorch.nn.Sequential(ctorch.nn.Linear(12, 32), ctorch.nn.ReLU(), ctorch.nn.Linear(32, 5)).cuda()


def _close(a, b, tol):
    a, b = a.cpu().reshape(-1).tolist(), b.cpu().reshape(-1).tolist()
    return all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


def _gpu_graph_checks():
    ctorch.manual_seed(11)
    batches = [(ctorch.randn(8, 12), ctorch.randint(0, 5, (8,))) for _ in range(9)]
    loss_fn = ctorch.nn.CrossEntropyLoss()

    # the same steps eagerly
    ref = _model()
    ref_opt = ctorch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    ref_losses = []
    for x, y in batches:
        ref_opt.zero_grad(set_to_none=True)
        loss = loss_fn(ref(x.cuda()), y.cuda())
        loss.backward()
        ref_opt.step()
        ref_losses.append(loss.item())

    # PyTorch's whole-network example: 3 warm-up steps on a side stream, then one captured step replayed
    model = _model()
    opt = ctorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    static_x, static_y = ctorch.zeros(8, 12, device="cuda"), ctorch.zeros(8, dtype=ctorch.int64, device="cuda")
    losses = []
    s = ctorch.cuda.Stream()
    s.wait_stream(ctorch.cuda.current_stream())
    with ctorch.cuda.stream(s):
        for x, y in batches[:3]:
            static_x.copy_(x)
            static_y.copy_(y)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(static_x), static_y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    ctorch.cuda.current_stream().wait_stream(s)
    g = ctorch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with ctorch.cuda.graph(g):
        assert ctorch.cuda.is_current_stream_capturing()
        static_loss = loss_fn(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    assert not ctorch.cuda.is_current_stream_capturing()
    assert g.num_nodes() > 10, g.num_nodes()
    for x, y in batches[3:]:
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        losses.append(static_loss.item())
    # float32 on one device, the same kernels: equal within a few float32 roundings (no atomics here)
    assert _close(ctorch.tensor(losses), ctorch.tensor(ref_losses), 1e-6), (losses, ref_losses)
    for p, q in zip(model.parameters(), ref.parameters()):
        assert _close(p.detach(), q.detach(), 1e-6)
    g.reset()
    assert "was not captured" in error_of(RuntimeError, g.replay, "replay after reset")

    # a host read inside the capture raises; the capture is discarded and the device works on
    g2 = ctorch.cuda.CUDAGraph()

    def host_read_captured():
        with ctorch.cuda.graph(g2):
            (static_x * 2).sum().item()

    e = error_of(RuntimeError, host_read_captured, "a host read inside a capture did not raise")
    assert "CUDA graph" in e or "captur" in e, e
    assert not ctorch.cuda.is_current_stream_capturing()
    assert g2.num_nodes() == 0
    assert (static_x * 2).sum().item() == (static_x.cpu() * 2).sum().item()
    g3 = ctorch.cuda.CUDAGraph()
    g3.capture_begin()
    assert "already capturing" in error_of(RuntimeError, g3.capture_begin, "a second capture on a capturing device")
    out = static_x + 1
    g3.capture_end()
    static_x.fill_(2.0)
    g3.replay()
    assert out.cpu().reshape(-1).tolist() == [3.0] * 96


def _gpu_adam_checks():
    """Adam in a graph: capturable=True (the step count and bias corrections on the device) replays equal eager
    Adam's updates within float32 rounding (the capturable order divides differently: 1e-5); capturable=False
    is refused inside a capture with PyTorch's message."""
    ctorch.manual_seed(5)
    batches = [(ctorch.randn(8, 12), ctorch.randint(0, 5, (8,))) for _ in range(7)]
    loss_fn = ctorch.nn.CrossEntropyLoss()
    ref = _model()
    ref_opt = ctorch.optim.Adam(ref.parameters(), lr=1e-2)
    for x, y in batches:
        ref_opt.zero_grad(set_to_none=True)
        loss_fn(ref(x.cuda()), y.cuda()).backward()
        ref_opt.step()
    model = _model()
    opt = ctorch.optim.Adam(model.parameters(), lr=1e-2, capturable=True)
    sx, sy = ctorch.zeros(8, 12, device="cuda"), ctorch.zeros(8, dtype=ctorch.int64, device="cuda")
    for x, y in batches[:2]:  # warm-up: the state exists before the capture
        sx.copy_(x)
        sy.copy_(y)
        opt.zero_grad(set_to_none=True)
        loss_fn(model(sx), sy).backward()
        opt.step()
    g = ctorch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with ctorch.cuda.graph(g):
        loss_fn(model(sx), sy).backward()
        opt.step()
    for x, y in batches[2:]:
        sx.copy_(x)
        sy.copy_(y)
        g.replay()
    assert opt.state[next(iter(model.parameters()))]["step"].cpu().tolist() == [7.0]
    for p, q in zip(model.parameters(), ref.parameters()):
        assert _close(p.detach(), q.detach(), 1e-5)
    plain = ctorch.optim.Adam(model.parameters(), lr=1e-2)
    g2 = ctorch.cuda.CUDAGraph()

    def plain_step_captured():
        with ctorch.cuda.graph(g2):
            plain.step()

    e = error_of(RuntimeError, plain_step_captured, "capturable=False Adam captured")
    assert "constructed with capturable=False" in e, e
    assert not ctorch.cuda.is_current_stream_capturing()


def _gpu_memory_checks():
    """memory_allocated counts a new tensor's block, the peak follows and restarts at reset_peak_memory_stats"""
    ctorch.cuda.synchronize()
    base = ctorch.cuda.memory_allocated()
    t = ctorch.empty(1 << 20, device="cuda")  # 4 MiB
    assert ctorch.cuda.memory_allocated() - base >= 4 << 20
    assert ctorch.cuda.max_memory_allocated() >= ctorch.cuda.memory_allocated()
    assert ctorch.cuda.memory_reserved() >= ctorch.cuda.memory_allocated()
    del t
    assert ctorch.cuda.memory_allocated() == base
    ctorch.cuda.reset_peak_memory_stats()
    assert ctorch.cuda.max_memory_allocated() == base
    ctorch.cuda.empty_cache()
    assert ctorch.cuda.memory_reserved() == ctorch.cuda.memory_allocated()
    p = ctorch.cuda.get_device_properties(0)
    assert p.name == ctorch.cuda.get_device_name(0) and p.total_memory > 1 << 30 and p.multi_processor_count > 0
    assert ctorch.cuda.get_device_capability() == (p.major, p.minor) and p.major >= 8 and ctorch.cuda.is_bf16_supported()
    assert repr(p).startswith("_CudaDeviceProperties(name='%s', major=%d" % (p.name, p.major))
    free, total = ctorch.cuda.mem_get_info()
    assert total == p.total_memory and 0 < free <= total
    assert error_of(AssertionError, lambda: ctorch.cuda.get_device_properties(ctorch.cuda.device_count()),
                    "properties of a device past the last") == "Invalid device id"
    ctorch.cuda.set_device(0)
    with ctorch.cuda.device("cuda:0"):
        pass
    assert "invalid device ordinal" in error_of(
        RuntimeError, lambda: ctorch.cuda.set_device(ctorch.cuda.device_count()), "set_device past the last device")


def _gpu_autocast_checks():
    a, b = ctorch.randn(64, 48, device="cuda"), ctorch.randn(48, 32, device="cuda")
    ref = a.cpu().double() @ b.cpu().double()
    with ctorch.autocast("cuda", dtype=ctorch.bfloat16):
        assert ctorch.is_autocast_enabled() and ctorch.cuda.get_autocast_gpu_dtype() == ctorch.bfloat16
        y = a @ b
        with ctorch.autocast("cuda", enabled=False):
            assert not ctorch.is_autocast_enabled()
            assert (a @ b).dtype == ctorch.float32
        assert ctorch.is_autocast_enabled()
    assert not ctorch.is_autocast_enabled()
    assert y.dtype == ctorch.bfloat16 and y.is_cuda
    # inputs rounded to bfloat16 (8 bits), float32 accumulation over 48 terms, a bfloat16 result
    err = (y.cpu().double() - ref).abs().max().item()
    assert err <= 2 ** -7 * (a.cpu().abs() @ b.cpu().abs()).max().item(), err
    # PyTorch's default float16: not run as bfloat16
    assert "dtype=torch.bfloat16 only" in error_of(RuntimeError, lambda: ctorch.autocast("cuda"),
                                                   "float16 autocast accepted")

    @ctorch.autocast("cuda", dtype=ctorch.bfloat16)
    def f(u, v):
        return u @ v

    assert f(a, b).dtype == ctorch.bfloat16 and (a @ b).dtype == ctorch.float32


def test_cuda_graph_autocast_tf32():
    _switch_checks()
    if HAVE_CUDA:
        _gpu_graph_checks()
        _gpu_adam_checks()
        _gpu_memory_checks()
        _gpu_autocast_checks()
    else:
        print("test_cuda_graph: no usable GPU (%s): 1 GPU part skipped; checked the switches and the CPU-only "
              "errors" % ctorch._C._cuda_unavailable_reason())
        _cpu_only_checks()


if __name__ == "__main__":
    test_cuda_graph_autocast_tf32()
    print("ok", "gpu" if HAVE_CUDA else "cpu-only")
    sys.exit(0)
