/* A tiny test framework: TEST(name) { ... } registers a test; CHECK* record
 * failures and keep going; the runner ends with "N passed, M failed". */
#ifndef CT_TEST_H
#define CT_TEST_H
#include "ctorch.h"
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef void (*ct_test_fn)(void);
void ct_test_register(const char *name, const char *file, ct_test_fn fn);
extern int ct_test_failures; /* failures in the current test */
void ct_test_fail(const char *file, int line, const char *fmt, ...);

#define TEST(name)                                                         \
  static void test_##name(void);                                           \
  __attribute__((constructor)) static void register_##name(void) {         \
    ct_test_register(#name, __FILE__, test_##name);                        \
  }                                                                        \
  static void test_##name(void)

/* Tests that need a CUDA GPU: a file declares its group once, CT_GPU_GROUP(tag), then each test with
 * CT_GPU_TEST(tag, name) { ... }, registered as tag_name. Without a GPU the group's tests pass as
 * skipped, and the first of them prints "test_tag: skipping N GPU test(s): <reason>". */
#define CT_GPU_GROUP(tag)                                                                               \
  static int tag##_gpu_n;                                                                               \
  static bool tag##_gpu(void) {                                                                         \
    static bool said;                                                                                   \
    if (ct_cuda_is_available()) return true;                                                            \
    if (!said) {                                                                                        \
      printf("test_%s: skipping %d GPU test(s): %s\n", #tag, tag##_gpu_n, ct_cuda_unavailable_reason()); \
      said = true;                                                                                      \
    }                                                                                                   \
    return false;                                                                                       \
  }
#define CT_GPU_TEST(tag, name)                                                             \
  static void tag##_body_##name(void);                                                     \
  __attribute__((constructor)) static void tag##_count_##name(void) { tag##_gpu_n++; }     \
  TEST(tag##_##name) {                                                                     \
    if (tag##_gpu()) tag##_body_##name();                                                  \
  }                                                                                        \
  static void tag##_body_##name(void)

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) ct_test_fail(__FILE__, __LINE__, "CHECK(%s) failed (last error: %s)", #cond, ct_last_error()); \
  } while (0)
#define CHECK_OK(expr)                                                     \
  do {                                                                     \
    ct_status _s = (expr);                                                 \
    if (_s != CT_OK) ct_test_fail(__FILE__, __LINE__, "%s returned %d: %s", #expr, (int)_s, ct_last_error()); \
  } while (0)
/* expr must fail (NULL or non-OK) with a message containing substr */
#define CHECK_ERR_PTR(expr, substr)                                        \
  do {                                                                     \
    ct_clear_error();                                                      \
    ct_tensor *_t = (expr);                                                \
    if (_t) { ct_test_fail(__FILE__, __LINE__, "%s succeeded, expected error '%s'", #expr, substr); ct_release(_t); } \
    else if (!strstr(ct_last_error(), substr)) ct_test_fail(__FILE__, __LINE__, "%s: error '%s' lacks '%s'", #expr, ct_last_error(), substr); \
  } while (0)
#define CHECK_ERR(expr, substr)                                            \
  do {                                                                     \
    ct_clear_error();                                                      \
    ct_status _s = (expr);                                                 \
    if (_s == CT_OK) ct_test_fail(__FILE__, __LINE__, "%s succeeded, expected error '%s'", #expr, substr); \
    else if (!strstr(ct_last_error(), substr)) ct_test_fail(__FILE__, __LINE__, "%s: error '%s' lacks '%s'", #expr, ct_last_error(), substr); \
  } while (0)
#define CHECK_NEAR(a, b, tol)                                              \
  do {                                                                     \
    double _a = (a), _b = (b);                                             \
    if (!(fabs(_a - _b) <= (tol))) ct_test_fail(__FILE__, __LINE__, "%s = %.9g, expected %.9g (tol %g)", #a, _a, _b, (double)(tol)); \
  } while (0)

/* Helpers */
ct_tensor *tt_from(const double *v, int ndim, const int64_t *shape, ct_dtype dt);
/* Element i (row-major) as double. */
double tt_at(const ct_tensor *t, int64_t i);
/* xorshift64*: the next value in [-1, 1) of the stream *state (tests keep one stream each so that
 * their data does not depend on which other tests ran). */
double tt_uniform(uint64_t *state);
/* A tensor of uniform values * scale + shift from the stream *state, requiring grad if asked. */
ct_tensor *tt_rand(uint64_t *state, int ndim, const int64_t *shape, ct_dtype dt, double scale, double shift,
                   bool requires_grad);
/* The same values as x in a transposed memory layout (x^T^T made from a contiguous copy of x^T), as a
 * new leaf requiring grad; releases x. NULL on failure. */
ct_tensor *tt_transposed_leaf(ct_tensor *x);
/* max |a - b| / (atol + rtol |b|) over the elements (<= 1: close); NaN in both places counts as
 * equal; a missing (NULL) gradient equals an all-zero one; other shape differences give INFINITY. */
double tt_excess(const ct_tensor *a, const ct_tensor *b, double rtol, double atol);
/* max |a-b| <= atol + rtol*|b| over all elements, shapes equal */
int tt_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol);
/* Same dtype, shape and bits, on any devices (compared as float64, so -0 and +0 differ); NULL equals only NULL. */
bool tt_same_bits(const ct_tensor *a, const ct_tensor *b);
/* A leaf copy of t on dev (channels-last if asked), requiring grad if asked; NULL for NULL. */
ct_tensor *tt_leaf(const ct_tensor *t, ct_device dev, bool channels_last, bool requires_grad);
/* An environment switch around a run (the backends read theirs at each call): tt_env_save returns a copy of its
 * value (NULL: unset), tt_env_set sets or (v NULL) unsets it, tt_env_restore puts the saved value back and frees it. */
char *tt_env_save(const char *name);
void tt_env_set(const char *name, const char *v);
void tt_env_restore(const char *name, char *saved);
/* Cross-backend check: got (on device `dev`, named in messages) against ref (CPU): same dtype and
 * shape, every element within atol + rtol*|ref| (NaN matches NaN); fails naming the worst element. */
void tt_same_as_cpu(const char *file, int line, const char *dev, const char *what, const ct_tensor *ref,
                    const ct_tensor *got, double rtol, double atol);

#endif
