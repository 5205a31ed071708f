"""ctorch.save / ctorch.load.

Files are PyTorch's zip format (archive/data.pkl + archive/data/<key>), written and read
with a restricted pickle: loading rebuilds only tensors, Parameters and plain containers
(dict, OrderedDict, list, tuple, numbers, strings) and refuses any other global, so a
file never runs code. Files written by torch.save and by ctorch.save load in either.

A path ending in .safetensors is written in the safetensors format instead (a dict of str -> Tensor,
or one tensor); load recognises that format by its content and checks every offset before reading.
"""
import collections
import io
import os
import pickle
import struct
import zipfile

from . import _C

_STORAGE_OF = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
    "int8": "CharStorage", "uint8": "ByteStorage", "int16": "ShortStorage", "int32": "IntStorage",
    "int64": "LongStorage", "bool": "BoolStorage",
}
_DTYPE_OF = {v: k for k, v in _STORAGE_OF.items()}
_NP = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "int8": "|i1", "uint8": "|u1", "int16": "<i2",
       "int32": "<i4", "int64": "<i8", "bool": "|b1"}


class _StorageType:
    def __init__(self, name):
        self.dtype_name = _DTYPE_OF[name]


class _Storage:
    def __init__(self, dtype_name, data):
        self.dtype_name, self.data = dtype_name, data


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    import ctorch
    dt = getattr(_C, storage.dtype_name)
    itemsize = dt.itemsize
    n = len(storage.data) // itemsize
    flat = _from_bytes(storage.data, storage.dtype_name, n)
    t = flat.as_strided(tuple(size), tuple(stride), storage_offset) if n else ctorch.zeros(tuple(size), dtype=dt)
    t = t.clone() if n else t
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn import Parameter
    return Parameter(data, requires_grad)


def _from_bytes(data, dtype_name, n):
    import ctorch
    dt = getattr(_C, dtype_name)
    if dtype_name == "bfloat16":
        raw = ctorch.tensor(list(struct.unpack("<%dH" % n, data)), dtype=ctorch.int32)
        bits = (raw.to(ctorch.int64) * 65536)
        vals = [struct.unpack("<f", struct.pack("<I", b))[0] for b in bits.tolist()]
        return ctorch.tensor(vals, dtype=dt)
    import numpy as np
    arr = np.frombuffer(bytearray(data), dtype=_NP[dtype_name], count=n)
    return _C.from_numpy(arr)


_ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch", "Size"): tuple,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, read_record):
        super().__init__(f)
        self._read = read_record

    def find_class(self, module, name):
        if module == "torch" and name in _DTYPE_OF:
            return _StorageType(name)
        fn = _ALLOWED.get((module, name))
        if fn is None:
            raise pickle.UnpicklingError(
                "ctorch.load refuses to load the global '%s.%s': only tensors and plain containers are allowed"
                % (module, name))
        return fn

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise pickle.UnpicklingError("unsupported persistent id in checkpoint")
        stype, key = pid[1], pid[2]
        if not isinstance(stype, _StorageType):
            raise pickle.UnpicklingError("unsupported storage type in checkpoint")
        return _Storage(stype.dtype_name, self._read(key))


def load(f, map_location=None, pickle_module=None, *, weights_only=False, **kwargs):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return load(fh, map_location)
    data = f.read()
    if _is_safetensors(data):
        return _load_safetensors(data)
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise RuntimeError("ctorch.load only reads PyTorch's zip checkpoint format (torch.save since 1.6)")
    z = zipfile.ZipFile(io.BytesIO(data))
    names = z.namelist()
    pkl = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
    if not pkl:
        raise RuntimeError("checkpoint has no data.pkl")
    root = pkl[0][:-len("data.pkl")]

    def read(key):
        return z.read(root + "data/" + str(key))
    return _Unpickler(io.BytesIO(z.read(pkl[0])), read).load()


# ---- writing: the pure-Python pickler, with globals written by name (torch need not be imported) ----
class _GlobalCall:
    """Pickled as the global module.name, which torch.load resolves; ctorch.load maps it back."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        raise RuntimeError("placeholder for a pickled global")


def _dtype_name(dt):
    return repr(dt)[len("torch."):]


def _to_bytes(t, name):
    if name == "bfloat16":
        vals = t.float().reshape(-1).tolist()
        return b"".join(struct.pack("<f", v)[2:] for v in vals)
    import numpy as np
    return np.ascontiguousarray(t.numpy()).tobytes()


class _Writer(pickle._Pickler):
    def __init__(self, f, storages):
        super().__init__(f, protocol=2)
        self.storages = storages

    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            key = str(len(self.storages))
            self.storages.append((key, obj.data))
            return ("storage", _GlobalCall("torch", _STORAGE_OF[obj.dtype_name]), key, "cpu",
                    len(obj.data) // getattr(_C, obj.dtype_name).itemsize)
        return None

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, _GlobalCall):
            self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
            return
        if isinstance(obj, _C._TensorBase):
            from .nn import Parameter
            if isinstance(obj, Parameter):
                return self.save_reduce(_GlobalCall("torch._utils", "_rebuild_parameter"),
                                        (obj.detach(), obj.requires_grad, collections.OrderedDict()), obj=obj)
            t = obj.detach().contiguous()
            name = _dtype_name(t.dtype)
            st = _Storage(name, _to_bytes(t, name))
            return self.save_reduce(_GlobalCall("torch._utils", "_rebuild_tensor_v2"),
                                    (st, 0, tuple(t.shape), tuple(t.stride()), obj.requires_grad and obj.is_leaf,
                                     collections.OrderedDict()), obj=obj)
        return super().save(obj, save_persistent_id)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True):
    if isinstance(f, (str, os.PathLike)) and str(f).endswith(".safetensors"):
        with open(f, "wb") as fh:
            fh.write(_safetensors_bytes(obj))
        return
    storages = []
    buf = io.BytesIO()
    _Writer(buf, storages).dump(obj)
    if isinstance(f, (str, os.PathLike)):
        base = os.path.splitext(os.path.basename(str(f)))[0] or "archive"
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            _write_zip(z, base, buf.getvalue(), storages)
    else:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            _write_zip(z, "archive", buf.getvalue(), storages)


def _write_zip(z, base, pkl, storages):
    z.writestr(base + "/data.pkl", pkl)
    for key, data in storages:
        z.writestr(base + "/data/" + key, data)
    z.writestr(base + "/version", "3\n")


# ---- safetensors: 8-byte little-endian header length, a JSON header, then the tensors' bytes ----
_ST_DTYPE = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16", "int8": "I8", "uint8": "U8",
             "int16": "I16", "int32": "I32", "int64": "I64", "bool": "BOOL"}
_ST_NAME = {v: k for k, v in _ST_DTYPE.items()}
_ONE_TENSOR = "ctorch.tensor"  # metadata key marking a file that holds one tensor, not a dict


def _safetensors_bytes(obj):
    import json
    one = isinstance(obj, _C._TensorBase)
    tensors = {"tensor": obj} if one else obj
    if not isinstance(tensors, dict) or not all(isinstance(k, str) and isinstance(v, _C._TensorBase)
                                                for k, v in tensors.items()):
        raise TypeError("ctorch.save: a .safetensors file holds a tensor or a dict of str -> Tensor; "
                        "use another file name for other objects")
    header, blobs, off = {}, [], 0
    if one:
        header["__metadata__"] = {_ONE_TENSOR: "1"}
    for k in tensors:  # in the dict's order, which load gives back (by offset)
        t = tensors[k].detach().contiguous()
        if t.device.type != "cpu":
            t = t.cpu()
        name = _dtype_name(t.dtype)
        b = _to_bytes(t, name) if t.numel() else b""
        header[k] = {"dtype": _ST_DTYPE[name], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # the data start aligned to 8 bytes
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def _is_safetensors(data):
    if len(data) < 10:
        return False
    n = struct.unpack("<Q", data[:8])[0]
    return 2 <= n <= len(data) - 8 and data[8:9] == b"{"


def _load_safetensors(data):
    import json
    import ctorch
    n = struct.unpack("<Q", data[:8])[0]
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise RuntimeError("ctorch.load: damaged safetensors header (%s)" % e) from None
    if not isinstance(header, dict):
        raise RuntimeError("ctorch.load: damaged safetensors header (not a JSON object)")
    meta = header.pop("__metadata__", None) or {}
    body = data[8 + n:]
    out, spans = {}, []
    for k, e in header.items():
        ok = (isinstance(e, dict) and e.get("dtype") in _ST_NAME and isinstance(e.get("shape"), list)
              and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in e["shape"])
              and isinstance(e.get("data_offsets"), list) and len(e["data_offsets"]) == 2
              and all(isinstance(d, int) and not isinstance(d, bool) for d in e["data_offsets"]))
        if not ok:
            raise RuntimeError("ctorch.load: damaged safetensors entry '%s'" % k)
        name = _ST_NAME[e["dtype"]]
        b, end = e["data_offsets"]
        numel = 1
        for d in e["shape"]:
            numel *= d
        size = getattr(_C, name).itemsize
        if not (0 <= b <= end <= len(body)) or end - b != numel * size:
            raise RuntimeError("ctorch.load: safetensors entry '%s' has offsets [%d, %d] that do not fit its "
                               "shape %s, dtype %s and the %d bytes of data" % (k, b, end, e["shape"], e["dtype"],
                                                                              len(body)))
        spans.append((b, end, k))
        flat = _from_bytes(body[b:end], name, numel) if numel else ctorch.zeros(0, dtype=getattr(_C, name))
        out[k] = flat.reshape(e["shape"]).clone()
    spans.sort()
    for (b0, e0, k0), (b1, e1, k1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise RuntimeError("ctorch.load: safetensors entries '%s' and '%s' overlap" % (k0, k1))
    if meta.get(_ONE_TENSOR) == "1" and list(out) == ["tensor"]:
        return out["tensor"]
    return {k: out[k] for _, _, k in spans}
