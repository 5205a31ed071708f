#!/usr/bin/env python3
"""`ctorch train-cnn`'s recipe in PyTorch, for comparing accuracy and wall time.

The same data split (the first 8,000 images of a 10,000-image IDX set for training, the last
2,000 for evaluation; or the train pair for training and the t10k pair for evaluation), the same
model (the LeNet-style CNN of src/models/cnn.c: conv1 -> ReLU -> max-pool -> conv2 -> ReLU ->
max-pool -> fc1 -> ReLU -> fc2, PyTorch's default initialisation from torch.manual_seed(seed)),
the same input scaling ((x / 255 - 0.1307) / 0.3081), the same per-epoch shuffle
(torch.randperm from a generator seeded with seed + 1), Adam with a cosine learning-rate decay
per step, and the same evaluation. Both sides print `epoch E loss L accuracy NN.NN%` lines.

usage: /usr/bin/python3 bench/train_cnn_ref.py --data DIR [--epochs N] [--batch N] [--lr X]
       [--seed N] [--threads N] [--c1 N] [--c2 N] [--hidden N] [--json FILE]
"""
import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_threads  # bench/: torch.set_num_threads + OpenBLAS's own thread count


def read_idx(path):
    """An IDX file (optionally gzip-compressed) as a uint8 tensor of its shape."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError("%s: not an unsigned-byte IDX file" % path)
    shape = struct.unpack(">%dI" % ndim, raw[4:4 + 4 * ndim])
    data = raw[4 + 4 * ndim:]
    n = 1
    for s in shape:
        n *= s
    if len(data) != n:
        raise ValueError("%s: %d data bytes, the header says %d" % (path, len(data), n))
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(shape)


def find_pair(d, prefix):
    for suffix in ("", ".gz"):
        img = os.path.join(d, "%s-images-idx3-ubyte%s" % (prefix, suffix))
        lab = os.path.join(d, "%s-labels-idx1-ubyte%s" % (prefix, suffix))
        if os.path.exists(img) and os.path.exists(lab):
            return img, lab
    return None


def load(d, n_train, n_eval):
    tr, te = find_pair(d, "train"), find_pair(d, "t10k")
    if tr and te:
        xi, yi = read_idx(tr[0]), read_idx(tr[1])
        xe, ye = read_idx(te[0]), read_idx(te[1])
        return xi, yi, xe, ye
    one = tr or te
    if not one:
        sys.exit("no MNIST IDX pair in %s" % d)
    x, y = read_idx(one[0]), read_idx(one[1])
    n = x.shape[0]
    ntr = min(n_train, n - n_eval)
    return x[:ntr], y[:ntr], x[n - n_eval:], y[n - n_eval:]


class CNN(nn.Module):
    """src/models/cnn.c's ct_cnn with padding 0: [N, 1, 28, 28] -> [N, 10]."""

    def __init__(self, c1, c2, hidden, k=5, classes=10, size=28):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, k)
        self.conv2 = nn.Conv2d(c1, c2, k)
        s = ((size - k + 1) // 2 - k + 1) // 2
        self.fc1 = nn.Linear(c2 * s * s, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def prep(x):
    return ((x.to(torch.float32) / 255.0) - 0.1307) / 0.3081


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--c1", type=int, default=16)
    ap.add_argument("--c2", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--train-size", type=int, default=8000)
    ap.add_argument("--eval-size", type=int, default=2000)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if a.threads > 0:
        torch_threads.set_threads(a.threads)  # OpenBLAS's pool too: at 1 thread it would use a second core
    xtr, ytr, xte, yte = load(a.data, a.train_size, a.eval_size)
    xtr, xte = prep(xtr).unsqueeze(1), prep(xte).unsqueeze(1)
    ytr, yte = ytr.to(torch.int64), yte.to(torch.int64)
    torch.manual_seed(a.seed)
    model = CNN(a.c1, a.c2, a.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    n = xtr.shape[0]
    steps_per_epoch = (n + a.batch - 1) // a.batch
    total = steps_per_epoch * a.epochs
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    g = torch.Generator().manual_seed(a.seed + 1)
    print("PyTorch %s, %d threads: %d training images, %d held out, %d epochs of %d steps"
          % (torch.__version__, torch.get_num_threads(), n, xte.shape[0], a.epochs, steps_per_epoch), flush=True)
    log = []
    t0 = time.perf_counter()
    for ep in range(1, a.epochs + 1):
        model.train()
        perm = torch.randperm(n, generator=g)
        tot, cnt = 0.0, 0
        for s in range(steps_per_epoch):
            idx = perm[s * a.batch:(s + 1) * a.batch]
            out = model(xtr[idx])
            loss = F.cross_entropy(out, ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += loss.item() * idx.numel()
            cnt += idx.numel()
        model.eval()
        with torch.no_grad():
            correct = 0
            for s in range(0, xte.shape[0], 500):
                correct += (model(xte[s:s + 500]).argmax(1) == yte[s:s + 500]).sum().item()
        acc = 100.0 * correct / xte.shape[0]
        el = time.perf_counter() - t0
        print("epoch %d loss %.4f accuracy %.2f%% (%.1f s)" % (ep, tot / cnt, acc, el), flush=True)
        log.append({"epoch": ep, "loss": tot / cnt, "accuracy": acc, "seconds": el})
    print("final accuracy %.2f%% in %.1f s" % (log[-1]["accuracy"], time.perf_counter() - t0))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(), "epochs": log}, f, indent=1)


if __name__ == "__main__":
    main()
