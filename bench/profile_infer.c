/* Per-op profile of ResNet-18 224x224 eval inference (no grad), the model and input of
 * bench_models.inc.c's resnet18_224_infer rows: each kernel's wall, process CPU and calling-thread
 * CPU (exclusive of nested kernels) from the dispatch door's profiler (src/core/op_profile.c), summed
 * over the timed forwards, and the forward's wall / CPU. wrk% = share of a kernel's CPU spent off the
 * calling thread (0 at 1 thread; near 0 at 2 threads: the op did not split).
 * Build: cc -O2 -Iinclude -o build/X/profile_infer bench/profile_infer.c build/X/libctorch.a -lm -lpthread -ldl
 * Usage: profile_infer [--threads N] [--batch B] [--iters I] [--noprof 1] [--layers 1]
 * --layers 1: instead, each ResNet-18 conv shape alone (an eval Conv2d module's forward, no grad): best CPU and wall
 * per call of I calls, and x its count in the network (bench/profile_infer_torch.py: PyTorch's side). */
#include "ctorch.h"
#include "ctorch/vision.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void ct_op_profile_enable(bool on);
void ct_op_profile_reset(void);
int ct_op_profile_get(int cap, const char **names, int64_t *calls, double *wall_s, double *cpu_s, double *own_s);

static double clk(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const struct {
  const char *name;
  int64_t C, O, H, k, s, p, count;
} layers[] = {{"conv1", 3, 64, 224, 7, 2, 3, 1},       {"layer1", 64, 64, 56, 3, 1, 1, 4},
              {"layer2_0_c1", 64, 128, 56, 3, 2, 1, 1}, {"layer2_ds", 64, 128, 56, 1, 2, 0, 1},
              {"layer2", 128, 128, 28, 3, 1, 1, 3},     {"layer3_0_c1", 128, 256, 28, 3, 2, 1, 1},
              {"layer3_ds", 128, 256, 28, 1, 2, 0, 1},  {"layer3", 256, 256, 14, 3, 1, 1, 3},
              {"layer4_0_c1", 256, 512, 14, 3, 2, 1, 1}, {"layer4_ds", 256, 512, 14, 1, 2, 0, 1},
              {"layer4", 512, 512, 7, 3, 1, 1, 3}};

static int run_layers(int64_t batch, int iters) {
  ct_set_grad_enabled(false);
  double tot_c = 0, tot_w = 0;
  printf("%-12s %5s %10s %10s %12s %12s\n", "layer", "count", "CPU ms", "wall ms", "CPU ms x cnt", "wall x cnt");
  for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
    int64_t xs[4] = {batch, layers[i].C, layers[i].H, layers[i].H}, ws[4] = {layers[i].O, layers[i].C, layers[i].k, layers[i].k};
    int64_t st[2] = {layers[i].s, layers[i].s}, pd[2] = {layers[i].p, layers[i].p};
    ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL), *w = ct_randn(4, ws, ct_opts(), NULL);
    /* the layer as an eval Conv2d module (its forward lends the CPU kernel the eval weight cache) */
    ct_conv_opts o = ct_conv_defaults();
    o.stride[0] = o.stride[1] = layers[i].s;
    o.padding[0] = o.padding[1] = layers[i].p;
    o.bias = false;
    ct_module *cm = ct_conv2d_new(layers[i].C, layers[i].O, layers[i].k, layers[i].k, &o);
    ct_module_eval(cm);
    double bc = 1e30, bw = 1e30;
    for (int it = 0; it < iters + 2; it++) {
      double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
      ct_tensor *y = ct_module_forward(cm, x);
      double wt = clk(CLOCK_MONOTONIC) - w0, c = clk(CLOCK_PROCESS_CPUTIME_ID) - c0;
      if (!y) {
        fprintf(stderr, "conv failed: %s\n", ct_last_error());
        return 1;
      }
      ct_release(y);
      if (it >= 2 && c < bc) bc = c;
      if (it >= 2 && wt < bw) bw = wt;
    }
    ct_release(x);
    ct_release(w);
    ct_module_free(cm);
    (void)st, (void)pd;
    printf("%-12s %5lld %10.3f %10.3f %12.3f %12.3f\n", layers[i].name, (long long)layers[i].count, bc * 1e3, bw * 1e3,
           bc * 1e3 * layers[i].count, bw * 1e3 * layers[i].count);
    tot_c += bc * layers[i].count, tot_w += bw * layers[i].count;
  }
  printf("%-12s %5s %10s %10s %12.3f %12.3f\n", "total", "", "", "", tot_c * 1e3, tot_w * 1e3);
  return 0;
}

int main(int argc, char **argv) {
  int threads = 2, iters = 20, noprof = 0, lay = 0;
  int64_t batch = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch")) batch = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--noprof")) noprof = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--layers")) lay = atoi(argv[i + 1]);
  }
  if (threads < 1 || iters < 1 || batch < 1) {
    fprintf(stderr, "profile_infer: --threads, --batch and --iters must be positive\n");
    return 2;
  }
  ct_set_num_threads(threads);
  ct_manual_seed(0);
  if (lay) return run_layers(batch, iters);
  ct_module *m = ct_resnet18_new(1000);
  int64_t xs[4] = {batch, 3, 224, 224};
  ct_tensor *x = m ? ct_keep(ct_randn(4, xs, ct_opts(), NULL)) : NULL;
  if (!x) {
    fprintf(stderr, "profile_infer: setup failed: %s\n", ct_last_error());
    return 1;
  }
  ct_module_eval(m);
  ct_set_grad_enabled(false);
  for (int w = 0; w < 3; w++) ct_release(ct_module_forward(m, x));
  if (!noprof) ct_op_profile_enable(true);
  ct_op_profile_reset();
  double best = 1e30, sw = 0, sc = 0, bestc = 1e30;
  for (int i = 0; i < iters; i++) {
    double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
    ct_tensor *y = ct_module_forward(m, x);
    double w = clk(CLOCK_MONOTONIC) - w0, c = clk(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (!y) {
      fprintf(stderr, "forward failed: %s\n", ct_last_error());
      return 1;
    }
    ct_release(y);
    sw += w, sc += c;
    if (w < best) best = w;
    if (c < bestc) bestc = c;
  }
  printf("forward: wall mean %.2f ms (best %.2f), CPU mean %.2f ms (best %.2f), %d iters, %d threads, batch %lld\n",
         sw / iters * 1e3, best * 1e3, sc / iters * 1e3, bestc * 1e3, iters, threads, (long long)batch);
  if (noprof) return 0;
  const char *nm[256];
  int64_t calls[256];
  double wall[256], cpu[256], own[256], tw = 0, tc = 0;
  int n = ct_op_profile_get(256, nm, calls, wall, cpu, own);
  if (n > 256) n = 256;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (wall[j] > wall[i]) {
#define SW(T, a) { T t_ = a[i]; a[i] = a[j]; a[j] = t_; }
        SW(const char *, nm) SW(int64_t, calls) SW(double, wall) SW(double, cpu) SW(double, own)
      }
  printf("%-28s %7s %10s %10s %6s\n", "op", "calls/it", "wall ms/it", "CPU ms/it", "wrk%");
  for (int i = 0; i < n; i++) {
    tw += wall[i], tc += cpu[i];
    printf("%-28s %7.1f %10.3f %10.3f %5.0f%%\n", nm[i], (double)calls[i] / iters, wall[i] / iters * 1e3,
           cpu[i] / iters * 1e3, cpu[i] > 0 ? 100 * (cpu[i] - own[i]) / cpu[i] : 0);
  }
  printf("%-28s %7s %10.3f %10.3f   (outside kernels: wall %.3f ms/it)\n", "kernels total", "", tw / iters * 1e3,
         tc / iters * 1e3, (sw - tw) / iters * 1e3);
  return 0;
}
