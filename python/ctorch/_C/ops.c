/* Op bindings with PyTorch's names and keyword arguments: methods of _TensorBase and
 * the module functions torch.<op>(input, ...). Elementwise families are table driven
 * (X-macros); the rest are written one by one where PyTorch's overloads differ. */
#include "ops_common.h"
#include "core/internal.h" /* ct_dtype_torch_name */
#include "ops/pointwise.h" /* ct_resize_out */
#include <string.h>

extern ct_tensor *ct_wrap_scalar(ct_scalar s);

/* ---- shared helpers ---- */
int pyct_tensor_list(PyObject *o, const char *fname, ct_tensor **ts, int max) {
  if (pyct_is_tensor(o) || !(PyList_Check(o) || PyTuple_Check(o))) {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'tensors' (position 1) must be tuple of Tensors, not %s", fname,
                 Py_TYPE(o)->tp_name);
    return -1;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  if (n > max) {
    PyErr_Format(PyExc_RuntimeError, "%s(): too many tensors (%zd)", fname, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *x = PySequence_Fast_GET_ITEM(o, i);
    if (!pyct_is_tensor(x)) {
      PyErr_Format(PyExc_TypeError, "expected Tensor as element %zd in argument 0, but got %s", i,
                   Py_TYPE(x)->tp_name);
      return -1;
    }
    ts[i] = TT(x);
  }
  return (int)n;
}

PyObject *pyct_tuple_of(int n, ct_tensor **ts) {
  PyObject *tup = PyTuple_New(n);
  if (!tup) {
    for (int i = 0; i < n; i++) ct_release(ts[i]);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    PyObject *w = pyct_wrap(ts[i]);
    if (!w) {
      for (int j = i + 1; j < n; j++) ct_release(ts[j]);
      Py_DECREF(tup);
      return NULL;
    }
    PyTuple_SET_ITEM(tup, i, w);
  }
  return tup;
}

int pyct_int_pair(PyObject *o, int n, int64_t def, int64_t *out, const char *what) {
  if (!GIVEN(o)) {
    for (int i = 0; i < n; i++) out[i] = def;
    return 1;
  }
  if (PyTuple_Check(o) || PyList_Check(o)) {
    Py_ssize_t len = PySequence_Fast_GET_SIZE(o);
    if (len == 1) {
      if (!pyct_int64(PySequence_Fast_GET_ITEM(o, 0), &out[0], what)) return 0;
      for (int i = 1; i < n; i++) out[i] = out[0];
      return 1;
    }
    if (len != n) {
      PyErr_Format(PyExc_RuntimeError, "expected %s to be a single integer value or a list of %d values to match "
                   "the convolution dimensions, but got %s=%zd values", what, n, what, len);
      return 0;
    }
    for (int i = 0; i < n; i++)
      if (!pyct_int64(PySequence_Fast_GET_ITEM(o, i), &out[i], what)) return 0;
    return 1;
  }
  if (!pyct_int64(o, &out[0], what)) return 0;
  for (int i = 1; i < n; i++) out[i] = out[0];
  return 1;
}

/* C++ type names PyTorch's "Expected out tensor to have dtype" message uses */
static const char *cpp_type_name(ct_dtype dt) {
  switch (dt) {
  case CT_FLOAT32: return "float";
  case CT_FLOAT64: return "double";
  case CT_INT64: return "long int";
  case CT_INT32: return "int";
  case CT_INT16: return "short int";
  case CT_INT8: return "signed char";
  case CT_UINT8: return "unsigned char";
  case CT_BOOL: return "bool";
  case CT_FLOAT16: return "c10::Half";
  case CT_BFLOAT16: return "c10::BFloat16";
  default: return ct_dtype_name(dt);
  }
}

static int name_is(const char *name, const char *const *set) {
  for (; *set; set++)
    if (strcmp(name, *set) == 0) return 1;
  return 0;
}

/* [lo, hi) bytes of storage a tensor spans (an empty tensor spans nothing) */
static void byte_range(const ct_tensor *t, int64_t *lo, int64_t *hi) {
  int64_t es = (int64_t)ct_dtype_size(ct_tensor_dtype(t)), a = ct_storage_offset(t), b = a;
  for (int d = 0; d < ct_ndim(t); d++) {
    int64_t st = ct_strides(t)[d], n = ct_shape(t)[d] - 1;
    if (st > 0) b += st * n; else a += st * n;
  }
  *lo = a * es;
  *hi = (b + 1) * es;
  if (ct_numel(t) == 0) *hi = *lo;
}

/* PyTorch refuses out= that partly overlaps an input (cat: any overlap); like PyTorch it only decides for
 * dense tensors, and lets an out identical to an input through for element-wise ops */
static int check_out_overlap(const char *name, const ct_tensor *o, int n_in, const ct_tensor *const *ins) {
  static const char *const any_overlap[] = {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
                                            "row_stack", "column_stack", NULL};
  if (!ct_is_contiguous(o) || ct_numel(o) == 0) return 1;
  for (int i = 0; i < n_in; i++) {
    const ct_tensor *x = ins[i];
    if (!x || !ct_shares_storage(o, x) || !ct_is_contiguous(x)) continue;
    int64_t a0, a1, b0, b1;
    byte_range(o, &a0, &a1);
    byte_range(x, &b0, &b1);
    if (a0 >= b1 || b0 >= a1) continue;
    bool same = a0 == b0 && a1 == b1;
    if (same && !name_is(name, any_overlap)) continue;
    PyErr_SetString(PyExc_RuntimeError, "unsupported operation: some elements of the input tensor and the written-to "
                    "tensor refer to a single memory location. Please clone() the tensor before performing the "
                    "operation.");
    return 0;
  }
  return 1;
}

/* PyTorch's per-op dtype rules for out=: returns 0 with the error set when out's dtype is refused */
static int check_out_dtype(const char *name, ct_dtype rdt, ct_dtype odt, const ct_tensor *in0) {
  static const char *const joins[] = {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
                                      "row_stack", "column_stack", NULL};
  static const char *const exact[] = {"mm", "bmm", "mv", "addmm", "addmv", "baddbmm", "addbmm", "gather", "argmax",
                                      "argmin", NULL};
  static const char *const cast_any[] = {"norm", NULL};
  static const char *const same_in[] = {"amax", "amin", NULL};
  static const char *const clamps[] = {"clamp", "clip", NULL};
  if (rdt == odt) return 1;
  if (name_is(name, cast_any)) return 1;
  if (name_is(name, joins)) {
    if (ct_can_cast(rdt, odt)) return 1;
    PyErr_Format(PyExc_RuntimeError, "torch.cat(): input types can't be cast to the desired output type %s",
                 ct_dtype_torch_name(odt));
    return 0;
  }
  if (name_is(name, exact) || (strcmp(name, "matmul") == 0 && in0 && ct_ndim(in0) != 1)) {
    PyErr_Format(PyExc_RuntimeError, "Expected out tensor to have dtype %s, but got %s instead", cpp_type_name(rdt),
                 cpp_type_name(odt));
    return 0;
  }
  if (strcmp(name, "dot") == 0 || strcmp(name, "vdot") == 0 || strcmp(name, "matmul") == 0) {
    PyErr_Format(PyExc_RuntimeError, "result dtype %s does not match input dtype %s", ct_dtype_torch_name(odt),
                 ct_dtype_torch_name(rdt));
    return 0;
  }
  if (name_is(name, same_in)) {
    PyErr_Format(PyExc_RuntimeError, "Expected the dtype for input and out to match, but got %s for input's dtype "
                 "and %s for out's dtype.", ct_dtype_torch_name(rdt), ct_dtype_torch_name(odt));
    return 0;
  }
  if (strcmp(name, "index_select") == 0) {
    PyErr_SetString(PyExc_RuntimeError, "index_select(): self and result must have the same scalar type");
    return 0;
  }
  if (name_is(name, clamps)) {
    PyErr_Format(PyExc_RuntimeError, "Found dtype %s but expected %s", ct_dtype_torch_name(odt),
                 ct_dtype_torch_name(rdt));
    return 0;
  }
  if (!ct_can_cast(rdt, odt)) {
    PyErr_Format(PyExc_RuntimeError, "result type %s can't be cast to the desired output type %s",
                 ct_dtype_torch_name(rdt), ct_dtype_torch_name(odt));
    return 0;
  }
  return 1;
}

/* out=: the result is copied into `out`, resized like PyTorch resizes out= (a warning when it had elements);
 * ins: the tensor inputs, for PyTorch's overlap check */
static PyObject *finish_out_in(const char *name, PyObject *res, PyObject *out, int n_in,
                               const ct_tensor *const *ins) {
  if (!res) return NULL;
  if (!pyct_is_tensor(out) || !pyct_is_tensor(res)) {
    Py_DECREF(res);
    PyErr_SetString(PyExc_TypeError, "argument 'out' must be Tensor");
    return NULL;
  }
  ct_tensor *o = TT(out), *r = TT(res);
  if (ct_requires_grad(o) || ct_requires_grad(r)) {
    if (ct_is_grad_enabled()) {
      Py_DECREF(res);
      PyErr_Format(PyExc_RuntimeError, "%s(): functions with out=... arguments don't support automatic "
                   "differentiation, but one of the arguments requires grad.", name);
      return NULL;
    }
  }
  ct_dtype rdt = ct_tensor_dtype(r); /* read before res (and r with it) is released */
  if (!check_out_dtype(name, rdt, ct_tensor_dtype(o), n_in ? ins[0] : NULL) ||
      !check_out_overlap(name, o, n_in, ins)) {
    Py_DECREF(res);
    return NULL;
  }
  ct_status st = ct_resize_out(o, ct_ndim(r), ct_shape(r));
  if (st != CT_OK) {
    Py_DECREF(res);
    return pyct_raise();
  }
  /* a resize warning turned into an error is raised after out is written, as PyTorch does */
  PyObject *et, *ev, *etb;
  PyErr_Fetch(&et, &ev, &etb);
  bool prev = ct_set_grad_enabled(false);
  st = ct_copy_(o, r);
  ct_set_grad_enabled(prev);
  Py_DECREF(res);
  if (et) {
    PyErr_Restore(et, ev, etb);
    return NULL;
  }
  return pyct_status(st, out);
}
static PyObject *finish_out(const char *name, PyObject *res, PyObject *out) {
  return finish_out_in(name, res, out, 0, NULL);
}

/* PyTorch turns a Python number given as `input` into a 0-dim tensor only in these functions */
static const char *const number_input_ok[] = {
  "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder", "pow",
  "xlogy", "polygamma", "normal", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
  "bitwise_right_shift", NULL};
/* functions with several signatures in PyTorch: a non-tensor input is "an invalid combination of arguments"
   (the others say "argument 'input' (position 1) must be Tensor") */
static const char *const overloaded_fns[] = {
  "addcdiv", "addcmul", "addmm", "addmv", "all", "any", "argsort", "baddbmm", "bernoulli", "clamp", "clamp_max",
  "clamp_min", "clip", "copysign", "count_nonzero", "cummax", "cummin", "cumprod", "cumsum", "eq", "fmod", "gather",
  "ge", "greater", "greater_equal", "gt", "index_add", "index_copy", "index_fill", "index_select", "le", "lerp",
  "less", "less_equal", "log_softmax", "logsumexp", "lt", "masked_fill", "max", "mean", "median", "min", "mode",
  "moveaxis", "movedim", "nanmedian", "narrow", "ne", "not_equal", "prod", "repeat_interleave", "round", "rsub",
  "scatter", "scatter_add", "select", "softmax", "sort", "squeeze", "std", "std_mean", "sum", "tensor_split",
  "transpose", "unbind", "unflatten", "var", "var_mean", NULL};
static int name_in(const char *const *list, const char *name) {
  for (; *list; list++)
    if (strcmp(*list, name) == 0) return 1;
  return 0;
}
static const char *arg_type_name(PyObject *o) { return pyct_is_tensor(o) ? "Tensor" : Py_TYPE(o)->tp_name; }
/* PyTorch's "NAME() received an invalid combination of arguments - got (int, Tensor, dim=int), ..." */
static void invalid_combination(const char *name, PyObject *args, PyObject *kwargs) {
  char got[512];
  size_t n = 0;
  got[0] = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args) && n < sizeof got; i++)
    n += (size_t)snprintf(got + n, sizeof got - n, "%s%s", i ? ", " : "", arg_type_name(PyTuple_GET_ITEM(args, i)));
  if (kwargs) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &k, &v) && n < sizeof got) {
      const char *ks = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
      if (!ks) {
        PyErr_Clear();
        ks = "?";
      }
      n += (size_t)snprintf(got + n, sizeof got - n, "%s%s=%s", n ? ", " : "", ks, arg_type_name(v));
    }
  }
  PyErr_Format(PyExc_TypeError, "%s() received an invalid combination of arguments - got (%s), but expected one of:",
               name, got);
}

/* out=(values, indices) of the ops returning that pair: exact dtypes (indices int64), each resized and
   written as out= does; returns torch.return_types.<name>_out holding the out tensors. Steals res. */
static const char *const tuple_out_ops[] = {"max", "min", "sort", "topk", "kthvalue", "mode", "median",
                                             "nanmedian", "cummax", "cummin", NULL};
static PyObject *finish_tuple_out(const char *name, PyObject *res, PyObject *out) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(out);
  if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
    /* e.g. max(input, other, out=(a, b)): that overload takes one tensor */
    Py_DECREF(res);
    PyErr_Format(PyExc_TypeError, "%s(): argument 'out' must be Tensor, not %s", name, Py_TYPE(out)->tp_name);
    return NULL;
  }
  if (n != 2) {
    Py_DECREF(res);
    PyErr_Format(PyExc_TypeError, "expected tuple of 2 elements but got %zd", n);
    return NULL;
  }
  PyObject *o[2];
  for (int k = 0; k < 2; k++) {
    o[k] = PySequence_Fast_GET_ITEM(out, k);
    if (!pyct_is_tensor(o[k])) {
      Py_DECREF(res);
      PyErr_Format(PyExc_TypeError, "%s(): argument 'out' must be tuple of Tensors, not %s", name,
                   Py_TYPE(out)->tp_name);
      return NULL;
    }
    ct_dtype want = k ? CT_INT64 : ct_tensor_dtype(TT(PyTuple_GET_ITEM(res, 0)));
    if (ct_tensor_dtype(TT(o[k])) != want) {
      Py_DECREF(res);
      PyErr_Format(PyExc_RuntimeError, "Expected out tensor to have dtype %s, but got %s instead",
                   cpp_type_name(want), cpp_type_name(ct_tensor_dtype(TT(o[k]))));
      return NULL;
    }
  }
  PyObject *w[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    PyObject *part = PyTuple_GET_ITEM(res, k);
    Py_INCREF(part);
    w[k] = finish_out(name, part, o[k]);
    if (!w[k]) break;
  }
  Py_DECREF(res);
  if (!w[0] || !w[1]) {
    Py_XDECREF(w[0]);
    Py_XDECREF(w[1]);
    return NULL;
  }
  char tname[64];
  snprintf(tname, sizeof tname, "%s_out", name);
  return pyct_return_pair_obj(tname, w[0], w[1]);
}

PyObject *pyct_finish_out(const char *name, PyObject *res, PyObject *out) { return finish_out(name, res, out); }
PyObject *pyct_finish_out_in(const char *name, PyObject *res, PyObject *out, int n_in, const ct_tensor *const *ins) {
  return finish_out_in(name, res, out, n_in, ins);
}

PyObject *pyct_as_method(const char *name, pyct_meth m, PyObject *args, PyObject *kwargs) {
  PyObject *input = NULL, *out = NULL, *kw = NULL, *rest = NULL, *res = NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  int was_in_function = pyct_in_function;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    kw = PyDict_Copy(kwargs);
    if (!kw) return NULL;
    out = PyDict_GetItemString(kw, "out");
    if (out) {
      Py_INCREF(out);
      PyDict_DelItemString(kw, "out");
      if (out == Py_None) Py_CLEAR(out);
    }
    if (n == 0) {
      input = PyDict_GetItemString(kw, "input");
      if (!input) input = PyDict_GetItemString(kw, "self");
      if (input) {
        Py_INCREF(input);
        if (PyDict_DelItemString(kw, "input") < 0) {
          PyErr_Clear();
          PyDict_DelItemString(kw, "self");
        }
      }
    }
  }
  if (!input) {
    if (n == 0) {
      PyErr_Format(PyExc_TypeError, "%s() missing 1 required positional arguments: \"input\"", name);
      goto done;
    }
    input = PyTuple_GET_ITEM(args, 0);
    Py_INCREF(input);
    rest = PyTuple_GetSlice(args, 1, n);
  } else {
    rest = PyTuple_GetSlice(args, 0, n);
  }
  if (!rest) goto done;
  if (!pyct_is_tensor(input)) {
    /* a Python number as input (torch.add(2, t)) becomes a wrapped 0-dim tensor */
    if (pyct_is_number(input) && name_in(number_input_ok, name)) {
      ct_tensor *w = pyct_operand(input);
      if (!w) goto done;
      PyObject *wi = pyct_wrap(w);
      if (!wi) goto done;
      Py_SETREF(input, wi);
    } else if (name_in(overloaded_fns, name)) {
      invalid_combination(name, args, kwargs);
      goto done;
    } else {
      PyErr_Format(PyExc_TypeError, "%s(): argument 'input' (position 1) must be Tensor, not %s", name,
                   Py_TYPE(input)->tp_name);
      goto done;
    }
  }
  static const char *const out_dtype_ops[] = {"sum", "prod", "cumsum", "cumprod", NULL};
  if (out && pyct_is_tensor(out) && name_is(name, out_dtype_ops) && !(kw && PyDict_GetItemString(kw, "dtype"))) {
    /* PyTorch computes these in out's dtype when no dtype is given */
    if (!kw && !(kw = PyDict_New())) goto done;
    if (PyDict_SetItemString(kw, "dtype", pyct_dtype_obj(ct_tensor_dtype(TT(out)))) < 0) goto done;
  }
  pyct_in_function = 1; /* the method's own error hook stays quiet: the function form reports below */
  res = m(input, rest, kw);
  pyct_in_function = was_in_function;
  if (res && out && (PyTuple_Check(out) || PyList_Check(out)) && name_in(tuple_out_ops, name)) {
    res = finish_tuple_out(name, res, out);
  } else if (res && out) {
    const ct_tensor *ins[16];
    int n_in = 0;
    ins[n_in++] = TT(input);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(rest) && n_in < 16; i++)
      if (pyct_is_tensor(PyTuple_GET_ITEM(rest, i))) ins[n_in++] = TT(PyTuple_GET_ITEM(rest, i));
    res = finish_out_in(name, res, out, n_in, ins);
  }
done:
  Py_XDECREF(input);
  Py_XDECREF(out);
  Py_XDECREF(kw);
  Py_XDECREF(rest);
  if (!res && !was_in_function) pyct_arg_error(name, NULL, args, kwargs);
  return res;
}

/* ---- unary ops: name, name_, torch.name ---- */
#define UNARY_LIST(X)                                                                                    \
  X(abs) X(neg) X(sign) X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) X(sqrt) X(rsqrt) X(sin) \
  X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh) X(atanh) X(sigmoid)    \
  X(erf) X(erfc) X(erfinv) X(lgamma) X(digamma) X(floor) X(ceil) X(trunc) X(frac) X(reciprocal)          \
  X(square) X(relu) X(logical_not) X(bitwise_not)

#define UNARY_DEF(name)                                                   \
  METHOD(name) {                                                          \
    NOARGS(#name);                                                        \
    return pyct_wrap(ct_##name(SELF));                                    \
  }                                                                       \
  METHOD(name##_) {                                                       \
    NOARGS(#name "_");                                                    \
    return pyct_status(ct_##name##_(SELF), self);                         \
  }                                                                       \
  FN(name)
UNARY_LIST(UNARY_DEF)

METHOD(isnan) { NOARGS("isnan"); return pyct_wrap(ct_isnan(SELF)); }
METHOD(isinf) { NOARGS("isinf"); return pyct_wrap(ct_isinf(SELF)); }
METHOD(isfinite) { NOARGS("isfinite"); return pyct_wrap(ct_isfinite(SELF)); }
METHOD(softsign) { NOARGS("softsign"); return pyct_wrap(ct_softsign(SELF)); }
FN(isnan) FN(isinf) FN(isfinite)
METHOD(round) {
  ARGS("round", 0, "*", "decimals");
  int64_t d;
  if (!opt_i64(a[0], 0, &d, "decimals")) return NULL;
  return pyct_wrap(d ? ct_round_decimals(SELF, d) : ct_round(SELF));
}
METHOD(round_) {
  ARGS("round_", 0, "*", "decimals");
  int64_t d;
  if (!opt_i64(a[0], 0, &d, "decimals")) return NULL;
  return pyct_status(d ? ct_round_decimals_(SELF, d) : ct_round_(SELF), self);
}
FN(round)
METHOD(logit) {
  ARGS("logit", 0, "eps");
  double eps;
  if (!opt_f64(a[0], -1.0, &eps, "eps")) return NULL;
  return pyct_wrap(ct_logit(SELF, eps));
}
FN(logit)
METHOD(polygamma) {
  ARGS("polygamma", 1, "n");
  int64_t n;
  if (!pyct_int64(a[0], &n, "n")) return NULL;
  return pyct_wrap(ct_polygamma(n, SELF));
}
static PyObject *f_polygamma(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("polygamma", 2, "n", "input");
  int64_t n;
  if (!pyct_int64(a[0], &n, "n")) return NULL;
  ct_tensor *x = tensor_arg(a[1], "polygamma", "input", 2);
  if (!x) return NULL;
  return pyct_wrap(ct_polygamma(n, x));
}
METHOD(nan_to_num) {
  ARGS("nan_to_num", 0, "nan", "posinf", "neginf");
  double v[3];
  const double *p[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; i++)
    if (GIVEN(a[i])) {
      if (!pyct_double(a[i], &v[i], "value")) return NULL;
      p[i] = &v[i];
    }
  return pyct_wrap(ct_nan_to_num(SELF, p[0], p[1], p[2]));
}
FN(nan_to_num)

/* clamp(min=None, max=None) with numbers or tensors */
static PyObject *clamp_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace, const char *name) {
  ARGS(name, 0, "min", "max");
  int tmin = GIVEN(a[0]) && pyct_is_tensor(a[0]), tmax = GIVEN(a[1]) && pyct_is_tensor(a[1]);
  if (!GIVEN(a[0]) && !GIVEN(a[1])) {
    PyErr_SetString(PyExc_RuntimeError, "torch.clamp: At least one of 'min' or 'max' must not be None");
    return NULL;
  }
  if (tmin || tmax) {
    ct_tensor *mn = NULL, *mx = NULL;
    if (GIVEN(a[0]) && !(mn = pyct_operand(a[0]))) return NULL;
    if (GIVEN(a[1]) && !(mx = pyct_operand(a[1]))) {
      ct_release(mn);
      return NULL;
    }
    PyObject *r;
    if (inplace)
      r = pyct_status(ct_clamp_tensor_(SELF, mn, mx), self);
    else
      r = pyct_wrap(ct_clamp_tensor(SELF, mn, mx));
    ct_release(mn);
    ct_release(mx);
    return r;
  }
  ct_scalar smin, smax;
  const ct_scalar *pmin = NULL, *pmax = NULL;
  if (GIVEN(a[0])) {
    if (!pyct_scalar(a[0], &smin)) return NULL;
    pmin = &smin;
  }
  if (GIVEN(a[1])) {
    if (!pyct_scalar(a[1], &smax)) return NULL;
    pmax = &smax;
  }
  if (inplace) return pyct_status(ct_clamp_(SELF, pmin, pmax), self);
  return pyct_wrap(ct_clamp(SELF, pmin, pmax));
}
METHOD(clamp) { return clamp_impl(self, args, kwargs, 0, "clamp"); }
METHOD(clamp_) { return clamp_impl(self, args, kwargs, 1, "clamp_"); }
/* clip is clamp under its own name: PyTorch's errors name the function called */
METHOD(clip) { return clamp_impl(self, args, kwargs, 0, "clip"); }
METHOD(clip_) { return clamp_impl(self, args, kwargs, 1, "clip_"); }
FN(clamp) FN(clip)
METHOD(clamp_min) {
  ARGS("clamp_min", 1, "min");
  ct_scalar s;
  if (!pyct_scalar(a[0], &s)) return NULL;
  return pyct_wrap(ct_clamp_min(SELF, s));
}
METHOD(clamp_max) {
  ARGS("clamp_max", 1, "max");
  ct_scalar s;
  if (!pyct_scalar(a[0], &s)) return NULL;
  return pyct_wrap(ct_clamp_max(SELF, s));
}
FN(clamp_min) FN(clamp_max)

/* ---- binary ops ---- */
typedef ct_tensor *(*bin_tt)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*bin_ts)(const ct_tensor *, ct_scalar);
typedef ct_status (*bin_tt_)(ct_tensor *, const ct_tensor *);
typedef ct_status (*bin_ts_)(ct_tensor *, ct_scalar);

static PyObject *bin_generic(PyObject *self, PyObject *args, PyObject *kwargs, const char *name, bin_tt tt,
                             bin_ts ts, bin_tt_ ti, bin_ts_ tsi, int inplace) {
  ARGS(name, 1, "other");
  PyObject *o = a[0];
  if (inplace && !ti) {
    PyErr_Format(PyExc_NotImplementedError, "%s is not implemented in ctorch", name);
    return NULL;
  }
  if (pyct_is_tensor(o)) {
    if (inplace) return pyct_status(ti(SELF, TT(o)), self);
    return pyct_wrap(tt(SELF, TT(o)));
  }
  if (pyct_is_number(o)) {
    ct_scalar s;
    if (!pyct_scalar(o, &s)) return NULL;
    if (inplace && tsi) return pyct_status(tsi(SELF, s), self);
    if (!inplace && ts) return pyct_wrap(ts(SELF, s));
  }
  ct_tensor *w = pyct_is_number(o) ? pyct_operand(o) : NULL;
  if (!w) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError, "%s(): argument 'other' (position 1) must be Tensor, not %s", name,
                   Py_TYPE(o)->tp_name);
    return NULL;
  }
  PyObject *r = inplace ? pyct_status(ti(SELF, w), self) : pyct_wrap(tt(SELF, w));
  ct_release(w);
  return r;
}

#define BIN_LIST(X)                                                                                         \
  X(mul, ct_mul, ct_mul_scalar, ct_mul_, ct_mul_scalar_)                                                    \
  X(floor_divide, ct_floor_divide, ct_floor_divide_scalar, ct_floor_divide_, ct_floor_divide_scalar_)       \
  X(remainder, ct_remainder, ct_remainder_scalar, ct_remainder_, ct_remainder_scalar_)                      \
  X(fmod, ct_fmod, ct_fmod_scalar, ct_fmod_, ct_fmod_scalar_)                                               \
  X(atan2, ct_atan2, NULL, ct_atan2_, NULL)                                                                 \
  X(maximum, ct_maximum, NULL, NULL, NULL)                                                                  \
  X(minimum, ct_minimum, NULL, NULL, NULL)                                                                  \
  X(fmax, ct_fmax, NULL, NULL, NULL)                                                                        \
  X(fmin, ct_fmin, NULL, NULL, NULL)                                                                        \
  X(hypot, ct_hypot, NULL, ct_hypot_, NULL)                                                                 \
  X(logaddexp, ct_logaddexp, NULL, NULL, NULL)                                                              \
  X(logaddexp2, ct_logaddexp2, NULL, NULL, NULL)                                                            \
  X(copysign, ct_copysign, ct_copysign_scalar, ct_copysign_, ct_copysign_scalar_)                           \
  X(xlogy, ct_xlogy, ct_xlogy_scalar, ct_xlogy_, NULL)                                                      \
  X(bitwise_and, ct_bitwise_and, ct_bitwise_and_scalar, ct_bitwise_and_, ct_bitwise_and_scalar_)            \
  X(bitwise_or, ct_bitwise_or, ct_bitwise_or_scalar, ct_bitwise_or_, ct_bitwise_or_scalar_)                 \
  X(bitwise_xor, ct_bitwise_xor, ct_bitwise_xor_scalar, ct_bitwise_xor_, ct_bitwise_xor_scalar_)            \
  X(bitwise_left_shift, ct_bitwise_left_shift, ct_bitwise_left_shift_scalar, ct_bitwise_left_shift_,        \
    ct_bitwise_left_shift_scalar_)                                                                          \
  X(bitwise_right_shift, ct_bitwise_right_shift, ct_bitwise_right_shift_scalar, ct_bitwise_right_shift_,    \
    ct_bitwise_right_shift_scalar_)                                                                         \
  X(logical_and, ct_logical_and, NULL, ct_logical_and_, NULL)                                               \
  X(logical_or, ct_logical_or, NULL, ct_logical_or_, NULL)                                                  \
  X(logical_xor, ct_logical_xor, NULL, ct_logical_xor_, NULL)                                               \
  X(eq, ct_eq, ct_eq_scalar, ct_eq_, ct_eq_scalar_)                                                         \
  X(ne, ct_ne, ct_ne_scalar, ct_ne_, ct_ne_scalar_)                                                         \
  X(lt, ct_lt, ct_lt_scalar, ct_lt_, ct_lt_scalar_)                                                         \
  X(le, ct_le, ct_le_scalar, ct_le_, ct_le_scalar_)                                                         \
  X(gt, ct_gt, ct_gt_scalar, ct_gt_, ct_gt_scalar_)                                                         \
  X(ge, ct_ge, ct_ge_scalar, ct_ge_, ct_ge_scalar_)

#define BIN_DEF(name, tt, ts, ti, tsi)                                                     \
  METHOD(name) { return bin_generic(self, args, kwargs, #name, tt, ts, ti, tsi, 0); }      \
  METHOD(name##_) { return bin_generic(self, args, kwargs, #name "_", tt, ts, ti, tsi, 1); } \
  FN(name)
BIN_LIST(BIN_DEF)

/* add/sub with alpha */
static PyObject *addsub(PyObject *self, PyObject *args, PyObject *kwargs, int sub, int inplace) {
  const char *name = sub ? (inplace ? "sub_" : "sub") : (inplace ? "add_" : "add");
  ARGS(name, 1, "other", "*", "alpha");
  ct_scalar alpha;
  int has_alpha = GIVEN(a[1]);
  if (!opt_scalar(a[1], ct_si(1), &alpha)) return NULL;
  ct_tensor *o;
  if (pyct_is_tensor(a[0]))
    o = ct_retain(TT(a[0]));
  else if (pyct_is_number(a[0])) {
    ct_scalar s;
    if (!pyct_scalar(a[0], &s)) return NULL;
    if (!has_alpha) {
      if (inplace) return pyct_status(sub ? ct_sub_scalar_(SELF, s) : ct_add_scalar_(SELF, s), self);
      return pyct_wrap(sub ? ct_sub_scalar(SELF, s) : ct_add_scalar(SELF, s));
    }
    o = ct_wrap_scalar(s);
    if (!o) return pyct_raise();
  } else {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'other' (position 1) must be Tensor, not %s", name,
                 Py_TYPE(a[0])->tp_name);
    return NULL;
  }
  PyObject *r;
  if (inplace)
    r = pyct_status(sub ? ct_sub_alpha_(SELF, o, alpha) : ct_add_alpha_(SELF, o, alpha), self);
  else
    r = pyct_wrap(sub ? ct_sub_alpha(SELF, o, alpha) : ct_add_alpha(SELF, o, alpha));
  ct_release(o);
  return r;
}
METHOD(add) { return addsub(self, args, kwargs, 0, 0); }
METHOD(add_) { return addsub(self, args, kwargs, 0, 1); }
METHOD(sub) { return addsub(self, args, kwargs, 1, 0); }
METHOD(sub_) { return addsub(self, args, kwargs, 1, 1); }
FN(add) FN(sub)
METHOD(rsub) {
  ARGS("rsub", 1, "other", "*", "alpha");
  ct_scalar alpha;
  if (!opt_scalar(a[1], ct_si(1), &alpha)) return NULL;
  ct_tensor *o = pyct_operand(a[0]);
  if (!o) return NULL;
  PyObject *r = pyct_wrap(ct_rsub_alpha(SELF, o, alpha));
  ct_release(o);
  return r;
}
FN(rsub)

static PyObject *div_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace) {
  ARGS(inplace ? "div_" : "div", 1, "other", "*", "rounding_mode");
  const char *mode = NULL;
  if (GIVEN(a[1])) {
    mode = PyUnicode_AsUTF8(a[1]);
    if (!mode) return NULL;
  }
  if (pyct_is_number(a[0])) {
    ct_scalar s;
    if (!pyct_scalar(a[0], &s)) return NULL;
    if (inplace) return pyct_status(mode ? ct_div_scalar_mode_(SELF, s, mode) : ct_div_scalar_(SELF, s), self);
    return pyct_wrap(mode ? ct_div_scalar_mode(SELF, s, mode) : ct_div_scalar(SELF, s));
  }
  ct_tensor *o = tensor_arg(a[0], "div", "other", 1);
  if (!o) return NULL;
  if (inplace) return pyct_status(mode ? ct_div_mode_(SELF, o, mode) : ct_div_(SELF, o), self);
  return pyct_wrap(mode ? ct_div_mode(SELF, o, mode) : ct_div(SELF, o));
}
METHOD(div) { return div_impl(self, args, kwargs, 0); }
METHOD(div_) { return div_impl(self, args, kwargs, 1); }
FN(div)

static PyObject *pow_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace) {
  ARGS(inplace ? "pow_" : "pow", 1, "exponent");
  if (pyct_is_number(a[0])) {
    ct_scalar s;
    if (!pyct_scalar(a[0], &s)) return NULL;
    if (inplace) return pyct_status(ct_pow_scalar_(SELF, s), self);
    return pyct_wrap(ct_pow_scalar(SELF, s));
  }
  ct_tensor *o = tensor_arg(a[0], "pow", "exponent", 1);
  if (!o) return NULL;
  if (inplace) return pyct_status(ct_pow_(SELF, o), self);
  return pyct_wrap(ct_pow(SELF, o));
}
METHOD(pow) { return pow_impl(self, args, kwargs, 0); }
METHOD(pow_) { return pow_impl(self, args, kwargs, 1); }
static PyObject *f_pow(PyObject *mod, PyObject *args, PyObject *kwargs) {
  /* torch.pow(number, tensor) */
  if (PyTuple_GET_SIZE(args) >= 2 && pyct_is_number(PyTuple_GET_ITEM(args, 0)) &&
      pyct_is_tensor(PyTuple_GET_ITEM(args, 1))) {
    ct_scalar s;
    if (!pyct_scalar(PyTuple_GET_ITEM(args, 0), &s)) return NULL;
    return pyct_wrap(ct_pow_scalar_tensor(s, TT(PyTuple_GET_ITEM(args, 1))));
  }
  return pyct_as_method("pow", m_pow, args, kwargs);
}

METHOD(isclose) {
  ARGS("isclose", 1, "other", "rtol", "atol", "equal_nan");
  double rtol, atol;
  bool en;
  ct_tensor *o = tensor_arg(a[0], "isclose", "other", 1);
  if (!o || !opt_f64(a[1], 1e-5, &rtol, "rtol") || !opt_f64(a[2], 1e-8, &atol, "atol") || !opt_bool(a[3], false, &en))
    return NULL;
  return pyct_wrap(ct_isclose(SELF, o, rtol, atol, en));
}
METHOD(allclose) {
  ARGS("allclose", 1, "other", "rtol", "atol", "equal_nan");
  double rtol, atol;
  bool en, r;
  ct_tensor *o = tensor_arg(a[0], "allclose", "other", 1);
  if (!o || !opt_f64(a[1], 1e-5, &rtol, "rtol") || !opt_f64(a[2], 1e-8, &atol, "atol") || !opt_bool(a[3], false, &en))
    return NULL;
  if (ct_allclose(SELF, o, rtol, atol, en, &r) != CT_OK) return pyct_raise();
  return PyBool_FromLong(r);
}
METHOD(equal) {
  ARGS("equal", 1, "other");
  bool r;
  ct_tensor *o = tensor_arg(a[0], "equal", "other", 1);
  if (!o) return NULL;
  if (ct_equal(SELF, o, &r) != CT_OK) return pyct_raise();
  return PyBool_FromLong(r);
}
FN(isclose) FN(allclose) FN(equal)

/* ---- ternary ---- */
METHOD(lerp) {
  ARGS("lerp", 2, "end", "weight");
  ct_tensor *e = tensor_arg(a[0], "lerp", "end", 1);
  if (!e) return NULL;
  if (pyct_is_tensor(a[1])) return pyct_wrap(ct_lerp_tensor(SELF, e, TT(a[1])));
  ct_scalar w;
  if (!pyct_scalar(a[1], &w)) return NULL;
  return pyct_wrap(ct_lerp(SELF, e, w));
}
METHOD(lerp_) {
  ARGS("lerp_", 2, "end", "weight");
  ct_tensor *e = tensor_arg(a[0], "lerp_", "end", 1);
  if (!e) return NULL;
  if (pyct_is_tensor(a[1])) return pyct_status(ct_lerp_tensor_(SELF, e, TT(a[1])), self);
  ct_scalar w;
  if (!pyct_scalar(a[1], &w)) return NULL;
  return pyct_status(ct_lerp_(SELF, e, w), self);
}
FN(lerp)
#define ADDC(name)                                                                   \
  METHOD(name) {                                                                     \
    ARGS(#name, 2, "tensor1", "tensor2", "*", "value");                              \
    ct_scalar v;                                                                     \
    ct_tensor *t1 = tensor_arg(a[0], #name, "tensor1", 1), *t2;                      \
    if (!t1 || !(t2 = tensor_arg(a[1], #name, "tensor2", 2))) return NULL;           \
    if (!opt_scalar(a[2], ct_si(1), &v)) return NULL;                                \
    return pyct_wrap(ct_##name(SELF, t1, t2, v));                                    \
  }                                                                                  \
  METHOD(name##_) {                                                                  \
    ARGS(#name "_", 2, "tensor1", "tensor2", "*", "value");                          \
    ct_scalar v;                                                                     \
    ct_tensor *t1 = tensor_arg(a[0], #name, "tensor1", 1), *t2;                      \
    if (!t1 || !(t2 = tensor_arg(a[1], #name, "tensor2", 2))) return NULL;           \
    if (!opt_scalar(a[2], ct_si(1), &v)) return NULL;                                \
    return pyct_status(ct_##name##_(SELF, t1, t2, v), self);                         \
  }                                                                                  \
  FN(name)
ADDC(addcmul)
ADDC(addcdiv)

/* x.where(condition, y) and torch.where(condition, x, y) / torch.where(condition) */
static PyObject *where3(PyObject *cond, PyObject *x, PyObject *y) {
  ct_tensor *c = tensor_arg(cond, "where", "condition", 1);
  if (!c) return NULL;
  int xt = pyct_is_tensor(x), yt = pyct_is_tensor(y);
  if (xt && yt) return pyct_wrap(ct_where(c, TT(x), TT(y)));
  ct_scalar sx, sy;
  if (!xt && !pyct_scalar(x, &sx)) return NULL;
  if (!yt && !pyct_scalar(y, &sy)) return NULL;
  if (xt) return pyct_wrap(ct_where_scalar_b(c, TT(x), sy));
  if (yt) return pyct_wrap(ct_where_scalar_a(c, sx, TT(y)));
  return pyct_wrap(ct_where_scalars(c, sx, sy));
}
METHOD(where) {
  ARGS("where", 2, "condition", "other");
  return where3(a[0], self, a[1]);
}
FUNCTION(where) {
  ARGS("where", 1, "condition", "input", "other", "*", "out");
  if (GIVEN(a[3])) {
    /* only where(condition, Tensor, Tensor) has an out= overload; the others are parser errors */
    if (!a[1] || !a[2] || !pyct_is_tensor(a[0]) || !pyct_is_tensor(a[1]) || !pyct_is_tensor(a[2])) {
      PyErr_SetString(PyExc_TypeError, "where(): out= needs tensor input and other");
      return NULL;
    }
    const ct_tensor *ins[3] = {TT(a[0]), TT(a[1]), TT(a[2])};
    return pyct_finish_out_in("where", where3(a[0], a[1], a[2]), a[3], 3, ins);
  }
  if (!a[1] && !a[2]) {
    ct_tensor *c = tensor_arg(a[0], "where", "condition", 1);
    if (!c) return NULL;
    ct_tensor *outs[CT_MAX_DIMS];
    int n = ct_nonzero_tuple(c, outs);
    if (n < 0) return pyct_raise();
    return pyct_tuple_of(n, outs);
  }
  if (!a[1] || !a[2]) {
    PyErr_SetString(PyExc_TypeError, "where() missing required argument 'other'");
    return NULL;
  }
  return where3(a[0], a[1], a[2]);
}

/* ---- reductions ---- */
METHOD(sum) {
  ARGS("sum", 0, "dim", "keepdim", "*", "dtype");
  int64_t dims[CT_MAX_DIMS];
  int nd, dt;
  bool keep;
  if (!pyct_dims(a[0], dims, &nd, CT_MAX_DIMS, "dim") || !opt_bool(a[1], false, &keep) || !pyct_dtype_opt(a[2], &dt))
    return NULL;
  if (!GIVEN(a[0]) && !keep && dt < 0) return pyct_wrap(ct_sum(SELF));
  if (GIVEN(a[0]) && nd == 0 && PyTuple_Check(a[0])) {
    /* dim=() reduces everything, as PyTorch 1.13 does */
  }
  return pyct_wrap(ct_sum_dtype(SELF, nd, dims, keep, dt));
}
METHOD(mean) {
  ARGS("mean", 0, "dim", "keepdim", "*", "dtype");
  int64_t dims[CT_MAX_DIMS];
  int nd, dt;
  bool keep;
  if (!pyct_dims(a[0], dims, &nd, CT_MAX_DIMS, "dim") || !opt_bool(a[1], false, &keep) || !pyct_dtype_opt(a[2], &dt))
    return NULL;
  if (!GIVEN(a[0]) && !keep && dt < 0) return pyct_wrap(ct_mean(SELF));
  return pyct_wrap(ct_mean_dtype(SELF, nd, dims, keep, dt));
}
METHOD(prod) {
  ARGS("prod", 0, "dim", "keepdim", "*", "dtype");
  int64_t d;
  int dt;
  bool keep;
  if (!opt_i64(a[0], 0, &d, "dim") || !opt_bool(a[1], false, &keep) || !pyct_dtype_opt(a[2], &dt)) return NULL;
  return pyct_wrap(ct_prod_dtype(SELF, GIVEN(a[0]) ? &d : NULL, keep, dt));
}
METHOD(sum_to_size) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  if (!pyct_shape_varargs(args, 0, shape, &n)) return NULL;
  return pyct_wrap(ct_sum_to_size(SELF, n, shape));
}
FN(sum) FN(mean) FN(prod)

typedef ct_status (*pair_fn)(const ct_tensor *, int64_t, bool, ct_tensor **, ct_tensor **);
static PyObject *maxmin(PyObject *self, PyObject *args, PyObject *kwargs, int is_max) {
  const char *name = is_max ? "max" : "min";
  ARGS(name, 0, "dim", "keepdim");
  if (!a[0]) {
    if (a[1]) {
      PyErr_Format(PyExc_TypeError, "%s() received an invalid combination of arguments", name);
      return NULL;
    }
    return pyct_wrap(is_max ? ct_max(SELF) : ct_min(SELF));
  }
  if (pyct_is_tensor(a[0])) return pyct_wrap(is_max ? ct_maximum(SELF, TT(a[0])) : ct_minimum(SELF, TT(a[0])));
  int64_t d;
  bool keep;
  if (!pyct_int64(a[0], &d, "dim") || !opt_bool(a[1], false, &keep)) return NULL;
  ct_tensor *v = NULL, *i = NULL;
  ct_status st = is_max ? ct_max_dim(SELF, d, keep, &v, &i) : ct_min_dim(SELF, d, keep, &v, &i);
  if (st != CT_OK) return pyct_raise();
  return pyct_return_pair(name, v, i);
}
METHOD(max) { return maxmin(self, args, kwargs, 1); }
METHOD(min) { return maxmin(self, args, kwargs, 0); }
FN(max) FN(min)
#define AMAXMIN(name)                                                                  \
  METHOD(name) {                                                                       \
    ARGS(#name, 0, "dim", "keepdim");                                                  \
    int64_t dims[CT_MAX_DIMS];                                                         \
    int nd;                                                                            \
    bool keep;                                                                         \
    if (!pyct_dims(a[0], dims, &nd, CT_MAX_DIMS, "dim") || !opt_bool(a[1], false, &keep)) \
      return NULL;                                                                     \
    return pyct_wrap(ct_##name(SELF, nd, dims, keep));                                 \
  }                                                                                    \
  FN(name)
AMAXMIN(amax)
AMAXMIN(amin)
AMAXMIN(logsumexp)
#define ARGMAXMIN(name)                                                                \
  METHOD(name) {                                                                       \
    ARGS(#name, 0, "dim", "keepdim");                                                  \
    int64_t d;                                                                         \
    bool keep;                                                                         \
    if (!opt_i64(a[0], 0, &d, "dim") || !opt_bool(a[1], false, &keep)) return NULL;    \
    return pyct_wrap(ct_##name(SELF, GIVEN(a[0]) ? &d : NULL, keep));                  \
  }                                                                                    \
  FN(name)
ARGMAXMIN(argmax)
ARGMAXMIN(argmin)

/* var/std/var_mean/std_mean(dim, unbiased, keepdim) and (dim, *, correction, keepdim): one parser */
static PyObject *var_std(PyObject *self, PyObject *args, PyObject *kwargs, const char *name, int is_std,
                         int with_mean) {
  static const char *const kw[] = {"dim", "unbiased", "keepdim", "*", "correction", NULL};
  PyObject *a[5];
  if (!pyct_args(name, args, 0, kwargs, kw, 0, a)) return NULL;
  PyObject *dim = a[0], *unb = a[1];
  if (dim && PyBool_Check(dim)) { /* var(False): the unbiased flag */
    unb = dim;
    dim = NULL;
  }
  int64_t dims[CT_MAX_DIMS];
  int nd;
  bool keep;
  double corr = 1.0;
  if (!pyct_dims(dim, dims, &nd, CT_MAX_DIMS, "dim") || !opt_bool(a[2], false, &keep)) return NULL;
  if (GIVEN(unb)) {
    bool u;
    if (!pyct_bool(unb, &u)) return NULL;
    corr = u ? 1.0 : 0.0;
  }
  if (GIVEN(a[3]) && !pyct_double(a[3], &corr, "correction")) return NULL;
  if (!with_mean) return pyct_wrap((is_std ? ct_std : ct_var)(SELF, nd, dims, corr, keep));
  ct_tensor *o[2];
  if ((is_std ? ct_std_mean : ct_var_mean)(SELF, nd, dims, corr, keep, &o[0], &o[1]) != CT_OK) return pyct_raise();
  return pyct_tuple_of(2, o);
}
METHOD(var) { return var_std(self, args, kwargs, "var", 0, 0); }
METHOD(std) { return var_std(self, args, kwargs, "std", 1, 0); }
METHOD(var_mean) { return var_std(self, args, kwargs, "var_mean", 0, 1); }
METHOD(std_mean) { return var_std(self, args, kwargs, "std_mean", 1, 1); }
FN(var) FN(std) FN(var_mean) FN(std_mean)
METHOD(norm) {
  ARGS("norm", 0, "p", "dim", "keepdim", "dtype");
  int64_t dims[CT_MAX_DIMS];
  int nd, dt;
  bool keep;
  if (!pyct_dims(a[1], dims, &nd, CT_MAX_DIMS, "dim") || !opt_bool(a[2], false, &keep) || !pyct_dtype_opt(a[3], &dt))
    return NULL;
  if (!GIVEN(a[0]) || PyUnicode_Check(a[0])) {
    const char *p = GIVEN(a[0]) ? PyUnicode_AsUTF8(a[0]) : NULL;
    return pyct_wrap(ct_norm_str(SELF, p, nd, dims, keep));
  }
  double p;
  if (!pyct_double(a[0], &p, "p")) return NULL;
  if (dt >= 0) return pyct_wrap(ct_vector_norm(SELF, p, nd, dims, keep, dt));
  return pyct_wrap(ct_norm(SELF, p, nd, dims, keep));
}
FN(norm)
static PyObject *f_vector_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("linalg_vector_norm", 1, "x", "ord", "dim", "keepdim", "*", "dtype");
  ct_tensor *x = tensor_arg(a[0], "linalg_vector_norm", "x", 1);
  int64_t dims[CT_MAX_DIMS];
  int nd, dt;
  bool keep;
  double ord;
  if (!x || !opt_f64(a[1], 2.0, &ord, "ord") || !pyct_dims(a[2], dims, &nd, CT_MAX_DIMS, "dim") ||
      !opt_bool(a[3], false, &keep) || !pyct_dtype_opt(a[4], &dt))
    return NULL;
  return pyct_wrap(ct_vector_norm(x, ord, nd, dims, keep, dt));
}
#define ALLANY(name)                                                                 \
  METHOD(name) {                                                                     \
    ARGS(#name, 0, "dim", "keepdim");                                                \
    int64_t dims[CT_MAX_DIMS];                                                       \
    int nd;                                                                          \
    bool keep;                                                                       \
    if (!pyct_dims(a[0], dims, &nd, CT_MAX_DIMS, "dim") || !opt_bool(a[1], false, &keep)) \
      return NULL;                                                                   \
    if (!GIVEN(a[0])) return pyct_wrap(ct_##name(SELF));                             \
    return pyct_wrap(ct_##name##_dims(SELF, nd, dims, keep));                        \
  }                                                                                  \
  FN(name)
ALLANY(all)
ALLANY(any)
METHOD(count_nonzero) {
  ARGS("count_nonzero", 0, "dim");
  int64_t dims[CT_MAX_DIMS];
  int nd;
  if (!pyct_dims(a[0], dims, &nd, CT_MAX_DIMS, "dim")) return NULL;
  return pyct_wrap(ct_count_nonzero(SELF, nd, dims));
}
FN(count_nonzero)
#define CUM(name)                                                                      \
  METHOD(name) {                                                                       \
    ARGS(#name, 1, "dim", "*", "dtype");                                               \
    int64_t d;                                                                         \
    int dt;                                                                            \
    if (!pyct_int64(a[0], &d, "dim") || !pyct_dtype_opt(a[1], &dt)) return NULL;      \
    return pyct_wrap(ct_##name(SELF, d, dt));                                          \
  }                                                                                    \
  METHOD(name##_) {                                                                    \
    ARGS(#name "_", 1, "dim");                                                         \
    int64_t d;                                                                         \
    if (!pyct_int64(a[0], &d, "dim")) return NULL;                                     \
    return pyct_status(ct_##name##_(SELF, d), self);                                   \
  }                                                                                    \
  FN(name)
CUM(cumsum)
CUM(cumprod)
#define CUMPAIR(name)                                                                  \
  METHOD(name) {                                                                       \
    ARGS(#name, 1, "dim");                                                             \
    int64_t d;                                                                         \
    ct_tensor *v, *i;                                                                  \
    if (!pyct_int64(a[0], &d, "dim")) return NULL;                                     \
    if (ct_##name(SELF, d, &v, &i) != CT_OK) return pyct_raise();                      \
    return pyct_return_pair(#name, v, i);                                              \
  }                                                                                    \
  FN(name)
CUMPAIR(cummax)
CUMPAIR(cummin)
METHOD(sort) {
  ARGS("sort", 0, "dim", "descending", "*", "stable");
  int64_t d;
  bool desc, stable;
  ct_tensor *v, *i;
  PyObject *dim = a[0];
  if (dim && PyBool_Check(dim)) { /* sort(descending) positional form is rare; keep dim semantics */
  }
  if (!opt_i64(dim, -1, &d, "dim") || !opt_bool(a[1], false, &desc) || !opt_bool(a[2], false, &stable)) return NULL;
  if (ct_sort(SELF, d, desc, stable, &v, &i) != CT_OK) return pyct_raise();
  return pyct_return_pair("sort", v, i);
}
METHOD(argsort) {
  ARGS("argsort", 0, "dim", "descending", "stable");
  int64_t d;
  bool desc, stable;
  if (!opt_i64(a[0], -1, &d, "dim") || !opt_bool(a[1], false, &desc) || !opt_bool(a[2], false, &stable)) return NULL;
  return pyct_wrap(ct_argsort(SELF, d, desc, stable));
}
METHOD(msort) { NOARGS("msort"); return pyct_wrap(ct_msort(SELF)); }
METHOD(topk) {
  ARGS("topk", 1, "k", "dim", "largest", "sorted");
  int64_t k, d;
  bool largest, sorted;
  ct_tensor *v, *i;
  if (!pyct_int64(a[0], &k, "k") || !opt_i64(a[1], -1, &d, "dim") || !opt_bool(a[2], true, &largest) ||
      !opt_bool(a[3], true, &sorted))
    return NULL;
  if (ct_topk(SELF, k, d, largest, sorted, &v, &i) != CT_OK) return pyct_raise();
  return pyct_return_pair("topk", v, i);
}
METHOD(kthvalue) {
  ARGS("kthvalue", 1, "k", "dim", "keepdim");
  int64_t k, d;
  bool keep;
  ct_tensor *v, *i;
  if (!pyct_int64(a[0], &k, "k") || !opt_i64(a[1], -1, &d, "dim") || !opt_bool(a[2], false, &keep)) return NULL;
  if (ct_kthvalue(SELF, k, d, keep, &v, &i) != CT_OK) return pyct_raise();
  return pyct_return_pair("kthvalue", v, i);
}
#define MEDIAN(name)                                                                   \
  METHOD(name) {                                                                       \
    ARGS(#name, 0, "dim", "keepdim");                                                  \
    int64_t d;                                                                         \
    bool keep;                                                                         \
    ct_tensor *v, *i;                                                                  \
    if (!GIVEN(a[0])) return pyct_wrap(ct_##name(SELF));                               \
    if (!pyct_int64(a[0], &d, "dim") || !opt_bool(a[1], false, &keep)) return NULL;    \
    if (ct_##name##_dim(SELF, d, keep, &v, &i) != CT_OK) return pyct_raise();          \
    return pyct_return_pair(#name, v, i);                                              \
  }                                                                                    \
  FN(name)
MEDIAN(median)
MEDIAN(nanmedian)
METHOD(mode) {
  ARGS("mode", 0, "dim", "keepdim");
  int64_t d;
  bool keep;
  ct_tensor *v, *i;
  if (!opt_i64(a[0], -1, &d, "dim") || !opt_bool(a[1], false, &keep)) return NULL;
  if (ct_mode(SELF, d, keep, &v, &i) != CT_OK) return pyct_raise();
  return pyct_return_pair("mode", v, i);
}
/* unique(dim=...) and unique_consecutive are composed of C ops in ctorch/_unique.py */
static PyObject *call_unique_py(const char *fn, PyObject *self, PyObject *dim, bool ri, bool rc) {
  PyObject *mod = PyImport_ImportModule("ctorch._unique");
  if (!mod) return NULL;
  PyObject *r = PyObject_CallMethod(mod, fn, "OOOO", self, dim ? dim : Py_None, ri ? Py_True : Py_False,
                                    rc ? Py_True : Py_False);
  Py_DECREF(mod);
  return r;
}
METHOD(unique_consecutive) {
  ARGS("unique_consecutive", 0, "return_inverse", "return_counts", "dim");
  bool ri, rc;
  int64_t d;
  if (!opt_bool(a[0], false, &ri) || !opt_bool(a[1], false, &rc)) return NULL;
  if (GIVEN(a[2]) && !pyct_int64(a[2], &d, "dim")) return NULL;
  PyObject *mod = PyImport_ImportModule("ctorch._unique");
  if (!mod) return NULL;
  PyObject *r = PyObject_CallMethod(mod, "unique_consecutive", "OOOO", self, ri ? Py_True : Py_False,
                                    rc ? Py_True : Py_False, GIVEN(a[2]) ? a[2] : Py_None);
  Py_DECREF(mod);
  return r;
}
FN(unique_consecutive)
METHOD(unique) {
  ARGS("unique", 0, "sorted", "return_inverse", "return_counts", "dim");
  bool s, ri, rc;
  if (!opt_bool(a[0], true, &s) || !opt_bool(a[1], false, &ri) || !opt_bool(a[2], false, &rc)) return NULL;
  if (GIVEN(a[3])) {
    int64_t d;
    if (!pyct_int64(a[3], &d, "dim")) return NULL;
    return call_unique_py("unique_dim", self, a[3], ri, rc);
  }
  ct_tensor *o[3] = {NULL, NULL, NULL};
  if (ct_unique(SELF, s, ri, rc, &o[0], ri ? &o[1] : NULL, rc ? &o[2] : NULL) != CT_OK) return pyct_raise();
  if (!ri && !rc) return pyct_wrap(o[0]);
  if (ri && rc) return pyct_tuple_of(3, o);
  if (ri) return pyct_tuple_of(2, o);
  o[1] = o[2];
  return pyct_tuple_of(2, o);
}
FN(sort) FN(argsort) FN(msort) FN(topk) FN(kthvalue) FN(mode) FN(unique)

/* ---- views and shapes ---- */
METHOD(view) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  /* view(dtype) / view(dtype=...): the same bytes as another dtype */
  if (PyTuple_GET_SIZE(args) == 1 && PyObject_TypeCheck(PyTuple_GET_ITEM(args, 0), &Dtype_Type) &&
      !(kwargs && PyDict_GET_SIZE(kwargs)))
    return pyct_wrap(ct_view_dtype(SELF, ((DtypeObject *)PyTuple_GET_ITEM(args, 0))->dt));
  if (PyTuple_GET_SIZE(args) == 0 && kwargs && PyDict_GET_SIZE(kwargs) == 1) {
    PyObject *d = PyDict_GetItemString(kwargs, "dtype");
    if (d) {
      ct_dtype dt;
      if (!pyct_dtype_arg(d, &dt)) return NULL;
      return pyct_wrap(ct_view_dtype(SELF, dt));
    }
  }
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    PyObject *s = PyDict_GetItemString(kwargs, "size");
    if (!s || !pyct_shape_seq(s, shape, &n)) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "view() got an unexpected keyword argument");
      return NULL;
    }
  } else if (!pyct_shape_varargs(args, 0, shape, &n))
    return NULL;
  return pyct_wrap(ct_view(SELF, n, shape));
}
/* reshape that had to copy returns a view of ctorch's internal clone; PyTorch's copy
   (_unsafe_view of a clone) is no view, so drop that base (nothing else refers to it). */
static PyObject *wrap_reshape(const ct_tensor *x, ct_tensor *r) {
  if (r && r->base && !ct_shares_storage(r, x)) {
    ct_tensor *b = r->base;
    r->base = NULL;
    ct_unhold(b);
  }
  return pyct_wrap(r);
}
METHOD(reshape) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    PyObject *s = PyDict_GetItemString(kwargs, "shape");
    if (!s || !pyct_shape_seq(s, shape, &n)) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "reshape() got an unexpected keyword argument");
      return NULL;
    }
  } else if (!pyct_shape_varargs(args, 0, shape, &n))
    return NULL;
  return wrap_reshape(SELF, ct_reshape(SELF, n, shape));
}
FUNCTION(reshape) {
  ARGS("reshape", 2, "input", "shape");
  ct_tensor *x = tensor_arg(a[0], "reshape", "input", 1);
  int64_t shape[CT_MAX_DIMS];
  int n;
  if (!x || !pyct_shape_seq(a[1], shape, &n)) return NULL;
  return wrap_reshape(x, ct_reshape(x, n, shape));
}
#define AS_OTHER(name)                                                  \
  METHOD(name) {                                                        \
    ARGS(#name, 1, "other");                                            \
    ct_tensor *o = tensor_arg(a[0], #name, "other", 1);                 \
    if (!o) return NULL;                                                \
    return pyct_wrap(ct_##name(SELF, o));                               \
  }
AS_OTHER(view_as)
AS_OTHER(reshape_as)
AS_OTHER(expand_as)
METHOD(permute) {
  int64_t dims[CT_MAX_DIMS];
  int n;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    PyObject *s = PyDict_GetItemString(kwargs, "dims");
    if (!s || !pyct_shape_seq(s, dims, &n)) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "permute() got an unexpected keyword argument");
      return NULL;
    }
  } else if (!pyct_shape_varargs(args, 0, dims, &n))
    return NULL;
  return pyct_wrap(ct_permute(SELF, n, dims));
}
static PyObject *f_permute(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("permute", 2, "input", "dims");
  ct_tensor *x = tensor_arg(a[0], "permute", "input", 1);
  int64_t dims[CT_MAX_DIMS];
  int n;
  if (!x || !pyct_shape_seq(a[1], dims, &n)) return NULL;
  return pyct_wrap(ct_permute(x, n, dims));
}
METHOD(transpose) {
  ARGS("transpose", 2, "dim0", "dim1");
  int64_t d0, d1;
  if (!pyct_int64(a[0], &d0, "dim0") || !pyct_int64(a[1], &d1, "dim1")) return NULL;
  return pyct_wrap(ct_transpose(SELF, d0, d1));
}
METHOD(t) { NOARGS("t"); return pyct_wrap(ct_t(SELF)); }
METHOD(adjoint) { NOARGS("adjoint"); return pyct_wrap(ct_mT(SELF)); }
FN(transpose) FN(t) FN(adjoint)
METHOD(expand) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    PyObject *s = PyDict_GetItemString(kwargs, "size");
    if (!s) {
      /* expand(*sizes, implicit=False) */
      if (!pyct_shape_varargs(args, 0, shape, &n)) return NULL;
    } else if (!pyct_shape_seq(s, shape, &n))
      return NULL;
  } else if (!pyct_shape_varargs(args, 0, shape, &n))
    return NULL;
  return pyct_wrap(ct_expand(SELF, n, shape));
}
METHOD(broadcast_to) {
  ARGS("broadcast_to", 1, "size");
  int64_t shape[CT_MAX_DIMS];
  int n;
  if (!pyct_shape_seq(a[0], shape, &n)) return NULL;
  return pyct_wrap(ct_broadcast_to(SELF, n, shape));
}
FN(broadcast_to)
METHOD(squeeze) {
  ARGS("squeeze", 0, "dim");
  if (!GIVEN(a[0])) return pyct_wrap(ct_squeeze(SELF));
  int64_t d;
  if (!pyct_int64(a[0], &d, "dim")) return NULL;
  return pyct_wrap(ct_squeeze_dim(SELF, d));
}
METHOD(unsqueeze) {
  ARGS("unsqueeze", 1, "dim");
  int64_t d;
  if (!pyct_int64(a[0], &d, "dim")) return NULL;
  return pyct_wrap(ct_unsqueeze(SELF, d));
}
METHOD(flatten) {
  ARGS("flatten", 0, "start_dim", "end_dim");
  int64_t s, e;
  if (!opt_i64(a[0], 0, &s, "start_dim") || !opt_i64(a[1], -1, &e, "end_dim")) return NULL;
  return pyct_wrap(ct_flatten(SELF, s, e));
}
METHOD(ravel) { NOARGS("ravel"); return pyct_wrap(ct_flatten(SELF, 0, -1)); }
METHOD(unflatten) {
  ARGS("unflatten", 2, "dim", "sizes");
  int64_t d, sizes[CT_MAX_DIMS];
  int n;
  if (!pyct_int64(a[0], &d, "dim") || !pyct_shape_seq(a[1], sizes, &n)) return NULL;
  return pyct_wrap(ct_unflatten(SELF, d, n, sizes));
}
METHOD(narrow) {
  ARGS("narrow", 3, "dim", "start", "length");
  int64_t d, s, l;
  if (!pyct_int64(a[0], &d, "dim") || !pyct_int64(a[1], &s, "start") || !pyct_int64(a[2], &l, "length")) return NULL;
  return pyct_wrap(ct_narrow(SELF, d, s, l));
}
METHOD(select) {
  ARGS("select", 2, "dim", "index");
  int64_t d, i;
  if (!pyct_int64(a[0], &d, "dim") || !pyct_int64(a[1], &i, "index")) return NULL;
  return pyct_wrap(ct_select(SELF, d, i));
}
METHOD(diagonal) {
  ARGS("diagonal", 0, "offset", "dim1", "dim2");
  int64_t o, d1, d2;
  if (!opt_i64(a[0], 0, &o, "offset") || !opt_i64(a[1], 0, &d1, "dim1") || !opt_i64(a[2], 1, &d2, "dim2")) return NULL;
  return pyct_wrap(ct_diagonal(SELF, o, d1, d2));
}
METHOD(unfold) {
  ARGS("unfold", 3, "dimension", "size", "step");
  int64_t d, s, st;
  if (!pyct_int64(a[0], &d, "dimension") || !pyct_int64(a[1], &s, "size") || !pyct_int64(a[2], &st, "step"))
    return NULL;
  return pyct_wrap(ct_unfold(SELF, d, s, st));
}
METHOD(movedim) {
  ARGS("movedim", 2, "source", "destination");
  int64_t s[CT_MAX_DIMS], d[CT_MAX_DIMS];
  int ns, nd;
  if (!pyct_dims(a[0], s, &ns, CT_MAX_DIMS, "source") || !pyct_dims(a[1], d, &nd, CT_MAX_DIMS, "destination"))
    return NULL;
  if (ns != nd) {
    PyErr_Format(PyExc_RuntimeError,
                 "movedim: Invalid source or destination dims: source (%d dims) should contain the same number of "
                 "dims as destination (%d dims)",
                 ns, nd);
    return NULL;
  }
  return pyct_wrap(ct_movedim(SELF, ns, s, d));
}
METHOD(as_strided) {
  ARGS("as_strided", 2, "size", "stride", "storage_offset");
  int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS], off;
  int n1, n2;
  if (!pyct_shape_seq(a[0], sh, &n1) || !pyct_shape_seq(a[1], st, &n2) || !opt_i64(a[2], -1, &off, "storage_offset"))
    return NULL;
  if (n1 != n2) {
    PyErr_Format(PyExc_RuntimeError, "mismatch in length of strides and shape");
    return NULL;
  }
  return pyct_wrap(ct_as_strided(SELF, n1, sh, st, off));
}
FN(squeeze) FN(unsqueeze) FN(flatten) FN(ravel) FN(unflatten) FN(narrow) FN(select) FN(diagonal) FN(movedim)
FN(as_strided)
METHOD(contiguous) {
  /* PyTorch returns the tensor itself (the same Python object) when it is already contiguous */
  if (ct_is_contiguous(SELF)) {
    Py_INCREF(self);
    return self;
  }
  return pyct_wrap(ct_contiguous(SELF));
}
METHOD(clone) {
  ARGS("clone", 0, "*", "memory_format");
  /* ctorch tensors are always strided: any memory format gives the same copy, but it must be one */
  if (GIVEN(a[0]) && strcmp(Py_TYPE(a[0])->tp_name, "_Layout") != 0) {
    PyErr_Format(PyExc_TypeError, "clone(): argument 'memory_format' must be torch.memory_format, not %s",
                 Py_TYPE(a[0])->tp_name);
    return NULL;
  }
  return pyct_wrap(ct_clone(SELF));
}
METHOD(detach) { NOARGS("detach"); return pyct_wrap(ct_detach(SELF)); }
METHOD(detach_) {
  NOARGS("detach_");
  if (ct_is_view(SELF)) { /* PyTorch refuses every view, with or without a graph */
    PyErr_SetString(PyExc_RuntimeError,
                    "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) "
                    "for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and "
                    "hence detach_() cannot be called on these gradients. To fix this error, please refer to the "
                    "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.");
    return NULL;
  }
  return pyct_status(ct_detach_(SELF), self);
}
FN(clone) FN(detach)

/* ---- conversions ---- */
static PyObject *to_dtype(PyObject *self, ct_dtype dt, bool copy) {
  if (!copy && ct_tensor_dtype(SELF) == dt) {
    Py_INCREF(self);
    return self;
  }
  if (copy && ct_tensor_dtype(SELF) == dt) return pyct_wrap(ct_clone(SELF));
  return pyct_wrap(ct_to_dtype(SELF, dt));
}
METHOD(to) {
  /* to(dtype) / to(device, dtype=None) / to(other) / to(dtype=..., device=...), copy=, non_blocking= */
  static const char *const kw[] = {"a0", "a1", "a2", "a3", "*", "dtype", "device", "copy", "non_blocking",
                                   "memory_format", NULL};
  PyObject *a[10];
  if (!pyct_args("to", args, 0, kwargs, kw, 0, a)) return NULL;
  PyObject *dtype = a[4], *device = a[5];
  bool copy = false;
  if (GIVEN(a[6]) && !pyct_bool(a[6], &copy)) return NULL;
  /* positional copy= follows non_blocking: to(device, dtype, nb, copy) or to(dtype|tensor, nb, copy) */
  int copy_pos = 2;
  for (int i = 0; i < 4; i++) {
    PyObject *x = a[i];
    if (!x) break;
    if (pyct_refuse_unsupported(x)) return NULL; /* torch.complex64 and the like */
    if (i >= 1 && copy_pos == 2 && !PyBool_Check(x)) {
      /* to(dtype|tensor, non_blocking, copy): only bools follow; the parser hook words the error */
      PyErr_SetString(PyExc_TypeError, "to(): invalid combination of arguments");
      return NULL;
    }
    if (PyObject_TypeCheck(x, &Dtype_Type))
      dtype = x;
    else if (pyct_is_tensor(x))
      dtype = pyct_dtype_obj(ct_tensor_dtype(TT(x)));
    else if (i == 0 && PyBool_Check(x))
      dtype = pyct_dtype_obj(CT_BOOL); /* PyTorch 1.13's parser reads a leading bool as torch.bool */
    else if (i == 0 && !PyIndex_Check(x) && Py_TYPE(x)->tp_as_number && Py_TYPE(x)->tp_as_number->nb_float)
      dtype = pyct_dtype_obj(CT_FLOAT64); /* ... and a leading float (1.5, np.float32) as torch.float64 */
    else if (PyBool_Check(x)) {
      if (i == copy_pos && x == Py_True) copy = true;
    } else if (x != Py_None) {
      device = x;
      if (i == 0) copy_pos = 3;
    }
  }
  ct_device dev = ct_tensor_device(SELF);
  if (GIVEN(device) && !pyct_device_arg(device, &dev)) return NULL;
  ct_device cur = ct_tensor_device(SELF);
  if (dev.type != cur.type || dev.index != cur.index) {
    /* another device: the move is the copy (differentiable: ToCopyBackward0), then the dtype */
    ct_tensor *moved = ct_to_device(SELF, dev);
    if (!moved) return pyct_raise();
    PyObject *m = pyct_wrap(moved);
    if (!m || !GIVEN(dtype)) return m;
    ct_dtype dt2;
    if (!pyct_dtype_arg(dtype, &dt2)) {
      Py_DECREF(m);
      return NULL;
    }
    PyObject *r = to_dtype(m, dt2, false);
    Py_DECREF(m);
    return r;
  }
  if (!GIVEN(dtype)) {
    if (copy) return pyct_wrap(ct_clone(SELF));
    Py_INCREF(self);
    return self;
  }
  ct_dtype dt;
  if (!pyct_dtype_arg(dtype, &dt)) return NULL;
  return to_dtype(self, dt, copy);
}
#define CONV(name, dt)                                                     \
  METHOD(name) {                                                           \
    ARGS(#name, 0, "memory_format");                                       \
    return to_dtype(self, dt, false);                                      \
  }
CONV(float, CT_FLOAT32)
CONV(double, CT_FLOAT64)
CONV(half, CT_FLOAT16)
CONV(bfloat16, CT_BFLOAT16)
CONV(char, CT_INT8)
CONV(byte, CT_UINT8)
CONV(short, CT_INT16)
CONV(int, CT_INT32)
CONV(long, CT_INT64)
CONV(to_bool, CT_BOOL)
METHOD(type_as) {
  ARGS("type_as", 1, "other");
  ct_tensor *o = tensor_arg(a[0], "type_as", "other", 1);
  if (!o) return NULL;
  return to_dtype(self, ct_tensor_dtype(o), false);
}
static PyObject *to_device_obj(PyObject *self, ct_device dev) {
  ct_device cur = ct_tensor_device(SELF);
  if (cur.type == dev.type && cur.index == dev.index) {
    Py_INCREF(self);
    return self;
  }
  return pyct_wrap(ct_to_device(SELF, dev));
}
METHOD(cpu) {
  ARGS("cpu", 0, "memory_format");
  return to_device_obj(self, ct_cpu());
}
/* cuda(device=None, non_blocking=False, memory_format=...): device None = cuda:0 */
METHOD(cuda) {
  ARGS("cuda", 0, "device", "non_blocking", "memory_format");
  ct_device dev;
  PyObject *d = GIVEN(a[0]) ? a[0] : NULL;
  PyObject *dflt = NULL;
  if (!d) d = dflt = PyUnicode_FromString("cuda");
  if (!d) return NULL;
  int ok = pyct_device_arg(d, &dev);
  Py_XDECREF(dflt);
  if (!ok) return NULL;
  if (dev.type != CT_DEVICE_CUDA) {
    PyErr_Format(PyExc_RuntimeError, "Invalid device, must be cuda device");
    return NULL;
  }
  return to_device_obj(self, dev);
}

/* ---- in-place fills and copies ---- */
METHOD(fill_) {
  ARGS("fill_", 1, "value");
  if (pyct_is_tensor(a[0]) && ct_ndim(TT(a[0])) != 0) {
    PyErr_Format(PyExc_RuntimeError,
                 "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.",
                 ct_ndim(TT(a[0])));
    return NULL;
  }
  ct_scalar s;
  if (!pyct_scalar(a[0], &s)) return NULL;
  return pyct_status(ct_fill_(SELF, s), self);
}
METHOD(zero_) { NOARGS("zero_"); return pyct_status(ct_zero_(SELF), self); }
METHOD(copy_) {
  ARGS("copy_", 1, "src", "non_blocking");
  ct_tensor *s = tensor_arg(a[0], "copy_", "src", 1);
  if (!s) return NULL;
  return pyct_status(ct_copy_(SELF, s), self);
}
METHOD(requires_grad_) {
  ARGS("requires_grad_", 0, "requires_grad");
  bool b;
  if (!opt_bool(a[0], true, &b)) return NULL;
  if (b && !ct_dtype_is_floating(ct_tensor_dtype(SELF))) { /* PyTorch words the method's error differently */
    PyErr_SetString(PyExc_RuntimeError, "only Tensors of floating point dtype can require gradients");
    return NULL;
  }
  return pyct_status(ct_requires_grad_(SELF, b), self);
}
METHOD(retain_grad) { NOARGS("retain_grad"); return pyct_status(ct_retain_grad(SELF), NULL); }

/* ---- tables (the rest of the ops live in ops2.c) ---- */
#define UNARY_MDEFS(name) MDEF(name), MDEF(name##_),
#define UNARY_FDEFS(name) FDEF(name),
#define BIN_MDEFS(name, ...) MDEF(name), MDEF(name##_),
#define BIN_FDEFS(name, ...) FDEF(name),

PyMethodDef pyct_ops1_methods[] = {
  UNARY_LIST(UNARY_MDEFS)
  BIN_LIST(BIN_MDEFS)
  MDEF_AS("absolute", abs), MDEF_AS("negative", neg), MDEF_AS("arcsin", asin), MDEF_AS("arccos", acos),
  MDEF_AS("arctan", atan), MDEF_AS("arcsinh", asinh), MDEF_AS("arccosh", acosh), MDEF_AS("arctanh", atanh),
  MDEF_AS("fix", trunc), MDEF_AS("multiply", mul), MDEF_AS("multiply_", mul_), MDEF_AS("greater", gt),
  MDEF_AS("greater_equal", ge), MDEF_AS("less", lt), MDEF_AS("less_equal", le), MDEF_AS("not_equal", ne),
  MDEF_AS("arctan2", atan2),
  MDEF(isnan), MDEF(isinf), MDEF(isfinite), MDEF(softsign), MDEF(round), MDEF(round_), MDEF(logit), MDEF(polygamma),
  MDEF(nan_to_num), MDEF(clamp), MDEF(clamp_), MDEF(clip), MDEF(clip_), MDEF(clamp_min),
  MDEF(clamp_max), MDEF(add), MDEF(add_), MDEF(sub), MDEF(sub_), MDEF_AS("subtract", sub), MDEF(div), MDEF(div_),
  MDEF_AS("divide", div), MDEF_AS("true_divide", div), MDEF(pow), MDEF(pow_), MDEF(isclose), MDEF(allclose),
  MDEF(equal), MDEF(lerp), MDEF(lerp_), MDEF(addcmul), MDEF(addcmul_), MDEF(addcdiv), MDEF(addcdiv_), MDEF(where),
  MDEF(sum), MDEF(mean), MDEF(prod), MDEF(sum_to_size), MDEF(max), MDEF(min), MDEF(amax), MDEF(amin),
  MDEF(logsumexp), MDEF(argmax), MDEF(argmin), MDEF(var), MDEF(std), MDEF(norm), MDEF(all), MDEF(any),
  MDEF(count_nonzero), MDEF(cumsum), MDEF(cumsum_), MDEF(cumprod), MDEF(cumprod_), MDEF(cummax), MDEF(cummin),
  MDEF(sort), MDEF(argsort), MDEF(msort), MDEF(topk), MDEF(kthvalue), MDEF(median), MDEF(nanmedian), MDEF(mode),
  MDEF(unique), MDEF(unique_consecutive), MDEF(view), MDEF(reshape), MDEF(view_as), MDEF(reshape_as), MDEF(expand_as), MDEF(permute),
  MDEF(transpose), MDEF_AS("swapaxes", transpose), MDEF_AS("swapdims", transpose), MDEF(t), MDEF(adjoint),
  MDEF(expand), MDEF(broadcast_to), MDEF(squeeze), MDEF(unsqueeze), MDEF(flatten), MDEF(ravel), MDEF(unflatten),
  MDEF(narrow), MDEF(select), MDEF(diagonal), MDEF(unfold), MDEF(movedim), MDEF_AS("moveaxis", movedim),
  MDEF(as_strided), MDEF(contiguous), MDEF(clone), MDEF(detach), MDEF(detach_), MDEF(to), MDEF(float), MDEF(double),
  MDEF(half), MDEF(bfloat16), MDEF(char), MDEF(byte), MDEF(short), MDEF(int), MDEF(long), MDEF_AS("bool", to_bool), MDEF(type_as),
  MDEF(cpu), MDEF(cuda), MDEF(fill_), MDEF(zero_), MDEF(copy_), MDEF(requires_grad_), MDEF(retain_grad),
  {NULL}};

PyMethodDef pyct_ops1_functions[] = {
  UNARY_LIST(UNARY_FDEFS)
  BIN_LIST(BIN_FDEFS)
  FDEF_AS("absolute", abs), FDEF_AS("negative", neg), FDEF_AS("arcsin", asin), FDEF_AS("arccos", acos),
  FDEF_AS("arctan", atan), FDEF_AS("arcsinh", asinh), FDEF_AS("arccosh", acosh), FDEF_AS("arctanh", atanh),
  FDEF_AS("fix", trunc), FDEF_AS("multiply", mul), FDEF_AS("greater", gt), FDEF_AS("greater_equal", ge),
  FDEF_AS("less", lt), FDEF_AS("less_equal", le), FDEF_AS("not_equal", ne), FDEF_AS("arctan2", atan2),
  FDEF(isnan), FDEF(isinf), FDEF(isfinite), FDEF(round), FDEF(logit), FDEF(polygamma), FDEF(nan_to_num), FDEF(clamp),
  FDEF(clip), FDEF(clamp_min), FDEF(clamp_max), FDEF(add), FDEF(sub), FDEF_AS("subtract", sub), FDEF(rsub),
  FDEF(div), FDEF_AS("divide", div), FDEF_AS("true_divide", div), FDEF(pow), FDEF(isclose), FDEF(allclose),
  FDEF(equal), FDEF(lerp), FDEF(addcmul), FDEF(addcdiv), FDEF(where), FDEF(sum), FDEF(mean), FDEF(prod), FDEF(max),
  FDEF(min), FDEF(amax), FDEF(amin), FDEF(logsumexp), FDEF(argmax), FDEF(argmin), FDEF(var), FDEF(std),
  FDEF(var_mean), FDEF(std_mean), FDEF(norm), FDEF(all), FDEF(any), FDEF(count_nonzero), FDEF(cumsum), FDEF(cumprod),
  FDEF(cummax), FDEF(cummin), FDEF(sort), FDEF(argsort), FDEF(msort), FDEF(topk), FDEF(kthvalue), FDEF(median),
  FDEF(nanmedian), FDEF(mode), FDEF(unique), FDEF(unique_consecutive), FDEF(reshape), FDEF(permute), FDEF(transpose),
  FDEF_AS("swapaxes", transpose), FDEF_AS("swapdims", transpose), FDEF(t), FDEF(adjoint), FDEF(broadcast_to),
  FDEF(squeeze), FDEF(unsqueeze), FDEF(flatten), FDEF(ravel), FDEF(unflatten), FDEF(narrow), FDEF(select),
  FDEF(diagonal), FDEF(movedim), FDEF_AS("moveaxis", movedim), FDEF(as_strided), FDEF(clone), FDEF(detach),
  FDEF_AS("_vector_norm", vector_norm),
  {NULL}};
