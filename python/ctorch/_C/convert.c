/* Python data <-> tensors: torch.tensor(data) with PyTorch's dtype inference, tolist(),
 * item(), and from_numpy (memory shared through the buffer protocol). */
#include "pyct.h"
#include "core/internal.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>

static int is_seq(PyObject *o) {
  if (PyList_Check(o) || PyTuple_Check(o)) return 1;
  if (pyct_is_tensor(o) || PyUnicode_Check(o) || PyBytes_Check(o) || PyDict_Check(o)) return 0;
  if (PyFloat_Check(o) || PyLong_Check(o)) return 0;
  return PySequence_Check(o) && PyObject_HasAttrString(o, "__len__");
}

typedef struct {
  double *f;
  int64_t *i;
  int64_t n, cap;
  int cat; /* 0 bool, 1 int, 2 float; -1 none yet */
} collector;

static int push(collector *c, PyObject *o) {
  if (c->n >= c->cap) {
    int64_t nc = c->cap ? c->cap * 2 : 64;
    double *nf = realloc(c->f, (size_t)nc * sizeof(double));
    if (!nf) return PyErr_NoMemory() != NULL;
    c->f = nf;
    int64_t *ni = realloc(c->i, (size_t)nc * sizeof(int64_t));
    if (!ni) return PyErr_NoMemory() != NULL;
    c->i = ni;
    c->cap = nc;
  }
  int cat;
  double f;
  int64_t i;
  if (PyBool_Check(o)) {
    cat = 0;
    i = o == Py_True;
    f = (double)i;
  } else if (PyLong_Check(o)) {
    int overflow = 0;
    i = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
      PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long");
      return 0;
    }
    cat = 1;
    f = (double)i;
  } else if (PyFloat_Check(o)) {
    cat = 2;
    f = PyFloat_AS_DOUBLE(o);
    i = f > -9.2e18 && f < 9.2e18 ? (int64_t)f : 0; /* nan, inf and huge values have no int64 (UB to cast) */
  } else if (pyct_is_tensor(o)) {
    ct_tensor *t = TT(o);
    if (ct_numel(t) != 1) {
      PyErr_SetString(PyExc_ValueError, "only one element tensors can be converted to Python scalars");
      return 0;
    }
    ct_scalar s = ct_item(t);
    cat = s.kind == CT_SCALAR_BOOL ? 0 : s.kind == CT_SCALAR_INT ? 1 : 2;
    f = s.f;
    i = s.kind == CT_SCALAR_FLOAT ? (int64_t)s.f : s.i;
  } else if (PyComplex_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "ctorch does not support complex numbers");
    return 0;
  } else if (PyIndex_Check(o)) {
    PyObject *x = PyNumber_Index(o);
    if (!x) return 0;
    int r = push(c, x);
    Py_DECREF(x);
    return r;
  } else if (PyObject_HasAttrString(o, "__float__") && !PyUnicode_Check(o)) {
    PyObject *x = PyNumber_Float(o);
    if (!x) return 0;
    int r = push(c, x);
    Py_DECREF(x);
    return r;
  } else {
    PyErr_Format(PyExc_TypeError, "new(): invalid data type '%s'", Py_TYPE(o)->tp_name);
    return 0;
  }
  if (cat > c->cat) c->cat = cat;
  c->f[c->n] = f;
  c->i[c->n] = i;
  c->n++;
  return 1;
}

static int fill(collector *c, PyObject *o, int dim, int ndim, const int64_t *shape) {
  if (dim == ndim) {
    if (is_seq(o)) {
      PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %zd)", 0LL, dim,
                   PySequence_Size(o));
      return 0;
    }
    return push(c, o);
  }
  if (!is_seq(o)) {
    PyErr_Format(PyExc_TypeError, "not a sequence");
    return 0;
  }
  PyObject *f = PySequence_Fast(o, "not a sequence");
  if (!f) return 0;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(f);
  if (len != shape[dim]) {
    PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %zd)", (long long)shape[dim], dim,
                 len);
    Py_DECREF(f);
    return 0;
  }
  for (Py_ssize_t k = 0; k < len; k++)
    if (!fill(c, PySequence_Fast_GET_ITEM(f, k), dim + 1, ndim, shape)) {
      Py_DECREF(f);
      return 0;
    }
  Py_DECREF(f);
  return 1;
}

static int buffer_dtype(const char *fmt, Py_ssize_t itemsize, ct_dtype *dt) {
  while (*fmt == '<' || *fmt == '=' || *fmt == '@' || *fmt == '|') fmt++;
  switch (*fmt) {
    case 'f': *dt = CT_FLOAT32; return 1;
    case 'd': *dt = CT_FLOAT64; return 1;
    case 'e': *dt = CT_FLOAT16; return 1;
    case 'b': *dt = CT_INT8; return 1;
    case 'B': *dt = CT_UINT8; return 1;
    case 'h': *dt = CT_INT16; return 1;
    case 'i': *dt = itemsize == 4 ? CT_INT32 : CT_INT64; return 1;
    case 'l': case 'q': *dt = itemsize == 8 ? CT_INT64 : CT_INT32; return 1;
    case '?': *dt = CT_BOOL; return 1;
    default: return 0;
  }
}

static const char *np_name(const char *fmt) {
  while (*fmt == '<' || *fmt == '=' || *fmt == '@' || *fmt == '|') fmt++;
  switch (*fmt) {
    case 'H': return "uint16";
    case 'I': return "uint32";
    case 'L': case 'Q': return "uint64";
    case 'g': return "float128";
    case 'O': return "object_";
    default: return fmt;
  }
}

static int is_ndarray(PyObject *o) {
  PyTypeObject *tp = Py_TYPE(o);
  return strcmp(tp->tp_name, "numpy.ndarray") == 0 || PyObject_HasAttrString((PyObject *)tp, "__array_interface__");
}

/* Buffer of an array-like (numpy) with its dtype; 0 with a TypeError when unsupported. */
static int get_array_buffer(PyObject *o, Py_buffer *view, ct_dtype *dt, int writable) {
  if (PyObject_GetBuffer(o, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_RECORDS_RO | PyBUF_FORMAT) < 0) {
    if (!writable) return 0;
    PyErr_Clear();
    if (PyObject_GetBuffer(o, view, PyBUF_RECORDS_RO | PyBUF_FORMAT) < 0) return 0;
  }
  if (!buffer_dtype(view->format ? view->format : "B", view->itemsize, dt)) {
    PyErr_Format(PyExc_TypeError,
                 "can't convert np.ndarray of type numpy.%s. The only supported types are: float64, float32, "
                 "float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool.",
                 np_name(view->format ? view->format : "?"));
    PyBuffer_Release(view);
    return 0;
  }
  if (view->ndim > CT_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "ctorch supports at most %d dims", CT_MAX_DIMS);
    PyBuffer_Release(view);
    return 0;
  }
  return 1;
}

/* Python numbers are converted with PyTorch's overflow check when a dtype is given. */
static int range_ok(const collector *c, ct_dtype dt) {
  double lo, hi;
  switch (dt) {
    case CT_INT8: lo = -128; hi = 127; break;
    case CT_UINT8: lo = 0; hi = 255; break;
    case CT_INT16: lo = -32768; hi = 32767; break;
    case CT_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
    case CT_FLOAT16: lo = -65504; hi = 65504; break;
    case CT_BFLOAT16: lo = -3.3895313892515355e38; hi = 3.3895313892515355e38; break;
    case CT_FLOAT32: lo = -3.4028234663852886e38; hi = 3.4028234663852886e38; break;
    default: return 1;
  }
  for (int64_t k = 0; k < c->n; k++) {
    double v = c->f[k];
    if (ct_dtype_is_floating(dt) && !isfinite(v)) continue;
    if (v < lo || v > hi) {
      PyErr_Format(PyExc_RuntimeError, "value cannot be converted to type %s without overflow",
                   dt == CT_FLOAT16 ? "at::Half" : dt == CT_BFLOAT16 ? "at::BFloat16" : ct_dtype_name(dt));
      return 0;
    }
  }
  return 1;
}

ct_tensor *pyct_from_data(PyObject *data, int dtype, int *inferred) {
  ct_options o = ct_opts();
  if (pyct_is_tensor(data)) {
    ct_tensor *d = ct_detach(TT(data));
    if (!d) return (ct_tensor *)pyct_raise();
    ct_tensor *c = ct_clone(d);
    ct_release(d);
    if (!c) return (ct_tensor *)pyct_raise();
    if (dtype >= 0 && dtype != (int)ct_tensor_dtype(c)) {
      ct_tensor *e = ct_to_dtype(c, (ct_dtype)dtype);
      ct_release(c);
      c = e;
      if (!c) return (ct_tensor *)pyct_raise();
    }
    if (inferred) *inferred = ct_tensor_dtype(c);
    return c;
  }
  if (is_ndarray(data)) {
    Py_buffer view;
    ct_dtype sdt;
    if (!get_array_buffer(data, &view, &sdt, 0)) return NULL;
    void *buf = PyMem_Malloc(view.len ? (size_t)view.len : 1);
    if (!buf) {
      PyBuffer_Release(&view);
      return (ct_tensor *)PyErr_NoMemory();
    }
    if (PyBuffer_ToContiguous(buf, &view, view.len, 'C') < 0) {
      PyMem_Free(buf);
      PyBuffer_Release(&view);
      return NULL;
    }
    int64_t shape[CT_MAX_DIMS];
    for (int k = 0; k < view.ndim; k++) shape[k] = view.shape[k];
    o.dtype = dtype >= 0 ? (ct_dtype)dtype : sdt;
    ct_tensor *t = ct_from_buffer(buf, sdt, view.ndim, shape, o);
    PyMem_Free(buf);
    PyBuffer_Release(&view);
    if (!t) return (ct_tensor *)pyct_raise();
    if (inferred) *inferred = sdt;
    return t;
  }
  int64_t shape[CT_MAX_DIMS];
  int ndim = 0;
  PyObject *cur = data;
  Py_INCREF(cur);
  while (is_seq(cur)) {
    if (ndim >= CT_MAX_DIMS) {
      Py_DECREF(cur);
      PyErr_Format(PyExc_ValueError, "ctorch supports at most %d dims", CT_MAX_DIMS);
      return NULL;
    }
    Py_ssize_t len = PySequence_Size(cur);
    if (len < 0) {
      Py_DECREF(cur);
      return NULL;
    }
    shape[ndim++] = len;
    if (len == 0) break;
    PyObject *nx = PySequence_GetItem(cur, 0);
    Py_DECREF(cur);
    if (!nx) return NULL;
    cur = nx;
  }
  Py_DECREF(cur);
  collector c = {NULL, NULL, 0, 0, -1};
  if (!fill(&c, data, 0, ndim, shape)) {
    free(c.f);
    free(c.i);
    return NULL;
  }
  int cat = c.cat < 0 ? 2 : c.cat; /* empty lists give the default float dtype */
  if (dtype >= 0 && !range_ok(&c, (ct_dtype)dtype)) {
    free(c.f);
    free(c.i);
    return NULL;
  }
  ct_dtype inf = cat == 2 ? ct_get_default_dtype() : cat == 1 ? CT_INT64 : CT_BOOL;
  o.dtype = dtype >= 0 ? (ct_dtype)dtype : inf;
  ct_tensor *t;
  if (cat == 2)
    t = ct_from_buffer(c.f ? (void *)c.f : (void *)&c, CT_FLOAT64, ndim, shape, o);
  else
    t = ct_from_buffer(c.i ? (void *)c.i : (void *)&c, CT_INT64, ndim, shape, o);
  free(c.f);
  free(c.i);
  if (!t) return (ct_tensor *)pyct_raise();
  if (inferred) *inferred = inf;
  return t;
}

PyObject *pyct_item(ct_tensor *t) {
  if (ct_numel(t) != 1) {
    PyErr_SetString(PyExc_ValueError, "only one element tensors can be converted to Python scalars");
    return NULL;
  }
  ct_dtype dt = ct_tensor_dtype(t);
  if (ct_dtype_is_floating(dt)) {
    double v;
    if (ct_item_double(t, &v) != CT_OK) return pyct_raise();
    return PyFloat_FromDouble(v);
  }
  int64_t v;
  if (ct_item_int64(t, &v) != CT_OK) return pyct_raise();
  if (dt == CT_BOOL) return PyBool_FromLong(v != 0);
  return PyLong_FromLongLong(v);
}

static PyObject *build_list(const void *buf, int kind, int ndim, const int64_t *shape, int dim, int64_t *pos) {
  if (dim == ndim) {
    int64_t k = (*pos)++;
    if (kind == 2) return PyFloat_FromDouble(((const double *)buf)[k]);
    if (kind == 0) return PyBool_FromLong(((const int64_t *)buf)[k] != 0);
    return PyLong_FromLongLong(((const int64_t *)buf)[k]);
  }
  PyObject *l = PyList_New(shape[dim]);
  if (!l) return NULL;
  for (int64_t i = 0; i < shape[dim]; i++) {
    PyObject *x = build_list(buf, kind, ndim, shape, dim + 1, pos);
    if (!x) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, i, x);
  }
  return l;
}

PyObject *pyct_tolist(ct_tensor *t) {
  ct_dtype dt = ct_tensor_dtype(t);
  int kind = ct_dtype_is_floating(dt) ? 2 : dt == CT_BOOL ? 0 : 1;
  int64_t n = ct_numel(t);
  void *buf = PyMem_Malloc((size_t)(n ? n : 1) * 8);
  if (!buf) return PyErr_NoMemory();
  if (ct_copy_to_buffer(t, buf, kind == 2 ? CT_FLOAT64 : CT_INT64, n) != CT_OK) {
    PyMem_Free(buf);
    return pyct_raise();
  }
  int64_t pos = 0;
  PyObject *r = build_list(buf, kind, ct_ndim(t), ct_shape(t), 0, &pos);
  PyMem_Free(buf);
  return r;
}

/* ---- from_numpy: the tensor's storage is the array's memory ---- */
static void release_view(void *data, void *ctx) {
  Py_buffer *view = ctx;
  if (Py_IsInitialized()) {
    PyGILState_STATE st = PyGILState_Ensure();
    PyBuffer_Release(view);
    PyGILState_Release(st);
  }
  free(view);
}

static PyObject *m_from_numpy(PyObject *m, PyObject *arr) {
  if (!is_ndarray(arr)) {
    PyErr_Format(PyExc_TypeError, "expected np.ndarray (got %s)", Py_TYPE(arr)->tp_name);
    return NULL;
  }
  Py_buffer *view = malloc(sizeof(Py_buffer));
  if (!view) return PyErr_NoMemory();
  ct_dtype dt;
  if (!get_array_buffer(arr, view, &dt, 1)) {
    free(view);
    return NULL;
  }
  int64_t shape[CT_MAX_DIMS], stride[CT_MAX_DIMS];
  Py_ssize_t isz = view->itemsize;
  /* the storage spans from the lowest to the highest byte the array touches */
  for (int k = 0; k < view->ndim; k++) {
    shape[k] = view->shape[k];
    Py_ssize_t s = view->strides ? view->strides[k] : 0;
    if (s < 0) {
      PyErr_SetString(PyExc_ValueError,
                      "At least one stride in the given numpy array is negative, and tensors with negative strides "
                      "are not currently supported. (You can probably work around this by making a copy of your "
                      "array  with array.copy().) ");
      PyBuffer_Release(view);
      free(view);
      return NULL;
    }
    if (s % isz != 0) {
      PyErr_SetString(PyExc_ValueError,
                      "given numpy array strides not a multiple of the element byte size. Copy the numpy array "
                      "to reallocate the memory.");
      PyBuffer_Release(view);
      free(view);
      return NULL;
    }
    stride[k] = s / isz;
  }
  if (!view->strides) ct_contiguous_strides(view->ndim, shape, stride);
  int64_t extent = 1, numel = 1;
  for (int k = 0; k < view->ndim; k++) {
    numel *= shape[k];
    if (shape[k] > 0) extent += (shape[k] - 1) * stride[k];
  }
  if (numel == 0) extent = 0;
  ct_storage *s = ct_storage_from_external(view->buf, (size_t)extent * (size_t)isz, release_view, view);
  if (!s) {
    PyBuffer_Release(view);
    free(view);
    return pyct_raise();
  }
  ct_tensor *t = ct_tensor_over(s, view->ndim, shape, stride, 0, dt);
  ct_storage_release(s);
  return pyct_wrap(t);
}

static PyObject *m_tensor(PyObject *m, PyObject *args, PyObject *kwargs) {
  static const char *const kw[] = {"data", "*", "dtype", "device", "requires_grad", "pin_memory", NULL};
  PyObject *a[5];
  if (!pyct_args("tensor", args, 0, kwargs, kw, 1, a)) return NULL;
  int dt;
  ct_device dev;
  if (!pyct_dtype_opt(a[1], &dt) || !pyct_device_arg(a[2], &dev)) return NULL;
  ct_tensor *t = pyct_from_data(a[0], dt, NULL);
  if (!t) return NULL;
  /* filling a new tensor from Python numbers is its creation, not a change: version 0 as in PyTorch */
  if (PyList_Check(a[0]) || PyTuple_Check(a[0]) || PyFloat_Check(a[0]) || PyLong_Check(a[0]))
    *ct_vptr(t) = 0;
  if (dev.type != CT_DEVICE_CPU) { /* built on the host, then copied over */
    ct_tensor *m = ct_to_device(t, dev);
    ct_release(t);
    if (!(t = m)) return pyct_raise();
  }
  if (a[3] && PyObject_IsTrue(a[3])) {
    if (!ct_dtype_is_floating(ct_tensor_dtype(t))) {
      ct_release(t);
      PyErr_SetString(PyExc_RuntimeError, "Only Tensors of floating point and complex dtype can require gradients");
      return NULL;
    }
    if (ct_requires_grad_(t, true) != CT_OK) {
      ct_release(t);
      return pyct_raise();
    }
  }
  return pyct_wrap(t);
}

/* torch.as_tensor / asarray: shares a tensor's (or array's) memory when no conversion is needed. */
static PyObject *m_as_tensor(PyObject *m, PyObject *args, PyObject *kwargs) {
  static const char *const kw[] = {"data", "dtype", "device", NULL};
  PyObject *a[3];
  if (!pyct_args("as_tensor", args, 0, kwargs, kw, 1, a)) return NULL;
  int dt;
  if (!pyct_dtype_opt(a[1], &dt) || !pyct_device_ok(a[2])) return NULL;
  if (pyct_is_tensor(a[0])) {
    if (dt < 0 || dt == (int)ct_tensor_dtype(TT(a[0]))) {
      Py_INCREF(a[0]);
      return a[0];
    }
    return pyct_wrap(ct_to_dtype(TT(a[0]), (ct_dtype)dt));
  }
  if (is_ndarray(a[0])) {
    PyObject *r = m_from_numpy(m, a[0]);
    if (!r || dt < 0 || dt == (int)ct_tensor_dtype(TT(r))) return r;
    PyObject *c = pyct_wrap(ct_to_dtype(TT(r), (ct_dtype)dt));
    Py_DECREF(r);
    return c;
  }
  return pyct_wrap(pyct_from_data(a[0], dt, NULL));
}

static PyMethodDef convert_functions[] = {
  {"from_numpy", m_from_numpy, METH_O, NULL},
  {"tensor", (PyCFunction)(void (*)(void))m_tensor, METH_VARARGS | METH_KEYWORDS, NULL},
  {"as_tensor", (PyCFunction)(void (*)(void))m_as_tensor, METH_VARARGS | METH_KEYWORDS, NULL},
  {NULL}};

int pyct_convert_init(PyObject *m) { return PyModule_AddFunctions(m, convert_functions); }
