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
    p = torch.randn(32 << 20, device=d, generator=g, requires_grad=True)
    p.grad = torch.randn(32 << 20, device=d, generator=g)
    opt = torch.optim.AdamW([p])  # PyTorch's default step (foreach on CUDA)
    print(torch.__version__, torch.cuda.get_device_name(0))
    torch.backends.cuda.matmul.allow_tf32 = False
    res = [
        ("copy_64M_f32", lambda: a.clone(), 20),
        ("add_64M_f32", lambda: a + b, 20),
        ("gelu_64M_f32", lambda: torch.nn.functional.gelu(a), 20),
        ("sum_64M_f32", lambda: a.sum(), 20),
        ("softmax_8192x8192_f32", lambda: torch.softmax(rows, -1), 20),
        ("mm_4096_f32", lambda: m1 @ m2, 10),
    ]
    for name, f, k in res:
        print(name, "%.4f" % time_op(f, k), flush=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    print("mm_4096_tf32", "%.4f" % time_op(lambda: m1 @ m2, 10), flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    print("adamw_step_32M_f32", "%.4f" % time_op(opt.step, 10), flush=True)


if __name__ == "__main__":
    main()
