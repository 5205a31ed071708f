/* Session 14: float32 channels-last 2-D convolutions of small output size as explicit matrix products.
 *
 * At batch 16 the ResNet-18 CIFAR step's layer3 / layer4 convolutions (outputs of 16 x 8 x 8 and 16 x 4 x 4
 * positions) are tiny matrix products, and cuDNN's implicit-GEMM kernels launch 16-128 CTAs for them (a timeline
 * of the graph: layer4's forward ~20 us, its deterministic input gradient ~32 us, on a GPU of 132 SMs). Here:
 *  - forward: y[M, Cout] = col[M, K] @ W[Cout, K]^T with M = N*OH*OW, K = KH*KW*Cin ordered (kh, kw, c) as the
 *    channels-last (KRSC) filter is stored, so W is used in place; col is written by an im2col kernel from the
 *    NHWC input (zero padding, stride, dilation), or is x itself for a 1x1, stride-1, unpadded convolution. The
 *    row-major [M, Cout] result is the channels-last y. A bias is added after the product (PyTorch's order: the
 *    sum rounded, then + bias), by a broadcast kernel. Where the output has few 128 x 128 tiles, K is split in S
 *    slices (split_k): one strided-batched product into [S][M, Cout] partials, summed in a fixed order (+ bias).
 *  - input gradient: dcol[M, K] = gy[M, Cout] @ W[Cout, K], then a col2im GATHER: each dx element (n, ih, iw, c)
 *    sums its taps (kh, then kw) in that fixed order, no atomics (same bits at every run and replay); dx is
 *    overwritten (cuDNN's beta 0 in k_cudnn.cu), plus the bias where the op has one (the transposed convolution's
 *    form), after the sum. 1x1 stride 1 unpadded: the product writes dx directly.
 * The products go through cuBLAS (k_linalg.cu's handle of the device, ct_cuda_sgemm_raw): float32 accumulation with
 * FMA, on the TF32 tensor cores only when ct_cuda_conv_tf32() allows (as cuDNN's math type in k_cudnn.cu). cuBLAS's
 * results are the same bits at every run on one GPU (no atomics mode). The handle is bound to the device's own
 * stream: any other stream (a forked region's, the second stream) is declined and cuDNN runs.
 *
 * Memory: col / dcol come from the stream-ordered caching allocator (graph pools during a capture). The forward's
 * col is freed at once. The input gradient's dcol is held until the next call here (or ct_cuda_conv_gemm_release):
 * k_cudnn.cu's two-stream backward records its fork on the device's stream BEFORE the input gradient's launches, and
 * the weight gradient that follows runs on the second stream after that fork only; a dcol freed at once could be
 * handed to that weight gradient's workspace while the col2im still reads it (k_cudnn.cu holds its own input-gradient
 * workspace for the same reason). Every later call comes after that weight gradient has taken its memory, and any
 * later second-stream work waits on events recorded after the col2im, so the next call may free it.
 *
 * 1x1 convolutions are declined (cuDNN) unless CT_CUDA_CONV_GEMM_1X1=1. In the ResNet step they are the downsample
 * branch's, which runs in the forked regions (CT_CUDA_DS_FORK / CT_CUDA_DS_BWD_FORK) on another stream, where this
 * path declines: taken on the device's stream only, their bits would depend on the fork switches (H200, seen:
 * test cuda14_resnet_step_bwd_fork, 62 weights differing after 3 steps between fork on and off). They also gain
 * little here (H200, TF32, graph of 50 calls: [16,256,8,8] -> 512 s2 forward 6.2 us vs cuDNN 5.0, input gradient
 * 7.2 vs 11.4, the latter off the critical path in the backward region).
 *
 * Which forwards: unsplit, the forwards were no faster than cuDNN (graph of 50 calls, H200, TF32: layer3 3x3
 * 15.7 us vs 16.1, layer4.0 3x3 s2 12.4 vs 11.5, layer3.0 3x3 s2 10.5 vs 10.0) and the whole step lost with them
 * (1.398 ms with every forward unsplit, 1.373 with the input gradients only), so by default a forward is taken only
 * where its K is split (split_k > 1: layer4's 3x3 stride 1); CT_CUDA_CONV_GEMM=all takes every forward.
 *
 * Switches, read at each call: CT_CUDA_CONV_GEMM=0 off, =bwd the input gradient only, =fwd the forward only (as
 * the default rule), =all every fitting forward and input gradient, else (default) the input gradients and the
 * split forwards; CT_CUDA_CONV_GEMM_MAXM (default 1024; 0 off): the largest M = N*OH*OW taken; CT_CUDA_CONV_GEMM_SPLITK
 * (split_k); CT_CUDA_CONV_GEMM_1X1=1 takes 1x1 convolutions too. */
#include "cu_common.cuh"
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern "C" bool ct_is_channels_last(const ct_tensor *t); /* src/ops/memory_format.c */
extern "C" ct_status ct_cuda_ready(int dev);              /* cuda_backend.cu: the device made current, no join */

static int64_t gemm_counts[2]; /* forwards, input gradients run here */
extern "C" int64_t ct_cuda_conv_gemm_count(int which) {
  return which >= 0 && which < 2 ? __atomic_load_n(&gemm_counts[which], __ATOMIC_RELAXED) : 0;
}

/* the geometry: x [N, H, W, C] (NHWC), w [CO, KH, KW, C], y [N, OH, OW, CO] */
typedef struct {
  int N, H, W, C, OH, OW, CO, KH, KW, sh, sw, ph, pw, dh, dw;
} cg_geo;

template <int V> struct cg_vec;
template <> struct cg_vec<1> {
  typedef float t;
  static __device__ __forceinline__ t zero() { return 0.0f; }
  static __device__ __forceinline__ void add(t &a, t b) { a += b; }
};
template <> struct cg_vec<4> {
  typedef float4 t;
  static __device__ __forceinline__ t zero() { return make_float4(0.f, 0.f, 0.f, 0.f); }
  static __device__ __forceinline__ void add(t &a, t b) { a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w; }
};

/* col[m, (r, s, c)] = x[n, oh*sh - ph + r*dh, ow*sw - pw + s*dw, c] or 0 outside: element i of col (in units of V
 * floats) is exactly ((m*KH + r)*KW + s)*C/V + c/V */
template <int V>
__global__ void k_im2col(const float *__restrict__ x, float *__restrict__ col, cg_geo g, unsigned total) {
  typedef cg_vec<V> VT;
  const unsigned CV = (unsigned)g.C / V;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    unsigned cv = i % CV, t = i / CV;
    int s = (int)(t % (unsigned)g.KW);
    t /= (unsigned)g.KW;
    int r = (int)(t % (unsigned)g.KH);
    unsigned m = t / (unsigned)g.KH;
    int ow = (int)(m % (unsigned)g.OW);
    unsigned t2 = m / (unsigned)g.OW;
    int oh = (int)(t2 % (unsigned)g.OH), n = (int)(t2 / (unsigned)g.OH);
    int ih = oh * g.sh - g.ph + r * g.dh, iw = ow * g.sw - g.pw + s * g.dw;
    typename VT::t v = VT::zero();
    if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
      v = ((const typename VT::t *)x)[(((unsigned)n * g.H + ih) * (unsigned)g.W + iw) * CV + cv];
    ((typename VT::t *)col)[i] = v;
  }
}

/* dx[n, ih, iw, c] = sum over the taps (r, then s) that reach it of dcol[(n, oh, ow), (r, s, c)] (+ bias[c]); a
 * position no tap reaches gets 0 (+ bias). ih = oh*sh - ph + r*dh: oh = (ih + ph - r*dh) / sh where that divides. */
template <int V>
__global__ void k_col2im(const float *__restrict__ dcol, const float *__restrict__ bias, float *__restrict__ dx, cg_geo g,
                         unsigned total) {
  typedef cg_vec<V> VT;
  const unsigned CV = (unsigned)g.C / V, KV = (unsigned)(g.KH * g.KW) * CV;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    unsigned cv = i % CV, t = i / CV;
    int iw = (int)(t % (unsigned)g.W);
    t /= (unsigned)g.W;
    int ih = (int)(t % (unsigned)g.H), n = (int)(t / (unsigned)g.H);
    typename VT::t acc = VT::zero();
    for (int r = 0; r < g.KH; r++) {
      int th = ih + g.ph - r * g.dh;
      if (th < 0) break; /* th only decreases with r */
      if (th % g.sh) continue;
      int oh = th / g.sh;
      if (oh >= g.OH) continue;
      for (int s = 0; s < g.KW; s++) {
        int tw = iw + g.pw - s * g.dw;
        if (tw < 0) break;
        if (tw % g.sw) continue;
        int ow = tw / g.sw;
        if (ow >= g.OW) continue;
        unsigned m = ((unsigned)n * g.OH + oh) * (unsigned)g.OW + ow;
        VT::add(acc, ((const typename VT::t *)dcol)[m * KV + (unsigned)(r * g.KW + s) * CV + cv]);
      }
    }
    if (bias) VT::add(acc, ((const typename VT::t *)bias)[cv]);
    ((typename VT::t *)dx)[i] = acc;
  }
}

/* y[row, j] += b[j] over rows of `cols` floats (V floats at a time) */
template <int V>
__global__ void k_bias_rows(float *__restrict__ y, const float *__restrict__ b, unsigned cols, unsigned total) {
  typedef cg_vec<V> VT;
  const unsigned CV = cols / V;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    typename VT::t v = ((typename VT::t *)y)[i];
    VT::add(v, ((const typename VT::t *)b)[i % CV]);
    ((typename VT::t *)y)[i] = v;
  }
}

/* y[i] = part[0][i] + part[1][i] + ... + part[S-1][i] in that order (+ b[column]): the forward's split-K partial
 * products (each over one K / S slice) summed; `total` elements (units of V floats) per part */
template <int V>
__global__ void k_splitk_sum(const float *__restrict__ part, const float *__restrict__ b, float *__restrict__ y,
                             unsigned cols, unsigned total, unsigned S) {
  typedef cg_vec<V> VT;
  const unsigned CV = cols / V;
  const typename VT::t *p = (const typename VT::t *)part;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    typename VT::t acc = p[i];
    for (unsigned k = 1; k < S; k++) VT::add(acc, p[(size_t)k * total + i]);
    if (b) VT::add(acc, ((const typename VT::t *)b)[i % CV]);
    ((typename VT::t *)y)[i] = acc;
  }
}

/* ---- the input gradient's dcol, held until the next call (see the top) ---- */
static struct {
  void *p;
  size_t n;
} held[16];
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
/* frees the held block of dev (if any) and holds p (NULL: none) */
static void held_swap(int dev, void *p, size_t n) {
  pthread_mutex_lock(&held_mu);
  void *old = held[dev].p;
  size_t on = held[dev].n;
  held[dev].p = p;
  held[dev].n = n;
  pthread_mutex_unlock(&held_mu);
  if (old) ct_cuda_tmp_free(dev, old, on);
}
/* gives the held block back to the allocator (a memory check, empty_cache); not between an input gradient and the
 * weight gradient that follows it */
extern "C" void ct_cuda_conv_gemm_release(int dev) {
  if (dev >= 0 && dev < 16) held_swap(dev, NULL, 0);
}

static int64_t env_int(const char *name, int64_t dflt) {
  const char *e = getenv(name);
  return e && *e ? atoll(e) : dflt;
}
static const float *fptr(const ct_tensor *t) { return (const float *)t->storage->data + t->offset; }
static bool al16(const void *p) { return ((uintptr_t)p & 15) == 0; }

#define CG_COL_MAX ((int64_t)256 << 20) /* the largest col / dcol taken, bytes */

/* The forward's split of K (1: none). cuBLAS ran layer4's forward (M 256, Cout 512, K 4608) as slowly as cuDNN
 * (H200, TF32, graph of 50 calls: 18.6 us vs 19.1): 8 output tiles of 128 x 128 for 132 SMs. Split into S slices of
 * K, one strided-batched product [S][M, Cout] and a fixed-order sum (k_splitk_sum): 16.5 us there (S 16). Elsewhere
 * it lost (layer3 [16,256,8,8] 3x3: 21.6 us against 15.7 unsplit; layer4.0 3x3 s2: 14.8 against 12.4; the whole
 * step 1.400 ms with the split wherever it gave one wave, 1.387 without), so the rule splits only a long K over
 * few tiles (K >= 4096, <= 8 tiles), S for about one wave, slices of >= 256.
 * CT_CUDA_CONV_GEMM_SPLITK (read at each call): 0 or unset the rule above, 1 none, n > 1 at most n wherever it
 * divides K in slices of >= 4. */
static int split_k(int64_t CO, int64_t M, int64_t K) {
  int64_t env = env_int("CT_CUDA_CONV_GEMM_SPLITK", 0);
  int64_t tiles = ((CO + 127) / 128) * ((M + 127) / 128);
  if (env <= 0 && (K < 4096 || tiles > 8)) return 1;
  int64_t want = env > 0 ? env : 128 / tiles, most = env > 0 ? K / 4 : K / 256;
  if (want > most) want = most;
  if (want > 32) want = 32;
  if (want * M * CO * 4 > CG_COL_MAX) want = CG_COL_MAX / (M * CO * 4);
  for (int64_t s = want; s > 1; s--)
    if (K % s == 0 && (K / s) % 4 == 0) return (int)s;
  return 1;
}

extern "C" bool ct_cuda_conv_gemm(const ct_call *c, void *stream, ct_status *st) {
  const char *on = getenv("CT_CUDA_CONV_GEMM");
  if (on && *on == '0') return false;
  int64_t maxm = env_int("CT_CUDA_CONV_GEMM_MAXM", 1024);
  if (maxm <= 0 || !stream) return false;
  bool fwd = c->op == CT_OP_convolution;
  if (!fwd && c->op != CT_OP_convolution_backward_input) return false;
  if (on && ((!strcmp(on, "fwd") && !fwd) || (!strcmp(on, "bwd") && fwd))) return false;
  if (c->a.k[0] != 2 || c->a.k[1] != 1 || c->n_in < 2 || c->n_out < 1) return false;
  /* operands as k_cudnn.cu names them: x the input (the gradient's output), y the output (the gradient's input) */
  const ct_tensor *x = fwd ? c->in[0] : c->out[0], *w = c->in[1], *y = fwd ? c->out[0] : c->in[0];
  const ct_tensor *bias = c->n_in > 2 ? c->in[2] : NULL;
  if (!x || !w || !y) return false;
  const ct_tensor *all[3] = {x, w, y};
  for (int i = 0; i < 3; i++)
    if (all[i]->dtype != CT_FLOAT32 || all[i]->ndim != 4 || all[i]->storage->device.type != CT_DEVICE_CUDA ||
        ct_numel(all[i]) <= 0 || ct_numel(all[i]) >= INT_MAX || !ct_is_channels_last(all[i]))
      return false;
  if (x->storage->device.index != w->storage->device.index || y->storage->device.index != x->storage->device.index)
    return false;
  cg_geo g;
  g.N = (int)x->shape[0], g.C = (int)x->shape[1], g.H = (int)x->shape[2], g.W = (int)x->shape[3];
  g.CO = (int)w->shape[0], g.KH = (int)w->shape[2], g.KW = (int)w->shape[3];
  g.OH = (int)y->shape[2], g.OW = (int)y->shape[3];
  if (w->shape[1] != g.C || y->shape[1] != g.CO || y->shape[0] != g.N) return false;
  if (g.KH == 1 && g.KW == 1 && env_int("CT_CUDA_CONV_GEMM_1X1", 0) != 1) return false; /* see the top */
  int64_t bch = fwd ? g.CO : g.C; /* the bias runs over the op's output channels */
  if (bias && (bias->dtype != CT_FLOAT32 || bias->ndim != 1 || bias->shape[0] != bch ||
               (bias->shape[0] != 1 && bias->stride[0] != 1) || bias->storage->device.type != CT_DEVICE_CUDA ||
               bias->storage->device.index != x->storage->device.index))
    return false;
  int str[2], pad[2], dil[2];
  for (int i = 0; i < 2; i++) {
    str[i] = (int)c->a.i[i], pad[i] = (int)c->a.i[3 + i], dil[i] = (int)c->a.i[6 + i];
    if (c->a.i[i] < 1 || c->a.i[3 + i] < 0 || c->a.i[6 + i] < 1 || c->a.i[i] > INT_MAX / 4 || c->a.i[3 + i] > INT_MAX / 4 ||
        c->a.i[6 + i] > INT_MAX / 4)
      return false;
    /* symmetric padding, as cuDNN's key in k_cudnn.cu: the output size is the symmetric formula's */
    int64_t span = (int64_t)dil[i] * (w->shape[2 + i] - 1) + 1, o = (x->shape[2 + i] + 2 * (int64_t)pad[i] - span) / str[i] + 1;
    if (o != y->shape[2 + i]) return false;
  }
  g.sh = str[0], g.sw = str[1], g.ph = pad[0], g.pw = pad[1], g.dh = dil[0], g.dw = dil[1];
  int64_t M = (int64_t)g.N * g.OH * g.OW, K = (int64_t)g.KH * g.KW * g.C;
  if (M > maxm || M * K * 4 > CG_COL_MAX || M * K >= INT_MAX || K >= INT_MAX) return false;
  int dev = x->storage->device.index;
  if (dev < 0 || dev >= 16) return false;
  if (ct_cuda_ready(dev) != CT_OK) {
    ct_clear_error();
    return false;
  }
  /* the forwards taken (see the top): where K is split, or all with CT_CUDA_CONV_GEMM=all */
  int S = fwd ? split_k(g.CO, M, K) : 1;
  if (fwd && S == 1 && !(on && !strcmp(on, "all"))) return false;
  if (!ct_cuda_sgemm_ready(dev, stream)) return false;
  /* taken from here on */
  cudaStream_t s = (cudaStream_t)stream;
  held_swap(dev, NULL, 0); /* the last input gradient's dcol: its weight gradient has its memory by now */
  bool unit = g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0; /* col is x / dcol is dx */
  const float *wp = fptr(w), *bp = bias ? fptr(bias) : NULL;
  size_t nb = (size_t)(M * K) * sizeof(float);
  float *tmp = NULL;
  if (!unit && !(tmp = (float *)ct_cuda_tmp_alloc(dev, nb))) {
    *st = ct_last_status();
    return true;
  }
  ct_status r = CT_OK;
  if (fwd) {
    const float *xp = fptr(x);
    float *yp = (float *)fptr(y);
    const float *col = xp;
    if (!unit) {
      bool v4 = g.C % 4 == 0 && al16(xp);
      unsigned total = (unsigned)(M * K / (v4 ? 4 : 1));
      if (v4) k_im2col<4><<<cu_blocks(total), CU_THREADS, 0, s>>>(xp, tmp, g, total);
      else k_im2col<1><<<cu_blocks(total), CU_THREADS, 0, s>>>(xp, tmp, g, total);
      col = tmp;
    }
    /* y^T [CO, M] (column-major, ld CO) = (W [K, CO] col-major)^T . col^T [K, M] (col-major, ld K); split: slice i
     * of K (kc wide) of both into part i */
    int64_t kc = K / S;
    size_t pb = (size_t)S * (size_t)(M * g.CO) * sizeof(float);
    float *part = S > 1 ? (float *)ct_cuda_tmp_alloc(dev, pb) : NULL;
    if (S > 1 && !part) r = ct_last_status();
    else if (S > 1) {
      r = ct_cuda_sgemm_raw(dev, true, false, g.CO, (int)M, (int)kc, wp, (int)K, kc, col, (int)K, kc, part, g.CO,
                            M * g.CO, S);
      bool v4 = g.CO % 4 == 0 && al16(yp) && (!bp || al16(bp));
      unsigned total = (unsigned)(M * g.CO / (v4 ? 4 : 1));
      if (r == CT_OK && v4) k_splitk_sum<4><<<cu_blocks(total), CU_THREADS, 0, s>>>(part, bp, yp, (unsigned)g.CO, total, S);
      else if (r == CT_OK) k_splitk_sum<1><<<cu_blocks(total), CU_THREADS, 0, s>>>(part, bp, yp, (unsigned)g.CO, total, S);
      ct_cuda_tmp_free(dev, part, pb);
    } else r = ct_cuda_sgemm_raw(dev, true, false, g.CO, (int)M, (int)K, wp, (int)K, 0, col, (int)K, 0, yp, g.CO, 0, 1);
    if (r == CT_OK && bp && S == 1) {
      bool v4 = g.CO % 4 == 0 && al16(yp) && al16(bp);
      unsigned total = (unsigned)(M * g.CO / (v4 ? 4 : 1));
      if (v4) k_bias_rows<4><<<cu_blocks(total), CU_THREADS, 0, s>>>(yp, bp, (unsigned)g.CO, total);
      else k_bias_rows<1><<<cu_blocks(total), CU_THREADS, 0, s>>>(yp, bp, (unsigned)g.CO, total);
    }
    if (tmp) ct_cuda_tmp_free(dev, tmp, nb); /* nothing on another stream waits on an event from before these */
  } else {
    const float *gyp = fptr(y);
    float *dxp = (float *)fptr(x);
    /* dcol^T [K, M] (column-major, ld K) = (W as [K, CO] col-major, ld K) . gy^T [CO, M] (col-major, ld CO) */
    r = ct_cuda_sgemm_raw(dev, false, false, (int)K, (int)M, g.CO, wp, (int)K, 0, gyp, g.CO, 0, unit ? dxp : tmp, (int)K, 0, 1);
    if (r == CT_OK && unit && bp) {
      bool v4 = g.C % 4 == 0 && al16(dxp) && al16(bp);
      unsigned total = (unsigned)(M * g.C / (v4 ? 4 : 1));
      if (v4) k_bias_rows<4><<<cu_blocks(total), CU_THREADS, 0, s>>>(dxp, bp, (unsigned)g.C, total);
      else k_bias_rows<1><<<cu_blocks(total), CU_THREADS, 0, s>>>(dxp, bp, (unsigned)g.C, total);
    } else if (r == CT_OK && !unit) {
      bool v4 = g.C % 4 == 0 && al16(dxp) && (!bp || al16(bp));
      unsigned total = (unsigned)(ct_numel(x) / (v4 ? 4 : 1));
      if (v4) k_col2im<4><<<cu_blocks(total), CU_THREADS, 0, s>>>(tmp, bp, dxp, g, total);
      else k_col2im<1><<<cu_blocks(total), CU_THREADS, 0, s>>>(tmp, bp, dxp, g, total);
    }
    if (tmp) {
      if (r == CT_OK) held_swap(dev, tmp, nb); /* held: see the top */
      else ct_cuda_tmp_free(dev, tmp, nb);
    }
  }
  if (r == CT_OK) r = ct_cuda_check_launch(fwd ? "convolution (im2col + cuBLAS)" : "convolution input gradient (cuBLAS + col2im)");
  if (r == CT_OK) __atomic_add_fetch(&gemm_counts[fwd ? 0 : 1], 1, __ATOMIC_RELAXED);
  *st = r;
  return true;
}
