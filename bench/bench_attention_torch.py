"""PyTorch CPU peer of bench/bench_attention.c: scaled_dot_product_attention forward and
forward+backward (B=8, H=4, D=64; T=256 and 1024; causal or not) with the same thread
counts (torch.set_num_threads), best-of-N timing. PyTorch 1.13 has only the private
F._scaled_dot_product_attention (composed from bmm/softmax on the CPU); newer versions'
F.scaled_dot_product_attention is used when present. Prints "name wall_seconds cpu_seconds" lines with
bench_attention.c's names. Usage: python3 bench/bench_attention_torch.py --threads N [--quick] [--t T]"""
import argparse
import time

import torch
import torch_threads  # torch.set_num_threads + OpenBLAS's own thread count
import torch.nn.functional as F


def best_of(fn, reps, budget):
    """best wall and best process-CPU seconds (the C side prints CPU time for 1 thread)"""
    fn()
    best, bestc, start = float("inf"), float("inf"), time.perf_counter()
    for r in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        best = min(best, time.perf_counter() - t0)
        bestc = min(bestc, time.process_time() - c0)
        if r >= 2 and time.perf_counter() - start > budget:
            break
    return "%.6g %.6g" % (best, bestc)


def sdpa(q, k, v, causal):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, causal)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--t", type=int, default=0, help="only this sequence length")
    args = ap.parse_args()
    budget = 0.5 if args.quick else 3.0
    for t in ([1] if args.threads <= 1 else [1, args.threads]):
        torch_threads.set_threads(t)
        for T in [x for x in (256, 1024) if args.t in (0, x)]:
            for causal in (False, True):
                torch.manual_seed(0)
                q, k, v, go = (torch.randn(8, 4, T, 64) for _ in range(4))
                for x in (q, k, v):
                    x.requires_grad_(True)
                reps = 3 if args.quick else (5 if T > 512 else 15)
                sfx = "_b8h4t%dd64%s_t%d" % (T, "_causal" if causal else "", t)

                def fb():
                    o = sdpa(q, k, v, causal)
                    torch.autograd.grad(o, (q, k, v), go)

                def fwd():
                    with torch.no_grad():
                        sdpa(q, k, v, causal)

                print("sdpa_fwdbwd" + sfx, best_of(fb, reps, budget), flush=True)
                print("sdpa_fwd" + sfx, best_of(fwd, reps, budget), flush=True)


if __name__ == "__main__":
    main()
