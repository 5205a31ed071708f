"""PyTorch CPU peer of bench/bench_models.inc.c: ResNet-18 (CIFAR-shaped training step with SGD
momentum, 224x224 inference) and ViT-Tiny/16 inference, with the models of tests/models_ref.py
(torchvision's / timm's structure), the same batch sizes and thread counts, best-of-N timing after a
warm-up. Prints "name seconds" lines (and "name KiB" for the peak resident memory of the training step,
measured in a child process) for bench_main.c.
Usage: python3 bench/bench_models_torch.py --threads N [--quick] [--only SUBSTR]"""
import argparse
import os
import resource
import subprocess
import sys
import time

import torch
import torch_threads  # torch.set_num_threads + OpenBLAS's own thread count
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from models_ref import ResNet, VisionTransformer  # noqa: E402


def setup(kind, batch):
    torch.manual_seed(0)
    if kind == 0:
        m = ResNet(num_classes=10, cifar=True).train()
        x, y = torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)

        def step():
            loss = F.cross_entropy(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return step
    m = (ResNet(num_classes=1000) if kind == 1 else VisionTransformer()).eval()
    x = torch.randn(batch, 3, 224, 224)

    def infer():
        with torch.no_grad():
            m(x)
    return infer


# CT_BENCH_CPU_TIME=1: this process's CPU time instead of wall time, as bench_models.inc.c does
CLOCK = time.process_time if os.environ.get("CT_BENCH_CPU_TIME", "0") not in ("", "0") else time.perf_counter


def best_of(fn, reps, budget):
    fn()
    best, start = float("inf"), time.perf_counter()
    for _ in range(reps):
        t0 = CLOCK()
        fn()
        best = min(best, CLOCK() - t0)
        if time.perf_counter() - start > budget:
            break
    return best


ITEMS = [(0, 16, False, "resnet18_cifar_train_sgd_b16"), (0, 64, True, "resnet18_cifar_train_sgd_b64"),
         (1, 1, False, "resnet18_224_infer_b1"), (1, 16, True, "resnet18_224_infer_b16"),
         (2, 1, False, "vit_tiny16_infer_b1"), (2, 16, True, "vit_tiny16_infer_b16")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=None)
    ap.add_argument("--rss-child", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    torch_threads.set_threads(a.threads)
    if a.rss_child:  # the child: 3 training steps, then report this process's peak RSS
        step = setup(0, a.rss_child)
        for _ in range(3):
            step()
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        return
    want = lambda n: a.only is None or a.only in n
    t = a.threads  # the C side measures the models at its --threads only
    for kind, batch, full_only, tag in ITEMS:
        name = "%s_t%d" % (tag, t)
        if not want(name) or (a.quick and full_only):
            continue
        print(name, best_of(setup(kind, batch), 2 if a.quick else 5, 5.0 if a.quick else 20.0), flush=True)
    name = "resnet18_cifar_train_sgd_b16_peak_rss_t%d" % t
    if want(name):
        out = subprocess.run([sys.executable, __file__, "--threads", str(t), "--rss-child", "16"],
                             capture_output=True, text=True)
        if out.returncode == 0:
            print(name, int(out.stdout.split()[-1]), flush=True)

if __name__ == "__main__":
    main()
