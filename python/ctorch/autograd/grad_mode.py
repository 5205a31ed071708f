"""no_grad / enable_grad / set_grad_enabled / inference_mode: context managers and decorators."""
import functools

from .. import _C


class _Mode:
    """Base: a context manager that also decorates functions (a fresh instance per call)."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper

    _args = ()


class no_grad(_Mode):
    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class enable_grad(_Mode):
    def __enter__(self):
        self.prev = _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class set_grad_enabled(_Mode):
    """Takes effect at construction, like PyTorch's (so it also works as a plain call)."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError("enabled must be a bool (got %s)" % type(mode).__name__)
        self._args = (mode,)
        self.prev = _C._set_grad_enabled(bool(mode))

    def __call__(self, fn):
        _C._set_grad_enabled(self.prev)
        return _Mode.__call__(self, fn)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class inference_mode(_Mode):
    def __init__(self, mode=True):
        self._args = (mode,)
        self.mode = bool(mode)

    def __call__(self, fn):
        if not callable(fn) or isinstance(fn, bool):
            return inference_mode(fn)
        return _Mode.__call__(self, fn)

    def __enter__(self):
        self.prev_inf = _C._set_inference_mode(self.mode)
        self.prev_grad = _C._set_grad_enabled(not self.mode and _C.is_grad_enabled())
        if not self.mode:
            _C._set_grad_enabled(self.prev_grad)

    def __exit__(self, *exc):
        _C._set_inference_mode(self.prev_inf)
        _C._set_grad_enabled(self.prev_grad)
        return False
