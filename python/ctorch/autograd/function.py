"""torch.autograd.Function for user-defined ops.

The C engine has no Python node type, so a Function's backward is attached with tensor
hooks: each output is `forward's value + 0 * anchor`, where the anchor depends on an alias
of every input needing a gradient. Hooks on the outputs capture their gradients; the hook
on each input's alias replaces the (zero) gradient reaching it with what the user's
backward returns for that input. Gradients reach the inputs exactly as PyTorch computes
them; only the printed grad_fn name differs.
"""
import itertools

from .. import _C
from .grad_mode import no_grad

# Hooks live on tensor handles in ctorch (not on graph nodes), so the tensors carrying a
# Function's hooks are kept here until its backward has run.
_KEEP = {}
_DONE = []  # finished entries, dropped later: never free a handle while the engine is running its hook
_ids = itertools.count()


def _fit_grad(cls, i, gi, like):
    """A returned gradient of another shape is summed to the input's shape where it broadcasts to it (as
    PyTorch does), else PyTorch's error."""
    gs, ts = list(gi.shape), list(like.shape)
    ok = len(ts) <= len(gs) and all(t == g or t == 1 for t, g in zip(ts[::-1], gs[::-1]))
    if not ok:
        raise RuntimeError("Function %sBackward returned an invalid gradient at index %d - got %s but expected shape "
                           "compatible with %s" % (cls.__name__, i, gs, ts))
    lead = len(gs) - len(ts)
    if lead:
        gi = gi.sum(tuple(range(lead)))
    dims = tuple(d for d, t in enumerate(ts) if t == 1 and gi.shape[d] != 1)
    if dims:
        gi = gi.sum(dims, keepdim=True)
    return gi


class FunctionCtx:
    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()
        self.materialize_grads = True
        self._non_differentiable = set()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tuple(tensors)

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class _FunctionMeta(type):
    pass


class Function(metaclass=_FunctionMeta):
    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        del _DONE[:]
        ctx = FunctionCtx()
        is_t = [isinstance(a, _C._TensorBase) for a in args]
        ctx.needs_input_grad = tuple(t and a.requires_grad for t, a in zip(is_t, args))
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not _C.is_grad_enabled() or not any(ctx.needs_input_grad):
            return out
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        grad_pos = [i for i, need in enumerate(ctx.needs_input_grad) if need]
        links = [args[i].view_as(args[i]) for i in grad_pos]
        anchor = None
        for lk in links:
            z = lk.sum() * 0
            anchor = z if anchor is None else anchor + z
        state = {"grads": [None] * len(outs), "result": None}
        results = []
        for k, o in enumerate(outs):
            if isinstance(o, _C._TensorBase) and o.is_floating_point() and id(o) not in ctx._non_differentiable:
                r = o.detach() + anchor.to(o.dtype)

                def capture(g, k=k):
                    state["grads"][k] = g
                r._register_hook(capture)
                results.append(r)
            else:
                results.append(o.detach() if isinstance(o, _C._TensorBase) else o)

        def compute():
            if state["result"] is None:
                gs = []
                for k, g in enumerate(state["grads"]):
                    o = outs[k]
                    if g is None and ctx.materialize_grads and isinstance(o, _C._TensorBase):
                        g = _C.zeros_like(o)
                    gs.append(g)
                with no_grad():
                    res = cls.backward(ctx, *gs)
                if not isinstance(res, tuple):
                    res = (res,)
                if len(res) < len(args) or any(r is not None for r in res[len(args):]):
                    raise RuntimeError("function %sBackward returned an incorrect number of gradients (expected "
                                       "%d, got %d)" % (cls.__name__, len(args), len(res)))
                state["result"] = res
            return state["result"]

        key = next(_ids)
        pending = [len(grad_pos)]

        for j, i in enumerate(grad_pos):
            def replace(g, i=i):
                gi = compute()[i]
                if gi is not None and tuple(gi.shape) != tuple(g.shape):
                    gi = _fit_grad(cls, i, gi, g)
                pending[0] -= 1
                if pending[0] == 0 and key in _KEEP:
                    _DONE.append(_KEEP.pop(key))
                return _C.zeros_like(g) if gi is None else gi
            links[j]._register_hook(replace)
        _KEEP[key] = (links, results)
        return results[0] if single else tuple(results)


class once_differentiable:
    def __new__(cls, fn):
        return fn
