// The API object over one loaded WebAssembly module: tensors, ops, autograd, memory.
// nn layers, optimizers, safetensors and models are added by nn.mjs.
import { addNN } from './nn.mjs';

export const DTYPES = ['float32', 'float64', 'float16', 'bfloat16', 'int8', 'uint8', 'int16', 'int32', 'int64', 'bool'];
const DT = Object.fromEntries(DTYPES.map((n, i) => [n, i]));
const DT_ALIASES = { float: 'float32', double: 'float64', half: 'float16', long: 'int64', int: 'int32', short: 'int16' };
const ARRAY_OF = [Float32Array, Float64Array, Uint16Array, Uint16Array, Int8Array, Uint8Array, Int16Array, Int32Array, BigInt64Array, Uint8Array];
const ERROR_NAMES = ['Error', 'IndexError', 'TypeError', 'ValueError', 'NotImplementedError', 'RuntimeError', 'OutOfMemoryError'];
const K_BOOL = 0, K_INT = 1, K_FLOAT = 2;

/** The error thrown for every failure inside ctorch: message as PyTorch words it; name and
 * kind give the Python exception class ("IndexError", "RuntimeError", ...). */
export class CtorchError extends Error {
  constructor(message, kind) {
    super(message);
    this.kind = ERROR_NAMES[kind] || 'RuntimeError';
    this.name = this.kind;
  }
}

const snake = (s) => s.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
// PyTorch spells these names in snake_case: give every camelCase member a snake_case twin.
export function addSnakeAliases(obj) {
  for (const key of Object.getOwnPropertyNames(obj)) {
    const alias = snake(key);
    if (alias === key || Object.prototype.hasOwnProperty.call(obj, alias)) continue;
    const d = Object.getOwnPropertyDescriptor(obj, key);
    Object.defineProperty(obj, alias, { ...d, enumerable: false });
  }
}

export function makeTorch(M, info) {
  // the current memory buffer (it changes when memory grows): the pthreads build exports its
  // shared Memory; the single-thread build keeps HEAPU8 up to date on growth
  const memory = M.wasmMemory ? () => M.wasmMemory : () => M.HEAPU8;
  const ARGS = M._ctw_args() >>> 0, PTRS = M._ctw_ptrs() >>> 0;
  const STR = [0, 1, 2, 3].map((i) => M._ctw_str(i) >>> 0);
  const STRLEN = M._ctw_str_len();
  let buf = null, f64 = null, u32 = null;
  function views() {
    const b = memory().buffer;
    if (b !== buf) {
      buf = b;
      f64 = new Float64Array(b, ARGS, 512);
      u32 = new Uint32Array(b, PTRS, 1024);
    }
  }
  const setArgs = (vals, off = 0) => { views(); for (let i = 0; i < vals.length; i++) f64[off + i] = Number(vals[i]); };
  const arg = (i) => { views(); return f64[i]; };
  const setPtrs = (ptrs, off = 0) => { views(); for (let i = 0; i < ptrs.length; i++) u32[off + i] = ptrs[i] >>> 0; };
  const ptrAt = (i) => { views(); return u32[i]; };
  const setStr = (i, s) => {
    s = s == null ? '' : String(s);
    if (M.lengthBytesUTF8(s) >= STRLEN) throw new CtorchError(`string argument too long (${s.length} characters)`, 3);
    M.stringToUTF8(s, STR[i], STRLEN);
  };
  const cstr = (p) => (p ? M.UTF8ToString(p >>> 0) : null);

  // ---- errors ----
  function fail() {
    const msg = cstr(M._ctw_error()) || 'ctorch: the operation failed';
    const kind = M._ctw_status();
    M._ctw_clear_error();
    throw new CtorchError(msg, kind);
  }
  const chk = (p) => { if (!p) fail(); return p >>> 0; };
  const ok = (st) => { if (st !== 0) fail(); };

  // ---- ownership: scopes and the finalizer backstop ----
  const scopes = [];
  const finalizer = typeof FinalizationRegistry == 'function' ? new FinalizationRegistry((p) => M._ctw_release(p)) : null;
  let liveJS = 0;

  class Tensor {
    /** Wraps a new reference (internal: use torch.tensor / the factories). */
    constructor(ptr) {
      this._p = ptr >>> 0;
      this._scope = null;
      liveJS++;
      if (finalizer) finalizer.register(this, this._p, this);
      const s = scopes[scopes.length - 1];
      if (s) { s.add(this); this._scope = s; }
    }
    get ptr() {
      if (!this._p) throw new CtorchError('this tensor was disposed (or released by the scope that created it)', 5);
      return this._p;
    }
    /** Releases the tensor's memory now (idempotent). */
    dispose() {
      if (!this._p) return;
      if (finalizer) finalizer.unregister(this);
      if (this._scope) this._scope.delete(this);
      this._scope = null;
      M._ctw_release(this._p);
      this._p = 0;
      liveJS--;
    }
    get isDisposed() { return !this._p; }
    /** Keeps this tensor alive past every enclosing scope (then dispose() it yourself). */
    keep() {
      if (this._scope) this._scope.delete(this);
      this._scope = null;
      return this;
    }
    // ---- metadata ----
    get shape() { const n = M._ctw_geometry(this.ptr); views(); return Array.from(f64.subarray(0, n)); }
    size(dim) {
      const s = this.shape;
      if (dim === undefined) return s;
      const d = dim < 0 ? dim + s.length : dim;
      if (d < 0 || d >= s.length) throw new CtorchError(`Dimension out of range (expected to be in range of [${-s.length}, ${s.length - 1}], but got ${dim})`, 1);
      return s[d];
    }
    stride(dim) {
      const n = M._ctw_geometry(this.ptr); views();
      const st = Array.from(f64.subarray(n, 2 * n));
      return dim === undefined ? st : st[dim < 0 ? dim + n : dim];
    }
    get ndim() { return M._ctw_ndim(this.ptr); }
    dim() { return this.ndim; }
    numel() { return M._ctw_numel(this.ptr); }
    get dtype() { return DTYPES[M._ctw_dtype(this.ptr)]; }
    get device() { return 'cpu'; }
    isContiguous() { return !!M._ctw_is_contiguous(this.ptr); }
    isView() { return !!M._ctw_is_view(this.ptr); }
    get version() { return M._ctw_version_counter(this.ptr); }
    storageOffset() { M._ctw_geometry(this.ptr); return arg(2 * this.ndim); }
    isFloatingPoint() { return M._ctw_dtype(this.ptr) <= 3; }
    elementSize() { return M._ctw_dtype_size(M._ctw_dtype(this.ptr)); }
    // ---- data out ----
    /** A copy of the elements in row-major order as the dtype's typed array (float16 and
     * bfloat16: their 16-bit patterns in a Uint16Array; int64: BigInt64Array; bool: Uint8Array). */
    data() { return readData(this, M._ctw_dtype(this.ptr)); }
    dataSync() { return this.data(); }
    /** The elements converted to float32 / float64. */
    toFloat32Array() { return readData(this, DT.float32); }
    toFloat64Array() { return readData(this, DT.float64); }
    /** Nested JS arrays (numbers; booleans for bool; int64 as numbers). */
    tolist() {
      const dt = M._ctw_dtype(this.ptr);
      const flat = dt === DT.bool ? Array.from(readData(this, DT.bool), (v) => v !== 0)
        : Array.from(readData(this, dt <= 3 ? DT.float64 : (dt === DT.int64 ? DT.float64 : dt)));
      const shape = this.shape;
      if (shape.length === 0) return flat[0];
      let i = 0;
      const build = (d) => {
        const out = new Array(shape[d]);
        for (let k = 0; k < shape[d]; k++) out[k] = d === shape.length - 1 ? flat[i++] : build(d + 1);
        return out;
      };
      return build(0);
    }
    toArray() { return this.tolist(); }
    /** The value of a one-element tensor (number; boolean for bool). */
    item() {
      ok(M._ctw_item(this.ptr));
      const kind = arg(1);
      return kind === K_BOOL ? arg(0) !== 0 : arg(0);
    }
    toString() { return formatTensor(this); }
    [Symbol.for('nodejs.util.inspect.custom')]() { return this._p ? formatTensor(this) : 'tensor(<disposed>)'; }
    // ---- autograd ----
    get requiresGrad() { return !!M._ctw_requires_grad(this.ptr); }
    set requiresGrad(v) { ok(M._ctw_set_requires_grad(this.ptr, v ? 1 : 0)); }
    requiresGrad_(v = true) { ok(M._ctw_set_requires_grad(this.ptr, v ? 1 : 0)); return this; }
    get isLeaf() { return !!M._ctw_is_leaf(this.ptr); }
    /** .grad as a new handle (null if none); it shares memory with the tensor's gradient. */
    get grad() { M._ctw_clear_error(); const p = M._ctw_grad(this.ptr); return p ? new Tensor(p) : null; }
    set grad(g) { ok(M._ctw_set_grad(this.ptr, g ? g.ptr : 0)); }
    get gradFn() { return cstr(M._ctw_grad_fn_name(this.ptr)); }
    retainGrad() { ok(M._ctw_retain_grad(this.ptr)); return this; }
    detach() { return new Tensor(chk(M._ctw_detach(this.ptr))); }
    detach_() { ok(M._ctw_detach_(this.ptr)); return this; }
    backward(gradient = null, { retainGraph = false, createGraph = false } = {}) {
      ok(M._ctw_backward(this.ptr, gradient ? toT(gradient, this).ptr : 0, retainGraph ? 1 : 0, createGraph ? 1 : 0));
    }
  }
  addSnakeAliases(Tensor.prototype);

  const wrap = (p) => new Tensor(chk(p));
  const isT = (x) => x instanceof Tensor;
  const kindOf = (v) => (typeof v == 'boolean' ? K_BOOL : Number.isInteger(v) ? K_INT : K_FLOAT);
  const num = (v) => (typeof v == 'boolean' ? (v ? 1 : 0) : typeof v == 'bigint' ? Number(v) : v);
  const dtOf = (d, dflt = -1) => {
    if (d == null) return dflt;
    const n = DT_ALIASES[d] || d;
    if (typeof n == 'number' && DTYPES[n]) return n;
    if (!(n in DT)) throw new CtorchError(`unknown dtype '${d}' (one of ${DTYPES.join(', ')})`, 2);
    return DT[n];
  };

  function readData(t, dt) {
    const p = t.ptr;
    const n = M._ctw_numel(p);
    const size = M._ctw_dtype_size(dt);
    const Ctor = ARRAY_OF[dt];
    if (n === 0) return new Ctor(0);
    if (M._ctw_dtype(p) === dt && M._ctw_is_contiguous(p)) {
      const d = M._ctw_data_ptr(p) >>> 0;
      return new Ctor(memory().buffer, d, n).slice();
    }
    const tmp = chk(M._ctw_malloc(n * size));
    try {
      ok(M._ctw_copy_to_buffer(p, tmp, dt, n));
      return new Ctor(memory().buffer, tmp, n).slice();
    } finally { M._ctw_free(tmp); }
  }

  function formatTensor(t) {
    const shape = t.shape, dt = t.dtype, n = t.numel();
    let body;
    if (n > 1000) body = `[... ${n} elements, shape [${shape.join(', ')}]]`;
    else {
      const fmt = (v) => (typeof v == 'number' && t.isFloatingPoint() ? (Number.isInteger(v) ? v.toFixed(1) : String(Number(v.toPrecision(4)))) : String(v));
      const rec = (v) => (Array.isArray(v) ? '[' + v.map(rec).join(', ') + ']' : fmt(v));
      body = rec(t.tolist());
    }
    const extras = [];
    if (dt !== 'float32' && !(dt === 'int64' && n > 0) && dt !== 'bool') extras.push(`dtype=torch.${dt}`);
    if (n === 0) extras.push(`size=(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`);
    const gf = t.gradFn;
    if (gf) extras.push(`grad_fn=<${gf}>`);
    else if (t.requiresGrad) extras.push('requires_grad=True');
    return `tensor(${body}${extras.length ? ', ' + extras.join(', ') : ''})`;
  }

  // ---- creation ----
  function inferNested(data) {
    const shape = [];
    let x = data;
    while (Array.isArray(x)) { shape.push(x.length); x = x[0]; }
    const flat = [];
    let allBool = true, allInt = true;
    const walk = (v, d) => {
      if (d === shape.length) {
        if (Array.isArray(v)) throw new CtorchError('expected sequence of length ' + shape[d - 1] + ' at dim ' + (d - 1), 3);
        if (typeof v != 'boolean') allBool = false;
        if (typeof v == 'number') { if (!Number.isInteger(v)) allInt = false; }
        else if (typeof v != 'boolean' && typeof v != 'bigint') throw new CtorchError(`Could not infer dtype of ${typeof v}`, 2);
        flat.push(v);
        return;
      }
      if (!Array.isArray(v) || v.length !== shape[d]) throw new CtorchError(`expected sequence of length ${shape[d]} at dim ${d} (got ${Array.isArray(v) ? v.length : 'a scalar'})`, 3);
      for (const e of v) walk(e, d + 1);
    };
    walk(data, 0);
    // PyTorch's inference: all bools -> bool, all integers (bools count) -> int64, else the default
    const dtype = !flat.length ? M._ctw_get_default_dtype() : allBool ? DT.bool : allInt ? DT.int64 : M._ctw_get_default_dtype();
    return { shape, flat, dtype };
  }
  const typedDtype = (a) => {
    if (a instanceof Float32Array) return DT.float32;
    if (a instanceof Float64Array) return DT.float64;
    if (a instanceof Int8Array) return DT.int8;
    if (a instanceof Uint8Array || a instanceof Uint8ClampedArray) return DT.uint8;
    if (a instanceof Int16Array) return DT.int16;
    if (a instanceof Int32Array) return DT.int32;
    if (a instanceof BigInt64Array) return DT.int64;
    return -1;
  };
  function fromTyped(arr, srcDt, shape, dtype, requiresGrad) {
    const bytes = arr.byteLength;
    const tmp = chk(M._ctw_malloc(bytes));
    try {
      new Uint8Array(memory().buffer, tmp, bytes).set(new Uint8Array(arr.buffer, arr.byteOffset, bytes));
      if (shape.length > 8) throw new CtorchError('too many dimensions (at most 8)', 3);
      setArgs(shape);
      return wrap(M._ctw_from_buffer(tmp, srcDt, shape.length, dtype, requiresGrad ? 1 : 0));
    } finally { M._ctw_free(tmp); }
  }
  /** torch.tensor(data, {dtype, requiresGrad, shape}): data is a number, boolean, nested
   * array or typed array (whose type gives the dtype unless one is given; a Uint16Array needs
   * dtype 'float16' or 'bfloat16' and holds their bit patterns). */
  function tensor(data, { dtype = null, requiresGrad = false, shape = null } = {}) {
    let dt = dtOf(dtype);
    if (isT(data)) {
      const c = data.detach();
      const r = dt >= 0 && dt !== M._ctw_dtype(c.ptr) ? c.to(DTYPES[dt]) : c.clone();
      c.dispose();
      if (requiresGrad) r.requiresGrad_(true);
      return r;
    }
    if (ArrayBuffer.isView(data)) {
      let src = typedDtype(data);
      if (data instanceof Uint16Array) {
        if (dt !== DT.float16 && dt !== DT.bfloat16) throw new CtorchError("a Uint16Array holds float16 or bfloat16 bits: pass dtype 'float16' or 'bfloat16'", 2);
        src = dt;
      }
      if (src < 0) throw new CtorchError(`unsupported typed array ${data.constructor.name}`, 2);
      return fromTyped(data, src, shape || [data.length], dt >= 0 ? dt : src, requiresGrad);
    }
    if (typeof data == 'number' || typeof data == 'boolean' || typeof data == 'bigint') {
      const k = typeof data == 'bigint' ? K_INT : kindOf(data);
      return wrap(M._ctw_scalar_tensor(num(data), k, dt, requiresGrad ? 1 : 0));
    }
    if (!Array.isArray(data)) throw new CtorchError(`tensor(): expected a number, an array or a typed array, got ${typeof data}`, 2);
    const inf = inferNested(data);
    const target = dt >= 0 ? dt : inf.dtype;
    const flatShape = shape || inf.shape;
    if (target === DT.int64 && inf.flat.some((v) => typeof v == 'bigint' || Math.abs(v) > Number.MAX_SAFE_INTEGER)) {
      return fromTyped(BigInt64Array.from(inf.flat, (v) => BigInt(typeof v == 'boolean' ? Number(v) : v)), DT.int64, flatShape, target, requiresGrad);
    }
    return fromTyped(Float64Array.from(inf.flat, num), DT.float64, flatShape, target, requiresGrad);
  }
  const shapeArgs = (shape) => {
    if (typeof shape == 'number') shape = [shape];
    if (!Array.isArray(shape)) throw new CtorchError('shape must be an array of integers', 2);
    if (shape.length > 8) throw new CtorchError('too many dimensions (at most 8)', 3);
    setArgs(shape);
    return shape.length;
  };
  const factory = (fn) => (shape, { dtype = null, requiresGrad = false } = {}) => {
    const n = shapeArgs(shape);
    return wrap(fn(n, dtOf(dtype), requiresGrad ? 1 : 0));
  };
  const zeros = factory(M._ctw_zeros), ones = factory(M._ctw_ones), empty = factory(M._ctw_empty);
  function full(shape, value, { dtype = null, requiresGrad = false } = {}) {
    const n = shapeArgs(shape);
    return wrap(M._ctw_full(n, num(value), kindOf(value), dtOf(dtype), requiresGrad ? 1 : 0));
  }
  function arange(start, end, step = 1, { dtype = null, requiresGrad = false } = {}) {
    if (end === undefined || end === null || typeof end == 'object') {
      if (end && typeof end == 'object') ({ dtype = null, requiresGrad = false } = end);
      end = start; start = 0; step = 1;
    } else if (typeof step == 'object') { ({ dtype = null, requiresGrad = false } = step); step = 1; }
    return wrap(M._ctw_arange(num(start), kindOf(start), num(end), kindOf(end), num(step), kindOf(step), dtOf(dtype), requiresGrad ? 1 : 0));
  }
  const linspace = (a, b, steps, { dtype = null, requiresGrad = false } = {}) => wrap(M._ctw_linspace(a, b, steps, dtOf(dtype), requiresGrad ? 1 : 0));
  const logspace = (a, b, steps, base = 10, { dtype = null, requiresGrad = false } = {}) => wrap(M._ctw_logspace(a, b, steps, base, dtOf(dtype), requiresGrad ? 1 : 0));
  const eye = (n, m = -1, { dtype = null, requiresGrad = false } = {}) => {
    if (typeof m == 'object') { ({ dtype = null, requiresGrad = false } = m); m = -1; }
    return wrap(M._ctw_eye(n, m, dtOf(dtype), requiresGrad ? 1 : 0));
  };
  const likeF = (fn) => (t, { dtype = null, requiresGrad = false } = {}) => wrap(fn(t.ptr, dtOf(dtype), requiresGrad ? 1 : 0));
  const zerosLike = likeF(M._ctw_zeros_like), onesLike = likeF(M._ctw_ones_like), emptyLike = likeF(M._ctw_empty_like);
  const fullLike = (t, v, { dtype = null, requiresGrad = false } = {}) => wrap(M._ctw_full_like(t.ptr, num(v), kindOf(v), dtOf(dtype), requiresGrad ? 1 : 0));
  // numbers become 0-dim tensors of their PyTorch dtype when an op needs a tensor
  const toT = (x, like) => {
    if (isT(x)) return x;
    const k = typeof x == 'bigint' ? K_INT : kindOf(x);
    return wrap(M._ctw_scalar_tensor(num(x), k, like && k === K_FLOAT && like.isFloatingPoint() ? M._ctw_dtype(like.ptr) : -1, 0));
  };

  // ---- random ----
  class Generator {
    constructor(seed = 67280421310721n) {
      const s = BigInt.asUintN(64, BigInt(seed));
      this._g = chk(M._ctw_generator_new(Number(s >> 32n), Number(s & 0xffffffffn)));
    }
    manualSeed(seed) { const s = BigInt.asUintN(64, BigInt(seed)); M._ctw_generator_manual_seed(this._g, Number(s >> 32n), Number(s & 0xffffffffn)); return this; }
    getState() { return getRngState(this._g); }
    setState(bytes) { setRngState(this._g, bytes); return this; }
    dispose() { if (this._g) M._ctw_generator_free(this._g); this._g = 0; }
  }
  addSnakeAliases(Generator.prototype);
  const genPtr = (g) => (g ? g._g : 0);
  function manualSeed(seed) {
    const s = BigInt.asUintN(64, BigInt(seed));
    M._ctw_manual_seed(Number(s >> 32n), Number(s & 0xffffffffn));
  }
  function initialSeed() { M._ctw_initial_seed(); return (BigInt(arg(0)) << 32n) | BigInt(arg(1)); }
  function getRngState(g = 0) {
    const n = M._ctw_generator_state_size();
    const tmp = chk(M._ctw_malloc(n));
    try { M._ctw_generator_get_state(g, tmp); return new Uint8Array(memory().buffer, tmp, n).slice(); } finally { M._ctw_free(tmp); }
  }
  function setRngState(g, bytes) {
    if (bytes === undefined) { bytes = g; g = 0; }
    const tmp = chk(M._ctw_malloc(bytes.length));
    try { new Uint8Array(memory().buffer, tmp, bytes.length).set(bytes); ok(M._ctw_generator_set_state(g, tmp, bytes.length)); } finally { M._ctw_free(tmp); }
  }
  const randF = (fn) => (shape, { dtype = null, requiresGrad = false, generator = null } = {}) => {
    const n = shapeArgs(shape);
    return wrap(fn(n, dtOf(dtype), requiresGrad ? 1 : 0, genPtr(generator)));
  };
  const rand = randF(M._ctw_rand), randn = randF(M._ctw_randn);
  function randint(low, high, shape, { dtype = null, generator = null } = {}) {
    if (shape === undefined || (typeof shape == 'object' && !Array.isArray(shape))) {
      if (shape) ({ dtype = null, generator = null } = shape);
      shape = high; high = low; low = 0;
    }
    const n = shapeArgs(shape);
    return wrap(M._ctw_randint(low, high, n, dtOf(dtype), genPtr(generator)));
  }
  const randperm = (n, { dtype = null, generator = null } = {}) => wrap(M._ctw_randperm(n, dtOf(dtype), genPtr(generator)));
  const randLike = (t, { dtype = null, generator = null } = {}) => wrap(M._ctw_rand_like(t.ptr, dtOf(dtype), genPtr(generator)));
  const randnLike = (t, { dtype = null, generator = null } = {}) => wrap(M._ctw_randn_like(t.ptr, dtOf(dtype), genPtr(generator)));
  const bernoulli = (p, { generator = null } = {}) => wrap(M._ctw_bernoulli(p.ptr, genPtr(generator)));
  const multinomial = (p, n, replacement = false, { generator = null } = {}) => wrap(M._ctw_multinomial(p.ptr, n, replacement ? 1 : 0, genPtr(generator)));

  // ---- autograd switches ----
  function noGrad(fn) {
    const prev = M._ctw_set_grad_enabled(0);
    try { return fn(); } finally { M._ctw_set_grad_enabled(prev); }
  }
  function enableGrad(fn) {
    const prev = M._ctw_set_grad_enabled(1);
    try { return fn(); } finally { M._ctw_set_grad_enabled(prev); }
  }
  function inferenceMode(fn) {
    const prev = M._ctw_set_inference_mode(1);
    try { return fn(); } finally { M._ctw_set_inference_mode(prev); }
  }
  const isGradEnabled = () => !!M._ctw_is_grad_enabled();
  const setGradEnabled = (on) => !!M._ctw_set_grad_enabled(on ? 1 : 0);
  const autograd = {
    /** torch.autograd.grad(outputs, inputs, {gradOutputs, retainGraph, createGraph, allowUnused}) */
    grad(outputs, inputs, { gradOutputs = null, retainGraph = null, createGraph = false, allowUnused = false } = {}) {
      outputs = Array.isArray(outputs) ? outputs : [outputs];
      inputs = Array.isArray(inputs) ? inputs : [inputs];
      const go = gradOutputs ? (Array.isArray(gradOutputs) ? gradOutputs : [gradOutputs]) : outputs.map(() => null);
      setPtrs(outputs.map((t) => t.ptr));
      setPtrs(go.map((t) => (t ? t.ptr : 0)), outputs.length);
      setPtrs(inputs.map((t) => t.ptr), 2 * outputs.length);
      const rg = retainGraph == null ? createGraph : retainGraph;
      ok(M._ctw_autograd_grad(outputs.length, inputs.length, rg ? 1 : 0, createGraph ? 1 : 0, allowUnused ? 1 : 0));
      const res = [];
      for (let i = 0; i < inputs.length; i++) res.push(ptrAt(i));
      return res.map((p) => (p ? new Tensor(p) : null));
    },
    backward(tensors, grads = null, opts = {}) {
      tensors = Array.isArray(tensors) ? tensors : [tensors];
      tensors.forEach((t, i) => t.backward(grads ? grads[i] : null, { ...opts, retainGraph: opts.retainGraph || i < tensors.length - 1 }));
    },
  };

  // ---- memory ----
  function scope(fn) {
    const s = new Set();
    scopes.push(s);
    let result;
    try {
      result = fn();
    } catch (e) {
      scopes.splice(scopes.lastIndexOf(s), 1);
      for (const t of [...s]) t.dispose();
      throw e;
    }
    scopes.splice(scopes.lastIndexOf(s), 1);
    if (result && typeof result.then == 'function') {
      for (const t of [...s]) t.dispose();
      throw new CtorchError('scope(fn): fn returned a Promise; scopes are synchronous (wrap each synchronous step in its own scope)', 2);
    }
    const keepers = new Set();
    collect(result, keepers, 0);
    const parent = scopes[scopes.length - 1] || null;
    for (const t of [...s]) {
      if (keepers.has(t)) { t._scope = parent; if (parent) parent.add(t); } else t.dispose();
    }
    return result;
  }
  function collect(v, out, depth) {
    if (!v || depth > 6 || typeof v != 'object') return;
    if (v instanceof Tensor) { out.add(v); return; }
    if (Array.isArray(v)) { for (const e of v) collect(e, out, depth + 1); return; }
    if (v instanceof Map) { for (const e of v.values()) collect(e, out, depth + 1); return; }
    if (Object.getPrototypeOf(v) === Object.prototype) for (const k of Object.keys(v)) collect(v[k], out, depth + 1);
  }
  function keep(x) { const s = new Set(); collect(x, s, 0); for (const t of s) t.keep(); return x; }
  function dispose(x) { const s = new Set(); collect(x, s, 0); for (const t of s) t.dispose(); }
  function memoryInfo() {
    M._ctw_memory_stats();
    return {
      liveTensors: M._ctw_live_tensors(),
      jsTensors: liveJS,
      allocatedBytes: arg(0), cachedBytes: arg(1), peakAllocatedBytes: arg(2), numAllocs: arg(3),
      wasmBytes: memory().buffer.byteLength,
    };
  }

  const torch = {
    Tensor, Generator, CtorchError, DTYPES,
    version: cstr(M._ctw_version()),
    info: { ...info, simdLevel: cstr(M._ctw_simd_level()) },
    // creation
    tensor, zeros, ones, empty, full, arange, linspace, logspace, eye, zerosLike, onesLike, emptyLike, fullLike,
    fromArray: tensor,
    // random
    manualSeed, seed: manualSeed, initialSeed, getRngState: () => getRngState(0), setRngState: (b) => setRngState(0, b),
    rand, randn, randint, randperm, randLike, randnLike, bernoulli, multinomial,
    // autograd
    noGrad, enableGrad, inferenceMode, isGradEnabled, setGradEnabled, autograd,
    // memory
    scope, tidy: scope, keep, dispose, memory: memoryInfo,
    emptyCache: () => M._ctw_empty_cache(),
    getNumThreads: () => M._ctw_get_num_threads(),
    setNumThreads(n) {
      // the pool of workers was sized at load time; more threads than that would wait forever
      const max = info.threads;
      ok(M._ctw_set_num_threads(Math.max(1, Math.min(n | 0, max))));
    },
    getDefaultDtype: () => DTYPES[M._ctw_get_default_dtype()],
    setDefaultDtype: (d) => ok(M._ctw_set_default_dtype(dtOf(d))),
    promoteTypes: (a, b) => DTYPES[M._ctw_promote_types(dtOf(a), dtOf(b))],
    isTensor: isT,
  };
  for (const d of DTYPES) torch[d] = d;
  Object.assign(torch, { float: 'float32', double: 'float64', half: 'float16', long: 'int64', int: 'int32', short: 'int16' });

  // internals shared with ops.mjs-style helpers below and nn.mjs
  const ctx = { M, torch, Tensor, wrap, chk, ok, fail, isT, kindOf, num, dtOf, setArgs, arg, setPtrs, ptrAt, setStr, cstr, toT, memory, genPtr, shapeArgs, K_BOOL, K_INT, K_FLOAT, DT };
  addOps(ctx);
  addNN(ctx);
  addSnakeAliases(torch);
  addSnakeAliases(Tensor.prototype);
  return torch;
}

// ---- ops: functions on torch and methods on Tensor ----
function addOps(ctx) {
  const { M, torch, Tensor, wrap, chk, ok, isT, kindOf, num, dtOf, setArgs, arg, setPtrs, ptrAt, setStr, toT, DT } = ctx;
  const P = Tensor.prototype;
  const def = (name, fn, method = true) => {
    torch[name] = fn;
    if (method && !(name in P)) P[name] = function (...a) { return fn(this, ...a); };
  };
  const dims = (d) => (d == null ? [] : Array.isArray(d) ? d : [d]);
  const optDt = (dtype) => dtOf(dtype);

  // unary (with in-place twins x_)
  for (const n of ['abs', 'neg', 'sign', 'exp', 'exp2', 'expm1', 'log', 'log2', 'log10', 'log1p', 'sqrt', 'rsqrt', 'sin', 'cos', 'tan',
    'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh', 'sigmoid', 'erf', 'erfc', 'erfinv', 'lgamma', 'digamma',
    'floor', 'ceil', 'trunc', 'frac', 'reciprocal', 'square', 'relu', 'relu6', 'silu', 'mish', 'hardsigmoid', 'hardswish', 'selu',
    'logical_not', 'bitwise_not', 'softsign']) {
    const f = M['_ctw_' + n], fi = M['_ctw_' + n + '_'];
    const js = n.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
    def(js, (t) => wrap(f(t.ptr)));
    P[js + '_'] = function () { ok(fi(this.ptr)); return this; };
  }
  def('negative', torch.neg); def('absolute', torch.abs); def('arctan', torch.atan); def('fix', torch.trunc);
  def('round', (t, { decimals = 0 } = {}) => wrap(decimals ? M._ctw_round_decimals(t.ptr, decimals) : M._ctw_round(t.ptr)));
  P.round_ = function () { ok(M._ctw_round_(this.ptr)); return this; };
  def('isnan', (t) => wrap(M._ctw_isnan(t.ptr)));
  def('isinf', (t) => wrap(M._ctw_isinf(t.ptr)));
  def('isfinite', (t) => wrap(M._ctw_isfinite(t.ptr)));
  def('gelu', (t, { approximate = 'none' } = {}) => wrap(M._ctw_gelu(t.ptr, approximate === 'tanh' ? 1 : 0)));
  def('softplus', (t, { beta = 1, threshold = 20 } = {}) => wrap(M._ctw_softplus(t.ptr, beta, threshold)));
  def('hardtanh', (t, minVal = -1, maxVal = 1) => wrap(M._ctw_hardtanh(t.ptr, minVal, maxVal)));
  def('leakyRelu', (t, negativeSlope = 0.01) => wrap(M._ctw_leaky_relu(t.ptr, negativeSlope)));
  def('elu', (t, alpha = 1) => wrap(M._ctw_elu(t.ptr, alpha)));
  def('celu', (t, alpha = 1) => wrap(M._ctw_celu(t.ptr, alpha)));
  def('logit', (t, eps = null) => wrap(M._ctw_logit(t.ptr, eps == null ? -1 : eps)));
  def('polygamma', (n, t) => wrap(M._ctw_polygamma(n, t.ptr)), false);
  P.polygamma = function (n) { return torch.polygamma(n, this); };
  const clampArgs = (min, max) => [min != null && !isT(min) ? 1 : 0, num(min ?? 0), kindOf(min ?? 0), max != null && !isT(max) ? 1 : 0, num(max ?? 0), kindOf(max ?? 0)];
  def('clamp', (t, min = null, max = null) => {
    if (isT(min) || isT(max)) return wrap(M._ctw_clamp_tensor(t.ptr, min ? toT(min, t).ptr : 0, max ? toT(max, t).ptr : 0));
    return wrap(M._ctw_clamp(t.ptr, ...clampArgs(min, max)));
  });
  def('clip', torch.clamp);
  P.clamp_ = function (min = null, max = null) { ok(M._ctw_clamp_(this.ptr, ...clampArgs(min, max))); return this; };
  def('clampMin', (t, v) => torch.clamp(t, v, null));
  def('clampMax', (t, v) => torch.clamp(t, null, v));
  def('nanToNum', (t, { nan = null, posinf = null, neginf = null } = {}) => {
    setArgs([nan ?? 0, posinf ?? 0, neginf ?? 0, nan != null ? 1 : 0, posinf != null ? 1 : 0, neginf != null ? 1 : 0]);
    return wrap(M._ctw_nan_to_num(t.ptr));
  });

  // binary: tensor or number as the second operand
  const bin = (name, cname = name, { inplace = true, scalar = true } = {}) => {
    const ft = M['_ctw_' + cname], fs = M['_ctw_' + cname + '_s'], fti = M['_ctw_' + cname + '_'], fsi = M['_ctw_' + cname + '_s_'];
    def(name, (a, b) => {
      if (!isT(a)) { const ta = toT(a, isT(b) ? b : null); try { return torch[name](ta, b); } finally { ta.dispose(); } }
      if (isT(b)) return wrap(ft(a.ptr, b.ptr));
      if (scalar && fs) return wrap(fs(a.ptr, num(b), kindOf(b)));
      const tb = toT(b, a);
      try { return wrap(ft(a.ptr, tb.ptr)); } finally { tb.dispose(); }
    });
    if (inplace && fti) P[name + '_'] = function (b) {
      if (isT(b)) ok(fti(this.ptr, b.ptr));
      else if (fsi) ok(fsi(this.ptr, num(b), kindOf(b)));
      else { const tb = toT(b, this); try { ok(fti(this.ptr, tb.ptr)); } finally { tb.dispose(); } }
      return this;
    };
  };
  for (const n of ['mul', 'remainder', 'fmod', 'pow', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'copysign']) bin(n);
  bin('floorDivide', 'floor_divide');
  for (const n of ['and', 'or', 'xor']) bin('bitwise' + n[0].toUpperCase() + n.slice(1), 'bitwise_' + n);
  bin('bitwiseLeftShift', 'bitwise_left_shift'); bin('bitwiseRightShift', 'bitwise_right_shift');
  for (const n of ['atan2', 'maximum', 'minimum', 'fmax', 'fmin', 'hypot', 'logaddexp', 'logaddexp2']) bin(n, n, { scalar: false });
  bin('xlogy', 'xlogy', { inplace: false });
  for (const n of ['and', 'or', 'xor']) bin('logical' + n[0].toUpperCase() + n.slice(1), 'logical_' + n, { scalar: false });
  def('multiply', torch.mul); def('greater', torch.gt); def('less', torch.lt); def('greaterEqual', torch.ge); def('lessEqual', torch.le);
  def('notEqual', torch.ne); def('arctan2', torch.atan2);
  const addsub = (name) => {
    const ft = M['_ctw_' + name], fs = M['_ctw_' + name + '_s'], fti = M['_ctw_' + name + '_'], fsi = M['_ctw_' + name + '_s_'];
    def(name, (a, b, { alpha = 1 } = {}) => {
      if (!isT(a)) { const ta = toT(a, isT(b) ? b : null); try { return torch[name](ta, b, { alpha }); } finally { ta.dispose(); } }
      if (isT(b)) return wrap(ft(a.ptr, b.ptr, num(alpha), kindOf(alpha)));
      if (alpha === 1) return wrap(fs(a.ptr, num(b), kindOf(b)));
      const tb = toT(b, a);
      try { return wrap(ft(a.ptr, tb.ptr, num(alpha), kindOf(alpha))); } finally { tb.dispose(); }
    });
    P[name + '_'] = function (b, { alpha = 1 } = {}) {
      if (isT(b)) ok(fti(this.ptr, b.ptr, num(alpha), kindOf(alpha)));
      else if (alpha === 1) ok(fsi(this.ptr, num(b), kindOf(b)));
      else { const tb = toT(b, this); try { ok(fti(this.ptr, tb.ptr, num(alpha), kindOf(alpha))); } finally { tb.dispose(); } }
      return this;
    };
  };
  addsub('add'); addsub('sub');
  def('subtract', torch.sub);
  def('rsub', (a, b) => (isT(b) ? torch.sub(b, a) : wrap(M._ctw_rsub_s(a.ptr, num(b), kindOf(b)))));
  def('div', (a, b, { roundingMode = null } = {}) => {
    setStr(0, roundingMode);
    if (!isT(a)) { const ta = toT(a, isT(b) ? b : null); try { setStr(0, roundingMode); return wrap(M._ctw_div(ta.ptr, b.ptr)); } finally { ta.dispose(); } }
    return wrap(isT(b) ? M._ctw_div(a.ptr, b.ptr) : M._ctw_div_s(a.ptr, num(b), kindOf(b)));
  });
  def('divide', torch.div); def('trueDivide', (a, b) => torch.div(a, b));
  P.div_ = function (b, { roundingMode = null } = {}) {
    setStr(0, roundingMode);
    ok(isT(b) ? M._ctw_div_(this.ptr, b.ptr) : M._ctw_div_s_(this.ptr, num(b), kindOf(b)));
    return this;
  };
  P.pow = function (e) { return torch.pow(this, e); };
  torch.pow = ((tensorPow) => (a, e) => (isT(a) ? tensorPow(a, e) : wrap(M._ctw_pow_scalar_tensor(num(a), kindOf(a), e.ptr))))(torch.pow);
  def('isclose', (a, b, { rtol = 1e-5, atol = 1e-8, equalNan = false } = {}) => wrap(M._ctw_isclose(a.ptr, b.ptr, rtol, atol, equalNan ? 1 : 0)));
  def('allclose', (a, b, { rtol = 1e-5, atol = 1e-8, equalNan = false } = {}) => { ok(M._ctw_allclose(a.ptr, b.ptr, rtol, atol, equalNan ? 1 : 0)); return arg(0) !== 0; });
  def('equal', (a, b) => { ok(M._ctw_equal(a.ptr, b.ptr)); return arg(0) !== 0; });

  // ternary
  def('where', (c, a, b) => {
    if (a === undefined) return torch.nonzero(c, { asTuple: true });
    if (isT(a) && isT(b)) return wrap(M._ctw_where(c.ptr, a.ptr, b.ptr));
    if (isT(b)) return wrap(M._ctw_where_sa(c.ptr, num(a), kindOf(a), b.ptr));
    if (isT(a)) return wrap(M._ctw_where_sb(c.ptr, a.ptr, num(b), kindOf(b)));
    return wrap(M._ctw_where_ss(c.ptr, num(a), kindOf(a), num(b), kindOf(b)));
  }, false);
  P.where = function (cond, other) { return torch.where(cond, this, other); };
  def('lerp', (s, e, w) => wrap(isT(w) ? M._ctw_lerp_tensor(s.ptr, e.ptr, w.ptr) : M._ctw_lerp(s.ptr, e.ptr, num(w), kindOf(w))));
  def('addcmul', (s, a, b, { value = 1 } = {}) => wrap(M._ctw_addcmul(s.ptr, a.ptr, b.ptr, num(value), kindOf(value))));
  def('addcdiv', (s, a, b, { value = 1 } = {}) => wrap(M._ctw_addcdiv(s.ptr, a.ptr, b.ptr, num(value), kindOf(value))));
  P.addcmul_ = function (a, b, { value = 1 } = {}) { ok(M._ctw_addcmul_(this.ptr, a.ptr, b.ptr, num(value), kindOf(value))); return this; };
  P.addcdiv_ = function (a, b, { value = 1 } = {}) { ok(M._ctw_addcdiv_(this.ptr, a.ptr, b.ptr, num(value), kindOf(value))); return this; };

  // reductions: (t, dim = null, {keepdim, dtype}) with dim a number or an array
  const red = (name, f) => def(name, (t, dim = null, opts = {}) => {
    if (dim != null && typeof dim == 'object' && !Array.isArray(dim)) { opts = dim; dim = null; }
    const d = dims(dim ?? opts.dim);
    setArgs(d);
    return wrap(f(t, d.length, opts));
  });
  red('sum', (t, n, { keepdim = false, dtype = null }) => M._ctw_sum(t.ptr, n, keepdim ? 1 : 0, optDt(dtype)));
  red('mean', (t, n, { keepdim = false, dtype = null }) => M._ctw_mean(t.ptr, n, keepdim ? 1 : 0, optDt(dtype)));
  red('amax', (t, n, { keepdim = false }) => M._ctw_amax(t.ptr, n, keepdim ? 1 : 0));
  red('amin', (t, n, { keepdim = false }) => M._ctw_amin(t.ptr, n, keepdim ? 1 : 0));
  const corr = (o) => (o.correction != null ? o.correction : o.unbiased === false ? 0 : 1);
  red('var', (t, n, o) => M._ctw_var(t.ptr, n, corr(o), o.keepdim ? 1 : 0));
  red('std', (t, n, o) => M._ctw_std(t.ptr, n, corr(o), o.keepdim ? 1 : 0));
  red('logsumexp', (t, n, { keepdim = false }) => M._ctw_logsumexp(t.ptr, n, keepdim ? 1 : 0));
  red('all', (t, n, { keepdim = false }) => M._ctw_all(t.ptr, n, keepdim ? 1 : 0));
  red('any', (t, n, { keepdim = false }) => M._ctw_any(t.ptr, n, keepdim ? 1 : 0));
  red('countNonzero', (t, n) => M._ctw_count_nonzero(t.ptr, n));
  def('norm', (t, p = 2, dim = null, { keepdim = false } = {}) => {
    if (p === 'fro' || p == null) p = 2;
    const d = dims(dim); setArgs(d);
    return wrap(M._ctw_norm(t.ptr, p === Infinity ? Infinity : p, d.length, keepdim ? 1 : 0));
  });
  const pair = (st) => { ok(st); return [new Tensor(ptrAt(0)), new Tensor(ptrAt(1))]; };
  const named = (vals, idx) => Object.assign([vals, idx], { values: vals, indices: idx });
  def('varMean', (t, dim = null, o = {}) => { const d = dims(dim); setArgs(d); return pair(M._ctw_var_mean(t.ptr, d.length, corr(o), o.keepdim ? 1 : 0, 0)); });
  def('stdMean', (t, dim = null, o = {}) => { const d = dims(dim); setArgs(d); return pair(M._ctw_var_mean(t.ptr, d.length, corr(o), o.keepdim ? 1 : 0, 1)); });
  def('prod', (t, dim = null, { keepdim = false, dtype = null } = {}) => wrap(M._ctw_prod(t.ptr, dim == null ? 0 : 1, dim ?? 0, keepdim ? 1 : 0, optDt(dtype))));
  // max/min: all elements -> tensor; along dim -> [values, indices] (also .values/.indices);
  // with a tensor -> maximum/minimum
  const maxmin = (name, all, along, elem) => def(name, (t, dim = null, { keepdim = false } = {}) => {
    if (isT(dim)) return elem(t, dim);
    if (dim == null) return wrap(all(t.ptr));
    const [v, i] = pair(along(t.ptr, dim, keepdim ? 1 : 0));
    return named(v, i);
  });
  maxmin('max', M._ctw_max_all, M._ctw_max_dim, (a, b) => torch.maximum(a, b));
  maxmin('min', M._ctw_min_all, M._ctw_min_dim, (a, b) => torch.minimum(a, b));
  def('argmax', (t, dim = null, { keepdim = false } = {}) => wrap(M._ctw_argmax(t.ptr, dim == null ? 0 : 1, dim ?? 0, keepdim ? 1 : 0)));
  def('argmin', (t, dim = null, { keepdim = false } = {}) => wrap(M._ctw_argmin(t.ptr, dim == null ? 0 : 1, dim ?? 0, keepdim ? 1 : 0)));
  def('cumsum', (t, dim, { dtype = null } = {}) => wrap(M._ctw_cumsum(t.ptr, dim, optDt(dtype))));
  def('cumprod', (t, dim, { dtype = null } = {}) => wrap(M._ctw_cumprod(t.ptr, dim, optDt(dtype))));
  def('cummax', (t, dim) => { const [v, i] = pair(M._ctw_cummax(t.ptr, dim)); return named(v, i); });
  def('cummin', (t, dim) => { const [v, i] = pair(M._ctw_cummin(t.ptr, dim)); return named(v, i); });
  def('sort', (t, dim = -1, { descending = false, stable = false } = {}) => {
    if (typeof dim == 'object') ({ dim = -1, descending = false, stable = false } = dim);
    const [v, i] = pair(M._ctw_sort(t.ptr, dim, descending ? 1 : 0, stable ? 1 : 0)); return named(v, i);
  });
  def('argsort', (t, dim = -1, { descending = false, stable = false } = {}) => wrap(M._ctw_argsort(t.ptr, dim, descending ? 1 : 0, stable ? 1 : 0)));
  def('topk', (t, k, dim = -1, { largest = true, sorted = true } = {}) => {
    if (typeof dim == 'object') ({ dim = -1, largest = true, sorted = true } = dim);
    const [v, i] = pair(M._ctw_topk(t.ptr, k, dim, largest ? 1 : 0, sorted ? 1 : 0)); return named(v, i);
  });
  def('kthvalue', (t, k, dim = -1, { keepdim = false } = {}) => { const [v, i] = pair(M._ctw_kthvalue(t.ptr, k, dim, keepdim ? 1 : 0)); return named(v, i); });
  def('median', (t, dim = null, { keepdim = false } = {}) => {
    if (dim == null) return wrap(M._ctw_median_all(t.ptr));
    const [v, i] = pair(M._ctw_median_dim(t.ptr, dim, keepdim ? 1 : 0)); return named(v, i);
  });
  def('mode', (t, dim = -1, { keepdim = false } = {}) => { const [v, i] = pair(M._ctw_mode(t.ptr, dim, keepdim ? 1 : 0)); return named(v, i); });
  def('unique', (t, { sorted = true, returnInverse = false, returnCounts = false } = {}) => {
    ok(M._ctw_unique(t.ptr, sorted ? 1 : 0, returnInverse ? 1 : 0, returnCounts ? 1 : 0));
    const out = new Tensor(ptrAt(0));
    const inv = returnInverse ? new Tensor(ptrAt(1)) : null, cnt = returnCounts ? new Tensor(ptrAt(2)) : null;
    if (!returnInverse && !returnCounts) return out;
    return [out, ...(inv ? [inv] : []), ...(cnt ? [cnt] : [])];
  });

  // linalg
  for (const n of ['matmul', 'mm', 'bmm', 'mv', 'dot', 'outer']) def(n, (a, b) => wrap(M['_ctw_' + n](a.ptr, b.ptr)));
  def('addmm', (s, a, b, { beta = 1, alpha = 1 } = {}) => wrap(M._ctw_addmm(s.ptr, a.ptr, b.ptr, num(beta), kindOf(beta), num(alpha), kindOf(alpha))));
  def('baddbmm', (s, a, b, { beta = 1, alpha = 1 } = {}) => wrap(M._ctw_baddbmm(s.ptr, a.ptr, b.ptr, num(beta), kindOf(beta), num(alpha), kindOf(alpha))));
  def('einsum', (eq, ...ops) => {
    if (ops.length === 1 && Array.isArray(ops[0])) ops = ops[0];
    setStr(0, eq); setPtrs(ops.map((t) => t.ptr));
    return wrap(M._ctw_einsum(ops.length));
  }, false);

  // views and shape
  const shapeOf = (a) => (a.length === 1 && Array.isArray(a[0]) ? a[0] : a);
  const shp = (f) => function (t, ...s) { const sh = shapeOf(s); ctx.shapeArgs(sh); return wrap(f(t.ptr, sh.length)); };
  def('view', shp(M._ctw_view)); def('reshape', shp(M._ctw_reshape)); def('permute', shp(M._ctw_permute));
  def('expand', shp(M._ctw_expand)); def('broadcastTo', shp(M._ctw_broadcast_to));
  def('repeat', shp(M._ctw_repeat)); def('tile', shp(M._ctw_tile));
  def('flip', (t, ...d) => { d = shapeOf(d); setArgs(d); return wrap(M._ctw_flip(t.ptr, d.length)); });
  def('viewAs', (t, o) => wrap(M._ctw_view_as(t.ptr, o.ptr)));
  def('reshapeAs', (t, o) => wrap(M._ctw_reshape_as(t.ptr, o.ptr)));
  def('expandAs', (t, o) => wrap(M._ctw_expand_as(t.ptr, o.ptr)));
  def('transpose', (t, a, b) => wrap(M._ctw_transpose(t.ptr, a, b)));
  def('swapaxes', torch.transpose); def('swapdims', torch.transpose);
  def('t', (t) => wrap(M._ctw_t(t.ptr)));
  Object.defineProperty(P, 'T', { get() { return this.ndim <= 2 ? torch.t(this) : torch.permute(this, [...Array(this.ndim).keys()].reverse()); } });
  Object.defineProperty(P, 'mT', { get() { return wrap(M._ctw_mT(this.ptr)); } });
  def('squeeze', (t, dim = null) => wrap(dim == null ? M._ctw_squeeze(t.ptr) : M._ctw_squeeze_dim(t.ptr, dim)));
  def('unsqueeze', (t, dim) => wrap(M._ctw_unsqueeze(t.ptr, dim)));
  def('flatten', (t, startDim = 0, endDim = -1) => wrap(M._ctw_flatten(t.ptr, startDim, endDim)));
  def('unflatten', (t, dim, sizes) => { setArgs(sizes); return wrap(M._ctw_unflatten(t.ptr, dim, sizes.length)); });
  def('narrow', (t, dim, start, length) => wrap(M._ctw_narrow(t.ptr, dim, start, length)));
  def('select', (t, dim, index) => wrap(M._ctw_select(t.ptr, dim, index)));
  def('slice', (t, dim = 0, start = null, end = null, step = 1) => wrap(M._ctw_slice(t.ptr, dim, start ?? 0, end ?? Number.MAX_SAFE_INTEGER, step)));
  def('diagonal', (t, { offset = 0, dim1 = 0, dim2 = 1 } = {}) => wrap(M._ctw_diagonal(t.ptr, offset, dim1, dim2)));
  def('unfold', (t, dim, size, step) => wrap(M._ctw_unfold(t.ptr, dim, size, step)), false);
  P.unfold = function (dim, size, step) { return torch.unfold(this, dim, size, step); };
  def('movedim', (t, src, dst) => { src = dims(src); dst = dims(dst); setArgs([...src, ...dst]); return wrap(M._ctw_movedim(t.ptr, src.length)); });
  def('moveaxis', torch.movedim);
  def('contiguous', (t) => wrap(M._ctw_contiguous(t.ptr)));
  def('clone', (t) => wrap(M._ctw_clone(t.ptr)));
  def('to', (t, dtype) => wrap(M._ctw_to_dtype(t.ptr, dtOf(typeof dtype == 'object' && dtype ? dtype.dtype : dtype))));
  for (const d of ['float', 'double', 'half', 'long', 'int', 'short', 'bool', 'bfloat16']) P[d] = function () { return torch.to(this, d === 'bool' ? 'bool' : d); };
  P.type = function (d) { return d === undefined ? 'torch.' + this.dtype : torch.to(this, d); };
  P.copy_ = function (src) { const s = toT(src, this); try { ok(M._ctw_copy_(this.ptr, s.ptr)); } finally { if (s !== src) s.dispose(); } return this; };
  P.fill_ = function (v) { ok(M._ctw_fill_(this.ptr, num(v), kindOf(v))); return this; };
  P.zero_ = function () { ok(M._ctw_zero_(this.ptr)); return this; };
  P.uniform_ = function (a = 0, b = 1, { generator = null } = {}) { ok(M._ctw_uniform_(this.ptr, a, b, ctx.genPtr(generator))); return this; };
  P.normal_ = function (m = 0, s = 1, { generator = null } = {}) { ok(M._ctw_normal_(this.ptr, m, s, ctx.genPtr(generator))); return this; };
  P.exponential_ = function (l = 1, { generator = null } = {}) { ok(M._ctw_exponential_(this.ptr, l, ctx.genPtr(generator))); return this; };
  P.random_ = function (from, to, { generator = null } = {}) { ok(M._ctw_random_(this.ptr, from, to, ctx.genPtr(generator))); return this; };
  P.bernoulli_ = function (p = 0.5, { generator = null } = {}) { ok(M._ctw_bernoulli_(this.ptr, p, ctx.genPtr(generator))); return this; };
  P.sharesStorage = function (o) { return !!M._ctw_shares_storage(this.ptr, o.ptr); };

  const list = (n) => { if (n < 0) ctx.fail(); const r = []; for (let i = 0; i < n; i++) r.push(ptrAt(i)); return r.map((p) => new Tensor(p)); };
  def('cat', (ts, dim = 0) => { setPtrs(ts.map((t) => t.ptr)); return wrap(M._ctw_cat(ts.length, dim)); }, false);
  torch.concat = torch.concatenate = torch.cat;
  def('stack', (ts, dim = 0) => { setPtrs(ts.map((t) => t.ptr)); return wrap(M._ctw_stack(ts.length, dim)); }, false);
  def('hstack', (ts) => { setPtrs(ts.map((t) => t.ptr)); return wrap(M._ctw_hstack(ts.length)); }, false);
  def('vstack', (ts) => { setPtrs(ts.map((t) => t.ptr)); return wrap(M._ctw_vstack(ts.length)); }, false);
  def('split', (t, size, dim = 0) => {
    if (Array.isArray(size)) { setArgs(size); return list(M._ctw_split_sizes(t.ptr, size.length, dim)); }
    return list(M._ctw_split(t.ptr, size, dim));
  });
  def('chunk', (t, chunks, dim = 0) => list(M._ctw_chunk(t.ptr, chunks, dim)));
  def('unbind', (t, dim = 0) => list(M._ctw_unbind(t.ptr, dim)));
  def('broadcastTensors', (...ts) => { if (ts.length === 1 && Array.isArray(ts[0])) ts = ts[0]; setPtrs(ts.map((t) => t.ptr)); return list(M._ctw_broadcast_tensors(ts.length)); }, false);
  def('roll', (t, shifts, d = null) => { const s = dims(shifts), dd = dims(d); setArgs([...s, ...dd]); return wrap(M._ctw_roll(t.ptr, s.length, dd.length)); });
  def('repeatInterleave', (t, repeats, dim = null) => wrap(M._ctw_repeat_interleave(t.ptr, repeats, dim == null ? 0 : 1, dim ?? 0)));
  def('tril', (t, diagonal = 0) => wrap(M._ctw_tril(t.ptr, diagonal)));
  def('triu', (t, diagonal = 0) => wrap(M._ctw_triu(t.ptr, diagonal)));

  // indexing
  def('indexSelect', (t, dim, idx) => wrap(M._ctw_index_select(t.ptr, dim, idx.ptr)));
  def('gather', (t, dim, idx) => wrap(M._ctw_gather(t.ptr, dim, idx.ptr)));
  def('scatter', (t, dim, idx, src, { reduce = null } = {}) => {
    if (reduce) { setStr(0, reduce === 'add' ? 'sum' : reduce === 'multiply' ? 'prod' : reduce); return wrap(M._ctw_scatter_reduce(t.ptr, dim, idx.ptr, toT(src, t).ptr, 1)); }
    return wrap(isT(src) ? M._ctw_scatter(t.ptr, dim, idx.ptr, src.ptr) : M._ctw_scatter_value(t.ptr, dim, idx.ptr, num(src), kindOf(src)));
  });
  def('scatterAdd', (t, dim, idx, src) => wrap(M._ctw_scatter_add(t.ptr, dim, idx.ptr, src.ptr)));
  def('scatterReduce', (t, dim, idx, src, reduce, { includeSelf = true } = {}) => { setStr(0, reduce); return wrap(M._ctw_scatter_reduce(t.ptr, dim, idx.ptr, src.ptr, includeSelf ? 1 : 0)); });
  def('indexAdd', (t, dim, idx, src, { alpha = 1 } = {}) => wrap(M._ctw_index_add(t.ptr, dim, idx.ptr, src.ptr, num(alpha), kindOf(alpha))));
  def('indexCopy', (t, dim, idx, src) => wrap(M._ctw_index_copy(t.ptr, dim, idx.ptr, src.ptr)));
  def('indexFill', (t, dim, idx, v) => wrap(M._ctw_index_fill(t.ptr, dim, idx.ptr, num(v), kindOf(v))));
  def('maskedFill', (t, mask, v) => wrap(isT(v) ? M._ctw_masked_fill_tensor(t.ptr, mask.ptr, v.ptr) : M._ctw_masked_fill(t.ptr, mask.ptr, num(v), kindOf(v))));
  P.maskedFill_ = function (mask, v) { ok(M._ctw_masked_fill_(this.ptr, mask.ptr, num(v), kindOf(v))); return this; };
  def('maskedSelect', (t, mask) => wrap(M._ctw_masked_select(t.ptr, mask.ptr)));
  def('maskedScatter', (t, mask, src) => wrap(M._ctw_masked_scatter(t.ptr, mask.ptr, src.ptr)));
  def('take', (t, idx) => wrap(M._ctw_take(t.ptr, idx.ptr)));
  def('takeAlongDim', (t, idx, dim = null) => wrap(M._ctw_take_along_dim(t.ptr, idx.ptr, dim == null ? 0 : 1, dim ?? 0)));
  def('nonzero', (t, { asTuple = false } = {}) => {
    const nz = wrap(M._ctw_nonzero(t.ptr));
    if (!asTuple) return nz;
    try { return torch.unbind(nz, 1); } finally { nz.dispose(); }
  });
  def('indexPut', (t, indices, values, { accumulate = false } = {}) => {
    setPtrs(indices.map((i) => (i ? i.ptr : 0)));
    return wrap(M._ctw_index_put(t.ptr, indices.length, values.ptr, accumulate ? 1 : 0));
  });
  // Python-style items: number, null (None), '...', ':' / 'a:b:c' / {start, stop, step}, boolean,
  // a Tensor, or an array of integers (an int64 index tensor)
  const temps = [];
  function items(its) {
    if (its.length > 64) throw new ctx.torch.CtorchError('too many indices for tensor', 1);
    const vals = [], ptrs = [];
    for (const it of its) {
      let row = [0, 0, 0, 0, 0, 0, 0, 1], p = 0;
      if (typeof it == 'number' || typeof it == 'bigint') row = [0, Number(it), 0, 0, 0, 0, 0, 1];
      else if (it === null) row = [2, 0, 0, 0, 0, 0, 0, 1];
      else if (it === '...' || it === Ellipsis) row = [3, 0, 0, 0, 0, 0, 0, 1];
      else if (typeof it == 'boolean') row = [5, it ? 1 : 0, 0, 0, 0, 0, 0, 1];
      else if (isT(it)) { row = [4, 0, 0, 0, 0, 0, 0, 1]; p = it.ptr; }
      else if (Array.isArray(it)) { const t = torch.tensor(it, { dtype: it.every((v) => typeof v == 'boolean') ? 'bool' : 'int64' }); temps.push(t); row = [4, 0, 0, 0, 0, 0, 0, 1]; p = t.ptr; }
      else {
        let s = it;
        if (typeof it == 'string') {
          const parts = it.split(':').map((x) => x.trim());
          if (parts.length < 2 || parts.length > 3) throw new ctx.torch.CtorchError(`bad slice '${it}'`, 3);
          s = { start: parts[0] === '' ? null : Number(parts[0]), stop: parts[1] === '' ? null : Number(parts[1]), step: parts[2] == null || parts[2] === '' ? null : Number(parts[2]) };
        }
        row = [1, 0, s.start != null ? 1 : 0, s.start ?? 0, s.stop != null ? 1 : 0, s.stop ?? 0, s.step != null ? 1 : 0, s.step ?? 1];
      }
      vals.push(...row); ptrs.push(p);
    }
    setArgs(vals); setPtrs(ptrs);
    return its.length;
  }
  const Ellipsis = '...';
  const dropTemps = () => { while (temps.length) temps.pop().dispose(); };
  /** x.index(...items) is Python's x[items] */
  P.index = function (...its) { try { const n = items(its); return wrap(M._ctw_index(this.ptr, n)); } finally { dropTemps(); } };
  P.get = P.index;
  /** x.set(items, value) is Python's x[items] = value (items: an array, or one item) */
  P.set = function (its, value, { accumulate = false } = {}) {
    if (!Array.isArray(its) || its.length === 0 || its.every((v) => typeof v == 'number') && its.length > this.ndim) its = [its];
    try {
      const n = items(its);
      if (isT(value)) ok(M._ctw_index_put_(this.ptr, n, value.ptr, accumulate ? 1 : 0));
      else ok(M._ctw_index_put_scalar_(this.ptr, n, num(value), kindOf(value)));
    } finally { dropTemps(); }
    return this;
  };

  // nn functional basics on torch (the full set is torch.nn.functional)
  def('softmax', (t, dim, { dtype = null } = {}) => wrap(M._ctw_softmax(t.ptr, dim, optDt(dtype))));
  def('logSoftmax', (t, dim, { dtype = null } = {}) => wrap(M._ctw_log_softmax(t.ptr, dim, optDt(dtype))));
  def('oneHot', (t, numClasses = -1) => wrap(M._ctw_one_hot(t.ptr, numClasses)));
  def('dropout', (t, p = 0.5, training = true, { generator = null } = {}) => wrap(M._ctw_dropout(t.ptr, p, training ? 1 : 0, ctx.genPtr(generator))));
  def('multinomial', torch.multinomial);
  P.bernoulli = function (o) { return torch.bernoulli(this, o); };
}
