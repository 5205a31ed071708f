/* Streaming-store experiment (issue 3, session 9; not part of any build): the 16M-float ops of
 * bench_ctorch's f32_16M ratios ([16384, 1024] float32) with their output written by non-temporal
 * stores (the library's default above 4 MiB) and by regular stores (nt_min_bytes raised past the
 * output), against glibc memcpy, an AVX-512 NT-store copy and an AVX-512 regular-store copy of the same
 * 64 MiB, at 1 or 2 threads (the copies split in halves over 2 pthreads as bench_ctorch's memcpy), all
 * interleaved in one process with the order rotating every round. Per variant: median wall and process
 * CPU time, ratio = memcpy median / variant median scaled by the traffic (add/mul move 3 floats per
 * element, the others 2).
 * Build: cc -O2 -Iinclude -Isrc bench/rows_nt.c build/rows9/libctorch.a -lm -lpthread -ldl -o build/rows9/rows_nt
 * Run:   build/rows9/rows_nt THREADS [rounds] [name,name,...]   (names: the printed ones; "_r" = regular stores) */
#include "ctorch.h"
#include "bench_clock.h"
#include "backend/cpu/simd/simd.h"
#include <immintrin.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_MEMCPY, V_NTCOPY, V_REGCOPY, V_NEG, V_ADD, V_MUL, V_EXP, V_GELU, V_GELU_T, V_SOFTMAX, V_LOGSOFTMAX, V_LN, V_OPS };
static const char *vname[V_OPS] = {"memcpy", "nt_copy", "reg_copy", "neg",     "add",         "mul",
                                   "exp",    "gelu",    "gelu_tanh", "softmax", "log_softmax", "layer_norm"};
static const double vtraffic[V_OPS] = {2, 2, 2, 2, 3, 3, 2, 2, 2, 2, 2, 2};

typedef struct {
  float *s, *d;
  size_t n;
  int kind, parts, idx;
} cp_part;
__attribute__((target("avx512f"))) static void copy_range(float *d, const float *s, size_t n, int kind) {
  if (kind == V_MEMCPY) {
    memcpy(d, s, n * 4);
    return;
  }
  size_t i = 0;
  if (kind == V_NTCOPY)
    for (; i + 32 <= n; i += 32) {
      __m512 a = _mm512_loadu_ps(s + i), b = _mm512_loadu_ps(s + i + 16);
      _mm512_stream_ps(d + i, a);
      _mm512_stream_ps(d + i + 16, b);
    }
  else
    for (; i + 32 <= n; i += 32) {
      __m512 a = _mm512_loadu_ps(s + i), b = _mm512_loadu_ps(s + i + 16);
      _mm512_store_ps(d + i, a);
      _mm512_store_ps(d + i + 16, b);
    }
  for (; i < n; i++) d[i] = s[i];
  _mm_sfence();
}
static void *cp_thread(void *p) {
  cp_part *c = p;
  size_t chunk = (c->n / (size_t)c->parts + 15) / 16 * 16, b = chunk * (size_t)c->idx;
  if (b < c->n) copy_range(c->d + b, c->s + b, b + chunk > c->n ? c->n - b : chunk, c->kind);
  return NULL;
}
static void run_copy(float *d, float *s, size_t n, int kind, int threads) {
  pthread_t th[2];
  cp_part parts[2];
  for (int i = 0; i < threads; i++) {
    parts[i] = (cp_part){s, d, n, kind, threads, i};
    if (i) pthread_create(&th[i], NULL, cp_thread, &parts[i]);
  }
  cp_thread(&parts[0]);
  for (int i = 1; i < threads; i++) pthread_join(th[i], NULL);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static bool in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0)) return true;
  return false;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1, rounds = argc > 2 ? atoi(argv[2]) : 15;
  const char *sel = argc > 3 ? argv[3] : NULL;
  if (threads < 1 || threads > 2) threads = 1;
  if (rounds < 1) rounds = 1;
  ct_set_num_threads(threads);
  ct_manual_seed(1);
  int64_t rows = 16384, cols = 1024, n = rows * cols, shape[2] = {rows, cols};
  ct_tensor *x = ct_randn(2, shape, ct_opts(), NULL), *x2 = ct_rand(2, shape, ct_opts(), NULL);
  ct_tensor *w = ct_ones(1, &cols, ct_opts()), *b = ct_zeros(1, &cols, ct_opts());
  float *s = aligned_alloc(64, (size_t)n * 4), *d = aligned_alloc(64, (size_t)n * 4);
  if (!x || !x2 || !w || !b || !s || !d) return 1;
  memset(s, 1, (size_t)n * 4), memset(d, 0, (size_t)n * 4);
  /* variants: op index * 2 + regular-store flag (copies: flag 0 only) */
  int var[2 * V_OPS], nv = 0;
  for (int op = 0; op < V_OPS; op++)
    for (int r = 0; r < (op <= V_REGCOPY ? 1 : 2); r++) {
      char nm[64];
      snprintf(nm, sizeof nm, "%s%s", vname[op], r ? "_r" : "");
      if (op == V_MEMCPY || !sel || in_list(sel, nm)) var[nv++] = op * 2 + r;
    }
  double *tw = calloc((size_t)rounds * (size_t)nv, sizeof(double)), *tc = calloc((size_t)rounds * (size_t)nv, sizeof(double));
  for (int r = -1; r < rounds; r++)
    for (int j = 0; j < nv; j++) {
      int k = (j + (r < 0 ? 0 : r)) % nv, op = var[k] / 2, reg = var[k] % 2;
      double t0 = now(), c0 = cpu_now();
      if (op <= V_REGCOPY) run_copy(d, s, (size_t)n, op, threads);
      else {
        if (reg) ct_fast_set_nt_min_bytes(INT64_MAX);
        ct_tensor *y = NULL;
        switch (op) {
          case V_NEG: y = ct_neg(x); break;
          case V_ADD: y = ct_add(x, x2); break;
          case V_MUL: y = ct_mul(x, x2); break;
          case V_EXP: y = ct_exp(x); break;
          case V_GELU: y = ct_gelu(x, "none"); break;
          case V_GELU_T: y = ct_gelu(x, "tanh"); break;
          case V_SOFTMAX: y = ct_softmax(x, -1, -1); break;
          case V_LOGSOFTMAX: y = ct_log_softmax(x, -1, -1); break;
          case V_LN: y = ct_layer_norm(x, 1, &cols, w, b, 1e-5); break;
        }
        if (reg) ct_fast_set_nt_min_bytes((int64_t)4 << 20);
        if (!y) return 2;
        ct_release(y);
      }
      double t = now() - t0, c = cpu_now() - c0;
      if (r >= 0) tw[k * rounds + r] = t, tc[k * rounds + r] = c;
    }
  for (int k = 0; k < nv; k++) {
    qsort(tw + k * rounds, (size_t)rounds, sizeof(double), cmp_dbl);
    qsort(tc + k * rounds, (size_t)rounds, sizeof(double), cmp_dbl);
  }
#define MED(t, k) (rounds % 2 ? t[(k) * rounds + rounds / 2] : 0.5 * (t[(k) * rounds + rounds / 2 - 1] + t[(k) * rounds + rounds / 2]))
  printf("rows_nt: 16M floats, %d thread(s), %d rounds rotating; median ms (min); ratio = bandwidth / memcpy's (medians)\n",
         threads, rounds);
  for (int k = 0; k < nv; k++) {
    int op = var[k] / 2;
    char nm[64];
    snprintf(nm, sizeof nm, "%s%s", vname[op], var[k] % 2 ? "_r" : "");
    double f = vtraffic[op] / 2.0;
    printf("%-14s wall %7.2f (%7.2f) ratio %5.2f   cpu %7.2f (%7.2f) ratio %5.2f\n", nm, MED(tw, k) * 1e3,
           tw[k * rounds] * 1e3, f * MED(tw, 0) / MED(tw, k), MED(tc, k) * 1e3, tc[k * rounds] * 1e3,
           f * MED(tc, 0) / MED(tc, k));
  }
  return 0;
}
