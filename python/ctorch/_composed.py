"""Functions composed from differentiable ctorch ops (so autograd follows), added where the values-and-gradients
sweep (tests/python/test_op_sweep.py) found them missing; dtype refusals use PyTorch 1.13's kernel names."""
import math as _math

from ._frac import _cpp


def not_implemented(kernel, dtype):
    return RuntimeError("\"%s\" not implemented for '%s'" % (kernel, _cpp(dtype)))


def floating_only(kernel, x):
    if not x.is_floating_point():
        raise not_implemented(kernel, x.dtype)


def install(torch):
    T = torch.Tensor

    def _float(x):
        # integer and bool inputs compute in the default float dtype, as PyTorch's unary float ops do
        return x if x.is_floating_point() else x.to(torch.get_default_dtype())

    def deg2rad(input):
        return _float(input) * (_math.pi / 180.0)

    def rad2deg(input):
        return _float(input) * (180.0 / _math.pi)

    def positive(input):
        if input.dtype == torch.bool:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return input

    def sgn(input):
        # real dtypes: sign, and bool stays bool (sign of True is True)
        return input.clone() if input.dtype == torch.bool else torch.sign(input)

    def sinc(input):
        x = _float(input)
        px = x * _math.pi
        # sin(pi x)/(pi x) with 1 at 0; the where keeps the gradient of the 0 branch finite
        safe = torch.where(x == 0, torch.ones((), dtype=x.dtype), px)
        return torch.where(x == 0, torch.ones((), dtype=x.dtype), torch.sin(safe) / safe)

    def logcumsumexp(input, dim):
        nd = max(input.dim(), 1)
        if not -nd <= dim < nd:  # the dim is checked before the dtype, as in PyTorch
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                             % (-nd, nd - 1, dim))
        if not input.is_floating_point():
            raise not_implemented("logcumsumexp_out_cpu", input.dtype)
        if input.dim() == 0:
            return input.clone()
        if input.numel() == 0:
            return input.clone()
        # shift by the max along dim (cancels in the gradient); unlike PyTorch's running form, a prefix more than
        # ~700 (float64) / ~88 (float32) below that max underflows to -inf
        m = input.detach().amax(dim, keepdim=True)
        m = torch.where(torch.isinf(m), torch.zeros((), dtype=m.dtype), m)
        return torch.log(torch.cumsum(torch.exp(input - m), dim)) + m

    for name, fn in (("deg2rad", deg2rad), ("rad2deg", rad2deg), ("positive", positive), ("sgn", sgn),
                     ("sinc", sinc), ("logcumsumexp", logcumsumexp)):
        if not hasattr(torch, name):
            setattr(torch, name, fn)
        if not hasattr(T, name):
            setattr(T, name, fn)

    # In-place spellings PyTorch 1.13 has as aliases of existing in-place ops (same checks, same history).
    aliases = (("clamp_min_", lambda self, min: self.clamp_(min=min)),
               ("clamp_max_", lambda self, max: self.clamp_(max=max)),
               ("negative_", "neg_"), ("absolute_", "abs_"), ("arccos_", "acos_"), ("arcsin_", "asin_"),
               ("arctan_", "atan_"), ("arctan2_", "atan2_"), ("divide_", "div_"), ("true_divide_", "div_"),
               ("subtract_", "sub_"), ("multiply_", "mul_"), ("fix_", "trunc_"), ("not_equal_", "ne_"),
               ("greater_", "gt_"), ("less_", "lt_"), ("greater_equal_", "ge_"), ("less_equal_", "le_"))
    for name, target in aliases:
        if hasattr(T, name):
            continue
        if callable(target):
            setattr(T, name, target)
        elif hasattr(T, target):
            setattr(T, name, getattr(T, target))
