/* GPT-2 architecture on ctorch's ops (llm.c-style: parameters in a ct_dict under Hugging Face's
 * names), a key/value cache for generation, and checkpoints in transformers' layout. */
#include "ctorch/models.h"
#include "models/gpt_internal.h"
#include "core/internal.h"
#include "autograd/autograd.h"
#include "backend/cpu/simd/fast_ew.h"
#include "backend/cpu/simd/simd.h"
#include "ops/op_table.h"
#include "ctorch/io.h"
#include "ctorch/cuda.h"
#include "util/json.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

enum { L_LN1_W, L_LN1_B, L_ATTN_W, L_ATTN_B, L_APROJ_W, L_APROJ_B, L_LN2_W, L_LN2_B, L_FC_W, L_FC_B, L_MPROJ_W,
       L_MPROJ_B, L_N };
static const char *const layer_names[L_N] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
    "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};

struct ct_gpt {
  ct_gpt_config cfg;
  ct_dict *params; /* owns the tensors */
  ct_tensor *wte, *wpe, *lnf_w, *lnf_b;
  ct_tensor *(*layer)[L_N]; /* borrowed from params; the biases NULL without them */
  bool bias, gelu_erf;      /* nanoGPT's variants (ct_gpt_new_variant) */
};

ct_gpt_config ct_gpt_config_gpt2(void) {
  ct_gpt_config c = {50257, 1024, 768, 12, 12, 0.1, 1e-5};
  return c;
}

ct_status ct_gpt_config_check(const ct_gpt_config *c) {
  if (!c) return CT_ERR(CT_ERR_VALUE, "GPT config is NULL");
  if (c->vocab_size <= 0) return CT_ERR(CT_ERR_VALUE, "GPT config: vocab_size must be positive, got %lld", (long long)c->vocab_size);
  if (c->n_positions <= 0) return CT_ERR(CT_ERR_VALUE, "GPT config: n_positions must be positive, got %lld", (long long)c->n_positions);
  if (c->n_embd <= 0) return CT_ERR(CT_ERR_VALUE, "GPT config: n_embd must be positive, got %lld", (long long)c->n_embd);
  if (c->n_layer < 0 || c->n_layer > 4096) return CT_ERR(CT_ERR_VALUE, "GPT config: n_layer must be in [0, 4096], got %lld", (long long)c->n_layer);
  if (c->n_head <= 0 || c->n_embd % c->n_head)
    return CT_ERR(CT_ERR_VALUE, "GPT config: n_embd (%lld) must be divisible by n_head (%lld)", (long long)c->n_embd,
                  (long long)c->n_head);
  if (!(c->dropout >= 0 && c->dropout < 1)) return CT_ERR(CT_ERR_VALUE, "dropout probability has to be between 0 and 1, but got %g", c->dropout);
  if (!(c->layer_norm_epsilon >= 0)) return CT_ERR(CT_ERR_VALUE, "GPT config: layer_norm_epsilon must be >= 0");
  /* every parameter's element count must fit comfortably */
  int64_t big = c->vocab_size > c->n_positions ? c->vocab_size : c->n_positions, t;
  if (!ct_mul_ok(big, c->n_embd, &t) || !ct_mul_ok(c->n_embd * 4, c->n_embd, &t) || c->n_embd > (INT64_C(1) << 30))
    return CT_ERR(CT_ERR_VALUE, "GPT config: the model is too large");
  return CT_OK;
}

const ct_gpt_config *ct_gpt_get_config(const ct_gpt *m) { return m ? &m->cfg : NULL; }
ct_status ct_gpt_set_dropout(ct_gpt *m, double p) {
  if (!m) return CT_ERR(CT_ERR_VALUE, "GPT model is NULL");
  if (!(p >= 0 && p < 1)) return CT_ERR(CT_ERR_VALUE, "dropout probability has to be between 0 and 1, but got %g", p);
  m->cfg.dropout = p;
  return CT_OK;
}

const ct_dict *ct_gpt_parameters(const ct_gpt *m) { return m ? m->params : NULL; }

void ct_gpt_free(ct_gpt *m) {
  if (!m) return;
  ct_dict_free(m->params);
  free(m->layer);
  free(m);
}

/* Adds a float32 parameter to the dict: zeros, ones or N(0, std); returns it borrowed. */
static ct_tensor *add_param(ct_gpt *m, const char *name, int nd, const int64_t *shape, int kind, double std,
                            ct_generator *g) {
  ct_options o = ct_opts_dtype(CT_FLOAT32);
  ct_tensor *t = kind == 1 ? ct_ones(nd, shape, o) : ct_zeros(nd, shape, o);
  if (!t) return NULL;
  if ((kind == 2 && ct_normal_(t, 0.0, std, g) != CT_OK) || ct_requires_grad_(t, true) != CT_OK ||
      ct_dict_set(m->params, name, t) != CT_OK) {
    ct_release(t);
    return NULL;
  }
  ct_release(t);
  return ct_dict_get(m->params, name);
}

/* init: 0 = zeros everywhere (a model about to be loaded), 1 = GPT-2's initialisation */
static ct_gpt *gpt_make(const ct_gpt_config *c, ct_generator *g, int init, bool bias, bool gelu_erf) {
  if (ct_gpt_config_check(c) != CT_OK) return NULL;
  ct_gpt *m = calloc(1, sizeof *m);
  if (!m || !(m->params = ct_dict_new()) || !(m->layer = calloc((size_t)(c->n_layer ? c->n_layer : 1), sizeof *m->layer))) {
    ct_gpt_free(m);
    ct_set_error(CT_ERR_OOM, "out of memory creating a GPT");
    return NULL;
  }
  m->cfg = *c;
  m->bias = bias;
  m->gelu_erf = gelu_erf;
  int64_t C = c->n_embd;
  double std = 0.02, pstd = 0.02 / sqrt(2.0 * (double)(c->n_layer ? c->n_layer : 1));
  int w = init ? 2 : 0, one = init ? 1 : 0;
  bool prev = ct_set_grad_enabled(false);
  int64_t s_wte[2] = {c->vocab_size, C}, s_wpe[2] = {c->n_positions, C}, s_c[1] = {C};
  bool ok = (m->wte = add_param(m, "transformer.wte.weight", 2, s_wte, w, std, g)) &&
            (m->wpe = add_param(m, "transformer.wpe.weight", 2, s_wpe, w, std, g));
  for (int64_t l = 0; ok && l < c->n_layer; l++) {
    int64_t shapes[L_N][2] = {{C}, {C}, {C, 3 * C}, {3 * C}, {C, C}, {C}, {C}, {C}, {C, 4 * C}, {4 * C}, {4 * C, C}, {C}};
    static const int nds[L_N] = {1, 1, 2, 1, 2, 1, 1, 1, 2, 1, 2, 1};
    for (int k = 0; ok && k < L_N; k++) {
      if (!bias && nds[k] == 1 && k != L_LN1_W && k != L_LN2_W) continue; /* a bias: none */
      char name[96];
      snprintf(name, sizeof name, "transformer.h.%lld.%s", (long long)l, layer_names[k]);
      int kind = (k == L_LN1_W || k == L_LN2_W) ? one : nds[k] == 2 ? w : 0;
      double sd = (k == L_APROJ_W || k == L_MPROJ_W) ? pstd : std;
      ok = (m->layer[l][k] = add_param(m, name, nds[k], shapes[k], kind, sd, g)) != NULL;
    }
  }
  ok = ok && (m->lnf_w = add_param(m, "transformer.ln_f.weight", 1, s_c, one, 0, g)) &&
       (!bias || (m->lnf_b = add_param(m, "transformer.ln_f.bias", 1, s_c, 0, 0, g)));
  ct_set_grad_enabled(prev);
  if (!ok) {
    ct_gpt_free(m);
    return NULL;
  }
  return m;
}

ct_gpt *ct_gpt_new(const ct_gpt_config *c, ct_generator *g) { return gpt_make(c, g, 1, true, false); }

ct_gpt *ct_gpt_new_variant(const ct_gpt_config *c, bool bias, const char *gelu, ct_generator *g) {
  if (!gelu || (strcmp(gelu, "tanh") && strcmp(gelu, "none"))) {
    ct_set_error(CT_ERR_RUNTIME, "approximate argument must be either none or tanh.");
    return NULL;
  }
  return gpt_make(c, g, 1, bias, !strcmp(gelu, "none"));
}

bool ct_gpt_has_bias(const ct_gpt *m) { return m && m->bias; }
const char *ct_gpt_gelu(const ct_gpt *m) { return m && m->gelu_erf ? "none" : "tanh"; }

/* The device of the model's parameters (they all live on one: ct_gpt_to_device moves them together). */
static ct_device gpt_device(const ct_gpt *m) { return m && m->wte ? ct_tensor_device(m->wte) : ct_cpu(); }

ct_status ct_gpt_to_device(ct_gpt *m, ct_device dev) {
  if (!m) return CT_ERR(CT_ERR_VALUE, "GPT model is NULL");
  if (!ct_device_available(dev))
    return CT_ERR(CT_ERR_RUNTIME, "GPT.to: device %s:%d is not available", ct_device_type_name(dev.type), dev.index);
  bool prev = ct_set_grad_enabled(false);
  ct_status st = CT_OK;
  for (int64_t i = 0; i < ct_dict_len(m->params) && st == CT_OK; i++) {
    ct_tensor *t = ct_dict_tensor(m->params, i);
    ct_device d = ct_tensor_device(t);
    if (d.type == dev.type && d.index == dev.index) continue;
    ct_tensor *nt = ct_to_device(t, dev);
    if (!nt || ct_requires_grad_(nt, ct_requires_grad(t)) != CT_OK) {
      ct_release(nt);
      st = ct_last_status();
      break;
    }
    /* the borrowed pointers follow the dict's entry (switched before the old tensor can go) */
    ct_tensor **slots[4] = {&m->wte, &m->wpe, &m->lnf_w, &m->lnf_b};
    for (int k = 0; k < 4; k++)
      if (*slots[k] == t) *slots[k] = nt;
    for (int64_t l = 0; l < m->cfg.n_layer; l++)
      for (int k = 0; k < L_N; k++)
        if (m->layer[l][k] == t) m->layer[l][k] = nt;
    st = ct_dict_set(m->params, ct_dict_name(m->params, i), nt);
    ct_release(nt);
  }
  ct_set_grad_enabled(prev);
  return st;
}

int64_t ct_gpt_num_params(const ct_gpt *m) {
  if (!m) return 0;
  int64_t n = 0;
  for (int64_t i = 0; i < ct_dict_len(m->params); i++) n += ct_numel(ct_dict_tensor(m->params, i));
  return n;
}

ct_dict *ct_gpt_state_dict(const ct_gpt *m) {
  if (!m) {
    ct_set_error(CT_ERR_VALUE, "GPT model is NULL");
    return NULL;
  }
  ct_dict *d = ct_dict_new();
  if (!d) {
    ct_set_error(CT_ERR_OOM, "out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < ct_dict_len(m->params); i++)
    if (ct_dict_set(d, ct_dict_name(m->params, i), ct_dict_tensor(m->params, i)) != CT_OK) goto fail;
  if (ct_dict_set(d, "lm_head.weight", m->wte) != CT_OK) goto fail;
  return d;
fail:
  ct_dict_free(d);
  return NULL;
}

/* ---- state dict loading: PyTorch's load_state_dict messages ---- */
static void shape_str(const ct_tensor *t, char *buf, size_t cap) {
  size_t o = (size_t)snprintf(buf, cap, "torch.Size([");
  for (int d = 0; d < ct_ndim(t) && o < cap; d++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%lld", d ? ", " : "", (long long)ct_shape(t)[d]);
  if (o < cap) snprintf(buf + o, cap - o, "])");
}

static bool ignored_key(const char *k) {
  size_t n = strlen(k);
  return (n >= 10 && !strcmp(k + n - 10, ".attn.bias")) || (n >= 18 && !strcmp(k + n - 18, ".attn.masked_bias")) ||
         !strcmp(k, "lm_head.weight");
}

static const char *strip_prefix(const char *k) { return strncmp(k, "transformer.", 12) ? k : k + 12; }

ct_status ct_gpt_load_state_dict(ct_gpt *m, const ct_dict *sd) {
  if (!m || !sd) return CT_ERR(CT_ERR_VALUE, "load_state_dict: model or state dict is NULL");
  ctj_buf missing = {0}, unexpected = {0}, sizes = {0};
  int64_t np = ct_dict_len(m->params), ns = ct_dict_len(sd);
  const ct_tensor **src = calloc((size_t)(np ? np : 1), sizeof *src);
  if (!src) return CT_ERR(CT_ERR_OOM, "out of memory");
  /* match parameters with or without "transformer." (files saved from GPT2Model have none) */
  for (int64_t j = 0; j < ns; j++) {
    const char *k = ct_dict_name(sd, j);
    bool used = false;
    for (int64_t i = 0; i < np && !used; i++)
      if (!strcmp(strip_prefix(ct_dict_name(m->params, i)), strip_prefix(k))) {
        src[i] = ct_dict_tensor(sd, j);
        used = true;
      }
    if (!used && !ignored_key(k)) {
      ctj_buf_puts(&unexpected, unexpected.n ? ", \"" : "\"");
      ctj_buf_puts(&unexpected, k);
      ctj_buf_puts(&unexpected, "\"");
    }
  }
  for (int64_t i = 0; i < np; i++) {
    const char *name = ct_dict_name(m->params, i);
    ct_tensor *p = ct_dict_tensor(m->params, i);
    if (!src[i]) {
      ctj_buf_puts(&missing, missing.n ? ", \"" : "\"");
      ctj_buf_puts(&missing, name);
      ctj_buf_puts(&missing, "\"");
      continue;
    }
    bool same = ct_ndim(p) == ct_ndim(src[i]);
    for (int d = 0; same && d < ct_ndim(p); d++) same = ct_shape(p)[d] == ct_shape(src[i])[d];
    if (!same) {
      char a[128], b[128];
      shape_str(src[i], a, sizeof a);
      shape_str(p, b, sizeof b);
      ctj_buf_printf(&sizes, "\n\tsize mismatch for %s: copying a param with shape %s from checkpoint, the shape in current model is %s.",
                     name, a, b);
    }
  }
  ct_status st = CT_OK;
  if (missing.n || unexpected.n || sizes.n) {
    ctj_buf msg = {0};
    ctj_buf_puts(&msg, "Error(s) in loading state_dict for GPT2LMHeadModel:");
    if (missing.n) ctj_buf_printf(&msg, "\n\tMissing key(s) in state_dict: %s. ", missing.p);
    if (unexpected.n) ctj_buf_printf(&msg, "\n\tUnexpected key(s) in state_dict: %s. ", unexpected.p);
    if (sizes.n) ctj_buf_puts(&msg, sizes.p);
    st = CT_ERR(CT_ERR_RUNTIME, "%s", msg.p ? msg.p : "out of memory");
    ctj_buf_free(&msg);
  } else {
    bool prev = ct_set_grad_enabled(false);
    for (int64_t i = 0; i < np && st == CT_OK; i++) st = ct_copy_(ct_dict_tensor(m->params, i), src[i]);
    ct_set_grad_enabled(prev);
  }
  ctj_buf_free(&missing);
  ctj_buf_free(&unexpected);
  ctj_buf_free(&sizes);
  free(src);
  return st;
}

/* ---- forward ---- */
static bool check_idx(const ct_gpt *m, const ct_tensor *idx, const char *what) {
  if (!idx) {
    ct_set_error(CT_ERR_VALUE, "%s: idx is NULL", what);
    return false;
  }
  if (ct_tensor_dtype(idx) != CT_INT64) {
    ct_set_error(CT_ERR_RUNTIME, "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.%sTensor instead (while checking arguments for embedding)",
                 ct_tensor_dtype(idx) == CT_FLOAT32 ? "Float" : ct_dtype_torch_name(ct_tensor_dtype(idx)));
    return false;
  }
  if (ct_ndim(idx) < 1 || ct_ndim(idx) > 2) {
    ct_set_error(CT_ERR_VALUE, "%s: idx must be [B, T] or [T], got %d dims", what, ct_ndim(idx));
    return false;
  }
  return true;
}

/* One transformer block on x [B, T, C] (new reference). attn(q, k, v) is given by the caller:
 * the full causal attention or the cached one. */
typedef ct_tensor *(*attn_fn)(void *ctx, int64_t layer, ct_tensor *q, ct_tensor *k, ct_tensor *v);

static bool cpu_f32_dense(const ct_tensor *t) {
  return t->storage->device.type == CT_DEVICE_CPU && t->dtype == CT_FLOAT32 && ct_is_contiguous(t);
}

/* Decoding (no autograd, at most GPT_MV_MAX_ROWS rows, float32 on the CPU): x2 [rows, K] times
 * w ([K, N], or [N, K] when w_nk) plus b through gpt_decode.c's matrix-vector products, which read
 * each weight once; the GEMM would repack the whole weight for every token. NULL (no error set)
 * when not applicable. */
static ct_tensor *matvec(const ct_tensor *x2, const ct_tensor *w, bool w_nk, const ct_tensor *b, bool *used) {
  *used = false;
  int64_t rows = ct_shape(x2)[0], K = ct_shape(x2)[1];
  if (ct_is_grad_enabled() || rows > GPT_MV_MAX_ROWS || !cpu_f32_dense(x2) || ct_ndim(w) != 2 || !cpu_f32_dense(w) ||
      ct_shape(w)[w_nk ? 1 : 0] != K || (b && (!cpu_f32_dense(b) || ct_ndim(b) != 1)))
    return NULL;
  int64_t N = ct_shape(w)[w_nk ? 0 : 1], so[2] = {rows, N};
  if (b && ct_shape(b)[0] != N) return NULL;
  *used = true;
  ct_tensor *y = ct_empty(2, so, ct_opts_dtype(CT_FLOAT32));
  if (y)
    gpt_matvec_f32((const float *)ct_cpu_ptr(x2), rows, K, (const float *)ct_cpu_ptr(w), N, w_nk,
                   b ? (const float *)ct_cpu_ptr(b) : NULL, (float *)ct_cpu_ptr(y));
  return y;
}

/* CUDA's PyTorch-style bf16 autocast (ct_cuda_set_autocast_bf16_outputs) applies to x */
static bool gpt_autocast_out(const ct_tensor *x) {
  return x->storage->device.type == CT_DEVICE_CUDA && ct_cuda_autocast_bf16_outputs();
}

/* CT_BF16O_LOSS=ce: under that mode the loss is cross_entropy over the bfloat16 logits, as PyTorch's
 * autocast step computes it (see ct_gpt_forward); read at every forward so one process can compare */
static bool gpt_bf16o_loss_ce(void) {
  const char *e = getenv("CT_BF16O_LOSS");
  return e && !strcmp(e, "ce");
}

/* Conv1D: x [..., in] @ W [in, out] + b, as one addmm over the flattened rows. */
static ct_tensor *conv1d(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b) {
  int nd = ct_ndim(x);
  int64_t rows = 1;
  for (int d = 0; d < nd - 1; d++) rows *= ct_shape(x)[d];
  int64_t s2[2] = {rows, ct_shape(x)[nd - 1]};
  ct_tensor *x2 = ct_reshape(x, 2, s2);
  bool mv = false;
  ct_tensor *y = x2 ? matvec(x2, w, false, b, &mv) : NULL;
  if (mv) b = NULL; /* added by matvec */
  /* mm then add: the packed GEMM writes a product straight into its output only without a
   * C0 term, so addmm's bias would send every tile through its scalar write-back. Under CUDA's
   * PyTorch-style bf16 autocast, addmm as HF's Conv1D does: a bfloat16 result with the bias in it */
  if (x2 && !mv && b && gpt_autocast_out(x)) {
    y = ct_addmm(b, x2, w, ct_si(1), ct_si(1));
    b = NULL;
  } else if (x2 && !mv) y = ct_mm(x2, w);
  ct_release(x2);
  if (y && b) {
    ct_tensor *yb = ct_add(y, b);
    ct_release(y);
    y = yb;
  }
  if (!y) return NULL;
  int64_t so[CT_MAX_DIMS];
  for (int d = 0; d < nd - 1; d++) so[d] = ct_shape(x)[d];
  so[nd - 1] = ct_shape(w)[1];
  ct_tensor *r = ct_view(y, nd, so);
  ct_release(y);
  return r;
}

/* ---- fused bias + GELU (the MLP's activation) ----
 * gelu(y + b) in one pass over y (a GEMM's output, so the GEMM itself needs no bias), and a
 * backward that computes GELU's derivative in float32 with the vector tanh/exp/gelu row
 * kernels and the bias gradient (column sums) in the same pass: the generic derivative
 * kernel evaluates tanh per element in double and was ~15% of a small GPT's step. Rows go
 * over the thread pool. Float32 contiguous CPU tensors only; anything else composes ops. */
#define GELU_K0 0.7978845608028654 /* sqrt(2 / pi) */
#define GELU_K1 0.044715
#define GELU_BLK 1024

typedef struct {
  const float *y, *b, *g;
  float *out, *du;
  double *dbp; /* per-task column sums [ntask][cols] */
  int64_t rows, cols, grain;
  bool erf;
} gelu_ctx;

/* the vector row kernels decline when the fast paths were switched off after the forward: then libm */
static void row_map(int op, bool gelu_tanh, const float *x, float *y, int64_t n) {
  ct_attrs a = {0};
  a.k[0] = gelu_tanh;
  char *p[2] = {(char *)y, (char *)x};
  int64_t st[2] = {4, 4};
  if (ct_fast_unary_loop_f32(op, &a, p, st, n)) return;
  for (int64_t i = 0; i < n; i++) {
    double v = x[i];
    y[i] = (float)(op == CT_OP_tanh ? tanh(v)
                   : op == CT_OP_exp ? exp(v)
                   : gelu_tanh       ? 0.5 * v * (1 + tanh(GELU_K0 * (v + GELU_K1 * v * v * v)))
                                     : 0.5 * v * (1 + erf(v * M_SQRT1_2)));
  }
}

/* u = y + b over n elements starting at column c0 of a row */
static void gelu_pre(const float *y, const float *b, float *u, int64_t n) {
  if (b)
    for (int64_t i = 0; i < n; i++) u[i] = y[i] + b[i];
  else
    memcpy(u, y, (size_t)n * sizeof *u);
}

static void gelu_fwd_range(void *vctx, int64_t r0, int64_t r1) {
  gelu_ctx *k = vctx;
  for (int64_t r = r0; r < r1; r++)
    for (int64_t c0 = 0; c0 < k->cols; c0 += GELU_BLK) {
      int64_t n = k->cols - c0 < GELU_BLK ? k->cols - c0 : GELU_BLK;
      float *o = k->out + r * k->cols + c0;
      gelu_pre(k->y + r * k->cols + c0, k->b ? k->b + c0 : NULL, o, n);
      row_map(CT_OP_gelu, !k->erf, o, o, n);
    }
}

static void gelu_bwd_range(void *vctx, int64_t t0, int64_t t1) {
  gelu_ctx *k = vctx;
  float u[GELU_BLK], t[GELU_BLK], e[GELU_BLK];
  for (int64_t task = t0; task < t1; task++) {
    double *db = k->dbp ? k->dbp + task * k->cols : NULL;
    if (db) memset(db, 0, (size_t)k->cols * sizeof *db);
    int64_t r1 = (task + 1) * k->grain < k->rows ? (task + 1) * k->grain : k->rows;
    for (int64_t r = task * k->grain; r < r1; r++)
      for (int64_t c0 = 0; c0 < k->cols; c0 += GELU_BLK) {
        int64_t n = k->cols - c0 < GELU_BLK ? k->cols - c0 : GELU_BLK, off = r * k->cols + c0;
        gelu_pre(k->y + off, k->b ? k->b + c0 : NULL, u, n);
        const float *g = k->g + off;
        float *du = k->du + off;
        if (!k->erf) { /* d/du 0.5 u (1 + tanh(s)), s = K0 (u + K1 u^3) */
          for (int64_t i = 0; i < n; i++) e[i] = (float)GELU_K0 * (u[i] + (float)GELU_K1 * u[i] * u[i] * u[i]);
          row_map(CT_OP_tanh, false, e, t, n);
          for (int64_t i = 0; i < n; i++) {
            float th = t[i], ds = (float)GELU_K0 * (1.0f + 3.0f * (float)GELU_K1 * u[i] * u[i]);
            du[i] = g[i] * (0.5f * (1.0f + th) + 0.5f * u[i] * (1.0f - th * th) * ds);
          }
        } else { /* d/du u Phi(u) = Phi(u) + u phi(u); Phi(u) = gelu(u) / u away from 0 */
          for (int64_t i = 0; i < n; i++) e[i] = -0.5f * u[i] * u[i];
          row_map(CT_OP_exp, false, e, e, n);
          row_map(CT_OP_gelu, false, u, t, n); /* the erf form */
          for (int64_t i = 0; i < n; i++) {
            float Phi = fabsf(u[i]) > 1e-3f ? t[i] / u[i] : 0.5f + 0.3989422804014327f * u[i];
            du[i] = g[i] * (Phi + u[i] * 0.3989422804014327f * e[i]);
          }
        }
        if (db)
          for (int64_t i = 0; i < n; i++) db[c0 + i] += du[i];
      }
  }
}

static bool gelu_fusable(const ct_tensor *y, const ct_tensor *b) {
  if (!ct_fast_enabled() || y->storage->device.type != CT_DEVICE_CPU || y->dtype != CT_FLOAT32 || !ct_is_contiguous(y) ||
      y->ndim < 1 || ct_numel(y) == 0)
    return false;
  return !b || (b->storage->device.type == CT_DEVICE_CPU && b->dtype == CT_FLOAT32 && ct_is_contiguous(b) &&
                b->ndim == 1 && b->shape[0] == y->shape[y->ndim - 1]);
}

static ct_status bw_gelu_bias(ct_node *n, ct_tensor *const *gout, ct_tensor **gin) {
  ct_tensor *y = ct_node_saved_in(n, 0), *b = n->saved_in[1].t ? ct_node_saved_in(n, 1) : NULL;
  if (!y || (n->saved_in[1].t && !b)) return ct_last_status();
  ct_tensor *g = ct_contiguous(gout[0]);
  ct_tensor *du = g ? ct_empty(y->ndim, y->shape, ct_opts_dtype(CT_FLOAT32)) : NULL;
  if (!du) {
    ct_release(g);
    return ct_last_status();
  }
  int64_t cols = y->shape[y->ndim - 1], rows = ct_numel(y) / cols;
  gelu_ctx k = {(const float *)ct_cpu_ptr(y), b ? (const float *)ct_cpu_ptr(b) : NULL, (const float *)ct_cpu_ptr(g),
                NULL, (float *)ct_cpu_ptr(du), NULL, rows, cols, 0, n->a.k[0] != 0};
  int64_t grain = (65536 + cols - 1) / cols, ntask;
  k.grain = grain < 1 ? 1 : grain;
  ntask = (rows + k.grain - 1) / k.grain;
  bool want_db = b && ct_node_needs_grad(n, 1);
  if (want_db && !(k.dbp = ct_xmalloc((size_t)(ntask * cols) * sizeof *k.dbp))) {
    ct_release(g);
    ct_release(du);
    return ct_last_status();
  }
  ct_parallel_for(ntask, 1, gelu_bwd_range, &k);
  ct_release(g);
  ct_status st = CT_OK;
  if (want_db) {
    ct_tensor *db = ct_empty(1, &cols, ct_opts_dtype(CT_FLOAT32));
    if (db) {
      float *d = (float *)ct_cpu_ptr(db);
      for (int64_t c = 0; c < cols; c++) {
        double s = 0;
        for (int64_t t = 0; t < ntask; t++) s += k.dbp[t * cols + c];
        d[c] = (float)s;
      }
      gin[1] = db;
    } else {
      st = ct_last_status();
    }
    free(k.dbp);
  }
  if (ct_node_needs_grad(n, 0)) gin[0] = du;
  else ct_release(du);
  return st;
}

/* gelu(y + b) (b may be NULL); erf: the exact GELU, else the tanh form */
static ct_tensor *gelu_bias(ct_tensor *y, const ct_tensor *b, bool erf) {
  if (!gelu_fusable(y, b)) {
    ct_tensor *u = b ? ct_add(y, b) : y;
    return u ? ct_gelu(u, erf ? "none" : "tanh") : NULL;
  }
  ct_tensor *out = ct_empty(y->ndim, y->shape, ct_opts_dtype(CT_FLOAT32));
  if (!out) return NULL;
  int64_t cols = y->shape[y->ndim - 1], rows = ct_numel(y) / cols, grain = (65536 + cols - 1) / cols;
  gelu_ctx k = {(const float *)ct_cpu_ptr(y), b ? (const float *)ct_cpu_ptr(b) : NULL, NULL, (float *)ct_cpu_ptr(out),
                NULL, NULL, rows, cols, grain, erf};
  ct_parallel_for(rows, grain, gelu_fwd_range, &k);
  ct_tensor *in[2] = {y, (ct_tensor *)b};
  ct_attrs a = {0};
  a.k[0] = erf;
  if (!ct_record_node(-1, 2, in, 1, &out, &a, CT_SAVE_IN(0) | (b ? CT_SAVE_IN(1) : 0), bw_gelu_bias,
                      "GeluBiasBackward") &&
      ct_last_status() != CT_OK) {
    ct_release(out);
    return NULL;
  }
  return out;
}

/* ---- the fused qkv product split into q, k, v ----
 * Three narrow views would each get a narrow backward: a zero-filled [..., 3C] gradient, the
 * slice copied in, and the three summed by the engine (3 fills, 3 copies, 2 adds of the full
 * buffer per layer). One node for the three pieces, whose backward writes each piece's
 * gradient into its slice of one buffer, as PyTorch's split backward (a cat) does. The pieces
 * alias qkv's storage and share its version counter (no copy in the forward). */
static ct_status bw_qkv_split(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (!ct_node_needs_grad(n, 0)) return CT_OK;
  const ct_meta *m = &n->in_meta[0];
  ct_options o = ct_opts_dtype(m->dtype);
  o.device = m->device;
  int d = m->ndim - 1;
  int64_t C = m->shape[d] / 3;
  ct_tensor *buf = ct_empty(m->ndim, m->shape, o);
  ct_status st = buf ? CT_OK : ct_last_status();
  for (int j = 0; j < 3 && st == CT_OK; j++) {
    ct_tensor *s = ct_narrow(buf, d, j * C, C);
    st = !s ? ct_last_status() : g[j] ? ct_copy_(s, g[j]) : ct_fill_(s, ct_sf(0)) ? ct_last_status() : CT_OK;
    ct_release(s);
  }
  if (st != CT_OK) {
    ct_release(buf);
    return st;
  }
  gin[0] = buf;
  return CT_OK;
}

/* qkv [..., 3C] -> out[0..2] [..., C] (new references); NULL entries on failure */
static bool qkv_split(ct_tensor *qkv, ct_tensor **out) {
  int d = qkv->ndim - 1;
  int64_t C = qkv->shape[d] / 3;
  out[0] = out[1] = out[2] = NULL;
  if (!(ct_grad_mode_recording() && ct_tensor_requires_grad(qkv))) {
    for (int j = 0; j < 3; j++)
      if (!(out[j] = ct_narrow(qkv, d, j * C, C))) return false;
    return true;
  }
  int64_t sh[CT_MAX_DIMS];
  memcpy(sh, qkv->shape, sizeof sh);
  sh[d] = C;
  for (int j = 0; j < 3; j++) {
    if (!(out[j] = ct_tensor_over(qkv->storage, qkv->ndim, sh, qkv->stride, qkv->offset + j * C * qkv->stride[d],
                                  qkv->dtype)))
      return false;
    ct_vcell_share(out[j], qkv);
    out[j]->is_inference = qkv->is_inference;
  }
  ct_clear_error();
  if (!ct_record_node(-1, 1, &qkv, 3, out, NULL, CT_SAVE_NONE, bw_qkv_split, "SplitWithSizesBackward0") &&
      ct_last_status() != CT_OK)
    return false;
  return true;
}

/* x itself when off (every tensor here belongs to the caller's scope, so no extra reference) */
static ct_tensor *dropout(ct_tensor *x, double p, bool training, ct_generator *g) {
  if (!training || p == 0) return x;
  return ct_dropout(x, p, true, g);
}

/* x [B, T, C] -> x after every block and ln_f. Runs inside the caller's scope. */
static ct_tensor *trunk(ct_gpt *m, ct_tensor *x, bool training, ct_generator *g, attn_fn attn, void *actx) {
  const ct_gpt_config *c = &m->cfg;
  int64_t B = ct_shape(x)[0], T = ct_shape(x)[1], C = c->n_embd, H = c->n_head, hd = C / H;
  int64_t C1[1] = {C};
  double p = training ? c->dropout : 0;
  for (int64_t l = 0; l < c->n_layer && x; l++) {
    ct_tensor **P = m->layer[l];
    ct_tensor *h = ct_layer_norm(x, 1, C1, P[L_LN1_W], P[L_LN1_B], c->layer_norm_epsilon);
    ct_tensor *qkv = h ? conv1d(h, P[L_ATTN_W], P[L_ATTN_B]) : NULL;
    if (!qkv) return NULL;
    int64_t s4[4] = {B, T, H, hd};
    ct_tensor *sp[3];
    if (!qkv_split(qkv, sp)) return NULL; /* pieces left in the scope */
    ct_tensor *q = ct_transpose(ct_view(sp[0], 4, s4), 1, 2);
    ct_tensor *k = ct_transpose(ct_view(sp[1], 4, s4), 1, 2);
    ct_tensor *v = ct_transpose(ct_view(sp[2], 4, s4), 1, 2);
    if (!q || !k || !v) return NULL;
    ct_tensor *y = attn(actx, l, q, k, v); /* [B, H, T, hd] */
    int64_t s3[3] = {B, T, C};
    y = y ? ct_reshape(ct_transpose(y, 1, 2), 3, s3) : NULL;
    y = y ? conv1d(y, P[L_APROJ_W], P[L_APROJ_B]) : NULL;
    y = y ? dropout(y, p, training, g) : NULL;
    x = y ? ct_add(x, y) : NULL;
    h = x ? ct_layer_norm(x, 1, C1, P[L_LN2_W], P[L_LN2_B], c->layer_norm_epsilon) : NULL;
    bool fcb = h && gpt_autocast_out(h); /* the bias in the product (bfloat16), see conv1d */
    h = h ? conv1d(h, P[L_FC_W], fcb ? P[L_FC_B] : NULL) : NULL;
    h = h ? gelu_bias(h, fcb ? NULL : P[L_FC_B], m->gelu_erf) : NULL;
    h = h ? conv1d(h, P[L_MPROJ_W], P[L_MPROJ_B]) : NULL;
    h = h ? dropout(h, p, training, g) : NULL;
    x = h ? ct_add(x, h) : NULL;
  }
  return x ? ct_layer_norm(x, 1, C1, m->lnf_w, m->lnf_b, c->layer_norm_epsilon) : NULL;
}

typedef struct {
  double p;
  bool training;
  ct_generator *g;
} full_attn;

static ct_tensor *attn_full(void *vctx, int64_t layer, ct_tensor *q, ct_tensor *k, ct_tensor *v) {
  full_attn *a = vctx;
  return ct_scaled_dot_product_attention(q, k, v, NULL, a->training ? a->p : 0, true, NULL, a->g);
}

/* token + position embeddings of idx [B, T] with positions start.. */
static ct_tensor *embed(ct_gpt *m, const ct_tensor *idx, int64_t start) {
  int64_t T = ct_shape(idx)[1];
  ct_options o = ct_opts_dtype(CT_INT64);
  o.device = ct_tensor_device(idx);
  ct_tensor *te = ct_embedding(idx, m->wte, NULL); /* stop at the first failure: its message stays */
  ct_tensor *pos = te ? ct_arange(ct_si(start), ct_si(start + T), ct_si(1), &o) : NULL;
  ct_tensor *pe = pos ? ct_embedding(pos, m->wpe, NULL) : NULL;
  return pe ? ct_add(te, pe) : NULL;
}

/* lm_head: x [..., C] @ wte^T -> [..., V] */
static ct_tensor *lm_head(ct_gpt *m, ct_tensor *x) {
  int nd = ct_ndim(x);
  int64_t rows = 1;
  for (int d = 0; d < nd - 1; d++) rows *= ct_shape(x)[d];
  int64_t s2[2] = {rows, m->cfg.n_embd};
  ct_tensor *x2 = ct_reshape(x, 2, s2);
  bool mv = false;
  ct_tensor *l = x2 ? matvec(x2, m->wte, true, NULL, &mv) : NULL;
  if (x2 && !mv) l = ct_mm(x2, ct_t(m->wte));
  if (!l) return NULL;
  int64_t so[CT_MAX_DIMS];
  for (int d = 0; d < nd - 1; d++) so[d] = ct_shape(x)[d];
  so[nd - 1] = m->cfg.vocab_size;
  return ct_view(l, nd, so);
}

ct_status ct_gpt_forward(ct_gpt *m, const ct_tensor *idx, const ct_tensor *targets, bool training, ct_generator *g,
                         ct_tensor **logits_out, ct_tensor **loss) {
  if (logits_out) *logits_out = NULL;
  if (loss) *loss = NULL;
  if (!m) return CT_ERR(CT_ERR_VALUE, "GPT model is NULL");
  if (!check_idx(m, idx, "gpt forward")) return ct_last_status();
  if (!logits_out && !loss) return CT_ERR(CT_ERR_VALUE, "gpt forward: nothing to compute (logits_out and loss are NULL)");
  if (loss && !targets) return CT_ERR(CT_ERR_VALUE, "gpt forward: a loss needs targets");
  int64_t T = ct_shape(idx)[ct_ndim(idx) - 1];
  if (T > m->cfg.n_positions)
    return CT_ERR(CT_ERR_VALUE, "Cannot forward sequence of length %lld, block size is only %lld", (long long)T,
                  (long long)m->cfg.n_positions);
  if (targets) {
    bool same = ct_ndim(targets) == ct_ndim(idx) && ct_tensor_dtype(targets) == CT_INT64;
    for (int d = 0; same && d < ct_ndim(idx); d++) same = ct_shape(targets)[d] == ct_shape(idx)[d];
    if (!same) return CT_ERR(CT_ERR_VALUE, "gpt forward: targets must be int64 with idx's shape");
  }
  ct_scope *s = ct_scope_begin();
  const ct_tensor *idx2 = ct_ndim(idx) == 1 ? ct_unsqueeze(idx, 0) : idx;
  ct_tensor *x = idx2 ? embed(m, idx2, 0) : NULL;
  x = x ? dropout(x, m->cfg.dropout, training, g) : NULL;
  full_attn a = {m->cfg.dropout, training, g};
  x = x ? trunk(m, x, training, g, attn_full, &a) : NULL;
  ct_tensor *l = NULL;
  bool on_cuda = gpt_device(m).type == CT_DEVICE_CUDA;
  if (x && loss && !logits_out && !on_cuda) {
    /* only the loss: the fused classifier + cross-entropy (src/nn/linear_ce.c) never holds the
     * [B*T, V] logits for backward (GPT-2's vocabulary makes them the largest activation) */
    int64_t C = m->cfg.n_embd, flat[2] = {-1, C}, tf[1] = {-1};
    ct_tensor *xf = ct_reshape(x, 2, flat), *tflat = xf ? ct_reshape(targets, 1, tf) : NULL;
    l = tflat ? ct_linear_cross_entropy(xf, m->wte, tflat, CT_REDUCTION_MEAN, -1, 0) : NULL;
    ct_status st = l ? CT_OK : ct_last_status();
    if (l) *loss = ct_keep(l);
    ct_scope_end(s);
    return st != CT_OK ? st : l ? CT_OK : CT_ERR(CT_ERR_RUNTIME, "gpt forward failed");
  }
  ct_tensor *logits = x ? lm_head(m, x) : NULL;
  if (logits && ct_ndim(idx) == 1) logits = ct_squeeze_dim(logits, 0);
  if (logits && loss) {
    int64_t V = m->cfg.vocab_size, flat[2] = {-1, V}, tf[1] = {-1};
    ct_tensor *lf = ct_reshape(logits, 2, flat), *tflat = ct_reshape(targets, 1, tf);
    if (on_cuda && gpt_autocast_out(x) && gpt_bf16o_loss_ce()) {
      /* CT_BF16O_LOSS=ce under PyTorch-style autocast: PyTorch's dtype flow, cross_entropy over the
       * bfloat16 logits (autocast's float32 list: a float32 copy; the target's logit is the rounded
       * bfloat16 one and the logits' gradient (softmax - onehot) / N is rounded to bfloat16 once).
       * The default below takes the target's logit in float32 from x and wte, so the onehot part of
       * the gradient bypasses the bfloat16 products. A diagnostic: it reads the targets on the host
       * (cross_entropy's range check), so it cannot be captured in a CUDA graph. */
      l = lf && tflat ? ct_cross_entropy(lf, tflat, NULL, CT_REDUCTION_MEAN, -100, 0.0) : NULL;
    } else if (on_cuda) {
      /* on the GPU the logits fit; cross-entropy as logsumexp(logits) - <x, wte[target]> (the
       * target's logit, as the lm_head computes it), averaged over every target (none ignored):
       * gather/scatter would read the targets on the host to check them, the embedding checks
       * them on the device, so the step has no host read and can be captured as a CUDA graph */
      int64_t d1[1] = {1}, xs[2] = {-1, m->cfg.n_embd};
      ct_tensor *lse = lf ? ct_logsumexp(lf, 1, d1, false) : NULL, *xf = lse ? ct_reshape(x, 2, xs) : NULL;
      ct_tensor *wy = xf && tflat ? ct_embedding(tflat, m->wte, NULL) : NULL, *xw = wy ? ct_mul(xf, wy) : NULL;
      ct_tensor *ty = xw ? ct_sum_dims(xw, 1, d1, false) : NULL, *d = ty ? ct_sub(lse, ty) : NULL;
      l = d ? ct_mean(d) : NULL;
    } else {
      l = lf && tflat ? ct_cross_entropy(lf, tflat, NULL, CT_REDUCTION_MEAN, -1, 0.0) : NULL;
    }
  }
  bool ok = logits && (!loss || l);
  if (ok) {
    if (logits_out) *logits_out = ct_keep(logits);
    if (loss) *loss = ct_keep(l);
  }
  ct_status st = ok ? CT_OK : ct_last_status();
  if (!ok && st == CT_OK) st = CT_ERR(CT_ERR_RUNTIME, "gpt forward failed");
  ct_scope_end(s);
  return st;
}

/* ---- KV cache ---- */
struct ct_gpt_cache {
  int64_t batch, max_len, len, n_layer;
  ct_tensor **k, **v; /* [B, H, max_len, hd] per layer */
};

ct_gpt_cache *ct_gpt_cache_new(const ct_gpt *m, int64_t batch, int64_t max_len) {
  if (!m) {
    ct_set_error(CT_ERR_VALUE, "GPT model is NULL");
    return NULL;
  }
  if (batch <= 0 || max_len <= 0 || max_len > m->cfg.n_positions) {
    ct_set_error(CT_ERR_VALUE, "kv cache: batch must be positive and max_len in [1, %lld], got batch %lld, max_len %lld",
                 (long long)m->cfg.n_positions, (long long)batch, (long long)max_len);
    return NULL;
  }
  ct_gpt_cache *c = calloc(1, sizeof *c);
  int64_t L = m->cfg.n_layer;
  if (c) {
    c->k = calloc((size_t)(L ? L : 1), sizeof *c->k);
    c->v = calloc((size_t)(L ? L : 1), sizeof *c->v);
  }
  if (!c || !c->k || !c->v) {
    ct_gpt_cache_free(c);
    ct_set_error(CT_ERR_OOM, "out of memory");
    return NULL;
  }
  c->batch = batch;
  c->max_len = max_len;
  c->n_layer = L;
  int64_t H = m->cfg.n_head, s[4] = {batch, H, max_len, m->cfg.n_embd / H};
  ct_scope *sc = ct_scope_begin();
  bool ok = true;
  ct_options fo = ct_opts_dtype(CT_FLOAT32);
  fo.device = gpt_device(m);
  for (int64_t l = 0; l < L && ok; l++) {
    c->k[l] = ct_zeros(4, s, fo);
    c->v[l] = ct_zeros(4, s, fo);
    ok = c->k[l] && c->v[l];
    if (ok) {
      ct_keep(c->k[l]);
      ct_keep(c->v[l]);
    }
  }
  ct_scope_end(sc);
  if (!ok) {
    ct_gpt_cache_free(c);
    return NULL;
  }
  return c;
}

void ct_gpt_cache_free(ct_gpt_cache *c) {
  if (!c) return;
  for (int64_t l = 0; l < c->n_layer; l++) {
    if (c->k) ct_release(c->k[l]);
    if (c->v) ct_release(c->v[l]);
  }
  free(c->k);
  free(c->v);
  free(c);
}

int64_t ct_gpt_cache_len(const ct_gpt_cache *c) { return c ? c->len : 0; }
void ct_gpt_cache_reset(ct_gpt_cache *c) {
  if (c) c->len = 0;
}

typedef struct {
  ct_gpt_cache *c;
  int64_t t;
  ct_tensor *mask; /* [t, len + t] bool, or NULL */
} cached_attn;

static ct_tensor *attn_cached(void *vctx, int64_t layer, ct_tensor *q, ct_tensor *k, ct_tensor *v) {
  cached_attn *a = vctx;
  ct_gpt_cache *c = a->c;
  ct_tensor *kd = ct_narrow(c->k[layer], 2, c->len, a->t), *vd = ct_narrow(c->v[layer], 2, c->len, a->t);
  if (!kd || !vd || ct_copy_(kd, k) != CT_OK || ct_copy_(vd, v) != CT_OK) return NULL;
  ct_tensor *K = ct_narrow(c->k[layer], 2, 0, c->len + a->t), *V = ct_narrow(c->v[layer], 2, 0, c->len + a->t);
  if (!K || !V) return NULL;
  /* with nothing cached the causal mask is PyTorch's is_causal (top-left aligned); otherwise the new
   * queries see every cached key and the new keys up to their own position */
  if (c->len == 0) return ct_scaled_dot_product_attention(q, K, V, NULL, 0, true, NULL, NULL);
  return ct_scaled_dot_product_attention(q, K, V, a->mask, 0, false, NULL, NULL);
}

ct_tensor *ct_gpt_forward_cached(ct_gpt *m, ct_gpt_cache *c, const ct_tensor *idx, bool last_only) {
  if (!m || !c) {
    ct_set_error(CT_ERR_VALUE, "gpt forward_cached: model or cache is NULL");
    return NULL;
  }
  if (!check_idx(m, idx, "gpt forward_cached")) return NULL;
  if (ct_ndim(idx) != 2 || ct_shape(idx)[0] != c->batch) {
    ct_set_error(CT_ERR_VALUE, "gpt forward_cached: idx must be [%lld, t]", (long long)c->batch);
    return NULL;
  }
  if (c->n_layer != m->cfg.n_layer) {
    ct_set_error(CT_ERR_VALUE, "gpt forward_cached: the cache was made for another model");
    return NULL;
  }
  int64_t t = ct_shape(idx)[1];
  if (t == 0) {
    ct_set_error(CT_ERR_VALUE, "gpt forward_cached: no new tokens");
    return NULL;
  }
  if (c->len + t > c->max_len) {
    ct_set_error(CT_ERR_VALUE, "gpt forward_cached: %lld cached + %lld new positions exceed the cache's %lld",
                 (long long)c->len, (long long)t, (long long)c->max_len);
    return NULL;
  }
  bool prev = ct_set_grad_enabled(false);
  ct_scope *s = ct_scope_begin();
  cached_attn a = {c, t, NULL};
  bool ok = true;
  if (c->len > 0 && t > 1) {
    int64_t S = c->len + t, ms[2] = {t, S};
    bool *mb = malloc((size_t)(t * S));
    if (!mb) {
      ct_set_error(CT_ERR_OOM, "out of memory");
      ok = false;
    } else {
      for (int64_t i = 0; i < t; i++)
        for (int64_t j = 0; j < S; j++) mb[i * S + j] = j <= c->len + i;
      ct_options bo = ct_opts_dtype(CT_BOOL);
      bo.device = gpt_device(m);
      a.mask = ct_from_buffer(mb, CT_BOOL, 2, ms, bo);
      free(mb);
      ok = a.mask != NULL;
    }
  }
  ct_tensor *x = ok ? embed(m, idx, c->len) : NULL;
  x = x ? trunk(m, x, false, NULL, attn_cached, &a) : NULL;
  if (x && last_only) x = ct_select(x, 1, t - 1);
  ct_tensor *logits = x ? lm_head(m, x) : NULL;
  if (logits) {
    ct_keep(logits);
    c->len += t;
  }
  ct_scope_end(s);
  ct_set_grad_enabled(prev);
  return logits;
}

/* ---- checkpoints ---- */
static ct_status make_dir(const char *dir) {
  if (mkdir(dir, 0777) == 0 || errno == EEXIST) return CT_OK;
  return CT_ERR(CT_ERR_RUNTIME, "cannot create directory '%s': %s", dir, strerror(errno));
}

ct_status ct_gpt_save(const ct_gpt *m, const char *dir, const char *extra_json) {
  if (!m || !dir) return CT_ERR(CT_ERR_VALUE, "gpt save: model or directory is NULL");
  CT_TRY(make_dir(dir));
  const ct_gpt_config *c = &m->cfg;
  ctj_buf b = {0};
  ctj_buf_printf(&b,
                 "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
                 "  \"vocab_size\": %lld,\n  \"n_positions\": %lld,\n  \"n_ctx\": %lld,\n  \"n_embd\": %lld,\n"
                 "  \"n_layer\": %lld,\n  \"n_head\": %lld,\n  \"n_inner\": null,\n"
                 "  \"activation_function\": \"%s\",\n  \"resid_pdrop\": %.17g,\n  \"embd_pdrop\": %.17g,\n"
                 "  \"attn_pdrop\": %.17g,\n  \"layer_norm_epsilon\": %.17g,\n  \"initializer_range\": 0.02,\n"
                 "  \"scale_attn_weights\": true,\n  \"tie_word_embeddings\": true,\n  \"bos_token_id\": %lld,\n"
                 "  \"eos_token_id\": %lld",
                 (long long)c->vocab_size, (long long)c->n_positions, (long long)c->n_positions, (long long)c->n_embd,
                 (long long)c->n_layer, (long long)c->n_head, m->gelu_erf ? "gelu" : "gelu_new", c->dropout, c->dropout,
                 c->dropout, c->layer_norm_epsilon, (long long)(c->vocab_size - 1), (long long)(c->vocab_size - 1));
  if (!m->bias) ctj_buf_puts(&b, ",\n  \"bias\": false"); /* nanoGPT's bias=False (not a transformers key) */
  if (extra_json && *extra_json) {
    ctj_buf_puts(&b, ",\n  ");
    ctj_buf_puts(&b, extra_json);
  }
  ctj_buf_puts(&b, "\n}\n");
  if (b.oom) {
    ctj_buf_free(&b);
    return CT_ERR(CT_ERR_OOM, "out of memory");
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(b.p, 1, b.n, f) == b.n;
  if (f && fclose(f) != 0) ok = false;
  ctj_buf_free(&b);
  if (!ok) return CT_ERR(CT_ERR_RUNTIME, "cannot write '%s'", path);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  ct_dict *d = ct_dict_new();
  if (!d) return CT_ERR(CT_ERR_OOM, "out of memory");
  ct_status st = CT_OK;
  for (int64_t i = 0; i < ct_dict_len(m->params) && st == CT_OK; i++)
    st = ct_dict_set(d, ct_dict_name(m->params, i), ct_dict_tensor(m->params, i));
  if (st == CT_OK) st = ct_dict_set_meta(d, "format", "pt");
  if (st == CT_OK) st = ct_safetensors_save(path, d);
  ct_dict_free(d);
  return st;
}

/* config.json -> c, and nanoGPT's variants (bias, erf GELU) when asked for */
static ct_status read_config(const char *dir, ct_gpt_config *c, bool *bias, bool *gelu_erf) {
  if (!dir || !c) return CT_ERR(CT_ERR_VALUE, "gpt read_config: NULL argument");
  char path[4096];
  snprintf(path, sizeof path, "%s/config.json", dir);
  size_t n;
  char *s = ctj_read_file(path, &n);
  if (!s) return CT_ERR(CT_ERR_RUNTIME, "cannot read '%s'", path);
  char err[160];
  ctj *j = ctj_parse(s, n, err, sizeof err);
  free(s);
  if (!j) return CT_ERR(CT_ERR_VALUE, "%s: %s", path, err);
  ct_gpt_config g = ct_gpt_config_gpt2();
  g.vocab_size = (int64_t)ctj_get_num(j, "vocab_size", (double)g.vocab_size);
  g.n_positions = (int64_t)ctj_get_num(j, "n_positions", ctj_get_num(j, "n_ctx", (double)g.n_positions));
  g.n_embd = (int64_t)ctj_get_num(j, "n_embd", (double)g.n_embd);
  g.n_layer = (int64_t)ctj_get_num(j, "n_layer", (double)g.n_layer);
  g.n_head = (int64_t)ctj_get_num(j, "n_head", (double)g.n_head);
  g.dropout = ctj_get_num(j, "resid_pdrop", g.dropout);
  g.layer_norm_epsilon = ctj_get_num(j, "layer_norm_epsilon", g.layer_norm_epsilon);
  const ctj *inner = ctj_get(j, "n_inner");
  const char *act = ctj_get_str(j, "activation_function", "gelu_new");
  const ctj *jb = ctj_get(j, "bias");
  bool has_bias = !(jb && jb->type == CTJ_BOOL && !jb->b), erf = !strcmp(act, "gelu");
  ct_status st = CT_OK;
  if (inner && inner->type == CTJ_NUM && inner->num != 4.0 * (double)g.n_embd)
    st = CT_ERR(CT_ERR_NOT_IMPLEMENTED, "%s: n_inner other than 4 * n_embd is not supported", path);
  else if (strcmp(act, "gelu_new") && strcmp(act, "gelu_pytorch_tanh") && strcmp(act, "gelu"))
    st = CT_ERR(CT_ERR_NOT_IMPLEMENTED, "%s: activation_function '%s' is not supported (gelu_new or gelu)", path, act);
  ctj_free(j);
  if (st == CT_OK) st = ct_gpt_config_check(&g);
  if (st == CT_OK) {
    *c = g;
    if (bias) *bias = has_bias;
    if (gelu_erf) *gelu_erf = erf;
  }
  return st;
}

ct_status ct_gpt_read_config(const char *dir, ct_gpt_config *c) { return read_config(dir, c, NULL, NULL); }

ct_gpt *ct_gpt_load(const char *dir) {
  ct_gpt_config c;
  bool bias = true, erf = false;
  if (read_config(dir, &c, &bias, &erf) != CT_OK) return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  ct_dict *sd = NULL;
  if (ct_safetensors_load(path, &sd, false) != CT_OK) return NULL;
  ct_gpt *m = gpt_make(&c, NULL, 0, bias, erf);
  if (m && ct_gpt_load_state_dict(m, sd) != CT_OK) {
    ct_gpt_free(m);
    m = NULL;
  }
  ct_dict_free(sd);
  return m;
}

/* ---- sampling and generation ---- */
typedef struct {
  float p;
  int64_t id;
} prob_id;
static int by_prob_desc(const void *a, const void *b) {
  const prob_id *x = a, *y = b;
  if (x->p != y->p) return x->p < y->p ? 1 : -1;
  return (x->id > y->id) - (x->id < y->id); /* ties: lower id first, for determinism */
}

/* Moves the k best of v[0..n) (by_prob_desc's order) into v[0..k), unordered: a heap of the k best
 * so far with the worst at its root, O(n log k) where sorting everything costs O(n log n). */
static void select_best(prob_id *v, int64_t n, int64_t k) {
  for (int64_t i = 1; i < k; i++) /* sift up: build the heap */
    for (int64_t c = i; c > 0 && by_prob_desc(&v[(c - 1) / 2], &v[c]) < 0; c = (c - 1) / 2) {
      prob_id t = v[c];
      v[c] = v[(c - 1) / 2];
      v[(c - 1) / 2] = t;
    }
  for (int64_t i = k; i < n; i++) {
    if (by_prob_desc(&v[i], &v[0]) >= 0) continue; /* not better than the worst kept */
    prob_id t = v[0];
    v[0] = v[i];
    v[i] = t;
    for (int64_t p = 0;;) { /* sift down */
      int64_t l = 2 * p + 1, r = l + 1, w = p;
      if (l < k && by_prob_desc(&v[l], &v[w]) > 0) w = l;
      if (r < k && by_prob_desc(&v[r], &v[w]) > 0) w = r;
      if (w == p) break;
      t = v[p];
      v[p] = v[w];
      v[w] = t;
      p = w;
    }
  }
}

int64_t ct_gpt_pick_token(const float *logits, int64_t V, const ct_gpt_sampling *s, double u, float *probs) {
  if (!logits || !s || V <= 0) {
    ct_set_error(CT_ERR_VALUE, "pick_token: NULL logits or settings, or an empty vocabulary");
    return -1;
  }
  if (!(s->temperature >= 0) || s->top_k < 0 || !(s->top_p > 0 && s->top_p <= 1)) {
    ct_set_error(CT_ERR_VALUE, "sampling: temperature must be >= 0, top_k >= 0 and top_p in (0, 1], got %g, %lld, %g",
                 s->temperature, (long long)s->top_k, s->top_p);
    return -1;
  }
  prob_id *v = malloc((size_t)V * sizeof *v);
  if (!v) {
    ct_set_error(CT_ERR_OOM, "out of memory");
    return -1;
  }
  int64_t best = 0;
  for (int64_t i = 1; i < V; i++)
    if (logits[i] > logits[best] || (isnan(logits[i]) && !isnan(logits[best]))) best = i;
  double mx = logits[best];
  if (s->temperature == 0 || !isfinite(mx)) { /* greedy (or degenerate logits) */
    if (probs)
      for (int64_t i = 0; i < V; i++) probs[i] = i == best ? 1.0f : 0.0f;
    free(v);
    return best;
  }
  double sum = 0;
  for (int64_t i = 0; i < V; i++) {
    double e = exp(((double)logits[i] - mx) / s->temperature);
    if (!(e >= 0)) e = 0;
    v[i].p = (float)e;
    v[i].id = i;
    sum += e;
  }
  int64_t keep = s->top_k > 0 && s->top_k < V ? s->top_k : V;
  if (keep < V / 8) select_best(v, V, keep); /* only the top-k need an order */
  qsort(v, (size_t)(keep < V / 8 ? keep : V), sizeof *v, by_prob_desc);
  double kept = 0;
  for (int64_t i = 0; i < keep; i++) kept += v[i].p;
  if (s->top_p < 1) { /* smallest prefix reaching top_p of the (top-k) mass */
    double c = 0;
    for (int64_t i = 0; i < keep; i++) {
      c += v[i].p;
      if (c >= s->top_p * kept) {
        keep = i + 1;
        kept = c;
        break;
      }
    }
  }
  (void)sum;
  if (probs) {
    for (int64_t i = 0; i < V; i++) probs[i] = 0;
    for (int64_t i = 0; i < keep; i++) probs[v[i].id] = (float)(v[i].p / kept);
  }
  double target = u * kept, c = 0;
  int64_t pick = v[keep - 1].id;
  for (int64_t i = 0; i < keep; i++) {
    c += v[i].p;
    if (target < c) {
      pick = v[i].id;
      break;
    }
  }
  free(v);
  return pick;
}

static double uniform_draw(ct_generator *g) {
  int64_t one = 1;
  ct_tensor *r = ct_rand(1, &one, ct_opts_dtype(CT_FLOAT64), g);
  double u = 0;
  if (r) ct_item_double(r, &u);
  ct_release(r);
  return u;
}

ct_status ct_gpt_generate(ct_gpt *m, const int64_t *prompt, int64_t n_prompt, int64_t max_new, const ct_gpt_sampling *s,
                          ct_generator *g, ct_gpt_token_fn fn, void *user) {
  if (!m || !prompt || !s || n_prompt < 1 || max_new < 0)
    return CT_ERR(CT_ERR_VALUE, "generate: needs a model, a prompt of at least one token, settings and max_new >= 0");
  int64_t V = m->cfg.vocab_size, P = m->cfg.n_positions;
  for (int64_t i = 0; i < n_prompt; i++)
    if (prompt[i] < 0 || prompt[i] >= V)
      return CT_ERR(CT_ERR_INDEX, "index out of range in self (prompt token %lld is not in [0, %lld))", (long long)prompt[i],
                    (long long)V);
  int64_t cap = n_prompt + max_new;
  int64_t *hist = malloc((size_t)cap * sizeof *hist);
  float *logits = malloc((size_t)V * sizeof *logits), *probs = malloc((size_t)V * sizeof *probs);
  /* the cache holds at most the context: no more than this call will ever feed it */
  ct_gpt_cache *c = ct_gpt_cache_new(m, 1, cap < P ? cap : P);
  ct_status st = CT_OK;
  if (!hist || !logits || !probs) st = CT_ERR(CT_ERR_OOM, "out of memory");
  if (!c) st = ct_last_status();
  int64_t n = n_prompt, fed = 0; /* hist[0..n) are the tokens; the cache holds hist[fed - len .. fed) */
  if (st == CT_OK) memcpy(hist, prompt, (size_t)n_prompt * sizeof *hist);
  for (int64_t step = 0; st == CT_OK && step < max_new; step++) {
    /* feed what is not in the cache yet; slide the window when the context is full */
    int64_t todo = n - fed;
    if (ct_gpt_cache_len(c) + todo > P) {
      int64_t keep = P / 2 > 0 ? P / 2 : 1;
      if (keep > n) keep = n;
      if (keep > P) keep = P;
      ct_gpt_cache_reset(c);
      fed = n - keep;
      todo = keep;
    }
    int64_t shape[2] = {1, todo};
    ct_options io = ct_opts_dtype(CT_INT64);
    io.device = gpt_device(m);
    ct_tensor *idx = ct_from_buffer(hist + fed, CT_INT64, 2, shape, io);
    ct_tensor *lg = idx ? ct_gpt_forward_cached(m, c, idx, true) : NULL;
    ct_release(idx);
    if (!lg || ct_copy_to_buffer(lg, logits, CT_FLOAT32, V) != CT_OK) {
      ct_release(lg);
      st = ct_last_status() != CT_OK ? ct_last_status() : CT_ERR(CT_ERR_RUNTIME, "generate failed");
      break;
    }
    ct_release(lg);
    fed = n;
    int64_t tok = ct_gpt_pick_token(logits, V, s, s->temperature > 0 ? uniform_draw(g) : 0.0, probs);
    if (tok < 0) {
      st = ct_last_status();
      break;
    }
    hist[n++] = tok;
    if (fn && !fn(tok, probs, V, user)) break;
  }
  ct_gpt_cache_free(c);
  free(hist);
  free(logits);
  free(probs);
  return st;
}
