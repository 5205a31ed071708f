"""torch.autograd: backward, grad, grad modes, Function, gradcheck."""
from .. import _C
from .grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: F401
from .function import Function  # noqa: F401
from .gradcheck import gradcheck  # noqa: F401


def _as_list(x):
    if x is None:
        return None
    if isinstance(x, _C._TensorBase):
        return [x]
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    if grad_variables is not None and grad_tensors is None:
        grad_tensors = grad_variables
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    _C._autograd_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, is_grads_batched=False):
    outputs = _as_list(outputs)
    inputs_l = _as_list(inputs)
    gouts = _as_list(grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    return _C._autograd_grad(outputs, inputs_l, gouts, retain_graph, create_graph, only_inputs, allow_unused)
