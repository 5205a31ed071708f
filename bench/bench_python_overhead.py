"""Per-call overhead from Python (issue 4): ctorch against PyTorch in the same process.

Small work only, so the time is the binding's overhead, not arithmetic:
  add     two 4-element float32 tensors
  linear  nn.Linear(64, 64) forward on a 1x64 input
  mlp     one training step of an MLP 784-128-10 (SGD, cross-entropy) on a batch of 64
  and common small calls (sum(dim=), view, slicing, zeros, cat, a scalar product, to(dtype), max(dim),
  where, relu) on 4- and 8x8-element tensors
Both libraries run alternately in rounds; each round times a block of calls per library and
the reported ratio is the median over rounds of (torch time / ctorch time), >1 = ctorch faster.

  PYTHONPATH=build/python-ext /usr/bin/python3 bench/bench_python_overhead.py [--rounds 15] [--threads 1]
"""
import argparse
import statistics
import time

import torch
import torch_threads  # torch.set_num_threads + OpenBLAS's own thread count
import ctorch


def workloads(lib):
    lib.manual_seed(0)
    a, b = lib.rand(4), lib.rand(4)
    lin = lib.nn.Linear(64, 64)
    x1 = lib.rand(1, 64)
    mlp = lib.nn.Sequential(lib.nn.Linear(784, 128), lib.nn.ReLU(), lib.nn.Linear(128, 10))
    opt = lib.optim.SGD(mlp.parameters(), lr=0.01, momentum=0.9)
    xb, yb = lib.rand(64, 784), lib.randint(0, 10, (64,))
    lossf = lib.nn.CrossEntropyLoss()

    def add():
        return a + b

    def linear():
        with lib.no_grad():
            return lin(x1)

    def mlp_step():
        opt.zero_grad()
        loss = lossf(mlp(xb), yb)
        loss.backward()
        opt.step()
        return loss

    m = lib.rand(8, 8)
    f32 = lib.float32

    # common small calls beside the three: argument parsing and result wrapping dominate them
    return {"add": (add, 2000), "linear": (linear, 1000), "mlp": (mlp_step, 20),
            "sum_dim": (lambda: m.sum(dim=1, keepdim=True), 2000), "view": (lambda: m.view(4, 16), 2000),
            "index": (lambda: m[1:3, 2], 2000), "zeros": (lambda: lib.zeros(4, 4), 2000),
            "cat": (lambda: lib.cat([a, b], 0), 2000), "mul_scalar": (lambda: m * 2.0, 2000),
            "to_dtype": (lambda: m.to(f32), 2000), "max_dim": (lambda: m.max(1), 2000),
            "where": (lambda: lib.where(a > 0.5, a, b), 2000), "relu": (lambda: lib.relu(m), 2000)}


def block(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch_threads.set_threads(args.threads)
    ctorch.set_num_threads(args.threads)
    wt, wc = workloads(torch), workloads(ctorch)
    print(f"torch {torch.__version__}, threads {args.threads}, rounds {args.rounds}")
    print(f"{'work':8s} {'torch us':>10s} {'ctorch us':>10s} {'torch/ctorch':>13s}")
    for name in wt:
        (ft, n), (fc, _) = wt[name], wc[name]
        block(ft, n // 10 + 1), block(fc, n // 10 + 1)  # warm up caches and allocators
        ratios, tt, tc = [], [], []
        for r in range(args.rounds):
            order = [(ft, tt), (fc, tc)] if r % 2 == 0 else [(fc, tc), (ft, tt)]
            for f, acc in order:
                acc.append(block(f, n))
            ratios.append(tt[-1] / tc[-1])
        print(f"{name:8s} {statistics.median(tt) * 1e6:10.2f} {statistics.median(tc) * 1e6:10.2f} "
              f"{statistics.median(ratios):13.2f}")


if __name__ == "__main__":
    main()
