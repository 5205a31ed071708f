"""Per-layer cost of the ResNet-18 CIFAR training step, ctorch vs PyTorch (issue 5).

For every conv shape of the CIFAR ResNet-18 (3x3 stem, no max-pool, 32x32 input) at batch B:
forward, input gradient and weight gradient timed separately (autograd with requires_grad on only
the input or only the weight), plus batch-norm forward+backward, ReLU and the residual add at the
layer sizes. Each library runs in its own child process (in one process the two thread pools' idle
spinning slows each other), alternately, `--rounds` times; reported are the minimum wall ms and the
minimum process CPU ms over all repetitions, the ratio torch/ctorch (> 1: ctorch
faster) and each row's share of the step ("count" = how many times the step runs that shape).
ctorch runs through its Python extension (PYTHONPATH=build/<name>/python-ext): the per-call overhead
(~10-30 us) is small against these ops (>= 0.1 ms), so the rows show the kernels.

  PYTHONPATH=build/resnet/python-ext /usr/bin/python3 bench/bench_conv_cifar.py --threads 2 --batch 16
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# name, C, O, H (input), k, stride, pad, count in the step
CONVS = [
    ("stem", 3, 64, 32, 3, 1, 1, 1),
    ("l1", 64, 64, 32, 3, 1, 1, 4),
    ("l2_0_c1", 64, 128, 32, 3, 2, 1, 1),
    ("l2_ds", 64, 128, 32, 1, 2, 0, 1),
    ("l2", 128, 128, 16, 3, 1, 1, 3),
    ("l3_0_c1", 128, 256, 16, 3, 2, 1, 1),
    ("l3_ds", 128, 256, 16, 1, 2, 0, 1),
    ("l3", 256, 256, 8, 3, 1, 1, 3),
    ("l4_0_c1", 256, 512, 8, 3, 2, 1, 1),
    ("l4_ds", 256, 512, 8, 1, 2, 0, 1),
    ("l4", 512, 512, 4, 3, 1, 1, 3),
]
# (channels, size, count of BN layers at that size in the step)
BNS = [(64, 32, 5), (128, 16, 5), (256, 8, 5), (512, 4, 5)]


def timed(fn, reps):
    """min wall and min process-CPU seconds of reps calls (after one warm-up)"""
    fn()
    bw = bc = float("inf")
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        w1, c1 = time.perf_counter(), time.process_time()
        bw, bc = min(bw, w1 - w0), min(bc, c1 - c0)
    return bw, bc


def conv_cases(lib, B, C, O, H, k, s, p):
    lib.manual_seed(0)
    x = lib.randn(B, C, H, H)
    w = lib.randn(O, C, k, k) * 0.05
    OH = (H + 2 * p - k) // s + 1
    gy = lib.randn(B, O, OH, OH)
    F = lib.nn.functional
    xg = x.clone().requires_grad_(True)
    wg = w.clone().requires_grad_(True)

    def fwd():
        with lib.no_grad():
            F.conv2d(x, w, None, s, p)

    def bwd_in():  # forward + input gradient (forward subtracted below)
        xg.grad = None
        F.conv2d(xg, w, None, s, p).backward(gy)

    def bwd_w():
        wg.grad = None
        F.conv2d(x, wg, None, s, p).backward(gy)

    return {"fwd": fwd, "gin+f": bwd_in, "gw+f": bwd_w}


def bn_cases(lib, B, C, H):
    lib.manual_seed(0)
    x = lib.randn(B, C, H, H).requires_grad_(True)
    bn = lib.nn.BatchNorm2d(C)
    gy = lib.randn(B, C, H, H)
    r = lib.nn.functional.relu

    def bnrelu():
        x.grad = None
        r(bn(x)).backward(gy)

    def add_relu():
        with lib.no_grad():
            r(x + gy)

    return {"bn+relu fb": bnrelu, "add+relu": add_relu}


def child(a):
    """time every row with one library; print {row: [wall, cpu]} as JSON"""
    if a.lib == "torch":
        import torch as lib
        from torch_threads import set_threads
        set_threads(a.threads)
    else:
        import ctorch as lib
        lib.set_num_threads(a.threads)
    B, out = a.batch, {}
    for name, C, O, H, k, s, p, cnt in CONVS:
        if a.only and a.only not in name:
            continue
        for op, f in conv_cases(lib, B, C, O, H, k, s, p).items():
            out[f"{name}.{op}"] = timed(f, a.reps)
    for C, H, cnt in BNS:
        if a.only and a.only not in f"bn{C}":
            continue
        for op, f in bn_cases(lib, B, C, H).items():
            out[f"bn{C}x{H}.{op}"] = timed(f, a.reps)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--lib", default="")
    a = ap.parse_args()
    if a.lib:
        return child(a)
    B = a.batch
    print(f"# B={B} threads={a.threads} load={os.getloadavg()[0]:.1f}")
    best = {"ctorch": {}, "torch": {}}
    for _ in range(a.rounds):
        for lib in best:
            r = subprocess.run([sys.executable, __file__, "--lib", lib] + [f"--{k}={v}" for k, v in
                               (("threads", a.threads), ("batch", B), ("reps", a.reps), ("only", a.only))],
                               check=True, capture_output=True, text=True)
            for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items():
                o = best[lib].get(k, [float("inf")] * 2)
                best[lib][k] = [min(o[0], v[0]), min(o[1], v[1])]
    cnts = {}
    for name, C, O, H, k, s, p, cnt in CONVS:
        cnts[name] = cnt
    for C, H, cnt in BNS:
        cnts[f"bn{C}x{H}"] = cnt
    print(f"# load after: {os.getloadavg()[0]:.1f}")
    print(f"{'row':22s} {'cnt':>3s} {'ct ms':>8s} {'pt ms':>8s} {'pt/ct':>6s} {'ctCPU':>8s} {'ptCPU':>8s} "
          f"{'cpu r':>6s} {'ct tot':>7s} {'pt tot':>7s} {'ctCPUt':>7s} {'ptCPUt':>7s}")
    tot = [0.0] * 4
    for key in best["ctorch"]:
        ct, pt = best["ctorch"][key], best["torch"][key]
        name, op = key.split(".", 1)
        if op.endswith("+f"):  # gradient alone: subtract the forward
            f_c, f_t = best["ctorch"][name + ".fwd"], best["torch"][name + ".fwd"]
            ct, pt = [ct[0] - f_c[0], ct[1] - f_c[1]], [pt[0] - f_t[0], pt[1] - f_t[1]]
            key = name + "." + op[:-2]
        cnt = cnts[name]
        for i, v in enumerate((ct[0], pt[0], ct[1], pt[1])):
            tot[i] += cnt * v
        print(f"{key:22s} {cnt:3d} {ct[0]*1e3:8.2f} {pt[0]*1e3:8.2f} {pt[0]/max(ct[0],1e-9):6.2f} "
              f"{ct[1]*1e3:8.2f} {pt[1]*1e3:8.2f} {pt[1]/max(ct[1],1e-9):6.2f} {cnt*ct[0]*1e3:7.1f} {cnt*pt[0]*1e3:7.1f}"
              f" {cnt*ct[1]*1e3:7.1f} {cnt*pt[1]*1e3:7.1f}")
    print(f"# sum of rows x count: wall ctorch {tot[0]*1e3:.1f} ms, PyTorch {tot[1]*1e3:.1f} ms, ratio {tot[1]/tot[0]:.2f};"
          f" CPU ctorch {tot[2]*1e3:.1f} ms, PyTorch {tot[3]*1e3:.1f} ms, ratio {tot[3]/tot[2]:.2f}")


if __name__ == "__main__":
    main()
