/* The C side of the JavaScript API (web/js): tensors, creation, autograd, memory.
 *
 * JavaScript passes only what WebAssembly calls carry well: handles (the ct_tensor*,
 * ct_module*, ... pointers themselves), int32 and double. Lists (shapes, dims, options)
 * travel through a static scratch array of doubles (ctw_args, exact for integers up to
 * 2^53), tensor lists in and out through ctw_ptrs, strings through ctw_str. All calls come
 * from one JavaScript thread, so static scratch space is safe.
 *
 * Errors: the glue never aborts; a failing call returns NULL / a non-zero status and the
 * JS layer throws an Error with ct_last_error()'s message (ctw_error). */
#include "ctw.h"
#include "backend/cpu/gemm_fast.h"

#include <stdlib.h>
#include <string.h>

double ctw_A[CTW_NARGS];
ct_tensor *ctw_P[CTW_NPTRS];
char ctw_S[CTW_NSTR][CTW_STRLEN];

API double *ctw_args(void) { return ctw_A; }
API ct_tensor **ctw_ptrs(void) { return ctw_P; }
API char *ctw_str(int i) { return (i >= 0 && i < CTW_NSTR) ? ctw_S[i] : NULL; }
API int ctw_str_len(void) { return CTW_STRLEN; }

/* ---- errors ---- */
API int ctw_status(void) { return (int)ct_last_status(); }
API const char *ctw_error(void) { return ct_last_error(); }
API void ctw_clear_error(void) { ct_clear_error(); }

/* ---- library info ---- */
API const char *ctw_version(void) { return CT_VERSION; }
API const char *ctw_simd_level(void) { return ct_simd_level(); }
API int ctw_get_num_threads(void) { return ct_get_num_threads(); }
/* The loader calls this first. It also pins the packed GEMM's shared-B mode off (off by default; threads packing
 * one B panel together with spin barriers between them): WebAssembly has no pause/yield for those
 * spins, and at 2 threads on a loaded 2-core machine a descheduled helper stalled the other thread
 * (Node 20, ResNet-18 b1, 2 threads, load 18: 3.2x slower with it, median of 9 paired runs).
 * Both modes give bit-identical results. */
API int ctw_set_num_threads(int n) {
  ct_fast_gemm_set_shared_b(0);
  return ct_set_num_threads(n);
}
API double ctw_live_tensors(void) { return (double)ct_live_tensors(); }
/* allocated, cached, peak, n_allocs -> ctw_A[0..4) */
API void ctw_memory_stats(void) {
  ct_memory_stats s = ct_memory_get_stats(ct_cpu());
  ctw_A[0] = (double)s.allocated_bytes;
  ctw_A[1] = (double)s.cached_bytes;
  ctw_A[2] = (double)s.peak_allocated_bytes;
  ctw_A[3] = (double)s.n_allocs;
}
API void ctw_empty_cache(void) { ct_memory_empty_cache(ct_cpu()); }
API const char *ctw_dtype_name(int dt) { return ct_dtype_name((ct_dtype)dt); }
API int ctw_dtype_size(int dt) { return (int)ct_dtype_size((ct_dtype)dt); }
API int ctw_promote_types(int a, int b) { return (int)ct_promote_types((ct_dtype)a, (ct_dtype)b); }
API int ctw_get_default_dtype(void) { return (int)ct_get_default_dtype(); }
API int ctw_set_default_dtype(int dt) { return ct_set_default_dtype((ct_dtype)dt); }

/* ---- handles ---- */
API ct_tensor *ctw_retain(ct_tensor *t) { return ct_retain(t); }
API void ctw_release(ct_tensor *t) { ct_release(t); }
API int ctw_ndim(ct_tensor *t) { return ct_ndim(t); }
/* shape and strides -> ctw_A[0..ndim) and ctw_A[ndim..2 ndim); returns ndim */
API int ctw_geometry(ct_tensor *t) {
  int n = ct_ndim(t);
  const int64_t *s = ct_shape(t), *st = ct_strides(t);
  for (int i = 0; i < n; i++) {
    ctw_A[i] = (double)s[i];
    ctw_A[n + i] = (double)st[i];
  }
  ctw_A[2 * n] = (double)ct_storage_offset(t);
  return n;
}
API double ctw_numel(ct_tensor *t) { return (double)ct_numel(t); }
API int ctw_dtype(ct_tensor *t) { return (int)ct_tensor_dtype(t); }
API int ctw_is_contiguous(ct_tensor *t) { return ct_is_contiguous(t); }
API void *ctw_data_ptr(ct_tensor *t) { return ct_data_ptr(t); }
API double ctw_version_counter(ct_tensor *t) { return (double)ct_version(t); }
API int ctw_is_view(ct_tensor *t) { return ct_is_view(t); }
API int ctw_shares_storage(ct_tensor *a, ct_tensor *b) { return ct_shares_storage(a, b); }
API int ctw_copy_to_buffer(ct_tensor *t, void *dst, int dt, double n) {
  return ct_copy_to_buffer(t, dst, (ct_dtype)dt, (int64_t)n);
}
/* item -> ctw_A[0] (as double) and ctw_A[1] (kind); int64 values also split into hi/lo words
 * in ctw_A[2], ctw_A[3] so JS can rebuild a BigInt exactly. */
API int ctw_item(ct_tensor *t) {
  ct_clear_error();
  ct_scalar s = ct_item(t);
  if (ct_last_status() != CT_OK) return ct_last_status();
  ctw_A[0] = s.kind == CT_SCALAR_FLOAT ? s.f : (double)s.i;
  ctw_A[1] = (double)s.kind;
  uint64_t u = (uint64_t)s.i;
  ctw_A[2] = (double)(uint32_t)(u >> 32);
  ctw_A[3] = (double)(uint32_t)u;
  return CT_OK;
}

/* ---- creation ---- */
static ct_options opts(int dtype, int requires_grad) {
  ct_options o = ct_opts();
  if (dtype >= 0) o.dtype = (ct_dtype)dtype;
  o.requires_grad = requires_grad != 0;
  return o;
}
API ct_tensor *ctw_from_buffer(const void *buf, int src_dtype, int ndim, int dtype, int requires_grad) {
  int64_t shape[CT_MAX_DIMS];
  if (ndim < 0 || ndim > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dimensions");
  ctw_ints(0, ndim, shape);
  return ct_from_buffer(buf, (ct_dtype)src_dtype, ndim, shape, opts(dtype < 0 ? src_dtype : dtype, requires_grad));
}
#define CTW_FACTORY(name)                                                                  \
  API ct_tensor *ctw_##name(int ndim, int dtype, int requires_grad) {                      \
    int64_t shape[CT_MAX_DIMS];                                                            \
    if (ndim < 0 || ndim > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dimensions"); \
    ctw_ints(0, ndim, shape);                                                              \
    return ct_##name(ndim, shape, opts(dtype, requires_grad));                             \
  }
CTW_FACTORY(empty)
CTW_FACTORY(zeros)
CTW_FACTORY(ones)
API ct_tensor *ctw_full(int ndim, double v, int kind, int dtype, int requires_grad) {
  int64_t shape[CT_MAX_DIMS];
  if (ndim < 0 || ndim > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dimensions");
  ctw_ints(0, ndim, shape);
  return ct_full(ndim, shape, ctw_scalar(v, kind), opts(dtype, requires_grad));
}
API ct_tensor *ctw_scalar_tensor(double v, int kind, int dtype, int requires_grad) {
  ct_options o = ct_opts();
  if (dtype >= 0) o.dtype = (ct_dtype)dtype;
  else if (kind == CT_SCALAR_INT) o.dtype = CT_INT64;
  else if (kind == CT_SCALAR_BOOL) o.dtype = CT_BOOL;
  o.requires_grad = requires_grad != 0;
  return ct_scalar_tensor(ctw_scalar(v, kind), o);
}
API ct_tensor *ctw_arange(double start, int sk, double end, int ek, double step, int stk, int dtype, int requires_grad) {
  if (dtype < 0 && !requires_grad) return ct_arange(ctw_scalar(start, sk), ctw_scalar(end, ek), ctw_scalar(step, stk), NULL);
  ct_options o = ct_opts();
  if (dtype >= 0) o.dtype = (ct_dtype)dtype;
  else o.dtype = (sk == CT_SCALAR_FLOAT || ek == CT_SCALAR_FLOAT || stk == CT_SCALAR_FLOAT) ? ct_get_default_dtype() : CT_INT64;
  o.requires_grad = requires_grad != 0;
  return ct_arange(ctw_scalar(start, sk), ctw_scalar(end, ek), ctw_scalar(step, stk), &o);
}
API ct_tensor *ctw_linspace(double a, double b, double steps, int dtype, int rg) {
  return ct_linspace(a, b, (int64_t)steps, opts(dtype, rg));
}
API ct_tensor *ctw_logspace(double a, double b, double steps, double base, int dtype, int rg) {
  return ct_logspace(a, b, (int64_t)steps, base, opts(dtype, rg));
}
API ct_tensor *ctw_eye(double n, double m, int dtype, int rg) { return ct_eye((int64_t)n, (int64_t)m, opts(dtype, rg)); }
static const ct_options *like_opts(ct_options *o, const ct_tensor *t, int dtype, int rg) {
  if (dtype < 0 && !rg) return NULL;
  *o = ct_opts();
  o->dtype = dtype >= 0 ? (ct_dtype)dtype : ct_tensor_dtype(t);
  o->requires_grad = rg != 0;
  return o;
}
API ct_tensor *ctw_empty_like(ct_tensor *t, int dtype, int rg) { ct_options o; return ct_empty_like(t, like_opts(&o, t, dtype, rg)); }
API ct_tensor *ctw_zeros_like(ct_tensor *t, int dtype, int rg) { ct_options o; return ct_zeros_like(t, like_opts(&o, t, dtype, rg)); }
API ct_tensor *ctw_ones_like(ct_tensor *t, int dtype, int rg) { ct_options o; return ct_ones_like(t, like_opts(&o, t, dtype, rg)); }
API ct_tensor *ctw_full_like(ct_tensor *t, double v, int kind, int dtype, int rg) {
  ct_options o;
  return ct_full_like(t, ctw_scalar(v, kind), like_opts(&o, t, dtype, rg));
}
API ct_tensor *ctw_clone(ct_tensor *t) { return ct_clone(t); }
API ct_tensor *ctw_contiguous(ct_tensor *t) { return ct_contiguous(t); }
API ct_tensor *ctw_to_dtype(ct_tensor *t, int dt) { return ct_to_dtype(t, (ct_dtype)dt); }
API int ctw_copy_(ct_tensor *dst, ct_tensor *src) { return ct_copy_(dst, src); }
API int ctw_fill_(ct_tensor *t, double v, int kind) { return ct_fill_(t, ctw_scalar(v, kind)); }
API int ctw_zero_(ct_tensor *t) { return ct_zero_(t); }

/* ---- autograd ---- */
API int ctw_requires_grad(ct_tensor *t) { return ct_requires_grad(t); }
API int ctw_set_requires_grad(ct_tensor *t, int flag) { return ct_requires_grad_(t, flag != 0); }
API int ctw_is_leaf(ct_tensor *t) { return ct_is_leaf(t); }
/* .grad as a new reference (NULL without error when there is none) */
API ct_tensor *ctw_grad(ct_tensor *t) { return ct_retain(ct_grad(t)); }
API int ctw_set_grad(ct_tensor *t, ct_tensor *g) { return ct_set_grad(t, g); }
API int ctw_retain_grad(ct_tensor *t) { return ct_retain_grad(t); }
API const char *ctw_grad_fn_name(ct_tensor *t) { return ct_grad_fn_name(t); }
API ct_tensor *ctw_detach(ct_tensor *t) { return ct_detach(t); }
API int ctw_detach_(ct_tensor *t) { return ct_detach_(t); }
API int ctw_backward(ct_tensor *t, ct_tensor *grad, int retain_graph, int create_graph) {
  return ct_backward(t, grad, retain_graph != 0, create_graph != 0);
}
/* torch.autograd.grad: outputs ctw_P[0..no), grad_outputs ctw_P[no..2no) (entries may be NULL),
 * inputs ctw_P[2no..2no+ni); the gradients come back in ctw_P[0..ni) (NULL if unused). */
API int ctw_autograd_grad(int no, int ni, int retain_graph, int create_graph, int allow_unused) {
  if (no < 1 || ni < 1 || 2 * no + ni > CTW_NPTRS) return ctw_fail(CT_ERR_VALUE, "autograd.grad: bad number of tensors");
  ct_tensor *outs[CTW_NPTRS], *gouts[CTW_NPTRS], *ins[CTW_NPTRS], *res[CTW_NPTRS];
  memcpy(outs, ctw_P, sizeof(ct_tensor *) * (size_t)no);
  memcpy(gouts, ctw_P + no, sizeof(ct_tensor *) * (size_t)no);
  memcpy(ins, ctw_P + 2 * no, sizeof(ct_tensor *) * (size_t)ni);
  ct_status st = ct_autograd_grad(no, outs, gouts, ni, ins, res, retain_graph != 0, create_graph != 0, allow_unused != 0);
  if (st != CT_OK) return st;
  memcpy(ctw_P, res, sizeof(ct_tensor *) * (size_t)ni);
  return CT_OK;
}
API int ctw_is_grad_enabled(void) { return ct_is_grad_enabled(); }
API int ctw_set_grad_enabled(int on) { return ct_set_grad_enabled(on != 0); }
API int ctw_set_inference_mode(int on) { return ct_set_inference_mode(on != 0); }

/* ---- random ---- */
static ct_generator *gen(ct_generator *g) { return g; } /* NULL: the default generator */
API void ctw_manual_seed(double hi, double lo) { ct_manual_seed(((uint64_t)(uint32_t)hi << 32) | (uint32_t)lo); }
API void ctw_initial_seed(void) {
  uint64_t s = ct_initial_seed();
  ctw_A[0] = (double)(uint32_t)(s >> 32);
  ctw_A[1] = (double)(uint32_t)s;
}
API ct_generator *ctw_generator_new(double hi, double lo) { return ct_generator_new(((uint64_t)(uint32_t)hi << 32) | (uint32_t)lo); }
API void ctw_generator_free(ct_generator *g) { ct_generator_free(g); }
API void ctw_generator_manual_seed(ct_generator *g, double hi, double lo) {
  ct_generator_manual_seed(g, ((uint64_t)(uint32_t)hi << 32) | (uint32_t)lo);
}
API int ctw_generator_state_size(void) { return (int)ct_generator_state_size(); }
API void ctw_generator_get_state(ct_generator *g, uint8_t *out) { ct_generator_get_state(g ? g : ct_default_generator(), out); }
API int ctw_generator_set_state(ct_generator *g, const uint8_t *in, int n) {
  return ct_generator_set_state(g ? g : ct_default_generator(), in, (size_t)n);
}
#define CTW_RANDF(name)                                                                    \
  API ct_tensor *ctw_##name(int ndim, int dtype, int rg, ct_generator *g) {                \
    int64_t shape[CT_MAX_DIMS];                                                            \
    if (ndim < 0 || ndim > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dimensions"); \
    ctw_ints(0, ndim, shape);                                                              \
    return ct_##name(ndim, shape, opts(dtype, rg), gen(g));                                \
  }
CTW_RANDF(rand)
CTW_RANDF(randn)
API ct_tensor *ctw_randint(double low, double high, int ndim, int dtype, ct_generator *g) {
  int64_t shape[CT_MAX_DIMS];
  if (ndim < 0 || ndim > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dimensions");
  ctw_ints(0, ndim, shape);
  ct_options o = opts(dtype < 0 ? CT_INT64 : dtype, 0);
  return ct_randint((int64_t)low, (int64_t)high, ndim, shape, &o, gen(g));
}
API ct_tensor *ctw_randperm(double n, int dtype, ct_generator *g) {
  ct_options o = opts(dtype < 0 ? CT_INT64 : dtype, 0);
  return ct_randperm((int64_t)n, &o, gen(g));
}
API ct_tensor *ctw_rand_like(ct_tensor *t, int dtype, ct_generator *g) { ct_options o; return ct_rand_like(t, like_opts(&o, t, dtype, 0), gen(g)); }
API ct_tensor *ctw_randn_like(ct_tensor *t, int dtype, ct_generator *g) { ct_options o; return ct_randn_like(t, like_opts(&o, t, dtype, 0), gen(g)); }
API int ctw_uniform_(ct_tensor *t, double a, double b, ct_generator *g) { return ct_uniform_(t, a, b, gen(g)); }
API int ctw_normal_(ct_tensor *t, double m, double s, ct_generator *g) { return ct_normal_(t, m, s, gen(g)); }
API int ctw_exponential_(ct_tensor *t, double l, ct_generator *g) { return ct_exponential_(t, l, gen(g)); }
API int ctw_random_(ct_tensor *t, double from, double to, ct_generator *g) { return ct_random_(t, (int64_t)from, (int64_t)to, gen(g)); }
API int ctw_bernoulli_(ct_tensor *t, double p, ct_generator *g) { return ct_bernoulli_(t, p, gen(g)); }
API ct_tensor *ctw_bernoulli(ct_tensor *p, ct_generator *g) { return ct_bernoulli(p, gen(g)); }
API ct_tensor *ctw_multinomial(ct_tensor *p, double n, int replacement, ct_generator *g) {
  return ct_multinomial(p, (int64_t)n, replacement != 0, gen(g));
}

/* ---- helpers shared by the glue files ---- */
void ctw_ints(int off, int n, int64_t *out) {
  for (int i = 0; i < n; i++) out[i] = (int64_t)ctw_A[off + i];
}
ct_scalar ctw_scalar(double v, int kind) {
  if (kind == CT_SCALAR_BOOL) return ct_sb(v != 0);
  if (kind == CT_SCALAR_INT) return ct_si((int64_t)v);
  return ct_sf(v);
}
int ctw_fail(int kind, const char *msg) {
  ct_set_error_public((ct_status)kind, msg);
  return kind;
}
ct_tensor *ctw_fail_null(int kind, const char *msg) {
  ct_set_error_public((ct_status)kind, msg);
  return NULL;
}
/* Raw buffers for JS (growing memory moves nothing, so pointers stay valid). */
API void *ctw_malloc(double n) {
  if (n < 0 || n > (double)SIZE_MAX) return NULL;
  return malloc((size_t)n ? (size_t)n : 1);
}
API void ctw_free(void *p) { free(p); }
