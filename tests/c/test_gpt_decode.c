/* The decoding matrix-vector products (src/models/gpt_decode.c) at every SIMD level against a
 * float64 reference, both weight layouts, 1..GPT_MV_MAX_ROWS rows, with and without bias, sizes
 * with vector tails; the result must not depend on the thread count. And the cached GPT forward
 * (which takes them for a few rows) against the full forward with the packed GEMM. */
#include "backend/cpu/simd/simd.h"
#include "ctorch/models.h"
#include "models/gpt_internal.h"
#include "test.h"
#include <stdlib.h>
#include <string.h>

static float frand(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(*s >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

TEST(gpt_decode_matvec_vs_double) {
  static const int64_t shapes[][2] = {{1, 1}, {7, 5}, {33, 17}, {64, 512}, {130, 515}, {301, 1029}};
  int nshape = (int)(sizeof shapes / sizeof shapes[0]), threads0 = ct_get_num_threads();
  uint64_t seed = 12345;
  double worst = 0;
  int cases = 0;
  for (int lvl = CT_SIMD_PORTABLE; lvl <= CT_SIMD_AVX512; lvl++) {
    if ((int)ct_simd_cpu_level() < lvl) continue; /* the CPU lacks it: counted below */
    ct_simd_force((ct_simd_isa)lvl);
    for (int si = 0; si < nshape; si++)
      for (int nk = 0; nk < 2; nk++)
        for (int64_t rows = 1; rows <= GPT_MV_MAX_ROWS; rows++)
          for (int hb = 0; hb < 2; hb++) {
            int64_t K = shapes[si][0], N = shapes[si][1];
            float *x = malloc(sizeof(float) * (size_t)(rows * K)), *w = malloc(sizeof(float) * (size_t)(K * N)),
                  *b = malloc(sizeof(float) * (size_t)N), *y1 = malloc(sizeof(float) * (size_t)(rows * N)),
                  *y2 = malloc(sizeof(float) * (size_t)(rows * N));
            for (int64_t i = 0; i < rows * K; i++) x[i] = frand(&seed);
            for (int64_t i = 0; i < K * N; i++) w[i] = frand(&seed);
            for (int64_t i = 0; i < N; i++) b[i] = frand(&seed);
            ct_set_num_threads(1);
            gpt_matvec_f32(x, rows, K, w, N, nk, hb ? b : NULL, y1);
            ct_set_num_threads(2);
            gpt_matvec_f32(x, rows, K, w, N, nk, hb ? b : NULL, y2);
            CHECK(memcmp(y1, y2, sizeof(float) * (size_t)(rows * N)) == 0); /* thread-count independent */
            for (int64_t r = 0; r < rows; r++)
              for (int64_t j = 0; j < N; j++) {
                double s = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                  double p = (double)x[r * K + k] * (double)(nk ? w[j * K + k] : w[k * N + j]);
                  s += p;
                  mag += fabs(p);
                }
                if (hb) {
                  s += b[j];
                  mag += fabs(b[j]);
                }
                /* float32 accumulation of K + 1 terms: |error| <= (K + 1) u sum|terms| */
                double e = fabs((double)y1[r * N + j] - s) / ((double)(K + 1) * 0x1p-24 * mag + 1e-30);
                if (e > worst) worst = e;
              }
            cases++;
            free(x);
            free(w);
            free(b);
            free(y1);
            free(y2);
          }
  }
  ct_simd_force(CT_SIMD_AVX512); /* clamped to the CPU's level: back to the default */
  ct_set_num_threads(threads0);
  int levels = (int)ct_simd_cpu_level() + 1;
  if (levels < 3) printf("  gpt_decode_matvec_vs_double: %d SIMD level(s) skipped (CPU lacks them)\n", 3 - levels);
  CHECK(cases == levels * nshape * 2 * GPT_MV_MAX_ROWS * 2);
  CHECK(worst <= 1.0);
}

/* GPT-2's block (biases) at a shape whose widths have vector tails: logits of a cached decode, one
 * token at a time for batch 1 and 3 (the matrix-vector path), equal the full forward's. */
TEST(gpt_decode_cached_equals_full) {
  ct_gpt_config c = {97, 24, 40, 2, 4, 0.0, 1e-5};
  ct_generator *g = ct_generator_new(7);
  ct_gpt *m = ct_gpt_new(&c, g);
  CHECK(m);
  for (int64_t B = 1; B <= 3; B += 2) {
    int64_t T = 9, s[2] = {B, T};
    ct_tensor *idx = ct_randint(0, c.vocab_size, 2, s, NULL, g), *full = NULL;
    bool prev = ct_set_grad_enabled(false);
    CHECK_OK(ct_gpt_forward(m, idx, NULL, false, NULL, &full, NULL));
    ct_gpt_cache *kv = ct_gpt_cache_new(m, B, T);
    CHECK(kv);
    double worst = 0;
    for (int64_t t = 0; t < T; t++) {
      ct_tensor *tok = ct_narrow(idx, 1, t, 1), *tokc = ct_contiguous(tok);
      ct_tensor *got = ct_gpt_forward_cached(m, kv, tokc, true); /* [B, V] */
      ct_tensor *want = ct_select(full, 1, t);
      CHECK(got && want);
      int64_t n = B * c.vocab_size;
      float *a = malloc(sizeof(float) * (size_t)n), *e = malloc(sizeof(float) * (size_t)n);
      CHECK_OK(ct_copy_to_buffer(got, a, CT_FLOAT32, n));
      CHECK_OK(ct_copy_to_buffer(want, e, CT_FLOAT32, n));
      /* different summation orders (matrix-vector vs packed GEMM blocks) over 40..160 terms */
      for (int64_t i = 0; i < n; i++) {
        double r = fabs((double)a[i] - (double)e[i]) / (1e-5 + 1e-4 * fabs((double)e[i]));
        if (r > worst) worst = r;
      }
      free(a);
      free(e);
      ct_release(got);
      ct_release(want);
      ct_release(tokc);
      ct_release(tok);
    }
    CHECK(worst <= 1.0);
    CHECK(ct_gpt_cache_len(kv) == T);
    ct_gpt_cache_free(kv);
    ct_set_grad_enabled(prev);
    ct_release(full);
    ct_release(idx);
  }
  ct_gpt_free(m);
  ct_generator_free(g);
}

/* Top-k through the heap selection (k < V / 8) draws the same tokens with the same distribution
 * as the whole-vocabulary sort (k >= V / 8 still sorts everything): checked against a reference
 * written here (sort by probability, ties by lower id), with ties in the logits. */
typedef struct {
  double p;
  int64_t id;
} ref_pi;
static int ref_cmp(const void *a, const void *b) {
  const ref_pi *x = a, *y = b;
  if (x->p != y->p) return x->p < y->p ? 1 : -1;
  return (x->id > y->id) - (x->id < y->id);
}
TEST(gpt_decode_top_k_selection) {
  int64_t V = 1000;
  float *logits = malloc(sizeof(float) * (size_t)V), *probs = malloc(sizeof(float) * (size_t)V);
  ref_pi *r = malloc(sizeof *r * (size_t)V);
  uint64_t seed = 99;
  for (int64_t i = 0; i < V; i++) logits[i] = (float)(int)(frand(&seed) * 40) / 8.0f; /* many ties */
  static const int64_t ks[] = {1, 5, 37, 124, 125, 999};
  static const double us[] = {0.0, 0.13, 0.5, 0.77, 0.999};
  int checked = 0;
  for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
    for (size_t ui = 0; ui < sizeof us / sizeof us[0]; ui++) {
      ct_gpt_sampling s = {0.7, ks[ki], 1.0};
      int64_t got = ct_gpt_pick_token(logits, V, &s, us[ui], probs);
      float mx = logits[0];
      for (int64_t i = 1; i < V; i++)
        if (logits[i] > mx) mx = logits[i];
      for (int64_t i = 0; i < V; i++) r[i] = (ref_pi){(float)exp(((double)logits[i] - mx) / 0.7), i};
      qsort(r, (size_t)V, sizeof *r, ref_cmp);
      double kept = 0, c = 0;
      for (int64_t i = 0; i < ks[ki]; i++) kept += r[i].p;
      int64_t want = r[ks[ki] - 1].id;
      for (int64_t i = 0; i < ks[ki]; i++) {
        c += r[i].p;
        if (us[ui] * kept < c) {
          want = r[i].id;
          break;
        }
      }
      CHECK(got == want);
      double mass = 0;
      int64_t nz = 0;
      for (int64_t i = 0; i < V; i++) {
        mass += probs[i];
        nz += probs[i] > 0;
      }
      CHECK(nz == ks[ki] && fabs(mass - 1.0) < 1e-5);
      for (int64_t i = 0; i < ks[ki]; i++) CHECK(probs[r[i].id] > 0);
      checked++;
    }
  CHECK(checked == 30);
  free(logits);
  free(probs);
  free(r);
}
