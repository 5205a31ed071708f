/* The WebGPU backend's kernels: WGSL generated for each call's shapes, strides and
 * attributes (constants in the text, so every pipeline is specialised to its shape and
 * cached by that text), dispatched into the open batch. Float32 only: WGSL has no
 * float64 (refused with a clear error), and integer tensors are supported where ops
 * move or index them (fill, copy, embedding indices). Every buffer is bound as
 * array<u32> and values are bitcast, so one buffer bound once serves tensors of any
 * dtype (in-place ops alias freely). Index math is u32: a tensor must fit one binding.
 * Ops without a kernel here fail through the dispatcher's NotImplemented error. */
#include "webgpu_backend.h"
#include "ctorch/webgpu.h" /* ct_webgpu(): the convolutions' scratch */
#include "ops/conv_geom.h"
#include "webgpu_attention.h" /* sdpa_flash in WGSL */
#include "webgpu_tune.h"      /* the GEMM tile chosen by measurement */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- a string builder ---- */
typedef struct {
  char *p;
  size_t n, cap;
  bool oom;
} sb;
static void sbf(sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sbf(sb *s, const char *fmt, ...) {
  if (s->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(s->p ? s->p + s->n : NULL, s->p ? s->cap - s->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      s->oom = true;
      return;
    }
    if (s->p && s->n + (size_t)k < s->cap) {
      s->n += (size_t)k;
      return;
    }
    size_t nc = (s->cap ? s->cap * 2 : 4096) + (size_t)k;
    char *q = realloc(s->p, nc);
    if (!q) {
      s->oom = true;
      return;
    }
    s->p = q;
    s->cap = nc;
  }
}

/* A float32 literal (WGSL has none for inf/nan: bit patterns then). */
static const char *flit(double v, char *buf) {
  float f = (float)v;
  if (isfinite(f)) snprintf(buf, 40, "%.9e", (double)f);
  else {
    uint32_t u;
    memcpy(&u, &f, 4);
    snprintf(buf, 40, "bitcast<f32>(wzero | 0x%08xu)", u);
  }
  return buf;
}

/* ---- errors worded for the parity harness's "no kernel" count ---- */
static ct_status unsupported(const ct_call *c, const char *why) {
  /* CT_WEBGPU_DEBUG=1 prints each refusal with its reason (the parity count keeps only the op) */
  const char *dbg = getenv("CT_WEBGPU_DEBUG");
  if (dbg && *dbg == '1') fprintf(stderr, "webgpu refused %s: %s\n", ct_op_info_of(c->op)->id, why);
  return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::%s' with arguments from the 'WebGPU' backend. %s",
                ct_op_info_of(c->op)->id, why);
}
static ct_status need_f32(const ct_call *c, const ct_tensor *t) {
  if (t->dtype == CT_FLOAT32) return CT_OK;
  if (t->dtype == CT_FLOAT64)
    return unsupported(c, "WGSL has no float64: the WebGPU backend computes in float32 (move float64 tensors with "
                          ".to(float32) first)");
  char m[160];
  snprintf(m, sizeof m, "The WebGPU backend computes this op in float32 only (got %s).", ct_dtype_name(t->dtype));
  return unsupported(c, m);
}

/* float32, or bool (comparisons, masks) */
static ct_status need_f32b(const ct_call *c, const ct_tensor *t) {
  return t->dtype == CT_BOOL ? CT_OK : need_f32(c, t);
}

/* ---- bindings: one per distinct buffer ---- */
typedef struct {
  wg_buf *b[WG_MAX_BINDINGS];
  int n;
  int atomic_idx; /* the flag buffer, bound as array<atomic<u32>> (-1: none) */
  int atomic_idx2; /* a second one, + 1 (0: none; the split-K convolution's counters) */
} bindset;
static int bind_buf(bindset *bs, wg_buf *w) {
  for (int i = 0; i < bs->n; i++)
    if (bs->b[i] == w) return i;
  if (bs->n == WG_MAX_BINDINGS) return -1;
  bs->b[bs->n] = w;
  return bs->n++;
}
static int bind_of(bindset *bs, const ct_tensor *t) { return bind_buf(bs, t->storage->data); }
static void emit_bindings(sb *s, const bindset *bs) {
  /* inf and NaN constants are refused in WGSL constant expressions: or-ing a private
   * zero makes them run-time values */
  sbf(s, "var<private> wzero: u32 = 0u;\n");
  /* int64 as f32: exact through i32 when the high word only extends the sign */
  sbf(s, "fn wi64(lo: u32, hi: u32) -> f32 {\n"
         "  if (hi == select(0u, 0xffffffffu, bitcast<i32>(lo) < 0)) { return f32(bitcast<i32>(lo)); }\n"
         "  return f32(bitcast<i32>(hi)) * 4294967296.0 + f32(lo);\n}\n");
  for (int i = 0; i < bs->n; i++) {
    if (i == bs->atomic_idx || i + 1 == bs->atomic_idx2) sbf(s, "@group(0) @binding(%d) var<storage, read_write> b%d: array<atomic<u32>>;\n", i, i);
    else sbf(s, "@group(0) @binding(%d) var<storage, read_write> b%d: array<u32>;\n", i, i);
  }
}

/* words per element, 0 if the dtype has no WebGPU representation here */
static int words_of(ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32:
    case CT_INT32: return 1;
    case CT_INT64: return 2;
    default: return 0;
  }
}

/* Checks that t's elements lie inside one binding of its buffer (u32 index math). */
static ct_status check_extent(const ct_tensor *t) {
  int64_t hi = t->offset;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] > 0) hi += (t->shape[d] - 1) * t->stride[d];
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] == 0) return CT_OK;
  uint64_t bytes = (uint64_t)(hi + 1) * ct_dtype_size(t->dtype);
  wg_buf *w = t->storage->data;
  uint64_t lim = wg_max_binding();
  if (bytes > w->size || bytes > lim || (uint64_t)(hi + 1) * 2 >= ((uint64_t)1 << 32))
    return CT_ERR(CT_ERR_RUNTIME, "WebGPU: a tensor of %llu bytes does not fit one storage binding (%llu bytes)",
                  (unsigned long long)bytes, (unsigned long long)lim);
  return CT_OK;
}

/* ---- geometry: coalesced dims shared by nt tensors ---- */
typedef struct {
  int nd, nt;
  int64_t sh[CT_MAX_DIMS];
  int64_t st[6][CT_MAX_DIMS];
} geom;
/* nd dims of shape sh with per-tensor strides st[k] (row-major order kept): drops size-1
 * dims and merges neighbours that are contiguous in every tensor. */
static void geom_make(geom *g, int nd, const int64_t *sh, int nt, int64_t st[][CT_MAX_DIMS]) {
  g->nt = nt;
  g->nd = 0;
  for (int d = 0; d < nd; d++)
    if (sh[d] == 0) return; /* an empty index space: the offsets are never used */
  for (int d = 0; d < nd; d++) {
    if (sh[d] == 1) continue;
    if (g->nd > 0) {
      int p = g->nd - 1;
      bool merge = true;
      for (int k = 0; k < nt && merge; k++) merge = g->st[k][p] == st[k][d] * sh[d];
      if (merge) {
        g->sh[p] *= sh[d];
        for (int k = 0; k < nt; k++) g->st[k][p] = st[k][d];
        continue;
      }
    }
    g->sh[g->nd] = sh[d];
    for (int k = 0; k < nt; k++) g->st[k][g->nd] = st[k][d];
    g->nd++;
  }
}

/* Emits `var <pfx>k: u32 = base_k;` for each tensor, then adds coord*stride for the
 * row-major coordinates of linear index `idx` over g's dims. */
static void emit_offsets(sb *s, const char *idx, const geom *g, const int64_t *base, const char *pfx) {
  for (int k = 0; k < g->nt; k++) sbf(s, "  var %s%d: u32 = %lldu;\n", pfx, k, (long long)base[k]);
  if (g->nd == 0) return;
  sbf(s, "  var %sq: u32 = %s;\n", pfx, idx);
  for (int d = g->nd - 1; d >= 0; d--) {
    if (d > 0) sbf(s, "  { let c = %sq %% %lldu; %sq = %sq / %lldu;\n", pfx, (long long)g->sh[d], pfx, pfx, (long long)g->sh[d]);
    else sbf(s, "  { let c = %sq;\n", pfx);
    for (int k = 0; k < g->nt; k++)
      if (g->st[k][d]) sbf(s, "    %s%d = %s%d + c * %lldu;\n", pfx, k, pfx, k, (long long)g->st[k][d]);
    sbf(s, "  }\n");
  }
}

/* WGSL: the element at index expression `o` of binding bi with dtype dt, as f32. */
static void load_f32(char *out, size_t n, int bi, ct_dtype dt, const char *o) {
  if (dt == CT_FLOAT32) snprintf(out, n, "bitcast<f32>(b%d[%s])", bi, o);
  else if (dt == CT_INT32) snprintf(out, n, "f32(bitcast<i32>(b%d[%s]))", bi, o);
  else if (dt == CT_BOOL) snprintf(out, n, "f32((b%d[(%s) >> 2u] >> (((%s) & 3u) * 8u)) & 0xffu)", bi, o, o);
  else snprintf(out, n, "wi64(b%d[2u * (%s)], b%d[2u * (%s) + 1u])", bi, o, bi, o);
}
/* Stores f32 expression v into the element at o. */
static void emit_store_f32(sb *s, int bi, ct_dtype dt, const char *o, const char *v) {
  if (dt == CT_FLOAT32) sbf(s, "  b%d[%s] = bitcast<u32>(%s);\n", bi, o, v);
  else if (dt == CT_INT32) sbf(s, "  b%d[%s] = bitcast<u32>(i32(%s));\n", bi, o, v);
  else
    sbf(s, "  { let t = i32(%s); b%d[2u * (%s)] = bitcast<u32>(t); b%d[2u * (%s) + 1u] = select(0u, 0xffffffffu, t < 0); }\n",
        v, bi, o, bi, o);
}

/* erfc (the pointwise shaders' and the GEMM's GELU output pass) */
#define WGSL_ERFC \
  "fn werfc(x: f32) -> f32 {\n" \
  "  let z = abs(x);\n" \
  "  let t = 1.0 / (1.0 + 0.5 * z);\n" \
  "  let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +\n" \
  "          t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));\n" \
  "  return select(2.0 - r, r, x >= 0.0);\n" \
  "}\n"
/* helpers every pointwise shader carries (unused functions cost nothing) */
static const char *WGSL_MATH =
    "fn wisnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n"
    /* x != 0 by its bits: NaN counts as nonzero (C's bool), whatever the compiler does with NaN compares */
    "fn wnz(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) != 0u; }\n"
    /* signed 64-bit compare of (lo, hi) words: -1, 0, 1 */
    "fn wc64(a: vec2<u32>, b: vec2<u32>) -> i32 {\n"
    "  let ah = bitcast<i32>(a.y); let bh = bitcast<i32>(b.y);\n"
    "  if (ah != bh) { return select(1, -1, ah < bh); }\n"
    "  if (a.x != b.x) { return select(1, -1, a.x < b.x); }\n"
    "  return 0;\n}\n"
    WGSL_ERFC
    "fn werf(x: f32) -> f32 {\n"
    "  if (abs(x) < 0.5) {\n"
    "    let y = x * x;\n"
    "    return x * (1.1283791670955126 + y * (-0.3761263890318375 + y * (0.1128379167095513 + y * (-0.0268661706451312 +\n"
    "           y * (0.0052239776254421 + y * (-0.0008548327023451 + y * 0.00012055332981789))))));\n"
    "  }\n"
    "  return select(werfc(-x) - 1.0, 1.0 - werfc(x), x > 0.0);\n"
    "}\n"
    "fn wlog1p(x: f32) -> f32 { let u = 1.0 + x; if (u == 1.0 || wisnan(x)) { return x; } if (u == 0.0 || u > 3.4028234663852886e38) { return wlog(u); } return log(u) * x / (u - 1.0); }\n"
    "fn wexpm1(x: f32) -> f32 {\n"
    "  if (wisnan(x) || abs(x) > 0.5) { return wexp(x) - 1.0; }\n"
    "  let u = exp(x); if (u == 1.0) { return x; } return (u - 1.0) * x / log(u);\n"
    "}\n"
    /* sin and cos of our own: Vulkan lets the built-ins err by 2^-11 (SwiftShader does);
     * Cody-Waite reduction by pi/2 in three parts, then Cephes' polynomials on [-pi/4, pi/4] */
    "fn wsincos(x: f32) -> vec2<f32> {\n"
    "  let q = round(x * 0.6366197723675814);\n"
    "  let r = ((x - q * 1.5703125) - q * 4.8375129699707031e-4) - q * 7.5497899548918822e-8;\n"
    "  let z = r * r;\n"
    "  let s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * (-1.9515295891e-4)));\n"
    "  let c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));\n"
    "  let k = u32(i32(q) & 3);\n"
    "  var v = vec2<f32>(s, c);\n"
    "  if (k == 1u) { v = vec2<f32>(c, -s); } else if (k == 2u) { v = vec2<f32>(-s, -c); } else if (k == 3u) { v = vec2<f32>(-c, s); }\n"
    "  return v;\n"
    "}\n"
    /* IEEE special values, which Vulkan's built-ins need not honour (SwiftShader does not) */
    "fn wnan() -> f32 { return bitcast<f32>(wzero | 0x7fc00000u); }\n"
    "fn wexp(x: f32) -> f32 { if (wisnan(x)) { return x; } return exp(x); }\n"
    "fn wlog(x: f32) -> f32 {\n"
    "  if (wisnan(x) || x < 0.0) { return wnan(); }\n"
    "  if (x == 0.0) { return bitcast<f32>(wzero | 0xff800000u); }\n"
    "  if (x > 3.4028234663852886e38) { return x; }\n"
    "  return log(x);\n"
    "}\n"
    "fn wsqrt(x: f32) -> f32 { if (wisnan(x) || x < 0.0) { return wnan(); } return sqrt(x); }\n"
    "fn watan2(y: f32, x: f32) -> f32 {\n"
    "  if (wisnan(x) || wisnan(y)) { return x + y; }\n"
    "  if (y == 0.0) {\n"
    "    let neg = (bitcast<u32>(x) >> 31u) == 1u;\n"
    "    return select(y, select(3.14159274, -3.14159274, (bitcast<u32>(y) >> 31u) == 1u), neg);\n"
    "  }\n"
    "  return atan2(y, x);\n"
    "}\n"
    "fn wtanh(x: f32) -> f32 { if (wisnan(x)) { return x; } return tanh(clamp(x, -15.0, 15.0)); }\n"
    "fn wpow(a: f32, b: f32) -> f32 {\n"
    "  if (b == 0.0) { return 1.0; }\n"
    "  if (b == 1.0) { return a; }\n"
    "  if (b == 2.0) { return a * a; }\n"
    "  if (wisnan(a) || wisnan(b)) { return a + b; }\n"
    "  if (a == 0.0) { return select(bitcast<f32>(wzero | 0x7f800000u), 0.0, b > 0.0); }\n"
    "  let m = exp2(b * log2(abs(a)));\n"
    "  if (a > 0.0) { return m; }\n"
    "  if (floor(b) != b) { return bitcast<f32>(wzero | 0x7fc00000u); }\n"
    "  let odd = abs(b) < 16777216.0 && (i32(abs(b)) & 1) == 1;\n"
    "  return select(m, -m, odd);\n"
    "}\n";

/* ---- elementwise launcher ---- */
static void grid(int64_t groups, uint32_t *gx, uint32_t *gy) {
  uint32_t mg = wg_max_groups();
  if (groups <= (int64_t)mg) {
    *gx = (uint32_t)groups;
    *gy = 1;
  } else {
    *gx = mg;
    *gy = (uint32_t)((groups + mg - 1) / mg);
  }
}

/* Float parameters of the next elementwise kernel (set under the lock by its caller):
 * values that change from call to call (an optimizer's step size, add's alpha) come in
 * a parameter buffer read as bitcast<f32>(pr[k]) rather than as literals, so that a
 * training loop compiles its pipelines once instead of at every step. */
static float ew_pf[4];
static int ew_npf;
static bool uses_params(const char *expr, const char *pre) {
  return ew_npf > 0 && ((expr && strstr(expr, "pr[")) || (pre && strstr(pre, "pr[")));
}
static void emit_params(sb *s, const bindset *bs) {
  sbf(s, "@group(0) @binding(%d) var<storage, read> pr: array<u32>;\n", bs->n);
}

/* Compiles and dispatches; takes ownership of the source text. */
static ct_status launch_p(sb *s, bindset *bs, uint32_t gx, uint32_t gy, uint32_t gz, bool params) {
  if (s->oom) {
    free(s->p);
    return CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
  }
  wg_pipe *p = wg_pipeline(s->p);
  free(s->p);
  if (!p) return ct_last_status();
  if (params) {
    uint32_t w[4];
    memcpy(w, ew_pf, sizeof w);
    return wg_dispatch_p(p, bs->n, bs->b, w, ew_npf, gx, gy, gz);
  }
  return wg_dispatch(p, bs->n, bs->b, gx, gy, gz);
}
static ct_status launch(sb *s, bindset *bs, uint32_t gx, uint32_t gy, uint32_t gz) { return launch_p(s, bs, gx, gy, gz, false); }

/* The kernel's frame: readiness, lock. */
#define WG_BEGIN(c)              \
  do {                           \
    CT_TRY(wg_ready());          \
  } while (0)

/* Elementwise over out = ts[0] and inputs ts[1..nt): `mode` 0: f32 expression `expr`
 * over x1..x{nt-1}; 1: raw word copy of ts[1]; 2: constant words w0/w1; 3: masked constant
 * words; 4: int64 ts[1] + ts[2] (w0 = 1: minus). */
static bool same_geom(const ct_tensor *a, const ct_tensor *b) {
  if (a->offset != b->offset || a->ndim != b->ndim || ct_dtype_size(a->dtype) != ct_dtype_size(b->dtype)) return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->stride[d] != b->stride[d])) return false;
  return true;
}

/* Whether distinct indices of t reach distinct elements (sufficient test: with dims sorted
 * by stride, each stride exceeds the span of the smaller ones). */
static bool injective(const ct_tensor *t) {
  int64_t st[CT_MAX_DIMS], sh[CT_MAX_DIMS];
  int n = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] == 0) return true;
    if (t->shape[d] == 1) continue;
    st[n] = t->stride[d];
    sh[n++] = t->shape[d];
  }
  for (int a = 1; a < n; a++)
    for (int b = a; b > 0 && st[b] < st[b - 1]; b--) {
      int64_t x = st[b]; st[b] = st[b - 1]; st[b - 1] = x;
      x = sh[b]; sh[b] = sh[b - 1]; sh[b - 1] = x;
    }
  int64_t span = 0; /* largest offset reachable with the smaller dims */
  for (int d = 0; d < n; d++) {
    if (st[d] <= span) return false;
    span += st[d] * (sh[d] - 1);
  }
  return true;
}

static ct_status ew_run(int nt, ct_tensor *const *ts, int mode, const char *expr, uint32_t w0, uint32_t w1,
                        const char *pre) {
  ct_tensor *o = ts[0];
  int64_t n = ct_numel(o);
  if (n == 0) return CT_OK;
  /* an input that shares the output's storage with another layout: threads would read
   * what others already wrote, so compute into a temporary and copy (the CPU's order) */
  for (int k = 1; k < nt; k++)
    if (ts[k]->storage == o->storage && !same_geom(ts[k], o)) {
      ct_tensor *tmp = ct_tensor_new(o->ndim, o->shape, o->dtype, o->storage->device);
      if (!tmp) return ct_last_status();
      ct_tensor *t2[6];
      for (int j = 0; j < nt; j++) t2[j] = ts[j];
      t2[0] = tmp;
      ct_status st = ew_run(nt, t2, mode, expr, w0, w1, pre);
      ct_tensor *cp[2] = {o, tmp};
      if (st == CT_OK) st = ew_run(2, cp, 1, NULL, 0, 0, NULL);
      ct_release(tmp);
      return st;
    }
  if (n >= ((int64_t)1 << 32)) return CT_ERR(CT_ERR_RUNTIME, "WebGPU: %lld elements exceed u32 indexing", (long long)n);
  for (int k = 0; k < nt; k++) CT_TRY(check_extent(ts[k]));
  bindset bs = {{0}, 0, -1};
  int bi[6];
  for (int k = 0; k < nt; k++) bi[k] = bind_of(&bs, ts[k]);
  int64_t st[6][CT_MAX_DIMS], base[6];
  for (int k = 0; k < nt; k++) {
    for (int d = 0; d < o->ndim; d++) st[k][d] = ts[k]->stride[d];
    base[k] = ts[k]->offset;
  }
  geom g;
  geom_make(&g, o->ndim, o->shape, nt, st);
  if (o->dtype == CT_BOOL) {
    /* bytes in u32 words: a thread owns one output word and fills its (up to) four
     * elements, keeping the bytes outside the tensor; needs a contiguous output */
    if (mode != 0 || !ct_is_contiguous(o))
      return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run this op with arguments from the 'WebGPU' backend: a bool "
                                            "output must be contiguous there.");
    int64_t w0i = o->offset / 4, w1i = (o->offset + n - 1) / 4, nw = w1i - w0i + 1;
    uint32_t gx, gy;
    grid((nw + 255) / 256, &gx, &gy);
    sb s = {0};
    emit_bindings(&s, &bs);
    bool usep = uses_params(expr, pre);
    if (usep) emit_params(&s, &bs);
    sbf(&s, "%s", WGSL_MATH);
    if (pre) sbf(&s, "%s", pre);
    sbf(&s, "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
    sbf(&s, "  let wi = (wid.y * %uu + wid.x) * 256u + li;\n  if (wi >= %lldu) { return; }\n", gx, (long long)nw);
    sbf(&s, "  let wb = %lldu + wi;\n  var word: u32 = b%d[wb];\n", (long long)w0i, bi[0]);
    sbf(&s, "  for (var j: u32 = 0u; j < 4u; j = j + 1u) {\n    let bp = wb * 4u + j;\n");
    sbf(&s, "    if (bp < %lldu || bp >= %lldu) { continue; }\n    let i = bp - %lldu;\n", (long long)o->offset,
        (long long)(o->offset + n), (long long)o->offset);
    emit_offsets(&s, "i", &g, base, "o");
    char buf[256];
    for (int k = 1; k < nt; k++) {
      char oo[16];
      snprintf(oo, sizeof oo, "o%d", k);
      load_f32(buf, sizeof buf, bi[k], ts[k]->dtype, oo);
      sbf(&s, "  let x%d = %s;\n", k, buf);
      if (ts[k]->dtype == CT_INT64) sbf(&s, "  let q%d = vec2<u32>(b%d[2u * %s], b%d[2u * %s + 1u]);\n", k, bi[k], oo, bi[k], oo);
      else if (ts[k]->dtype == CT_INT32)
        sbf(&s, "  let q%d = vec2<u32>(b%d[%s], select(0u, 0xffffffffu, bitcast<i32>(b%d[%s]) < 0));\n", k, bi[k], oo, bi[k], oo);
    }
    /* bool(v): nonzero, NaN included */
    sbf(&s, "  let v: f32 = %s;\n", expr);
    sbf(&s, "  word = (word & ~(0xffu << (j * 8u))) | (select(0u, 1u, wnz(v)) << (j * 8u));\n  }\n");
    sbf(&s, "  b%d[wb] = word;\n}\n", bi[0]);
    return launch_p(&s, &bs, gx, gy, 1, usep);
  }
  /* an output whose elements repeat (a gradient accumulated through an overlapping
   * view): one invocation walks the elements in order, as the CPU does */
  bool serial = !injective(o);
  const char *dbg = getenv("CT_WEBGPU_DEBUG");
  if (serial && dbg && *dbg == '1') fprintf(stderr, "webgpu: serial elementwise kernel over %lld elements\n", (long long)n);
  int64_t groups = serial ? 1 : (n + 255) / 256;
  uint32_t gx, gy;
  grid(groups, &gx, &gy);
  sb s = {0};
  emit_bindings(&s, &bs);
  bool usep = mode == 0 && uses_params(expr, pre);
  if (usep) emit_params(&s, &bs);
  if (mode == 0 || mode == 3) sbf(&s, "%s", WGSL_MATH);
  if (pre) sbf(&s, "%s", pre);
  if (serial) {
    sbf(&s, "@compute @workgroup_size(1)\nfn main() {\n  for (var i: u32 = 0u; i < %lldu; i = i + 1u) { body(i); }\n}\n",
        (long long)n);
    sbf(&s, "fn body(i: u32) {\n");
  } else {
    sbf(&s, "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
    sbf(&s, "  let i = (wid.y * %uu + wid.x) * 256u + li;\n  if (i >= %lldu) { return; }\n", gx, (long long)n);
  }
  emit_offsets(&s, "i", &g, base, "o");
  if (mode == 0) {
    char buf[256];
    for (int k = 1; k < nt; k++) {
      char oo[16];
      snprintf(oo, sizeof oo, "o%d", k);
      load_f32(buf, sizeof buf, bi[k], ts[k]->dtype, oo);
      sbf(&s, "  let x%d = %s;\n", k, buf);
      if (ts[k]->dtype == CT_INT64) sbf(&s, "  let q%d = vec2<u32>(b%d[2u * %s], b%d[2u * %s + 1u]);\n", k, bi[k], oo, bi[k], oo);
      else if (ts[k]->dtype == CT_INT32)
        sbf(&s, "  let q%d = vec2<u32>(b%d[%s], select(0u, 0xffffffffu, bitcast<i32>(b%d[%s]) < 0));\n", k, bi[k], oo, bi[k], oo);
    }
    sbf(&s, "  let v: f32 = %s;\n", expr);
    emit_store_f32(&s, bi[0], o->dtype, "o0", "v");
  } else if (mode == 1) { /* same words, or int32 <-> int64 */
    int wo = words_of(o->dtype), wi = words_of(ts[1]->dtype);
    if (wo == 1 && wi == 1) sbf(&s, "  b%d[o0] = b%d[o1];\n", bi[0], bi[1]);
    else if (wo == 2 && wi == 2)
      sbf(&s, "  b%d[2u * o0] = b%d[2u * o1];\n  b%d[2u * o0 + 1u] = b%d[2u * o1 + 1u];\n", bi[0], bi[1], bi[0], bi[1]);
    else if (wo == 1) sbf(&s, "  b%d[o0] = b%d[2u * o1];\n", bi[0], bi[1]); /* int64 -> int32 wraps, as C++ */
    else
      sbf(&s, "  { let w = b%d[o1]; b%d[2u * o0] = w; b%d[2u * o0 + 1u] = select(0u, 0xffffffffu, bitcast<i32>(w) < 0); }\n",
          bi[1], bi[0], bi[0]);
  } else if (mode == 3) { /* ts = {o, x, mask}, x of o's dtype: mask ? the constant words : x's words */
    char m[256];
    load_f32(m, sizeof m, bi[2], ts[2]->dtype, "o2");
    if (words_of(o->dtype) == 1) sbf(&s, "  b%d[o0] = select(b%d[o1], %uu, wnz(%s));\n", bi[0], bi[1], w0, m);
    else
      sbf(&s, "  { let f = wnz(%s); b%d[2u * o0] = select(b%d[2u * o1], %uu, f); b%d[2u * o0 + 1u] = select(b%d[2u * o1 + 1u], %uu, f); }\n",
          m, bi[0], bi[1], w0, bi[0], bi[1], w1);
  } else if (mode == 4) { /* int64 o = a + b (w0 = 1: a - b), two's complement with the carry */
    sbf(&s, "  let a = vec2<u32>(b%d[2u * o1], b%d[2u * o1 + 1u]);\n  var c = vec2<u32>(b%d[2u * o2], b%d[2u * o2 + 1u]);\n",
        bi[1], bi[1], bi[2], bi[2]);
    if (w0) sbf(&s, "  c = vec2<u32>(~c.x + 1u, ~c.y + select(0u, 1u, c.x == 0u));\n");
    sbf(&s, "  let lo = a.x + c.x;\n  b%d[2u * o0] = lo;\n  b%d[2u * o0 + 1u] = a.y + c.y + select(0u, 1u, lo < a.x);\n",
        bi[0], bi[0]);
  } else {
    if (words_of(o->dtype) == 1) sbf(&s, "  b%d[o0] = %uu;\n", bi[0], w0);
    else sbf(&s, "  b%d[2u * o0] = %uu;\n  b%d[2u * o0 + 1u] = %uu;\n", bi[0], w0, bi[0], w1);
  }
  sbf(&s, "}\n");
  return launch_p(&s, &bs, gx, gy, 1, usep);
}

/* ---- fill, copy ---- */
static ct_status k_fill(const ct_call *c) {
  WG_BEGIN(c);
  ct_tensor *o = c->out[0];
  if (!words_of(o->dtype)) return need_f32(c, o);
  ct_scalar v = c->a.s[0];
  uint32_t w0 = 0, w1 = 0;
  if (o->dtype == CT_FLOAT32) {
    float f = (float)(v.kind == CT_SCALAR_FLOAT ? v.f : (double)v.i);
    memcpy(&w0, &f, 4);
  } else {
    int64_t i = v.kind == CT_SCALAR_FLOAT ? (int64_t)v.f : v.i;
    uint64_t u = (uint64_t)i;
    w0 = (uint32_t)u;
    w1 = (uint32_t)(u >> 32);
  }
  wg_lock();
  ct_tensor *ts[1] = {o};
  ct_status st = ew_run(1, ts, 2, NULL, w0, w1, NULL);
  wg_unlock();
  return st;
}

/* o = x converted (expects the lock held and the dtypes checked) */
static ct_status copy_run(ct_tensor *o, ct_tensor *x) {
  ct_tensor *ts[2] = {o, x};
  if (o->dtype == CT_BOOL || x->dtype == CT_BOOL) return ew_run(2, ts, 0, "x1", 0, 0, NULL); /* 0/1, nonzero */
  if (o->dtype == CT_FLOAT32 && x->dtype != CT_FLOAT32) return ew_run(2, ts, 0, "x1", 0, 0, NULL);
  if (x->dtype == CT_FLOAT32 && o->dtype != CT_FLOAT32) return ew_run(2, ts, 0, "x1", 0, 0, NULL); /* truncates */
  return ew_run(2, ts, 1, NULL, 0, 0, NULL); /* the same dtype, or int32 <-> int64 */
}
static bool copyable(ct_dtype dt) { return words_of(dt) || dt == CT_BOOL; }

static ct_status k_copy(const ct_call *c) {
  WG_BEGIN(c);
  ct_tensor *o = c->out[0], *x = c->in[0];
  if (!copyable(o->dtype)) return need_f32(c, o);
  if (!copyable(x->dtype)) return need_f32(c, x);
  /* bool <-> int64 goes through f32, exact for 0/1 and for nonzero-ness */
  if (o->dtype == CT_BOOL && !ct_is_contiguous(o)) return unsupported(c, "A bool destination must be contiguous.");
  wg_lock();
  ct_status st = copy_run(o, x);
  wg_unlock();
  return st;
}

/* cat along k0: each input (a.i[i] >= 0) copied into its slice of the output */
static ct_status k_cat(const ct_call *c) {
  WG_BEGIN(c);
  ct_tensor *o = c->out[0];
  int dim = (int)c->a.k[0];
  if (!words_of(o->dtype)) return need_f32(c, o);
  for (int i = 0; i < c->n_in; i++)
    if (c->a.i[i] >= 0 && !words_of(c->in[i]->dtype)) return need_f32(c, c->in[i]);
  wg_lock();
  ct_status st = CT_OK;
  int64_t off = 0;
  for (int i = 0; i < c->n_in && st == CT_OK; i++) {
    ct_tensor *x = c->in[i];
    if (c->a.i[i] < 0) continue; /* a skipped legacy empty [0] input */
    ct_tensor v = *o; /* a borrowed view of the slice: output strides, input shape */
    v.ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++) v.shape[d] = x->shape[d];
    v.offset = o->offset + off * o->stride[dim];
    st = copy_run(&v, x);
    off += x->shape[dim];
  }
  wg_unlock();
  return st;
}

/* ---- unary and binary float32 ops ---- */
static bool unary_expr(const ct_call *c, char *e, size_t n) {
  char a[40], b[40];
  const ct_attrs *at = &c->a;
  switch (c->op) {
    case CT_OP_abs: snprintf(e, n, "abs(x1)"); break;
    case CT_OP_neg: snprintf(e, n, "-x1"); break;
    case CT_OP_sign: snprintf(e, n, "select(select(0.0, -1.0, x1 < 0.0), 1.0, x1 > 0.0)"); /* sign(nan) = 0 */ break;
    case CT_OP_exp: snprintf(e, n, "wexp(x1)"); break;
    case CT_OP_exp2: snprintf(e, n, "exp2(x1)"); break;
    case CT_OP_expm1: snprintf(e, n, "wexpm1(x1)"); break;
    case CT_OP_log: snprintf(e, n, "wlog(x1)"); break;
    case CT_OP_log2: snprintf(e, n, "wlog(x1) * 1.4426950408889634"); break;
    case CT_OP_log10: snprintf(e, n, "wlog(x1) * 0.4342944819032518"); break;
    case CT_OP_log1p: snprintf(e, n, "wlog1p(x1)"); break;
    case CT_OP_sqrt: snprintf(e, n, "wsqrt(x1)"); break;
    case CT_OP_rsqrt: snprintf(e, n, "1.0 / wsqrt(x1)"); break;
    case CT_OP_sin: snprintf(e, n, "wsincos(x1).x"); break;
    case CT_OP_cos: snprintf(e, n, "wsincos(x1).y"); break;
    case CT_OP_tanh: snprintf(e, n, "wtanh(x1)"); break;
    case CT_OP_sigmoid: snprintf(e, n, "1.0 / (1.0 + wexp(-x1))"); break;
    case CT_OP_erf: snprintf(e, n, "werf(x1)"); break;
    case CT_OP_erfc: snprintf(e, n, "werfc(x1)"); break;
    case CT_OP_floor: snprintf(e, n, "floor(x1)"); break;
    case CT_OP_ceil: snprintf(e, n, "ceil(x1)"); break;
    case CT_OP_trunc: snprintf(e, n, "trunc(x1)"); break;
    case CT_OP_round:
      if (at->k[0]) return false; /* decimals= */
      snprintf(e, n, "round(x1)");
      break;
    case CT_OP_frac: snprintf(e, n, "x1 - trunc(x1)"); break;
    case CT_OP_reciprocal: snprintf(e, n, "1.0 / x1"); break;
    case CT_OP_square: snprintf(e, n, "x1 * x1"); break;
    case CT_OP_relu: snprintf(e, n, "select(x1, 0.0, x1 <= 0.0)"); break;
    case CT_OP_silu: snprintf(e, n, "x1 / (1.0 + wexp(-x1))"); break;
    case CT_OP_gelu:
      if (at->k[0]) /* tanh form, written as x / (1 + exp(-2u)) = x (1 + tanh u) / 2 without cancellation */
        snprintf(e, n, "x1 / (1.0 + exp(-2.0 * 0.7978845608028654 * (x1 + 0.044715 * x1 * x1 * x1)))");
      else snprintf(e, n, "0.5 * x1 * werfc(-x1 * 0.7071067811865476)");
      break;
    case CT_OP_leaky_relu: snprintf(e, n, "select(x1 * %s, x1, x1 > 0.0)", flit(at->f[0], a)); break;
    case CT_OP_hardtanh:
      snprintf(e, n, "select(select(x1, %s, x1 < %s), %s, select(x1, %s, x1 < %s) > %s)", flit(at->f[0], a),
               flit(at->f[0], a), flit(at->f[1], b), flit(at->f[0], a), flit(at->f[0], a), flit(at->f[1], b));
      break;
    case CT_OP_rsqrt_eps: snprintf(e, n, "1.0 / wsqrt(x1 + %s)", flit(at->f[0], a)); break;
    default: return false;
  }
  return true;
}

static ct_status k_unary(const ct_call *c) {
  WG_BEGIN(c);
  CT_TRY(need_f32(c, c->in[0]));
  CT_TRY(need_f32(c, c->out[0]));
  char e[512];
  if (!unary_expr(c, e, sizeof e)) return unsupported(c, "This form of the op has no WGSL kernel yet.");
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  wg_lock();
  ct_status st = ew_run(2, ts, 0, e, 0, 0, NULL);
  wg_unlock();
  return st;
}

/* h * d^k f(x) for the activations' backward (op k5, order k4) */
static ct_status k_unary_deriv(const ct_call *c) {
  WG_BEGIN(c);
  for (int i = 0; i < 2; i++) CT_TRY(need_f32(c, c->in[i]));
  CT_TRY(need_f32(c, c->out[0]));
  int op = (int)c->a.k[5], order = (int)c->a.k[4];
  const ct_attrs *at = &c->a;
  char e[768], a[40], b[40];
  const char *pre = NULL;
  if (op == CT_OP_relu) snprintf(e, sizeof e, order == 1 ? "select(x1, 0.0, x2 <= 0.0)" : "0.0");
  else if (op == CT_OP_leaky_relu) snprintf(e, sizeof e, order == 1 ? "select(x1 * %s, x1, x2 > 0.0)" : "0.0", flit(at->f[0], a));
  else if (op == CT_OP_hardtanh)
    snprintf(e, sizeof e, order == 1 ? "select(x1, 0.0, x2 <= %s || x2 >= %s)" : "0.0", flit(at->f[0], a), flit(at->f[1], b));
  else if (op == CT_OP_gelu && !at->k[0]) {
    pre = "fn gpdf(x: f32) -> f32 { return exp(-0.5 * x * x) * 0.3989422804014327; }\n";
    snprintf(e, sizeof e, order == 1 ? "x1 * (0.5 * werfc(-x2 * 0.7071067811865476) + x2 * gpdf(x2))"
                                     : "x1 * gpdf(x2) * (2.0 - x2 * x2)");
  } else if (op == CT_OP_gelu) {
    pre = "fn gt(x: f32) -> vec3<f32> {\n"
          "  let kb = 0.7978845608028654; let kk = 0.044715;\n"
          "  let t = wtanh(kb * (x + kk * x * x * x));\n"
          "  return vec3<f32>(t, kb * (1.0 + 3.0 * kk * x * x), 1.0 - t * t);\n"
          "}\n";
    snprintf(e, sizeof e, order == 1 ? "x1 * (0.5 * (1.0 + gt(x2).x) + 0.5 * x2 * gt(x2).z * gt(x2).y)"
                                     : "x1 * gt(x2).z * (gt(x2).y - x2 * gt(x2).x * gt(x2).y * gt(x2).y + 0.5 * x2 * 6.0 * "
                                       "0.7978845608028654 * 0.044715 * x2)");
  } else if (op == CT_OP_clamp) { /* h inside [lo, hi] (NaN x or a NaN bound: 0), as the CPU */
    char cond[200] = "!wisnan(x2)";
    if ((at->k[0] && isnan(at->f[0])) || (at->k[1] && isnan(at->f[1]))) snprintf(cond, sizeof cond, "false");
    else {
      if (at->k[0]) snprintf(cond + strlen(cond), sizeof cond - strlen(cond), " && x2 >= %s", flit(at->f[0], a));
      if (at->k[1]) snprintf(cond + strlen(cond), sizeof cond - strlen(cond), " && x2 <= %s", flit(at->f[1], b));
    }
    snprintf(e, sizeof e, order == 1 ? "select(0.0, x1, %s)" : "0.0", cond);
  } else if (op == CT_OP_silu) {
    pre = "fn sg(x: f32) -> f32 { return 1.0 / (1.0 + exp(-x)); }\n";
    snprintf(e, sizeof e, order == 1 ? "x1 * sg(x2) * (1.0 + x2 * (1.0 - sg(x2)))"
                                     : "x1 * sg(x2) * (1.0 - sg(x2)) * (2.0 + x2 * (1.0 - 2.0 * sg(x2)))");
  } else {
    char m[120];
    snprintf(m, sizeof m, "The derivative of %s has no WGSL kernel yet.", ct_op_info_of(op) ? ct_op_info_of(op)->id : "?");
    return unsupported(c, m);
  }
  if (order != 1 && order != 2) return unsupported(c, "Only first and second derivatives have WGSL kernels.");
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  wg_lock();
  ct_status st = ew_run(3, ts, 0, e, 0, 0, pre);
  wg_unlock();
  return st;
}

static ct_status k_binary(const ct_call *c) {
  WG_BEGIN(c);
  /* int64 add/sub with alpha 1 (BatchNorm's num_batches_tracked += 1): exact, in two words */
  if ((c->op == CT_OP_add || c->op == CT_OP_sub) && c->a.f[0] == 1 && c->out[0]->dtype == CT_INT64 &&
      c->in[0]->dtype == CT_INT64 && c->in[1]->dtype == CT_INT64) {
    ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
    wg_lock();
    ct_status st = ew_run(3, ts, 4, NULL, c->op == CT_OP_sub, 0, NULL);
    wg_unlock();
    return st;
  }
  for (int i = 0; i < 2; i++) CT_TRY(c->op == CT_OP_masked_zero && i == 1 ? need_f32b(c, c->in[i]) : need_f32(c, c->in[i]));
  CT_TRY(need_f32(c, c->out[0]));
  char e[512], a[40];
  float pf = 0;
  const ct_attrs *at = &c->a;
  switch (c->op) {
    case CT_OP_add:
      if (at->f[0] == 1) snprintf(e, sizeof e, "x1 + x2");
      else snprintf(e, sizeof e, "x1 + bitcast<f32>(pr[0]) * x2"), pf = (float)at->f[0];
      break;
    case CT_OP_sub:
      if (at->f[0] == 1) snprintf(e, sizeof e, "x1 - x2");
      else snprintf(e, sizeof e, "x1 - bitcast<f32>(pr[0]) * x2"), pf = (float)at->f[0];
      break;
    case CT_OP_mul: snprintf(e, sizeof e, "x1 * x2"); break;
    case CT_OP_div:
      snprintf(e, sizeof e, at->k[0] == 1 ? "trunc(x1 / x2)" : at->k[0] == 2 ? "floor(x1 / x2)" : "x1 / x2");
      break;
    case CT_OP_maximum: snprintf(e, sizeof e, "select(max(x1, x2), x1 + x2, wisnan(x1) || wisnan(x2))"); break;
    case CT_OP_minimum: snprintf(e, sizeof e, "select(min(x1, x2), x1 + x2, wisnan(x1) || wisnan(x2))"); break;
    case CT_OP_fmax: snprintf(e, sizeof e, "select(select(max(x1, x2), x1, wisnan(x2)), x2, wisnan(x1))"); break;
    case CT_OP_fmin: snprintf(e, sizeof e, "select(select(min(x1, x2), x1, wisnan(x2)), x2, wisnan(x1))"); break;
    case CT_OP_pow: snprintf(e, sizeof e, "wpow(x1, x2)"); break;
    case CT_OP_atan2: snprintf(e, sizeof e, "watan2(x1, x2)"); break;
    case CT_OP_masked_zero: snprintf(e, sizeof e, "select(x1, 0.0, wnz(x2))"); break;
    default: return unsupported(c, "This op has no WGSL kernel yet.");
  }
  (void)a;
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  wg_lock();
  ew_pf[0] = pf;
  ew_npf = 1;
  ct_status st = ew_run(3, ts, 0, e, 0, 0, NULL);
  ew_npf = 0;
  wg_unlock();
  return st;
}

/* ---- bool results: comparisons, logical ops, NaN tests (f32 or bool inputs: int64
 * through f32 would not be exact beyond 2^24, so integer inputs are refused) ---- */
static ct_status k_bool(const ct_call *c) {
  WG_BEGIN(c);
  bool cmp = c->op == CT_OP_eq || c->op == CT_OP_ne || c->op == CT_OP_lt || c->op == CT_OP_le || c->op == CT_OP_gt ||
             c->op == CT_OP_ge;
  bool logical = c->op == CT_OP_logical_and || c->op == CT_OP_logical_or || c->op == CT_OP_logical_xor ||
                 c->op == CT_OP_logical_not;
  bool ints = cmp && c->in[0]->dtype == c->in[1]->dtype && (c->in[0]->dtype == CT_INT64 || c->in[0]->dtype == CT_INT32);
  for (int i = 0; i < c->n_in && !ints; i++) {
    ct_dtype dt = c->in[i]->dtype;
    /* nonzero-ness survives the conversion of integers to f32 */
    if (!(logical && (dt == CT_INT64 || dt == CT_INT32))) CT_TRY(need_f32b(c, c->in[i]));
  }
  if (c->out[0]->dtype != CT_BOOL) return unsupported(c, "Expected a bool output.");
  const char *e;
  switch (c->op) {
    case CT_OP_eq: e = "select(0.0, 1.0, x1 == x2)"; break;
    case CT_OP_ne: e = "select(0.0, 1.0, x1 != x2)"; break; /* NaN != NaN */
    case CT_OP_lt: e = "select(0.0, 1.0, x1 < x2)"; break;
    case CT_OP_le: e = "select(0.0, 1.0, x1 <= x2)"; break;
    case CT_OP_gt: e = "select(0.0, 1.0, x1 > x2)"; break;
    case CT_OP_ge: e = "select(0.0, 1.0, x1 >= x2)"; break;
    case CT_OP_logical_and: e = "select(0.0, 1.0, wnz(x1) && wnz(x2))"; break;
    case CT_OP_logical_or: e = "select(0.0, 1.0, wnz(x1) || wnz(x2))"; break;
    case CT_OP_logical_xor: e = "select(0.0, 1.0, wnz(x1) != wnz(x2))"; break;
    case CT_OP_logical_not: e = "select(0.0, 1.0, !wnz(x1))"; break;
    case CT_OP_isnan: e = "select(0.0, 1.0, wisnan(x1))"; break;
    case CT_OP_isinf: e = "select(0.0, 1.0, (bitcast<u32>(x1) & 0x7fffffffu) == 0x7f800000u)"; break;
    case CT_OP_isfinite: e = "select(0.0, 1.0, (bitcast<u32>(x1) & 0x7f800000u) != 0x7f800000u)"; break;
    default: return unsupported(c, "This op has no WGSL kernel yet.");
  }
  /* the comparisons of NaN: WGSL leaves them to the implementation; these inputs are
   * tested for NaN explicitly so that == < <= > >= are false and != true */
  char e2[512];
  if (ints) {
    const char *rel = c->op == CT_OP_eq ? "==" : c->op == CT_OP_ne ? "!=" : c->op == CT_OP_lt ? "<" : c->op == CT_OP_le ? "<="
                    : c->op == CT_OP_gt ? ">" : ">=";
    snprintf(e2, sizeof e2, "select(0.0, 1.0, wc64(q1, q2) %s 0)", rel);
  } else if (c->op >= 0 && (c->op == CT_OP_eq || c->op == CT_OP_lt || c->op == CT_OP_le || c->op == CT_OP_gt || c->op == CT_OP_ge))
    snprintf(e2, sizeof e2, "select(%s, 0.0, wisnan(x1) || wisnan(x2))", e);
  else if (c->op == CT_OP_ne) snprintf(e2, sizeof e2, "select(%s, 1.0, wisnan(x1) || wisnan(x2))", e);
  else snprintf(e2, sizeof e2, "%s", e);
  if (!ct_is_contiguous(c->out[0])) return unsupported(c, "A bool output must be contiguous.");
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->n_in > 1 ? c->in[1] : NULL};
  wg_lock();
  ct_status st = ew_run(1 + c->n_in, ts, 0, e2, 0, 0, NULL);
  wg_unlock();
  return st;
}

/* ---- ternary float32 ops: where, lerp, addcmul, addcdiv, clamp (scalar and tensor) ---- */
static ct_status k_ternary(const ct_call *c) {
  WG_BEGIN(c);
  const ct_attrs *at = &c->a;
  CT_TRY(need_f32(c, c->out[0]));
  for (int i = 0; i < c->n_in; i++) {
    if (c->op == CT_OP_where && i == 0) {
      if (c->in[0]->dtype != CT_BOOL && c->in[0]->dtype != CT_FLOAT32) return need_f32b(c, c->in[0]);
    } else CT_TRY(need_f32(c, c->in[i]));
  }
  char e[768], a[40], b[40];
  switch (c->op) {
    case CT_OP_where: snprintf(e, sizeof e, "select(x3, x2, wnz(x1))"); break;
    case CT_OP_lerp: /* the CPU's two-sided form, exact at w = 0 and 1 */
      snprintf(e, sizeof e, "select(x2 - (x2 - x1) * (1.0 - x3), x1 + x3 * (x2 - x1), abs(x3) < 0.5)");
      break;
    case CT_OP_lerp_scalar:
      snprintf(e, sizeof e, "select(x2 - (x2 - x1) * (1.0 - bitcast<f32>(pr[0])), x1 + bitcast<f32>(pr[0]) * (x2 - x1), "
                            "abs(bitcast<f32>(pr[0])) < 0.5)");
      break;
    case CT_OP_addcmul: snprintf(e, sizeof e, "x1 + bitcast<f32>(pr[0]) * x2 * x3"); break;
    case CT_OP_addcdiv: snprintf(e, sizeof e, "x1 + bitcast<f32>(pr[0]) * x2 / x3"); break;
    case CT_OP_clamp: {
      /* NaN in x stays; a NaN bound gives NaN (the CPU's order: low bound first) */
      char lo[160] = "y", hi[160] = "y";
      /* a NaN bound compares false on the CPU, which leaves x: omitted here likewise */
      if (at->k[0] && !isnan(at->f[0])) snprintf(lo, sizeof lo, "select(y, %s, y < %s)", flit(at->f[0], a), flit(at->f[0], a));
      snprintf(e, sizeof e, "wclamp(x1)");
      if (at->k[1] && !isnan(at->f[1])) snprintf(hi, sizeof hi, "select(y, %s, y > %s)", flit(at->f[1], b), flit(at->f[1], b));
      char pre[700];
      snprintf(pre, sizeof pre,
               "fn wclamp(x: f32) -> f32 {\n  if (wisnan(x)) { return x; }\n  var y = x;\n  y = %s;\n  y = %s;\n  return y;\n}\n",
               lo, hi);
      ct_tensor *ts[2] = {c->out[0], c->in[0]};
      wg_lock();
      ct_status st = ew_run(2, ts, 0, e, 0, 0, pre);
      wg_unlock();
      return st;
    }
    case CT_OP_clamp_tensor: {
      bool hl = at->k[0], hh = at->k[1];
      int kl = 2, kh = hl ? 3 : 2;
      char lo[120] = "", hi[120] = "";
      if (hl) snprintf(lo, sizeof lo, "if (wisnan(x%d)) { return wnan(); } if (y < x%d) { y = x%d; }", kl, kl, kl);
      if (hh) snprintf(hi, sizeof hi, "if (wisnan(x%d)) { return wnan(); } if (y > x%d) { y = x%d; }", kh, kh, kh);
      char pre[600];
      snprintf(pre, sizeof pre, "fn wclampt(x1: f32, x2: f32, x3: f32) -> f32 {\n  if (wisnan(x1)) { return x1; }\n"
                                "  var y = x1;\n  %s\n  %s\n  return y;\n}\n", lo, hi);
      snprintf(e, sizeof e, "wclampt(x1, %s, %s)", c->n_in > 1 ? "x2" : "0.0", c->n_in > 2 ? "x3" : "0.0");
      ct_tensor *ts[4] = {c->out[0], c->in[0], c->n_in > 1 ? c->in[1] : NULL, c->n_in > 2 ? c->in[2] : NULL};
      wg_lock();
      ct_status st = ew_run(1 + c->n_in, ts, 0, e, 0, 0, pre);
      wg_unlock();
      return st;
    }
    default: return unsupported(c, "This op has no WGSL kernel yet.");
  }
  ct_tensor *ts[4] = {c->out[0], c->in[0], c->n_in > 1 ? c->in[1] : NULL, c->n_in > 2 ? c->in[2] : NULL};
  wg_lock();
  ew_pf[0] = (float)at->f[0];
  ew_npf = 1;
  ct_status st = ew_run(1 + c->n_in, ts, 0, e, 0, 0, NULL);
  ew_npf = 0;
  wg_unlock();
  return st;
}

/* ---- masked_fill with a number: out = mask ? v : x (float32 values, a bool mask) ---- */
static ct_status k_masked_fill(const ct_call *c) {
  WG_BEGIN(c);
  ct_dtype od = c->out[0]->dtype;
  if ((od == CT_INT64 || od == CT_INT32) && c->in[0]->dtype == od && c->in[1]->dtype == CT_BOOL) {
    /* integers: the value's exact words (through f32 they would round beyond 2^24) */
    const ct_scalar *v = &c->a.s[0];
    int64_t iv = v->kind == CT_SCALAR_FLOAT ? (int64_t)v->f : v->i;
    uint64_t u = (uint64_t)iv;
    ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
    wg_lock();
    ct_status st = ew_run(3, ts, 3, NULL, (uint32_t)u, (uint32_t)(u >> 32), NULL);
    wg_unlock();
    return st;
  }
  CT_TRY(need_f32(c, c->out[0]));
  CT_TRY(need_f32(c, c->in[0]));
  if (c->in[1]->dtype != CT_BOOL) return need_f32b(c, c->in[1]);
  const ct_scalar *v = &c->a.s[0];
  char e[160], a[40];
  snprintf(e, sizeof e, "select(x1, %s, wnz(x2))", flit(v->kind == CT_SCALAR_FLOAT ? v->f : (double)v->i, a));
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  wg_lock();
  ct_status st = ew_run(3, ts, 0, e, 0, 0, NULL);
  wg_unlock();
  return st;
}

/* scaled_dot_product_attention's bool mask made additive: 0 where kept, -inf elsewhere */
static ct_status k_attn_bool_mask(const ct_call *c) {
  WG_BEGIN(c);
  CT_TRY(need_f32(c, c->out[0]));
  if (c->in[0]->dtype != CT_BOOL) return need_f32b(c, c->in[0]);
  char e[96], a[40];
  snprintf(e, sizeof e, "select(%s, 0.0, wnz(x1))", flit(-INFINITY, a));
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  wg_lock();
  ct_status st = ew_run(2, ts, 0, e, 0, 0, NULL);
  wg_unlock();
  return st;
}

/* ---- reductions over a dim mask (k0 mask, k1 keepdim): sum, amax, amin, max, min,
 * norm_moments (mean and biased variance) ---- */
typedef struct {
  geom kept, red;          /* kept: tensors (x, y[, y2]); red: x only */
  int64_t nout, nred;
  int64_t xbase, ybase[2];
} red_geom;

static void red_make(const ct_tensor *x, int ny, ct_tensor *const *ys, uint32_t mask, bool keepdim, red_geom *r) {
  int64_t ksh[CT_MAX_DIMS], kst[3][CT_MAX_DIMS], rsh[CT_MAX_DIMS], rst[1][CT_MAX_DIMS];
  int nk = 0, nr = 0, yd = 0;
  r->nout = 1;
  r->nred = 1;
  for (int d = 0; d < x->ndim; d++) {
    bool red = (mask >> d) & 1;
    if (red) {
      rsh[nr] = x->shape[d];
      rst[0][nr++] = x->stride[d];
      r->nred *= x->shape[d];
      if (keepdim) yd++;
    } else {
      ksh[nk] = x->shape[d];
      kst[0][nk] = x->stride[d];
      for (int j = 0; j < ny; j++) kst[1 + j][nk] = ys[j]->ndim ? ys[j]->stride[yd] : 0;
      nk++;
      yd++;
      r->nout *= x->shape[d];
    }
  }
  geom_make(&r->kept, nk, ksh, 1 + ny, kst);
  geom_make(&r->red, nr, rsh, 1, rst);
  r->xbase = x->offset;
  for (int j = 0; j < ny; j++) r->ybase[j] = ys[j]->offset;
}

/* kind: 0 sum, 1 max (NaN propagates), 2 min, 3 moments */
static ct_status red_run(const ct_call *c, const ct_tensor *x, int ny, ct_tensor *const *ys, uint32_t mask,
                         bool keepdim, int kind) {
  red_geom r;
  red_make(x, ny, ys, mask, keepdim, &r);
  if (r.nout == 0) return CT_OK;
  CT_TRY(check_extent(x));
  for (int j = 0; j < ny; j++) CT_TRY(check_extent(ys[j]));
  bindset bs = {{0}, 0, -1};
  int bx = bind_of(&bs, x), by[2];
  for (int j = 0; j < ny; j++) by[j] = bind_of(&bs, ys[j]);
  const char *init = kind == 1 ? "bitcast<f32>(wzero | 0xff800000u)" : kind == 2 ? "bitcast<f32>(wzero | 0x7f800000u)" : "0.0";
  const char *comb = kind == 1 ? "select(a, b, b > a || wisnan(b))" : kind == 2 ? "select(a, b, b < a || wisnan(b))" : "a + b";
  bool wide = r.nred >= 32; /* a workgroup per output, else a thread per output */
  int64_t groups = wide ? r.nout : (r.nout + 255) / 256;
  uint32_t gx, gy;
  grid(groups, &gx, &gy);
  int64_t kbase[3] = {r.xbase, r.ybase[0], r.ybase[1]}, rbase[1] = {0};
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "fn wisnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n");
  sbf(&s, "fn comb(a: f32, b: f32) -> f32 { return %s; }\n", comb);
  if (wide) sbf(&s, "var<workgroup> sh: array<f32, 256>;\n");
  sbf(&s, "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
  if (wide) sbf(&s, "  let o = wid.y * %uu + wid.x;\n  let valid = o < %lldu;\n", gx, (long long)r.nout);
  else sbf(&s, "  let o = (wid.y * %uu + wid.x) * 256u + li;\n  if (o >= %lldu) { return; }\n", gx, (long long)r.nout);
  emit_offsets(&s, "o", &r.kept, kbase, "k");
  const char *r0 = wide ? "li" : "0u", *rstep = wide ? "256u" : "1u";
  /* pass 1 (sum, max, min, or the sum for the mean) */
  sbf(&s, "  var acc: f32 = %s;\n", kind == 3 ? "0.0" : init);
  if (wide) sbf(&s, "  if (valid) {\n");
  sbf(&s, "  for (var r: u32 = %s; r < %lldu; r = r + %s) {\n", r0, (long long)r.nred, rstep);
  emit_offsets(&s, "r", &r.red, rbase, "q");
  sbf(&s, "    acc = comb(acc, bitcast<f32>(b%d[k0 + q0]));\n  }\n", bx);
  if (wide) {
    sbf(&s, "  }\n  sh[li] = acc;\n  workgroupBarrier();\n");
    sbf(&s, "  for (var w: u32 = 128u; w > 0u; w = w >> 1u) {\n    if (li < w) { sh[li] = comb(sh[li], sh[li + w]); }\n"
            "    workgroupBarrier();\n  }\n  acc = sh[0];\n");
  }
  if (kind == 3) {
    sbf(&s, "  let mean = acc / %lld.0;\n", (long long)r.nred);
    if (wide) sbf(&s, "  workgroupBarrier();\n");
    sbf(&s, "  var acc2: f32 = 0.0;\n");
    if (wide) sbf(&s, "  if (valid) {\n");
    sbf(&s, "  for (var r: u32 = %s; r < %lldu; r = r + %s) {\n", r0, (long long)r.nred, rstep);
    emit_offsets(&s, "r", &r.red, rbase, "p");
    sbf(&s, "    let d = bitcast<f32>(b%d[k0 + p0]) - mean;\n    acc2 = acc2 + d * d;\n  }\n", bx);
    if (wide) {
      sbf(&s, "  }\n  sh[li] = acc2;\n  workgroupBarrier();\n");
      sbf(&s, "  for (var w: u32 = 128u; w > 0u; w = w >> 1u) {\n    if (li < w) { sh[li] = sh[li] + sh[li + w]; }\n"
              "    workgroupBarrier();\n  }\n  acc2 = sh[0];\n");
    }
    if (wide) sbf(&s, "  if (valid && li == 0u) {\n");
    else sbf(&s, "  {\n");
    sbf(&s, "    b%d[k1] = bitcast<u32>(mean);\n    b%d[k2] = bitcast<u32>(acc2 / %lld.0);\n  }\n", by[0], by[1],
        (long long)r.nred);
  } else {
    if (wide) sbf(&s, "  if (valid && li == 0u) { b%d[k1] = bitcast<u32>(acc); }\n", by[0]);
    else sbf(&s, "  b%d[k1] = bitcast<u32>(acc);\n", by[0]);
  }
  sbf(&s, "}\n");
  (void)c;
  return launch(&s, &bs, gx, gy, 1);
}

/* sum of a contiguous bool or int64 tensor over all its elements into int64 (a count of
 * kept targets, which the dispatcher promotes to int64 first): one workgroup, exact
 * 64-bit sums as (lo, hi) u32 pairs with the carry */
static ct_status sum_int64(const ct_call *c) {
  const ct_tensor *x = c->in[0];
  ct_tensor *o = c->out[0];
  int64_t n = ct_numel(x);
  if (ct_numel(o) != 1 || !ct_is_contiguous(x) || n >= ((int64_t)1 << 31))
    return unsupported(c, "An integer sum runs over all the elements of a contiguous tensor only.");
  wg_lock();
  ct_status st = check_extent(o);
  if (st == CT_OK && n > 0) st = check_extent(x);
  if (st != CT_OK) {
    wg_unlock();
    return st;
  }
  bindset bs = {{0}, 0, -1};
  int bx = n > 0 ? bind_of(&bs, x) : -1, bo = bind_of(&bs, o);
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "var<workgroup> plo: array<u32, 256>;\nvar<workgroup> phi: array<u32, 256>;\n"
          "fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {\n  let lo = a.x + b.x;\n"
          "  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));\n}\n"
          "@compute @workgroup_size(256)\nfn main(@builtin(local_invocation_index) li: u32) {\n"
          "  var k = vec2<u32>(0u, 0u);\n");
  if (n > 0) {
    sbf(&s, "  for (var e: u32 = li; e < %lldu; e = e + 256u) {\n    let o = %lldu + e;\n", (long long)n, (long long)x->offset);
    if (x->dtype == CT_BOOL)
      sbf(&s, "    k = add64(k, vec2<u32>(select(0u, 1u, ((b%d[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu) != 0u), 0u));\n", bx);
    else sbf(&s, "    k = add64(k, vec2<u32>(b%d[2u * o], b%d[2u * o + 1u]));\n", bx, bx);
    sbf(&s, "  }\n");
  }
  sbf(&s, "  plo[li] = k.x; phi[li] = k.y;\n  workgroupBarrier();\n"
          "  for (var h: u32 = 128u; h > 0u; h = h >> 1u) {\n"
          "    if (li < h) {\n      let r = add64(vec2<u32>(plo[li], phi[li]), vec2<u32>(plo[li + h], phi[li + h]));\n"
          "      plo[li] = r.x; phi[li] = r.y;\n    }\n    workgroupBarrier();\n  }\n"
          "  if (li == 0u) { b%d[%lldu] = plo[0]; b%d[%lldu] = phi[0]; }\n}\n",
      bo, (long long)o->offset * 2, bo, (long long)o->offset * 2 + 1);
  st = launch(&s, &bs, 1, 1, 1);
  wg_unlock();
  return st;
}

static ct_status k_reduce(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *x = c->in[0];
  int kind;
  uint32_t mask = (uint32_t)c->a.k[0];
  bool keep = c->a.k[1] != 0;
  switch (c->op) {
    case CT_OP_sum: kind = 0; break;
    case CT_OP_amax: kind = 1; break;
    case CT_OP_amin: kind = 2; break;
    case CT_OP_max: kind = 1, mask = 0xffu, keep = false; break;
    case CT_OP_min: kind = 2, mask = 0xffu, keep = false; break;
    default: return unsupported(c, "This reduction has no WGSL kernel yet.");
  }
  if (kind == 0 && (x->dtype == CT_BOOL || x->dtype == CT_INT64) && c->out[0]->dtype == CT_INT64) return sum_int64(c);
  CT_TRY(need_f32(c, x));
  CT_TRY(need_f32(c, c->out[0]));
  if (x->ndim == 0) mask = 0;
  wg_lock();
  ct_status st = red_run(c, x, 1, &c->out[0], mask, keep, kind);
  wg_unlock();
  return st;
}

static ct_status k_norm_moments(const ct_call *c) {
  WG_BEGIN(c);
  CT_TRY(need_f32(c, c->in[0]));
  uint32_t mask = (uint32_t)c->a.k[0];
  if (c->in[0]->ndim == 0) mask = 0;
  wg_lock();
  ct_status st = red_run(c, c->in[0], 2, c->out, mask, true, 3);
  wg_unlock();
  return st;
}

/* ---- softmax / log_softmax along k0: a workgroup per row ---- */
static ct_status k_softmax(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *x = c->in[0];
  ct_tensor *y = c->out[0];
  CT_TRY(need_f32(c, x));
  CT_TRY(need_f32(c, y));
  int64_t n = ct_numel(x);
  if (n == 0) return CT_OK;
  int d = x->ndim ? (int)c->a.k[0] : -1;
  int64_t L = d >= 0 ? x->shape[d] : 1, sx = d >= 0 ? x->stride[d] : 0, sy = d >= 0 ? y->stride[d] : 0;
  int64_t ksh[CT_MAX_DIMS], kst[2][CT_MAX_DIMS];
  int nk = 0;
  for (int e = 0; e < x->ndim; e++)
    if (e != d) {
      ksh[nk] = x->shape[e];
      kst[0][nk] = x->stride[e];
      kst[1][nk++] = y->stride[e];
    }
  geom g;
  geom_make(&g, nk, ksh, 2, kst);
  int64_t rows = n / L, base[2] = {x->offset, y->offset};
  wg_lock();
  ct_status st = check_extent(x);
  if (st == CT_OK) st = check_extent(y);
  if (st != CT_OK) {
    wg_unlock();
    return st;
  }
  bindset bs = {{0}, 0, -1};
  int bx = bind_of(&bs, x), by = bind_of(&bs, y);
  uint32_t gx, gy;
  grid(rows, &gx, &gy);
  bool logsm = c->op == CT_OP_log_softmax;
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "fn wisnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n");
  if (L < 32) { /* short rows: a thread per row (a workgroup would idle, and emulators pay for barriers) */
    grid((rows + 255) / 256, &gx, &gy);
    sbf(&s, "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
    sbf(&s, "  let o = (wid.y * %uu + wid.x) * 256u + li;\n  if (o >= %lldu) { return; }\n", gx, (long long)rows);
    emit_offsets(&s, "o", &g, base, "k");
    sbf(&s, "  var mx: f32 = bitcast<f32>(wzero | 0xff800000u);\n"
            "  for (var r: u32 = 0u; r < %lldu; r = r + 1u) { let v = bitcast<f32>(b%d[k0 + r * %lldu]); mx = select(mx, v, v > mx || wisnan(v)); }\n"
            "  var tot: f32 = 0.0;\n"
            "  for (var r: u32 = 0u; r < %lldu; r = r + 1u) { tot = tot + exp(bitcast<f32>(b%d[k0 + r * %lldu]) - mx); }\n",
        (long long)L, bx, (long long)sx, (long long)L, bx, (long long)sx);
    if (logsm) sbf(&s, "  let lt = log(tot);\n");
    sbf(&s, "  for (var r: u32 = 0u; r < %lldu; r = r + 1u) {\n    let v = bitcast<f32>(b%d[k0 + r * %lldu]) - mx;\n",
        (long long)L, bx, (long long)sx);
    if (logsm) sbf(&s, "    b%d[k1 + r * %lldu] = bitcast<u32>(v - lt);\n  }\n}\n", by, (long long)sy);
    else sbf(&s, "    b%d[k1 + r * %lldu] = bitcast<u32>(exp(v) / tot);\n  }\n}\n", by, (long long)sy);
    st = launch(&s, &bs, gx, gy, 1);
    wg_unlock();
    return st;
  }
  sbf(&s, "var<workgroup> sh: array<f32, 256>;\n");
  sbf(&s, "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
  sbf(&s, "  let o = wid.y * %uu + wid.x;\n  let valid = o < %lldu;\n", gx, (long long)rows);
  emit_offsets(&s, "o", &g, base, "k");
  sbf(&s, "  var m: f32 = bitcast<f32>(wzero | 0xff800000u);\n");
  sbf(&s, "  if (valid) { for (var r: u32 = li; r < %lldu; r = r + 256u) { let v = bitcast<f32>(b%d[k0 + r * %lldu]);"
          " m = select(m, v, v > m || wisnan(v)); } }\n",
      (long long)L, bx, (long long)sx);
  sbf(&s, "  sh[li] = m;\n  workgroupBarrier();\n");
  sbf(&s, "  for (var w: u32 = 128u; w > 0u; w = w >> 1u) {\n    if (li < w) { let a = sh[li]; let b = sh[li + w];"
          " sh[li] = select(a, b, b > a || wisnan(b)); }\n    workgroupBarrier();\n  }\n");
  sbf(&s, "  let mx = sh[0];\n  workgroupBarrier();\n");
  sbf(&s, "  var acc: f32 = 0.0;\n");
  sbf(&s, "  if (valid) { for (var r: u32 = li; r < %lldu; r = r + 256u) { acc = acc + exp(bitcast<f32>(b%d[k0 + r * %lldu]) - mx); } }\n",
      (long long)L, bx, (long long)sx);
  sbf(&s, "  sh[li] = acc;\n  workgroupBarrier();\n");
  sbf(&s, "  for (var w: u32 = 128u; w > 0u; w = w >> 1u) {\n    if (li < w) { sh[li] = sh[li] + sh[li + w]; }\n"
          "    workgroupBarrier();\n  }\n  let tot = sh[0];\n");
  if (logsm) sbf(&s, "  let lt = log(tot);\n");
  sbf(&s, "  if (valid) { for (var r: u32 = li; r < %lldu; r = r + 256u) {\n    let v = bitcast<f32>(b%d[k0 + r * %lldu]) - mx;\n",
      (long long)L, bx, (long long)sx);
  if (logsm) sbf(&s, "    b%d[k1 + r * %lldu] = bitcast<u32>(v - lt);\n  } }\n}\n", by, (long long)sy);
  else sbf(&s, "    b%d[k1 + r * %lldu] = bitcast<u32>(exp(v) / tot);\n  } }\n}\n", by, (long long)sy);
  st = launch(&s, &bs, gx, gy, 1);
  wg_unlock();
  return st;
}

/* ---- fused cross-entropy with class indices (float32, x [N, C] contiguous, targets int64
 * [N]; optional class weights; label smoothing without weights): the forward is a workgroup
 * per row (max, sum of exp, the picked logit: loss and log-sum-exp per row) and one
 * workgroup summing the rows in a fixed order (the mean needs every row); the backward is
 * one elementwise pass, softmax - onehot scaled. 3 dispatches where the composed ops record
 * about twenty. a.k[2] = 1 (ct_cross_entropy_unchecked's graph-safe form): a target outside
 * [0, C) is a zero row counted in the mean, as the one-hot form computes it; otherwise the
 * host checked the targets, and a target outside (never read) counts as ignored. ---- */
static bool ce_layout_ok(const ct_tensor *t, ct_dtype dt, int64_t n) {
  return t && t->dtype == dt && ct_is_contiguous(t) && ct_numel(t) == n && check_extent(t) == CT_OK;
}
/* WGSL: `ok` (a class in range, not ignored), `tc` (the class) and `wt` (its weight) of row r */
static void ce_emit_target(sb *s, const ct_call *c, int bt, const ct_tensor *t, int bw, const ct_tensor *w, int64_t C) {
  uint64_t ig = (uint64_t)c->a.i[0];
  sbf(s, "  let tl = b%d[2u * (%lldu + r)]; let th = b%d[2u * (%lldu + r) + 1u];\n", bt, (long long)t->offset, bt,
      (long long)t->offset);
  sbf(s, "  let ign = tl == %uu && th == %uu;\n  let ok = !ign && th == 0u && tl < %lldu;\n  let tc = select(0u, tl, ok);\n",
      (unsigned)(ig & 0xffffffffu), (unsigned)(ig >> 32), (long long)C);
  if (w) sbf(s, "  let wt = select(0.0, bitcast<f32>(b%d[%lldu + tc]), ok);\n", bw, (long long)w->offset);
  else sbf(s, "  let wt = select(0.0, 1.0, ok);\n");
}
static ct_status k_cross_entropy_fused(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *x = c->in[0], *t = c->in[1], *w = c->a.k[1] ? c->in[2] : NULL;
  ct_tensor *loss = c->out[0], *lse = c->out[1], *tw = c->out[2];
  CT_TRY(need_f32(c, x));
  if (x->ndim != 2) return unsupported(c, "Expected logits [N, C].");
  int64_t N = x->shape[0], C = x->shape[1];
  int red = (int)c->a.k[0];
  double ls = c->a.f[0];
  bool unchecked = c->a.k[2];
  if (N == 0 || C == 0) return unsupported(c, "Expected a non-empty input.");
  wg_lock();
  bool ok = ce_layout_ok(x, CT_FLOAT32, N * C) && ce_layout_ok(t, CT_INT64, N) && (!w || ce_layout_ok(w, CT_FLOAT32, C)) &&
            ce_layout_ok(loss, CT_FLOAT32, red == CT_REDUCTION_NONE ? N : 1) && ce_layout_ok(lse, CT_FLOAT32, N) &&
            ce_layout_ok(tw, CT_FLOAT32, 1) && !(w && ls > 0);
  wg_unlock();
  if (!ok) return unsupported(c, "Expected contiguous float32 logits, int64 targets and no weight with label smoothing.");
  int64_t n2 = 2 * N;
  ct_options o = ct_opts_dtype(CT_FLOAT32);
  o.device = x->storage->device;
  ct_tensor *rows = ct_empty(1, &n2, o); /* per row: loss, then weight kept */
  if (!rows) return ct_last_status();
  wg_lock();
  bindset bs = {{0}, 0, -1};
  int bx = bind_of(&bs, x), bt = bind_of(&bs, t), bw = w ? bind_of(&bs, w) : -1, bl = bind_of(&bs, lse);
  int brw = bind_of(&bs, rows), bo = red == CT_REDUCTION_NONE ? bind_of(&bs, loss) : -1;
  uint32_t gx, gy;
  grid(N, &gx, &gy);
  char lsb[40], lcb[40];
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "fn wisnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n"
          "var<workgroup> sa: array<f32, 256>;\nvar<workgroup> sb2: array<f32, 256>;\n"
          "@compute @workgroup_size(256)\n"
          "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
          "  let r = wid.y * %uu + wid.x;\n  if (r >= %lldu) { return; }\n  let xo = %lldu + r * %lldu;\n",
      gx, (long long)N, (long long)x->offset, (long long)C);
  sbf(&s, "  var m: f32 = bitcast<f32>(wzero | 0xff800000u);\n"
          "  for (var j: u32 = li; j < %lldu; j = j + 256u) { let v = bitcast<f32>(b%d[xo + j]); m = select(m, v, v > m || wisnan(v)); }\n"
          "  sa[li] = m;\n  workgroupBarrier();\n"
          "  for (var h: u32 = 128u; h > 0u; h = h >> 1u) {\n    if (li < h) { let a = sa[li]; let b = sa[li + h]; sa[li] = select(a, b, b > a || wisnan(b)); }\n"
          "    workgroupBarrier();\n  }\n  let mx = sa[0];\n  workgroupBarrier();\n",
      (long long)C, bx);
  /* the sum of exp and, for label smoothing, the sum of the logits */
  sbf(&s, "  var e: f32 = 0.0;\n  var q: f32 = 0.0;\n"
          "  for (var j: u32 = li; j < %lldu; j = j + 256u) { let v = bitcast<f32>(b%d[xo + j]); e = e + exp(v - mx); q = q + v; }\n"
          "  sa[li] = e; sb2[li] = q;\n  workgroupBarrier();\n"
          "  for (var h: u32 = 128u; h > 0u; h = h >> 1u) {\n    if (li < h) { sa[li] = sa[li] + sa[li + h]; sb2[li] = sb2[li] + sb2[li + h]; }\n"
          "    workgroupBarrier();\n  }\n",
      (long long)C, bx);
  sbf(&s, "  if (li != 0u) { return; }\n  let l = mx + log(sa[0]);\n");
  ce_emit_target(&s, c, bt, t, bw, w, C);
  sbf(&s, "  var lo: f32 = select(0.0, %s * wt * (l - bitcast<f32>(b%d[xo + tc])), ok);\n", flit(1.0 - ls, lsb), bx);
  if (ls > 0) sbf(&s, "  if (ok) { lo = lo + %s * (l * %lld.0 - sb2[0]); }\n", flit(ls / (double)C, lcb), (long long)C);
  sbf(&s, "  b%d[%lldu + r] = bitcast<u32>(l);\n", bl, (long long)lse->offset);
  sbf(&s, "  b%d[r] = bitcast<u32>(lo);\n  b%d[%lldu + r] = bitcast<u32>(%s);\n", brw, brw, (long long)N,
      unchecked ? "select(wt, 1.0, !ok)" : "wt");
  if (bo >= 0) sbf(&s, "  b%d[%lldu + r] = bitcast<u32>(lo);\n", bo, (long long)loss->offset);
  sbf(&s, "}\n");
  ct_status st = launch(&s, &bs, gx, gy, 1);
  if (st == CT_OK) { /* the rows' sums in one workgroup, always in the same order */
    bindset b2 = {{0}, 0, -1};
    /* only what the shader reads or writes is bound (the pipeline's layout leaves out the rest) */
    int r2 = bind_of(&b2, rows), o2 = red != CT_REDUCTION_NONE ? bind_of(&b2, loss) : -1, d2 = bind_of(&b2, tw);
    sb s2 = {0};
    emit_bindings(&s2, &b2);
    sbf(&s2, "var<workgroup> sa: array<f32, 256>;\nvar<workgroup> sb2: array<f32, 256>;\n"
             "@compute @workgroup_size(256)\nfn main(@builtin(local_invocation_index) li: u32) {\n"
             "  var a: f32 = 0.0;\n  var d: f32 = 0.0;\n"
             "  for (var r: u32 = li; r < %lldu; r = r + 256u) { a = a + bitcast<f32>(b%d[r]); d = d + bitcast<f32>(b%d[%lldu + r]); }\n"
             "  sa[li] = a; sb2[li] = d;\n  workgroupBarrier();\n"
             "  for (var h: u32 = 128u; h > 0u; h = h >> 1u) {\n    if (li < h) { sa[li] = sa[li] + sa[li + h]; sb2[li] = sb2[li] + sb2[li + h]; }\n"
             "    workgroupBarrier();\n  }\n  if (li == 0u) {\n",
        (long long)N, r2, r2, (long long)N);
    if (red == CT_REDUCTION_MEAN) sbf(&s2, "    b%d[%lldu] = bitcast<u32>(sa[0] / sb2[0]);\n", o2, (long long)loss->offset);
    else if (red == CT_REDUCTION_SUM) sbf(&s2, "    b%d[%lldu] = bitcast<u32>(sa[0]);\n", o2, (long long)loss->offset);
    sbf(&s2, "    b%d[%lldu] = bitcast<u32>(sb2[0]);\n  }\n}\n", d2, (long long)tw->offset);
    st = launch(&s2, &b2, 1, 1, 1);
  }
  wg_unlock();
  ct_release(rows);
  return st;
}
static ct_status k_cross_entropy_fused_backward(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *g = c->in[0], *x = c->in[1], *t = c->in[2], *w = c->a.k[1] ? c->in[3] : NULL, *lse = c->in[4],
                  *tw = c->in[5];
  ct_tensor *dx = c->out[0];
  CT_TRY(need_f32(c, x));
  if (x->ndim != 2) return unsupported(c, "Expected logits [N, C].");
  int64_t N = x->shape[0], C = x->shape[1], n = N * C;
  int red = (int)c->a.k[0];
  double ls = c->a.f[0];
  if (n == 0) return CT_OK;
  wg_lock();
  bool ok = ce_layout_ok(x, CT_FLOAT32, n) && ce_layout_ok(t, CT_INT64, N) && (!w || ce_layout_ok(w, CT_FLOAT32, C)) &&
            ce_layout_ok(g, CT_FLOAT32, red == CT_REDUCTION_NONE ? N : 1) && ce_layout_ok(lse, CT_FLOAT32, N) &&
            ce_layout_ok(tw, CT_FLOAT32, 1) && ce_layout_ok(dx, CT_FLOAT32, n) && !(w && ls > 0);
  if (!ok) {
    wg_unlock();
    return unsupported(c, "Expected contiguous float32 logits, int64 targets and no weight with label smoothing.");
  }
  bindset bs = {{0}, 0, -1};
  int bg = bind_of(&bs, g), bx = bind_of(&bs, x), bt = bind_of(&bs, t), bw = w ? bind_of(&bs, w) : -1;
  int bl = bind_of(&bs, lse), bd = red == CT_REDUCTION_MEAN ? bind_of(&bs, tw) : -1, bo = bind_of(&bs, dx);
  uint32_t gx, gy;
  grid((n + 255) / 256, &gx, &gy);
  char b1[40], b2[40];
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "@compute @workgroup_size(256)\n"
          "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
          "  let e = (wid.y * %uu + wid.x) * 256u + li;\n  if (e >= %lldu) { return; }\n  let r = e / %lldu; let j = e %% %lldu;\n",
      gx, (long long)n, (long long)C, (long long)C);
  ce_emit_target(&s, c, bt, t, bw, w, C);
  sbf(&s, "  var sc = bitcast<f32>(b%d[%lldu%s]);\n", bg, (long long)g->offset, red == CT_REDUCTION_NONE ? " + r" : "");
  if (red == CT_REDUCTION_MEAN) sbf(&s, "  sc = sc / bitcast<f32>(b%d[%lldu]);\n", bd, (long long)tw->offset);
  /* dx = sc (A softmax - B): A = (1-ls) wt + ls (ls only without weights, so the weights sum to C) */
  sbf(&s, "  let p = exp(bitcast<f32>(b%d[%lldu + e]) - bitcast<f32>(b%d[%lldu + r]));\n", bx, (long long)x->offset, bl,
      (long long)lse->offset);
  sbf(&s, "  var v = sc * (%s * wt + %s) * p;\n", flit(1.0 - ls, b1), flit(ls, b2));
  if (ls > 0) sbf(&s, "  v = v - sc * %s;\n", flit(ls / (double)C, b1));
  sbf(&s, "  if (j == tc) { v = v - sc * %s * wt; }\n", flit(1.0 - ls, b2));
  sbf(&s, "  b%d[%lldu + e] = bitcast<u32>(select(0.0, v, ok));\n}\n", bo, (long long)dx->offset);
  ct_status st = launch(&s, &bs, gx, gy, 1);
  wg_unlock();
  return st;
}

/* ---- matrix products: one batched strided GEMM ----
 * C[b,m,n] = alpha * sum_k A[b,m,k] B[b,k,n] (+ beta * C0[b,m,n]).
 * 256 threads compute a BM x BN tile (BM = 16*TM, BN = 16*TN; TM, TN in {4, 8}), each a
 * TM x TN block held as vec4 accumulators; A and B pass through shared memory in BK-deep
 * slices, double-buffered: the next slice is loaded into registers while the current one
 * is multiplied, so one barrier per slice. Each operand is read as vec4 along its
 * contiguous dimension when its layout allows (unit stride there, that dimension's size,
 * the other strides and the offset multiples of 4), else as 4 guarded scalars: the
 * pipeline is specialised by tile and layout; sizes, strides, offsets, alpha and beta
 * come in parameter words, so one pipeline serves every shape of a layout. */
typedef struct {
  int64_t B, M, N, K;
  int64_t a_b, a_m, a_k, b_b, b_k, b_n, c_b, c_m, c_n, c0_b, c0_m, c0_n;
  int64_t a_off, b_off, c_off, c0_off;
  double alpha, beta;
  bool has_c0;
} gemm;

/* How one operand's slice is loaded: along k (rows of A / columns of B contiguous in k)
 * or along the other dimension (m for A, n for B); vec4 or scalar. */
typedef struct {
  bool along_k, vec;
  const char *name; /* WGSL variable read */
} gemm_ld;

static bool m4(int64_t v) { return v % 4 == 0; }
/* vec4 along a dimension of size n (unit stride) when the other strides (for dimensions
 * of size > 1) and the offset are multiples of 4 and the binding is whole vec4s */
static bool gemm_vec_ok(int64_t n, int64_t off, int64_t s1, int64_t n1, int64_t sb, int64_t nb, const wg_buf *w) {
  return m4(n) && m4(off) && (n1 == 1 || m4(s1)) && (nb == 1 || m4(sb)) && w->size % 16 == 0 &&
         w->size <= wg_max_binding();
}

/* Emits the loads of one operand's slice starting at k0 into registers r<P><l>; P is 'a'
 * or 'b'. X is the tile's outer dimension (m or n), XT its size, base/sx/sk the WGSL names
 * of the batch base, outer stride and k stride, lim the outer size name. */
static void gemm_emit_load(sb *s, char P, const gemm_ld *ld, int XT, int BK, const char *base, const char *sx,
                           const char *sk, const char *x0, const char *lim, int NT) {
  int n4 = XT * BK / 4, slots = (n4 + NT - 1) / NT;
  for (int l = 0; l < slots; l++) {
    sbf(s, "    {\n      let e = t + %du;\n", l * NT);
    if (n4 % NT) sbf(s, "      if (e < %du) {\n", n4);
    if (ld->along_k) sbf(s, "      let x = e / %du; let kq = (e %% %du) * 4u;\n", BK / 4, BK / 4);
    else sbf(s, "      let kq = e / %du; let x = (e %% %du) * 4u;\n", XT / 4, XT / 4);
    sbf(s, "      let gx = %s + x; let gk = k0 + kq;\n", x0);
    if (ld->vec) {
      sbf(s, "      r%c%d = vec4<f32>(0.0);\n", P, l);
      sbf(s, "      if (gx < %s && gk < K) { r%c%d = %s[(%s + gx * %s + gk * %s) / 4u]; }\n", lim, P, l, ld->name, base, sx,
          sk);
    } else {
      for (int i = 0; i < 4; i++) { /* the 4 elements run along k or along x */
        int di = ld->along_k ? 0 : i, dk = ld->along_k ? i : 0;
        sbf(s, "      { var v: f32 = 0.0; if (gx + %du < %s && gk + %du < K) {"
               " v = bitcast<f32>(%s[%s + (gx + %du) * %s + (gk + %du) * %s]); } r%c%d[%d] = v; }\n",
            di, lim, dk, ld->name, base, di, sx, dk, sk, P, l, i);
      }
    }
    if (n4 % NT) sbf(s, "      }\n");
    sbf(s, "    }\n");
  }
}
/* Stores the registers into shared buffer `buf` (a WGSL expression 0u or 1u): the slice is
 * kept k-major, X contiguous, as vec4s of X. */
static void gemm_emit_store(sb *s, char P, const gemm_ld *ld, int XT, int BK, const char *buf, int NT) {
  int n4 = XT * BK / 4, slots = (n4 + NT - 1) / NT;
  char S = P == 'a' ? 'A' : 'B';
  for (int l = 0; l < slots; l++) {
    sbf(s, "    {\n      let e = t + %du;\n", l * NT);
    if (n4 % NT) sbf(s, "      if (e < %du) {\n", n4);
    if (ld->along_k) {
      sbf(s, "      let x = e / %du; let kq = (e %% %du) * 4u;\n", BK / 4, BK / 4);
      for (int i = 0; i < 4; i++)
        sbf(s, "      %cs[%s * %du + (kq + %du) * %du + x / 4u][x %% 4u] = r%c%d[%d];\n", S, buf, n4, i, XT / 4, P, l, i);
    } else {
      sbf(s, "      let kq = e / %du; let x = (e %% %du) * 4u;\n", XT / 4, XT / 4);
      sbf(s, "      %cs[%s * %du + kq * %du + x / 4u] = r%c%d;\n", S, buf, n4, XT / 4, P, l);
    }
    if (n4 % NT) sbf(s, "      }\n");
    sbf(s, "    }\n");
  }
}

/* Tile shape: CT_WEBGPU_GEMM=TMxTNxBK forces one (benchmarks); otherwise 128x128 slices of
 * 8 when the grid still has enough workgroups to fill a large GPU, else 64x64 of 16. */
static void gemm_tile(const gemm *g, int *TM, int *TN, int *BK) {
  const char *e = getenv("CT_WEBGPU_GEMM");
  int tm, tn, bk;
  if (e && sscanf(e, "%dx%dx%d", &tm, &tn, &bk) == 3 && (tm == 4 || tm == 8) && (tn == 4 || tn == 8) &&
      (bk == 4 || bk == 8 || bk == 16 || bk == 32)) {
    *TM = tm, *TN = tn, *BK = bk;
    return;
  }
  int64_t big = ((g->M + 127) / 128) * ((g->N + 127) / 128) * g->B;
  if (big >= 256) *TM = 8, *TN = 8, *BK = 8;
  else *TM = 4, *TN = 4, *BK = 16;
}

/* ---- the tile chosen by measurement (webgpu_tune.c) for GEMMs large enough to matter:
 * the candidates run on the real operands into a scratch C (C itself may alias C0) ---- */
static const int gemm_variants[3][3] = {{8, 8, 8}, {4, 4, 16}, {8, 4, 8}}; /* 128x128, 64x64, 128x64 */
static int gemm_forced = -1; /* the variant being timed */
static ct_status gemm_run(const ct_tensor *A, const ct_tensor *Bt, ct_tensor *C, const ct_tensor *C0, const gemm *g);
typedef struct {
  const ct_tensor *A, *Bt;
  ct_tensor *C;
  gemm g;
} gemm_tctx;
static ct_status gemm_tune_run(int v, void *ctx) {
  gemm_tctx *t = ctx;
  gemm_forced = v;
  ct_status st = gemm_run(t->A, t->Bt, t->C, NULL, &t->g);
  gemm_forced = -1;
  return st;
}
static void gemm_tuned(const ct_tensor *A, const ct_tensor *Bt, const gemm *g, int *TM, int *TN, int *BK) {
  if (gemm_forced >= 0) {
    *TM = gemm_variants[gemm_forced][0], *TN = gemm_variants[gemm_forced][1], *BK = gemm_variants[gemm_forced][2];
    return;
  }
  const char *e = getenv("CT_WEBGPU_GEMM");
  if ((e && *e) || (double)g->B * g->M * g->N * g->K < 33554432.0) return; /* forced, or small: the heuristic */
  int lgs[4] = {0, 0, 0, 0};
  int64_t dims[4] = {g->B, g->M, g->N, g->K};
  for (int i = 0; i < 4; i++)
    for (int64_t d = dims[i]; d > 1; d >>= 1) lgs[i]++;
  char cls[96]; /* log2 size buckets and the operands' contiguous dims (they pick vec4 loads) */
  snprintf(cls, sizeof cls, "B%d.M%d.N%d.K%d.a%d.b%d", lgs[0], lgs[1], lgs[2], lgs[3], g->a_k == 1, g->b_n == 1);
  int v = -1;
  if (wg_tune_active()) {
    ct_options o = ct_opts_dtype(CT_FLOAT32);
    o.device = ct_webgpu();
    int64_t sh[3] = {g->B, g->M, g->N};
    gemm_tctx t = {A, Bt, ct_empty(3, sh, o), *g};
    if (t.C) {
      t.g.has_c0 = false;
      t.g.beta = 0;
      t.g.c_off = 0, t.g.c_b = g->M * g->N, t.g.c_m = g->N, t.g.c_n = 1;
      v = wg_tune_pick("gemm", cls, 3, gemm_tune_run, &t);
      ct_release(t.C);
    } else ct_clear_error();
  } else v = wg_tune_pick("gemm", cls, 3, NULL, NULL); /* a recorded decision only */
  if (v >= 0) *TM = gemm_variants[v][0], *TN = gemm_variants[v][1], *BK = gemm_variants[v][2];
}

/* Split-K for a product with few output tiles and a long K (the GPT's weight gradients:
 * 256 x 256 outputs summed over 2048 positions make 4-16 workgroups on a 132-SM GPU): the
 * same kernel runs as a batch of S products over K/S each into a scratch [S, M, N], and one
 * elementwise pass adds the S partials in a fixed order (deterministic), applying alpha and
 * beta * C0. CT_WEBGPU_SPLITK=0 turns it off (A/B). Returns 0 when the product is not split.
 * K >= 512 splits too: ViT-Tiny's fc2 (197 x 192 outputs over K = 768: 42 workgroups of 32x32
 * walking 48 slices) becomes 4 x 42 workgroups of 12 slices plus the sum pass (H200, session 9:
 * ViT-Tiny b1 replay 1.65 -> 1.31 ms, ResNet-224 b1 0.83 -> 0.80, byte-GPT step unchanged at
 * 5.0 ms); CT_WEBGPU_SPLITK_SHORT=0 restores session 8's K >= 1024 (A/B). */
static int gemm_split_k(const gemm *g) {
  const char *e = getenv("CT_WEBGPU_SPLITK"), *es = getenv("CT_WEBGPU_SPLITK_SHORT");
  if ((e && *e == '0') || g->B != 1 || g->K < (es && *es == '0' ? 1024 : 512)) return 0;
  int TM, TN, BK;
  gemm_tile(g, &TM, &TN, &BK);
  int64_t tiles = ((g->M + 16 * TM - 1) / (16 * TM)) * ((g->N + 16 * TN - 1) / (16 * TN));
  if (tiles >= 132) return 0;
  int S = 1;
  while (S < 16 && g->K % (2 * S) == 0 && g->K / (2 * S) >= 128 && tiles * S < 264) S *= 2;
  return S > 1 ? S : 0;
}
static ct_status gemm_run_split(const ct_tensor *A, const ct_tensor *Bt, ct_tensor *C, const ct_tensor *C0, const gemm *g,
                                int S) {
  int64_t sh[3] = {S, g->M, g->N}, MN = g->M * g->N;
  ct_options o = ct_opts_dtype(CT_FLOAT32);
  o.device = C->storage->device;
  ct_tensor *P = ct_empty(3, sh, o);
  if (!P) return ct_last_status();
  gemm g2 = *g;
  g2.B = S, g2.K = g->K / S;
  g2.a_b = g2.K * g->a_k, g2.b_b = g2.K * g->b_k;
  g2.c_off = P->offset, g2.c_b = MN, g2.c_m = g->N, g2.c_n = 1;
  g2.alpha = 1, g2.beta = 0, g2.has_c0 = false;
  ct_status st = gemm_run(A, Bt, P, NULL, &g2);
  if (st == CT_OK) {
    bindset bs = {{0}, 0, -1};
    int bp = bind_of(&bs, P), bc = bind_of(&bs, C), b0 = C0 ? bind_of(&bs, C0) : -1;
    uint32_t gx, gy;
    grid((MN + 255) / 256, &gx, &gy);
    char al[40], be[40];
    sb s = {0};
    emit_bindings(&s, &bs);
    sbf(&s, "@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
            "  let e = (wid.y * %uu + wid.x) * 256u + li;\n  if (e >= %lldu) { return; }\n"
            "  let m = e / %lldu; let n = e %% %lldu;\n  var acc: f32 = 0.0;\n"
            "  for (var z: u32 = 0u; z < %du; z = z + 1u) { acc = acc + bitcast<f32>(b%d[%lldu + z * %lldu + e]); }\n"
            "  var v = %s * acc;\n",
        gx, (long long)MN, (long long)g->N, (long long)g->N, S, bp, (long long)P->offset, (long long)MN, flit(g->alpha, al));
    if (C0)
      sbf(&s, "  v = v + %s * bitcast<f32>(b%d[%lldu + m * %lldu + n * %lldu]);\n", flit(g->beta, be), b0,
          (long long)g->c0_off, (long long)g->c0_m, (long long)g->c0_n);
    sbf(&s, "  b%d[%lldu + m * %lldu + n * %lldu] = bitcast<u32>(v);\n}\n", bc, (long long)g->c_off, (long long)g->c_m,
        (long long)g->c_n);
    st = launch(&s, &bs, gx, gy, 1);
  }
  ct_release(P);
  return st;
}
/* Short products (ViT-Tiny at batch 1: M = 197 tokens, N = 192..768, K = 64..768 give 12-48
 * workgroups of 64x64, a tenth of a 132-SM GPU, each walking all of K): the same kernel with
 * 8x8 threads instead of 16x16, so a 32x32 tile per workgroup of 64 threads and 4x the
 * workgroups (7 x 6..24 for ViT), when the 64x64 grid (the heuristic's tile, not a forced or
 * tuned one) has fewer workgroups than a large GPU's 132 multiprocessors. Each output's sum
 * runs over k in the same order whatever the tile, so the values are the same bits.
 * CT_WEBGPU_GEMM_SMALL=0 turns it off (A/B), =1 forces it for any heuristic-tiled product. */
static int gemm_threads(const gemm *g, int TM, int TN, int BK) {
  const char *e = getenv("CT_WEBGPU_GEMM_SMALL");
  if ((e && *e == '0') || TM != 4 || TN != 4 || BK != 16) return 16;
  if (e && *e == '1') return 8;
  int64_t wgs = ((g->M + 63) / 64) * ((g->N + 63) / 64) * g->B;
  return wgs < 132 ? 8 : 16;
}
/* GELU (erf form) folded into an addmm's output pass (ct_webgpu_linear_gelu below arms it for one
 * Linear): the GELU kernel's expression on the value addmm would store, so the same bits. */
typedef struct {
  bool used;
} wg_gemm_epi;
static _Thread_local wg_gemm_epi *gemm_epi;
static ct_status gemm_run(const ct_tensor *A, const ct_tensor *Bt, ct_tensor *C, const ct_tensor *C0, const gemm *g) {
  if (g->M == 0 || g->N == 0 || g->B == 0) return CT_OK;
  CT_TRY(check_extent(A));
  CT_TRY(check_extent(Bt));
  CT_TRY(check_extent(C));
  if (C0) CT_TRY(check_extent(C0));
  int S = gemm_forced < 0 ? gemm_split_k(g) : 0;
  if (S) return gemm_run_split(A, Bt, C, C0, g, S);
  wg_gemm_epi *ge = gemm_forced < 0 && gemm_epi && !gemm_epi->used && C0 && g->B == 1 ? gemm_epi : NULL;
  int TM, TN, BK;
  gemm_tile(g, &TM, &TN, &BK);
  int NX = 16; /* threads along n and along m: NX x NX per workgroup */
  const char *genv = getenv("CT_WEBGPU_GEMM");
  if (gemm_forced < 0 && !(genv && *genv) && (double)g->B * g->M * g->N * g->K < 33554432.0) NX = gemm_threads(g, TM, TN, BK);
  else gemm_tuned(A, Bt, g, &TM, &TN, &BK);
  int NT = NX * NX, BM = NX * TM, BN = NX * TN;
  wg_buf *wa = A->storage->data, *wb = Bt->storage->data, *wc = C->storage->data, *w0 = C0 ? C0->storage->data : NULL;
  /* bindings: C read_write; A, B, C0 read-only unless they share C's buffer (then read
   * through C's binding: a buffer may not be bound writable and read-only at once) */
  wg_buf *bufs[5];
  int nb = 0;
  bufs[nb++] = wc;
  gemm_ld la = {false, false, "bC"}, lb = {false, false, "bC"};
  la.along_k = g->a_k == 1 || g->a_m != 1; /* the contiguous dimension, k when neither is */
  lb.along_k = g->b_k == 1 && g->b_n != 1;
  if (wa != wc) {
    la.name = "bA";
    la.vec = la.along_k ? g->a_k == 1 && gemm_vec_ok(g->K, g->a_off, g->a_m, g->M, g->a_b, g->B, wa)
                        : g->a_m == 1 && gemm_vec_ok(g->M, g->a_off, g->a_k, g->K, g->a_b, g->B, wa);
    bufs[nb++] = wa;
  }
  if (wb != wc) {
    lb.name = "bB";
    lb.vec = lb.along_k ? gemm_vec_ok(g->K, g->b_off, g->b_n, g->N, g->b_b, g->B, wb)
                        : g->b_n == 1 && gemm_vec_ok(g->N, g->b_off, g->b_k, g->K, g->b_b, g->B, wb);
    bufs[nb++] = wb;
  }
  const char *c0name = "bC";
  if (C0 && w0 != wc) {
    c0name = "b0";
    bufs[nb++] = w0;
  }
  uint32_t gx = (uint32_t)((g->N + BN - 1) / BN), gy = (uint32_t)((g->M + BM - 1) / BM), gz = (uint32_t)g->B;
  float alpha = (float)g->alpha, beta = (float)g->beta;
  uint32_t pr[21] = {(uint32_t)g->M,   (uint32_t)g->N,   (uint32_t)g->K,    (uint32_t)g->a_off, (uint32_t)g->a_b,
                     (uint32_t)g->a_m, (uint32_t)g->a_k, (uint32_t)g->b_off, (uint32_t)g->b_b, (uint32_t)g->b_k,
                     (uint32_t)g->b_n, (uint32_t)g->c_off, (uint32_t)g->c_b, (uint32_t)g->c_m, (uint32_t)g->c_n,
                     (uint32_t)g->c0_off, (uint32_t)g->c0_b, (uint32_t)g->c0_m, (uint32_t)g->c0_n, 0, 0};
  memcpy(&pr[19], &alpha, 4);
  memcpy(&pr[20], &beta, 4);
  sb s = {0};
  int bi = 0;
  if (ge) sbf(&s, "%s", WGSL_ERFC);
  sbf(&s, "@group(0) @binding(%d) var<storage, read_write> bC: array<u32>;\n", bi++);
  if (wa != wc) sbf(&s, "@group(0) @binding(%d) var<storage, read> bA: array<%s>;\n", bi++, la.vec ? "vec4<f32>" : "u32");
  if (wb != wc) sbf(&s, "@group(0) @binding(%d) var<storage, read> bB: array<%s>;\n", bi++, lb.vec ? "vec4<f32>" : "u32");
  if (C0 && w0 != wc) sbf(&s, "@group(0) @binding(%d) var<storage, read> b0: array<u32>;\n", bi++);
  sbf(&s, "@group(0) @binding(%d) var<storage, read> pr: array<u32>; /* read-only: uniform for the barriers */\n", bi);
  sbf(&s, "var<workgroup> As: array<vec4<f32>, %d>;\nvar<workgroup> Bs: array<vec4<f32>, %d>;\n", 2 * BM * BK / 4,
      2 * BN * BK / 4);
  sbf(&s, "@compute @workgroup_size(%d)\n"
          "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {\n", NT);
  sbf(&s, "  let M = pr[0]; let N = pr[1]; let K = pr[2];\n"
          "  let bz = wid.z; let row0 = wid.y * %du; let col0 = wid.x * %du;\n"
          "  let ab = pr[3] + bz * pr[4]; let am_s = pr[5]; let ak_s = pr[6];\n"
          "  let bb = pr[7] + bz * pr[8]; let bk_s = pr[9]; let bn_s = pr[10];\n"
          "  let tx = t %% %du; let ty = t / %du;\n",
      BM, BN, NX, NX);
  int sa = (BM * BK / 4 + NT - 1) / NT, sbn = (BN * BK / 4 + NT - 1) / NT;
  for (int l = 0; l < sa; l++) sbf(&s, "  var ra%d: vec4<f32>;\n", l);
  for (int l = 0; l < sbn; l++) sbf(&s, "  var rb%d: vec4<f32>;\n", l);
  for (int i = 0; i < TM; i++)
    for (int h = 0; h < TN / 4; h++) sbf(&s, "  var c%d_%d = vec4<f32>(0.0);\n", i, h);
  /* the first slice, then the loop: load next, multiply current, store next, barrier */
  sbf(&s, "  {\n    let k0 = 0u;\n");
  gemm_emit_load(&s, 'a', &la, BM, BK, "ab", "am_s", "ak_s", "row0", "M", NT);
  gemm_emit_load(&s, 'b', &lb, BN, BK, "bb", "bn_s", "bk_s", "col0", "N", NT);
  gemm_emit_store(&s, 'a', &la, BM, BK, "0u", NT);
  gemm_emit_store(&s, 'b', &lb, BN, BK, "0u", NT);
  sbf(&s, "  }\n  workgroupBarrier();\n  var cur = 0u;\n");
  sbf(&s, "  for (var kt = 0u; kt < K; kt = kt + %du) {\n    let k0 = kt + %du;\n    let more = k0 < K;\n", BK, BK);
  sbf(&s, "    if (more) {\n");
  gemm_emit_load(&s, 'a', &la, BM, BK, "ab", "am_s", "ak_s", "row0", "M", NT);
  gemm_emit_load(&s, 'b', &lb, BN, BK, "bb", "bn_s", "bk_s", "col0", "N", NT);
  sbf(&s, "    }\n    let ao = cur * %du; let bo = cur * %du;\n", BM * BK / 4, BN * BK / 4);
  for (int kk = 0; kk < BK; kk++) {
    for (int gi = 0; gi < TM / 4; gi++) sbf(&s, "    let a%d_%d = As[ao + %du + ty];\n", kk, gi, kk * BM / 4 + NX * gi);
    for (int h = 0; h < TN / 4; h++) sbf(&s, "    let b%d_%d = Bs[bo + %du + tx];\n", kk, h, kk * BN / 4 + NX * h);
    for (int i = 0; i < TM; i++)
      for (int h = 0; h < TN / 4; h++)
        sbf(&s, "    c%d_%d = fma(vec4<f32>(a%d_%d[%d]), b%d_%d, c%d_%d);\n", i, h, kk, i / 4, i % 4, kk, h, i, h);
  }
  sbf(&s, "    if (more) {\n");
  gemm_emit_store(&s, 'a', &la, BM, BK, "(cur ^ 1u)", NT);
  gemm_emit_store(&s, 'b', &lb, BN, BK, "(cur ^ 1u)", NT);
  sbf(&s, "    }\n    workgroupBarrier();\n    cur = cur ^ 1u;\n  }\n");
  sbf(&s, "  let alpha = bitcast<f32>(pr[19]); let beta = bitcast<f32>(pr[20]);\n"
          "  let cb = pr[11] + bz * pr[12]; let c0b = pr[15] + bz * pr[16];\n");
  char beta_term[160] = "";
  if (C0) snprintf(beta_term, sizeof beta_term, " + beta * bitcast<f32>(%s[c0b + m * pr[17] + n * pr[18]])", c0name);
  for (int i = 0; i < TM; i++) {
    sbf(&s, "  { let m = row0 + %du + ty * 4u;\n", (i / 4) * 4 * NX + i % 4);
    for (int h = 0; h < TN / 4; h++)
      for (int j = 0; j < 4; j++)
        sbf(&s,
            ge ? "    { let n = col0 + %du + tx * 4u; if (m < M && n < N) { let v = alpha * c%d_%d[%d]%s;"
                 " bC[cb + m * pr[13] + n * pr[14]] = bitcast<u32>(0.5 * v * werfc(-v * 0.7071067811865476)); } }\n"
               : "    { let n = col0 + %du + tx * 4u; if (m < M && n < N) { bC[cb + m * pr[13] + n * pr[14]] = "
                 "bitcast<u32>(alpha * c%d_%d[%d]%s); } }\n",
            h * 4 * NX + j, i, h, j, beta_term);
    sbf(&s, "  }\n");
  }
  sbf(&s, "}\n");
  if (s.oom) {
    free(s.p);
    return CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
  }
  if (getenv("CT_WEBGPU_DUMP_GEMM")) fputs(s.p, stderr);
  wg_pipe *p = wg_pipeline(s.p);
  free(s.p);
  if (!p) return ct_last_status();
  ct_status st = wg_dispatch_p(p, nb, bufs, pr, 21, gx, gy, gz);
  if (st == CT_OK && ge) ge->used = true;
  return st;
}

/* gelu(lin(x)) for a Linear with a bias (ViT's MLP, src/models/vit.c): on WebGPU, float32, without
 * grad, where the Linear is one addmm (x 2-D, or 3-D contiguous), the GELU runs in the addmm's
 * output pass: one dispatch less per MLP. Returns lin's output; *fused says whether the GELU was
 * applied (if not, the caller applies it). CT_WEBGPU_GEMM_GELU=0 turns the fold off (A/B). */
ct_tensor *ct_webgpu_linear_gelu(ct_module *lin, const ct_tensor *x, bool *fused) {
  *fused = false;
  const char *e = getenv("CT_WEBGPU_GEMM_GELU");
  const char *ty = lin ? ct_module_type_name(lin) : NULL;
  bool ok = !(e && *e == '0') && ty && !strcmp(ty, "Linear") && x && ct_tensor_device(x).type == CT_DEVICE_WEBGPU &&
            ct_tensor_dtype(x) == CT_FLOAT32 && !ct_is_grad_enabled() && ct_module_param(lin, "bias") &&
            (ct_ndim(x) == 2 || (ct_ndim(x) == 3 && ct_is_contiguous(x)));
  if (!ok) return ct_module_forward(lin, x);
  wg_gemm_epi ge = {false};
  gemm_epi = &ge;
  ct_tensor *y = ct_module_forward(lin, x);
  gemm_epi = NULL;
  *fused = y && ge.used;
  return y;
}

static ct_status k_linalg(const ct_call *c) {
  WG_BEGIN(c);
  int op = c->op;
  bool add = op == CT_OP_addmm || op == CT_OP_baddbmm || op == CT_OP_addmv;
  const ct_tensor *a = c->in[add ? 1 : 0], *b = c->in[add ? 2 : 1], *s0 = add ? c->in[0] : NULL;
  ct_tensor *o = c->out[0];
  CT_TRY(need_f32(c, a));
  CT_TRY(need_f32(c, b));
  CT_TRY(need_f32(c, o));
  if (s0) CT_TRY(need_f32(c, s0));
  gemm g;
  memset(&g, 0, sizeof g);
  g.B = 1;
  g.alpha = add ? c->a.f[0] : 1.0;
  g.beta = add ? c->a.f[1] : 0.0;
  g.has_c0 = add && g.beta != 0; /* beta 0 ignores self, NaN included, as PyTorch */
  if (op == CT_OP_mm || op == CT_OP_addmm) {
    g.M = a->shape[0], g.K = a->shape[1], g.N = b->shape[1];
    g.a_m = a->stride[0], g.a_k = a->stride[1], g.b_k = b->stride[0], g.b_n = b->stride[1];
    g.c_m = o->stride[0], g.c_n = o->stride[1];
    if (s0) g.c0_m = s0->stride[0], g.c0_n = s0->stride[1];
  } else if (op == CT_OP_bmm || op == CT_OP_baddbmm) {
    g.B = a->shape[0], g.M = a->shape[1], g.K = a->shape[2], g.N = b->shape[2];
    g.a_b = a->stride[0], g.a_m = a->stride[1], g.a_k = a->stride[2];
    g.b_b = b->stride[0], g.b_k = b->stride[1], g.b_n = b->stride[2];
    g.c_b = o->stride[0], g.c_m = o->stride[1], g.c_n = o->stride[2];
    if (s0) g.c0_b = s0->stride[0], g.c0_m = s0->stride[1], g.c0_n = s0->stride[2];
  } else if (op == CT_OP_mv || op == CT_OP_addmv) {
    g.M = a->shape[0], g.K = a->shape[1], g.N = 1;
    g.a_m = a->stride[0], g.a_k = a->stride[1], g.b_k = b->stride[0];
    g.c_m = o->stride[0];
    if (s0) g.c0_m = s0->stride[0];
  } else if (op == CT_OP_dot) {
    g.M = 1, g.N = 1, g.K = a->shape[0];
    g.a_k = a->stride[0], g.b_k = b->stride[0];
  } else {
    return unsupported(c, "This product has no WGSL kernel yet.");
  }
  if (g.B > (int64_t)wg_max_groups()) return unsupported(c, "The batch exceeds the device's workgroups per dimension.");
  g.a_off = a->offset, g.b_off = b->offset, g.c_off = o->offset, g.c0_off = s0 ? s0->offset : 0;
  wg_lock();
  ct_status st;
  if (g.K == 0) { /* an empty sum: beta * self or zeros */
    ct_tensor *ts[2] = {o, (ct_tensor *)s0};
    char e[80], be[40];
    snprintf(e, sizeof e, "%s * x1", flit(g.beta, be));
    st = g.has_c0 ? ew_run(2, ts, 0, e, 0, 0, NULL) : ew_run(1, ts, 2, NULL, 0, 0, NULL);
  } else {
    st = gemm_run(a, b, o, g.has_c0 ? s0 : NULL, &g);
  }
  wg_unlock();
  return st;
}

/* ---- embedding: out[..., j] = w[idx[...], j]; bad indices raise the device flag ---- */
static void idx_load(char *out, size_t n, int bi, ct_dtype dt, const char *o) {
  /* (value as u32, ok) for int64 / int32 indices */
  if (dt == CT_INT64) snprintf(out, n, "vec2<u32>(b%d[2u * (%s)], select(0u, 1u, b%d[2u * (%s) + 1u] == 0u))", bi, o, bi, o);
  else snprintf(out, n, "vec2<u32>(b%d[%s], select(0u, 1u, bitcast<i32>(b%d[%s]) >= 0))", bi, o, bi, o);
}

static ct_status k_embedding(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *w = c->in[0], *ix = c->in[1];
  ct_tensor *o = c->out[0];
  CT_TRY(need_f32(c, w));
  if (ix->dtype != CT_INT64 && ix->dtype != CT_INT32) return unsupported(c, "Indices must be int64 or int32.");
  int64_t n = ct_numel(o), V = w->shape[0], D = w->shape[1];
  if (n == 0) return CT_OK;
  wg_lock();
  ct_status st = check_extent(w);
  if (st == CT_OK) st = check_extent(ix);
  if (st == CT_OK) st = check_extent(o);
  wg_buf *flag = wg_flag_buffer();
  if (st == CT_OK && !flag) st = CT_ERR(CT_ERR_OOM, "WebGPU: no flag buffer");
  if (st != CT_OK) {
    wg_unlock();
    return st;
  }
  bindset bs = {{0}, 0, -1};
  int bw = bind_of(&bs, w), bx = bind_of(&bs, ix), bo = bind_of(&bs, o);
  bs.atomic_idx = bind_buf(&bs, flag);
  /* positions: index space of ix (its shape), tensors ix and o's leading dims */
  int64_t st2[2][CT_MAX_DIMS];
  for (int d = 0; d < ix->ndim; d++) {
    st2[0][d] = ix->stride[d];
    st2[1][d] = o->stride[d];
  }
  geom g;
  geom_make(&g, ix->ndim, ix->shape, 2, st2);
  int64_t base[2] = {ix->offset, o->offset};
  uint32_t gx, gy;
  grid((n + 255) / 256, &gx, &gy);
  char ld[200];
  idx_load(ld, sizeof ld, bx, ix->dtype, "k0");
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
  sbf(&s, "  let e = (wid.y * %uu + wid.x) * 256u + li;\n  if (e >= %lldu) { return; }\n", gx, (long long)n);
  sbf(&s, "  let i = e / %lldu; let j = e %% %lldu;\n", (long long)D, (long long)D);
  emit_offsets(&s, "i", &g, base, "k");
  sbf(&s, "  let iv = %s;\n", ld);
  sbf(&s, "  var v: u32 = 0u;\n");
  sbf(&s, "  if (iv.y == 1u && iv.x < %lldu) { v = b%d[%lldu + iv.x * %lldu + j * %lldu]; }\n", (long long)V, bw,
      (long long)w->offset, (long long)w->stride[0], (long long)w->stride[1]);
  sbf(&s, "  else { atomicMax(&b%d[0], 1u); }\n", bs.atomic_idx);
  sbf(&s, "  b%d[k1 + j * %lldu] = v;\n}\n", bo, (long long)o->stride[o->ndim - 1]);
  st = launch(&s, &bs, gx, gy, 1);
  /* a bad index is reported at the next synchronisation or read-back (as PyTorch's CUDA
   * device-side assert): waiting here cost a read-back per embedding, per step */
  if (st == CT_OK) wg_arm_flag();
  wg_unlock();
  return st;
}

/* gw[v, j] = sum of g[i, j] over positions i with idx[i] == v (not the padding row):
 * a workgroup per (row v, 256 columns); the positions' ids pass through workgroup memory
 * 256 at a time, and each thread adds the gradient rows whose id is v in position order
 * (the CPU's order: deterministic, no float atomics), reading only the matching rows. The
 * branch on an id is uniform across the workgroup (all threads see the same id). */
static ct_status k_embedding_backward(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *gr = c->in[0], *ix = c->in[1];
  ct_tensor *o = c->out[0];
  CT_TRY(need_f32(c, gr));
  CT_TRY(need_f32(c, o));
  if (ix->dtype != CT_INT64 && ix->dtype != CT_INT32) return unsupported(c, "Indices must be int64 or int32.");
  int64_t V = o->shape[0], D = o->shape[1], n = ct_numel(ix), tot = V * D;
  if (tot == 0) return CT_OK;
  wg_lock();
  ct_status st = check_extent(gr);
  if (st == CT_OK) st = check_extent(ix);
  if (st == CT_OK) st = check_extent(o);
  wg_buf *flag = wg_flag_buffer();
  if (st == CT_OK && !flag) st = CT_ERR(CT_ERR_OOM, "WebGPU: no flag buffer");
  if (st != CT_OK) {
    wg_unlock();
    return st;
  }
  bindset bs = {{0}, 0, -1};
  int bgr = bind_of(&bs, gr), bx = bind_of(&bs, ix), bo = bind_of(&bs, o);
  bs.atomic_idx = bind_buf(&bs, flag);
  int64_t st2[2][CT_MAX_DIMS];
  for (int d = 0; d < ix->ndim; d++) {
    st2[0][d] = ix->stride[d];
    st2[1][d] = gr->stride[d];
  }
  geom g;
  geom_make(&g, ix->ndim, ix->shape, 2, st2);
  int64_t base[2] = {ix->offset, gr->offset}, JB = (D + 255) / 256;
  uint32_t gx, gy;
  grid(V * JB, &gx, &gy);
  char ld[200];
  idx_load(ld, sizeof ld, bx, ix->dtype, "k0");
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "var<workgroup> sid: array<u32, 256>;\n@compute @workgroup_size(256)\n"
          "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
  sbf(&s, "  let wgi = wid.y * %uu + wid.x;\n  if (wgi >= %lldu) { return; }\n", gx, (long long)(V * JB));
  sbf(&s, "  let vrow = wgi / %lldu; let j = (wgi %% %lldu) * 256u + li;\n  var acc: f32 = 0.0;\n", (long long)JB,
      (long long)JB);
  sbf(&s, "  for (var i0: u32 = 0u; i0 < %lldu; i0 = i0 + 256u) {\n    var id: u32 = 0xffffffffu;\n"
          "    if (i0 + li < %lldu) {\n",
      (long long)n, (long long)n);
  emit_offsets(&s, "i0 + li", &g, base, "k");
  sbf(&s, "    let iv = %s;\n", ld);
  sbf(&s, "    if (iv.y == 0u || iv.x >= %lldu) { if (wgi == 0u) { atomicMax(&b%d[0], 1u); } }\n    else { id = iv.x; }\n",
      (long long)V, bs.atomic_idx);
  if (c->a.k[0]) sbf(&s, "    if (id == %lldu) { id = 0xffffffffu; }\n", (long long)c->a.i[0]);
  sbf(&s, "    }\n    sid[li] = id;\n    workgroupBarrier();\n"
          "    let m = min(256u, %lldu - i0);\n"
          "    for (var q: u32 = 0u; q < m; q = q + 1u) {\n      if (sid[q] == vrow && j < %lldu) {\n",
      (long long)n, (long long)D);
  emit_offsets(&s, "i0 + q", &g, base, "p");
  sbf(&s, "      acc = acc + bitcast<f32>(b%d[p1 + j * %lldu]);\n      }\n    }\n    workgroupBarrier();\n  }\n", bgr,
      (long long)gr->stride[gr->ndim - 1]);
  sbf(&s, "  if (j < %lldu) { b%d[%lldu + vrow * %lldu + j * %lldu] = bitcast<u32>(acc); }\n}\n", (long long)D, bo,
      (long long)o->offset, (long long)o->stride[0], (long long)o->stride[1]);
  st = launch(&s, &bs, gx, gy, 1);
  if (st == CT_OK) wg_arm_flag();
  wg_unlock();
  return st;
}

/* ---- gather along k0 and scatter_add (its backward): float32 values, int64/int32
 * indices. The op layer has checked the indices on the host; the kernels still guard
 * (an index outside the dim reads 0 / adds nothing), so nothing reads out of bounds. ---- */
/* WGSL: index element at offset expression o of binding bi as i32 (int64 beyond i32: -2^31) */
static void idx_i32(char *out, size_t n, int bi, ct_dtype dt, const char *o) {
  if (dt == CT_INT64)
    snprintf(out, n, "select(-2147483647 - 1, bitcast<i32>(b%d[2u * (%s)]), b%d[2u * (%s) + 1u] == select(0u, 0xffffffffu, "
             "bitcast<i32>(b%d[2u * (%s)]) < 0))", bi, o, bi, o, bi, o);
  else snprintf(out, n, "bitcast<i32>(b%d[%s])", bi, o);
}

static ct_status gather_run(const ct_call *c, const ct_tensor *x, const ct_tensor *ix, ct_tensor *o, int dim);
static ct_status k_gather(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *x = c->in[0], *ix = c->in[1];
  ct_tensor *o = c->out[0];
  CT_TRY(need_f32(c, x));
  CT_TRY(need_f32(c, o));
  if (ix->dtype != CT_INT64 && ix->dtype != CT_INT32) return unsupported(c, "Indices must be int64 or int32.");
  if (ct_numel(o) == 0) return CT_OK;
  if (o->ndim != ix->ndim || (x->ndim && x->ndim != o->ndim)) return unsupported(c, "Unexpected ranks.");
  return gather_run(c, x, ix, o, (int)c->a.k[0]);
}

/* index_select: gather with the 1-D index broadcast over the other dims */
static ct_status k_index_select(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *x = c->in[0], *ix = c->in[1];
  ct_tensor *o = c->out[0];
  CT_TRY(need_f32(c, x));
  CT_TRY(need_f32(c, o));
  if (ix->dtype != CT_INT64 && ix->dtype != CT_INT32) return unsupported(c, "Indices must be int64 or int32.");
  if (ct_numel(o) == 0) return CT_OK;
  if (x->ndim && x->ndim != o->ndim) return unsupported(c, "Unexpected ranks.");
  int dim = (int)c->a.k[0];
  ct_tensor iv = *ix; /* a borrowed view: out's shape, the index's stride along dim */
  iv.ndim = o->ndim;
  for (int d = 0; d < o->ndim; d++) {
    iv.shape[d] = o->shape[d];
    iv.stride[d] = (x->ndim && d == dim && ix->ndim) ? ix->stride[0] : 0;
  }
  return gather_run(c, x, &iv, o, dim);
}

static ct_status gather_run(const ct_call *c, const ct_tensor *x, const ct_tensor *ix, ct_tensor *o, int dim) {
  (void)c;
  int64_t n = ct_numel(o);
  int64_t size = x->ndim ? x->shape[dim] : 1, sd = x->ndim ? x->stride[dim] : 0;
  int64_t st[3][CT_MAX_DIMS];
  for (int d = 0; d < o->ndim; d++) {
    st[0][d] = o->stride[d];
    st[1][d] = ix->stride[d];
    st[2][d] = (x->ndim && d != dim) ? x->stride[d] : 0;
  }
  geom g;
  geom_make(&g, o->ndim, o->shape, 3, st);
  int64_t base[3] = {o->offset, ix->offset, x->offset};
  wg_lock();
  ct_status stt = check_extent(x);
  if (stt == CT_OK) stt = check_extent(ix);
  if (stt == CT_OK) stt = check_extent(o);
  if (stt != CT_OK) {
    wg_unlock();
    return stt;
  }
  bindset bs = {{0}, 0, -1};
  int bo = bind_of(&bs, o), bx = bind_of(&bs, ix), bsrc = bind_of(&bs, x);
  uint32_t gx, gy;
  grid((n + 255) / 256, &gx, &gy);
  char ld[400];
  idx_i32(ld, sizeof ld, bx, ix->dtype, "o1");
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
  sbf(&s, "  let i = (wid.y * %uu + wid.x) * 256u + li;\n  if (i >= %lldu) { return; }\n", gx, (long long)n);
  emit_offsets(&s, "i", &g, base, "o");
  sbf(&s, "  var v: i32 = %s;\n  if (v < 0) { v = v + %lld; }\n", ld, (long long)size);
  sbf(&s, "  var r: u32 = 0u;\n  if (v >= 0 && v < %lld) { r = b%d[o2 + u32(v) * %lldu]; }\n  b%d[o0] = r;\n}\n",
      (long long)size, bsrc, (long long)sd, bo);
  stt = launch(&s, &bs, gx, gy, 1);
  wg_unlock();
  return stt;
}

/* out = self; out[c with dim -> idx[p]] += src[p]: a thread per output element walks the
 * index positions along dim in order (the CPU's summation order, no float atomics) */
static ct_status k_scatter_add(const ct_call *c) {
  WG_BEGIN(c);
  if (c->op != CT_OP_scatter_add || c->n_in < 3) return unsupported(c, "Only scatter_add has a WGSL kernel.");
  ct_tensor *o = c->out[0], *self = c->in[0], *ix = c->in[1], *src = c->in[2];
  CT_TRY(need_f32(c, o));
  CT_TRY(need_f32(c, self));
  CT_TRY(need_f32(c, src));
  if (ix->dtype != CT_INT64 && ix->dtype != CT_INT32) return unsupported(c, "Indices must be int64 or int32.");
  int64_t n = ct_numel(o);
  if (n == 0) return CT_OK;
  int nd = o->ndim;
  if (nd == 0 || ix->ndim != nd || src->ndim != nd) return unsupported(c, "Only tensors of one rank >= 1 have a WGSL kernel.");
  if (src->storage == o->storage || ix->storage == o->storage)
    return unsupported(c, "The source or index shares the output's memory.");
  int dim = (int)c->a.k[0];
  wg_lock();
  ct_status stt = copy_run(o, self);
  if (stt == CT_OK) stt = check_extent(ix);
  if (stt == CT_OK) stt = check_extent(src);
  if (stt == CT_OK) stt = check_extent(o);
  if (stt != CT_OK || ct_numel(ix) == 0) {
    wg_unlock();
    return stt;
  }
  bindset bs = {{0}, 0, -1};
  int bo = bind_of(&bs, o), bx = bind_of(&bs, ix), bsrc = bind_of(&bs, src);
  uint32_t gx, gy;
  grid((n + 255) / 256, &gx, &gy);
  char ld[400];
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
  sbf(&s, "  let i = (wid.y * %uu + wid.x) * 256u + li;\n  if (i >= %lldu) { return; }\n", gx, (long long)n);
  sbf(&s, "  var q: u32 = i;\n  var oo: u32 = %lldu;\n  var ib: u32 = %lldu;\n  var sbs: u32 = %lldu;\n  var cd: u32 = 0u;\n",
      (long long)o->offset, (long long)ix->offset, (long long)src->offset);
  for (int d = nd - 1; d >= 0; d--) {
    sbf(&s, "  { let c = q %% %lldu; q = q / %lldu;\n    oo = oo + c * %lldu;\n", (long long)o->shape[d],
        (long long)o->shape[d], (long long)o->stride[d]);
    if (d == dim) sbf(&s, "    cd = c;\n  }\n");
    else
      sbf(&s, "    if (c >= %lldu) { return; }\n    ib = ib + c * %lldu; sbs = sbs + c * %lldu;\n  }\n",
          (long long)ix->shape[d], (long long)ix->stride[d], (long long)src->stride[d]);
  }
  char o1[64];
  snprintf(o1, sizeof o1, "ib + k * %lldu", (long long)ix->stride[dim]);
  idx_i32(ld, sizeof ld, bx, ix->dtype, o1);
  sbf(&s, "  var acc: f32 = bitcast<f32>(b%d[oo]);\n", bo);
  sbf(&s, "  for (var k: u32 = 0u; k < %lldu; k = k + 1u) {\n    var v: i32 = %s;\n    if (v < 0) { v = v + %lld; }\n",
      (long long)ix->shape[dim], ld, (long long)o->shape[dim]);
  sbf(&s, "    if (v >= 0 && u32(v) == cd) { acc = acc + bitcast<f32>(b%d[sbs + k * %lldu]); }\n  }\n", bsrc,
      (long long)src->stride[dim]);
  sbf(&s, "  b%d[oo] = bitcast<u32>(acc);\n}\n", bo);
  stt = launch(&s, &bs, gx, gy, 1);
  wg_unlock();
  return stt;
}

/* arange / linspace / logspace: the CPU's double formula on the host, uploaded (exact,
 * and no kernel to compile for a one-off fill) */
static ct_status k_arange(const ct_call *c) {
  WG_BEGIN(c);
  ct_tensor *o = c->out[0];
  if (o->dtype != CT_FLOAT32 && o->dtype != CT_INT64 && o->dtype != CT_INT32) return need_f32(c, o);
  int64_t n = ct_numel(o);
  if (n == 0) return CT_OK;
  if (n > 1 && (o->ndim != 1 || o->stride[0] != 1)) return unsupported(c, "Only a contiguous output is supported.");
  CT_TRY(check_extent(o));
  size_t isz = ct_dtype_size(o->dtype);
  char *buf = malloc((size_t)n * isz);
  if (!buf) return CT_ERR(CT_ERR_OOM, "out of memory (%lld bytes)", (long long)(n * (int64_t)isz));
  for (int64_t i = 0; i < n; i++) {
    char *p = buf + i * (int64_t)isz;
    double v;
    int64_t iv = 0;
    bool is_int = o->dtype != CT_FLOAT32;
    if (c->a.k[0] == 0) {
      v = c->a.f[0] + (double)i * c->a.f[1];
      iv = c->a.s[0].i + i * c->a.s[1].i;
    } else {
      double start = c->a.f[0], end = c->a.f[1], step = n > 1 ? (end - start) / (double)(n - 1) : 0;
      int64_t half = n / 2;
      v = n == 1 ? start : i < half ? start + step * (double)i : end - step * (double)(n - 1 - i);
      if (c->a.k[0] == 2) v = pow(c->a.f[2], v);
      iv = (int64_t)v;
    }
    if (!is_int) {
      float f = (float)v;
      memcpy(p, &f, 4);
    } else if (o->dtype == CT_INT64) memcpy(p, &iv, 8);
    else {
      int32_t w = (int32_t)iv;
      memcpy(p, &w, 4);
    }
  }
  ct_status st = ct_webgpu_backend.upload(o->storage, (size_t)o->offset * isz, buf, (size_t)n * isz);
  free(buf);
  return st;
}

/* ---- fused layer_norm / rms_norm (the CPU's native_layer_norm / native_rms_norm /
 * native_norm_backward contract, src/backend/cpu/kernels_norm.c): a workgroup per row,
 * statistics in float32 with workgroup tree reductions (the CPU's are in double: float32
 * sums in another order), dweight/dbias as column sums in one more dispatch. Replaces
 * ~8 composed dispatches forward and ~20 backward per norm. ---- */
#define NORM_RED_PLAIN  \
    "var<workgroup> ra: array<f32, 256>;\nvar<workgroup> rb: array<f32, 256>;\n"  \
    "fn red2(li: u32, a: f32, b: f32) -> vec2<f32> {\n  ra[li] = a; rb[li] = b;\n  workgroupBarrier();\n"  \
    "  for (var h: u32 = 128u; h > 0u; h = h >> 1u) {\n"  \
    "    if (li < h) { ra[li] = ra[li] + ra[li + h]; rb[li] = rb[li] + rb[li + h]; }\n    workgroupBarrier();\n  }\n"  \
    "  let r = vec2<f32>(ra[0], rb[0]);\n  workgroupBarrier();\n  return r;\n}\n"
static const char *norm_red_plain = NORM_RED_PLAIN;
static const char *norm_red_fn = NORM_RED_PLAIN; /* the batch norm kernels' reduction */
/* With subgroups (wg_subgroups()): each subgroup sums its lanes in registers, its first lane
 * writes the partial at li / size (subgroups are consecutive invocations of the 1-D
 * workgroup, as on NVIDIA's and SwiftShader's Vulkan drivers), one barrier, then every thread
 * adds the 256 / size partials in the same order: 2 barriers instead of 9. */
static const char *norm_red_sg =
    "var<workgroup> ra: array<f32, 256>;\nvar<workgroup> rb: array<f32, 256>;\n"
    "var<private> sg_i: u32;\nvar<private> sg_n: u32;\n"
    "fn red2(li: u32, a: f32, b: f32) -> vec2<f32> {\n  let sa = subgroupAdd(a); let sb = subgroupAdd(b);\n"
    "  if (sg_i == 0u) { ra[li / sg_n] = sa; rb[li / sg_n] = sb; }\n  workgroupBarrier();\n"
    "  var x: f32 = 0.0; var y: f32 = 0.0;\n"
    "  for (var k: u32 = 0u; k < 256u / sg_n; k = k + 1u) { x = x + ra[k]; y = y + rb[k]; }\n"
    "  workgroupBarrier();\n  return vec2<f32>(x, y);\n}\n";
/* the reduction's text, the entry point's extra builtins and their first statement */
typedef struct {
  const char *fn, *args, *init;
} norm_red;
static norm_red norm_red_pick(sb *s) {
  if (!wg_subgroups()) return (norm_red){norm_red_plain, "", ""};
  sbf(s, "enable subgroups;\n"); /* directives come before every declaration */
  return (norm_red){norm_red_sg, ", @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgn: u32",
                    "  sg_i = sgi; sg_n = sgn;\n"};
}
static bool norm_layout_ok(const ct_tensor *t, int64_t n) {
  return t && t->dtype == CT_FLOAT32 && ct_is_contiguous(t) && (n < 0 || ct_numel(t) == n);
}
static ct_status k_native_norm(const ct_call *c) {
  WG_BEGIN(c);
  bool rms = c->a.k[0], hw = c->a.k[1], hb = !rms && c->a.k[2];
  const ct_tensor *x = c->in[0], *w = hw ? c->in[1] : NULL, *b = hb ? c->in[2] : NULL;
  ct_tensor *y = c->out[0], *mean = rms ? NULL : c->out[1], *rstd = c->out[rms ? 1 : 2];
  int64_t N = c->a.i[0], numel = ct_numel(x);
  CT_TRY(need_f32(c, x));
  if (N < 1 || numel % N || !norm_layout_ok(x, -1) || !norm_layout_ok(y, numel) || (hw && !norm_layout_ok(w, N)) ||
      (hb && !norm_layout_ok(b, N)) || (mean && !norm_layout_ok(mean, numel / N)) || !norm_layout_ok(rstd, numel / N))
    return unsupported(c, "Expected contiguous float32 tensors.");
  int64_t rows = numel / N;
  if (rows == 0) return CT_OK;
  wg_lock();
  const ct_tensor *all[6] = {x, y, w, b, mean, rstd};
  ct_status st = CT_OK;
  for (int i = 0; i < 6 && st == CT_OK; i++)
    if (all[i]) st = check_extent(all[i]);
  if (st != CT_OK) {
    wg_unlock();
    return st;
  }
  bindset bs = {{0}, 0, -1};
  int bx = bind_of(&bs, x), by = bind_of(&bs, y), bw = hw ? bind_of(&bs, w) : -1, bb = hb ? bind_of(&bs, b) : -1;
  int bm = mean ? bind_of(&bs, mean) : -1, br = bind_of(&bs, rstd);
  uint32_t gx, gy;
  grid(rows, &gx, &gy);
  char eps[40];
  sb s = {0};
  norm_red nr = norm_red_pick(&s);
  emit_bindings(&s, &bs);
  sbf(&s, "%s@compute @workgroup_size(256)\n"
          "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32%s) {\n%s"
          "  let r = wid.y * %uu + wid.x;\n  if (r >= %lldu) { return; }\n  let xo = %lldu + r * %lldu;\n"
          "  let yo = %lldu + r * %lldu;\n",
      nr.fn, nr.args, nr.init, gx, (long long)rows, (long long)x->offset, (long long)N, (long long)y->offset, (long long)N);
  sbf(&s, "  var a: f32 = 0.0;\n  for (var j: u32 = li; j < %lldu; j = j + 256u) { let v = bitcast<f32>(b%d[xo + j]); a = a + %s; }\n",
      (long long)N, bx, rms ? "v * v" : "v");
  sbf(&s, "  let mu = red2(li, a, 0.0).x / %lld.0;\n", (long long)N);
  if (rms) sbf(&s, "  let m = 0.0;\n  let var_ = mu;\n");
  else
    sbf(&s, "  let m = mu;\n  var q: f32 = 0.0;\n"
            "  for (var j: u32 = li; j < %lldu; j = j + 256u) { let d = bitcast<f32>(b%d[xo + j]) - m; q = q + d * d; }\n"
            "  let var_ = red2(li, q, 0.0).x / %lld.0;\n",
        (long long)N, bx, (long long)N);
  sbf(&s, "  let rs = 1.0 / sqrt(var_ + %s);\n", flit(c->a.f[0], eps));
  sbf(&s, "  for (var j: u32 = li; j < %lldu; j = j + 256u) {\n    var v = (bitcast<f32>(b%d[xo + j]) - m) * rs;\n",
      (long long)N, bx);
  if (hw) sbf(&s, "    v = v * bitcast<f32>(b%d[%lldu + j]);\n", bw, (long long)w->offset);
  if (hb) sbf(&s, "    v = v + bitcast<f32>(b%d[%lldu + j]);\n", bb, (long long)b->offset);
  sbf(&s, "    b%d[yo + j] = bitcast<u32>(v);\n  }\n  if (li == 0u) {\n", by);
  if (mean) sbf(&s, "    b%d[%lldu + r] = bitcast<u32>(m);\n", bm, (long long)mean->offset);
  sbf(&s, "    b%d[%lldu + r] = bitcast<u32>(rs);\n  }\n}\n", br, (long long)rstd->offset);
  st = launch(&s, &bs, gx, gy, 1);
  wg_unlock();
  return st;
}
/* WGSL fn terms(r, j) = (g[r, j] * w[j], (x[r, j] - mean[r]) * rstd[r]): the two per-element
 * factors that both backward kernels (dx per row, dweight/dbias per column) sum */
static void norm_emit_terms(sb *s, int bg, const ct_tensor *g, int bx, const ct_tensor *x, int64_t N, const char *wj,
                            const char *mu, int br, const ct_tensor *rstd) {
  sbf(s, "fn terms(r: u32, j: u32) -> vec2<f32> {\n  let gw = bitcast<f32>(b%d[%lldu + r * %lldu + j]) * %s;\n"
         "  return vec2<f32>(gw, (bitcast<f32>(b%d[%lldu + r * %lldu + j]) - %s) * bitcast<f32>(b%d[%lldu + r]));\n}\n",
      bg, (long long)g->offset, (long long)N, wj, bx, (long long)x->offset, (long long)N, mu, br, (long long)rstd->offset);
}
static ct_status k_native_norm_backward(const ct_call *c) {
  WG_BEGIN(c);
  bool rms = c->a.k[0];
  const ct_tensor *g = c->in[0], *x = c->in[1], *w = c->in[2], *mean = rms ? NULL : c->in[3], *rstd = c->in[4];
  ct_tensor *dx = c->out[0], *dw = c->out[1], *db = rms ? NULL : c->out[2];
  int64_t N = c->a.i[0], numel = ct_numel(x);
  CT_TRY(need_f32(c, x));
  if (N < 1 || numel % N || !norm_layout_ok(x, -1) || !norm_layout_ok(g, numel) || (w && !norm_layout_ok(w, N)) ||
      (mean && !norm_layout_ok(mean, numel / N)) || !norm_layout_ok(rstd, numel / N) || (dx && !norm_layout_ok(dx, numel)) ||
      (dw && !norm_layout_ok(dw, N)) || (db && !norm_layout_ok(db, N)))
    return unsupported(c, "Expected contiguous float32 tensors.");
  int64_t rows = numel / N;
  wg_lock();
  const ct_tensor *all[8] = {g, x, w, mean, rstd, dx, dw, db};
  ct_status st = CT_OK;
  for (int i = 0; i < 8 && st == CT_OK; i++)
    if (all[i] && ct_numel(all[i]) > 0) st = check_extent(all[i]);
  bindset bs = {{0}, 0, -1};
  int bg = bind_of(&bs, g), bx = bind_of(&bs, x), bw = w ? bind_of(&bs, w) : -1, bm = mean ? bind_of(&bs, mean) : -1;
  int br = bind_of(&bs, rstd);
  char mu[80], wj[80];
  if (mean) snprintf(mu, sizeof mu, "bitcast<f32>(b%d[%lldu + r])", bm, (long long)mean->offset);
  else snprintf(mu, sizeof mu, "0.0");
  if (w) snprintf(wj, sizeof wj, "bitcast<f32>(b%d[%lldu + j])", bw, (long long)w->offset);
  else snprintf(wj, sizeof wj, "1.0");
  if (st == CT_OK && dx && rows > 0) {
    bindset bs2 = bs;
    int bd = bind_of(&bs2, dx);
    uint32_t gx, gy;
    grid(rows, &gx, &gy);
    sb s = {0};
    norm_red nr = norm_red_pick(&s);
    emit_bindings(&s, &bs2);
    norm_emit_terms(&s, bg, g, bx, x, N, wj, mu, br, rstd);
    sbf(&s, "%s@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32%s) {\n%s"
            "  let r = wid.y * %uu + wid.x;\n  if (r >= %lldu) { return; }\n"
            "  let rs = bitcast<f32>(b%d[%lldu + r]);\n  var a: f32 = 0.0;\n  var q: f32 = 0.0;\n"
            "  for (var j: u32 = li; j < %lldu; j = j + 256u) { let v = terms(r, j); a = a + v.x; q = q + v.x * v.y; }\n"
            "  let t = red2(li, a, q) / %lld.0;\n"
            "  for (var j: u32 = li; j < %lldu; j = j + 256u) {\n    let v = terms(r, j);\n"
            "    b%d[%lldu + r * %lldu + j] = bitcast<u32>(rs * (v.x - %s - v.y * t.y));\n  }\n}\n",
        nr.fn, nr.args, nr.init, gx, (long long)rows, br, (long long)rstd->offset, (long long)N, (long long)N, (long long)N, bd,
        (long long)dx->offset, (long long)N, rms ? "0.0" : "t.x");
    st = launch(&s, &bs2, gx, gy, 1);
  }
  if (st == CT_OK && (dw || db)) {
    /* column sums over the rows: a workgroup per normalized element, its threads striding
     * over the rows (a thread per column looping over every row serialised on memory latency);
     * w is not bound: the pipeline's layout leaves out what the shader does not use */
    bindset bs2 = {{0}, 0, -1};
    bg = bind_of(&bs2, g), bx = bind_of(&bs2, x), br = bind_of(&bs2, rstd);
    if (mean) snprintf(mu, sizeof mu, "bitcast<f32>(b%d[%lldu + r])", bind_of(&bs2, mean), (long long)mean->offset);
    int bdw = dw ? bind_of(&bs2, dw) : -1, bdb = db ? bind_of(&bs2, db) : -1;
    uint32_t gx, gy;
    grid(N, &gx, &gy);
    sb s = {0};
    norm_red nr = norm_red_pick(&s);
    emit_bindings(&s, &bs2);
    norm_emit_terms(&s, bg, g, bx, x, N, "1.0", mu, br, rstd);
    sbf(&s, "%s@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32%s) {\n%s"
            "  let j = wid.y * %uu + wid.x;\n  if (j >= %lldu) { return; }\n"
            "  var sw: f32 = 0.0;\n  var sb_: f32 = 0.0;\n"
            "  for (var r: u32 = li; r < %lldu; r = r + 256u) { let v = terms(r, j); sw = sw + v.x * v.y; sb_ = sb_ + v.x; }\n"
            "  let t = red2(li, sw, sb_);\n  if (li == 0u) {\n",
        nr.fn, nr.args, nr.init, gx, (long long)N, (long long)rows);
    if (dw) sbf(&s, "    b%d[%lldu + j] = bitcast<u32>(t.x);\n", bdw, (long long)dw->offset);
    if (db) sbf(&s, "    b%d[%lldu + j] = bitcast<u32>(t.y);\n", bdb, (long long)db->offset);
    sbf(&s, "  }\n}\n");
    st = launch(&s, &bs2, gx, gy, 1);
  }
  wg_unlock();
  return st;
}

/* ---- fused Adam / AdamW: one dispatch per parameter where the per-op reference path
 * records about nine (step_fused.c calls this for WebGPU parameters). The same float32
 * operations in the same order as those ops (each op rounds to float32, as here); the
 * sizes, offsets and the step-dependent constants travel in the parameter words, so one
 * pipeline per layout serves every parameter and every step. ---- */
#include "../../optim/optim_internal.h"
static bool adam_usable(const ct_tensor *t, const ct_tensor *p) {
  return t && t->dtype == CT_FLOAT32 && ct_is_contiguous(t) && ct_numel(t) == ct_numel(p) &&
         t->storage->device.type == CT_DEVICE_WEBGPU && check_extent(t) == CT_OK;
}
/* The update's float constants as parameter words 6..14 (bit patterns), from the step count
 * (already bumped) and the group's options: the eager step and a replay's refresh both call it. */
static void adam_words(const ct_optim_options *o, double step, uint32_t *w) {
  double bc1 = 1 - pow(o->beta1, step), bc2 = 1 - pow(o->beta2, step);
  float fc[9] = {(float)(1 - o->lr * o->weight_decay), (float)o->beta1, (float)(1 - o->beta1), (float)o->beta2,
                 (float)(1 - o->beta2), (float)sqrt(bc2), (float)o->eps, (float)(-(o->lr / bc1)), (float)o->weight_decay};
  memcpy(w, fc, sizeof fc);
}
/* A captured Adam dispatch: each replay is one more step of this parameter. The group is
 * found by index (the groups' array may move when groups are added). */
typedef struct {
  ct_optim *opt;
  int group;
  int64_t i;
} adam_ref;
static bool adam_refresh(void *ctx, uint32_t *params) {
  adam_ref *r = ctx;
  ct_pgroup *gr = &r->opt->g[r->group];
  double step = ct_optim_bump_step(gr->st[r->i].t[0]);
  adam_words(&gr->o, step, params + 6);
  return true;
}

/* SGD (momentum, dampening, Nesterov, weight decay, maximize) on float32 WebGPU parameters:
 * one dispatch per parameter once the momentum buffer exists (the first step makes it on the
 * reference path, as a clone of the update). Words: n, gx, three offsets, then sign, weight
 * decay, momentum, 1 - dampening, -lr (bit patterns) */
static void sgd_words(const ct_optim_options *o, uint32_t *w) {
  float fc[5] = {o->maximize ? -1.0f : 1.0f, (float)o->weight_decay, (float)o->momentum, (float)(1 - o->dampening),
                 (float)(-o->lr)};
  memcpy(w, fc, sizeof fc);
}
static bool sgd_refresh(void *ctx, uint32_t *params) {
  adam_ref *r = ctx;
  uint32_t w[5];
  sgd_words(&r->opt->g[r->group].o, w);
  if (!memcmp(w, params + 5, sizeof w)) return false;
  memcpy(params + 5, w, sizeof w);
  return true;
}
static bool sgd_update_fused(ct_optim *opt, ct_pgroup *gr, int64_t i) {
  ct_tensor *p = gr->params[i], *g = p->grad, *buf = gr->st[i].t[0];
  const ct_optim_options *o = &gr->o;
  bool MOM = o->momentum != 0, WD = o->weight_decay != 0;
  if ((MOM && !buf) || wg_ready() != CT_OK) return false;
  int64_t n = ct_numel(p);
  wg_lock();
  bool ok = n < ((int64_t)1 << 31) && adam_usable(p, p) && adam_usable(g, p) && (!MOM || adam_usable(buf, p)) &&
            !ct_shares_storage(p, g) && (!MOM || (!ct_shares_storage(p, buf) && !ct_shares_storage(g, buf)));
  if (!ok) {
    wg_unlock();
    return false;
  }
  uint32_t gx, gy;
  grid((n + 255) / 256, &gx, &gy);
  uint32_t pw[10] = {(uint32_t)n, gx, (uint32_t)p->offset, (uint32_t)g->offset, MOM ? (uint32_t)buf->offset : 0u};
  sgd_words(o, pw + 5);
  bindset bs = {{0}, 0, -1};
  int bp = bind_of(&bs, p), bg = bind_of(&bs, g), bb = MOM ? bind_of(&bs, buf) : -1;
  sb t = {0};
  emit_bindings(&t, &bs);
  emit_params(&t, &bs);
  sbf(&t, "fn f(k: u32) -> f32 { return bitcast<f32>(pr[5u + k]); }\n"
          "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
          "  let e = (wid.y * pr[1] + wid.x) * 256u + li;\n  if (e >= pr[0]) { return; }\n"
          "  let ip = pr[2] + e;\n  var pv = bitcast<f32>(b%d[ip]);\n  var d = bitcast<f32>(b%d[pr[3] + e]) * f(0u);\n", bp, bg);
  if (WD) sbf(&t, "  d = d + f(1u) * pv;\n");
  if (MOM) {
    sbf(&t, "  let ib = pr[4] + e;\n  let bk = bitcast<f32>(b%d[ib]) * f(2u) + f(3u) * d;\n  b%d[ib] = bitcast<u32>(bk);\n", bb, bb);
    sbf(&t, o->nesterov ? "  d = d + f(2u) * bk;\n" : "  d = bk;\n");
  }
  sbf(&t, "  b%d[ip] = bitcast<u32>(pv + f(4u) * d);\n}\n", bp);
  ct_status st = CT_OK;
  if (t.oom) free(t.p), st = CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
  wg_pipe *pp = st == CT_OK ? wg_pipeline(t.p) : NULL;
  if (st == CT_OK) free(t.p);
  if (st == CT_OK && !pp) st = ct_last_status();
  adam_ref *r = NULL;
  if (st == CT_OK && n > 0 && wg_capturing()) { /* a replay picks up a changed learning rate or momentum */
    if (!(r = malloc(sizeof *r))) st = CT_ERR(CT_ERR_OOM, "out of memory recording the SGD step");
    else *r = (adam_ref){opt, (int)(gr - opt->g), i};
  }
  if (st == CT_OK && n > 0) st = wg_dispatch_p(pp, bs.n, bs.b, pw, 10, gx, gy, 1);
  if (r && (st != CT_OK || !wg_capture_refresh(sgd_refresh, r))) free(r);
  wg_unlock();
  if (st != CT_OK) return false; /* nothing ran: the reference path updates */
  ct_bump_version(p);
  if (MOM) ct_bump_version(buf);
  return true;
}

/* ---- multi-tensor SGD: the group's parameters a few per dispatch (as many as fit the device's
 * storage-buffer limit with the parameter words: p, grad and momentum buffer each), where the
 * per-parameter path above records one dispatch each. The same float32 operations in the same
 * order per element as sgd_update_fused (bit for bit). Taken only once every parameter with a
 * gradient has its momentum buffer (the first step makes them per parameter, on the reference
 * path, as PyTorch's first step clones d_p); otherwise 0 and the per-parameter loop runs.
 * Words: the five constants of sgd_words, gx, then per parameter k: the end of its range in the
 * flattened elements and its three offsets. CT_WEBGPU_SGD_MT=0: per parameter. ---- */
#define SGD_MT_MAX 4
typedef struct {
  ct_optim *opt;
  int group;
} sgd_mt_ref;
static bool sgd_mt_refresh(void *ctx, uint32_t *params) {
  sgd_mt_ref *r = ctx;
  uint32_t w[5];
  sgd_words(&r->opt->g[r->group].o, w);
  if (!memcmp(w, params, sizeof w)) return false;
  memcpy(params, w, sizeof w);
  return true;
}
static ct_status sgd_mt_chunk(ct_optim *opt, ct_pgroup *gr, const int64_t *idx, int K) {
  const ct_optim_options *o = &gr->o;
  bool MOM = o->momentum != 0, WD = o->weight_decay != 0;
  uint32_t pw[6 + 4 * SGD_MT_MAX] = {0};
  sgd_words(o, pw);
  bindset bs = {{0}, 0, -1};
  int bp[SGD_MT_MAX], bg[SGD_MT_MAX], bb[SGD_MT_MAX];
  int64_t tot = 0;
  for (int k = 0; k < K; k++) {
    ct_tensor *p = gr->params[idx[k]], *b = gr->st[idx[k]].t[0];
    tot += ct_numel(p);
    pw[6 + 4 * k] = (uint32_t)tot;
    pw[7 + 4 * k] = (uint32_t)p->offset;
    pw[8 + 4 * k] = (uint32_t)p->grad->offset;
    pw[9 + 4 * k] = MOM ? (uint32_t)b->offset : 0u;
    bp[k] = bind_of(&bs, p), bg[k] = bind_of(&bs, p->grad), bb[k] = MOM ? bind_of(&bs, b) : -1;
  }
  if (tot == 0) return CT_OK;
  uint32_t gx, gy;
  grid((tot + 255) / 256, &gx, &gy);
  pw[5] = gx;
  sb t = {0};
  emit_bindings(&t, &bs);
  emit_params(&t, &bs);
  sbf(&t, "fn f(k: u32) -> f32 { return bitcast<f32>(pr[k]); }\n"
          "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
          "  let e0 = (wid.y * pr[5] + wid.x) * 256u + li;\n");
  for (int k = 0; k < K; k++) {
    unsigned w = 6u + 4u * (unsigned)k;
    if (k == 0) sbf(&t, "  if (e0 < pr[6]) {\n    let e = e0;\n");
    else sbf(&t, "  if (e0 >= pr[%uu] && e0 < pr[%uu]) {\n    let e = e0 - pr[%uu];\n", w - 4, w, w - 4);
    sbf(&t, "    let ip = pr[%uu] + e;\n    var pv = bitcast<f32>(b%d[ip]);\n    var d = bitcast<f32>(b%d[pr[%uu] + e]) * f(0u);\n",
        w + 1, bp[k], bg[k], w + 2);
    if (WD) sbf(&t, "    d = d + f(1u) * pv;\n");
    if (MOM) {
      sbf(&t, "    let ib = pr[%uu] + e;\n    let bk = bitcast<f32>(b%d[ib]) * f(2u) + f(3u) * d;\n    b%d[ib] = bitcast<u32>(bk);\n",
          w + 3, bb[k], bb[k]);
      sbf(&t, o->nesterov ? "    d = d + f(2u) * bk;\n" : "    d = bk;\n");
    }
    sbf(&t, "    b%d[ip] = bitcast<u32>(pv + f(4u) * d);\n  }\n", bp[k]);
  }
  sbf(&t, "}\n");
  if (t.oom) {
    free(t.p);
    return CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
  }
  wg_pipe *pp = wg_pipeline(t.p);
  free(t.p);
  if (!pp) return ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_RUNTIME;
  sgd_mt_ref *r = NULL;
  if (wg_capturing()) {
    if (!(r = malloc(sizeof *r))) return CT_ERR(CT_ERR_OOM, "out of memory recording the SGD step");
    *r = (sgd_mt_ref){opt, (int)(gr - opt->g)};
  }
  ct_status st = wg_dispatch_p(pp, bs.n, bs.b, pw, 6 + 4 * K, gx, gy, 1);
  if (r && (st != CT_OK || !wg_capture_refresh(sgd_mt_refresh, r))) free(r);
  if (st != CT_OK) return st;
  for (int k = 0; k < K; k++) {
    ct_bump_version(gr->params[idx[k]]);
    if (MOM) ct_bump_version(gr->st[idx[k]].t[0]);
  }
  return CT_OK;
}
/* 1: the group's step is done; 0: not taken (nothing changed); -1: an error (set) after part ran. */
int ct_webgpu_sgd_group_fused(ct_optim *opt, ct_pgroup *gr) {
  const char *e = getenv("CT_WEBGPU_SGD_MT");
  if ((e && *e == '0') || getenv("CT_WEBGPU_SGD_REF") || opt->kind != CT_OPTIM_SGD) return 0;
  const ct_optim_options *o = &gr->o;
  bool MOM = o->momentum != 0;
  int64_t cnt = 0;
  for (int64_t i = 0; i < gr->n; i++) {
    ct_tensor *p = gr->params[i], *g = p->grad, *b = gr->st[i].t[0];
    if (!g) continue;
    if (!gr->st[i].init || (MOM && !b) || ct_numel(p) >= ((int64_t)1 << 31)) return 0;
    cnt++;
  }
  if (cnt == 0 || wg_ready() != CT_OK) return 0;
  wg_lock();
  /* every tensor usable, none sharing memory with another of the group (the kernel's
   * elements are independent only then) */
  int64_t tot = 0;
  bool ok = true;
  for (int64_t i = 0; ok && i < gr->n; i++) {
    ct_tensor *p = gr->params[i], *g = p->grad, *b = gr->st[i].t[0];
    if (!g) continue;
    tot += ct_numel(p);
    ok = adam_usable(p, p) && adam_usable(g, p) && (!MOM || adam_usable(b, p)) && !ct_shares_storage(p, g) &&
         (!MOM || (!ct_shares_storage(p, b) && !ct_shares_storage(g, b)));
    for (int64_t j = 0; ok && j < i; j++) {
      ct_tensor *q = gr->params[j], *c = gr->st[j].t[0];
      if (!q->grad) continue;
      ct_tensor *a[3] = {p, g, MOM ? b : NULL}, *z[3] = {q, q->grad, MOM ? c : NULL};
      for (int x = 0; ok && x < 3; x++)
        for (int y = 0; ok && y < 3; y++) ok = !a[x] || !z[y] || !ct_shares_storage(a[x], z[y]);
    }
  }
  if (!ok || tot >= ((int64_t)1 << 31)) {
    wg_unlock();
    return 0;
  }
  uint32_t lim = wg_max_storage_buffers();
  int cap = (int)(lim < WG_MAX_BINDINGS + 1 ? lim : WG_MAX_BINDINGS + 1) - 1; /* data buffers beside the words */
  int per = MOM ? 3 : 2, K = 0, kmax = cap / per;
  if (kmax > SGD_MT_MAX) kmax = SGD_MT_MAX;
  const char *km = getenv("CT_WEBGPU_SGD_MT_K"); /* tests: fewer per dispatch */
  if (km && atoi(km) > 0 && atoi(km) < kmax) kmax = atoi(km);
  if (kmax < 2) {
    wg_unlock();
    return 0;
  }
  int64_t idx[SGD_MT_MAX];
  ct_status st = CT_OK;
  bool any = false;
  for (int64_t i = 0; st == CT_OK && i < gr->n; i++) {
    if (!gr->params[i]->grad) continue;
    idx[K++] = i;
    if (K == kmax) {
      st = sgd_mt_chunk(opt, gr, idx, K);
      any = any || st == CT_OK;
      K = 0;
    }
  }
  if (st == CT_OK && K && (st = sgd_mt_chunk(opt, gr, idx, K)) == CT_OK) any = true;
  wg_unlock();
  if (st != CT_OK) {
    if (!any) return 0; /* nothing ran: the per-parameter loop updates */
    return -1;
  }
  return 1;
}

bool ct_webgpu_optim_update_fused(ct_optim *opt, ct_pgroup *gr, int64_t i) {
  ct_tensor *p = gr->params[i], *g = p->grad;
  ct_pstate *s = &gr->st[i];
  const ct_optim_options *o = &gr->o;
  if (opt->kind == CT_OPTIM_SGD && !getenv("CT_WEBGPU_SGD_REF")) return sgd_update_fused(opt, gr, i);
  if (opt->kind != CT_OPTIM_ADAM && opt->kind != CT_OPTIM_ADAMW) return false;
  if (o->amsgrad || !s->t[0] || !s->t[1] || !s->t[2] || s->t[0]->storage->device.type != CT_DEVICE_CPU) return false;
  if (wg_ready() != CT_OK) return false;
  int64_t n = ct_numel(p);
  wg_lock();
  bool ok = n < ((int64_t)1 << 31) && adam_usable(p, p) && adam_usable(g, p) && adam_usable(s->t[1], p) &&
            adam_usable(s->t[2], p);
  ct_tensor *ts[4] = {p, g, s->t[1], s->t[2]};
  for (int a = 0; a < 4 && ok; a++)
    for (int b = a + 1; b < 4 && ok; b++) ok = !ct_shares_storage(ts[a], ts[b]);
  if (!ok) {
    wg_unlock();
    return false;
  }
  double step = ct_optim_bump_step(s->t[0]);
  bool W = opt->kind == CT_OPTIM_ADAMW, WD = o->weight_decay != 0;
  uint32_t gx, gy;
  grid((n + 255) / 256, &gx, &gy);
  /* words: n, gx, four offsets, then the float constants (bit patterns) */
  uint32_t pw[15] = {(uint32_t)n, gx, (uint32_t)p->offset, (uint32_t)g->offset, (uint32_t)s->t[1]->offset,
                     (uint32_t)s->t[2]->offset};
  adam_words(o, step, pw + 6);
  bindset bs = {{0}, 0, -1};
  for (int a = 0; a < 4; a++) bind_of(&bs, ts[a]);
  sb t = {0};
  emit_bindings(&t, &bs);
  emit_params(&t, &bs);
  sbf(&t, "fn f(k: u32) -> f32 { return bitcast<f32>(pr[6u + k]); }\n"
          "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
          "  let e = (wid.y * pr[1] + wid.x) * 256u + li;\n  if (e >= pr[0]) { return; }\n"
          "  let ip = pr[2] + e; let ig = pr[3] + e; let im = pr[4] + e; let iv = pr[5] + e;\n"
          "  var pv = bitcast<f32>(b0[ip]);\n  var gv = %sbitcast<f32>(b1[ig]);\n", o->maximize ? "-" : "");
  if (W) sbf(&t, "  pv = pv * f(0u);\n");
  else if (WD) sbf(&t, "  gv = gv + f(8u) * pv;\n");
  sbf(&t, "  var m = bitcast<f32>(b2[im]) * f(1u);\n  m = m + f(2u) * gv;\n"
          "  var v = bitcast<f32>(b3[iv]) * f(3u);\n  v = v + f(4u) * gv * gv;\n"
          "  let den = sqrt(v) / f(5u) + f(6u);\n  pv = pv + f(7u) * m / den;\n"
          "  b0[ip] = bitcast<u32>(pv); b2[im] = bitcast<u32>(m); b3[iv] = bitcast<u32>(v);\n}\n");
  ct_status st = CT_OK;
  if (t.oom) free(t.p), st = CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
  wg_pipe *pp = st == CT_OK ? wg_pipeline(t.p) : NULL;
  if (st == CT_OK) free(t.p);
  if (st == CT_OK && !pp) st = ct_last_status();
  /* captured: a replay must advance the step and its bias corrections as this eager step did */
  adam_ref *r = NULL;
  if (st == CT_OK && n > 0 && wg_capturing()) {
    if (!(r = malloc(sizeof *r))) st = CT_ERR(CT_ERR_OOM, "out of memory recording the Adam step");
    else *r = (adam_ref){opt, (int)(gr - opt->g), i};
  }
  if (st == CT_OK && n > 0) st = wg_dispatch_p(pp, bs.n, bs.b, pw, 15, gx, gy, 1);
  if (r && (st != CT_OK || !wg_capture_refresh(adam_refresh, r))) free(r); /* no record: the capture fails anyway */
  wg_unlock();
  if (st != CT_OK) {
    /* the step count moved: put it back so the reference path counts this step once */
    float *sv = (float *)ct_host_ptr(s->t[0]);
    *sv = *sv - 1.0f;
    return false;
  }
  ct_bump_version(p);
  ct_bump_version(s->t[1]);
  ct_bump_version(s->t[2]);
  return true;
}

/* ---- convolution as implicit GEMM (forward, input gradient, weight gradient) ----
 * The CPU's contract (src/ops/conv.c): k0 spatial dims (1-3), k1 groups, i[0..3) stride,
 * i[3..6) low padding, i[6..9) dilation; bias (in[2]) on the forward and on the input
 * gradient (conv_transpose). Each op is one GEMM whose operands are read straight from
 * the tensors (any strides) by generated index math, never materialised as im2col:
 *   forward      y[n,o,p]  = sum_{c,k} x[n, c, p*s - pad + k*d] w[o, c, k]     M = N*out, Nc = O/G, K = C/G*ksp
 *   input grad   gx[n,c,i] = sum_{o,k} gy[n, o, (i + pad - k*d)/s] w[o, c, k]  M = N*in,  Nc = C/G, K = O/G*ksp
 *   weight grad  gw[o,c,k] = sum_{n,p} gy[n, o, p] x[n, c, p*s - pad + k*d]    M = O/G,   Nc = C/G*ksp, K = N*out
 * 16T x 16T output tiles per workgroup (T x T per thread, T = 1, 2 or 4 by the grid size) with
 * 16-deep shared-memory slices of both operands; the
 * group rides in workgroup_id.z. When few tiles face a long K (the weight gradient), K is
 * split over z too, into partial sums that a second dispatch adds in a fixed order (so
 * results do not depend on scheduling). Sums are float32 in tile order (the CPU's are
 * double, rounded once): tests allow for that. */
typedef struct {
  union { /* the shared geometry (ops/conv_geom.h), its fields read directly */
    ct_conv_geom base;
    struct { CT_CONV_GEOM_FIELDS };
  };
  int64_t cg, og; /* channels per group: forward input, forward output */
  int64_t xs[5], ws[5], ys[5]; /* element strides of the x-like, w, y-like operands (N, C, D, H, W) */
  int64_t xo, wo, yo;
} cv_geom;

/* x: the [N, C, in] operand, w: [O, C/G, k], y: the [N, O, out] operand */
static void cv_make(cv_geom *g, const ct_call *c, const ct_tensor *x, const ct_tensor *w, const ct_tensor *y) {
  memset(g, 0, sizeof *g);
  int nd = (int)c->a.k[0];
  ct_conv_geom_make(&g->base, c, x, w, y);
  g->cg = g->C / g->G, g->og = g->O / g->G;
  ct_conv_strides5(x, nd, 1, g->xs);
  ct_conv_strides5(w, nd, 1, g->ws);
  ct_conv_strides5(y, nd, 1, g->ys);
  g->xo = x->offset, g->wo = w->offset, g->yo = y->offset;
}

/* WGSL: `let <p>0, <p>1, <p>2` = the 3 coordinates of linear index `v` over dims sz */
static void cv_split3(sb *s, const char *p, const char *v, const int64_t *sz) {
  sbf(s, "  let %s2 = %s %% %lldu; let %s1 = (%s / %lldu) %% %lldu; let %s0 = %s / %lldu;\n", p, v, (long long)sz[2], p,
      v, (long long)sz[2], (long long)sz[1], p, v, (long long)(sz[2] * sz[1]));
}
/* WGSL: element offset `<b> + a*st0 + b*st1 + c0*st2 + c1*st3 + c2*st4` */
static void cv_off(char *out, size_t n, int64_t base, const int64_t *st, const char *a, const char *b, const char *p) {
  snprintf(out, n, "%lldu + (%s) * %lldu + (%s) * %lldu + %s0 * %lldu + %s1 * %lldu + %s2 * %lldu", (long long)base, a,
           (long long)st[0], b, (long long)st[1], p, (long long)st[2], p, (long long)st[3], p, (long long)st[4]);
}
/* WGSL body: x at batch n, channel ch, output position o0..o2, tap k0..k2 (0 in the padding) */
static void cv_emit_xtap(sb *s, const cv_geom *g, int bx, const char *n, const char *ch) {
  for (int i = 0; i < 3; i++)
    sbf(s, "  let j%d = i32(o%d * %lldu + k%d * %lldu) - %lld;\n", i, i, (long long)g->s[i], i, (long long)g->d[i],
        (long long)g->p[i]);
  sbf(s, "  if (j0 < 0 || j0 >= %lld || j1 < 0 || j1 >= %lld || j2 < 0 || j2 >= %lld) { return 0.0; }\n",
      (long long)g->in[0], (long long)g->in[1], (long long)g->in[2]);
  sbf(s, "  let i0 = u32(j0); let i1 = u32(j1); let i2 = u32(j2);\n");
  char o[400];
  cv_off(o, sizeof o, g->xo, g->xs, n, ch, "i");
  sbf(s, "  return bitcast<f32>(b%d[%s]);\n}\n", bx, o);
}

/* Whether offsets st[2..4] over the spatial sizes sz walk them as one contiguous run: then
 * p0 st2 + p1 st3 + p2 st4 is the linear position q itself (size-1 dims count as contiguous). */
static bool cv_sp_contig(const int64_t *st, const int64_t *sz) {
  return (sz[2] == 1 || st[4] == 1) && (sz[1] == 1 || st[3] == sz[2]) && (sz[0] == 1 || st[2] == sz[1] * sz[2]);
}
/* la(m, k, grp) and lb(k, j, grp): the GEMM's operands, for op (binding indices b1, b2). fast:
 * where an operand's position part is contiguous (weights' taps, gy's and a 1x1 stride-1
 * unpadded x's spatial dims), its offset comes from the linear index without the per-dimension
 * split and recombination (the same element: the same values, fewer integer ops per load). */
static void cv_emit_operands(sb *s, int op, const cv_geom *g, int b1, int b2, bool fast) {
  char o[400];
  bool wtap = fast && cv_sp_contig(g->ws, g->k), ysp = fast && cv_sp_contig(g->ys, g->out);
  bool x11 = fast && cv_sp_contig(g->xs, g->in) && g->ksp == 1 && g->insp == g->outsp;
  for (int i = 0; i < 3; i++) x11 = x11 && g->s[i] == 1 && g->p[i] == 0 && g->in[i] == g->out[i];
  sbf(s, "fn la(m: u32, k: u32, grp: u32) -> f32 {\n");
  if (op == CT_OP_convolution && x11) { /* x[n, grp*cg + k, q]: a 1x1 stride-1 unpadded convolution */
    sbf(s, "  let n = m / %lldu; let q = m %% %lldu;\n  return bitcast<f32>(b%d[%lldu + n * %lldu + (grp * %lldu + k) * %lldu + q]);\n}\n",
        (long long)g->outsp, (long long)g->outsp, b1, (long long)g->xo, (long long)g->xs[0], (long long)g->cg, (long long)g->xs[1]);
  } else if (op == CT_OP_convolution) { /* x[n, grp*cg + c, o*s - p + k*d] */
    sbf(s, "  let n = m / %lldu; let q = m %% %lldu; let c = k / %lldu; let r = k %% %lldu;\n", (long long)g->outsp,
        (long long)g->outsp, (long long)g->ksp, (long long)g->ksp);
    cv_split3(s, "o", "q", g->out);
    cv_split3(s, "k", "r", g->k);
    char ch[80];
    snprintf(ch, sizeof ch, "grp * %lldu + c", (long long)g->cg);
    cv_emit_xtap(s, g, b1, "n", ch);
  } else if (op == CT_OP_convolution_backward_input) { /* gy[n, grp*og + oo, (i + p - k*d) / s] */
    sbf(s, "  let n = m / %lldu; let q = m %% %lldu; let oo = k / %lldu; let r = k %% %lldu;\n", (long long)g->insp,
        (long long)g->insp, (long long)g->ksp, (long long)g->ksp);
    cv_split3(s, "i", "q", g->in);
    cv_split3(s, "k", "r", g->k);
    for (int i = 0; i < 3; i++) {
      sbf(s, "  let a%d = i32(i%d) + %lld - i32(k%d * %lldu);\n", i, i, (long long)g->p[i], i, (long long)g->d[i]);
      sbf(s, "  if (a%d < 0 || a%d %% %lld != 0 || a%d / %lld >= %lld) { return 0.0; }\n  let o%d = u32(a%d / %lld);\n", i, i,
          (long long)g->s[i], i, (long long)g->s[i], (long long)g->out[i], i, i, (long long)g->s[i]);
    }
    char ch[80];
    snprintf(ch, sizeof ch, "grp * %lldu + oo", (long long)g->og);
    cv_off(o, sizeof o, g->yo, g->ys, "n", ch, "o");
    sbf(s, "  return bitcast<f32>(b%d[%s]);\n}\n", b1, o);
  } else if (ysp) { /* gy[n, grp*og + m, q], its spatial dims contiguous */
    sbf(s, "  let n = k / %lldu; let q = k %% %lldu;\n  return bitcast<f32>(b%d[%lldu + n * %lldu + (grp * %lldu + m) * %lldu + q]);\n}\n",
        (long long)g->outsp, (long long)g->outsp, b1, (long long)g->yo, (long long)g->ys[0], (long long)g->og, (long long)g->ys[1]);
  } else { /* gy[n, grp*og + m, p] */
    sbf(s, "  let n = k / %lldu; let q = k %% %lldu;\n", (long long)g->outsp, (long long)g->outsp);
    cv_split3(s, "o", "q", g->out);
    char ch[80];
    snprintf(ch, sizeof ch, "grp * %lldu + m", (long long)g->og);
    cv_off(o, sizeof o, g->yo, g->ys, "n", ch, "o");
    sbf(s, "  return bitcast<f32>(b%d[%s]);\n}\n", b1, o);
  }
  sbf(s, "fn lb(k: u32, j: u32, grp: u32) -> f32 {\n");
  if (op == CT_OP_convolution && wtap && g->ws[1] == g->ksp) { /* w[grp*og + j, k]: (c, tap) contiguous */
    sbf(s, "  return bitcast<f32>(b%d[%lldu + (grp * %lldu + j) * %lldu + k]);\n}\n", b2, (long long)g->wo, (long long)g->og,
        (long long)g->ws[0]);
  } else if (op == CT_OP_convolution_backward_input && wtap) { /* w[grp*og + k/ksp, j, k%ksp] */
    sbf(s, "  return bitcast<f32>(b%d[%lldu + (grp * %lldu + k / %lldu) * %lldu + j * %lldu + k %% %lldu]);\n}\n", b2,
        (long long)g->wo, (long long)g->og, (long long)g->ksp, (long long)g->ws[0], (long long)g->ws[1], (long long)g->ksp);
  } else if (op == CT_OP_convolution || op == CT_OP_convolution_backward_input) { /* w[grp*og + (j or k/ksp), ...] */
    bool fwd = op == CT_OP_convolution;
    sbf(s, "  let a = k / %lldu; let r = k %% %lldu;\n", (long long)g->ksp, (long long)g->ksp);
    cv_split3(s, "k", "r", g->k);
    char oc[80];
    snprintf(oc, sizeof oc, "grp * %lldu + %s", (long long)g->og, fwd ? "j" : "a");
    cv_off(o, sizeof o, g->wo, g->ws, oc, fwd ? "a" : "j", "k");
    sbf(s, "  return bitcast<f32>(b%d[%s]);\n}\n", b2, o);
  } else { /* x[n, grp*cg + c, o*s - p + k*d] with j = (c, k), k = (n, o) */
    sbf(s, "  let n = k / %lldu; let q = k %% %lldu; let c = j / %lldu; let r = j %% %lldu;\n", (long long)g->outsp,
        (long long)g->outsp, (long long)g->ksp, (long long)g->ksp);
    cv_split3(s, "o", "q", g->out);
    cv_split3(s, "k", "r", g->k);
    char ch[80];
    snprintf(ch, sizeof ch, "grp * %lldu + c", (long long)g->cg);
    cv_emit_xtap(s, g, b2, "n", ch);
  }
}

/* fin(m, j, grp, v): the final store of op (output binding bo, bias binding bb or -1) */
/* An eval batch norm (then a residual add, then a ReLU) folded into the forward convolution's
 * output pass (ct_webgpu_conv_bn below arms it for one convolution): v = conv + bias, then
 * (v - mean) (rstd w) + b with rstd = 1 / sqrt(var + eps), + res, relu: the operations and their
 * order of k_native_bn's eval pass, the add and the ReLU kernel, so the values are those of the
 * unfused ops. The per-channel tensors are contiguous float32 [O]; res has y's shape. */
typedef struct {
  const ct_tensor *mean, *var, *w, *b, *res;
  double eps;
  bool relu, used;
} wg_conv_epi;
static _Thread_local wg_conv_epi *conv_epi;
typedef struct {
  int mean, var, w, b, res;
} cv_epi_bind;
static void cv_emit_fin(sb *s, int op, const cv_geom *g, int bo, int bb, const ct_tensor *bias, const wg_conv_epi *ep,
                        const cv_epi_bind *eb) {
  char o[400], ch[80];
  sbf(s, "fn fin(m: u32, j: u32, grp: u32, v: f32) {\n");
  if (op == CT_OP_convolution_backward_weight) {
    sbf(s, "  let c = j / %lldu; let r = j %% %lldu;\n", (long long)g->ksp, (long long)g->ksp);
    cv_split3(s, "k", "r", g->k);
    snprintf(ch, sizeof ch, "grp * %lldu + m", (long long)g->og);
    cv_off(o, sizeof o, g->wo, g->ws, ch, "c", "k");
    sbf(s, "  b%d[%s] = bitcast<u32>(v);\n}\n", bo, o);
    return;
  }
  bool fwd = op == CT_OP_convolution;
  int64_t sp = fwd ? g->outsp : g->insp, per = fwd ? g->og : g->cg;
  sbf(s, "  let n = m / %lldu; let q = m %% %lldu; let ch = grp * %lldu + j;\n", (long long)sp, (long long)sp, (long long)per);
  cv_split3(s, "o", "q", fwd ? g->out : g->in);
  cv_off(o, sizeof o, fwd ? g->yo : g->xo, fwd ? g->ys : g->xs, "n", "ch", "o");
  if (ep) {
    char eps[40], ro[400];
    if (bias)
      sbf(s, "  var y = v + bitcast<f32>(b%d[%lldu + ch * %lldu]);\n", bb, (long long)bias->offset,
          (long long)(bias->ndim ? bias->stride[0] : 0));
    else sbf(s, "  var y = v;\n");
    sbf(s, "  let sc = (1.0 / sqrt(bitcast<f32>(b%d[%lldu + ch]) + %s)) * bitcast<f32>(b%d[%lldu + ch]);\n"
           "  y = (y - bitcast<f32>(b%d[%lldu + ch])) * sc + bitcast<f32>(b%d[%lldu + ch]);\n",
        eb->var, (long long)ep->var->offset, flit(ep->eps, eps), eb->w, (long long)ep->w->offset, eb->mean,
        (long long)ep->mean->offset, eb->b, (long long)ep->b->offset);
    if (ep->res) {
      int64_t rs[5];
      ct_conv_strides5(ep->res, (int)ep->res->ndim - 2, 1, rs);
      cv_off(ro, sizeof ro, ep->res->offset, rs, "n", "ch", "o");
      sbf(s, "  y = y + bitcast<f32>(b%d[%s]);\n", eb->res, ro);
    }
    if (ep->relu) sbf(s, "  y = select(y, 0.0, y <= 0.0);\n"); /* NaN stays NaN, as the ReLU kernels */
    sbf(s, "  b%d[%s] = bitcast<u32>(y);\n}\n", bo, o);
    return;
  }
  if (bias)
    sbf(s, "  b%d[%s] = bitcast<u32>(v + bitcast<f32>(b%d[%lldu + ch * %lldu]));\n}\n", bo, o, bb, (long long)bias->offset,
        (long long)(bias->ndim ? bias->stride[0] : 0));
  else sbf(s, "  b%d[%s] = bitcast<u32>(v);\n}\n", bo, o);
}

static bool cv_epi_t_ok(const ct_tensor *t, int64_t n) {
  return t && t->dtype == CT_FLOAT32 && ct_is_contiguous(t) && ct_numel(t) == n && ct_tensor_device(t).type == CT_DEVICE_WEBGPU;
}
/* the fold applies when its tensors are float32 on this device ([O] contiguous; res y's shape) and
 * the output pass's bindings fit the adapter's storage-buffer limit (else the convolution runs
 * plain and ct_webgpu_conv_bn finishes with the separate ops) */
static bool cv_epi_ok(const wg_conv_epi *ep, const ct_tensor *y, const ct_tensor *bias, int64_t S) {
  int64_t O = y->shape[1];
  if (!cv_epi_t_ok(ep->mean, O) || !cv_epi_t_ok(ep->var, O) || !cv_epi_t_ok(ep->w, O) || !cv_epi_t_ok(ep->b, O)) return false;
  if (ep->res) {
    if (ep->res->dtype != CT_FLOAT32 || ct_tensor_device(ep->res).type != CT_DEVICE_WEBGPU || ep->res->ndim != y->ndim) return false;
    for (int d = 0; d < y->ndim; d++)
      if (ep->res->shape[d] != y->shape[d]) return false;
  }
  /* x, w (plain) or the partials (split), y, bias, 4 per-channel tensors, res */
  uint32_t need = (S > 1 ? 1 : 2) + 1 + (bias ? 1 : 0) + 4 + (ep->res ? 1 : 0);
  return need <= wg_max_storage_buffers();
}
static void cv_epi_bind_all(bindset *bs, const wg_conv_epi *ep, cv_epi_bind *eb) {
  eb->mean = bind_of(bs, ep->mean), eb->var = bind_of(bs, ep->var), eb->w = bind_of(bs, ep->w), eb->b = bind_of(bs, ep->b);
  eb->res = ep->res ? bind_of(bs, ep->res) : -1;
}

/* Session 13: the weight gradient's operand loads with their index math hoisted
 * (CT_WEBGPU_WGRAD_HOIST=0: the la/lb loads). In the weight gradient each thread's loads of one
 * 16-deep step share one k (kk = kb = tid % BK, since a step's NT2 * r offsets are multiples of BK)
 * and load rows mm = jb = tid / BK + r * NT2 / BK that do not change from step to step. So the rows'
 * parts (gy's row base, x's channel base and tap offsets, their bounds) are computed once before
 * the walk over K (cv_emit_whoist) and each step splits its k into (n, position) once for all R
 * loads of both operands (cv_emit_wfetch) where la/lb split k and j per element. The same elements
 * into the same places: the same bits. Needs gy's spatial dims contiguous (la's ysp path). */
static bool cv_dim_on(const cv_geom *g, int i) { return g->in[i] > 1 || g->out[i] > 1 || g->k[i] > 1 || g->p[i] != 0; }
static void cv_emit_whoist(sb *s, const cv_geom *g, int R, int BK, int NT2, int64_t M, int64_t Nc, int b1, int b2) {
  (void)b1, (void)b2;
  sbf(s, "  let hk = tid %% %du;\n", BK);
  for (int r = 0; r < R; r++) {
    sbf(s, "  let hr%d = tid / %du + %du;\n", r, BK, NT2 / BK * r);
    sbf(s, "  let hav%d = m0 + hr%d < %lldu; let hab%d = %lldu + (grp * %lldu + m0 + hr%d) * %lldu;\n", r, r, (long long)M, r,
        (long long)g->yo, (long long)g->og, r, (long long)g->ys[1]);
    sbf(s, "  let hbv%d = j0 + hr%d < %lldu; let hc%d = (j0 + hr%d) / %lldu; let ht%d = (j0 + hr%d) %% %lldu;\n", r, r,
        (long long)Nc, r, r, (long long)g->ksp, r, r, (long long)g->ksp);
    char pre[16], v[16];
    snprintf(pre, sizeof pre, "hq%d_", r), snprintf(v, sizeof v, "ht%d", r);
    cv_split3(s, pre, v, g->k);
    sbf(s, "  let hbb%d = %lldu + (grp * %lldu + hc%d) * %lldu;\n", r, (long long)g->xo, (long long)g->cg, r, (long long)g->xs[1]);
    for (int i = 0; i < 3; i++)
      if (cv_dim_on(g, i))
        sbf(s, "  let hd%d_%d = i32(hq%d_%d * %lldu) - %lld;\n", r, i, r, i, (long long)g->d[i], (long long)g->p[i]);
  }
}
static void cv_emit_wfetch(sb *s, const cv_geom *g, const char *kf, int R, int b1, int b2) {
  sbf(s, "    {\n    let k = %s + hk; let kv = k < khi;\n    let n = k / %lldu; let q = k %% %lldu;\n", kf, (long long)g->outsp,
      (long long)g->outsp);
  cv_split3(s, "o", "q", g->out);
  for (int r = 0; r < R; r++) {
    sbf(s, "    pa[%d] = 0.0; if (kv && hav%d) { pa[%d] = bitcast<f32>(b%d[hab%d + n * %lldu + q]); }\n", r, r, r, b1, r,
        (long long)g->ys[0]);
    sbf(s, "    pb[%d] = 0.0;\n    {\n", r);
    char cond[600] = "", addr[600];
    int cl = 0, al = snprintf(addr, sizeof addr, "hbb%d + n * %lldu", r, (long long)g->xs[0]);
    for (int i = 0; i < 3; i++) {
      if (!cv_dim_on(g, i)) continue;
      sbf(s, "      let x%d = i32(o%d * %lldu) + hd%d_%d;\n", i, i, (long long)g->s[i], r, i);
      cl += snprintf(cond + cl, sizeof cond - (size_t)cl, " && x%d >= 0 && x%d < %lld", i, i, (long long)g->in[i]);
      al += snprintf(addr + al, sizeof addr - (size_t)al, " + u32(x%d) * %lldu", i, (long long)g->xs[2 + i]);
    }
    sbf(s, "      if (kv && hbv%d%s) { pb[%d] = bitcast<f32>(b%d[%s]); }\n    }\n", r, cond, r, b2, addr);
  }
  sbf(s, "    }\n");
}

/* Session 13: the forward's and the implicit input gradient's A loads (the x / gy operand, rows
 * m = (n, position) along neighbouring threads) with the row's part hoisted (CT_WEBGPU_CONV_HOIST=0:
 * la): each thread loads the one row mm = tid % TS in every step (NT2 * r is a multiple of TS), so
 * its (n, position) split, base offset and bounds are computed once before the walk over K; each
 * load then splits only its k into (channel, tap). B keeps lb. The same elements: the same bits. */
static void cv_emit_ahoist(sb *s, int op, const cv_geom *g, int64_t TS, int64_t M) {
  bool fwd = op == CT_OP_convolution;
  int64_t sp = fwd ? g->outsp : g->insp;
  sbf(s, "  let hm = m0 + tid %% %lldu; let hmv = hm < %lldu; let hkk = tid / %lldu;\n"
         "  let hn = hm / %lldu; let hqq = hm %% %lldu;\n",
      (long long)TS, (long long)M, (long long)TS, (long long)sp, (long long)sp);
  cv_split3(s, "hp", "hqq", fwd ? g->out : g->in);
  if (fwd) {
    sbf(s, "  let hxb = %lldu + hn * %lldu + grp * %lldu;\n", (long long)g->xo, (long long)g->xs[0], (long long)(g->cg * g->xs[1]));
    for (int i = 0; i < 3; i++)
      if (cv_dim_on(g, i)) sbf(s, "  let hs%d = i32(hp%d * %lldu) - %lld;\n", i, i, (long long)g->s[i], (long long)g->p[i]);
  } else {
    sbf(s, "  let hxb = %lldu + hn * %lldu + grp * %lldu;\n", (long long)g->yo, (long long)g->ys[0], (long long)(g->og * g->ys[1]));
    for (int i = 0; i < 3; i++)
      if (cv_dim_on(g, i)) sbf(s, "  let hs%d = i32(hp%d) + %lld;\n", i, i, (long long)g->p[i]);
  }
}
/* pa[r] for the hoisted rows (kf: the step's first k) */
static void cv_emit_afetch(sb *s, int op, const cv_geom *g, const char *kf, int R, int64_t TS, int NT2, int b1) {
  bool fwd = op == CT_OP_convolution;
  for (int r = 0; r < R; r++) {
    sbf(s, "    {\n      let k = %s + hkk + %lldu; pa[%d] = 0.0;\n      let c = k / %lldu; let t = k %% %lldu;\n", kf,
        (long long)(NT2 / TS * r), r, (long long)g->ksp, (long long)g->ksp);
    cv_split3(s, "w", "t", g->k);
    char cond[600] = "", addr[600];
    int cl = 0, al = snprintf(addr, sizeof addr, "hxb + c * %lldu", (long long)(fwd ? g->xs[1] : g->ys[1]));
    for (int i = 0; i < 3; i++) {
      if (!cv_dim_on(g, i)) continue;
      if (fwd) {
        sbf(s, "      let x%d = hs%d + i32(w%d * %lldu);\n", i, i, i, (long long)g->d[i]);
        cl += snprintf(cond + cl, sizeof cond - (size_t)cl, " && x%d >= 0 && x%d < %lld", i, i, (long long)g->in[i]);
        al += snprintf(addr + al, sizeof addr - (size_t)al, " + u32(x%d) * %lldu", i, (long long)g->xs[2 + i]);
      } else { /* a = i + p - k d: a whole output position a / s in range */
        sbf(s, "      let x%d = hs%d - i32(w%d * %lldu);\n", i, i, i, (long long)g->d[i]);
        if (g->s[i] == 1) cl += snprintf(cond + cl, sizeof cond - (size_t)cl, " && x%d >= 0 && x%d < %lld", i, i, (long long)g->out[i]);
        else
          cl += snprintf(cond + cl, sizeof cond - (size_t)cl, " && x%d >= 0 && x%d %% %lld == 0 && x%d / %lld < %lld", i, i,
                         (long long)g->s[i], i, (long long)g->s[i], (long long)g->out[i]);
        al += snprintf(addr + al, sizeof addr - (size_t)al, " + u32(x%d / %lld) * %lldu", i, (long long)g->s[i], (long long)g->ys[2 + i]);
      }
    }
    sbf(s, "      if (hmv && k < khi%s) { pa[%d] = bitcast<f32>(b%d[%s]); }\n    }\n", cond, r, b1, addr);
  }
}

/* A strided convolution's input gradient through columns (the default since session 12, whose
 * H200 call measured the b16 step at 5.24 ms with it against 5.63 without;
 * CT_WEBGPU_CONV_DGRAD_COL=0: the implicit GEMM): the implicit GEMM walks K = O * taps for every input
 * position, and at stride 2 three taps in four do not divide by the stride (zeros multiplied:
 * session 11's profile had the b16 step's three stride-2 3x3 input gradients at 171-192 us
 * against ~90 for a stride-1 one of twice the work). Instead: cols[n, (c, tap), p] =
 * sum_o w[o, c, tap] gy[n, o, p], a dense 1x1 convolution of gy by the weights read transposed
 * (a strided view), then gx[n, c, i] = the sum, over the taps in order, of the cols entries whose
 * output position p = (i + pad - tap * dil) / stride is whole and in range. Other sums' order than
 * the implicit GEMM's (over o, then taps): equal within float32 rounding. For groups 1, no bias,
 * weights whose (c, tap) run contiguously; *done false: the caller runs the implicit GEMM. */
static ct_status k_conv(const ct_call *c);
static ct_status conv_dgrad_col(const ct_call *c, bool *done) {
  *done = false;
  const char *e = getenv("CT_WEBGPU_CONV_DGRAD_COL");
  if ((e && *e == '0') || c->op != CT_OP_convolution_backward_input || c->a.k[1] != 1 || (c->n_in > 2 && c->in[2]))
    return CT_OK;
  int nd = (int)c->a.k[0];
  const ct_tensor *gy = c->in[0], *w = c->in[1];
  ct_tensor *gx = c->out[0];
  if (nd < 1 || nd > 3 || gy->ndim != nd + 2 || w->ndim != nd + 2 || gx->ndim != nd + 2 || gy->dtype != CT_FLOAT32 ||
      w->dtype != CT_FLOAT32 || gx->dtype != CT_FLOAT32 || ct_numel(gx) == 0 || ct_numel(gy) == 0)
    return CT_OK;
  bool strided = false;
  for (int j = 0; j < nd; j++) strided = strided || c->a.i[j] > 1;
  if (!strided) return CT_OK;
  cv_geom g;
  cv_make(&g, c, gx, w, gy);
  if (!cv_sp_contig(g.ws, g.k) || g.ws[1] != g.ksp) return CT_OK;
  ct_options o = ct_opts_dtype(CT_FLOAT32);
  o.device = ct_webgpu();
  int64_t cs[5] = {g.N, g.C * g.ksp}, vs[5] = {g.C * g.ksp, g.O}, vst[5] = {1, w->stride[0]};
  for (int j = 0; j < nd; j++) cs[2 + j] = gy->shape[2 + j], vs[2 + j] = 1, vst[2 + j] = 1;
  ct_tensor *cols = ct_empty(nd + 2, cs, o);
  bool prev = ct_set_grad_enabled(false); /* a view for the kernel's operand, no autograd record */
  ct_tensor *wv = cols ? ct_as_strided(w, nd + 2, vs, vst, -1) : NULL;
  ct_set_grad_enabled(prev);
  ct_status st = cols && wv ? CT_OK : ct_last_status();
  if (st == CT_OK) {
    ct_call c2;
    memset(&c2, 0, sizeof c2);
    c2.op = CT_OP_convolution, c2.n_in = 2, c2.n_out = 1;
    c2.in[0] = (ct_tensor *)gy, c2.in[1] = wv, c2.out[0] = cols;
    c2.a.k[0] = nd, c2.a.k[1] = 1;
    for (int j = 0; j < nd; j++) c2.a.i[j] = 1, c2.a.i[3 + j] = 0, c2.a.i[6 + j] = 1;
    st = k_conv(&c2);
  }
  if (st == CT_OK) { /* the gather: a thread per gx element */
    wg_lock();
    int64_t total = ct_numel(gx);
    st = check_extent(gx);
    if (st == CT_OK) st = check_extent(cols);
    if (st == CT_OK) {
      bindset bs = {{0}, 0, -1};
      int bc = bind_of(&bs, cols), bo = bind_of(&bs, gx);
      uint32_t rx, ry;
      grid((total + 255) / 256, &rx, &ry);
      int64_t lin[3] = {g.in[0], g.in[1], g.in[2]};
      sb s = {0};
      emit_bindings(&s, &bs);
      sbf(&s, "@compute @workgroup_size(256)\n"
              "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
              "  let e = (wid.y * %uu + wid.x) * 256u + li;\n  if (e >= %lldu) { return; }\n"
              "  let n = e / %lldu; let ch = (e / %lldu) %% %lldu; let q = e %% %lldu;\n",
          rx, (long long)total, (long long)(g.C * g.insp), (long long)g.insp, (long long)g.C, (long long)g.insp);
      cv_split3(&s, "i", "q", lin);
      sbf(&s, "  var v: f32 = 0.0;\n  for (var t: u32 = 0u; t < %lldu; t = t + 1u) {\n", (long long)g.ksp);
      cv_split3(&s, "k", "t", g.k);
      for (int j = 0; j < 3; j++)
        sbf(&s, "    let a%d = i32(i%d) + %lld - i32(k%d * %lldu);\n"
                "    if (a%d < 0 || a%d %% %lld != 0 || a%d / %lld >= %lld) { continue; }\n",
            j, j, (long long)g.p[j], j, (long long)g.d[j], j, j, (long long)g.s[j], j, (long long)g.s[j], (long long)g.out[j]);
      /* cols is contiguous [N, C * ksp, out...] */
      sbf(&s, "    let p = (u32(a0) / %lldu * %lldu + u32(a1) / %lldu) * %lldu + u32(a2) / %lldu;\n"
              "    v = v + bitcast<f32>(b%d[%lldu + (n * %lldu + ch * %lldu + t) * %lldu + p]);\n  }\n",
          (long long)g.s[0], (long long)g.out[1], (long long)g.s[1], (long long)g.out[2], (long long)g.s[2], bc,
          (long long)cols->offset, (long long)(g.C * g.ksp), (long long)g.ksp, (long long)g.outsp);
      char off[400];
      cv_off(off, sizeof off, g.xo, g.xs, "n", "ch", "i");
      sbf(&s, "  b%d[%s] = bitcast<u32>(v);\n}\n", bo, off);
      st = launch(&s, &bs, rx, ry, 1);
    }
    wg_unlock();
  }
  ct_release(wv);
  ct_release(cols);
  if (st == CT_OK) *done = true;
  return st;
}

static ct_status k_conv(const ct_call *c) {
  WG_BEGIN(c);
  bool col_done = false;
  CT_TRY(conv_dgrad_col(c, &col_done));
  if (col_done) return CT_OK;
  int op = c->op;
  for (int i = 0; i < c->n_in; i++)
    if (c->in[i]) CT_TRY(need_f32(c, c->in[i]));
  CT_TRY(need_f32(c, c->out[0]));
  int nd = (int)c->a.k[0];
  if (nd < 1 || nd > 3 || c->a.k[1] < 1 || c->in[0]->ndim != nd + 2 || c->in[1]->ndim != nd + 2 || c->out[0]->ndim != nd + 2)
    return unsupported(c, "Expected 1 to 3 spatial dims.");
  const ct_tensor *bias = op != CT_OP_convolution_backward_weight && c->n_in > 2 ? c->in[2] : NULL;
  const ct_tensor *X = op == CT_OP_convolution_backward_input ? c->out[0] : c->in[0];
  const ct_tensor *Wt = op == CT_OP_convolution_backward_weight ? c->out[0] : c->in[1];
  const ct_tensor *Y = op == CT_OP_convolution ? c->out[0] : op == CT_OP_convolution_backward_input ? c->in[0] : c->in[1];
  cv_geom g;
  cv_make(&g, c, X, Wt, Y);
  if (ct_numel(c->out[0]) == 0) return CT_OK;
  int64_t M, Nc, K;
  if (op == CT_OP_convolution) M = g.N * g.outsp, Nc = g.og, K = g.cg * g.ksp;
  else if (op == CT_OP_convolution_backward_input) M = g.N * g.insp, Nc = g.cg, K = g.og * g.ksp;
  else M = g.og, Nc = g.cg * g.ksp, K = g.N * g.outsp;
  /* T x T outputs per thread (a 16T x 16T tile per workgroup) and K split over z. Default: the
   * register tile the product's sides allow (T = 4 from 64 rows and columns, 2 from 32), then,
   * below 528 workgroups (4 per multiprocessor of a 132-SM GPU), K split into slices of at least
   * 256 until about 4224 workgroups: the H200 profile (session 8) showed these kernels bound by
   * one workgroup's serial walk over K (a weight gradient, K = 16384 on 144 workgroups: 0.69 ms),
   * not by the number of workgroups. CT_WEBGPU_CONV_POLICY=7 restores session 7's choice (the
   * largest T that still gives 264 workgroups; split only below 128 for K >= 2048);
   * CT_WEBGPU_CONV_T=1|2|4 forces T (tests, A/B); CT_WEBGPU_CONV_FWD_T=1|2|4 forces it for the
   * forward convolution only. A forward with grad disabled (inference) takes T = 2 unless forced:
   * on the H200 T = 2 made ResNet-224 b1 inference faster (session 8: 0.935 vs 0.992 ms; session
   * 9: 0.766 vs 0.828) but the b16 training step slower (9.11 vs 6.82 ms, session 8). */
  int T = 4;
  const char *te = getenv("CT_WEBGPU_CONV_T"), *pol = getenv("CT_WEBGPU_CONV_POLICY");
  if (!(te && *te) && op == CT_OP_convolution) te = getenv("CT_WEBGPU_CONV_FWD_T");
  if (!(te && *te) && op == CT_OP_convolution && !ct_is_grad_enabled() && !(pol && !strcmp(pol, "7"))) te = "2";
  bool old_policy = pol && !strcmp(pol, "7");
  /* session 13: CT_WEBGPU_WGRAD_T=1|2|4 forces T for the weight gradient only (A/B) */
  const char *wte = op == CT_OP_convolution_backward_weight ? getenv("CT_WEBGPU_WGRAD_T") : NULL;
  if (wte && (*wte == '1' || *wte == '2' || *wte == '4')) te = wte;
  if (te && (*te == '1' || *te == '2' || *te == '4')) T = *te - '0';
  else if (old_policy)
    while (T > 1 && ((Nc + 16 * T - 1) / (16 * T)) * ((M + 16 * T - 1) / (16 * T)) * g.G < 264) T /= 2;
  else T = M >= 64 && Nc >= 64 ? 4 : M >= 32 && Nc >= 32 ? 2 : 1;
  /* Session 11's layout (default; CT_WEBGPU_CONV_V2=0: session 10's): each thread owns T adjacent
   * rows and T adjacent columns of its tile, so one vecT read from workgroup memory gives its T
   * operands of a k step (was T scalar reads 16 apart), and the operand loads take the contiguous
   * fast paths above. The k order of every output's sum is unchanged: the same bits.
   * CT_WEBGPU_CONV_NT=8: 8x8-thread workgroups (a 8T x 8T tile: 4x the workgroups, each thread
   * the same T x T outputs; the split's targets count 16x16-thread workgroups), A/B only: slower on
   * the H200 (session 11: ResNet-224 b1 0.87 vs 0.63 ms, the b16 step 8.7 vs 6.5 ms). */
  const char *v2e = getenv("CT_WEBGPU_CONV_V2"), *nte = getenv("CT_WEBGPU_CONV_NT");
  bool v2 = !(v2e && *v2e == '0');
  int NT = v2 && nte && !strcmp(nte, "8") ? 8 : 16;
  int64_t TS = NT * T;
  int64_t gx = (Nc + TS - 1) / TS, gy = (M + TS - 1) / TS, tiles = gx * gy * g.G, S = 1, KC = (K + 15) / 16 * 16;
  int64_t wtiles = NT == 8 ? (tiles + 3) / 4 : tiles; /* in 256-thread workgroups */
  /* slices of at least 256, so K >= 512 splits (CT_WEBGPU_CONV_SLICE=16..4096: another floor, for
   * A/B: with the split summed in the same dispatch, more slices cost no dispatch, only partial
   * tiles; e.g. 128 also splits ResNet-224's layer4 1x1 downsample, K = 256 on 32 workgroups) */
  const char *sle = getenv("CT_WEBGPU_CONV_SLICE");
  int64_t minsl = sle && *sle ? atoll(sle) : 256;
  if (minsl < 16 || minsl > 4096) minsl = 256;
  if (old_policy ? tiles < 128 && K >= 2048 : wtiles < 528 && K >= 2 * minsl) { /* too few workgroups for a long K: split it */
    S = old_policy ? (256 + tiles - 1) / tiles : (4224 + wtiles - 1) / wtiles;
    if (!old_policy && S > (K + minsl - 1) / minsl) S = (K + minsl - 1) / minsl;
    if (S > 64) S = 64;
    KC = ((K + S - 1) / S + 15) / 16 * 16;
    S = (K + KC - 1) / KC;
  }
  /* session 13: CT_WEBGPU_WGRAD_S=n forces the weight gradient's split into n slices (1..64; A/B):
   * slices of whole 16-deep steps, so fewer where K is short; the sums run in slice order as above */
  const char *wse = op == CT_OP_convolution_backward_weight ? getenv("CT_WEBGPU_WGRAD_S") : NULL;
  if (wse && *wse && atoll(wse) >= 1 && atoll(wse) <= 64) {
    S = atoll(wse);
    KC = ((K + S - 1) / S + 15) / 16 * 16;
    S = (K + KC - 1) / KC;
  }
  if (KC == 0) KC = 16;
  if (gx > wg_max_groups() || gy > wg_max_groups() || g.G * S > wg_max_groups())
    return unsupported(c, "The convolution is too large for one dispatch.");
  wg_conv_epi *ep = op == CT_OP_convolution && conv_epi && !conv_epi->used && cv_epi_ok(conv_epi, c->out[0], bias, S)
                        ? conv_epi
                        : NULL;
  /* Split K summed in the same dispatch (default; CT_WEBGPU_CONV_FUSED_SUM=0: the separate sum
   * pass): each workgroup writes its slice's partial tile as before, then counts itself in its
   * tile's counter (wg_counter_buffer); the last of the tile's S workgroups to arrive adds the S
   * partials in slice order (the sum pass's order: the same bits) and runs fin (bias, the folded
   * BN/residual/ReLU), then puts the counter back to 0. One dispatch instead of two per split
   * convolution (ResNet-18 224 b1: 16 of 41). Partials and counters go through atomics, so
   * another workgroup's partials are read where it wrote them (the device's coherent level),
   * never from a stale cache line, and each partial is written by an exchange whose returned
   * value the workgroup consumes before its counter moves (WGSL's atomics are relaxed and its
   * barriers workgroup-scoped: no fence orders a plain store before another workgroup's read;
   * a completed read-modify-write is how far this can go). Needs the tiles' counters and one
   * binding more than the plain pass (x, w, partials, counters, y, bias, BN's 4, res) within the
   * device's limit; else the separate pass runs. */
  const char *fse = getenv("CT_WEBGPU_CONV_FUSED_SUM");
  bool fsum = false;
  /* Session 13: the weight gradient's split sums in the separate pass by default
   * (CT_WEBGPU_WGRAD_SUM_PASS=0: in the dispatch, as sessions 10-12): on the H200 the b16 step's split
   * weight gradients took 67-68 us with the pass (+ ~5 us for the pass) against 79-101 us summing in
   * the dispatch (its last workgroup per tile adds S partials of 16T x 16T outputs alone, through
   * atomics: 9 workgroups for layer1's 64 slices), step 4.98 -> 4.72 ms. The same order of the
   * sum: the same bits. The forward's and input gradient's splits take the pass where their
   * partials reach CT_WEBGPU_CONV_PASS_MIN floats (default 2^20, 4 MB; 0: never, sessions 10-12's
   * in-dispatch sum): every split forward/input gradient of the b16 step (1.2-3.1M partials; its
   * 3-slice layer1 convolutions 79 -> 62 us) but none of ResNet-224 b1's (0.45-0.6M), where the
   * pass measured equal within noise (0.524 vs 0.520 ms) for 16 dispatches more (H200, call 2).
   * CT_WEBGPU_CONV_PASS_S=n (A/B): the pass for every split of n or more slices. */
  if (op == CT_OP_convolution_backward_weight) {
    const char *wpe = getenv("CT_WEBGPU_WGRAD_SUM_PASS");
    if (!(wpe && *wpe == '0')) fse = "0";
  } else if (S > 1) {
    const char *pse = getenv("CT_WEBGPU_CONV_PASS_S"), *pme = getenv("CT_WEBGPU_CONV_PASS_MIN");
    long long pmin = pme && *pme ? atoll(pme) : 1LL << 20;
    if (pse && *pse) {
      if (atoll(pse) >= 2 && S >= atoll(pse)) fse = "0";
    } else if (pmin > 0 && S * g.G * M * Nc >= pmin) fse = "0";
  }
  if (S > 1 && !(fse && *fse == '0') && gx * gy * g.G < WG_COUNTERS) { /* the last counter: always 0 */
    uint32_t need = 2 + 1 + 1 + 1 + (bias ? 1 : 0) + (ep ? 4 + (ep->res ? 1 : 0) : 0), lim = wg_max_storage_buffers();
    fsum = need <= (lim < WG_MAX_BINDINGS ? lim : WG_MAX_BINDINGS);
  }
  wg_buf *cnt = NULL;
  cv_epi_bind eb = {-1, -1, -1, -1, -1};
  ct_tensor *tmp = NULL;
  if (S > 1) {
    ct_options o = ct_opts_dtype(CT_FLOAT32);
    o.device = ct_webgpu();
    int64_t n = S * g.G * M * Nc;
    if (!(tmp = ct_empty(1, &n, o))) return ct_last_status();
  }
  wg_lock();
  const ct_tensor *all[6] = {X, Wt, Y, bias, tmp, ep ? ep->res : NULL};
  ct_status st = CT_OK;
  for (int i = 0; i < 6 && st == CT_OK; i++)
    if (all[i] && ct_numel(all[i]) > 0) st = check_extent(all[i]);
  /* operands: la reads b1, lb reads b2 */
  const ct_tensor *A = op == CT_OP_convolution ? X : Y, *B = op == CT_OP_convolution_backward_weight ? X : Wt;
  const ct_tensor *Out = c->out[0];
  if (st == CT_OK) {
    bindset bs = {{0}, 0, -1};
    int b1 = bind_of(&bs, A), b2 = bind_of(&bs, B), bo = -1, bb = -1, bt = -1, bc = -1;
    if (S > 1) bt = bind_of(&bs, tmp);
    if (fsum && (cnt = wg_counter_buffer())) {
      bc = bind_buf(&bs, cnt); /* a buffer no tensor holds */
      bs.atomic_idx = bt, bs.atomic_idx2 = bc + 1;
    } else fsum = false;
    if (S == 1 || fsum) {
      bo = bind_of(&bs, Out);
      if (bias) bb = bind_of(&bs, bias);
      if (ep) cv_epi_bind_all(&bs, ep, &eb);
    }
    sb s = {0};
    emit_bindings(&s, &bs);
    cv_emit_operands(&s, op, &g, b1, b2, v2);
    if (S == 1 || fsum) cv_emit_fin(&s, op, &g, bo, bb, bias, ep, &eb);
    /* tiles in workgroup memory, k-major: As[kk][mm], Bs[kk][jj] (16 x 16T each); each thread
     * loads T elements of each (the index order that walks each operand's contiguous dim
     * across neighbouring threads) and owns outputs (lid.y + 16 i, lid.x + 16 j) */
    bool a_kfast = op == CT_OP_convolution_backward_weight; /* gy[n, m, p]: k runs along p */
    /* session 13: the weight gradient's hoisted loads (above; CT_WEBGPU_WGRAD_HOIST=0: off) */
    const char *whe = getenv("CT_WEBGPU_WGRAD_HOIST");
    bool whoist = a_kfast && v2 && NT == 16 && !(whe && *whe == '0') && cv_sp_contig(g.ys, g.out);
    /* session 13: where the weights' j (the output's channel) is their contiguous dim (the column
     * path's transposed weights, a 1x1 input gradient's), B's loads walk j across neighbouring
     * threads (coalesced) instead of k (a weight column); the same elements into the same places
     * (CT_WEBGPU_CONV_BJ=0: along k as before) */
    const char *bje = getenv("CT_WEBGPU_CONV_BJ");
    int64_t bjs = op == CT_OP_convolution ? g.ws[0] : op == CT_OP_convolution_backward_input ? g.ws[1] : 0;
    bool b_jfast = !a_kfast && !(bje && *bje == '0') && bjs == 1 && Nc > 1;
    const char *ahe = getenv("CT_WEBGPU_CONV_HOIST");
    bool x11f = op == CT_OP_convolution && v2 && cv_sp_contig(g.xs, g.in) && g.ksp == 1 && g.insp == g.outsp;
    for (int i = 0; i < 3; i++) x11f = x11f && g.s[i] == 1 && g.p[i] == 0 && g.in[i] == g.out[i];
    bool ahoist = !a_kfast && v2 && NT == 16 && !(ahe && *ahe == '0') && !x11f;
    /* Prefetch (default; CT_WEBGPU_CONV_PREFETCH=0 turns it off for A/B): the next slice's
     * operands are loaded into registers (pa, pb) before the current slice's products, so the
     * global loads' latency overlaps the arithmetic instead of stalling every 16-deep step (the
     * H200 profile: split slices of 16 steps still took ~50 us, latency-bound). */
    const char *pf = getenv("CT_WEBGPU_CONV_PREFETCH");
    bool prefetch = !(pf && *pf == '0');
    /* The slice's depth BK (CT_WEBGPU_CONV_BK=32 for A/B; default 16): 32 halves the serial steps
     * and the barriers of each workgroup's walk over K, each thread loading R = T * BK / 16 elements
     * of each operand per step (more loads in flight). Each output's sum still runs over k in order
     * and the slices (KC) do not move, so the values are the same bits. */
    const char *bke = getenv("CT_WEBGPU_CONV_BK");
    if (a_kfast && getenv("CT_WEBGPU_WGRAD_BK") && *getenv("CT_WEBGPU_WGRAD_BK")) bke = getenv("CT_WEBGPU_WGRAD_BK"); /* A/B (s13) */
    int BK = bke && !strcmp(bke, "32") ? 32 : 16, R = T * BK / NT, NT2 = NT * NT;
    /* the hoisted loads for the default 16-deep steps only (32: SwiftShader's compiler does not come
     * back from their unrolled loads; BK = 32 is an A/B setting) */
    if (BK != 16) whoist = ahoist = false;
    /* v2: workgroup memory as vecT (T consecutive rows or columns of one k), read whole */
    const char *vt = T == 4 ? "vec4<f32>" : T == 2 ? "vec2<f32>" : "f32";
    int VT = v2 ? T : 1;
    /* v2: each k row of As/Bs padded by one vector (T words; 1 for T = 1). The stores that walk k
     * across neighbouring threads (every B operand, A in the weight gradient) then land in 16 (T = 4)
     * or 32 banks instead of one: session 11's H200 profile had these kernels at ~20% of the FMA rate,
     * bound by the 16-way conflicted stores rather than by the products. RS: a row's stride in vectors. */
    const char *pde = getenv("CT_WEBGPU_CONV_PAD"); /* =0: unpadded rows (A/B) */
    int RS = v2 && !(pde && *pde == '0') ? NT + 1 : NT;
    char rowx[64], colx[64]; /* a thread's i-th row and jx-th column in its tile */
    if (v2) snprintf(rowx, sizeof rowx, "lid.y * %du + i", T), snprintf(colx, sizeof colx, "lid.x * %du + jx", T);
    else snprintf(rowx, sizeof rowx, "lid.y + 16u * i"), snprintf(colx, sizeof colx, "lid.x + 16u * jx");
    if (fsum) sbf(&s, "var<workgroup> lastf: u32;\nvar<workgroup> wjunk: atomic<u32>;\n");
    sbf(&s, "var<workgroup> As: array<%s, %lld>;\nvar<workgroup> Bs: array<%s, %lld>;\n"
            "@compute @workgroup_size(%d, %d)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n"
            "  let grp = wid.z / %lldu; let sp = wid.z %% %lldu;\n"
            "  let m0 = wid.y * %lldu; let j0 = wid.x * %lldu; let tid = lid.y * %du + lid.x;\n"
            "  let klo = sp * %lldu; let khi = min(%lldu, klo + %lldu);\n  var acc: array<f32, %d>;\n"
            "  var pa: array<f32, %d>; var pb: array<f32, %d>;\n",
        v2 ? vt : "f32", (long long)(v2 ? BK * RS : BK * TS), v2 ? vt : "f32", (long long)(v2 ? BK * RS : BK * TS), NT, NT, (long long)S, (long long)S,
        (long long)TS, (long long)TS, NT, (long long)KC, (long long)K, (long long)KC, T * T, R, R);
    if (fsum) sbf(&s, "  var junk: u32 = 0u;\n  if (tid == 0u) { atomicStore(&wjunk, 0u); }\n");
    /* the operand indices of element r of this thread's share: mm, kk (A) and kb, jb (B) */
    char idx[200];
    if (a_kfast) snprintf(idx, sizeof idx, "let kk = e %% %du; let mm = e / %du; let kb = e %% %du; let jb = e / %du;", BK, BK, BK, BK);
    else if (b_jfast)
      snprintf(idx, sizeof idx, "let mm = e %% %lldu; let kk = e / %lldu; let jb = e %% %lldu; let kb = e / %lldu;",
               (long long)TS, (long long)TS, (long long)TS, (long long)TS);
    else
      snprintf(idx, sizeof idx, "let mm = e %% %lldu; let kk = e / %lldu; let kb = e %% %du; let jb = e / %du;",
               (long long)TS, (long long)TS, BK, BK);
    /* fetch(kf): pa/pb = the operands of the slice starting at kf (0 outside the product) */
    char fetch_fmt[600];
    snprintf(fetch_fmt, sizeof fetch_fmt,
        "%%s    for (var r: u32 = 0u; r < %%du; r = r + 1u) {\n      let e = tid + %du * r; %%s\n"
        "      pa[r] = 0.0; pb[r] = 0.0;\n"
        "      if (m0 + mm < %%lldu && %%s + kk < khi) { pa[r] = la(m0 + mm, %%s + kk, grp); }\n"
        "      if (j0 + jb < %%lldu && %%s + kb < khi) { pb[r] = lb(%%s + kb, j0 + jb, grp); }\n    }\n%%s", NT2);
    /* B's loads alone (after the hoisted A loads) */
    char fetchb_fmt[600];
    snprintf(fetchb_fmt, sizeof fetchb_fmt,
        "%%s    for (var r: u32 = 0u; r < %%du; r = r + 1u) {\n      let e = tid + %du * r; %%s\n"
        "      pb[r] = 0.0;\n"
        "      if (j0 + jb < %%lldu && %%s + kb < khi) { pb[r] = lb(%%s + kb, j0 + jb, grp); }\n    }\n%%s", NT2);
#define CV_AFETCH(pre, kf, post)                                                                     \
  (sbf(&s, "%s", pre), cv_emit_afetch(&s, op, &g, kf, R, TS, NT2, b1),                                \
   sbf(&s, fetchb_fmt, "", R, idx, (long long)Nc, kf, kf, ""), sbf(&s, "%s", post))
    if (whoist) cv_emit_whoist(&s, &g, R, BK, NT2, M, Nc, b1, b2);
    if (ahoist) cv_emit_ahoist(&s, op, &g, TS, M);
    if (prefetch && ahoist) CV_AFETCH("  {\n", "klo", "  }\n");
    else if (prefetch && whoist) cv_emit_wfetch(&s, &g, "klo", R, b1, b2);
    else if (prefetch) sbf(&s, fetch_fmt, "  {\n", R, idx, (long long)M, "klo", "klo", (long long)Nc, "klo", "klo", "  }\n");
    sbf(&s, "  for (var k0: u32 = klo; k0 < khi; k0 = k0 + %du) {\n", BK);
    if (!prefetch && ahoist) CV_AFETCH("", "k0", "");
    else if (!prefetch && whoist) cv_emit_wfetch(&s, &g, "k0", R, b1, b2);
    else if (!prefetch) sbf(&s, fetch_fmt, "", R, idx, (long long)M, "k0", "k0", (long long)Nc, "k0", "k0", "");
    if (VT == 1)
      sbf(&s, "    for (var r: u32 = 0u; r < %du; r = r + 1u) {\n      let e = tid + %du * r; %s\n"
              "      As[kk * %lldu + mm] = pa[r]; Bs[kb * %lldu + jb] = pb[r];\n    }\n    workgroupBarrier();\n",
          R, NT2, idx, (long long)(v2 ? RS : TS), (long long)(v2 ? RS : TS));
    else /* element (kk, mm) is component mm %% T of vector kk * NT + mm / T */
      sbf(&s, "    for (var r: u32 = 0u; r < %du; r = r + 1u) {\n      let e = tid + %du * r; %s\n"
              "      As[kk * %du + mm / %du][mm %% %du] = pa[r]; Bs[kb * %du + jb / %du][jb %% %du] = pb[r];\n    }\n"
              "    workgroupBarrier();\n",
          R, NT2, idx, RS, T, T, RS, T, T);
    char nxt[96];
    snprintf(nxt, sizeof nxt, "    if (k0 + %du < khi) {\n    let kn = k0 + %du;\n", BK, BK);
    if (prefetch && ahoist) CV_AFETCH(nxt, "kn", "    }\n");
    else if (prefetch && whoist) sbf(&s, "%s", nxt), cv_emit_wfetch(&s, &g, "kn", R, b1, b2), sbf(&s, "    }\n");
    else if (prefetch) sbf(&s, fetch_fmt, nxt, R, idx, (long long)M, "kn", "kn", (long long)Nc, "kn", "kn", "    }\n");
#undef CV_AFETCH
    if (!v2)
      sbf(&s, "    for (var kk: u32 = 0u; kk < %du; kk = kk + 1u) {\n"
              "      var av: array<f32, %d>; var bv: array<f32, %d>;\n"
              "      for (var i: u32 = 0u; i < %du; i = i + 1u) { av[i] = As[kk * %lldu + lid.y + 16u * i]; bv[i] = Bs[kk * %lldu + lid.x + 16u * i]; }\n"
              "      for (var i: u32 = 0u; i < %du; i = i + 1u) { for (var j: u32 = 0u; j < %du; j = j + 1u) { acc[i * %du + j] = acc[i * %du + j] + av[i] * bv[j]; } }\n"
              "    }\n",
          BK, T, T, T, (long long)TS, (long long)TS, T, T, T, T);
    else if (T == 1)
      sbf(&s, "    for (var kk: u32 = 0u; kk < %du; kk = kk + 1u) {\n"
              "      acc[0] = acc[0] + As[kk * %du + lid.y] * Bs[kk * %du + lid.x];\n    }\n", BK, RS, RS);
    else
      sbf(&s, "    for (var kk: u32 = 0u; kk < %du; kk = kk + 1u) {\n"
              "      let av = As[kk * %du + lid.y]; let bv = Bs[kk * %du + lid.x];\n"
              "      for (var i: u32 = 0u; i < %du; i = i + 1u) { for (var j: u32 = 0u; j < %du; j = j + 1u) { acc[i * %du + j] = acc[i * %du + j] + av[i] * bv[j]; } }\n"
              "    }\n",
          BK, RS, RS, T, T, T, T);
    sbf(&s, "    workgroupBarrier();\n  }\n"
            "  for (var i: u32 = 0u; i < %du; i = i + 1u) {\n    for (var jx: u32 = 0u; jx < %du; jx = jx + 1u) {\n"
            "      let m = m0 + %s; let j = j0 + %s;\n"
            "      if (m < %lldu && j < %lldu) {\n",
        T, T, rowx, colx, (long long)M, (long long)Nc);
    if (S == 1) sbf(&s, "        fin(m, j, grp, acc[i * %du + jx]);\n      }\n    }\n  }\n}\n", T);
    else if (fsum) {
      long long part = (long long)tmp->offset, GMN = (long long)(g.G * M * Nc), MN = (long long)(M * Nc);
      /* the partials go out as atomic exchanges whose old values are folded into one word that
       * thread 0 then writes (an OR of 0 into the always-zero last counter): each exchange has
       * completed (its value came back) before the barrier, so before the tile's counter moves;
       * a plain store could still be in flight when the last workgroup reads */
      sbf(&s, "        junk = junk ^ atomicExchange(&b%d[%lldu + ((sp * %lldu + grp) * %lldu + m) * %lldu + j], bitcast<u32>(acc[i * %du + jx]));\n"
              "      }\n    }\n  }\n"
              "  atomicXor(&wjunk, junk);\n  storageBarrier();\n"
              "  if (tid == 0u) {\n"
              "    let z = atomicLoad(&b%d[%du]);\n    atomicOr(&b%d[%du], atomicLoad(&wjunk) & z);\n"
              "    let tile = (grp * %lldu + wid.y) * %lldu + wid.x;\n"
              "    let arrived = atomicAdd(&b%d[tile], 1u);\n    lastf = select(0u, 1u, arrived == %lldu);\n"
              "    if (arrived == %lldu) { atomicStore(&b%d[tile], 0u); }\n  }\n"
              "  if (workgroupUniformLoad(&lastf) == 0u) { return; }\n  storageBarrier();\n"
              "  for (var i: u32 = 0u; i < %du; i = i + 1u) {\n    for (var jx: u32 = 0u; jx < %du; jx = jx + 1u) {\n"
              "      let m = m0 + %s; let j = j0 + %s;\n"
              "      if (m < %lldu && j < %lldu) {\n        let pe = %lldu + grp * %lldu + m * %lldu + j;\n",
          bt, part, (long long)g.G, (long long)M, (long long)Nc, T, bc, WG_COUNTERS - 1, bc, WG_COUNTERS - 1, (long long)gy,
          (long long)gx, bc, (long long)(S - 1), (long long)(S - 1), bc, T, T, rowx, colx, (long long)M, (long long)Nc, part, MN,
          (long long)Nc);
      /* every slice's partial, its own included (its exchange completed: the same bits as acc), loaded
       * at once (independent loads in flight), then added in slice order: the sum pass's order */
      for (int64_t q = 0; q < S; q++)
        sbf(&s, "        let p%lld = bitcast<f32>(atomicLoad(&b%d[pe + %lldu]));\n", (long long)q, bt, (long long)(q * GMN));
      sbf(&s, "        var v: f32 = 0.0;\n");
      for (int64_t q = 0; q < S; q++) sbf(&s, "        v = v + p%lld;\n", (long long)q);
      sbf(&s, "        fin(m, j, grp, v);\n      }\n    }\n  }\n}\n");
    } else
      sbf(&s, "        b%d[%lldu + ((sp * %lldu + grp) * %lldu + m) * %lldu + j] = bitcast<u32>(acc[i * %du + jx]);\n"
              "      }\n    }\n  }\n}\n",
          bt, (long long)tmp->offset, (long long)g.G, (long long)M, (long long)Nc, T);
    st = launch(&s, &bs, (uint32_t)gx, (uint32_t)gy, (uint32_t)(g.G * S));
  }
  if (st == CT_OK && S > 1 && !fsum) { /* the partial sums, added in slice order */
    bindset bs = {{0}, 0, -1};
    int bt = bind_of(&bs, tmp), bo = bind_of(&bs, Out), bb = bias ? bind_of(&bs, bias) : -1;
    if (ep) cv_epi_bind_all(&bs, ep, &eb);
    int64_t total = g.G * M * Nc;
    uint32_t rx, ry;
    grid((total + 255) / 256, &rx, &ry);
    sb s = {0};
    emit_bindings(&s, &bs);
    cv_emit_fin(&s, op, &g, bo, bb, bias, ep, &eb);
    sbf(&s, "@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
            "  let e = (wid.y * %uu + wid.x) * 256u + li;\n  if (e >= %lldu) { return; }\n"
            "  var v: f32 = 0.0;\n"
            "  for (var sp: u32 = 0u; sp < %lldu; sp = sp + 1u) { v = v + bitcast<f32>(b%d[%lldu + sp * %lldu + e]); }\n"
            "  let grp = e / %lldu; let m = (e / %lldu) %% %lldu; let j = e %% %lldu;\n  fin(m, j, grp, v);\n}\n",
        rx, (long long)total, (long long)S, bt, (long long)tmp->offset, (long long)total, (long long)(M * Nc), (long long)Nc,
        (long long)M, (long long)Nc);
    st = launch(&s, &bs, rx, ry, 1);
  }
  if (st == CT_OK && ep) ep->used = true;
  wg_unlock();
  ct_release(tmp);
  return st;
}

/* conv -> eval BatchNorm (eps) (-> + res) (-> ReLU), ResNet inference's pattern (src/models/resnet.c):
 * on WebGPU, float32, without grad and with bn in eval (affine, running statistics), one
 * convolution whose output pass (the split-K sum where K is split) applies the rest, where the
 * separate ops took the BN's two dispatches, the add and the ReLU. Returns the convolution's
 * output; *fused says whether bn, res and relu were applied (if not, the caller applies them: the
 * values are the same either way). CT_WEBGPU_CONV_BN=0 turns the fold off (A/B). */
ct_tensor *ct_webgpu_conv_bn(ct_module *conv, ct_module *bn, double eps, const ct_tensor *x, const ct_tensor *res, bool relu,
                             bool *fused) {
  *fused = false;
  const char *e = getenv("CT_WEBGPU_CONV_BN");
  ct_tensor *mean = bn ? ct_module_buffer(bn, "running_mean") : NULL, *var = bn ? ct_module_buffer(bn, "running_var") : NULL;
  ct_tensor *w = bn ? ct_module_param(bn, "weight") : NULL, *b = bn ? ct_module_param(bn, "bias") : NULL;
  /* a plain Conv2d (a LoRA-wrapped one adds its delta after the base convolution) and BatchNorm2d */
  const char *ct = conv ? ct_module_type_name(conv) : NULL, *bt = bn ? ct_module_type_name(bn) : NULL;
  bool ok = !(e && *e == '0') && ct && !strcmp(ct, "Conv2d") && bt && !strcmp(bt, "BatchNorm2d") && x &&
            ct_tensor_device(x).type == CT_DEVICE_WEBGPU && ct_tensor_dtype(x) == CT_FLOAT32 && !ct_is_grad_enabled() &&
            !ct_module_is_training(bn) && mean && var && w && b;
  if (!ok) return ct_module_forward(conv, x);
  wg_conv_epi ep = {mean, var, w, b, res, eps, relu, false};
  conv_epi = &ep;
  ct_tensor *y = ct_module_forward(conv, x);
  conv_epi = NULL;
  *fused = y && ep.used;
  return y;
}

/* fc(flatten(adaptive_avg_pool2d(x, 1))), ResNet's head (src/models/resnet.c), in one dispatch where
 * the pool, the flatten copy, the addmm and its split-K sum took four: on WebGPU, float32, without
 * grad, x [N, C, H, W] contiguous, fc a Linear [O, C] (bias optional), C <= 4096. A workgroup of 256
 * threads per 32 outputs of one sample: each channel's mean (sum over H*W in order, then / (H*W), as
 * the pool kernel) into workgroup memory, then 8 threads per output, each a strided share of the
 * dot product (fma in c order), added in lane order with the bias. Not the GEMM path's summation
 * order: equal to the unfused ops within float32 rounding, not bit for bit. Returns NULL with
 * *applied false (no error) where it does not apply; the caller then runs the separate modules.
 * CT_WEBGPU_POOL_FC=0 turns it off (A/B). */
ct_tensor *ct_webgpu_avgpool_linear(ct_module *fc, const ct_tensor *x, bool *applied) {
  *applied = false;
  const char *e = getenv("CT_WEBGPU_POOL_FC");
  if ((e && *e == '0') || !fc || !x || strcmp(ct_module_type_name(fc), "Linear") != 0 || ct_is_grad_enabled()) return NULL;
  ct_tensor *w = ct_module_param(fc, "weight"), *b = ct_module_param(fc, "bias");
  if (ct_tensor_device(x).type != CT_DEVICE_WEBGPU || x->dtype != CT_FLOAT32 || x->ndim != 4 || !ct_is_contiguous(x) || !w ||
      w->ndim != 2 || w->dtype != CT_FLOAT32 || ct_tensor_device(w).type != CT_DEVICE_WEBGPU ||
      (b && (b->ndim != 1 || b->dtype != CT_FLOAT32 || ct_tensor_device(b).type != CT_DEVICE_WEBGPU)))
    return NULL;
  int64_t N = x->shape[0], C = x->shape[1], HW = x->shape[2] * x->shape[3], O = w->shape[0];
  if (w->shape[1] != C || (b && b->shape[0] != O) || C < 1 || C > 4096 || HW < 1 || N < 1 || O < 1 ||
      (O + 31) / 32 > 65535 || N > 65535)
    return NULL;
  if (wg_ready() != CT_OK) {
    ct_clear_error();
    return NULL;
  }
  *applied = true;
  ct_options o = ct_opts_dtype(CT_FLOAT32);
  o.device = ct_webgpu();
  int64_t osh[2] = {N, O};
  ct_tensor *y = ct_empty(2, osh, o);
  if (!y) return NULL;
  wg_lock();
  ct_status st = check_extent(x);
  if (st == CT_OK) st = check_extent(w);
  if (st == CT_OK && b) st = check_extent(b);
  if (st == CT_OK) st = check_extent(y);
  if (st == CT_OK) {
    bindset bs = {{0}, 0, -1};
    int bx = bind_of(&bs, x), bw = bind_of(&bs, w), by = bind_of(&bs, y), bb = b ? bind_of(&bs, b) : -1;
    char hw[40];
    sb s = {0};
    emit_bindings(&s, &bs);
    sbf(&s, "var<workgroup> pooled: array<f32, %lld>;\nvar<workgroup> part: array<f32, 256>;\n"
            "@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
            "  let n = wid.y;\n"
            "  for (var c: u32 = li; c < %lldu; c = c + 256u) {\n"
            "    let base = %lldu + (n * %lldu + c) * %lldu;\n    var sum: f32 = 0.0;\n"
            "    for (var p: u32 = 0u; p < %lldu; p = p + 1u) { sum = sum + bitcast<f32>(b%d[base + p]); }\n"
            "    pooled[c] = sum / %s;\n  }\n  workgroupBarrier();\n"
            "  let o = wid.x * 32u + li / 8u; let lane = li %% 8u;\n  var acc: f32 = 0.0;\n"
            "  if (o < %lldu) {\n"
            "    for (var c: u32 = lane; c < %lldu; c = c + 8u) { acc = fma(pooled[c], bitcast<f32>(b%d[%lldu + o * %lldu + c * %lldu]), acc); }\n"
            "  }\n  part[li] = acc;\n  workgroupBarrier();\n"
            "  if (lane == 0u && o < %lldu) {\n    var v: f32 = part[li];\n"
            "    for (var l: u32 = 1u; l < 8u; l = l + 1u) { v = v + part[li + l]; }\n",
        (long long)C, (long long)C, (long long)x->offset, (long long)C, (long long)HW, (long long)HW, bx,
        flit((double)HW, hw), (long long)O, (long long)C, bw, (long long)w->offset, (long long)w->stride[0],
        (long long)w->stride[1], (long long)O);
    if (b) sbf(&s, "    v = v + bitcast<f32>(b%d[%lldu + o * %lldu]);\n", bb, (long long)b->offset, (long long)b->stride[0]);
    sbf(&s, "    b%d[%lldu + n * %lldu + o] = bitcast<u32>(v);\n  }\n}\n", by, (long long)y->offset, (long long)O);
    st = launch(&s, &bs, (uint32_t)((O + 31) / 32), (uint32_t)N, 1);
  }
  wg_unlock();
  if (st != CT_OK) {
    ct_release(y);
    return NULL;
  }
  return y;
}

/* ---- fused batch_norm (the CPU's native_batch_norm / native_batch_norm_backward contracts,
 * src/backend/cpu/kernels_bn.c; ct_batch_norm picks them): x contiguous [N, C, S], per-channel
 * tensors contiguous [C]. Forward: a workgroup per channel for the statistics (training: shifted
 * one-pass sums, as the CPU's, in float32 with a tree reduction; eval: the running ones copied),
 * then y = (x - mean) (rstd w) + b (k3: relu(y)) over every element: two dispatches where the
 * composed ops took about six (eval) or fifteen (training). Backward: the per-channel sums
 * sum(g'), sum(g' (x - mean)) (g' = g masked by the fused ReLU's output r where k3), which give
 * dweight and dbias, then dx elementwise. ---- */
static bool bn_tensor_ok(const ct_tensor *t, int64_t n) {
  return !t || (t->dtype == CT_FLOAT32 && ct_is_contiguous(t) && ct_numel(t) == n);
}
static ct_status k_native_bn(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *x = c->in[0], *w = c->in[1], *b = c->in[2], *rm = c->in[3], *rv = c->in[4];
  ct_tensor *y = c->out[0], *mean = c->out[1], *rstd = c->out[2], *var = c->out[3];
  bool training = c->a.k[0] != 0, relu = c->a.k[3] != 0;
  CT_TRY(need_f32(c, x));
  if (x->ndim < 2 || !ct_is_contiguous(x)) return unsupported(c, "Expected a contiguous float32 input.");
  int64_t N = x->shape[0], C = x->shape[1], numel = ct_numel(x), S = N && C ? numel / (N * C) : 0, M = N * S;
  if (!bn_tensor_ok(y, numel) || !mean || !rstd || !var || !bn_tensor_ok(mean, C) || !bn_tensor_ok(rstd, C) ||
      !bn_tensor_ok(var, C) || !bn_tensor_ok(w, C) || !bn_tensor_ok(b, C) || !bn_tensor_ok(rm, C) || !bn_tensor_ok(rv, C))
    return unsupported(c, "Expected contiguous float32 per-channel tensors.");
  if (!training && (!rm || !rv))
    return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: running_mean and running_var must be defined in evaluation mode");
  if (training && M == 0) return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: no values per channel");
  if (C == 0) return CT_OK;
  wg_lock();
  const ct_tensor *all[9] = {x, w, b, rm, rv, y, mean, rstd, var};
  ct_status st = CT_OK;
  for (int i = 0; i < 9 && st == CT_OK; i++)
    if (all[i] && ct_numel(all[i]) > 0) st = check_extent(all[i]);
  char eps[40];
  flit(c->a.f[0], eps);
  if (st == CT_OK) { /* the statistics: a workgroup per channel */
    bindset bs = {{0}, 0, -1};
    /* only what the WGSL reads is bound (the automatic layout drops unused bindings) */
    int bx = training ? bind_of(&bs, x) : -1, bm = bind_of(&bs, mean), br = bind_of(&bs, rstd), bv = bind_of(&bs, var);
    int brm = training ? -1 : bind_of(&bs, rm), brv = training ? -1 : bind_of(&bs, rv);
    uint32_t gx, gy;
    grid(C, &gx, &gy);
    sb s = {0};
    emit_bindings(&s, &bs);
    sbf(&s, "%s@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
            "  let c = wid.y * %uu + wid.x;\n  if (c >= %lldu) { return; }\n",
        norm_red_fn, gx, (long long)C);
    if (training)
      sbf(&s, "  let shift = bitcast<f32>(b%d[%lldu + c * %lldu]);\n  var a: f32 = 0.0; var q: f32 = 0.0;\n"
              "  for (var i: u32 = li; i < %lldu; i = i + 256u) {\n"
              "    let d = bitcast<f32>(b%d[%lldu + ((i / %lldu) * %lldu + c) * %lldu + i %% %lldu]) - shift;\n"
              "    a = a + d; q = q + d * d;\n  }\n"
              "  let t = red2(li, a, q);\n  let d = t.x / %lld.0;\n  let m = shift + d;\n"
              "  let v = max(t.y / %lld.0 - d * d, 0.0);\n",
          bx, (long long)x->offset, (long long)S, (long long)M, bx, (long long)x->offset, (long long)S, (long long)C,
          (long long)S, (long long)S, (long long)M, (long long)M);
    else
      sbf(&s, "  let m = bitcast<f32>(b%d[%lldu + c]);\n  let v = bitcast<f32>(b%d[%lldu + c]);\n", brm,
          (long long)rm->offset, brv, (long long)rv->offset);
    sbf(&s, "  if (li == 0u) {\n    b%d[%lldu + c] = bitcast<u32>(m);\n"
            "    b%d[%lldu + c] = bitcast<u32>(1.0 / sqrt(v + %s));\n    b%d[%lldu + c] = bitcast<u32>(v);\n  }\n}\n",
        bm, (long long)mean->offset, br, (long long)rstd->offset, eps, bv, (long long)var->offset);
    st = launch(&s, &bs, gx, gy, 1);
  }
  if (st == CT_OK && numel > 0) { /* y over every element */
    bindset bs = {{0}, 0, -1};
    int bx = bind_of(&bs, x), by = bind_of(&bs, y), bm = bind_of(&bs, mean), br = bind_of(&bs, rstd);
    int bw = w ? bind_of(&bs, w) : -1, bb = b ? bind_of(&bs, b) : -1;
    uint32_t gx, gy;
    grid((numel + 255) / 256, &gx, &gy);
    sb s = {0};
    emit_bindings(&s, &bs);
    sbf(&s, "@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
            "  let e = (wid.y * %uu + wid.x) * 256u + li;\n  if (e >= %lldu) { return; }\n"
            "  let c = (e / %lldu) %% %lldu;\n"
            "  var sc = bitcast<f32>(b%d[%lldu + c]);\n",
        gx, (long long)numel, (long long)S, (long long)C, br, (long long)rstd->offset);
    if (w) sbf(&s, "  sc = sc * bitcast<f32>(b%d[%lldu + c]);\n", bw, (long long)w->offset);
    sbf(&s, "  var v = (bitcast<f32>(b%d[%lldu + e]) - bitcast<f32>(b%d[%lldu + c])) * sc;\n", bx, (long long)x->offset,
        bm, (long long)mean->offset);
    if (b) sbf(&s, "  v = v + bitcast<f32>(b%d[%lldu + c]);\n", bb, (long long)b->offset);
    if (relu) sbf(&s, "  v = select(v, 0.0, v <= 0.0);\n"); /* NaN stays NaN, as the ReLU kernels */
    sbf(&s, "  b%d[%lldu + e] = bitcast<u32>(v);\n}\n", by, (long long)y->offset);
    st = launch(&s, &bs, gx, gy, 1);
  }
  wg_unlock();
  return st;
}

/* in g, x, weight?, mean, rstd, r? -> dx?, dweight?, dbias?; k0 training, k3 ReLU fused (r = in[5]) */
static ct_status k_native_bn_backward(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *g = c->in[0], *x = c->in[1], *w = c->in[2], *mean = c->in[3], *rstd = c->in[4];
  const ct_tensor *r = c->a.k[3] && c->n_in > 5 ? c->in[5] : NULL;
  ct_tensor *dx = c->out[0], *dw = c->out[1], *db = c->out[2];
  bool training = c->a.k[0] != 0;
  CT_TRY(need_f32(c, x));
  if (x->ndim < 2 || !ct_is_contiguous(x)) return unsupported(c, "Expected a contiguous float32 input.");
  int64_t N = x->shape[0], C = x->shape[1], numel = ct_numel(x), S = N && C ? numel / (N * C) : 0, M = N * S;
  if (c->a.k[3] && !r)
    return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: expected the fused ReLU's contiguous output");
  if (!g || !mean || !rstd || !bn_tensor_ok(g, numel) || !bn_tensor_ok(r, numel) || !bn_tensor_ok(dx, numel) ||
      !bn_tensor_ok(w, C) || !bn_tensor_ok(mean, C) || !bn_tensor_ok(rstd, C) || !bn_tensor_ok(dw, C) || !bn_tensor_ok(db, C))
    return unsupported(c, "Expected contiguous float32 tensors.");
  if (C == 0) return CT_OK;
  bool sums = dw || db || (dx && training);
  ct_tensor *tmp = NULL; /* [C, 2]: sum(g'), sum(g' (x - mean)) per channel */
  if (sums) {
    ct_options o = ct_opts_dtype(CT_FLOAT32);
    o.device = ct_webgpu();
    int64_t n2 = 2 * C;
    if (!(tmp = ct_empty(1, &n2, o))) return ct_last_status();
  }
  wg_lock();
  const ct_tensor *all[10] = {g, x, w, mean, rstd, r, dx, dw, db, tmp};
  ct_status st = CT_OK;
  for (int i = 0; i < 10 && st == CT_OK; i++)
    if (all[i] && ct_numel(all[i]) > 0) st = check_extent(all[i]);
  char gv[200];
  if (st == CT_OK && sums) {
    bindset bs = {{0}, 0, -1};
    int bg = bind_of(&bs, g), bx = bind_of(&bs, x), bm = bind_of(&bs, mean), br = dw ? bind_of(&bs, rstd) : -1;
    int brr = r ? bind_of(&bs, r) : -1, bt = bind_of(&bs, tmp), bw = dw ? bind_of(&bs, dw) : -1, bb = db ? bind_of(&bs, db) : -1;
    uint32_t gx, gy;
    grid(C, &gx, &gy);
    sb s = {0};
    emit_bindings(&s, &bs);
    sbf(&s, "%s@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
            "  let c = wid.y * %uu + wid.x;\n  if (c >= %lldu) { return; }\n"
            "  let m = bitcast<f32>(b%d[%lldu + c]);\n  var a: f32 = 0.0; var q: f32 = 0.0;\n"
            "  for (var i: u32 = li; i < %lldu; i = i + 256u) {\n"
            "    let o = ((i / %lldu) * %lldu + c) * %lldu + i %% %lldu;\n",
        norm_red_fn, gx, (long long)C, bm, (long long)mean->offset, (long long)M, (long long)S, (long long)C, (long long)S,
        (long long)S);
    if (r)
      snprintf(gv, sizeof gv, "select(bitcast<f32>(b%d[%lldu + o]), 0.0, bitcast<f32>(b%d[%lldu + o]) <= 0.0)", bg,
               (long long)g->offset, brr, (long long)r->offset);
    else snprintf(gv, sizeof gv, "bitcast<f32>(b%d[%lldu + o])", bg, (long long)g->offset);
    sbf(&s, "    let gv = %s;\n    a = a + gv; q = q + gv * (bitcast<f32>(b%d[%lldu + o]) - m);\n  }\n"
            "  let t = red2(li, a, q);\n  if (li == 0u) {\n"
            "    b%d[%lldu + 2u * c] = bitcast<u32>(t.x);\n    b%d[%lldu + 2u * c + 1u] = bitcast<u32>(t.y);\n",
        gv, bx, (long long)x->offset, bt, (long long)tmp->offset, bt, (long long)tmp->offset);
    if (dw) sbf(&s, "    b%d[%lldu + c] = bitcast<u32>(t.y * bitcast<f32>(b%d[%lldu + c]));\n", bw, (long long)dw->offset, br,
                (long long)rstd->offset);
    if (db) sbf(&s, "    b%d[%lldu + c] = bitcast<u32>(t.x);\n", bb, (long long)db->offset);
    sbf(&s, "  }\n}\n");
    st = launch(&s, &bs, gx, gy, 1);
  }
  if (st == CT_OK && dx && numel > 0) {
    bindset bs = {{0}, 0, -1};
    int bg = bind_of(&bs, g), bx = training ? bind_of(&bs, x) : -1, bm = training ? bind_of(&bs, mean) : -1;
    int br = bind_of(&bs, rstd), brr = r ? bind_of(&bs, r) : -1, bd = bind_of(&bs, dx), bw = w ? bind_of(&bs, w) : -1;
    int bt = training ? bind_of(&bs, tmp) : -1;
    uint32_t gx, gy;
    grid((numel + 255) / 256, &gx, &gy);
    sb s = {0};
    emit_bindings(&s, &bs);
    sbf(&s, "@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
            "  let o = (wid.y * %uu + wid.x) * 256u + li;\n  if (o >= %lldu) { return; }\n"
            "  let c = (o / %lldu) %% %lldu;\n  let rs = bitcast<f32>(b%d[%lldu + c]);\n  var a = rs;\n",
        gx, (long long)numel, (long long)S, (long long)C, br, (long long)rstd->offset);
    if (w) sbf(&s, "  a = a * bitcast<f32>(b%d[%lldu + c]);\n", bw, (long long)w->offset);
    if (r)
      snprintf(gv, sizeof gv, "select(bitcast<f32>(b%d[%lldu + o]), 0.0, bitcast<f32>(b%d[%lldu + o]) <= 0.0)", bg,
               (long long)g->offset, brr, (long long)r->offset);
    else snprintf(gv, sizeof gv, "bitcast<f32>(b%d[%lldu + o])", bg, (long long)g->offset);
    sbf(&s, "  let gv = %s;\n", gv);
    if (training)
      sbf(&s, "  let cg = bitcast<f32>(b%d[%lldu + 2u * c]) / %lld.0;\n"
              "  let cx = rs * rs * bitcast<f32>(b%d[%lldu + 2u * c + 1u]) / %lld.0;\n"
              "  let v = ((gv - cg) - (bitcast<f32>(b%d[%lldu + o]) - bitcast<f32>(b%d[%lldu + c])) * cx) * a;\n",
          bt, (long long)tmp->offset, (long long)M, bt, (long long)tmp->offset, (long long)M, bx, (long long)x->offset, bm,
          (long long)mean->offset);
    else sbf(&s, "  let v = gv * a;\n");
    sbf(&s, "  b%d[%lldu + o] = bitcast<u32>(v);\n}\n", bd, (long long)dx->offset);
    st = launch(&s, &bs, gx, gy, 1);
  }
  wg_unlock();
  ct_release(tmp);
  return st;
}

/* BatchNorm's running statistics after a training forward, both in one dispatch (src/ops/nn.c
 * calls it in place of eight composed ops, as on CUDA): r = r (1 - momentum) + stat (momentum
 * factor), in the composed ops' order and float32 roundings. 1 done, 0 not applicable (compose
 * it), -1 failed with the error set. */
/* BatchNorm's num_batches_tracked += inc folded into the running statistics' dispatch below
 * (src/nn/layers.c, as CUDA's ct_cuda_bn_count_defer): layers.c marks the module's int64 counter
 * pending before ct_batch_norm, the update's first thread adds to it (64-bit, through the two
 * words, on the device: a replay advances it each time), and ct_webgpu_bn_count_finish says
 * whether that happened (else layers.c adds as before). One pending counter at a time, owned by
 * the thread that deferred it. CT_WEBGPU_BN_FOLD=0: the separate add. */
#include <pthread.h>
static pthread_mutex_t bn_count_mu = PTHREAD_MUTEX_INITIALIZER;
static ct_tensor *bn_count_pending;
static pthread_t bn_count_owner;
static int64_t bn_count_inc;
static bool bn_count_done;
int ct_webgpu_bn_count_defer(ct_tensor *count, int64_t inc) {
  const char *e = getenv("CT_WEBGPU_BN_FOLD");
  if ((e && *e == '0') || !count || count->dtype != CT_INT64 || ct_numel(count) != 1 ||
      count->storage->device.type != CT_DEVICE_WEBGPU || inc < 0 || inc > 0x7fffffff)
    return 0;
  pthread_mutex_lock(&bn_count_mu);
  bool free_slot = bn_count_pending == NULL;
  if (free_slot) bn_count_pending = count, bn_count_owner = pthread_self(), bn_count_inc = inc, bn_count_done = false;
  pthread_mutex_unlock(&bn_count_mu);
  return free_slot ? 1 : 0;
}
/* 1: the deferred increment was made by the running statistics' dispatch; 0: not (the caller
 * adds); either way the deferral ends */
int ct_webgpu_bn_count_finish(ct_tensor *count) {
  pthread_mutex_lock(&bn_count_mu);
  bool mine = bn_count_pending == count && pthread_equal(bn_count_owner, pthread_self());
  bool done = mine && bn_count_done;
  if (mine) bn_count_pending = NULL, bn_count_done = false;
  pthread_mutex_unlock(&bn_count_mu);
  if (done) ct_bump_version(count);
  return done ? 1 : 0;
}
/* this thread's pending counter (NULL: none) */
static ct_tensor *bn_count_take(int64_t *inc) {
  pthread_mutex_lock(&bn_count_mu);
  ct_tensor *t = bn_count_pending && !bn_count_done && pthread_equal(bn_count_owner, pthread_self()) ? bn_count_pending : NULL;
  *inc = bn_count_inc;
  pthread_mutex_unlock(&bn_count_mu);
  return t;
}
static void bn_count_mark_done(void) {
  pthread_mutex_lock(&bn_count_mu);
  if (bn_count_pending && pthread_equal(bn_count_owner, pthread_self())) bn_count_done = true;
  pthread_mutex_unlock(&bn_count_mu);
}

int ct_webgpu_bn_update_running(ct_tensor *rm, const ct_tensor *mean, ct_tensor *rv, const ct_tensor *var,
                                double momentum, double factor) {
  if (!rm || !rv || !mean || !var || rm->storage->device.type != CT_DEVICE_WEBGPU) return 0;
  int64_t C = ct_numel(rm);
  const ct_tensor *ts[4] = {rm, mean, rv, var};
  for (int i = 0; i < 4; i++)
    if (ts[i]->storage->device.type != CT_DEVICE_WEBGPU || !bn_tensor_ok(ts[i], C)) return 0;
  if (C == 0) return 1;
  if (wg_ready() != CT_OK) return -1;
  wg_lock();
  ct_status st = CT_OK;
  for (int i = 0; i < 4 && st == CT_OK; i++) st = check_extent(ts[i]);
  if (st == CT_OK) {
    int64_t inc = 0;
    ct_tensor *cnt = bn_count_take(&inc);
    if (cnt && (check_extent(cnt) != CT_OK || ct_shares_storage(cnt, rm) || ct_shares_storage(cnt, rv) ||
                ct_shares_storage(cnt, mean) || ct_shares_storage(cnt, var)))
      cnt = NULL;
    bindset bs = {{0}, 0, -1};
    int b0 = bind_of(&bs, rm), b1 = bind_of(&bs, mean), b2 = bind_of(&bs, rv), b3 = bind_of(&bs, var);
    int bc = cnt ? bind_of(&bs, cnt) : -1;
    uint32_t gx, gy;
    grid((C + 255) / 256, &gx, &gy);
    char keep[40], ms[40], mv[40];
    flit(1.0 - momentum, keep), flit(momentum, ms), flit(momentum * factor, mv);
    sb s = {0};
    emit_bindings(&s, &bs);
    sbf(&s, "@compute @workgroup_size(256)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
            "  let c = (wid.y * %uu + wid.x) * 256u + li;\n  if (c >= %lldu) { return; }\n"
            "  b%d[%lldu + c] = bitcast<u32>(bitcast<f32>(b%d[%lldu + c]) * %s + bitcast<f32>(b%d[%lldu + c]) * %s);\n"
            "  b%d[%lldu + c] = bitcast<u32>(bitcast<f32>(b%d[%lldu + c]) * %s + bitcast<f32>(b%d[%lldu + c]) * %s);\n",
        gx, (long long)C, b0, (long long)rm->offset, b0, (long long)rm->offset, keep, b1, (long long)mean->offset, ms, b2,
        (long long)rv->offset, b2, (long long)rv->offset, keep, b3, (long long)var->offset, mv);
    if (cnt) { /* the counter's two words (little-endian int64), in the first thread */
      long long w0 = (long long)cnt->offset * 2;
      sbf(&s, "  if (c == 0u) {\n    let lo = b%d[%lldu];\n    let nl = lo + %uu;\n    b%d[%lldu] = nl;\n"
              "    b%d[%lldu] = b%d[%lldu] + select(0u, 1u, nl < lo);\n  }\n",
          bc, w0, (unsigned)inc, bc, w0, bc, w0 + 1, bc, w0 + 1);
    }
    sbf(&s, "}\n");
    st = launch(&s, &bs, gx, gy, 1);
    if (st == CT_OK && cnt) bn_count_mark_done();
  }
  wg_unlock();
  return st == CT_OK ? 1 : -1;
}

/* ---- pooling over [N, C, H, W] (the CPU's contracts, src/backend/cpu/kernels_pool.c):
 * attributes i[0..2) kernel, i[2..4) stride, i[4..6) padding, i[6..8) dilation; k0
 * count_include_pad, k1 divisor_override (0: none). Inputs may have any strides; outputs
 * are the contiguous tensors the ops allocate. Gradients are in gather form or serial per
 * plane, so no float atomics and results do not depend on scheduling. ---- */
static bool pool_out_ok(const ct_tensor *t, ct_dtype dt) { return t->dtype == dt && t->ndim == 4 && ct_is_contiguous(t); }

/* WGSL: the element offset of t at (n, c, h, w) (expressions) */
static void off4(char *out, size_t n, const ct_tensor *t, const char *a, const char *b, const char *h, const char *w) {
  snprintf(out, n, "%lldu + (%s) * %lldu + (%s) * %lldu + (%s) * %lldu + (%s) * %lldu", (long long)t->offset, a,
           (long long)t->stride[0], b, (long long)t->stride[1], h, (long long)t->stride[2], w, (long long)t->stride[3]);
}

/* WGSL frame: one thread per element e of a [N, C, R, S] index space, `n, ch, r, q` its coordinates */
static void pool_frame(sb *s, uint32_t gx, int64_t total, int64_t C, int64_t R, int64_t S) {
  sbf(s, "@compute @workgroup_size(256)\n"
         "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
         "  let e = (wid.y * %uu + wid.x) * 256u + li;\n  if (e >= %lldu) { return; }\n"
         "  let q = e %% %lldu; let r = (e / %lldu) %% %lldu; let pl = e / %lldu; let n = pl / %lldu; let ch = pl %% %lldu;\n",
      gx, (long long)total, (long long)S, (long long)S, (long long)R, (long long)(R * S), (long long)C, (long long)C);
}

/* max_pool2d_with_indices and adaptive_max_pool2d: values and argmax (h * W + w), NaN wins,
 * the first maximum wins ties, windows start at their first in-range position */
static ct_status k_maxpool(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *x = c->in[0];
  ct_tensor *y = c->out[0], *ix = c->n_out > 1 ? c->out[1] : NULL;
  CT_TRY(need_f32(c, x));
  if (x->ndim != 4 || !pool_out_ok(y, CT_FLOAT32) || (ix && !pool_out_ok(ix, CT_INT64)))
    return unsupported(c, "Expected a 4-D float32 input.");
  int64_t n = ct_numel(y);
  if (n == 0) return CT_OK;
  int64_t C = x->shape[1], H = x->shape[2], Wd = x->shape[3], OH = y->shape[2], OW = y->shape[3];
  const int64_t *a = c->a.i;
  bool adaptive = c->op == CT_OP_adaptive_max_pool2d;
  wg_lock();
  ct_status st = check_extent(x);
  if (st == CT_OK) st = check_extent(y);
  if (st == CT_OK && ix) st = check_extent(ix);
  if (st != CT_OK) {
    wg_unlock();
    return st;
  }
  bindset bs = {{0}, 0, -1};
  int bx = bind_of(&bs, x), by = bind_of(&bs, y), bi = ix ? bind_of(&bs, ix) : -1;
  uint32_t gx, gy;
  grid((n + 255) / 256, &gx, &gy);
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "fn wisnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n");
  pool_frame(&s, gx, n, C, OH, OW);
  if (adaptive)
    sbf(&s, "  let h0 = i32(r * %lldu / %lldu); let h1 = i32(((r + 1u) * %lldu + %lldu) / %lldu);\n"
            "  let w0 = i32(q * %lldu / %lldu); let w1 = i32(((q + 1u) * %lldu + %lldu) / %lldu);\n  let dh = 1; let dw = 1;\n",
        (long long)H, (long long)OH, (long long)H, (long long)(OH - 1), (long long)OH, (long long)Wd, (long long)OW,
        (long long)Wd, (long long)(OW - 1), (long long)OW);
  else
    sbf(&s, "  let dh = %lld; let dw = %lld;\n  var h0 = i32(r * %lldu) - %lld; var w0 = i32(q * %lldu) - %lld;\n"
            "  let h1 = min(h0 + %lld, %lld); let w1 = min(w0 + %lld, %lld);\n"
            "  while (h0 < 0) { h0 = h0 + dh; }\n  while (w0 < 0) { w0 = w0 + dw; }\n",
        (long long)a[6], (long long)a[7], (long long)a[2], (long long)a[4], (long long)a[3], (long long)a[5],
        (long long)((a[0] - 1) * a[6] + 1), (long long)H, (long long)((a[1] - 1) * a[7] + 1), (long long)Wd);
  char o[300];
  off4(o, sizeof o, x, "n", "ch", "u32(h)", "u32(w)");
  sbf(&s, "  var best = h0 * %lld + w0;\n  var bv = bitcast<f32>(wzero | 0xff800000u);\n  var found = false;\n"
          "  for (var h = h0; h < h1 && !found; h = h + dh) {\n    for (var w = w0; w < w1; w = w + dw) {\n"
          "      let v = bitcast<f32>(b%d[%s]);\n"
          "      if (v > bv || wisnan(v)) { bv = v; best = h * %lld + w; if (wisnan(v)) { found = true; break; } }\n"
          "    }\n  }\n  b%d[%lldu + e] = bitcast<u32>(bv);\n",
      (long long)Wd, bx, o, (long long)Wd, by, (long long)y->offset);
  if (ix) sbf(&s, "  b%d[2u * (%lldu + e)] = bitcast<u32>(best);\n  b%d[2u * (%lldu + e) + 1u] = 0u;\n", bi,
              (long long)ix->offset, bi, (long long)ix->offset);
  sbf(&s, "}\n");
  st = launch(&s, &bs, gx, gy, 1);
  wg_unlock();
  return st;
}

/* max pools' input gradient: gx = 0, gx[plane][idx] += g. A thread per plane walks its
 * outputs in order (the CPU's order: overlapping windows sum identically each run); a bad
 * index raises the device flag (reported at the next synchronisation). */
static ct_status k_pool_scatter(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *g = c->in[0], *ix = c->in[1];
  ct_tensor *o = c->out[0];
  CT_TRY(need_f32(c, g));
  if (ix->dtype != CT_INT64 || g->ndim != 4 || ix->ndim != 4 || !pool_out_ok(o, CT_FLOAT32) || ct_numel(ix) != ct_numel(g))
    return unsupported(c, "Expected 4-D float32 gradients and int64 indices.");
  for (int d = 0; d < 4; d++)
    if (ix->shape[d] != g->shape[d]) return unsupported(c, "Expected indices of the gradient's shape.");
  int64_t planes = o->shape[0] * o->shape[1], isz = o->shape[2] * o->shape[3];
  if (ct_numel(o) == 0) return CT_OK;
  int64_t C = g->shape[1], OH = g->shape[2], OW = g->shape[3];
  if (g->shape[0] * C != planes) return unsupported(c, "Expected one gradient plane per input plane.");
  wg_lock();
  ct_status st = check_extent(o);
  if (st == CT_OK && ct_numel(g)) st = check_extent(g);
  if (st == CT_OK && ct_numel(g)) st = check_extent(ix);
  wg_buf *flag = wg_flag_buffer();
  if (st == CT_OK && !flag) st = CT_ERR(CT_ERR_OOM, "WebGPU: no flag buffer");
  if (st != CT_OK) {
    wg_unlock();
    return st;
  }
  bindset bs = {{0}, 0, -1};
  int bo = bind_of(&bs, o), bg = -1, bi = -1;
  bool any = ct_numel(g) > 0;
  if (any) {
    bg = bind_of(&bs, g), bi = bind_of(&bs, ix);
    bs.atomic_idx = bind_buf(&bs, flag);
  }
  uint32_t gx, gy;
  grid((planes + 63) / 64, &gx, &gy);
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "@compute @workgroup_size(64)\n"
          "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
          "  let pl = (wid.y * %uu + wid.x) * 64u + li;\n  if (pl >= %lldu) { return; }\n"
          "  let base = %lldu + pl * %lldu;\n"
          "  for (var i: u32 = 0u; i < %lldu; i = i + 1u) { b%d[base + i] = 0u; }\n",
      gx, (long long)planes, (long long)o->offset, (long long)isz, (long long)isz, bo);
  if (any) {
    char og[300], oi[300];
    off4(og, sizeof og, g, "n", "ch", "r", "q");
    off4(oi, sizeof oi, ix, "n", "ch", "r", "q");
    sbf(&s, "  let n = pl / %lldu; let ch = pl %% %lldu;\n"
            "  for (var r: u32 = 0u; r < %lldu; r = r + 1u) {\n    for (var q: u32 = 0u; q < %lldu; q = q + 1u) {\n"
            "      let io = %s;\n      let k = b%d[2u * io];\n"
            "      if (b%d[2u * io + 1u] != 0u || k >= %lldu) { atomicMax(&b%d[0], 1u); continue; }\n"
            "      b%d[base + k] = bitcast<u32>(bitcast<f32>(b%d[base + k]) + bitcast<f32>(b%d[%s]));\n    }\n  }\n",
        (long long)C, (long long)C, (long long)OH, (long long)OW, oi, bi, bi, (long long)isz, bs.atomic_idx, bo, bo, bg, og);
  }
  sbf(&s, "}\n");
  st = launch(&s, &bs, gx, gy, 1);
  if (st == CT_OK && any) wg_arm_flag();
  wg_unlock();
  return st;
}

/* avg_pool2d, adaptive_avg_pool2d and their input gradients (gather form: each input
 * element sums g / divisor over the windows that hold it). The window of output (r, q):
 * avg: [r*s - p, min(r*s - p + k, H + p)) clipped to [0, H), divisor the unclipped size
 * (count_include_pad), the clipped size, or divisor_override; adaptive: [floor(r H / R),
 * ceil((r + 1) H / R)), divisor its size. */
static void lin_emit_window(sb *s, const ct_call *c, bool adaptive, int64_t H, int64_t Wd, int64_t R, int64_t S) {
  const int64_t *a = c->a.i;
  sbf(s, "fn win(r: u32, q: u32) -> vec4<i32> {\n");
  if (adaptive)
    sbf(s, "  return vec4<i32>(i32(r * %lldu / %lldu), i32(((r + 1u) * %lldu + %lldu) / %lldu), i32(q * %lldu / %lldu), "
           "i32(((q + 1u) * %lldu + %lldu) / %lldu));\n}\n",
        (long long)H, (long long)R, (long long)H, (long long)(R - 1), (long long)R, (long long)Wd, (long long)S,
        (long long)Wd, (long long)(S - 1), (long long)S);
  else
    sbf(s, "  let h0 = i32(r * %lldu) - %lld; let w0 = i32(q * %lldu) - %lld;\n"
           "  return vec4<i32>(max(h0, 0), min(min(h0 + %lld, %lld), %lld), max(w0, 0), min(min(w0 + %lld, %lld), %lld));\n}\n",
        (long long)a[2], (long long)a[4], (long long)a[3], (long long)a[5], (long long)a[0], (long long)(H + a[4]),
        (long long)H, (long long)a[1], (long long)(Wd + a[5]), (long long)Wd);
  sbf(s, "fn div(r: u32, q: u32, v: vec4<i32>) -> f32 {\n");
  if (!adaptive && c->a.k[1]) sbf(s, "  return %lld.0;\n}\n", (long long)c->a.k[1]);
  else if (!adaptive && c->a.k[0])
    sbf(s, "  let h0 = i32(r * %lldu) - %lld; let w0 = i32(q * %lldu) - %lld;\n"
           "  return f32((min(h0 + %lld, %lld) - h0) * (min(w0 + %lld, %lld) - w0));\n}\n",
        (long long)a[2], (long long)a[4], (long long)a[3], (long long)a[5], (long long)a[0], (long long)(H + a[4]),
        (long long)a[1], (long long)(Wd + a[5]));
  else sbf(s, "  return f32((v.y - v.x) * (v.w - v.z));\n}\n");
}
static ct_status k_lin_pool(const ct_call *c) {
  WG_BEGIN(c);
  const ct_tensor *x = c->in[0];
  ct_tensor *y = c->out[0];
  CT_TRY(need_f32(c, x));
  if (x->ndim != 4 || !pool_out_ok(y, CT_FLOAT32)) return unsupported(c, "Expected a 4-D float32 input.");
  bool bwd = c->op == CT_OP_avg_pool2d_backward || c->op == CT_OP_adaptive_avg_pool2d_backward;
  bool adaptive = c->op == CT_OP_adaptive_avg_pool2d || c->op == CT_OP_adaptive_avg_pool2d_backward;
  const ct_tensor *big = bwd ? y : x, *small = bwd ? x : y;
  int64_t n = ct_numel(y), C = y->shape[1], H = big->shape[2], Wd = big->shape[3], R = small->shape[2], S = small->shape[3];
  if (n == 0) return CT_OK;
  if (R < 1 || S < 1) return unsupported(c, "Expected a non-empty pooled size.");
  if (!adaptive && (c->a.i[2] < 1 || c->a.i[3] < 1)) return unsupported(c, "Expected positive strides.");
  wg_lock();
  ct_status st = check_extent(x);
  if (st == CT_OK) st = check_extent(y);
  if (st != CT_OK) {
    wg_unlock();
    return st;
  }
  bindset bs = {{0}, 0, -1};
  int bx = bind_of(&bs, x), by = bind_of(&bs, y);
  uint32_t gx, gy;
  grid((n + 255) / 256, &gx, &gy);
  sb s = {0};
  emit_bindings(&s, &bs);
  lin_emit_window(&s, c, adaptive, H, Wd, R, S);
  char o[300];
  if (!bwd) {
    pool_frame(&s, gx, n, C, R, S);
    off4(o, sizeof o, x, "n", "ch", "u32(h)", "u32(w)");
    sbf(&s, "  let v = win(r, q);\n  var acc: f32 = 0.0;\n"
            "  for (var h = v.x; h < v.y; h = h + 1) { for (var w = v.z; w < v.w; w = w + 1) { acc = acc + bitcast<f32>(b%d[%s]); } }\n"
            "  if (v.x >= v.y || v.z >= v.w) { b%d[%lldu + e] = 0u; return; }\n"
            "  b%d[%lldu + e] = bitcast<u32>(acc / div(r, q, v));\n}\n",
        bx, o, by, (long long)y->offset, by, (long long)y->offset);
  } else {
    /* here (r, q) is the input position; the outputs whose windows may hold it lie in a
     * band: for avg [(r + p - k) / s, (r + p) / s], for adaptive [r R / H - 1, (r + 1) R / H + 1] */
    pool_frame(&s, gx, n, C, H, Wd);
    if (adaptive)
      sbf(&s, "  let r0 = max(i32(r * %lldu / %lldu) - 1, 0); let r1 = min(i32((r + 1u) * %lldu / %lldu) + 1, %lld);\n"
              "  let q0 = max(i32(q * %lldu / %lldu) - 1, 0); let q1 = min(i32((q + 1u) * %lldu / %lldu) + 1, %lld);\n",
          (long long)R, (long long)H, (long long)R, (long long)H, (long long)(R - 1), (long long)S, (long long)Wd,
          (long long)S, (long long)Wd, (long long)(S - 1));
    else {
      const int64_t *a = c->a.i;
      sbf(&s, "  let r0 = max((i32(r) + %lld) / %lld - %lld, 0); let r1 = min((i32(r) + %lld) / %lld, %lld);\n"
              "  let q0 = max((i32(q) + %lld) / %lld - %lld, 0); let q1 = min((i32(q) + %lld) / %lld, %lld);\n",
          (long long)a[4], (long long)a[2], (long long)((a[0] + a[2] - 1) / a[2]), (long long)a[4], (long long)a[2],
          (long long)(R - 1), (long long)a[5], (long long)a[3], (long long)((a[1] + a[3] - 1) / a[3]), (long long)a[5],
          (long long)a[3], (long long)(S - 1));
    }
    off4(o, sizeof o, x, "n", "ch", "u32(oh)", "u32(ow)");
    sbf(&s, "  var acc: f32 = 0.0;\n  let hr = i32(r); let hq = i32(q);\n"
            "  for (var oh = r0; oh <= r1; oh = oh + 1) {\n    for (var ow = q0; ow <= q1; ow = ow + 1) {\n"
            "      let v = win(u32(oh), u32(ow));\n"
            "      if (hr < v.x || hr >= v.y || hq < v.z || hq >= v.w) { continue; }\n"
            "      acc = acc + bitcast<f32>(b%d[%s]) / div(u32(oh), u32(ow), v);\n    }\n  }\n"
            "  b%d[%lldu + e] = bitcast<u32>(acc);\n}\n",
        bx, o, by, (long long)y->offset);
  }
  st = launch(&s, &bs, gx, gy, 1);
  wg_unlock();
  return st;
}

/* ---- the table ---- */
static ct_kernel_fn table[CT_OP_COUNT];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static void table_init(void) {
  table[CT_OP_fill] = k_fill;
  table[CT_OP_copy] = k_copy;
  static const int unary_ops[] = {CT_OP_abs,  CT_OP_neg,   CT_OP_sign,    CT_OP_exp,        CT_OP_exp2,   CT_OP_expm1,
                                  CT_OP_log,  CT_OP_log2,  CT_OP_log10,   CT_OP_log1p,      CT_OP_sqrt,   CT_OP_rsqrt,
                                  CT_OP_sin,  CT_OP_cos,   CT_OP_tanh,    CT_OP_sigmoid,    CT_OP_erf,    CT_OP_erfc,
                                  CT_OP_floor, CT_OP_ceil, CT_OP_trunc,   CT_OP_round,      CT_OP_frac,   CT_OP_reciprocal,
                                  CT_OP_square, CT_OP_relu, CT_OP_silu,   CT_OP_gelu,       CT_OP_leaky_relu,
                                  CT_OP_hardtanh, CT_OP_rsqrt_eps};
  for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++) table[unary_ops[i]] = k_unary;
  table[CT_OP_unary_deriv] = k_unary_deriv;
  static const int binary_ops[] = {CT_OP_add,  CT_OP_sub,  CT_OP_mul, CT_OP_div,   CT_OP_maximum, CT_OP_minimum,
                                   CT_OP_fmax, CT_OP_fmin, CT_OP_pow, CT_OP_atan2, CT_OP_masked_zero};
  for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++) table[binary_ops[i]] = k_binary;
  static const int bool_ops[] = {CT_OP_eq, CT_OP_ne, CT_OP_lt, CT_OP_le, CT_OP_gt, CT_OP_ge, CT_OP_logical_and,
                                 CT_OP_logical_or, CT_OP_logical_xor, CT_OP_logical_not, CT_OP_isnan, CT_OP_isinf,
                                 CT_OP_isfinite};
  for (size_t i = 0; i < sizeof bool_ops / sizeof bool_ops[0]; i++) table[bool_ops[i]] = k_bool;
  static const int tern_ops[] = {CT_OP_where, CT_OP_lerp, CT_OP_lerp_scalar, CT_OP_addcmul, CT_OP_addcdiv,
                                 CT_OP_clamp, CT_OP_clamp_tensor};
  for (size_t i = 0; i < sizeof tern_ops / sizeof tern_ops[0]; i++) table[tern_ops[i]] = k_ternary;
  table[CT_OP_cat] = k_cat;
  table[CT_OP_masked_fill] = k_masked_fill;
  table[CT_OP_attn_bool_mask] = k_attn_bool_mask;
  table[CT_OP_gather] = k_gather;
  table[CT_OP_index_select] = k_index_select;
  table[CT_OP_arange] = k_arange;
  table[CT_OP_scatter_add] = k_scatter_add;
  table[CT_OP_sum] = table[CT_OP_amax] = table[CT_OP_amin] = table[CT_OP_max] = table[CT_OP_min] = k_reduce;
  table[CT_OP_norm_moments] = k_norm_moments;
  table[CT_OP_native_layer_norm] = table[CT_OP_native_rms_norm] = k_native_norm;
  table[CT_OP_native_norm_backward] = k_native_norm_backward;
  table[CT_OP_native_batch_norm] = k_native_bn; /* conv/BN part (session 8) */
  table[CT_OP_native_batch_norm_backward] = k_native_bn_backward;
  table[CT_OP_softmax] = table[CT_OP_log_softmax] = k_softmax;
  table[CT_OP_cross_entropy_fused] = k_cross_entropy_fused;
  table[CT_OP_cross_entropy_fused_backward] = k_cross_entropy_fused_backward;
  table[CT_OP_sdpa_flash] = ct_webgpu_sdpa_flash; /* webgpu_attention.c */
  table[CT_OP_sdpa_flash_backward] = ct_webgpu_sdpa_flash_backward;
  table[CT_OP_mm] = table[CT_OP_bmm] = table[CT_OP_mv] = table[CT_OP_dot] = k_linalg;
  table[CT_OP_addmm] = table[CT_OP_baddbmm] = table[CT_OP_addmv] = k_linalg;
  table[CT_OP_embedding] = k_embedding;
  table[CT_OP_embedding_dense_backward] = k_embedding_backward;
  table[CT_OP_convolution] = table[CT_OP_convolution_backward_input] = table[CT_OP_convolution_backward_weight] = k_conv;
  table[CT_OP_max_pool2d_with_indices] = table[CT_OP_adaptive_max_pool2d] = k_maxpool;
  table[CT_OP_max_pool2d_with_indices_backward] = k_pool_scatter;
  table[CT_OP_avg_pool2d] = table[CT_OP_avg_pool2d_backward] = k_lin_pool;
  table[CT_OP_adaptive_avg_pool2d] = table[CT_OP_adaptive_avg_pool2d_backward] = k_lin_pool;
}

ct_kernel_fn ct_webgpu_kernel_for(int op) {
  pthread_once(&table_once, table_init);
  return op >= 0 && op < CT_OP_COUNT ? table[op] : NULL;
}
