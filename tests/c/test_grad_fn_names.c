/* grad_fn names against PyTorch 1.13: tests/c/gen_grad_fn_names.py runs each program with
 * torch and writes the name of the result's node into grad_fn_names.h; here the same program
 * (same key, same inputs) runs through the C API and its node must have that name. Python
 * users print these names (`grad_fn=<MseLossBackward0>`). */
#include "test.h"
#include "grad_fn_names.h"
#include <stdlib.h>

/* arange(1, n + 1) / 10 in the given shape, float32, requiring grad (as mk() in the script) */
static ct_tensor *mk(int nd, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double v[64];
  for (int64_t i = 0; i < n; i++) v[i] = (double)(float)((float)(i + 1) / 10.0f);
  ct_tensor *t = tt_from(v, nd, shape, CT_FLOAT32);
  if (t) ct_requires_grad_(t, true);
  return t;
}

static ct_tensor *ints(int nd, const int64_t *shape, const double *v) { return tt_from(v, nd, shape, CT_INT64); }

typedef struct {
  ct_tensor *x, *x3, *v, *x4, *img, *k2, *xd, *tgt, *t3, *t4;
} env;

#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define KEY(k) else if (!strcmp(key, k))

/* the first output of a multi-output op (the others stay in the caller's scope) */
static ct_tensor *first_of(ct_status st, const int *n, ct_tensor **outs) { return st == CT_OK && *n >= 1 ? outs[0] : NULL; }

/* The C twin of each program of gen_grad_fn_names.py (inside the caller's scope). */
static ct_tensor *run(const char *key, const env *e) {
  ct_tensor *x = e->x, *x3 = e->x3, *v = e->v, *x4 = e->x4, *xd = e->xd, *tgt = e->tgt;
  ct_tensor *outs[8] = {0}, *ix = NULL;
  int n = 0;
  ct_scalar lo = ct_sf(0.2), hi = ct_sf(0.4);
  if (0) return NULL;
  /* views and shape */
  KEY("t") return ct_t(x);
  KEY("t_1d") return ct_t(v);
  KEY("transpose") return ct_transpose(x, 0, 1);
  KEY("permute") return ct_permute(x3, 3, I64(2, 0, 1));
  KEY("movedim") return ct_movedim(x3, 1, I64(0), I64(2));
  KEY("view") return ct_view(x, 1, I64(6));
  KEY("reshape") return ct_reshape(x, 2, I64(3, 2));
  KEY("reshape_copy") return ct_reshape(ct_t(x), 1, I64(6));
  KEY("reshape_same") return ct_reshape(x, 2, I64(2, 3));
  KEY("flatten") return ct_flatten(x3, 0, -1);
  KEY("flatten_range") return ct_flatten(x3, 1, -1);
  KEY("flatten_0d") return ct_flatten(ct_sum(x), 0, -1);
  KEY("unflatten") return ct_unflatten(v, 0, 2, I64(1, 3));
  KEY("unsqueeze") return ct_unsqueeze(x, 0);
  KEY("squeeze") return ct_squeeze(ct_unsqueeze(x, 0));
  KEY("squeeze_dim") return ct_squeeze_dim(ct_unsqueeze(x, 0), 0);
  KEY("squeeze_dim_noop") return ct_squeeze_dim(x, 0);
  KEY("expand") return ct_expand(v, 2, I64(2, 3));
  KEY("select") return ct_select(x, 0, 1);
  KEY("slice") return ct_slice(x, 1, 1, 3, 1);
  KEY("narrow") return ct_narrow(x, 1, 0, 2);
  KEY("diagonal") return ct_diagonal(x, 0, 0, 1);
  KEY("contiguous") return ct_contiguous(ct_t(x));
  KEY("clone") return ct_clone(x);
  KEY("to_double") return ct_to_dtype(x, CT_FLOAT64);
  KEY("cat") return ct_cat(2, (const ct_tensor *[]){x, x}, 0);
  KEY("stack") return ct_stack(2, (const ct_tensor *[]){x, x}, 0);
  KEY("split") return first_of(ct_split(x, 1, 0, &n, outs, 8), &n, outs);
  KEY("chunk") return first_of(ct_chunk(x, 3, 1, &n, outs, 8), &n, outs);
  KEY("unbind") return first_of(ct_unbind(x, 0, &n, outs, 8), &n, outs);
  KEY("flip") return ct_flip(x, 1, I64(0));
  KEY("roll") return ct_roll(x, 1, I64(1), 0, NULL);
  KEY("roll_dim") return ct_roll(x, 1, I64(1), 1, I64(0));
  KEY("rot90") return ct_rot90(x, 1, 2, I64(0, 1));
  KEY("rot90_2") return ct_rot90(x, 2, 2, I64(0, 1));
  KEY("repeat") return ct_repeat(x, 2, I64(2, 1));
  KEY("tril") return ct_tril(x, 0);
  KEY("pad") return ct_pad(x, 2, I64(1, 1), "constant", 0);
  KEY("pad_reflect") return ct_pad(x3, 2, I64(1, 1), "reflect", 0);
  KEY("pad_circular") return ct_pad(x3, 2, I64(1, 1), "circular", 0);
  KEY("sum_to_size") return ct_sum_to_size(x, 2, I64(1, 3));
  KEY("sum_to_size_lead") return ct_sum_to_size(x, 1, I64(3));
  /* reductions */
  KEY("sum") return ct_sum(x);
  KEY("sum_dim") return ct_sum_dims(x, 1, I64(1), false);
  KEY("mean") return ct_mean(x);
  KEY("mean_dim") return ct_mean_dims(x, 1, I64(1), false);
  KEY("prod_dim") return ct_prod_dim(x, 1, false);
  KEY("amax") return ct_amax(x, 1, I64(1), false);
  KEY("max") return ct_max(x);
  KEY("max_dim") return ct_max_dim(x, 1, false, &outs[0], &ix) == CT_OK ? outs[0] : NULL;
  KEY("logsumexp") return ct_logsumexp(x, 1, I64(1), false);
  KEY("var") return ct_var(x, 1, I64(1), 1.0, false);
  KEY("std") return ct_std(x, 1, I64(1), 1.0, false);
  KEY("norm") return ct_norm(x, 2.0, 0, NULL, false);
  KEY("cumsum") return ct_cumsum(x, 1, -1);
  KEY("sort") return ct_sort(x, 1, false, false, &outs[0], &ix) == CT_OK ? outs[0] : NULL;
  KEY("topk") return ct_topk(x, 2, -1, true, true, &outs[0], &ix) == CT_OK ? outs[0] : NULL;
  KEY("median") return ct_median(x);
  /* elementwise */
  KEY("add") return ct_add(x, x);
  KEY("mul_scalar") return ct_mul_scalar(x, ct_si(2));
  KEY("pow_scalar") return ct_pow_scalar(x, ct_si(2));
  KEY("pow_tensor") return ct_pow(x, x);
  KEY("pow_scalar_base") return ct_pow_scalar_tensor(ct_si(2), x);
  KEY("relu") return ct_relu(x);
  KEY("gelu") return ct_gelu(x, "none");
  KEY("silu") return ct_silu(x);
  KEY("tanh") return ct_tanh(x);
  KEY("sigmoid") return ct_sigmoid(x);
  KEY("where") return ct_where(ct_gt_scalar(x, ct_sf(0.3)), x, ct_mul_scalar(x, ct_si(2)));
  KEY("clamp") return ct_clamp(x, &lo, &hi);
  KEY("softmax") return ct_softmax(x, 1, -1);
  KEY("log_softmax") return ct_log_softmax(x, 1, -1);
  /* linear algebra */
  KEY("mm") return ct_mm(x, ct_t(x));
  KEY("matmul_2d") return ct_matmul(x, ct_t(x));
  KEY("matmul_1d") return ct_matmul(v, v);
  KEY("matmul_mv") return ct_matmul(x, v);
  KEY("matmul_1d2d") return ct_matmul(ct_slice(v, 0, 0, 2, 1), x);
  KEY("matmul_3d") return ct_matmul(x3, ct_transpose(x3, 1, 2));
  KEY("matmul_3d2d") return ct_matmul(x3, ct_t(ct_select(x3, 0, 0)));
  KEY("bmm") return ct_bmm(x3, ct_transpose(x3, 1, 2));
  KEY("linear_2d") return ct_linear(x, x, NULL);
  KEY("linear_2d_bias") return ct_linear(x, x, ct_slice(v, 0, 0, 2, 1));
  KEY("linear_3d") return ct_linear(x3, ct_select(x3, 0, 0), NULL);
  KEY("linear_3d_bias") return ct_linear(x3, ct_select(x3, 0, 0), v);
  KEY("linear_1d") return ct_linear(v, x, NULL);
  KEY("addmm") return ct_addmm(ct_slice(x, 1, 0, 2, 1), x, ct_t(x), ct_si(1), ct_si(1));
  KEY("outer") return ct_outer(v, v);
  KEY("einsum") return ct_einsum("ij,kj->ik", 2, (const ct_tensor *[]){x, x});
  KEY("einsum_batched") return ct_einsum("bij,bkj->bik", 2, (const ct_tensor *[]){x3, x3});
  /* losses */
  KEY("mse_loss") return ct_mse_loss(x, xd, CT_REDUCTION_MEAN);
  KEY("mse_loss_sum") return ct_mse_loss(x, xd, CT_REDUCTION_SUM);
  KEY("mse_loss_none") return ct_mse_loss(x, xd, CT_REDUCTION_NONE);
  KEY("l1_loss") return ct_l1_loss(x, xd, CT_REDUCTION_MEAN);
  KEY("l1_loss_none") return ct_l1_loss(x, xd, CT_REDUCTION_NONE);
  KEY("smooth_l1_loss") return ct_smooth_l1_loss(x, xd, CT_REDUCTION_MEAN, 1.0);
  KEY("smooth_l1_loss_beta0") return ct_smooth_l1_loss(x, xd, CT_REDUCTION_MEAN, 0.0);
  KEY("smooth_l1_loss_none") return ct_smooth_l1_loss(x, xd, CT_REDUCTION_NONE, 1.0);
  KEY("huber_loss") return ct_huber_loss(x, xd, CT_REDUCTION_MEAN, 1.0);
  KEY("huber_loss_sum") return ct_huber_loss(x, xd, CT_REDUCTION_SUM, 1.0);
  KEY("kl_div_batchmean") return ct_kl_div(x, xd, CT_REDUCTION_BATCHMEAN, false);
  KEY("kl_div_sum") return ct_kl_div(x, xd, CT_REDUCTION_SUM, false);
  KEY("nll_loss") return ct_nll_loss(x, tgt, NULL, CT_REDUCTION_MEAN, -100);
  KEY("nll_loss_none") return ct_nll_loss(x, tgt, NULL, CT_REDUCTION_NONE, -100);
  KEY("nll_loss_1d") return ct_nll_loss(v, ct_select(tgt, 0, 1), NULL, CT_REDUCTION_MEAN, -100);
  KEY("nll_loss_3d") return ct_nll_loss(x3, e->t3, NULL, CT_REDUCTION_MEAN, -100);
  KEY("nll_loss_3d_none") return ct_nll_loss(x3, e->t3, NULL, CT_REDUCTION_NONE, -100);
  KEY("nll_loss_4d_none") return ct_nll_loss(x4, e->t4, NULL, CT_REDUCTION_NONE, -100);
  KEY("cross_entropy") return ct_cross_entropy(x, tgt, NULL, CT_REDUCTION_MEAN, -100, 0.0);
  KEY("cross_entropy_sum") return ct_cross_entropy(x, tgt, NULL, CT_REDUCTION_SUM, -100, 0.0);
  KEY("cross_entropy_smooth") return ct_cross_entropy(x, tgt, NULL, CT_REDUCTION_MEAN, -100, 0.1);
  KEY("cross_entropy_prob") return ct_cross_entropy(x, ct_div_scalar(xd, ct_si(2)), NULL, CT_REDUCTION_MEAN, -100, 0.0);
  KEY("binary_cross_entropy") {
    ct_tensor *p = ct_sigmoid(ct_detach(x));
    ct_requires_grad_(p, true);
    return ct_binary_cross_entropy(p, ct_div_scalar(xd, ct_si(4)), NULL, CT_REDUCTION_MEAN);
  }
  KEY("binary_cross_entropy_sum") {
    ct_tensor *p = ct_sigmoid(ct_detach(x));
    ct_requires_grad_(p, true);
    return ct_binary_cross_entropy(p, ct_div_scalar(xd, ct_si(4)), NULL, CT_REDUCTION_SUM);
  }
  KEY("bce_with_logits") return ct_binary_cross_entropy_with_logits(x, ct_div_scalar(xd, ct_si(4)), NULL, NULL,
                                                                    CT_REDUCTION_MEAN);
  KEY("bce_with_logits_none") return ct_binary_cross_entropy_with_logits(x, ct_div_scalar(xd, ct_si(4)), NULL, NULL,
                                                                         CT_REDUCTION_NONE);
  KEY("cosine_similarity") return ct_cosine_similarity(x, ct_mul_scalar(x, ct_si(1)), 1, 1e-8);
  KEY("pairwise_distance") return ct_pairwise_distance(x, xd, 2.0, 1e-6, false);
  /* nn */
  KEY("layer_norm") return ct_layer_norm(x, 1, I64(3), NULL, NULL, 1e-5);
  KEY("layer_norm_affine") return ct_layer_norm(x, 1, I64(3), v, v, 1e-5);
  KEY("batch_norm") return ct_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
  KEY("batch_norm_affine") return ct_batch_norm(x4, NULL, NULL, v, v, true, 0.1, 1e-5);
  KEY("batch_norm_eval") {
    ct_tensor *rm = tt_from((const double[]){0, 0, 0}, 1, I64(3), CT_FLOAT32);
    ct_tensor *rv = tt_from((const double[]){1, 1, 1}, 1, I64(3), CT_FLOAT32);
    return ct_batch_norm(x, rm, rv, NULL, NULL, false, 0.1, 1e-5);
  }
  KEY("group_norm") return ct_group_norm(x4, 3, NULL, NULL, 1e-5);
  KEY("dropout") return ct_dropout(x, 0.5, true, NULL);
  KEY("conv2d") return ct_conv2d(e->img, e->k2, NULL, NULL, NULL, NULL, 1);
  KEY("max_pool2d") return ct_max_pool2d(e->img, I64(2, 2), NULL, I64(0, 0), I64(1, 1), false, NULL);
  KEY("avg_pool2d") return ct_avg_pool2d(e->img, I64(2, 2), NULL, I64(0, 0), false, true, 0);
  KEY("adaptive_avg_pool2d") return ct_adaptive_avg_pool2d(e->img, I64(2, 2));
  KEY("adaptive_avg_pool2d_1") return ct_adaptive_avg_pool2d(e->img, I64(1, 1));
  KEY("adaptive_avg_pool2d_1_3d") return ct_adaptive_avg_pool2d(ct_select(e->img, 0, 0), I64(1, 1));
  KEY("embedding") return ct_embedding(tgt, ct_t(x), NULL);
  KEY("index_select") return ct_index_select(x, 0, ct_slice(tgt, 0, 0, 1, 1));
  KEY("gather") return ct_gather(x, 1, ct_view(tgt, 2, I64(2, 1)));
  KEY("masked_fill") return ct_masked_fill(x, ct_gt_scalar(x, ct_sf(0.3)), ct_si(0));
  fprintf(stderr, "no C program for key '%s'\n", key);
  return NULL;
}

TEST(grad_fn_names_match_pytorch) {
  env e;
  e.x = mk(2, I64(2, 3));
  e.x3 = mk(3, I64(2, 3, 4));
  e.v = mk(1, I64(3));
  e.x4 = mk(4, I64(2, 3, 2, 2));
  e.img = mk(4, I64(1, 1, 4, 4));
  e.k2 = mk(4, I64(1, 1, 2, 2));
  e.xd = ct_mul_scalar(ct_detach(e.x), ct_si(2));
  e.tgt = ints(1, I64(2), (const double[]){0, 2});
  e.t3 = ints(2, I64(2, 4), (const double[]){0, 0, 0, 0, 0, 0, 0, 0});
  e.t4 = ints(3, I64(2, 2, 2), (const double[]){0, 0, 0, 0, 0, 0, 0, 0});
  int n = (int)(sizeof grad_fn_names / sizeof grad_fn_names[0]), bad = 0;
  for (int i = 0; i < n; i++) {
    ct_scope *s = ct_scope_begin(); /* the program's temporaries */
    ct_clear_error();
    ct_tensor *r = run(grad_fn_names[i].key, &e);
    const char *got = r ? (ct_grad_fn_name(r) ? ct_grad_fn_name(r) : "None") : NULL;
    if (!got) {
      ct_test_fail(__FILE__, __LINE__, "%s: failed: %s", grad_fn_names[i].key, ct_last_error());
      bad++;
    } else if (strcmp(got, grad_fn_names[i].name)) {
      ct_test_fail(__FILE__, __LINE__, "%s: grad_fn %s, PyTorch 1.13 has %s", grad_fn_names[i].key, got,
                   grad_fn_names[i].name);
      bad++;
    }
    ct_scope_end(s);
  }
  CHECK(bad == 0);
  CHECK(n >= 100);
}
