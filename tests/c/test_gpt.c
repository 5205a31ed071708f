/* GPT (src/models/gpt.c): parity with a PyTorch GPT2LMHeadModel (fixtures from tests/gpt_ref.py:
 * logits, loss, every parameter's gradient, 10 AdamW steps), the KV cache against full recompute,
 * state dict names and errors, save/load, sampling. */
#include "ctorch/io.h"
#include "ctorch/models.h"
#include "ctorch/optim.h"
#include "test.h"
#include <stdlib.h>
#include <sys/stat.h>

#define FIXTURE "tests/fixtures/gpt"

static ct_gpt_config tiny_config(void) {
  ct_gpt_config c = {37, 16, 24, 2, 3, 0.0, 1e-5};
  return c;
}

/* max |a - b| / (atol + rtol |b|) <= 1, reporting the worst element */
static int close_report(const char *what, const ct_tensor *a, const ct_tensor *b, double rtol, double atol) {
  if (!a || !b || ct_numel(a) != ct_numel(b)) {
    ct_test_fail(__FILE__, __LINE__, "%s: missing or size mismatch", what);
    return 0;
  }
  int64_t n = ct_numel(a);
  double *x = malloc((size_t)n * 8), *y = malloc((size_t)n * 8);
  ct_copy_to_buffer(a, x, CT_FLOAT64, n);
  ct_copy_to_buffer(b, y, CT_FLOAT64, n);
  double worst = 0;
  int64_t wi = 0;
  for (int64_t i = 0; i < n; i++) {
    double r = fabs(x[i] - y[i]) / (atol + rtol * fabs(y[i]));
    if (!(r <= worst)) {
      worst = r;
      wi = i;
    }
  }
  if (!(worst <= 1)) ct_test_fail(__FILE__, __LINE__, "%s: element %lld is %.9g, expected %.9g", what, (long long)wi, x[wi], y[wi]);
  free(x);
  free(y);
  return worst <= 1;
}

TEST(gpt_matches_pytorch_reference) {
  ct_gpt *m = ct_gpt_load(FIXTURE);
  CHECK(m);
  ct_dict *ex = NULL;
  CHECK_OK(ct_safetensors_load(FIXTURE "/expected.safetensors", &ex, false));
  if (!m || !ex) {
    ct_gpt_free(m);
    ct_dict_free(ex);
    return;
  }
  const ct_gpt_config *c = ct_gpt_get_config(m);
  CHECK(c->vocab_size == 53 && c->n_positions == 12 && c->n_embd == 16 && c->n_layer == 2 && c->n_head == 4);
  ct_tensor *idx = ct_dict_get(ex, "idx"), *tg = ct_dict_get(ex, "targets");
  ct_tensor *logits = NULL, *loss = NULL;
  CHECK_OK(ct_gpt_forward(m, idx, tg, false, NULL, &logits, &loss));
  /* float32 with different summation orders: a few ulps of the largest terms */
  close_report("logits", logits, ct_dict_get(ex, "logits"), 1e-5, 2e-5);
  close_report("loss", loss, ct_dict_get(ex, "loss"), 1e-5, 1e-6);
  CHECK_OK(ct_backward(loss, NULL, false, false));
  const ct_dict *P = ct_gpt_parameters(m);
  CHECK(ct_dict_len(P) == 4 + 12 * 2);
  for (int64_t i = 0; i < ct_dict_len(P); i++) {
    char key[160];
    snprintf(key, sizeof key, "grad.%s", ct_dict_name(P, i));
    close_report(key, ct_grad(ct_dict_tensor(P, i)), ct_dict_get(ex, key), 1e-4, 2e-6);
  }
  ct_release(logits);
  ct_release(loss);
  /* 10 AdamW steps (lr 1e-2, betas (0.9, 0.95), eps 1e-8, weight decay 0.1, one group) */
  int64_t np = ct_dict_len(P);
  ct_tensor **ps = malloc((size_t)np * sizeof *ps);
  for (int64_t i = 0; i < np; i++) ps[i] = ct_dict_tensor(P, i);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAMW);
  o.lr = 1e-2;
  o.beta1 = 0.9;
  o.beta2 = 0.95;
  o.eps = 1e-8;
  o.weight_decay = 0.1;
  ct_optim *opt = ct_optim_new(CT_OPTIM_ADAMW, np, ps, &o);
  CHECK(opt);
  ct_tensor *want = ct_dict_get(ex, "adamw_losses");
  for (int s = 0; opt && s < 10; s++) {
    CHECK_OK(ct_optim_zero_grad(opt, true));
    ct_tensor *l = NULL;
    CHECK_OK(ct_gpt_forward(m, idx, tg, false, NULL, NULL, &l));
    CHECK_OK(ct_backward(l, NULL, false, false));
    CHECK_OK(ct_optim_step(opt));
    double got = 0;
    ct_item_double(l, &got);
    CHECK_NEAR(got, tt_at(want, s), 1e-4 * fabs(tt_at(want, s)));
    ct_release(l);
  }
  ct_optim_free(opt);
  free(ps);
  ct_dict_free(ex);
  ct_gpt_free(m);
}

TEST(gpt_state_dict_layout) {
  ct_gpt_config c = tiny_config();
  ct_generator *g = ct_generator_new(1);
  ct_gpt *m = ct_gpt_new(&c, g);
  CHECK(m);
  ct_dict *sd = ct_gpt_state_dict(m);
  CHECK(sd && ct_dict_len(sd) == 4 + 12 * 2 + 1);
  static const char *const names[] = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                                      "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.weight"};
  for (int i = 0; i < 5; i++) CHECK(!strcmp(ct_dict_name(sd, i), names[i]));
  CHECK(!strcmp(ct_dict_name(sd, ct_dict_len(sd) - 1), "lm_head.weight"));
  CHECK(ct_dict_get(sd, "lm_head.weight") == ct_dict_get(sd, "transformer.wte.weight"));
  /* Conv1D orientation: [in, out] */
  ct_tensor *w = ct_dict_get(sd, "transformer.h.1.attn.c_attn.weight");
  CHECK(w && ct_shape(w)[0] == 24 && ct_shape(w)[1] == 72);
  w = ct_dict_get(sd, "transformer.h.1.mlp.c_proj.weight");
  CHECK(w && ct_shape(w)[0] == 96 && ct_shape(w)[1] == 24);
  CHECK(ct_gpt_num_params(m) == 37 * 24 + 16 * 24 + 2 * (4 * 24 + 24 * 72 + 72 + 24 * 24 + 24 + 24 * 96 + 96 + 96 * 24 + 24) + 48);
  /* GPT-2's init: LayerNorm weights 1, biases 0, weights with std 0.02 */
  CHECK(tt_at(ct_dict_get(sd, "transformer.ln_f.weight"), 3) == 1.0);
  CHECK(tt_at(ct_dict_get(sd, "transformer.h.0.attn.c_attn.bias"), 5) == 0.0);
  ct_tensor *sdv = ct_std(ct_dict_get(sd, "transformer.wte.weight"), 0, NULL, 1, false);
  CHECK(sdv && fabs(tt_at(sdv, 0) - 0.02) < 0.003);
  ct_release(sdv);
  CHECK(ct_requires_grad(ct_dict_get(sd, "transformer.wpe.weight")));
  ct_dict_free(sd);
  ct_gpt_free(m);
  ct_generator_free(g);
}

TEST(gpt_config_and_input_errors) {
  ct_gpt_config c = tiny_config();
  c.n_head = 5;
  ct_clear_error();
  CHECK(!ct_gpt_new(&c, NULL) && strstr(ct_last_error(), "must be divisible by n_head") && ct_last_status() == CT_ERR_VALUE);
  c = tiny_config();
  c.vocab_size = 0;
  CHECK(!ct_gpt_new(&c, NULL) && strstr(ct_last_error(), "vocab_size"));
  c = tiny_config();
  c.dropout = 1.0;
  CHECK(!ct_gpt_new(&c, NULL) && strstr(ct_last_error(), "dropout probability has to be between 0 and 1"));
  CHECK(!ct_gpt_new(NULL, NULL));
  c = tiny_config();
  ct_gpt *m = ct_gpt_new(&c, NULL);
  int64_t s[2] = {1, 17};
  ct_tensor *idx = ct_zeros(2, s, ct_opts_dtype(CT_INT64)), *logits = NULL;
  CHECK_ERR(ct_gpt_forward(m, idx, NULL, false, NULL, &logits, NULL), "Cannot forward sequence of length 17, block size is only 16");
  ct_tensor *f = ct_zeros(2, s, ct_opts());
  CHECK_ERR(ct_gpt_forward(m, f, NULL, false, NULL, &logits, NULL), "Expected tensor for argument #1 'indices'");
  ct_release(f);
  ct_release(idx);
  s[1] = 4;
  idx = ct_full(2, s, ct_si(37), ct_opts_dtype(CT_INT64));
  CHECK_ERR(ct_gpt_forward(m, idx, NULL, false, NULL, &logits, NULL), "index out of range");
  ct_release(idx);
  idx = ct_zeros(2, s, ct_opts_dtype(CT_INT64));
  ct_tensor *loss = NULL;
  CHECK_ERR(ct_gpt_forward(m, idx, NULL, false, NULL, NULL, &loss), "needs targets");
  ct_tensor *bad_t = ct_zeros(1, s, ct_opts_dtype(CT_INT64));
  CHECK_ERR(ct_gpt_forward(m, idx, bad_t, false, NULL, NULL, &loss), "targets");
  ct_release(bad_t);
  /* 1-D input gives [T, V]; targets of -1 are ignored */
  ct_tensor *row = ct_select(idx, 0, 0);
  CHECK_OK(ct_gpt_forward(m, row, NULL, false, NULL, &logits, NULL));
  CHECK(logits && ct_ndim(logits) == 2 && ct_shape(logits)[0] == 4 && ct_shape(logits)[1] == 37);
  ct_release(logits);
  ct_tensor *ign = ct_full(2, s, ct_si(-1), ct_opts_dtype(CT_INT64));
  ct_tensor *t3 = ct_full(2, s, ct_si(3), ct_opts_dtype(CT_INT64));
  ct_tensor *mix = ct_cat(2, (const ct_tensor *[]){ign, t3}, 0), *idx2 = ct_cat(2, (const ct_tensor *[]){idx, idx}, 0);
  ct_tensor *l1 = NULL, *l2 = NULL;
  CHECK_OK(ct_gpt_forward(m, idx2, mix, false, NULL, NULL, &l1));
  CHECK_OK(ct_gpt_forward(m, idx, t3, false, NULL, NULL, &l2));
  CHECK(l1 && l2 && fabs(tt_at(l1, 0) - tt_at(l2, 0)) < 1e-6);
  ct_release(l1);
  ct_release(l2);
  ct_release(mix);
  ct_release(idx2);
  ct_release(ign);
  ct_release(t3);
  ct_release(row);
  ct_release(idx);
  ct_gpt_free(m);
}

/* The cache: prefix run once, then chunks and single tokens; every position's logits must equal
 * the full causal forward over the whole sequence. */
TEST(gpt_kv_cache_equals_full_recompute) {
  ct_gpt_config c = tiny_config();
  ct_generator *g = ct_generator_new(7);
  ct_gpt *m = ct_gpt_new(&c, g);
  int64_t s[2] = {2, 13};
  ct_tensor *idx = ct_randint(0, 37, 2, s, NULL, g), *full = NULL;
  CHECK_OK(ct_gpt_forward(m, idx, NULL, false, NULL, &full, NULL));
  ct_gpt_cache *kv = ct_gpt_cache_new(m, 2, 16);
  CHECK(kv && ct_gpt_cache_len(kv) == 0);
  int64_t cuts[] = {0, 5, 6, 9, 10, 13}; /* chunks of 5, 1, 3, 1, 3 */
  for (int k = 0; k + 1 < 6; k++) {
    ct_tensor *part = ct_narrow(idx, 1, cuts[k], cuts[k + 1] - cuts[k]);
    ct_tensor *got = ct_gpt_forward_cached(m, kv, part, false);
    ct_tensor *want = ct_narrow(full, 1, cuts[k], cuts[k + 1] - cuts[k]);
    CHECK(got && ct_shape(got)[1] == cuts[k + 1] - cuts[k]);
    char what[64];
    snprintf(what, sizeof what, "cached logits of positions %lld..%lld", (long long)cuts[k], (long long)cuts[k + 1]);
    close_report(what, got, want, 1e-5, 1e-5);
    CHECK(ct_gpt_cache_len(kv) == cuts[k + 1]);
    CHECK(!ct_requires_grad(got));
    ct_release(part);
    ct_release(got);
    ct_release(want);
  }
  /* last_only, and overflow of the cache */
  ct_gpt_cache_reset(kv);
  ct_tensor *got = ct_gpt_forward_cached(m, kv, idx, true);
  ct_tensor *want = ct_select(full, 1, 12);
  CHECK(got && ct_ndim(got) == 2);
  close_report("last_only logits", got, want, 1e-5, 1e-5);
  ct_release(got);
  ct_release(want);
  ct_tensor *more = ct_narrow(idx, 1, 0, 4);
  ct_clear_error();
  CHECK(!ct_gpt_forward_cached(m, kv, more, false) && strstr(ct_last_error(), "exceed the cache's 16"));
  ct_tensor *one_row = ct_narrow(idx, 0, 0, 1);
  CHECK(!ct_gpt_forward_cached(m, kv, one_row, false) && strstr(ct_last_error(), "idx must be [2, t]"));
  CHECK(!ct_gpt_cache_new(m, 1, 17) && strstr(ct_last_error(), "max_len in [1, 16]"));
  ct_release(one_row);
  ct_release(more);
  ct_gpt_cache_free(kv);
  ct_gpt_cache_free(NULL);
  ct_release(idx);
  ct_release(full);
  ct_gpt_free(m);
  ct_generator_free(g);
}

static void write_text(const char *path, const char *s) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(s, f);
    fclose(f);
  }
}

TEST(gpt_save_load_and_state_dict_errors) {
  ct_gpt_config c = tiny_config();
  ct_generator *g = ct_generator_new(3);
  ct_gpt *m = ct_gpt_new(&c, g);
  mkdir("build", 0777);
  CHECK_OK(ct_gpt_save(m, "build/test_gpt_save", "\"ctorch_tokenizer\": \"byte\""));
  ct_gpt *m2 = ct_gpt_load("build/test_gpt_save");
  CHECK(m2);
  int64_t s[2] = {1, 6};
  ct_tensor *idx = ct_randint(0, 37, 2, s, NULL, g), *a = NULL, *b = NULL;
  CHECK_OK(ct_gpt_forward(m, idx, NULL, false, NULL, &a, NULL));
  if (m2) CHECK_OK(ct_gpt_forward(m2, idx, NULL, false, NULL, &b, NULL));
  CHECK(a && b && tt_allclose(a, b, 0, 0));
  ct_release(a);
  ct_release(b);
  /* the file holds transformers' keys, no lm_head.weight */
  ct_dict *f = NULL;
  CHECK_OK(ct_safetensors_load("build/test_gpt_save/model.safetensors", &f, false));
  CHECK(f && ct_dict_len(f) == 28 && ct_dict_get(f, "transformer.h.1.mlp.c_fc.bias") && !ct_dict_get(f, "lm_head.weight"));
  /* keys without "transformer." (GPT2Model files) and HF's buffers load too */
  ct_dict *bare = ct_dict_new();
  for (int64_t i = 0; f && i < ct_dict_len(f); i++) ct_dict_set(bare, ct_dict_name(f, i) + 12, ct_dict_tensor(f, i));
  int64_t bs[4] = {1, 1, 16, 16};
  ct_tensor *buf = ct_ones(4, bs, ct_opts_dtype(CT_BOOL));
  ct_dict_set(bare, "h.0.attn.bias", buf);
  ct_dict_set(bare, "lm_head.weight", ct_dict_get(f, "transformer.wte.weight"));
  CHECK_OK(ct_gpt_load_state_dict(m2, bare));
  /* errors in PyTorch's words; nothing is changed on error */
  ct_dict_set(bare, "h.0.attn.c_attn.weight", buf);
  ct_dict_remove(bare, "wpe.weight");
  ct_dict_set(bare, "h.9.extra", buf);
  ct_clear_error();
  CHECK(ct_gpt_load_state_dict(m2, bare) == CT_ERR_RUNTIME);
  const char *e = ct_last_error();
  CHECK(strstr(e, "Error(s) in loading state_dict for GPT2LMHeadModel:"));
  CHECK(strstr(e, "Missing key(s) in state_dict: \"transformer.wpe.weight\""));
  CHECK(strstr(e, "Unexpected key(s) in state_dict: \"h.9.extra\""));
  CHECK(strstr(e, "size mismatch for transformer.h.0.attn.c_attn.weight: copying a param with shape "
                  "torch.Size([1, 1, 16, 16]) from checkpoint, the shape in current model is torch.Size([24, 72])."));
  ct_release(buf);
  ct_dict_free(bare);
  ct_dict_free(f);
  /* config problems */
  mkdir("build/test_gpt_badcfg", 0777);
  write_text("build/test_gpt_badcfg/config.json", "{\"n_embd\": 10, \"n_head\": 3}");
  ct_clear_error();
  CHECK(!ct_gpt_load("build/test_gpt_badcfg") && strstr(ct_last_error(), "divisible"));
  write_text("build/test_gpt_badcfg/config.json", "{\"activation_function\": \"relu\"}");
  CHECK(!ct_gpt_load("build/test_gpt_badcfg") && ct_last_status() == CT_ERR_NOT_IMPLEMENTED);
  write_text("build/test_gpt_badcfg/config.json", "{\"n_embd\": 16");
  CHECK(!ct_gpt_load("build/test_gpt_badcfg") && strstr(ct_last_error(), "JSON"));
  CHECK(!ct_gpt_load("build/no_such_model_dir") && strstr(ct_last_error(), "cannot read"));
  ct_release(idx);
  ct_gpt_free(m2);
  ct_gpt_free(m);
  ct_generator_free(g);
}

TEST(gpt_pick_token) {
  float logits[5] = {1.0f, 3.0f, 2.0f, -1.0f, 3.0f};
  float probs[5];
  ct_gpt_sampling greedy = {0.0, 0, 1.0};
  CHECK(ct_gpt_pick_token(logits, 5, &greedy, 0.99, probs) == 1); /* first of the tied maxima */
  CHECK(probs[1] == 1.0f && probs[4] == 0.0f);
  ct_gpt_sampling all = {1.0, 0, 1.0};
  CHECK(ct_gpt_pick_token(logits, 5, &all, 0.0, probs) == 1);
  double sum = 0, z = exp(1) + 2 * exp(3) + exp(2) + exp(-1);
  for (int i = 0; i < 5; i++) sum += probs[i];
  CHECK_NEAR(sum, 1.0, 1e-6);
  CHECK_NEAR(probs[2], exp(2) / z, 1e-6);
  /* inverse CDF over tokens sorted by probability (ties by id): 1, 4, 2, 0, 3 */
  CHECK(ct_gpt_pick_token(logits, 5, &all, 0.5, NULL) == 4);
  CHECK(ct_gpt_pick_token(logits, 5, &all, 0.999999, NULL) == 3);
  ct_gpt_sampling k2 = {1.0, 2, 1.0};
  CHECK(ct_gpt_pick_token(logits, 5, &k2, 0.999999, probs) == 4);
  CHECK_NEAR(probs[1], 0.5, 1e-6);
  CHECK(probs[2] == 0.0f);
  ct_gpt_sampling p = {1.0, 0, 0.5}; /* the first token alone holds < 0.5, the first two >= 0.5 */
  CHECK(ct_gpt_pick_token(logits, 5, &p, 0.999, probs) == 4);
  CHECK(probs[0] == 0 && probs[2] == 0 && fabs(probs[1] - 0.5) < 1e-6);
  ct_gpt_sampling hot = {1e-3, 0, 1.0}; /* low temperature: nearly greedy */
  CHECK(ct_gpt_pick_token(logits, 5, &hot, 0.2, NULL) == 1);
  ct_gpt_sampling bad = {-1.0, 0, 1.0};
  ct_clear_error();
  CHECK(ct_gpt_pick_token(logits, 5, &bad, 0.5, NULL) == -1 && strstr(ct_last_error(), "temperature"));
  bad = (ct_gpt_sampling){1.0, 0, 0.0};
  CHECK(ct_gpt_pick_token(logits, 5, &bad, 0.5, NULL) == -1 && strstr(ct_last_error(), "top_p"));
  CHECK(ct_gpt_pick_token(NULL, 5, &all, 0.5, NULL) == -1);
}

typedef struct {
  int64_t ids[64];
  int n, stop_at;
} collected;
static bool collect_tok(int64_t id, const float *probs, int64_t V, void *user) {
  collected *c = user;
  if (c->n < 64) c->ids[c->n++] = id;
  return c->n != c->stop_at;
}

/* Greedy generation with the cache (sliding past the context too) equals argmax over a full
 * forward of the last n_positions tokens at every step. */
TEST(gpt_generate_greedy_matches_full_forward) {
  ct_gpt_config c = tiny_config();
  c.n_positions = 8;
  ct_generator *g = ct_generator_new(11);
  ct_gpt *m = ct_gpt_new(&c, g);
  int64_t prompt[3] = {5, 9, 2};
  collected got = {.n = 0, .stop_at = -1};
  ct_gpt_sampling greedy = {0.0, 0, 1.0};
  CHECK_OK(ct_gpt_generate(m, prompt, 3, 12, &greedy, g, collect_tok, &got));
  CHECK(got.n == 12);
  /* the reference: full forward over the window the cache sees (the slide keeps the last 4) */
  int64_t hist[64] = {5, 9, 2};
  int n = 3, origin = 0, clen = 0; /* the cache holds hist[origin .. origin + clen) */
  for (int step = 0; step < 12; step++) {
    int todo = n - (origin + clen);
    if (clen + todo > 8) {
      origin = n - (n < 4 ? n : 4);
      clen = 0;
    }
    clen = n - origin;
    ct_scope *s = ct_scope_begin();
    int64_t shape[2] = {1, clen};
    ct_tensor *idx = ct_from_buffer(hist + origin, CT_INT64, 2, shape, ct_opts_dtype(CT_INT64)), *lg = NULL;
    CHECK_OK(ct_gpt_forward(m, idx, NULL, false, NULL, &lg, NULL));
    ct_tensor *last = ct_select(ct_select(lg, 0, 0), 0, clen - 1);
    int64_t d = 0;
    ct_tensor *am = ct_argmax(last, &d, false);
    int64_t want = -1;
    ct_item_int64(am, &want);
    CHECK(got.ids[step] == want);
    ct_scope_end(s);
    hist[n++] = got.ids[step];
  }
  /* a callback can stop early; sampling with a seed is reproducible */
  collected a = {.n = 0, .stop_at = 4}, b = {.n = 0, .stop_at = -1};
  ct_gpt_sampling samp = {1.0, 10, 0.9};
  ct_generator *g1 = ct_generator_new(99), *g2 = ct_generator_new(99);
  CHECK_OK(ct_gpt_generate(m, prompt, 3, 10, &samp, g1, collect_tok, &a));
  CHECK_OK(ct_gpt_generate(m, prompt, 3, 10, &samp, g2, collect_tok, &b));
  CHECK(a.n == 4 && b.n == 10);
  for (int i = 0; i < 4; i++) CHECK(a.ids[i] == b.ids[i]);
  int64_t bad[1] = {37};
  CHECK_ERR(ct_gpt_generate(m, bad, 1, 3, &samp, g1, NULL, NULL), "index out of range");
  CHECK_ERR(ct_gpt_generate(m, prompt, 0, 3, &samp, g1, NULL, NULL), "prompt of at least one token");
  ct_generator_free(g1);
  ct_generator_free(g2);
  ct_gpt_free(m);
  ct_generator_free(g);
}
