/* Pooling micro-benchmark: the fast float32 pooling kernels (src/backend/cpu/pool_fast.h)
 * against the reference loops, alternating in one process (ct_fast_set_enabled; only pool
 * ops run here, so only their kernels change), on ResNet-18's pooling shapes at 224x224.
 * Build and run (not part of `make bench`):
 *   cc -O2 -Iinclude -Isrc bench/bench_pool.c -o build/pool/bench_pool build/pool/libctorch.so \
 *      -Wl,-rpath,$PWD/build/pool -lm && build/pool/bench_pool [batch] */
#include "ctorch.h"
#include "backend/cpu/simd/simd.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "bench_clock.h"


/* kind 0: max_pool2d 3x3 s2 p1 forward (+ backward when grad), 1: adaptive_avg_pool2d to 1x1 */
static double run(int kind, int64_t n, bool grad, int reps) {
  int64_t sh0[4] = {n, 64, 112, 112}, sh1[4] = {n, 512, 7, 7};
  ct_tensor *x = ct_randn(4, kind ? sh1 : sh0, ct_opts(), NULL);
  if (grad) ct_requires_grad_(x, true);
  int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[2] = {1, 1}, d[2] = {1, 1}, os[2] = {1, 1};
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    ct_tensor *y = kind ? ct_adaptive_avg_pool2d(x, os) : ct_max_pool2d(x, k, s, p, d, false, NULL);
    if (grad && y) { /* a contiguous output gradient, as a following layer would give */
      ct_tensor *gy = ct_ones(ct_ndim(y), ct_shape(y), ct_opts());
      ct_backward(y, gy, false, false);
      ct_release(gy);
    }
    double t = now() - t0;
    ct_release(y);
    if (t < best) best = t;
  }
  ct_release(x);
  return best;
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 1;
  const char *names[4] = {"max_pool2d 64x112x112 k3s2p1 fwd", "max_pool2d 64x112x112 k3s2p1 fwd+bwd",
                          "adaptive_avg_pool2d 512x7x7->1 fwd", "adaptive_avg_pool2d 512x7x7->1 fwd+bwd"};
  for (int c = 0; c < 4; c++) {
    double tf = 1e30, tr = 1e30;
    for (int round = 0; round < 3; round++) { /* alternate so load changes hit both */
      ct_fast_set_enabled(true);
      double a = run(c / 2, n, c % 2, 20);
      ct_fast_set_enabled(false);
      double b = run(c / 2, n, c % 2, 20);
      if (a < tf) tf = a;
      if (b < tr) tr = b;
    }
    printf("%-42s batch %lld  fast %8.3f ms  reference %8.3f ms  speedup %5.2fx\n", names[c], (long long)n, tf * 1e3,
           tr * 1e3, tr / tf);
  }
  ct_fast_set_enabled(true);
  return 0;
}
