"""PyTorch peer of bench/bench_cuda_gpt.c: the same GPT-2 (biases, tanh GELU, tied wte, SDPA causal
attention), the same step (forward + loss, backward, clip_grad_norm_ 1.0, AdamW default foreach),
tf32 (allow_tf32 switches) and bf16 (torch.autocast bf16, float32 master weights), timed after two
warm-up steps with the device synchronised.
  python3 bench_cuda_gpt_torch.py [layers heads width context batch vocab steps precision...]
  python3 bench_cuda_gpt_torch.py resnet [batch steps]: ResNet-18 CIFAR training step (SGD momentum),
  float32 eager, the model of tests/models_ref.py (as bench/bench_models_torch.py)."""
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
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
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


def resnet(B, steps):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from models_ref import ResNet
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    m = ResNet(num_classes=10, cifar=True).cuda().train()
    x, y = torch.randn(B, 3, 32, 32, device="cuda"), torch.randint(0, 10, (B,), device="cuda")
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    for s in range(steps + 2):
        if s == 2:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        loss = F.cross_entropy(m(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / steps
    print(f"pytorch resnet18-cifar b{B} train step {ms:9.2f} ms  (last loss {loss.item():.4f}; cudnn fp32)")


def main():
    a = sys.argv[1:]
    if a and a[0] == "resnet":
        resnet(int(a[1]) if len(a) > 1 else 16, int(a[2]) if len(a) > 2 else 20)
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
