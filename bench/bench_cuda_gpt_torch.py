"""PyTorch peer of bench/bench_cuda_gpt.c: the same GPT-2 (biases, tanh GELU, tied wte, SDPA causal
attention), the same step (forward + loss, backward, clip_grad_norm_ 1.0, AdamW default foreach),
tf32 (allow_tf32 switches) and bf16 (torch.autocast bf16, float32 master weights), timed after two
warm-up steps with the device synchronised.
  python3 bench_cuda_gpt_torch.py [layers heads width context batch vocab steps precision...]
  python3 bench_cuda_gpt_torch.py resnet [batch steps [tf32] [reps=N]]: ResNet-18 CIFAR training step (SGD momentum),
  float32 (tf32: PyTorch's default TF32 cuDNN convolutions) eager, the model of tests/models_ref.py (as bench/bench_models_torch.py).
  python3 bench_cuda_gpt_torch.py resnet224 [batch steps]: torchvision ResNet-18 inference (eval,
  inference_mode), eager and CUDA graph, fp32 and tf32 cuDNN convolutions (median of 5 repeats).
  python3 bench_cuda_gpt_torch.py mm: torch.mm on bench_cuda_gpt mm's shapes and layouts (tf32; bf16
  tensors in and out, as autocast runs them)."""
import contextlib
import os
import sys
import time
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1 = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.m_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # PyTorch < 2.0 (the curve's plumbing test on the CPU): the same causal attention composed
            a = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            a = a.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            y = a.softmax(-1) @ v
        x = x + self.c_proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.m_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, H, C, T, V):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx, tgt):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), tgt.view(-1))


def resnet(B, steps, tf32=False, reps=1):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from models_ref import ResNet
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    m = ResNet(num_classes=10, cifar=True).cuda().train()
    x, y = torch.randn(B, 3, 32, 32, device="cuda"), torch.randint(0, 10, (B,), device="cuda")
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    # reps timed runs of `steps` eager steps (2 untimed before the first): one line each when reps > 1,
    # then the median (the number on the "train step" line): its eager step is host-bound and moves
    rms = []
    for k in range(max(reps, 1)):
        for s in range(steps + (0 if k else 2)):
            if s == (0 if k else 2):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            loss = F.cross_entropy(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        rms.append((time.perf_counter() - t0) * 1e3 / steps)
        if reps > 1:
            print(f"pytorch resnet18-cifar b{B} rep {k}: {rms[-1]:.3f} ms", flush=True)
    ms = sorted(rms)[len(rms) // 2]
    if reps > 1:
        print(f"pytorch resnet18-cifar b{B} median of {len(rms)} reps {ms:.3f} ms (min {min(rms):.3f}, max {max(rms):.3f})")
    print(f"pytorch resnet18-cifar b{B} train step {ms:9.2f} ms  (last loss {loss.item():.4f}; cudnn {'tf32' if tf32 else 'fp32'})")


def resnet224(B, steps):
    import statistics
    import torchvision
    torch.manual_seed(0)
    m = torchvision.models.resnet18(num_classes=1000).cuda().eval()
    x = torch.randn(B, 3, 224, 224, device="cuda")
    for tf in (False, True):
        torch.backends.cudnn.allow_tf32 = tf
        torch.backends.cuda.matmul.allow_tf32 = tf
        with torch.inference_mode():
            for _ in range(3):
                m(x)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    m(x)
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(g):
                m(x)
            te, tg = [], []
            for _ in range(5):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(steps):
                    m(x)
                torch.cuda.synchronize()
                te.append((time.perf_counter() - t0) * 1e3 / steps)
                t0 = time.perf_counter()
                for _ in range(steps):
                    g.replay()
                torch.cuda.synchronize()
                tg.append((time.perf_counter() - t0) * 1e3 / steps)
        print(f"pytorch resnet18-224 b{B} inference {'tf32' if tf else 'fp32'} eager {statistics.median(te):8.3f} ms"
              f"  CUDA graph {statistics.median(tg):8.3f} ms", flush=True)


def mm():
    shapes = [("qkv_fwd", 16384, 2304, 768, 0, 1), ("qkv_dX", 16384, 768, 2304, 0, 0),
              ("qkv_dW", 2304, 768, 16384, 1, 0), ("fc2_fwd", 16384, 768, 3072, 0, 1),
              ("fc1_fwd", 16384, 3072, 768, 0, 1), ("fc1_dW", 3072, 768, 16384, 1, 0),
              ("lm_fwd", 16384, 50257, 768, 0, 1), ("lm_dX", 16384, 768, 50257, 0, 0),
              ("lm_dE", 50257, 768, 16384, 1, 0), ("lm_fwd_pad", 16384, 50304, 768, 0, 1),
              ("lm_dX_pad", 16384, 768, 50304, 0, 0), ("lm_dE_pad", 50304, 768, 16384, 1, 0)]
    for prec in ("tf32", "bf16"):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        dt = torch.bfloat16 if prec == "bf16" else torch.float32
        for name, M, N, K, ta, tb in shapes:
            def data(r, c):
                return torch.sin(torch.arange(r * c, device="cuda", dtype=torch.float32) * 0.37).view(r, c).to(dt)
            a = data(K, M).t() if ta else data(M, K)
            b = data(N, K).t() if tb else data(K, N)
            for _ in range(2):
                a @ b
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(10):
                a @ b
            e.record()
            e.synchronize()
            ms = s.elapsed_time(e) / 10
            print(f"mm torch  {prec:<6} {name:<11} {M:6d} x {N:6d} x {K:6d} {'T' if ta else 'N'}{'T' if tb else 'N'} "
                  f"{ms:8.3f} ms {2.0 * M * N * K / (ms * 1e-3) / 1e12:6.1f} TFLOP/s", flush=True)
            del a, b
    torch.backends.cuda.matmul.allow_tf32 = False


def attn(B, H, T, D):
    """F.scaled_dot_product_attention causal on bfloat16 [B, H, T, D] (what autocast runs in the step):
    forward alone and forward + backward, ms per call, median of 5 repeats of 20 (as bench_cuda_gpt attn)."""
    import statistics
    torch.manual_seed(7)
    x = [torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=i < 3) for i in range(4)]
    for bwd in (False, True):
        ts = []
        for rep in range(6):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(20):
                with torch.set_grad_enabled(bwd):
                    o = F.scaled_dot_product_attention(x[0], x[1], x[2], is_causal=True)
                if bwd:
                    torch.autograd.grad(o, x[:3], x[3])
            torch.cuda.synchronize()
            if rep:
                ts.append((time.perf_counter() - t0) * 1e3 / 20)
        ms = statistics.median(ts)
        fl = (3.5 if bwd else 1.0) * 4.0 * B * H * T * T * D / 2
        print(f"attn torch  {'bf16':<13} {B}x{H}x{T}x{D} causal {'fwd+bwd' if bwd else 'fwd':<7} {ms:8.3f} ms "
              f"{fl / (ms * 1e-3) / 1e12:6.1f} TFLOP/s", flush=True)


def profile(L, H, C, T, B, V, steps):
    """PyTorch's own bf16 autocast step split into parts: phases timed with the device synchronised
    between them, then torch.profiler's CUDA time per kernel (the top rows) over `steps` steps."""
    from torch.profiler import profile as tprof, ProfilerActivity
    torch.manual_seed(1337)
    m = GPT(L, H, C, T, V).cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=6e-4, weight_decay=0.1)
    x = torch.randint(0, V, (B, T), device="cuda")
    y = torch.randint(0, V, (B, T), device="cuda")
    ph = [0.0] * 4

    def step(parts):
        t = [time.perf_counter()]

        def mark():
            if parts:
                torch.cuda.synchronize()
                t.append(time.perf_counter())
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(x, y)
        mark()
        loss.backward()
        mark()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        mark()
        opt.step()
        opt.zero_grad(set_to_none=True)
        mark()
        if parts:
            for i in range(4):
                ph[i] += t[i + 1] - t[i]
    for _ in range(2):
        step(False)
    for _ in range(steps):
        step(True)
    print("pytorch bf16  parts (synchronised): " + ", ".join(
        f"{n} {v * 1e3 / steps:.2f} ms" for n, v in zip(("forward", "backward", "clip", "AdamW+zero_grad"), ph)), flush=True)
    with tprof(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step(False)
        torch.cuda.synchronize()
    ka = prof.key_averages()
    try:
        print(ka.table(sort_by="device_time_total", row_limit=40, max_name_column_width=70), flush=True)
    except Exception:  # older PyTorch names the column cuda_time_total
        print(ka.table(sort_by="cuda_time_total", row_limit=40, max_name_column_width=70), flush=True)


def _load_safetensors(path):
    """safetensors.torch.load_file, or (where the package is missing, e.g. the development VM's PyTorch 1.13)
    a reader of the format's plain layout: 8-byte little-endian header size, JSON header, raw data"""
    try:
        from safetensors.torch import load_file
        return load_file(path)
    except ImportError:
        import json
        import struct
        dts = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
               "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            head = json.loads(f.read(n))
            data = f.read()
        out = {}
        for k, v in head.items():
            if k == "__metadata__":
                continue
            a, b = v["data_offsets"]
            t = torch.frombuffer(bytearray(data[a:b]), dtype=dts[v["dtype"]]) if b > a else torch.empty(0, dtype=dts[v["dtype"]])
            out[k] = t.reshape(v["shape"])
        return out


def _group(hf):
    """bench_cuda_gpt's parameter group: the HF name without "transformer." and "h.<layer>." """
    k = hf[12:] if hf.startswith("transformer.") else hf
    if k.startswith("h."):
        k = k.split(".", 2)[2]
    return k


def curve(path, steps):
    """The first steps' losses and pre-clip gradient norms from the weights and batch bench_cuda_gpt curve
    wrote to path (HF names, Conv1D [in, out] weights: transposed into nn.Linear), fp32 (no TF32) and bf16
    autocast, the same AdamW (lr 6e-4 or CURVE_LR, weight decay 0.1) and clipping on the one batch.
    CURVE_PROBE="3 8": after each precision's curve, its gradient at the weights bench_cuda_gpt's fp32 run
    reached before those steps (path.p<step>), against this run's fp32 gradient there, printed as
    bench_cuda_gpt prints its own ("probe torch PREC step S loss L grad_norm N err E" and a line per group).
    CURVE_DEVICE=cpu, CURVE_CFG="layers heads width context batch vocab": the plumbing on a small model."""
    dev = os.environ.get("CURVE_DEVICE", "cuda")
    if dev == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_cuda_gpt_torch.py curve: no CUDA device (CURVE_DEVICE=cpu runs the plumbing on the CPU)")
    cfg = os.environ.get("CURVE_CFG")
    L, H, C, T, _, V = (int(v) for v in cfg.split()) if cfg else (12, 12, 768, 1024, 16, 50257)
    probes = [int(v) for v in os.environ.get("CURVE_PROBE", "").replace(",", " ").split()]
    lr = float(os.environ.get("CURVE_LR", "6e-4"))
    sd = _load_safetensors(path)
    x, y = sd.pop("x").to(dev), sd.pop("y").to(dev)
    snaps = {s: _load_safetensors(f"{path}.p{s}") for s in probes}
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    own = {"wte.weight": "transformer.wte.weight", "wpe.weight": "transformer.wpe.weight",
           "ln_f.weight": "transformer.ln_f.weight", "ln_f.bias": "transformer.ln_f.bias"}
    conv = set()
    for l in range(L):
        for a, b in (("ln_1", "ln_1"), ("ln_2", "ln_2"), ("c_attn", "attn.c_attn"), ("c_proj", "attn.c_proj"),
                     ("c_fc", "mlp.c_fc"), ("m_proj", "mlp.c_proj")):
            for k in ("weight", "bias"):
                own[f"h.{l}.{a}.{k}"] = f"transformer.h.{l}.{b}.{k}"
                if k == "weight" and not a.startswith("ln"):
                    conv.add(f"h.{l}.{a}.{k}")

    def load(m, w):
        with torch.no_grad():
            for n, p in m.named_parameters():
                t = w[own[n]]
                p.copy_(t.t() if n in conv else t)

    # CURVE_TORCH_PRECS: fp32 first (the probe's reference), then bf16 runs; "bf16-mea": bf16 with the
    # memory-efficient attention kernel instead of the default one: PyTorch's own spread between two
    # attention kernels of the same precision (the yardstick for ctorch's bf16o at the loss spikes)
    precs = os.environ.get("CURVE_TORCH_PRECS", "fp32 bf16 bf16-mea").split()
    if not precs or precs[0] != "fp32" or any(p not in ("bf16", "bf16-mea") for p in precs[1:]):
        sys.exit(f"bench_cuda_gpt_torch.py curve: CURVE_TORCH_PRECS is fp32 then bf16 / bf16-mea, got {precs}")

    warned = []

    def attn_kernel(prec):
        if prec == "bf16-mea":
            try:
                from torch.nn.attention import sdpa_kernel, SDPBackend
                return sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)
            except ImportError:
                if not warned:
                    warned.append(1)
                    print("curve torch: no torch.nn.attention.sdpa_kernel here: bf16-mea runs the default attention",
                          file=sys.stderr)
        return contextlib.nullcontext()

    ref = {}
    m = GPT(L, H, C, T, V).to(dev)  # one model, the initial weights loaded before each precision
    for prec in precs:
        load(m, sd)
        opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.1)
        for s in range(steps):
            with torch.autocast(dev, dtype=torch.bfloat16, enabled=prec != "fp32"), attn_kernel(prec):
                loss = m(x, y)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            print(f"curve torch {prec} step {s} loss {loss.item():.6f} grad_norm {gn.item():.4f}", flush=True)
        for s in probes:
            load(m, snaps[s])
            m.zero_grad(set_to_none=True)
            with torch.autocast(dev, dtype=torch.bfloat16, enabled=prec != "fp32"), attn_kernel(prec):
                loss = m(x, y)
            loss.backward()
            grp = {}
            tot = [0.0, 0.0, 0.0]
            for n, p in m.named_parameters():
                g = p.grad.double()
                if prec == "fp32":
                    ref[(s, n)] = g.clone()
                r = ref[(s, n)]
                v = (g.square().sum().item(), (g - r).square().sum().item(), r.square().sum().item())
                e = grp.setdefault(_group(own[n]), [0.0, 0.0, 0.0])
                for i in range(3):
                    e[i] += v[i]
                    tot[i] += v[i]
            print(f"probe torch {prec} step {s} loss {loss.item():.6f} grad_norm {math.sqrt(tot[0]):.4f} "
                  f"err {math.sqrt(tot[1] / tot[2]) if tot[2] > 0 else 0.0:.3e}", flush=True)
            for k, e in grp.items():
                print(f"probe torch {prec} step {s} group {k} norm {math.sqrt(e[0]):.5g} "
                      f"err {math.sqrt(e[1] / e[2]) if e[2] > 0 else 0.0:.3e}", flush=True)
            m.zero_grad(set_to_none=True)
        del opt


def main():
    a = sys.argv[1:]
    if a and a[0] == "resnet224":
        resnet224(int(a[1]) if len(a) > 1 else 1, int(a[2]) if len(a) > 2 else 50)
        return
    if a and a[0] == "mm":
        mm()
        return
    if a and a[0] == "attn":
        attn(*(int(v) for v in a[1:5])) if len(a) >= 5 else attn(16, 12, 1024, 64)
        return
    if a and a[0] == "curve":
        curve(a[1], int(a[2]) if len(a) > 2 else 10)
        return
    if a and a[0] == "profile":
        profile(*((int(v) for v in a[1:8]) if len(a) >= 8 else (12, 12, 768, 1024, 16, 50257, 3)))
        return
    if a and a[0] == "resnet":
        reps = [int(w[5:]) for w in a[3:] if w.startswith("reps=")]
        resnet(int(a[1]) if len(a) > 1 else 16, int(a[2]) if len(a) > 2 else 20, "tf32" in a[3:], reps[0] if reps else 1)
        return
    L, H, C, T, B, V, steps = (int(v) for v in a[:7]) if len(a) >= 7 else (12, 12, 768, 1024, 16, 50257, 10)
    precs = a[7:] if len(a) > 7 else ["tf32", "bf16"]
    torch.manual_seed(1337)
    dev = "cuda"
    m = GPT(L, H, C, T, V).to(dev)
    for p in m.parameters():
        if p.dim() >= 2:
            nn.init.normal_(p, 0, 0.02)
    opt = torch.optim.AdamW(m.parameters(), lr=6e-4, weight_decay=0.1)
    x = torch.randint(0, V, (B, T), device=dev)
    y = torch.randint(0, V, (B, T), device=dev)
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"{sum(p.numel() for p in m.parameters()) / 1e6:.1f}M parameters")
    for prec in precs:
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        torch.backends.cudnn.allow_tf32 = prec == "tf32"
        last = 0.0
        for s in range(steps + 2):
            if s == 2:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=prec == "bf16"):
                loss = m(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            if s == steps + 1:
                last = loss.item()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3 / steps
        print(f"pytorch {prec:<5} train step {ms:9.2f} ms  ({B * T / ms * 1e3:.0f} tokens/s, last loss {last:.4f})", flush=True)
    print(f"pytorch peak device memory {torch.cuda.max_memory_allocated() / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
