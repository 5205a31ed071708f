// TypeScript declarations of ctorch's JavaScript API (web/js). Every camelCase name also exists
// in PyTorch's snake_case spelling (crossEntropy / cross_entropy, zeroGrad / zero_grad, ...).

export type DType = 'float32' | 'float64' | 'float16' | 'bfloat16' | 'int8' | 'uint8' | 'int16' | 'int32' | 'int64' | 'bool'
  | 'float' | 'double' | 'half' | 'long' | 'int' | 'short';
export type Shape = number[];
export type Scalar = number | boolean;
export type TensorLike = Tensor | Scalar;
export type TypedArray = Float32Array | Float64Array | Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | BigInt64Array;
export type NestedArray = number | boolean | bigint | NestedArray[];
/** Python-style index items: number, null (None), '...' (Ellipsis), ':' / '1:5:2' / {start, stop, step} (slices),
 * boolean, a Tensor (integer or boolean) or an array of integers. */
export type IndexItem = number | null | '...' | string | { start?: number | null; stop?: number | null; step?: number | null } | boolean | Tensor | number[];

export interface LoadOptions {
  /** 'auto' (default: the core count, at most 8), a thread count, or 1 for the single-thread build */
  threads?: 'auto' | number;
  /** false: no console line about the build chosen */
  log?: boolean;
  print?: (s: string) => void;
  printErr?: (s: string) => void;
}
/** Loads the WebAssembly module (once) and returns the API. The pthreads build is used when
 * SharedArrayBuffer is available (Node, or a cross-origin isolated page), else the single-thread one. */
export function load(options?: LoadOptions): Promise<Torch>;
export default load;

export class CtorchError extends Error {
  /** the Python exception class: 'IndexError', 'TypeError', 'ValueError', 'NotImplementedError', 'RuntimeError', 'OutOfMemoryError' */
  readonly kind: string;
}

export interface CreateOptions { dtype?: DType | null; requiresGrad?: boolean }
export interface RandOptions extends CreateOptions { generator?: Generator | null }

export declare class Tensor {
  readonly shape: Shape;
  readonly ndim: number;
  readonly dtype: DType;
  readonly device: 'cpu';
  readonly isDisposed: boolean;
  readonly version: number;
  size(): Shape; size(dim: number): number;
  stride(): number[]; stride(dim: number): number;
  dim(): number;
  numel(): number;
  isContiguous(): boolean;
  isView(): boolean;
  isFloatingPoint(): boolean;
  storageOffset(): number;
  elementSize(): number;
  sharesStorage(other: Tensor): boolean;
  /** releases the memory now (idempotent) */
  dispose(): void;
  /** keeps the tensor alive past every enclosing scope */
  keep(): this;
  /** a copy of the elements as the dtype's typed array (float16/bfloat16: bit patterns; int64: BigInt64Array; bool: Uint8Array) */
  data(): TypedArray;
  dataSync(): TypedArray;
  toFloat32Array(): Float32Array;
  toFloat64Array(): Float64Array;
  tolist(): any;
  toArray(): any;
  item(): number | boolean;
  toString(): string;

  // autograd
  requiresGrad: boolean;
  requiresGrad_(flag?: boolean): this;
  readonly isLeaf: boolean;
  /** a new handle on .grad (dispose it or use a scope), null if none; assign null to clear */
  grad: Tensor | null;
  readonly gradFn: string | null;
  retainGrad(): this;
  detach(): Tensor;
  detach_(): this;
  backward(gradient?: Tensor | null, options?: { retainGraph?: boolean; createGraph?: boolean }): void;

  // elementwise
  add(other: TensorLike, options?: { alpha?: Scalar }): Tensor; add_(other: TensorLike, options?: { alpha?: Scalar }): this;
  sub(other: TensorLike, options?: { alpha?: Scalar }): Tensor; sub_(other: TensorLike, options?: { alpha?: Scalar }): this;
  mul(other: TensorLike): Tensor; mul_(other: TensorLike): this;
  div(other: TensorLike, options?: { roundingMode?: 'trunc' | 'floor' | null }): Tensor; div_(other: TensorLike, options?: { roundingMode?: 'trunc' | 'floor' | null }): this;
  pow(exponent: TensorLike): Tensor; pow_(exponent: TensorLike): this;
  remainder(o: TensorLike): Tensor; fmod(o: TensorLike): Tensor; floorDivide(o: TensorLike): Tensor;
  maximum(o: Tensor): Tensor; minimum(o: Tensor): Tensor; atan2(o: Tensor): Tensor;
  eq(o: TensorLike): Tensor; ne(o: TensorLike): Tensor; lt(o: TensorLike): Tensor; le(o: TensorLike): Tensor; gt(o: TensorLike): Tensor; ge(o: TensorLike): Tensor;
  logicalAnd(o: Tensor): Tensor; logicalOr(o: Tensor): Tensor; logicalXor(o: Tensor): Tensor; logicalNot(): Tensor;
  bitwiseAnd(o: TensorLike): Tensor; bitwiseOr(o: TensorLike): Tensor; bitwiseXor(o: TensorLike): Tensor; bitwiseNot(): Tensor;
  abs(): Tensor; neg(): Tensor; sign(): Tensor; exp(): Tensor; exp2(): Tensor; expm1(): Tensor; log(): Tensor; log2(): Tensor; log10(): Tensor; log1p(): Tensor;
  sqrt(): Tensor; rsqrt(): Tensor; sin(): Tensor; cos(): Tensor; tan(): Tensor; asin(): Tensor; acos(): Tensor; atan(): Tensor;
  sinh(): Tensor; cosh(): Tensor; tanh(): Tensor; asinh(): Tensor; acosh(): Tensor; atanh(): Tensor; sigmoid(): Tensor;
  erf(): Tensor; erfc(): Tensor; erfinv(): Tensor; lgamma(): Tensor; digamma(): Tensor;
  floor(): Tensor; ceil(): Tensor; round(options?: { decimals?: number }): Tensor; trunc(): Tensor; frac(): Tensor; reciprocal(): Tensor; square(): Tensor;
  relu(): Tensor; relu_(): this; relu6(): Tensor; silu(): Tensor; mish(): Tensor; gelu(options?: { approximate?: 'none' | 'tanh' }): Tensor;
  hardsigmoid(): Tensor; hardswish(): Tensor; selu(): Tensor; softsign(): Tensor; softplus(options?: { beta?: number; threshold?: number }): Tensor;
  leakyRelu(negativeSlope?: number): Tensor; elu(alpha?: number): Tensor; celu(alpha?: number): Tensor; hardtanh(min?: number, max?: number): Tensor;
  isnan(): Tensor; isinf(): Tensor; isfinite(): Tensor; nanToNum(options?: { nan?: number; posinf?: number; neginf?: number }): Tensor;
  clamp(min?: TensorLike | null, max?: TensorLike | null): Tensor; clamp_(min?: Scalar | null, max?: Scalar | null): this; clip(min?: TensorLike | null, max?: TensorLike | null): Tensor;
  where(condition: Tensor, other: TensorLike): Tensor;
  lerp(end: Tensor, weight: TensorLike): Tensor;
  addcmul(a: Tensor, b: Tensor, options?: { value?: Scalar }): Tensor; addcmul_(a: Tensor, b: Tensor, options?: { value?: Scalar }): this;
  addcdiv(a: Tensor, b: Tensor, options?: { value?: Scalar }): Tensor; addcdiv_(a: Tensor, b: Tensor, options?: { value?: Scalar }): this;
  isclose(o: Tensor, options?: { rtol?: number; atol?: number; equalNan?: boolean }): Tensor;
  allclose(o: Tensor, options?: { rtol?: number; atol?: number; equalNan?: boolean }): boolean;
  equal(o: Tensor): boolean;

  // reductions
  sum(dim?: number | number[] | null, options?: { keepdim?: boolean; dtype?: DType }): Tensor;
  mean(dim?: number | number[] | null, options?: { keepdim?: boolean; dtype?: DType }): Tensor;
  prod(dim?: number | null, options?: { keepdim?: boolean; dtype?: DType }): Tensor;
  max(): Tensor; max(dim: number, options?: { keepdim?: boolean }): [Tensor, Tensor] & { values: Tensor; indices: Tensor }; max(other: Tensor): Tensor;
  min(): Tensor; min(dim: number, options?: { keepdim?: boolean }): [Tensor, Tensor] & { values: Tensor; indices: Tensor }; min(other: Tensor): Tensor;
  amax(dim?: number | number[] | null, options?: { keepdim?: boolean }): Tensor; amin(dim?: number | number[] | null, options?: { keepdim?: boolean }): Tensor;
  argmax(dim?: number | null, options?: { keepdim?: boolean }): Tensor; argmin(dim?: number | null, options?: { keepdim?: boolean }): Tensor;
  var(dim?: number | number[] | null, options?: { keepdim?: boolean; correction?: number; unbiased?: boolean }): Tensor;
  std(dim?: number | number[] | null, options?: { keepdim?: boolean; correction?: number; unbiased?: boolean }): Tensor;
  norm(p?: number | 'fro', dim?: number | number[] | null, options?: { keepdim?: boolean }): Tensor;
  logsumexp(dim: number | number[], options?: { keepdim?: boolean }): Tensor;
  all(dim?: number | number[] | null, options?: { keepdim?: boolean }): Tensor; any(dim?: number | number[] | null, options?: { keepdim?: boolean }): Tensor;
  cumsum(dim: number, options?: { dtype?: DType }): Tensor; cumprod(dim: number, options?: { dtype?: DType }): Tensor;
  sort(dim?: number, options?: { descending?: boolean; stable?: boolean }): [Tensor, Tensor] & { values: Tensor; indices: Tensor };
  argsort(dim?: number, options?: { descending?: boolean; stable?: boolean }): Tensor;
  topk(k: number, dim?: number, options?: { largest?: boolean; sorted?: boolean }): [Tensor, Tensor] & { values: Tensor; indices: Tensor };
  median(): Tensor; median(dim: number, options?: { keepdim?: boolean }): [Tensor, Tensor];

  // linalg
  matmul(o: Tensor): Tensor; mm(o: Tensor): Tensor; bmm(o: Tensor): Tensor; mv(o: Tensor): Tensor; dot(o: Tensor): Tensor; outer(o: Tensor): Tensor;

  // shape and views
  view(...shape: number[]): Tensor; view(shape: Shape): Tensor;
  reshape(...shape: number[]): Tensor; reshape(shape: Shape): Tensor;
  permute(...dims: number[]): Tensor; permute(dims: number[]): Tensor;
  expand(...shape: number[]): Tensor; expand(shape: Shape): Tensor;
  repeat(...sizes: number[]): Tensor; tile(...sizes: number[]): Tensor; flip(...dims: number[]): Tensor;
  viewAs(o: Tensor): Tensor; reshapeAs(o: Tensor): Tensor; expandAs(o: Tensor): Tensor; broadcastTo(shape: Shape): Tensor;
  transpose(dim0: number, dim1: number): Tensor; t(): Tensor; readonly T: Tensor; readonly mT: Tensor;
  squeeze(dim?: number | null): Tensor; unsqueeze(dim: number): Tensor;
  flatten(startDim?: number, endDim?: number): Tensor; unflatten(dim: number, sizes: number[]): Tensor;
  narrow(dim: number, start: number, length: number): Tensor; select(dim: number, index: number): Tensor;
  slice(dim?: number, start?: number | null, end?: number | null, step?: number): Tensor;
  diagonal(options?: { offset?: number; dim1?: number; dim2?: number }): Tensor;
  unfold(dim: number, size: number, step: number): Tensor;
  movedim(src: number | number[], dst: number | number[]): Tensor;
  split(size: number | number[], dim?: number): Tensor[]; chunk(chunks: number, dim?: number): Tensor[]; unbind(dim?: number): Tensor[];
  roll(shifts: number | number[], dims?: number | number[] | null): Tensor;
  repeatInterleave(repeats: number, dim?: number | null): Tensor;
  tril(diagonal?: number): Tensor; triu(diagonal?: number): Tensor;
  contiguous(): Tensor; clone(): Tensor;
  to(dtype: DType | { dtype: DType }): Tensor; float(): Tensor; double(): Tensor; half(): Tensor; long(): Tensor; int(): Tensor; bool(): Tensor; bfloat16(): Tensor;
  type(): string; type(dtype: DType): Tensor;
  copy_(src: TensorLike): this; fill_(value: Scalar): this; zero_(): this;
  uniform_(from?: number, to?: number, options?: { generator?: Generator }): this;
  normal_(mean?: number, std?: number, options?: { generator?: Generator }): this;
  bernoulli_(p?: number, options?: { generator?: Generator }): this;
  exponential_(lambd?: number, options?: { generator?: Generator }): this;
  random_(from: number, to: number, options?: { generator?: Generator }): this;

  // indexing
  /** Python's x[items] */
  index(...items: IndexItem[]): Tensor;
  get(...items: IndexItem[]): Tensor;
  /** Python's x[items] = value */
  set(items: IndexItem | IndexItem[], value: TensorLike, options?: { accumulate?: boolean }): this;
  indexSelect(dim: number, index: Tensor): Tensor; gather(dim: number, index: Tensor): Tensor;
  scatter(dim: number, index: Tensor, src: TensorLike, options?: { reduce?: 'add' | 'multiply' }): Tensor;
  scatterAdd(dim: number, index: Tensor, src: Tensor): Tensor;
  maskedFill(mask: Tensor, value: TensorLike): Tensor; maskedFill_(mask: Tensor, value: Scalar): this; maskedSelect(mask: Tensor): Tensor;
  nonzero(options?: { asTuple?: boolean }): Tensor | Tensor[];

  softmax(dim: number, options?: { dtype?: DType }): Tensor;
  logSoftmax(dim: number, options?: { dtype?: DType }): Tensor;
  [key: string]: any;
}

export declare class Generator {
  constructor(seed?: number | bigint);
  manualSeed(seed: number | bigint): this;
  getState(): Uint8Array;
  setState(state: Uint8Array): this;
  dispose(): void;
}

export interface MemoryInfo {
  liveTensors: number; jsTensors: number; allocatedBytes: number; cachedBytes: number;
  peakAllocatedBytes: number; numAllocs: number; wasmBytes: number;
}

export declare class Module {
  training: boolean;
  forward(...inputs: any[]): any;
  /** m.call(x) is PyTorch's m(x) */
  call(...inputs: any[]): any;
  namedParameters(): [string, Tensor][];
  parameters(): Tensor[];
  namedBuffers(): [string, Tensor][];
  buffers(): Tensor[];
  namedChildren(): [string, Module][];
  children(): Module[];
  namedModules(): [string, Module][];
  modules(): Module[];
  registerBuffer(name: string, t: Tensor | null): void;
  registerParameter(name: string, t: Tensor | null): void;
  stateDict(): Record<string, Tensor>;
  loadStateDict(sd: Record<string, Tensor> | Map<string, Tensor>, options?: { strict?: boolean }): { missingKeys: string[]; unexpectedKeys: string[] };
  train(mode?: boolean): this;
  eval(): this;
  zeroGrad(setToNone?: boolean): void;
  requiresGrad_(flag?: boolean): this;
  numParameters(options?: { onlyTrainable?: boolean }): number;
  apply(fn: (m: Module) => void): this;
  dispose(): void;
  [key: string]: any;
}
/** A layer implemented by ctorch's C modules */
export declare class CModule extends Module {
  readonly weight: Tensor | null;
  readonly bias: Tensor | null;
  param(name: string): Tensor | null;
  buffer(name: string): Tensor | null;
  to(dtype: DType): this;
  forward(x: Tensor): Tensor;
}
type ConvOptions = { stride?: number | number[]; padding?: number | number[] | 'same' | 'valid'; dilation?: number | number[]; groups?: number; bias?: boolean; paddingMode?: 'zeros' | 'reflect' | 'replicate' | 'circular' };
type PoolOptions = { stride?: number | number[] | null; padding?: number | number[]; dilation?: number | number[]; ceilMode?: boolean };
type Reduction = 'none' | 'mean' | 'sum' | 'batchmean';

export interface Functional {
  relu(x: Tensor): Tensor; relu6(x: Tensor): Tensor; gelu(x: Tensor, o?: { approximate?: 'none' | 'tanh' }): Tensor; silu(x: Tensor): Tensor; mish(x: Tensor): Tensor;
  tanh(x: Tensor): Tensor; sigmoid(x: Tensor): Tensor; softplus(x: Tensor, o?: { beta?: number; threshold?: number }): Tensor; logsigmoid(x: Tensor): Tensor;
  leakyRelu(x: Tensor, negativeSlope?: number): Tensor; elu(x: Tensor, alpha?: number): Tensor; hardtanh(x: Tensor, min?: number, max?: number): Tensor;
  softmax(x: Tensor, dim: number, o?: { dtype?: DType }): Tensor; logSoftmax(x: Tensor, dim: number, o?: { dtype?: DType }): Tensor;
  dropout(x: Tensor, p?: number, training?: boolean): Tensor;
  linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor;
  conv1d(x: Tensor, w: Tensor, b?: Tensor | null, o?: { stride?: number; padding?: number | 'same' | 'valid'; dilation?: number; groups?: number }): Tensor;
  conv2d(x: Tensor, w: Tensor, b?: Tensor | null, o?: ConvOptions): Tensor;
  convTranspose2d(x: Tensor, w: Tensor, b?: Tensor | null, o?: { stride?: number | number[]; padding?: number | number[]; outputPadding?: number | number[]; groups?: number; dilation?: number | number[] }): Tensor;
  maxPool2d(x: Tensor, kernelSize: number | number[], o?: PoolOptions & { returnIndices?: boolean }): Tensor | [Tensor, Tensor];
  avgPool2d(x: Tensor, kernelSize: number | number[], o?: PoolOptions & { countIncludePad?: boolean; divisorOverride?: number | null }): Tensor;
  adaptiveAvgPool2d(x: Tensor, size: number | (number | null)[]): Tensor; adaptiveMaxPool2d(x: Tensor, size: number | (number | null)[]): Tensor;
  batchNorm(x: Tensor, runningMean: Tensor | null, runningVar: Tensor | null, o?: { weight?: Tensor; bias?: Tensor; training?: boolean; momentum?: number; eps?: number }): Tensor;
  layerNorm(x: Tensor, normalizedShape: number | number[], o?: { weight?: Tensor; bias?: Tensor; eps?: number }): Tensor;
  groupNorm(x: Tensor, numGroups: number, o?: { weight?: Tensor; bias?: Tensor; eps?: number }): Tensor;
  rmsNorm(x: Tensor, normalizedShape: number | number[], o?: { weight?: Tensor; eps?: number | null }): Tensor;
  embedding(idx: Tensor, weight: Tensor, o?: { paddingIdx?: number | null }): Tensor;
  interpolate(x: Tensor, o: { size?: number | number[]; scaleFactor?: number | number[]; mode?: 'nearest' | 'bilinear'; alignCorners?: boolean | null }): Tensor;
  scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, o?: { attnMask?: Tensor | null; dropoutP?: number; isCausal?: boolean; scale?: number | null }): Tensor;
  pad(x: Tensor, pad: number[], o?: { mode?: 'constant' | 'reflect' | 'replicate' | 'circular'; value?: number }): Tensor;
  oneHot(t: Tensor, numClasses?: number): Tensor;
  normalize(x: Tensor, o?: { p?: number; dim?: number; eps?: number }): Tensor;
  crossEntropy(input: Tensor, target: Tensor, o?: { weight?: Tensor | null; reduction?: Reduction; ignoreIndex?: number; labelSmoothing?: number }): Tensor;
  cross_entropy(input: Tensor, target: Tensor, o?: { weight?: Tensor | null; reduction?: Reduction; ignoreIndex?: number; labelSmoothing?: number }): Tensor;
  nllLoss(input: Tensor, target: Tensor, o?: { weight?: Tensor | null; reduction?: Reduction; ignoreIndex?: number }): Tensor;
  mseLoss(a: Tensor, b: Tensor, o?: { reduction?: Reduction }): Tensor; l1Loss(a: Tensor, b: Tensor, o?: { reduction?: Reduction }): Tensor;
  smoothL1Loss(a: Tensor, b: Tensor, o?: { reduction?: Reduction; beta?: number }): Tensor; huberLoss(a: Tensor, b: Tensor, o?: { reduction?: Reduction; delta?: number }): Tensor;
  binaryCrossEntropy(a: Tensor, b: Tensor, o?: { weight?: Tensor | null; reduction?: Reduction }): Tensor;
  binaryCrossEntropyWithLogits(a: Tensor, b: Tensor, o?: { weight?: Tensor | null; posWeight?: Tensor | null; reduction?: Reduction }): Tensor;
  klDiv(a: Tensor, b: Tensor, o?: { reduction?: Reduction; logTarget?: boolean }): Tensor;
  cosineSimilarity(a: Tensor, b: Tensor, o?: { dim?: number; eps?: number }): Tensor;
  pairwiseDistance(a: Tensor, b: Tensor, o?: { p?: number; eps?: number; keepdim?: boolean }): Tensor;
  [key: string]: any;
}

export interface NN {
  Module: typeof Module;
  Parameter(t: Tensor | NestedArray, requiresGrad?: boolean): Tensor;
  Sequential: new (...mods: Module[]) => Module & { length: number; at(i: number): Module; append(m: Module): any };
  ModuleList: new (mods?: Module[]) => Module & { length: number; at(i: number): Module; append(m: Module): any };
  Linear: new (inFeatures: number, outFeatures: number, o?: { bias?: boolean }) => CModule;
  Conv1d: new (inC: number, outC: number, kernelSize: number, o?: ConvOptions) => CModule;
  Conv2d: new (inC: number, outC: number, kernelSize: number | number[], o?: ConvOptions) => CModule;
  ConvTranspose2d: new (inC: number, outC: number, kernelSize: number | number[], o?: ConvOptions & { outputPadding?: number | number[] }) => CModule;
  BatchNorm1d: new (n: number, o?: { eps?: number; momentum?: number | null; affine?: boolean; trackRunningStats?: boolean }) => CModule;
  BatchNorm2d: new (n: number, o?: { eps?: number; momentum?: number | null; affine?: boolean; trackRunningStats?: boolean }) => CModule;
  LayerNorm: new (shape: number | number[], o?: { eps?: number; elementwiseAffine?: boolean }) => CModule;
  GroupNorm: new (groups: number, channels: number, o?: { eps?: number; affine?: boolean }) => CModule;
  Embedding: new (num: number, dim: number, o?: { paddingIdx?: number | null }) => CModule;
  MultiheadAttention: new (embedDim: number, numHeads: number, o?: { dropout?: number; bias?: boolean; batchFirst?: boolean }) => CModule & {
    forward(q: Tensor, k?: Tensor, v?: Tensor, o?: { keyPaddingMask?: Tensor | null; needWeights?: boolean; attnMask?: Tensor | null; averageAttnWeights?: boolean }): [Tensor, Tensor | null];
  };
  ReLU: new () => Module; ReLU6: new () => Module; GELU: new (o?: { approximate?: 'none' | 'tanh' }) => Module; SiLU: new () => Module; Mish: new () => Module;
  Tanh: new () => Module; Sigmoid: new () => Module; Hardswish: new () => Module; LeakyReLU: new (negativeSlope?: number) => Module; ELU: new (alpha?: number) => Module;
  Softplus: new (o?: { beta?: number; threshold?: number }) => Module; Softmax: new (dim?: number) => Module; LogSoftmax: new (dim?: number) => Module;
  Identity: new () => Module; Flatten: new (startDim?: number, endDim?: number) => Module; Unflatten: new (dim: number, sizes: number[]) => Module;
  Dropout: new (p?: number) => Module;
  MaxPool2d: new (kernelSize: number | number[], o?: PoolOptions) => Module;
  AvgPool2d: new (kernelSize: number | number[], o?: PoolOptions & { countIncludePad?: boolean }) => Module;
  AdaptiveAvgPool2d: new (size: number | (number | null)[]) => Module;
  CrossEntropyLoss: new (o?: { weight?: Tensor | null; reduction?: Reduction; ignoreIndex?: number; labelSmoothing?: number }) => Module;
  NLLLoss: new (o?: { reduction?: Reduction }) => Module; MSELoss: new (o?: { reduction?: Reduction }) => Module; L1Loss: new (o?: { reduction?: Reduction }) => Module;
  SmoothL1Loss: new (o?: { reduction?: Reduction; beta?: number }) => Module; HuberLoss: new (o?: { reduction?: Reduction; delta?: number }) => Module;
  BCELoss: new (o?: { reduction?: Reduction }) => Module; BCEWithLogitsLoss: new (o?: { reduction?: Reduction }) => Module; KLDivLoss: new (o?: { reduction?: Reduction; logTarget?: boolean }) => Module;
  functional: Functional;
  init: {
    calculateGain(nonlinearity: string, a?: number): number;
    uniform_(t: Tensor, a?: number, b?: number): Tensor; normal_(t: Tensor, mean?: number, std?: number): Tensor;
    constant_(t: Tensor, v: number): Tensor; zeros_(t: Tensor): Tensor; ones_(t: Tensor): Tensor;
    xavierUniform_(t: Tensor, gain?: number): Tensor; xavierNormal_(t: Tensor, gain?: number): Tensor;
    kaimingUniform_(t: Tensor, o?: { a?: number; mode?: 'fan_in' | 'fan_out'; nonlinearity?: string }): Tensor;
    kaimingNormal_(t: Tensor, o?: { a?: number; mode?: 'fan_in' | 'fan_out'; nonlinearity?: string }): Tensor;
    [key: string]: any;
  };
  utils: {
    clipGradNorm_(params: Tensor | Iterable<Tensor>, maxNorm: number, o?: { normType?: number | 'inf'; errorIfNonfinite?: boolean }): Tensor;
    clipGradValue_(params: Tensor | Iterable<Tensor>, clipValue: number): void;
    [key: string]: any;
  };
  [key: string]: any;
}

export interface OptimizerOptions {
  lr?: number; momentum?: number; dampening?: number; nesterov?: boolean; betas?: [number, number]; amsgrad?: boolean; eps?: number;
  weightDecay?: number; maximize?: boolean; alpha?: number; centered?: boolean; lrDecay?: number; initialAccumulatorValue?: number;
}
export type ParamGroup = OptimizerOptions & { params: Iterable<Tensor> };
export declare class Optimizer {
  constructor(kind: number, params: Iterable<Tensor> | ParamGroup[], options?: OptimizerOptions);
  readonly defaults: OptimizerOptions;
  step(closure?: (() => Tensor) | null): Tensor | null;
  zeroGrad(setToNone?: boolean): void;
  /** live: assigning paramGroups[0].lr changes the optimizer */
  readonly paramGroups: (OptimizerOptions & { lr: number })[];
  lr: number;
  state(param: Tensor, key: string): Tensor | null;
  stateDict(): Record<string, Tensor>;
  loadStateDict(sd: Record<string, Tensor>): void;
  dispose(): void;
}
type OptimizerClass = new (params: Iterable<Tensor> | ParamGroup[], options?: OptimizerOptions) => Optimizer;
export declare class LRScheduler {
  step(): void;
  getLastLr(): number[];
  readonly lastEpoch: number;
  dispose(): void;
}
export interface Optim {
  Optimizer: typeof Optimizer;
  SGD: OptimizerClass; Adam: OptimizerClass; AdamW: OptimizerClass; RMSprop: OptimizerClass; Adagrad: OptimizerClass;
  lrScheduler: {
    StepLR: new (opt: Optimizer, stepSize: number, o?: { gamma?: number }) => LRScheduler;
    MultiStepLR: new (opt: Optimizer, milestones: number[], o?: { gamma?: number }) => LRScheduler;
    ExponentialLR: new (opt: Optimizer, gamma: number) => LRScheduler;
    CosineAnnealingLR: new (opt: Optimizer, tMax: number, o?: { etaMin?: number }) => LRScheduler;
    LinearLR: new (opt: Optimizer, o?: { startFactor?: number; endFactor?: number; totalIters?: number }) => LRScheduler;
    OneCycleLR: new (opt: Optimizer, o: { maxLr: number; totalSteps?: number; epochs?: number; stepsPerEpoch?: number; pctStart?: number;
      annealStrategy?: 'cos' | 'linear'; cycleMomentum?: boolean; baseMomentum?: number; maxMomentum?: number; divFactor?: number; finalDivFactor?: number; threePhase?: boolean }) => LRScheduler;
  };
  lr_scheduler: Optim['lrScheduler'];
}

export interface GPTConfig { vocabSize: number; nPositions: number; nEmbd: number; nLayer: number; nHead: number; dropout?: number; layerNormEpsilon?: number }
export declare class GPT {
  constructor(config: GPTConfig, options?: { generator?: Generator | null });
  readonly config: Required<GPTConfig>;
  training: boolean;
  namedParameters(): [string, Tensor][];
  parameters(): Tensor[];
  numParameters(): number;
  train(mode?: boolean): this;
  eval(): this;
  forward(idx: Tensor, targets?: Tensor | null, options?: { training?: boolean; logits?: boolean; generator?: Generator | null }): { logits: Tensor | null; loss: Tensor | null };
  zeroGrad(setToNone?: boolean): void;
  stateDict(): Record<string, Tensor>;
  loadStateDict(sd: Record<string, Tensor>): void;
  newCache(batch?: number, maxLen?: number): { readonly length: number; reset(): void; forward(idx: Tensor, lastOnly?: boolean): Tensor; dispose(): void };
  static pickToken(logits: Float32Array | number[], sampling?: { temperature?: number; topK?: number; topP?: number }, u?: number): { token: number; probs: Float32Array };
  dispose(): void;
}

export interface Torch {
  readonly version: string;
  readonly info: { build: 'pthreads' | 'single-thread'; threads: number; simd: string; simdLevel: string; reason: string; isNode: boolean };
  Tensor: typeof Tensor;
  Generator: typeof Generator;
  CtorchError: typeof CtorchError;
  DTYPES: DType[];

  tensor(data: NestedArray | TypedArray | Tensor, options?: CreateOptions & { shape?: Shape }): Tensor;
  fromArray(data: NestedArray | TypedArray, options?: CreateOptions & { shape?: Shape }): Tensor;
  zeros(shape: Shape | number, o?: CreateOptions): Tensor; ones(shape: Shape | number, o?: CreateOptions): Tensor; empty(shape: Shape | number, o?: CreateOptions): Tensor;
  full(shape: Shape | number, value: Scalar, o?: CreateOptions): Tensor;
  arange(end: number, o?: CreateOptions): Tensor; arange(start: number, end: number, step?: number, o?: CreateOptions): Tensor;
  linspace(start: number, end: number, steps: number, o?: CreateOptions): Tensor;
  logspace(start: number, end: number, steps: number, base?: number, o?: CreateOptions): Tensor;
  eye(n: number, m?: number | CreateOptions, o?: CreateOptions): Tensor;
  zerosLike(t: Tensor, o?: CreateOptions): Tensor; onesLike(t: Tensor, o?: CreateOptions): Tensor; emptyLike(t: Tensor, o?: CreateOptions): Tensor;
  fullLike(t: Tensor, v: Scalar, o?: CreateOptions): Tensor;

  /** torch.manual_seed: the default generator's numbers equal PyTorch's CPU numbers */
  manualSeed(seed: number | bigint): void;
  seed(seed: number | bigint): void;
  initialSeed(): bigint;
  getRngState(): Uint8Array; setRngState(state: Uint8Array): void;
  rand(shape: Shape | number, o?: RandOptions): Tensor; randn(shape: Shape | number, o?: RandOptions): Tensor;
  randint(high: number, shape: Shape, o?: { dtype?: DType; generator?: Generator }): Tensor;
  randint(low: number, high: number, shape: Shape, o?: { dtype?: DType; generator?: Generator }): Tensor;
  randperm(n: number, o?: { dtype?: DType; generator?: Generator }): Tensor;
  randLike(t: Tensor, o?: RandOptions): Tensor; randnLike(t: Tensor, o?: RandOptions): Tensor;
  bernoulli(p: Tensor, o?: { generator?: Generator }): Tensor;
  multinomial(p: Tensor, numSamples: number, replacement?: boolean, o?: { generator?: Generator }): Tensor;

  noGrad<T>(fn: () => T): T; enableGrad<T>(fn: () => T): T; inferenceMode<T>(fn: () => T): T;
  isGradEnabled(): boolean; setGradEnabled(on: boolean): boolean;
  autograd: {
    grad(outputs: Tensor | Tensor[], inputs: Tensor | Tensor[], o?: { gradOutputs?: Tensor | (Tensor | null)[] | null; retainGraph?: boolean | null; createGraph?: boolean; allowUnused?: boolean }): (Tensor | null)[];
    backward(tensors: Tensor | Tensor[], grads?: (Tensor | null)[] | null, o?: { retainGraph?: boolean; createGraph?: boolean }): void;
  };

  /** Runs fn and releases every tensor created inside it except those returned (a tensor, or
   * tensors inside returned arrays / plain objects / Maps) and those kept (t.keep(), torch.keep). */
  scope<T>(fn: () => T): T;
  tidy<T>(fn: () => T): T;
  keep<T>(x: T): T;
  dispose(x: any): void;
  memory(): MemoryInfo;
  emptyCache(): void;
  getNumThreads(): number;
  /** at most the thread count chosen at load time */
  setNumThreads(n: number): void;
  getDefaultDtype(): DType; setDefaultDtype(d: 'float32' | 'float64'): void;
  promoteTypes(a: DType, b: DType): DType;
  isTensor(x: any): x is Tensor;

  nn: NN;
  optim: Optim;
  /** safetensors bytes of {name: tensor} (or a Module's state_dict) */
  save(tensors: Record<string, Tensor> | Map<string, Tensor> | Module, metadata?: Record<string, string> | null): Uint8Array;
  /** {name: tensor} from safetensors bytes */
  load(bytes: Uint8Array | ArrayBuffer): Record<string, Tensor>;
  safetensors: {
    save(tensors: Record<string, Tensor> | Map<string, Tensor> | Module, metadata?: Record<string, string> | null): Uint8Array;
    load(bytes: Uint8Array | ArrayBuffer): Record<string, Tensor>;
    loadWithMetadata(bytes: Uint8Array | ArrayBuffer): { tensors: Record<string, Tensor>; metadata: Record<string, string> };
  };
  models: { GPT: typeof GPT };

  // every op as a function of tensors (torch.add(a, b), torch.matmul(a, b), ...)
  add(a: TensorLike, b: TensorLike, o?: { alpha?: Scalar }): Tensor; sub(a: TensorLike, b: TensorLike, o?: { alpha?: Scalar }): Tensor;
  mul(a: TensorLike, b: TensorLike): Tensor; div(a: TensorLike, b: TensorLike, o?: { roundingMode?: 'trunc' | 'floor' | null }): Tensor;
  pow(a: TensorLike, b: TensorLike): Tensor; matmul(a: Tensor, b: Tensor): Tensor; einsum(equation: string, ...operands: Tensor[]): Tensor;
  where(cond: Tensor, a: TensorLike, b: TensorLike): Tensor;
  cat(ts: Tensor[], dim?: number): Tensor; stack(ts: Tensor[], dim?: number): Tensor;
  relu(x: Tensor): Tensor; softmax(x: Tensor, dim: number, o?: { dtype?: DType }): Tensor; logSoftmax(x: Tensor, dim: number, o?: { dtype?: DType }): Tensor;
  [op: string]: any;
}
