"""PyTorch peers of `bench_cuda_gpt resnet` (issue 7): the ResNet-18 CIFAR training step, batch B,
SGD momentum 0.9, lr 0.01, cross-entropy, gradients set to none (PyTorch 2.x's zero_grad default).
  python3 bench/bench_resnet_cuda_torch.py [B steps] [modes...]
modes: eager (default), graph (the whole step captured with torch.cuda.graph, the peer of ctorch's
CUDA-graph step), compile (torch.compile of the model, default mode), kernels (the number of
kernels one eager step launches, from the profiler); tf32 / fp32 (default tf32: cuDNN's and cuBLAS's
TF32 switches as ctorch's `tf32`); cl: channels-last model and input. ms per step = wall clock over `steps` steps after warm-up,
device-synchronised."""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from models_ref import ResNet  # noqa: E402


def setup(B, tf32, cl=False):
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    m = ResNet(num_classes=10, cifar=True).cuda().train()
    x, y = torch.randn(B, 3, 32, 32, device="cuda"), torch.randint(0, 10, (B,), device="cuda")
    if cl:  # channels-last (NHWC) activations and weights
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    return m, x, y, opt


def timed(step, steps, warm=3):
    for _ in range(warm):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / steps


def main():
    a = sys.argv[1:]
    nums = [int(v) for v in a if v.isdigit()]
    B = nums[0] if nums else 16
    steps = nums[1] if len(nums) > 1 else 30
    words = [v for v in a if not v.isdigit()]
    tf32 = "fp32" not in words
    modes = [w for w in words if w in ("eager", "graph", "compile", "kernels")] or ["eager"]
    cl = "cl" in words
    prec = ("tf32" if tf32 else "fp32") + (", channels-last" if cl else "")
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name(0)}, cuDNN {torch.backends.cudnn.version()}", flush=True)
    for mode in modes:
        m, x, y, opt = setup(B, tf32, cl)
        model = torch.compile(m) if mode == "compile" else m

        def step():
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

        if mode == "kernels":
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                step()
                torch.cuda.synchronize()
            n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
            print(f"pytorch resnet18-cifar b{B} one eager step: {n} device events (kernels, memsets, copies) ({prec})", flush=True)
            continue
        if mode == "graph":
            # warm-up on a side stream, then capture forward, backward and the optimizer step
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    opt.zero_grad(set_to_none=True)
                    F.cross_entropy(m(x), y).backward()
                    opt.step()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(g):
                gl = F.cross_entropy(m(x), y)
                gl.backward()
                opt.step()
            ms = timed(g.replay, steps)
            print(f"pytorch resnet18-cifar b{B} train step {ms:9.3f} ms  (CUDA graph, {prec}; last loss {gl.item():.4f})", flush=True)
            continue
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        ms = timed(step, steps)
        loss = step()
        extra = f"; first step {first:.1f} s" if mode == "compile" else ""
        print(f"pytorch resnet18-cifar b{B} train step {ms:9.3f} ms  ({mode}, {prec}; last loss {loss.item():.4f}{extra})", flush=True)


if __name__ == "__main__":
    main()
