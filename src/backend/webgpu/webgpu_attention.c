/* FlashAttention-2-style scaled_dot_product_attention in WGSL (issue 9, item 4): the ops
 * sdpa_flash (forward) and sdpa_flash_backward of the fused path (contracts and formulas in
 * src/backend/cpu/kernels_attention.c and src/ops/nn.c), so the L x S score matrix never
 * exists on the GPU either.
 *
 * Forward: a workgroup takes BR queries of one batch*head (one thread per query, its q row
 * and output accumulator in registers) and walks the keys in tiles of BC that the whole
 * workgroup loads into workgroup memory (K and V), with an online softmax (running max m,
 * running sum l, the accumulator rescaled when the max grows); causal tiles past the
 * workgroup's last query are skipped, and the row's log-sum-exp m + log l is saved.
 * Backward, from that log-sum-exp (P recomputed per tile, never stored):
 *   1. per query row: lse and D = rowsum(dO * O) into a scratch buffer;
 *   2. dQ: queries per workgroup as in the forward, K/V tiles in workgroup memory:
 *      dQ_i = scale * sum_j P_ij (dO_i . V_j - D_i) K_j;
 *   3. dK, dV: keys per workgroup (one thread per key), query tiles (Q, dO, lse, D) in
 *      workgroup memory: dV_j = sum_i P_ij dO_i, dK_j = scale * sum_i P_ij (dO_i . V_j - D_i) Q_i.
 * Shapes come in parameter words (one pipeline per head dims, tile and causal flag); batch
 * dims (at most 4 of size > 1, strides of any kind, 0 for broadcast) are decomposed in the
 * kernel. The query tile BR (32 or 64) is chosen by measurement per shape class
 * (webgpu_tune.c). Masks and dropout are not taken here: scaled_dot_product_attention keeps
 * those on the composed path (ct_webgpu_sdpa_fits). */
#include "webgpu_attention.h"
#include "webgpu_backend.h"
#include "webgpu_tune.h"
#include "ctorch/webgpu.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FA_MAXE 128     /* head dims up to this (private arrays of that size per thread) */
#define FA_SHARED 4096  /* f32 words of workgroup memory used (WebGPU's guaranteed 16 KiB) */
#define FA_NB 4         /* batch dims of size > 1 */
#define FA_NT 8         /* tensor slots in the parameter words */

static int64_t n_fwd, n_bwd;
int64_t ct_webgpu_sdpa_calls(bool backward) { return backward ? n_bwd : n_fwd; }

/* ---- WGSL text ---- */
typedef struct {
  char *p;
  size_t n, cap;
  bool oom;
} txt;
static void tf(txt *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tf(txt *s, const char *fmt, ...) {
  if (s->oom) return;
  va_list ap;
  va_start(ap, fmt);
  va_list aq;
  va_copy(aq, ap);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k < 0 || (s->n + (size_t)k + 1 > s->cap && !(s->p = realloc(s->p, s->cap = (s->n + (size_t)k + 1) * 2)))) {
    s->oom = true;
    va_end(aq);
    return;
  }
  vsnprintf(s->p + s->n, s->cap - s->n, fmt, aq);
  va_end(aq);
  s->n += (size_t)k;
}

/* ---- the launch geometry: batch dims, tensor slots, bindings ---- */
typedef struct {
  int nb;                      /* batch dims kept (size > 1), <= FA_NB */
  int64_t bsh[FA_NB];
  int nt;
  const ct_tensor *t[FA_NT];   /* slots: their offsets, row strides, batch strides */
  int slot_bind[FA_NT];
  wg_buf *bufs[8];
  int nbuf;
  uint32_t pr[8 + 6 * FA_NT];
  int np;
} fa_geom;

/* Element offsets must be u32 and inside one binding. */
static ct_status fa_extent(const ct_tensor *t) {
  int64_t hi = t->offset;
  for (int d = 0; d < t->ndim; d++) hi += (t->shape[d] - 1) * t->stride[d];
  uint64_t bytes = (uint64_t)(hi + 1) * 4;
  wg_buf *w = t->storage->data;
  if (bytes > w->size || bytes > wg_max_binding() || (uint64_t)(hi + 1) >= ((uint64_t)1 << 31))
    return CT_ERR(CT_ERR_RUNTIME, "WebGPU: a tensor of %llu bytes does not fit one storage binding (%llu bytes)",
                  (unsigned long long)bytes, (unsigned long long)wg_max_binding());
  return CT_OK;
}

/* nbd batch dims shared by every slot (the leading dims; lse has one dim fewer at the end,
 * so batch dims are counted from the front). */
static ct_status fa_make(fa_geom *g, int nbd, int nt, const ct_tensor *const *ts, int64_t L, int64_t S,
                         double scale) {
  memset(g, 0, sizeof *g);
  g->nt = nt;
  for (int d = 0; d < nbd; d++) {
    if (ts[0]->shape[d] == 1) continue;
    if (g->nb == FA_NB) return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: more than %d batch dims on WebGPU", FA_NB);
    g->bsh[g->nb++] = ts[0]->shape[d];
  }
  int64_t BH = 1;
  for (int d = 0; d < g->nb; d++) BH *= g->bsh[d];
  float sc = (float)scale;
  g->pr[0] = (uint32_t)L;
  g->pr[1] = (uint32_t)S;
  g->pr[2] = (uint32_t)BH;
  memcpy(&g->pr[3], &sc, 4);
  for (int d = 0; d < FA_NB; d++) g->pr[4 + d] = d < g->nb ? (uint32_t)g->bsh[d] : 1u; /* padded at the end */
  for (int i = 0; i < nt; i++) {
    const ct_tensor *t = ts[i];
    g->t[i] = t;
    CT_TRY(fa_extent(t));
    uint32_t *w = &g->pr[8 + 6 * i];
    w[0] = (uint32_t)t->offset;
    w[1] = t->ndim > nbd ? (uint32_t)t->stride[nbd] : 0u; /* the row (query/key) stride */
    int k = 0;
    for (int d = 0; d < nbd; d++)
      if (ts[0]->shape[d] != 1) w[2 + k++] = (uint32_t)t->stride[d];
    int b = -1;
    for (int j = 0; j < g->nbuf; j++)
      if (g->bufs[j] == t->storage->data) b = j;
    if (b < 0) {
      if (g->nbuf == 7) return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: too many buffers");
      b = g->nbuf;
      g->bufs[g->nbuf++] = t->storage->data;
    }
    g->slot_bind[i] = b;
  }
  g->np = 8 + 6 * nt;
  return CT_OK;
}

/* Common WGSL: bindings, the parameter words, the batch offset of slot t. */
static void fa_head(txt *s, const fa_geom *g) {
  for (int i = 0; i < g->nbuf; i++) tf(s, "@group(0) @binding(%d) var<storage, read_write> b%d: array<u32>;\n", i, i);
  tf(s, "@group(0) @binding(%d) var<storage, read> pr: array<u32>; /* read-only: uniform for the barriers */\n",
     g->nbuf);
  tf(s, "fn boff(t: u32, bh: u32) -> u32 {\n"
        "  var r = bh; var o = pr[8u + 6u * t];\n"
        "  for (var d: i32 = %d; d >= 0; d = d - 1) { let n = pr[4u + u32(d)]; o = o + (r %% n) * pr[10u + 6u * t + u32(d)]; r = r / n; }\n"
        "  return o;\n}\n"
        "fn rs(t: u32) -> u32 { return pr[9u + 6u * t]; }\n"
        /* NaN by its bits, and exp passing NaN through: WGSL lets an implementation assume
         * finite math (SwiftShader's exp(NaN) is inf), so NaN/inf inputs give the CPU's NaNs */
        "fn fnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n"
        "fn pexp(x: f32) -> f32 { if (fnan(x)) { return x; } return exp(x); }\n",
     FA_NB - 1);
}

/* the largest power of two <= v, at least lo */
static int pow2_floor(int64_t v, int lo) {
  int p = lo;
  while ((int64_t)p * 2 <= v) p *= 2;
  return p;
}

/* ---- forward ---- */
typedef struct {
  fa_geom g;
  int E, Ev;
  bool causal;
  int64_t L, BH;
} fa_fwd;

/* The loop over key tiles shared by the forward and the dQ kernel: the tile of K and V rows
 * [j0, j0 + BC) into workgroup memory (zeros past S), then jn, the keys of the tile this query
 * sees (causal: none past its diagonal). Opens the tile loop and `if (valid) {`. */
static void emit_kv_tiles(txt *s, int BC, int BR, int E, int Ev, int bk, int bv, bool causal) {
  tf(s, "  for (var j0 = 0u; j0 < kend; j0 = j0 + %du) {\n"
        "    workgroupBarrier();\n"
        "    for (var e = li; e < %du; e = e + %du) { let j = j0 + e / %du; var x: f32 = 0.0;"
        " if (j < S) { x = bitcast<f32>(b%d[ko + j * kr + e %% %du]); } Ks[e] = x; }\n"
        "    for (var e = li; e < %du; e = e + %du) { let j = j0 + e / %du; var x: f32 = 0.0;"
        " if (j < S) { x = bitcast<f32>(b%d[vo + j * vr + e %% %du]); } Vs[e] = x; }\n"
        "    workgroupBarrier();\n"
        "    if (valid) {\n"
        "      var jn = min(%du, S - j0);\n",
     BC, BC * E, BR, E, bk, E, BC * Ev, BR, Ev, bv, Ev, BC);
  if (causal) tf(s, "      if (i < j0) { jn = 0u; } else { jn = min(jn, i - j0 + 1u); }\n");
}

static ct_status fwd_run(int variant, void *ctx) {
  fa_fwd *f = ctx;
  const fa_geom *g = &f->g;
  int BR = variant == 0 ? 64 : 32;
  int E = f->E, Ev = f->Ev;
  int BC = pow2_floor(FA_SHARED / (E + Ev), 1);
  if (BC > 64) BC = 64;
  int bq = g->slot_bind[0], bk = g->slot_bind[1], bv = g->slot_bind[2], bo = g->slot_bind[3], bl = g->slot_bind[4];
  int b2 = g->nt > 5 ? g->slot_bind[5] : -1; /* the backward's copy of the output, written here too */
  txt s = {0};
  fa_head(&s, g);
  tf(&s, "var<workgroup> Ks: array<f32, %d>;\nvar<workgroup> Vs: array<f32, %d>;\n", BC * E, BC * Ev);
  tf(&s, "@compute @workgroup_size(%d)\n"
         "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
         "  let L = pr[0]; let S = pr[1]; let sc = bitcast<f32>(pr[3]);\n"
         "  let bh = wid.y; let i0 = wid.x * %du; let i = i0 + li; let valid = i < L;\n"
         "  let qo = boff(0u, bh); let ko = boff(1u, bh); let vo = boff(2u, bh); let oo = boff(3u, bh); let lo = boff(4u, bh);\n"
         "  let qr = rs(0u); let kr = rs(1u); let vr = rs(2u); let orw = rs(3u); let lr = rs(4u);\n"
         "  var q: array<f32, %d>; var acc: array<f32, %d>; var sv: array<f32, %d>;\n"
         "  for (var c = 0u; c < %du; c = c + 1u) { acc[c] = 0.0; }\n"
         "  if (valid) { for (var c = 0u; c < %du; c = c + 1u) { q[c] = bitcast<f32>(b%d[qo + i * qr + c]); } }\n"
         "  var m: f32 = -3.0e38; var l: f32 = 0.0; var seen = false;\n"
         "  var kend = S;\n",
     BR, BR, E, Ev, BC, Ev, E, bq);
  if (f->causal) tf(&s, "  kend = min(S, i0 + %du); /* tiles past the last query's diagonal are skipped */\n", BR);
  emit_kv_tiles(&s, BC, BR, E, Ev, bk, bv, f->causal);
  tf(&s, "      var mt = m;\n"
         "      for (var jj = 0u; jj < jn; jj = jj + 1u) {\n"
         "        var d: f32 = 0.0;\n"
         "        for (var c = 0u; c < %du; c = c + 1u) { d = fma(q[c], Ks[jj * %du + c], d); }\n"
         "        d = d * sc; sv[jj] = d; mt = max(mt, d);\n"
         "      }\n"
         "      if (jn > 0u) {\n"
         "        let a = select(exp(m - mt), 1.0, m == mt || !seen); seen = true;\n"
         "        l = l * a;\n"
         "        for (var c = 0u; c < %du; c = c + 1u) { acc[c] = acc[c] * a; }\n"
         "        for (var jj = 0u; jj < jn; jj = jj + 1u) {\n"
         "          let p = pexp(sv[jj] - mt); l = l + p;\n"
         "          for (var c = 0u; c < %du; c = c + 1u) { acc[c] = fma(p, Vs[jj * %du + c], acc[c]); }\n"
         "        }\n"
         "        m = mt;\n"
         "      }\n"
         "    }\n"
         "  }\n"
         "  if (valid) {\n"
         "    let inv = 1.0 / l;\n"
         "    for (var c = 0u; c < %du; c = c + 1u) { b%d[oo + i * orw + c] = bitcast<u32>(acc[c] * inv); }\n"
         "    b%d[lo + i * lr] = bitcast<u32>(select(m + log(l), l, fnan(l)));\n",
     E, E, Ev, Ev, Ev, Ev, bo, bl);
  if (b2 >= 0)
    tf(&s, "    let o2 = boff(5u, bh); let r2 = rs(5u);\n"
           "    for (var c = 0u; c < %du; c = c + 1u) { b%d[o2 + i * r2 + c] = bitcast<u32>(acc[c] * inv); }\n",
       Ev, b2);
  tf(&s, "  }\n}\n");
  if (s.oom) {
    free(s.p);
    return CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
  }
  wg_pipe *p = wg_pipeline(s.p);
  free(s.p);
  if (!p) return ct_last_status();
  return wg_dispatch_p(p, g->nbuf, g->bufs, g->pr, g->np, (uint32_t)((f->L + BR - 1) / BR), (uint32_t)f->BH, 1);
}

/* log2 bucket of a size: shape classes for the measured choices */
static int lg(int64_t v) {
  int b = 0;
  while (v > 1) v >>= 1, b++;
  return b;
}

/* the query tile: measured per (E, Ev, causal, size buckets); 64 when not measured */
static int fa_variant(fa_fwd *f, int64_t S) {
  if ((double)f->BH * f->L * S * (f->E + f->Ev) < 4194304.0) return 0; /* small: not worth a measurement */
  char cls[96];
  snprintf(cls, sizeof cls, "E%d.Ev%d.c%d.L%d.S%d.BH%d", f->E, f->Ev, (int)f->causal, lg(f->L), lg(S), lg(f->BH));
  int v = wg_tune_pick("attn", cls, 2, fwd_run, f);
  return v < 0 ? 0 : v;
}

static ct_status fa_check(const ct_call *c, int n) {
  for (int i = 0; i < n; i++) {
    const ct_tensor *t = c->in[i];
    if (t->dtype != CT_FLOAT32)
      return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::%s' with arguments from the 'WebGPU' backend. "
                    "The WebGPU attention computes in float32 only (got %s).", ct_op_info_of(c->op)->id,
                    ct_dtype_name(t->dtype));
    if (t->ndim < 2 || t->stride[t->ndim - 1] != 1)
      return CT_ERR(CT_ERR_RUNTIME, "%s: the last dim must be contiguous", ct_op_info_of(c->op)->id);
  }
  return CT_OK;
}

ct_status ct_webgpu_sdpa_flash(const ct_call *c) {
  CT_TRY(wg_ready());
  if (c->n_in > 3) return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::sdpa_flash' with arguments from the "
                                 "'WebGPU' backend. The WGSL attention takes no mask (masked attention is composed).");
  CT_TRY(fa_check(c, 3));
  const ct_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
  int nbd = q->ndim - 2;
  fa_fwd f;
  f.E = (int)q->shape[q->ndim - 1];
  f.Ev = (int)v->shape[v->ndim - 1];
  f.L = q->shape[nbd];
  int64_t S = k->shape[nbd];
  f.causal = c->a.k[0] != 0;
  if (f.E < 1 || f.E > FA_MAXE || f.Ev < 1 || f.Ev > FA_MAXE || k->shape[k->ndim - 1] != f.E)
    return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::sdpa_flash' with arguments from the 'WebGPU' backend. "
                  "Head dims must be 1..%d (got %d, %d).", FA_MAXE, f.E, f.Ev);
  if (ct_numel(c->out[0]) == 0) return CT_OK;
  /* out[2], the backward's copy of the output, is written by the same kernel */
  const ct_tensor *ts[6] = {q, k, v, c->out[0], c->out[1], c->n_out > 2 ? c->out[2] : NULL};
  wg_lock();
  ct_status st = fa_make(&f.g, nbd, ts[5] ? 6 : 5, ts, f.L, S, c->a.f[0]);
  f.BH = f.g.pr[2];
  if (st == CT_OK && ((f.L + 31) / 32 > wg_max_groups() || f.BH > wg_max_groups()))
    st = CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: too many workgroups for one WebGPU dispatch");
  if (st == CT_OK) st = fwd_run(fa_variant(&f, S), &f);
  wg_unlock();
  if (st == CT_OK) n_fwd++;
  return st;
}

/* ---- backward ---- */
ct_status ct_webgpu_sdpa_flash_backward(const ct_call *c) {
  CT_TRY(wg_ready());
  if (c->n_in > 6 && c->in[6])
    return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::sdpa_flash_backward' with arguments from the 'WebGPU' "
                  "backend. The WGSL attention takes no mask.");
  CT_TRY(fa_check(c, 6));
  const ct_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2], *o = c->in[3], *lse = c->in[4], *go = c->in[5];
  int nbd = q->ndim - 2;
  int E = (int)q->shape[q->ndim - 1], Ev = (int)v->shape[v->ndim - 1];
  int64_t L = q->shape[nbd], S = k->shape[nbd];
  bool causal = c->a.k[0] != 0;
  if (E < 1 || E > FA_MAXE || Ev < 1 || Ev > FA_MAXE)
    return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::sdpa_flash_backward' with arguments from the 'WebGPU' "
                  "backend. Head dims must be 1..%d.", FA_MAXE);
  if (ct_numel(c->out[0]) == 0 && ct_numel(c->out[1]) == 0) return CT_OK;
  int64_t BH = 1;
  for (int d = 0; d < nbd; d++) BH *= q->shape[d];
  /* scratch: lse and D = rowsum(dO * O) per query row, two planes of BH*L */
  ct_options opt = ct_opts_dtype(CT_FLOAT32);
  opt.device = ct_webgpu();
  int64_t nsc = 2 * BH * L;
  ct_tensor *ld = ct_empty(1, &nsc, opt);
  if (!ld) return ct_last_status();
  wg_lock();
  ct_status st = CT_OK;
  fa_geom g;
  /* 1: lse and D, a thread per query row (slots: o lse dO) */
  {
    const ct_tensor *t1[3] = {o, lse, go};
    st = fa_make(&g, nbd, 3, t1, L, S, c->a.f[0]);
    if (st == CT_OK) {
      int bo = g.slot_bind[0], bl = g.slot_bind[1], bg = g.slot_bind[2];
      int bld = g.nbuf;
      g.bufs[g.nbuf++] = ld->storage->data;
      txt s = {0};
      fa_head(&s, &g);
      tf(&s, "@compute @workgroup_size(64)\n"
             "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
             "  let L = pr[0]; let bh = wid.y; let i = wid.x * 64u + li;\n"
             "  if (i >= L) { return; }\n"
             "  let oo = boff(0u, bh) + i * rs(0u); let gg = boff(2u, bh) + i * rs(2u);\n"
             "  var d: f32 = 0.0;\n"
             "  for (var c = 0u; c < %du; c = c + 1u) { d = fma(bitcast<f32>(b%d[gg + c]), bitcast<f32>(b%d[oo + c]), d); }\n"
             "  let r = %lluu + bh * L + i;\n"
             "  b%d[r] = b%d[boff(1u, bh) + i * rs(1u)];\n"
             "  b%d[r + pr[2] * L] = bitcast<u32>(d);\n}\n",
         Ev, bg, bo, (unsigned long long)ld->offset, bld, bl, bld);
      if (s.oom) st = CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
      wg_pipe *p = st == CT_OK ? wg_pipeline(s.p) : NULL;
      free(s.p);
      if (st == CT_OK && !p) st = ct_last_status();
      if (st == CT_OK)
        st = wg_dispatch_p(p, g.nbuf, g.bufs, g.pr, g.np, (uint32_t)((L + 63) / 64), (uint32_t)BH, 1);
    }
  }
  /* 2: dQ, a thread per query, K/V tiles shared (slots: q k v dO dq) */
  if (st == CT_OK && ct_numel(c->out[0]) > 0) {
    const ct_tensor *t2[5] = {q, k, v, go, c->out[0]};
    st = fa_make(&g, nbd, 5, t2, L, S, c->a.f[0]);
    if (st == CT_OK && g.nbuf < 8) {
      int bq = g.slot_bind[0], bk = g.slot_bind[1], bv = g.slot_bind[2], bg = g.slot_bind[3], bd = g.slot_bind[4];
      int bld = g.nbuf;
      g.bufs[g.nbuf++] = ld->storage->data;
      int BR = 64, BC = pow2_floor(FA_SHARED / (E + Ev), 1);
      if (BC > 64) BC = 64;
      txt s = {0};
      fa_head(&s, &g);
      tf(&s, "var<workgroup> Ks: array<f32, %d>;\nvar<workgroup> Vs: array<f32, %d>;\n", BC * E, BC * Ev);
      tf(&s, "@compute @workgroup_size(%d)\n"
             "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
             "  let L = pr[0]; let S = pr[1]; let sc = bitcast<f32>(pr[3]);\n"
             "  let bh = wid.y; let i0 = wid.x * %du; let i = i0 + li; let valid = i < L;\n"
             "  let qo = boff(0u, bh); let ko = boff(1u, bh); let vo = boff(2u, bh); let go = boff(3u, bh); let dqo = boff(4u, bh);\n"
             "  let qr = rs(0u); let kr = rs(1u); let vr = rs(2u); let gr = rs(3u); let dqr = rs(4u);\n"
             "  var q: array<f32, %d>; var g: array<f32, %d>; var dq: array<f32, %d>;\n"
             "  var lse: f32 = 0.0; var D: f32 = 0.0;\n"
             "  for (var c = 0u; c < %du; c = c + 1u) { dq[c] = 0.0; }\n"
             "  if (valid) {\n"
             "    for (var c = 0u; c < %du; c = c + 1u) { q[c] = bitcast<f32>(b%d[qo + i * qr + c]); }\n"
             "    for (var c = 0u; c < %du; c = c + 1u) { g[c] = bitcast<f32>(b%d[go + i * gr + c]); }\n"
             "    let r = %lluu + bh * L + i; lse = bitcast<f32>(b%d[r]); D = bitcast<f32>(b%d[r + pr[2] * L]);\n"
             "  }\n"
             "  var kend = S;\n",
         BR, BR, E, Ev, E, E, E, bq, Ev, bg, (unsigned long long)ld->offset, bld, bld);
      if (causal) tf(&s, "  kend = min(S, i0 + %du);\n", BR);
      emit_kv_tiles(&s, BC, BR, E, Ev, bk, bv, causal);
      tf(&s, "      for (var jj = 0u; jj < jn; jj = jj + 1u) {\n"
             "        var d: f32 = 0.0;\n"
             "        for (var c = 0u; c < %du; c = c + 1u) { d = fma(q[c], Ks[jj * %du + c], d); }\n"
             "        let p = pexp(d * sc - lse);\n"
             "        var dp: f32 = 0.0;\n"
             "        for (var c = 0u; c < %du; c = c + 1u) { dp = fma(g[c], Vs[jj * %du + c], dp); }\n"
             "        let ds = p * (dp - D);\n"
             "        for (var c = 0u; c < %du; c = c + 1u) { dq[c] = fma(ds, Ks[jj * %du + c], dq[c]); }\n"
             "      }\n"
             "    }\n"
             "  }\n"
             "  if (valid) { for (var c = 0u; c < %du; c = c + 1u) { b%d[dqo + i * dqr + c] = bitcast<u32>(dq[c] * sc); } }\n"
             "}\n",
         E, E, Ev, Ev, E, E, E, bd);
      if (s.oom) st = CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
      wg_pipe *p = st == CT_OK ? wg_pipeline(s.p) : NULL;
      free(s.p);
      if (st == CT_OK && !p) st = ct_last_status();
      if (st == CT_OK)
        st = wg_dispatch_p(p, g.nbuf, g.bufs, g.pr, g.np, (uint32_t)((L + BR - 1) / BR), (uint32_t)BH, 1);
    } else if (st == CT_OK) st = CT_ERR(CT_ERR_RUNTIME, "sdpa_flash_backward: too many buffers");
  }
  /* 3: dK and dV, a thread per key, query tiles shared (slots: q k v dO dk dv) */
  if (st == CT_OK && (ct_numel(c->out[1]) > 0 || ct_numel(c->out[2]) > 0)) {
    const ct_tensor *t3[6] = {q, k, v, go, c->out[1], c->out[2]};
    st = fa_make(&g, nbd, 6, t3, L, S, c->a.f[0]);
    if (st == CT_OK && g.nbuf < 8) {
      int bq = g.slot_bind[0], bk = g.slot_bind[1], bv = g.slot_bind[2], bg = g.slot_bind[3];
      int bdk = g.slot_bind[4], bdv = g.slot_bind[5];
      int bld = g.nbuf;
      g.bufs[g.nbuf++] = ld->storage->data;
      int BK = 64, BQ = pow2_floor((FA_SHARED - 128) / (E + Ev), 1);
      if (BQ > 64) BQ = 64;
      txt s = {0};
      fa_head(&s, &g);
      tf(&s, "var<workgroup> Qs: array<f32, %d>;\nvar<workgroup> Gs: array<f32, %d>;\n"
             "var<workgroup> Ls: array<f32, %d>;\nvar<workgroup> Ds: array<f32, %d>;\n",
         BQ * E, BQ * Ev, BQ, BQ);
      tf(&s, "@compute @workgroup_size(%d)\n"
             "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n"
             "  let L = pr[0]; let S = pr[1]; let sc = bitcast<f32>(pr[3]);\n"
             "  let bh = wid.y; let j0 = wid.x * %du; let j = j0 + li; let valid = j < S;\n"
             "  let qo = boff(0u, bh); let ko = boff(1u, bh); let vo = boff(2u, bh); let go = boff(3u, bh);\n"
             "  let dko = boff(4u, bh); let dvo = boff(5u, bh);\n"
             "  let qr = rs(0u); let kr = rs(1u); let vr = rs(2u); let gr = rs(3u); let dkr = rs(4u); let dvr = rs(5u);\n"
             "  let lb = %lluu + bh * L;\n"
             "  var kk: array<f32, %d>; var vv: array<f32, %d>; var dk: array<f32, %d>; var dv: array<f32, %d>;\n"
             "  for (var c = 0u; c < %du; c = c + 1u) { dk[c] = 0.0; }\n"
             "  for (var c = 0u; c < %du; c = c + 1u) { dv[c] = 0.0; }\n"
             "  if (valid) {\n"
             "    for (var c = 0u; c < %du; c = c + 1u) { kk[c] = bitcast<f32>(b%d[ko + j * kr + c]); }\n"
             "    for (var c = 0u; c < %du; c = c + 1u) { vv[c] = bitcast<f32>(b%d[vo + j * vr + c]); }\n"
             "  }\n"
             "  var istart = 0u;\n",
         BK, BK, (unsigned long long)ld->offset, E, Ev, E, Ev, E, Ev, E, bk, Ev, bv);
      if (causal) tf(&s, "  istart = j0; /* queries before the block's first key see none of its keys */\n");
      tf(&s, "  for (var i0 = istart; i0 < L; i0 = i0 + %du) {\n"
             "    workgroupBarrier();\n"
             "    for (var e = li; e < %du; e = e + %du) { let i = i0 + e / %du; var x: f32 = 0.0;"
             " if (i < L) { x = bitcast<f32>(b%d[qo + i * qr + e %% %du]); } Qs[e] = x; }\n"
             "    for (var e = li; e < %du; e = e + %du) { let i = i0 + e / %du; var x: f32 = 0.0;"
             " if (i < L) { x = bitcast<f32>(b%d[go + i * gr + e %% %du]); } Gs[e] = x; }\n"
             "    for (var e = li; e < %du; e = e + %du) { let i = i0 + e; var a: f32 = 0.0; var b: f32 = 0.0;"
             " if (i < L) { a = bitcast<f32>(b%d[lb + i]); b = bitcast<f32>(b%d[lb + pr[2] * L + i]); } Ls[e] = a; Ds[e] = b; }\n"
             "    workgroupBarrier();\n"
             "    if (valid) {\n"
             "      let iend = min(%du, L - i0);\n"
             "      for (var ii = 0u; ii < iend; ii = ii + 1u) {\n",
         BQ, BQ * E, BK, E, bq, E, BQ * Ev, BK, Ev, bg, Ev, BQ, BK, bld, bld, BQ);
      if (causal) tf(&s, "        if (i0 + ii < j) { continue; }\n");
      tf(&s, "        var d: f32 = 0.0;\n"
             "        for (var c = 0u; c < %du; c = c + 1u) { d = fma(Qs[ii * %du + c], kk[c], d); }\n"
             "        let p = pexp(d * sc - Ls[ii]);\n"
             "        var dp: f32 = 0.0;\n"
             "        for (var c = 0u; c < %du; c = c + 1u) { let gv = Gs[ii * %du + c]; dp = fma(gv, vv[c], dp); dv[c] = fma(p, gv, dv[c]); }\n"
             "        let ds = p * (dp - Ds[ii]);\n"
             "        for (var c = 0u; c < %du; c = c + 1u) { dk[c] = fma(ds, Qs[ii * %du + c], dk[c]); }\n"
             "      }\n"
             "    }\n"
             "  }\n"
             "  if (valid) {\n"
             "    for (var c = 0u; c < %du; c = c + 1u) { b%d[dko + j * dkr + c] = bitcast<u32>(dk[c] * sc); }\n"
             "    for (var c = 0u; c < %du; c = c + 1u) { b%d[dvo + j * dvr + c] = bitcast<u32>(dv[c]); }\n"
             "  }\n}\n",
         E, E, Ev, Ev, E, E, E, bdk, Ev, bdv);
      if (s.oom) st = CT_ERR(CT_ERR_OOM, "out of memory generating WGSL");
      wg_pipe *p = st == CT_OK ? wg_pipeline(s.p) : NULL;
      free(s.p);
      if (st == CT_OK && !p) st = ct_last_status();
      if (st == CT_OK)
        st = wg_dispatch_p(p, g.nbuf, g.bufs, g.pr, g.np, (uint32_t)((S + BK - 1) / BK), (uint32_t)BH, 1);
    } else if (st == CT_OK) st = CT_ERR(CT_ERR_RUNTIME, "sdpa_flash_backward: too many buffers");
  }
  wg_unlock();
  ct_release(ld); /* the queue runs in order: a later reuse of its buffer comes after these kernels */
  if (st == CT_OK) n_bwd++;
  return st;
}

bool ct_webgpu_sdpa_fits(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v, const ct_tensor *mask, int nb,
                         const int64_t *bshape) {
  if (mask || q->dtype != CT_FLOAT32 || k->dtype != CT_FLOAT32 || v->dtype != CT_FLOAT32) return false;
  int64_t E = q->shape[q->ndim - 1], Ev = v->shape[v->ndim - 1];
  if (E < 1 || E > FA_MAXE || Ev < 1 || Ev > FA_MAXE) return false;
  int kept = 0;
  int64_t BH = 1;
  for (int d = 0; d < nb; d++) {
    if (bshape[d] != 1) kept++;
    BH *= bshape[d];
  }
  if (kept > FA_NB || !ct_webgpu_is_available()) return false;
  uint32_t mg = wg_max_groups();
  int64_t L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2];
  return BH <= (int64_t)mg && (L + 31) / 32 <= (int64_t)mg && (S + 63) / 64 <= (int64_t)mg;
}
