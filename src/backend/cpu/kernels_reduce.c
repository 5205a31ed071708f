/* CPU reference kernels for reductions: one output element per task, the
 * reduced elements visited in row-major order, accumulated in double/int64
 * (floating) or wrapping int64 (integers), rounded once into the output. */
#include "cpu_iter.h"
#include "simd/fast_ew.h"
#include <math.h>
#include <stdlib.h>

/* Byte strides of output t over the kept (outer) dims of an input of `in_ndim`
 * dims reduced over `mask`: t either keeps every dim (keepdim) or drops the
 * reduced ones. */
void ct_rk_out_strides(const ct_tensor *t, int in_ndim, uint32_t mask, int64_t *outer) {
  int64_t isz = (int64_t)ct_dtype_size(t->dtype);
  bool keep = t->ndim == in_ndim;
  int k = 0, od = 0;
  for (int d = 0; d < in_ndim; d++) {
    bool red = (mask >> d) & 1;
    if (!red) outer[k++] = t->stride[od] * isz;
    if (!red || keep) od++;
  }
}

/* Walks the reduced (inner) dims of one output element without divisions. */
typedef struct {
  int n;
  const int64_t *shape, *stride;
  int64_t ctr[CT_MAX_DIMS];
  int64_t off;
} odo;
static inline void odo_init(odo *o, const ct_reduce_geom *g) {
  o->n = g->n_inner;
  o->shape = g->inner_shape;
  o->stride = g->inner_stride;
  o->off = 0;
  for (int d = 0; d < o->n; d++) o->ctr[d] = 0;
}
static inline void odo_next(odo *o) {
  for (int d = o->n - 1; d >= 0; d--) {
    o->off += o->stride[d];
    if (++o->ctr[d] < o->shape[d]) return;
    o->off -= o->stride[d] * o->shape[d];
    o->ctr[d] = 0;
  }
}

/* ---- ordering helpers shared with the sort-like kernels ---- */
typedef struct {
  union {
    double f;
    int64_t i;
  } k;
  int64_t idx;
} ct_keyed;

/* Total orders: NaN is the largest float; ties keep index order (so every sort is stable). */
static int cmp_f_asc(const void *pa, const void *pb) {
  const ct_keyed *a = pa, *b = pb;
  double x = a->k.f, y = b->k.f;
  bool nx = isnan(x), ny = isnan(y);
  if (nx != ny) return nx ? 1 : -1;
  if (!nx && x < y) return -1;
  if (!nx && x > y) return 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}
static int cmp_f_desc(const void *pa, const void *pb) {
  const ct_keyed *a = pa, *b = pb;
  double x = a->k.f, y = b->k.f;
  bool nx = isnan(x), ny = isnan(y);
  if (nx != ny) return nx ? -1 : 1;
  if (!nx && x > y) return -1;
  if (!nx && x < y) return 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}
static int cmp_i_asc(const void *pa, const void *pb) {
  const ct_keyed *a = pa, *b = pb;
  if (a->k.i != b->k.i) return a->k.i < b->k.i ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}
static int cmp_i_desc(const void *pa, const void *pb) {
  const ct_keyed *a = pa, *b = pb;
  if (a->k.i != b->k.i) return a->k.i > b->k.i ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}
static void keyed_sort(ct_keyed *v, int64_t n, bool fl, bool desc) {
  if (n > 1) qsort(v, (size_t)n, sizeof *v, fl ? (desc ? cmp_f_desc : cmp_f_asc) : (desc ? cmp_i_desc : cmp_i_asc));
}
static inline bool keyed_eq(const ct_keyed *a, const ct_keyed *b, bool fl) {
  return fl ? a->k.f == b->k.f : a->k.i == b->k.i; /* NaN != NaN, as PyTorch's mode/unique see it */
}
static inline void keyed_load(ct_keyed *v, const char *p, ct_dtype dt, bool fl, int64_t idx) {
  if (fl) v->k.f = ct_load_f64(p, dt);
  else v->k.i = ct_load_i64(p, dt);
  v->idx = idx;
}
static inline void keyed_store(char *p, ct_dtype dt, const ct_keyed *v, bool fl) {
  if (fl) ct_store_f64(p, dt, v->k.f);
  else ct_store_i64(p, dt, v->k.i);
}

/* ---- full/multi-dim reductions ---------------------------------------------- */
typedef struct {
  const ct_call *c;
  ct_reduce_geom g;
  char *in;
  char *out[CT_MAX_OP_OUT];
  int64_t out_stride[CT_MAX_OP_OUT][CT_MAX_DIMS];
  int failed;
} red_ctx;

/* Is a "better" than the current best b for max (sign=1) / min (sign=-1)? NaN wins and sticks;
 * ties keep the first. */
static inline bool better_f(double a, double b, int sign) {
  if (isnan(b)) return false;
  if (isnan(a)) return true;
  return sign > 0 ? a > b : a < b;
}

static void reduce_one(red_ctx *r, int64_t o, ct_keyed *buf) {
  const ct_call *c = r->c;
  ct_dtype dt = c->in[0]->dtype, odt = c->out[0]->dtype;
  bool fl = ct_dtype_is_floating(dt);
  char *base = r->in + ct_geom_offset(r->g.n_outer, r->g.outer_shape, r->g.outer_stride, o);
  char *dst = r->out[0] + ct_geom_offset(r->g.n_outer, r->g.outer_shape, r->out_stride[0], o);
  int64_t n = r->g.inner_numel;
  odo it;
  odo_init(&it, &r->g);
  switch (c->op) {
    case CT_OP_sum:
    case CT_OP_prod: {
      bool sum = c->op == CT_OP_sum;
      if (fl) {
        double acc = sum ? 0.0 : 1.0;
        for (int64_t i = 0; i < n; i++, odo_next(&it)) {
          double v = ct_load_f64(base + it.off, dt);
          acc = sum ? acc + v : acc * v;
        }
        ct_store_f64(dst, odt, acc);
      } else {
        uint64_t acc = sum ? 0 : 1; /* wraps like C++ int64 */
        for (int64_t i = 0; i < n; i++, odo_next(&it)) {
          uint64_t v = (uint64_t)ct_load_i64(base + it.off, dt);
          acc = sum ? acc + v : acc * v;
        }
        ct_store_i64(dst, odt, (int64_t)acc);
      }
      break;
    }
    case CT_OP_amax:
    case CT_OP_amin:
    case CT_OP_max:
    case CT_OP_min:
    case CT_OP_max_dim:
    case CT_OP_min_dim:
    case CT_OP_argmax:
    case CT_OP_argmin: {
      int sign = (c->op == CT_OP_amax || c->op == CT_OP_max || c->op == CT_OP_max_dim || c->op == CT_OP_argmax) ? 1 : -1;
      int64_t best_i = 0;
      ct_keyed best;
      keyed_load(&best, base, dt, fl, 0);
      for (int64_t i = 0; i < n; i++, odo_next(&it)) {
        ct_keyed v;
        keyed_load(&v, base + it.off, dt, fl, i);
        bool b = fl ? better_f(v.k.f, best.k.f, sign) : (sign > 0 ? v.k.i > best.k.i : v.k.i < best.k.i);
        if (b) {
          best = v;
          best_i = i;
        }
      }
      if (c->op == CT_OP_argmax || c->op == CT_OP_argmin) {
        ct_store_i64(dst, odt, best_i);
      } else {
        keyed_store(dst, odt, &best, fl);
        if (c->n_out > 1) {
          char *d1 = r->out[1] + ct_geom_offset(r->g.n_outer, r->g.outer_shape, r->out_stride[1], o);
          ct_store_i64(d1, c->out[1]->dtype, best_i);
        }
      }
      break;
    }
    case CT_OP_all:
    case CT_OP_any: {
      bool all = c->op == CT_OP_all, res = all;
      for (int64_t i = 0; i < n; i++, odo_next(&it)) {
        bool nz = fl ? ct_load_f64(base + it.off, dt) != 0.0 : ct_load_i64(base + it.off, dt) != 0;
        if (all && !nz) {
          res = false;
          break;
        }
        if (!all && nz) {
          res = true;
          break;
        }
      }
      ct_store_i64(dst, odt, res);
      break;
    }
    case CT_OP_count_nonzero: {
      int64_t cnt = 0;
      for (int64_t i = 0; i < n; i++, odo_next(&it))
        cnt += fl ? ct_load_f64(base + it.off, dt) != 0.0 : ct_load_i64(base + it.off, dt) != 0;
      ct_store_i64(dst, odt, cnt);
      break;
    }
    case CT_OP_var:
    case CT_OP_std: {
      /* two passes in double: mean, then squared deviations */
      double mean = 0, ss = 0, first = n ? ct_load_f64(base + it.off, dt) : 0;
      bool same = isfinite(first); /* equal values: exactly 0 and their value, as PyTorch's Welford gives */
      for (int64_t i = 0; i < n; i++, odo_next(&it)) mean += ct_load_f64(base + it.off, dt);
      mean /= (double)n;
      odo_init(&it, &r->g);
      for (int64_t i = 0; i < n; i++, odo_next(&it)) {
        double v = ct_load_f64(base + it.off, dt), d = v - mean;
        same &= v == first;
        ss += d * d;
      }
      if (same && n) {
        mean = first;
        ss = 0;
      }
      double div = (double)n - c->a.f[0];
      if (div < 0) div = 0;
      double v = ss / div;
      ct_store_f64(dst, odt, c->op == CT_OP_std ? sqrt(v) : v);
      if (c->n_out > 1) { /* var_mean / std_mean */
        char *d1 = r->out[1] + ct_geom_offset(r->g.n_outer, r->g.outer_shape, r->out_stride[1], o);
        ct_store_f64(d1, c->out[1]->dtype, n ? mean : NAN);
      }
      break;
    }
    case CT_OP_norm: {
      double p = c->a.f[0], acc;
      if (isinf(p)) {
        acc = n ? NAN : 0.0; /* torch.norm gives 0 for an empty inf-norm */
        for (int64_t i = 0; i < n; i++, odo_next(&it)) {
          double a = fabs(ct_load_f64(base + it.off, dt));
          if (i == 0 || better_f(a, acc, p > 0 ? 1 : -1)) acc = a;
        }
      } else if (p == 0) {
        acc = 0;
        for (int64_t i = 0; i < n; i++, odo_next(&it)) acc += ct_load_f64(base + it.off, dt) != 0.0;
      } else if (p == 1) {
        acc = 0;
        for (int64_t i = 0; i < n; i++, odo_next(&it)) acc += fabs(ct_load_f64(base + it.off, dt));
      } else if (p == 2) {
        acc = 0;
        for (int64_t i = 0; i < n; i++, odo_next(&it)) {
          double v = ct_load_f64(base + it.off, dt);
          acc += v * v;
        }
        acc = sqrt(acc);
      } else {
        acc = 0;
        for (int64_t i = 0; i < n; i++, odo_next(&it)) acc += pow(fabs(ct_load_f64(base + it.off, dt)), p);
        acc = pow(acc, 1.0 / p);
      }
      ct_store_f64(dst, odt, acc);
      break;
    }
    case CT_OP_logsumexp: {
      /* max-shifted; an infinite max is replaced by 0 so inf/-inf inputs give inf/-inf, not NaN */
      double m = -INFINITY;
      bool nan = false;
      for (int64_t i = 0; i < n; i++, odo_next(&it)) {
        double v = ct_load_f64(base + it.off, dt);
        if (isnan(v)) nan = true;
        else if (v > m) m = v;
      }
      if (nan) {
        ct_store_f64(dst, odt, NAN);
        break;
      }
      if (isinf(m)) m = 0;
      double s = 0;
      odo_init(&it, &r->g);
      for (int64_t i = 0; i < n; i++, odo_next(&it)) s += exp(ct_load_f64(base + it.off, dt) - m);
      ct_store_f64(dst, odt, log(s) + m);
      break;
    }
    case CT_OP_median:
    case CT_OP_nanmedian: {
      /* lower median; median propagates NaN, nanmedian ignores it */
      int64_t m = 0;
      bool has_nan = false;
      for (int64_t i = 0; i < n; i++, odo_next(&it)) {
        keyed_load(&buf[m], base + it.off, dt, fl, i);
        if (fl && isnan(buf[m].k.f)) {
          has_nan = true;
          if (c->op == CT_OP_nanmedian) continue;
        }
        m++;
      }
      if (m == 0 || (has_nan && c->op == CT_OP_median)) {
        ct_store_f64(dst, odt, NAN);
        break;
      }
      keyed_sort(buf, m, fl, false);
      keyed_store(dst, odt, &buf[(m - 1) / 2], fl);
      break;
    }
    default: break;
  }
}

static void reduce_range(void *vctx, int64_t begin, int64_t end) {
  red_ctx *r = vctx;
  ct_keyed *buf = NULL;
  int op = r->c->op;
  if (op == CT_OP_median || op == CT_OP_nanmedian) {
    buf = malloc((size_t)(r->g.inner_numel ? r->g.inner_numel : 1) * sizeof *buf);
    if (!buf) {
      r->failed = 1;
      return;
    }
  }
  for (int64_t o = begin; o < end; o++) reduce_one(r, o, buf);
  free(buf);
}

ct_status ct_cpu_reduce(const ct_call *c) {
  ct_status fast_st;
  if (ct_fast_reduce(c, &fast_st)) return fast_st; /* SIMD path (simd/fast_ew.c) */
  red_ctx r;
  memset(&r, 0, sizeof r);
  r.c = c;
  uint32_t mask = (uint32_t)c->a.k[0];
  ct_reduce_geom_make(c->in[0], mask, &r.g);
  r.in = ct_cpu_ptr(c->in[0]);
  for (int j = 0; j < c->n_out; j++) {
    r.out[j] = ct_cpu_ptr(c->out[j]);
    ct_rk_out_strides(c->out[j], c->in[0]->ndim, mask, r.out_stride[j]);
  }
  if (r.g.outer_numel == 0) return CT_OK;
  int64_t grain = r.g.inner_numel > 4096 ? 1 : 4096 / (r.g.inner_numel + 1) + 1;
  ct_parallel_for(r.g.outer_numel, grain, reduce_range, &r);
  if (r.failed) return CT_ERR(CT_ERR_OOM, "out of memory in %s", ct_op_info_of(c->op)->id);
  return CT_OK;
}

/* ---- ops along one dim (scans, sorts, selections, scatter/gather) ------------------ */
/* attrs: k[2] = the dim (wrapped; ignored for 0-dim inputs). Every input and output
 * either has the input's ndim (the dim may have another size) or lacks the dim. */
typedef struct {
  const ct_call *c;
  int n_outer;
  int64_t outer_shape[CT_MAX_DIMS], outer_numel;
  char *base_in[CT_MAX_OP_IN], *base_out[CT_MAX_OP_OUT];
  int64_t so_in[CT_MAX_OP_IN][CT_MAX_DIMS], so_out[CT_MAX_OP_OUT][CT_MAX_DIMS];
  int64_t step_in[CT_MAX_OP_IN], step_out[CT_MAX_OP_OUT]; /* bytes along the dim */
  int64_t len_in[CT_MAX_OP_IN], len_out[CT_MAX_OP_OUT];   /* sizes along the dim */
  int failed;
} dim_ctx;

static void dim_geom(const ct_tensor *t, int ref_ndim, int dim, int64_t *so, int64_t *step, int64_t *len) {
  int64_t isz = (int64_t)ct_dtype_size(t->dtype);
  int k = 0;
  *step = 0;
  *len = 1;
  if (ref_ndim == 0) return;
  if (t->ndim == ref_ndim) {
    for (int d = 0; d < t->ndim; d++) {
      if (d == dim) {
        *step = t->stride[d] * isz;
        *len = t->shape[d];
      } else so[k++] = t->stride[d] * isz;
    }
  } else {
    for (int d = 0; d < t->ndim; d++) so[k++] = t->stride[d] * isz;
  }
}

/* attrs of the dim ops: k[3] = flag (reverse for scans, descending/largest for sorts, NaN mode),
 * k[4] = k of topk/kthvalue. scratch holds 2*n doubles. */
static void dim_one(dim_ctx *x, int64_t o, ct_keyed *buf, double *scratch) {
  const ct_call *c = x->c;
  char *pi[CT_MAX_OP_IN], *po[CT_MAX_OP_OUT];
  for (int i = 0; i < c->n_in; i++) pi[i] = x->base_in[i] + ct_geom_offset(x->n_outer, x->outer_shape, x->so_in[i], o);
  for (int j = 0; j < c->n_out; j++)
    po[j] = x->base_out[j] + ct_geom_offset(x->n_outer, x->outer_shape, x->so_out[j], o);
  ct_dtype dt = c->in[0]->dtype, odt = c->out[0]->dtype;
  ct_dtype idt = c->n_out > 1 ? c->out[1]->dtype : CT_INT64;
  bool fl = ct_dtype_is_floating(dt);
  int64_t n = x->len_in[0], si = x->step_in[0], s0 = x->step_out[0], s1 = x->step_out[1];
#define IN(k) (pi[0] + (int64_t)(k) * si)
#define OUT0(k) (po[0] + (int64_t)(k) * s0)
#define OUT1(k) (po[1] + (int64_t)(k) * s1)
  switch (c->op) {
    case CT_OP_cumsum:
    case CT_OP_cumprod: {
      bool sum = c->op == CT_OP_cumsum, rev = c->a.k[3] != 0;
      double af = sum ? 0 : 1;
      uint64_t ai = sum ? 0 : 1;
      for (int64_t t = 0; t < n; t++) {
        int64_t k = rev ? n - 1 - t : t;
        if (fl) {
          double v = ct_load_f64(IN(k), dt);
          af = sum ? af + v : af * v;
          ct_store_f64(OUT0(k), odt, af);
        } else {
          uint64_t v = (uint64_t)ct_load_i64(IN(k), dt);
          ai = sum ? ai + v : ai * v;
          ct_store_i64(OUT0(k), odt, (int64_t)ai);
        }
      }
      break;
    }
    case CT_OP_cummax:
    case CT_OP_cummin: {
      /* ties and later NaNs move the index forward, as PyTorch's >= / <= scan does */
      bool mx = c->op == CT_OP_cummax;
      ct_keyed cur;
      int64_t ci = 0;
      for (int64_t k = 0; k < n; k++) {
        ct_keyed v;
        keyed_load(&v, IN(k), dt, fl, k);
        bool take;
        if (k == 0) take = true;
        else if (fl) take = isnan(v.k.f) || (mx ? v.k.f >= cur.k.f : v.k.f <= cur.k.f);
        else take = mx ? v.k.i >= cur.k.i : v.k.i <= cur.k.i;
        if (take) {
          cur = v;
          ci = k;
        }
        keyed_store(OUT0(k), odt, &cur, fl);
        ct_store_i64(OUT1(k), idt, ci);
      }
      break;
    }
    case CT_OP_sort:
    case CT_OP_topk:
    case CT_OP_kthvalue:
    case CT_OP_median_dim:
    case CT_OP_nanmedian_dim:
    case CT_OP_mode: {
      int64_t nn = 0, first_nan = -1;
      for (int64_t k = 0; k < n; k++) {
        keyed_load(&buf[k], IN(k), dt, fl, k);
        if (fl && isnan(buf[k].k.f)) {
          if (first_nan < 0) first_nan = k;
        } else nn++;
      }
      if (c->op == CT_OP_median_dim && first_nan >= 0) {
        ct_store_f64(OUT0(0), odt, NAN);
        ct_store_i64(OUT1(0), idt, first_nan);
        break;
      }
      bool desc = (c->op == CT_OP_sort || c->op == CT_OP_topk) && c->a.k[3];
      keyed_sort(buf, n, fl, desc);
      int64_t pick = -1, cnt = 0;
      switch (c->op) {
        case CT_OP_sort:
          cnt = n;
          break;
        case CT_OP_topk:
          cnt = c->a.k[4];
          break;
        case CT_OP_kthvalue: pick = c->a.k[4] - 1; break;
        case CT_OP_median_dim: pick = (n - 1) / 2; break;
        case CT_OP_nanmedian_dim: pick = (nn - 1) / 2; break; /* C division: all-NaN picks 0 */
        default: { /* mode: smallest of the most frequent values, its last index */
          int64_t best_len = 0, run = 0;
          for (int64_t k = 0; k < n; k++) {
            run = (k > 0 && keyed_eq(&buf[k], &buf[k - 1], fl)) ? run + 1 : 1;
            bool end = k == n - 1 || !keyed_eq(&buf[k], &buf[k + 1], fl);
            if (end && run > best_len) {
              best_len = run;
              pick = k;
            }
          }
        }
      }
      if (pick >= 0) {
        keyed_store(OUT0(0), odt, &buf[pick], fl);
        ct_store_i64(OUT1(0), idt, buf[pick].idx);
      } else {
        for (int64_t k = 0; k < cnt; k++) {
          keyed_store(OUT0(k), odt, &buf[k], fl);
          ct_store_i64(OUT1(k), idt, buf[k].idx);
        }
      }
      break;
    }
    case CT_OP_reduce_scatter_grad: {
      /* out = zeros (len_out along dim); out[idx[i]] += g[i] */
      int64_t m = x->len_in[1], no = x->len_out[0], sidx = x->step_in[1];
      ct_dtype gdt = c->in[0]->dtype, xdt = c->in[1]->dtype;
      for (int64_t k = 0; k < no; k++) ct_store_f64(OUT0(k), odt, 0.0);
      for (int64_t i = 0; i < m; i++) {
        int64_t j = ct_load_i64(pi[1] + i * sidx, xdt);
        if (j < 0 || j >= no) {
          x->failed = 2;
          return;
        }
        double v = ct_load_f64(pi[0] + i * si, gdt);
        ct_store_f64(OUT0(j), odt, ct_load_f64(OUT0(j), odt) + v);
      }
      break;
    }
    case CT_OP_reduce_gather: {
      int64_t m = x->len_in[1], sidx = x->step_in[1];
      for (int64_t i = 0; i < m; i++) {
        int64_t j = ct_load_i64(pi[1] + i * sidx, c->in[1]->dtype);
        if (j < 0 || j >= n) {
          x->failed = 2;
          return;
        }
        ct_store_f64(OUT0(i), odt, ct_load_f64(IN(j), dt));
      }
      break;
    }
    case CT_OP_prod_excl: {
      /* out_k = prod_{j != k} x_j as prefix * suffix: exact with zeros, no division */
      double *suf = scratch;
      double acc = 1;
      for (int64_t k = n - 1; k >= 0; k--) {
        suf[k] = acc;
        acc *= ct_load_f64(IN(k), dt);
      }
      acc = 1;
      for (int64_t k = 0; k < n; k++) {
        ct_store_f64(OUT0(k), odt, acc * suf[k]);
        acc *= ct_load_f64(IN(k), dt);
      }
      break;
    }
    case CT_OP_prod_excl_grad: {
      /* d/dx_k sum_i gg_i prod_{j!=i} x_j = sum_{i!=k} gg_i prod_{j!=i,k} x_j = L_k*suf_k + pre_k*R_k */
      double *suf = scratch, *R = scratch + n;
      char *pg = pi[1];
      int64_t sg = x->step_in[1];
      ct_dtype gdt = c->in[1]->dtype;
      double acc = 1, r = 0;
      for (int64_t k = n - 1; k >= 0; k--) {
        suf[k] = acc;
        R[k] = r;
        double xv = ct_load_f64(IN(k), dt), gv = ct_load_f64(pg + k * sg, gdt);
        r = r * xv + gv * acc;
        acc *= xv;
      }
      double pre = 1, L = 0;
      for (int64_t k = 0; k < n; k++) {
        ct_store_f64(OUT0(k), odt, L * suf[k] + pre * R[k]);
        double xv = ct_load_f64(IN(k), dt), gv = ct_load_f64(pg + k * sg, gdt);
        L = L * xv + gv * pre;
        pre *= xv;
      }
      break;
    }
    case CT_OP_cumprod_grad: {
      /* grad_k = sum_{i>=k} g_i prod_{j<=i, j!=k} x_j = pre_k * T_k, T_k = g_k + x_{k+1} T_{k+1} */
      double *T = scratch;
      char *pg = pi[1];
      int64_t sg = x->step_in[1];
      ct_dtype gdt = c->in[1]->dtype;
      double t = 0;
      for (int64_t k = n - 1; k >= 0; k--) {
        t = ct_load_f64(pg + k * sg, gdt) + (k + 1 < n ? ct_load_f64(IN(k + 1), dt) * t : 0.0);
        T[k] = t;
      }
      double pre = 1;
      for (int64_t k = 0; k < n; k++) {
        ct_store_f64(OUT0(k), odt, pre * T[k]);
        pre *= ct_load_f64(IN(k), dt);
      }
      break;
    }
    case CT_OP_cumprod_grad_t: {
      /* the adjoint in g: out_i = sum_{k<=i} gg_k prod_{j<=i, j!=k} x_j, U_i = U_{i-1} x_i + gg_i pre_i */
      char *pg = pi[1];
      int64_t sg = x->step_in[1];
      ct_dtype gdt = c->in[1]->dtype;
      double u = 0, pre = 1;
      for (int64_t k = 0; k < n; k++) {
        double xv = ct_load_f64(IN(k), dt);
        u = u * xv + ct_load_f64(pg + k * sg, gdt) * pre;
        ct_store_f64(OUT0(k), odt, u);
        pre *= xv;
      }
      break;
    }
    default: break;
  }
#undef IN
#undef OUT0
#undef OUT1
}

static void dim_range(void *vctx, int64_t begin, int64_t end) {
  dim_ctx *x = vctx;
  int64_t n = x->len_in[0] > 0 ? x->len_in[0] : 1;
  ct_keyed *buf = malloc((size_t)n * sizeof *buf);
  double *scratch = malloc((size_t)n * 2 * sizeof *scratch);
  if (!buf || !scratch) {
    x->failed = 1;
  } else {
    for (int64_t o = begin; o < end && !x->failed; o++) dim_one(x, o, buf, scratch);
  }
  free(buf);
  free(scratch);
}

ct_status ct_cpu_dim_op(const ct_call *c) {
  dim_ctx x;
  memset(&x, 0, sizeof x);
  x.c = c;
  const ct_tensor *ref = c->in[0];
  int nd = ref->ndim, dim = (int)c->a.k[2];
  x.n_outer = 0;
  x.outer_numel = 1;
  for (int d = 0; d < nd; d++)
    if (d != dim) {
      x.outer_shape[x.n_outer++] = ref->shape[d];
      x.outer_numel *= ref->shape[d];
    }
  for (int i = 0; i < c->n_in; i++) {
    dim_geom(c->in[i], nd, dim, x.so_in[i], &x.step_in[i], &x.len_in[i]);
    x.base_in[i] = ct_cpu_ptr(c->in[i]);
  }
  for (int j = 0; j < c->n_out; j++) {
    dim_geom(c->out[j], nd, dim, x.so_out[j], &x.step_out[j], &x.len_out[j]);
    x.base_out[j] = ct_cpu_ptr(c->out[j]);
  }
  if (x.outer_numel == 0) return CT_OK;
  int64_t n = x.len_in[0] + 1;
  int64_t grain = n > 4096 ? 1 : 4096 / n + 1;
  ct_parallel_for(x.outer_numel, grain, dim_range, &x);
  if (x.failed == 1) return CT_ERR(CT_ERR_OOM, "out of memory in %s", ct_op_info_of(c->op)->id);
  if (x.failed == 2) return CT_ERR(CT_ERR_INDEX, "%s: index out of range", ct_op_info_of(c->op)->id);
  return CT_OK;
}

/* ---- elementwise helper of the max/min/median backward: where x ties the result ---- */
typedef struct {
  ct_dtype dx, dr, dout;
  bool nan_mode;
} tie_ctx;
static void tie_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  tie_ctx *t = vctx;
  for (int64_t i = 0; i < n; i++) {
    double a = ct_load_f64(p[1] + i * s[1], t->dx), b = ct_load_f64(p[2] + i * s[2], t->dr);
    bool m = a == b || (t->nan_mode && isnan(a) && isnan(b));
    ct_store_f64(p[0] + i * s[0], t->dout, m ? 1.0 : 0.0);
  }
}
ct_status ct_cpu_tie_mask(const ct_call *c) {
  tie_ctx t = {c->in[0]->dtype, c->in[1]->dtype, c->out[0]->dtype, c->a.k[3] != 0};
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  ct_cpu_foreach(3, ts, tie_loop, &t, true);
  return CT_OK;
}

/* ---- unique (flattened, sorted): k[3] = 0 counts the distinct values into a 0-dim int64,
 * k[3] = 1 fills values, inverse and counts ---- */
ct_status ct_cpu_unique(const ct_call *c) {
  const ct_tensor *t = c->in[0];
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  ct_dtype dt = t->dtype;
  bool fl = ct_dtype_is_floating(dt);
  ct_keyed *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
  if (!buf) return CT_ERR(CT_ERR_OOM, "out of memory in unique");
  char *base = ct_cpu_ptr(t);
  for (int64_t i = 0; i < n; i++) keyed_load(&buf[i], base + ct_elem_offset(t, i), dt, fl, i);
  keyed_sort(buf, n, fl, false);
  if (c->op == CT_OP_unique_count) {
    int64_t u = 0;
    for (int64_t i = 0; i < n; i++)
      if (i == 0 || !keyed_eq(&buf[i], &buf[i - 1], fl)) u++;
    ct_store_i64(ct_cpu_ptr(c->out[0]), c->out[0]->dtype, u);
  } else {
    const ct_tensor *vo = c->out[0], *io = c->out[1], *co = c->out[2];
    int64_t u = -1;
    for (int64_t i = 0; i < n; i++) {
      if (i == 0 || !keyed_eq(&buf[i], &buf[i - 1], fl)) {
        u++;
        if (u >= vo->shape[0]) break;
        keyed_store(ct_cpu_ptr(vo) + ct_elem_offset(vo, u), vo->dtype, &buf[i], fl);
        ct_store_i64(ct_cpu_ptr(co) + ct_elem_offset(co, u), co->dtype, 0);
      }
      char *cp = ct_cpu_ptr(co) + ct_elem_offset(co, u);
      ct_store_i64(cp, co->dtype, ct_load_i64(cp, co->dtype) + 1);
      ct_store_i64(ct_cpu_ptr(io) + ct_elem_offset(io, buf[i].idx), io->dtype, u);
    }
  }
  free(buf);
  return CT_OK;
}

/* ---- elementwise helpers of the norm/std gradients ---- */
typedef struct {
  ct_dtype dt;
  double e;
  bool sgn, zero0;
} ew_ctx;
static void div_nz_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  ew_ctx *t = vctx;
  for (int64_t i = 0; i < n; i++) {
    double a = ct_load_f64(p[1] + i * s[1], t->dt), b = ct_load_f64(p[2] + i * s[2], t->dt);
    ct_store_f64(p[0] + i * s[0], t->dt, b == 0 ? 0.0 : a / b);
  }
}
ct_status ct_cpu_div_nz(const ct_call *c) {
  ew_ctx t = {c->out[0]->dtype, 0, false, false};
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  ct_cpu_foreach(3, ts, div_nz_loop, &t, true);
  return CT_OK;
}
static void spow_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  ew_ctx *t = vctx;
  for (int64_t i = 0; i < n; i++) {
    double x = ct_load_f64(p[1] + i * s[1], t->dt), r;
    if (x == 0 && t->zero0) r = 0;
    else {
      r = t->e == 0 ? 1.0 : pow(fabs(x), t->e);
      if (t->sgn) r = x > 0 ? r : x < 0 ? -r : (isnan(x) ? x : 0.0);
    }
    ct_store_f64(p[0] + i * s[0], t->dt, r);
  }
}
ct_status ct_cpu_spow(const ct_call *c) {
  ew_ctx t = {c->out[0]->dtype, c->a.f[0], c->a.k[3] != 0, c->a.k[4] != 0};
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  ct_cpu_foreach(2, ts, spow_loop, &t, true);
  return CT_OK;
}
