/* Fused CPU kernels: layer_norm / rms_norm forward and backward, and cross-entropy with
 * class indices (forward saving the log-sum-exp per row, backward softmax - onehot).
 * float32 rows run the SIMD row kernels (simd/fast_norm.h), float64 rows plain loops in
 * double; rows are spread over the thread pool. The entry points (src/ops/nn.c,
 * src/ops/loss.c) pass contiguous tensors of one floating dtype; the composed paths they
 * replace stay the reference (CT_REFERENCE_KERNELS=1 runs them). */
#include "kernels_nn.h"
#include "simd/fast_norm.h"
#include <math.h>

static bool f32_or_f64(const ct_tensor *t) { return t->dtype == CT_FLOAT32 || t->dtype == CT_FLOAT64; }
static bool contig_or_null(const ct_tensor *t) { return !t || ct_is_contiguous(t); }
static ct_status bad_layout(const char *op) {
  return CT_ERR(CT_ERR_RUNTIME, "%s: internal error: expected contiguous float32/float64 operands", op);
}

/* ---- layer_norm / rms_norm forward ----
 * in: x [rows, n] (any shape, contiguous), w [n] or NULL, b [n] or NULL (layer_norm only);
 * out: y, mean (layer_norm only), rstd ([rows], keepdim shape); i0 n, f0 eps. */
typedef struct {
  const void *x, *w, *b;
  void *y, *mean, *rstd;
  int64_t n;
  double eps;
  int rms, nt;
  bool f64;
} nf_ctx;

static void nf_row_f64(const double *x, const double *w, const double *b, double *y, int64_t n, double eps, int rms,
                       double *mo, double *ro) {
  double m = 0, q = 0;
  if (!rms) {
    for (int64_t j = 0; j < n; j++) m += x[j];
    m /= (double)n;
  }
  for (int64_t j = 0; j < n; j++) q += (x[j] - m) * (x[j] - m);
  double r = 1.0 / sqrt(q / (double)n + eps);
  for (int64_t j = 0; j < n; j++) {
    double v = (x[j] - m) * r;
    if (w) v *= w[j];
    if (b) v += b[j];
    y[j] = v;
  }
  if (mo) *mo = m;
  *ro = r;
}

static void nf_rows(void *vctx, int64_t r0, int64_t r1) {
  nf_ctx *c = vctx;
  int64_t n = c->n, ahead = ct_fast_pf_rows(n);
  if (!c->f64 && c->nt &&
      ct_fast_norm_fwd_rows_nt((const float *)c->x + r0 * n, c->w, c->b, (float *)c->y + r0 * n, r1 - r0, n, c->eps,
                               c->rms, c->mean ? (float *)c->mean + r0 : NULL, (float *)c->rstd + r0, ahead)) {
    ct_fast_nt_fence();
    return;
  }
  for (int64_t r = r0; r < r1; r++) {
    if (c->f64) {
      nf_row_f64((const double *)c->x + r * n, c->w, c->b, (double *)c->y + r * n, n, c->eps, c->rms,
                 c->mean ? (double *)c->mean + r : NULL, (double *)c->rstd + r);
    } else {
      float m, rs;
      ct_fast_norm_fwd_row((const float *)c->x + r * n, c->w, c->b, (float *)c->y + r * n, n, c->eps, c->rms, &m, &rs,
                           c->nt, r + ahead < r1 ? (const float *)c->x + (r + ahead) * n : NULL);
      if (c->mean) ((float *)c->mean)[r] = m;
      ((float *)c->rstd)[r] = rs;
    }
  }
  if (c->nt) ct_fast_nt_fence();
}

ct_status ct_cpu_native_norm(const ct_call *c) {
  bool rms = c->op == CT_OP_native_rms_norm;
  const ct_tensor *x = c->in[0], *w = c->in[1], *b = rms ? NULL : c->in[2];
  ct_tensor *y = c->out[0], *mean = rms ? NULL : c->out[1], *rstd = c->out[rms ? 1 : 2];
  int64_t n = c->a.i[0], numel = ct_numel(x);
  if (!f32_or_f64(x) || !ct_is_contiguous(x) || !contig_or_null(w) || !contig_or_null(b) || !ct_is_contiguous(y) ||
      (w && w->dtype != x->dtype) || (b && b->dtype != x->dtype) || n < 1 || numel % n)
    return bad_layout(rms ? "native_rms_norm" : "native_layer_norm");
  nf_ctx k = {ct_cpu_ptr(x), w ? ct_cpu_ptr(w) : NULL, b ? ct_cpu_ptr(b) : NULL, ct_cpu_ptr(y),
              mean ? ct_cpu_ptr(mean) : NULL, ct_cpu_ptr(rstd), n, c->a.f[0], rms, 0, x->dtype == CT_FLOAT64};
  k.nt = !k.f64 && ct_fast_nt_wanted(numel * 4); /* large y: streamed out (simd/fast_norm.h) */
  ct_parallel_for(numel / n, 1 + 16384 / n, nf_rows, &k);
  return CT_OK;
}

/* ---- layer_norm / rms_norm backward ----
 * in: g, x (contiguous, same shape), w or NULL, mean (layer_norm; NULL for rms), rstd;
 * out: dx, dw (or NULL), db (or NULL, layer_norm only); i0 n, k0 rms.
 * dw / db: rows in a fixed number of chunks (independent of the thread count, so results
 * are reproducible), each chunk's partial sums in a row of a buffer, then summed in double. */
typedef struct {
  const void *g, *x, *w, *mean, *rstd;
  void *dx;
  void *dwp, *dbp; /* [nch, n] partials in the compute dtype */
  int64_t n, rows, per;
  int rms, nt;
  bool f64;
} nb_ctx;

static void nb_row_f64(const double *x, const double *g, const double *w, double m, double r, double *dx, double *dw,
                       double *db, int64_t n, int rms) {
  double sa = 0, sb = 0;
  for (int64_t j = 0; j < n; j++) {
    double gw = w ? g[j] * w[j] : g[j], h = (x[j] - m) * r;
    sa += gw;
    sb += gw * h;
    if (dw) dw[j] += g[j] * h;
    if (db) db[j] += g[j];
  }
  if (!dx) return;
  double ma = rms ? 0.0 : sa / (double)n, mb = sb / (double)n;
  for (int64_t j = 0; j < n; j++) {
    double gw = w ? g[j] * w[j] : g[j], h = (x[j] - m) * r;
    dx[j] = r * ((gw - ma) - h * mb);
  }
}

static void nb_chunks(void *vctx, int64_t c0, int64_t c1) {
  nb_ctx *k = vctx;
  int64_t n = k->n;
  for (int64_t ch = c0; ch < c1; ch++) {
    int64_t r0 = ch * k->per, r1 = r0 + k->per < k->rows ? r0 + k->per : k->rows;
    for (int64_t r = r0; r < r1; r++) {
      if (k->f64) {
        nb_row_f64((const double *)k->x + r * n, (const double *)k->g + r * n, k->w,
                   k->mean ? ((const double *)k->mean)[r] : 0.0, ((const double *)k->rstd)[r],
                   k->dx ? (double *)k->dx + r * n : NULL, k->dwp ? (double *)k->dwp + ch * n : NULL,
                   k->dbp ? (double *)k->dbp + ch * n : NULL, n, k->rms);
      } else {
        ct_fast_norm_bwd_row((const float *)k->x + r * n, (const float *)k->g + r * n, k->w,
                             k->mean ? ((const float *)k->mean)[r] : 0.0f, ((const float *)k->rstd)[r],
                             k->dx ? (float *)k->dx + r * n : NULL, k->dwp ? (float *)k->dwp + ch * n : NULL,
                             k->dbp ? (float *)k->dbp + ch * n : NULL, n, k->rms, k->nt);
      }
    }
  }
  if (k->nt) ct_fast_nt_fence();
}

typedef struct {
  const void *part;
  void *out;
  int64_t n, nch;
  bool f64;
} nsum_ctx;
static void nsum_cols(void *vctx, int64_t j0, int64_t j1) {
  nsum_ctx *s = vctx;
  for (int64_t j = j0; j < j1; j++) {
    double acc = 0;
    for (int64_t ch = 0; ch < s->nch; ch++)
      acc += s->f64 ? ((const double *)s->part)[ch * s->n + j] : (double)((const float *)s->part)[ch * s->n + j];
    if (s->f64) ((double *)s->out)[j] = acc;
    else ((float *)s->out)[j] = (float)acc;
  }
}

ct_status ct_cpu_native_norm_backward(const ct_call *c) {
  int rms = (int)c->a.k[0];
  const ct_tensor *g = c->in[0], *x = c->in[1], *w = c->in[2], *mean = c->in[3], *rstd = c->in[4];
  ct_tensor *dx = c->out[0], *dw = c->out[1], *db = rms ? NULL : c->out[2];
  int64_t n = c->a.i[0], numel = ct_numel(x);
  if (!f32_or_f64(x) || g->dtype != x->dtype || !ct_is_contiguous(x) || !ct_is_contiguous(g) || !contig_or_null(w) ||
      !ct_is_contiguous(rstd) || !contig_or_null(mean) || (w && w->dtype != x->dtype) || ct_numel(g) != numel ||
      n < 1 || numel % n)
    return bad_layout("native_norm_backward");
  bool f64 = x->dtype == CT_FLOAT64;
  size_t esz = f64 ? 8 : 4;
  int64_t rows = numel / n;
  /* chunks: at most 128, and partial buffers of at most ~32 MiB */
  int64_t nch = rows < 128 ? rows : 128, cap = ((int64_t)1 << 22) / n;
  if ((dw || db) && nch > cap) nch = cap > 1 ? cap : 1;
  if (nch < 1) nch = 1;
  int64_t per = (rows + nch - 1) / nch;
  if (per < 1) per = 1;
  nch = (rows + per - 1) / per;
  void *dwp = NULL, *dbp = NULL;
  if (dw && !(dwp = nn_alloc(nch * n, esz))) return ct_last_status();
  if (db && !(dbp = nn_alloc(nch * n, esz))) {
    free(dwp);
    return ct_last_status();
  }
  nb_ctx k = {ct_cpu_ptr(g), ct_cpu_ptr(x), w ? ct_cpu_ptr(w) : NULL, mean ? ct_cpu_ptr(mean) : NULL, ct_cpu_ptr(rstd),
              dx ? ct_cpu_ptr(dx) : NULL, dwp, dbp, n, rows, per, rms, 0, f64};
  k.nt = dx && !f64 && ct_fast_nt_wanted(numel * 4);
  if (rows > 0) ct_parallel_for(nch, 1, nb_chunks, &k);
  if (dw) {
    nsum_ctx s = {dwp, ct_cpu_ptr(dw), n, rows > 0 ? nch : 0, f64};
    ct_parallel_for(n, 1 + 16384 / (nch + 1), nsum_cols, &s);
  }
  if (db) {
    nsum_ctx s = {dbp, ct_cpu_ptr(db), n, rows > 0 ? nch : 0, f64};
    ct_parallel_for(n, 1 + 16384 / (nch + 1), nsum_cols, &s);
  }
  free(dwp);
  free(dbp);
  return CT_OK;
}

/* ---- cross-entropy with class indices, input [N, C] ----
 * forward  in: x [N, C], t [N] int64, w [C] or NULL; out: loss ([N] for reduction none, else
 *          []), lse [N], total weight [] (sum of w[t] over the targets not ignored);
 * backward in: gout (like loss), x, t, w, lse, total weight; out: dx [N, C].
 * attrs: k0 reduction (ct_reduction), i0 ignore_index, f0 label_smoothing.
 * loss_i = (1 - ls) w[t_i] (lse_i - x[i, t_i]) + ls / C sum_c w_c (lse_i - x[i, c]), 0 when ignored;
 * dx[i, c] = s_i ((1 - ls) w[t_i] + ls / C sum(w)) softmax_ic - s_i (ls / C w_c + (1 - ls) w[t_i] [c = t_i]). */
typedef struct {
  const void *x, *w;
  const int64_t *t;
  int64_t N, C, ignore;
  double ls, wsum;
  double *loss, *keep, *lse;
  const void *g; /* backward */
  int red;
  double den;
  void *dx;
  bool f64, bad;
  int64_t bad_t;
} ce_ctx;

static double ce_w(const ce_ctx *k, int64_t c) {
  if (!k->w) return 1.0;
  return k->f64 ? ((const double *)k->w)[c] : (double)((const float *)k->w)[c];
}

static double lse_f64(const double *x, const double *w, int64_t n, double *sx) {
  double mx = -INFINITY, s = 0, sw = 0;
  bool nan = false;
  for (int64_t j = 0; j < n; j++) {
    if (x[j] != x[j]) nan = true;
    else if (x[j] > mx) mx = x[j];
    sw += w ? x[j] * w[j] : x[j];
  }
  if (sx) *sx = sw;
  if (nan) return NAN;
  if (isinf(mx)) return mx;
  for (int64_t j = 0; j < n; j++) s += exp(x[j] - mx);
  return mx + log(s);
}

static void ce_fwd_rows(void *vctx, int64_t r0, int64_t r1) {
  ce_ctx *k = vctx;
  int64_t C = k->C;
  for (int64_t i = r0; i < r1; i++) {
    int64_t t = k->t[i];
    if (t == k->ignore) {
      k->loss[i] = 0;
      k->keep[i] = 0;
      k->lse[i] = 0;
      continue;
    }
    if (t < 0 || t >= C) { /* the entry point checked; never read out of bounds */
      k->bad = true;
      k->bad_t = t;
      k->loss[i] = k->keep[i] = k->lse[i] = 0;
      continue;
    }
    double sx = 0, lse, xt;
    if (k->f64) {
      const double *x = (const double *)k->x + i * C;
      lse = lse_f64(x, k->w, C, k->ls > 0 ? &sx : NULL);
      xt = x[t];
    } else {
      const float *x = (const float *)k->x + i * C;
      lse = ct_fast_lse_row(x, k->w, C, k->ls > 0 ? &sx : NULL);
      xt = x[t];
    }
    double wt = ce_w(k, t), l = (1 - k->ls) * wt * (lse - xt);
    if (k->ls > 0) l += k->ls / (double)C * (lse * k->wsum - sx);
    k->loss[i] = l;
    k->keep[i] = wt;
    k->lse[i] = lse;
  }
}

static ct_status ce_setup(const ct_call *c, ce_ctx *k, const ct_tensor *x, const ct_tensor *t, const ct_tensor *w) {
  memset(k, 0, sizeof *k);
  if (!f32_or_f64(x) || x->ndim != 2 || !ct_is_contiguous(x) || t->dtype != CT_INT64 || !ct_is_contiguous(t) ||
      ct_numel(t) != x->shape[0] || !contig_or_null(w) || (w && (w->dtype != x->dtype || ct_numel(w) != x->shape[1])))
    return bad_layout("cross_entropy_fused");
  k->x = ct_cpu_ptr(x);
  k->w = w ? ct_cpu_ptr(w) : NULL;
  k->t = (const int64_t *)ct_cpu_ptr(t);
  k->N = x->shape[0];
  k->C = x->shape[1];
  k->ignore = c->a.i[0];
  k->ls = c->a.f[0];
  k->red = (int)c->a.k[0];
  k->f64 = x->dtype == CT_FLOAT64;
  k->wsum = 0;
  for (int64_t j = 0; j < k->C; j++) k->wsum += ce_w(k, j);
  return CT_OK;
}

static void store1(ct_tensor *o, int64_t i, double v) {
  if (o->dtype == CT_FLOAT64) ((double *)ct_cpu_ptr(o))[i] = v;
  else ((float *)ct_cpu_ptr(o))[i] = (float)v;
}
static double load1(const ct_tensor *o, int64_t i) {
  return o->dtype == CT_FLOAT64 ? ((const double *)ct_cpu_ptr(o))[i] : (double)((const float *)ct_cpu_ptr(o))[i];
}

ct_status ct_cpu_cross_entropy_fused(const ct_call *c) {
  ce_ctx k;
  CT_TRY(ce_setup(c, &k, c->in[0], c->in[1], c->in[2]));
  int64_t N = k.N;
  double *buf = nn_alloc(3 * N, sizeof(double));
  if (!buf) return ct_last_status();
  k.loss = buf;
  k.keep = buf + N;
  k.lse = buf + 2 * N;
  if (N > 0) ct_parallel_for(N, 1 + 16384 / (k.C + 1), ce_fwd_rows, &k);
  if (k.bad) {
    free(buf);
    return CT_ERR(CT_ERR_INDEX, "Target %lld is out of bounds.", (long long)k.bad_t);
  }
  double sum = 0, den = 0;
  for (int64_t i = 0; i < N; i++) {
    sum += k.loss[i];
    den += k.keep[i];
    store1(c->out[1], i, k.lse[i]);
  }
  if (k.red == CT_REDUCTION_NONE)
    for (int64_t i = 0; i < N; i++) store1(c->out[0], i, k.loss[i]);
  else store1(c->out[0], 0, k.red == CT_REDUCTION_MEAN ? sum / den : sum);
  store1(c->out[2], 0, den);
  free(buf);
  return CT_OK;
}

static void ce_bwd_rows(void *vctx, int64_t r0, int64_t r1) {
  ce_ctx *k = vctx;
  int64_t C = k->C;
  for (int64_t i = r0; i < r1; i++) {
    int64_t t = k->t[i];
    bool skip = t == k->ignore || t < 0 || t >= C;
    double s = 0;
    if (!skip) {
      double gi = k->red == CT_REDUCTION_NONE ? (k->f64 ? ((const double *)k->g)[i] : ((const float *)k->g)[i])
                                              : (k->f64 ? ((const double *)k->g)[0] : ((const float *)k->g)[0]);
      s = k->red == CT_REDUCTION_MEAN ? gi / k->den : gi;
    }
    double wt = skip ? 0 : ce_w(k, t);
    double ca = s * ((1 - k->ls) * wt + k->ls / (double)C * k->wsum), cb = s * k->ls / (double)C;
    double lse = k->lse[i];
    if (k->f64) {
      double *dx = (double *)k->dx + i * C;
      const double *x = (const double *)k->x + i * C, *w = k->w;
      if (skip) {
        memset(dx, 0, sizeof(double) * (size_t)C);
        continue;
      }
      for (int64_t j = 0; j < C; j++) dx[j] = ca * exp(x[j] - lse) - cb * (w ? w[j] : 1.0);
      dx[t] -= s * (1 - k->ls) * wt;
    } else {
      float *dx = (float *)k->dx + i * C;
      if (skip) {
        memset(dx, 0, sizeof(float) * (size_t)C);
        continue;
      }
      ct_fast_ce_bwd_row((const float *)k->x + i * C, cb != 0 ? k->w : NULL, dx, C, (float)lse, (float)ca, (float)cb);
      dx[t] = (float)((double)dx[t] - s * (1 - k->ls) * wt);
    }
  }
}

ct_status ct_cpu_cross_entropy_fused_backward(const ct_call *c) {
  const ct_tensor *g = c->in[0], *lse = c->in[4], *tw = c->in[5];
  ce_ctx k;
  CT_TRY(ce_setup(c, &k, c->in[1], c->in[2], c->in[3]));
  if (g->dtype != c->in[1]->dtype || !ct_is_contiguous(g) || lse->dtype != g->dtype || !ct_is_contiguous(lse) ||
      ct_numel(lse) != k.N || ct_numel(tw) != 1 || ct_numel(g) != (k.red == CT_REDUCTION_NONE ? k.N : 1) ||
      !ct_is_contiguous(c->out[0]))
    return bad_layout("cross_entropy_fused_backward");
  int64_t N = k.N;
  double *lb = nn_alloc(N, sizeof(double));
  if (!lb) return ct_last_status();
  for (int64_t i = 0; i < N; i++) lb[i] = load1(lse, i);
  k.lse = lb;
  k.g = ct_cpu_ptr(g);
  k.den = load1(tw, 0);
  k.dx = ct_cpu_ptr(c->out[0]);
  if (N > 0 && k.C > 0) ct_parallel_for(N, 1 + 16384 / (k.C + 1), ce_bwd_rows, &k);
  free(lb);
  return CT_OK;
}
