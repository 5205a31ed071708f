/* The fused CPU scaled_dot_product_attention (src/backend/cpu/kernels_attention.c)
 * against the composed path it replaces (matmul, softmax, matmul; kept as the reference):
 * values, gradients and double backward over shapes that exercise the blocking (T = 1,
 * sizes that are not multiples of the 64-row/64-key blocks, L != S with causal's top-left
 * convention, broadcast batch dims, non-contiguous inputs, Ev != E, masks, empty dims).
 *
 * Tolerance: float32 rel 1e-5 with an absolute floor of 1e-6 * (1 + max|reference|): the
 * fused path sums exp(s - m) and P V over key blocks with a running max (online softmax)
 * while the composed path normalises first, so the last bits differ; float64 rel 1e-10. */
#include "test.h"
#include "backend/cpu/kernels_attention.h"
#include "backend/cpu/simd/simd.h"
#include "ctorch/models.h"
#include <stdlib.h>

typedef struct {
  int nd;
  int64_t q[6], k[6], v[6]; /* shapes (last two dims: rows, features) */
  ct_dtype dt;
  bool causal;
  int mask;        /* 0 none, 1 bool [L, S], 2 float [1.., L, S] broadcast, 3 float with a fully masked row */
  int layout;      /* 0 contiguous, 1 q/k/v as transposes of [.., L, H, E] (GPT's view), 2 k with last-dim stride */
  double dropout;  /* > 0: composed path expected */
  bool gradgrad;
  const double *scale;
  int knd, vnd;    /* k's and v's ndim when not nd (broadcast batch dims) */
} sd_case;

static ct_tensor *rnd(int nd, const int64_t *sh, ct_dtype dt, ct_generator *g) {
  ct_options o = ct_opts_dtype(dt);
  return ct_randn(nd, sh, o, g);
}

/* a tensor of shape sh laid out as the transpose (dims nd-3, nd-2) of a contiguous one */
static ct_tensor *rnd_layout(int nd, const int64_t *sh, ct_dtype dt, ct_generator *g, int layout, bool is_k) {
  if (layout == 1 && nd >= 3) {
    int64_t t[6];
    memcpy(t, sh, sizeof(int64_t) * (size_t)nd);
    t[nd - 3] = sh[nd - 2];
    t[nd - 2] = sh[nd - 3];
    ct_tensor *b = rnd(nd, t, dt, g);
    ct_tensor *r = ct_transpose(b, nd - 3, nd - 2);
    ct_release(b);
    return r;
  }
  if (layout == 2 && is_k) { /* last dim strided: k = (k^T contiguous)^T */
    int64_t t[6];
    memcpy(t, sh, sizeof(int64_t) * (size_t)nd);
    t[nd - 2] = sh[nd - 1];
    t[nd - 1] = sh[nd - 2];
    ct_tensor *b = rnd(nd, t, dt, g);
    ct_tensor *r = ct_mT(b);
    ct_release(b);
    return r;
  }
  return rnd(nd, sh, dt, g);
}

static double max_abs(const ct_tensor *t) {
  int64_t n = ct_numel(t);
  double *b = malloc((size_t)(n ? n : 1) * sizeof *b), m = 0;
  if (b && ct_copy_to_buffer(t, b, CT_FLOAT64, n) == CT_OK)
    for (int64_t i = 0; i < n; i++)
      if (isfinite(b[i]) && fabs(b[i]) > m) m = fabs(b[i]);
  free(b);
  return m;
}

static int close_to(const ct_tensor *a, const ct_tensor *ref, ct_dtype dt) {
  double r = dt == CT_FLOAT64 ? 1e-10 : 1e-5, fl = dt == CT_FLOAT64 ? 1e-12 : 1e-6;
  return tt_allclose(a, ref, r, fl * (1 + max_abs(ref)));
}

/* out, dq, dk, dv (and the second-order grads when gradgrad) for one path */
static int run_path(const sd_case *c, bool fused, ct_tensor *q, ct_tensor *k, ct_tensor *v, ct_tensor *m,
                    ct_tensor **gop, ct_generator *g, ct_tensor *res[7]) {
  ct_sdpa_fused_set_enabled(fused);
  ct_generator *dg = ct_generator_new(7);
  res[0] = ct_scaled_dot_product_attention(q, k, v, m, c->dropout, c->causal, c->scale, dg);
  ct_generator_free(dg);
  ct_sdpa_fused_set_enabled(true);
  if (!res[0]) return 0;
  if (!*gop) *gop = rnd(ct_ndim(res[0]), ct_shape(res[0]), c->dt, g); /* the same grad_output for both paths */
  ct_tensor *go = *gop;
  ct_tensor *ins[3] = {q, k, v};
  ct_tensor *gr[3] = {NULL, NULL, NULL};
  ct_sdpa_fused_set_enabled(fused); /* the backward formula does not look at the switch */
  ct_status st = ct_autograd_grad(1, &res[0], &go, 3, ins, gr, c->gradgrad, c->gradgrad, false);
  ct_sdpa_fused_set_enabled(true);
  if (st != CT_OK) return 0;
  for (int i = 0; i < 3; i++) res[1 + i] = gr[i];
  if (c->gradgrad) {
    /* d/d(q,k,v) of sum(dq * dq) + sum(dk) + sum(dv * v) */
    ct_tensor *a = ct_mul(gr[0], gr[0]), *b = ct_mul(gr[2], v);
    ct_tensor *sa = ct_sum(a), *sb = ct_sum(b), *sk = ct_sum(gr[1]);
    ct_tensor *t1 = ct_add(sa, sb);
    ct_tensor *tot = ct_add(t1, sk);
    ct_tensor *g2[3] = {NULL, NULL, NULL};
    st = tot ? ct_autograd_grad(1, &tot, NULL, 3, ins, g2, false, false, true) : CT_ERR(CT_ERR_RUNTIME, "gg");
    for (int i = 0; i < 3; i++) res[4 + i] = g2[i];
    ct_release(a);
    ct_release(b);
    ct_release(sa);
    ct_release(sb);
    ct_release(sk);
    ct_release(t1);
    ct_release(tot);
    if (st != CT_OK) return 0;
  }
  return 1;
}

static void check_case(const char *name, const sd_case *c) {
  ct_generator *g = ct_generator_new(1234);
  int nd = c->nd;
  ct_tensor *q = rnd_layout(nd, c->q, c->dt, g, c->layout, false);
  int knd = c->knd ? c->knd : nd, vnd = c->vnd ? c->vnd : nd;
  ct_tensor *k = rnd_layout(knd, c->k, c->dt, g, c->layout, true);
  ct_tensor *v = rnd_layout(vnd, c->v, c->dt, g, c->layout, false);
  int64_t L = c->q[nd - 2], S = c->k[knd - 2];
  ct_tensor *m = NULL;
  if (c->mask == 1) {
    int64_t ms[2] = {L, S};
    ct_tensor *r = ct_rand(2, ms, ct_opts_dtype(CT_FLOAT32), g);
    m = ct_gt_scalar(r, ct_sf(0.3));
    ct_release(r);
    /* keep every row non-empty (an all-false row is nan on both paths; mask 3 tests that) */
    ct_tensor *col = ct_narrow(m, 1, 0, 1);
    ct_fill_(col, ct_sb(true));
    ct_release(col);
  } else if (c->mask >= 2) {
    int64_t ms[4] = {1, 1, L, S};
    int mnd = nd >= 4 ? 4 : nd;
    m = rnd(mnd, ms + (4 - mnd), c->dt, g);
    if (c->mask == 3 && L > 1) {
      ct_tensor *row = ct_select(m, mnd - 2, 1);
      ct_fill_(row, ct_sf(-INFINITY));
      ct_release(row);
    }
  }
  for (int i = 0; i < 3; i++) ct_requires_grad_(i == 0 ? q : i == 1 ? k : v, true);
  ct_tensor *ref[7] = {0}, *fu[7] = {0};
  ct_tensor *go = NULL;
  int ok_ref = run_path(c, false, q, k, v, m, &go, g, ref);
  int64_t f0 = ct_sdpa_fused_calls(false), b0 = ct_sdpa_fused_calls(true);
  int ok_fu = go && run_path(c, true, q, k, v, m, &go, g, fu);
  int64_t f1 = ct_sdpa_fused_calls(false), b1 = ct_sdpa_fused_calls(true);
  if (!ok_ref || !ok_fu) ct_test_fail(__FILE__, __LINE__, "%s: a path failed: %s", name, ct_last_error());
  bool empty = ct_numel(q) == 0 || ct_numel(k) == 0 || ct_numel(v) == 0;
  bool want_fused = c->dropout == 0 && !empty && (c->dt == CT_FLOAT32 || c->dt == CT_FLOAT64);
  if (want_fused && ct_fast_enabled() && (f1 - f0 != 1 || b1 - b0 != (c->gradgrad ? 0 : 1)))
    ct_test_fail(__FILE__, __LINE__, "%s: fused kernels ran %lld/%lld times", name, (long long)(f1 - f0),
                 (long long)(b1 - b0));
  if (!want_fused && f1 != f0) ct_test_fail(__FILE__, __LINE__, "%s: fused path taken", name);
  const char *what[7] = {"out", "dq", "dk", "dv", "ggq", "ggk", "ggv"};
  for (int i = 0; ok_ref && ok_fu && i < 7; i++) {
    if (!ref[i] && !fu[i]) continue;
    if (!ref[i] || !fu[i] || !close_to(fu[i], ref[i], c->dt))
      ct_test_fail(__FILE__, __LINE__, "%s: %s differs (max ref %g)", name, what[i], ref[i] ? max_abs(ref[i]) : 0.0);
  }
  if (ok_fu && fu[0] && ok_ref && ref[0]) {
    const char *a = ct_grad_fn_name(fu[0]), *b = ct_grad_fn_name(ref[0]);
    if ((a || b) && !(a && b && !strcmp(a, b)))
      ct_test_fail(__FILE__, __LINE__, "%s: grad_fn %s vs %s", name, a ? a : "-", b ? b : "-");
  }
  for (int i = 0; i < 7; i++) {
    ct_release(ref[i]);
    ct_release(fu[i]);
  }
  ct_release(go);
  ct_release(q);
  ct_release(k);
  ct_release(v);
  ct_release(m);
  ct_generator_free(g);
}

#define SH(...) {__VA_ARGS__}

TEST(attn_fused_shapes_f32) {
  int64_t live = ct_live_tensors();
  const sd_case cs[] = {
      {4, SH(1, 1, 1, 8), SH(1, 1, 1, 8), SH(1, 1, 1, 8), CT_FLOAT32},                  /* T = 1 */
      {4, SH(2, 3, 70, 24), SH(2, 3, 130, 24), SH(2, 3, 130, 40), CT_FLOAT32},          /* L != S, Ev != E */
      {3, SH(2, 65, 17), SH(2, 65, 17), SH(2, 65, 5), CT_FLOAT32, true},                 /* causal, odd sizes */
      {3, SH(1, 5, 8), SH(1, 9, 8), SH(1, 9, 3), CT_FLOAT32, true},                      /* causal L < S */
      {3, SH(1, 9, 8), SH(1, 5, 8), SH(1, 5, 3), CT_FLOAT32, true},                      /* causal L > S */
      {3, SH(2, 150, 16), SH(2, 70, 16), SH(2, 70, 16), CT_FLOAT32, true},               /* causal L > S, blocks */
      {3, SH(1, 70, 16), SH(1, 200, 16), SH(1, 200, 8), CT_FLOAT32, true},               /* causal L < S, blocks */
      {4, SH(2, 2, 200, 64), SH(2, 2, 200, 64), SH(2, 2, 200, 64), CT_FLOAT32, true},    /* GPT-like */
      {2, SH(7, 12), SH(9, 12), SH(9, 6), CT_FLOAT32},                                   /* no batch dims */
      {4, SH(2, 3, 6, 8), SH(1, 3, 7, 8), SH(3, 7, 4), CT_FLOAT32, .vnd = 3},            /* broadcast batch */
      {3, SH(2, 6, 8), SH(7, 8), SH(2, 7, 4), CT_FLOAT32, true, .knd = 2},               /* 2-D k */
      {4, SH(2, 2, 67, 16), SH(2, 2, 67, 16), SH(2, 2, 67, 16), CT_FLOAT32, true, 0, 1}, /* transposed views */
      {4, SH(2, 2, 9, 16), SH(2, 2, 11, 16), SH(2, 2, 11, 7), CT_FLOAT32, false, 0, 2},  /* k last dim strided */
      {3, SH(2, 66, 8), SH(2, 80, 8), SH(2, 80, 4), CT_FLOAT32, false, 1},               /* bool mask */
      {4, SH(2, 2, 66, 8), SH(2, 2, 80, 8), SH(2, 2, 80, 4), CT_FLOAT32, false, 2},      /* float mask, broadcast */
      {3, SH(2, 5, 8), SH(2, 6, 8), SH(2, 6, 4), CT_FLOAT32, false, 3},                  /* a fully masked row: nan */
      {3, SH(2, 5, 8), SH(2, 6, 8), SH(2, 6, 4), CT_FLOAT32, false, 0, 0, 0.25},         /* dropout: composed */
      {3, SH(2, 0, 8), SH(2, 6, 8), SH(2, 6, 4), CT_FLOAT32},                            /* L = 0 */
      {3, SH(2, 5, 8), SH(2, 0, 8), SH(2, 0, 4), CT_FLOAT32},                            /* S = 0 */
      {3, SH(2, 5, 0), SH(2, 6, 0), SH(2, 6, 4), CT_FLOAT32},                            /* E = 0 */
      {3, SH(2, 5, 8), SH(2, 6, 8), SH(2, 6, 0), CT_FLOAT32},                            /* Ev = 0 */
      {4, SH(0, 2, 5, 8), SH(0, 2, 6, 8), SH(0, 2, 6, 4), CT_FLOAT32},                   /* batch 0 */
  };
  char nm[32];
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    snprintf(nm, sizeof nm, "f32 case %zu", i);
    check_case(nm, &cs[i]);
  }
  double sc = 0.3;
  sd_case s = {3, SH(2, 70, 8), SH(2, 90, 8), SH(2, 90, 8), CT_FLOAT32, true};
  s.scale = &sc;
  check_case("f32 scale", &s);
  CHECK(ct_live_tensors() == live);
}

TEST(attn_fused_shapes_f64) {
  int64_t live = ct_live_tensors();
  const sd_case cs[] = {
      {4, SH(2, 3, 70, 24), SH(2, 3, 130, 24), SH(2, 3, 130, 40), CT_FLOAT64},
      {3, SH(1, 150, 8), SH(1, 70, 8), SH(1, 70, 3), CT_FLOAT64, true},
      {4, SH(2, 2, 67, 16), SH(2, 2, 67, 16), SH(2, 2, 67, 16), CT_FLOAT64, true, 0, 1},
      {3, SH(2, 66, 8), SH(2, 80, 8), SH(2, 80, 4), CT_FLOAT64, false, 1},
      {4, SH(2, 2, 66, 8), SH(2, 2, 80, 8), SH(2, 2, 80, 4), CT_FLOAT64, false, 2},
      {3, SH(2, 5, 8), SH(2, 6, 8), SH(2, 6, 4), CT_FLOAT64, false, 3},
      /* double backward: the formula runs in public ops under create_graph */
      {3, SH(2, 5, 4), SH(2, 7, 4), SH(2, 7, 3), CT_FLOAT64, false, 0, 0, 0, true},
      {3, SH(1, 70, 4), SH(1, 70, 4), SH(1, 70, 2), CT_FLOAT64, true, 0, 0, 0, true},
      {3, SH(2, 6, 4), SH(2, 9, 4), SH(2, 9, 3), CT_FLOAT64, false, 2, 0, 0, true},
  };
  char nm[32];
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    snprintf(nm, sizeof nm, "f64 case %zu", i);
    check_case(nm, &cs[i]);
  }
  CHECK(ct_live_tensors() == live);
}

/* Every ISA level's kernels (AVX-512, AVX2, portable) against the composed path. */
TEST(attn_fused_isa_levels) {
  int64_t live = ct_live_tensors();
  const sd_case cs[] = {
      {3, SH(2, 70, 24), SH(2, 75, 24), SH(2, 75, 13), CT_FLOAT32, true},
      {3, SH(2, 70, 24), SH(2, 75, 24), SH(2, 75, 13), CT_FLOAT64, false, 2},
  };
  const ct_simd_isa lv[3] = {CT_SIMD_PORTABLE, CT_SIMD_AVX2, CT_SIMD_AVX512};
  char nm[48];
  for (int l = 0; l < 3; l++) {
    ct_simd_force(lv[l]);
    for (int i = 0; i < 2; i++) {
      snprintf(nm, sizeof nm, "isa %s case %d", ct_simd_isa_name(lv[l]), i);
      check_case(nm, &cs[i]);
    }
  }
  ct_simd_force(CT_SIMD_AVX512); /* clamped to the CPU's level: back to the default */
  CHECK(ct_live_tensors() == live);
}

/* The composed path does not save its result, so changing it in place must leave backward
 * working; changing a saved input must fail with PyTorch's message. */
TEST(attn_fused_inplace) {
  int64_t live = ct_live_tensors();
  ct_generator *g = ct_generator_new(3);
  int64_t sh[3] = {2, 5, 8};
  ct_tensor *q = rnd(3, sh, CT_FLOAT32, g), *k = rnd(3, sh, CT_FLOAT32, g), *v = rnd(3, sh, CT_FLOAT32, g);
  ct_requires_grad_(q, true);
  ct_tensor *o = ct_scaled_dot_product_attention(q, k, v, NULL, 0, true, NULL, NULL);
  CHECK(o != NULL);
  ct_tensor *o2 = ct_mul_scalar(o, ct_sf(2));
  CHECK_OK(ct_mul_scalar_(o, ct_sf(3)));
  ct_tensor *s = ct_sum(o);
  CHECK_OK(ct_backward(s, NULL, false, false));
  CHECK(ct_grad(q) != NULL);
  ct_tensor *s2 = ct_sum(o2);
  ct_tensor *qd = ct_detach(q);
  CHECK_OK(ct_mul_scalar_(qd, ct_sf(2)));
  CHECK_ERR(ct_backward(s2, NULL, false, false), "modified by an inplace operation");
  ct_tensor *ts[8] = {q, k, v, o, o2, s, s2, qd};
  for (int i = 0; i < 8; i++) ct_release(ts[i]);
  ct_generator_free(g);
  CHECK(ct_live_tensors() == live);
}

/* Errors stay the composed path's (PyTorch's wording) with the fused path on. */
static void same_error(const char *name, const ct_tensor *q, const ct_tensor *k, const ct_tensor *v, const ct_tensor *m,
                       bool causal) {
  char ref[512];
  ct_sdpa_fused_set_enabled(false);
  ct_clear_error();
  ct_tensor *a = ct_scaled_dot_product_attention(q, k, v, m, 0, causal, NULL, NULL);
  snprintf(ref, sizeof ref, "%s", ct_last_error());
  ct_sdpa_fused_set_enabled(true);
  ct_clear_error();
  ct_tensor *b = ct_scaled_dot_product_attention(q, k, v, m, 0, causal, NULL, NULL);
  if (a || b || !ref[0] || strcmp(ref, ct_last_error()))
    ct_test_fail(__FILE__, __LINE__, "%s: '%s' vs '%s'", name, ref, ct_last_error());
  ct_release(a);
  ct_release(b);
}

TEST(attn_fused_errors) {
  int64_t live = ct_live_tensors();
  ct_generator *g = ct_generator_new(5);
  int64_t a[3] = {2, 5, 8}, b[3] = {2, 6, 7}, c3[3] = {3, 6, 8}, d[3] = {2, 7, 8}, ms[3] = {4, 5, 6};
  ct_tensor *q = rnd(3, a, CT_FLOAT32, g), *k = rnd(3, b, CT_FLOAT32, g), *kb = rnd(3, c3, CT_FLOAT32, g);
  ct_tensor *k6 = rnd(3, (int64_t[]){2, 6, 8}, CT_FLOAT32, g), *v7 = rnd(3, d, CT_FLOAT32, g);
  ct_tensor *mk = rnd(3, ms, CT_FLOAT32, g);
  same_error("E mismatch", q, k, k, NULL, false);
  same_error("batch mismatch", q, kb, kb, NULL, false);
  same_error("S mismatch", q, k6, v7, NULL, false);
  same_error("mask with causal", q, k6, k6, mk, true);
  same_error("mask shape", q, k6, k6, mk, false);
  ct_tensor *ts[6] = {q, k, kb, k6, v7, mk};
  for (int i = 0; i < 6; i++) ct_release(ts[i]);
  ct_generator_free(g);
  CHECK(ct_live_tensors() == live);
}

/* The GPT model (src/models/gpt.c) takes the fused path in training (dropout 0) and in the
 * cached generation step, and gives the composed path's loss and gradients. */
TEST(attn_fused_gpt_uses_it) {
  int64_t live = ct_live_tensors();
  ct_gpt_config cf = {16, 80, 16, 2, 2, 0.0, 1e-5};
  ct_generator *g = ct_generator_new(9);
  ct_gpt *m = ct_gpt_new(&cf, g);
  CHECK(m != NULL);
  int64_t sh[2] = {2, 70};
  ct_options io = ct_opts_dtype(CT_INT64);
  ct_tensor *idx = ct_randint(0, 16, 2, sh, &io, g), *tgt = ct_randint(0, 16, 2, sh, &io, g);
  const ct_dict *P = ct_gpt_parameters(m);
  ct_tensor *wte = P ? ct_dict_get(P, "transformer.wte.weight") : NULL;
  CHECK(wte != NULL);
  double loss_v[2] = {0, 0};
  ct_tensor *gw[2] = {NULL, NULL};
  for (int path = 0; path < 2 && m && wte; path++) {
    ct_sdpa_fused_set_enabled(path == 1);
    int64_t f0 = ct_sdpa_fused_calls(false), b0 = ct_sdpa_fused_calls(true);
    ct_tensor *loss = NULL;
    CHECK_OK(ct_gpt_forward(m, idx, tgt, true, NULL, NULL, &loss));
    ct_tensor *gr = NULL;
    if (loss) {
      loss_v[path] = tt_at(loss, 0);
      CHECK_OK(ct_autograd_grad(1, &loss, NULL, 1, &wte, &gr, false, false, false));
    }
    gw[path] = gr;
    int64_t f1 = ct_sdpa_fused_calls(false), b1 = ct_sdpa_fused_calls(true);
    if (path == 1 && ct_fast_enabled()) CHECK(f1 - f0 == cf.n_layer && b1 - b0 == cf.n_layer);
    if (path == 0) CHECK(f1 == f0 && b1 == b0);
    ct_release(loss);
  }
  ct_sdpa_fused_set_enabled(true);
  CHECK_NEAR(loss_v[1], loss_v[0], 1e-5 * fabs(loss_v[0]));
  if (gw[0] && gw[1]) CHECK(close_to(gw[1], gw[0], CT_FLOAT32));
  /* generation with the key/value cache: one position at a time against the cached keys */
  ct_gpt_cache *c = m ? ct_gpt_cache_new(m, 1, 16) : NULL;
  CHECK(c != NULL);
  if (c) {
    int64_t f0 = ct_sdpa_fused_calls(false);
    int64_t one[2] = {1, 3};
    ct_tensor *pr = ct_randint(0, 16, 2, one, &io, g);
    bool prev = ct_set_grad_enabled(false);
    ct_tensor *l1 = ct_gpt_forward_cached(m, c, pr, true);
    ct_tensor *l2 = l1 ? ct_gpt_forward_cached(m, c, pr, true) : NULL;
    ct_set_grad_enabled(prev);
    CHECK(l1 && l2);
    if (ct_fast_enabled()) CHECK(ct_sdpa_fused_calls(false) - f0 == 2 * cf.n_layer);
    ct_release(pr);
    ct_release(l1);
    ct_release(l2);
    ct_gpt_cache_free(c);
  }
  ct_release(gw[0]);
  ct_release(gw[1]);
  ct_release(idx);
  ct_release(tgt);
  ct_gpt_free(m);
  ct_generator_free(g);
  CHECK(ct_live_tensors() == live);
}
