/* ctorch._C: module init, dtypes, errors and argument helpers shared by every binding. */
#include "pyct.h"
#include "ctorch/cuda.h"
#include <string.h>

PyObject *pyct_tensor_class = NULL;
PyObject *pyct_size_class = NULL;
PyObject *pyct_dtypes[CT_NUM_DTYPES];

/* ---- errors ---- */
PyObject *pyct_raise(void) {
  if (PyErr_Occurred()) return NULL; /* a Python exception from a callback wins */
  const char *msg = ct_last_error();
  PyObject *exc;
  switch (ct_last_status()) {
    case CT_ERR_INDEX: exc = PyExc_IndexError; break;
    case CT_ERR_TYPE: exc = PyExc_TypeError; break;
    case CT_ERR_VALUE: exc = PyExc_ValueError; break;
    case CT_ERR_NOT_IMPLEMENTED: exc = PyExc_NotImplementedError; break;
    default: exc = PyExc_RuntimeError; break;
  }
  PyErr_SetString(exc, msg && *msg ? msg : "unknown ctorch error");
  return NULL;
}

PyObject *pyct_wrap_as(PyTypeObject *cls, ct_tensor *t) {
  if (!t) return pyct_raise();
  if (PyErr_Occurred()) { /* a C warning the filters turned into an error */
    ct_release(t);
    return NULL;
  }
  TensorObject *o = (TensorObject *)cls->tp_alloc(cls, 0);
  if (!o) {
    ct_release(t);
    return NULL;
  }
  o->t = t;
  return (PyObject *)o;
}

static void link_one(PyObject *self, PyObject *r) {
  if (!pyct_is_tensor(r)) return;
  TensorObject *v = (TensorObject *)r, *s = (TensorObject *)self;
  ct_tensor *root = ct_view_base(v->t);
  if (!root || r == self || v->base_obj) return;
  PyObject *bo = NULL;
  if (s->t == root)
    bo = self;
  else if (s->base_obj && TT(s->base_obj) == root)
    bo = s->base_obj;
  if (bo) {
    Py_INCREF(bo);
    v->base_obj = bo;
  }
}

PyObject *pyct_link_base(PyObject *self, PyObject *r) {
  if (!r || !self || !pyct_is_tensor(self)) return r;
  if (PyTuple_Check(r)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r); i++) link_one(self, PyTuple_GET_ITEM(r, i));
  } else {
    link_one(self, r);
  }
  return r;
}

PyObject *pyct_wrap(ct_tensor *t) {
  PyTypeObject *cls = pyct_tensor_class ? (PyTypeObject *)pyct_tensor_class : &TensorBase_Type;
  return pyct_wrap_as(cls, t);
}

PyObject *pyct_status(ct_status st, PyObject *ret) {
  if (st != CT_OK) return pyct_raise();
  if (PyErr_Occurred()) return NULL; /* a C warning the filters turned into an error */
  if (!ret) Py_RETURN_NONE;
  Py_INCREF(ret);
  return ret;
}

/* ---- dtype objects ---- */
static PyObject *dtype_repr(DtypeObject *d) { return PyUnicode_FromFormat("torch.%s", ct_dtype_name(d->dt)); }
static PyObject *dtype_is_floating(DtypeObject *d, void *c) { return PyBool_FromLong(ct_dtype_is_floating(d->dt)); }
static PyObject *dtype_is_signed(DtypeObject *d, void *c) {
  return PyBool_FromLong(d->dt != CT_UINT8 && d->dt != CT_BOOL);
}
static PyObject *dtype_is_complex(DtypeObject *d, void *c) { Py_RETURN_FALSE; }
static PyObject *dtype_itemsize(DtypeObject *d, void *c) { return PyLong_FromSize_t(ct_dtype_size(d->dt)); }
static PyObject *dtype_index(DtypeObject *d, void *c) { return PyLong_FromLong(d->dt); }
static PyObject *dtype_reduce(DtypeObject *d, PyObject *unused) {
  return PyUnicode_FromString(ct_dtype_name(d->dt));
}
static PyGetSetDef dtype_getset[] = {
  {"is_floating_point", (getter)dtype_is_floating, NULL, NULL, NULL},
  {"is_signed", (getter)dtype_is_signed, NULL, NULL, NULL},
  {"is_complex", (getter)dtype_is_complex, NULL, NULL, NULL},
  {"itemsize", (getter)dtype_itemsize, NULL, NULL, NULL},
  {"_index", (getter)dtype_index, NULL, NULL, NULL},
  {NULL}};
static PyMethodDef dtype_methods[] = {{"__reduce__", (PyCFunction)dtype_reduce, METH_NOARGS, NULL}, {NULL}};
PyTypeObject Dtype_Type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "torch.dtype",
  .tp_basicsize = sizeof(DtypeObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_repr = (reprfunc)dtype_repr,
  .tp_getset = dtype_getset,
  .tp_methods = dtype_methods,
};

PyObject *pyct_dtype_obj(ct_dtype dt) { return pyct_dtypes[dt]; }

/* ---- scalar / argument conversion ---- */
int pyct_is_number(PyObject *o) {
  return PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o);
}

int pyct_scalar(PyObject *o, ct_scalar *s) {
  if (PyBool_Check(o)) {
    *s = ct_sb(o == Py_True);
    return 1;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
      PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long");
      return 0;
    }
    if (v == -1 && PyErr_Occurred()) return 0;
    *s = ct_si(v);
    return 1;
  }
  if (PyFloat_Check(o)) {
    *s = ct_sf(PyFloat_AS_DOUBLE(o));
    return 1;
  }
  if (pyct_is_tensor(o)) {
    if (ct_numel(TT(o)) != 1) {
      PyErr_SetString(PyExc_RuntimeError, "a Tensor with more than one element cannot be converted to Scalar");
      return 0;
    }
    *s = ct_item(TT(o));
    if (ct_last_status() != CT_OK && PyErr_Occurred() == NULL) {
      /* ct_item leaves status from earlier calls; only fail on a real error */
    }
    return 1;
  }
  if (PyIndex_Check(o)) {
    PyObject *i = PyNumber_Index(o);
    if (!i) return 0;
    int r = pyct_scalar(i, s);
    Py_DECREF(i);
    return r;
  }
  PyObject *f = PyNumber_Float(o);
  if (f) {
    *s = ct_sf(PyFloat_AS_DOUBLE(f));
    Py_DECREF(f);
    return 1;
  }
  PyErr_Clear();
  PyErr_Format(PyExc_TypeError, "expected a number but got %s", Py_TYPE(o)->tp_name);
  return 0;
}

int pyct_int64(PyObject *o, int64_t *v, const char *what) {
  if (PyFloat_Check(o) || (pyct_is_tensor(o) && ct_dtype_is_floating(ct_tensor_dtype(TT(o))))) {
    PyErr_Format(PyExc_TypeError, "%s must be int, not %s", what, Py_TYPE(o)->tp_name);
    return 0;
  }
  if (pyct_is_tensor(o)) {
    if (ct_numel(TT(o)) != 1) {
      PyErr_Format(PyExc_TypeError, "%s must be int, not Tensor", what);
      return 0;
    }
    if (ct_item_int64(TT(o), v) != CT_OK) return pyct_raise() != NULL;
    return 1;
  }
  if (!PyIndex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be int, not %s", what, Py_TYPE(o)->tp_name);
    return 0;
  }
  PyObject *i = PyNumber_Index(o);
  if (!i) return 0;
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (overflow) {
    PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long");
    return 0;
  }
  if (x == -1 && PyErr_Occurred()) return 0;
  *v = x;
  return 1;
}

int pyct_double(PyObject *o, double *v, const char *what) {
  if (pyct_is_tensor(o)) {
    if (ct_item_double(TT(o), v) != CT_OK) return pyct_raise() != NULL;
    return 1;
  }
  double x = PyFloat_AsDouble(o);
  if (x == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s must be a number, not %s", what, Py_TYPE(o)->tp_name);
    return 0;
  }
  *v = x;
  return 1;
}

int pyct_bool(PyObject *o, bool *v) {
  /* PyTorch's bool arguments take True/False (and numpy.bool_) only, not any truthy object */
  if (!PyBool_Check(o) && strcmp(Py_TYPE(o)->tp_name, "numpy.bool_") != 0) {
    PyErr_Format(PyExc_TypeError, "argument must be bool, not %s", Py_TYPE(o)->tp_name);
    return 0;
  }
  *v = o == Py_True || (o != Py_False && PyObject_IsTrue(o) == 1);
  return 1;
}

/* An object standing for something ctorch lacks (torch.complex64, torch.sparse_csr, ...) carries the
 * message in `_ctorch_unsupported`: raises NotImplementedError with it and returns 1. */
int pyct_refuse_unsupported(PyObject *o) {
  /* the common arguments first: a failed attribute lookup costs an exception (to(dtype) fast path) */
  if (PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyBool_Check(o) || PyUnicode_CheckExact(o) || o == Py_None ||
      Py_IS_TYPE(o, &Dtype_Type) || pyct_is_tensor(o))
    return 0;
  PyObject *msg = PyObject_GetAttrString(o, "_ctorch_unsupported");
  if (!msg) {
    PyErr_Clear();
    return 0;
  }
  PyErr_SetObject(PyExc_NotImplementedError, msg);
  Py_DECREF(msg);
  return 1;
}

int pyct_dtype_arg(PyObject *o, ct_dtype *dt) {
  if (PyObject_TypeCheck(o, &Dtype_Type)) {
    *dt = ((DtypeObject *)o)->dt;
    return 1;
  }
  if (o == (PyObject *)&PyFloat_Type) {
    *dt = CT_FLOAT64;
    return 1;
  }
  if (o == (PyObject *)&PyLong_Type) {
    *dt = CT_INT64;
    return 1;
  }
  if (o == (PyObject *)&PyBool_Type) {
    *dt = CT_BOOL;
    return 1;
  }
  if (pyct_refuse_unsupported(o)) return 0;
  PyErr_Format(PyExc_TypeError, "dtype must be torch.dtype, not %s", Py_TYPE(o)->tp_name);
  return 0;
}

int pyct_dtype_opt(PyObject *o, int *dt) {
  if (!o || o == Py_None) {
    *dt = -1;
    return 1;
  }
  ct_dtype d;
  if (!pyct_dtype_arg(o, &d)) return 0;
  *dt = (int)d;
  return 1;
}

int pyct_dims(PyObject *o, int64_t *dims, int *n, int max, const char *what) {
  *n = 0;
  if (!o || o == Py_None) return 1;
  if (PyTuple_Check(o) || PyList_Check(o)) {
    Py_ssize_t len = PySequence_Fast_GET_SIZE(o);
    if (len > max) {
      PyErr_Format(PyExc_RuntimeError, "too many dims in %s (%zd)", what, len);
      return 0;
    }
    for (Py_ssize_t i = 0; i < len; i++)
      if (!pyct_int64(PySequence_Fast_GET_ITEM(o, i), &dims[i], what)) return 0;
    *n = (int)len;
    return 1;
  }
  if (!pyct_int64(o, &dims[0], what)) return 0;
  *n = 1;
  return 1;
}

int pyct_shape_seq(PyObject *o, int64_t *shape, int *n) {
  PyObject *f = PySequence_Fast(o, "size must be a sequence of ints");
  if (!f) return 0;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(f);
  if (len > CT_MAX_DIMS) {
    Py_DECREF(f);
    PyErr_Format(PyExc_RuntimeError, "ctorch supports at most %d dims, got %zd", CT_MAX_DIMS, len);
    return 0;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject *it = PySequence_Fast_GET_ITEM(f, i);
    if (PyFloat_Check(it) || !PyIndex_Check(it)) {
      PyErr_Format(PyExc_TypeError,
                   "expected a sequence of integers or a single integer, got '%s' at position %zd",
                   Py_TYPE(it)->tp_name, i);
      Py_DECREF(f);
      return 0;
    }
    if (!pyct_int64(it, &shape[i], "size")) {
      Py_DECREF(f);
      return 0;
    }
  }
  *n = (int)len;
  Py_DECREF(f);
  return 1;
}

int pyct_shape_varargs(PyObject *args, Py_ssize_t start, int64_t *shape, int *n) {
  Py_ssize_t len = PyTuple_GET_SIZE(args) - start;
  if (len == 1) {
    PyObject *a = PyTuple_GET_ITEM(args, start);
    if (PyTuple_Check(a) || PyList_Check(a)) return pyct_shape_seq(a, shape, n);
  }
  PyObject *sl = PyTuple_GetSlice(args, start, PyTuple_GET_SIZE(args));
  if (!sl) return 0;
  int r = pyct_shape_seq(sl, shape, n);
  Py_DECREF(sl);
  return r;
}

/* A device argument (None, "cpu", "cuda:1", torch.device, an int index = cuda) into *d. Devices the
 * library cannot reach raise PyTorch's errors: without CUDA, torch's CPU-only build's AssertionError
 * (a second line says why when the backend is compiled in but finds no GPU). */
int pyct_device_arg(PyObject *dev, ct_device *d) {
  *d = ct_cpu();
  if (!dev || dev == Py_None) return 1;
  if (PyLong_Check(dev) && !PyBool_Check(dev)) {
    int over = 0;
    long long v = PyLong_AsLongLongAndOverflow(dev, &over);
    if ((v < 0 && !PyErr_Occurred()) || over < 0) {
      PyErr_SetString(PyExc_RuntimeError, "Device index must not be negative");
      return 0;
    }
  }
  PyObject *s = PyLong_Check(dev) && !PyBool_Check(dev) ? PyUnicode_FromFormat("cuda:%S", dev) : PyObject_Str(dev);
  if (!s) return 0;
  const char *c = PyUnicode_AsUTF8(s);
  int ok = 0;
  if (!c) {
  } else if (strcmp(c, "cpu") == 0 || strcmp(c, "cpu:0") == 0) {
    ok = 1;
  } else if (strncmp(c, "cuda", 4) == 0 && (c[4] == 0 || c[4] == ':')) {
    int index = 0;
    if (c[4] == ':') {
      char *end = NULL;
      long v = strtol(c + 5, &end, 10);
      if (!c[5] || *end || v < 0 || v > 1000000) {
        PyErr_Format(PyExc_RuntimeError, "Invalid device string: '%s'", c);
        Py_DECREF(s);
        return 0;
      }
      index = (int)v;
    }
    int n = ct_cuda_device_count();
    if (n == 0) {
      const char *why = ct_cuda_unavailable_reason();
      if (why && *why)
        PyErr_Format(PyExc_AssertionError, "Torch not compiled with CUDA enabled\n(ctorch: %s)", why);
      else
        PyErr_SetString(PyExc_AssertionError, "Torch not compiled with CUDA enabled");
    } else if (index >= n) {
      PyErr_Format(PyExc_RuntimeError, "CUDA error: invalid device ordinal");
    } else {
      *d = ct_cuda(index);
      ok = 1;
    }
  } else {
    PyErr_Format(PyExc_RuntimeError,
                 "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, ort, xla, lazy, "
                 "vulkan, mps, meta, hpu, privateuseone device type at start of device string: %s",
                 c);
  }
  Py_DECREF(s);
  return ok;
}

/* Callers that can only make CPU tensors: a reachable CUDA device is refused by name, never ignored. */
int pyct_device_ok(PyObject *dev) {
  ct_device d;
  if (!pyct_device_arg(dev, &d)) return 0;
  if (d.type != CT_DEVICE_CPU) {
    PyErr_SetString(PyExc_NotImplementedError, "ctorch: this function makes CPU tensors only; create the tensor "
                                               "on the CPU and move it with .to(device)");
    return 0;
  }
  return 1;
}

int pyct_options(PyObject *dtype, PyObject *device, PyObject *requires_grad, ct_options *o, int *has_dtype) {
  *o = ct_opts();
  if (has_dtype) *has_dtype = 0;
  if (dtype && dtype != Py_None) {
    ct_dtype d;
    if (!pyct_dtype_arg(dtype, &d)) return 0;
    o->dtype = d;
    if (has_dtype) *has_dtype = 1;
  }
  if (!pyct_device_arg(device, &o->device)) return 0;
  if (requires_grad && requires_grad != Py_None) {
    bool b;
    if (!pyct_bool(requires_grad, &b)) return 0;
    o->requires_grad = b;
  }
  return 1;
}

PyObject *pyct_make_size(int n, const int64_t *shape) {
  PyObject *tup = PyTuple_New(n);
  if (!tup) return NULL;
  for (int i = 0; i < n; i++) PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(shape[i]));
  if (!pyct_size_class) return tup;
  PyObject *r = PyObject_CallOneArg(pyct_size_class, tup);
  Py_DECREF(tup);
  return r;
}

/* The only core-internal helper used here: a 0-dim "wrapped number" that promotes by category. */
extern ct_tensor *ct_wrap_scalar(ct_scalar s);

ct_tensor *pyct_operand(PyObject *o) {
  if (pyct_is_tensor(o)) return ct_retain(TT(o));
  if (pyct_is_number(o)) {
    ct_scalar s;
    if (!pyct_scalar(o, &s)) return NULL;
    ct_tensor *t = ct_wrap_scalar(s);
    if (!t) pyct_raise();
    return t;
  }
  ct_tensor *t = pyct_from_data(o, -1, NULL);
  return t;
}

/* ---- argument parser ---- */
int pyct_args(const char *fname, PyObject *args, Py_ssize_t skip, PyObject *kwargs, const char *const *kw,
              int nrequired, PyObject **out) {
  int nkw = 0, npos_max = -1;
  for (; kw[nkw]; nkw++)
    if (strcmp(kw[nkw], "*") == 0 && npos_max < 0) npos_max = nkw;
  Py_ssize_t nargs = args ? PyTuple_GET_SIZE(args) - skip : 0;
  int slot = 0;
  int slots_total = nkw - (npos_max >= 0 ? 1 : 0);
  for (int i = 0; i < slots_total; i++) out[i] = NULL;
  int max_pos = npos_max >= 0 ? npos_max : nkw;
  if (nargs > max_pos) {
    PyErr_Format(PyExc_TypeError, "%s() takes %d positional arguments but %zd were given", fname, max_pos, nargs);
    return 0;
  }
  for (Py_ssize_t i = 0; i < nargs; i++) out[i] = PyTuple_GET_ITEM(args, i + skip);
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &val)) {
      const char *k = PyUnicode_AsUTF8(key);
      if (!k) return 0;
      int found = -1;
      slot = 0;
      for (int j = 0; j < nkw; j++) {
        if (strcmp(kw[j], "*") == 0) continue;
        if (strcmp(kw[j], k) == 0) {
          found = slot;
          break;
        }
        slot++;
      }
      if (found < 0) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", fname, k);
        return 0;
      }
      if (out[found]) {
        PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname, k);
        return 0;
      }
      out[found] = val;
      /* complex/quantized dtypes and sparse layouts exist as names only: refuse them clearly */
      if (val != Py_None && (strcmp(k, "layout") == 0 || strcmp(k, "dtype") == 0) && pyct_refuse_unsupported(val))
        return 0;
    }
  }
  slot = 0;
  for (int j = 0; j < nkw && slot < nrequired; j++) {
    if (strcmp(kw[j], "*") == 0) continue;
    if (!out[slot]) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname, kw[j]);
      return 0;
    }
    slot++;
  }
  return 1;
}

/* ---- PyTorch's argument-parser errors for overloaded ops (see pyct.h) ---- */
int pyct_in_function = 0;
PyObject *pyct_arg_error(const char *name, PyObject *self, PyObject *args, PyObject *kwargs) {
  /* only the ops whose signatures ctorch/_argerr.py knows; the check keeps other error paths cheap */
  static const char *const known[] = {"add", "sum", "mean", "max", "min", "clamp", "clip", "where", "cat", "view",
                                      "reshape", "to", "zeros", "ones", "full", "arange", "randn", "median", NULL};
  static PyObject *hook = NULL;
  if (!PyErr_Occurred()) return NULL;
  int k = 0;
  while (known[k] && strcmp(known[k], name) != 0) k++;
  if (!known[k]) return NULL;
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  PyErr_NormalizeException(&et, &ev, &tb);
  if (!hook) {
    PyObject *mod = PyImport_ImportModule("ctorch._argerr");
    if (mod) {
      hook = PyObject_GetAttrString(mod, "parser_error");
      Py_DECREF(mod);
    }
  }
  PyObject *repl = NULL;
  if (hook) {
    PyObject *a = args ? args : PyTuple_New(0);
    repl = a ? PyObject_CallFunction(hook, "siOOOO", name, self != NULL, a, kwargs ? kwargs : Py_None,
                                     ev ? ev : Py_None, self ? self : Py_None)
             : NULL;
    if (a && a != args) Py_DECREF(a);
  }
  if (!repl || repl == Py_None) {
    /* no replacement (or the hook itself failed): the original error stands */
    PyErr_Clear();
    Py_XDECREF(repl);
    PyErr_Restore(et, ev, tb);
    return NULL;
  }
  Py_XDECREF(et);
  Py_XDECREF(ev);
  Py_XDECREF(tb);
  PyErr_SetObject((PyObject *)Py_TYPE(repl), repl);
  Py_DECREF(repl);
  return NULL;
}

/* ---- module-level misc functions ---- */
static PyObject *m_set_classes(PyObject *m, PyObject *args) {
  PyObject *tc, *sc;
  if (!PyArg_ParseTuple(args, "OO", &tc, &sc)) return NULL;
  Py_XINCREF(tc);
  Py_XSETREF(pyct_tensor_class, tc);
  Py_XINCREF(sc);
  Py_XSETREF(pyct_size_class, sc);
  Py_RETURN_NONE;
}
static PyObject *m_get_default_dtype(PyObject *m, PyObject *a) {
  PyObject *d = pyct_dtype_obj(ct_get_default_dtype());
  Py_INCREF(d);
  return d;
}
static PyObject *m_set_default_dtype(PyObject *m, PyObject *a) {
  ct_dtype dt;
  if (!pyct_dtype_arg(a, &dt)) return NULL;
  if (!ct_dtype_is_floating(dt)) {
    PyErr_SetString(PyExc_TypeError, "only floating-point types are supported as the default type");
    return NULL;
  }
  return pyct_status(ct_set_default_dtype(dt), NULL);
}
static PyObject *m_promote_types(PyObject *m, PyObject *args) {
  PyObject *a, *b;
  ct_dtype x, y;
  if (!PyArg_ParseTuple(args, "OO", &a, &b) || !pyct_dtype_arg(a, &x) || !pyct_dtype_arg(b, &y)) return NULL;
  PyObject *d = pyct_dtype_obj(ct_promote_types(x, y));
  Py_INCREF(d);
  return d;
}
static PyObject *m_can_cast(PyObject *m, PyObject *args) {
  PyObject *a, *b;
  ct_dtype x, y;
  if (!PyArg_ParseTuple(args, "OO", &a, &b) || !pyct_dtype_arg(a, &x) || !pyct_dtype_arg(b, &y)) return NULL;
  return PyBool_FromLong(ct_can_cast(x, y));
}
static PyObject *m_get_num_threads(PyObject *m, PyObject *a) { return PyLong_FromLong(ct_get_num_threads()); }
static PyObject *m_set_num_threads(PyObject *m, PyObject *a) {
  int64_t n;
  if (!pyct_int64(a, &n, "n")) return NULL;
  return pyct_status(ct_set_num_threads((int)n), NULL);
}
static PyObject *m_live_tensors(PyObject *m, PyObject *a) { return PyLong_FromLongLong(ct_live_tensors()); }

/* torch.cuda's queries over the C backend (0 devices without the backend, a driver or a GPU) */
static PyObject *m_cuda_device_count(PyObject *m, PyObject *u) { return PyLong_FromLong(ct_cuda_device_count()); }
static PyObject *m_cuda_reason(PyObject *m, PyObject *u) { return PyUnicode_FromString(ct_cuda_unavailable_reason()); }
static PyObject *m_backends_compiled(PyObject *m, PyObject *u) { return PyUnicode_FromString(ct_backends_compiled()); }
/* a CUDA device index argument (a Python int); false with the Python error set */
static bool dev_arg(PyObject *arg, int *dev) {
  long i = PyLong_AsLong(arg);
  if (i == -1 && PyErr_Occurred()) return false;
  *dev = i > INT_MAX || i < INT_MIN ? -1 : (int)i; /* out of int's range: no such device (-1), not a wrapped one */
  return true;
}
static PyObject *m_cuda_device_name(PyObject *m, PyObject *arg) {
  int i;
  if (!dev_arg(arg, &i)) return NULL;
  if (i < 0 || i >= ct_cuda_device_count()) {
    PyErr_SetString(PyExc_AssertionError, "Invalid device id");
    return NULL;
  }
  return PyUnicode_FromString(ct_cuda_device_name(i));
}
static PyObject *m_cuda_synchronize(PyObject *m, PyObject *arg) {
  int i;
  if (!dev_arg(arg, &i)) return NULL;
  if (ct_cuda_synchronize(i) != CT_OK) return pyct_raise();
  Py_RETURN_NONE;
}

/* torch.backends.cuda.matmul.allow_tf32 and torch.autocast("cuda", torch.bfloat16) over the C switches */
static PyObject *m_cuda_set_allow_tf32(PyObject *m, PyObject *arg) {
  int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  ct_cuda_set_allow_tf32(on);
  Py_RETURN_NONE;
}
static PyObject *m_cuda_allow_tf32(PyObject *m, PyObject *u) { return PyBool_FromLong(ct_cuda_allow_tf32()); }
static PyObject *m_cudnn_set_allow_tf32(PyObject *m, PyObject *arg) {
  int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  ct_cuda_set_cudnn_allow_tf32(on);
  Py_RETURN_NONE;
}
static PyObject *m_cudnn_allow_tf32(PyObject *m, PyObject *u) { return PyBool_FromLong(ct_cuda_cudnn_allow_tf32()); }
/* (bf16 matrix products, bf16 activations): both off, or the products only (C's bf16-fp32act), or both */
static PyObject *m_cuda_set_autocast_bf16(PyObject *m, PyObject *args) {
  int mm, outs;
  if (!PyArg_ParseTuple(args, "pp", &mm, &outs)) return NULL;
  if (ct_cuda_set_autocast_bf16(mm) != CT_OK) return pyct_raise();
  if (ct_cuda_set_autocast_bf16_outputs(mm && outs) != CT_OK) return pyct_raise();
  Py_RETURN_NONE;
}
static PyObject *m_cuda_autocast_bf16(PyObject *m, PyObject *u) {
  return Py_BuildValue("(OO)", ct_cuda_autocast_bf16() ? Py_True : Py_False,
                       ct_cuda_autocast_bf16_outputs() ? Py_True : Py_False);
}

/* torch.cuda.CUDAGraph over ct_cuda_graph_begin / ct_cuda_graph_end: the graph travels as a capsule of a
 * one-pointer box, so that reset() can free it before the capsule goes (the box is then empty). */
typedef struct {
  ct_cuda_graph *g;
} graph_box;
static void graph_capsule_free(PyObject *cap) {
  graph_box *b = PyCapsule_GetPointer(cap, "ctorch.cuda_graph");
  if (!b) return;
  ct_cuda_graph_free(b->g);
  free(b);
}
static graph_box *graph_arg(PyObject *cap) { return PyCapsule_GetPointer(cap, "ctorch.cuda_graph"); }
static PyObject *m_cuda_is_capturing(PyObject *m, PyObject *arg) {
  int i;
  if (!dev_arg(arg, &i)) return NULL;
  return PyBool_FromLong(ct_cuda_is_capturing(i));
}
static PyObject *m_cuda_graph_begin(PyObject *m, PyObject *arg) {
  int i;
  if (!dev_arg(arg, &i)) return NULL;
  if (ct_cuda_graph_begin(i) != CT_OK) return pyct_raise();
  Py_RETURN_NONE;
}
/* (device, ok): ok false (the captured Python code raised) ends and discards the capture; None then */
static PyObject *m_cuda_graph_end(PyObject *m, PyObject *args) {
  int dev, ok;
  if (!PyArg_ParseTuple(args, "ip", &dev, &ok)) return NULL;
  ct_cuda_graph *g = ct_cuda_graph_end(dev, ok ? CT_OK : CT_ERR_RUNTIME);
  if (!ok) {
    ct_clear_error();
    Py_RETURN_NONE;
  }
  if (!g) return pyct_raise();
  graph_box *b = malloc(sizeof *b);
  PyObject *cap = b ? PyCapsule_New(b, "ctorch.cuda_graph", graph_capsule_free) : NULL;
  if (!cap) {
    free(b);
    ct_cuda_graph_free(g);
    return b ? NULL : PyErr_NoMemory();
  }
  b->g = g;
  return cap;
}
static PyObject *m_cuda_graph_replay(PyObject *m, PyObject *cap) {
  graph_box *b = graph_arg(cap);
  if (!b) return NULL;
  if (!b->g) {
    PyErr_SetString(PyExc_RuntimeError, "CUDA graph replay: the graph was reset");
    return NULL;
  }
  if (ct_cuda_graph_replay(b->g) != CT_OK) return pyct_raise();
  Py_RETURN_NONE;
}
static PyObject *m_cuda_graph_nodes(PyObject *m, PyObject *cap) {
  graph_box *b = graph_arg(cap);
  return b ? PyLong_FromLongLong(ct_cuda_graph_num_nodes(b->g)) : NULL;
}
static PyObject *m_cuda_graph_reset(PyObject *m, PyObject *cap) {
  graph_box *b = graph_arg(cap);
  if (!b) return NULL;
  ct_cuda_graph_free(b->g);
  b->g = NULL;
  Py_RETURN_NONE;
}

/* torch.cuda's memory queries: (allocated, cached, peak allocated, system allocations) of CUDA device i */
static PyObject *m_cuda_memory_stats(PyObject *m, PyObject *arg) {
  int i;
  if (!dev_arg(arg, &i)) return NULL;
  ct_memory_stats st = ct_memory_get_stats(ct_cuda(i));
  return Py_BuildValue("(LLLL)", (long long)st.allocated_bytes, (long long)st.cached_bytes,
                       (long long)st.peak_allocated_bytes, (long long)st.n_allocs);
}
static PyObject *m_cuda_empty_cache(PyObject *m, PyObject *arg) {
  int i;
  if (!dev_arg(arg, &i)) return NULL;
  ct_memory_empty_cache(ct_cuda(i));
  Py_RETURN_NONE;
}
static PyObject *m_cuda_reset_peak(PyObject *m, PyObject *arg) {
  int i;
  if (!dev_arg(arg, &i)) return NULL;
  ct_memory_reset_peak(ct_cuda(i));
  Py_RETURN_NONE;
}

static PyObject *m_cuda_device_properties(PyObject *m, PyObject *arg) {
  int i;
  if (!dev_arg(arg, &i)) return NULL;
  ct_cuda_device_props p;
  if (ct_cuda_get_device_properties(i, &p) != CT_OK) return pyct_raise();
  return Py_BuildValue("(sLiii)", p.name, (long long)p.total_memory, p.major, p.minor, p.multi_processor_count);
}
static PyObject *m_cuda_mem_get_info(PyObject *m, PyObject *arg) {
  int i;
  if (!dev_arg(arg, &i)) return NULL;
  int64_t fr = 0, tot = 0;
  if (ct_cuda_mem_get_info(i, &fr, &tot) != CT_OK) return pyct_raise();
  return Py_BuildValue("(LL)", (long long)fr, (long long)tot);
}

static PyMethodDef misc_functions[] = {
  {"_cuda_device_properties", m_cuda_device_properties, METH_O, NULL},
  {"_cuda_mem_get_info", m_cuda_mem_get_info, METH_O, NULL},
  {"_cuda_memory_stats", m_cuda_memory_stats, METH_O, NULL},
  {"_cuda_empty_cache", m_cuda_empty_cache, METH_O, NULL},
  {"_cuda_reset_peak", m_cuda_reset_peak, METH_O, NULL},
  {"_cuda_set_allow_tf32", m_cuda_set_allow_tf32, METH_O, NULL},
  {"_cuda_allow_tf32", m_cuda_allow_tf32, METH_NOARGS, NULL},
  {"_cudnn_set_allow_tf32", m_cudnn_set_allow_tf32, METH_O, NULL},
  {"_cudnn_allow_tf32", m_cudnn_allow_tf32, METH_NOARGS, NULL},
  {"_cuda_set_autocast_bf16", m_cuda_set_autocast_bf16, METH_VARARGS, NULL},
  {"_cuda_autocast_bf16", m_cuda_autocast_bf16, METH_NOARGS, NULL},
  {"_cuda_is_capturing", m_cuda_is_capturing, METH_O, NULL},
  {"_cuda_graph_begin", m_cuda_graph_begin, METH_O, NULL},
  {"_cuda_graph_end", m_cuda_graph_end, METH_VARARGS, NULL},
  {"_cuda_graph_replay", m_cuda_graph_replay, METH_O, NULL},
  {"_cuda_graph_nodes", m_cuda_graph_nodes, METH_O, NULL},
  {"_cuda_graph_reset", m_cuda_graph_reset, METH_O, NULL},
  {"_cuda_device_count", m_cuda_device_count, METH_NOARGS, NULL},
  {"_cuda_unavailable_reason", m_cuda_reason, METH_NOARGS, NULL},
  {"_backends_compiled", m_backends_compiled, METH_NOARGS, NULL},
  {"_cuda_device_name", m_cuda_device_name, METH_O, NULL},
  {"_cuda_synchronize", m_cuda_synchronize, METH_O, NULL},
  {"_set_classes", m_set_classes, METH_VARARGS, NULL},
  {"get_default_dtype", m_get_default_dtype, METH_NOARGS, NULL},
  {"set_default_dtype", m_set_default_dtype, METH_O, NULL},
  {"promote_types", m_promote_types, METH_VARARGS, NULL},
  {"can_cast", m_can_cast, METH_VARARGS, NULL},
  {"get_num_threads", m_get_num_threads, METH_NOARGS, NULL},
  {"set_num_threads", m_set_num_threads, METH_O, NULL},
  {"_live_tensors", m_live_tensors, METH_NOARGS, NULL},
  {NULL}};

/* The C library's warnings (out= resized, ...) become Python UserWarnings, filtered and raised as Python's
 * warnings machinery decides; a warning turned into an error stays set and the binding returns NULL. */
int pyct_linalg_init(PyObject *m); /* linalg.c */

static void py_warn(const char *msg, void *user) {
  (void)user;
  if (!PyGILState_Check()) {
    /* a library worker thread while the caller holds the GIL and waits for it: taking the GIL here would
     * deadlock, so such a warning goes to stderr */
    fprintf(stderr, "ctorch: UserWarning: %s\n", msg);
    return;
  }
  PyGILState_STATE g = PyGILState_Ensure();
  if (!PyErr_Occurred()) PyErr_WarnEx(PyExc_UserWarning, msg, 1);
  PyGILState_Release(g);
}

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "ctorch._C", "ctorch C extension", -1, NULL};

PyMODINIT_FUNC PyInit__C(void) {
  PyObject *m = PyModule_Create(&moddef);
  if (!m) return NULL;
  if (PyType_Ready(&Dtype_Type) < 0) return NULL;
  for (int i = 0; i < CT_NUM_DTYPES; i++) {
    DtypeObject *d = PyObject_New(DtypeObject, &Dtype_Type);
    d->dt = (ct_dtype)i;
    pyct_dtypes[i] = (PyObject *)d;
    PyModule_AddObjectRef(m, ct_dtype_name((ct_dtype)i), (PyObject *)d);
  }
  PyModule_AddObjectRef(m, "dtype", (PyObject *)&Dtype_Type);
  if (PyModule_AddFunctions(m, misc_functions) < 0) return NULL;
  if (pyct_tensor_init(m) < 0 || pyct_convert_init(m) < 0 || pyct_ops_init(m) < 0 || pyct_autograd_init(m) < 0 ||
      pyct_random_init(m) < 0 || pyct_linalg_init(m) < 0)
    return NULL;
  ct_set_warn_handler(py_warn, NULL);
  return m;
}
