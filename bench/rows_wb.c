/* Write-back experiment (issue 3, session 13; not part of any build): does the 64 MiB glibc memcpy
 * that bench_ctorch's f32_16M ratios compare against leave dirty lines that the next timed call
 * pays for? Calls run in a repeated pattern of letters; an upper-case letter is timed, a lower-case
 * one is not: g = ct_gelu of a [16384, 1024] float32 tensor (non-temporal stores), m = glibc memcpy
 * of 64 MiB, r = an AVX-512 read pass over a clean 64 MiB buffer. "mR" times the read pass right
 * after a memcpy, "gR" after a gelu, "rR" after a read pass; "gGmM" is the steady-state protocol
 * of bench_ctorch (each timed call after an untimed one of its own kind), "GM" the old alternating
 * one. The memcpy buffers come from malloc as bench_ctorch's (16 bytes past a page boundary here);
 * ALIGNED_BUFS=1 takes them 64-byte aligned. Median and minimum ms over the rounds. Session 13's
 * numbers: bench/results/s13_cpu.md.
 * Build: cc -O2 -Iinclude bench/rows_wb.c build/B/libctorch.a -lm -lpthread -ldl -o build/B/rows_wb
 * Run:   build/B/rows_wb PATTERN [PATTERN...]   (e.g. rR mR gR GM gGmM), 25 rounds each */
#include "ctorch.h"
#include "bench_clock.h"
#include <immintrin.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((target("avx512f"))) static float read_pass(const float *p, size_t n) {
  __m512 a = _mm512_setzero_ps(), b = a;
  for (size_t i = 0; i < n; i += 32) {
    a = _mm512_add_ps(a, _mm512_load_ps(p + i));
    b = _mm512_add_ps(b, _mm512_load_ps(p + i + 16));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a, b));
}
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
enum { ROUNDS = 25 };

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: rows_wb PATTERN [PATTERN...]  (letters g m r; upper case = timed)\n");
    return 1;
  }
  ct_set_num_threads(1);
  int64_t shape[2] = {16384, 1024};
  size_t nb = (size_t)64 << 20;
  ct_tensor *x = ct_randn(2, shape, ct_opts(), NULL);
  bool aligned = getenv("ALIGNED_BUFS") && getenv("ALIGNED_BUFS")[0] == '1';
  char *src = aligned ? aligned_alloc(64, nb) : malloc(nb), *dst = aligned ? aligned_alloc(64, nb) : malloc(nb);
  float *clean = aligned_alloc(64, nb);
  if (!x || !src || !dst || !clean) return 1;
  memset(src, 1, nb), memset(dst, 0, nb), memset(clean, 0, nb);
  volatile float sink = 0;
  for (int a = 1; a < argc; a++) {
    const char *pat = argv[a];
    static double t[3][ROUNDS * 8];
    int cnt[3] = {0, 0, 0};
    for (int r = -1; r < ROUNDS; r++)
      for (const char *p = pat; *p; p++) {
        char c = (char)(*p | 32);
        int k = c == 'g' ? 0 : c == 'm' ? 1 : c == 'r' ? 2 : -1;
        if (k < 0) {
          fprintf(stderr, "rows_wb: unknown letter '%c'\n", *p);
          return 1;
        }
        double t0 = now();
        if (k == 0) {
          ct_tensor *y = ct_gelu(x, "none");
          if (!y) return 2;
          ct_release(y);
        } else if (k == 1) memcpy(dst, src, nb);
        else sink += read_pass(clean, nb / 4);
        double dt = now() - t0;
        if (r >= 0 && *p != c && cnt[k] < ROUNDS * 8) t[k][cnt[k]++] = dt;
      }
    printf("%-8s", pat);
    const char *nm[3] = {"gelu", "memcpy", "read"};
    for (int k = 0; k < 3; k++) {
      if (!cnt[k]) continue;
      qsort(t[k], (size_t)cnt[k], sizeof(double), cmp_dbl);
      printf("  %s med %.2f min %.2f ms", nm[k], t[k][cnt[k] / 2] * 1e3, t[k][0] * 1e3);
    }
    printf("\n");
  }
  return 0;
}
