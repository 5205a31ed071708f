"""PyTorch CPU peer of bench/bench_main.c: the same workloads, the same thread counts
(torch.set_num_threads), best-of-N timing. Prints "name seconds" lines that the C
benchmark reads; names match bench_main.c's exactly.
Usage: python3 bench/bench_torch.py --threads N [--quick] [--only SUBSTR]"""
import argparse
import time

import torch
import torch_threads  # torch.set_num_threads + OpenBLAS's own thread count
import torch.nn.functional as F


def best_of(fn, reps, budget):
    fn()
    best, start = float("inf"), time.perf_counter()
    for r in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if r >= 2 and time.perf_counter() - start > budget:
            break
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=None)
    ap.add_argument("--conv", action="store_true", help="also time conv2d (the C side does not yet)")
    args = ap.parse_args()
    want = lambda name: args.only is None or args.only in name
    tlist = [1] if args.threads <= 1 else [1, args.threads]
    torch.manual_seed(0)
    budget = 0.5 if args.quick else 3.0
    for t in tlist:
        torch_threads.set_threads(t)
        shapes = [(n, n, n, False, False) for n in (256, 512, 1024, 2048) if not (args.quick and n > 1024)]
        shapes += [(1024, 3072, 768, False, False), (1024, 768, 3072, False, True), (1024, 3072, 768, False, True),
                   (512, 512, 512, True, False), (1024, 1024, 1024, True, False)]
        for (M, N, K, dbl, tb) in shapes:
            name = "%cgemm_%dx%dx%d%s_t%d" % ("d" if dbl else "s", M, N, K, "_bT" if tb else "", t)
            if not want(name):
                continue
            dt = torch.float64 if dbl else torch.float32
            a = torch.rand(M, K, dtype=dt) - 0.5
            b = (torch.rand(N, K, dtype=dt) - 0.5).t() if tb else torch.rand(K, N, dtype=dt) - 0.5
            flop = 2.0 * M * N * K
            reps = 3 if args.quick else (30 if flop < 1e9 else 8)
            print(name, best_of(lambda: torch.mm(a, b), reps, budget), flush=True)
        n = (1 << 20) if args.quick else (16 << 20)
        tag = "1M" if args.quick else "16M"
        x = torch.randn(n // 1024, 1024)
        y = torch.rand(n // 1024, 1024) + 0.5
        w, bias = torch.ones(1024), torch.zeros(1024)
        ops = {
            "add": lambda: torch.add(x, y), "mul": lambda: torch.mul(x, y), "sub": lambda: torch.sub(x, y),
            "div": lambda: torch.div(x, y), "neg": lambda: torch.neg(x), "exp": lambda: torch.exp(x),
            "gelu": lambda: F.gelu(x), "gelu_tanh": lambda: F.gelu(x, approximate="tanh"),
            "relu": lambda: torch.relu(x), "silu": lambda: F.silu(x), "sigmoid": lambda: torch.sigmoid(x),
            "tanh": lambda: torch.tanh(x), "sum": lambda: torch.sum(x), "max": lambda: torch.max(x),
            "mean": lambda: torch.mean(x), "softmax": lambda: torch.softmax(x, -1),
            "log_softmax": lambda: torch.log_softmax(x, -1),
            "layer_norm": lambda: F.layer_norm(x, (1024,), w, bias, 1e-5),
        }
        for k, fn in ops.items():
            name = "%s_f32_%s_t%d" % (k, tag, t)
            if want(name):
                print(name, best_of(fn, 3 if args.quick else 15, 2.0), flush=True)
        # conv2d forward+backward on ResNet-18's 3x3 layer shapes (batch 16 unless quick)
        nb = 2 if args.quick else 16
        for (c, hw, stride) in ((64, 56, 1), (128, 28, 1), (256, 14, 1), (512, 7, 1), (64, 56, 2)) if args.conv else ():
            cin = c if stride == 1 else c
            cout = c if stride == 1 else 2 * c
            name = "conv2d_fwd_bwd_n%d_c%d_%dx%d_o%d_s%d_t%d" % (nb, cin, hw, hw, cout, stride, t)
            if not want(name):
                continue
            xi = torch.randn(nb, cin, hw, hw, requires_grad=True)
            wi = torch.randn(cout, cin, 3, 3, requires_grad=True)

            def step():
                out = F.conv2d(xi, wi, None, stride, 1)
                out.backward(torch.ones_like(out))
            print(name, best_of(step, 2 if args.quick else 5, budget), flush=True)
            fname = name.replace("fwd_bwd", "fwd")
            if want(fname):
                with torch.no_grad():
                    print(fname, best_of(lambda: F.conv2d(xi, wi, None, stride, 1), 2 if args.quick else 5, budget),
                          flush=True)


if __name__ == "__main__":
    main()
