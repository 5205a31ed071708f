/* ctorch._C._TensorBase: the C half of ctorch.Tensor (properties, operators, indexing). */
#include "pyct.h"
#include "core/internal.h" /* struct ct_tensor: the storage's size */
#include <string.h>

extern ct_tensor *ct_wrap_scalar(ct_scalar s);

static void tensor_dealloc(TensorObject *self) {
  Py_CLEAR(self->grad_cache);
  Py_CLEAR(self->base_obj);
  ct_release(self->t);
  self->t = NULL;
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Tensor(*sizes) / Tensor(sequence): the legacy constructor (default dtype). */
static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  ct_tensor *t;
  if (n == 0) {
    int64_t z = 0;
    t = ct_empty(1, &z, ct_opts());
  } else if (n == 1 && pyct_is_tensor(PyTuple_GET_ITEM(args, 0))) {
    t = ct_alias(TT(PyTuple_GET_ITEM(args, 0)));
  } else if (n == 1 && !PyLong_Check(PyTuple_GET_ITEM(args, 0))) {
    t = pyct_from_data(PyTuple_GET_ITEM(args, 0), ct_get_default_dtype(), NULL);
    if (!t) return NULL;
  } else {
    int64_t shape[CT_MAX_DIMS];
    int nd;
    if (!pyct_shape_varargs(args, 0, shape, &nd)) return NULL;
    t = ct_empty(nd, shape, ct_opts());
  }
  if (!t) return pyct_raise();
  TensorObject *o = (TensorObject *)type->tp_alloc(type, 0);
  if (!o) {
    ct_release(t);
    return NULL;
  }
  o->t = t;
  return (PyObject *)o;
}

/* Tensor._make_subclass(cls, data, require_grad): nn.Parameter's constructor. */
static PyObject *tensor_make_subclass(PyObject *unused, PyObject *args, PyObject *kwargs) {
  static const char *const kw[] = {"cls", "data", "require_grad", NULL};
  PyObject *a[3];
  if (!pyct_args("_make_subclass", args, 0, kwargs, kw, 2, a)) return NULL;
  if (!PyType_Check(a[0]) || !PyType_IsSubtype((PyTypeObject *)a[0], &TensorBase_Type)) {
    PyErr_SetString(PyExc_TypeError, "cls must be a Tensor subclass");
    return NULL;
  }
  if (!pyct_is_tensor(a[1])) {
    PyErr_Format(PyExc_TypeError, "_make_subclass(): argument 'data' must be Tensor, not %s", Py_TYPE(a[1])->tp_name);
    return NULL;
  }
  bool rg = false;
  if (a[2] && !pyct_bool(a[2], &rg)) return NULL;
  ct_tensor *t = ct_detach(TT(a[1]));
  if (!t) return pyct_raise();
  if (rg && ct_requires_grad_(t, true) != CT_OK) {
    ct_release(t);
    return pyct_raise();
  }
  return pyct_wrap_as((PyTypeObject *)a[0], t);
}

/* ---- properties ---- */
static PyObject *get_shape(TensorObject *s, void *c) { return pyct_make_size(ct_ndim(s->t), ct_shape(s->t)); }
static PyObject *get_dtype(TensorObject *s, void *c) {
  PyObject *d = pyct_dtype_obj(ct_tensor_dtype(s->t));
  Py_INCREF(d);
  return d;
}
static PyObject *get_ndim(TensorObject *s, void *c) { return PyLong_FromLong(ct_ndim(s->t)); }
static PyObject *get_requires_grad(TensorObject *s, void *c) { return PyBool_FromLong(ct_requires_grad(s->t)); }
static int set_requires_grad(TensorObject *s, PyObject *v, void *c) {
  bool b;
  if (!v) {
    PyErr_SetString(PyExc_TypeError, "can't delete requires_grad");
    return -1;
  }
  if (!PyBool_Check(v)) {
    PyErr_SetString(PyExc_TypeError, "requires_grad must be a bool");
    return -1;
  }
  b = v == Py_True;
  if (ct_requires_grad_(s->t, b) != CT_OK) {
    pyct_raise();
    return -1;
  }
  return 0;
}
static PyObject *get_is_leaf(TensorObject *s, void *c) { return PyBool_FromLong(ct_is_leaf(s->t)); }
static PyObject *get_grad(TensorObject *s, void *c) {
  ct_tensor *g = ct_grad(s->t);
  if (!g) Py_RETURN_NONE;
  if (s->grad_cache && TT(s->grad_cache) == g) {
    Py_INCREF(s->grad_cache);
    return s->grad_cache;
  }
  PyObject *w = pyct_wrap(ct_retain(g));
  if (!w) return NULL;
  Py_XSETREF(s->grad_cache, w);
  Py_INCREF(w);
  return w;
}
static int set_grad(TensorObject *s, PyObject *v, void *c) {
  ct_tensor *g = NULL;
  if (v && v != Py_None) {
    if (!pyct_is_tensor(v)) {
      /* PyTorch's wording, without a space before the type name */
      PyErr_Format(PyExc_TypeError, "assigned grad expected to be a Tensor or None but got grad of type%s",
                   Py_TYPE(v)->tp_name);
      return -1;
    }
    g = TT(v);
    if (ct_tensor_dtype(g) != ct_tensor_dtype(s->t)) {
      PyErr_SetString(PyExc_RuntimeError, "assigned grad has data of a different type");
      return -1;
    }
    int nd = ct_ndim(g);
    if (nd != ct_ndim(s->t) || memcmp(ct_shape(g), ct_shape(s->t), sizeof(int64_t) * nd) != 0) {
      PyErr_SetString(PyExc_RuntimeError, "assigned grad has data of a different size");
      return -1;
    }
  }
  if (ct_set_grad(s->t, g) != CT_OK) {
    pyct_raise();
    return -1;
  }
  Py_CLEAR(s->grad_cache);
  if (v && v != Py_None) {
    Py_INCREF(v);
    s->grad_cache = v;
  }
  return 0;
}
/* a new alias with its own version counter each time, as PyTorch's .data */
static PyObject *get_data(TensorObject *s, void *c) { return pyct_wrap(ct_data_alias(s->t)); }
static int set_data(TensorObject *s, PyObject *v, void *c) {
  if (!v) {
    PyErr_SetString(PyExc_RuntimeError, "Deleting tensor data is not allowed. Delete tensor instead!");
    return -1;
  }
  if (!pyct_is_tensor(v)) {
    PyErr_Format(PyExc_TypeError, "Variable data has to be a tensor, but got %s", v ? Py_TYPE(v)->tp_name : "NoneType");
    return -1;
  }
  ct_tensor *n = ct_detach(TT(v));
  if (!n) {
    pyct_raise();
    return -1;
  }
  bool rg = ct_is_leaf(s->t) && ct_requires_grad(s->t);
  if (rg && ct_dtype_is_floating(ct_tensor_dtype(n))) ct_requires_grad_(n, true);
  ct_tensor *g = ct_grad(s->t);
  if (g && ct_ndim(g) == ct_ndim(n) && memcmp(ct_shape(g), ct_shape(n), sizeof(int64_t) * ct_ndim(n)) == 0)
    ct_set_grad(n, g);
  ct_release(s->t);
  s->t = n;
  return 0;
}
static PyObject *get_T(TensorObject *s, void *c) {
  int nd = ct_ndim(s->t);
  int64_t dims[CT_MAX_DIMS];
  for (int i = 0; i < nd; i++) dims[i] = nd - 1 - i;
  return pyct_link_base((PyObject *)s, pyct_wrap(ct_permute(s->t, nd, dims)));
}
static PyObject *get_mT(TensorObject *s, void *c) { return pyct_link_base((PyObject *)s, pyct_wrap(ct_mT(s->t))); }
static PyObject *get_version(TensorObject *s, void *c) { return PyLong_FromUnsignedLongLong(ct_version(s->t)); }
static PyObject *get_grad_fn_name(TensorObject *s, void *c) {
  const char *n = ct_grad_fn_name(s->t);
  if (!n) Py_RETURN_NONE;
  return PyUnicode_FromString(n);
}
static PyObject *get_false(TensorObject *s, void *c) { Py_RETURN_FALSE; }
static PyObject *get_retains_grad(TensorObject *s, void *c) {
  return PyBool_FromLong(!ct_is_leaf(s->t) && s->t->retains_grad);
}
static PyObject *get_is_cpu(TensorObject *s, void *c) {
  return PyBool_FromLong(ct_tensor_device(s->t).type == CT_DEVICE_CPU);
}
static PyObject *get_is_cuda(TensorObject *s, void *c) {
  return PyBool_FromLong(ct_tensor_device(s->t).type == CT_DEVICE_CUDA);
}
/* "cpu" or "cuda:N" (Tensor.device builds its torch.device from this) */
static PyObject *get_device_str(TensorObject *s, void *c) {
  ct_device d = ct_tensor_device(s->t);
  if (d.type == CT_DEVICE_CPU) return PyUnicode_FromString("cpu");
  return PyUnicode_FromFormat("%s:%d", ct_device_type_name(d.type), d.index);
}
static PyObject *get_base(TensorObject *s, void *c) {
  ct_tensor *b = ct_view_base(s->t);
  if (!b) Py_RETURN_NONE;
  if (s->base_obj && TT(s->base_obj) == b) {
    Py_INCREF(s->base_obj);
    return s->base_obj;
  }
  return pyct_wrap(ct_retain(b));
}
static PyObject *get_ptr(TensorObject *s, void *c) { return PyLong_FromVoidPtr(ct_data_ptr(s->t)); }
/* bytes of the whole storage under the tensor (untyped_storage().nbytes()), not only the view's extent */
static PyObject *get_storage_nbytes(TensorObject *s, void *c) {
  return PyLong_FromSize_t(s->t->storage ? s->t->storage->nbytes : 0);
}
static PyObject *get_handle(TensorObject *s, void *c) { return PyLong_FromVoidPtr(s->t); }

static PyGetSetDef tensor_getset[] = {
  {"shape", (getter)get_shape, NULL, NULL, NULL},
  {"dtype", (getter)get_dtype, NULL, NULL, NULL},
  {"ndim", (getter)get_ndim, NULL, NULL, NULL},
  {"requires_grad", (getter)get_requires_grad, (setter)set_requires_grad, NULL, NULL},
  {"is_leaf", (getter)get_is_leaf, NULL, NULL, NULL},
  {"retains_grad", (getter)get_retains_grad, NULL, NULL, NULL},
  {"grad", (getter)get_grad, (setter)set_grad, NULL, NULL},
  {"data", (getter)get_data, (setter)set_data, NULL, NULL},
  {"T", (getter)get_T, NULL, NULL, NULL},
  {"mT", (getter)get_mT, NULL, NULL, NULL},
  {"_version", (getter)get_version, NULL, NULL, NULL},
  {"_grad_fn_name", (getter)get_grad_fn_name, NULL, NULL, NULL},
  {"is_cuda", (getter)get_is_cuda, NULL, NULL, NULL},
  {"_device_str", (getter)get_device_str, NULL, NULL, NULL},
  {"is_sparse", (getter)get_false, NULL, NULL, NULL},
  {"is_quantized", (getter)get_false, NULL, NULL, NULL},
  {"is_meta", (getter)get_false, NULL, NULL, NULL},
  {"is_mps", (getter)get_false, NULL, NULL, NULL},
  {"is_cpu", (getter)get_is_cpu, NULL, NULL, NULL},
  {"_base", (getter)get_base, NULL, NULL, NULL},
  {"_ptr", (getter)get_ptr, NULL, NULL, NULL},
  {"_storage_bytes", (getter)get_storage_nbytes, NULL, NULL, NULL},
  {"_handle", (getter)get_handle, NULL, NULL, NULL},
  {NULL}};

/* ---- number protocol ---- */
typedef ct_tensor *(*bin_tt)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*bin_ts)(const ct_tensor *, ct_scalar);
typedef ct_status (*bin_tt_)(ct_tensor *, const ct_tensor *);
typedef ct_status (*bin_ts_)(ct_tensor *, ct_scalar);

static PyObject *binop(PyObject *a, PyObject *b, bin_tt tt, bin_ts ts, int commutative, bin_ts rts) {
  if (pyct_is_tensor(a)) {
    if (pyct_is_tensor(b)) return pyct_wrap(tt(TT(a), TT(b)));
    if (!pyct_is_number(b)) Py_RETURN_NOTIMPLEMENTED;
    ct_scalar s;
    if (!pyct_scalar(b, &s)) return NULL;
    if (ts) return pyct_wrap(ts(TT(a), s));
    ct_tensor *w = ct_wrap_scalar(s);
    if (!w) return pyct_raise();
    ct_tensor *r = tt(TT(a), w);
    ct_release(w);
    return pyct_wrap(r);
  }
  /* reflected: number OP tensor */
  if (!pyct_is_tensor(b) || !pyct_is_number(a)) Py_RETURN_NOTIMPLEMENTED;
  ct_scalar s;
  if (!pyct_scalar(a, &s)) return NULL;
  if (commutative && ts) return pyct_wrap(ts(TT(b), s));
  if (rts) return pyct_wrap(rts(TT(b), s));
  ct_tensor *w = ct_wrap_scalar(s);
  if (!w) return pyct_raise();
  ct_tensor *r = tt(w, TT(b));
  ct_release(w);
  return pyct_wrap(r);
}

static PyObject *inplace(PyObject *a, PyObject *b, bin_tt_ tt, bin_ts_ ts) {
  if (!pyct_is_tensor(a)) Py_RETURN_NOTIMPLEMENTED;
  ct_status st;
  if (pyct_is_tensor(b))
    st = tt(TT(a), TT(b));
  else if (pyct_is_number(b)) {
    ct_scalar s;
    if (!pyct_scalar(b, &s)) return NULL;
    if (ts)
      st = ts(TT(a), s);
    else {
      ct_tensor *w = ct_wrap_scalar(s);
      if (!w) return pyct_raise();
      st = tt(TT(a), w);
      ct_release(w);
    }
  } else
    Py_RETURN_NOTIMPLEMENTED;
  return pyct_status(st, a);
}

static ct_tensor *rsub_s(const ct_tensor *t, ct_scalar s) { return ct_rsub_scalar(t, s); }
static ct_tensor *rpow_s(const ct_tensor *t, ct_scalar s) { return ct_pow_scalar_tensor(s, t); }
/* number / tensor is reciprocal(tensor) * number in PyTorch (Tensor.__rdiv__): the same two
   roundings (visible in bfloat16) and the same MulBackward0 node. */
static ct_tensor *rdiv_s(const ct_tensor *t, ct_scalar s) {
  ct_tensor *r = ct_reciprocal(t);
  if (!r) return NULL;
  ct_tensor *out = ct_mul_scalar(r, s);
  ct_release(r);
  return out;
}

static PyObject *nb_add(PyObject *a, PyObject *b) { return binop(a, b, ct_add, ct_add_scalar, 1, NULL); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return binop(a, b, ct_sub, ct_sub_scalar, 0, rsub_s); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return binop(a, b, ct_mul, ct_mul_scalar, 1, NULL); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return binop(a, b, ct_div, ct_div_scalar, 0, rdiv_s); }
static PyObject *nb_floordiv(PyObject *a, PyObject *b) {
  return binop(a, b, ct_floor_divide, ct_floor_divide_scalar, 0, NULL);
}
static PyObject *nb_mod(PyObject *a, PyObject *b) { return binop(a, b, ct_remainder, ct_remainder_scalar, 0, NULL); }
static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *m) {
  if (m != Py_None) Py_RETURN_NOTIMPLEMENTED;
  return binop(a, b, ct_pow, ct_pow_scalar, 0, rpow_s);
}
static PyObject *nb_and(PyObject *a, PyObject *b) { return binop(a, b, ct_bitwise_and, ct_bitwise_and_scalar, 1, NULL); }
static PyObject *nb_or(PyObject *a, PyObject *b) { return binop(a, b, ct_bitwise_or, ct_bitwise_or_scalar, 1, NULL); }
static PyObject *nb_xor(PyObject *a, PyObject *b) { return binop(a, b, ct_bitwise_xor, ct_bitwise_xor_scalar, 1, NULL); }
static PyObject *nb_lshift(PyObject *a, PyObject *b) {
  return binop(a, b, ct_bitwise_left_shift, ct_bitwise_left_shift_scalar, 0, NULL);
}
static PyObject *nb_rshift(PyObject *a, PyObject *b) {
  return binop(a, b, ct_bitwise_right_shift, ct_bitwise_right_shift_scalar, 0, NULL);
}
static PyObject *nb_matmul(PyObject *a, PyObject *b) {
  if (!pyct_is_tensor(a) || !pyct_is_tensor(b)) Py_RETURN_NOTIMPLEMENTED;
  return pyct_wrap(ct_matmul(TT(a), TT(b)));
}
static PyObject *nb_iadd(PyObject *a, PyObject *b) { return inplace(a, b, ct_add_, ct_add_scalar_); }
static PyObject *nb_isub(PyObject *a, PyObject *b) { return inplace(a, b, ct_sub_, ct_sub_scalar_); }
static PyObject *nb_imul(PyObject *a, PyObject *b) { return inplace(a, b, ct_mul_, ct_mul_scalar_); }
static PyObject *nb_idiv(PyObject *a, PyObject *b) { return inplace(a, b, ct_div_, ct_div_scalar_); }
static PyObject *nb_ifloordiv(PyObject *a, PyObject *b) {
  return inplace(a, b, ct_floor_divide_, ct_floor_divide_scalar_);
}
static PyObject *nb_imod(PyObject *a, PyObject *b) { return inplace(a, b, ct_remainder_, ct_remainder_scalar_); }
static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *m) { return inplace(a, b, ct_pow_, ct_pow_scalar_); }
static PyObject *nb_iand(PyObject *a, PyObject *b) { return inplace(a, b, ct_bitwise_and_, ct_bitwise_and_scalar_); }
static PyObject *nb_ior(PyObject *a, PyObject *b) { return inplace(a, b, ct_bitwise_or_, ct_bitwise_or_scalar_); }
static PyObject *nb_ixor(PyObject *a, PyObject *b) { return inplace(a, b, ct_bitwise_xor_, ct_bitwise_xor_scalar_); }
static PyObject *nb_ilshift(PyObject *a, PyObject *b) {
  return inplace(a, b, ct_bitwise_left_shift_, ct_bitwise_left_shift_scalar_);
}
static PyObject *nb_irshift(PyObject *a, PyObject *b) {
  return inplace(a, b, ct_bitwise_right_shift_, ct_bitwise_right_shift_scalar_);
}
static PyObject *nb_imatmul(PyObject *a, PyObject *b) {
  PyErr_SetString(PyExc_RuntimeError, "In-place matmul is not supported. Use 'a = a @ b' instead of 'a @= b'.");
  return NULL;
}
static PyObject *nb_neg(PyObject *a) { return pyct_wrap(ct_neg(TT(a))); }
static PyObject *nb_pos(PyObject *a) {
  if (ct_tensor_dtype(TT(a)) == CT_BOOL) {
    PyErr_SetString(PyExc_RuntimeError, "The `+` operator, on a bool tensor is not supported.");
    return NULL;
  }
  Py_INCREF(a);
  return a;
}
static PyObject *nb_abs(PyObject *a) { return pyct_wrap(ct_abs(TT(a))); }
static PyObject *nb_invert(PyObject *a) {
  if (ct_dtype_is_floating(ct_tensor_dtype(TT(a)))) {
    PyErr_SetString(PyExc_TypeError, "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
    return NULL;
  }
  return pyct_wrap(ct_bitwise_not(TT(a)));
}

static int nb_bool(PyObject *a) {
  ct_tensor *t = TT(a);
  int64_t n = ct_numel(t);
  if (n != 1) {
    if (n == 0)
      PyErr_SetString(PyExc_RuntimeError, "Boolean value of Tensor with no values is ambiguous");
    else
      PyErr_SetString(PyExc_RuntimeError, "Boolean value of Tensor with more than one value is ambiguous");
    return -1;
  }
  double v;
  if (ct_item_double(t, &v) != CT_OK) {
    pyct_raise();
    return -1;
  }
  return v != 0.0;
}
static PyObject *nb_float(PyObject *a) {
  ct_tensor *t = TT(a);
  if (ct_numel(t) != 1) {
    PyErr_SetString(PyExc_ValueError, "only one element tensors can be converted to Python scalars");
    return NULL;
  }
  double v;
  if (ct_item_double(t, &v) != CT_OK) return pyct_raise();
  return PyFloat_FromDouble(v);
}
static PyObject *nb_int(PyObject *a) {
  ct_tensor *t = TT(a);
  if (ct_numel(t) != 1) {
    PyErr_SetString(PyExc_ValueError, "only one element tensors can be converted to Python scalars");
    return NULL;
  }
  if (ct_dtype_is_floating(ct_tensor_dtype(t))) {
    double v;
    if (ct_item_double(t, &v) != CT_OK) return pyct_raise();
    return PyLong_FromDouble(v);
  }
  int64_t v;
  if (ct_item_int64(t, &v) != CT_OK) return pyct_raise();
  return PyLong_FromLongLong(v);
}
static PyObject *nb_index(PyObject *a) {
  ct_tensor *t = TT(a);
  if (ct_numel(t) != 1 || !ct_dtype_is_integral(ct_tensor_dtype(t), true)) {
    PyErr_SetString(PyExc_TypeError, "only integer tensors of a single element can be converted to an index");
    return NULL;
  }
  return nb_int(a);
}

static PyNumberMethods tensor_as_number = {
  .nb_add = nb_add,
  .nb_subtract = nb_sub,
  .nb_multiply = nb_mul,
  .nb_remainder = nb_mod,
  .nb_power = nb_pow,
  .nb_negative = nb_neg,
  .nb_positive = nb_pos,
  .nb_absolute = nb_abs,
  .nb_bool = nb_bool,
  .nb_invert = nb_invert,
  .nb_lshift = nb_lshift,
  .nb_rshift = nb_rshift,
  .nb_and = nb_and,
  .nb_xor = nb_xor,
  .nb_or = nb_or,
  .nb_int = nb_int,
  .nb_float = nb_float,
  .nb_inplace_add = nb_iadd,
  .nb_inplace_subtract = nb_isub,
  .nb_inplace_multiply = nb_imul,
  .nb_inplace_remainder = nb_imod,
  .nb_inplace_power = nb_ipow,
  .nb_inplace_lshift = nb_ilshift,
  .nb_inplace_rshift = nb_irshift,
  .nb_inplace_and = nb_iand,
  .nb_inplace_xor = nb_ixor,
  .nb_inplace_or = nb_ior,
  .nb_floor_divide = nb_floordiv,
  .nb_true_divide = nb_div,
  .nb_inplace_floor_divide = nb_ifloordiv,
  .nb_inplace_true_divide = nb_idiv,
  .nb_index = nb_index,
  .nb_matrix_multiply = nb_matmul,
  .nb_inplace_matrix_multiply = nb_imatmul,
};

static PyObject *richcmp(PyObject *a, PyObject *b, int op) {
  static bin_tt tt[6] = {ct_lt, ct_le, ct_eq, ct_ne, ct_gt, ct_ge};
  static bin_ts ts[6] = {ct_lt_scalar, ct_le_scalar, ct_eq_scalar, ct_ne_scalar, ct_gt_scalar, ct_ge_scalar};
  if (!pyct_is_tensor(a)) Py_RETURN_NOTIMPLEMENTED;
  if (pyct_is_tensor(b)) return pyct_wrap(tt[op](TT(a), TT(b)));
  if (pyct_is_number(b)) {
    ct_scalar s;
    if (!pyct_scalar(b, &s)) return NULL;
    return pyct_wrap(ts[op](TT(a), s));
  }
  if (op == Py_EQ) Py_RETURN_FALSE;
  if (op == Py_NE) Py_RETURN_TRUE;
  Py_RETURN_NOTIMPLEMENTED;
}

/* ---- indexing ---- */
#define MAX_ITEMS 32
typedef struct {
  ct_index_item items[MAX_ITEMS];
  ct_tensor *owned[MAX_ITEMS];
  int n, n_owned;
} index_spec;

static void spec_free(index_spec *sp) {
  for (int i = 0; i < sp->n_owned; i++) ct_release(sp->owned[i]);
  sp->n_owned = 0;
}

static int slice_part(PyObject *o, bool *has, int64_t *v) {
  if (o == Py_None) {
    *has = false;
    return 1;
  }
  *has = true;
  return pyct_int64(o, v, "slice indices");
}

static int index_one(index_spec *sp, PyObject *o) {
  if (sp->n >= MAX_ITEMS) {
    PyErr_SetString(PyExc_IndexError, "too many indices");
    return 0;
  }
  ct_index_item *it = &sp->items[sp->n];
  if (PyBool_Check(o)) {
    *it = ct_ibool(o == Py_True);
  } else if (PyLong_Check(o)) {
    int64_t v;
    if (!pyct_int64(o, &v, "index")) return 0;
    *it = ct_ii(v);
  } else if (PySlice_Check(o)) {
    PySliceObject *s = (PySliceObject *)o;
    *it = ct_is_all();
    if (!slice_part(s->start, &it->has_start, &it->start) || !slice_part(s->stop, &it->has_stop, &it->stop) ||
        !slice_part(s->step, &it->has_step, &it->step))
      return 0;
  } else if (o == Py_None) {
    *it = ct_inone();
  } else if (o == Py_Ellipsis) {
    *it = ct_iellipsis();
  } else if (pyct_is_tensor(o)) {
    ct_tensor *t = TT(o);
    ct_dtype dt = ct_tensor_dtype(t);
    if (dt != CT_INT64 && dt != CT_BOOL && dt != CT_UINT8) {
      PyErr_SetString(PyExc_IndexError, "tensors used as indices must be long, byte or bool tensors");
      return 0;
    }
    *it = ct_itensor(t);
  } else if (PyIndex_Check(o) && !PySequence_Check(o)) {
    int64_t v;
    if (!pyct_int64(o, &v, "index")) return 0;
    *it = ct_ii(v);
  } else if (PySequence_Check(o) && !PyUnicode_Check(o)) {
    ct_tensor *t = pyct_from_data(o, -1, NULL);
    if (!t) return 0;
    sp->owned[sp->n_owned++] = t;
    if (ct_dtype_is_floating(ct_tensor_dtype(t)) && ct_numel(t) == 0) {
      ct_tensor *c = ct_to_dtype(t, CT_INT64);
      if (!c) return pyct_raise() != NULL;
      sp->owned[sp->n_owned++] = c;
      t = c;
    }
    *it = ct_itensor(t);
  } else {
    PyErr_Format(PyExc_IndexError,
                 "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                 "(got %s)",
                 Py_TYPE(o)->tp_name);
    return 0;
  }
  sp->n++;
  return 1;
}

/* A list holding slices, None, Ellipsis, tensors or sequences is read as a tuple (NumPy's legacy rule). */
static int list_as_tuple(PyObject *o) {
  if (!PyList_Check(o) || PyList_GET_SIZE(o) >= 32) return 0;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); i++) {
    PyObject *x = PyList_GET_ITEM(o, i);
    if (PySlice_Check(x) || x == Py_None || x == Py_Ellipsis || pyct_is_tensor(x) || PyList_Check(x) ||
        PyTuple_Check(x))
      return 1;
  }
  return 0;
}

static int parse_index(index_spec *sp, PyObject *idx) {
  sp->n = 0;
  sp->n_owned = 0;
  if (PyTuple_Check(idx) || list_as_tuple(idx)) {
    PyObject *f = PySequence_Fast(idx, "index");
    if (!f) return 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(f); i++)
      if (!index_one(sp, PySequence_Fast_GET_ITEM(f, i))) {
        Py_DECREF(f);
        spec_free(sp);
        return 0;
      }
    Py_DECREF(f);
    return 1;
  }
  if (!index_one(sp, idx)) {
    spec_free(sp);
    return 0;
  }
  return 1;
}

static PyObject *tensor_getitem_body(PyObject *self, PyObject *idx);
static PyObject *tensor_getitem(PyObject *self, PyObject *idx) {
  return pyct_link_base(self, tensor_getitem_body(self, idx));
}
static PyObject *tensor_getitem_body(PyObject *self, PyObject *idx) {
  ct_tensor *t = TT(self);
  /* fast paths: x[i] and x[a:b] */
  if (PyLong_CheckExact(idx)) {
    int64_t v;
    if (!pyct_int64(idx, &v, "index")) return NULL;
    if (ct_ndim(t) == 0) {
      PyErr_SetString(PyExc_IndexError, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                        "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
      return NULL;
    }
    ct_index_item it = ct_ii(v);
    return pyct_wrap(ct_index(t, 1, &it));
  }
  index_spec sp;
  if (!parse_index(&sp, idx)) return NULL;
  ct_tensor *r = ct_index(t, sp.n, sp.items);
  spec_free(&sp);
  return pyct_wrap(r);
}

static int tensor_setitem(PyObject *self, PyObject *idx, PyObject *value) {
  if (!value) {
    PyErr_SetString(PyExc_TypeError, "Tensor does not support deleting items");
    return -1;
  }
  ct_tensor *t = TT(self);
  index_spec sp;
  if (!parse_index(&sp, idx)) return -1;
  ct_status st;
  if (pyct_is_tensor(value)) {
    st = ct_index_put_(t, sp.n, sp.items, TT(value), false);
  } else if (pyct_is_number(value)) {
    ct_scalar s;
    if (!pyct_scalar(value, &s)) {
      spec_free(&sp);
      return -1;
    }
    st = ct_index_put_scalar_(t, sp.n, sp.items, s);
  } else {
    extern const char *ct_dtype_legacy_name(ct_dtype dt);
    PyErr_Format(PyExc_TypeError, "can't assign a %s to a %s", Py_TYPE(value)->tp_name,
                 ct_dtype_legacy_name(ct_tensor_dtype(t)));
    spec_free(&sp);
    return -1;
  }
  spec_free(&sp);
  if (st != CT_OK) {
    pyct_raise();
    return -1;
  }
  return 0;
}

static Py_ssize_t tensor_len(PyObject *self) {
  ct_tensor *t = TT(self);
  if (ct_ndim(t) == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
    return -1;
  }
  return (Py_ssize_t)ct_shape(t)[0];
}

static PyMappingMethods tensor_as_mapping = {
  .mp_length = tensor_len,
  .mp_subscript = tensor_getitem,
  .mp_ass_subscript = tensor_setitem,
};

/* ---- basic methods ---- */
static PyObject *t_dim(TensorObject *s, PyObject *u) { return PyLong_FromLong(ct_ndim(s->t)); }
static PyObject *t_numel(TensorObject *s, PyObject *u) { return PyLong_FromLongLong(ct_numel(s->t)); }
static PyObject *t_element_size(TensorObject *s, PyObject *u) {
  return PyLong_FromSize_t(ct_dtype_size(ct_tensor_dtype(s->t)));
}
static PyObject *t_storage_offset(TensorObject *s, PyObject *u) {
  return PyLong_FromLongLong(ct_storage_offset(s->t));
}
/* Tensor.resize_(*sizes): PyTorch's geometry (contiguous strides from the storage offset); the storage
   grows when too small (every view of it sees the new memory) and never shrinks; no version bump. */
static PyObject *t_resize_(TensorObject *s, PyObject *args, PyObject *kw) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  if (kw && PyDict_GET_SIZE(kw) && !(PyDict_GET_SIZE(kw) == 1 && PyDict_GetItemString(kw, "memory_format"))) {
    PyErr_SetString(PyExc_TypeError, "resize_() received an invalid combination of arguments");
    return NULL;
  }
  if (!pyct_shape_varargs(args, 0, shape, &n)) return NULL;
  ct_tensor *t = s->t;
  if (ct_requires_grad(t)) {
    PyErr_SetString(PyExc_RuntimeError, "cannot resize variables that require grad");
    return NULL;
  }
  for (int d = 0; d < n; d++)
    if (shape[d] < 0) {
      PyErr_SetString(PyExc_RuntimeError, "numel: integer multiplication overflow"); /* PyTorch's wording */
      return NULL;
    }
  int64_t numel = ct_shape_numel(n, shape), need = 0;
  if (numel < 0) return pyct_raise();
  if (numel > 0 && (!ct_mul_ok(t->offset + numel, (int64_t)ct_dtype_size(t->dtype), &need) || need < 0)) {
    PyErr_SetString(PyExc_RuntimeError, "numel: integer multiplication overflow");
    return NULL;
  }
  if (ct_storage_grow(t->storage, (size_t)need) != CT_OK) return pyct_raise();
  t->ndim = n;
  for (int d = 0; d < n; d++) t->shape[d] = shape[d];
  ct_contiguous_strides(n, t->shape, t->stride);
  Py_INCREF(s);
  return (PyObject *)s;
}
static PyObject *t_is_contiguous(TensorObject *s, PyObject *args, PyObject *kw) {
  return PyBool_FromLong(ct_is_contiguous(s->t));
}
static PyObject *t_is_floating_point(TensorObject *s, PyObject *u) {
  return PyBool_FromLong(ct_dtype_is_floating(ct_tensor_dtype(s->t)));
}
static PyObject *t_is_complex(TensorObject *s, PyObject *u) { Py_RETURN_FALSE; }
static PyObject *t_is_inference(TensorObject *s, PyObject *u) { return PyBool_FromLong(s->t->is_inference); }
static PyObject *t_data_ptr(TensorObject *s, PyObject *u) { return PyLong_FromVoidPtr(ct_data_ptr(s->t)); }
static PyObject *t_size(TensorObject *s, PyObject *args, PyObject *kwargs) {
  static const char *const kw[] = {"dim", NULL};
  PyObject *a[1];
  if (!pyct_args("size", args, 0, kwargs, kw, 0, a)) return NULL;
  if (!a[0] || a[0] == Py_None) return pyct_make_size(ct_ndim(s->t), ct_shape(s->t));
  int64_t d;
  if (!pyct_int64(a[0], &d, "dim")) return NULL;
  int64_t v = ct_size(s->t, (int)d);
  if (v < 0) return pyct_raise();
  return PyLong_FromLongLong(v);
}
static PyObject *t_stride(TensorObject *s, PyObject *args, PyObject *kwargs) {
  static const char *const kw[] = {"dim", NULL};
  PyObject *a[1];
  if (!pyct_args("stride", args, 0, kwargs, kw, 0, a)) return NULL;
  int nd = ct_ndim(s->t);
  if (!a[0] || a[0] == Py_None) {
    PyObject *tup = PyTuple_New(nd);
    for (int i = 0; i < nd; i++) PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(ct_strides(s->t)[i]));
    return tup;
  }
  int64_t d;
  if (!pyct_int64(a[0], &d, "dim")) return NULL;
  if (ct_size(s->t, (int)d) < 0) return pyct_raise();
  return PyLong_FromLongLong(ct_stride(s->t, (int)d));
}
static PyObject *t_item(TensorObject *s, PyObject *u) { return pyct_item(s->t); }
static PyObject *t_tolist(TensorObject *s, PyObject *u) { return pyct_tolist(s->t); }
static PyObject *t_is_same(TensorObject *s, PyObject *o) {
  if (!pyct_is_tensor(o)) Py_RETURN_FALSE;
  return PyBool_FromLong(s->t == TT(o));
}
static PyObject *t_shares_storage(TensorObject *s, PyObject *o) {
  if (!pyct_is_tensor(o)) Py_RETURN_FALSE;
  return PyBool_FromLong(ct_shares_storage(s->t, TT(o)));
}
static PyObject *t_array_interface(TensorObject *s, PyObject *u) {
  /* (data address, shape, strides in bytes, typestr) for numpy's __array_interface__ */
  ct_dtype dt = ct_tensor_dtype(s->t);
  static const char *ts[CT_NUM_DTYPES] = {"<f4", "<f8", "<f2", NULL, "|i1", "|u1", "<i2", "<i4", "<i8", "|b1"};
  if (!ts[dt]) {
    PyErr_SetString(PyExc_TypeError, "Got unsupported ScalarType BFloat16");
    return NULL;
  }
  int nd = ct_ndim(s->t);
  size_t isz = ct_dtype_size(dt);
  PyObject *shape = PyTuple_New(nd), *strides = PyTuple_New(nd);
  for (int i = 0; i < nd; i++) {
    PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(ct_shape(s->t)[i]));
    PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(ct_strides(s->t)[i] * (int64_t)isz));
  }
  void *p = ct_data_ptr(s->t);
  return Py_BuildValue("(NNNs)", PyLong_FromVoidPtr(p), shape, strides, ts[dt]);
}


/* self._inplace_view_(v): the in-place shape ops (squeeze_, unsqueeze_, t_...) where v is the
   view op's result on self. Without autograd history the handle takes v's geometry, so every
   reference to it sees the change (as PyTorch's in-place metadata change); with history the
   Python object moves to v, whose grad_fn records the view. Bumps the version as PyTorch does. */
static PyObject *t_inplace_view_(TensorObject *s, PyObject *v) {
  if (!pyct_is_tensor(v) || !ct_shares_storage(TT(v), s->t) || ct_tensor_dtype(TT(v)) != ct_tensor_dtype(s->t)) {
    PyErr_SetString(PyExc_TypeError, "_inplace_view_: expected a view of self");
    return NULL;
  }
  ct_tensor *t = s->t, *n = TT(v);
  if (ct_is_grad_enabled() && ct_requires_grad(t) && ct_is_leaf(t)) {
    PyErr_SetString(PyExc_RuntimeError, ct_is_view(t)
                    ? "a view of a leaf Variable that requires grad is being used in an in-place operation."
                    : "a leaf Variable that requires grad is being used in an in-place operation.");
    return NULL;
  }
  if (n->grad_fn) {
    ct_retain(n);
    s->t = n;
    ct_release(t);
  } else {
    t->ndim = n->ndim;
    memcpy(t->shape, n->shape, sizeof(int64_t) * (size_t)n->ndim);
    memcpy(t->stride, n->stride, sizeof(int64_t) * (size_t)n->ndim);
    t->offset = n->offset;
  }
  ct_bump_version(s->t);
  Py_INCREF(s);
  return (PyObject *)s;
}

static PyMethodDef tensor_base_methods[] = {
  {"_make_subclass", (PyCFunction)(void (*)(void))tensor_make_subclass,
   METH_VARARGS | METH_KEYWORDS | METH_STATIC, NULL},
  {"dim", (PyCFunction)t_dim, METH_NOARGS, NULL},
  {"ndimension", (PyCFunction)t_dim, METH_NOARGS, NULL},
  {"numel", (PyCFunction)t_numel, METH_NOARGS, NULL},
  {"nelement", (PyCFunction)t_numel, METH_NOARGS, NULL},
  {"element_size", (PyCFunction)t_element_size, METH_NOARGS, NULL},
  {"storage_offset", (PyCFunction)t_storage_offset, METH_NOARGS, NULL},
  {"is_contiguous", (PyCFunction)(void (*)(void))t_is_contiguous, METH_VARARGS | METH_KEYWORDS, NULL},
  {"resize_", (PyCFunction)(void (*)(void))t_resize_, METH_VARARGS | METH_KEYWORDS, NULL},
  {"is_floating_point", (PyCFunction)t_is_floating_point, METH_NOARGS, NULL},
  {"is_complex", (PyCFunction)t_is_complex, METH_NOARGS, NULL},
  {"is_inference", (PyCFunction)t_is_inference, METH_NOARGS, NULL},
  {"data_ptr", (PyCFunction)t_data_ptr, METH_NOARGS, NULL},
  {"size", (PyCFunction)(void (*)(void))t_size, METH_VARARGS | METH_KEYWORDS, NULL},
  {"stride", (PyCFunction)(void (*)(void))t_stride, METH_VARARGS | METH_KEYWORDS, NULL},
  {"item", (PyCFunction)t_item, METH_NOARGS, NULL},
  {"tolist", (PyCFunction)t_tolist, METH_NOARGS, NULL},
  {"_is_same", (PyCFunction)t_is_same, METH_O, NULL},
  {"_shares_storage", (PyCFunction)t_shares_storage, METH_O, NULL},
  {"_array_interface", (PyCFunction)t_array_interface, METH_NOARGS, NULL},
  {"_inplace_view_", (PyCFunction)t_inplace_view_, METH_O, NULL},
  {NULL}};

/* The Python subclass ctorch.Tensor is collected by the GC; these let it see and break the
   view -> base object reference (e.g. a base whose __dict__ holds its view). */
static int tensor_traverse(TensorObject *s, visitproc visit, void *arg) {
  Py_VISIT(s->base_obj);
  return 0;
}
static int tensor_clear(TensorObject *s) {
  Py_CLEAR(s->base_obj);
  return 0;
}

PyTypeObject TensorBase_Type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "torch._C._TensorBase",
  .tp_basicsize = sizeof(TensorObject),
  .tp_dealloc = (destructor)tensor_dealloc,
  .tp_traverse = (traverseproc)tensor_traverse,
  .tp_clear = (inquiry)tensor_clear,
  .tp_as_number = &tensor_as_number,
  .tp_as_mapping = &tensor_as_mapping,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_richcompare = richcmp,
  .tp_getset = tensor_getset,
  .tp_new = tensor_new,
};

int pyct_tensor_init(PyObject *m) {
  TensorBase_Type.tp_hash = PyBaseObject_Type.tp_hash;
  /* base methods + the op methods of the other files in one table */
  PyMethodDef *tables[] = {tensor_base_methods, pyct_ops1_methods, pyct_ops2_methods, pyct_autograd_methods,
                           pyct_random_methods};
  int ntab = (int)(sizeof(tables) / sizeof(tables[0])), total = 0;
  for (int k = 0; k < ntab; k++)
    for (int i = 0; tables[k][i].ml_name; i++) total++;
  PyMethodDef *all = PyMem_Calloc((size_t)total + 1, sizeof(PyMethodDef));
  if (!all) return -1;
  total = 0;
  for (int k = 0; k < ntab; k++)
    for (int i = 0; tables[k][i].ml_name; i++) all[total++] = tables[k][i];
  TensorBase_Type.tp_methods = all;
  if (PyType_Ready(&TensorBase_Type) < 0) return -1;
  return PyModule_AddObjectRef(m, "_TensorBase", (PyObject *)&TensorBase_Type);
}
