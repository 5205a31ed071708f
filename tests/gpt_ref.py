#!/usr/bin/env python3
"""Reference fixtures for tests/c/test_gpt.c (in the manner of llm.c's test_gpt2).

A faithful re-implementation of Hugging Face's GPT2LMHeadModel in plain PyTorch (transformers is
not needed): Conv1D layers (weight [in, out], y = x @ W + b), LayerNorm eps 1e-5, gelu_new (the tanh
approximation), scaled dot-product attention with a causal mask, learned positions, tied lm_head.
A small random config is initialised (weights, biases and LayerNorms all random, so every parameter
matters), saved in transformers' layout (config.json + model.safetensors with "transformer." keys
and no lm_head.weight, as save_pretrained writes tied weights), and the script records the logits,
the loss, the gradient of every parameter and the losses of 10 AdamW steps in expected.safetensors.
The safetensors files are written by this script (the format is an 8-byte header length, a JSON
header and the raw little-endian data).

usage: /usr/bin/python3 tests/gpt_ref.py [OUT_DIR]   (default tests/fixtures/gpt)
Run with transformers installed, it also checks this model against GPT2LMHeadModel.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = dict(vocab_size=53, n_positions=12, n_embd=16, n_layer=2, n_head=4, layer_norm_epsilon=1e-5)
B, T = 2, 11
ADAMW = dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
STEPS = 10


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.empty(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Attention(nn.Module):
    def __init__(self, C, H, P):
        super().__init__()
        self.H = H
        self.c_attn = Conv1D(3 * C, C)
        self.c_proj = Conv1D(C, C)
        self.register_buffer("bias", torch.tril(torch.ones(P, P, dtype=torch.bool)).view(1, 1, P, P), persistent=False)

    def forward(self, x):
        Bb, Tt, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(Bb, Tt, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.tensor(v.size(-1) ** 0.5, dtype=q.dtype)
        mask = self.bias[:, :, :Tt, :Tt]
        w = torch.where(mask, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        w = F.softmax(w, dim=-1)
        y = torch.matmul(w, v).transpose(1, 2).contiguous().view(Bb, Tt, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = Conv1D(4 * C, C)
        self.c_proj = Conv1D(C, 4 * C)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, C, H, P, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=eps)
        self.attn = Attention(C, H, P)
        self.ln_2 = nn.LayerNorm(C, eps=eps)
        self.mlp = MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        C = c["n_embd"]
        self.wte = nn.Embedding(c["vocab_size"], C)
        self.wpe = nn.Embedding(c["n_positions"], C)
        self.h = nn.ModuleList(
            [Block(C, c["n_head"], c["n_positions"], c["layer_norm_epsilon"]) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(C, eps=c["layer_norm_epsilon"])


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = Transformer(c)
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, idx, targets=None):
        tr = self.transformer
        pos = torch.arange(idx.size(1))
        x = tr.wte(idx) + tr.wpe(pos)
        for blk in tr.h:
            x = blk(x)
        logits = self.lm_head(tr.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


ST_DTYPES = {torch.float32: ("F32", "<f4"), torch.int64: ("I64", "<i8"), torch.float64: ("F64", "<f8")}


def save_safetensors(path, tensors, metadata=None):
    """safetensors: u64 little-endian header size, JSON header, data (here in the given order)."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        code, _ = ST_DTYPES[t.dtype]
        data = t.numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures", "gpt")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(42)
    model = GPT2LMHeadModel(CONFIG)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            elif p.dim() == 1:
                p.copy_(0.05 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))  # larger than GPT-2's 0.02 so the attention is not uniform
    sd = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
    save_safetensors(os.path.join(out, "model.safetensors"), sd, {"format": "pt"})
    cfg = dict(architectures=["GPT2LMHeadModel"], model_type="gpt2", activation_function="gelu_new",
               resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, n_inner=None, **CONFIG)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)

    idx = torch.randint(0, CONFIG["vocab_size"], (B, T))
    targets = torch.randint(0, CONFIG["vocab_size"], (B, T))
    logits, loss = model(idx, targets)
    loss.backward()
    expected = {"idx": idx, "targets": targets, "logits": logits, "loss": loss.reshape(())}
    for name, p in model.named_parameters():  # lm_head.weight is wte (named_parameters lists it once)
        expected["grad." + name] = p.grad
    # 10 AdamW steps, all parameters in one group: the loss before each step
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        _, l = model(idx, targets)
        l.backward()
        opt.step()
        losses.append(l.item())
    expected["adamw_losses"] = torch.tensor(losses, dtype=torch.float64)
    save_safetensors(os.path.join(out, "expected.safetensors"), expected,
                     {"adamw": json.dumps({"lr": ADAMW["lr"], "betas": ADAMW["betas"], "eps": ADAMW["eps"],
                                           "weight_decay": ADAMW["weight_decay"], "steps": STEPS})})
    print(f"wrote {out}: loss {loss.item():.6f}, AdamW losses {losses[0]:.4f} -> {losses[-1]:.4f}")

    try:  # optional: the same weights in transformers' own model
        from transformers import GPT2Config, GPT2LMHeadModel as HF
    except ImportError:
        return
    hf = HF(GPT2Config(**cfg)).eval()
    missing, unexpected = hf.load_state_dict(sd, strict=False)
    assert not unexpected, unexpected
    with torch.no_grad():
        ref = hf(idx).logits
    print("max |logits - transformers| =", (ref - logits).abs().max().item())


if __name__ == "__main__":
    main()
