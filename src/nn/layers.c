/* Built-in layers: Linear, convolutions, norms, dropout, embedding, pools, Flatten,
 * Identity and the activations, with PyTorch 1.13's constructor checks, parameter names
 * and default initialisations. */
#include "module_internal.h"
#include "../autograd/autograd.h"
#include "../backend/cpu/conv_fast.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Python's repr of a float ("1.5", "2.0", "-0.1") for messages. */
static const char *pyfloat(double v, char *buf, size_t n) {
  if (isnan(v)) return "nan";
  if (isinf(v)) return v > 0 ? "inf" : "-inf";
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, n, "%.*g", p, v);
    if (strtod(buf, NULL) == v) break;
  }
  if (!strpbrk(buf, ".en")) {
    size_t l = strlen(buf);
    if (l + 2 < n) memcpy(buf + l, ".0", 3);
  }
  return buf;
}

static void destroy_free(void *p) { free(p); }

/* A built-in module whose impl (malloc'ed, may be NULL) is freed with it. */
static ct_module *builtin(const char *type, const ct_module_vtable *vt, void *impl, size_t impl_size) {
  void *copy = NULL;
  if (impl_size) {
    copy = ct_xmalloc(impl_size);
    if (!copy) return NULL;
    memcpy(copy, impl, impl_size);
  }
  ct_module *m = ct_module_new(type, vt, copy);
  if (!m) free(copy);
  return m;
}

/* Runs an init step; on failure frees the module and returns NULL. */
#define INIT_OR_FAIL(m, expr)    \
  do {                           \
    if ((expr) != CT_OK) {       \
      ct_module_free(m);         \
      return NULL;               \
    }                            \
  } while (0)

/* ======================================================================= Linear */
typedef struct {
  int64_t in, out;
  bool bias;
} linear_cfg;

static ct_tensor *linear_forward(ct_module *m, const ct_tensor *x) {
  const linear_cfg *c = m->user;
  return ct_linear(x, ct_mod_p(m, 0), c->bias ? ct_mod_p(m, 1) : NULL);
}
static const ct_module_vtable linear_vt = {linear_forward, NULL, destroy_free, NULL};

bool ct_module_is_linear(const ct_module *m) { return m && m->vt == &linear_vt; }

ct_module *ct_linear_new(int64_t in_features, int64_t out_features, bool bias) {
  linear_cfg c = {in_features, out_features, bias};
  ct_module *m = builtin("Linear", &linear_vt, &c, sizeof c);
  if (!m) return NULL;
  int64_t ws[2] = {out_features, in_features};
  ct_tensor *w = ct_mod_new_param(m, "weight", 2, ws);
  ct_tensor *b = NULL;
  if (!w || (bias && !(b = ct_mod_new_param(m, "bias", 1, &out_features)))) {
    ct_module_free(m);
    return NULL;
  }
  INIT_OR_FAIL(m, ct_init_kaiming_uniform_a(w, sqrt(5.0)));
  if (b) INIT_OR_FAIL(m, ct_init_fan_in_uniform(b, w));
  return m;
}

/* ======================================================================= convolutions */
static const char *const mode_names[4] = {"zeros", "reflect", "replicate", "circular"};

ct_conv_opts ct_conv_defaults(void) {
  ct_conv_opts o;
  memset(&o, 0, sizeof o);
  o.stride[0] = o.stride[1] = 1;
  o.dilation[0] = o.dilation[1] = 1;
  o.groups = 1;
  o.bias = true;
  return o;
}

ct_tensor *ct_conv_apply(const ct_conv_cfg *c, const ct_tensor *x, const ct_tensor *w, const ct_tensor *b) {
  if (c->transposed)
    return ct_conv_transpose2d(x, w, b, c->stride, c->padding, c->output_padding, c->groups, c->dilation);
  if (c->mode != 0) {
    /* non-zero padding modes: F.pad first, then a convolution without padding (as PyTorch) */
    ct_tensor *xp = ct_pad(x, 2 * c->nd, c->rpad, mode_names[c->mode], 0.0);
    if (!xp) return NULL;
    int64_t zero[2] = {0, 0};
    ct_tensor *y = c->nd == 1 ? ct_conv1d(xp, w, b, c->stride[0], 0, c->dilation[0], c->groups)
                              : ct_conv2d(xp, w, b, c->stride, zero, c->dilation, c->groups);
    ct_release(xp);
    return y;
  }
  if (c->pad_str) {
    const char *p = c->pad_str == 1 ? "same" : "valid";
    return c->nd == 1 ? ct_conv1d_mode(x, w, b, c->stride[0], p, c->dilation[0], c->groups)
                      : ct_conv2d_mode(x, w, b, c->stride, p, c->dilation, c->groups);
  }
  return c->nd == 1 ? ct_conv1d(x, w, b, c->stride[0], c->padding[0], c->dilation[0], c->groups)
                    : ct_conv2d(x, w, b, c->stride, c->padding, c->dilation, c->groups);
}

typedef struct {
  ct_conv_cfg c;
  bool bias;
  ct_conv_wcache *wc; /* eval mode: the CPU forward's packed weight (backend/cpu/conv_fast.h) */
  int wc_busy;        /* a thread has lent wc out (another thread calling meanwhile runs uncached) */
} conv_impl;

static ct_tensor *conv_forward(ct_module *m, const ct_tensor *x) {
  conv_impl *ci = m->user;
  /* in eval the weight does not change between calls: lend the CPU kernel the cache slot */
  bool lend = !m->training && !ci->c.transposed && !__atomic_exchange_n(&ci->wc_busy, 1, __ATOMIC_ACQUIRE);
  ct_conv_wcache **prev = lend ? ct_conv_wcache_use(&ci->wc) : NULL;
  ct_tensor *y = ct_conv_apply(&ci->c, x, ct_mod_p(m, 0), ci->bias ? ct_mod_p(m, 1) : NULL);
  if (lend) {
    ct_conv_wcache_use(prev);
    __atomic_store_n(&ci->wc_busy, 0, __ATOMIC_RELEASE);
  }
  return y;
}
static void conv_destroy(void *p) {
  conv_impl *ci = p;
  if (ci) ct_conv_wcache_free(ci->wc);
  free(p);
}
static const ct_module_vtable conv_vt = {conv_forward, NULL, conv_destroy, NULL};

const ct_conv_cfg *ct_conv_cfg_of(const ct_module *m) {
  return m && m->vt == &conv_vt ? &((const conv_impl *)m->user)->c : NULL;
}

static ct_module *conv_new(const char *type, int nd, bool transposed, int64_t in, int64_t out, const int64_t *k,
                           const ct_conv_opts *o) {
  ct_conv_opts d = ct_conv_defaults();
  if (!o) o = &d;
  conv_impl ci;
  memset(&ci, 0, sizeof ci);
  ct_conv_cfg *c = &ci.c;
  c->nd = nd;
  c->transposed = transposed;
  c->in_ch = in;
  c->out_ch = out;
  c->groups = o->groups;
  for (int i = 0; i < nd; i++) {
    c->k[i] = k[i];
    c->stride[i] = o->stride[i];
    c->padding[i] = o->padding[i];
    c->dilation[i] = o->dilation[i];
    c->output_padding[i] = o->output_padding[i];
  }
  if (o->groups <= 0) {
    ct_set_error(CT_ERR_VALUE, "groups must be a positive integer");
    return NULL;
  }
  if (in % o->groups != 0) {
    ct_set_error(CT_ERR_VALUE, "in_channels must be divisible by groups");
    return NULL;
  }
  if (out % o->groups != 0) {
    ct_set_error(CT_ERR_VALUE, "out_channels must be divisible by groups");
    return NULL;
  }
  if (o->padding_str) {
    if (!strcmp(o->padding_str, "same")) c->pad_str = 1;
    else if (!strcmp(o->padding_str, "valid")) c->pad_str = 2;
    else {
      ct_set_error(CT_ERR_VALUE, "Invalid padding string '%s', should be one of {'same', 'valid'}", o->padding_str);
      return NULL;
    }
    if (transposed) {
      ct_set_error(CT_ERR_VALUE, "%s does not support padding='%s' (only int or tuple padding)", type, o->padding_str);
      return NULL;
    }
    if (c->pad_str == 1)
      for (int i = 0; i < nd; i++)
        if (c->stride[i] != 1) {
          ct_set_error(CT_ERR_VALUE, "padding='same' is not supported for strided convolutions");
          return NULL;
        }
  }
  const char *pm = o->padding_mode ? o->padding_mode : "zeros";
  c->mode = -1;
  for (int i = 0; i < 4; i++)
    if (!strcmp(pm, mode_names[i])) c->mode = i;
  if (c->mode < 0) {
    ct_set_error(CT_ERR_VALUE,
                 "padding_mode must be one of {'replicate', 'reflect', 'circular', 'zeros'}, but got padding_mode='%s'",
                 pm);
    return NULL;
  }
  if (transposed && c->mode != 0) {
    ct_set_error(CT_ERR_VALUE, "Only \"zeros\" padding mode is supported for %s", type);
    return NULL;
  }
  /* _reversed_padding_repeated_twice: (left, right) pairs from the last spatial dim */
  for (int i = 0; i < nd; i++) {
    int64_t l = c->padding[i], r = c->padding[i];
    if (c->pad_str == 1) {
      int64_t total = c->dilation[i] * (c->k[i] - 1);
      l = total / 2;
      r = total - l;
    } else if (c->pad_str == 2) l = r = 0;
    int j = nd - 1 - i;
    c->rpad[2 * j] = l;
    c->rpad[2 * j + 1] = r;
  }
  ci.bias = o->bias;
  ct_module *m = builtin(type, &conv_vt, &ci, sizeof ci);
  if (!m) return NULL;
  int64_t ws[4] = {transposed ? in : out, (transposed ? out : in) / o->groups, k[0], nd > 1 ? k[1] : 0};
  ct_tensor *w = ct_mod_new_param(m, "weight", 2 + nd, ws);
  ct_tensor *b = NULL;
  if (!w || (o->bias && !(b = ct_mod_new_param(m, "bias", 1, &out)))) {
    ct_module_free(m);
    return NULL;
  }
  INIT_OR_FAIL(m, ct_init_kaiming_uniform_a(w, sqrt(5.0)));
  if (b) INIT_OR_FAIL(m, ct_init_fan_in_uniform(b, w));
  return m;
}

ct_module *ct_conv1d_new(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const ct_conv_opts *o) {
  return conv_new("Conv1d", 1, false, in_channels, out_channels, &kernel_size, o);
}
ct_module *ct_conv2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw, const ct_conv_opts *o) {
  int64_t k[2] = {kh, kw};
  return conv_new("Conv2d", 2, false, in_channels, out_channels, k, o);
}
ct_module *ct_conv_transpose2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                                   const ct_conv_opts *o) {
  int64_t k[2] = {kh, kw};
  return conv_new("ConvTranspose2d", 2, true, in_channels, out_channels, k, o);
}

/* ======================================================================= BatchNorm */
typedef struct {
  int64_t num_features;
  double eps, momentum; /* momentum < 0: None */
  bool affine, track;
  int kind; /* 1: BatchNorm1d, 2: BatchNorm2d */
} bn_cfg;

#ifdef CT_HAVE_CUDA
/* src/backend/cuda/k_bn.cu: num_batches_tracked += inc as a kernel argument (no scalar upload) */
int ct_cuda_bn_count_defer(ct_tensor *count, int64_t inc);
ct_status ct_cuda_bn_count_finish(ct_tensor *count);
/* k_bn.cu: the running statistics updated inside the channels-last forward's finish kernel */
int ct_cuda_bn_running_defer(ct_tensor *rm, ct_tensor *rv, double momentum);
#endif
/* src/backend/webgpu/webgpu_kernels.c: num_batches_tracked += inc inside the running statistics'
 * update (1 pending; finish: 1 done there, 0 not, then the caller adds) */
int ct_webgpu_bn_count_defer(ct_tensor *count, int64_t inc);
int ct_webgpu_bn_count_finish(ct_tensor *count);
/* relu(batch_norm(x)) as one op on the CPU (src/ops/nn.c) */
ct_tensor *ct_batch_norm_relu(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                              const ct_tensor *weight, const ct_tensor *bias, bool training, double momentum, double eps);

/* res (with relu): relu(bn(x) + res) through ct_batch_norm_add_relu */
static ct_tensor *bn_forward_impl(ct_module *m, const ct_tensor *x, bool relu, const ct_tensor *res) {
  const bn_cfg *c = m->user;
  if (ct_check_tensor(x, "BatchNorm")) return NULL;
  int nd = ct_ndim(x);
  if (c->kind == 1 && nd != 2 && nd != 3) {
    ct_set_error(CT_ERR_VALUE, "expected 2D or 3D input (got %dD input)", nd);
    return NULL;
  }
  if (c->kind == 2 && nd != 4) {
    ct_set_error(CT_ERR_VALUE, "expected 4D input (got %dD input)", nd);
    return NULL;
  }
  ct_tensor *w = c->affine ? ct_mod_p(m, 0) : NULL, *b = c->affine ? ct_mod_p(m, 1) : NULL;
  ct_tensor *rm = c->track ? ct_mod_b(m, 0) : NULL, *rv = c->track ? ct_mod_b(m, 1) : NULL;
  ct_tensor *nbt = c->track ? ct_mod_b(m, 2) : NULL;
  double factor = c->momentum < 0 ? 0.0 : c->momentum;
  bool deferred = false;
#ifdef CT_HAVE_CUDA
  /* CUDA: the increment rides on the batch norm's running-statistics kernel (graph replays advance
   * it); momentum None reads the count on the host first, so it keeps the add below */
  if (m->training && c->track && nbt && c->momentum >= 0) deferred = ct_cuda_bn_count_defer(nbt, 1) == 1;
#endif
  /* WebGPU: the increment rides on the running statistics' dispatch (webgpu_kernels.c); if that did
   * not run, the add below happens after the batch norm instead (nothing reads the count between) */
  bool wg_deferred = !deferred && m->training && c->track && nbt && c->momentum >= 0 &&
                     ct_webgpu_bn_count_defer(nbt, 1) == 1;
  if (m->training && c->track && nbt && !deferred && !wg_deferred) {
    bool prev = ct_set_grad_enabled(false);
    ct_status st = ct_add_scalar_(nbt, ct_si(1));
    ct_set_grad_enabled(prev);
    if (st) return NULL;
    if (c->momentum < 0) {
      double n;
      if (ct_item_double(nbt, &n)) return NULL;
      factor = 1.0 / n;
    }
  }
  bool bn_training = m->training || (!rm && !rv);
  bool use_stats = !m->training || c->track;
#ifdef CT_HAVE_CUDA
  /* training on CUDA: the running statistics may be updated by the batch norm's own kernel (k_bn.cu
   * decides; otherwise nothing changes), the registration is dropped right after the call */
  bool fold = m->training && use_stats && (rm || rv) && x->storage->device.type == CT_DEVICE_CUDA &&
              ct_cuda_bn_running_defer(rm, rv, factor) == 1;
#endif
  ct_tensor *y = res ? ct_batch_norm_add_relu(x, res, use_stats ? rm : NULL, use_stats ? rv : NULL, w, b, bn_training,
                                             factor, c->eps)
                    : (relu ? ct_batch_norm_relu : ct_batch_norm)(x, use_stats ? rm : NULL, use_stats ? rv : NULL, w, b,
                                                                 bn_training, factor, c->eps);
#ifdef CT_HAVE_CUDA
  if (fold) ct_cuda_bn_running_defer(NULL, NULL, 0);
  /* also after a failed batch norm: the eager add above happens before it too */
  if (deferred && ct_cuda_bn_count_finish(nbt) != CT_OK) {
    ct_release(y);
    return NULL;
  }
#endif
  if (wg_deferred && !ct_webgpu_bn_count_finish(nbt)) {
    bool prev = ct_set_grad_enabled(false);
    ct_status st = ct_add_scalar_(nbt, ct_si(1));
    ct_set_grad_enabled(prev);
    if (st) {
      ct_release(y);
      return NULL;
    }
  }
  return y;
}

static ct_tensor *bn_forward(ct_module *m, const ct_tensor *x) { return bn_forward_impl(m, x, false, NULL); }

static bool bn_optional(const ct_module *m, const char *name) { return !strcmp(name, "num_batches_tracked"); }
static const ct_mod_hooks bn_hooks = {NULL, bn_optional};
static const ct_module_vtable bn_vt = {bn_forward, NULL, destroy_free, NULL};

/* relu(m(x)) for a BatchNorm module m (the models' bn -> relu pairs): one fused pass on the CPU,
 * the same values, gradients and module state as the module then ct_relu; any other module: that. */
ct_tensor *ct_module_forward_bn_relu(ct_module *m, const ct_tensor *x) {
  if (m && m->vt == &bn_vt) return bn_forward_impl(m, x, true, NULL);
  ct_tensor *y = ct_module_forward(m, x);
  ct_tensor *r = y ? ct_relu(y) : NULL;
  ct_release(y);
  return r;
}

/* relu(m(x) + residual) for a BatchNorm module m (ResNet's block tails): one fused op on the CPU and CUDA
 * (ct_batch_norm_add_relu), the same values, gradients and module state as the module, ct_add and ct_relu;
 * any other module: those. */
ct_tensor *ct_module_forward_bn_add_relu(ct_module *m, const ct_tensor *x, const ct_tensor *residual) {
  if (ct_check_tensor(residual, "BatchNorm add relu")) return NULL;
  if (m && m->vt == &bn_vt) return bn_forward_impl(m, x, true, residual);
  ct_tensor *y = ct_module_forward(m, x);
  ct_tensor *a = y ? ct_add(y, residual) : NULL;
  ct_release(y);
  ct_tensor *r = a ? ct_relu(a) : NULL;
  ct_release(a);
  return r;
}

/* CPU float32 contiguous (or NULL) */
static bool f32_cpu(const ct_tensor *t) {
  return !t || (t->dtype == CT_FLOAT32 && t->storage->device.type == CT_DEVICE_CPU && ct_is_contiguous(t));
}

/* bn(h) (-> + residual) (-> relu) by the modules and ops; takes h */
static ct_tensor *bn_add_relu_then(ct_module *bn, ct_tensor *h, const ct_tensor *residual, bool relu) {
  if (!h) return NULL;
  ct_tensor *t = relu && !residual ? ct_module_forward_bn_relu(bn, h) : ct_module_forward(bn, h);
  ct_release(h);
  if (t && residual) {
    ct_tensor *a = ct_add(t, residual);
    ct_release(t);
    t = a && relu ? ct_relu(a) : a;
    if (relu) ct_release(a);
  }
  return t;
}

/* relu?(bn(conv(x)) + residual) for a Conv2d conv and a BatchNorm2d bn (the models' conv -> bn
 * (-> add) (-> relu) chains): the modules and ops one after the other. With grad off, both modules
 * in eval (running statistics), a plain zero-padded one-group conv without bias and float32 CPU
 * contiguous operands (residual: NULL or the output's shape), the batch norm, the add and the relu
 * run inside the convolution's output pass instead (its kernel's eval epilogue, conv_fast.h: the
 * same float operations in the same order, so the same bits), saving three passes over the output
 * and two tensors; when the kernel does not take the epilogue (another path), they run as ops. */
ct_tensor *ct_module_forward_conv_bn(ct_module *conv, ct_module *bn, const ct_tensor *x, const ct_tensor *residual,
                                     bool relu) {
  const conv_impl *ci = conv && conv->vt == &conv_vt ? conv->user : NULL;
  const bn_cfg *bc = bn && bn->vt == &bn_vt ? bn->user : NULL;
  ct_tensor *cw = ci ? ct_mod_p(conv, 0) : NULL;
  ct_tensor *rm = bc && bc->track ? ct_mod_b(bn, 0) : NULL, *rv = bc && bc->track ? ct_mod_b(bn, 1) : NULL;
  ct_tensor *w = bc && bc->affine ? ct_mod_p(bn, 0) : NULL, *b = bc && bc->affine ? ct_mod_p(bn, 1) : NULL;
  static int env = -1; /* CT_CONV_EVAL_FUSE=0: never fuse (A/B runs) */
  bool fuse = ct_env_switch("CT_CONV_EVAL_FUSE", &env) && ci && bc && cw && x && !conv->training && !bn->training && !ct_is_grad_enabled() && bc->kind == 2 &&
              rm && rv && !ci->bias && !ci->c.transposed && ci->c.mode == 0 && ci->c.pad_str == 0 && ci->c.nd == 2 &&
              ci->c.groups == 1 && x->ndim == 4 && ci->c.out_ch == bc->num_features && f32_cpu(x) && f32_cpu(cw) &&
              f32_cpu(rm) && f32_cpu(rv) && f32_cpu(w) && f32_cpu(b) && f32_cpu(residual);
  if (fuse && residual) { /* the epilogue reads the residual as the output: its shape must be the output's */
    int64_t want[4] = {x->shape[0], ci->c.out_ch, 0, 0};
    for (int i = 0; i < 2; i++) {
      int64_t span = x->shape[2 + i] + 2 * ci->c.padding[i] - ci->c.dilation[i] * (ci->c.k[i] - 1) - 1;
      want[2 + i] = span < 0 ? -1 : span / ci->c.stride[i] + 1;
    }
    fuse = residual->ndim == 4 && !memcmp(residual->shape, want, sizeof want);
  }
  if (!fuse) return bn_add_relu_then(bn, ct_module_forward(conv, x), residual, relu);
  int64_t O = bc->num_features;
  float *par = malloc(sizeof(float) * (size_t)(3 * (O > 0 ? O : 1)));
  if (!par) return ct_set_error(CT_ERR_OOM, "CPU out of memory"), NULL;
  const float *pm = (const float *)ct_host_ptr(rm), *pv = (const float *)ct_host_ptr(rv);
  const float *pw = w ? (const float *)ct_host_ptr(w) : NULL, *pb = b ? (const float *)ct_host_ptr(b) : NULL;
  for (int64_t c = 0; c < O; c++) { /* the batch norm kernel's per-channel constants (kernels_bn.c) */
    double rstd = 1.0 / sqrt((double)pv[c] + bc->eps);
    par[c] = pm[c];
    par[O + c] = (float)(rstd * (pw ? (double)pw[c] : 1.0));
    par[2 * O + c] = pb ? pb[c] : 0.0f;
  }
  ct_conv_epilogue ep = {O, par, par + O, par + 2 * O, residual ? (const float *)ct_host_ptr(residual) : NULL, relu, false};
  ct_conv_epilogue_use(&ep);
  ct_tensor *y = ct_module_forward(conv, x);
  ct_conv_epilogue_use(NULL);
  free(par);
  if (!y || ep.applied) return y;
  return bn_add_relu_then(bn, y, residual, relu); /* the kernel took another path */
}

static ct_module *bn_new(const char *type, int kind, int64_t nf, double eps, double momentum, bool affine, bool track) {
  if (isnan(momentum)) momentum = -1.0;
  bn_cfg c = {nf, eps, momentum, affine, track, kind};
  ct_module *m = builtin(type, &bn_vt, &c, sizeof c);
  if (!m) return NULL;
  m->hooks = &bn_hooks;
  if (affine) {
    ct_tensor *w = ct_mod_new_param(m, "weight", 1, &nf);
    ct_tensor *b = w ? ct_mod_new_param(m, "bias", 1, &nf) : NULL;
    if (!b) {
      ct_module_free(m);
      return NULL;
    }
    bool prev = ct_set_grad_enabled(false);
    ct_status st = ct_fill_(w, ct_sf(1.0));
    if (!st) st = ct_zero_(b);
    ct_set_grad_enabled(prev);
    INIT_OR_FAIL(m, st);
  }
  if (track) {
    ct_options o64 = ct_opts_dtype(CT_INT64);
    INIT_OR_FAIL(m, ct_mod_add_buffer_owned(m, "running_mean", ct_zeros(1, &nf, ct_opts()), true));
    INIT_OR_FAIL(m, ct_mod_add_buffer_owned(m, "running_var", ct_ones(1, &nf, ct_opts()), true));
    INIT_OR_FAIL(m, ct_mod_add_buffer_owned(m, "num_batches_tracked", ct_scalar_tensor(ct_si(0), o64), true));
  }
  return m;
}

ct_module *ct_batch_norm1d_new(int64_t num_features, double eps, double momentum, bool affine,
                               bool track_running_stats) {
  return bn_new("BatchNorm1d", 1, num_features, eps, momentum, affine, track_running_stats);
}
ct_module *ct_batch_norm2d_new(int64_t num_features, double eps, double momentum, bool affine,
                               bool track_running_stats) {
  return bn_new("BatchNorm2d", 2, num_features, eps, momentum, affine, track_running_stats);
}

/* ======================================================================= LayerNorm, RMSNorm */
typedef struct {
  int n;
  int64_t shape[CT_MAX_DIMS];
  double eps;
  bool affine;
} ln_cfg;

static ct_tensor *ln_forward(ct_module *m, const ct_tensor *x) {
  const ln_cfg *c = m->user;
  return ct_layer_norm(x, c->n, c->shape, c->affine ? ct_mod_p(m, 0) : NULL, c->affine ? ct_mod_p(m, 1) : NULL,
                       c->eps);
}
static ct_tensor *rms_forward(ct_module *m, const ct_tensor *x) {
  const ln_cfg *c = m->user;
  return ct_rms_norm(x, c->n, c->shape, c->affine ? ct_mod_p(m, 0) : NULL, c->eps);
}
static const ct_module_vtable ln_vt = {ln_forward, NULL, destroy_free, NULL};
static const ct_module_vtable rms_vt = {rms_forward, NULL, destroy_free, NULL};

static ct_module *norm_shape_new(const char *type, const ct_module_vtable *vt, int n, const int64_t *shape, double eps,
                                 bool affine, bool with_bias) {
  if (n < 0 || n > CT_MAX_DIMS || (n > 0 && !shape)) {
    ct_set_error(CT_ERR_VALUE, "%s: normalized_shape must have between 0 and %d entries", type, CT_MAX_DIMS);
    return NULL;
  }
  ln_cfg c;
  memset(&c, 0, sizeof c);
  c.n = n;
  for (int i = 0; i < n; i++) c.shape[i] = shape[i];
  c.eps = eps;
  c.affine = affine;
  ct_module *m = builtin(type, vt, &c, sizeof c);
  if (!m) return NULL;
  if (affine) {
    ct_tensor *w = ct_mod_new_param(m, "weight", n, c.shape);
    ct_tensor *b = (w && with_bias) ? ct_mod_new_param(m, "bias", n, c.shape) : NULL;
    if (!w || (with_bias && !b)) {
      ct_module_free(m);
      return NULL;
    }
    bool prev = ct_set_grad_enabled(false);
    ct_status st = ct_fill_(w, ct_sf(1.0));
    if (!st && b) st = ct_zero_(b);
    ct_set_grad_enabled(prev);
    INIT_OR_FAIL(m, st);
  }
  return m;
}

ct_module *ct_layer_norm_new(int n, const int64_t *normalized_shape, double eps, bool elementwise_affine) {
  return norm_shape_new("LayerNorm", &ln_vt, n, normalized_shape, eps, elementwise_affine, true);
}
ct_module *ct_rms_norm_new(int n, const int64_t *normalized_shape, double eps, bool elementwise_affine) {
  return norm_shape_new("RMSNorm", &rms_vt, n, normalized_shape, eps < 0 || isnan(eps) ? -1.0 : eps,
                        elementwise_affine, false);
}

/* ======================================================================= GroupNorm */
typedef struct {
  int64_t groups, channels;
  double eps;
  bool affine;
} gn_cfg;

static ct_tensor *gn_forward(ct_module *m, const ct_tensor *x) {
  const gn_cfg *c = m->user;
  return ct_group_norm(x, c->groups, c->affine ? ct_mod_p(m, 0) : NULL, c->affine ? ct_mod_p(m, 1) : NULL, c->eps);
}
static const ct_module_vtable gn_vt = {gn_forward, NULL, destroy_free, NULL};

ct_module *ct_group_norm_new(int64_t num_groups, int64_t num_channels, double eps, bool affine) {
  if (num_groups == 0) {
    ct_set_error(CT_ERR_VALUE, "integer division or modulo by zero");
    return NULL;
  }
  if (num_channels % num_groups != 0) {
    ct_set_error(CT_ERR_VALUE, "num_channels must be divisible by num_groups");
    return NULL;
  }
  gn_cfg c = {num_groups, num_channels, eps, affine};
  ct_module *m = builtin("GroupNorm", &gn_vt, &c, sizeof c);
  if (!m) return NULL;
  if (affine) {
    ct_tensor *w = ct_mod_new_param(m, "weight", 1, &num_channels);
    ct_tensor *b = w ? ct_mod_new_param(m, "bias", 1, &num_channels) : NULL;
    if (!b) {
      ct_module_free(m);
      return NULL;
    }
    bool prev = ct_set_grad_enabled(false);
    ct_status st = ct_fill_(w, ct_sf(1.0));
    if (!st) st = ct_zero_(b);
    ct_set_grad_enabled(prev);
    INIT_OR_FAIL(m, st);
  }
  return m;
}

/* ======================================================================= Dropout */
typedef struct {
  double p;
} dropout_cfg;

static ct_tensor *dropout_forward(ct_module *m, const ct_tensor *x) {
  const dropout_cfg *c = m->user;
  return ct_dropout(x, c->p, m->training, NULL);
}
static const ct_module_vtable dropout_vt = {dropout_forward, NULL, destroy_free, NULL};

ct_module *ct_dropout_new(double p) {
  if (!(p >= 0 && p <= 1)) {
    char b[40];
    ct_set_error(CT_ERR_VALUE, "dropout probability has to be between 0 and 1, but got %s", pyfloat(p, b, sizeof b));
    return NULL;
  }
  dropout_cfg c = {p};
  return builtin("Dropout", &dropout_vt, &c, sizeof c);
}

/* ======================================================================= Embedding */
typedef struct {
  int64_t num, dim, pad;
  bool has_pad;
} emb_cfg;

static ct_tensor *emb_forward(ct_module *m, const ct_tensor *x) {
  const emb_cfg *c = m->user;
  return ct_embedding(x, ct_mod_p(m, 0), c->has_pad ? &c->pad : NULL);
}
static const ct_module_vtable emb_vt = {emb_forward, NULL, destroy_free, NULL};

ct_module *ct_embedding_new(int64_t num_embeddings, int64_t embedding_dim, const int64_t *padding_idx) {
  emb_cfg c = {num_embeddings, embedding_dim, 0, padding_idx != NULL};
  if (padding_idx) {
    int64_t p = *padding_idx;
    if ((p > 0 && p >= num_embeddings) || (p < 0 && p < -num_embeddings)) {
      ct_set_error(CT_ERR_VALUE, "Padding_idx must be within num_embeddings");
      return NULL;
    }
    c.pad = p < 0 ? num_embeddings + p : p;
  }
  ct_module *m = builtin("Embedding", &emb_vt, &c, sizeof c);
  if (!m) return NULL;
  int64_t ws[2] = {num_embeddings, embedding_dim};
  ct_tensor *w = ct_mod_new_param(m, "weight", 2, ws);
  if (!w) {
    ct_module_free(m);
    return NULL;
  }
  bool prev = ct_set_grad_enabled(false);
  ct_status st = ct_normal_(w, 0.0, 1.0, NULL);
  if (!st && c.has_pad && num_embeddings > 0) {
    ct_tensor *row = ct_select(w, 0, c.pad);
    st = row ? ct_zero_(row) : ct_last_status();
    ct_release(row);
  }
  ct_set_grad_enabled(prev);
  INIT_OR_FAIL(m, st);
  return m;
}

/* ======================================================================= pools, Flatten, Identity */
typedef struct {
  int64_t k[2], stride[2], padding[2], dilation[2], divisor;
  bool ceil_mode, count_include_pad;
} pool_cfg;

static ct_tensor *maxpool_forward(ct_module *m, const ct_tensor *x) {
  const pool_cfg *c = m->user;
  return ct_max_pool2d(x, c->k, c->stride, c->padding, c->dilation, c->ceil_mode, NULL);
}
static ct_tensor *avgpool_forward(ct_module *m, const ct_tensor *x) {
  const pool_cfg *c = m->user;
  return ct_avg_pool2d(x, c->k, c->stride, c->padding, c->ceil_mode, c->count_include_pad, c->divisor);
}
static ct_tensor *adaptive_forward(ct_module *m, const ct_tensor *x) {
  const pool_cfg *c = m->user;
  return ct_adaptive_avg_pool2d(x, c->k);
}
static const ct_module_vtable maxpool_vt = {maxpool_forward, NULL, destroy_free, NULL};
static const ct_module_vtable avgpool_vt = {avgpool_forward, NULL, destroy_free, NULL};
static const ct_module_vtable adaptive_vt = {adaptive_forward, NULL, destroy_free, NULL};

static bool pool_common(pool_cfg *c, const int64_t *kernel_size, const int64_t *stride, const int64_t *padding) {
  memset(c, 0, sizeof *c);
  if (!kernel_size) {
    ct_set_error(CT_ERR_TYPE, "__init__() missing 1 required positional argument: 'kernel_size'");
    return false;
  }
  for (int i = 0; i < 2; i++) {
    c->k[i] = kernel_size[i];
    c->stride[i] = stride ? stride[i] : kernel_size[i];
    c->padding[i] = padding ? padding[i] : 0;
    c->dilation[i] = 1;
  }
  return true;
}

ct_module *ct_max_pool2d_new(const int64_t *kernel_size, const int64_t *stride, const int64_t *padding,
                             const int64_t *dilation, bool ceil_mode) {
  pool_cfg c;
  if (!pool_common(&c, kernel_size, stride, padding)) return NULL;
  if (dilation) c.dilation[0] = dilation[0], c.dilation[1] = dilation[1];
  c.ceil_mode = ceil_mode;
  return builtin("MaxPool2d", &maxpool_vt, &c, sizeof c);
}

ct_module *ct_avg_pool2d_new(const int64_t *kernel_size, const int64_t *stride, const int64_t *padding, bool ceil_mode,
                             bool count_include_pad, int64_t divisor_override) {
  pool_cfg c;
  if (!pool_common(&c, kernel_size, stride, padding)) return NULL;
  c.ceil_mode = ceil_mode;
  c.count_include_pad = count_include_pad;
  c.divisor = divisor_override;
  return builtin("AvgPool2d", &avgpool_vt, &c, sizeof c);
}

ct_module *ct_adaptive_avg_pool2d_new(const int64_t *output_size) {
  pool_cfg c;
  memset(&c, 0, sizeof c);
  if (!output_size) {
    ct_set_error(CT_ERR_TYPE, "__init__() missing 1 required positional argument: 'output_size'");
    return NULL;
  }
  c.k[0] = output_size[0];
  c.k[1] = output_size[1];
  return builtin("AdaptiveAvgPool2d", &adaptive_vt, &c, sizeof c);
}

typedef struct {
  int64_t start, end;
} flatten_cfg;
static ct_tensor *flatten_forward(ct_module *m, const ct_tensor *x) {
  const flatten_cfg *c = m->user;
  return ct_flatten(x, c->start, c->end);
}
static const ct_module_vtable flatten_vt = {flatten_forward, NULL, destroy_free, NULL};
ct_module *ct_flatten_new(int64_t start_dim, int64_t end_dim) {
  flatten_cfg c = {start_dim, end_dim};
  return builtin("Flatten", &flatten_vt, &c, sizeof c);
}

static ct_tensor *identity_forward(ct_module *m, const ct_tensor *x) {
  if (ct_check_tensor(x, "Identity")) return NULL;
  return ct_same(x); /* PyTorch returns the input itself */
}
static const ct_module_vtable identity_vt = {identity_forward, NULL, NULL, NULL};
ct_module *ct_identity_new(void) { return builtin("Identity", &identity_vt, NULL, 0); }

/* ======================================================================= activations */
typedef struct {
  int kind;
  double a, b;
  int64_t dim;
  char approx[8];
} act_cfg;

enum { A_RELU, A_RELU6, A_GELU, A_SILU, A_MISH, A_TANH, A_SIGMOID, A_HARDSWISH, A_HARDSIGMOID, A_SELU, A_LEAKY,
       A_ELU, A_CELU, A_HARDTANH, A_SOFTPLUS, A_SOFTMAX, A_LOG_SOFTMAX };

static ct_tensor *act_forward(ct_module *m, const ct_tensor *x) {
  const act_cfg *c = m->user;
  switch (c->kind) {
  case A_RELU: return ct_relu(x);
  case A_RELU6: return ct_relu6(x);
  case A_GELU: return ct_gelu(x, c->approx);
  case A_SILU: return ct_silu(x);
  case A_MISH: return ct_mish(x);
  case A_TANH: return ct_tanh(x);
  case A_SIGMOID: return ct_sigmoid(x);
  case A_HARDSWISH: return ct_hardswish(x);
  case A_HARDSIGMOID: return ct_hardsigmoid(x);
  case A_SELU: return ct_selu(x);
  case A_LEAKY: return ct_leaky_relu(x, c->a);
  case A_ELU: return ct_elu(x, c->a);
  case A_CELU: return ct_celu(x, c->a);
  case A_HARDTANH: return ct_hardtanh(x, c->a, c->b);
  case A_SOFTPLUS: return ct_softplus(x, c->a, c->b);
  case A_SOFTMAX: return ct_softmax(x, c->dim, -1);
  case A_LOG_SOFTMAX: return ct_log_softmax(x, c->dim, -1);
  }
  ct_set_error(CT_ERR_RUNTIME, "unknown activation");
  return NULL;
}
static const ct_module_vtable act_vt = {act_forward, NULL, destroy_free, NULL};

static ct_module *act_new(const char *type, int kind, double a, double b, int64_t dim) {
  act_cfg c;
  memset(&c, 0, sizeof c);
  c.kind = kind;
  c.a = a;
  c.b = b;
  c.dim = dim;
  memcpy(c.approx, "none", 5);
  return builtin(type, &act_vt, &c, sizeof c);
}

ct_module *ct_relu_new(void) { return act_new("ReLU", A_RELU, 0, 0, 0); }
ct_module *ct_relu6_new(void) { return act_new("ReLU6", A_RELU6, 0, 0, 0); }
ct_module *ct_gelu_new(const char *approximate) {
  const char *ap = approximate ? approximate : "none";
  if (strcmp(ap, "none") && strcmp(ap, "tanh")) {
    ct_set_error(CT_ERR_RUNTIME, "approximate argument must be either none or tanh.");
    return NULL;
  }
  ct_module *m = act_new("GELU", A_GELU, 0, 0, 0);
  if (m) snprintf(((act_cfg *)m->user)->approx, sizeof ((act_cfg *)m->user)->approx, "%s", ap);
  return m;
}
ct_module *ct_silu_new(void) { return act_new("SiLU", A_SILU, 0, 0, 0); }
ct_module *ct_mish_new(void) { return act_new("Mish", A_MISH, 0, 0, 0); }
ct_module *ct_tanh_new(void) { return act_new("Tanh", A_TANH, 0, 0, 0); }
ct_module *ct_sigmoid_new(void) { return act_new("Sigmoid", A_SIGMOID, 0, 0, 0); }
ct_module *ct_hardswish_new(void) { return act_new("Hardswish", A_HARDSWISH, 0, 0, 0); }
ct_module *ct_hardsigmoid_new(void) { return act_new("Hardsigmoid", A_HARDSIGMOID, 0, 0, 0); }
ct_module *ct_selu_new(void) { return act_new("SELU", A_SELU, 0, 0, 0); }
ct_module *ct_leaky_relu_new(double negative_slope) { return act_new("LeakyReLU", A_LEAKY, negative_slope, 0, 0); }
ct_module *ct_elu_new(double alpha) { return act_new("ELU", A_ELU, alpha, 0, 0); }
ct_module *ct_celu_new(double alpha) { return act_new("CELU", A_CELU, alpha, 0, 0); }
ct_module *ct_hardtanh_new(double min_val, double max_val) {
  if (!(max_val > min_val)) {
    ct_set_error(CT_ERR_VALUE, "Hardtanh: max_val must be greater than min_val");
    return NULL;
  }
  return act_new("Hardtanh", A_HARDTANH, min_val, max_val, 0);
}
ct_module *ct_softplus_new(double beta, double threshold) {
  return act_new("Softplus", A_SOFTPLUS, beta, threshold, 0);
}
ct_module *ct_softmax_new(int64_t dim) { return act_new("Softmax", A_SOFTMAX, 0, 0, dim); }
ct_module *ct_log_softmax_new(int64_t dim) { return act_new("LogSoftmax", A_LOG_SOFTMAX, 0, 0, dim); }
