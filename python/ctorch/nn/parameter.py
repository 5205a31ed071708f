"""nn.Parameter: a leaf tensor that modules register as a parameter."""
from .. import _C
from .. import Tensor


class Parameter(Tensor):
    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        if requires_grad and isinstance(data, Tensor) and not data.is_floating_point():
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        return Tensor._make_subclass(cls, data, requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        from .. import no_grad
        with no_grad():
            c = Parameter(self.data.clone(), self.requires_grad)
        memo[id(self)] = c
        return c

    def __reduce_ex__(self, proto):
        from .. import _rebuild_parameter
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


class UninitializedParameter(Parameter):
    pass
