/* Helpers for the op bindings: every binding is a method (self = the input tensor);
 * the module-level torch.<op>(input, ...) form goes through pyct_as_method. */
#ifndef PYCT_OPS_COMMON_H
#define PYCT_OPS_COMMON_H
#include "pyct.h"

#define SELF TT(self)
#define ARGS(fname, nreq, ...)                                                   \
  static const char *const kw_[] = {__VA_ARGS__, NULL};                         \
  PyObject *a[sizeof(kw_) / sizeof(kw_[0])];                                    \
  if (!pyct_args(fname, args, 0, kwargs, kw_, nreq, a)) return NULL;
#define NOARGS(fname)                                                            \
  if ((args && PyTuple_GET_SIZE(args)) || (kwargs && PyDict_GET_SIZE(kwargs))) { \
    PyErr_Format(PyExc_TypeError, "%s() takes no arguments", fname);             \
    return NULL;                                                                 \
  }
#define GIVEN(o) ((o) && (o) != Py_None)
/* Each method's result goes through pyct_link_base (views keep their base's Python object). */
#define METHOD(name)                                                                    \
  static PyObject *m_##name##_body(PyObject *self, PyObject *args, PyObject *kwargs);  \
  static PyObject *m_##name(PyObject *self, PyObject *args, PyObject *kwargs) {        \
    PyObject *r_ = m_##name##_body(self, args, kwargs);                                 \
    if (!r_) return pyct_in_function ? NULL : pyct_arg_error(#name, self, args, kwargs);\
    return pyct_link_base(self, r_);                                                    \
  }                                                                                     \
  static PyObject *m_##name##_body(PyObject *self, PyObject *args, PyObject *kwargs)
/* A module-level function whose argument errors read like PyTorch's parser (pyct_arg_error). */
#define FUNCTION(name)                                                                  \
  static PyObject *f_##name##_body(PyObject *mod, PyObject *args, PyObject *kwargs);   \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {         \
    PyObject *r_ = f_##name##_body(mod, args, kwargs);                                  \
    return r_ ? r_ : pyct_arg_error(#name, NULL, args, kwargs);                           \
  }                                                                                     \
  static PyObject *f_##name##_body(PyObject *mod, PyObject *args, PyObject *kwargs)
#define MDEF(name) {#name, (PyCFunction)(void (*)(void))m_##name, METH_VARARGS | METH_KEYWORDS, NULL}
#define MDEF_AS(pyname, name) {pyname, (PyCFunction)(void (*)(void))m_##name, METH_VARARGS | METH_KEYWORDS, NULL}
#define FDEF(name) {#name, (PyCFunction)(void (*)(void))f_##name, METH_VARARGS | METH_KEYWORDS, NULL}
#define FDEF_AS(pyname, name) {pyname, (PyCFunction)(void (*)(void))f_##name, METH_VARARGS | METH_KEYWORDS, NULL}
/* torch.name(input, ...) from the method m_name */
#define FN(name)                                                                 \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {    \
    return pyct_as_method(#name, m_##name, args, kwargs);                        \
  }
typedef PyObject *(*pyct_meth)(PyObject *, PyObject *, PyObject *);
PyObject *pyct_as_method(const char *name, pyct_meth m, PyObject *args, PyObject *kwargs);
/* Writes the result res (stolen) into the tensor out as PyTorch's out= does (type check, cast check,
   resize); returns a new reference to out, or NULL with the exception set. */
PyObject *pyct_finish_out(const char *name, PyObject *res, PyObject *out);
PyObject *pyct_finish_out_in(const char *name, PyObject *res, PyObject *out, int n_in, const ct_tensor *const *ins);

static inline int opt_i64(PyObject *o, int64_t def, int64_t *v, const char *what) {
  if (!GIVEN(o)) {
    *v = def;
    return 1;
  }
  return pyct_int64(o, v, what);
}
static inline int opt_f64(PyObject *o, double def, double *v, const char *what) {
  if (!GIVEN(o)) {
    *v = def;
    return 1;
  }
  return pyct_double(o, v, what);
}
static inline int opt_bool(PyObject *o, bool def, bool *v) {
  if (!GIVEN(o)) {
    *v = def;
    return 1;
  }
  return pyct_bool(o, v);
}
static inline int opt_scalar(PyObject *o, ct_scalar def, ct_scalar *v) {
  if (!GIVEN(o)) {
    *v = def;
    return 1;
  }
  return pyct_scalar(o, v);
}
/* A tensor argument (borrowed); raises TypeError naming the argument. */
static inline ct_tensor *tensor_arg(PyObject *o, const char *fname, const char *what, int pos) {
  if (o && pyct_is_tensor(o)) return TT(o);
  PyErr_Format(PyExc_TypeError, "%s(): argument '%s' (position %d) must be Tensor, not %s", fname, what, pos,
               o ? Py_TYPE(o)->tp_name : "NoneType");
  return NULL;
}
static inline ct_tensor *opt_tensor(PyObject *o, const char *fname, const char *what, int pos, int *err) {
  *err = 0;
  if (!GIVEN(o)) return NULL;
  ct_tensor *t = tensor_arg(o, fname, what, pos);
  if (!t) *err = 1;
  return t;
}
/* A list/tuple of tensors into ts (borrowed); returns the count or -1. */
int pyct_tensor_list(PyObject *o, const char *fname, ct_tensor **ts, int max);
/* Tuple of new tensors (steals the references). */
PyObject *pyct_tuple_of(int n, ct_tensor **ts);
/* Expanding int list in 1 or 2 values for nn ops (int or tuple). */
int pyct_int_pair(PyObject *o, int n, int64_t def, int64_t *out, const char *what);
#endif
