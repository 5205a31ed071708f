/* Random ops: the public generator API and the entry points of the random ops.
 * Arguments are checked here with PyTorch 1.13's messages, in PyTorch's order; the
 * kernels (src/backend/cpu/kernels_random.c) draw from the PyTorch-exact streams of
 * src/core/generator.c. Random ops have no gradient: in-place fills on a tensor that
 * requires grad give it a node whose gradient is zero (NormalBackward0, ...). */
#include "pointwise.h"
#include "../core/generator.h"
#include <math.h>
#include <float.h>
#include <stdlib.h>

/* ---- generators ---- */
void ct_manual_seed(uint64_t seed) { ct_generator_manual_seed(ct_default_generator(), seed); }
uint64_t ct_initial_seed(void) { return ct_generator_initial_seed(ct_default_generator()); }

ct_status ct_generator_set_state(ct_generator *g, const uint8_t *in, size_t n) {
  if (!g) return CT_ERR(CT_ERR_VALUE, "set_state: generator is NULL");
  if (!in) return CT_ERR(CT_ERR_VALUE, "set_state: state is NULL");
  if (n != CT_GENERATOR_STATE_SIZE)
    return CT_ERR(CT_ERR_RUNTIME, "Expected either a THGeneratorState of size 5048 or a CPUGeneratorImplState of size "
                  "5056 but found the input RNG state size to be %zu", n);
  if (ct_gen_set_state(g, in, n) != 0) return CT_ERR(CT_ERR_RUNTIME, "Invalid mt19937 state");
  return CT_OK;
}

/* ---- helpers ---- */
ct_status ct_bw_random_zero(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  (void)n, (void)g, (void)gin; /* random draws do not depend on their input: zero gradient */
  return CT_OK;
}

/* After an in-place fill of t (already written): give t PyTorch's history. */
static ct_status inplace_history(ct_tensor *t, int op, const char *name) {
  if (!ct_grad_mode_recording()) return CT_OK;
  if (t->base && ct_tensor_requires_grad(t->base)) {
    /* a view: the base's history must drop the gradient of the overwritten region (CopySlices) */
    bool prev = ct_set_grad_enabled(false);
    ct_tensor *r = ct_clone(t);
    ct_set_grad_enabled(prev);
    if (!r) return ct_last_status();
    ct_status st = ct_write_result_inplace(t, r);
    ct_release(r);
    return st;
  }
  if (!ct_tensor_requires_grad(t)) return CT_OK;
  ct_clear_error();
  ct_node *nd = ct_record_node(op, 1, &t, 1, &t, NULL, CT_SAVE_NONE, ct_bw_random_zero, name);
  if (!nd && ct_last_status() != CT_OK) return ct_last_status();
  return CT_OK;
}

static ct_status run_fill(ct_tensor *t, int kind, double f0, double f1, int64_t i0, int64_t i1, ct_generator *g) {
  ct_call c = ct_call_make(CT_OP_random_fill);
  c.n_out = 1;
  c.out[0] = t;
  c.a.k[0] = kind;
  c.a.f[0] = f0;
  c.a.f[1] = f1;
  c.a.i[0] = i0;
  c.a.i[1] = i1;
  c.a.ni = 2;
  c.a.ptr = g;
  CT_TRY(ct_run_kernel(&c));
  ct_bump_version(t);
  return CT_OK;
}

static const char *cpp_type_name(ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32: return "float";
    case CT_FLOAT64: return "double";
    case CT_FLOAT16: return "c10::Half";
    case CT_BFLOAT16: return "c10::BFloat16";
    case CT_INT8: return "signed char";
    case CT_UINT8: return "unsigned char";
    case CT_INT16: return "short";
    case CT_INT32: return "int";
    case CT_INT64: return "long";
    case CT_BOOL: return "bool";
    default: return "?";
  }
}

static bool is_float(ct_dtype dt) { return ct_dtype_is_floating(dt); }

/* ---- checks, in the order PyTorch makes them ---- */
static ct_status check_uniform(ct_dtype dt, double from, double to) {
  if (!is_float(dt))
    return CT_ERR(CT_ERR_RUNTIME, "\"check_uniform_bounds\" not implemented for '%s'", ct_dtype_torch_name(dt));
  if (from > to)
    return CT_ERR(CT_ERR_RUNTIME, "uniform_ expects to return a [from, to) range, but found from=%g > to=%g", from, to);
  double mx = dt == CT_FLOAT32 ? FLT_MAX : dt == CT_FLOAT64 ? DBL_MAX : dt == CT_FLOAT16 ? 65504.0 : 3.38953138925153547590470800371487866880e+38;
  if (!(to - from <= mx))
    return CT_ERR(CT_ERR_RUNTIME, "uniform_ expects to-from <= std::numeric_limits<%s>::max(), but found to=%g and "
                  "from=%g which result in to-from to exceed the limit", ct_dtype_torch_name(dt), to, from);
  return CT_OK;
}
static ct_status check_normal(ct_dtype dt, double std) {
  if (!(std >= 0.0)) return CT_ERR(CT_ERR_RUNTIME, "normal expects std >= 0.0, but found std %g", std);
  if (!is_float(dt))
    return CT_ERR(CT_ERR_RUNTIME, "\"normal_kernel_cpu\" not implemented for '%s'", ct_dtype_torch_name(dt));
  return CT_OK;
}
static ct_status check_randint(ct_dtype dt, int64_t from, int64_t to) {
  if (from >= to)
    return CT_ERR(CT_ERR_RUNTIME, "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                  (long long)from, (long long)to);
  double lo, hi;
  switch (dt) {
    case CT_INT8: lo = -128, hi = 127; break;
    case CT_UINT8: lo = 0, hi = 255; break;
    case CT_INT16: lo = -32768, hi = 32767; break;
    case CT_INT32: lo = -2147483648.0, hi = 2147483647.0; break;
    case CT_BOOL: lo = 0, hi = 1; break;
    case CT_FLOAT16: lo = -65504, hi = 65504; break;
    default: return CT_OK; /* int64, float, double, bfloat16 hold every int64 */
  }
  if ((double)from < lo || (double)from > hi)
    return CT_ERR(CT_ERR_RUNTIME, "from is out of bounds for %s", cpp_type_name(dt));
  if ((double)(to - 1) < lo || (double)(to - 1) > hi)
    return CT_ERR(CT_ERR_RUNTIME, "to - 1 is out of bounds for %s", cpp_type_name(dt));
  return CT_OK;
}

/* ---- in-place fills ---- */
static ct_status fill_checked(ct_tensor *t, const char *what) {
  CT_TRY(ct_check_tensor(t, what));
  return ct_check_inplace(t);
}

ct_status ct_uniform_(ct_tensor *t, double from, double to, ct_generator *g) {
  CT_TRY(fill_checked(t, "uniform_"));
  CT_TRY(check_uniform(t->dtype, from, to));
  CT_TRY(run_fill(t, CT_RF_UNIFORM, from, to, 0, 0, g));
  return inplace_history(t, CT_OP_random_fill, "UniformBackward0");
}

ct_status ct_normal_(ct_tensor *t, double mean, double std, ct_generator *g) {
  CT_TRY(fill_checked(t, "normal_"));
  CT_TRY(check_normal(t->dtype, std));
  CT_TRY(run_fill(t, CT_RF_NORMAL, mean, std, 0, 0, g));
  return inplace_history(t, CT_OP_random_fill, "NormalBackward0");
}

ct_status ct_exponential_(ct_tensor *t, double lambd, ct_generator *g) {
  CT_TRY(fill_checked(t, "exponential_"));
  if (!(lambd >= 0.0))
    return CT_ERR(CT_ERR_RUNTIME, "exponential_ expects lambda >= 0.0, but found lambda=%g", lambd);
  if (!is_float(t->dtype))
    return CT_ERR(CT_ERR_RUNTIME, "\"exponential_cpu\" not implemented for '%s'", ct_dtype_torch_name(t->dtype));
  CT_TRY(run_fill(t, CT_RF_EXPONENTIAL, lambd, 0, 0, 0, g));
  return inplace_history(t, CT_OP_random_fill, "ExponentialBackward0");
}

ct_status ct_random_(ct_tensor *t, int64_t from, int64_t to, ct_generator *g) {
  CT_TRY(fill_checked(t, "random_"));
  CT_TRY(check_randint(t->dtype, from, to));
  CT_TRY(run_fill(t, CT_RF_RANDINT, 0, 0, from, to, g));
  return inplace_history(t, CT_OP_random_fill, "RandomBackward1");
}

ct_status ct_bernoulli_(ct_tensor *t, double p, ct_generator *g) {
  CT_TRY(fill_checked(t, "bernoulli_"));
  if (!(p >= 0 && p <= 1)) return CT_ERR(CT_ERR_RUNTIME, "bernoulli_ expects p to be in [0, 1], but got p=%g", p);
  if (t->dtype == CT_FLOAT16)
    return CT_ERR(CT_ERR_RUNTIME, "\"bernoulli_scalar_cpu_\" not implemented for '%s'", ct_dtype_torch_name(t->dtype));
  CT_TRY(run_fill(t, CT_RF_BERNOULLI, p, 0, 0, 0, g));
  return inplace_history(t, CT_OP_random_fill, "BernoulliBackward2");
}

/* Writes bernoulli(p) into t (already checked for in-place use). */
static ct_status bernoulli_into(ct_tensor *t, const ct_tensor *p, ct_generator *g) {
  if (t->dtype == CT_FLOAT16)
    return CT_ERR(CT_ERR_RUNTIME, "\"bernoulli_tensor_cpu_self_\" not implemented for '%s'", ct_dtype_torch_name(t->dtype));
  if (!(p->dtype == CT_FLOAT32 || p->dtype == CT_FLOAT64 || p->dtype == CT_BFLOAT16))
    return CT_ERR(CT_ERR_RUNTIME, "\"bernoulli_tensor_cpu_p_\" not implemented for '%s'", ct_dtype_torch_name(p->dtype));
  ct_tensor *pe = ct_expand(p, t->ndim, t->shape);
  if (!pe) return ct_last_status();
  /* every probability must lie in [0, 1] before anything is drawn */
  int64_t n = ct_numel(pe);
  ct_status st = CT_OK;
  double *v = ct_xmalloc((size_t)(n ? n : 1) * sizeof(double));
  if (!v) st = ct_last_status();
  else {
    st = ct_copy_to_buffer(pe, v, CT_FLOAT64, n);
    for (int64_t i = 0; st == CT_OK && i < n; i++)
      if (!(v[i] >= 0 && v[i] <= 1))
        st = CT_ERR(CT_ERR_RUNTIME, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                    "message be improved?  If so, please report an enhancement request to PyTorch.)");
    free(v);
  }
  if (st == CT_OK) {
    ct_call c = ct_call_make(CT_OP_bernoulli_tensor);
    c.n_in = 1;
    c.n_out = 1;
    c.in[0] = pe;
    c.out[0] = t;
    c.a.ptr = g;
    st = ct_run_kernel(&c);
    if (st == CT_OK) ct_bump_version(t);
  }
  ct_release(pe);
  return st;
}

ct_status ct_bernoulli_tensor_(ct_tensor *t, const ct_tensor *p, ct_generator *g) {
  CT_TRY(fill_checked(t, "bernoulli_"));
  CT_TRY(ct_check_tensor(p, "p"));
  CT_TRY(bernoulli_into(t, p, g));
  return inplace_history(t, CT_OP_bernoulli_tensor, "BernoulliBackward1");
}

ct_tensor *ct_bernoulli(const ct_tensor *p, ct_generator *g) {
  if (ct_check_tensor(p, "bernoulli")) return NULL;
  ct_tensor *r = ct_tensor_new(p->ndim, p->shape, p->dtype, p->storage->device);
  if (!r) return NULL;
  if (bernoulli_into(r, p, g) != CT_OK) {
    ct_release(r);
    return NULL;
  }
  /* BernoulliBackward0: zero gradient for p */
  ct_tensor *in = (ct_tensor *)p;
  ct_clear_error();
  if (!ct_record_node(CT_OP_bernoulli_tensor, 1, &in, 1, &r, NULL, CT_SAVE_NONE, ct_bw_random_zero, "BernoulliBackward0") &&
      ct_last_status() != CT_OK) {
    ct_release(r);
    return NULL;
  }
  return r;
}

ct_tensor *ct_bernoulli_p(const ct_tensor *t, double p, ct_generator *g) {
  if (ct_check_tensor(t, "bernoulli")) return NULL;
  ct_tensor *r = ct_tensor_new(t->ndim, t->shape, t->dtype, t->storage->device);
  if (!r) return NULL;
  if (ct_bernoulli_(r, p, g) != CT_OK) {
    ct_release(r);
    return NULL;
  }
  return r;
}

/* ---- factories ---- */
static ct_tensor *new_filled(int ndim, const int64_t *shape, ct_options o, int kind, double f0, double f1, int64_t i0,
                             int64_t i1, ct_generator *g) {
  bool rg = o.requires_grad;
  o.requires_grad = false;
  ct_tensor *t = ct_empty(ndim, shape, o);
  if (!t) return NULL;
  if (run_fill(t, kind, f0, f1, i0, i1, g) != CT_OK) {
    ct_release(t);
    return NULL;
  }
  if (rg) t->requires_grad = true;
  return t;
}

static ct_status check_grad_opts(const ct_options *o) {
  if (o->requires_grad && !ct_dtype_is_floating(o->dtype))
    return CT_ERR(CT_ERR_RUNTIME, "Only Tensors of floating point and complex dtype can require gradients");
  return CT_OK;
}

ct_tensor *ct_rand(int ndim, const int64_t *shape, ct_options o, ct_generator *g) {
  if (!ct_dtype_valid(o.dtype)) {
    ct_set_error(CT_ERR_TYPE, "invalid dtype %d", (int)o.dtype);
    return NULL;
  }
  if (ct_shape_numel(ndim, shape) < 0 || check_uniform(o.dtype, 0, 1) || check_grad_opts(&o)) return NULL;
  return new_filled(ndim, shape, o, CT_RF_UNIFORM, 0, 1, 0, 0, g);
}

ct_tensor *ct_randn(int ndim, const int64_t *shape, ct_options o, ct_generator *g) {
  if (!ct_dtype_valid(o.dtype)) {
    ct_set_error(CT_ERR_TYPE, "invalid dtype %d", (int)o.dtype);
    return NULL;
  }
  if (ct_shape_numel(ndim, shape) < 0 || check_normal(o.dtype, 1) || check_grad_opts(&o)) return NULL;
  return new_filled(ndim, shape, o, CT_RF_NORMAL, 0, 1, 0, 0, g);
}

ct_tensor *ct_randint(int64_t low, int64_t high, int ndim, const int64_t *shape, const ct_options *o, ct_generator *g) {
  ct_options oo = o ? *o : ct_opts_dtype(CT_INT64);
  if (!ct_dtype_valid(oo.dtype)) {
    ct_set_error(CT_ERR_TYPE, "invalid dtype %d", (int)oo.dtype);
    return NULL;
  }
  if (ct_shape_numel(ndim, shape) < 0 || check_grad_opts(&oo) || check_randint(oo.dtype, low, high)) return NULL;
  return new_filled(ndim, shape, oo, CT_RF_RANDINT, 0, 0, low, high, g);
}

ct_tensor *ct_randperm(int64_t n, const ct_options *o, ct_generator *g) {
  ct_options oo = o ? *o : ct_opts_dtype(CT_INT64);
  if (!ct_dtype_valid(oo.dtype)) {
    ct_set_error(CT_ERR_TYPE, "invalid dtype %d", (int)oo.dtype);
    return NULL;
  }
  if (n < 0) {
    ct_set_error(CT_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld: [%lld]", (long long)n,
                 (long long)n);
    return NULL;
  }
  if (check_grad_opts(&oo)) return NULL;
  const char *limit_err = NULL;
  switch (oo.dtype) {
    case CT_BOOL: ct_set_error(CT_ERR_RUNTIME, "\"randperm\" not implemented for 'Bool'"); return NULL;
    case CT_FLOAT16: if (n > 2049) limit_err = "n cannot be greater than 2049 for Half type."; break;
    case CT_FLOAT32: if (n > (INT64_C(1) << 24) + 1) limit_err = "n cannot be greater than 2^24+1 for Float type."; break;
    case CT_FLOAT64: if (n > (INT64_C(1) << 53) + 1) limit_err = "n cannot be greater than 2^53+1 for Double type."; break;
    case CT_INT8: if (n - 1 > 127) limit_err = "value cannot be converted to type int8_t without overflow"; break;
    case CT_UINT8: if (n - 1 > 255) limit_err = "value cannot be converted to type uint8_t without overflow"; break;
    case CT_INT16: if (n - 1 > 32767) limit_err = "value cannot be converted to type int16_t without overflow"; break;
    case CT_INT32: if (n - 1 > INT32_MAX) limit_err = "value cannot be converted to type int32_t without overflow"; break;
    default: break;
  }
  if (limit_err) {
    ct_set_error(CT_ERR_RUNTIME, "%s", limit_err);
    return NULL;
  }
  bool rg = oo.requires_grad;
  oo.requires_grad = false;
  ct_tensor *t = ct_empty(1, &n, oo);
  if (!t) return NULL;
  ct_call c = ct_call_make(CT_OP_randperm);
  c.n_out = 1;
  c.out[0] = t;
  c.a.ptr = g;
  if (ct_run_kernel(&c) != CT_OK) {
    ct_release(t);
    return NULL;
  }
  if (rg) t->requires_grad = true;
  return t;
}

static ct_options like_opts(const ct_tensor *t, const ct_options *o) {
  if (o) return *o;
  ct_options r = ct_opts_dtype(t->dtype);
  r.device = t->storage->device;
  return r;
}

ct_tensor *ct_rand_like(const ct_tensor *t, const ct_options *o, ct_generator *g) {
  if (ct_check_tensor(t, "rand_like")) return NULL;
  return ct_rand(t->ndim, t->shape, like_opts(t, o), g);
}
ct_tensor *ct_randn_like(const ct_tensor *t, const ct_options *o, ct_generator *g) {
  if (ct_check_tensor(t, "randn_like")) return NULL;
  return ct_randn(t->ndim, t->shape, like_opts(t, o), g);
}
ct_tensor *ct_randint_like(const ct_tensor *t, int64_t low, int64_t high, const ct_options *o, ct_generator *g) {
  if (ct_check_tensor(t, "randint_like")) return NULL;
  ct_options oo = like_opts(t, o);
  return ct_randint(low, high, t->ndim, t->shape, &oo, g);
}

/* ---- multinomial ---- */
ct_tensor *ct_multinomial(const ct_tensor *probs, int64_t k, bool replacement, ct_generator *g) {
  if (ct_check_tensor(probs, "multinomial")) return NULL;
  const ct_tensor *p = probs;
  if (p->ndim < 1 || p->ndim > 2) {
    ct_set_error(CT_ERR_RUNTIME, "prob_dist must be 1 or 2 dim");
    return NULL;
  }
  if (!is_float(p->dtype)) {
    ct_set_error(CT_ERR_RUNTIME, "multinomial only supports floating-point dtypes for input, got: %s",
                 ct_dtype_torch_name(p->dtype));
    return NULL;
  }
  if (k <= 0) {
    ct_set_error(CT_ERR_RUNTIME, "cannot sample n_sample <= 0 samples");
    return NULL;
  }
  int64_t nc = p->shape[p->ndim - 1], nd = p->ndim == 2 ? p->shape[0] : 1;
  if (!replacement && k > nc) {
    ct_set_error(CT_ERR_RUNTIME, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
    return NULL;
  }
  if (nc > (INT64_C(1) << 24)) {
    ct_set_error(CT_ERR_RUNTIME, "number of categories cannot exceed 2^24");
    return NULL;
  }
  int64_t oshape[2] = {nd, k};
  int ond = p->ndim;
  ct_options oo = ct_opts_dtype(CT_INT64);
  oo.device = p->storage->device; /* the samples live where the probabilities do */
  ct_tensor *out = ct_empty(ond, ond == 2 ? oshape : &k, oo);
  if (!out || ct_numel(p) == 0) return out;
  if (p->dtype == CT_FLOAT16) {
    ct_set_error(CT_ERR_RUNTIME, "multinomial is not implemented for half on CPU");
    ct_release(out);
    return NULL;
  }
  if (p->dtype == CT_BFLOAT16 && (!replacement || k == 1)) {
    /* torch draws bfloat16 exponentials and divides in bfloat16 there; not reproduced yet */
    ct_set_error(CT_ERR_NOT_IMPLEMENTED, "multinomial without replacement is not implemented for bfloat16 probabilities");
    ct_release(out);
    return NULL;
  }
  /* validate the probabilities as torch does, before anything is drawn */
  int64_t n = ct_numel(p);
  double *v = ct_xmalloc((size_t)n * sizeof(double));
  if (!v || ct_copy_to_buffer(p, v, CT_FLOAT64, n) != CT_OK) {
    free(v);
    ct_release(out);
    return NULL;
  }
  const char *err = NULL;
  if (!replacement || k == 1) {
    for (int64_t i = 0; i < n && !err; i++)
      if (!(v[i] < INFINITY && v[i] >= 0)) err = "probability tensor contains either `inf`, `nan` or element < 0";
    for (int64_t r = 0; r < nd && !err; r++) {
      double s = 0;
      for (int64_t j = 0; j < nc; j++) s += v[r * nc + j];
      if (s == 0) err = "invalid multinomial distribution (sum of probabilities <= 0)";
    }
  } else {
    for (int64_t r = 0; r < nd && !err; r++) {
      double s = 0;
      for (int64_t j = 0; j < nc && !err; j++) {
        double x = v[r * nc + j];
        if (!(x >= 0)) err = "invalid multinomial distribution (encountering probability entry < 0)";
        else if (!isfinite(x)) err = "invalid multinomial distribution (encountering probability entry = infinity or NaN)";
        s += x;
      }
      if (!err && !(s > 0)) err = "invalid multinomial distribution (sum of probabilities <= 0)";
    }
  }
  free(v);
  if (err) {
    ct_set_error(CT_ERR_RUNTIME, "%s", err);
    ct_release(out);
    return NULL;
  }
  ct_tensor *pc = p->dtype == CT_BFLOAT16 ? ct_to_dtype(p, CT_FLOAT32) : ct_retain((ct_tensor *)p);
  ct_tensor *pcc = pc ? ct_contiguous(pc) : NULL;
  ct_release(pc);
  if (!pcc) {
    ct_release(out);
    return NULL;
  }
  ct_call c = ct_call_make(CT_OP_multinomial);
  c.n_in = 1;
  c.n_out = 1;
  c.in[0] = pcc;
  c.out[0] = out;
  c.a.k[0] = replacement;
  c.a.ptr = g;
  ct_status st = ct_run_kernel(&c);
  ct_release(pcc);
  if (st != CT_OK) {
    ct_release(out);
    return NULL;
  }
  return out;
}
