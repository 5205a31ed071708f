// torch.nn (functional, modules, init), torch.optim (+ lr_scheduler), safetensors and models
// over the C modules / optimizers / io of ctorch.
import { addSnakeAliases } from './torch.mjs';

export function addNN(ctx) {
  const { M, torch, Tensor, wrap, chk, ok, isT, num, kindOf, dtOf, setArgs, arg, setPtrs, ptrAt, setStr, cstr, toT, genPtr } = ctx;
  const { CtorchError } = torch;
  const two = (v, name = 'argument') => {
    if (typeof v == 'number') return [v, v];
    if (Array.isArray(v) && v.length === 1) return [v[0], v[0]];
    if (Array.isArray(v) && v.length === 2) return v;
    throw new CtorchError(`${name} must be a number or an array of 2 numbers`, 2);
  };
  const REDUCTIONS = { none: 0, mean: 1, sum: 2, batchmean: 3 };
  const reduction = (r) => {
    if (r in REDUCTIONS) return REDUCTIONS[r];
    setStr(1, r);
    const code = M._ctw_reduction();
    if (code < 0) ctx.fail();
    return code;
  };
  const own = (t) => (t ? new Tensor(chk(M._ctw_retain(t.ptr))) : null);

  // ---------------------------------------------------------------- functional
  const F = {
    relu: torch.relu, relu6: torch.relu6, gelu: torch.gelu, silu: torch.silu, mish: torch.mish, tanh: torch.tanh,
    sigmoid: torch.sigmoid, softplus: torch.softplus, softsign: torch.softsign, hardtanh: torch.hardtanh,
    hardswish: torch.hardswish, hardsigmoid: torch.hardsigmoid, selu: torch.selu, celu: torch.celu, elu: torch.elu,
    leakyRelu: torch.leakyRelu, softmax: torch.softmax, logSoftmax: torch.logSoftmax, oneHot: torch.oneHot,
    logsigmoid: (x) => torch.scope(() => torch.neg(torch.softplus(torch.neg(x)))),
    dropout: (x, p = 0.5, training = true, opts = {}) => (typeof p == 'object' ? torch.dropout(x, p.p ?? 0.5, p.training ?? true, p) : torch.dropout(x, p, training, opts)),
    linear: (x, w, b = null) => wrap(M._ctw_linear(x.ptr, w.ptr, b ? b.ptr : 0)),
    conv1d(x, w, b = null, { stride = 1, padding = 0, dilation = 1, groups = 1 } = {}) {
      setStr(0, typeof padding == 'string' ? padding : '');
      return wrap(M._ctw_conv1d(x.ptr, w.ptr, b ? b.ptr : 0, stride, typeof padding == 'string' ? 0 : padding, dilation, groups));
    },
    conv2d(x, w, b = null, { stride = 1, padding = 0, dilation = 1, groups = 1 } = {}) {
      const ps = typeof padding == 'string';
      setArgs([...two(stride, 'stride'), ...(ps ? [0, 0] : two(padding, 'padding')), ...two(dilation, 'dilation')]);
      setStr(0, ps ? padding : '');
      return wrap(M._ctw_conv2d(x.ptr, w.ptr, b ? b.ptr : 0, groups));
    },
    convTranspose2d(x, w, b = null, { stride = 1, padding = 0, outputPadding = 0, groups = 1, dilation = 1 } = {}) {
      setArgs([...two(stride), ...two(padding), ...two(outputPadding), ...two(dilation)]);
      return wrap(M._ctw_conv_transpose2d(x.ptr, w.ptr, b ? b.ptr : 0, groups));
    },
    maxPool2d(x, kernelSize, { stride = null, padding = 0, dilation = 1, ceilMode = false, returnIndices = false } = {}) {
      setArgs([...two(kernelSize, 'kernel_size'), ...(stride == null ? [0, 0] : two(stride, 'stride')), ...two(padding, 'padding'), ...two(dilation, 'dilation')]);
      const y = wrap(M._ctw_max_pool2d(x.ptr, stride == null ? 0 : 1, ceilMode ? 1 : 0, returnIndices ? 1 : 0));
      return returnIndices ? [y, new Tensor(ptrAt(1))] : y;
    },
    avgPool2d(x, kernelSize, { stride = null, padding = 0, ceilMode = false, countIncludePad = true, divisorOverride = null } = {}) {
      setArgs([...two(kernelSize, 'kernel_size'), ...(stride == null ? [0, 0] : two(stride, 'stride')), ...two(padding, 'padding')]);
      return wrap(M._ctw_avg_pool2d(x.ptr, stride == null ? 0 : 1, ceilMode ? 1 : 0, countIncludePad ? 1 : 0, divisorOverride ?? 0));
    },
    adaptiveAvgPool2d(x, size) { const [h, w] = two(size); return wrap(M._ctw_adaptive_avg_pool2d(x.ptr, h ?? -1, w ?? -1)); },
    adaptiveMaxPool2d(x, size) { const [h, w] = two(size); return wrap(M._ctw_adaptive_max_pool2d(x.ptr, h ?? -1, w ?? -1)); },
    batchNorm(x, runningMean, runningVar, { weight = null, bias = null, training = false, momentum = 0.1, eps = 1e-5 } = {}) {
      return wrap(M._ctw_batch_norm(x.ptr, runningMean ? runningMean.ptr : 0, runningVar ? runningVar.ptr : 0, weight ? weight.ptr : 0, bias ? bias.ptr : 0, training ? 1 : 0, momentum, eps));
    },
    layerNorm(x, normalizedShape, { weight = null, bias = null, eps = 1e-5 } = {}) {
      const s = typeof normalizedShape == 'number' ? [normalizedShape] : normalizedShape;
      setArgs(s);
      return wrap(M._ctw_layer_norm(x.ptr, s.length, weight ? weight.ptr : 0, bias ? bias.ptr : 0, eps));
    },
    groupNorm(x, numGroups, { weight = null, bias = null, eps = 1e-5 } = {}) {
      return wrap(M._ctw_group_norm(x.ptr, numGroups, weight ? weight.ptr : 0, bias ? bias.ptr : 0, eps));
    },
    rmsNorm(x, normalizedShape, { weight = null, eps = null } = {}) {
      const s = typeof normalizedShape == 'number' ? [normalizedShape] : normalizedShape;
      setArgs(s);
      return wrap(M._ctw_rms_norm(x.ptr, s.length, weight ? weight.ptr : 0, eps ?? -1));
    },
    embedding(idx, weight, { paddingIdx = null } = {}) {
      return wrap(M._ctw_embedding(idx.ptr, weight.ptr, paddingIdx == null ? 0 : 1, paddingIdx ?? 0));
    },
    interpolate(x, { size = null, scaleFactor = null, mode = 'nearest', alignCorners = null } = {}) {
      setArgs([...(size ? two(size) : [0, 0]), ...(scaleFactor ? two(scaleFactor) : [0, 0])]);
      setStr(0, mode);
      return wrap(M._ctw_interpolate(x.ptr, size ? 1 : 0, alignCorners == null ? -1 : alignCorners ? 1 : 0));
    },
    scaledDotProductAttention(q, k, v, { attnMask = null, dropoutP = 0, isCausal = false, scale = null, generator = null } = {}) {
      return wrap(M._ctw_sdpa(q.ptr, k.ptr, v.ptr, attnMask ? attnMask.ptr : 0, dropoutP, isCausal ? 1 : 0, scale == null ? 0 : 1, scale ?? 0, genPtr(generator)));
    },
    pad(x, pad, { mode = 'constant', value = 0 } = {}) {
      if (typeof mode == 'object') ({ mode = 'constant', value = 0 } = mode);
      setArgs(pad); setStr(0, mode);
      return wrap(M._ctw_pad(x.ptr, pad.length, value ?? 0));
    },
    crossEntropy(input, target, { weight = null, reduction: r = 'mean', ignoreIndex = -100, labelSmoothing = 0 } = {}) {
      return wrap(M._ctw_cross_entropy(input.ptr, target.ptr, weight ? weight.ptr : 0, reduction(r), ignoreIndex, labelSmoothing));
    },
    nllLoss(input, target, { weight = null, reduction: r = 'mean', ignoreIndex = -100 } = {}) {
      return wrap(M._ctw_nll_loss(input.ptr, target.ptr, weight ? weight.ptr : 0, reduction(r), ignoreIndex));
    },
    mseLoss: (a, b, { reduction: r = 'mean' } = {}) => wrap(M._ctw_mse_loss(a.ptr, b.ptr, reduction(r))),
    l1Loss: (a, b, { reduction: r = 'mean' } = {}) => wrap(M._ctw_l1_loss(a.ptr, b.ptr, reduction(r))),
    smoothL1Loss: (a, b, { reduction: r = 'mean', beta = 1 } = {}) => wrap(M._ctw_smooth_l1_loss(a.ptr, b.ptr, reduction(r), beta)),
    huberLoss: (a, b, { reduction: r = 'mean', delta = 1 } = {}) => wrap(M._ctw_huber_loss(a.ptr, b.ptr, reduction(r), delta)),
    binaryCrossEntropy: (a, b, { weight = null, reduction: r = 'mean' } = {}) => wrap(M._ctw_binary_cross_entropy(a.ptr, b.ptr, weight ? weight.ptr : 0, reduction(r))),
    binaryCrossEntropyWithLogits: (a, b, { weight = null, posWeight = null, reduction: r = 'mean' } = {}) =>
      wrap(M._ctw_binary_cross_entropy_with_logits(a.ptr, b.ptr, weight ? weight.ptr : 0, posWeight ? posWeight.ptr : 0, reduction(r))),
    klDiv: (a, b, { reduction: r = 'mean', logTarget = false } = {}) => wrap(M._ctw_kl_div(a.ptr, b.ptr, reduction(r), logTarget ? 1 : 0)),
    cosineSimilarity: (a, b, { dim = 1, eps = 1e-8 } = {}) => wrap(M._ctw_cosine_similarity(a.ptr, b.ptr, dim, eps)),
    pairwiseDistance: (a, b, { p = 2, eps = 1e-6, keepdim = false } = {}) => wrap(M._ctw_pairwise_distance(a.ptr, b.ptr, p, eps, keepdim ? 1 : 0)),
    normalize: (x, { p = 2, dim = 1, eps = 1e-12 } = {}) => torch.scope(() => torch.div(x, torch.clampMin(torch.norm(x, p, dim, { keepdim: true }), eps).expandAs(x))),
  };
  addSnakeAliases(F);

  // ---------------------------------------------------------------- modules
  const paramMark = new WeakSet();
  /** nn.Parameter(t): marks t as a module parameter (requires grad, kept past scopes). */
  function Parameter(t, requiresGrad = true) {
    if (!isT(t)) t = torch.tensor(t);
    t.keep();
    if (t.requiresGrad !== requiresGrad) t.requiresGrad_(requiresGrad);
    paramMark.add(t);
    return t;
  }
  const bufferMark = new WeakSet();

  class Module {
    constructor() { this.training = true; }
    forward() { throw new CtorchError(`Module [${this.constructor.name}] is missing the required "forward" function`, 4); }
    /** m.call(x) is PyTorch's m(x). */
    call(...a) { return this.forward(...a); }
    registerBuffer(name, t) { if (t) { t.keep(); bufferMark.add(t); } this[name] = t; }
    registerParameter(name, t) { this[name] = t ? Parameter(t) : null; }
    *_members() {
      for (const k of Object.keys(this)) {
        if (k === 'training' || k.startsWith('_')) continue;
        yield [k, this[k]];
      }
    }
    namedChildren() { const r = []; for (const [k, v] of this._members()) if (v instanceof Module) r.push([k, v]); return r; }
    children() { return this.namedChildren().map((e) => e[1]); }
    namedModules(prefix = '') {
      const r = [[prefix, this]];
      for (const [k, c] of this.namedChildren()) r.push(...c.namedModules(prefix ? `${prefix}.${k}` : k));
      return r;
    }
    modules() { return this.namedModules().map((e) => e[1]); }
    // own tensors as [name, borrowed JS tensor]; C modules override
    _ownTensors(kind) {
      const r = [];
      for (const [k, v] of this._members()) if (isT(v) && (kind === 'param' ? paramMark.has(v) : bufferMark.has(v))) r.push([k, v]);
      return r;
    }
    // appends [name, new handle] pairs; each tensor once (tied weights keep their first name)
    _collect(kind, prefix, out, seen) {
      for (const [k, t] of this._ownTensors(kind)) {
        if (seen.has(t.ptr)) continue;
        seen.add(t.ptr);
        out.push([prefix ? `${prefix}.${k}` : k, own(t)]);
      }
      for (const [k, c] of this.namedChildren()) c._collect(kind, prefix ? `${prefix}.${k}` : k, out, seen);
    }
    /** [name, tensor] pairs (new handles: dispose them or use a scope), each tensor once. */
    namedParameters() { const out = []; this._collect('param', '', out, new Set()); return out; }
    parameters() { return this.namedParameters().map((e) => e[1]); }
    namedBuffers() { const out = []; this._collect('buffer', '', out, new Set()); return out; }
    buffers() { return this.namedBuffers().map((e) => e[1]); }
    /** state_dict: {name: tensor} (detached, sharing memory with the module's tensors). */
    stateDict() {
      const out = [];
      this._stateEntries('', out);
      const sd = {};
      for (const [k, t] of out) sd[k] = t;
      return sd;
    }
    _stateEntries(prefix, out) {
      for (const [k, t] of this._ownTensors('param')) out.push([prefix + k, t.detach()]);
      for (const [k, t] of this._ownTensors('buffer')) out.push([prefix + k, t.detach()]);
      for (const [k, c] of this.namedChildren()) c._stateEntries(`${prefix}${k}.`, out);
    }
    /** load_state_dict(sd, {strict}): copies values in place (dtype converted); PyTorch's errors. */
    loadStateDict(sd, { strict = true } = {}) {
      if (sd instanceof Map) sd = Object.fromEntries(sd);
      const mine = this.stateDict();
      try {
        const missing = Object.keys(mine).filter((k) => !(k in sd));
        const unexpected = Object.keys(sd).filter((k) => !(k in mine));
        const errs = [];
        if (strict && unexpected.length) errs.push(`Unexpected key(s) in state_dict: ${unexpected.map((k) => `"${k}"`).join(', ')}. `);
        if (strict && missing.length) errs.push(`Missing key(s) in state_dict: ${missing.map((k) => `"${k}"`).join(', ')}. `);
        for (const k of Object.keys(mine)) {
          if (!(k in sd)) continue;
          const a = mine[k].shape, b = sd[k].shape;
          if (a.length !== b.length || a.some((v, i) => v !== b[i])) {
            errs.push(`size mismatch for ${k}: copying a param with shape [${b.join(', ')}] from checkpoint, the shape in current model is [${a.join(', ')}].`);
          }
        }
        if (errs.length) throw new CtorchError(`Error(s) in loading state_dict for ${this.constructor.name}:\n\t${errs.join('\n\t')}`, 5);
        torch.noGrad(() => { for (const k of Object.keys(mine)) if (k in sd) mine[k].copy_(sd[k]); });
        return { missingKeys: missing, unexpectedKeys: unexpected };
      } finally { torch.dispose(mine); }
    }
    train(mode = true) { this.training = !!mode; for (const c of this.children()) c.train(mode); return this; }
    eval() { return this.train(false); }
    zeroGrad(setToNone = false) {
      for (const p of this.parameters()) {
        if (setToNone) p.grad = null;
        else { const g = p.grad; if (g) { g.detach_(); g.zero_(); g.dispose(); } }
        p.dispose();
      }
    }
    requiresGrad_(flag = true) { for (const p of this.parameters()) { p.requiresGrad_(flag); p.dispose(); } return this; }
    numParameters({ onlyTrainable = false } = {}) {
      let n = 0;
      for (const p of this.parameters()) { if (!onlyTrainable || p.requiresGrad) n += p.numel(); p.dispose(); }
      return n;
    }
    apply(fn) { for (const c of this.children()) c.apply(fn); fn(this); return this; }
    /** Frees the module's own tensors and its C objects (the module is unusable afterwards). */
    dispose() {
      for (const c of this.children()) c.dispose();
      for (const [, t] of this._members()) if (isT(t) && (paramMark.has(t) || bufferMark.has(t))) t.dispose();
    }
    toString() {
      const kids = this.namedChildren();
      const head = `${this.constructor.name}(${this.extraRepr ? this.extraRepr() : ''}`;
      if (!kids.length) return head + ')';
      return head + '\n' + kids.map(([k, c]) => `  (${k}): ${String(c).split('\n').join('\n  ')}`).join('\n') + '\n)';
    }
  }

  // A layer implemented by ctorch's C modules (include/ctorch/module.h).
  class CModule extends Module {
    constructor(handle, repr = '') {
      super();
      Object.defineProperty(this, '_m', { value: chk(handle), writable: true, enumerable: false });
      Object.defineProperty(this, '_repr', { value: repr, enumerable: false });
    }
    get handle() { if (!this._m) throw new CtorchError('this module was disposed', 5); return this._m; }
    extraRepr() { return this._repr; }
    forward(x) { return wrap(M._ctw_module_forward(this.handle, x.ptr)); }
    _dictEntries(d) {
      try {
        const n = M._ctw_dict_len(d), r = [];
        for (let i = 0; i < n; i++) r.push([cstr(M._ctw_dict_name(d, i)), new Tensor(chk(M._ctw_dict_tensor(d, i)))]);
        return r;
      } finally { M._ctw_dict_free(d); }
    }
    _ownTensors() { return []; }
    _collect(kind, prefix, out, seen) {
      const entries = this._dictEntries(chk(kind === 'param' ? M._ctw_module_named_parameters(this.handle) : M._ctw_module_named_buffers(this.handle)));
      for (const [k, t] of entries) {
        if (seen.has(t.ptr)) { t.dispose(); continue; }
        seen.add(t.ptr);
        out.push([prefix ? `${prefix}.${k}` : k, t]);
      }
    }
    _stateEntries(prefix, out) {
      for (const [k, t] of this._dictEntries(chk(M._ctw_module_state_dict(this.handle)))) out.push([prefix + k, t]);
    }
    train(mode = true) { this.training = !!mode; ok(M._ctw_module_train(this.handle, mode ? 1 : 0)); return this; }
    param(name) { setStr(0, name); M._ctw_clear_error(); const p = M._ctw_module_param(this.handle); return p ? new Tensor(p) : null; }
    buffer(name) { setStr(0, name); M._ctw_clear_error(); const p = M._ctw_module_buffer(this.handle); return p ? new Tensor(p) : null; }
    to(dtype) { ok(M._ctw_module_to_dtype(this.handle, dtOf(dtype))); return this; }
    dispose() { if (this._m) M._ctw_module_free(this._m); this._m = 0; }
  }
  for (const n of ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked', 'in_proj_weight', 'in_proj_bias']) {
    const js = n.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
    Object.defineProperty(CModule.prototype, js, { get() { return n.startsWith('running') || n === 'num_batches_tracked' ? this.buffer(n) : this.param(n); } });
  }

  const convArgs = (o, defaults = {}) => {
    const { stride = 1, padding = 0, dilation = 1, outputPadding = 0, groups = 1, bias = true, paddingMode = 'zeros' } = { ...defaults, ...o };
    const ps = typeof padding == 'string';
    setArgs([...two(stride), ...(ps ? [0, 0] : two(padding)), ...two(dilation), ...two(outputPadding), groups, bias ? 1 : 0]);
    setStr(0, ps ? padding : '');
    setStr(1, paddingMode);
  };
  const layers = {
    Linear: class Linear extends CModule {
      constructor(inFeatures, outFeatures, { bias = true } = {}) {
        super(M._ctw_linear_new(inFeatures, outFeatures, bias ? 1 : 0), `in_features=${inFeatures}, out_features=${outFeatures}, bias=${bias ? 'True' : 'False'}`);
      }
    },
    Conv1d: class Conv1d extends CModule {
      constructor(inC, outC, kernelSize, opts = {}) { convArgs(opts); super(M._ctw_conv1d_new(inC, outC, kernelSize), `${inC}, ${outC}, kernel_size=(${kernelSize},)`); }
    },
    Conv2d: class Conv2d extends CModule {
      constructor(inC, outC, kernelSize, opts = {}) {
        const [kh, kw] = two(kernelSize, 'kernel_size');
        convArgs(opts);
        super(M._ctw_conv2d_new(inC, outC, kh, kw), `${inC}, ${outC}, kernel_size=(${kh}, ${kw})`);
      }
    },
    ConvTranspose2d: class ConvTranspose2d extends CModule {
      constructor(inC, outC, kernelSize, opts = {}) {
        const [kh, kw] = two(kernelSize, 'kernel_size');
        convArgs(opts);
        super(M._ctw_conv_transpose2d_new(inC, outC, kh, kw), `${inC}, ${outC}, kernel_size=(${kh}, ${kw})`);
      }
    },
    BatchNorm1d: class BatchNorm1d extends CModule {
      constructor(n, { eps = 1e-5, momentum = 0.1, affine = true, trackRunningStats = true } = {}) {
        super(M._ctw_batch_norm_new(1, n, eps, momentum == null ? -1 : momentum, affine ? 1 : 0, trackRunningStats ? 1 : 0), `${n}`);
      }
    },
    BatchNorm2d: class BatchNorm2d extends CModule {
      constructor(n, { eps = 1e-5, momentum = 0.1, affine = true, trackRunningStats = true } = {}) {
        super(M._ctw_batch_norm_new(2, n, eps, momentum == null ? -1 : momentum, affine ? 1 : 0, trackRunningStats ? 1 : 0), `${n}`);
      }
    },
    LayerNorm: class LayerNorm extends CModule {
      constructor(shape, { eps = 1e-5, elementwiseAffine = true } = {}) {
        const s = typeof shape == 'number' ? [shape] : shape;
        setArgs(s);
        super(M._ctw_layer_norm_new(s.length, eps, elementwiseAffine ? 1 : 0), `(${s.join(', ')},)`);
      }
    },
    GroupNorm: class GroupNorm extends CModule {
      constructor(groups, channels, { eps = 1e-5, affine = true } = {}) { super(M._ctw_group_norm_new(groups, channels, eps, affine ? 1 : 0), `${groups}, ${channels}`); }
    },
    Embedding: class Embedding extends CModule {
      constructor(num, dim, { paddingIdx = null } = {}) { super(M._ctw_embedding_new(num, dim, paddingIdx == null ? 0 : 1, paddingIdx ?? 0), `${num}, ${dim}`); }
    },
    MultiheadAttention: class MultiheadAttention extends CModule {
      constructor(embedDim, numHeads, { dropout = 0, bias = true, batchFirst = false } = {}) {
        super(M._ctw_multihead_attention_new(embedDim, numHeads, dropout, bias ? 1 : 0, batchFirst ? 1 : 0), `embed_dim=${embedDim}, num_heads=${numHeads}`);
      }
      /** forward(query, key, value, {keyPaddingMask, needWeights, attnMask, averageAttnWeights}) -> [output, weights|null] */
      forward(q, k = q, v = k, { keyPaddingMask = null, needWeights = true, attnMask = null, averageAttnWeights = true } = {}) {
        setPtrs([q.ptr, k.ptr, v.ptr, keyPaddingMask ? keyPaddingMask.ptr : 0, attnMask ? attnMask.ptr : 0]);
        const y = wrap(M._ctw_multihead_attention_forward(this.handle, needWeights ? 1 : 0, averageAttnWeights ? 1 : 0));
        const w = ptrAt(1);
        return [y, w ? new Tensor(w) : null];
      }
    },
  };
  // parameter-free layers in JavaScript over the functional ops
  const simple = (name, fn, repr = () => '') => {
    layers[name] = { [name]: class extends Module {
      constructor(...a) { super(); Object.defineProperty(this, '_a', { value: a, enumerable: false }); }
      forward(x) { return fn.call(this, x, ...this._a); }
      extraRepr() { return repr(...this._a); }
    } }[name];
  };
  simple('ReLU', (x) => torch.relu(x));
  simple('ReLU6', (x) => torch.relu6(x));
  simple('GELU', (x, o = {}) => torch.gelu(x, o), (o = {}) => (o.approximate ? `approximate='${o.approximate}'` : ''));
  simple('SiLU', (x) => torch.silu(x));
  simple('Mish', (x) => torch.mish(x));
  simple('Tanh', (x) => torch.tanh(x));
  simple('Sigmoid', (x) => torch.sigmoid(x));
  simple('Hardswish', (x) => torch.hardswish(x));
  simple('LeakyReLU', (x, s = 0.01) => torch.leakyRelu(x, s));
  simple('ELU', (x, a = 1) => torch.elu(x, a));
  simple('Softplus', (x, o = {}) => torch.softplus(x, o));
  simple('Softmax', (x, dim = -1) => torch.softmax(x, dim), (d) => `dim=${d}`);
  simple('LogSoftmax', (x, dim = -1) => torch.logSoftmax(x, dim), (d) => `dim=${d}`);
  simple('Identity', (x) => own(x));
  simple('Flatten', (x, s = 1, e = -1) => torch.flatten(x, s, e));
  simple('Unflatten', (x, dim, sizes) => torch.unflatten(x, dim, sizes));
  simple('Dropout', function (x, p = 0.5) { return torch.dropout(x, p, this.training); }, (p = 0.5) => `p=${p}`);
  simple('MaxPool2d', (x, k, o = {}) => F.maxPool2d(x, k, o), (k) => `kernel_size=${k}`);
  simple('AvgPool2d', (x, k, o = {}) => F.avgPool2d(x, k, o), (k) => `kernel_size=${k}`);
  simple('AdaptiveAvgPool2d', (x, s) => F.adaptiveAvgPool2d(x, s), (s) => `output_size=${s}`);
  // losses take two inputs
  const loss = (name, fn) => {
    layers[name] = { [name]: class extends Module {
      constructor(opts = {}) { super(); Object.defineProperty(this, '_o', { value: opts, enumerable: false }); }
      forward(input, target) { return fn(input, target, this._o); }
    } }[name];
  };
  loss('CrossEntropyLoss', F.crossEntropy); loss('NLLLoss', F.nllLoss); loss('MSELoss', F.mseLoss); loss('L1Loss', F.l1Loss);
  loss('SmoothL1Loss', F.smoothL1Loss); loss('HuberLoss', F.huberLoss); loss('BCELoss', F.binaryCrossEntropy);
  loss('BCEWithLogitsLoss', F.binaryCrossEntropyWithLogits); loss('KLDivLoss', F.klDiv);

  class Sequential extends Module {
    constructor(...mods) {
      super();
      if (mods.length === 1 && Array.isArray(mods[0])) mods = mods[0];
      mods.forEach((m, i) => { this[String(i)] = m; });
    }
    get length() { return this.children().length; }
    at(i) { const c = this.children(); return c[i < 0 ? i + c.length : i]; }
    append(m) { this[String(this.children().length)] = m; return this; }
    forward(x) {
      let y = x, first = true;
      for (const m of this.children()) {
        const z = m.forward(y);
        if (!first) y.dispose();
        y = z; first = false;
      }
      return first ? own(x) : y;
    }
    [Symbol.iterator]() { return this.children()[Symbol.iterator](); }
  }
  class ModuleList extends Module {
    constructor(mods = []) { super(); mods.forEach((m, i) => { this[String(i)] = m; }); }
    get length() { return this.children().length; }
    at(i) { const c = this.children(); return c[i < 0 ? i + c.length : i]; }
    append(m) { this[String(this.children().length)] = m; return this; }
    [Symbol.iterator]() { return this.children()[Symbol.iterator](); }
  }
  // numeric keys come first in JS property order, which is also their insertion order here

  // nn.init (PyTorch's formulas, drawing from the default generator)
  const fans = (t) => {
    const s = t.shape;
    if (s.length < 2) throw new CtorchError('Fan in and fan out can not be computed for tensor with fewer than 2 dimensions', 3);
    const rf = s.slice(2).reduce((a, b) => a * b, 1);
    return [s[1] * rf, s[0] * rf];
  };
  const gainOf = (nl, a) => ({ linear: 1, conv2d: 1, sigmoid: 1, tanh: 5 / 3, relu: Math.SQRT2, leaky_relu: Math.sqrt(2 / (1 + (a ?? 0.01) ** 2)), selu: 3 / 4 }[nl] ?? 1);
  const init = {
    calculateGain: (nl, a) => gainOf(nl, a),
    uniform_: (t, a = 0, b = 1) => torch.noGrad(() => t.uniform_(a, b)),
    normal_: (t, mean = 0, std = 1) => torch.noGrad(() => t.normal_(mean, std)),
    constant_: (t, v) => torch.noGrad(() => t.fill_(v)),
    zeros_: (t) => torch.noGrad(() => t.zero_()),
    ones_: (t) => torch.noGrad(() => t.fill_(1)),
    xavierUniform_: (t, gain = 1) => { const [fi, fo] = fans(t); const a = gain * Math.sqrt(6 / (fi + fo)); return torch.noGrad(() => t.uniform_(-a, a)); },
    xavierNormal_: (t, gain = 1) => { const [fi, fo] = fans(t); return torch.noGrad(() => t.normal_(0, gain * Math.sqrt(2 / (fi + fo)))); },
    kaimingUniform_: (t, { a = 0, mode = 'fan_in', nonlinearity = 'leaky_relu' } = {}) => {
      const [fi, fo] = fans(t); const b = gainOf(nonlinearity, a) * Math.sqrt(3 / (mode === 'fan_in' ? fi : fo));
      return torch.noGrad(() => t.uniform_(-b, b));
    },
    kaimingNormal_: (t, { a = 0, mode = 'fan_in', nonlinearity = 'leaky_relu' } = {}) => {
      const [fi, fo] = fans(t);
      return torch.noGrad(() => t.normal_(0, gainOf(nonlinearity, a) / Math.sqrt(mode === 'fan_in' ? fi : fo)));
    },
  };
  addSnakeAliases(init);

  const utils = {
    clipGradNorm_(params, maxNorm, { normType = 2, errorIfNonfinite = false } = {}) {
      params = isT(params) ? [params] : [...params];
      setPtrs(params.map((p) => p.ptr));
      return wrap(M._ctw_clip_grad_norm_(params.length, maxNorm, normType === 'inf' ? Infinity : normType, errorIfNonfinite ? 1 : 0));
    },
    clipGradValue_(params, v) { params = isT(params) ? [params] : [...params]; setPtrs(params.map((p) => p.ptr)); ok(M._ctw_clip_grad_value_(params.length, v)); },
  };
  addSnakeAliases(utils);

  torch.nn = { Module, Parameter, Sequential, ModuleList, functional: F, init, utils, ...layers };
  for (const c of Object.values(torch.nn)) if (typeof c == 'function' && c.prototype) addSnakeAliases(c.prototype);
  addSnakeAliases(Module.prototype); addSnakeAliases(CModule.prototype);

  // ---------------------------------------------------------------- optim
  const OPT_KEYS = ['lr', 'momentum', 'dampening', 'nesterov', 'beta1', 'beta2', 'amsgrad', 'eps', 'weightDecay', 'maximize', 'alpha', 'centered', 'lrDecay', 'initialAccumulatorValue'];
  const readOpts = () => Object.fromEntries(OPT_KEYS.map((k, i) => [k, ['nesterov', 'amsgrad', 'maximize', 'centered'].includes(k) ? arg(i) !== 0 : arg(i)]));
  const writeOpts = (o) => setArgs(OPT_KEYS.map((k) => (typeof o[k] == 'boolean' ? (o[k] ? 1 : 0) : o[k])));
  const normOpts = (o) => {
    const r = { ...o };
    if (o.betas) { r.beta1 = o.betas[0]; r.beta2 = o.betas[1]; delete r.betas; }
    for (const [s, c] of [['weight_decay', 'weightDecay'], ['lr_decay', 'lrDecay'], ['initial_accumulator_value', 'initialAccumulatorValue']]) if (s in r) { r[c] = r[s]; delete r[s]; }
    return r;
  };
  class Optimizer {
    constructor(kind, params, options = {}) {
      Object.defineProperty(this, '_kind', { value: kind });
      M._ctw_optim_defaults(kind);
      const defaults = { ...readOpts(), ...normOpts(options) };
      if (Number.isNaN(defaults.lr)) throw new CtorchError('SGD: lr is required (pass {lr: ...})', 2);
      let groups = [...params];
      if (!groups.length) throw new CtorchError('optimizer got an empty parameter list', 3);
      if (isT(groups[0])) groups = [{ params: groups }];
      let h = 0;
      for (const g of groups) {
        const ps = [...g.params];
        const o = { ...defaults, ...normOpts({ ...g, params: undefined }) };
        delete o.params;
        writeOpts(o);
        setPtrs(ps.map((p) => p.ptr));
        if (!h) h = chk(M._ctw_optim_new(kind, ps.length));
        else ok(M._ctw_optim_add_param_group(h, ps.length));
      }
      this._o = h;
      this.defaults = defaults;
    }
    get handle() { if (!this._o) throw new CtorchError('this optimizer was disposed', 5); return this._o; }
    /** optimizer.step(closure?): closure re-evaluates the loss (run with grad enabled). */
    step(closure = null) {
      let loss = null;
      if (closure) loss = torch.enableGrad(closure);
      ok(M._ctw_optim_step(this.handle));
      return loss;
    }
    zeroGrad(setToNone = false) { ok(M._ctw_optim_zero_grad(this.handle, setToNone ? 1 : 0)); }
    /** Live views of the groups' hyper-parameters: optimizer.paramGroups[0].lr = 0.01 works. */
    get paramGroups() {
      const n = M._ctw_optim_num_groups(this.handle), out = [];
      for (let g = 0; g < n; g++) {
        const self = this, obj = {};
        for (const k of [...OPT_KEYS, 'betas']) {
          Object.defineProperty(obj, k, {
            enumerable: true,
            get() { ok(M._ctw_optim_get_group(self.handle, g)); const o = readOpts(); return k === 'betas' ? [o.beta1, o.beta2] : o[k]; },
            set(v) { ok(M._ctw_optim_get_group(self.handle, g)); const o = readOpts(); Object.assign(o, normOpts({ [k]: v })); writeOpts(o); ok(M._ctw_optim_set_group(self.handle, g)); },
          });
        }
        out.push(obj);
      }
      return out;
    }
    get lr() { return M._ctw_optim_get_lr(this.handle, 0); }
    set lr(v) { for (let g = 0; g < M._ctw_optim_num_groups(this.handle); g++) ok(M._ctw_optim_set_lr(this.handle, g, v)); }
    /** state tensor of a parameter ("exp_avg", "step", ...), or null */
    state(param, key) { setStr(0, key); M._ctw_clear_error(); const p = M._ctw_optim_state(this.handle, param.ptr); return p ? new Tensor(p) : null; }
    /** state_dict as a flat {name: tensor} map (ctorch's layout, see optim.h) */
    stateDict() { return dictToObject(chk(M._ctw_optim_state_dict(this.handle)), true); }
    loadStateDict(sd) { withDict(sd, (d) => ok(M._ctw_optim_load_state_dict(this.handle, d))); }
    dispose() { if (this._o) M._ctw_optim_free(this._o); this._o = 0; }
  }
  addSnakeAliases(Optimizer.prototype);
  const optClass = (name, kind) => ({ [name]: class extends Optimizer { constructor(params, opts = {}) { super(kind, params, opts); } } }[name]);
  const Scheduler = class LRScheduler {
    constructor(h) { this._s = chk(h); }
    step() { ok(M._ctw_sched_step(this._s)); }
    getLastLr() { const n = M._ctw_sched_get_last_lr(this._s); return Array.from({ length: n }, (_, i) => arg(i)); }
    get lastEpoch() { return M._ctw_sched_last_epoch(this._s); }
    dispose() { if (this._s) M._ctw_sched_free(this._s); this._s = 0; }
  };
  addSnakeAliases(Scheduler.prototype);
  const lrScheduler = {
    StepLR: class StepLR extends Scheduler { constructor(opt, stepSize, { gamma = 0.1 } = {}) { super(M._ctw_sched_step_lr(opt.handle, stepSize, gamma)); } },
    MultiStepLR: class MultiStepLR extends Scheduler { constructor(opt, milestones, { gamma = 0.1 } = {}) { setArgs(milestones); super(M._ctw_sched_multistep_lr(opt.handle, milestones.length, gamma)); } },
    ExponentialLR: class ExponentialLR extends Scheduler { constructor(opt, gamma) { super(M._ctw_sched_exponential_lr(opt.handle, typeof gamma == 'object' ? gamma.gamma : gamma)); } },
    CosineAnnealingLR: class CosineAnnealingLR extends Scheduler { constructor(opt, tMax, { etaMin = 0 } = {}) { super(M._ctw_sched_cosine_annealing_lr(opt.handle, tMax, etaMin)); } },
    LinearLR: class LinearLR extends Scheduler {
      constructor(opt, { startFactor = 1 / 3, endFactor = 1, totalIters = 5 } = {}) { super(M._ctw_sched_linear_lr(opt.handle, startFactor, endFactor, totalIters)); }
    },
    OneCycleLR: class OneCycleLR extends Scheduler {
      constructor(opt, { maxLr, totalSteps = null, epochs = null, stepsPerEpoch = null, pctStart = 0.3, annealStrategy = 'cos', cycleMomentum = true,
        baseMomentum = 0.85, maxMomentum = 0.95, divFactor = 25, finalDivFactor = 1e4, threePhase = false } = {}) {
        const total = totalSteps ?? (epochs != null && stepsPerEpoch != null ? epochs * stepsPerEpoch : 0);
        setArgs([maxLr, total, pctStart, cycleMomentum ? 1 : 0, baseMomentum, maxMomentum, divFactor, finalDivFactor, threePhase ? 1 : 0]);
        setStr(0, annealStrategy);
        super(M._ctw_sched_onecycle_lr(opt.handle));
      }
    },
  };
  torch.optim = {
    Optimizer, SGD: optClass('SGD', 0), Adam: optClass('Adam', 1), AdamW: optClass('AdamW', 2), RMSprop: optClass('RMSprop', 3), Adagrad: optClass('Adagrad', 4),
    lrScheduler, lr_scheduler: lrScheduler,
  };

  // ---------------------------------------------------------------- dicts and safetensors
  function dictToObject(d, free, withMeta = false) {
    try {
      const n = M._ctw_dict_len(d), out = {};
      for (let i = 0; i < n; i++) out[cstr(M._ctw_dict_name(d, i))] = new Tensor(chk(M._ctw_dict_tensor(d, i)));
      if (!withMeta) return out;
      const meta = {};
      const nm = M._ctw_dict_meta_len(d);
      for (let i = 0; i < nm; i++) { const k = cstr(M._ctw_dict_meta_key(d, i)); setStr(0, k); meta[k] = cstr(M._ctw_dict_get_meta(d)); }
      return { tensors: out, metadata: meta };
    } finally { if (free) M._ctw_dict_free(d); }
  }
  function withDict(obj, fn, metadata = null) {
    if (obj instanceof Module) { const sd = obj.stateDict(); try { return withDict(sd, fn, metadata); } finally { torch.dispose(sd); } }
    const entries = obj instanceof Map ? [...obj.entries()] : Object.entries(obj);
    const d = chk(M._ctw_dict_new());
    try {
      for (const [k, t] of entries) {
        if (!isT(t)) throw new CtorchError(`expected a Tensor for '${k}'`, 2);
        setStr(0, k);
        ok(M._ctw_dict_set(d, t.ptr));
      }
      for (const [k, v] of Object.entries(metadata || {})) { setStr(0, k); setStr(1, String(v)); ok(M._ctw_dict_set_meta(d)); }
      return fn(d);
    } finally { M._ctw_dict_free(d); }
  }
  const safetensors = {
    /** The safetensors bytes of {name: tensor} (or a Module's state_dict), with string metadata. */
    save(tensors, metadata = null) {
      return withDict(tensors, (d) => {
        ok(M._ctw_safetensors_save(d));
        const p = ptrAt(0), n = arg(0);
        try { return new Uint8Array(ctx.memory().buffer, p, n).slice(); } finally { M._ctw_free(p); }
      }, metadata);
    },
    /** {tensors: {name: tensor}, metadata: {key: value}} from safetensors bytes. */
    loadWithMetadata(bytes) {
      if (bytes instanceof ArrayBuffer) bytes = new Uint8Array(bytes);
      const tmp = chk(M._ctw_malloc(bytes.length));
      try {
        new Uint8Array(ctx.memory().buffer, tmp, bytes.length).set(bytes);
        return dictToObject(chk(M._ctw_safetensors_load(tmp, bytes.length)), true, true);
      } finally { M._ctw_free(tmp); }
    },
    load(bytes) { return safetensors.loadWithMetadata(bytes).tensors; },
  };
  addSnakeAliases(safetensors);
  torch.safetensors = safetensors;
  torch.save = safetensors.save;
  torch.load = safetensors.load;

  // ---------------------------------------------------------------- models
  class GPT {
    /** GPT-2 architecture (models.h): {vocabSize, nPositions, nEmbd, nLayer, nHead, dropout, layerNormEpsilon} */
    constructor({ vocabSize, nPositions, nEmbd, nLayer, nHead, dropout = 0, layerNormEpsilon = 1e-5 }, { generator = null } = {}) {
      this.config = { vocabSize, nPositions, nEmbd, nLayer, nHead, dropout, layerNormEpsilon };
      setArgs([vocabSize, nPositions, nEmbd, nLayer, nHead, dropout, layerNormEpsilon]);
      this._m = chk(M._ctw_gpt_new(genPtr(generator)));
      this.training = true;
    }
    get handle() { if (!this._m) throw new CtorchError('this model was disposed', 5); return this._m; }
    namedParameters() { return Object.entries(dictToObject(chk(M._ctw_gpt_parameters(this.handle)), false)); }
    parameters() { return this.namedParameters().map((e) => e[1]); }
    numParameters() { return M._ctw_gpt_num_params(this.handle); }
    train(mode = true) { this.training = !!mode; return this; }
    eval() { return this.train(false); }
    /** forward(idx, targets = null, {training}) -> {logits, loss}; logits: false skips them */
    forward(idx, targets = null, { training = this.training, logits = true, generator = null } = {}) {
      ok(M._ctw_gpt_forward(this.handle, idx.ptr, targets ? targets.ptr : 0, training ? 1 : 0, logits ? 1 : 0, genPtr(generator)));
      const l = ptrAt(0), s = ptrAt(1);
      return { logits: l ? new Tensor(l) : null, loss: s ? new Tensor(s) : null };
    }
    zeroGrad(setToNone = false) { for (const p of this.parameters()) { if (setToNone) p.grad = null; else { const g = p.grad; if (g) { g.zero_(); g.dispose(); } } p.dispose(); } }
    stateDict() { return dictToObject(chk(M._ctw_gpt_state_dict(this.handle)), true); }
    loadStateDict(sd) { withDict(sd, (d) => ok(M._ctw_gpt_load_state_dict(this.handle, d))); }
    /** A key/value cache for generation: cache.forward(idx [B, t], lastOnly) -> logits */
    newCache(batch = 1, maxLen = this.config.nPositions) {
      const model = this, h = chk(M._ctw_gpt_cache_new(this.handle, batch, maxLen));
      return {
        get length() { return M._ctw_gpt_cache_len(h); },
        reset() { M._ctw_gpt_cache_reset(h); },
        forward(idx, lastOnly = true) { return wrap(M._ctw_gpt_forward_cached(model.handle, h, idx.ptr, lastOnly ? 1 : 0)); },
        dispose() { M._ctw_gpt_cache_free(h); },
      };
    }
    /** Picks a token from float logits ({temperature, topK, topP}, u in [0,1)); also returns the distribution. */
    static pickToken(logits, { temperature = 1, topK = 0, topP = 1 } = {}, u = Math.random()) {
      const V = logits.length, bytes = V * 4;
      const lp = chk(M._ctw_malloc(bytes)), pp = chk(M._ctw_malloc(bytes));
      try {
        new Float32Array(ctx.memory().buffer, lp, V).set(logits);
        const tok = M._ctw_gpt_pick_token(lp, V, temperature, topK, topP, u, pp);
        if (tok < 0) ctx.fail();
        return { token: tok, probs: new Float32Array(ctx.memory().buffer, pp, V).slice() };
      } finally { M._ctw_free(lp); M._ctw_free(pp); }
    }
    dispose() { if (this._m) M._ctw_gpt_free(this._m); this._m = 0; }
  }
  addSnakeAliases(GPT.prototype);
  torch.models = { GPT };
}
