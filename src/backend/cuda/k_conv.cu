/* CUDA convolution (1-3 spatial dims, stride / padding / dilation / groups, optional
 * bias) and max pooling, the CPU reference's contracts (src/backend/cpu/kernels_conv.c,
 * kernels_pool.c): direct kernels, one thread per output element in gather form (no
 * atomics for the convolutions: results do not depend on scheduling), products summed in
 * double and rounded once, any input strides. The weight gradient gives each weight
 * element one block that reduces over N x output positions. These are the correctness
 * kernels the CNN path needs, untuned: contiguous float convolutions go through cuDNN
 * (k_cudnn.cu) where it is installed, and these kernels take the rest. */
#include "cu_common.cuh"
#include <math.h>
extern "C" {
#include "ops/conv_geom.h"
}

/* the shared geometry (ops/conv_geom.h) plus byte strides for the five dims (N, C, D, H, W)
 * of the three operands and their pointers */
struct CGeom : ct_conv_geom {
  int64_t xs[5], ws[5], ys[5]; /* x-like [N, C, in], w [O, C/G, k], y-like [N, O, out] */
  const char *xp, *wp, *bp;
  char *yp;
  int64_t bs;
  int xdt, wdt, ydt, bdt;
};

static char *cdptr(const ct_tensor *t) { return (char *)t->storage->data + t->offset * (int64_t)ct_dtype_size(t->dtype); }

/* x: the [N, C, in] operand, w: [O, C/G, k], y: the [N, O, out] operand */
static void cgeom(CGeom *g, const ct_call *c, const ct_tensor *x, const ct_tensor *w, const ct_tensor *y) {
  memset(g, 0, sizeof *g);
  int nd = (int)c->a.k[0];
  ct_conv_geom_make(g, c, x, w, y);
  ct_conv_strides5(x, nd, (int64_t)ct_dtype_size(x->dtype), g->xs);
  ct_conv_strides5(w, nd, (int64_t)ct_dtype_size(w->dtype), g->ws);
  ct_conv_strides5(y, nd, (int64_t)ct_dtype_size(y->dtype), g->ys);
  g->xp = cdptr(x);
  g->wp = cdptr(w);
  g->yp = cdptr(y);
  g->xdt = x->dtype;
  g->wdt = w->dtype;
  g->ydt = y->dtype;
}

__device__ __forceinline__ const char *at5(const char *b, const int64_t *st, int64_t a0, int64_t a1, int64_t a2,
                                           int64_t a3, int64_t a4) {
  return b + a0 * st[0] + a1 * st[1] + a2 * st[2] + a3 * st[3] + a4 * st[4];
}

/* y[n, o, od, oh, ow] = bias[o] + sum x[n, g*cg + ic, o*s - p + k*d] w[o, ic, k] */
__global__ void k_conv_fwd(CGeom g) {
  int64_t total = g.N * g.O * g.outsp, cg = g.C / g.G, og = g.O / g.G;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += gridDim.x * (int64_t)blockDim.x) {
    int64_t ow = t % g.out[2], r = t / g.out[2];
    int64_t oh = r % g.out[1];
    r /= g.out[1];
    int64_t od = r % g.out[0];
    r /= g.out[0];
    int64_t o = r % g.O, n = r / g.O, grp = o / og;
    double acc = g.bp ? ld_f(g.bp + o * g.bs, g.bdt) : 0.0;
    for (int64_t ic = 0; ic < cg; ic++)
      for (int64_t kd = 0; kd < g.k[0]; kd++) {
        int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
        if (id < 0 || id >= g.in[0]) continue;
        for (int64_t kh = 0; kh < g.k[1]; kh++) {
          int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
          if (ih < 0 || ih >= g.in[1]) continue;
          for (int64_t kw = 0; kw < g.k[2]; kw++) {
            int64_t iw = ow * g.s[2] - g.p[2] + kw * g.d[2];
            if (iw < 0 || iw >= g.in[2]) continue;
            acc += ld_f(at5(g.xp, g.xs, n, grp * cg + ic, id, ih, iw), g.xdt) *
                   ld_f(at5(g.wp, g.ws, o, ic, kd, kh, kw), g.wdt);
          }
        }
      }
    st_f((char *)at5(g.yp, g.ys, n, o, od, oh, ow), g.ydt, acc);
  }
}

/* gx[n, c, i] = bias[c] + sum over o of c's group and k with i = o*s - p + k*d of
 * gy[n, o, out] w[o, c - g*cg, k]. Here x-like = gx (written), y-like = gy (read). */
__global__ void k_conv_bwd_input(CGeom g) {
  int64_t total = g.N * g.C * g.insp, cg = g.C / g.G, og = g.O / g.G;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += gridDim.x * (int64_t)blockDim.x) {
    int64_t iw = t % g.in[2], r = t / g.in[2];
    int64_t ih = r % g.in[1];
    r /= g.in[1];
    int64_t id = r % g.in[0];
    r /= g.in[0];
    int64_t c = r % g.C, n = r / g.C, grp = c / cg;
    double acc = g.bp ? ld_f(g.bp + c * g.bs, g.bdt) : 0.0;
    for (int64_t oo = 0; oo < og; oo++) {
      int64_t o = grp * og + oo;
      for (int64_t kd = 0; kd < g.k[0]; kd++) {
        int64_t a = id + g.p[0] - kd * g.d[0];
        if (a < 0 || a % g.s[0]) continue;
        int64_t od = a / g.s[0];
        if (od >= g.out[0]) continue;
        for (int64_t kh = 0; kh < g.k[1]; kh++) {
          int64_t b = ih + g.p[1] - kh * g.d[1];
          if (b < 0 || b % g.s[1]) continue;
          int64_t oh = b / g.s[1];
          if (oh >= g.out[1]) continue;
          for (int64_t kw = 0; kw < g.k[2]; kw++) {
            int64_t e = iw + g.p[2] - kw * g.d[2];
            if (e < 0 || e % g.s[2]) continue;
            int64_t ow = e / g.s[2];
            if (ow >= g.out[2]) continue;
            acc += ld_f(at5(g.yp, g.ys, n, o, od, oh, ow), g.ydt) * ld_f(at5(g.wp, g.ws, o, c - grp * cg, kd, kh, kw), g.wdt);
          }
        }
      }
    }
    st_f((char *)at5(g.xp, g.xs, n, c, id, ih, iw), g.xdt, acc);
  }
}

/* gw[o, ic, k] = sum over n, out of gy[n, o, out] x[n, g*cg + ic, out*s - p + k*d]: one
 * block per weight element, a fixed-shape tree over its threads (deterministic). Here
 * w-like = gw (written). */
__global__ void k_conv_bwd_weight(CGeom g) {
  __shared__ double sh[CU_THREADS];
  int64_t cg = g.C / g.G, og = g.O / g.G, total = g.O * cg * g.ksp, m = g.N * g.outsp;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    int64_t kw = t % g.k[2], r = t / g.k[2];
    int64_t kh = r % g.k[1];
    r /= g.k[1];
    int64_t kd = r % g.k[0];
    r /= g.k[0];
    int64_t ic = r % cg, o = r / cg, grp = o / og;
    double acc = 0;
    for (int64_t q = threadIdx.x; q < m; q += blockDim.x) {
      int64_t ow = q % g.out[2], rr = q / g.out[2];
      int64_t oh = rr % g.out[1];
      rr /= g.out[1];
      int64_t od = rr % g.out[0], n = rr / g.out[0];
      int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0], ih = oh * g.s[1] - g.p[1] + kh * g.d[1],
              iw = ow * g.s[2] - g.p[2] + kw * g.d[2];
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
      acc += ld_f(at5(g.yp, g.ys, n, o, od, oh, ow), g.ydt) * ld_f(at5(g.xp, g.xs, n, grp * cg + ic, id, ih, iw), g.xdt);
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int h = CU_THREADS / 2; h > 0; h /= 2) {
      if ((int)threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
      __syncthreads();
    }
    if (threadIdx.x == 0) st_f((char *)at5(g.wp, g.ws, o, ic, kd, kh, kw), g.wdt, sh[0]);
    __syncthreads();
  }
}

static ct_status no_kernel(const ct_call *c) {
  return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::%s' with arguments from the 'CUDA' backend.",
                ct_op_info_of(c->op)->id);
}
static bool conv_dtypes_ok(const ct_call *c) {
  for (int i = 0; i < c->n_in; i++)
    if (c->in[i] && !ct_dtype_is_floating(c->in[i]->dtype)) return false;
  return ct_dtype_is_floating(c->out[0]->dtype) && c->a.k[0] >= 1 && c->a.k[0] <= 3 && c->a.k[1] >= 1;
}

static ct_status cu_conv(const ct_call *c) {
  if (!conv_dtypes_ok(c)) return no_kernel(c);
  ct_status cst;
  if (ct_cuda_cudnn_conv(c, &cst)) return cst;
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  CGeom g;
  const ct_tensor *bias = c->n_in > 2 ? c->in[2] : NULL;
  if (c->op == CT_OP_convolution) cgeom(&g, c, c->in[0], c->in[1], c->out[0]);
  else if (c->op == CT_OP_convolution_backward_input) cgeom(&g, c, c->out[0], c->in[1], c->in[0]);
  else cgeom(&g, c, c->in[0], c->out[0], c->in[1]);
  if (bias && c->op != CT_OP_convolution_backward_weight) {
    g.bp = cdptr(bias);
    g.bs = bias->ndim ? bias->stride[0] * (int64_t)ct_dtype_size(bias->dtype) : 0;
    g.bdt = bias->dtype;
  }
  if (ct_numel(c->out[0]) == 0) return CT_OK;
  cudaStream_t s = CU_STREAM(dev);
  if (c->op == CT_OP_convolution) {
    k_conv_fwd<<<cu_blocks(g.N * g.O * g.outsp), CU_THREADS, 0, s>>>(g);
  } else if (c->op == CT_OP_convolution_backward_input) {
    k_conv_bwd_input<<<cu_blocks(g.N * g.C * g.insp), CU_THREADS, 0, s>>>(g);
  } else {
    int64_t total = g.O * (g.C / g.G) * g.ksp; /* N x out = 0: every block writes its 0 */
    k_conv_bwd_weight<<<(unsigned)(total < (1 << 20) ? total : (1 << 20)), CU_THREADS, 0, s>>>(g);
  }
  return ct_cuda_check_launch(ct_op_info_of(c->op)->id);
}

/* ---- max pools: values and the argmax (h * W + w in the input plane), NaN wins, the
 * first maximum wins ties, windows start at their first in-range position ---- */
struct PGeom {
  int64_t planes, H, W, OH, OW, C;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t xs[4]; /* bytes: N, C, H, W */
  const char *xp;
  char *yp;
  int64_t *ip;
  int xdt, ydt;
  bool adaptive;
};

__global__ void k_maxpool(PGeom P) {
  int64_t total = P.planes * P.OH * P.OW;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += gridDim.x * (int64_t)blockDim.x) {
    int64_t ow = t % P.OW, r = t / P.OW, oh = r % P.OH, pl = r / P.OH;
    int64_t n = pl / P.C, ch = pl % P.C;
    int64_t h0, h1, w0, w1, dh = 1, dw = 1;
    if (P.adaptive) {
      h0 = oh * P.H / P.OH;
      h1 = ((oh + 1) * P.H + P.OH - 1) / P.OH;
      w0 = ow * P.W / P.OW;
      w1 = ((ow + 1) * P.W + P.OW - 1) / P.OW;
    } else {
      dh = P.dh;
      dw = P.dw;
      h0 = oh * P.sh - P.ph;
      w0 = ow * P.sw - P.pw;
      h1 = h0 + (P.kh - 1) * dh + 1;
      w1 = w0 + (P.kw - 1) * dw + 1;
      if (h1 > P.H) h1 = P.H;
      if (w1 > P.W) w1 = P.W;
      while (h0 < 0) h0 += dh;
      while (w0 < 0) w0 += dw;
    }
    const char *x = P.xp + n * P.xs[0] + ch * P.xs[1];
    int64_t best = h0 * P.W + w0;
    double bv = -INFINITY;
    for (int64_t h = h0; h < h1; h += dh) {
      bool stop = false;
      for (int64_t w = w0; w < w1; w += dw) {
        double v = ld_f(x + h * P.xs[2] + w * P.xs[3], P.xdt);
        if (v > bv || isnan(v)) {
          bv = v;
          best = h * P.W + w;
          if (isnan(v)) {
            stop = true;
            break;
          }
        }
      }
      if (stop) break;
    }
    st_f(P.yp + t * (int64_t)(P.ydt == CT_FLOAT64 ? 8 : P.ydt == CT_FLOAT32 ? 4 : 2), P.ydt, bv);
    if (P.ip) P.ip[t] = best;
  }
}

static ct_status cu_maxpool(const ct_call *c) {
  const ct_tensor *x = c->in[0];
  ct_tensor *y = c->out[0], *ix = c->n_out > 1 ? c->out[1] : NULL;
  if (!ct_dtype_is_floating(x->dtype) || x->dtype != y->dtype || x->ndim != 4 || !ct_is_contiguous(y) ||
      (ix && (ix->dtype != CT_INT64 || !ct_is_contiguous(ix))))
    return no_kernel(c);
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  PGeom P;
  memset(&P, 0, sizeof P);
  P.C = x->shape[1];
  P.planes = x->shape[0] * x->shape[1];
  P.H = x->shape[2];
  P.W = x->shape[3];
  P.OH = y->shape[2];
  P.OW = y->shape[3];
  const int64_t *a = c->a.i;
  P.adaptive = c->op == CT_OP_adaptive_max_pool2d;
  P.kh = a[0], P.kw = a[1], P.sh = a[2], P.sw = a[3], P.ph = a[4], P.pw = a[5], P.dh = a[6], P.dw = a[7];
  int64_t isz = (int64_t)ct_dtype_size(x->dtype);
  for (int k = 0; k < 4; k++) P.xs[k] = x->stride[k] * isz;
  P.xp = cdptr(x);
  P.yp = cdptr(y);
  P.ip = ix ? (int64_t *)cdptr(ix) : NULL;
  P.xdt = x->dtype;
  P.ydt = y->dtype;
  int64_t n = ct_numel(y);
  if (n == 0) return CT_OK;
  k_maxpool<<<cu_blocks(n), CU_THREADS, 0, CU_STREAM(dev)>>>(P);
  return ct_cuda_check_launch(ct_op_info_of(c->op)->id);
}

/* gx = 0; gx[plane][idx] += g: double atomics into a scratch (several outputs may share
 * an argmax when windows overlap), then rounded once into gx; a bad index sets the flag. */
struct GView {
  int64_t sh[4], st[4]; /* g's shape and byte strides (an expanded gradient has stride 0) */
};
__global__ void k_pool_scatter(const char *g, int gdt, GView gv, const int64_t *ix, double *acc, int64_t m, int64_t osz,
                               int64_t isz, int *flag) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m; i += gridDim.x * (int64_t)blockDim.x) {
    int64_t k = ix[i];
    if (k < 0 || k >= isz) {
      *flag = 1;
      continue;
    }
    int64_t r = i, off = 0;
    for (int d = 3; d >= 0; d--) {
      off += (r % gv.sh[d]) * gv.st[d];
      r /= gv.sh[d];
    }
    atomicAdd(&acc[(i / osz) * isz + k], ld_f(g + off, gdt));
  }
}
__global__ void k_store_f64(const double *acc, char *o, int odt, int64_t n) {
  int osz = odt == CT_FLOAT64 ? 8 : odt == CT_FLOAT32 ? 4 : 2;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += gridDim.x * (int64_t)blockDim.x)
    st_f(o + i * osz, odt, acc[i]);
}

static ct_status cu_pool_scatter(const ct_call *c) {
  const ct_tensor *g = c->in[0], *ix = c->in[1];
  ct_tensor *o = c->out[0];
  if (!ct_dtype_is_floating(o->dtype) || g->dtype != o->dtype || ix->dtype != CT_INT64 || g->ndim != 4 ||
      !ct_is_contiguous(ix) || !ct_is_contiguous(o) || o->ndim != 4 || ct_numel(ix) != ct_numel(g))
    return no_kernel(c);
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  int64_t n = ct_numel(o), m = ct_numel(g);
  if (n == 0) return CT_OK;
  int64_t planes = o->shape[0] * o->shape[1], isz = o->shape[2] * o->shape[3], osz = planes ? m / planes : 0;
  cudaStream_t s = CU_STREAM(dev);
  double *acc = (double *)ct_cuda_tmp_alloc(dev, (size_t)n * sizeof(double));
  if (!acc) return ct_last_status();
  ct_status st = cudaMemsetAsync(acc, 0, (size_t)n * sizeof(double), s) == cudaSuccess ? CT_OK : ct_cuda_fail(cudaGetLastError(), "memset");
  if (st == CT_OK && m > 0) {
    GView gv;
    for (int d = 0; d < 4; d++) {
      gv.sh[d] = g->shape[d];
      gv.st[d] = g->stride[d] * (int64_t)ct_dtype_size(g->dtype);
    }
    k_pool_scatter<<<cu_blocks(m), CU_THREADS, 0, s>>>(cdptr(g), g->dtype, gv, (const int64_t *)cdptr(ix), acc, m, osz,
                                                       isz, ct_cuda_flag(dev));
    st = ct_cuda_check_launch("max_pool2d_with_indices_backward");
  }
  if (st == CT_OK) {
    k_store_f64<<<cu_blocks(n), CU_THREADS, 0, s>>>(acc, cdptr(o), o->dtype, n);
    st = ct_cuda_check_launch("max_pool2d_with_indices_backward");
  }
  ct_cuda_tmp_free(dev, acc, (size_t)n * sizeof(double));
  if (st == CT_OK && m > 0) {
    int bad = 0;
    CT_TRY(ct_cuda_flag_take(dev, &bad));
    if (bad)
      return CT_ERR(CT_ERR_RUNTIME, "Found an invalid max index (output volumes are of size %lldx%lld)",
                    (long long)o->shape[2], (long long)o->shape[3]);
  }
  return st;
}

/* ---- adaptive_avg_pool2d: window [floor(o I / O), ceil((o + 1) I / O)) per dim, the mean
 * summed in double; the backward in gather form (each input element sums g / count over
 * the windows that hold it: no atomics) ---- */
struct AGeom {
  int64_t N, C, H, W, OH, OW;
  int64_t xs[4]; /* the read operand's byte strides */
  const char *xp;
  char *yp;
  int dt;
};
__device__ __forceinline__ int64_t a_lo(int64_t o, int64_t I, int64_t O) { return o * I / O; }
__device__ __forceinline__ int64_t a_hi(int64_t o, int64_t I, int64_t O) { return ((o + 1) * I + O - 1) / O; }

__global__ void k_adaptive_avg(AGeom A) {
  int64_t total = A.N * A.C * A.OH * A.OW;
  int esz = A.dt == CT_FLOAT64 ? 8 : A.dt == CT_FLOAT32 ? 4 : 2;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += gridDim.x * (int64_t)blockDim.x) {
    int64_t ow = t % A.OW, r = t / A.OW, oh = r % A.OH;
    r /= A.OH;
    int64_t c = r % A.C, n = r / A.C;
    int64_t h0 = a_lo(oh, A.H, A.OH), h1 = a_hi(oh, A.H, A.OH), w0 = a_lo(ow, A.W, A.OW), w1 = a_hi(ow, A.W, A.OW);
    const char *x = A.xp + n * A.xs[0] + c * A.xs[1];
    double acc = 0;
    for (int64_t h = h0; h < h1; h++)
      for (int64_t w = w0; w < w1; w++) acc += ld_f(x + h * A.xs[2] + w * A.xs[3], A.dt);
    st_f(A.yp + t * esz, A.dt, acc / (double)((h1 - h0) * (w1 - w0)));
  }
}
/* here x = the gradient g [N, C, OH, OW] (read), y = gx [N, C, H, W] (written) */
__global__ void k_adaptive_avg_bwd(AGeom A) {
  int64_t total = A.N * A.C * A.H * A.W;
  int esz = A.dt == CT_FLOAT64 ? 8 : A.dt == CT_FLOAT32 ? 4 : 2;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += gridDim.x * (int64_t)blockDim.x) {
    int64_t w = t % A.W, r = t / A.W, h = r % A.H;
    r /= A.H;
    int64_t c = r % A.C, n = r / A.C;
    const char *g = A.xp + n * A.xs[0] + c * A.xs[1];
    int64_t oh0 = h * A.OH / A.H - 1, oh1 = (h + 1) * A.OH / A.H + 1, ow0 = w * A.OW / A.W - 1, ow1 = (w + 1) * A.OW / A.W + 1;
    if (oh0 < 0) oh0 = 0;
    if (ow0 < 0) ow0 = 0;
    if (oh1 > A.OH - 1) oh1 = A.OH - 1;
    if (ow1 > A.OW - 1) ow1 = A.OW - 1;
    double acc = 0;
    for (int64_t oh = oh0; oh <= oh1; oh++) {
      int64_t h0 = a_lo(oh, A.H, A.OH), h1 = a_hi(oh, A.H, A.OH);
      if (h < h0 || h >= h1) continue;
      for (int64_t ow = ow0; ow <= ow1; ow++) {
        int64_t w0 = a_lo(ow, A.W, A.OW), w1 = a_hi(ow, A.W, A.OW);
        if (w < w0 || w >= w1) continue;
        acc += ld_f(g + oh * A.xs[2] + ow * A.xs[3], A.dt) / (double)((h1 - h0) * (w1 - w0));
      }
    }
    st_f(A.yp + t * esz, A.dt, acc);
  }
}

static ct_status cu_adaptive_avg(const ct_call *c) {
  const ct_tensor *x = c->in[0];
  ct_tensor *y = c->out[0];
  if (!ct_dtype_is_floating(x->dtype) || x->dtype != y->dtype || x->ndim != 4 || y->ndim != 4 || !ct_is_contiguous(y))
    return no_kernel(c);
  bool bwd = c->op == CT_OP_adaptive_avg_pool2d_backward;
  const ct_tensor *big = bwd ? y : x, *small = bwd ? x : y;
  if (small->shape[2] < 1 || small->shape[3] < 1) return ct_numel(y) ? no_kernel(c) : CT_OK;
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  AGeom A;
  A.N = big->shape[0];
  A.C = big->shape[1];
  A.H = big->shape[2];
  A.W = big->shape[3];
  A.OH = small->shape[2];
  A.OW = small->shape[3];
  int64_t isz = (int64_t)ct_dtype_size(x->dtype);
  for (int k = 0; k < 4; k++) A.xs[k] = x->stride[k] * isz;
  A.xp = cdptr(x);
  A.yp = cdptr(y);
  A.dt = y->dtype;
  int64_t n = ct_numel(y);
  if (n == 0) return CT_OK;
  if (bwd) k_adaptive_avg_bwd<<<cu_blocks(n), CU_THREADS, 0, CU_STREAM(dev)>>>(A);
  else k_adaptive_avg<<<cu_blocks(n), CU_THREADS, 0, CU_STREAM(dev)>>>(A);
  return ct_cuda_check_launch(ct_op_info_of(c->op)->id);
}

extern "C" void ct_cuda_register_conv(ct_kernel_fn *tab) {
  tab[CT_OP_adaptive_avg_pool2d] = cu_adaptive_avg;
  tab[CT_OP_adaptive_avg_pool2d_backward] = cu_adaptive_avg;
  tab[CT_OP_convolution] = cu_conv;
  tab[CT_OP_convolution_backward_input] = cu_conv;
  tab[CT_OP_convolution_backward_weight] = cu_conv;
  tab[CT_OP_max_pool2d_with_indices] = cu_maxpool;
  tab[CT_OP_adaptive_max_pool2d] = cu_maxpool;
  tab[CT_OP_max_pool2d_with_indices_backward] = cu_pool_scatter;
}
