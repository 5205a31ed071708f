"""Names from the API-names list added late: function forms of in-place methods, torch.linalg
(python/ctorch/_linalg.py), 3-d convolution and pooling (composed over 2-d ops with autograd), and
clear refusals for what ctorch does not support (complex, quantized, sparse, named tensors)."""

# torch.<name>_(t, ...) for the in-place methods PyTorch also exposes as functions
_INPLACE_FNS = ["abs_", "acos_", "acosh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clip_", "cos_",
                "cosh_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "floor_", "frac_",
                "index_put_", "log10_", "log1p_", "log2_", "log_", "neg_", "reciprocal_", "relu_", "round_", "rsqrt_",
                "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_"]


def _inplace_fn(torch, name):
    meth = getattr(torch.Tensor, name)

    def fn(input, *args, **kwargs):
        if not isinstance(input, torch.Tensor):
            raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s" % (name, type(input).__name__))
        return meth(input, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    return fn


def install(torch):
    for n in _INPLACE_FNS:
        if not hasattr(torch, n) and hasattr(torch.Tensor, n):
            setattr(torch, n, _inplace_fn(torch, n))


def _install_linalg(torch):
    import importlib
    from . import _linalg as la
    torch.linalg = importlib.import_module(torch.__name__ + ".linalg")
    top = {
        "det": la.det, "logdet": la.logdet, "slogdet": la.slogdet, "inverse": la.inv, "pinverse": None,
        "svd": la._svd_old, "qr": la._old_qr, "cholesky": la._old_cholesky, "lu": la._old_lu,
        "lu_unpack": la.lu_unpack, "lu_solve": la._old_lu_solve, "cholesky_solve": la.cholesky_solve,
        "cholesky_inverse": la.cholesky_inverse, "triangular_solve": la.triangular_solve,
        "symeig": la._old_symeig, "matrix_power": la.matrix_power, "matrix_exp": la.matrix_exp,
        "geqrf": la.geqrf,
    }
    top["pinverse"] = lambda input, rcond=1e-15: la.pinv(input, rtol=rcond)
    for name, fn in top.items():
        if fn is not None and not hasattr(torch, name):
            setattr(torch, name, fn)
    methods = {"det": la.det, "logdet": la.logdet, "slogdet": la.slogdet, "inverse": la.inv,
               "pinverse": top["pinverse"], "svd": la._svd_old, "qr": la._old_qr, "cholesky": la._old_cholesky,
               "lu": la._old_lu, "cholesky_solve": la.cholesky_solve, "cholesky_inverse": la.cholesky_inverse,
               "triangular_solve": la.triangular_solve, "symeig": la._old_symeig, "matrix_power": la.matrix_power,
               "matrix_exp": la.matrix_exp, "lu_solve": la._old_lu_solve, "geqrf": la.geqrf}
    for name, fn in methods.items():
        if not hasattr(torch.Tensor, name):
            setattr(torch.Tensor, name, fn)


_install_base = install


def install(torch):  # noqa: F811  (extends the first install)
    _install_base(torch)
    _install_linalg(torch)
    from . import _nd3
    _nd3.install(torch)
    from . import _frac
    _frac.install(torch)
    from . import _more
    _more.install(torch)
