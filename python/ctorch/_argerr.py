"""PyTorch 1.13's argument-parser errors for ops with several overloads.

The C bindings parse their arguments their own way; on an error they call `parser_error`
(python/ctorch/_C/module.c, pyct_arg_error), which checks the call against PyTorch's visible
signatures of the op. When no signature accepts the argument types, PyTorch's parser would have
raised before doing anything, so this returns the TypeError it raises:
  - one signature, or one whose argument count fits: "X(): argument 'a' (position n) must be T, not U"
    (or the missing / unexpected-keyword / too-many-positionals wording),
  - otherwise "X() received an invalid combination of arguments - got (...), but expected one of: ..."
    with the "didn't match because ..." lines PyTorch adds where the argument count matches.
When a signature does accept the types, the binding's own error stands (None is returned), except
for a string given where PyTorch also accepts a dimension name: the RuntimeError it raises then.

Signature notation (ours; the markers are dropped when printed): `T? name` accepts None,
`name=` may be omitted, `^` after a list type also accepts one int (or name), a leading `!` marks a
hidden (deprecated) signature that parses but is never printed.
"""
import os

_OPTS = ("torch.dtype? dtype=, torch.layout? layout=, torch.device? device=, bool? pin_memory=, "
         "bool requires_grad=")


def _red(op_sigs):
    return [s.replace("OPTS", _OPTS) for s in op_sigs]


_RED_F = ["(Tensor input, *, torch.dtype? dtype=)",
          "(Tensor input, tuple of ints^? dim, bool keepdim=, *, torch.dtype? dtype=, Tensor? out=)",
          "(Tensor input, tuple of names^ dim, bool keepdim=, *, torch.dtype? dtype=, Tensor? out=)"]
_RED_M = ["(*, torch.dtype? dtype=)",
          "(tuple of ints^? dim, bool keepdim=, *, torch.dtype? dtype=)",
          "(tuple of names^ dim, bool keepdim=, *, torch.dtype? dtype=)"]
_MAX_F = ["(Tensor input)", "(Tensor input, Tensor other, *, Tensor? out=)",
          "(Tensor input, int dim, bool keepdim=, *, tuple of Tensors? out=)",
          "(Tensor input, name dim, bool keepdim=, *, tuple of Tensors? out=)"]
_MAX_M = ["()", "(Tensor other)", "(int dim, bool keepdim=)", "(name dim, bool keepdim=)"]
_ONES = ["(tuple of ints size, *, tuple of names? names, OPTS)",
         "(tuple of SymInts size, *, Tensor? out=, OPTS)"]

# op -> (function-form signatures, method-form signatures); None: that form is not handled here
_SIGS = {
    "add": (["(Tensor input, Tensor other, *, Number alpha=, Tensor? out=)",
             "!(Tensor input, Number alpha, Tensor other, *, Tensor? out=)"],
            ["(Tensor other, *, Number alpha=)", "!(Number alpha, Tensor other)"]),
    "sum": (_RED_F, _RED_M),
    "mean": (_RED_F, _RED_M),
    "max": (_MAX_F, _MAX_M),
    "min": (_MAX_F, _MAX_M),
    "median": (["(Tensor input)", "(Tensor input, int dim, bool keepdim=, *, tuple of Tensors? out=)",
                "(Tensor input, name dim, bool keepdim=, *, tuple of Tensors? out=)"],
               ["()", "(int dim, bool keepdim=)", "(name dim, bool keepdim=)"]),
    "clamp": (["(Tensor input, Tensor? min=, Tensor? max=, *, Tensor? out=)",
               "(Tensor input, Number? min=, Number? max=, *, Tensor? out=)"],
              ["(Tensor? min=, Tensor? max=)", "(Number? min=, Number? max=)"]),
    "where": (["(Tensor condition)", "(Tensor condition, Tensor input, Tensor other, *, Tensor? out=)",
               "(Tensor condition, Number self, Tensor other)", "(Tensor condition, Tensor input, Number other)",
               "(Tensor condition, Number self, Number other)"], None),
    "cat": (["(tuple of Tensors tensors, int dim=, *, Tensor? out=)",
             "(tuple of Tensors tensors, name dim, *, Tensor? out=)"], None),
    "view": (None, ["(torch.dtype dtype)", "(tuple of SymInts size)"]),
    "reshape": (["(Tensor input, tuple of SymInts shape)"], ["(tuple of SymInts shape)"]),
    "to": (None, ["(torch.device? device=, torch.dtype? dtype=, bool non_blocking=, bool copy=, *, "
                  "torch.memory_format? memory_format=)",
                  "(torch.dtype dtype, bool non_blocking=, bool copy=, *, torch.memory_format? memory_format=)",
                  "(Tensor tensor, bool non_blocking=, bool copy=, *, torch.memory_format? memory_format=)"]),
    "zeros": (_red(_ONES), None),
    "ones": (_red(_ONES), None),
    "full": (_red(["(tuple of ints size, Number fill_value, *, tuple of names? names, OPTS)",
                   "(tuple of SymInts size, Number fill_value, *, Tensor? out=, OPTS)"]), None),
    "arange": (_red(["(Number end, *, Tensor? out=, OPTS)", "(Number start, Number end, *, OPTS)",
                     "(Number start, Number end, Number step=, *, Tensor? out=, OPTS)"]), None),
    "randn": (_red(["(tuple of ints size, *, torch.Generator? generator, tuple of names? names, OPTS)",
                    "(tuple of ints size, *, torch.Generator? generator, Tensor? out=, OPTS)",
                    "(tuple of ints size, *, Tensor? out=, OPTS)",
                    "(tuple of ints size, *, tuple of names? names, OPTS)"]), None),
}
_SIGS["clip"] = _SIGS["clamp"]  # an alias: same signatures, its own name in the message
# PyTorch lets plain numbers stand for Tensor arguments of these ops
_NUMBERS_AS_TENSORS = {"add"}


class _Param:
    __slots__ = ("type", "name", "nullable", "optional", "kwonly", "one_int")


class _Sig:
    def __init__(self, text):
        self.hidden = text.startswith("!")
        text = text.lstrip("!")
        self.params = []
        kwonly = False
        for part in text[1:-1].split(", ") if text != "()" else []:
            if part == "*":
                kwonly = True
                continue
            p = _Param()
            typ, _, name = part.rpartition(" ")
            p.optional = name.endswith("=")
            p.name = name.rstrip("=")
            p.nullable = typ.endswith("?")
            typ = typ.rstrip("?")
            p.one_int = typ.endswith("^")
            p.type = typ.rstrip("^")
            p.kwonly = kwonly
            self.params.append(p)
        self.display = text.replace("?", "").replace("=", "").replace("^", "")
        self.max_pos = sum(1 for p in self.params if not p.kwonly)
        # PyTorch gathers f(2, 3) into the size list when that list is the only positional argument
        self.varargs = self.max_pos == 1 and self.params[0].type in ("tuple of ints", "tuple of SymInts")
        self.min_args = sum(1 for p in self.params if not p.optional)
        self.max_args = 1 << 30 if self.varargs else len(self.params)


_cache = {}


def _sigs(name, is_method):
    key = (name, is_method)
    if key not in _cache:
        forms = _SIGS.get(name)
        texts = forms[1 if is_method else 0] if forms else None
        _cache[key] = [_Sig(t) for t in texts] if texts else None
    return _cache[key]


def _is_tensor(o):
    from ctorch import _C
    return isinstance(o, _C._TensorBase)


def _typename(o):
    """Python's tp_name of o's type, as PyTorch prints it (ctorch's classes under torch's names)."""
    if _is_tensor(o):
        return type(o).__name__
    t = type(o)
    mod = getattr(t, "__module__", "builtins")
    if mod == "ctorch" or mod.startswith("ctorch."):
        known = {"device": "torch.device", "_Layout": "torch.layout", "Size": "torch.Size",
                 "memory_format": "torch.memory_format", "finfo": "torch.finfo", "iinfo": "torch.iinfo"}
        return known.get(t.__name__, t.__name__)
    if mod == "builtins" or t.__flags__ & (1 << 9):  # heap types: tp_name is the bare name
        return t.__name__
    return mod + "." + t.__qualname__


def _zero_dim_free(o):
    return _is_tensor(o) and o.dim() == 0 and not o.requires_grad


def _int_like(o):
    if isinstance(o, int) and not isinstance(o, bool):
        return True
    if hasattr(o, "__index__") and not isinstance(o, (bool, float)) and not _is_tensor(o):
        return True
    return _zero_dim_free(o) and not o.is_floating_point() and o.dtype.__repr__() != "torch.bool"


def _check(name, p, o):
    """PyTorch's type check of one argument (FunctionParameter::check)."""
    if o is None and p.nullable:
        return True
    t = p.type
    if t == "Tensor":
        return _is_tensor(o) or (name in _NUMBERS_AS_TENSORS and isinstance(o, (int, float, complex)))
    if t == "Number":
        return isinstance(o, (int, float, complex)) or _zero_dim_free(o)
    if t == "int":
        return _int_like(o)
    if t == "float":
        return isinstance(o, (int, float)) or _zero_dim_free(o)
    if t == "bool":
        return isinstance(o, bool) or type(o).__name__ == "bool_"
    if t in ("tuple of ints", "tuple of SymInts"):
        if isinstance(o, (tuple, list)):
            return len(o) == 0 or _int_like(o[0])
        return p.one_int and _int_like(o)
    if t == "tuple of Tensors":
        return isinstance(o, (tuple, list)) and all(_is_tensor(x) for x in o)
    if t == "tuple of names":
        if isinstance(o, (tuple, list)):
            return all(isinstance(x, str) or x is None for x in o)
        return p.one_int and isinstance(o, str)
    if t == "name":
        return isinstance(o, str)
    if t == "torch.dtype":
        return _typename(o) == "torch.dtype" or o in (float, int, bool, complex)
    if t == "torch.device":
        return _typename(o) == "torch.device" or isinstance(o, str) or (isinstance(o, int) and not isinstance(o, bool))
    if t == "torch.layout":
        return _typename(o) == "torch.layout"
    if t == "torch.memory_format":
        return type(o).__name__ in ("memory_format", "_Layout", "_MemoryFormat")
    if t == "torch.Generator":
        return type(o).__name__ == "Generator"
    return True  # unknown type: never claim a mismatch


class _Immediate(Exception):
    pass


def _list_elements(name, p, o):
    """PyTorch checks only an int list's first element while matching; a later bad one fails when the
    matched signature's list is read: that message, or None."""
    for k, x in enumerate(o):
        if not _int_like(x):
            return "%s(): argument '%s' must be %s, but found element of type %s at pos %d" % (
                name, p.name, p.type, _typename(x), k + 1)
    return None


def _parse(name, sig, args, kwargs):
    """(True, deferred error or None) when sig accepts the call, else (False, PyTorch's message)."""
    nargs = len(args)
    if nargs > sig.max_pos and not sig.varargs:
        return False, "%s() takes %d positional argument%s but %d %s given" % (
            name, sig.max_pos, "" if sig.max_pos == 1 else "s", nargs, "was" if nargs == 1 else "were")
    used = set()
    deferred = None
    i_pos = 0
    for p in sig.params:
        is_kw = False
        if not p.kwonly and i_pos < nargs:
            o = args[i_pos]
            i_pos += 1
            if sig.varargs and i_pos == 1 and _int_like(o):
                # f(2, 3): every positional argument is an element of the size list
                deferred = deferred or _list_elements(name, p, args)
                i_pos = nargs
                continue
        elif p.name in kwargs:
            o = kwargs[p.name]
            used.add(p.name)
            is_kw = True
        else:
            if p.optional:
                continue
            missing = [q.name for q in sig.params[sig.params.index(p):] if not q.optional and q.name not in kwargs]
            return False, '%s() missing %d required positional argument%s: %s' % (
                name, len(missing), "" if len(missing) == 1 else "s", ", ".join('"%s"' % m for m in missing))
        if p.type == "tuple of Tensors" and isinstance(o, (tuple, list)):
            for k, x in enumerate(o):
                if not _is_tensor(x):  # PyTorch raises this at once, whatever other signatures say
                    raise _Immediate("expected Tensor as element %d in argument %d, but got %s" % (
                        k, i_pos - 1 if not is_kw else sig.params.index(p), _typename(x)))
        if not _check(name, p, o):
            if is_kw:
                return False, "%s(): argument '%s' must be %s, not %s" % (name, p.name, p.type, _typename(o))
            return False, "%s(): argument '%s' (position %d) must be %s, not %s" % (
                name, p.name, i_pos, p.type, _typename(o))
        if p.type in ("tuple of ints", "tuple of SymInts") and isinstance(o, (tuple, list)):
            deferred = deferred or _list_elements(name, p, o)
    for k in kwargs:
        if k not in used:
            if any(q.name == k for q in sig.params):
                return False, "%s() got multiple values for argument '%s'" % (name, k)
            return False, "%s() got an unexpected keyword argument '%s'" % (name, k)
    return True, deferred


# ---- the "invalid combination" text (PyTorch formats it from the printed signatures alone) ----
def _fmt(args, kwargs, matches, kwnames=None):
    mark = ("\33[31;1m", "\33[0m") if os.isatty(1) and os.isatty(2) else ("!", "!")
    parts = []
    items = [(None, a) for a in args] + [(k, kwargs[k]) for k in (kwnames or kwargs)]
    for i, (k, o) in enumerate(items):
        s = ("%s=" % k if k else "") + _typename(o)
        parts.append(s if matches(i, o) else mark[0] + s + mark[1])
    text = ", ".join(parts) + (", " if items and not args else "")
    return "(" + text + ")"


def _opt_args(display):
    inner = display[1:-1]
    out = []
    for a in inner.split(", "):
        typ, sp, nm = a.rpartition(" ")
        out.append((typ, nm) if sp else (a, a))
    return out


def _type_matches(typ, o):
    tn = _typename(o)
    if typ == "float":
        return tn in ("float", "int", "long")
    if typ == "int":
        return tn in ("int", "long")
    return tn == typ


def _invalid_combination(name, sigs, args, kwargs):
    opts = [s.display for s in sigs if not s.hidden]
    got = len(args) + len(kwargs)
    msg = "%s() received an invalid combination of arguments - " % name

    def count_ok(oa):
        return got == len(oa)

    def unmatched_kw(oa):
        start = max(len(oa) - len(kwargs), 0)
        names = [nm for _, nm in oa[start:]]
        return [k for k in kwargs if k not in names]

    def typed(oa):
        names = [nm for _, nm in oa]
        kwn = []
        for i in range(len(args), got):  # PyTorch looks keyword i up by the option's i-th name
            if i >= len(oa) or oa[i][1] not in kwargs:
                return None
            kwn.append(oa[i][1])
        return _fmt(args, {k: kwargs[k] for k in kwn}, lambda i, o: i < len(oa) and _type_matches(oa[i][0], o), kwn)

    if len(opts) == 1:
        oa = _opt_args(opts[0])
        bad = unmatched_kw(oa) if kwargs else []
        if bad:
            return msg + "got unrecognized keyword arguments: " + ", ".join(bad)
        desc = typed(oa) if count_ok(oa) else None
        return msg + "got " + (desc or _fmt(args, kwargs, lambda i, o: True)) + ", but expected " + opts[0]
    msg += "got " + _fmt(args, kwargs, lambda i, o: True) + ", but expected one of:\n"
    for opt in opts:
        msg += " * " + opt + "\n"
        oa = _opt_args(opt)
        if count_ok(oa):
            bad = unmatched_kw(oa) if kwargs else []
            if bad:
                msg += "      didn't match because some of the keywords were incorrect: " + ", ".join(bad) + "\n"
            else:
                desc = typed(oa)
                if desc is None:
                    return None
                msg += "      didn't match because some of the arguments have invalid types: " + desc + "\n"
    return msg


def parser_error(name, is_method, args, kwargs, exc, self=None):
    """The exception PyTorch's parser raises for this call, or None to keep ctorch's own `exc`."""
    sigs = _sigs(name, bool(is_method))
    if not sigs or isinstance(exc, NotImplementedError):  # ctorch's refusal of what it lacks stays
        return None
    kwargs = dict(kwargs) if kwargs else {}
    args = tuple(args)
    try:
        return _parser_error(name, sigs, args, kwargs, self)
    except _Immediate as e:
        return TypeError(str(e))


def _parser_error(name, sigs, args, kwargs, self):
    for s in sigs:
        ok, deferred = _parse(name, s, args, kwargs)
        if ok:
            return TypeError(deferred) if deferred else _name_dim_error(s, args, kwargs, self)
    n = len(args) + len(kwargs)
    visible = [s for s in sigs if not s.hidden]
    plausible = [s for s in visible if s.min_args <= n <= s.max_args]
    if len(sigs) == 1 or len(plausible) == 1:
        return TypeError(_parse(name, sigs[0] if len(sigs) == 1 else plausible[0], args, kwargs)[1])
    msg = _invalid_combination(name, sigs, args, kwargs)
    return TypeError(msg) if msg else None


def _name_dim_error(sig, args, kwargs, self):
    """A string accepted as a dimension name: ctorch has no named tensors, so the name is never found."""
    i_pos = 0
    for p in sig.params:
        if not p.kwonly and i_pos < len(args):
            o = args[i_pos]
            i_pos += 1
        else:
            o = kwargs.get(p.name)
        if p.type in ("name", "tuple of names") and p.name == "dim" and o is not None:
            first = o if isinstance(o, str) else (o[0] if len(o) else None)
            if first is None:
                return None
            ref = self
            if ref is None and args:
                ref = args[0][0] if isinstance(args[0], (tuple, list)) and args[0] else args[0]
            if not _is_tensor(ref):
                return None
            return RuntimeError("Name '%s' not found in Tensor[%s]." % (first, ", ".join(["None"] * ref.dim())))
    return None
