"""PyTorch CPU peer of bench/bench_memory.c: one workload per process (--child NAME), the same models
(tests/models_ref.py's torchvision-structured ResNet-18, bench/train_gpt_ref.py's GPT-2), shapes,
optimizers and thread count. Prints the line bench_memory.c parses:
  RESULT name hwm_kb=.. rss0_kb=.. setup_kb=.. step_s=.. cpu_s=..
rss0: RSS after `import torch` (the runtime's fixed cost); setup: after the model, data and optimizer
exist; hwm: the process's peak RSS (VmHWM) after --steps steps; step_s: best step time after the first.
--trace: bytes saved for backward by grad_fn name (storages counted once, parameters excluded).
Usage: /usr/bin/python3 bench/bench_memory_torch.py --child NAME [--threads N] [--steps S] [--trace]"""
import argparse
import os
import re
import sys
import time


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--trace", action="store_true")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import torch_threads  # torch.set_num_threads + OpenBLAS's own thread count
    torch_threads.set_threads(a.threads)
    rss0 = status_kb("VmRSS")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "tests"))
    sys.path.insert(0, here)
    torch.manual_seed(0)
    name = a.child
    m = re.fullmatch(r"resnet18_cifar_train_b(\d+)", name)
    if m:
        from models_ref import ResNet
        b = int(m.group(1))
        model = ResNet(num_classes=10, cifar=True).train()
        x, y = torch.randn(b, 3, 32, 32), torch.randint(0, 10, (b,))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        fwd = lambda: F.cross_entropy(model(x), y)
    elif re.fullmatch(r"resnet18_224_infer_b(\d+)", name):
        from models_ref import ResNet
        b = int(name.rsplit("b", 1)[1])
        model = ResNet(num_classes=1000).eval()
        x = torch.randn(b, 3, 224, 224)
        opt = None
    elif re.fullmatch(r"gpt2_124m_train_b(\d+)_t(\d+)", name):
        from train_gpt_ref import GPT
        b, t = map(int, re.fullmatch(r"gpt2_124m_train_b(\d+)_t(\d+)", name).groups())
        g = torch.Generator().manual_seed(0)
        model = GPT(50257, 1024, 768, 12, 12, 0.0, g).train()
        x, y = torch.randint(0, 50257, (b, t)), torch.randint(0, 50257, (b, t))
        opt = torch.optim.AdamW(model.ordered_parameters(), lr=6e-4, weight_decay=0.1)
        fwd = lambda: model(x, y)
    else:
        sys.exit("unknown workload " + name)
    setup = status_kb("VmRSS")
    params = {p.data_ptr() for p in model.parameters()}

    def step(trace):
        if opt is None:
            with torch.no_grad():
                model(x)
            return
        if trace:
            saved = {}

            def pack(t):
                key = t.storage().data_ptr() if hasattr(t, "storage") else t.data_ptr()
                if key not in params and key not in saved:
                    saved[key] = (t.storage().nbytes() if hasattr(t.storage(), "nbytes") else t.numel() * t.element_size(),
                                  t.grad_fn.name() if t.grad_fn is not None else "(input)")
                return t
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                loss = fwd()
            tot = sum(v[0] for v in saved.values())
            print("  saved for backward: %.1f MiB in %d storages (by producer)" % (tot / 1048576, len(saved)))
            by = {}
            for nb, who in saved.values():
                by[who] = by.get(who, 0) + nb
            for who, nb in sorted(by.items(), key=lambda kv: -kv[1]):
                print("    %-28s %8.1f MiB" % (who, nb / 1048576))
        else:
            loss = fwd()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    best = best_cpu = float("inf")
    for i in range(a.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        step(a.trace and i == a.steps - 1)
        t, tc = time.perf_counter() - t0, time.process_time() - c0
        if i > 0 or a.steps == 1:
            best, best_cpu = min(best, t), min(best_cpu, tc)
    print("RESULT %s hwm_kb=%d rss0_kb=%d setup_kb=%d step_s=%.6f cpu_s=%.6f"
          % (name, status_kb("VmHWM"), rss0, setup, best, best_cpu), flush=True)


if __name__ == "__main__":
    main()
