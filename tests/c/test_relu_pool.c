/* ReLU's backward from its saved output (src/ops/relu_grad.c) and the thread pool's fork/join
 * (src/core/threadpool.c): the float32 fast path against the generic derivative op it replaces
 * (ct_fast_set_enabled(false) runs that one) and against the mask computed here, the double backward,
 * PyTorch's saved-tensor semantics (the output is saved, not the input), and ct_parallel_for covering
 * every index exactly once at 1 to 3 threads, nested, from two calling threads at once, and over many
 * back-to-back small loops (the pattern of a training step). */
#include "test.h"
#include "backend/cpu/simd/simd.h"
#include <pthread.h>
#include <stdlib.h>

void ct_parallel_for(int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t), void *ctx);

static uint64_t rp_state = 0x2545F4914F6CDD1Dull;

/* x with exact zeros, -0.0 and NaN sprinkled in; n not a multiple of any vector width */
static ct_tensor *rp_input(int64_t n, ct_dtype dt, bool grad) {
  double *v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) {
    v[i] = tt_uniform(&rp_state);
    if (i % 7 == 3) v[i] = 0.0;
    if (i % 11 == 5) v[i] = -0.0;
    if (i % 13 == 6) v[i] = NAN;
  }
  int64_t shape[2] = {n / 37, 37};
  ct_tensor *t = tt_from(v, 2, shape, dt);
  free(v);
  if (grad && t) ct_requires_grad_(t, true);
  return t;
}

/* relu(x).backward(g): x.grad == (x <= 0 ? 0 : g) (PyTorch: a NaN input passes g) element for element, fast and generic paths alike */
static void rp_check_backward(ct_dtype dt, bool fast, int threads) {
  int64_t n = 37 * 29; /* 1073 */
  ct_fast_set_enabled(fast);
  int prev = ct_get_num_threads();
  ct_set_num_threads(threads);
  ct_tensor *x = rp_input(n, dt, true), *g = rp_input(n, dt, false);
  ct_tensor *y = x ? ct_relu(x) : NULL;
  CHECK(y != NULL);
  if (y) {
    CHECK_OK(ct_backward(y, g, false, false));
    ct_tensor *gx = ct_grad(x);
    CHECK(gx != NULL);
    int bad = 0;
    for (int64_t i = 0; gx && i < n; i++) {
      double xv = tt_at(x, i), gv = tt_at(g, i), want = xv <= 0 ? 0.0 : gv, got = tt_at(gx, i);
      if (!(got == want || (isnan(got) && isnan(want))) || (want == 0 && signbit(got) && !signbit(want))) bad++;
    }
    if (bad) ct_test_fail(__FILE__, __LINE__, "relu backward (%s, fast %d, threads %d): %d wrong elements",
                          ct_dtype_name(dt), (int)fast, threads, bad);
  }
  ct_release(y);
  ct_release(x);
  ct_release(g);
  ct_set_num_threads(prev);
  ct_fast_set_enabled(true);
}

TEST(relu_backward_fast_matches_mask) {
  for (int fast = 0; fast <= 1; fast++)
    for (int th = 1; th <= 2; th++) {
      rp_check_backward(CT_FLOAT32, fast, th);
      rp_check_backward(CT_FLOAT64, fast, th);
    }
  /* every SIMD level the CPU has (the portable loop also runs the vector loops' tails) */
  for (int isa = CT_SIMD_PORTABLE; isa <= (int)ct_simd_cpu_level(); isa++) {
    ct_simd_force((ct_simd_isa)isa);
    rp_check_backward(CT_FLOAT32, true, 1);
  }
  ct_simd_force(CT_SIMD_AVX512);
}

/* a strided gradient takes the generic path and still gives the mask */
TEST(relu_backward_strided_grad) {
  int64_t s[2] = {8, 6};
  double v[48], gv[48];
  for (int i = 0; i < 48; i++) v[i] = tt_uniform(&rp_state), gv[i] = tt_uniform(&rp_state);
  ct_tensor *x = tt_from(v, 2, s, CT_FLOAT32);
  int64_t st[2] = {6, 8};
  ct_tensor *gbase = tt_from(gv, 2, st, CT_FLOAT32);
  ct_tensor *g = gbase ? ct_transpose(gbase, 0, 1) : NULL; /* [8, 6], not contiguous */
  CHECK(x && g);
  if (x && g) {
    ct_requires_grad_(x, true);
    ct_tensor *y = ct_relu(x);
    CHECK_OK(ct_backward(y, g, false, false));
    ct_tensor *gx = ct_grad(x);
    for (int64_t i = 0; gx && i < 48; i++) {
      int64_t r = i / 6, c = i % 6;
      double want = v[i] > 0 ? (double)(float)gv[c * 8 + r] : 0.0;
      CHECK(tt_at(gx, i) == want);
    }
    ct_release(y);
  }
  ct_release(g);
  ct_release(gbase);
  ct_release(x);
}

/* create_graph: d(x.grad)/d(v) of relu(x).backward(v) is the mask; relu's double backward wrt x is 0 */
TEST(relu_double_backward) {
  double xv[6] = {1.5, -2, 0, 3, -0.5, 2}, vv[6] = {0.5, 1, 2, -3, 4, 5};
  int64_t s[1] = {6};
  ct_tensor *x = tt_from(xv, 1, s, CT_FLOAT32), *v = tt_from(vv, 1, s, CT_FLOAT32);
  ct_requires_grad_(x, true);
  ct_requires_grad_(v, true);
  ct_tensor *y = ct_relu(x), *gx = NULL;
  CHECK_OK(ct_autograd_grad(1, &y, &v, 1, &x, &gx, true, true, false));
  CHECK(gx != NULL && ct_requires_grad(gx));
  if (gx) {
    for (int i = 0; i < 6; i++) CHECK(tt_at(gx, i) == (xv[i] > 0 ? vv[i] : 0.0));
    ct_tensor *s1 = ct_sum(gx), *gv = NULL;
    CHECK_OK(ct_autograd_grad(1, &s1, NULL, 1, &v, &gv, true, false, false));
    for (int i = 0; gv && i < 6; i++) CHECK(tt_at(gv, i) == (xv[i] > 0 ? 1.0 : 0.0));
    ct_tensor *g2 = NULL;
    CHECK_OK(ct_autograd_grad(1, &s1, NULL, 1, &x, &g2, true, false, true));
    for (int i = 0; g2 && i < 6; i++) CHECK(tt_at(g2, i) == 0.0);
    ct_release(g2);
    ct_release(gv);
    ct_release(s1);
    ct_release(gx);
  }
  ct_release(y);
  ct_release(x);
  ct_release(v);
}

/* PyTorch saves relu's result: writing into the output before backward is refused; writing into the
 * input is fine (the input is not needed) */
TEST(relu_saves_output) {
  double xv[3] = {1, -2, 3};
  int64_t s[1] = {3};
  ct_tensor *x = tt_from(xv, 1, s, CT_FLOAT32);
  ct_requires_grad_(x, true);
  ct_tensor *y = ct_relu(x), *t = y ? ct_sum(y) : NULL;
  CHECK_OK(ct_mul_scalar_(y, ct_sf(2)));
  CHECK_ERR(ct_backward(t, NULL, false, false),
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[torch.FloatTensor [3]], which is output 0 of ReluBackward0, is at version 1; expected version 0 instead.");
  ct_release(t);
  ct_release(y);
  ct_tensor *a = ct_mul_scalar(x, ct_sf(1));
  y = a ? ct_relu(a) : NULL;
  t = y ? ct_sum(y) : NULL;
  CHECK_OK(ct_mul_scalar_(a, ct_sf(2)));
  CHECK_OK(ct_backward(t, NULL, false, false));
  ct_tensor *gx = ct_grad(x);
  for (int i = 0; gx && i < 3; i++) CHECK(tt_at(gx, i) == (xv[i] > 0 ? 1.0 : 0.0));
  ct_release(t);
  ct_release(y);
  ct_release(a);
  ct_release(x);
}

/* ---- thread pool ---- */
typedef struct {
  int *hits; /* atomically incremented per index */
  int64_t n;
  int nested; /* run a nested loop inside each chunk */
} rp_cover;

static void rp_inner(void *vc, int64_t b, int64_t e) {
  int *cnt = vc;
  __atomic_fetch_add(cnt, (int)(e - b), __ATOMIC_RELAXED);
}
static void rp_body(void *vc, int64_t b, int64_t e) {
  rp_cover *c = vc;
  for (int64_t i = b; i < e; i++) {
    if (i < 0 || i >= c->n) continue; /* counted as missing below */
    __atomic_fetch_add(&c->hits[i], 1, __ATOMIC_RELAXED);
  }
  if (c->nested) {
    int cnt = 0;
    ct_parallel_for(100, 1, rp_inner, &cnt); /* inline on this thread */
    if (cnt != 100) __atomic_fetch_add(&c->hits[b], 1000, __ATOMIC_RELAXED);
  }
}

/* runs `loops` loops of n indices (grain 1); returns how many loops missed or repeated an index */
static int rp_run_loops(int64_t n, int loops, int nested) {
  int *hits = calloc((size_t)n, sizeof *hits), bad = 0;
  rp_cover c = {hits, n, nested};
  for (int l = 0; l < loops; l++) {
    memset(hits, 0, (size_t)n * sizeof *hits);
    ct_parallel_for(n, 1, rp_body, &c);
    for (int64_t i = 0; i < n; i++)
      if (hits[i] != 1) {
        bad++;
        break;
      }
  }
  free(hits);
  return bad;
}

static void *rp_thread(void *arg) {
  *(int *)arg = rp_run_loops(517, 300, 0);
  return NULL;
}

TEST(threadpool_covers_each_index_once) {
  int prev = ct_get_num_threads();
  for (int th = 1; th <= 3; th++) {
    ct_set_num_threads(th);
    CHECK(ct_get_num_threads() == th);
    int64_t sizes[] = {1, 2, 3, 7, 64, 1000, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      int bad = rp_run_loops(sizes[k], sizes[k] > 10000 ? 3 : 50, 0);
      if (bad) ct_test_fail(__FILE__, __LINE__, "threads %d, n %lld: %d loops wrong", th, (long long)sizes[k], bad);
    }
    /* many back-to-back small loops: workers join late, spin or sleep between them */
    CHECK(rp_run_loops(33, 5000, 0) == 0);
    CHECK(rp_run_loops(257, 200, 1) == 0); /* nested loops run inline */
    /* two callers at once: one gets the pool, the other runs inline; both complete exactly */
    int r1 = -1, r2 = -1;
    pthread_t t;
    if (pthread_create(&t, NULL, rp_thread, &r1) == 0) {
      rp_thread(&r2);
      pthread_join(t, NULL);
      CHECK(r1 == 0 && r2 == 0);
    }
  }
  /* a thread count change between loops takes effect on the next one */
  ct_set_num_threads(2);
  CHECK(rp_run_loops(999, 20, 0) == 0);
  ct_set_num_threads(1);
  CHECK(rp_run_loops(999, 20, 0) == 0);
  ct_set_num_threads(prev);
}
