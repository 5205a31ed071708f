#!/usr/bin/env python3
"""`ctorch train-gpt`'s recipe in PyTorch, for comparing the loss curve and the wall-clock time.

Everything is the same as tools/cmd_train_gpt.c, down to the random numbers (ctorch's generator
reproduces PyTorch's CPU mt19937 streams):
  - data: the file's bytes; --tokenizer char: the sorted distinct characters (UTF-8), byte: 0..255;
    the first int(n * 0.9) tokens train, the rest validate (nanoGPT's split);
  - model: the GPT as src/models/gpt.c builds it (Conv1D weights [in, out], pre-LayerNorm eps 1e-5,
    learned positions, tied lm_head, causal attention, dropout), by default no biases (nanoGPT's
    bias=False) and GPT-2's tanh GELU (--gelu erf: today's nanoGPT; --bias yes: GPT-2's block),
    initialised from torch.Generator().manual_seed(seed) in ctorch's parameter order: wte, wpe, and per
    layer c_attn, attn.c_proj, c_fc, mlp.c_proj weights N(0, 0.02) (the two projections
    0.02 / sqrt(2 n_layer)); biases 0, LayerNorms 1 and 0;
  - batches: torch.randint(0, n - T, (B,)) from the same generator (after the initialisation);
  - AdamW (betas, eps 1e-8), weight decay on the 2-d tensors only (a second group without it),
    nanoGPT's schedule (linear warmup lr * (s + 1) / (warmup + 1), cosine to min_lr at the last
    step), clip_grad_norm_ over every parameter;
  - evaluation: eval_iters batches from a generator seeded with seed ^ 0x5DEECE66D (train split) and
    that + 1 (validation split), in eval mode, at every eval_every steps and at the end (the last one
    over at least 200 batches).
Both print `step N train loss X val loss Y` and `done: N steps in S s ...`.

usage: /usr/bin/python3 bench/train_gpt_ref.py --data FILE [--tokenizer char|byte] [--layers N]
       [--heads N] [--width N] [--context N] [--batch N] [--steps N] [--lr X] [--min-lr X]
       [--warmup N] [--weight-decay X] [--grad-clip X] [--dropout P] [--beta1 X] [--beta2 X]
       [--seed N] [--eval-every N] [--eval-iters N] [--threads N] [--json FILE] [--bias yes|no]
       [--gelu tanh|erf] [--decay-embeddings yes|no]
Give it the options ctorch's run printed/used: the defaults here mirror `ctorch train-gpt --help`.
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_threads  # bench/: torch.set_num_threads + OpenBLAS's own thread count


class Conv1D(nn.Module):
    """transformers' Conv1D: y = x @ W + b with W [in, out]."""

    def __init__(self, nin, nout, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(nin, nout))
        self.bias = nn.Parameter(torch.zeros(nout)) if bias else None

    def forward(self, x):
        shape = x.shape[:-1] + (self.weight.shape[1],)
        x2 = x.reshape(-1, x.shape[-1])
        y = torch.addmm(self.bias, x2, self.weight) if self.bias is not None else x2 @ self.weight
        return y.view(shape)


def layer_norm(C, bias):
    ln = nn.LayerNorm(C, eps=1e-5)
    if not bias:  # nanoGPT's bias=False: a LayerNorm without its shift
        ln.bias = None
    return ln


class Block(nn.Module):
    def __init__(self, C, H, P, p, bias=True, gelu="tanh"):
        super().__init__()
        self.H, self.p, self.gelu = H, p, gelu
        self.ln_1 = layer_norm(C, bias)
        self.c_attn = Conv1D(C, 3 * C, bias)
        self.attn_proj = Conv1D(C, C, bias)
        self.ln_2 = layer_norm(C, bias)
        self.c_fc = Conv1D(C, 4 * C, bias)
        self.mlp_proj = Conv1D(4 * C, C, bias)
        self.register_buffer("mask", torch.tril(torch.ones(P, P, dtype=torch.bool)), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.H))
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(-1)
        att = F.dropout(att, self.p, self.training)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.dropout(self.attn_proj(y), self.p, self.training)
        h = F.gelu(self.c_fc(self.ln_2(x)), approximate=self.gelu)
        return x + F.dropout(self.mlp_proj(h), self.p, self.training)


class GPT(nn.Module):
    def __init__(self, V, P, C, L, H, p, g, bias=True, gelu="tanh"):
        super().__init__()
        self.p = p
        self.wte = nn.Parameter(torch.zeros(V, C))
        self.wpe = nn.Parameter(torch.zeros(P, C))
        self.h = nn.ModuleList([Block(C, H, P, p, bias, gelu) for _ in range(L)])
        self.ln_f = layer_norm(C, bias)
        pstd = 0.02 / math.sqrt(2.0 * max(L, 1))
        with torch.no_grad():  # ctorch's draw order (src/models/gpt.c, gpt_make)
            self.wte.normal_(0, 0.02, generator=g)
            self.wpe.normal_(0, 0.02, generator=g)
            for b in self.h:
                b.c_attn.weight.normal_(0, 0.02, generator=g)
                b.attn_proj.weight.normal_(0, pstd, generator=g)
                b.c_fc.weight.normal_(0, 0.02, generator=g)
                b.mlp_proj.weight.normal_(0, pstd, generator=g)

    def ordered_parameters(self):
        """ctorch's parameter order (Hugging Face's state_dict order)."""
        ps = [self.wte, self.wpe]
        for b in self.h:
            ps += [b.ln_1.weight, b.ln_1.bias, b.c_attn.weight, b.c_attn.bias, b.attn_proj.weight, b.attn_proj.bias,
                   b.ln_2.weight, b.ln_2.bias, b.c_fc.weight, b.c_fc.bias, b.mlp_proj.weight, b.mlp_proj.bias]
        ps += [self.ln_f.weight, self.ln_f.bias]
        return [p for p in ps if p is not None]

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = F.dropout(self.wte[idx] + self.wpe[:T], self.p, self.training)
        for b in self.h:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def tokenize(raw, kind):
    if kind == "byte":
        return torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(torch.int64), 256
    text = raw.decode("utf-8")
    chars = sorted(set(text), key=lambda c: c.encode("utf-8"))  # ctorch sorts the UTF-8 bytes
    stoi = {c: i for i, c in enumerate(chars)}
    return torch.tensor([stoi[c] for c in text], dtype=torch.int64), len(chars)


def get_batch(data, B, T, g):
    ix = torch.randint(0, data.numel() - T, (B,), generator=g)
    x = torch.stack([data[i:i + T] for i in ix.tolist()])
    y = torch.stack([data[i + 1:i + 1 + T] for i in ix.tolist()])
    return x, y


@torch.no_grad()
def evaluate(model, data, a, iters, seed):
    g = torch.Generator().manual_seed(seed)
    model.eval()
    losses = []
    for _ in range(iters):
        x, y = get_batch(data, a.batch, a.context, g)
        losses.append(model(x, y).item())
    model.train()
    return sum(losses) / len(losses), losses


FINAL_EVAL_ITERS = 200  # the last evaluation uses at least this many batches (as ctorch)


def lr_at(a, step):
    if step < a.warmup:
        return a.lr * (step + 1) / (a.warmup + 1)
    if a.steps <= a.warmup:
        return a.lr
    r = min(1.0, (step - a.warmup) / (a.steps - a.warmup))
    return a.min_lr + 0.5 * (1 + math.cos(math.pi * r)) * (a.lr - a.min_lr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--tokenizer", default="byte", choices=["byte", "char"])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--min-lr", type=float, default=-1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=0.0)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--beta1", type=float, default=0.85)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-iters", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", default=None)
    # the architecture's variant (ctorch's --bias / --gelu) and the weight decay's reach
    ap.add_argument("--bias", default="no", choices=["yes", "no"], help="no: nanoGPT's bias=False")
    ap.add_argument("--gelu", default="tanh", choices=["tanh", "erf", "none"], help="erf (= none): the exact GELU")
    ap.add_argument("--decay-embeddings", default="yes", choices=["yes", "no"],
                    help="no: weight decay on the linear layers' weights only (nanoGPT until May 2023)")
    a = ap.parse_args()
    a.gelu = "tanh" if a.gelu == "tanh" else "none"
    if a.min_lr < 0:
        a.min_lr = a.lr * 0.3
    if a.threads > 0:
        torch_threads.set_threads(a.threads)  # OpenBLAS's pool too: at 1 thread it would use a second core
    with open(a.data, "rb") as f:
        data, V = tokenize(f.read(), a.tokenizer)
    n_train = int(data.numel() * 0.9)
    train, val = data[:n_train], data[n_train:]
    g = torch.Generator().manual_seed(a.seed)
    model = GPT(V, a.context, a.width, a.layers, a.heads, a.dropout, g, a.bias == "yes", a.gelu)
    params = model.ordered_parameters()
    emb = {id(model.wte), id(model.wpe)}
    decay = [p for p in params if p.dim() >= 2 and (a.decay_embeddings == "yes" or id(p) not in emb)]
    no_decay = [p for p in params if not any(p is q for q in decay)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(a.beta1, a.beta2), eps=1e-8)
    print("PyTorch %s, %d threads: vocab %d, %.2fM parameters, %d train / %d val tokens"
          % (torch.__version__, torch.get_num_threads(), V, sum(p.numel() for p in params) / 1e6, train.numel(),
             val.numel()), flush=True)
    eval_seed = a.seed ^ 0x5DEECE66D
    evals, losses = [], []
    t_start = time.perf_counter()
    t_train = 0.0
    step = 0
    while True:
        last = step >= a.steps
        if step % a.eval_every == 0 or last:
            iters = max(a.eval_iters, FINAL_EVAL_ITERS) if last else a.eval_iters
            tr, _ = evaluate(model, train, a, iters, eval_seed)
            va, va_batches = evaluate(model, val, a, iters, eval_seed + 1)
            print("step %d train loss %.4f val loss %.4f" % (step, tr, va), flush=True)
            # the per-batch losses show how noisy an estimate over fewer batches would be
            evals.append({"step": step, "train_loss": tr, "val_loss": va, "val_batches": va_batches})
        if last:
            break
        t0 = time.perf_counter()
        lr = lr_at(a, step)
        for grp in opt.param_groups:
            grp["lr"] = lr
        x, y = get_batch(train, a.batch, a.context, g)
        loss = model(x, y)
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params, a.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        t_train += time.perf_counter() - t0
        losses.append(loss.item())
    wall = time.perf_counter() - t_start
    print("done: %d steps in %.1f s, %.0f tokens/s in training steps; final train loss %.4f, val loss %.4f"
          % (a.steps, wall, a.steps * a.batch * a.context / max(t_train, 1e-9), evals[-1]["train_loss"],
             evals[-1]["val_loss"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(), "wall_s": wall,
                       "train_s": t_train, "evals": evals, "losses": losses}, f, indent=1)


if __name__ == "__main__":
    main()
