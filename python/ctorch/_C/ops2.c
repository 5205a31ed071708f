/* Op bindings, part 2: factories, joining/splitting, indexing ops, linear algebra,
 * the functional nn ops and losses, and the named-tuple return types. */
#include "ops_common.h"
#include <string.h>
#include <structmember.h>

#define MAXT 1024 /* tensors in one list argument */

/* ---- return types: torch.return_types.<name>(values=..., indices=...) ---- */
static PyObject *rt_types = NULL; /* name -> type */

static PyObject *rt_repr(PyObject *self) {
  /* PyTorch prints one field per line */
  PyTypeObject *tp = Py_TYPE(self);
  PyObject *parts = PyList_New(0);
  Py_ssize_t n = PyTuple_GET_SIZE(self);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *r = PyObject_Repr(PyTuple_GET_ITEM(self, i));
    if (!r) {
      Py_DECREF(parts);
      return NULL;
    }
    PyObject *line = PyUnicode_FromFormat("%s=%U", tp->tp_members[i].name, r);
    Py_DECREF(r);
    PyList_Append(parts, line);
    Py_DECREF(line);
  }
  PyObject *sep = PyUnicode_FromString(",\n");
  PyObject *body = PyUnicode_Join(sep, parts);
  Py_DECREF(sep);
  Py_DECREF(parts);
  if (!body) return NULL;
  PyObject *r = PyUnicode_FromFormat("%s(\n%U)", tp->tp_name, body);
  Py_DECREF(body);
  return r;
}

/* torch.return_types.<name>: (values, indices), created on first use */
static PyTypeObject *return_type(const char *name) {
  PyObject *tp = PyDict_GetItemString(rt_types, name);
  if (tp) return (PyTypeObject *)tp;
  static PyStructSequence_Field fields[] = {{"values", NULL}, {"indices", NULL}, {NULL, NULL}};
  char *full = PyMem_Malloc(strlen(name) + 32); /* kept: the type's name points into it */
  if (!full) return (PyTypeObject *)PyErr_NoMemory();
  strcpy(full, "torch.return_types.");
  strcat(full, name);
  PyStructSequence_Desc desc = {full, NULL, fields, 2};
  PyTypeObject *t = PyStructSequence_NewType(&desc);
  if (!t) return NULL;
  t->tp_repr = rt_repr;
  PyDict_SetItemString(rt_types, name, (PyObject *)t);
  Py_DECREF(t);
  return t;
}
PyObject *pyct_return_pair_obj(const char *name, PyObject *va, PyObject *vb) {
  PyTypeObject *tp = va && vb ? return_type(name) : NULL;
  PyObject *r = tp ? PyStructSequence_New(tp) : NULL;
  if (!r) {
    Py_XDECREF(va);
    Py_XDECREF(vb);
    return NULL;
  }
  PyStructSequence_SetItem(r, 0, va);
  PyStructSequence_SetItem(r, 1, vb);
  return r;
}
PyObject *pyct_return_pair(const char *name, ct_tensor *a, ct_tensor *b) {
  PyObject *va = pyct_wrap(a);
  PyObject *vb = pyct_wrap(b);
  return pyct_return_pair_obj(name, va, vb);
}

/* ---- factories ---- */
/* zeros(*size, *, out, dtype, layout, device, requires_grad, pin_memory) */
static int factory_args(const char *fname, PyObject *args, PyObject *kwargs, int64_t *shape, int *n, ct_options *o,
                        int *has_dtype, PyObject **generator) {
  static const char *const kw[] = {"size", "*", "out", "dtype", "layout", "device", "requires_grad",
                                   "pin_memory", "generator", "memory_format", NULL};
  PyObject *a[10];
  PyObject *sz = kwargs ? PyDict_GetItemString(kwargs, "size") : NULL;
  PyObject *empty = PyTuple_New(0);
  int ok = pyct_args(fname, empty, 0, kwargs, kw, 0, a);
  Py_DECREF(empty);
  if (!ok) return 0;
  if (sz) {
    if (PyTuple_GET_SIZE(args)) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument 'size'", fname);
      return 0;
    }
    if (!pyct_shape_seq(sz, shape, n)) return 0;
  } else if (!pyct_shape_varargs(args, 0, shape, n))
    return 0;
  if (GIVEN(a[1])) {
    PyErr_Format(PyExc_NotImplementedError, "%s(out=...) is not implemented in ctorch", fname);
    return 0;
  }
  if (generator) *generator = a[7];
  else if (GIVEN(a[7])) {
    PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument 'generator'", fname);
    return 0;
  }
  return pyct_options(a[2], a[4], a[5], o, has_dtype);
}
#define FACTORY(name, call)                                                            \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {         \
    int64_t shape[CT_MAX_DIMS];                                                        \
    int n;                                                                             \
    ct_options o;                                                                      \
    if (!factory_args(#name, args, kwargs, shape, &n, &o, NULL, NULL))                 \
      return pyct_arg_error(#name, NULL, args, kwargs);                                   \
    return pyct_wrap(call);                                                            \
  }
FACTORY(zeros, ct_zeros(n, shape, o))
FACTORY(ones, ct_ones(n, shape, o))
FACTORY(empty, ct_zeros(n, shape, o)) /* zero-filled: deterministic "uninitialised" memory */

/* random factories need the generator: rand/randn(*size, generator=...) */
extern ct_generator *pyct_generator(PyObject *o);
static PyObject *f_rand(PyObject *mod, PyObject *args, PyObject *kwargs) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  ct_options o;
  PyObject *g = NULL;
  if (!factory_args("rand", args, kwargs, shape, &n, &o, NULL, &g)) return NULL;
  ct_generator *gen = pyct_generator(g);
  if (!gen && PyErr_Occurred()) return NULL;
  return pyct_wrap(ct_rand(n, shape, o, gen));
}
FUNCTION(randn) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  ct_options o;
  PyObject *g = NULL;
  if (!factory_args("randn", args, kwargs, shape, &n, &o, NULL, &g)) return NULL;
  ct_generator *gen = pyct_generator(g);
  if (!gen && PyErr_Occurred()) return NULL;
  return pyct_wrap(ct_randn(n, shape, o, gen));
}

FUNCTION(full) {
  ARGS("full", 2, "size", "fill_value", "*", "out", "dtype", "layout", "device", "requires_grad", "pin_memory");
  int64_t shape[CT_MAX_DIMS];
  int n, hd;
  ct_options o;
  ct_scalar v;
  if (!pyct_shape_seq(a[0], shape, &n) || !pyct_scalar(a[1], &v) || !pyct_options(a[3], a[5], a[6], &o, &hd))
    return NULL;
  if (!hd) o.dtype = v.kind == CT_SCALAR_BOOL ? CT_BOOL : v.kind == CT_SCALAR_INT ? CT_INT64 : ct_get_default_dtype();
  return pyct_wrap(ct_full(n, shape, v, o));
}

FUNCTION(arange) {
  ARGS("arange", 1, "start", "end", "step", "*", "out", "dtype", "layout", "device", "requires_grad", "pin_memory");
  ct_scalar s0 = ct_si(0), s1, st = ct_si(1);
  if (!GIVEN(a[1])) {
    if (!pyct_scalar(a[0], &s1)) return NULL;
  } else {
    if (!pyct_scalar(a[0], &s0) || !pyct_scalar(a[1], &s1)) return NULL;
    if (GIVEN(a[2]) && !pyct_scalar(a[2], &st)) return NULL;
  }
  ct_options o;
  int hd;
  if (!pyct_options(a[4], a[6], a[7], &o, &hd)) return NULL;
  return pyct_wrap(ct_arange(s0, s1, st, hd || o.requires_grad ? &o : NULL));
}

static PyObject *f_linspace(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("linspace", 3, "start", "end", "steps", "*", "out", "dtype", "layout", "device", "requires_grad");
  double s, e;
  int64_t n;
  ct_options o;
  if (!pyct_double(a[0], &s, "start") || !pyct_double(a[1], &e, "end") || !pyct_int64(a[2], &n, "steps") ||
      !pyct_options(a[4], a[6], a[7], &o, NULL))
    return NULL;
  return pyct_wrap(ct_linspace(s, e, n, o));
}
static PyObject *f_logspace(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("logspace", 3, "start", "end", "steps", "base", "*", "out", "dtype", "layout", "device", "requires_grad");
  double s, e, b;
  int64_t n;
  ct_options o;
  if (!pyct_double(a[0], &s, "start") || !pyct_double(a[1], &e, "end") || !pyct_int64(a[2], &n, "steps") ||
      !opt_f64(a[3], 10.0, &b, "base") || !pyct_options(a[5], a[7], a[8], &o, NULL))
    return NULL;
  return pyct_wrap(ct_logspace(s, e, n, b, o));
}
static PyObject *f_eye(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("eye", 1, "n", "m", "*", "out", "dtype", "layout", "device", "requires_grad", "pin_memory");
  int64_t n, m;
  ct_options o;
  if (!pyct_int64(a[0], &n, "n") || !opt_i64(a[1], -1, &m, "m") || !pyct_options(a[3], a[5], a[6], &o, NULL))
    return NULL;
  return pyct_wrap(ct_eye(n, m, o));
}
static PyObject *f_scalar_tensor(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("scalar_tensor", 1, "s", "*", "dtype", "layout", "device", "requires_grad", "pin_memory");
  ct_scalar v;
  ct_options o;
  if (!pyct_scalar(a[0], &v) || !pyct_options(a[1], a[3], a[4], &o, NULL)) return NULL;
  return pyct_wrap(ct_scalar_tensor(v, o));
}

/* *_like(input, *, dtype, layout, device, requires_grad, memory_format) */
#define LIKE(name, call)                                                                          \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {                    \
    ARGS(#name, 1, "input", "*", "dtype", "layout", "device", "requires_grad", "memory_format",   \
         "pin_memory");                                                                           \
    ct_tensor *x = tensor_arg(a[0], #name, "input", 1);                                           \
    ct_options o;                                                                                 \
    int hd;                                                                                       \
    if (!x || !pyct_options(a[1], a[3], a[4], &o, &hd)) return NULL;                              \
    if (!hd) o.dtype = ct_tensor_dtype(x);                                                        \
    if (!GIVEN(a[3])) o.device = ct_tensor_device(x); /* *_like: the input's device */           \
    return pyct_wrap(call);                                                                       \
  }
LIKE(zeros_like, ct_zeros_like(x, &o))
LIKE(ones_like, ct_ones_like(x, &o))
LIKE(empty_like, ct_zeros_like(x, &o))
static PyObject *f_full_like(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("full_like", 2, "input", "fill_value", "*", "dtype", "layout", "device", "requires_grad", "memory_format");
  ct_tensor *x = tensor_arg(a[0], "full_like", "input", 1);
  ct_options o;
  ct_scalar v;
  int hd;
  if (!x || !pyct_scalar(a[1], &v) || !pyct_options(a[2], a[4], a[5], &o, &hd)) return NULL;
  if (!hd) o.dtype = ct_tensor_dtype(x);
  if (!GIVEN(a[4])) o.device = ct_tensor_device(x);
  return pyct_wrap(ct_full_like(x, v, &o));
}

/* new_zeros(size, *, dtype=self.dtype, ...) */
static int new_args(PyObject *self, const char *fname, PyObject *args, PyObject *kwargs, int64_t *shape, int *n,
                    ct_options *o) {
  PyObject *sz = kwargs ? PyDict_GetItemString(kwargs, "size") : NULL;
  static const char *const kw[] = {"size", "*", "dtype", "layout", "device", "requires_grad", "pin_memory", NULL};
  PyObject *a[7];
  PyObject *empty = PyTuple_New(0);
  int ok = pyct_args(fname, empty, 0, kwargs, kw, 0, a);
  Py_DECREF(empty);
  if (!ok) return 0;
  if (sz) {
    if (!pyct_shape_seq(sz, shape, n)) return 0;
  } else if (!pyct_shape_varargs(args, 0, shape, n))
    return 0;
  int hd;
  if (!pyct_options(a[1], a[3], a[4], o, &hd)) return 0;
  if (!hd) o->dtype = ct_tensor_dtype(SELF);
  if (!GIVEN(a[3])) o->device = ct_tensor_device(SELF); /* new_*: self's device */
  return 1;
}
METHOD(new_zeros) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  ct_options o;
  if (!new_args(self, "new_zeros", args, kwargs, shape, &n, &o)) return NULL;
  return pyct_wrap(ct_zeros(n, shape, o));
}
METHOD(new_ones) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  ct_options o;
  if (!new_args(self, "new_ones", args, kwargs, shape, &n, &o)) return NULL;
  return pyct_wrap(ct_ones(n, shape, o));
}
METHOD(new_empty) {
  int64_t shape[CT_MAX_DIMS];
  int n;
  ct_options o;
  if (!new_args(self, "new_empty", args, kwargs, shape, &n, &o)) return NULL;
  return pyct_wrap(ct_zeros(n, shape, o));
}
METHOD(new_full) {
  ARGS("new_full", 2, "size", "fill_value", "*", "dtype", "layout", "device", "requires_grad", "pin_memory");
  int64_t shape[CT_MAX_DIMS];
  int n, hd;
  ct_options o;
  ct_scalar v;
  if (!pyct_shape_seq(a[0], shape, &n) || !pyct_scalar(a[1], &v) || !pyct_options(a[2], a[4], a[5], &o, &hd))
    return NULL;
  if (!hd) o.dtype = ct_tensor_dtype(SELF);
  if (!GIVEN(a[4])) o.device = ct_tensor_device(SELF);
  return pyct_wrap(ct_full(n, shape, v, o));
}
METHOD(new_tensor) {
  ARGS("new_tensor", 1, "data", "*", "dtype", "layout", "device", "requires_grad", "pin_memory");
  int dt;
  if (!pyct_dtype_opt(a[1], &dt) || !pyct_device_ok(a[3])) return NULL;
  if (dt < 0) dt = ct_tensor_dtype(SELF);
  ct_tensor *t = pyct_from_data(a[0], dt, NULL);
  if (!t) return NULL;
  if (GIVEN(a[4]) && PyObject_IsTrue(a[4]) && ct_requires_grad_(t, true) != CT_OK) {
    ct_release(t);
    return pyct_raise();
  }
  return pyct_wrap(t);
}

/* ---- joining and splitting ---- */
#define JOIN(name, call)                                                                  \
  FUNCTION(name) {                                                                        \
    ARGS(#name, 1, "tensors", "dim", "*", "out");                                         \
    ct_tensor *ts[MAXT];                                                                  \
    int64_t dim;                                                                          \
    int n = pyct_tensor_list(a[0], #name, ts, MAXT);                                      \
    if (n < 0 || !opt_i64(a[1], 0, &dim, "dim")) return NULL;                             \
    PyObject *r = pyct_wrap(call);                                                        \
    if (r && GIVEN(a[2])) return pyct_finish_out_in(#name, r, a[2], n, (const ct_tensor *const *)ts); \
    return r;                                                                             \
  }
JOIN(cat, ct_cat(n, (const ct_tensor *const *)ts, dim))
JOIN(stack, ct_stack(n, (const ct_tensor *const *)ts, dim))
#define JOIN0(name)                                                                       \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {            \
    ARGS(#name, 1, "tensors", "*", "out");                                                \
    ct_tensor *ts[MAXT];                                                                  \
    int n = pyct_tensor_list(a[0], #name, ts, MAXT);                                      \
    if (n < 0) return NULL;                                                               \
    PyObject *r = pyct_wrap(ct_##name(n, (const ct_tensor *const *)ts));                  \
    if (r && GIVEN(a[1])) return pyct_finish_out_in(#name, r, a[1], n, (const ct_tensor *const *)ts); \
    return r;                                                                             \
  }
JOIN0(hstack)
JOIN0(vstack)
JOIN0(dstack)

static PyObject *list_result(ct_status st, int n, ct_tensor **outs) {
  if (st != CT_OK) return pyct_raise();
  return pyct_tuple_of(n, outs);
}
METHOD(split) {
  ARGS("split", 1, "split_size", "dim");
  int64_t dim;
  if (!opt_i64(a[1], 0, &dim, "dim")) return NULL;
  int n = 0;
  ct_status st;
  ct_tensor **outs;
  if (PyList_Check(a[0]) || PyTuple_Check(a[0])) {
    int64_t sizes[MAXT];
    Py_ssize_t k = PySequence_Fast_GET_SIZE(a[0]);
    if (k > MAXT) {
      PyErr_SetString(PyExc_RuntimeError, "split: too many sections");
      return NULL;
    }
    for (Py_ssize_t i = 0; i < k; i++)
      if (!pyct_int64(PySequence_Fast_GET_ITEM(a[0], i), &sizes[i], "split_size")) return NULL;
    st = ct_split_sizes(SELF, (int)k, sizes, dim, &n, NULL, 0);
    if (st != CT_OK) return pyct_raise();
    outs = PyMem_Calloc((size_t)n + 1, sizeof(ct_tensor *));
    st = ct_split_sizes(SELF, (int)k, sizes, dim, &n, outs, n);
  } else {
    int64_t s;
    if (!pyct_int64(a[0], &s, "split_size")) return NULL;
    st = ct_split(SELF, s, dim, &n, NULL, 0);
    if (st != CT_OK) return pyct_raise();
    outs = PyMem_Calloc((size_t)n + 1, sizeof(ct_tensor *));
    st = ct_split(SELF, s, dim, &n, outs, n);
  }
  PyObject *r = list_result(st, n, outs);
  PyMem_Free(outs);
  return r;
}
static PyObject *f_split(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("split", 2, "tensor", "split_size_or_sections", "dim");
  ct_tensor *x = tensor_arg(a[0], "split", "tensor", 1);
  if (!x) return NULL;
  PyObject *rest = a[2] ? PyTuple_Pack(2, a[1], a[2]) : PyTuple_Pack(1, a[1]);
  PyObject *r = m_split(a[0], rest, NULL);
  Py_DECREF(rest);
  return r;
}
METHOD(chunk) {
  ARGS("chunk", 1, "chunks", "dim");
  int64_t c, dim;
  int n = 0;
  if (!pyct_int64(a[0], &c, "chunks") || !opt_i64(a[1], 0, &dim, "dim")) return NULL;
  if (ct_chunk(SELF, c, dim, &n, NULL, 0) != CT_OK) return pyct_raise();
  ct_tensor **outs = PyMem_Calloc((size_t)n + 1, sizeof(ct_tensor *));
  PyObject *r = list_result(ct_chunk(SELF, c, dim, &n, outs, n), n, outs);
  PyMem_Free(outs);
  return r;
}
METHOD(tensor_split) {
  ARGS("tensor_split", 1, "indices_or_sections", "dim");
  int64_t dim;
  int n = 0;
  if (!opt_i64(a[1], 0, &dim, "dim")) return NULL;
  ct_tensor **outs;
  ct_status st;
  if (PyList_Check(a[0]) || PyTuple_Check(a[0])) {
    int64_t idx[MAXT];
    Py_ssize_t k = PySequence_Fast_GET_SIZE(a[0]);
    if (k > MAXT) {
      PyErr_SetString(PyExc_RuntimeError, "tensor_split: too many indices");
      return NULL;
    }
    for (Py_ssize_t i = 0; i < k; i++)
      if (!pyct_int64(PySequence_Fast_GET_ITEM(a[0], i), &idx[i], "indices")) return NULL;
    if (ct_tensor_split_indices(SELF, (int)k, idx, dim, &n, NULL, 0) != CT_OK) return pyct_raise();
    outs = PyMem_Calloc((size_t)n + 1, sizeof(ct_tensor *));
    st = ct_tensor_split_indices(SELF, (int)k, idx, dim, &n, outs, n);
  } else {
    int64_t s;
    if (!pyct_int64(a[0], &s, "sections")) return NULL;
    if (ct_tensor_split(SELF, s, dim, &n, NULL, 0) != CT_OK) return pyct_raise();
    outs = PyMem_Calloc((size_t)n + 1, sizeof(ct_tensor *));
    st = ct_tensor_split(SELF, s, dim, &n, outs, n);
  }
  PyObject *r = list_result(st, n, outs);
  PyMem_Free(outs);
  return r;
}
METHOD(unbind) {
  ARGS("unbind", 0, "dim");
  int64_t dim;
  int n = 0;
  if (!opt_i64(a[0], 0, &dim, "dim")) return NULL;
  if (ct_unbind(SELF, dim, &n, NULL, 0) != CT_OK) return pyct_raise();
  ct_tensor **outs = PyMem_Calloc((size_t)n + 1, sizeof(ct_tensor *));
  PyObject *r = list_result(ct_unbind(SELF, dim, &n, outs, n), n, outs);
  PyMem_Free(outs);
  return r;
}
FN(chunk) FN(tensor_split) FN(unbind)
METHOD(flip) {
  int64_t dims[CT_MAX_DIMS];
  int n;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    PyObject *d = PyDict_GetItemString(kwargs, "dims");
    if (!d || !pyct_dims(d, dims, &n, CT_MAX_DIMS, "dims")) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "flip() got an unexpected keyword argument");
      return NULL;
    }
  } else if (!pyct_shape_varargs(args, 0, dims, &n))
    return NULL;
  return pyct_wrap(ct_flip(SELF, n, dims));
}
static PyObject *f_flip(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("flip", 2, "input", "dims");
  ct_tensor *x = tensor_arg(a[0], "flip", "input", 1);
  int64_t dims[CT_MAX_DIMS];
  int n;
  if (!x || !pyct_dims(a[1], dims, &n, CT_MAX_DIMS, "dims")) return NULL;
  return pyct_wrap(ct_flip(x, n, dims));
}
METHOD(fliplr) { int64_t d = 1; return pyct_wrap(ct_flip(SELF, 1, &d)); }
METHOD(flipud) { int64_t d = 0; return pyct_wrap(ct_flip(SELF, 1, &d)); }
FN(fliplr) FN(flipud)
METHOD(roll) {
  ARGS("roll", 1, "shifts", "dims");
  int64_t sh[CT_MAX_DIMS], dims[CT_MAX_DIMS];
  int ns, nd;
  if (!pyct_dims(a[0], sh, &ns, CT_MAX_DIMS, "shifts") || !pyct_dims(a[1], dims, &nd, CT_MAX_DIMS, "dims")) return NULL;
  return pyct_wrap(ct_roll(SELF, ns, sh, nd, dims));
}
METHOD(rot90) {
  ARGS("rot90", 0, "k", "dims");
  int64_t k, dims[CT_MAX_DIMS] = {0, 1};
  int nd = 2;
  if (!opt_i64(a[0], 1, &k, "k")) return NULL;
  if (GIVEN(a[1]) && !pyct_dims(a[1], dims, &nd, CT_MAX_DIMS, "dims")) return NULL;
  return pyct_wrap(ct_rot90(SELF, k, nd, dims));
}
METHOD(repeat) {
  int64_t r[CT_MAX_DIMS];
  int n;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    PyObject *d = PyDict_GetItemString(kwargs, "repeats");
    if (!d || !pyct_shape_seq(d, r, &n)) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "repeat() got an unexpected keyword argument");
      return NULL;
    }
  } else if (!pyct_shape_varargs(args, 0, r, &n))
    return NULL;
  return pyct_wrap(ct_repeat(SELF, n, r));
}
METHOD(tile) {
  int64_t r[CT_MAX_DIMS];
  int n;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    PyObject *d = PyDict_GetItemString(kwargs, "dims");
    if (!d || !pyct_shape_seq(d, r, &n)) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "tile() got an unexpected keyword argument");
      return NULL;
    }
  } else if (!pyct_shape_varargs(args, 0, r, &n))
    return NULL;
  return pyct_wrap(ct_tile(SELF, n, r));
}
static PyObject *f_tile(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("tile", 2, "input", "dims");
  ct_tensor *x = tensor_arg(a[0], "tile", "input", 1);
  int64_t r[CT_MAX_DIMS];
  int n;
  if (!x || !pyct_shape_seq(a[1], r, &n)) return NULL;
  return pyct_wrap(ct_tile(x, n, r));
}
METHOD(repeat_interleave) {
  ARGS("repeat_interleave", 1, "repeats", "dim", "*", "output_size");
  int64_t dim;
  if (!opt_i64(a[1], CT_NO_DIM, &dim, "dim")) return NULL;
  if (pyct_is_tensor(a[0])) return pyct_wrap(ct_repeat_interleave_tensor(SELF, TT(a[0]), dim));
  int64_t r;
  if (!pyct_int64(a[0], &r, "repeats")) return NULL;
  return pyct_wrap(ct_repeat_interleave(SELF, r, dim));
}
static PyObject *f_repeat_interleave(PyObject *mod, PyObject *args, PyObject *kwargs) {
  if (PyTuple_GET_SIZE(args) == 1 && (!kwargs || !PyDict_GET_SIZE(kwargs)) && pyct_is_tensor(PyTuple_GET_ITEM(args, 0)))
    return pyct_wrap(ct_repeat_interleave_index(TT(PyTuple_GET_ITEM(args, 0))));
  return pyct_as_method("repeat_interleave", m_repeat_interleave, args, kwargs);
}
#define TRI(name)                                                               \
  METHOD(name) {                                                                \
    ARGS(#name, 0, "diagonal");                                                 \
    int64_t d;                                                                  \
    if (!opt_i64(a[0], 0, &d, "diagonal")) return NULL;                         \
    return pyct_wrap(ct_##name(SELF, d));                                       \
  }                                                                             \
  METHOD(name##_) {                                                             \
    ARGS(#name "_", 0, "diagonal");                                             \
    int64_t d;                                                                  \
    if (!opt_i64(a[0], 0, &d, "diagonal")) return NULL;                         \
    return pyct_status(ct_##name##_(SELF, d), self);                            \
  }                                                                             \
  FN(name)
TRI(tril)
TRI(triu)
FN(roll) FN(rot90)
static PyObject *f_pad(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("pad", 2, "input", "pad", "mode", "value");
  ct_tensor *x = tensor_arg(a[0], "pad", "input", 1);
  int64_t p[2 * CT_MAX_DIMS];
  int n;
  double v;
  if (!x || !pyct_dims(a[1], p, &n, 2 * CT_MAX_DIMS, "pad") || !opt_f64(a[3], 0.0, &v, "value")) return NULL;
  const char *mode = GIVEN(a[2]) ? PyUnicode_AsUTF8(a[2]) : NULL;
  if (GIVEN(a[2]) && !mode) return NULL;
  return pyct_wrap(ct_pad(x, n, p, mode, v));
}
static PyObject *tensors_varargs(PyObject *args, ct_tensor **ts, int *n, const char *fname) {
  PyObject *src = args;
  if (PyTuple_GET_SIZE(args) == 1 && (PyList_Check(PyTuple_GET_ITEM(args, 0)) || PyTuple_Check(PyTuple_GET_ITEM(args, 0))))
    src = PyTuple_GET_ITEM(args, 0);
  *n = pyct_tensor_list(src, fname, ts, MAXT);
  return *n < 0 ? NULL : Py_None;
}
static PyObject *f_meshgrid(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ct_tensor *ts[MAXT];
  int n, no = 0;
  if (!tensors_varargs(args, ts, &n, "meshgrid")) return NULL;
  PyObject *ix = kwargs ? PyDict_GetItemString(kwargs, "indexing") : NULL;
  const char *indexing = GIVEN(ix) ? PyUnicode_AsUTF8(ix) : NULL;
  ct_tensor *outs[MAXT];
  if (ct_meshgrid(n, (const ct_tensor *const *)ts, indexing, &no, outs, MAXT) != CT_OK) return pyct_raise();
  return pyct_tuple_of(no, outs);
}
static PyObject *f_broadcast_tensors(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ct_tensor *ts[MAXT];
  int n, no = 0;
  if (!tensors_varargs(args, ts, &n, "broadcast_tensors")) return NULL;
  ct_tensor *outs[MAXT];
  if (ct_broadcast_tensors(n, (const ct_tensor *const *)ts, &no, outs, MAXT) != CT_OK) return pyct_raise();
  return pyct_tuple_of(no, outs);
}

/* ---- indexing ops ---- */
METHOD(index_select) {
  ARGS("index_select", 2, "dim", "index");
  int64_t d;
  ct_tensor *i;
  if (!pyct_int64(a[0], &d, "dim") || !(i = tensor_arg(a[1], "index_select", "index", 2))) return NULL;
  return pyct_wrap(ct_index_select(SELF, d, i));
}
METHOD(gather) {
  ARGS("gather", 2, "dim", "index", "*", "sparse_grad");
  int64_t d;
  ct_tensor *i;
  if (!pyct_int64(a[0], &d, "dim") || !(i = tensor_arg(a[1], "gather", "index", 2))) return NULL;
  return pyct_wrap(ct_gather(SELF, d, i));
}
static PyObject *scatter_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace) {
  ARGS(inplace ? "scatter_" : "scatter", 2, "dim", "index", "src", "*", "value", "reduce");
  int64_t d;
  ct_tensor *i;
  if (!pyct_int64(a[0], &d, "dim") || !(i = tensor_arg(a[1], "scatter", "index", 2))) return NULL;
  /* the source is `src` (a tensor or number) or the keyword `value` (scatter_(0, idx, value=1)) */
  if (!GIVEN(a[2])) a[2] = a[3];
  if (!GIVEN(a[2])) {
    PyErr_Format(PyExc_TypeError, "%s() received an invalid combination of arguments - got (int, Tensor), but "
                 "expected one of:", inplace ? "scatter_" : "scatter");
    return NULL;
  }
  if (GIVEN(a[4])) {
    const char *r = PyUnicode_AsUTF8(a[4]);
    if (!r) return NULL;
    const char *red = strcmp(r, "add") == 0 ? "sum" : strcmp(r, "multiply") == 0 ? "prod" : r;
    ct_tensor *src = pyct_is_tensor(a[2]) ? ct_retain(TT(a[2])) : NULL;
    if (!src) {
      PyErr_SetString(PyExc_NotImplementedError, "scatter(value, reduce=...) is not implemented in ctorch");
      return NULL;
    }
    PyObject *res = inplace ? pyct_status(ct_scatter_reduce_(SELF, d, i, src, red, true), self)
                            : pyct_wrap(ct_scatter_reduce(SELF, d, i, src, red, true));
    ct_release(src);
    return res;
  }
  if (pyct_is_tensor(a[2]))
    return inplace ? pyct_status(ct_scatter_(SELF, d, i, TT(a[2])), self) : pyct_wrap(ct_scatter(SELF, d, i, TT(a[2])));
  ct_scalar v;
  if (!pyct_scalar(a[2], &v)) return NULL;
  return inplace ? pyct_status(ct_scatter_value_(SELF, d, i, v), self) : pyct_wrap(ct_scatter_value(SELF, d, i, v));
}
METHOD(scatter) { return scatter_impl(self, args, kwargs, 0); }
METHOD(scatter_) { return scatter_impl(self, args, kwargs, 1); }
METHOD(scatter_add) {
  ARGS("scatter_add", 3, "dim", "index", "src");
  int64_t d;
  ct_tensor *i, *s;
  if (!pyct_int64(a[0], &d, "dim") || !(i = tensor_arg(a[1], "scatter_add", "index", 2)) ||
      !(s = tensor_arg(a[2], "scatter_add", "src", 3)))
    return NULL;
  return pyct_wrap(ct_scatter_add(SELF, d, i, s));
}
METHOD(scatter_add_) {
  ARGS("scatter_add_", 3, "dim", "index", "src");
  int64_t d;
  ct_tensor *i, *s;
  if (!pyct_int64(a[0], &d, "dim") || !(i = tensor_arg(a[1], "scatter_add_", "index", 2)) ||
      !(s = tensor_arg(a[2], "scatter_add_", "src", 3)))
    return NULL;
  return pyct_status(ct_scatter_add_(SELF, d, i, s), self);
}
static PyObject *scatter_reduce_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace) {
  ARGS("scatter_reduce", 4, "dim", "index", "src", "reduce", "*", "include_self");
  int64_t d;
  ct_tensor *i, *s;
  bool inc;
  if (!pyct_int64(a[0], &d, "dim") || !(i = tensor_arg(a[1], "scatter_reduce", "index", 2)) ||
      !(s = tensor_arg(a[2], "scatter_reduce", "src", 3)) || !opt_bool(a[4], true, &inc))
    return NULL;
  const char *r = PyUnicode_AsUTF8(a[3]);
  if (!r) return NULL;
  return inplace ? pyct_status(ct_scatter_reduce_(SELF, d, i, s, r, inc), self)
                 : pyct_wrap(ct_scatter_reduce(SELF, d, i, s, r, inc));
}
METHOD(scatter_reduce) { return scatter_reduce_impl(self, args, kwargs, 0); }
METHOD(scatter_reduce_) { return scatter_reduce_impl(self, args, kwargs, 1); }
static PyObject *index_add_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace) {
  ARGS("index_add", 3, "dim", "index", "source", "*", "alpha");
  int64_t d;
  ct_tensor *i, *s;
  ct_scalar al;
  if (!pyct_int64(a[0], &d, "dim") || !(i = tensor_arg(a[1], "index_add", "index", 2)) ||
      !(s = tensor_arg(a[2], "index_add", "source", 3)) || !opt_scalar(a[3], ct_si(1), &al))
    return NULL;
  return inplace ? pyct_status(ct_index_add_(SELF, d, i, s, al), self) : pyct_wrap(ct_index_add(SELF, d, i, s, al));
}
METHOD(index_add) { return index_add_impl(self, args, kwargs, 0); }
METHOD(index_add_) { return index_add_impl(self, args, kwargs, 1); }
static PyObject *index_copy_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace) {
  ARGS("index_copy", 3, "dim", "index", "source");
  int64_t d;
  ct_tensor *i, *s;
  if (!pyct_int64(a[0], &d, "dim") || !(i = tensor_arg(a[1], "index_copy", "index", 2)) ||
      !(s = tensor_arg(a[2], "index_copy", "source", 3)))
    return NULL;
  return inplace ? pyct_status(ct_index_copy_(SELF, d, i, s), self) : pyct_wrap(ct_index_copy(SELF, d, i, s));
}
METHOD(index_copy) { return index_copy_impl(self, args, kwargs, 0); }
METHOD(index_copy_) { return index_copy_impl(self, args, kwargs, 1); }
static PyObject *index_fill_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace) {
  ARGS("index_fill", 3, "dim", "index", "value");
  int64_t d;
  ct_tensor *i;
  if (!pyct_int64(a[0], &d, "dim") || !(i = tensor_arg(a[1], "index_fill", "index", 2))) return NULL;
  if (pyct_is_tensor(a[2]))
    return inplace ? pyct_status(ct_index_fill_tensor_(SELF, d, i, TT(a[2])), self)
                   : pyct_wrap(ct_index_fill_tensor(SELF, d, i, TT(a[2])));
  ct_scalar v;
  if (!pyct_scalar(a[2], &v)) return NULL;
  return inplace ? pyct_status(ct_index_fill_(SELF, d, i, v), self) : pyct_wrap(ct_index_fill(SELF, d, i, v));
}
METHOD(index_fill) { return index_fill_impl(self, args, kwargs, 0); }
METHOD(index_fill_) { return index_fill_impl(self, args, kwargs, 1); }
static PyObject *masked_fill_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace) {
  ARGS(inplace ? "masked_fill_" : "masked_fill", 2, "mask", "value");
  ct_tensor *m = tensor_arg(a[0], "masked_fill", "mask", 1);
  if (!m) return NULL;
  if (pyct_is_tensor(a[1]))
    return inplace ? pyct_status(ct_masked_fill_tensor_(SELF, m, TT(a[1])), self)
                   : pyct_wrap(ct_masked_fill_tensor(SELF, m, TT(a[1])));
  ct_scalar v;
  if (!pyct_scalar(a[1], &v)) return NULL;
  return inplace ? pyct_status(ct_masked_fill_(SELF, m, v), self) : pyct_wrap(ct_masked_fill(SELF, m, v));
}
METHOD(masked_fill) { return masked_fill_impl(self, args, kwargs, 0); }
METHOD(masked_fill_) { return masked_fill_impl(self, args, kwargs, 1); }
METHOD(masked_scatter) {
  ARGS("masked_scatter", 2, "mask", "source");
  ct_tensor *m, *s;
  if (!(m = tensor_arg(a[0], "masked_scatter", "mask", 1)) || !(s = tensor_arg(a[1], "masked_scatter", "source", 2)))
    return NULL;
  return pyct_wrap(ct_masked_scatter(SELF, m, s));
}
METHOD(masked_scatter_) {
  ARGS("masked_scatter_", 2, "mask", "source");
  ct_tensor *m, *s;
  if (!(m = tensor_arg(a[0], "masked_scatter_", "mask", 1)) || !(s = tensor_arg(a[1], "masked_scatter_", "source", 2)))
    return NULL;
  return pyct_status(ct_masked_scatter_(SELF, m, s), self);
}
METHOD(masked_select) {
  ARGS("masked_select", 1, "mask");
  ct_tensor *m = tensor_arg(a[0], "masked_select", "mask", 1);
  if (!m) return NULL;
  return pyct_wrap(ct_masked_select(SELF, m));
}
METHOD(take) {
  ARGS("take", 1, "index");
  ct_tensor *i = tensor_arg(a[0], "take", "index", 1);
  if (!i) return NULL;
  return pyct_wrap(ct_take(SELF, i));
}
METHOD(put_) {
  ARGS("put_", 2, "index", "source", "accumulate");
  ct_tensor *i, *s;
  bool acc;
  if (!(i = tensor_arg(a[0], "put_", "index", 1)) || !(s = tensor_arg(a[1], "put_", "source", 2)) ||
      !opt_bool(a[2], false, &acc))
    return NULL;
  return pyct_status(ct_put_(SELF, i, s, acc), self);
}
METHOD(put) {
  ARGS("put", 2, "index", "source", "accumulate");
  ct_tensor *i, *s;
  bool acc;
  if (!(i = tensor_arg(a[0], "put", "index", 1)) || !(s = tensor_arg(a[1], "put", "source", 2)) ||
      !opt_bool(a[2], false, &acc))
    return NULL;
  return pyct_wrap(ct_put(SELF, i, s, acc));
}
METHOD(take_along_dim) {
  ARGS("take_along_dim", 1, "indices", "dim");
  ct_tensor *i = tensor_arg(a[0], "take_along_dim", "indices", 1);
  int64_t d;
  if (!i || !opt_i64(a[1], 0, &d, "dim")) return NULL;
  return pyct_wrap(ct_take_along_dim(SELF, i, GIVEN(a[1]), d));
}
METHOD(nonzero) {
  ARGS("nonzero", 0, "*", "as_tuple");
  bool tup;
  if (!opt_bool(a[0], false, &tup)) return NULL;
  if (!tup) return pyct_wrap(ct_nonzero(SELF));
  ct_tensor *outs[CT_MAX_DIMS];
  int n = ct_nonzero_tuple(SELF, outs);
  if (n < 0) return pyct_raise();
  return pyct_tuple_of(n, outs);
}
METHOD(argwhere) { NOARGS("argwhere"); return pyct_wrap(ct_nonzero(SELF)); }
static PyObject *index_put_impl(PyObject *self, PyObject *args, PyObject *kwargs, int inplace) {
  ARGS("index_put", 2, "indices", "values", "accumulate");
  bool acc;
  if (!opt_bool(a[2], false, &acc)) return NULL;
  if (!PyTuple_Check(a[0]) && !PyList_Check(a[0])) {
    PyErr_SetString(PyExc_TypeError, "index_put(): argument 'indices' must be tuple of Tensors");
    return NULL;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(a[0]);
  if (n > CT_MAX_DIMS) {
    PyErr_SetString(PyExc_IndexError, "too many indices");
    return NULL;
  }
  const ct_tensor *ix[CT_MAX_DIMS];
  for (Py_ssize_t k = 0; k < n; k++) {
    PyObject *x = PySequence_Fast_GET_ITEM(a[0], k);
    if (x == Py_None)
      ix[k] = NULL;
    else if (pyct_is_tensor(x))
      ix[k] = TT(x);
    else {
      PyErr_SetString(PyExc_TypeError, "index_put(): indices must be Tensors or None");
      return NULL;
    }
  }
  ct_tensor *v = pyct_operand(a[1]);
  if (!v) return NULL;
  PyObject *r = inplace ? pyct_status(ct_index_put_tensors_(SELF, (int)n, ix, v, acc), self)
                        : pyct_wrap(ct_index_put_tensors(SELF, (int)n, ix, v, acc));
  ct_release(v);
  return r;
}
METHOD(index_put) { return index_put_impl(self, args, kwargs, 0); }
METHOD(index_put_) { return index_put_impl(self, args, kwargs, 1); }
FN(index_select) FN(gather) FN(scatter) FN(scatter_add) FN(scatter_reduce) FN(index_add) FN(index_copy)
FN(index_fill) FN(masked_fill) FN(masked_scatter) FN(masked_select) FN(take) FN(take_along_dim) FN(nonzero)
FN(argwhere) FN(index_put)

/* ---- linear algebra ---- */
#define MAT2(name, arg)                                                        \
  METHOD(name) {                                                               \
    ARGS(#name, 1, arg);                                                       \
    ct_tensor *o = tensor_arg(a[0], #name, arg, 1);                            \
    if (!o) return NULL;                                                       \
    return pyct_wrap(ct_##name(SELF, o));                                      \
  }                                                                            \
  FN(name)
MAT2(matmul, "other")
MAT2(mm, "mat2")
MAT2(bmm, "mat2")
MAT2(mv, "vec")
MAT2(dot, "tensor")
MAT2(outer, "vec2")
#define ADDMM(name, a1, a2)                                                                \
  METHOD(name) {                                                                           \
    ARGS(#name, 2, a1, a2, "*", "beta", "alpha");                                          \
    ct_tensor *x, *y;                                                                      \
    ct_scalar beta, alpha;                                                                 \
    if (!(x = tensor_arg(a[0], #name, a1, 1)) || !(y = tensor_arg(a[1], #name, a2, 2)) ||  \
        !opt_scalar(a[2], ct_si(1), &beta) || !opt_scalar(a[3], ct_si(1), &alpha))         \
      return NULL;                                                                         \
    return pyct_wrap(ct_##name(SELF, x, y, beta, alpha));                                  \
  }                                                                                        \
  FN(name)
ADDMM(addmm, "mat1", "mat2")
ADDMM(addmv, "mat", "vec")
ADDMM(baddbmm, "batch1", "batch2")
METHOD(addmm_) {
  ARGS("addmm_", 2, "mat1", "mat2", "*", "beta", "alpha");
  ct_tensor *x, *y;
  ct_scalar beta, alpha;
  if (!(x = tensor_arg(a[0], "addmm_", "mat1", 1)) || !(y = tensor_arg(a[1], "addmm_", "mat2", 2)) ||
      !opt_scalar(a[2], ct_si(1), &beta) || !opt_scalar(a[3], ct_si(1), &alpha))
    return NULL;
  return pyct_status(ct_addmm_(SELF, x, y, beta, alpha), self);
}
static PyObject *f_einsum(PyObject *mod, PyObject *args, PyObject *kwargs) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
    PyErr_SetString(PyExc_TypeError, "einsum(): argument 'equation' must be str");
    return NULL;
  }
  const char *eq = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0));
  ct_tensor *ts[MAXT];
  int k;
  PyObject *rest = PyTuple_GetSlice(args, 1, n);
  PyObject *ok = tensors_varargs(rest, ts, &k, "einsum");
  Py_DECREF(rest);
  if (!ok) return NULL;
  return pyct_wrap(ct_einsum(eq, k, (const ct_tensor *const *)ts));
}
static PyObject *f_linear(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("linear", 2, "input", "weight", "bias");
  ct_tensor *x, *w, *b;
  int err;
  if (!(x = tensor_arg(a[0], "linear", "input", 1)) || !(w = tensor_arg(a[1], "linear", "weight", 2))) return NULL;
  b = opt_tensor(a[2], "linear", "bias", 3, &err);
  if (err) return NULL;
  return pyct_wrap(ct_linear(x, w, b));
}

/* ---- nn functional ---- */
METHOD(softmax) {
  ARGS("softmax", 1, "dim", "dtype", "_stacklevel");
  int64_t d;
  int dt;
  if (!pyct_int64(a[0], &d, "dim") || !pyct_dtype_opt(a[1], &dt)) return NULL;
  return pyct_wrap(ct_softmax(SELF, d, dt));
}
METHOD(log_softmax) {
  ARGS("log_softmax", 1, "dim", "dtype", "_stacklevel");
  int64_t d;
  int dt;
  if (!pyct_int64(a[0], &d, "dim") || !pyct_dtype_opt(a[1], &dt)) return NULL;
  return pyct_wrap(ct_log_softmax(SELF, d, dt));
}
FN(softmax) FN(log_softmax)

static PyObject *f_conv1d(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("conv1d", 2, "input", "weight", "bias", "stride", "padding", "dilation", "groups");
  ct_tensor *x, *w, *b;
  int err;
  int64_t s, p = 0, d, g;
  if (!(x = tensor_arg(a[0], "conv1d", "input", 1)) || !(w = tensor_arg(a[1], "conv1d", "weight", 2))) return NULL;
  b = opt_tensor(a[2], "conv1d", "bias", 3, &err);
  if (err || !pyct_int_pair(a[3], 1, 1, &s, "stride") || !pyct_int_pair(a[5], 1, 1, &d, "dilation") ||
      !opt_i64(a[6], 1, &g, "groups"))
    return NULL;
  if (GIVEN(a[4]) && PyUnicode_Check(a[4])) return pyct_wrap(ct_conv1d_mode(x, w, b, s, PyUnicode_AsUTF8(a[4]), d, g));
  if (!pyct_int_pair(a[4], 1, 0, &p, "padding")) return NULL;
  return pyct_wrap(ct_conv1d(x, w, b, s, p, d, g));
}
static PyObject *f_conv2d(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("conv2d", 2, "input", "weight", "bias", "stride", "padding", "dilation", "groups");
  ct_tensor *x, *w, *b;
  int err;
  int64_t s[2], p[2], d[2], g;
  if (!(x = tensor_arg(a[0], "conv2d", "input", 1)) || !(w = tensor_arg(a[1], "conv2d", "weight", 2))) return NULL;
  b = opt_tensor(a[2], "conv2d", "bias", 3, &err);
  if (err || !pyct_int_pair(a[3], 2, 1, s, "stride") || !pyct_int_pair(a[5], 2, 1, d, "dilation") ||
      !opt_i64(a[6], 1, &g, "groups"))
    return NULL;
  if (GIVEN(a[4]) && PyUnicode_Check(a[4])) return pyct_wrap(ct_conv2d_mode(x, w, b, s, PyUnicode_AsUTF8(a[4]), d, g));
  if (!pyct_int_pair(a[4], 2, 0, p, "padding")) return NULL;
  return pyct_wrap(ct_conv2d(x, w, b, s, p, d, g));
}
static PyObject *f_conv_transpose2d(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("conv_transpose2d", 2, "input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation");
  ct_tensor *x, *w, *b;
  int err;
  int64_t s[2], p[2], op[2], d[2], g;
  if (!(x = tensor_arg(a[0], "conv_transpose2d", "input", 1)) || !(w = tensor_arg(a[1], "conv_transpose2d", "weight", 2)))
    return NULL;
  b = opt_tensor(a[2], "conv_transpose2d", "bias", 3, &err);
  if (err || !pyct_int_pair(a[3], 2, 1, s, "stride") || !pyct_int_pair(a[4], 2, 0, p, "padding") ||
      !pyct_int_pair(a[5], 2, 0, op, "output_padding") || !opt_i64(a[6], 1, &g, "groups") ||
      !pyct_int_pair(a[7], 2, 1, d, "dilation"))
    return NULL;
  return pyct_wrap(ct_conv_transpose2d(x, w, b, s, p, op, g, d));
}
static PyObject *f_max_pool2d(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("max_pool2d", 2, "input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices");
  ct_tensor *x = tensor_arg(a[0], "max_pool2d", "input", 1);
  int64_t k[2], s[2], p[2], d[2];
  bool ceil, ri;
  if (!x || !pyct_int_pair(a[1], 2, 1, k, "kernel_size") || !pyct_int_pair(a[3], 2, 0, p, "padding") ||
      !pyct_int_pair(a[4], 2, 1, d, "dilation") || !opt_bool(a[5], false, &ceil) || !opt_bool(a[6], false, &ri))
    return NULL;
  int has_s = GIVEN(a[2]) && !(PySequence_Check(a[2]) && PySequence_Size(a[2]) == 0);
  if (has_s && !pyct_int_pair(a[2], 2, 1, s, "stride")) return NULL;
  ct_tensor *idx = NULL;
  ct_tensor *r = ct_max_pool2d(x, k, has_s ? s : NULL, p, d, ceil, ri ? &idx : NULL);
  if (!ri) return pyct_wrap(r);
  if (!r) return pyct_raise();
  ct_tensor *o[2] = {r, idx};
  return pyct_tuple_of(2, o);
}
static PyObject *f_avg_pool2d(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("avg_pool2d", 2, "input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
       "divisor_override");
  ct_tensor *x = tensor_arg(a[0], "avg_pool2d", "input", 1);
  int64_t k[2], s[2], p[2], dov;
  bool ceil, cip;
  if (!x || !pyct_int_pair(a[1], 2, 1, k, "kernel_size") || !pyct_int_pair(a[3], 2, 0, p, "padding") ||
      !opt_bool(a[4], false, &ceil) || !opt_bool(a[5], true, &cip) || !opt_i64(a[6], 0, &dov, "divisor_override"))
    return NULL;
  int has_s = GIVEN(a[2]) && !(PySequence_Check(a[2]) && PySequence_Size(a[2]) == 0);
  if (has_s && !pyct_int_pair(a[2], 2, 1, s, "stride")) return NULL;
  return pyct_wrap(ct_avg_pool2d(x, k, has_s ? s : NULL, p, ceil, cip, dov));
}
static int out_size2(PyObject *o, int64_t *out) {
  if (PyTuple_Check(o) || PyList_Check(o)) {
    if (PySequence_Fast_GET_SIZE(o) != 2) {
      PyErr_SetString(PyExc_ValueError, "output_size must be 2");
      return 0;
    }
    for (int i = 0; i < 2; i++) {
      PyObject *x = PySequence_Fast_GET_ITEM(o, i);
      if (x == Py_None)
        out[i] = -1;
      else if (!pyct_int64(x, &out[i], "output_size"))
        return 0;
    }
    return 1;
  }
  return pyct_int_pair(o, 2, 1, out, "output_size");
}
static PyObject *f_adaptive_avg_pool2d(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("adaptive_avg_pool2d", 2, "input", "output_size");
  ct_tensor *x = tensor_arg(a[0], "adaptive_avg_pool2d", "input", 1);
  int64_t o[2];
  if (!x || !out_size2(a[1], o)) return NULL;
  return pyct_wrap(ct_adaptive_avg_pool2d(x, o));
}
static PyObject *f_adaptive_max_pool2d(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("adaptive_max_pool2d", 2, "input", "output_size", "return_indices");
  ct_tensor *x = tensor_arg(a[0], "adaptive_max_pool2d", "input", 1);
  int64_t o[2];
  bool ri;
  if (!x || !out_size2(a[1], o) || !opt_bool(a[2], false, &ri)) return NULL;
  ct_tensor *idx = NULL;
  ct_tensor *r = ct_adaptive_max_pool2d(x, o, &idx);
  if (!r) return pyct_raise();
  if (!ri) {
    ct_release(idx);
    return pyct_wrap(r);
  }
  ct_tensor *res[2] = {r, idx};
  return pyct_tuple_of(2, res);
}
static PyObject *f_batch_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("batch_norm", 3, "input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps");
  ct_tensor *x = tensor_arg(a[0], "batch_norm", "input", 1), *rm, *rv, *w, *b;
  int e1, e2, e3, e4;
  bool tr;
  double mom, eps;
  if (!x) return NULL;
  rm = opt_tensor(a[1], "batch_norm", "running_mean", 2, &e1);
  rv = opt_tensor(a[2], "batch_norm", "running_var", 3, &e2);
  w = opt_tensor(a[3], "batch_norm", "weight", 4, &e3);
  b = opt_tensor(a[4], "batch_norm", "bias", 5, &e4);
  if (e1 || e2 || e3 || e4 || !opt_bool(a[5], false, &tr) || !opt_f64(a[6], 0.1, &mom, "momentum") ||
      !opt_f64(a[7], 1e-5, &eps, "eps"))
    return NULL;
  return pyct_wrap(ct_batch_norm(x, rm, rv, w, b, tr, mom, eps));
}
static PyObject *f_layer_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("layer_norm", 2, "input", "normalized_shape", "weight", "bias", "eps");
  ct_tensor *x = tensor_arg(a[0], "layer_norm", "input", 1), *w, *b;
  int64_t ns[CT_MAX_DIMS];
  int n, e1, e2;
  double eps;
  if (!x || !pyct_dims(a[1], ns, &n, CT_MAX_DIMS, "normalized_shape")) return NULL;
  w = opt_tensor(a[2], "layer_norm", "weight", 3, &e1);
  b = opt_tensor(a[3], "layer_norm", "bias", 4, &e2);
  if (e1 || e2 || !opt_f64(a[4], 1e-5, &eps, "eps")) return NULL;
  return pyct_wrap(ct_layer_norm(x, n, ns, w, b, eps));
}
static PyObject *f_group_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("group_norm", 2, "input", "num_groups", "weight", "bias", "eps");
  ct_tensor *x = tensor_arg(a[0], "group_norm", "input", 1), *w, *b;
  int64_t g;
  int e1, e2;
  double eps;
  if (!x || !pyct_int64(a[1], &g, "num_groups")) return NULL;
  w = opt_tensor(a[2], "group_norm", "weight", 3, &e1);
  b = opt_tensor(a[3], "group_norm", "bias", 4, &e2);
  if (e1 || e2 || !opt_f64(a[4], 1e-5, &eps, "eps")) return NULL;
  return pyct_wrap(ct_group_norm(x, g, w, b, eps));
}
static PyObject *f_rms_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("rms_norm", 2, "input", "normalized_shape", "weight", "eps");
  ct_tensor *x = tensor_arg(a[0], "rms_norm", "input", 1), *w;
  int64_t ns[CT_MAX_DIMS];
  int n, e1;
  double eps;
  if (!x || !pyct_dims(a[1], ns, &n, CT_MAX_DIMS, "normalized_shape")) return NULL;
  w = opt_tensor(a[2], "rms_norm", "weight", 3, &e1);
  if (e1 || !opt_f64(a[3], -1.0, &eps, "eps")) return NULL;
  return pyct_wrap(ct_rms_norm(x, n, ns, w, eps));
}
static PyObject *f_dropout(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("dropout", 1, "input", "p", "train", "generator");
  ct_tensor *x = tensor_arg(a[0], "dropout", "input", 1);
  double p;
  bool tr;
  if (!x || !opt_f64(a[1], 0.5, &p, "p") || !opt_bool(a[2], true, &tr)) return NULL;
  ct_generator *g = pyct_generator(a[3]);
  if (!g && PyErr_Occurred()) return NULL;
  return pyct_wrap(ct_dropout(x, p, tr, g));
}
static PyObject *f_embedding(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("embedding", 2, "input", "weight", "padding_idx");
  ct_tensor *x = tensor_arg(a[0], "embedding", "input", 1), *w;
  int64_t pi;
  if (!x || !(w = tensor_arg(a[1], "embedding", "weight", 2))) return NULL;
  if (GIVEN(a[2]) && !pyct_int64(a[2], &pi, "padding_idx")) return NULL;
  return pyct_wrap(ct_embedding(x, w, GIVEN(a[2]) ? &pi : NULL));
}
static PyObject *f_interpolate(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("interpolate", 1, "input", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor",
       "antialias");
  ct_tensor *x = tensor_arg(a[0], "interpolate", "input", 1);
  int64_t sz[2];
  double sf[2];
  if (!x) return NULL;
  if (GIVEN(a[1]) && !pyct_int_pair(a[1], 2, 1, sz, "size")) return NULL;
  if (GIVEN(a[2])) {
    if (PyTuple_Check(a[2]) || PyList_Check(a[2])) {
      if (PySequence_Fast_GET_SIZE(a[2]) != 2 || !pyct_double(PySequence_Fast_GET_ITEM(a[2], 0), &sf[0], "scale_factor") ||
          !pyct_double(PySequence_Fast_GET_ITEM(a[2], 1), &sf[1], "scale_factor")) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "scale_factor must have 2 entries");
        return NULL;
      }
    } else {
      if (!pyct_double(a[2], &sf[0], "scale_factor")) return NULL;
      sf[1] = sf[0];
    }
  }
  const char *mode = GIVEN(a[3]) ? PyUnicode_AsUTF8(a[3]) : "nearest";
  int ac = -1;
  if (GIVEN(a[4])) ac = PyObject_IsTrue(a[4]);
  return pyct_wrap(ct_interpolate(x, GIVEN(a[1]) ? sz : NULL, GIVEN(a[2]) ? sf : NULL, mode, ac));
}
static PyObject *f_sdpa(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("scaled_dot_product_attention", 3, "query", "key", "value", "attn_mask", "dropout_p", "is_causal", "*", "scale");
  ct_tensor *q, *k, *v, *m;
  int err;
  double dp, sc;
  bool causal;
  if (!(q = tensor_arg(a[0], "sdpa", "query", 1)) || !(k = tensor_arg(a[1], "sdpa", "key", 2)) ||
      !(v = tensor_arg(a[2], "sdpa", "value", 3)))
    return NULL;
  m = opt_tensor(a[3], "sdpa", "attn_mask", 4, &err);
  if (err || !opt_f64(a[4], 0.0, &dp, "dropout_p") || !opt_bool(a[5], false, &causal) || !opt_f64(a[6], 0.0, &sc, "scale"))
    return NULL;
  return pyct_wrap(ct_scaled_dot_product_attention(q, k, v, m, dp, causal, GIVEN(a[6]) ? &sc : NULL, NULL));
}

/* activations with parameters (F.gelu etc.): nn_<name>(input, ...) and in-place twins */
static PyObject *f_nn_gelu(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("gelu", 1, "input", "approximate");
  ct_tensor *x = tensor_arg(a[0], "gelu", "input", 1);
  if (!x) return NULL;
  const char *ap = GIVEN(a[1]) ? PyUnicode_AsUTF8(a[1]) : NULL;
  return pyct_wrap(ct_gelu(x, ap));
}
static PyObject *f_nn_softplus(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("softplus", 1, "input", "beta", "threshold");
  ct_tensor *x = tensor_arg(a[0], "softplus", "input", 1);
  double b, t;
  if (!x || !opt_f64(a[1], 1.0, &b, "beta") || !opt_f64(a[2], 20.0, &t, "threshold")) return NULL;
  return pyct_wrap(ct_softplus(x, b, t));
}
static PyObject *f_nn_hardtanh(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("hardtanh", 1, "input", "min_val", "max_val", "inplace");
  ct_tensor *x = tensor_arg(a[0], "hardtanh", "input", 1);
  double lo, hi;
  bool ip;
  if (!x || !opt_f64(a[1], -1.0, &lo, "min_val") || !opt_f64(a[2], 1.0, &hi, "max_val") || !opt_bool(a[3], false, &ip))
    return NULL;
  if (ip) return pyct_status(ct_hardtanh_(x, lo, hi), a[0]);
  return pyct_wrap(ct_hardtanh(x, lo, hi));
}
static PyObject *f_nn_leaky_relu(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("leaky_relu", 1, "input", "negative_slope", "inplace");
  ct_tensor *x = tensor_arg(a[0], "leaky_relu", "input", 1);
  double s;
  bool ip;
  if (!x || !opt_f64(a[1], 0.01, &s, "negative_slope") || !opt_bool(a[2], false, &ip)) return NULL;
  if (ip) return pyct_status(ct_leaky_relu_(x, s), a[0]);
  return pyct_wrap(ct_leaky_relu(x, s));
}
static PyObject *f_nn_elu(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("elu", 1, "input", "alpha", "inplace");
  ct_tensor *x = tensor_arg(a[0], "elu", "input", 1);
  double al;
  bool ip;
  if (!x || !opt_f64(a[1], 1.0, &al, "alpha") || !opt_bool(a[2], false, &ip)) return NULL;
  if (ip) return pyct_status(ct_elu_(x, al), a[0]);
  return pyct_wrap(ct_elu(x, al));
}
static PyObject *f_nn_celu(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("celu", 1, "input", "alpha", "inplace");
  ct_tensor *x = tensor_arg(a[0], "celu", "input", 1);
  double al;
  bool ip;
  if (!x || !opt_f64(a[1], 1.0, &al, "alpha") || !opt_bool(a[2], false, &ip)) return NULL;
  if (ip) return pyct_status(ct_celu_(x, al), a[0]);
  return pyct_wrap(ct_celu(x, al));
}
#define ACT(name)                                                                       \
  static PyObject *f_nn_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {       \
    ARGS(#name, 1, "input", "inplace");                                                 \
    ct_tensor *x = tensor_arg(a[0], #name, "input", 1);                                 \
    bool ip;                                                                            \
    if (!x || !opt_bool(a[1], false, &ip)) return NULL;                                 \
    if (ip) return pyct_status(ct_##name##_(x), a[0]);                                  \
    return pyct_wrap(ct_##name(x));                                                     \
  }
ACT(relu)
ACT(relu6)
ACT(selu)
ACT(silu)
ACT(mish)
ACT(hardsigmoid)
ACT(hardswish)
ACT(softsign)
ACT(sigmoid)
ACT(tanh)

/* ---- losses ---- */
static int reduction_arg(PyObject *o, ct_reduction *r) {
  if (!GIVEN(o)) {
    *r = CT_REDUCTION_MEAN;
    return 1;
  }
  const char *s = PyUnicode_AsUTF8(o);
  if (!s) return 0;
  if (ct_reduction_parse(s, r) != CT_OK) return pyct_raise() != NULL;
  return 1;
}
#define LOSS2(name, extra_decl, extra_parse, call)                                               \
  static PyObject *f_nn_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {                \
    ARGS(#name, 2, "input", "target", "size_average", "reduce", "reduction", extra_decl);        \
    ct_tensor *x, *t;                                                                            \
    ct_reduction r;                                                                              \
    if (!(x = tensor_arg(a[0], #name, "input", 1)) || !(t = tensor_arg(a[1], #name, "target", 2)) || \
        !reduction_arg(a[4], &r))                                                                \
      return NULL;                                                                               \
    extra_parse;                                                                                 \
    return pyct_wrap(call);                                                                      \
  }
LOSS2(mse_loss, "_unused", (void)0, ct_mse_loss(x, t, r))
LOSS2(l1_loss, "_unused", (void)0, ct_l1_loss(x, t, r))
LOSS2(smooth_l1_loss, "beta", double beta; if (!opt_f64(a[5], 1.0, &beta, "beta")) return NULL,
      ct_smooth_l1_loss(x, t, r, beta))
static PyObject *f_nn_huber_loss(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("huber_loss", 2, "input", "target", "reduction", "delta");
  ct_tensor *x, *t;
  ct_reduction r;
  double d;
  if (!(x = tensor_arg(a[0], "huber_loss", "input", 1)) || !(t = tensor_arg(a[1], "huber_loss", "target", 2)) ||
      !reduction_arg(a[2], &r) || !opt_f64(a[3], 1.0, &d, "delta"))
    return NULL;
  return pyct_wrap(ct_huber_loss(x, t, r, d));
}
static PyObject *f_nn_binary_cross_entropy(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("binary_cross_entropy", 2, "input", "target", "weight", "size_average", "reduce", "reduction");
  ct_tensor *x, *t, *w;
  ct_reduction r;
  int err;
  if (!(x = tensor_arg(a[0], "binary_cross_entropy", "input", 1)) ||
      !(t = tensor_arg(a[1], "binary_cross_entropy", "target", 2)) || !reduction_arg(a[5], &r))
    return NULL;
  w = opt_tensor(a[2], "binary_cross_entropy", "weight", 3, &err);
  if (err) return NULL;
  return pyct_wrap(ct_binary_cross_entropy(x, t, w, r));
}
static PyObject *f_nn_binary_cross_entropy_with_logits(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("binary_cross_entropy_with_logits", 2, "input", "target", "weight", "size_average", "reduce", "reduction",
       "pos_weight");
  ct_tensor *x, *t, *w, *pw;
  ct_reduction r;
  int e1, e2;
  if (!(x = tensor_arg(a[0], "binary_cross_entropy_with_logits", "input", 1)) ||
      !(t = tensor_arg(a[1], "binary_cross_entropy_with_logits", "target", 2)) || !reduction_arg(a[5], &r))
    return NULL;
  w = opt_tensor(a[2], "bce", "weight", 3, &e1);
  pw = opt_tensor(a[6], "bce", "pos_weight", 7, &e2);
  if (e1 || e2) return NULL;
  return pyct_wrap(ct_binary_cross_entropy_with_logits(x, t, w, pw, r));
}
static PyObject *f_nn_kl_div(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("kl_div", 2, "input", "target", "size_average", "reduce", "reduction", "log_target");
  ct_tensor *x, *t;
  ct_reduction r;
  bool lt;
  if (!(x = tensor_arg(a[0], "kl_div", "input", 1)) || !(t = tensor_arg(a[1], "kl_div", "target", 2)) ||
      !reduction_arg(a[4], &r) || !opt_bool(a[5], false, &lt))
    return NULL;
  return pyct_wrap(ct_kl_div(x, t, r, lt));
}
static PyObject *f_nn_nll_loss(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("nll_loss", 2, "input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction");
  ct_tensor *x, *t, *w;
  ct_reduction r;
  int err;
  int64_t ii;
  if (!(x = tensor_arg(a[0], "nll_loss", "input", 1)) || !(t = tensor_arg(a[1], "nll_loss", "target", 2)) ||
      !reduction_arg(a[6], &r) || !opt_i64(a[4], -100, &ii, "ignore_index"))
    return NULL;
  w = opt_tensor(a[2], "nll_loss", "weight", 3, &err);
  if (err) return NULL;
  return pyct_wrap(ct_nll_loss(x, t, w, r, ii));
}
static PyObject *f_nn_cross_entropy(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("cross_entropy", 2, "input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
       "label_smoothing");
  ct_tensor *x, *t, *w;
  ct_reduction r;
  int err;
  int64_t ii;
  double ls;
  if (!(x = tensor_arg(a[0], "cross_entropy", "input", 1)) || !(t = tensor_arg(a[1], "cross_entropy", "target", 2)) ||
      !reduction_arg(a[6], &r) || !opt_i64(a[4], -100, &ii, "ignore_index") ||
      !opt_f64(a[7], 0.0, &ls, "label_smoothing"))
    return NULL;
  w = opt_tensor(a[2], "cross_entropy", "weight", 3, &err);
  if (err) return NULL;
  return pyct_wrap(ct_cross_entropy(x, t, w, r, ii, ls));
}
static PyObject *f_cosine_similarity(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("cosine_similarity", 2, "x1", "x2", "dim", "eps");
  ct_tensor *x, *y;
  int64_t d;
  double eps;
  if (!(x = tensor_arg(a[0], "cosine_similarity", "x1", 1)) || !(y = tensor_arg(a[1], "cosine_similarity", "x2", 2)) ||
      !opt_i64(a[2], 1, &d, "dim") || !opt_f64(a[3], 1e-8, &eps, "eps"))
    return NULL;
  return pyct_wrap(ct_cosine_similarity(x, y, d, eps));
}
static PyObject *f_pairwise_distance(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("pairwise_distance", 2, "x1", "x2", "p", "eps", "keepdim");
  ct_tensor *x, *y;
  double p, eps;
  bool k;
  if (!(x = tensor_arg(a[0], "pairwise_distance", "x1", 1)) || !(y = tensor_arg(a[1], "pairwise_distance", "x2", 2)) ||
      !opt_f64(a[2], 2.0, &p, "p") || !opt_f64(a[3], 1e-6, &eps, "eps") || !opt_bool(a[4], false, &k))
    return NULL;
  return pyct_wrap(ct_pairwise_distance(x, y, p, eps, k));
}
static PyObject *f_one_hot(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("one_hot", 1, "tensor", "num_classes");
  ct_tensor *x = tensor_arg(a[0], "one_hot", "tensor", 1);
  int64_t n;
  if (!x || !opt_i64(a[1], -1, &n, "num_classes")) return NULL;
  return pyct_wrap(ct_one_hot(x, n));
}

PyMethodDef pyct_ops2_methods[] = {
  MDEF(new_zeros), MDEF(new_ones), MDEF(new_empty), MDEF(new_full), MDEF(new_tensor), MDEF(split), MDEF(chunk),
  MDEF(tensor_split), MDEF(unbind), MDEF(flip), MDEF(fliplr), MDEF(flipud), MDEF(roll), MDEF(rot90), MDEF(repeat),
  MDEF(tile), MDEF(repeat_interleave), MDEF(tril), MDEF(tril_), MDEF(triu), MDEF(triu_), MDEF(index_select),
  MDEF(gather), MDEF(scatter), MDEF(scatter_), MDEF(scatter_add), MDEF(scatter_add_), MDEF(scatter_reduce),
  MDEF(scatter_reduce_), MDEF(index_add), MDEF(index_add_), MDEF(index_copy), MDEF(index_copy_), MDEF(index_fill),
  MDEF(index_fill_), MDEF(masked_fill), MDEF(masked_fill_), MDEF(masked_scatter), MDEF(masked_scatter_),
  MDEF(masked_select), MDEF(take), MDEF(put_), MDEF(put), MDEF(take_along_dim), MDEF(nonzero), MDEF(argwhere),
  MDEF(index_put), MDEF(index_put_), MDEF(matmul), MDEF(mm), MDEF(bmm), MDEF(mv), MDEF(dot), MDEF(outer),
  MDEF_AS("ger", outer), MDEF(addmm), MDEF(addmm_), MDEF(addmv), MDEF(baddbmm), MDEF(softmax), MDEF(log_softmax),
  {NULL}};

PyMethodDef pyct_ops2_functions[] = {
  FDEF(zeros), FDEF(ones), FDEF(empty), FDEF(rand), FDEF(randn), FDEF(full), FDEF(arange), FDEF(linspace),
  FDEF(logspace), FDEF(eye), FDEF(scalar_tensor), FDEF(zeros_like), FDEF(ones_like), FDEF(empty_like),
  FDEF(full_like), FDEF(cat), FDEF_AS("concat", cat), FDEF_AS("concatenate", cat), FDEF(stack), FDEF(hstack),
  FDEF(vstack), FDEF(dstack), FDEF(split), FDEF(chunk), FDEF(tensor_split), FDEF(unbind), FDEF(flip), FDEF(fliplr),
  FDEF(flipud), FDEF(roll), FDEF(rot90), FDEF(tile), FDEF(repeat_interleave), FDEF(tril), FDEF(triu), FDEF(pad),
  FDEF(meshgrid), FDEF(broadcast_tensors), FDEF(index_select), FDEF(gather), FDEF(scatter), FDEF(scatter_add),
  FDEF(scatter_reduce), FDEF(index_add), FDEF(index_copy), FDEF(index_fill), FDEF(masked_fill),
  FDEF(masked_scatter), FDEF(masked_select), FDEF(take), FDEF(take_along_dim), FDEF(nonzero), FDEF(argwhere),
  FDEF(index_put), FDEF(matmul), FDEF(mm), FDEF(bmm), FDEF(mv), FDEF(dot), FDEF(outer), FDEF_AS("ger", outer),
  FDEF(addmm), FDEF(addmv), FDEF(baddbmm), FDEF(einsum), FDEF(linear), FDEF(softmax), FDEF(log_softmax),
  FDEF(conv1d), FDEF(conv2d), FDEF(conv_transpose2d), FDEF(max_pool2d), FDEF(avg_pool2d),
  FDEF(adaptive_avg_pool2d), FDEF(adaptive_max_pool2d), FDEF(batch_norm), FDEF(layer_norm), FDEF(group_norm),
  FDEF(rms_norm), FDEF(dropout), FDEF(embedding), FDEF(interpolate),
  FDEF_AS("scaled_dot_product_attention", sdpa), FDEF(nn_gelu), FDEF(nn_softplus), FDEF(nn_hardtanh),
  FDEF(nn_leaky_relu), FDEF(nn_elu), FDEF(nn_celu), FDEF(nn_relu), FDEF(nn_relu6), FDEF(nn_selu), FDEF(nn_silu),
  FDEF(nn_mish), FDEF(nn_hardsigmoid), FDEF(nn_hardswish), FDEF(nn_softsign), FDEF(nn_sigmoid), FDEF(nn_tanh),
  FDEF(nn_mse_loss), FDEF(nn_l1_loss), FDEF(nn_smooth_l1_loss), FDEF(nn_huber_loss), FDEF(nn_binary_cross_entropy),
  FDEF(nn_binary_cross_entropy_with_logits), FDEF(nn_kl_div), FDEF(nn_nll_loss), FDEF(nn_cross_entropy),
  FDEF(cosine_similarity), FDEF(pairwise_distance), FDEF(one_hot),
  {NULL}};

int pyct_ops_init(PyObject *m) {
  rt_types = PyDict_New();
  if (!rt_types) return -1;
  if (PyModule_AddFunctions(m, pyct_ops1_functions) < 0) return -1;
  return PyModule_AddFunctions(m, pyct_ops2_functions);
}
