/* CPU kernels of the random ops: they call the PyTorch-exact streams of
 * src/core/generator.c and write the numbers where PyTorch's kernels write them.
 * PyTorch fills a contiguous tensor in order; a non-contiguous one through a
 * TensorIterator, which visits a single written tensor in memory order (dims
 * sorted by stride), and draws per element (normal_ then uses the per-element
 * double Box-Muller even for numel >= 16). */
#include "cpu_iter.h"
#include "../../core/generator.h"
#include <pthread.h>
#include <stdlib.h>

/* PyTorch locks a generator for the duration of a kernel; one lock for all is enough here. */
static pthread_mutex_t gen_mu = PTHREAD_MUTEX_INITIALIZER;

static ct_generator *gen_of(const ct_call *c) {
  return c->a.ptr ? (ct_generator *)c->a.ptr : ct_default_generator();
}

/* t's dims in TensorIterator order: outermost first, byte strides; size-1 dims dropped. */
typedef struct {
  int nd;
  int64_t shape[CT_MAX_DIMS], st[CT_MAX_DIMS];
} mem_geom;

static void mem_order(const ct_tensor *t, mem_geom *m) {
  int64_t isz = (int64_t)ct_dtype_size(t->dtype);
  m->nd = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] == 1) continue;
    m->shape[m->nd] = t->shape[d];
    m->st[m->nd++] = t->stride[d] * isz;
  }
  /* stable insertion sort: larger stride outside; equal strides keep logical order */
  for (int i = 1; i < m->nd; i++) {
    int64_t sh = m->shape[i], st = m->st[i];
    int j = i;
    while (j > 0 && m->st[j - 1] < st) {
      m->shape[j] = m->shape[j - 1];
      m->st[j] = m->st[j - 1];
      j--;
    }
    m->shape[j] = sh;
    m->st[j] = st;
  }
}

/* Byte offset of the k-th visited element, advanced incrementally. */
typedef struct {
  mem_geom g;
  int64_t idx[CT_MAX_DIMS];
  int64_t off;
} mem_walk;
static void walk_init(mem_walk *w, const ct_tensor *t) {
  mem_order(t, &w->g);
  memset(w->idx, 0, sizeof w->idx);
  w->off = 0;
}
static void walk_next(mem_walk *w) {
  for (int d = w->g.nd - 1; d >= 0; d--) {
    w->off += w->g.st[d];
    if (++w->idx[d] < w->g.shape[d]) return;
    w->off -= w->g.st[d] * w->g.shape[d];
    w->idx[d] = 0;
  }
}

/* Copy n contiguous elements of t's dtype from buf into t in visiting order. */
static void scatter(ct_tensor *t, const char *buf, int64_t n) {
  size_t isz = ct_dtype_size(t->dtype);
  char *base = ct_cpu_ptr(t);
  mem_walk w;
  walk_init(&w, t);
  for (int64_t k = 0; k < n; k++, walk_next(&w)) memcpy(base + w.off, buf + (size_t)k * isz, isz);
}

static void store_f64_via_float(void *p, ct_dtype dt, double v) {
  /* double -> Half/BFloat16 goes through float in c10 */
  if (dt == CT_FLOAT16 || dt == CT_BFLOAT16) v = (double)(float)v;
  ct_store_f64(p, dt, v);
}

/* Draw n numbers of kind c->a.k[0] in t's dtype into buf (contiguous). */
static ct_status draw(const ct_call *c, ct_generator *g, ct_dtype dt, char *buf, int64_t n) {
  const ct_attrs *a = &c->a;
  size_t isz = ct_dtype_size(dt);
  switch (a->k[0]) {
    case CT_RF_UNIFORM:
      if (dt == CT_FLOAT32) ct_gen_uniform_f32(g, (float *)buf, n, a->f[0], a->f[1]);
      else if (dt == CT_FLOAT64) ct_gen_uniform_f64(g, (double *)buf, n, a->f[0], a->f[1]);
      else if (dt == CT_FLOAT16) ct_gen_uniform_f16(g, (uint16_t *)buf, n, a->f[0], a->f[1]);
      else if (dt == CT_BFLOAT16) ct_gen_uniform_bf16(g, (uint16_t *)buf, n, a->f[0], a->f[1]);
      else return CT_ERR(CT_ERR_RUNTIME, "\"check_uniform_bounds\" not implemented for '%s'", ct_dtype_torch_name(dt));
      return CT_OK;
    case CT_RF_NORMAL:
      if (dt == CT_FLOAT32) ct_gen_normal_f32(g, (float *)buf, n, a->f[0], a->f[1]);
      else if (dt == CT_FLOAT64) ct_gen_normal_f64(g, (double *)buf, n, a->f[0], a->f[1]);
      else if (dt == CT_FLOAT16) ct_gen_normal_f16(g, (uint16_t *)buf, n, a->f[0], a->f[1]);
      else if (dt == CT_BFLOAT16) ct_gen_normal_bf16(g, (uint16_t *)buf, n, a->f[0], a->f[1]);
      else return CT_ERR(CT_ERR_RUNTIME, "\"normal_kernel_cpu\" not implemented for '%s'", ct_dtype_torch_name(dt));
      return CT_OK;
    case CT_RF_EXPONENTIAL:
      if (dt == CT_FLOAT32) ct_gen_exponential_f32(g, (float *)buf, n, a->f[0]);
      else if (dt == CT_FLOAT64) ct_gen_exponential_f64(g, (double *)buf, n, a->f[0]);
      else if (dt == CT_FLOAT16 || dt == CT_BFLOAT16) {
        for (int64_t i = 0; i < n; i++) {
          double v;
          ct_gen_exponential_f64(g, &v, 1, a->f[0]);
          store_f64_via_float(buf + (size_t)i * isz, dt, v);
        }
      } else return CT_ERR(CT_ERR_RUNTIME, "\"exponential_cpu\" not implemented for '%s'", ct_dtype_torch_name(dt));
      return CT_OK;
    case CT_RF_RANDINT: {
      int64_t lo = a->i[0], hi = a->i[1];
      int rc = 0;
      if (dt == CT_INT64) rc = ct_gen_randint_i64(g, (int64_t *)buf, n, lo, hi);
      else if (dt == CT_INT32) rc = ct_gen_randint_i32(g, (int32_t *)buf, n, lo, hi);
      else if (dt == CT_FLOAT32) rc = ct_gen_randint_f32(g, (float *)buf, n, lo, hi);
      else if (dt == CT_FLOAT64) rc = ct_gen_randint_f64(g, (double *)buf, n, lo, hi);
      else {
        if (dt == CT_FLOAT16 || dt == CT_BFLOAT16) rc = ct_gen_randint_float_range(&lo, &hi, dt == CT_FLOAT16 ? 11 : 8);
        for (int64_t i = 0; rc == 0 && i < n; i++) {
          int64_t v;
          rc = ct_gen_randint_i64(g, &v, 1, lo, hi);
          if (dt == CT_FLOAT16 || dt == CT_BFLOAT16) ct_store_f64(buf + (size_t)i * isz, dt, (double)(float)v);
          else ct_store_i64(buf + (size_t)i * isz, dt, v);
        }
      }
      if (rc != 0) return CT_ERR(CT_ERR_RUNTIME, "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                                 (long long)lo, (long long)hi);
      return CT_OK;
    }
    case CT_RF_BERNOULLI:
      if (dt == CT_FLOAT64) ct_gen_bernoulli_f64(g, (double *)buf, n, NULL, a->f[0]);
      else
        for (int64_t i = 0; i < n; i++) {
          double v;
          ct_gen_bernoulli_f64(g, &v, 1, NULL, a->f[0]);
          ct_store_f64(buf + (size_t)i * isz, dt, v);
        }
      return CT_OK;
    default: return CT_ERR(CT_ERR_RUNTIME, "random_fill: unknown kind %lld", (long long)a->k[0]);
  }
}

ct_status ct_cpu_random_fill(const ct_call *c) {
  ct_tensor *t = c->out[0];
  int64_t n = ct_numel(t);
  if (n == 0) return CT_OK;
  ct_generator *g = gen_of(c);
  ct_dtype dt = t->dtype;
  size_t isz = ct_dtype_size(dt);
  bool contig = ct_is_contiguous(t);
  ct_status st = CT_OK;
  pthread_mutex_lock(&gen_mu);
  if (c->a.k[0] == CT_RF_NORMAL && !contig && ct_dtype_is_floating(dt)) {
    /* TensorIterator path: one double Box-Muller sample per element */
    char *base = ct_cpu_ptr(t);
    mem_walk w;
    walk_init(&w, t);
    for (int64_t k = 0; k < n; k++, walk_next(&w)) {
      double v;
      ct_gen_normal_f64(g, &v, 1, c->a.f[0], c->a.f[1]);
      store_f64_via_float(base + w.off, dt, (double)v);
    }
  } else if (contig) {
    st = draw(c, g, dt, ct_cpu_ptr(t), n);
  } else {
    char *buf = ct_xmalloc((size_t)n * isz);
    if (!buf) st = ct_last_status();
    else {
      st = draw(c, g, dt, buf, n);
      if (st == CT_OK) scatter(t, buf, n);
      free(buf);
    }
  }
  pthread_mutex_unlock(&gen_mu);
  return st;
}

/* out.bernoulli_(p): p (in[0]) is already expanded to out's shape; a float64 p
 * draws double uniforms, any other floating p float uniforms. */
ct_status ct_cpu_bernoulli_tensor(const ct_call *c) {
  ct_tensor *t = c->out[0], *p = c->in[0];
  int64_t n = ct_numel(t);
  if (n == 0) return CT_OK;
  ct_generator *g = gen_of(c);
  char *base = ct_cpu_ptr(t), *pb = ct_cpu_ptr(p);
  int64_t pisz = (int64_t)ct_dtype_size(p->dtype);
  /* visit out in memory order; read p at the same logical position */
  int perm[CT_MAX_DIMS], np = 0;
  {
    /* the order of t's dims (as in mem_order), tracked by dim index */
    int64_t st[CT_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
      if (t->shape[d] == 1) continue;
      int j = np++;
      while (j > 0 && st[j - 1] < t->stride[d]) {
        st[j] = st[j - 1];
        perm[j] = perm[j - 1];
        j--;
      }
      st[j] = t->stride[d];
      perm[j] = d;
    }
  }
  int64_t idx[CT_MAX_DIMS] = {0};
  int64_t to = 0, po = 0, tisz = (int64_t)ct_dtype_size(t->dtype);
  pthread_mutex_lock(&gen_mu);
  for (int64_t k = 0; k < n; k++) {
    double r;
    if (p->dtype == CT_FLOAT64) {
      double pv = *(double *)(pb + po * pisz);
      ct_gen_bernoulli_f64(g, &r, 1, &pv, 0.0);
    } else {
      float pv = (float)ct_load_f64(pb + po * pisz, p->dtype), rf;
      ct_gen_bernoulli_f32(g, &rf, 1, &pv, 0.0);
      r = rf;
    }
    ct_store_f64(base + to * tisz, t->dtype, r);
    for (int j = np - 1; j >= 0; j--) {
      int d = perm[j];
      to += t->stride[d];
      po += p->stride[d];
      if (++idx[j] < t->shape[d]) break;
      to -= t->stride[d] * t->shape[d];
      po -= p->stride[d] * t->shape[d];
      idx[j] = 0;
    }
  }
  pthread_mutex_unlock(&gen_mu);
  return CT_OK;
}

/* randperm: the int64 stream, converted (out is a fresh contiguous 1-D tensor). */
ct_status ct_cpu_randperm(const ct_call *c) {
  ct_tensor *t = c->out[0];
  int64_t n = ct_numel(t);
  if (n == 0) return CT_OK;
  ct_generator *g = gen_of(c);
  int64_t *buf = t->dtype == CT_INT64 ? (int64_t *)ct_cpu_ptr(t) : ct_xmalloc((size_t)n * sizeof(int64_t));
  if (!buf) return ct_last_status();
  pthread_mutex_lock(&gen_mu);
  ct_gen_randperm_i64(g, buf, n);
  pthread_mutex_unlock(&gen_mu);
  if (t->dtype != CT_INT64) {
    char *o = ct_cpu_ptr(t);
    size_t isz = ct_dtype_size(t->dtype);
    for (int64_t i = 0; i < n; i++) {
      if (ct_dtype_is_floating(t->dtype)) ct_store_f64(o + (size_t)i * isz, t->dtype, (double)(float)buf[i]);
      else ct_store_i64(o + (size_t)i * isz, t->dtype, buf[i]);
    }
    free(buf);
  }
  return CT_OK;
}

/* multinomial: in[0] contiguous [n_dist, n_cat] float32/float64 probabilities
 * (validated by the entry point), out contiguous int64 [n_dist, k]; k0 replacement. */
ct_status ct_cpu_multinomial(const ct_call *c) {
  ct_tensor *p = c->in[0], *t = c->out[0];
  int64_t nd = p->ndim == 2 ? p->shape[0] : 1, nc = p->shape[p->ndim - 1], k = t->shape[t->ndim - 1];
  if (nd == 0 || k == 0) return CT_OK;
  ct_generator *g = gen_of(c);
  int rc;
  pthread_mutex_lock(&gen_mu);
  if (p->dtype == CT_FLOAT64)
    rc = ct_gen_multinomial(g, (const double *)ct_cpu_ptr(p), nd, nc, k, (int)c->a.k[0], (int64_t *)ct_cpu_ptr(t));
  else
    rc = ct_gen_multinomial_f32(g, (const float *)ct_cpu_ptr(p), nd, nc, k, (int)c->a.k[0], (int64_t *)ct_cpu_ptr(t));
  pthread_mutex_unlock(&gen_mu);
  if (rc != 0) return CT_ERR(CT_ERR_RUNTIME, "invalid multinomial distribution (sum of probabilities <= 0)");
  return CT_OK;
}
