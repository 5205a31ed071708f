/* The parity harness: reads the fixtures written by tests/parity/gen_fixtures.py
 * (format documented at the top of that script), runs each case's C runner and
 * compares with PyTorch 1.13: outputs (shape, dtype, requires_grad, values),
 * gradients for the fixture's grad_outputs, double-backward values, a float64
 * central-difference check of the analytical gradient, and that no tensor handle
 * leaks across a case.
 *
 *   test_parity [-f FIXTURES] [-v] [name-substring]
 * FIXTURES defaults to <dir of this binary>/parity/fixtures.bin. */
#include "parity.h"
#include "core/internal.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the runner registry ---------------------------------------------------------- */
typedef struct {
  const char *op;
  parity_runner fn;
} reg_entry;
static reg_entry *registry;
static int n_registry, cap_registry;

void parity_register(const char *op, parity_runner fn) {
  if (n_registry == cap_registry) {
    int cap = cap_registry ? cap_registry * 2 : 64;
    reg_entry *p = realloc(registry, (size_t)cap * sizeof *p);
    if (!p) {
      fprintf(stderr, "parity: out of memory registering %s\n", op);
      exit(2);
    }
    registry = p;
    cap_registry = cap;
  }
  for (int i = 0; i < n_registry; i++)
    if (!strcmp(registry[i].op, op)) {
      fprintf(stderr, "parity: runner '%s' registered twice\n", op);
      exit(2);
    }
  registry[n_registry].op = op;
  registry[n_registry].fn = fn;
  n_registry++;
}

static parity_runner find_runner(const char *op) {
  for (int i = 0; i < n_registry; i++)
    if (!strcmp(registry[i].op, op)) return registry[i].fn;
  return NULL;
}

/* ---- fixture data ------------------------------------------------------------------ */
typedef struct {
  bool present;
  ct_dtype dtype;
  int ndim;
  int64_t shape[CT_MAX_DIMS];
  int layout; /* 0 contiguous, 1 transposed, 2 strided */
  bool rg;
  int64_t numel;
  void *data; /* malloc'd, aligned, logical row-major */
  /* outputs only: PyTorch's geometry and aliasing */
  int64_t stride[CT_MAX_DIMS], offset;
  int share; /* first input sharing storage, -1 none */
} ftensor;

enum { A_NONE = 0, A_INT, A_FLOAT, A_BOOL, A_STR, A_INTS, A_FLOATS };
typedef struct {
  char *key;
  int kind;
  int64_t i;
  double f;
  char *s;
  int n;
  int64_t *il;
  double *fl;
} fattr;

struct pcase {
  char *name, *op, *source, *genfail, *error;
  int n_attrs;
  fattr *attrs;
  double rtol, atol, grad_rtol, grad_atol;
  bool gradgrad, fd, has_error, has_gg, check_strides;
  int n_in, n_out;
  ftensor *in, *out, *go, *grads, *v, *gg;
};

typedef struct {
  const uint8_t *p, *end;
  bool bad;
} reader;

static bool rd(reader *r, void *dst, size_t n) {
  if (r->bad || (size_t)(r->end - r->p) < n) {
    r->bad = true;
    memset(dst, 0, n);
    return false;
  }
  memcpy(dst, r->p, n);
  r->p += n;
  return true;
}
static uint8_t rd_u8(reader *r) { uint8_t v; rd(r, &v, 1); return v; }
static uint32_t rd_u32(reader *r) { uint32_t v; rd(r, &v, 4); return v; }
static int64_t rd_i64(reader *r) { int64_t v; rd(r, &v, 8); return v; }
static double rd_f64(reader *r) { double v; rd(r, &v, 8); return v; }
static char *rd_str(reader *r) {
  uint32_t n = rd_u32(r);
  if (r->bad || (size_t)(r->end - r->p) < n) {
    r->bad = true;
    return calloc(1, 1);
  }
  char *s = malloc((size_t)n + 1);
  if (!s) {
    r->bad = true;
    return NULL;
  }
  memcpy(s, r->p, n);
  s[n] = 0;
  r->p += n;
  return s;
}

static void rd_tensor(reader *r, ftensor *t) {
  memset(t, 0, sizeof *t);
  t->present = true;
  int dt = rd_u8(r);
  t->ndim = rd_u8(r);
  if (dt >= CT_NUM_DTYPES || t->ndim > CT_MAX_DIMS) {
    r->bad = true;
    return;
  }
  t->dtype = (ct_dtype)dt;
  t->numel = 1;
  for (int d = 0; d < t->ndim; d++) {
    t->shape[d] = rd_i64(r);
    if (t->shape[d] < 0 || !ct_mul_ok(t->numel, t->shape[d], &t->numel)) r->bad = true;
  }
  t->layout = rd_u8(r);
  t->rg = rd_u8(r) != 0;
  uint64_t nb = 0;
  rd(r, &nb, 8);
  if (r->bad || nb != (uint64_t)t->numel * ct_dtype_size(t->dtype) || (uint64_t)(r->end - r->p) < nb) {
    r->bad = true;
    return;
  }
  t->data = malloc(nb ? nb : 1);
  if (!t->data) {
    r->bad = true;
    return;
  }
  memcpy(t->data, r->p, nb);
  r->p += nb;
}
static void rd_opt(reader *r, ftensor *t) {
  memset(t, 0, sizeof *t);
  if (rd_u8(r)) rd_tensor(r, t);
}

/* float attrs read as ints: truncate, saturating (no UB for 1e30 or NaN) */
static int64_t sat_i64(double f) {
  if (isnan(f)) return 0;
  if (f >= 9.2233720368547758e18) return INT64_MAX;
  if (f <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)f;
}

static bool rd_case(reader *r, pcase *c) {
  memset(c, 0, sizeof *c);
  c->name = rd_str(r);
  c->op = rd_str(r);
  c->source = rd_str(r);
  c->genfail = rd_str(r);
  c->n_attrs = (int)rd_u32(r);
  if (r->bad || c->n_attrs < 0 || c->n_attrs > 4096) return false;
  c->attrs = calloc((size_t)c->n_attrs + 1, sizeof *c->attrs);
  for (int k = 0; k < c->n_attrs && !r->bad; k++) {
    fattr *a = &c->attrs[k];
    a->key = rd_str(r);
    a->kind = rd_u8(r);
    switch (a->kind) {
      case A_NONE: break;
      case A_INT: a->i = rd_i64(r); a->f = (double)a->i; break;
      case A_FLOAT: a->f = rd_f64(r); a->i = sat_i64(a->f); break;
      case A_BOOL: a->i = rd_u8(r); a->f = (double)a->i; break;
      case A_STR: a->s = rd_str(r); break;
      case A_INTS:
      case A_FLOATS:
        a->n = (int)rd_u32(r);
        if (a->n < 0 || a->n > 1 << 20) {
          r->bad = true;
          break;
        }
        a->il = calloc((size_t)a->n + 1, sizeof *a->il);
        a->fl = calloc((size_t)a->n + 1, sizeof *a->fl);
        for (int j = 0; j < a->n; j++) {
          if (a->kind == A_INTS) {
            a->il[j] = rd_i64(r);
            a->fl[j] = (double)a->il[j];
          } else {
            a->fl[j] = rd_f64(r);
            a->il[j] = sat_i64(a->fl[j]);
          }
        }
        break;
      default: r->bad = true;
    }
  }
  c->rtol = rd_f64(r);
  c->atol = rd_f64(r);
  c->grad_rtol = rd_f64(r);
  c->grad_atol = rd_f64(r);
  c->gradgrad = rd_u8(r);
  c->fd = rd_u8(r);
  c->has_error = rd_u8(r);
  c->error = rd_str(r);
  c->check_strides = rd_u8(r);
  c->n_in = (int)rd_u32(r);
  if (r->bad || c->n_in > PARITY_MAX_IN) return false;
  c->in = calloc((size_t)c->n_in + 1, sizeof *c->in);
  c->grads = calloc((size_t)c->n_in + 1, sizeof *c->grads);
  c->v = calloc((size_t)c->n_in + 1, sizeof *c->v);
  c->gg = calloc((size_t)c->n_in + 1, sizeof *c->gg);
  for (int i = 0; i < c->n_in; i++) rd_tensor(r, &c->in[i]);
  c->n_out = (int)rd_u32(r);
  if (r->bad || c->n_out > PARITY_MAX_OUT) return false;
  c->out = calloc((size_t)c->n_out + 1, sizeof *c->out);
  c->go = calloc((size_t)c->n_out + 1, sizeof *c->go);
  for (int j = 0; j < c->n_out; j++) rd_tensor(r, &c->out[j]);
  for (int j = 0; j < c->n_out && !r->bad; j++) {
    ftensor *o = &c->out[j];
    if (rd_u8(r) != o->ndim) r->bad = true;
    for (int d = 0; d < o->ndim; d++) o->stride[d] = rd_i64(r);
    o->offset = rd_i64(r);
    o->share = (int8_t)rd_u8(r);
  }
  for (int j = 0; j < c->n_out; j++) rd_opt(r, &c->go[j]);
  if (c->n_out > 0)
    for (int i = 0; i < c->n_in; i++) rd_opt(r, &c->grads[i]);
  c->has_gg = rd_u8(r);
  if (c->has_gg) {
    for (int i = 0; i < c->n_in; i++) rd_opt(r, &c->v[i]);
    for (int i = 0; i < c->n_in; i++) rd_opt(r, &c->gg[i]);
  }
  return !r->bad;
}

/* ---- attribute accessors (parity.h) ------------------------------------------------- */
static const fattr *find_attr(const pcase *c, const char *key) {
  for (int k = 0; c && k < c->n_attrs; k++)
    if (!strcmp(c->attrs[k].key, key)) return c->attrs[k].kind == A_NONE ? NULL : &c->attrs[k];
  return NULL;
}
bool pc_has(const pcase *c, const char *key) { return find_attr(c, key) != NULL; }
int64_t pc_int(const pcase *c, const char *key, int64_t dflt) {
  const fattr *a = find_attr(c, key);
  if (!a) return dflt;
  if (a->kind == A_INT || a->kind == A_BOOL || a->kind == A_FLOAT) return a->i;
  if ((a->kind == A_INTS || a->kind == A_FLOATS) && a->n == 1) return a->il[0];
  return dflt;
}
double pc_float(const pcase *c, const char *key, double dflt) {
  const fattr *a = find_attr(c, key);
  if (!a) return dflt;
  if (a->kind == A_INT || a->kind == A_BOOL || a->kind == A_FLOAT) return a->f;
  if ((a->kind == A_INTS || a->kind == A_FLOATS) && a->n == 1) return a->fl[0];
  return dflt;
}
const char *pc_str(const pcase *c, const char *key, const char *dflt) {
  const fattr *a = find_attr(c, key);
  return a && a->kind == A_STR ? a->s : dflt;
}
int pc_ints(const pcase *c, const char *key, int64_t *out, int max) {
  const fattr *a = find_attr(c, key);
  if (!a) return -1;
  if (a->kind == A_INT || a->kind == A_BOOL) {
    if (max >= 1) out[0] = a->i;
    return 1;
  }
  if (a->kind != A_INTS && a->kind != A_FLOATS) return -1;
  for (int j = 0; j < a->n && j < max; j++) out[j] = a->il[j];
  return a->n;
}
int pc_floats(const pcase *c, const char *key, double *out, int max) {
  const fattr *a = find_attr(c, key);
  if (!a) return -1;
  if (a->kind == A_INT || a->kind == A_BOOL || a->kind == A_FLOAT) {
    if (max >= 1) out[0] = a->f;
    return 1;
  }
  if (a->kind != A_INTS && a->kind != A_FLOATS) return -1;
  for (int j = 0; j < a->n && j < max; j++) out[j] = a->fl[j];
  return a->n;
}
ct_scalar pc_scalar(const pcase *c, const char *key, ct_scalar dflt) {
  const fattr *a = find_attr(c, key);
  if (!a) return dflt;
  switch (a->kind) {
    case A_INT: return ct_si(a->i);
    case A_FLOAT: return ct_sf(a->f);
    case A_BOOL: return ct_sb(a->i != 0);
    default: return dflt;
  }
}
int pc_dtype(const pcase *c, const char *key) {
  const char *s = pc_str(c, key, NULL);
  if (!s) return -1;
  for (int d = 0; d < CT_NUM_DTYPES; d++)
    if (!strcmp(s, ct_dtype_name((ct_dtype)d))) return d;
  return -1;
}
const char *pc_name(const pcase *c) { return c ? c->name : ""; }

/* ---- failure reporting --------------------------------------------------------------- */
static bool verbose;
static int case_failed; /* failures recorded for the current case */
static const pcase *cur;

/* --device cuda (tests/cross_backend): inputs are built on the device, outputs and
 * gradients read back for the comparison; a case stopped by an op without a CUDA kernel
 * is counted apart (no_kernel) from real failures. */
static ct_device run_dev = {CT_DEVICE_CPU, 0};
ct_device parity_device(void) { return run_dev; }
static int case_nokernel;
static char nk_ops[256][48];
static int nk_count[256], n_nk;
static bool note_nokernel(const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  const char *p = run_dev.type == CT_DEVICE_CPU ? NULL : strstr(msg, "Could not run 'aten::");
  if (!p || (!strstr(p, "from the 'CUDA' backend") && !strstr(p, "from the 'WebGPU' backend"))) return false;
  char op[48];
  sscanf(p + 21, "%47[^']", op);
  int k = 0;
  while (k < n_nk && strcmp(nk_ops[k], op)) k++;
  if (k == n_nk && n_nk < 256) snprintf(nk_ops[n_nk++], sizeof nk_ops[0], "%s", op);
  if (k < n_nk && !case_nokernel) nk_count[k]++;
  case_nokernel = 1;
  return true;
}
static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failf(const char *fmt, ...) {
  va_list aq;
  va_start(aq, fmt);
  bool nk = note_nokernel(fmt, aq);
  va_end(aq);
  if (nk) {
    case_failed++;
    return;
  }
  if (!case_failed) printf("FAIL %s [%s, op %s]\n", cur->name, cur->source, cur->op);
  case_failed++;
  va_list ap;
  va_start(ap, fmt);
  printf("  ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

/* ---- tensors from fixture data ------------------------------------------------------- */
/* Builds a leaf holding ft's values with ft's layout, converted to dtype dt, with the
 * given requires_grad. Transposed: storage allocated with reversed dims and permuted
 * back; strided: last dim allocated doubled and sliced ::2. */
static ct_tensor *build_leaf(const void *data, ct_dtype src_dt, const ftensor *ft, ct_dtype dt, bool rg) {
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *c = ct_from_buffer(data, src_dt, ft->ndim, ft->shape, ct_opts_dtype(dt));
  ct_options dopt = ct_opts_dtype(dt);
  dopt.device = run_dev;
  if (c && run_dev.type != CT_DEVICE_CPU) {
    ct_tensor *m = ct_to_device(c, run_dev);
    ct_release(c);
    c = m;
  }
  ct_tensor *leaf = NULL;
  int nd = ft->ndim;
  if (!c) goto done;
  if ((ft->layout == 1 && nd >= 2) || (ft->layout == 2 && nd >= 1)) {
    int64_t shp[CT_MAX_DIMS], perm[CT_MAX_DIMS];
    ct_tensor *e = NULL, *p = NULL;
    if (ft->layout == 1) {
      for (int d = 0; d < nd; d++) {
        shp[d] = ft->shape[nd - 1 - d];
        perm[d] = nd - 1 - d;
      }
      e = ct_empty(nd, shp, dopt);
      p = e ? ct_permute(e, nd, perm) : NULL;
    } else {
      for (int d = 0; d < nd; d++) shp[d] = ft->shape[d];
      shp[nd - 1] *= 2;
      e = ct_zeros(nd, shp, dopt);
      p = e ? ct_slice(e, nd - 1, 0, shp[nd - 1], 2) : NULL;
    }
    if (p && ct_copy_(p, c) == CT_OK)
      leaf = ct_tensor_over(p->storage, nd, p->shape, p->stride, p->offset, dt); /* a plain leaf, not a view */
    ct_release(p);
    ct_release(e);
    ct_release(c);
  } else {
    leaf = c;
  }
  if (leaf && rg && ct_requires_grad_(leaf, true) != CT_OK) {
    ct_release(leaf);
    leaf = NULL;
  }
done:
  ct_set_grad_enabled(prev);
  return leaf;
}

static ct_tensor *ft_tensor(const ftensor *ft, ct_dtype dt) {
  ftensor f = *ft;
  f.layout = 0;
  return build_leaf(ft->data, ft->dtype, &f, dt, false);
}

/* Values of ft as doubles (row-major). */
static double *ft_doubles(const ftensor *ft) {
  double *v = malloc((size_t)(ft->numel ? ft->numel : 1) * sizeof *v);
  if (!v) return NULL;
  size_t isz = ct_dtype_size(ft->dtype);
  for (int64_t k = 0; k < ft->numel; k++) v[k] = ct_load_f64((const char *)ft->data + k * isz, ft->dtype);
  return v;
}

static void index_str(int64_t flat, int nd, const int64_t *shape, char *buf, size_t n) {
  int64_t idx[CT_MAX_DIMS];
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  size_t o = 0;
  o += (size_t)snprintf(buf + o, n - o, "[");
  for (int d = 0; d < nd && o < n; d++) o += (size_t)snprintf(buf + o, n - o, d ? ", %lld" : "%lld", (long long)idx[d]);
  if (o < n) snprintf(buf + o, n - o, "]");
}

/* ---- tolerances ---------------------------------------------------------------------- */
static void default_tol(ct_dtype dt, double *rtol, double *atol) {
  switch (dt) {
    case CT_FLOAT32: *rtol = 1e-5; *atol = 1e-6; break;
    case CT_FLOAT64: *rtol = 1e-10; *atol = 1e-12; break;
    case CT_FLOAT16: *rtol = 1e-3; *atol = 1e-3; break;
    case CT_BFLOAT16: *rtol = 1e-2; *atol = 1e-2; break;
    default: *rtol = 0; *atol = 0; break; /* integers and bool: exact */
  }
}
/* Matrix-product ops (cuBLAS on --device cuda). */
static bool gemm_op(const char *op) {
  static const char *const ops[] = {"mm", "bmm", "matmul", "addmm", "addmv", "mv", "baddbmm", "addbmm", "linear",
                                    "dot", "vdot", "inner", "einsum", "tensordot", "multi_dot", "chain_matmul"};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
    if (!strcmp(op, ops[k])) return true;
  return false;
}

static void tol_for(const pcase *c, ct_dtype dt, bool grad, double *rtol, double *atol) {
  default_tol(dt, rtol, atol);
  if (!ct_dtype_is_floating(dt)) return;
  double r = grad && !isnan(c->grad_rtol) ? c->grad_rtol : c->rtol;
  double a = grad && !isnan(c->grad_atol) ? c->grad_atol : c->atol;
  if (!isnan(r)) *rtol = r;
  if (!isnan(a)) *atol = a;
  /* --device cuda, float32 matrix products: cuBLAS sums the K products in its own order
   * (tiles, split-K), neither the CPU's nor PyTorch-CPU's. The error of a float32 dot of
   * K terms grows like sqrt(K) * 2^-24 * sum|a_k b_k| with the order, so an element that
   * cancels to near 0 keeps an absolute error of that size, which a fixed atol sized for
   * one CPU order (1e-5 in mm_large_f32, K = 300: seen 1.96e-5 on an H200) cannot cover.
   * 5e-5 ~ sqrt(300) * 6e-8 * sum|ab| (~50 for these randn inputs); rtol is unchanged, so
   * a wrong product (an O(1) error) still fails. */
  if (run_dev.type == CT_DEVICE_CUDA && dt == CT_FLOAT32 && gemm_op(c->op) && *atol < 5e-5) *atol = 5e-5;
  /* the same for float32 convolutions on CUDA (cuDNN, k_cudnn.cu): implicit GEMM / Winograd
   * tiles sum the C*kh*kw (input) or N*OH*OW (weight gradient) products in their own order
   * (seen: 1.34e-6 on a weight gradient of 0.0133 with atol 1e-6) */
  if (run_dev.type == CT_DEVICE_CUDA && dt == CT_FLOAT32 && !strncmp(c->op, "conv", 4) && *atol < 1e-5) *atol = 1e-5;
#ifdef __EMSCRIPTEN__
  /* WebAssembly build only: float64 normal draws (Box-Muller) call log/sin/cos, and emscripten's
   * musl rounds those differently from glibc (which PyTorch used) in the last bit for some
   * arguments. The stream itself is the same; a 1-ulp error in the standard normal value a
   * becomes std*ulp(a) after a*std+mean, plus the final rounding: allow 2 ulp of the result plus
   * 1 ulp of |mean|. Every other case, and every other dtype, stays exact. */
  if (dt == CT_FLOAT64 && !grad && *rtol == 0.0 && *atol == 0.0 &&
      (!strcmp(c->op, "randn") || !strcmp(c->op, "randn_like") || !strcmp(c->op, "normal_") || !strcmp(c->op, "normal"))) {
    *rtol = 0x1p-51; /* 2 ulp */
    *atol = 0x1p-52 * fabs(pc_float(c, "mean", 0.0));
  }
#endif
}

static bool same_shape(const ct_tensor *t, const ftensor *ft) {
  if (ct_ndim(t) != ft->ndim) return false;
  for (int d = 0; d < ft->ndim; d++)
    if (ct_shape(t)[d] != ft->shape[d]) return false;
  return true;
}

/* Compares got (may be NULL = zeros of exp's shape) against exp; reports the worst element. */
static bool compare(const char *what, const ct_tensor *got, const ftensor *exp, double rtol, double atol,
                    bool check_dtype) {
  char sa[160], sb[160];
  if (got && !same_shape(got, exp)) {
    failf("%s: shape %s, PyTorch %s", what, ct_shape_str(ct_ndim(got), ct_shape(got), sa, sizeof sa),
          ct_shape_str(exp->ndim, exp->shape, sb, sizeof sb));
    return false;
  }
  if (got && check_dtype && ct_tensor_dtype(got) != exp->dtype) {
    failf("%s: dtype %s, PyTorch %s", what, ct_dtype_name(ct_tensor_dtype(got)), ct_dtype_name(exp->dtype));
    return false;
  }
  int64_t n = exp->numel;
  if (n == 0) return true;
  bool exact_int = !ct_dtype_is_floating(exp->dtype);
  int64_t worst = -1;
  double worst_score = 0, wg = 0, we = 0;
  if (exact_int) {
    int64_t *g = calloc((size_t)n, sizeof *g);
    if (!g) {
      failf("%s: out of memory", what);
      return false;
    }
    if (got && ct_copy_to_buffer(got, g, CT_INT64, n) != CT_OK) {
      failf("%s: cannot read values: %s", what, ct_last_error());
      free(g);
      return false;
    }
    size_t isz = ct_dtype_size(exp->dtype);
    for (int64_t k = 0; k < n; k++) {
      int64_t e = ct_load_i64((const char *)exp->data + k * isz, exp->dtype);
      if (g[k] != e && worst < 0) {
        worst = k;
        wg = (double)g[k];
        we = (double)e;
      }
    }
    free(g);
  } else {
    double *g = calloc((size_t)n, sizeof *g), *e = ft_doubles(exp);
    if (!g || !e) {
      free(g);
      free(e);
      failf("%s: out of memory", what);
      return false;
    }
    if (got && ct_copy_to_buffer(got, g, CT_FLOAT64, n) != CT_OK) {
      failf("%s: cannot read values: %s", what, ct_last_error());
      free(g);
      free(e);
      return false;
    }
    for (int64_t k = 0; k < n; k++) {
      double a = g[k], b = e[k];
      if (isnan(a) && isnan(b)) continue;
      if (a == b) continue; /* equal infinities too */
      double score;
      if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) score = INFINITY;
      else {
        double err = fabs(a - b), lim = atol + rtol * fabs(b);
        if (err <= lim) continue;
        score = lim > 0 ? err / lim : INFINITY;
      }
      if (worst < 0 || score > worst_score) {
        worst = k;
        worst_score = score;
        wg = a;
        we = b;
      }
    }
    free(g);
    free(e);
  }
  if (worst >= 0) {
    index_str(worst, exp->ndim, exp->shape, sa, sizeof sa);
    failf("%s: worst element %s: got %.10g, PyTorch %.10g (|diff| %.3g, rtol %g, atol %g, %s)", what, sa, wg, we,
          fabs(wg - we), rtol, atol, ct_dtype_name(exp->dtype));
    return false;
  }
  return true;
}

/* Strides (of dims with more than one element, as PyTorch ignores the others when
 * deciding anything), storage offset and storage sharing equal PyTorch's. */
static void check_geometry(const pcase *c, int j, const ct_tensor *o, ct_tensor *const *in) {
  const ftensor *e = &c->out[j];
  char sa[160], sb[160];
  bool same = true;
  for (int d = 0; d < e->ndim; d++) same &= e->shape[d] <= 1 || ct_strides(o)[d] == e->stride[d];
  if (same && e->numel > 0 && ct_storage_offset(o) != e->offset) same = false;
  if (!same)
    failf("output %d: strides %s offset %lld, PyTorch strides %s offset %lld", j,
          ct_shape_str(ct_ndim(o), ct_strides(o), sa, sizeof sa), (long long)ct_storage_offset(o),
          ct_shape_str(e->ndim, e->stride, sb, sizeof sb), (long long)e->offset);
  if (e->numel == 0) return;
  for (int i = 0; i < c->n_in; i++) {
    bool shares = ct_shares_storage(o, in[i]);
    bool want = e->share >= 0 && (i == e->share || (c->in[i].numel > 0 && ct_shares_storage(in[i], in[e->share])));
    if (shares != want) failf("output %d: %s storage with input %d, PyTorch's %s", j, shares ? "shares" : "does not share",
                              i, want ? "does" : "does not");
  }
}

/* ---- running a case --------------------------------------------------------------- */
/* Everything the harness gets from the library is released explicitly (the ownership
 * contract); the scope only catches the runners' temporaries. */
static void release_all(ct_tensor **ts, int n) {
  for (int k = 0; k < n; k++) {
    ct_release(ts[k]);
    ts[k] = NULL;
  }
}

static int run_runner(const pcase *c, parity_runner fn, ct_tensor **in, ct_tensor **out) {
  for (int j = 0; j < PARITY_MAX_OUT; j++) out[j] = NULL;
  ct_clear_error();
  int n = fn(c, in, c->n_in, out);
  if (n > PARITY_MAX_OUT) {
    ct_set_error(CT_ERR_RUNTIME, "runner returned %d outputs (at most %d)", n, PARITY_MAX_OUT);
    n = -1;
  }
  for (int j = 0; n > 0 && j < n; j++)
    if (!out[j]) n = -1;
  if (n < 0) {
    for (int j = 0; j < PARITY_MAX_OUT; j++) {
      ct_release(out[j]);
      out[j] = NULL;
    }
    if (!ct_last_error()[0]) ct_set_error(CT_ERR_RUNTIME, "runner failed without an error message");
  }
  return n;
}

/* sum_j sum(out_j * go_j) in double, over outputs with a grad_output. */
static bool weighted_sum(const pcase *c, ct_tensor **out, double *const *gov, double *res) {
  double s = 0;
  for (int j = 0; j < c->n_out; j++) {
    if (!c->go[j].present) continue;
    int64_t n = c->go[j].numel;
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v || ct_numel(out[j]) != n || ct_copy_to_buffer(out[j], v, CT_FLOAT64, n) != CT_OK) {
      free(v);
      return false;
    }
    for (int64_t k = 0; k < n; k++) s += v[k] * gov[j][k];
    free(v);
  }
  *res = s;
  return true;
}

static int n_fd_skipped;
#define FD_MAX_ELEMS 12
#define FD_EPS 1e-6
#define FD_RTOL 1e-4
#define FD_ATOL 1e-6

/* Float64 central differences against the analytical float64 gradient of the runner.
 * eps 1e-6: truncation error eps^2*f'''/6 ~ 1e-13 and rounding error ~ 2e-16*|f|/eps
 * ~ 2e-10*|f| are both far below rtol 1e-4 / atol 1e-6, while a wrong formula is off by
 * O(1). At most FD_MAX_ELEMS elements per input (spread evenly) keep it fast. */
static void fd_check(const pcase *c, parity_runner fn) {
  ct_tensor *in[PARITY_MAX_IN] = {0}, *out[PARITY_MAX_OUT] = {0};
  double *xv[PARITY_MAX_IN] = {0}, *gov[PARITY_MAX_OUT] = {0};
  ct_tensor *diff_out[PARITY_MAX_OUT], *diff_go[PARITY_MAX_OUT] = {0}, *diff_in[PARITY_MAX_IN], *g[PARITY_MAX_IN] = {0};
  int nd_out = 0, nd_in = 0, map[PARITY_MAX_IN];
  ct_dtype in_dt[PARITY_MAX_IN];
  ct_scope *s = ct_scope_begin();
  for (int i = 0; i < c->n_in; i++) {
    in_dt[i] = ct_dtype_is_floating(c->in[i].dtype) ? CT_FLOAT64 : c->in[i].dtype;
    xv[i] = ft_doubles(&c->in[i]);
    in[i] = xv[i] ? build_leaf(xv[i], CT_FLOAT64, &c->in[i], in_dt[i], c->in[i].rg) : NULL;
    if (!in[i]) {
      failf("fd: cannot build float64 input %d: %s", i, ct_last_error());
      goto done;
    }
    if (c->in[i].rg) {
      map[nd_in] = i;
      diff_in[nd_in++] = in[i];
    }
  }
  int n = run_runner(c, fn, in, out);
  if (n != c->n_out) {
    failf("fd: the runner failed on float64 inputs: %s", n < 0 ? ct_last_error() : "wrong output count");
    goto done;
  }
  for (int j = 0; j < c->n_out; j++) {
    if (!c->go[j].present) continue;
    if (ct_tensor_dtype(out[j]) != CT_FLOAT64) {
      n_fd_skipped++;
      if (verbose) printf("note: %s: fd check skipped (output %d is %s on float64 inputs)\n", c->name, j,
                          ct_dtype_name(ct_tensor_dtype(out[j])));
      goto done;
    }
    gov[j] = ft_doubles(&c->go[j]);
    diff_go[nd_out] = gov[j] ? ct_from_buffer(gov[j], CT_FLOAT64, c->go[j].ndim, c->go[j].shape, ct_opts_dtype(CT_FLOAT64)) : NULL;
    if (!diff_go[nd_out]) {
      failf("fd: cannot build grad_output: %s", ct_last_error());
      goto done;
    }
    diff_out[nd_out++] = out[j];
  }
  if (!nd_out || !nd_in) goto done;
  if (ct_autograd_grad(nd_out, diff_out, diff_go, nd_in, diff_in, g, false, false, true) != CT_OK) {
    failf("fd: float64 backward failed: %s", ct_last_error());
    goto done;
  }
  bool prev = ct_set_grad_enabled(false);
  for (int q = 0; q < nd_in; q++) {
    int i = map[q];
    int64_t numel = c->in[i].numel;
    double *ga = calloc((size_t)(numel ? numel : 1), sizeof *ga);
    if (!ga || (g[q] && ct_copy_to_buffer(g[q], ga, CT_FLOAT64, numel) != CT_OK)) {
      free(ga);
      failf("fd: cannot read the float64 gradient of input %d", i);
      break;
    }
    int64_t m = numel < FD_MAX_ELEMS ? numel : FD_MAX_ELEMS;
    for (int64_t e = 0; e < m; e++) {
      int64_t k = numel <= FD_MAX_ELEMS ? e : e * (numel - 1) / (FD_MAX_ELEMS - 1);
      double f[2], x0 = xv[i][k];
      bool ok = true;
      for (int sgn = 0; sgn < 2 && ok; sgn++) {
        ct_scope *s2 = ct_scope_begin();
        ct_tensor *pin[PARITY_MAX_IN], *pout[PARITY_MAX_OUT];
        for (int r = 0; r < c->n_in; r++) pin[r] = in[r];
        xv[i][k] = x0 + (sgn ? -FD_EPS : FD_EPS);
        pin[i] = build_leaf(xv[i], CT_FLOAT64, &c->in[i], in_dt[i], false);
        xv[i][k] = x0;
        int got = pin[i] ? run_runner(c, fn, pin, pout) : -1;
        ok = got == c->n_out && weighted_sum(c, pout, gov, &f[sgn]);
        if (got > 0) release_all(pout, got);
        ct_release(pin[i]);
        ct_scope_end(s2);
      }
      if (!ok) {
        failf("fd: re-running on perturbed input %d failed: %s", i, ct_last_error());
        break;
      }
      double num = (f[0] - f[1]) / (2 * FD_EPS), ana = ga[k];
      if (!(fabs(num - ana) <= FD_ATOL + FD_RTOL * fabs(ana))) {
        char sa[160];
        index_str(k, c->in[i].ndim, c->in[i].shape, sa, sizeof sa);
        failf("fd: input %d element %s: analytical float64 gradient %.10g, central difference %.10g", i, sa, ana, num);
        break;
      }
    }
    free(ga);
  }
  ct_set_grad_enabled(prev);
done:
  release_all(g, PARITY_MAX_IN);
  release_all(diff_go, PARITY_MAX_OUT);
  release_all(out, PARITY_MAX_OUT);
  release_all(in, PARITY_MAX_IN);
  ct_scope_end(s);
  for (int i = 0; i < PARITY_MAX_IN; i++) free(xv[i]);
  for (int j = 0; j < PARITY_MAX_OUT; j++) free(gov[j]);
}

static void run_case(const pcase *c, parity_runner fn) {
  ct_tensor *in[PARITY_MAX_IN] = {0}, *out[PARITY_MAX_OUT] = {0};
  ct_tensor *douts[PARITY_MAX_OUT], *dgos[PARITY_MAX_OUT] = {0}, *dins[PARITY_MAX_IN], *g[PARITY_MAX_IN] = {0};
  ct_tensor *gg[PARITY_MAX_IN] = {0}, *sacc = NULL;
  int map[PARITY_MAX_IN], nd_out = 0, nd_in = 0;
  ct_scope *s = ct_scope_begin();
  for (int i = 0; i < c->n_in; i++) {
    in[i] = build_leaf(c->in[i].data, c->in[i].dtype, &c->in[i], c->in[i].dtype, c->in[i].rg);
    if (!in[i]) {
      failf("cannot build input %d: %s", i, ct_last_error());
      goto done;
    }
  }
  int n = run_runner(c, fn, in, out);
  if (c->has_error) {
    if (n >= 0) failf("expected an error containing '%s', but the runner succeeded", c->error);
    else if (!strstr(ct_last_error(), c->error))
      failf("error '%s' lacks the expected '%s'", ct_last_error(), c->error);
    goto done;
  }
  if (n < 0) {
    failf("runner failed: %s", ct_last_error());
    goto done;
  }
  if (n != c->n_out) {
    failf("runner returned %d output(s), PyTorch %d", n, c->n_out);
    goto done;
  }
  char what[64];
  double rtol, atol;
  for (int j = 0; j < n; j++) {
    snprintf(what, sizeof what, "output %d", j);
    tol_for(c, c->out[j].dtype, false, &rtol, &atol);
    compare(what, out[j], &c->out[j], rtol, atol, true);
    if (ct_requires_grad(out[j]) != c->out[j].rg)
      failf("output %d: requires_grad %d, PyTorch %d", j, ct_requires_grad(out[j]), c->out[j].rg);
    if (c->check_strides && same_shape(out[j], &c->out[j])) check_geometry(c, j, out[j], in);
  }
  if (case_failed) goto done;

  /* gradients with the fixture's grad_outputs */
  for (int j = 0; j < n; j++)
    if (c->go[j].present) {
      douts[nd_out] = out[j];
      dgos[nd_out] = ft_tensor(&c->go[j], c->go[j].dtype);
      if (!dgos[nd_out]) {
        failf("cannot build grad_output %d: %s", j, ct_last_error());
        goto done;
      }
      nd_out++;
    }
  for (int i = 0; i < c->n_in; i++)
    if (c->in[i].rg) {
      map[nd_in] = i;
      dins[nd_in++] = in[i];
    }
  if (!nd_out || !nd_in) goto done;
  if (ct_autograd_grad(nd_out, douts, dgos, nd_in, dins, g, true, c->gradgrad, true) != CT_OK) {
    failf("backward failed: %s", ct_last_error());
    goto done;
  }
  for (int q = 0; q < nd_in; q++) {
    int i = map[q];
    snprintf(what, sizeof what, "grad of input %d%s", i, g[q] ? "" : " (None, compared as zeros)");
    tol_for(c, c->grads[i].dtype, true, &rtol, &atol);
    if (g[q] && ct_tensor_dtype(g[q]) != c->in[i].dtype)
      failf("grad of input %d: dtype %s, input's %s", i, ct_dtype_name(ct_tensor_dtype(g[q])), ct_dtype_name(c->in[i].dtype));
    compare(what, g[q], &c->grads[i], rtol, atol, true);
  }
  if (case_failed || !c->has_gg) goto done;

  /* double backward: d/dx sum_i sum(grad_i * v_i) */
  for (int q = 0; q < nd_in; q++) {
    int i = map[q];
    if (!g[q] || !ct_requires_grad(g[q]) || !c->v[i].present) continue;
    ct_tensor *v = ft_tensor(&c->v[i], c->v[i].dtype);
    ct_tensor *p = v ? ct_mul(g[q], v) : NULL;
    ct_tensor *t = p ? ct_sum(p) : NULL;
    ct_tensor *nx = t ? (sacc ? ct_add(sacc, t) : ct_retain(t)) : NULL;
    ct_release(v);
    ct_release(p);
    ct_release(t);
    ct_release(sacc);
    sacc = nx;
    if (!sacc) {
      failf("double backward: building sum(grad * v) failed: %s", ct_last_error());
      goto done;
    }
  }
  if (sacc && ct_autograd_grad(1, &sacc, NULL, nd_in, dins, gg, false, false, true) != CT_OK) {
    failf("double backward failed: %s", ct_last_error());
    goto done;
  }
  for (int q = 0; q < nd_in; q++) {
    int i = map[q];
    snprintf(what, sizeof what, "double backward of input %d%s", i, gg[q] ? "" : " (None, compared as zeros)");
    tol_for(c, c->gg[i].dtype, true, &rtol, &atol);
    compare(what, gg[q], &c->gg[i], rtol, atol, false);
  }
done:
  ct_release(sacc);
  release_all(gg, PARITY_MAX_IN);
  release_all(g, PARITY_MAX_IN);
  release_all(dgos, PARITY_MAX_OUT);
  release_all(out, PARITY_MAX_OUT);
  release_all(in, PARITY_MAX_IN);
  ct_scope_end(s);
}

static void free_ft(ftensor *t) { free(t->data); }
static void free_case(pcase *c) {
  for (int k = 0; k < c->n_attrs; k++) {
    free(c->attrs[k].key);
    free(c->attrs[k].s);
    free(c->attrs[k].il);
    free(c->attrs[k].fl);
  }
  free(c->attrs);
  for (int i = 0; i < c->n_in; i++) {
    if (c->in) free_ft(&c->in[i]);
    if (c->grads) free_ft(&c->grads[i]);
    if (c->v) free_ft(&c->v[i]);
    if (c->gg) free_ft(&c->gg[i]);
  }
  for (int j = 0; j < c->n_out; j++) {
    if (c->out) free_ft(&c->out[j]);
    if (c->go) free_ft(&c->go[j]);
  }
  free(c->in);
  free(c->grads);
  free(c->v);
  free(c->gg);
  free(c->out);
  free(c->go);
  free(c->name);
  free(c->op);
  free(c->source);
  free(c->genfail);
  free(c->error);
}

static uint8_t *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *buf = NULL;
  size_t cap = 0, len = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 1 << 20;
      uint8_t *p = realloc(buf, cap);
      if (!p) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = p;
    }
    size_t r = fread(buf + len, 1, cap - len, f);
    len += r;
    if (r == 0) break;
  }
  fclose(f);
  *n = len;
  return buf;
}

int main(int argc, char **argv) {
  const char *fixture = NULL, *filter = NULL;
  char defpath[4096];
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "-f") && a + 1 < argc) fixture = argv[++a];
    else if (!strcmp(argv[a], "-v")) verbose = true;
    else if (!strcmp(argv[a], "--device") && a + 1 < argc) {
      const char *d = argv[++a];
      if (!strcmp(d, "webgpu")) { /* the WebGPU backend (src/backend/webgpu), device 0 */
        run_dev.type = CT_DEVICE_WEBGPU;
        run_dev.index = 0;
      } else if (strncmp(d, "cuda", 4)) {
        fprintf(stderr, "parity: --device takes cpu, cuda[:N] or webgpu, not %s\n", d);
        return 2;
      } else {
      run_dev.type = CT_DEVICE_CUDA;
      run_dev.index = d[4] == ':' ? atoi(d + 5) : 0;
      }
      if (!ct_device_available(run_dev)) {
        printf("parity --device %s: skipped, no such device (backends compiled in: %s)\n", d, ct_backends_compiled());
        return 0;
      }
    }
    else filter = argv[a];
  }
  if (!fixture) {
    const char *slash = strrchr(argv[0], '/');
    int dl = slash ? (int)(slash - argv[0]) : 1;
    snprintf(defpath, sizeof defpath, "%.*s/parity/fixtures.bin", dl, slash ? argv[0] : ".");
    fixture = defpath;
  }
  size_t len = 0;
  uint8_t *buf = read_file(fixture, &len);
  if (!buf) {
    fprintf(stderr, "parity: cannot read %s (run tests/parity/run.sh BUILD to generate fixtures)\n", fixture);
    return 2;
  }
  reader r = {buf, buf + len, false};
  char magic[4];
  rd(&r, magic, 4);
  uint32_t version = rd_u32(&r), n_cases = rd_u32(&r);
  if (r.bad || memcmp(magic, "CTPF", 4) || version != 1) {
    fprintf(stderr, "parity: %s is not a version-1 fixture file\n", fixture);
    free(buf);
    return 2;
  }
  int passed = 0, failed = 0, nokernel = 0, n_skipped = 0;
  /* ops without a runner: name and count */
  char *missing[1024];
  int missing_n[1024], n_missing = 0;
  for (uint32_t k = 0; k < n_cases; k++) {
    pcase c;
    if (!rd_case(&r, &c)) {
      fprintf(stderr, "parity: fixture file is corrupt at case %u\n", k);
      free_case(&c);
      failed++;
      break;
    }
    if (filter && !strstr(c.name, filter)) {
      free_case(&c);
      continue;
    }
    /* CT_PARITY_SKIP_OPS="a,b": ops left out of this run (for --device runs: ops whose
     * code still reads device memory on the host and would crash the whole run) */
    const char *sk = getenv("CT_PARITY_SKIP_OPS");
    size_t ol = strlen(c.op);
    bool skip = false;
    for (const char *q = sk ? strstr(sk, c.op) : NULL; q && !skip; q = strstr(q + 1, c.op))
      skip = (q == sk || q[-1] == ',') && (q[ol] == 0 || q[ol] == ',');
    if (skip) {
      n_skipped++;
      free_case(&c);
      continue;
    }
    cur = &c;
    case_failed = 0;
    case_nokernel = 0;
    int64_t live0 = ct_live_tensors();
    parity_runner fn = NULL;
    if (c.genfail[0]) {
      failf("generator failure: %s", c.genfail);
    } else if (!(fn = find_runner(c.op))) {
      int m = 0;
      while (m < n_missing && strcmp(missing[m], c.op)) m++;
      if (m == n_missing && n_missing < 1024) {
        missing[n_missing] = strdup(c.op);
        missing_n[n_missing++] = 0;
      }
      if (m < n_missing) missing_n[m]++;
      case_failed++;
    } else {
      run_case(&c, fn);
      bool any_rg = false;
      for (int i = 0; i < c.n_in; i++) any_rg |= c.in[i].rg;
      /* the float64 finite-difference check tests the derivative formulas, which are
       * the same on every device: --device runs leave it to the CPU run */
      if (!case_failed && c.fd && !c.has_error && any_rg && c.n_out > 0 && run_dev.type == CT_DEVICE_CPU) fd_check(&c, fn);
      int64_t leaked = ct_live_tensors() - live0;
      if (leaked != 0) failf("%lld tensor handle(s) leaked", (long long)leaked);
    }
    if (case_nokernel) nokernel++;
    else if (case_failed) failed++;
    else passed++;
    if (verbose && !case_failed) printf("ok   %s\n", c.name);
    free_case(&c);
  }
  free(buf);
  if (n_missing) {
    printf("missing runners (each case counted as failed):");
    for (int m = 0; m < n_missing; m++) {
      printf(" %s (%d)", missing[m], missing_n[m]);
      free(missing[m]);
    }
    printf("\n");
  }
  if (n_fd_skipped)
    printf("note: finite-difference check not run for %d case(s) whose differentiable outputs are not float64 on "
           "float64 inputs (-v lists them)\n", n_fd_skipped);
  if (run_dev.type != CT_DEVICE_CPU) {
    printf("no %s kernel (cases not run to the end, not counted as failed): %d;", ct_device_type_name(run_dev.type), nokernel);
    for (int k = 0; k < n_nk; k++) printf(" %s (%d)", nk_ops[k], nk_count[k]);
    printf("\n");
  }
  if (n_skipped) printf("skipped (CT_PARITY_SKIP_OPS=%s): %d case(s)\n", getenv("CT_PARITY_SKIP_OPS"), n_skipped);
  printf("parity: %d passed, %d failed\n", passed, failed);
  free(registry);
  return failed ? 1 : 0;
}
