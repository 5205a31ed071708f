"""PyTorch's side of bench/profile_infer.c --layers 1: each ResNet-18 conv shape alone (conv2d forward,
no grad), best process CPU and wall time per call, times its count in the network; and with --model,
the whole ResNet-18 224 eval forward (torchvision's layout, random weights) CPU/wall per forward.
Usage: /usr/bin/python3 bench/profile_infer_torch.py [--threads N] [--batch B] [--iters I] [--model]"""
import argparse, time
import torch
import torch_threads  # noqa: F401  torch.set_num_threads + OpenBLAS's own thread count, as the benchmark
import torch.nn.functional as F

LAYERS = [("conv1", 3, 64, 224, 7, 2, 3, 1), ("layer1", 64, 64, 56, 3, 1, 1, 4),
          ("layer2_0_c1", 64, 128, 56, 3, 2, 1, 1), ("layer2_ds", 64, 128, 56, 1, 2, 0, 1),
          ("layer2", 128, 128, 28, 3, 1, 1, 3), ("layer3_0_c1", 128, 256, 28, 3, 2, 1, 1),
          ("layer3_ds", 128, 256, 28, 1, 2, 0, 1), ("layer3", 256, 256, 14, 3, 1, 1, 3),
          ("layer4_0_c1", 256, 512, 14, 3, 2, 1, 1), ("layer4_ds", 256, 512, 14, 1, 2, 0, 1),
          ("layer4", 512, 512, 7, 3, 1, 1, 3)]

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--iters", type=int, default=10)
ap.add_argument("--model", action="store_true")
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)


def timeit(fn, iters):
    bc = bw = 1e30
    for i in range(iters + 2):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        if i >= 2:
            bc, bw = min(bc, c), min(bw, w)
    return bc, bw


with torch.no_grad():
    if a.model:
        import os, sys
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        from models_ref import ResNet  # noqa: E402  (the model bench_models_torch.py times)
        m = ResNet(num_classes=1000).eval()
        x = torch.randn(a.batch, 3, 224, 224)
        bc, bw = timeit(lambda: m(x), a.iters)
        print(f"forward: CPU best {bc*1e3:.2f} ms, wall best {bw*1e3:.2f} ms, {a.threads} threads, batch {a.batch}")
    else:
        tc = tw = 0
        print(f"{'layer':12s} {'count':>5s} {'CPU ms':>10s} {'wall ms':>10s} {'CPU ms x cnt':>12s} {'wall x cnt':>12s}")
        for name, C, O, H, k, s, p, cnt in LAYERS:
            x = torch.randn(a.batch, C, H, H)
            w = torch.randn(O, C, k, k)
            bc, bw = timeit(lambda: F.conv2d(x, w, None, s, p), a.iters)
            tc += bc * cnt
            tw += bw * cnt
            print(f"{name:12s} {cnt:5d} {bc*1e3:10.3f} {bw*1e3:10.3f} {bc*cnt*1e3:12.3f} {bw*cnt*1e3:12.3f}")
        print(f"{'total':12s} {'':5s} {'':10s} {'':10s} {tc*1e3:12.3f} {tw*1e3:12.3f}")
