"""PyTorch side of bench/profile_step.c: the ResNet-18 CIFAR training step (SGD momentum 0.9, the model
of tests/models_ref.py) under torch.profiler at the given thread count (OpenBLAS held to it too), per
phase (forward+loss, zero_grad, backward, step: record_function ranges) the phase wall, and every op's
self time (the profiler's self CPU time = wall on the calling thread, nested ops excluded), per step.
Usage: /usr/bin/python3 bench/profile_step_torch.py [--threads N] [--batch B] [--steps S]"""
import argparse
import collections
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_threads  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from models_ref import ResNet  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    torch_threads.set_threads(a.threads)
    torch.manual_seed(0)
    m = ResNet(num_classes=10, cifar=True).train()
    x, y = torch.randn(a.batch, 3, 32, 32), torch.randint(0, 10, (a.batch,))
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)

    def step():
        with record_function("ph_fwd"):
            loss = F.cross_entropy(m(x), y)
        with record_function("ph_zero_grad"):
            opt.zero_grad(set_to_none=True)
        with record_function("ph_bwd"):
            loss.backward()
        with record_function("ph_step"):
            opt.step()

    step()  # warm-up
    plain = []
    for _ in range(a.steps):  # unprofiled step times, for the profiler's own overhead
        t0 = time.perf_counter()
        step()
        plain.append(time.perf_counter() - t0)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(a.steps):
            step()
    ev = prof.key_averages()
    phases = {e.key: e.cpu_time_total for e in ev if e.key.startswith("ph_")}
    tot = sum(phases.values())
    print("torch ResNet-18 CIFAR b%d, %d threads: unprofiled step wall best %.2f ms, mean %.2f ms; "
          "profiled phases per step %.2f ms" % (a.batch, a.threads, min(plain) * 1e3,
                                               sum(plain) / len(plain) * 1e3, tot / a.steps / 1e3))
    for k in ("ph_fwd", "ph_zero_grad", "ph_bwd", "ph_step"):
        print("%-34s %9.2f ms %6.1f%%" % (k, phases.get(k, 0) / a.steps / 1e3, 100 * phases.get(k, 0) / tot))
    rows = sorted((e for e in ev if not e.key.startswith("ph_")), key=lambda e: -e.self_cpu_time_total)
    print("%-40s %7s %9s %6s" % ("op (self)", "calls", "self ms", "%"))
    for e in rows:
        if e.self_cpu_time_total / tot < 0.002:
            continue
        print("%-40s %7.1f %9.2f %6.1f" % (e.key, e.count / a.steps, e.self_cpu_time_total / a.steps / 1e3,
                                           100 * e.self_cpu_time_total / tot))


if __name__ == "__main__":
    main()
