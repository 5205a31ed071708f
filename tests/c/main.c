/* The C test runner: runs every registered test (or those whose name contains argv[1]). */
#include "test.h"
#include <stdarg.h>
#include <stdlib.h>

#define MAX_TESTS 4096
static struct {
  const char *name, *file;
  ct_test_fn fn;
} tests[MAX_TESTS];
static int n_tests;
int ct_test_failures;

void ct_test_register(const char *name, const char *file, ct_test_fn fn) {
  if (n_tests < MAX_TESTS) {
    tests[n_tests].name = name;
    tests[n_tests].file = file;
    tests[n_tests++].fn = fn;
  }
}

void ct_test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  %s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  ct_test_failures++;
}

ct_tensor *tt_from(const double *v, int ndim, const int64_t *shape, ct_dtype dt) {
  return ct_from_buffer(v, CT_FLOAT64, ndim, shape, ct_opts_dtype(dt));
}

double tt_at(const ct_tensor *t, int64_t i) {
  int64_t n = ct_numel(t);
  double *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
  double v = NAN;
  if (buf && ct_copy_to_buffer(t, buf, CT_FLOAT64, n) == CT_OK && i < n) v = buf[i];
  free(buf);
  return v;
}

double tt_uniform(uint64_t *state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return (double)((*state * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2 - 1;
}

ct_tensor *tt_rand(uint64_t *state, int ndim, const int64_t *shape, ct_dtype dt, double scale, double shift,
                   bool requires_grad) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) return NULL;
  for (int64_t i = 0; i < n; i++) v[i] = tt_uniform(state) * scale + shift;
  ct_tensor *t = tt_from(v, ndim, shape, dt);
  free(v);
  if (requires_grad && t) ct_requires_grad_(t, true);
  return t;
}

ct_tensor *tt_transposed_leaf(ct_tensor *x) {
  int nd = x ? ct_ndim(x) : 0;
  ct_tensor *t = x ? ct_transpose(x, 0, nd - 1) : NULL, *tc = t ? ct_contiguous(t) : NULL;
  ct_tensor *back = tc ? ct_transpose(tc, 0, nd - 1) : NULL, *leaf = back ? ct_detach(back) : NULL;
  if (leaf) ct_requires_grad_(leaf, true);
  ct_release(t);
  ct_release(tc);
  ct_release(back);
  ct_release(x);
  return leaf;
}

double tt_excess(const ct_tensor *a, const ct_tensor *b, double rtol, double atol) {
  if (!a && !b) return 0;
  if (!a || !b) { /* an unreachable gradient (NULL) against an all-zero one: both say zero */
    const ct_tensor *t = a ? a : b;
    for (int64_t i = 0; i < ct_numel(t); i++)
      if (tt_at(t, i) != 0) return INFINITY;
    return 0;
  }
  if (ct_ndim(a) != ct_ndim(b)) return INFINITY;
  for (int d = 0; d < ct_ndim(a); d++)
    if (ct_shape(a)[d] != ct_shape(b)[d]) return INFINITY;
  int64_t n = ct_numel(a);
  double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8), worst = 0;
  if (!x || !y) {
    free(x);
    free(y);
    return INFINITY;
  }
  ct_copy_to_buffer(a, x, CT_FLOAT64, n);
  ct_copy_to_buffer(b, y, CT_FLOAT64, n);
  for (int64_t i = 0; i < n; i++) {
    if ((isnan(x[i]) && isnan(y[i])) || x[i] == y[i]) continue;
    double e = fabs(x[i] - y[i]) / (atol + rtol * fabs(y[i]));
    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
  }
  free(x);
  free(y);
  return worst;
}

int tt_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol) {
  if (!a || !b || ct_ndim(a) != ct_ndim(b)) return 0;
  for (int d = 0; d < ct_ndim(a); d++)
    if (ct_shape(a)[d] != ct_shape(b)[d]) return 0;
  int64_t n = ct_numel(a);
  double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8);
  int ok = x && y && ct_copy_to_buffer(a, x, CT_FLOAT64, n) == CT_OK && ct_copy_to_buffer(b, y, CT_FLOAT64, n) == CT_OK;
  for (int64_t i = 0; ok && i < n; i++) {
    if (isnan(x[i]) && isnan(y[i])) continue;
    if (x[i] == y[i]) continue;
    if (!(fabs(x[i] - y[i]) <= atol + rtol * fabs(y[i]))) ok = 0;
  }
  free(x);
  free(y);
  return ok;
}

void tt_same_as_cpu(const char *file, int line, const char *dev, const char *what, const ct_tensor *ref,
                    const ct_tensor *got, double rtol, double atol) {
  if (!ref || !got) {
    ct_test_fail(file, line, "%s: cpu %s, %s %s (%s)", what, ref ? "ok" : "NULL", dev, got ? "ok" : "NULL",
                 ct_last_error());
    return;
  }
  if (ct_tensor_dtype(ref) != ct_tensor_dtype(got)) {
    ct_test_fail(file, line, "%s: dtype %s on %s, %s on cpu", what, ct_dtype_name(ct_tensor_dtype(got)), dev,
                 ct_dtype_name(ct_tensor_dtype(ref)));
    return;
  }
  int64_t n = ct_numel(ref);
  bool shp = ct_ndim(ref) == ct_ndim(got);
  for (int d = 0; shp && d < ct_ndim(ref); d++) shp = ct_shape(ref)[d] == ct_shape(got)[d];
  if (!shp) {
    ct_test_fail(file, line, "%s: shapes differ", what);
    return;
  }
  double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8);
  if (!x || !y || ct_copy_to_buffer(ref, x, CT_FLOAT64, n) || ct_copy_to_buffer(got, y, CT_FLOAT64, n)) {
    ct_test_fail(file, line, "%s: reading values failed: %s", what, ct_last_error());
  } else {
    int64_t worst = -1;
    double ws = 0;
    for (int64_t i = 0; i < n; i++) {
      if ((isnan(x[i]) && isnan(y[i])) || x[i] == y[i]) continue;
      double sc = fabs(y[i] - x[i]) / (atol + rtol * fabs(x[i]));
      if (!(sc <= 1) && (worst < 0 || !(sc <= ws))) worst = i, ws = sc;
    }
    if (worst >= 0)
      ct_test_fail(file, line, "%s: element %lld: %s %.10g, cpu %.10g (rtol %g atol %g)", what, (long long)worst, dev,
                   y[worst], x[worst], rtol, atol);
  }
  free(x);
  free(y);
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  int passed = 0, failed = 0;
  int64_t live0 = ct_live_tensors();
  bool verbose = getenv("CT_TEST_VERBOSE") != NULL; /* each test's name before it runs: which one crashed */
  for (int i = 0; i < n_tests; i++) {
    if (filter && !strstr(tests[i].name, filter)) continue;
    if (verbose) fprintf(stderr, "RUN %s (%s)\n", tests[i].name, tests[i].file);
    ct_test_failures = 0;
    int64_t before = ct_live_tensors();
    ct_scope *s = ct_scope_begin();
    tests[i].fn();
    ct_scope_end(s);
    int64_t leaked = ct_live_tensors() - before;
    if (leaked != 0) ct_test_fail(tests[i].file, 0, "%lld tensor handle(s) leaked", (long long)leaked);
    if (ct_test_failures) {
      fprintf(stderr, "FAIL %s (%s)\n", tests[i].name, tests[i].file);
      failed++;
    } else passed++;
  }
  (void)live0;
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

char *tt_env_save(const char *name) {
  const char *v = getenv(name);
  return v ? strdup(v) : NULL;
}
void tt_env_set(const char *name, const char *v) {
  if (v) setenv(name, v, 1);
  else unsetenv(name);
}
void tt_env_restore(const char *name, char *saved) {
  tt_env_set(name, saved);
  free(saved);
}

bool tt_same_bits(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return a == b;
  if (ct_tensor_dtype(a) != ct_tensor_dtype(b) || ct_ndim(a) != ct_ndim(b) || ct_numel(a) != ct_numel(b)) return false;
  for (int d = 0; d < ct_ndim(a); d++)
    if (ct_shape(a)[d] != ct_shape(b)[d]) return false;
  ct_tensor *ac = ct_to_device(a, ct_cpu()), *bc = ct_to_device(b, ct_cpu());
  int64_t n = ct_numel(a);
  double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8);
  bool same = ac && bc && x && y;
  if (same) {
    ct_copy_to_buffer(ac, x, CT_FLOAT64, n);
    ct_copy_to_buffer(bc, y, CT_FLOAT64, n);
    same = memcmp(x, y, (size_t)n * 8) == 0;
  }
  free(x);
  free(y);
  ct_release(ac);
  ct_release(bc);
  return same;
}

ct_tensor *tt_leaf(const ct_tensor *t, ct_device dev, bool channels_last, bool requires_grad) {
  if (!t) return NULL;
  ct_tensor *d = ct_to_device(t, dev);
  ct_tensor *c = d && channels_last ? ct_to_channels_last(d) : d ? ct_retain(d) : NULL;
  ct_release(d);
  ct_tensor *l = c ? ct_detach(c) : NULL;
  ct_release(c);
  if (l && requires_grad) ct_requires_grad_(l, true);
  return l;
}
