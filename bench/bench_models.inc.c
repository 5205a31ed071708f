/* Model benchmarks of issue 5, included by bench_main.c (they use its emit, run_torch, torch_time,
 * wanted, quick and nthreads): ResNet-18 CIFAR-shaped (3x32x32, 10 classes) training step with SGD
 * momentum 0.9 at batch 16 (and 64 unless --quick), ResNet-18 224x224 and ViT-Tiny/16 inference at
 * batch 1 (and 16 unless --quick), and the training step's peak resident memory (each side measured in a
 * child process that only runs that step). PyTorch's side is bench/bench_models_torch.py, run
 * through run_torch with the same thread count; names match it exactly. */
#include "ctorch/vision.h"
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  ct_module *m;
  ct_optim *opt;
  ct_tensor *x, *y;
  bool train;
} model_ctx;

static void run_model(void *p) {
  model_ctx *c = p;
  ct_scope *s = ct_scope_begin();
  if (c->train) {
    ct_tensor *out = ct_module_forward(c->m, c->x);
    ct_tensor *loss = out ? ct_cross_entropy(out, c->y, NULL, CT_REDUCTION_MEAN, -100, 0.0) : NULL;
    die_if_null(loss);
    if (ct_optim_zero_grad(c->opt, true) || ct_backward(loss, NULL, false, false) || ct_optim_step(c->opt))
      die_if_null(NULL);
  } else {
    bool prev = ct_set_grad_enabled(false);
    die_if_null(ct_module_forward(c->m, c->x));
    ct_set_grad_enabled(prev);
  }
  ct_scope_end(s);
}

/* The clock of the timed runs: wall time, or with CT_BENCH_CPU_TIME=1 this process's CPU time
 * (bench_models_torch.py reads the same variable), which a shared, overloaded machine disturbs far
 * less than wall time; meaningful at 1 thread (at more, waiting threads' spinning counts). */
static double model_clock(void) {
  static int cpu = -1;
  if (cpu < 0) cpu = getenv("CT_BENCH_CPU_TIME") && strcmp(getenv("CT_BENCH_CPU_TIME"), "0") ? 1 : 0;
  if (!cpu) return now();
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Best of up to reps runs after one warm-up, within budget seconds (at least one timed run: a
 * slow model may take seconds per run). */
static double time_model(model_ctx *c, int reps, double budget) {
  run_model(c);
  double best = 1e30, start = now();
  for (int r = 0; r < reps; r++) {
    double t0 = model_clock();
    run_model(c);
    double t = model_clock() - t0;
    if (t < best) best = t;
    if (now() - start > budget) break;
  }
  return best;
}

/* kind 0: ResNet-18 CIFAR train step, 1: ResNet-18 224 inference, 2: ViT-Tiny/16 inference */
static bool model_setup(model_ctx *c, int kind, int64_t batch) {
  memset(c, 0, sizeof *c);
  ct_manual_seed(0);
  ct_vit_config vc = ct_vit_config_tiny16(1000);
  c->m = kind == 0 ? ct_resnet18_cifar_new(10) : kind == 1 ? ct_resnet18_new(1000) : ct_vit_new(&vc);
  if (!c->m) return false;
  int64_t hw = kind == 0 ? 32 : 224, xs[4] = {batch, 3, hw, hw};
  c->x = ct_keep(ct_randn(4, xs, ct_opts(), NULL));
  c->train = kind == 0;
  if (c->train) {
    c->y = ct_keep(ct_randint(0, 10, 1, &batch, NULL, NULL));
    ct_dict *pd = ct_dict_new();
    ct_module_named_parameters(c->m, pd);
    int64_t np = ct_dict_len(pd);
    ct_tensor **ps = malloc(sizeof *ps * (size_t)np);
    for (int64_t i = 0; ps && i < np; i++) ps[i] = ct_dict_tensor(pd, i);
    c->opt = ps ? ct_optim_sgd(np, ps, 0.01, 0.9, 0.0) : NULL;
    free(ps);
    ct_dict_free(pd);
    ct_module_train(c->m, true);
  } else ct_module_eval(c->m);
  return c->x && (!c->train || (c->y && c->opt));
}

static void model_teardown(model_ctx *c) {
  ct_optim_free(c->opt);
  ct_module_free(c->m);
  ct_release(c->x);
  ct_release(c->y);
}

/* Peak RSS (KiB) of a child process that sets up and runs `steps` training steps at batch `batch`:
 * this program run again (fork alone would copy a process whose thread pool is already running)
 * with CT_BENCH_RSS_CHILD=batch, caught by rss_child_main before main. */
static long train_peak_rss_kb(int64_t batch, int steps) {
  char exe[4096], val[32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = 0;
  snprintf(val, sizeof val, "%lld:%d", (long long)batch, steps);
  fflush(stdout);
  setenv("CT_BENCH_RSS_CHILD", val, 1); /* in the parent: the child may only exec (other threads exist) */
  pid_t pid = fork();
  if (pid == 0) {
    execl(exe, exe, (char *)NULL);
    _exit(127);
  }
  unsetenv("CT_BENCH_RSS_CHILD");
  if (pid < 0) return -1;
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) return -1;
  return ru.ru_maxrss;
}

__attribute__((constructor)) static void rss_child_main(void) {
  const char *v = getenv("CT_BENCH_RSS_CHILD");
  long long batch;
  int steps;
  if (!v || sscanf(v, "%lld:%d", &batch, &steps) != 2) return;
  const char *th = getenv("CT_BENCH_RSS_THREADS");
  if (th) ct_set_num_threads(atoi(th));
  model_ctx c;
  if (!model_setup(&c, 0, batch)) _exit(1);
  for (int i = 0; i < steps; i++) run_model(&c);
  _exit(0);
}

static void bench_models(int threads) {
  static const struct {
    int kind;
    int64_t batch;
    bool full_only;
    const char *tag;
  } items[] = {
      {0, 16, false, "resnet18_cifar_train_sgd_b16"}, {0, 64, true, "resnet18_cifar_train_sgd_b64"},
      {1, 1, false, "resnet18_224_infer_b1"},         {1, 16, true, "resnet18_224_infer_b16"},
      {2, 1, false, "vit_tiny16_infer_b1"},           {2, 16, true, "vit_tiny16_infer_b16"},
  };
  ct_set_num_threads(threads);
  for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
    char name[96];
    snprintf(name, sizeof name, "%s_t%d", items[i].tag, threads);
    if (!wanted(name) || (quick && items[i].full_only)) continue;
    model_ctx c;
    if (!model_setup(&c, items[i].kind, items[i].batch)) {
      printf("%s: setup failed: %s\n", name, ct_last_error());
      model_teardown(&c);
      continue;
    }
    double ours = time_model(&c, quick ? 2 : 5, quick ? 5.0 : 20.0);
    model_teardown(&c);
    double peer = torch_time(name);
    if (peer > 0) emit(name, ours, peer, "pytorch", "s", false, NULL);
    else printf("%-40s ours %9.3f ms (no PyTorch peer)\n", name, ours * 1e3);
  }
  /* peak resident memory of the training step (3 steps at batch 16, in a child process) */
  char name[96];
  snprintf(name, sizeof name, "resnet18_cifar_train_sgd_b16_peak_rss_t%d", threads);
  if (wanted(name)) {
    char tv[16];
    snprintf(tv, sizeof tv, "%d", threads);
    setenv("CT_BENCH_RSS_THREADS", tv, 1);
    long kb = train_peak_rss_kb(16, 3);
    double peer = torch_time(name); /* bench_models_torch.py prints KiB in place of seconds */
    if (kb > 0 && peer > 0) emit(name, (double)kb, peer, "pytorch", "KiB", false, NULL);
    else if (kb > 0) printf("%-40s ours %ld KiB (no PyTorch peer)\n", name, kb);
  }
}
