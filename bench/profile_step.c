/* Per-op profile of the ResNet-18 CIFAR training step (SGD momentum 0.9, the step of
 * bench_models.inc.c): per phase (forward+loss, zero_grad, backward, optimizer step) the phase's
 * wall and process CPU time, and inside it every kernel's wall and CPU time (exclusive of nested
 * kernels) from the dispatch door's profiler (src/core/op_profile.c). What a phase spends outside
 * kernels (autograd engine, allocation, module glue) is its wall minus its kernels' wall.
 * PyTorch's side: bench/profile_step_torch.py.
 * Build: cc -O2 -Iinclude -o build/X/profile_step bench/profile_step.c build/X/libctorch.a -lm -lpthread
 * Usage: profile_step [--threads N] [--batch B] [--steps S] */
#include "ctorch.h"
#include "ctorch/vision.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

void ct_op_profile_enable(bool on);
void ct_op_profile_reset(void);
int ct_op_profile_get(int cap, const char **names, int64_t *calls, double *wall_s, double *cpu_s, double *own_s);
int ct_op_profile_get_regions(int cap, const char **names, int64_t *calls, double *t4);

#define MAXR 256
enum { PH_FWD, PH_ZERO, PH_BWD, PH_STEP, NPH };
static const char *const ph_name[NPH] = {"fwd", "zero_grad", "bwd", "step"};

typedef struct {
  const char *name;
  int ph;
  int64_t calls;
  double wall, cpu, own;
  bool region;         /* an engine region: wall/cpu exclusive, iw/ic inclusive */
  double iw, ic;
} row;
static row rows[MAXR];
static int nrows;
static double ph_wall[NPH], ph_cpu[NPH];

static double wclk(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double cclk(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void collect(int ph, double w0, double c0, bool keep) {
  double w = wclk() - w0, c = cclk() - c0;
  const char *nm[MAXR];
  int64_t calls[MAXR];
  double wall[MAXR], cpu[MAXR], own[MAXR];
  int n = ct_op_profile_get(MAXR, nm, calls, wall, cpu, own);
  const char *rn[MAXR];
  int64_t rc[MAXR];
  double t4[4 * MAXR];
  int nr = ct_op_profile_get_regions(MAXR, rn, rc, t4);
  ct_op_profile_reset();
  if (!keep) return;
  ph_wall[ph] += w;
  ph_cpu[ph] += c;
  for (int i = 0; i < n && i < MAXR; i++) {
    int j = 0;
    while (j < nrows && !(rows[j].ph == ph && !rows[j].region && !strcmp(rows[j].name, nm[i]))) j++;
    if (j == nrows) {
      if (nrows == MAXR) continue;
      rows[nrows++] = (row){nm[i], ph, 0, 0, 0, 0, false, 0, 0};
    }
    rows[j].calls += calls[i];
    rows[j].wall += wall[i];
    rows[j].cpu += cpu[i];
    rows[j].own += own[i];
  }
  for (int i = 0; i < nr && i < MAXR; i++) {
    int j = 0;
    while (j < nrows && !(rows[j].ph == ph && rows[j].region && !strcmp(rows[j].name, rn[i]))) j++;
    if (j == nrows) {
      if (nrows == MAXR) continue;
      rows[nrows++] = (row){rn[i], ph, 0, 0, 0, 0, true, 0, 0};
    }
    rows[j].calls += rc[i];
    rows[j].iw += t4[4 * i];
    rows[j].ic += t4[4 * i + 1];
    rows[j].wall += t4[4 * i + 2];
    rows[j].cpu += t4[4 * i + 3];
  }
}

static int by_wall(const void *a, const void *b) {
  double d = ((const row *)b)->wall - ((const row *)a)->wall;
  return d > 0 ? 1 : d < 0 ? -1 : 0;
}

int main(int argc, char **argv) {
  int threads = 2, steps = 5;
  int64_t batch = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch")) batch = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
  }
  if (threads < 1 || steps < 1 || batch < 1) {
    fprintf(stderr, "profile_step: --threads, --batch and --steps must be positive\n");
    return 2;
  }
  ct_set_num_threads(threads);
  ct_manual_seed(0);
  ct_module *m = ct_resnet18_cifar_new(10);
  int64_t xs[4] = {batch, 3, 32, 32};
  ct_tensor *x = m ? ct_keep(ct_randn(4, xs, ct_opts(), NULL)) : NULL;
  ct_tensor *y = x ? ct_keep(ct_randint(0, 10, 1, &batch, NULL, NULL)) : NULL;
  ct_dict *pd = ct_dict_new();
  if (!y || !pd) {
    fprintf(stderr, "profile_step: setup failed: %s\n", ct_last_error());
    return 1;
  }
  ct_module_named_parameters(m, pd);
  int64_t np = ct_dict_len(pd);
  ct_tensor **ps = malloc(sizeof *ps * (size_t)np);
  for (int64_t i = 0; ps && i < np; i++) ps[i] = ct_dict_tensor(pd, i);
  ct_optim *opt = ps ? ct_optim_sgd(np, ps, 0.01, 0.9, 0.0) : NULL;
  free(ps);
  ct_dict_free(pd);
  if (!opt) return 1;
  ct_module_train(m, true);
  ct_op_profile_enable(true);
  double best = 1e30, sum = 0;
  long flt0 = 0;
  for (int s = 0; s < steps + 1; s++) { /* step 0: warm-up, not counted */
    bool keep = s > 0;
    if (s == 1) {
      struct rusage ru;
      getrusage(RUSAGE_SELF, &ru);
      flt0 = ru.ru_minflt;
    }
    ct_scope *sc = ct_scope_begin();
    double t0 = wclk(), w0 = t0, c0 = cclk();
    ct_tensor *out = ct_module_forward(m, x);
    ct_tensor *loss = out ? ct_cross_entropy(out, y, NULL, CT_REDUCTION_MEAN, -100, 0.0) : NULL;
    collect(PH_FWD, w0, c0, keep);
    if (!loss) return 1;
    w0 = wclk(), c0 = cclk();
    if (ct_optim_zero_grad(opt, true)) return 1;
    collect(PH_ZERO, w0, c0, keep);
    w0 = wclk(), c0 = cclk();
    if (ct_backward(loss, NULL, false, false)) return 1;
    collect(PH_BWD, w0, c0, keep);
    w0 = wclk(), c0 = cclk();
    if (ct_optim_step(opt)) return 1;
    collect(PH_STEP, w0, c0, keep);
    ct_scope_end(sc);
    double t = wclk() - t0;
    if (keep) {
      sum += t;
      if (t < best) best = t;
    }
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("minor page faults per step: %.0f; ", (double)(ru.ru_minflt - flt0) / steps);
  qsort(rows, (size_t)nrows, sizeof rows[0], by_wall);
  double tot_w = 0, tot_c = 0;
  for (int p = 0; p < NPH; p++) tot_w += ph_wall[p], tot_c += ph_cpu[p];
  printf("ctorch ResNet-18 CIFAR b%lld, %d threads, %d steps: step wall best %.2f ms, mean %.2f ms; "
         "per step: wall %.2f ms, CPU %.2f ms\n",
         (long long)batch, threads, steps, best * 1e3, sum / steps * 1e3, tot_w / steps * 1e3, tot_c / steps * 1e3);
  printf("kernels by op id (exclusive of nested kernels); [node]/engine: rows are autograd regions, exclusive\n"
         "(their kernels are counted in the kernel rows), inclusive wall in the last column; wrk%%: share of a\n"
         "kernel's process CPU spent off the calling thread (the pool's workers; ~50%% = both of 2 threads\n"
         "worked; run with CT_POOL_SPIN_US=0 so idle spinning does not count)\n");
  printf("%-10s %-34s %7s %9s %9s %6s %6s %9s\n", "phase", "op", "calls", "wall ms", "CPU ms", "CPU/w", "%wall", "wrk%|incl");
  for (int p = 0; p < NPH; p++) {
    double kw = 0, kc = 0;
    for (int i = 0; i < nrows; i++)
      if (rows[i].ph == p && !rows[i].region) kw += rows[i].wall, kc += rows[i].cpu;
    printf("%-10s %-34s %7s %9.2f %9.2f %6.2f %6.1f\n", ph_name[p], "(phase total)", "", ph_wall[p] / steps * 1e3,
           ph_cpu[p] / steps * 1e3, ph_wall[p] > 0 ? ph_cpu[p] / ph_wall[p] : 0, 100 * ph_wall[p] / tot_w);
    printf("%-10s %-34s %7s %9.2f %9.2f %6.2f %6.1f\n", ph_name[p], "(outside kernels)", "",
           (ph_wall[p] - kw) / steps * 1e3, (ph_cpu[p] - kc) / steps * 1e3,
           ph_wall[p] - kw > 0 ? (ph_cpu[p] - kc) / (ph_wall[p] - kw) : 0, 100 * (ph_wall[p] - kw) / tot_w);
    for (int i = 0; i < nrows; i++) {
      const row *r = &rows[i];
      if (r->ph != p || (r->region ? r->iw : r->wall) / tot_w < 0.001) continue;
      char nm[64];
      snprintf(nm, sizeof nm, r->region && strncmp(r->name, "engine:", 7) ? "[%s]" : "%s", r->name);
      printf("%-10s %-34s %7.1f %9.2f %9.2f %6.2f %6.1f", ph_name[p], nm, (double)r->calls / steps,
             r->wall / steps * 1e3, r->cpu / steps * 1e3, r->wall > 0 ? r->cpu / r->wall : 0, 100 * r->wall / tot_w);
      if (r->region) printf(" %9.2f", r->iw / steps * 1e3);
      else printf(" %8.0f%%", r->cpu > 0 ? 100 * (r->cpu - r->own) / r->cpu : 0);
      printf("\n");
    }
  }
  ct_optim_free(opt);
  ct_module_free(m);
  ct_release(x);
  ct_release(y);
  return 0;
}
