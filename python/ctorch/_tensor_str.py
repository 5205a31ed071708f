"""Tensor printing with PyTorch 1.13's rules (precision, scientific mode, summarisation, suffixes)."""
import math


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch.set_printoptions: the same options and profiles."""
    if profile is not None:
        presets = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = presets[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def _flat_values(t):
    """Python values of t in row-major order (floats for floating dtypes)."""
    vals = t.reshape(-1).tolist()
    return vals


class _Formatter:
    """Chooses one width and one notation for every element, as PyTorch does."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(str(v)))
        else:
            finite = [v for v in values if math.isfinite(v) and v != 0]
            if finite:
                mags = [abs(v) for v in finite]
                lo, hi = min(mags), max(mags)
                self.int_mode = all(v == math.ceil(v) for v in finite)
                if self.int_mode:
                    if hi / lo > 1000.0 or hi > 1.0e8:
                        self.sci_mode = True
                        self.max_width = max([self.max_width] + [len(f"{v:.{p}e}") for v in finite])
                    else:
                        self.max_width = max([self.max_width] + [len(f"{v:.0f}") + 1 for v in finite])
                else:
                    if hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
                        self.sci_mode = True
                        self.max_width = max([self.max_width] + [len(f"{v:.{p}e}") for v in finite])
                    else:
                        self.max_width = max([self.max_width] + [len(f"{v:.{p}f}") for v in finite])
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def width(self):
        return self.max_width

    def format(self, v):
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                s = f"{v:{self.max_width}.{p}e}"
            elif self.int_mode:
                s = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    s += "."
            else:
                s = f"{v:.{p}f}"
        else:
            s = str(v)
        return " " * (self.max_width - len(s)) + s


def _summarized_values(t):
    """The elements that stay visible when a large tensor is summarised."""
    e = PRINT_OPTS.edgeitems
    if t.dim() == 0:
        return [t.item()]
    if t.dim() == 1:
        vals = t.tolist()
        if len(vals) > 2 * e:
            return vals[:e] + vals[-e:]
        return vals
    n = t.shape[0]
    rows = list(range(e)) + list(range(n - e, n)) if n > 2 * e else range(n)
    out = []
    for i in rows:
        out.extend(_summarized_values(t[i]))
    return out


def _vector_str(values, n, indent, summarize, fmt):
    e = PRINT_OPTS.edgeitems
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / (fmt.width() + 2))))
    if summarize and n > 2 * e:
        data = [fmt.format(v) for v in values[:e]] + [" ..."] + [fmt.format(v) for v in values[-e:]]
    else:
        data = [fmt.format(v) for v in values]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(t, indent, summarize, fmt):
    dim = t.dim()
    if dim == 0:
        return fmt.format(t.item())
    if dim == 1:
        return _vector_str(t.tolist(), t.shape[0], indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    n = t.shape[0]
    if summarize and n > 2 * e:
        slices = ([_nested_str(t[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] +
                  [_nested_str(t[i], indent + 1, summarize, fmt) for i in range(n - e, n)])
    else:
        slices = [_nested_str(t[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _tensor_str(t, indent):
    import ctorch
    if t.numel() == 0:
        return "[]"
    summarize = t.numel() > PRINT_OPTS.threshold
    if t.dtype in (ctorch.float16, ctorch.bfloat16):
        t = t.float()
    values = _summarized_values(t) if summarize else _flat_values(t)
    fmt = _Formatter(values, t.dtype.is_floating_point)
    return _nested_str(t, indent, summarize, fmt)


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_len = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last_len + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last_len = indent + len(s)
        else:
            parts.append(", " + s)
            last_len += len(s) + 2
    parts.append(")")
    return "".join(parts)


def _str(t):
    import ctorch
    with ctorch.no_grad():
        plain = type(t) is ctorch.Tensor or type(t) is ctorch.nn.Parameter
        prefix = "tensor(" if plain else type(t).__name__ + "("
        indent = len(prefix)
        suffixes = []
        src = t
        if t._device_str != "cpu":
            # PyTorch names a non-CPU device first; the values are formatted from a host copy
            suffixes.append("device='" + t._device_str + "'")
            t = t.cpu()
        default = ctorch.get_default_dtype()
        has_default = t.dtype in (default, ctorch.int64, ctorch.bool)
        if t.numel() == 0:
            if t.dim() != 1:
                suffixes.append("size=" + str(tuple(t.shape)))
            if t.dtype != default:
                suffixes.append("dtype=" + str(t.dtype))
            body = "[]"
        else:
            if not has_default:
                suffixes.append("dtype=" + str(t.dtype))
            body = _tensor_str(t, indent)
        gf = src.grad_fn
        if gf is not None:
            suffixes.append("grad_fn=<{}>".format(type(gf).__name__))
        elif src.requires_grad:
            suffixes.append("requires_grad=True")
        return _add_suffixes(prefix + body, suffixes, indent)
