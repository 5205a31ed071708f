/* Peak resident memory of model steps: ctorch vs PyTorch 1.13 CPU, each workload in its own process
 * (this program run again with --child, and bench/bench_memory_torch.py --child), same thread
 * count, same shapes and optimizer. Each child sets up the model, runs --steps steps (the first is a
 * warm-up for the timing) and reports its peak RSS (VmHWM; ru_maxrss agrees), its RSS before any
 * model was built (the runtime: libraries, interpreter, thread pool), its RSS after setup, and the
 * best step time. "step delta" = peak - RSS after setup: what the step itself costs on top of the
 * model, which is the part the two runtimes can be compared on without their fixed cost.
 * Workloads (names are shared with the Python side):
 *   resnet18_cifar_train_b16/_b64  ResNet-18 CIFAR variant (3x32x32, 10 classes), SGD lr 0.01 momentum 0.9
 *   resnet18_224_infer_b16         ResNet-18 224x224, eval mode, no grad
 *   gpt2_124m_train_b4_t256        GPT-2 124M shape (V 50257, C 768, 12 layers, dropout 0), AdamW
 * --trace (ctorch child only): allocator bytes and RSS after each phase of each step, and the bytes
 * saved for backward by node name (storages counted once, parameters excluded), walked from the loss.
 * Build: cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -o BUILD/bench_memory bench/bench_memory.c \
 *          BUILD/libctorch.a -lm -lpthread
 *   (a library built with CUDA also needs -ldl -lrt -lstdc++ -L/usr/local/cuda/lib64 -lcudart_static)
 * Usage: bench_memory [--threads N] [--steps S] [--only SUBSTR] [--no-torch] [--trace]
 *   (default: the three ResNet workloads; GPT-2 (~3.7 GB per side) only when --only selects it)
 * CT_BENCH_PYTHON names the Python with torch (default /usr/bin/python3). */
#include "ctorch.h"
#include "ctorch/models.h"
#include "ctorch/vision.h"
#include "core/internal.h"
#include "autograd/autograd.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench_clock.h"
#include "bench_child.h"

static const char *const WORKLOADS[] = {"resnet18_cifar_train_b16", "resnet18_cifar_train_b64",
                                        "resnet18_224_infer_b16", "gpt2_124m_train_b4_t256"};
#define N_WORKLOADS (int)(sizeof WORKLOADS / sizeof WORKLOADS[0])



static void die(const char *what) {
  fprintf(stderr, "bench_memory: %s: %s\n", what, ct_last_error());
  exit(1);
}

/* ---- the ctorch child ---- */
typedef struct {
  int kind; /* 0 resnet train, 1 resnet infer, 2 gpt train */
  ct_module *m;
  ct_gpt *gpt;
  ct_optim *opt;
  ct_tensor *x, *y;
} work;

static ct_optim *optim_over(const ct_dict *pd, bool adamw) {
  int64_t np = ct_dict_len(pd);
  ct_tensor **ps = malloc(sizeof *ps * (size_t)np);
  if (!ps) return NULL;
  for (int64_t i = 0; i < np; i++) ps[i] = ct_dict_tensor(pd, i);
  ct_optim *o = adamw ? ct_optim_adamw(np, ps, 6e-4, 0.1) : ct_optim_sgd(np, ps, 0.01, 0.9, 0.0);
  free(ps);
  return o;
}

static void setup(work *w, const char *name) {
  memset(w, 0, sizeof *w);
  ct_manual_seed(0);
  if (!strncmp(name, "resnet18_cifar_train_b", 22)) {
    int64_t b = atoll(name + 22), xs[4] = {b, 3, 32, 32};
    w->kind = 0;
    if (!(w->m = ct_resnet18_cifar_new(10))) die("resnet");
    w->x = ct_keep(ct_randn(4, xs, ct_opts(), NULL));
    w->y = ct_keep(ct_randint(0, 10, 1, &b, NULL, NULL));
    ct_dict *pd = ct_dict_new();
    ct_module_named_parameters(w->m, pd);
    w->opt = optim_over(pd, false);
    ct_dict_free(pd);
    ct_module_train(w->m, true);
  } else if (!strncmp(name, "resnet18_224_infer_b", 20)) {
    int64_t b = atoll(name + 20), xs[4] = {b, 3, 224, 224};
    w->kind = 1;
    if (!(w->m = ct_resnet18_new(1000))) die("resnet");
    w->x = ct_keep(ct_randn(4, xs, ct_opts(), NULL));
    ct_module_eval(w->m);
  } else if (!strncmp(name, "gpt2_124m_train_b", 17)) {
    long long b = 0, t = 0;
    if (sscanf(name + 17, "%lld_t%lld", &b, &t) != 2) die("workload name");
    w->kind = 2;
    ct_gpt_config c = ct_gpt_config_gpt2();
    c.dropout = 0.0;
    if (!(w->gpt = ct_gpt_new(&c, NULL))) die("gpt");
    int64_t xs[2] = {b, t};
    w->x = ct_keep(ct_randint(0, c.vocab_size, 2, xs, NULL, NULL));
    w->y = ct_keep(ct_randint(0, c.vocab_size, 2, xs, NULL, NULL));
    w->opt = optim_over(ct_gpt_parameters(w->gpt), true);
  } else {
    fprintf(stderr, "bench_memory: unknown workload %s\n", name);
    exit(2);
  }
  if (!w->x || (w->kind != 1 && (!w->y || !w->opt))) die("setup");
}

/* ---- trace: saved-for-backward bytes by node name ---- */
typedef struct {
  const void **seen;
  size_t n, cap;
} ptrset;
static bool ptrset_add(ptrset *s, const void *p) {
  for (size_t i = 0; i < s->n; i++)
    if (s->seen[i] == p) return false;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->seen = realloc(s->seen, s->cap * sizeof *s->seen);
    if (!s->seen) exit(1);
  }
  s->seen[s->n++] = p;
  return true;
}
typedef struct {
  const char *name;
  int64_t bytes, count;
} tally;
static void tally_add(tally *t, int *nt, const char *name, int64_t bytes) {
  for (int i = 0; i < *nt; i++)
    if (!strcmp(t[i].name, name)) {
      t[i].bytes += bytes;
      t[i].count++;
      return;
    }
  if (*nt < 64) t[(*nt)++] = (tally){name, bytes, 1};
}

static void trace_saved(const ct_tensor *loss) {
  ptrset nodes = {0}, stor = {0};
  tally t[64];
  int nt = 0;
  ct_node **stack = malloc(sizeof *stack * 65536);
  int sp = 0;
  int64_t total = 0;
  if (loss->grad_fn) stack[sp++] = loss->grad_fn;
  while (sp > 0) {
    ct_node *n = stack[--sp];
    if (!ptrset_add(&nodes, n)) continue;
    ct_saved *sv[CT_MAX_OP_IN + CT_MAX_OP_OUT];
    int ns = 0;
    for (int i = 0; i < n->n_in; i++) sv[ns++] = &n->saved_in[i];
    for (int j = 0; j < n->n_out; j++) sv[ns++] = &n->saved_out[j];
    for (int k = 0; k < ns; k++) {
      ct_tensor *s = sv[k]->t;
      if (!s || !s->storage || sv[k]->leaf) continue; /* leaves: parameters and inputs, not activations */
      if (!ptrset_add(&stor, s->storage)) continue;
      tally_add(t, &nt, ct_node_name(n), (int64_t)s->storage->nbytes);
      total += (int64_t)s->storage->nbytes;
    }
    for (int i = 0; i < n->n_in; i++)
      if (n->next[i].fn && sp < 65536) stack[sp++] = n->next[i].fn;
  }
  printf("  saved for backward: %.1f MiB in %zu storages over %zu nodes (first node holding each storage):\n",
         total / 1048576.0, stor.n, nodes.n);
  for (int i = 0; i < nt; i++)
    for (int j = i + 1; j < nt; j++)
      if (t[j].bytes > t[i].bytes) {
        tally x = t[i];
        t[i] = t[j];
        t[j] = x;
      }
  for (int i = 0; i < nt; i++)
    printf("    %-28s %8.1f MiB  %4lld storages\n", t[i].name, t[i].bytes / 1048576.0, (long long)t[i].count);
  free(stack);
  free(nodes.seen);
  free(stor.seen);
}

static void trace_point(bool on, const char *what) {
  if (!on) return;
  ct_memory_stats s = ct_memory_get_stats(ct_cpu());
  /* system allocations so far: a count that stops growing means every later request was served from the cache */
  printf("  %-14s allocated %7.1f MiB  cached %7.1f MiB  alloc-peak %7.1f MiB  RSS %7.1f MiB  HWM %7.1f MiB  "
         "system allocs %lld\n", what, s.allocated_bytes / 1048576.0, s.cached_bytes / 1048576.0,
         s.peak_allocated_bytes / 1048576.0, status_kb("VmRSS") / 1024.0, status_kb("VmHWM") / 1024.0,
         (long long)s.n_allocs);
}

static void step(work *w, bool trace, bool trace_graph) {
  ct_scope *s = ct_scope_begin();
  if (w->kind == 1) {
    bool prev = ct_set_grad_enabled(false);
    if (!ct_module_forward(w->m, w->x)) die("forward");
    ct_set_grad_enabled(prev);
    trace_point(trace, "forward");
  } else {
    ct_tensor *loss = NULL;
    if (w->kind == 0) {
      ct_tensor *out = ct_module_forward(w->m, w->x);
      loss = out ? ct_cross_entropy(out, w->y, NULL, CT_REDUCTION_MEAN, -100, 0.0) : NULL;
    } else if (ct_gpt_forward(w->gpt, w->x, w->y, true, NULL, NULL, &loss) != CT_OK)
      loss = NULL;
    if (!loss) die("forward");
    trace_point(trace, "forward");
    if (trace_graph) trace_saved(loss);
    if (ct_optim_zero_grad(w->opt, true) || ct_backward(loss, NULL, false, false)) die("backward");
    trace_point(trace, "backward");
    if (ct_optim_step(w->opt)) die("step");
    trace_point(trace, "optim step");
  }
  ct_scope_end(s);
  trace_point(trace, "scope end");
}

static int child_main(const char *name, int steps, bool trace) {
  long rss0 = status_kb("VmRSS");
  work w;
  setup(&w, name);
  long rss_setup = status_kb("VmRSS");
  trace_point(trace, "setup");
  double best = 1e30, best_cpu = 1e30;
  for (int i = 0; i < steps; i++) {
    if (trace) printf(" step %d\n", i);
    double t0 = now(), c0 = cpu_now();
    step(&w, trace, trace && i == steps - 1);
    double t = now() - t0, tc = cpu_now() - c0;
    if (i > 0 || steps == 1) {
      if (t < best) best = t;
      if (tc < best_cpu) best_cpu = tc;
    }
  }
  ct_memory_stats ms = ct_memory_get_stats(ct_cpu());
  /* one machine-readable line, the same fields as bench_memory_torch.py's */
  printf("RESULT %s hwm_kb=%ld rss0_kb=%ld setup_kb=%ld step_s=%.6f cpu_s=%.6f alloc_peak_kb=%lld cached_kb=%lld\n",
         name, status_kb("VmHWM"), rss0, rss_setup, best, best_cpu, (long long)(ms.peak_allocated_bytes / 1024),
         (long long)(ms.cached_bytes / 1024));
  fflush(stdout);
  return 0;
}

/* ---- the parent ---- */
typedef struct {
  bool ok;
  long hwm, rss0, setup;
  double step_s, cpu_s;
} result;

static result parse(const bench_child *c) {
  result r = {0};
  r.ok = c->ok && sscanf(c->fields, "hwm_kb=%ld rss0_kb=%ld setup_kb=%ld step_s=%lf cpu_s=%lf", &r.hwm, &r.rss0,
                         &r.setup, &r.step_s, &r.cpu_s) == 5;
  return r;
}

int main(int argc, char **argv) {
  int threads = 2, steps = 3;
  const char *only = NULL, *child = NULL;
  bool torch = true, trace = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--child") && i + 1 < argc) child = argv[++i];
    else if (!strcmp(argv[i], "--no-torch")) torch = false;
    else if (!strcmp(argv[i], "--trace")) trace = true;
    else {
      fprintf(stderr, "usage: %s [--threads N] [--steps S] [--only SUBSTR] [--no-torch] [--trace]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1 || steps < 1) {
    fprintf(stderr, "bench_memory: --threads and --steps must be positive\n");
    return 2;
  }
  if (child) {
    ct_set_num_threads(threads);
    return child_main(child, steps, trace);
  }
  printf("peak RSS per workload, each side in its own process, %d thread(s), %d steps (best step time after the "
         "first)\n", threads, steps);
  printf("%-26s %-8s %9s %9s %9s %10s %9s %9s\n", "workload", "side", "peak MiB", "base MiB", "setup MiB",
         "step d MiB", "step ms", "cpu ms");
  for (int i = 0; i < N_WORKLOADS; i++) {
    const char *name = WORKLOADS[i];
    if (only ? !strstr(name, only) : !strncmp(name, "gpt2", 4)) continue; /* GPT-2 only when asked for */
    char args[128];
    snprintf(args, sizeof args, "--threads %d --steps %d", threads, steps);
    bench_child c[2];
    if (!bench_child_pair("bench/bench_memory_torch.py", name, threads, args, trace ? " --trace" : "", torch, trace, c))
      return 1;
    result r[2] = {parse(&c[0]), parse(&c[1])};
    for (int k = 0; k < (torch ? 2 : 1); k++) {
      if (!r[k].ok) {
        printf("%-26s %-8s failed\n", name, k ? "pytorch" : "ctorch");
        continue;
      }
      printf("%-26s %-8s %9.1f %9.1f %9.1f %10.1f %9.1f %9.1f\n", name, k ? "pytorch" : "ctorch", r[k].hwm / 1024.0,
             r[k].rss0 / 1024.0, r[k].setup / 1024.0, (r[k].hwm - r[k].setup) / 1024.0, r[k].step_s * 1e3,
             r[k].cpu_s * 1e3);
    }
    if (r[0].ok && r[1].ok)
      printf("%-26s ratio    peak %.3f (ctorch / PyTorch, <= 1 meets the target), step delta %.3f; step time %.3f, "
             "CPU time %.3f (PyTorch / ctorch)\n", name, (double)r[0].hwm / (double)r[1].hwm,
             (double)(r[0].hwm - r[0].setup) / (double)(r[1].hwm - r[1].setup), r[1].step_s / r[0].step_s,
             r[1].cpu_s / r[0].cpu_s);
    fflush(stdout);
  }
  return 0;
}
