"""PyTorch CPU peer of bench/bench_gpt124m.c: the GPT-2 124M shape (V 50257, 1024 positions, C 768,
12 layers, 12 heads, biases, GELU-tanh, pre-LN, tied embeddings), random weights (GPT-2's
initialisation, seed 0), the model class of bench/train_gpt_ref.py. One workload per process:
  --child train     B x T tokens per step, AdamW (lr 6e-4, weight decay 0.1), dropout 0
  --child generate  a random prompt, then --new tokens sampled one at a time (temperature 0.8, top-k
                    40) with a key/value cache kept per layer the way transformers' GPT-2 keeps it
                    (torch.cat of the past keys/values with the new ones), under inference_mode; only
                    the last position goes through the classifier.
Prints the line bench_gpt124m.c parses:
  RESULT name tok_s=.. cpu_tok_s=.. hwm_kb=.. setup_kb=.. rss0_kb=..
train: tokens/s of the best step after the first (wall and process CPU time);
generate: tokens/s over the tokens after the first (the prompt's forward excluded).
Usage: /usr/bin/python3 bench/bench_gpt124m_torch.py --child train|generate [--threads N]
       [--steps S] [--batch B] [--context T] [--prompt P] [--new N]"""
import argparse
import math
import os
import sys
import time

from bench_memory_torch import status_kb  # a /proc/self/status field in KiB


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", required=True, choices=["train", "generate"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--new", type=int, default=64)
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import torch_threads  # torch.set_num_threads + OpenBLAS's own thread count
    torch_threads.set_threads(a.threads)
    rss0 = status_kb("VmRSS")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from train_gpt_ref import GPT
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model = GPT(50257, 1024, 768, 12, 12, 0.0, g, True, "tanh")
    if a.child == "train":
        model.train()
        x = torch.randint(0, 50257, (a.batch, a.context))
        y = torch.randint(0, 50257, (a.batch, a.context))
        opt = torch.optim.AdamW(model.ordered_parameters(), lr=6e-4, weight_decay=0.1)
        setup = status_kb("VmRSS")
        best = best_cpu = float("inf")
        for i in range(a.steps):
            t0, c0 = time.perf_counter(), time.process_time()
            loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            t, tc = time.perf_counter() - t0, time.process_time() - c0
            if i > 0 or a.steps == 1:
                best, best_cpu = min(best, t), min(best_cpu, tc)
        ntok = a.batch * a.context
        print("RESULT train tok_s=%.3f cpu_tok_s=%.3f hwm_kb=%d setup_kb=%d rss0_kb=%d loss=%.4f"
              % (ntok / best, ntok / best_cpu, status_kb("VmHWM"), setup, rss0, loss.item()), flush=True)
        return

    model.eval()
    C, H = 768, 12
    hd = C // H

    def forward_cached(idx, past):
        """idx [1, t] after the cached positions; past: per layer (k, v) [1, H, len, hd] or None."""
        t = idx.shape[1]
        start = 0 if past[0] is None else past[0][0].shape[2]
        x = model.wte[idx] + model.wpe[start:start + t]
        for li, b in enumerate(model.h):
            q, k, v = b.c_attn(b.ln_1(x)).split(C, dim=2)
            q, k, v = (z.view(1, t, H, hd).transpose(1, 2) for z in (q, k, v))
            if past[li] is not None:
                k = torch.cat((past[li][0], k), dim=2)
                v = torch.cat((past[li][1], v), dim=2)
            past[li] = (k, v)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            if t > 1:  # the prompt: causal among the new positions
                att = att.masked_fill(~b.mask[start:start + t, :start + t], float("-inf"))
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(1, t, C)
            x = x + b.attn_proj(y)
            x = x + b.mlp_proj(F.gelu(b.c_fc(b.ln_2(x)), approximate="tanh"))
        return model.ln_f(x[:, -1, :]) @ model.wte.t()  # only the last position's logits

    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, 50257, (1, a.prompt), generator=gen)
    setup = status_kb("VmRSS")
    with torch.inference_mode():
        past = [None] * len(model.h)
        idx = prompt
        stamps = []
        c_first = 0.0
        for i in range(a.new):
            logits = forward_cached(idx, past)[0] / 0.8
            top, ids = torch.topk(logits, 40)
            pick = torch.multinomial(F.softmax(top, -1), 1, generator=gen)
            idx = ids[pick].view(1, 1)
            stamps.append(time.perf_counter())
            if i == 0:
                c_first = time.process_time()
        c_last = time.process_time()
    n = a.new - 1
    print("RESULT generate tok_s=%.3f cpu_tok_s=%.3f hwm_kb=%d setup_kb=%d rss0_kb=%d"
          % (n / (stamps[-1] - stamps[0]), n / (c_last - c_first), status_kb("VmHWM"), setup, rss0), flush=True)


if __name__ == "__main__":
    main()
