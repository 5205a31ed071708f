"""torch.nn.utils: gradient clipping and parameter vectors."""
import math

from ... import _C
from ...autograd.grad_mode import no_grad


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    if isinstance(parameters, _C._TensorBase):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if len(grads) == 0:
        return _C.tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [g.detach().abs().max() for g in grads]
            total = norms[0] if len(norms) == 1 else _C.stack(norms).max()
        else:
            total = _C._vector_norm(_C.stack([_C._vector_norm(g.detach(), norm_type) for g in grads]), norm_type)
        if error_if_nonfinite and (total.isnan().item() or total.isinf().item()):
            raise RuntimeError("The total norm of order {} for gradients from `parameters` is non-finite, so it "
                               "cannot be clipped. To disable this error and scale the gradients by the non-finite "
                               "norm anyway, set `error_if_nonfinite=False`".format(norm_type))
        clip_coef = max_norm / (total + 1e-6)
        clip_coef_clamped = _C.clamp(clip_coef, max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped)
    return total


def clip_grad_value_(parameters, clip_value):
    if isinstance(parameters, _C._TensorBase):
        parameters = [parameters]
    with no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)


def parameters_to_vector(parameters):
    return _C.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    i = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[i:i + n].view_as(p).data
        i += n
