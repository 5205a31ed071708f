"""PyTorch peer of bench_main.c's bf16 vdpbf16ps rows (gemm_bf16dp_*, 1 thread) and AMX rows
(gemm_bf16amx_*, 1 and 2 threads): bfloat16 torch.matmul (float32 accumulation,
oneDNN on this CPU) at 1 thread, OpenBLAS held to it too. Prints "name seconds" lines: the best
process-CPU time of one product, then "<name>_wall" the best wall time.

Usage: python3 bench/bench_bf16_torch.py [--threads N] [--quick] [--only SUBSTR]"""
import argparse
import time

import torch

import torch_threads

SHAPES = [(512, 512, 512), (1024, 1024, 1024), (1024, 3072, 768)]  # M, N, K


def best(fn, clock, reps):
    fn()
    b = 1e30
    for _ in range(reps):
        t0 = clock()
        fn()
        b = min(b, clock() - t0)
    return b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    torch_threads.set_threads(1)
    for m, n, k in SHAPES:
        name = f"gemm_bf16dp_{m}x{n}x{k}_t1"
        if args.only and args.only not in name:
            continue
        a = torch.randn(m, k).bfloat16()
        b = torch.randn(k, n).bfloat16()
        print(name, best(lambda: torch.matmul(a, b), time.process_time, 7), flush=True)
        print(name + "_wall", best(lambda: torch.matmul(a, b), time.perf_counter, 7), flush=True)
    # the AMX rows (bench_gemm_bf16amx): 1 and 2 threads, and a skinny transformer shape
    for t in range(1, min(2, args.threads) + 1):
        torch_threads.set_threads(t)
        for m, n, k in SHAPES + [(64, 3072, 768)]:
            name = f"gemm_bf16amx_{m}x{n}x{k}_t{t}"
            if args.only and args.only not in name:
                continue
            a = torch.randn(m, k).bfloat16()
            b = torch.randn(k, n).bfloat16()
            print(name, best(lambda: torch.matmul(a, b), time.process_time, 7), flush=True)
            print(name + "_wall", best(lambda: torch.matmul(a, b), time.perf_counter, 7), flush=True)


if __name__ == "__main__":
    main()
