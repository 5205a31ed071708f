/* What every WebGPU test file shares: WEBGPU_TESTS(file, what) declares the file's test counter and
 * wgpu(), which says whether a WebGPU device is usable and, the first time it is not, prints one line
 * with the number of the file's tests skipped and the reason (CT_WEBGPU_EXPECT_ABSENT: treated as not
 * usable, for the CPU-fallback child run); WEBGPU_TEST(prefix, name) defines a test prefix_name that
 * counts itself and runs its body only where wgpu() holds; SAME compares a WebGPU result with a CPU
 * reference; W moves a tensor to the WebGPU device. */
#ifndef CT_TESTS_WEBGPU_TEST_H
#define CT_TESTS_WEBGPU_TEST_H
#include "test.h"
#include "ctorch/webgpu.h"
#include <stdio.h>
#include <stdlib.h>

#define WEBGPU_TESTS(file, what)                                                                      \
  static int n_webgpu_tests;                                                                          \
  static bool wgpu(void) {                                                                            \
    static bool said;                                                                                 \
    if (getenv("CT_WEBGPU_EXPECT_ABSENT")) return false;                                              \
    if (ct_webgpu_is_available()) return true;                                                        \
    if (!said) {                                                                                      \
      printf("%s: skipping %d %s: %s\n", file, n_webgpu_tests, what, ct_webgpu_unavailable_reason()); \
      said = true;                                                                                    \
    }                                                                                                 \
    return false;                                                                                     \
  }                                                                                                   \
  static ct_tensor *W(const ct_tensor *t) { return ct_to_device(t, ct_webgpu()); }

#define WEBGPU_TEST(prefix, name)                                                            \
  static void wt_body_##name(void);                                                          \
  __attribute__((constructor)) static void wt_count_##name(void) { n_webgpu_tests++; }      \
  TEST(prefix##_##name) {                                                                    \
    if (wgpu()) wt_body_##name();                                                            \
  }                                                                                          \
  static void wt_body_##name(void)

/* The tensor helpers several files share, on a generator of the file's own seed: gen(), rnd(nd, shape)
 * (float32 normal), f64 / f32 (dtype copies), cpu (to the CPU), leaf (a detached copy requiring grad),
 * dev_view(t, cl, &leaf) (an NCHW tensor on the device, as a channels-last view when cl; leaf: the leaf under it). */
#define WEBGPU_TEST_TENSORS(seed)                                                                                  \
  __attribute__((unused)) static ct_generator *gen(void) {                                                         \
    static ct_generator *g;                                                                                        \
    if (!g) g = ct_generator_new(seed);                                                                            \
    return g;                                                                                                      \
  }                                                                                                                \
  __attribute__((unused)) static ct_tensor *rnd(int nd, const int64_t *shape) {                                    \
    return ct_randn(nd, shape, ct_opts_dtype(CT_FLOAT32), gen());                                                  \
  }                                                                                                                \
  __attribute__((unused)) static ct_tensor *f64(const ct_tensor *t) { return ct_to_dtype(t, CT_FLOAT64); }         \
  __attribute__((unused)) static ct_tensor *f32(const ct_tensor *t) { return ct_to_dtype(t, CT_FLOAT32); }         \
  __attribute__((unused)) static ct_tensor *cpu(const ct_tensor *t) { return ct_to_device(t, ct_cpu()); }          \
  __attribute__((unused)) static ct_tensor *leaf(ct_tensor *t) {                                                   \
    ct_tensor *d = ct_detach(t);                                                                                   \
    CHECK_OK(ct_requires_grad_(d, true));                                                                          \
    return d;                                                                                                      \
  }                                                                                                                \
  __attribute__((unused)) static const int64_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};             \
  __attribute__((unused)) static ct_tensor *dev_view(const ct_tensor *t, bool cl, ct_tensor **lf) {               \
    if (!cl) return *lf = leaf(W(t));                                                                              \
    *lf = leaf(W(ct_contiguous(ct_permute(t, 4, to_nhwc))));                                                       \
    return ct_permute(*lf, 4, to_nchw);                                                                            \
  }

#define SAME(what, ref, got, rtol, atol) tt_same_as_cpu(__FILE__, __LINE__, "webgpu", what, ref, got, rtol, atol)

#endif
