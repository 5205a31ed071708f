/* Autograd bindings: backward, autograd.grad, grad modes, tensor hooks. */
#include "ops_common.h"

/* torch.Size([2, 3]) as PyTorch prints a shape in its Python-side messages */
static void size_str(const ct_tensor *t, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "torch.Size([");
  for (int d = 0; d < ct_ndim(t) && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)ct_shape(t)[d]);
  if (n < cap) snprintf(buf + n, cap - n, "])");
}

/* PyTorch's checks on backward()/autograd.grad roots, in its order and wording: each given gradient has
 * its output's exact shape, then every output requires grad. */
static int check_roots(int n, ct_tensor **roots, ct_tensor **grads) {
  for (int i = 0; i < n; i++) {
    ct_tensor *g = grads[i], *o = roots[i];
    if (!g) continue;
    if (ct_ndim(g) != ct_ndim(o) || memcmp(ct_shape(g), ct_shape(o), sizeof(int64_t) * ct_ndim(o)) != 0) {
      char a[256], b[256];
      size_str(g, a, sizeof a);
      size_str(o, b, sizeof b);
      PyErr_Format(PyExc_RuntimeError, "Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a "
                   "shape of %s.", i, a, i, b);
      return 0;
    }
  }
  for (int i = 0; i < n; i++)
    if (!grads[i] && ct_numel(roots[i]) != 1) {
      PyErr_SetString(PyExc_RuntimeError, "grad can be implicitly created only for scalar outputs");
      return 0;
    }
  for (int i = 0; i < n; i++)
    if (!ct_requires_grad(roots[i])) {
      PyErr_Format(PyExc_RuntimeError, "element %d of tensors does not require grad and does not have a grad_fn", i);
      return 0;
    }
  return 1;
}

METHOD(backward) {
  ARGS("backward", 0, "gradient", "retain_graph", "create_graph", "inputs");
  ct_tensor *g = NULL;
  int err;
  bool create, retain;
  g = opt_tensor(a[0], "backward", "gradient", 1, &err);
  if (err || !opt_bool(a[2], false, &create) || !opt_bool(a[1], create, &retain)) return NULL;
  if (GIVEN(a[3])) {
    PyErr_SetString(PyExc_NotImplementedError, "backward(inputs=...) is not implemented in ctorch");
    return NULL;
  }
  ct_tensor *root = SELF;
  if (!check_roots(1, &root, &g)) return NULL;
  ct_status st = ct_backward(SELF, g, retain, create);
  if (PyErr_Occurred()) return NULL; /* a hook raised */
  return pyct_status(st, NULL);
}

/* autograd.backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False) */
static PyObject *f_autograd_backward(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("backward", 1, "tensors", "grad_tensors", "retain_graph", "create_graph", "grad_variables", "inputs");
  ct_tensor *roots[1024], *grads[1024];
  int n;
  bool create, retain;
  if (pyct_is_tensor(a[0])) {
    roots[0] = TT(a[0]);
    n = 1;
  } else if ((n = pyct_tensor_list(a[0], "backward", roots, 1024)) < 0)
    return NULL;
  for (int i = 0; i < n; i++) grads[i] = NULL;
  if (GIVEN(a[1])) {
    if (pyct_is_tensor(a[1])) {
      grads[0] = TT(a[1]);
    } else {
      PyObject *f = PySequence_Fast(a[1], "grad_tensors must be a sequence");
      if (!f) return NULL;
      if (PySequence_Fast_GET_SIZE(f) != n) {
        PyErr_Format(PyExc_RuntimeError, "got %d tensors and %zd gradients", n, PySequence_Fast_GET_SIZE(f));
        Py_DECREF(f);
        return NULL;
      }
      for (int i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(f, i);
        grads[i] = pyct_is_tensor(x) ? TT(x) : NULL;
      }
      Py_DECREF(f);
    }
  }
  if (!opt_bool(a[3], false, &create) || !opt_bool(a[2], create, &retain)) return NULL;
  if (!check_roots(n, roots, grads)) return NULL;
  ct_status st = ct_backward_many(n, roots, grads, retain, create);
  if (PyErr_Occurred()) return NULL;
  return pyct_status(st, NULL);
}

/* autograd.grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
 *               only_inputs=True, allow_unused=False) */
static PyObject *f_autograd_grad(PyObject *mod, PyObject *args, PyObject *kwargs) {
  ARGS("grad", 2, "outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", "only_inputs", "allow_unused",
       "is_grads_batched");
  ct_tensor *outs[1024], *ins[1024], *gouts[1024], *res[1024];
  int no, ni;
  bool create, retain, allow;
  if (pyct_is_tensor(a[0])) {
    outs[0] = TT(a[0]);
    no = 1;
  } else if ((no = pyct_tensor_list(a[0], "grad", outs, 1024)) < 0)
    return NULL;
  if (pyct_is_tensor(a[1])) {
    ins[0] = TT(a[1]);
    ni = 1;
  } else if ((ni = pyct_tensor_list(a[1], "grad", ins, 1024)) < 0)
    return NULL;
  for (int i = 0; i < no; i++) gouts[i] = NULL;
  if (GIVEN(a[2])) {
    if (pyct_is_tensor(a[2]))
      gouts[0] = TT(a[2]);
    else {
      PyObject *f = PySequence_Fast(a[2], "grad_outputs must be a sequence");
      if (!f) return NULL;
      Py_ssize_t k = PySequence_Fast_GET_SIZE(f);
      if (k != no) {
        Py_DECREF(f);
        PyErr_Format(PyExc_RuntimeError, "got %d tensors and %zd gradients", no, k);
        return NULL;
      }
      for (int i = 0; i < no; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(f, i);
        gouts[i] = pyct_is_tensor(x) ? TT(x) : NULL;
      }
      Py_DECREF(f);
    }
  }
  if (!opt_bool(a[4], false, &create) || !opt_bool(a[3], create, &retain) || !opt_bool(a[6], false, &allow))
    return NULL;
  if (!check_roots(no, outs, gouts)) return NULL;
  ct_status st = ct_autograd_grad(no, outs, gouts, ni, ins, res, retain, create, allow);
  if (PyErr_Occurred()) return NULL;
  if (st != CT_OK) return pyct_raise();
  PyObject *tup = PyTuple_New(ni);
  for (int i = 0; i < ni; i++) {
    if (res[i])
      PyTuple_SET_ITEM(tup, i, pyct_wrap(res[i]));
    else {
      Py_INCREF(Py_None);
      PyTuple_SET_ITEM(tup, i, Py_None);
    }
  }
  return tup;
}

/* ---- hooks: the Python callable is called with the gradient; a returned tensor replaces it ---- */
static ct_tensor *py_hook(ct_tensor *grad, void *user) {
  PyGILState_STATE gs = PyGILState_Ensure();
  ct_tensor *ret = NULL;
  PyObject *fn = user;
  PyObject *g = pyct_wrap(ct_retain(grad));
  if (!g) goto fail;
  PyObject *r = PyObject_CallOneArg(fn, g);
  Py_DECREF(g);
  if (!r) goto fail;
  if (r != Py_None) {
    if (!pyct_is_tensor(r)) {
      Py_DECREF(r);
      PyErr_SetString(PyExc_TypeError, "hook must return None or a Tensor");
      goto fail;
    }
    ret = ct_retain(TT(r));
  }
  Py_DECREF(r);
  PyGILState_Release(gs);
  return ret;
fail:
  /* the Python exception stays set; the engine stops on the ctorch error and the binding re-raises it */
  {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    extern ct_status ct_set_error(ct_status st, const char *fmt, ...);
    ct_set_error(CT_ERR_RUNTIME, "%s", s ? PyUnicode_AsUTF8(s) : "hook failed");
    Py_XDECREF(s);
    PyErr_Restore(type, value, tb);
  }
  PyGILState_Release(gs);
  return NULL;
}

METHOD(_register_hook) {
  ARGS("register_hook", 1, "hook");
  if (!PyCallable_Check(a[0])) {
    PyErr_SetString(PyExc_TypeError, "hook must be callable");
    return NULL;
  }
  if (!ct_requires_grad(SELF)) {
    PyErr_SetString(PyExc_RuntimeError, "cannot register a hook on a tensor that doesn't require gradient");
    return NULL;
  }
  Py_INCREF(a[0]); /* kept for the tensor's lifetime (the C hook list has no destructor) */
  int h = ct_register_hook(SELF, py_hook, a[0]);
  if (h < 0) {
    Py_DECREF(a[0]);
    return pyct_raise();
  }
  return PyLong_FromLong(h);
}
METHOD(_remove_hook) {
  ARGS("_remove_hook", 1, "handle");
  int64_t h;
  if (!pyct_int64(a[0], &h, "handle")) return NULL;
  return pyct_status(ct_remove_hook(SELF, (int)h), NULL);
}

static PyObject *f_is_grad_enabled(PyObject *m, PyObject *u) { return PyBool_FromLong(ct_is_grad_enabled()); }
static PyObject *f_set_grad_enabled(PyObject *m, PyObject *o) {
  int b = PyObject_IsTrue(o);
  if (b < 0) return NULL;
  return PyBool_FromLong(ct_set_grad_enabled(b));
}
static PyObject *f_is_inference_mode_enabled(PyObject *m, PyObject *u) {
  return PyBool_FromLong(ct_is_inference_mode());
}
static PyObject *f_set_inference_mode(PyObject *m, PyObject *o) {
  int b = PyObject_IsTrue(o);
  if (b < 0) return NULL;
  return PyBool_FromLong(ct_set_inference_mode(b));
}

PyMethodDef pyct_autograd_methods[] = {MDEF(backward), MDEF(_register_hook), MDEF(_remove_hook), {NULL}};

static PyMethodDef autograd_functions[] = {
  {"_autograd_backward", (PyCFunction)(void (*)(void))f_autograd_backward, METH_VARARGS | METH_KEYWORDS, NULL},
  {"_autograd_grad", (PyCFunction)(void (*)(void))f_autograd_grad, METH_VARARGS | METH_KEYWORDS, NULL},
  {"is_grad_enabled", f_is_grad_enabled, METH_NOARGS, NULL},
  {"_set_grad_enabled", f_set_grad_enabled, METH_O, NULL},
  {"is_inference_mode_enabled", f_is_inference_mode_enabled, METH_NOARGS, NULL},
  {"_set_inference_mode", f_set_inference_mode, METH_O, NULL},
  {NULL}};

int pyct_autograd_init(PyObject *m) { return PyModule_AddFunctions(m, autograd_functions); }
