/* In-cache cost of the row / elementwise kernels of issue 3 (not part of `make bench`): ns and core
 * cycles per float of one thread with the data in L2 (32K floats in, 32K out, rows of 1024), best of
 * many batches of process CPU time, so a loaded machine disturbs it little. This is the arithmetic
 * side of the 16M-float streaming ratios of bench_ctorch (--only f32_16M): an op can reach memcpy's
 * bandwidth only if it costs less per float in cache than memcpy does streaming.
 * Build: cc -O2 -Iinclude -Isrc bench/rows_probe.c build/rows8/libctorch.a -lm -lpthread \
 *          -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lstdc++ -o build/rows8/rows_probe
 *   (the cuda flags only where the library was built with CUDA). CT_SIMD=avx2|portable caps the level.
 * `rows_probe NAME` or `rows_probe NAME1,NAME2,...` runs only those ops; `rows_probe stream [rounds] [ops]`
 * the 16M-float streaming ratios (see stream_mode); ROWS_PROBE_NO_CLOCK=1 skips the clock reading. */
#include "ctorch.h"
#include "bench_clock.h"
#include "backend/cpu/simd/simd.h"
#include <math.h>
#include <stdbool.h>
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

/* whether name is one of the comma-separated names of list */
static bool in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0)) return true;
  return false;
}

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

/* a copy with non-temporal stores (no read-for-ownership of the destination), the streaming floor of
 * an op that reads 4 and writes 4 bytes per float: compared with memcpy to tell what memcpy itself
 * does at 64 MiB (glibc 2.36 uses NT stores only above x86_non_temporal_threshold, 127 MiB here) */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx512f"))) static void nt_copy(float *d, const float *s, size_t n) {
  for (size_t i = 0; i + 32 <= n; i += 32) {
    __m512 a = _mm512_loadu_ps(s + i), b = _mm512_loadu_ps(s + i + 16);
    _mm512_stream_ps(d + i, a);
    _mm512_stream_ps(d + i + 16, b);
  }
  _mm_sfence();
}
#endif

/* `rows_probe stream [rounds] [ops]`: the 16M-float ops of bench_ctorch's f32_16M ratios ([16384, 1024],
 * 1 thread) against memcpy of the same 64 MiB and an NT-store copy, all interleaved in one process with
 * the order rotating every round, so that load from other processes and the host's clock swings hit
 * every op alike; per op the median and minimum of the wall and of the process-CPU time over the rounds,
 * as ns per float, and the ratio of medians to memcpy's (2 floats moved per element, as memcpy). ops:
 * comma-separated names (default: exp, both GELUs, softmax, log_softmax, layer_norm) */
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static int stream_mode(int rounds, const char *sel) {
  int64_t rows = 16384, cols = 1024, n = rows * cols, shape[2] = {rows, cols};
  ct_manual_seed(1);
  probe p = {0};
  p.cols = cols;
  p.x = ct_randn(2, shape, ct_opts(), NULL);
  p.w = ct_ones(1, &cols, ct_opts());
  p.b = ct_zeros(1, &cols, ct_opts());
  size_t bytes = (size_t)n * 4;
  float *s = malloc(bytes), *d = malloc(bytes);
  if (rounds < 1) rounds = 1;
  double *tw = calloc((size_t)rounds * 16, sizeof(double)), *tc = calloc((size_t)rounds * 16, sizeof(double));
  if (!p.x || !p.w || !p.b || !s || !d || !tw || !tc) return 1;
  memset(s, 1, bytes), memset(d, 0, bytes);
  int ops[16] = {-1, -2}, nops = 2;
  static const int dflt[] = {8, 0, 1, 4, 5, 6};
  for (int k = 0; k < (int)(sizeof dflt / sizeof dflt[0]); k++)
    if (!sel || in_list(sel, names[dflt[k]])) ops[nops++] = dflt[k];
  for (int r = -1; r < rounds; r++) /* round -1 warms every op's buffers */
    for (int j = 0; j < nops; j++) {
      int k = (j + (r < 0 ? 0 : r)) % nops;
      double t0 = now(), c0 = cpu_now();
      if (ops[k] == -1) memcpy(d, s, bytes);
#if defined(__x86_64__)
      else if (ops[k] == -2 && ct_simd_cpu_level() == CT_SIMD_AVX512 && ((uintptr_t)d & 63) == 0) nt_copy(d, s, (size_t)n);
#endif
      else if (ops[k] == -2) memcpy(d, s, bytes);
      else ct_release(run(&p, ops[k]));
      double t = now() - t0, c = cpu_now() - c0;
      if (r >= 0) tw[k * rounds + r] = t, tc[k * rounds + r] = c;
    }
  for (int k = 0; k < nops; k++) {
    qsort(tw + k * rounds, (size_t)rounds, sizeof(double), cmp_dbl);
    qsort(tc + k * rounds, (size_t)rounds, sizeof(double), cmp_dbl);
  }
#define MED(t, k) (rounds % 2 ? t[(k) * rounds + rounds / 2] : 0.5 * (t[(k) * rounds + rounds / 2 - 1] + t[(k) * rounds + rounds / 2]))
  printf("stream: 16M floats, 1 thread, %d rounds interleaved (order rotating), median / min ns per float,"
         " ratio = memcpy median / op median\n", rounds);
  for (int k = 0; k < nops; k++)
    printf("%-12s wall %7.4f / %7.4f ratio %5.2f   cpu %7.4f / %7.4f ratio %5.2f\n",
           ops[k] == -1 ? "memcpy" : ops[k] == -2 ? "nt_copy" : names[ops[k]], MED(tw, k) / (double)n * 1e9,
           tw[k * rounds] / (double)n * 1e9, MED(tw, 0) / MED(tw, k), MED(tc, k) / (double)n * 1e9,
           tc[k * rounds] / (double)n * 1e9, MED(tc, 0) / MED(tc, k));
#undef MED
  free(s), free(d), free(tw), free(tc);
  ct_release(p.x), ct_release(p.w), ct_release(p.b);
  return 0;
}

int main(int argc, char **argv) {
  ct_set_num_threads(1);
  if (argc > 1 && !strcmp(argv[1], "stream")) return stream_mode(argc > 2 ? atoi(argv[2]) : 15, argc > 3 ? argv[3] : NULL);
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
  double g = getenv("ROWS_PROBE_NO_CLOCK") ? 1.0 : ghz();
  if (getenv("ROWS_PROBE_NO_CLOCK")) printf("rows_probe: %s, clock not read (the cycle columns are ns), 32K floats in L2, 1 thread\n", ct_simd_level());
  else printf("rows_probe: %s, core clock %.2f GHz (dependent adds), 32K floats in L2, 1 thread\n", ct_simd_level(), g);
  const char *only = argc > 1 ? argv[1] : NULL;
  for (int op = 0; op <= 13; op++) {
    if (only && !(strchr(only, ',') ? in_list(only, names[op]) : strstr(names[op], only) != NULL)) continue;
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
