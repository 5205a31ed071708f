/* Random numbers: torch.Generator, manual_seed, and the random ops (PyTorch's exact CPU streams). */
#include "ops_common.h"

static PyObject *default_gen_obj = NULL;

ct_generator *pyct_generator(PyObject *o) {
  if (!GIVEN(o)) return NULL;
  if (!PyObject_TypeCheck(o, &Generator_Type)) {
    PyErr_Format(PyExc_TypeError, "generator must be torch.Generator, not %s", Py_TYPE(o)->tp_name);
    return NULL;
  }
  return ((GeneratorObject *)o)->g;
}

static PyObject *gen_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static const char *const kw[] = {"device", NULL};
  PyObject *a[1];
  if (!pyct_args("Generator", args, 0, kwargs, kw, 0, a) || !pyct_device_ok(a[0])) return NULL;
  GeneratorObject *g = (GeneratorObject *)type->tp_alloc(type, 0);
  if (!g) return NULL;
  g->g = ct_generator_new(UINT64_C(67280421310721));
  g->owned = 1;
  if (!g->g) {
    Py_DECREF(g);
    return pyct_raise();
  }
  return (PyObject *)g;
}
static void gen_dealloc(GeneratorObject *g) {
  if (g->owned) ct_generator_free(g->g);
  Py_TYPE(g)->tp_free((PyObject *)g);
}
static int seed_arg(PyObject *o, uint64_t *seed) {
  if (!PyLong_Check(o) && !PyIndex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "manual_seed expected a long, but got %s", Py_TYPE(o)->tp_name);
    return 0;
  }
  PyObject *i = PyNumber_Index(o);
  if (!i) return 0;
  /* negative seeds wrap like PyTorch (seed & 0xffff_ffff_ffff_ffff) */
  PyObject *mask = PyLong_FromUnsignedLongLong(UINT64_MAX);
  PyObject *w = PyNumber_And(i, mask);
  Py_DECREF(i);
  Py_DECREF(mask);
  if (!w) return 0;
  *seed = PyLong_AsUnsignedLongLong(w);
  Py_DECREF(w);
  return !PyErr_Occurred();
}
static PyObject *gen_manual_seed(GeneratorObject *g, PyObject *o) {
  uint64_t s;
  if (!seed_arg(o, &s)) return NULL;
  ct_generator_manual_seed(g->g, s);
  Py_INCREF(g);
  return (PyObject *)g;
}
static PyObject *gen_initial_seed(GeneratorObject *g, PyObject *u) {
  return PyLong_FromUnsignedLongLong(ct_generator_initial_seed(g->g));
}
static PyObject *gen_get_state(GeneratorObject *g, PyObject *u) {
  size_t n = ct_generator_state_size();
  uint8_t *buf = PyMem_Malloc(n);
  if (!buf) return PyErr_NoMemory();
  ct_generator_get_state(g->g, buf);
  int64_t shape[1] = {(int64_t)n};
  ct_tensor *t = ct_from_buffer(buf, CT_UINT8, 1, shape, ct_opts_dtype(CT_UINT8));
  PyMem_Free(buf);
  return pyct_wrap(t);
}
static PyObject *gen_set_state(GeneratorObject *g, PyObject *o) {
  if (!pyct_is_tensor(o) || ct_tensor_dtype(TT(o)) != CT_UINT8) {
    PyErr_SetString(PyExc_TypeError, "expected a torch.ByteTensor");
    return NULL;
  }
  int64_t n = ct_numel(TT(o));
  uint8_t *buf = PyMem_Malloc((size_t)(n ? n : 1));
  if (!buf) return PyErr_NoMemory();
  if (ct_copy_to_buffer(TT(o), buf, CT_UINT8, n) != CT_OK) {
    PyMem_Free(buf);
    return pyct_raise();
  }
  ct_status st = ct_generator_set_state(g->g, buf, (size_t)n);
  PyMem_Free(buf);
  return pyct_status(st, (PyObject *)g);
}
static PyObject *gen_seed(GeneratorObject *g, PyObject *u) {
  /* a fresh non-deterministic seed, as Generator.seed() */
  uint64_t s = 0;
  PyObject *os = PyImport_ImportModule("os");
  if (os) {
    PyObject *b = PyObject_CallMethod(os, "urandom", "i", 8);
    if (b && PyBytes_Check(b)) memcpy(&s, PyBytes_AS_STRING(b), 8);
    Py_XDECREF(b);
    Py_DECREF(os);
  }
  PyErr_Clear();
  s &= (UINT64_C(1) << 63) - 1;
  ct_generator_manual_seed(g->g, s);
  return PyLong_FromUnsignedLongLong(s);
}
static PyObject *gen_device(GeneratorObject *g, void *c) { return PyUnicode_FromString("cpu"); }
static PyMethodDef gen_methods[] = {
  {"manual_seed", (PyCFunction)gen_manual_seed, METH_O, NULL},
  {"initial_seed", (PyCFunction)gen_initial_seed, METH_NOARGS, NULL},
  {"get_state", (PyCFunction)gen_get_state, METH_NOARGS, NULL},
  {"set_state", (PyCFunction)gen_set_state, METH_O, NULL},
  {"seed", (PyCFunction)gen_seed, METH_NOARGS, NULL},
  {NULL}};
static PyGetSetDef gen_getset[] = {{"_device_str", (getter)gen_device, NULL, NULL, NULL}, {NULL}};
PyTypeObject Generator_Type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "torch._C.Generator",
  .tp_basicsize = sizeof(GeneratorObject),
  .tp_dealloc = (destructor)gen_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_methods = gen_methods,
  .tp_getset = gen_getset,
  .tp_new = gen_new,
};

static PyObject *f_manual_seed(PyObject *m, PyObject *o) {
  uint64_t s;
  if (!seed_arg(o, &s)) return NULL;
  ct_manual_seed(s);
  Py_INCREF(default_gen_obj);
  return default_gen_obj;
}
/* torch.empty((), dtype=torch.int64).random_(generator=g).item(): random64() mod 2^63, the seed
 * DataLoader and RandomSampler draw */
extern uint64_t ct_gen_random64(ct_generator *g);
static PyObject *f_draw_seed(PyObject *m, PyObject *args) {
  PyObject *g = NULL;
  if (!PyArg_ParseTuple(args, "|O", &g)) return NULL;
  ct_generator *gen = pyct_generator(g);
  if (!gen && PyErr_Occurred()) return NULL;
  if (!gen) gen = ct_default_generator();
  return PyLong_FromUnsignedLongLong(ct_gen_random64(gen) % (UINT64_C(1) << 63));
}
static PyObject *f_initial_seed(PyObject *m, PyObject *u) { return PyLong_FromUnsignedLongLong(ct_initial_seed()); }

/* randint(low=0, high, size, *, generator, dtype, ...) */
static PyObject *f_randint(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("randint", 2, "low", "high", "size", "*", "generator", "out", "dtype", "layout", "device", "requires_grad");
  int64_t lo = 0, hi, shape[CT_MAX_DIMS];
  int n;
  PyObject *sz;
  if (a[2]) {
    if (!pyct_int64(a[0], &lo, "low") || !pyct_int64(a[1], &hi, "high")) return NULL;
    sz = a[2];
  } else {
    if (!pyct_int64(a[0], &hi, "high")) return NULL;
    sz = a[1];
  }
  if (!pyct_shape_seq(sz, shape, &n)) return NULL;
  ct_generator *g = pyct_generator(a[3]);
  if (!g && PyErr_Occurred()) return NULL;
  ct_options o;
  int hd;
  if (!pyct_options(a[5], a[7], a[8], &o, &hd)) return NULL;
  return pyct_wrap(ct_randint(lo, hi, n, shape, hd ? &o : NULL, g));
}
static PyObject *f_randperm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("randperm", 1, "n", "*", "generator", "out", "dtype", "layout", "device", "requires_grad", "pin_memory");
  int64_t n;
  if (!pyct_int64(a[0], &n, "n")) return NULL;
  ct_generator *g = pyct_generator(a[1]);
  if (!g && PyErr_Occurred()) return NULL;
  ct_options o;
  int hd;
  if (!pyct_options(a[3], a[5], a[6], &o, &hd)) return NULL;
  return pyct_wrap(ct_randperm(n, hd ? &o : NULL, g));
}
#define RLIKE(name, call)                                                                        \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {                   \
    ARGS(#name, 1, "input", "*", "generator", "dtype", "layout", "device", "requires_grad",      \
         "memory_format");                                                                       \
    ct_tensor *x = tensor_arg(a[0], #name, "input", 1);                                          \
    ct_options o;                                                                                \
    int hd;                                                                                      \
    if (!x || !pyct_options(a[2], a[4], a[5], &o, &hd)) return NULL;                             \
    if (!hd) o.dtype = ct_tensor_dtype(x);                                                       \
    if (!GIVEN(a[4])) o.device = ct_tensor_device(x);                                            \
    ct_generator *g = pyct_generator(a[1]);                                                      \
    if (!g && PyErr_Occurred()) return NULL;                                                     \
    return pyct_wrap(call);                                                                      \
  }
RLIKE(rand_like, ct_rand_like(x, &o, g))
RLIKE(randn_like, ct_randn_like(x, &o, g))
static PyObject *f_randint_like(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("randint_like", 2, "input", "low", "high", "*", "generator", "dtype", "layout", "device", "requires_grad");
  ct_tensor *x = tensor_arg(a[0], "randint_like", "input", 1);
  int64_t lo = 0, hi;
  if (!x) return NULL;
  if (a[2]) {
    if (!pyct_int64(a[1], &lo, "low") || !pyct_int64(a[2], &hi, "high")) return NULL;
  } else if (!pyct_int64(a[1], &hi, "high"))
    return NULL;
  ct_options o;
  int hd;
  if (!pyct_options(a[4], a[6], a[7], &o, &hd)) return NULL;
  if (!hd) o.dtype = ct_tensor_dtype(x);
  if (!GIVEN(a[6])) o.device = ct_tensor_device(x);
  ct_generator *g = pyct_generator(a[3]);
  if (!g && PyErr_Occurred()) return NULL;
  return pyct_wrap(ct_randint_like(x, lo, hi, &o, g));
}

METHOD(uniform_) {
  ARGS("uniform_", 0, "from", "to", "*", "generator");
  double lo, hi;
  if (!opt_f64(a[0], 0.0, &lo, "from") || !opt_f64(a[1], 1.0, &hi, "to")) return NULL;
  ct_generator *g = pyct_generator(a[2]);
  if (!g && PyErr_Occurred()) return NULL;
  return pyct_status(ct_uniform_(SELF, lo, hi, g), self);
}
METHOD(normal_) {
  ARGS("normal_", 0, "mean", "std", "*", "generator");
  double m, s;
  if (!opt_f64(a[0], 0.0, &m, "mean") || !opt_f64(a[1], 1.0, &s, "std")) return NULL;
  ct_generator *g = pyct_generator(a[2]);
  if (!g && PyErr_Occurred()) return NULL;
  return pyct_status(ct_normal_(SELF, m, s, g), self);
}
METHOD(exponential_) {
  ARGS("exponential_", 0, "lambd", "*", "generator");
  double l;
  if (!opt_f64(a[0], 1.0, &l, "lambd")) return NULL;
  ct_generator *g = pyct_generator(a[1]);
  if (!g && PyErr_Occurred()) return NULL;
  return pyct_status(ct_exponential_(SELF, l, g), self);
}
METHOD(random_) {
  ARGS("random_", 0, "from", "to", "*", "generator");
  int64_t lo = 0, hi;
  if (!a[0]) {
    PyErr_SetString(PyExc_NotImplementedError, "random_() without bounds is not implemented in ctorch");
    return NULL;
  }
  if (a[1]) {
    if (!pyct_int64(a[0], &lo, "from") || !pyct_int64(a[1], &hi, "to")) return NULL;
  } else if (!pyct_int64(a[0], &hi, "to"))
    return NULL;
  ct_generator *g = pyct_generator(a[2]);
  if (!g && PyErr_Occurred()) return NULL;
  return pyct_status(ct_random_(SELF, lo, hi, g), self);
}
METHOD(bernoulli_) {
  ARGS("bernoulli_", 0, "p", "*", "generator");
  ct_generator *g = pyct_generator(a[1]);
  if (!g && PyErr_Occurred()) return NULL;
  if (GIVEN(a[0]) && pyct_is_tensor(a[0])) return pyct_status(ct_bernoulli_tensor_(SELF, TT(a[0]), g), self);
  double p;
  if (!opt_f64(a[0], 0.5, &p, "p")) return NULL;
  return pyct_status(ct_bernoulli_(SELF, p, g), self);
}
METHOD(bernoulli) {
  ARGS("bernoulli", 0, "p", "*", "generator");
  ct_generator *g = pyct_generator(a[1]);
  if (!g && PyErr_Occurred()) return NULL;
  if (GIVEN(a[0])) {
    double p;
    if (!pyct_double(a[0], &p, "p")) return NULL;
    return pyct_wrap(ct_bernoulli_p(SELF, p, g));
  }
  return pyct_wrap(ct_bernoulli(SELF, g));
}
METHOD(multinomial) {
  ARGS("multinomial", 1, "num_samples", "replacement", "*", "generator");
  int64_t n;
  bool r;
  if (!pyct_int64(a[0], &n, "num_samples") || !opt_bool(a[1], false, &r)) return NULL;
  ct_generator *g = pyct_generator(a[2]);
  if (!g && PyErr_Occurred()) return NULL;
  return pyct_wrap(ct_multinomial(SELF, n, r, g));
}
FN(bernoulli) FN(multinomial)

/* torch.normal(mean: float, std: float, size, *, generator) */
static PyObject *f_normal(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("normal", 2, "mean", "std", "size", "*", "generator", "out", "dtype", "layout", "device", "requires_grad");
  double m, s;
  int64_t shape[CT_MAX_DIMS];
  int n;
  if (pyct_is_tensor(a[0]) || pyct_is_tensor(a[1])) {
    PyErr_SetString(PyExc_NotImplementedError, "torch.normal with tensor mean/std is not implemented in ctorch");
    return NULL;
  }
  if (!pyct_double(a[0], &m, "mean") || !pyct_double(a[1], &s, "std")) return NULL;
  if (!a[2]) {
    PyErr_SetString(PyExc_TypeError, "normal() missing required argument 'size'");
    return NULL;
  }
  if (!pyct_shape_seq(a[2], shape, &n)) return NULL;
  ct_options o;
  if (!pyct_options(a[5], a[7], a[8], &o, NULL)) return NULL;
  ct_generator *g = pyct_generator(a[3]);
  if (!g && PyErr_Occurred()) return NULL;
  ct_tensor *t = ct_empty(n, shape, o);
  if (!t) return pyct_raise();
  if (ct_normal_(t, m, s, g) != CT_OK) {
    ct_release(t);
    return pyct_raise();
  }
  return pyct_wrap(t);
}

PyMethodDef pyct_random_methods[] = {MDEF(uniform_), MDEF(normal_), MDEF(exponential_), MDEF(random_),
                                     MDEF(bernoulli_), MDEF(bernoulli), MDEF(multinomial), {NULL}};

static PyMethodDef random_functions[] = {
  {"manual_seed", f_manual_seed, METH_O, NULL},
  {"initial_seed", f_initial_seed, METH_NOARGS, NULL},
  {"_draw_seed", f_draw_seed, METH_VARARGS, NULL},
  FDEF(randint), FDEF(randperm), FDEF(rand_like), FDEF(randn_like), FDEF(randint_like), FDEF(bernoulli),
  FDEF(multinomial), FDEF(normal),
  {NULL}};

int pyct_random_init(PyObject *m) {
  if (PyType_Ready(&Generator_Type) < 0) return -1;
  PyModule_AddObjectRef(m, "Generator", (PyObject *)&Generator_Type);
  GeneratorObject *d = PyObject_New(GeneratorObject, &Generator_Type);
  if (!d) return -1;
  d->g = ct_default_generator();
  d->owned = 0;
  default_gen_obj = (PyObject *)d;
  PyModule_AddObjectRef(m, "default_generator", default_gen_obj);
  return PyModule_AddFunctions(m, random_functions);
}
