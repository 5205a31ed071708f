/* GPT's fused paths (src/models/gpt.c's bias + GELU node, src/nn/linear_ce.c's classifier +
 * cross-entropy that the loss-only forward takes) against the composed ops they replace
 * (ct_fast_set_enabled(false) sends both through the reference ops), for GPT-2's block and
 * nanoGPT's variant (no biases, erf GELU); and the variant's save / load. */
#include "backend/cpu/simd/simd.h"
#include "ctorch/io.h"
#include "ctorch/models.h"
#include "test.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* max |a - b| / (atol + rtol |b|) */
static double excess(const ct_tensor *a, const ct_tensor *b, double rtol, double atol) {
  if (!a || !b || ct_numel(a) != ct_numel(b)) return INFINITY;
  int64_t n = ct_numel(a);
  double *x = malloc((size_t)n * 8), *y = malloc((size_t)n * 8), worst = 0;
  ct_copy_to_buffer(a, x, CT_FLOAT64, n);
  ct_copy_to_buffer(b, y, CT_FLOAT64, n);
  for (int64_t i = 0; i < n; i++) {
    double r = fabs(x[i] - y[i]) / (atol + rtol * fabs(y[i]));
    if (!(r <= worst)) worst = r;
  }
  free(x);
  free(y);
  return worst;
}

/* loss and the gradients of every parameter (clones, in parameter order) */
/* slow_backward: the fast paths are switched off between forward and backward (the fused GELU
 * node's backward then takes its libm fallback) */
static double loss_and_grads(ct_gpt *m, ct_tensor *idx, ct_tensor *tg, bool want_logits, bool slow_backward,
                             ct_tensor **grads) {
  const ct_dict *P = ct_gpt_parameters(m);
  for (int64_t i = 0; i < ct_dict_len(P); i++) ct_set_grad(ct_dict_tensor(P, i), NULL);
  ct_tensor *logits = NULL, *loss = NULL;
  double v = NAN;
  bool prev = ct_fast_enabled();
  if (ct_gpt_forward(m, idx, tg, true, NULL, want_logits ? &logits : NULL, &loss) == CT_OK) {
    if (slow_backward) ct_fast_set_enabled(false);
    if (ct_backward(loss, NULL, false, false) == CT_OK) ct_item_double(loss, &v);
    ct_fast_set_enabled(prev);
  }
  for (int64_t i = 0; i < ct_dict_len(P); i++) {
    ct_tensor *g = ct_grad(ct_dict_tensor(P, i));
    grads[i] = g ? ct_clone(g) : NULL;
  }
  ct_release(logits);
  ct_release(loss);
  return v;
}

TEST(gpt_fused_paths_match_composed) {
  ct_gpt_config c = {29, 12, 24, 2, 3, 0.0, 1e-5};
  int64_t B = 3, T = 11, shape[2] = {B, T};
  int64_t ids[33], tgt[33];
  for (int i = 0; i < 33; i++) {
    ids[i] = (i * 7 + 3) % 29;
    tgt[i] = i == 5 ? -1 : (i * 11 + 1) % 29; /* one ignored target */
  }
  ct_tensor *idx = ct_from_buffer(ids, CT_INT64, 2, shape, ct_opts_dtype(CT_INT64));
  ct_tensor *tg = ct_from_buffer(tgt, CT_INT64, 2, shape, ct_opts_dtype(CT_INT64));
  for (int variant = 0; variant < 2; variant++) {
    ct_generator *g = ct_generator_new(7);
    ct_gpt *m = variant ? ct_gpt_new_variant(&c, false, "none", g) : ct_gpt_new(&c, g);
    CHECK(m);
    if (!m) {
      ct_generator_free(g);
      continue;
    }
    /* biases: 2 embeddings + 12 per layer + 2, without: 2 + 6 per layer + 1 */
    const ct_dict *P = ct_gpt_parameters(m);
    int64_t np = ct_dict_len(P);
    CHECK(np == (variant ? 2 + 6 * 2 + 1 : 2 + 12 * 2 + 2));
    CHECK(ct_gpt_has_bias(m) == !variant);
    CHECK(!strcmp(ct_gpt_gelu(m), variant ? "none" : "tanh"));
    ct_tensor **fast = calloc((size_t)np, sizeof *fast), **ref = calloc((size_t)np, sizeof *ref),
              **viaLogits = calloc((size_t)np, sizeof *viaLogits), **mixed = calloc((size_t)np, sizeof *mixed);
    double lf = loss_and_grads(m, idx, tg, false, false, fast);     /* fused GELU + fused classifier/CE */
    double ll = loss_and_grads(m, idx, tg, true, false, viaLogits); /* fused GELU, logits + cross_entropy */
    double lm = loss_and_grads(m, idx, tg, false, true, mixed);     /* fused forward, libm backward */
    bool prev = ct_fast_enabled();
    ct_fast_set_enabled(false);
    double lr = loss_and_grads(m, idx, tg, false, false, ref);      /* composed ops throughout */
    ct_fast_set_enabled(prev);
    CHECK(isfinite(lf) && fabs(lf - lr) <= 1e-5 * fabs(lr));
    CHECK(fabs(ll - lr) <= 1e-5 * fabs(lr));
    CHECK(lm == lf);
    for (int64_t i = 0; i < np; i++) {
      /* float32 sums in other orders (GEMM blocking, row vs column reductions) */
      double e1 = excess(fast[i], ref[i], 1e-4, 1e-6), e2 = excess(viaLogits[i], ref[i], 1e-4, 1e-6),
             e3 = excess(mixed[i], ref[i], 1e-4, 1e-6);
      if (!(e1 <= 1 && e2 <= 1 && e3 <= 1))
        ct_test_fail(__FILE__, __LINE__, "variant %d: gradient of %s differs (%.3g, %.3g, %.3g)", variant,
                     ct_dict_name(P, i), e1, e2, e3);
      ct_release(mixed[i]);
      ct_release(fast[i]);
      ct_release(ref[i]);
      ct_release(viaLogits[i]);
    }
    free(fast);
    free(ref);
    free(viaLogits);
    free(mixed);
    ct_gpt_free(m);
    ct_generator_free(g);
  }
  ct_release(idx);
  ct_release(tg);
}

TEST(gpt_variant_save_load_and_errors) {
  ct_gpt_config c = {17, 8, 16, 1, 2, 0.0, 1e-5};
  const char *gelus[2] = {"fast", NULL};
  for (int i = 0; i < 2; i++) {
    ct_gpt *bad = ct_gpt_new_variant(&c, true, gelus[i], NULL);
    CHECK(!bad && strstr(ct_last_error(), "approximate argument must be either none or tanh"));
    ct_gpt_free(bad);
  }
  ct_generator *g = ct_generator_new(3);
  ct_gpt *m = ct_gpt_new_variant(&c, false, "none", g);
  CHECK(m);
  char dir[] = "/tmp/ct_gpt_variantXXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK_OK(ct_gpt_save(m, dir, NULL));
  ct_gpt *m2 = ct_gpt_load(dir);
  CHECK(m2 && !ct_gpt_has_bias(m2) && !strcmp(ct_gpt_gelu(m2), "none"));
  int64_t ids[6] = {1, 5, 16, 0, 3, 9}, s[2] = {1, 6};
  ct_tensor *idx = ct_from_buffer(ids, CT_INT64, 2, s, ct_opts_dtype(CT_INT64));
  ct_tensor *a = NULL, *b = NULL;
  CHECK_OK(ct_gpt_forward(m, idx, NULL, false, NULL, &a, NULL));
  if (m2) CHECK_OK(ct_gpt_forward(m2, idx, NULL, false, NULL, &b, NULL));
  CHECK(excess(a, b, 0, 1e-30) == 0); /* the same weights and ops: the same bits */
  /* GPT-2's layout refuses a bias-less checkpoint, naming what is missing */
  ct_gpt *full = ct_gpt_new(&c, g);
  ct_dict *sd = ct_gpt_state_dict(m);
  CHECK_ERR(ct_gpt_load_state_dict(full, sd), "Missing key(s) in state_dict: \"transformer.h.0.ln_1.bias\"");
  ct_dict_free(sd);
  char path[256];
  snprintf(path, sizeof path, "%s/config.json", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  unlink(path);
  rmdir(dir);
  ct_release(a);
  ct_release(b);
  ct_release(idx);
  ct_gpt_free(full);
  ct_gpt_free(m2);
  ct_gpt_free(m);
  ct_generator_free(g);
}
