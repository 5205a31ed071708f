/* Shared declarations of the ctorch CPython extension (ctorch._C). */
#ifndef PYCT_H
#define PYCT_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "ctorch.h"

/* The C base of ctorch.Tensor: one ct_tensor reference owned by the Python object. */
typedef struct {
  PyObject_HEAD
  ct_tensor *t;
  PyObject *grad_cache; /* last wrapper returned by .grad (keeps `x.grad is x.grad`) */
  PyObject *base_obj;   /* the Python object of this view's base, when known (`v._base is b`) */
} TensorObject;

typedef struct {
  PyObject_HEAD
  ct_dtype dt;
} DtypeObject;

typedef struct {
  PyObject_HEAD
  ct_generator *g;
  int owned;
} GeneratorObject;

extern PyTypeObject TensorBase_Type;
extern PyTypeObject Dtype_Type;
extern PyTypeObject Generator_Type;
extern PyObject *pyct_tensor_class; /* the Python subclass ctorch.Tensor (set by __init__.py) */
extern PyObject *pyct_size_class;   /* ctorch.Size */
extern PyObject *pyct_dtypes[CT_NUM_DTYPES];

/* ---- helpers (module.c) ---- */
PyObject *pyct_raise(void);                  /* Python exception from ct_last_error(); returns NULL */
PyObject *pyct_wrap(ct_tensor *t);           /* steals t; NULL t -> raises */
PyObject *pyct_wrap_as(PyTypeObject *cls, ct_tensor *t);
/* Returns r (stolen); when r (or a tensor in the tuple r) is a view of self's root, it keeps
   that root's Python object (self, or self's own base_obj) as its base_obj. */
PyObject *pyct_link_base(PyObject *self, PyObject *r);
PyObject *pyct_status(ct_status st, PyObject *ret); /* CT_OK -> new ref of ret (or None) */
static inline int pyct_is_tensor(PyObject *o) { return PyObject_TypeCheck(o, &TensorBase_Type); }
static inline ct_tensor *TT(PyObject *o) { return ((TensorObject *)o)->t; }
PyObject *pyct_dtype_obj(ct_dtype dt);       /* borrowed */
int pyct_is_number(PyObject *o);             /* bool/int/float (not tensors) */
int pyct_scalar(PyObject *o, ct_scalar *s);  /* bool/int/float or 1-element tensor; 0 on error */
int pyct_int64(PyObject *o, int64_t *v, const char *what);
int pyct_double(PyObject *o, double *v, const char *what);
int pyct_bool(PyObject *o, bool *v);
int pyct_dtype_opt(PyObject *o, int *dt);    /* None/NULL -> -1 */
int pyct_dtype_arg(PyObject *o, ct_dtype *dt);
int pyct_refuse_unsupported(PyObject *o);
/* An int or a sequence of ints (dim=, dims); NULL/None -> n = 0 and *given = 0. */
int pyct_dims(PyObject *o, int64_t *dims, int *n, int max, const char *what);
/* Shape from *size varargs or one sequence argument. */
int pyct_shape_varargs(PyObject *args, Py_ssize_t start, int64_t *shape, int *n);
int pyct_shape_seq(PyObject *o, int64_t *shape, int *n);
/* Device check: None or cpu; else raises. */
int pyct_device_ok(PyObject *dev);
/* A device argument into *d (CUDA when the backend finds a GPU); 0 with a Python error. */
int pyct_device_arg(PyObject *dev, ct_device *d);
/* Factory keyword options. */
int pyct_options(PyObject *dtype, PyObject *device, PyObject *requires_grad, ct_options *o, int *has_dtype);
/* Tensor from any operand: tensor (new ref), number (wrapped-number 0-dim), or nested data. */
ct_tensor *pyct_operand(PyObject *o);
PyObject *pyct_make_size(int n, const int64_t *shape);

/* Argument parser: fills out[i] (borrowed, NULL if absent) from args (after `skip` leading
 * positionals) and kwargs by the names in kw; names after "*" are keyword-only. */
int pyct_args(const char *fname, PyObject *args, Py_ssize_t skip, PyObject *kwargs, const char *const *kw,
              int nrequired, PyObject **out);

/* Error path of the bindings of ops with several PyTorch overloads (module.c): when the argument types
 * match none of PyTorch's signatures, ctorch._argerr replaces the pending exception with the one PyTorch's
 * argument parser raises ("X() received an invalid combination of arguments - ..."). Always returns NULL.
 * self: the tensor of a method call (args exclude it), NULL for torch.X(...). pyct_in_function: set while a torch.X(input, ...) call runs its method. */
PyObject *pyct_arg_error(const char *name, PyObject *self, PyObject *args, PyObject *kwargs);
extern int pyct_in_function;

/* ---- convert.c ---- */
ct_tensor *pyct_from_data(PyObject *data, int dtype /* -1 infer */, int *inferred_dtype);
PyObject *pyct_tolist(ct_tensor *t);
PyObject *pyct_item(ct_tensor *t);
int pyct_convert_init(PyObject *m);

/* ---- ops.c / tensor.c / autograd.c / random.c ---- */
extern PyMethodDef pyct_ops1_methods[], pyct_ops2_methods[], pyct_autograd_methods[], pyct_random_methods[];
extern PyMethodDef pyct_ops1_functions[], pyct_ops2_functions[];
int pyct_ops_init(PyObject *m);
int pyct_tensor_init(PyObject *m);
int pyct_autograd_init(PyObject *m);
int pyct_random_init(PyObject *m);
ct_generator *pyct_generator(PyObject *o); /* None/NULL -> NULL (default) */
PyObject *pyct_return_pair(const char *name, ct_tensor *a, ct_tensor *b);
PyObject *pyct_return_pair_obj(const char *name, PyObject *a, PyObject *b); /* steals a and b */
#endif
