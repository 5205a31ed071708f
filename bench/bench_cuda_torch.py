"""PyTorch's side of bench/bench_cuda.c: the same ops on the same GPU, timed with CUDA
events around n calls, median of 5 repeats; prints "name ms" lines."""
import statistics
import torch


def time_op(f, n):
    for _ in range(2):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n):
            f()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / n)
    return statistics.median(ts)


def main():
    d = torch.device("cuda")
    g = torch.Generator(device=d).manual_seed(0)
    n = 64 << 20
    a = torch.randn(n, device=d, generator=g)
    b = torch.randn(n, device=d, generator=g)
    m1 = torch.randn(4096, 4096, device=d, generator=g)
    m2 = torch.randn(4096, 4096, device=d, generator=g)
    rows = torch.randn(8192, 8192, device=d, generator=g)
    bias = torch.randn(8192, device=d, generator=g)
    ah, bh = a.to(torch.bfloat16), b.to(torch.bfloat16)
    p = torch.randn(32 << 20, device=d, generator=g, requires_grad=True)
    p.grad = torch.randn(32 << 20, device=d, generator=g)
    opt = torch.optim.AdamW([p])  # PyTorch's default step (foreach on CUDA)
    print(torch.__version__, torch.cuda.get_device_name(0))
    torch.backends.cuda.matmul.allow_tf32 = False
    res = [
        ("copy_64M_f32", lambda: a.clone(), 20),
        ("add_64M_f32", lambda: a + b, 20),
        ("mul_64M_f32", lambda: a * b, 20),
        ("gelu_64M_f32", lambda: torch.nn.functional.gelu(a), 20),
        ("sum_64M_f32", lambda: a.sum(), 20),
        ("softmax_8192x8192_f32", lambda: torch.softmax(rows, -1), 20),
        ("log_softmax_8192x8192_f32", lambda: torch.log_softmax(rows, -1), 20),
        ("add_bias_8192x8192_f32", lambda: rows + bias, 20),
        ("sum_rows_8192x8192_f32", lambda: rows.sum(-1), 20),
        ("layer_norm_8192x8192_f32", lambda: torch.nn.functional.layer_norm(rows, (8192,)), 20),
        ("copy_64M_bf16", lambda: ah.clone(), 20),
        ("add_64M_bf16", lambda: ah + bh, 20),
        ("gelu_64M_bf16", lambda: torch.nn.functional.gelu(ah), 20),
        ("mm_4096_f32", lambda: m1 @ m2, 10),
    ]
    for name, f, k in res:
        print(name, "%.4f" % time_op(f, k), flush=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    print("mm_4096_tf32", "%.4f" % time_op(lambda: m1 @ m2, 10), flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    print("adamw_step_32M_f32", "%.4f" % time_op(opt.step, 10), flush=True)
    q = torch.randn(32 << 20, device=d, generator=g, requires_grad=True)
    q.grad = p.grad.clone()
    fopt = torch.optim.AdamW([q], fused=True)
    print("adamw_step_32M_f32_vs_fused", "%.4f" % time_op(fopt.step, 10), flush=True)
    F = torch.nn.functional
    for dt, tag in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        x = [torch.randn(8, 12, 1024, 64, device=d, generator=g).to(dt) for _ in range(4)]
        for t in x[:3]:
            t.requires_grad_(True)

        def fwd():
            with torch.no_grad():
                return F.scaled_dot_product_attention(x[0], x[1], x[2], is_causal=True)

        def fwdbwd():
            o = F.scaled_dot_product_attention(x[0], x[1], x[2], is_causal=True)
            return torch.autograd.grad(o, x[:3], x[3])

        print("sdpa_causal_8x12x1024x64_%s_fwd" % tag, "%.4f" % time_op(fwd, 10), flush=True)
        print("sdpa_causal_8x12x1024x64_%s_fwdbwd" % tag, "%.4f" % time_op(fwdbwd, 5), flush=True)


if __name__ == "__main__":
    main()
