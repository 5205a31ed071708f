"""PyTorch CPU peer of bench/bench_conv.inc.c: conv2d forward, and forward + backward (input and
weight gradients), on ResNet-18's layer shapes (bench/bench_conv_layers.py) at batch 16 (4 with
--quick), float32, at 1 thread and at --threads N, best-of-N after a warm-up. Prints
"name seconds" lines; names match bench_conv.inc.c's.
Usage: python3 bench/bench_conv_torch.py --threads N [--quick] [--only SUBSTR]"""
import argparse
import os
import sys
import time

import torch
import torch_threads  # torch.set_num_threads + OpenBLAS's own thread count
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_conv_layers import LAYERS  # noqa: E402


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
    a = ap.parse_args()
    want = lambda n: a.only is None or a.only in n
    batch = 4 if a.quick else 16
    reps, budget = (3, 1.0) if a.quick else (10, 4.0)
    torch.manual_seed(0)
    for t in ([1] if a.threads <= 1 else [1, a.threads]):
        torch_threads.set_threads(t)
        for (lname, C, O, H, W, k, s, p) in LAYERS:
            base = "conv_r18_%s_b%d" % (lname, batch)
            nf, nb = "%s_fwd_t%d" % (base, t), "%s_fwdbwd_t%d" % (base, t)
            if not (want(nf) or want(nb)):
                continue
            x = torch.randn(batch, C, H, W)
            w = torch.randn(O, C, k, k) * (2.0 / (C * k * k)) ** 0.5
            if want(nf):
                with torch.no_grad():
                    print(nf, best_of(lambda: F.conv2d(x, w, None, s, p), reps, budget), flush=True)
            if want(nb):
                xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
                gy = torch.randn(F.conv2d(x, w, None, s, p).shape)

                def step():
                    xg.grad = None
                    wg.grad = None
                    F.conv2d(xg, wg, None, s, p).backward(gy)
                print(nb, best_of(step, reps, budget), flush=True)


if __name__ == "__main__":
    main()
