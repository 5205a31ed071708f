"""Case description for the PyTorch parity harness (see gen_fixtures.py and parity.h).

    case(name, op, inputs, fn, attrs={}, rtol=None, atol=None, grad_rtol=None, grad_atol=None,
         gradgrad=False, fd=True, error=None)
    T(shape, dtype="float32", low=-2.0, high=2.0, layout="contiguous"|"transposed"|"strided",
      requires_grad=None, values=None)

- name: unique over all families (fixture inputs are seeded from it).
- op: the C runner's name (PARITY_OP(op) in tests/parity/run_<family>.c).
- fn: receives torch tensors built from exactly the inputs' values/layouts and returns a
  tensor or a tuple/list of tensors. None only for error cases that PyTorch cannot express.
- requires_grad None means True for floating dtypes. Integer dtypes draw from [low, high),
  bool draws 0/1. values= gives the exact (nested list) values instead.
- gradgrad=True also checks double backward; fd=True runs a float64 finite-difference check
  of the C gradient (set fd=False at non-smooth points or for integer-only ops).
- error="substring": PyTorch (when fn is given) and ctorch must both fail, and both messages
  must contain the substring (so write PyTorch's wording).
- check_strides=True (an addition for view ops): each output's strides and storage offset
  must equal PyTorch's, and it must share storage with exactly the inputs PyTorch's does.
"""

DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool")
LAYOUTS = ("contiguous", "transposed", "strided")


class T:
    __slots__ = ("shape", "dtype", "low", "high", "layout", "requires_grad", "values")

    def __init__(self, shape, dtype="float32", low=-2.0, high=2.0, layout="contiguous", requires_grad=None,
                 values=None):
        if isinstance(shape, int):
            shape = (shape,)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = str(dtype).replace("torch.", "")
        if self.dtype not in DTYPES:
            raise ValueError("T: unknown dtype %r" % (dtype,))
        if layout not in LAYOUTS:
            raise ValueError("T: unknown layout %r" % (layout,))
        self.low = low
        self.high = high
        self.layout = layout
        if requires_grad is None:
            requires_grad = self.dtype in ("float32", "float64", "float16", "bfloat16")
        self.requires_grad = bool(requires_grad)
        self.values = values

    def __repr__(self):
        return "T(%r, %r, layout=%r, requires_grad=%r)" % (self.shape, self.dtype, self.layout, self.requires_grad)


class Case:
    __slots__ = ("name", "op", "inputs", "fn", "attrs", "rtol", "atol", "grad_rtol", "grad_atol", "gradgrad", "fd",
                 "error", "check_strides", "source")

    def __repr__(self):
        return "case(%r, %r)" % (self.name, self.op)


def case(name, op, inputs, fn, attrs=None, rtol=None, atol=None, grad_rtol=None, grad_atol=None, gradgrad=False,
         fd=True, error=None, check_strides=False):
    c = Case()
    c.name = name
    c.op = op
    c.inputs = list(inputs)
    c.fn = fn
    c.attrs = dict(attrs or {})
    c.rtol = rtol
    c.atol = atol
    c.grad_rtol = grad_rtol
    c.grad_atol = grad_atol
    c.gradgrad = bool(gradgrad)
    c.fd = bool(fd)
    c.error = error
    c.check_strides = bool(check_strides)
    c.source = None
    return c
