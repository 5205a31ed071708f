/* Prefetch / store-kind experiment for streamed elementwise loops (issue 3, session 9; not part of any
 * build). One 16M-float map y = f(x) (f = C chained FMAs per vector, a stand-in for an op's arithmetic)
 * in variants of software prefetch (none; nta / t0 / t1 / t2 at D bytes ahead) and store kind (NT or
 * regular), against glibc memcpy of the same 64 MiB, all interleaved in one process (order rotating
 * every round); 1 thread. Median wall / CPU ms, ratio = memcpy median / variant median.
 * Build: cc -O2 -march=native -Ibench bench/rows_pf.c -o build/rows9/rows_pf
 * Run:   build/rows9/rows_pf [rounds] [C] */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_clock.h"

#define N (16 << 20)
static float *X, *Y, *S, *D;
static int C = 0;

#define BODY(PF, STORE)                                                       \
  for (size_t i = 0; i < N; i += 32) {                                        \
    PF;                                                                       \
    __m512 a = _mm512_load_ps(X + i), b = _mm512_load_ps(X + i + 16);         \
    for (int c = 0; c < C; c++) {                                             \
      a = _mm512_fmadd_ps(a, k1, k2);                                         \
      b = _mm512_fmadd_ps(b, k1, k2);                                         \
    }                                                                         \
    STORE(Y + i, a);                                                          \
    STORE(Y + i + 16, b);                                                     \
  }

#define VAR(name, PF, STORE)                                                  \
  static void name(size_t dist) {                                             \
    (void)dist;                                                               \
    const __m512 k1 = _mm512_set1_ps(1.0000001f), k2 = _mm512_set1_ps(1e-9f); \
    BODY(PF, STORE)                                                           \
    _mm_sfence();                                                             \
  }
#define PF_NONE (void)0
#define PF_(h) _mm_prefetch((const char *)(X + i) + dist, h)
VAR(nt_none, PF_NONE, _mm512_stream_ps)
VAR(nt_nta, PF_(_MM_HINT_NTA), _mm512_stream_ps)
VAR(nt_t0, PF_(_MM_HINT_T0), _mm512_stream_ps)
VAR(nt_t1, PF_(_MM_HINT_T1), _mm512_stream_ps)
VAR(nt_t2, PF_(_MM_HINT_T2), _mm512_stream_ps)
VAR(st_none, PF_NONE, _mm512_store_ps)
VAR(st_nta, PF_(_MM_HINT_NTA), _mm512_store_ps)
VAR(st_t0, PF_(_MM_HINT_T0), _mm512_store_ps)
VAR(st_t2, PF_(_MM_HINT_T2), _mm512_store_ps)

typedef struct {
  const char *name;
  void (*fn)(size_t);
  size_t dist;
} var;
static const var V[] = {
    {"memcpy", NULL, 0},        {"nt_none", nt_none, 0},    {"nt_nta_4k", nt_nta, 4096}, {"nt_t0_4k", nt_t0, 4096},
    {"nt_t0_8k", nt_t0, 8192},  {"nt_t1_1k", nt_t1, 1024},  {"nt_t1_2k", nt_t1, 2048},   {"nt_t1_4k", nt_t1, 4096},
    {"nt_t1_8k", nt_t1, 8192},  {"nt_t1_16k", nt_t1, 16384}, {"nt_t2_4k", nt_t2, 4096},  {"nt_t2_16k", nt_t2, 16384},
    {"st_none", st_none, 0},    {"st_nta_4k", st_nta, 4096}, {"st_t0_4k", st_t0, 4096},  {"st_t2_16k", st_t2, 16384},
};
#define NV ((int)(sizeof V / sizeof V[0]))

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 11;
  C = argc > 2 ? atoi(argv[2]) : 0;
  X = aligned_alloc(64, N * 4), Y = aligned_alloc(64, N * 4), S = aligned_alloc(64, N * 4), D = aligned_alloc(64, N * 4);
  for (size_t i = 0; i < N; i++) X[i] = (float)(i % 1000) * 1e-3f;
  memset(Y, 0, N * 4), memset(S, 1, N * 4), memset(D, 0, N * 4);
  static double tw[NV][64], tc[NV][64];
  if (rounds > 64) rounds = 64;
  for (int r = -1; r < rounds; r++)
    for (int j = 0; j < NV; j++) {
      int k = (j + (r < 0 ? 0 : r)) % NV;
      double t0 = now(), c0 = cpu_now();
      if (!V[k].fn) memcpy(D, S, N * 4);
      else V[k].fn(V[k].dist);
      double t = now() - t0, c = cpu_now() - c0;
      if (r >= 0) tw[k][r] = t, tc[k][r] = c;
    }
  for (int k = 0; k < NV; k++) qsort(tw[k], (size_t)rounds, sizeof(double), cmp_dbl), qsort(tc[k], (size_t)rounds, sizeof(double), cmp_dbl);
  printf("rows_pf: 16M floats, %d FMAs per vector, %d rounds; median ms (min), ratio = memcpy / variant\n", C, rounds);
  for (int k = 0; k < NV; k++)
    printf("%-10s wall %6.2f (%6.2f) %5.2f   cpu %6.2f (%6.2f) %5.2f\n", V[k].name, tw[k][rounds / 2] * 1e3, tw[k][0] * 1e3,
           tw[0][rounds / 2] / tw[k][rounds / 2], tc[k][rounds / 2] * 1e3, tc[k][0] * 1e3, tc[0][rounds / 2] / tc[k][rounds / 2]);
  return 0;
}
