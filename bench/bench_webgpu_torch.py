"""Peer of bench/bench_webgpu.c on the same GPU: PyTorch CUDA eager, float32 (TF32 off),
the same byte-level GPT step (4 layers, 256 wide, 4 heads, context 256, batch 8,
vocabulary 256, untied head, AdamW lr 1e-3, explicit masked-softmax attention, GELU tanh,
loss read back each step) and float32 n^3 products. Times: host clock around each step
with the loss read back (as the C bench), and CUDA events around repeated products;
medians. --models (or WG_MODELS=1): also the models of issue 9's Performance section with the
models of tests/models_ref.py: the ResNet-18 CIFAR training step b16 (SGD momentum, eager, fp32 and
TF32) and ResNet-18 224 / ViT-Tiny/16 inference b1 (eval, eager and CUDA graph).
--sdpa: the GPT step also with causal F.scaled_dot_product_attention (bench_webgpu --attn flash).
Usage: python3 bench/bench_webgpu_torch.py [--steps N] [--models] [--no-gpt] [--no-mm] [--sdpa]"""
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"
steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 30


def mm_bench():
    print("== PyTorch CUDA float32 matmul (TF32 off) ==")
    for n in (1024, 2048, 4096):
        a = torch.randn(n, n, device=dev)
        b = torch.randn(n, n, device=dev)
        out = torch.empty(n, n, device=dev)
        flop = 2.0 * n ** 3
        iters = max(3, min(200, int(2e12 / flop)))
        torch.mm(a, b, out=out)
        torch.cuda.synchronize()
        ts = []
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(iters):
                torch.mm(a, b, out=out)
            e1.record()
            torch.cuda.synchronize()
            ts.append(e0.elapsed_time(e1) / 1e3 / iters)
        ts.sort()
        t = ts[2]
        print(f"torch mm {n:5d}^3 {t * 1e3:8.3f} ms  {flop / t / 1e12:6.2f} TFLOP/s")


def gpt_bench(B=8, T=256, C=256, H=4, L=4, V=256, sdpa=False):
    print(f"== PyTorch CUDA eager GPT step: {L} layers, {C} wide, {H} heads, context {T}, batch {B}"
          f"{', attention: causal F.scaled_dot_product_attention' if sdpa else ''} ==")
    g = torch.Generator().manual_seed(1234)
    rs = 0.02 / math.sqrt(2 * L)

    def rn(*s, scale=0.02):
        return (torch.randn(*s, generator=g) * scale).to(dev).requires_grad_()

    def vec(n, v):
        return torch.full((n,), float(v), device=dev).requires_grad_()

    p = dict(wte=rn(V, C), wpe=rn(T, C), lnfw=vec(C, 1), lnfb=vec(C, 0), head=rn(V, C))
    layers = []
    for _ in range(L):
        layers.append(dict(ln1w=vec(C, 1), ln1b=vec(C, 0), qkv=rn(3 * C, C), proj=rn(C, C, scale=rs),
                           ln2w=vec(C, 1), ln2b=vec(C, 0), fc=rn(4 * C, C), fc2=rn(C, 4 * C, scale=rs)))
    params = list(p.values()) + [t for l in layers for t in l.values()]
    opt = torch.optim.AdamW(params, lr=1e-3)
    idx = torch.randint(0, V, (B, T), generator=g).to(dev)
    tgt = (idx + 1) % V
    pos = torch.arange(T, device=dev)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=dev), 1)
    D = C // H

    def loss_fn():
        x = F.embedding(idx, p["wte"]) + F.embedding(pos, p["wpe"])
        for q in layers:
            h = F.layer_norm(x, (C,), q["ln1w"], q["ln1b"], 1e-5)
            qkv = F.linear(h, q["qkv"])
            if sdpa:  # bench_webgpu --attn flash: the same product, scale and mask in one call
                qs, ks, vs = (t.transpose(1, 2) for t in qkv.view(B, T, 3, H, D).unbind(2))
                y = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True).transpose(1, 2).reshape(B, T, C)
                x = x + F.linear(y, q["proj"])
                h = F.layer_norm(x, (C,), q["ln2w"], q["ln2b"], 1e-5)
                x = x + F.linear(F.gelu(F.linear(h, q["fc"]), approximate="tanh"), q["fc2"])
                continue
            hs = [qkv[..., j * C:(j + 1) * C].contiguous().view(B, T, H, D).transpose(1, 2) for j in range(3)]
            att = (hs[0] @ hs[1].transpose(2, 3)) * (1.0 / math.sqrt(D))
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = (att @ hs[2]).transpose(1, 2).contiguous().reshape(B, T, C)
            x = x + F.linear(y, q["proj"])
            h = F.layer_norm(x, (C,), q["ln2w"], q["ln2b"], 1e-5)
            x = x + F.linear(F.gelu(F.linear(h, q["fc"]), approximate="tanh"), q["fc2"])
        x = F.layer_norm(x, (C,), p["lnfw"], p["lnfb"], 1e-5)
        return F.cross_entropy(F.linear(x, p["head"]).view(B * T, V), tgt.view(B * T))

    def step():
        loss = loss_fn()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):
        step()
    ts, first, last = [], None, None
    for k in range(steps):
        t0 = time.perf_counter()
        v = step()
        ts.append(time.perf_counter() - t0)
        first = v if k == 0 else first
        last = v
    ts.sort()
    print(f"torch cuda eager: loss {first:.4f} -> {last:.4f}; step median {ts[len(ts) // 2] * 1e3:.2f} ms, "
          f"min {ts[0] * 1e3:.2f} ms ({steps} steps)")


def models_bench(steps=30):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from models_ref import ResNet, VisionTransformer
    for tf in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf
        torch.backends.cudnn.allow_tf32 = tf
        torch.manual_seed(0)
        m = ResNet(num_classes=10, cifar=True).to(dev).train()
        x, y = torch.randn(16, 3, 32, 32, device=dev), torch.randint(0, 10, (16,), device=dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        ts = []
        for s in range(steps + 3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            loss = F.cross_entropy(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            if s >= 3:
                ts.append(time.perf_counter() - t0)
        print(f"torch cuda eager resnet18-cifar b16 train step ({'tf32' if tf else 'fp32'}): median "
              f"{statistics.median(ts) * 1e3:.2f} ms, min {min(ts) * 1e3:.2f} ms", flush=True)
    for name in ("resnet18-224", "vit-tiny16"):
        torch.manual_seed(0)
        m = (ResNet(num_classes=1000) if name[0] == "r" else VisionTransformer()).to(dev).eval()
        x = torch.randn(1, 3, 224, 224, device=dev)
        for tf in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf
            torch.backends.cudnn.allow_tf32 = tf
            with torch.inference_mode():
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        m(x)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    m(x)
                te, tg = [], []
                for _ in range(5):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(steps):
                        m(x)
                    torch.cuda.synchronize()
                    te.append((time.perf_counter() - t0) / steps)
                    t0 = time.perf_counter()
                    for _ in range(steps):
                        g.replay()
                    torch.cuda.synchronize()
                    tg.append((time.perf_counter() - t0) / steps)
            print(f"torch cuda {name} b1 inference ({'tf32' if tf else 'fp32'}): eager {statistics.median(te) * 1e3:.3f} ms,"
                  f" CUDA graph {statistics.median(tg) * 1e3:.3f} ms", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


print("torch", torch.__version__, torch.cuda.get_device_name(0))
if "--no-mm" not in sys.argv:
    mm_bench()
if "--no-gpt" not in sys.argv:
    gpt_bench()
    if "--sdpa" in sys.argv:
        gpt_bench(sdpa=True)
if "--models" in sys.argv or os.environ.get("WG_MODELS", "0") == "1":
    models_bench()
