/* CPU reference kernels for the shape family.
 *
 * Most shape ops are "dim maps": every output index along each dim reads one
 * input index along that dim (flip, roll, repeat, the pads, repeat_interleave),
 * or a fill value. One walker handles them all: it visits the walked tensor A
 * in row-major order and pairs each element with B through per-dim byte-offset
 * tables. Gathers (A = output) copy raw elements and run over the thread pool;
 * scatters (the backward of many-to-one maps: B = gradient input, A = gradient
 * output) accumulate in order on one thread, so sums are deterministic. */
#include "cpu_iter.h"
#include <stdlib.h>

#define NOFF INT64_MIN /* table entry: no source element (use the fill value) */

typedef struct {
  int nd;
  int64_t shape[CT_MAX_DIMS];
  char *a;
  int64_t a_st[CT_MAX_DIMS]; /* bytes */
  char *b;
  int64_t *tab[CT_MAX_DIMS]; /* byte offsets into b for each index of dim d (NULL: b_st[d] * index) */
  int64_t b_st[CT_MAX_DIMS];
  int isz;
  ct_dtype dt;
  bool scatter;               /* false: a = b[map] or fill; true: b[map] += a */
  int tri;                    /* 1 tril, 2 triu: zero the elements outside the triangle */
  int64_t diag;
  unsigned char fill[8];
} walk_ctx;

static inline void copy_elem(char *d, const void *s, int isz) {
  switch (isz) {
    case 1: *(uint8_t *)d = *(const uint8_t *)s; break;
    case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
    case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
    default: *(uint64_t *)d = *(const uint64_t *)s; break;
  }
}

static inline void add_elem(char *d, const char *s, ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32: *(float *)d += *(const float *)s; break;
    case CT_FLOAT64: *(double *)d += *(const double *)s; break;
    default:
      if (ct_dtype_is_floating(dt)) ct_store_f64(d, dt, ct_load_f64(d, dt) + ct_load_f64(s, dt));
      else ct_store_i64(d, dt, (int64_t)((uint64_t)ct_load_i64(d, dt) + (uint64_t)ct_load_i64(s, dt)));
      break;
  }
}

static inline int64_t b_off(const walk_ctx *w, int d, int64_t i) { return w->tab[d] ? w->tab[d][i] : i * w->b_st[d]; }

static void walk_range(void *vctx, int64_t begin, int64_t end) {
  const walk_ctx *w = vctx;
  int nd = w->nd, last = nd - 1;
  int64_t idx[CT_MAX_DIMS] = {0};
  /* outer multi-index of `begin` */
  int64_t r = begin;
  for (int d = last - 1; d >= 0; d--) {
    idx[d] = r % w->shape[d];
    r /= w->shape[d];
  }
  int64_t inner = w->shape[last];
  for (int64_t o = begin; o < end; o++) {
    char *a = w->a;
    int64_t boff = 0;
    bool fill = false;
    for (int d = 0; d < last; d++) {
      a += idx[d] * w->a_st[d];
      int64_t t = b_off(w, d, idx[d]);
      if (t == NOFF) fill = true;
      else boff += t;
    }
    int64_t row = last >= 1 ? idx[last - 1] : 0;
    for (int64_t j = 0; j < inner; j++) {
      char *pa = a + j * w->a_st[last];
      int64_t t = b_off(w, last, j);
      bool f = fill || t == NOFF;
      if (w->tri) {
        bool keep = w->tri == 1 ? j - row <= w->diag : j - row >= w->diag;
        if (!keep) {
          memset(pa, 0, (size_t)w->isz);
          continue;
        }
      }
      if (w->scatter) {
        if (!f) add_elem(w->b + boff + t, pa, w->dt);
      } else if (f) {
        copy_elem(pa, w->fill, w->isz);
      } else {
        copy_elem(pa, w->b + boff + t, w->isz);
      }
    }
    for (int d = last - 1; d >= 0; d--) { /* odometer */
      if (++idx[d] < w->shape[d]) break;
      idx[d] = 0;
    }
  }
}

/* Sets up A as the walked tensor (geometry in elements -> bytes). 0-dim becomes [1]. */
static void walk_init(walk_ctx *w, const ct_tensor *a, const ct_tensor *b) {
  memset(w, 0, sizeof *w);
  w->isz = (int)ct_dtype_size(a->dtype);
  w->dt = a->dtype;
  w->a = ct_cpu_ptr(a);
  w->b = ct_cpu_ptr(b);
  w->nd = a->ndim;
  for (int d = 0; d < a->ndim; d++) {
    w->shape[d] = a->shape[d];
    w->a_st[d] = a->stride[d] * w->isz;
    w->b_st[d] = d < b->ndim ? b->stride[d] * w->isz : 0;
  }
  if (w->nd == 0) {
    w->nd = 1;
    w->shape[0] = 1;
  }
}

static void walk_run(walk_ctx *w) {
  int64_t numel = 1;
  for (int d = 0; d < w->nd; d++) numel *= w->shape[d];
  if (numel == 0) return;
  int64_t inner = w->shape[w->nd - 1], outer = numel / inner;
  if (w->scatter) walk_range(w, 0, outer);
  else ct_parallel_for(outer, inner >= 16384 ? 1 : 16384 / inner, walk_range, w);
}

/* ---- the dim maps ---- */
enum { MAP_FLIP = 0, MAP_ROLL = 1, MAP_REPEAT = 2, MAP_CONSTANT = 3, MAP_REFLECT = 4, MAP_REPLICATE = 5,
       MAP_CIRCULAR = 6, MAP_INTERLEAVE = 7 };

/* Source index along one dim of size n for walked index o (m = walked size), or -1. */
static inline int64_t map_index(int mode, int64_t o, int64_t n, int64_t p0, int64_t p1) {
  int64_t j;
  switch (mode) {
    case MAP_FLIP: return p0 ? n - 1 - o : o;
    case MAP_ROLL: j = (o - p0) % n; return j < 0 ? j + n : j;
    case MAP_REPEAT: return o % n;
    case MAP_CONSTANT: j = o - p0; return (j >= 0 && j < n) ? j : -1;
    case MAP_REFLECT:
      j = o - p0;
      if (j < 0) j = -j;
      if (j >= n) j = 2 * (n - 1) - j;
      return j;
    case MAP_REPLICATE: j = o - p0; return j < 0 ? 0 : j >= n ? n - 1 : j;
    case MAP_CIRCULAR: { /* negative pads crop first; the rest wraps around the cropped core (PyTorch's order) */
      int64_t cl = p0 < 0 ? -p0 : 0, cr = p1 < 0 ? -p1 : 0, core = n - cl - cr;
      if (core <= 0) return -1;
      j = (o - (p0 > 0 ? p0 : 0)) % core;
      return (j < 0 ? j + core : j) + cl;
    }
    default: return o;
  }
}

ct_status ct_cpu_dimmap(const ct_call *c) {
  int op = c->op, mode;
  bool scatter = false;
  switch (op) {
    case CT_OP_flip: mode = MAP_FLIP; break;
    case CT_OP_roll: mode = MAP_ROLL; break;
    case CT_OP_repeat: mode = MAP_REPEAT; break;
    case CT_OP_constant_pad_nd: mode = MAP_CONSTANT; break;
    case CT_OP_reflection_pad: mode = MAP_REFLECT; break;
    case CT_OP_replication_pad: mode = MAP_REPLICATE; break;
    case CT_OP_circular_pad: mode = MAP_CIRCULAR; break;
    case CT_OP_pad_backward: mode = (int)c->a.k[0]; scatter = true; break;
    case CT_OP_repeat_interleave: mode = MAP_INTERLEAVE; break;
    case CT_OP_repeat_interleave_backward: mode = MAP_INTERLEAVE; scatter = true; break;
    default: return CT_ERR(CT_ERR_RUNTIME, "ct_cpu_dimmap: unexpected op %d", op);
  }
  const ct_tensor *walked = scatter ? c->in[0] : c->out[0], *other = scatter ? c->out[0] : c->in[0];
  walk_ctx w;
  walk_init(&w, walked, other);
  w.scatter = scatter;
  if (scatter) /* the gradient buffer is a fresh contiguous tensor: all-zero bits are 0 in every dtype */
    memset(ct_cpu_ptr(other), 0, (size_t)ct_numel(other) * ct_dtype_size(other->dtype));
  if (mode == MAP_CONSTANT) {
    ct_scalar v = c->a.s[0];
    if (ct_dtype_is_floating(other->dtype)) ct_store_f64(w.fill, other->dtype, v.kind == CT_SCALAR_FLOAT ? v.f : (double)v.i);
    else if (other->dtype == CT_BOOL) ct_store_i64(w.fill, other->dtype, v.kind == CT_SCALAR_FLOAT ? v.f != 0 : v.i != 0);
    else ct_store_i64(w.fill, other->dtype, v.kind == CT_SCALAR_FLOAT ? (int64_t)v.f : v.i);
  }
  int64_t total = 0;
  for (int d = 0; d < walked->ndim; d++) total += walked->shape[d];
  int64_t *tabs = malloc(sizeof(int64_t) * (size_t)(total + 1));
  if (!tabs) return CT_ERR(CT_ERR_OOM, "out of memory");
  int64_t *p = tabs;
  int idim = (int)c->a.k[1];
  for (int d = 0; d < walked->ndim; d++) {
    int64_t m = walked->shape[d], n = other->shape[d], st = other->stride[d] * w.isz;
    w.tab[d] = p;
    if (mode == MAP_INTERLEAVE) {
      if (d == idim) {
        const ct_tensor *rep = c->in[1];
        const int64_t *rv = (const int64_t *)ct_cpu_ptr(rep);
        int64_t nr = rep->shape[0], k = 0;
        for (int64_t s = 0; s < nr; s++)
          for (int64_t q = 0; q < rv[s * rep->stride[0]] && k < m; q++) p[k++] = s * st;
        while (k < m) p[k++] = NOFF; /* not reached: sizes are checked by the op */
      } else {
        for (int64_t o = 0; o < m; o++) p[o] = o * st;
      }
    } else {
      for (int64_t o = 0; o < m; o++) {
        int64_t j = n > 0 ? map_index(mode, o, n, c->a.i[2 * d], c->a.i[2 * d + 1]) : -1;
        p[o] = j < 0 ? NOFF : j * st;
      }
    }
    p += m;
  }
  walk_run(&w);
  free(tabs);
  return CT_OK;
}

/* ---- cat: each input copied into its slice of the output ---- */
ct_status ct_cpu_cat(const ct_call *c) {
  const ct_tensor *o = c->out[0];
  int dim = (int)c->a.k[0];
  int64_t off = 0;
  for (int i = 0; i < c->n_in; i++) {
    const ct_tensor *x = c->in[i];
    if (c->a.i[i] < 0) continue; /* a skipped legacy empty [0] input */
    /* A: the output's slice (output strides, input shape); B: the input by its strides */
    walk_ctx w;
    walk_init(&w, x, x);
    w.a = ct_cpu_ptr(o) + off * o->stride[dim] * w.isz;
    for (int d = 0; d < x->ndim; d++) w.a_st[d] = o->stride[d] * w.isz;
    walk_run(&w);
    off += x->shape[dim];
  }
  return CT_OK;
}

/* ---- tril / triu: copy, zeroing outside the triangle of the last two dims ---- */
ct_status ct_cpu_tri(const ct_call *c) {
  walk_ctx w;
  walk_init(&w, c->out[0], c->in[0]);
  w.tri = c->op == CT_OP_tril ? 1 : 2;
  w.diag = c->a.k[0];
  /* in place (tril_) reads and writes the same elements one at a time: safe */
  walk_run(&w);
  return CT_OK;
}
