/* The WebGPU backend's kernels: WGSL generated for each call's shapes, strides and
 * attributes (constants in the text, so every pipeline is specialised to its shape and
 * cached by that text), dispatched into the open batch. Float32 only: WGSL has no
 * float64 (refused with a clear error), and integer tensors are supported where ops
 * move or index them (fill, copy, embedding indices). Every buffer is bound as
 * array<u32> and values are bitcast, so one buffer bound once serves tensors of any
 * dtype (in-place ops alias freely). Index math is u32: a tensor must fit one binding.
 * Ops without a kernel here fail through the dispatcher's NotImplemented error. */
#include "webgpu_backend.h"
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

/* ---- bindings: one per distinct buffer ---- */
typedef struct {
  wg_buf *b[8];
  int n;
  int atomic_idx; /* the flag buffer, bound as array<atomic<u32>> (-1: none) */
} bindset;
static int bind_buf(bindset *bs, wg_buf *w) {
  for (int i = 0; i < bs->n; i++)
    if (bs->b[i] == w) return i;
  if (bs->n == 8) return -1;
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
    if (i == bs->atomic_idx) sbf(s, "@group(0) @binding(%d) var<storage, read_write> b%d: array<atomic<u32>>;\n", i, i);
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

/* helpers every pointwise shader carries (unused functions cost nothing) */
static const char *WGSL_MATH =
    "fn wisnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n"
    "fn werfc(x: f32) -> f32 {\n"
    "  let z = abs(x);\n"
    "  let t = 1.0 / (1.0 + 0.5 * z);\n"
    "  let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +\n"
    "          t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));\n"
    "  return select(2.0 - r, r, x >= 0.0);\n"
    "}\n"
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

/* Compiles and dispatches; takes ownership of the source text. */
static ct_status launch(sb *s, bindset *bs, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (s->oom) {
    free(s->p);
    return CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
  }
  wg_pipe *p = wg_pipeline(s->p);
  free(s->p);
  if (!p) return ct_last_status();
  return wg_dispatch(p, bs->n, bs->b, gx, gy, gz);
}

/* The kernel's frame: readiness, lock. */
#define WG_BEGIN(c)              \
  do {                           \
    CT_TRY(wg_ready());          \
  } while (0)

/* Elementwise over out = ts[0] and inputs ts[1..nt): `mode` 0: f32 expression `expr`
 * over x1..x{nt-1}; 1: raw word copy of ts[1]; 2: constant words w0/w1. */
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
  /* an output whose elements repeat (a gradient accumulated through an overlapping
   * view): one invocation walks the elements in order, as the CPU does */
  bool serial = !injective(o);
  int64_t groups = serial ? 1 : (n + 255) / 256;
  uint32_t gx, gy;
  grid(groups, &gx, &gy);
  sb s = {0};
  emit_bindings(&s, &bs);
  if (mode == 0) sbf(&s, "%s", WGSL_MATH);
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
  } else {
    if (words_of(o->dtype) == 1) sbf(&s, "  b%d[o0] = %uu;\n", bi[0], w0);
    else sbf(&s, "  b%d[2u * o0] = %uu;\n  b%d[2u * o0 + 1u] = %uu;\n", bi[0], w0, bi[0], w1);
  }
  sbf(&s, "}\n");
  return launch(&s, &bs, gx, gy, 1);
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

static ct_status k_copy(const ct_call *c) {
  WG_BEGIN(c);
  ct_tensor *o = c->out[0], *x = c->in[0];
  if (!words_of(o->dtype)) return need_f32(c, o);
  if (!words_of(x->dtype)) return need_f32(c, x);
  ct_tensor *ts[2] = {o, x};
  wg_lock();
  ct_status st;
  if (o->dtype == CT_FLOAT32 && x->dtype != CT_FLOAT32) st = ew_run(2, ts, 0, "x1", 0, 0, NULL);
  else if (x->dtype == CT_FLOAT32 && o->dtype != CT_FLOAT32) st = ew_run(2, ts, 0, "x1", 0, 0, NULL); /* truncates */
  else st = ew_run(2, ts, 1, NULL, 0, 0, NULL); /* the same dtype, or int32 <-> int64 */
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
  for (int i = 0; i < 2; i++) CT_TRY(need_f32(c, c->in[i]));
  CT_TRY(need_f32(c, c->out[0]));
  char e[512], a[40];
  const ct_attrs *at = &c->a;
  switch (c->op) {
    case CT_OP_add:
      if (at->f[0] == 1) snprintf(e, sizeof e, "x1 + x2");
      else snprintf(e, sizeof e, "x1 + %s * x2", flit(at->f[0], a));
      break;
    case CT_OP_sub:
      if (at->f[0] == 1) snprintf(e, sizeof e, "x1 - x2");
      else snprintf(e, sizeof e, "x1 - %s * x2", flit(at->f[0], a));
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
    case CT_OP_masked_zero: snprintf(e, sizeof e, "select(x1, 0.0, x2 != 0.0)"); break;
    default: return unsupported(c, "This op has no WGSL kernel yet.");
  }
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  wg_lock();
  ct_status st = ew_run(3, ts, 0, e, 0, 0, NULL);
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

/* ---- matrix products: one batched strided GEMM, 64x64 tiles, 4x4 per thread ----
 * C[b,m,n] = alpha * sum_k A[b,m,k] B[b,k,n] (+ beta * C0[b,m,n]) */
typedef struct {
  int64_t B, M, N, K;
  int64_t a_b, a_m, a_k, b_b, b_k, b_n, c_b, c_m, c_n, c0_b, c0_m, c0_n;
  int64_t a_off, b_off, c_off, c0_off;
  double alpha, beta;
  bool has_c0;
} gemm;

/* One pipeline per (self term or not): sizes, strides, offsets, alpha and beta come
 * in the parameter words, since this kernel is the costliest to compile. */
static ct_status gemm_run(const ct_tensor *A, const ct_tensor *Bt, ct_tensor *C, const ct_tensor *C0, const gemm *g) {
  if (g->M == 0 || g->N == 0 || g->B == 0) return CT_OK;
  CT_TRY(check_extent(A));
  CT_TRY(check_extent(Bt));
  CT_TRY(check_extent(C));
  if (C0) CT_TRY(check_extent(C0));
  bindset bs = {{0}, 0, -1};
  int ba = bind_of(&bs, A), bb = bind_of(&bs, Bt), bc = bind_of(&bs, C), b0 = C0 ? bind_of(&bs, C0) : 0;
  uint32_t gx = (uint32_t)((g->N + 63) / 64), gy = (uint32_t)((g->M + 63) / 64), gz = (uint32_t)g->B;
  float alpha = (float)g->alpha, beta = (float)g->beta;
  uint32_t pr[21] = {(uint32_t)g->M,   (uint32_t)g->N,   (uint32_t)g->K,    (uint32_t)g->a_off, (uint32_t)g->a_b,
                     (uint32_t)g->a_m, (uint32_t)g->a_k, (uint32_t)g->b_off, (uint32_t)g->b_b, (uint32_t)g->b_k,
                     (uint32_t)g->b_n, (uint32_t)g->c_off, (uint32_t)g->c_b, (uint32_t)g->c_m, (uint32_t)g->c_n,
                     (uint32_t)g->c0_off, (uint32_t)g->c0_b, (uint32_t)g->c0_m, (uint32_t)g->c0_n, 0, 0};
  memcpy(&pr[19], &alpha, 4);
  memcpy(&pr[20], &beta, 4);
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "@group(0) @binding(%d) var<storage, read> pr: array<u32>; /* read-only: uniform for the barriers */\n", bs.n);
  sbf(&s, "var<workgroup> As: array<f32, 1024>;\nvar<workgroup> Bs: array<f32, 1024>;\n");
  sbf(&s, "@compute @workgroup_size(16, 16, 1)\n"
          "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n");
  sbf(&s, "  let M = pr[0]; let N = pr[1]; let K = pr[2];\n"
          "  let bz = wid.z; let row0 = wid.y * 64u; let col0 = wid.x * 64u;\n"
          "  let ab = pr[3] + bz * pr[4]; let am_s = pr[5]; let ak_s = pr[6];\n"
          "  let bb = pr[7] + bz * pr[8]; let bk_s = pr[9]; let bn_s = pr[10];\n"
          "  let t = lid.y * 16u + lid.x;\n");
  /* 16 scalar accumulators written out: private arrays with dynamic indices compile
   * slowly (SwiftShader) and may spill */
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) sbf(&s, "  var c%d%d: f32 = 0.0;\n", i, j);
  /* A tile 64 (m) x 16 (k) stored k-major; B tile 16 (k) x 64 (n) */
  sbf(&s, "  for (var k0: u32 = 0u; k0 < K; k0 = k0 + 16u) {\n"
          "    for (var l = 0u; l < 4u; l = l + 1u) {\n"
          "      let e = t + l * 256u;\n"
          "      let am = e / 16u; let ak = e %% 16u; let gm = row0 + am; let gk = k0 + ak;\n"
          "      var av: f32 = 0.0;\n"
          "      if (gm < M && gk < K) { av = bitcast<f32>(b%d[ab + gm * am_s + gk * ak_s]); }\n"
          "      As[ak * 64u + am] = av;\n"
          "      let bk = e / 64u; let bn = e %% 64u; let gk2 = k0 + bk; let gn = col0 + bn;\n"
          "      var bv: f32 = 0.0;\n"
          "      if (gk2 < K && gn < N) { bv = bitcast<f32>(b%d[bb + gk2 * bk_s + gn * bn_s]); }\n"
          "      Bs[bk * 64u + bn] = bv;\n"
          "    }\n",
      ba, bb);
  sbf(&s, "    workgroupBarrier();\n    for (var kk = 0u; kk < 16u; kk = kk + 1u) {\n");
  for (int i = 0; i < 4; i++) sbf(&s, "      let a%d = As[kk * 64u + lid.y + %du];\n", i, 16 * i);
  for (int j = 0; j < 4; j++) sbf(&s, "      let b%d = Bs[kk * 64u + lid.x + %du];\n", j, 16 * j);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) sbf(&s, "      c%d%d = c%d%d + a%d * b%d;\n", i, j, i, j, i, j);
  sbf(&s, "    }\n    workgroupBarrier();\n  }\n");
  sbf(&s, "  let alpha = bitcast<f32>(pr[19]); let beta = bitcast<f32>(pr[20]);\n"
          "  let cb = pr[11] + bz * pr[12]; let c0b = pr[15] + bz * pr[16];\n");
  char beta_term[160] = "";
  if (g->has_c0) snprintf(beta_term, sizeof beta_term, " + beta * bitcast<f32>(b%d[c0b + m * pr[17] + n * pr[18]])", b0);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      sbf(&s, "  { let m = row0 + lid.y + %du; let n = col0 + lid.x + %du;\n"
              "    if (m < M && n < N) { b%d[cb + m * pr[13] + n * pr[14]] = bitcast<u32>(alpha * c%d%d%s); } }\n",
          16 * i, 16 * j, bc, i, j, beta_term);
  sbf(&s, "}\n");
  if (s.oom) {
    free(s.p);
    return CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
  }
  wg_pipe *p = wg_pipeline(s.p);
  free(s.p);
  if (!p) return ct_last_status();
  return wg_dispatch_p(p, bs.n, bs.b, pr, 21, gx, gy, gz);
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
  if (st == CT_OK) wg_arm_flag();
  wg_unlock();
  return st;
}

/* gw[v, j] = sum of g[i, j] over positions i with idx[i] == v (not the padding row):
 * a thread per (v, j) walks the positions, so no float atomics are needed */
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
  int64_t base[2] = {ix->offset, gr->offset};
  uint32_t gx, gy;
  grid((tot + 255) / 256, &gx, &gy);
  char ld[200];
  idx_load(ld, sizeof ld, bx, ix->dtype, "k0");
  sb s = {0};
  emit_bindings(&s, &bs);
  sbf(&s, "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n");
  sbf(&s, "  let e = (wid.y * %uu + wid.x) * 256u + li;\n  if (e >= %lldu) { return; }\n", gx, (long long)tot);
  sbf(&s, "  let vrow = e / %lldu; let j = e %% %lldu;\n  var acc: f32 = 0.0;\n", (long long)D, (long long)D);
  sbf(&s, "  for (var i: u32 = 0u; i < %lldu; i = i + 1u) {\n", (long long)n);
  emit_offsets(&s, "i", &g, base, "k");
  sbf(&s, "    let iv = %s;\n", ld);
  sbf(&s, "    if (iv.y == 0u || iv.x >= %lldu) { if (vrow == 0u && j == 0u) { atomicMax(&b%d[0], 1u); } continue; }\n",
      (long long)V, bs.atomic_idx);
  if (c->a.k[0]) sbf(&s, "    if (iv.x == %lldu) { continue; }\n", (long long)c->a.i[0]);
  sbf(&s, "    if (iv.x == vrow) { acc = acc + bitcast<f32>(b%d[k1 + j * %lldu]); }\n  }\n", bgr,
      (long long)gr->stride[gr->ndim - 1]);
  sbf(&s, "  b%d[%lldu + vrow * %lldu + j * %lldu] = bitcast<u32>(acc);\n}\n", bo, (long long)o->offset,
      (long long)o->stride[0], (long long)o->stride[1]);
  st = launch(&s, &bs, gx, gy, 1);
  if (st == CT_OK) wg_arm_flag();
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
  table[CT_OP_sum] = table[CT_OP_amax] = table[CT_OP_amin] = table[CT_OP_max] = table[CT_OP_min] = k_reduce;
  table[CT_OP_norm_moments] = k_norm_moments;
  table[CT_OP_softmax] = table[CT_OP_log_softmax] = k_softmax;
  table[CT_OP_mm] = table[CT_OP_bmm] = table[CT_OP_mv] = table[CT_OP_dot] = k_linalg;
  table[CT_OP_addmm] = table[CT_OP_baddbmm] = table[CT_OP_addmv] = k_linalg;
  table[CT_OP_embedding] = k_embedding;
  table[CT_OP_embedding_dense_backward] = k_embedding_backward;
}

ct_kernel_fn ct_webgpu_kernel_for(int op) {
  pthread_once(&table_once, table_init);
  return op >= 0 && op < CT_OP_COUNT ? table[op] : NULL;
}
