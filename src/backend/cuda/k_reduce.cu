/* CUDA reductions (sum, prod, max/min and their indices, all/any, count_nonzero,
 * var/std, norm, logsumexp), softmax/log_softmax and the normalisation moments.
 *
 * One generic two-stage reduction: stage 1 gives each (output, chunk) pair a group of
 * G threads (G = 1, 32 or 256 by the reduced length) that accumulates a partial in
 * double (floating) or wrapping uint64 (integers), as the CPU reference does; stage 2
 * combines each output's chunks in order and writes it. Long reductions with few
 * outputs are split into chunks so the whole GPU works on them. max/min keep the CPU's
 * rules: NaN wins, and ties keep the first index (the combine compares indices, so it
 * is independent of the order the partials meet in). var/std and logsumexp take two
 * passes like the CPU (mean, then squared deviations; max, then the shifted sum). */
#include "cu_common.cuh"
#include <math.h>

enum {
  R_SUM = 0, R_PROD, R_MAX, R_MIN, R_ALL, R_ANY, R_CNT, /* CNT: count of non-zeros */
  R_SQDEV,   /* sum (x - shift)^2 */
  R_SUMEXP,  /* sum exp(x - shift) */
  R_ABS,     /* sum |x| */
  R_SQ,      /* sum x^2 */
  R_POW,     /* sum |x|^p */
  R_ABSMAX, R_ABSMIN, /* max/min of |x|, NaN propagating */
  R_NANMAX   /* max ignoring NaN, flag when any NaN */
};

struct Acc {
  double f;
  uint64_t u;
  int64_t idx; /* max/min: index of the best element (-1: none yet) */
  int nan;     /* R_NANMAX: a NaN was seen */
};

struct RGeom {
  int no, ni;
  int64_t oshape[CT_MAX_DIMS], ostride[CT_MAX_DIMS]; /* kept dims of the input (bytes) */
  int64_t ishape[CT_MAX_DIMS], istride[CT_MAX_DIMS]; /* reduced dims (bytes) */
  int64_t outer, inner;
};

struct RParams {
  int mode, dt;
  bool fl;
  double p;
  const char *in;
  const double *shift; /* per output, or NULL */
  RGeom g;
  int64_t split, chunk;
};

__device__ __forceinline__ int64_t geo_off(int n, const int64_t *shape, const int64_t *stride, int64_t idx) {
  int64_t off = 0;
  for (int d = n - 1; d > 0; d--) {
    int64_t s = shape[d], q = idx / s;
    off += (idx - q * s) * stride[d];
    idx = q;
  }
  return n ? off + idx * stride[0] : 0;
}

__device__ __forceinline__ Acc acc_init(int mode) {
  Acc a;
  a.u = 0;
  a.idx = -1;
  a.nan = 0;
  switch (mode) {
    case R_PROD: a.f = 1.0; a.u = 1; break;
    case R_ALL: a.u = 1; a.f = 0; break;
    case R_NANMAX: a.f = -INFINITY; break;
    default: a.f = 0.0; break;
  }
  return a;
}

/* Is candidate b (index bi) better than the current a for max (sign 1) / min (-1)?
 * NaN wins; ties and NaN-vs-NaN keep the lower index. */
__device__ __forceinline__ bool better(const Acc &b, const Acc &a, int sign, bool fl) {
  if (b.idx < 0) return false;
  if (a.idx < 0) return true;
  if (fl) {
    bool bn = isnan(b.f), an = isnan(a.f);
    if (an && bn) return b.idx < a.idx;
    if (an) return false;
    if (bn) return true;
    if (b.f == a.f) return b.idx < a.idx;
    return sign > 0 ? b.f > a.f : b.f < a.f;
  }
  int64_t x = (int64_t)b.u, y = (int64_t)a.u;
  if (x == y) return b.idx < a.idx;
  return sign > 0 ? x > y : x < y;
}

__device__ __forceinline__ void acc_elem(Acc &a, const RParams &P, const char *p, int64_t j, double shift) {
  switch (P.mode) {
    case R_SUM:
      if (P.fl) a.f += ld_f(p, P.dt);
      else a.u += (uint64_t)ld_i(p, P.dt);
      break;
    case R_PROD:
      if (P.fl) a.f *= ld_f(p, P.dt);
      else a.u *= (uint64_t)ld_i(p, P.dt);
      break;
    case R_MAX:
    case R_MIN:
    case R_ABSMAX:
    case R_ABSMIN: {
      Acc b;
      b.idx = j;
      if (P.fl) b.f = ld_f(p, P.dt);
      else b.u = (uint64_t)ld_i(p, P.dt);
      if (P.mode >= R_ABSMAX) b.f = fabs(b.f);
      int sign = (P.mode == R_MAX || P.mode == R_ABSMAX) ? 1 : -1;
      if (better(b, a, sign, P.fl || P.mode >= R_ABSMAX)) {
        a.f = b.f;
        a.u = b.u;
        a.idx = j;
      }
      break;
    }
    case R_ALL:
      if (P.fl ? ld_f(p, P.dt) == 0.0 : ld_i(p, P.dt) == 0) a.u = 0;
      break;
    case R_ANY:
      if (P.fl ? ld_f(p, P.dt) != 0.0 : ld_i(p, P.dt) != 0) a.u = 1;
      break;
    case R_CNT:
      a.u += P.fl ? ld_f(p, P.dt) != 0.0 : ld_i(p, P.dt) != 0;
      a.f += ld_f(p, P.dt) != 0.0;
      break;
    case R_SQDEV: {
      double d = ld_f(p, P.dt) - shift;
      a.f += d * d;
      break;
    }
    case R_SUMEXP: a.f += exp(ld_f(p, P.dt) - shift); break;
    case R_ABS: a.f += fabs(ld_f(p, P.dt)); break;
    case R_SQ: {
      double v = ld_f(p, P.dt);
      a.f += v * v;
      break;
    }
    case R_POW: a.f += pow(fabs(ld_f(p, P.dt)), P.p); break;
    case R_NANMAX: {
      double v = ld_f(p, P.dt);
      if (isnan(v)) a.nan = 1;
      else if (v > a.f) a.f = v;
      break;
    }
  }
}

__device__ __forceinline__ void acc_combine(Acc &a, const Acc &b, const RParams &P) {
  switch (P.mode) {
    case R_PROD:
      if (P.fl) a.f *= b.f;
      else a.u *= b.u;
      break;
    case R_MAX:
    case R_MIN:
    case R_ABSMAX:
    case R_ABSMIN: {
      int sign = (P.mode == R_MAX || P.mode == R_ABSMAX) ? 1 : -1;
      if (better(b, a, sign, P.fl || P.mode >= R_ABSMAX)) a = b;
      break;
    }
    case R_ALL: a.u &= b.u; break;
    case R_ANY: a.u |= b.u; break;
    case R_NANMAX:
      a.nan |= b.nan;
      if (b.f > a.f) a.f = b.f;
      break;
    default: /* the sums */
      a.f += b.f;
      a.u += b.u;
      break;
  }
}

/* Stage 1: group gid of G threads reduces chunk s of output o into part[o * split + s]. */
template <int G>
__global__ void reduce_partial(RParams P, Acc *part) {
  __shared__ Acc sh[CU_THREADS];
  const int gpb = CU_THREADS / G;
  int lane = threadIdx.x % G, gid = threadIdx.x / G;
  int64_t total = P.g.outer * P.split;
  for (int64_t w0 = (int64_t)blockIdx.x * gpb; w0 < total; w0 += (int64_t)gridDim.x * gpb) {
    int64_t w = w0 + gid;
    Acc a = acc_init(P.mode);
    if (w < total) {
      int64_t o = w / P.split, s = w - o * P.split;
      const char *base = P.in + geo_off(P.g.no, P.g.oshape, P.g.ostride, o);
      double shift = P.shift ? P.shift[o] : 0.0;
      int64_t j0 = s * P.chunk, j1 = j0 + P.chunk < P.g.inner ? j0 + P.chunk : P.g.inner;
      for (int64_t j = j0 + lane; j < j1; j += G) acc_elem(a, P, base + geo_off(P.g.ni, P.g.ishape, P.g.istride, j), j, shift);
    }
    if (G > 1) {
      sh[threadIdx.x] = a;
      __syncthreads();
      for (int h = G / 2; h > 0; h /= 2) {
        if (lane < h) {
          Acc b = sh[threadIdx.x + h];
          acc_combine(sh[threadIdx.x], b, P);
        }
        __syncthreads();
      }
      a = sh[threadIdx.x];
      __syncthreads();
    }
    if (lane == 0 && w < total) part[w] = a;
  }
}

/* Stage 2: what to write. */
struct RFinal {
  int op, odt, odt1;
  char *out0, *out1;
  int no;
  int64_t oshape[CT_MAX_DIMS], ost0[CT_MAX_DIMS], ost1[CT_MAX_DIMS];
  int64_t n;         /* reduced element count */
  double corr;       /* var/std correction */
  double p;          /* norm's p */
  double *shift_out; /* pass 1 of a two-pass op: write the shift here instead */
  int pass1;         /* 1: mean (var/std/moments), 2: logsumexp max */
};

__global__ void reduce_final(RParams P, const Acc *part, RFinal F) {
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < P.g.outer; o += gridDim.x * (int64_t)blockDim.x) {
    Acc a = part[o * P.split];
    for (int64_t s = 1; s < P.split; s++) acc_combine(a, part[o * P.split + s], P);
    char *d0 = F.out0 ? F.out0 + geo_off(F.no, F.oshape, F.ost0, o) : NULL;
    char *d1 = F.out1 ? F.out1 + geo_off(F.no, F.oshape, F.ost1, o) : NULL;
    double n = (double)F.n;
    if (F.pass1 == 1) { /* mean */
      double m = a.f / n;
      F.shift_out[o] = m;
      if (F.op == CT_OP_norm_moments) st_f(d0, F.odt, m);
      continue;
    }
    if (F.pass1 == 2) { /* logsumexp's shift: NaN if any NaN, 0 for an infinite max */
      F.shift_out[o] = a.nan ? NAN : (isinf(a.f) ? 0.0 : a.f);
      continue;
    }
    switch (F.op) {
      case CT_OP_sum:
      case CT_OP_prod:
        if (P.fl) st_f(d0, F.odt, a.f);
        else st_i(d0, F.odt, (int64_t)a.u);
        break;
      case CT_OP_amax:
      case CT_OP_amin:
      case CT_OP_max:
      case CT_OP_min:
      case CT_OP_max_dim:
      case CT_OP_min_dim:
        if (P.fl) st_f(d0, F.odt, a.f);
        else st_i(d0, F.odt, (int64_t)a.u);
        if (d1) st_i(d1, F.odt1, a.idx < 0 ? 0 : a.idx);
        break;
      case CT_OP_argmax:
      case CT_OP_argmin: st_i(d0, F.odt, a.idx < 0 ? 0 : a.idx); break;
      case CT_OP_all:
      case CT_OP_any: st_i(d0, F.odt, (int64_t)a.u); break;
      case CT_OP_count_nonzero: st_i(d0, F.odt, (int64_t)a.u); break;
      case CT_OP_var:
      case CT_OP_std: {
        double div = n - F.corr;
        if (div < 0) div = 0;
        double v = a.f / div;
        st_f(d0, F.odt, F.op == CT_OP_std ? sqrt(v) : v);
        if (d1) st_f(d1, F.odt1, F.n ? P.shift[o] : NAN);
        break;
      }
      case CT_OP_norm_moments: st_f(d1, F.odt1, a.f / n); break;
      case CT_OP_norm: {
        double p = F.p, r;
        if (isinf(p)) r = F.n ? a.f : 0.0;
        else if (p == 0) r = a.f;
        else if (p == 1) r = a.f;
        else if (p == 2) r = sqrt(a.f);
        else r = pow(a.f, 1.0 / p);
        st_f(d0, F.odt, r);
        break;
      }
      case CT_OP_logsumexp: {
        double m = P.shift[o];
        st_f(d0, F.odt, log(a.f) + m);
        break;
      }
      default: break;
    }
  }
}

/* Merges adjacent dims that are one run in memory. */
static void coalesce(int *n, int64_t *shape, int64_t *stride) {
  if (*n <= 1) return;
  int m = 0;
  for (int d = 1; d < *n; d++) {
    if (stride[m] == stride[d] * shape[d]) {
      shape[m] *= shape[d];
      stride[m] = stride[d];
    } else {
      m++;
      shape[m] = shape[d];
      stride[m] = stride[d];
    }
  }
  *n = m + 1;
}

extern "C" void ct_rk_out_strides(const ct_tensor *t, int in_ndim, uint32_t mask, int64_t *outer);

static char *dptr(const ct_tensor *t) { return (char *)t->storage->data + t->offset * (int64_t)ct_dtype_size(t->dtype); }

/* One pass: stage 1 and stage 2 for mode over x with mask. */
static ct_status reduce_pass(int dev, const ct_tensor *x, uint32_t mask, int mode, double p, const double *shift,
                             const RFinal &F0) {
  ct_reduce_geom rg;
  ct_reduce_geom_make(x, mask, &rg);
  RParams P;
  memset(&P, 0, sizeof P);
  P.mode = mode;
  P.dt = x->dtype;
  P.fl = ct_dtype_is_floating(x->dtype);
  P.p = p;
  P.in = dptr(x);
  P.shift = shift;
  /* outer geometry stays uncoalesced-by-memory (output order must follow the kept dims);
   * inner dims may be merged freely since the index j only orders ties */
  P.g.no = rg.n_outer;
  memcpy(P.g.oshape, rg.outer_shape, sizeof P.g.oshape);
  memcpy(P.g.ostride, rg.outer_stride, sizeof P.g.ostride);
  P.g.ni = rg.n_inner;
  memcpy(P.g.ishape, rg.inner_shape, sizeof P.g.ishape);
  memcpy(P.g.istride, rg.inner_stride, sizeof P.g.istride);
  coalesce(&P.g.ni, P.g.ishape, P.g.istride);
  P.g.outer = rg.outer_numel;
  P.g.inner = rg.inner_numel;
  if (P.g.outer == 0) return CT_OK;
  /* split long reductions with few outputs over many groups */
  int64_t inner = P.g.inner;
  P.split = 1;
  if (P.g.outer < 1024 && inner > 16384) {
    int64_t want = (2048 + P.g.outer - 1) / P.g.outer;
    int64_t maxs = (inner + 4095) / 4096;
    P.split = want < maxs ? want : maxs;
    if (P.split < 1) P.split = 1;
  }
  P.chunk = (inner + P.split - 1) / P.split;
  if (P.chunk < 1) P.chunk = 1;
  /* the native-precision path (k_fast.cu): contiguous rows of a floating dtype, the sums */
  int fmode = mode == R_SUM ? 0 : mode == R_SQ ? 1 : mode == R_ABS ? 2 : mode == R_SQDEV ? 3 : -1;
  bool fast = fmode >= 0 && P.fl && P.g.ni == 1 && P.g.istride[0] == (int64_t)ct_dtype_size(x->dtype) && P.chunk > 16;
  if (fast) {
    P.chunk = (P.chunk + 7) / 8 * 8;
    P.split = (inner + P.chunk - 1) / P.chunk;
  }
  int64_t nparts = P.g.outer * P.split;
  Acc *part = (Acc *)ct_cuda_tmp_alloc(dev, (size_t)nparts * sizeof(Acc));
  if (!part) return ct_last_status();
  cudaStream_t s = CU_STREAM(dev);
  int64_t chunk = P.chunk;
  RParams PF = P; /* what the final kernel combines */
  bool done = false;
  if (fast && cudaMemsetAsync(part, 0, (size_t)nparts * sizeof(Acc), s) == cudaSuccess) {
    if (P.split == 1) {
      done = ct_cuda_fast_rowsum(dev, P.dt, fmode, P.in, P.g.no, P.g.oshape, P.g.ostride, P.g.outer, inner, 1, P.chunk,
                                 shift, &part[0].f, (int64_t)sizeof(Acc));
    } else {
      /* chunk sums into doubles, then each output's chunk sums by a second row pass (the
       * final kernel's one-thread-per-output loop over thousands of chunks is latency-bound) */
      size_t db = (size_t)nparts * sizeof(double);
      double *dp = (double *)ct_cuda_tmp_alloc(dev, db);
      if (dp) {
        int64_t osh[CT_MAX_DIMS] = {P.g.outer}, ost[CT_MAX_DIMS] = {P.split * (int64_t)sizeof(double)};
        done = ct_cuda_fast_rowsum(dev, P.dt, fmode, P.in, P.g.no, P.g.oshape, P.g.ostride, P.g.outer, inner, P.split,
                                   P.chunk, shift, dp, (int64_t)sizeof(double)) &&
               ct_cuda_fast_rowsum(dev, CT_FLOAT64, 0, (const char *)dp, 1, osh, ost, P.g.outer, P.split, 1,
                                   (P.split + 7) / 8 * 8, NULL, &part[0].f, (int64_t)sizeof(Acc));
        ct_cuda_tmp_free(dev, dp, db); /* stream-ordered: reused only by later work */
        if (done) PF.split = 1;
      } else ct_clear_error();
    }
  }
  if (done) {
  } else if (chunk >= 1024) reduce_partial<256><<<cu_blocks(nparts, 1), CU_THREADS, 0, s>>>(P, part);
  else if (chunk > 16) reduce_partial<32><<<cu_blocks(nparts, CU_THREADS / 32), CU_THREADS, 0, s>>>(P, part);
  else reduce_partial<1><<<cu_blocks(nparts, CU_THREADS), CU_THREADS, 0, s>>>(P, part);
  ct_status st = ct_cuda_check_launch("reduce");
  if (st == CT_OK) {
    RFinal F = F0;
    F.n = inner;
    reduce_final<<<cu_blocks(P.g.outer), CU_THREADS, 0, s>>>(PF, part, F);
    st = ct_cuda_check_launch("reduce");
  }
  ct_cuda_tmp_free(dev, part, (size_t)nparts * sizeof(Acc));
  return st;
}

static void final_outputs(RFinal &F, const ct_call *c, const ct_tensor *x, uint32_t mask, const ct_reduce_geom &rg) {
  memset(&F, 0, sizeof F);
  F.op = c->op;
  F.no = rg.n_outer;
  memcpy(F.oshape, rg.outer_shape, sizeof F.oshape);
  if (c->n_out > 0) {
    F.out0 = dptr(c->out[0]);
    F.odt = c->out[0]->dtype;
    ct_rk_out_strides(c->out[0], x->ndim, mask, F.ost0);
  }
  if (c->n_out > 1) {
    F.out1 = dptr(c->out[1]);
    F.odt1 = c->out[1]->dtype;
    ct_rk_out_strides(c->out[1], x->ndim, mask, F.ost1);
  }
}

static ct_status cu_reduce(const ct_call *c) {
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  const ct_tensor *x = c->in[0];
  uint32_t mask = (uint32_t)c->a.k[0];
  ct_reduce_geom rg;
  ct_reduce_geom_make(x, mask, &rg);
  if (rg.outer_numel == 0) return CT_OK;
  RFinal F;
  final_outputs(F, c, x, mask, rg);
  switch (c->op) {
    case CT_OP_sum: return reduce_pass(dev, x, mask, R_SUM, 0, NULL, F);
    case CT_OP_prod: return reduce_pass(dev, x, mask, R_PROD, 0, NULL, F);
    case CT_OP_amax:
    case CT_OP_max:
    case CT_OP_max_dim:
    case CT_OP_argmax: return reduce_pass(dev, x, mask, R_MAX, 0, NULL, F);
    case CT_OP_amin:
    case CT_OP_min:
    case CT_OP_min_dim:
    case CT_OP_argmin: return reduce_pass(dev, x, mask, R_MIN, 0, NULL, F);
    case CT_OP_all: return reduce_pass(dev, x, mask, R_ALL, 0, NULL, F);
    case CT_OP_any: return reduce_pass(dev, x, mask, R_ANY, 0, NULL, F);
    case CT_OP_count_nonzero: return reduce_pass(dev, x, mask, R_CNT, 0, NULL, F);
    case CT_OP_norm: {
      double p = c->a.f[0];
      F.p = p;
      int mode = isinf(p) ? (p > 0 ? R_ABSMAX : R_ABSMIN) : p == 0 ? R_CNT : p == 1 ? R_ABS : p == 2 ? R_SQ : R_POW;
      return reduce_pass(dev, x, mask, mode, p, NULL, F);
    }
    case CT_OP_var:
    case CT_OP_std:
    case CT_OP_logsumexp:
    case CT_OP_norm_moments: {
      bool lse = c->op == CT_OP_logsumexp;
      size_t nb = (size_t)rg.outer_numel * sizeof(double);
      double *sh = (double *)ct_cuda_tmp_alloc(dev, nb);
      if (!sh) return ct_last_status();
      F.corr = c->a.f[0];
      RFinal F1 = F;
      F1.shift_out = sh;
      F1.pass1 = lse ? 2 : 1;
      ct_status st = reduce_pass(dev, x, mask, lse ? R_NANMAX : R_SUM, 0, NULL, F1);
      if (st == CT_OK) st = reduce_pass(dev, x, mask, lse ? R_SUMEXP : R_SQDEV, 0, sh, F);
      ct_cuda_tmp_free(dev, sh, nb);
      return st;
    }
    default: return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::%s' with arguments from the 'CUDA' backend.",
                           ct_op_info_of(c->op)->id);
  }
}

/* norm_moments: mean and biased variance over mask k0 into keepdim outputs. With
 * keepdim the outputs have the input's ndim, which ct_rk_out_strides handles. */
static ct_status cu_norm_moments(const ct_call *c) { return cu_reduce(c); }

/* ---- softmax / log_softmax over dim k0: one group per row, three passes in double ---- */
struct SMParams {
  const char *x;
  char *y;
  int xdt, ydt;
  bool log;
  int nr; /* row dims (all but d) */
  int64_t rshape[CT_MAX_DIMS], rxs[CT_MAX_DIMS], rys[CT_MAX_DIMS];
  int64_t rows, len, xs, ys; /* along d (bytes) */
};

template <int G>
__global__ void softmax_kernel(SMParams P) {
  __shared__ double sh[CU_THREADS];
  const int gpb = CU_THREADS / G;
  int lane = threadIdx.x % G, gid = threadIdx.x / G;
  for (int64_t r0 = (int64_t)blockIdx.x * gpb; r0 < P.rows; r0 += (int64_t)gridDim.x * gpb) {
    int64_t r = r0 + gid;
    bool act = r < P.rows;
    const char *x = act ? P.x + geo_off(P.nr, P.rshape, P.rxs, r) : P.x;
    char *y = act ? P.y + geo_off(P.nr, P.rshape, P.rys, r) : P.y;
    /* max; NaN sticks */
    double m = -INFINITY;
    if (act)
      for (int64_t j = lane; j < P.len; j += G) {
        double v = ld_f(x + j * P.xs, P.xdt);
        if (v > m || isnan(v)) m = isnan(m) ? m : v;
      }
    sh[threadIdx.x] = m;
    __syncthreads();
    for (int h = G / 2; h > 0; h /= 2) {
      if (lane < h) {
        double a = sh[threadIdx.x], b = sh[threadIdx.x + h];
        sh[threadIdx.x] = (isnan(a) || isnan(b)) ? NAN : (b > a ? b : a);
      }
      __syncthreads();
    }
    m = sh[threadIdx.x - lane];
    __syncthreads();
    if (isinf(m) && m < 0) m = 0;
    double s = 0;
    if (act)
      for (int64_t j = lane; j < P.len; j += G) s += exp(ld_f(x + j * P.xs, P.xdt) - m);
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int h = G / 2; h > 0; h /= 2) {
      if (lane < h) sh[threadIdx.x] += sh[threadIdx.x + h];
      __syncthreads();
    }
    s = sh[threadIdx.x - lane];
    __syncthreads();
    if (act) {
      double ls = log(s);
      for (int64_t j = lane; j < P.len; j += G) {
        double v = ld_f(x + j * P.xs, P.xdt);
        st_f(y + j * P.ys, P.ydt, P.log ? v - m - ls : exp(v - m) / s);
      }
    }
  }
}

static ct_status cu_softmax(const ct_call *c) {
  ct_status fst;
  if (ct_cuda_fast_softmax(c, &fst)) return fst;
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  const ct_tensor *x = c->in[0];
  ct_tensor *y = c->out[0];
  if (ct_numel(x) == 0) return CT_OK;
  int d = (int)c->a.k[0];
  SMParams P;
  memset(&P, 0, sizeof P);
  P.x = dptr(x);
  P.y = dptr(y);
  P.xdt = x->dtype;
  P.ydt = y->dtype;
  P.log = c->op == CT_OP_log_softmax;
  int64_t xi = (int64_t)ct_dtype_size(x->dtype), yi = (int64_t)ct_dtype_size(y->dtype);
  P.len = x->ndim ? x->shape[d] : 1;
  P.xs = x->ndim ? x->stride[d] * xi : 0;
  P.ys = y->ndim ? y->stride[d] * yi : 0;
  P.rows = 1;
  for (int k = 0; k < x->ndim; k++) {
    if (k == d) continue;
    P.rshape[P.nr] = x->shape[k];
    P.rxs[P.nr] = x->stride[k] * xi;
    P.rys[P.nr] = y->stride[k] * yi;
    P.rows *= x->shape[k];
    P.nr++;
  }
  cudaStream_t s = CU_STREAM(dev);
  if (P.len >= 1024) softmax_kernel<256><<<cu_blocks(P.rows, 1), CU_THREADS, 0, s>>>(P);
  else if (P.len > 8) softmax_kernel<32><<<cu_blocks(P.rows, CU_THREADS / 32), CU_THREADS, 0, s>>>(P);
  else softmax_kernel<1><<<cu_blocks(P.rows, CU_THREADS), CU_THREADS, 0, s>>>(P);
  return ct_cuda_check_launch("softmax");
}

extern "C" void ct_cuda_register_reduce(ct_kernel_fn *tab) {
  static const int ops[] = {CT_OP_sum,    CT_OP_prod,   CT_OP_amax, CT_OP_amin,          CT_OP_max,
                            CT_OP_min,    CT_OP_max_dim, CT_OP_min_dim, CT_OP_argmax,     CT_OP_argmin,
                            CT_OP_all,    CT_OP_any,    CT_OP_count_nonzero, CT_OP_var,   CT_OP_std,
                            CT_OP_norm,   CT_OP_logsumexp};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) tab[ops[i]] = cu_reduce;
  tab[CT_OP_norm_moments] = cu_norm_moments;
  tab[CT_OP_softmax] = cu_softmax;
  tab[CT_OP_log_softmax] = cu_softmax;
}
