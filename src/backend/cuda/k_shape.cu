/* CUDA kernels of data-movement ops that the optimizers, losses and samplers reach:
 * cat (copies into slices of the output), repeat_interleave and its backward (a
 * source-index / prefix table built from the repeats, then one gather or one ordered
 * per-element sum), and multinomial (drawn by the CPU generator like the other random
 * ops of this backend, so streams stay bit-exact with the CPU; see cu_host_random). */
#include "cu_common.cuh"
#include <stdlib.h>
#include <string.h>

/* A view of t over the same storage (no handle: the kernels only read the geometry). */
static ct_tensor slice_view(const ct_tensor *t, int dim, int64_t start, int64_t len) {
  ct_tensor v = *t;
  v.shape[dim] = len;
  v.offset = t->offset + start * t->stride[dim];
  return v;
}

/* ---- cat: in[i] (already the output dtype) goes to out[.., off:off+a.i[i], ..];
 * a.i[i] < 0 marks a legacy empty 1-D input that takes no part ---- */
static ct_status cu_cat(const ct_call *c) {
  ct_tensor *o = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  int dim = (int)c->a.k[0];
  int64_t off = 0;
  for (int i = 0; i < c->n_in; i++) {
    int64_t sz = c->a.i[i];
    if (sz < 0) continue;
    if (sz > 0 && ct_numel(o) > 0) {
      ct_tensor v = slice_view(o, dim, off, sz);
      CT_TRY(ct_cuda_copy_tensor(&v, c->in[i]));
    }
    off += sz;
  }
  return CT_OK;
}

/* Repeats (int64 [size], any device layout) read to the host: the output size depends on
 * them, so the host needs them anyway (PyTorch's CUDA repeat_interleave syncs too). */
static ct_status read_repeats(const ct_tensor *rep, int64_t *rv, int64_t n) {
  if (n == 0) return CT_OK;
  if (rep->storage->device.type == CT_DEVICE_CPU) {
    const int64_t *p = (const int64_t *)((const char *)rep->storage->data + rep->offset * 8);
    for (int64_t i = 0; i < n; i++) rv[i] = p[i * rep->stride[0]];
    return CT_OK;
  }
  ct_tensor *tmp = ct_tensor_new(1, &n, CT_INT64, rep->storage->device);
  if (!tmp) return ct_last_status();
  ct_status st = ct_cuda_copy_tensor(tmp, (ct_tensor *)rep);
  if (st == CT_OK) st = ct_cuda_backend.download(tmp->storage, 0, rv, (size_t)n * 8);
  ct_release(tmp);
  return st;
}

/* A device int64 table of n entries from host values. */
static ct_tensor *upload_table(int dev, const int64_t *v, int64_t n) {
  ct_device d = {CT_DEVICE_CUDA, dev};
  int64_t m = n > 0 ? n : 1;
  ct_tensor *t = ct_tensor_new(1, &m, CT_INT64, d);
  if (t && n && ct_cuda_backend.upload(t->storage, 0, v, (size_t)n * 8) != CT_OK) {
    ct_release(t);
    return NULL;
  }
  return t;
}

/* A contiguous device copy of t (t itself, retained, when already contiguous). */
static ct_tensor *contig(ct_tensor *t) {
  if (ct_is_contiguous(t)) return ct_retain(t);
  ct_tensor *r = ct_tensor_new(t->ndim, t->shape, t->dtype, t->storage->device);
  if (r && ct_cuda_copy_tensor(r, t) != CT_OK) {
    ct_release(r);
    return NULL;
  }
  return r;
}

/* out[i, k, j] = x[i, map[k], j] over contiguous [outer, total, inner] / [outer, size, inner] */
__global__ void ri_fwd_kernel(char *o, const char *x, const int64_t *map, int64_t outer, int64_t total, int64_t size,
                              int64_t inner, int isz) {
  int64_t n = outer * total * inner;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += gridDim.x * (int64_t)blockDim.x) {
    int64_t i = e / (total * inner), r = e - i * total * inner, k = r / inner, j = r - k * inner;
    cpy_bytes(o + e * isz, x + ((i * size + map[k]) * inner + j) * isz, isz);
  }
}

/* gx[i, s, j] = sum over k in [start[s], start[s+1]) of g[i, k, j], in k order and in the
 * dtype's own arithmetic, as the CPU's sequential scatter-add does */
__global__ void ri_bwd_kernel(char *gx, const char *g, const int64_t *start, int64_t outer, int64_t size, int64_t total,
                              int64_t inner, int dt, int isz) {
  int64_t n = outer * size * inner;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += gridDim.x * (int64_t)blockDim.x) {
    int64_t i = e / (size * inner), r = e - i * size * inner, s = r / inner, j = r - s * inner;
    const char *src = g + ((i * total) * inner + j) * isz;
    int64_t k0 = start[s], k1 = start[s + 1];
    char *d = gx + e * isz;
    if (dt == CT_FLOAT32) {
      float acc = 0;
      for (int64_t k = k0; k < k1; k++) acc += *(const float *)(src + k * inner * isz);
      *(float *)d = acc;
    } else if (dt == CT_FLOAT64) {
      double acc = 0;
      for (int64_t k = k0; k < k1; k++) acc += *(const double *)(src + k * inner * isz);
      *(double *)d = acc;
    } else if (dt <= CT_BFLOAT16) { /* half types: rounded after every addition */
      st_f(d, dt, 0.0);
      for (int64_t k = k0; k < k1; k++) st_f(d, dt, ld_f(d, dt) + ld_f(src + k * inner * isz, dt));
    } else {
      uint64_t acc = 0;
      for (int64_t k = k0; k < k1; k++) acc += (uint64_t)ld_i(src + k * inner * isz, dt);
      st_i(d, dt, (int64_t)acc);
    }
  }
}

/* in[0] x, in[1] repeats; the repeated dim is a.k[1]; the output has total rows there */
static ct_status cu_repeat_interleave(const ct_call *c) {
  bool bwd = c->op == CT_OP_repeat_interleave_backward;
  ct_tensor *src = c->in[0], *rep = c->in[1], *o = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  int d = (int)c->a.k[1];
  const ct_tensor *big = bwd ? src : o, *small = bwd ? o : src; /* big: the repeated side */
  if (ct_numel(o) == 0) return CT_OK;
  int64_t size = small->ndim ? small->shape[d] : 1, total = big->ndim ? big->shape[d] : 1, outer = 1, inner = 1;
  for (int k = 0; k < d; k++) outer *= big->shape[k];
  for (int k = d + 1; k < big->ndim; k++) inner *= big->shape[k];
  int64_t nr = rep->ndim ? rep->shape[0] : 1;
  int64_t *rv = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nr + total + size + 2));
  if (!rv) return CT_ERR(CT_ERR_OOM, "out of memory");
  ct_status st = read_repeats(rep, rv, nr);
  int64_t *tab = rv + nr + 1, sum = 0;
  if (st == CT_OK) {
    if (bwd) { /* prefix starts of each source row */
      for (int64_t s = 0; s <= size; s++) {
        tab[s] = sum;
        if (s < size) sum += s < nr ? rv[s] : 0;
      }
    } else { /* source row of each output row */
      for (int64_t s = 0; s < nr && sum < total; s++)
        for (int64_t q = 0; q < rv[s] && sum < total; q++) tab[sum++] = s;
    }
    if (sum != total) st = CT_ERR(CT_ERR_RUNTIME, "repeat_interleave: repeats do not add up to the output size");
  }
  ct_tensor *t = NULL, *sc = NULL, *oc = NULL;
  if (st == CT_OK && !(t = upload_table(dev, tab, bwd ? size + 1 : total))) st = ct_last_status();
  if (st == CT_OK && !(sc = contig(src))) st = ct_last_status();
  if (st == CT_OK && !(oc = ct_is_contiguous(o) ? ct_retain(o) : ct_tensor_new(o->ndim, o->shape, o->dtype, o->storage->device)))
    st = ct_last_status();
  if (st == CT_OK) {
    int isz = (int)ct_dtype_size(o->dtype);
    char *op = (char *)oc->storage->data + oc->offset * isz;
    const char *sp = (const char *)sc->storage->data + sc->offset * isz;
    const int64_t *tp = (const int64_t *)t->storage->data;
    int64_t n = ct_numel(o);
    if (bwd)
      ri_bwd_kernel<<<cu_blocks(n), CU_THREADS, 0, CU_STREAM(dev)>>>(op, sp, tp, outer, size, total, inner, o->dtype, isz);
    else
      ri_fwd_kernel<<<cu_blocks(n), CU_THREADS, 0, CU_STREAM(dev)>>>(op, sp, tp, outer, total, size, inner, isz);
    st = ct_cuda_check_launch("repeat_interleave");
  }
  if (st == CT_OK && oc != o) st = ct_cuda_copy_tensor(o, oc);
  ct_release(t);
  ct_release(sc);
  ct_release(oc);
  free(rv);
  return st;
}

/* ---- multinomial: probabilities read back, drawn by the CPU kernel with the CPU
 * generator, the indices copied over. in[0] contiguous float32/float64, out int64. ---- */
static ct_status cu_multinomial(const ct_call *c) {
  ct_tensor *p = c->in[0], *o = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  if (ct_numel(o) == 0) return CT_OK;
  const ct_op_info *info = ct_op_info_of(c->op);
  ct_tensor *pc = contig(p);
  ct_tensor *hp = pc ? ct_tensor_new(p->ndim, p->shape, p->dtype, ct_cpu()) : NULL;
  ct_tensor *ho = hp ? ct_tensor_new(o->ndim, o->shape, CT_INT64, ct_cpu()) : NULL;
  ct_tensor *dv = ho ? ct_tensor_new(o->ndim, o->shape, CT_INT64, o->storage->device) : NULL;
  ct_status st = dv ? CT_OK : ct_last_status();
  size_t pb = (size_t)ct_numel(p) * ct_dtype_size(p->dtype), ob = (size_t)ct_numel(o) * 8;
  if (st == CT_OK && pb)
    st = ct_cuda_backend.download(pc->storage, (size_t)pc->offset * ct_dtype_size(p->dtype), hp->storage->data, pb);
  if (st == CT_OK) {
    ct_call hc = *c;
    hc.in[0] = hp;
    hc.out[0] = ho;
    st = info->cpu(&hc);
  }
  if (st == CT_OK) st = ct_cuda_backend.upload(dv->storage, 0, ho->storage->data, ob);
  if (st == CT_OK) st = ct_cuda_copy_tensor(o, dv);
  ct_release(pc);
  ct_release(hp);
  ct_release(ho);
  ct_release(dv);
  return st;
}

/* ---- the dim maps (flip, roll, repeat, the pads, their scatter backward) and tril/triu:
 * the CPU walker's per-dim byte-offset tables (src/backend/cpu/kernels_shape.c), built on
 * the host the same way and uploaded; one thread per walked element. ---- */
#define NOFF INT64_MIN
enum { MAP_FLIP = 0, MAP_ROLL = 1, MAP_REPEAT = 2, MAP_CONSTANT = 3, MAP_REFLECT = 4, MAP_REPLICATE = 5,
       MAP_CIRCULAR = 6 };

/* Source index along one dim of size n for walked index o, or -1 (the CPU's map_index). */
static int64_t map_index(int mode, int64_t o, int64_t n, int64_t p0, int64_t p1) {
  int64_t j;
  switch (mode) {
    case MAP_FLIP: return p0 ? n - 1 - o : o;
    case MAP_ROLL: j = (o - p0) % n; return j < 0 ? j + n : j;
    case MAP_REPEAT: return o % n;
    case MAP_CONSTANT: j = o - p0; return (j >= 0 && j < n) ? j : -1;
    case MAP_REFLECT:
      j = o - p0;
      if (j < 0) j = -j;
      if (j >= n) j = 2 * (n - 1) - j;
      return j;
    case MAP_REPLICATE: j = o - p0; return j < 0 ? 0 : j >= n ? n - 1 : j;
    case MAP_CIRCULAR: {
      int64_t cl = p0 < 0 ? -p0 : 0, cr = p1 < 0 ? -p1 : 0, core = n - cl - cr;
      if (core <= 0) return -1;
      j = (o - (p0 > 0 ? p0 : 0)) % core;
      return (j < 0 ? j + core : j) + cl;
    }
    default: return o;
  }
}

struct DimMap {
  int nd, isz, dt, scatter, tri;
  int64_t diag;
  int64_t shape[CT_MAX_DIMS], a_st[CT_MAX_DIMS], start[CT_MAX_DIMS];
  char *a, *b;
  uint64_t fill;
};

__global__ void dimmap_kernel(DimMap w, const int64_t *tab, int64_t numel) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < numel; e += gridDim.x * (int64_t)blockDim.x) {
    int64_t r = e, aoff = 0, boff = 0, row = 0, col = 0;
    bool f = false;
    for (int d = w.nd - 1; d >= 0; d--) {
      int64_t i = r % w.shape[d];
      r /= w.shape[d];
      aoff += i * w.a_st[d];
      int64_t t = tab[w.start[d] + i];
      if (t == NOFF) f = true;
      else boff += t;
      if (d == w.nd - 1) col = i;
      else if (d == w.nd - 2) row = i;
    }
    char *pa = w.a + aoff;
    if (w.tri && !(w.tri == 1 ? col - row <= w.diag : col - row >= w.diag)) {
      cpy_bytes(pa, (const char *)&w.fill, w.isz); /* fill is 0 for tril/triu */
      continue;
    }
    if (w.scatter) {
      if (f) continue;
      char *pb = w.b + boff;
      switch (w.dt) {
        case CT_FLOAT32: atomicAdd((float *)pb, *(const float *)pa); break;
        case CT_FLOAT64: atomicAdd((double *)pb, *(const double *)pa); break;
        case CT_INT32: atomicAdd((int *)pb, *(const int *)pa); break;
        default: atomicAdd((unsigned long long *)pb, (unsigned long long)*(const int64_t *)pa); break;
      }
    } else if (f) {
      cpy_bytes(pa, (const char *)&w.fill, w.isz);
    } else {
      cpy_bytes(pa, w.b + boff, w.isz);
    }
  }
}

static ct_status cu_dimmap(const ct_call *c) {
  int op = c->op, mode = 0, tri = 0;
  bool scatter = false;
  switch (op) {
    case CT_OP_flip: mode = MAP_FLIP; break;
    case CT_OP_roll: mode = MAP_ROLL; break;
    case CT_OP_repeat: mode = MAP_REPEAT; break;
    case CT_OP_constant_pad_nd: mode = MAP_CONSTANT; break;
    case CT_OP_reflection_pad: mode = MAP_REFLECT; break;
    case CT_OP_replication_pad: mode = MAP_REPLICATE; break;
    case CT_OP_circular_pad: mode = MAP_CIRCULAR; break;
    case CT_OP_pad_backward: mode = (int)c->a.k[0]; scatter = true; break;
    case CT_OP_tril: tri = 1; mode = -1; break;
    case CT_OP_triu: tri = 2; mode = -1; break;
    default: return CT_ERR(CT_ERR_RUNTIME, "cu_dimmap: unexpected op %d", op);
  }
  const ct_tensor *walked = scatter ? c->in[0] : c->out[0], *other = scatter ? c->out[0] : c->in[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  ct_dtype dt = other->dtype;
  int isz = (int)ct_dtype_size(dt);
  if (scatter && !(dt == CT_FLOAT32 || dt == CT_FLOAT64 || dt == CT_INT32 || dt == CT_INT64))
    return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::pad_backward' with arguments from the 'CUDA' backend "
                                          "for dtype %s (float32, float64, int32, int64 only).", ct_dtype_name(dt));
  if (scatter) { /* the gradient buffer starts at zero: all-zero bits are 0 in every dtype */
    if (!ct_is_contiguous(other)) return CT_ERR(CT_ERR_RUNTIME, "cu_dimmap: a scatter needs a contiguous output");
    size_t nb = (size_t)ct_numel(other) * (size_t)isz;
    if (nb && cudaMemsetAsync((char *)other->storage->data + other->offset * isz, 0, nb, CU_STREAM(dev)) != cudaSuccess)
      return ct_cuda_fail(cudaGetLastError(), "memset");
  }
  int64_t numel = ct_numel(walked);
  if (numel == 0) return CT_OK;
  DimMap w;
  memset(&w, 0, sizeof w);
  w.isz = isz;
  w.dt = dt;
  w.scatter = scatter;
  w.tri = tri;
  w.diag = c->a.k[0];
  w.a = (char *)walked->storage->data + walked->offset * isz;
  w.b = (char *)other->storage->data + other->offset * isz;
  if (mode == MAP_CONSTANT) {
    ct_scalar v = c->a.s[0];
    char fb[8] = {0};
    if (ct_dtype_is_floating(dt)) ct_store_f64(fb, dt, v.kind == CT_SCALAR_FLOAT ? v.f : (double)v.i);
    else if (dt == CT_BOOL) ct_store_i64(fb, dt, v.kind == CT_SCALAR_FLOAT ? v.f != 0 : v.i != 0);
    else ct_store_i64(fb, dt, v.kind == CT_SCALAR_FLOAT ? (int64_t)v.f : v.i);
    memcpy(&w.fill, fb, 8);
  }
  int nd = walked->ndim;
  int64_t total = 0;
  for (int d = 0; d < nd; d++) total += walked->shape[d];
  int64_t *tabs = (int64_t *)malloc(sizeof(int64_t) * (size_t)(total + 1));
  if (!tabs) return CT_ERR(CT_ERR_OOM, "out of memory");
  int64_t k = 0;
  for (int d = 0; d < nd; d++) {
    int64_t m = walked->shape[d], n = other->shape[d], st = other->stride[d] * isz;
    w.shape[d] = m;
    w.a_st[d] = walked->stride[d] * isz;
    w.start[d] = k;
    for (int64_t o = 0; o < m; o++) {
      int64_t j = mode < 0 ? o : n > 0 ? map_index(mode, o, n, c->a.i[2 * d], c->a.i[2 * d + 1]) : -1;
      tabs[k++] = j < 0 ? NOFF : j * st;
    }
  }
  if (nd == 0) { /* a 0-dim tensor walks as [1] */
    w.shape[0] = 1;
    tabs[k++] = 0;
    nd = 1;
  }
  w.nd = nd;
  ct_tensor *t = upload_table(dev, tabs, k);
  free(tabs);
  if (!t) return ct_last_status();
  dimmap_kernel<<<cu_blocks(numel), CU_THREADS, 0, CU_STREAM(dev)>>>(w, (const int64_t *)t->storage->data, numel);
  ct_status st = ct_cuda_check_launch("dimmap");
  ct_release(t);
  return st;
}

extern "C" void ct_cuda_register_shape(ct_kernel_fn *tab) {
  tab[CT_OP_flip] = cu_dimmap;
  tab[CT_OP_roll] = cu_dimmap;
  tab[CT_OP_repeat] = cu_dimmap;
  tab[CT_OP_constant_pad_nd] = cu_dimmap;
  tab[CT_OP_reflection_pad] = cu_dimmap;
  tab[CT_OP_replication_pad] = cu_dimmap;
  tab[CT_OP_circular_pad] = cu_dimmap;
  tab[CT_OP_pad_backward] = cu_dimmap;
  tab[CT_OP_tril] = cu_dimmap;
  tab[CT_OP_triu] = cu_dimmap;
  tab[CT_OP_cat] = cu_cat;
  tab[CT_OP_repeat_interleave] = cu_repeat_interleave;
  tab[CT_OP_repeat_interleave_backward] = cu_repeat_interleave;
  tab[CT_OP_multinomial] = cu_multinomial;
}
