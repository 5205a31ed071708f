/* In-cache cost of the row / elementwise kernels of issue 3 (not part of `make bench`): ns and core
 * cycles per float of one thread with the data in L2 (32K floats in, 32K out, rows of 1024), best of
 * many batches of process CPU time, so a loaded machine disturbs it little. This is the arithmetic
 * side of the 16M-float streaming ratios of bench_ctorch (--only f32_16M): an op can reach memcpy's
 * bandwidth only if it costs less per float in cache than memcpy does streaming.
 * Build: cc -O2 -Iinclude -Isrc bench/rows_probe.c build/rows/libctorch.a -lm -lpthread \
 *          -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lstdc++ -o build/rows/rows_probe
 *   (the cuda flags only where the library was built with CUDA). CT_SIMD=avx2|portable caps the level. */
#include "ctorch.h"
#include "bench_clock.h"
#include "backend/cpu/simd/simd.h"
#include <math.h>
#include <stdint.h>

typedef struct {
  ct_tensor *x, *xfar, *w, *b;
  int64_t cols;
  float *src, *dst;
  size_t bytes;
} probe;

static ct_tensor *run(probe *p, int op) {
  switch (op) {
    case 0: return ct_gelu(p->x, "none");
    case 1: return ct_gelu(p->x, "tanh");
    case 2: return ct_gelu(p->xfar, "none");
    case 3: return ct_gelu(p->xfar, "tanh");
    case 4: return ct_softmax(p->x, -1, -1);
    case 5: return ct_log_softmax(p->x, -1, -1);
    case 6: return ct_layer_norm(p->x, 1, &p->cols, p->w, p->b, 1e-5);
    case 7: return ct_max(p->x);
    case 8: return ct_exp(p->x);
    case 9: return ct_sigmoid(p->x);
    case 10: return ct_add(p->x, p->x);
    case 11: case 12: case 13: { /* the streamed-output (NT store) kernels that 16M floats take */
      ct_fast_set_nt_min_bytes(0);
      ct_tensor *r = op == 11 ? ct_softmax(p->x, -1, -1) : op == 12 ? ct_log_softmax(p->x, -1, -1)
                                                          : ct_layer_norm(p->x, 1, &p->cols, p->w, p->b, 1e-5);
      ct_fast_set_nt_min_bytes((int64_t)4 << 20);
      return r;
    }
    default: return NULL;
  }
}
static const char *names[] = {"gelu_erf", "gelu_tanh", "gelu_erf_far", "gelu_tanh_far", "softmax",
                              "log_softmax", "layer_norm", "max", "exp", "sigmoid", "add", "softmax_nt",
                              "log_softmax_nt", "layer_norm_nt"};

/* core clock: a chain of dependent adds, one per cycle */
static double ghz(void) {
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    uint64_t v = 0;
    double t0 = cpu_now();
    for (long i = 0; i < 200000000L; i++) __asm__ volatile("add $1, %0" : "+r"(v));
    double t = cpu_now() - t0;
    if (t < best) best = t;
  }
  return 200000000.0 / best / 1e9 * 1.0;
}

int main(int argc, char **argv) {
  ct_set_num_threads(1);
  int64_t n = 32768, cols = 1024, shape[2] = {n / cols, cols};
  probe p = {0};
  p.cols = cols;
  ct_manual_seed(1);
  p.x = ct_randn(2, shape, ct_opts(), NULL);
  float *far = malloc(sizeof(float) * (size_t)n);
  ct_copy_to_buffer(p.x, far, CT_FLOAT32, n);
  for (int64_t i = 0; i < n; i += 16) far[i + (i / 16) % 16] = (i / 16) % 2 ? 5.0f : -5.0f; /* one far lane per vector */
  p.xfar = ct_from_buffer(far, CT_FLOAT32, 2, shape, ct_opts());
  p.w = ct_ones(1, &cols, ct_opts());
  p.b = ct_zeros(1, &cols, ct_opts());
  double g = ghz();
  printf("rows_probe: %s, core clock %.2f GHz (dependent adds), 32K floats in L2, 1 thread\n", ct_simd_level(), g);
  const char *only = argc > 1 ? argv[1] : NULL;
  for (int op = 0; op <= 13; op++) {
    if (only && !strstr(names[op], only)) continue;
    double best = 1e30;
    for (int b = 0; b < 40; b++) {
      double t0 = cpu_now();
      for (int r = 0; r < 50; r++) ct_release(run(&p, op));
      double t = (cpu_now() - t0) / 50;
      if (t < best) best = t;
    }
    double ns = best / (double)n * 1e9;
    printf("%-14s %7.4f ns/float  %6.3f cycles/float  %6.2f cycles per 16 floats\n", names[op], ns, ns * g, ns * g * 16);
  }
  /* memcpy of 16M floats (streaming, 1 thread): the peer of the 16M ratios, per float moved */
  size_t bytes = (size_t)16 << 22;
  float *s = malloc(bytes), *d = malloc(bytes);
  memset(s, 1, bytes), memset(d, 0, bytes);
  double best = 1e30;
  for (int r = 0; r < 8; r++) {
    double t0 = now();
    memcpy(d, s, bytes);
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("%-14s %7.4f ns/float  (16M floats streamed, wall, best of 8: %.1f GB/s)\n", "memcpy_16M", best / (double)(bytes / 4) * 1e9,
         2.0 * (double)bytes / best / 1e9);
  free(s), free(d), free(far);
  ct_release(p.x), ct_release(p.xfar), ct_release(p.w), ct_release(p.b);
  return 0;
}
