/* ResNet inference on CUDA with batch norm folded into the convolutions and bias + ReLU + residual
 * fused into them (include/ctorch/cuda.h ct_cuda_resnet_infer_*): the eval-mode forward of a
 * BasicBlock ResNet as ~30 launches instead of ~70, so that a batch-1 forward is bound by the
 * convolutions rather than by one launch per batch norm, ReLU and add. */
#include "ctorch.h"
#include "ctorch/cuda.h"
#include "ctorch/models.h"
#include "core/internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  ct_tensor *w, *b; /* folded weight [O, C, k, k] and bias [O], contiguous float32 on the device */
  int stride, pad;
} fconv;

struct ct_cuda_resnet_infer {
  fconv stem;
  bool maxpool;
  int nblocks;
  fconv c1[64], c2[64], ds[64];
  bool has_ds[64];
  ct_tensor *fc_w, *fc_b;
};

#ifdef CT_HAVE_CUDA
ct_status ct_cuda_conv_bias_act(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, const ct_tensor *z,
                                bool relu, int stride, int pad, ct_tensor *y); /* k_cudnn.cu */

/* w * s[:, None, None, None] and beta - mean * s with s = gamma / sqrt(var + eps) */
static ct_status fold(ct_module *conv, ct_module *bn, int stride, int pad, fconv *f) {
  ct_tensor *w = conv ? ct_module_param(conv, "weight") : NULL;
  ct_tensor *g = bn ? ct_module_param(bn, "weight") : NULL, *be = bn ? ct_module_param(bn, "bias") : NULL;
  ct_tensor *mu = bn ? ct_module_buffer(bn, "running_mean") : NULL, *var = bn ? ct_module_buffer(bn, "running_var") : NULL;
  if (!w || !g || !be || !mu || !var || ct_ndim(w) != 4 || ct_module_param(conv, "bias"))
    return CT_ERR(CT_ERR_VALUE, "ct_cuda_resnet_infer_new: expected a bias-free Conv2d followed by an affine BatchNorm2d "
                                "with running statistics");
  if (ct_tensor_dtype(w) != CT_FLOAT32 || ct_tensor_device(w).type != CT_DEVICE_CUDA)
    return CT_ERR(CT_ERR_VALUE, "ct_cuda_resnet_infer_new: the model's parameters must be float32 on a CUDA device");
  ct_scope *sc = ct_scope_begin();
  int64_t s4[4] = {ct_size(w, 0), 1, 1, 1};
  ct_tensor *s = ct_mul(g, ct_rsqrt(ct_add_scalar(var, ct_sf(1e-5))));
  ct_tensor *fw = s ? ct_contiguous(ct_mul(w, ct_view(s, 4, s4))) : NULL;
  ct_tensor *fb = s ? ct_contiguous(ct_sub(be, ct_mul(mu, s))) : NULL;
  ct_status st = fw && fb ? CT_OK : ct_last_status();
  if (st == CT_OK) {
    f->w = ct_keep(fw);
    f->b = ct_keep(fb);
    f->stride = stride;
    f->pad = pad;
  }
  ct_scope_end(sc);
  return st;
}
#endif

void ct_cuda_resnet_infer_free(ct_cuda_resnet_infer *r) {
  if (!r) return;
  ct_release(r->stem.w);
  ct_release(r->stem.b);
  for (int i = 0; i < r->nblocks; i++) {
    ct_release(r->c1[i].w);
    ct_release(r->c1[i].b);
    ct_release(r->c2[i].w);
    ct_release(r->c2[i].b);
    ct_release(r->ds[i].w);
    ct_release(r->ds[i].b);
  }
  ct_release(r->fc_w);
  ct_release(r->fc_b);
  free(r);
}

ct_cuda_resnet_infer *ct_cuda_resnet_infer_new(ct_module *m) {
#ifndef CT_HAVE_CUDA
  (void)m;
  ct_set_error(CT_ERR_RUNTIME, "ct_cuda_resnet_infer_new: this build has no CUDA backend");
  return NULL;
#else
  if (!m || strcmp(ct_module_type_name(m), "ResNet")) {
    ct_set_error(CT_ERR_VALUE, "ct_cuda_resnet_infer_new: expected a ResNet module (ct_resnet_basic_new)");
    return NULL;
  }
  if (ct_module_is_training(m)) {
    ct_set_error(CT_ERR_VALUE, "ct_cuda_resnet_infer_new: the model must be in eval mode (batch norm folds its running "
                               "statistics)");
    return NULL;
  }
  ct_cuda_resnet_infer *r = calloc(1, sizeof *r);
  if (!r) {
    ct_set_error(CT_ERR_OOM, "out of memory");
    return NULL;
  }
  bool prev = ct_set_grad_enabled(false);
  ct_module *c1 = ct_module_child(m, "conv1");
  ct_tensor *w1 = c1 ? ct_module_param(c1, "weight") : NULL;
  int k = w1 && ct_ndim(w1) == 4 ? (int)ct_size(w1, 2) : 0; /* 7: ImageNet stem (stride 2, pad 3), 3: CIFAR */
  ct_status st = fold(c1, ct_module_child(m, "bn1"), k == 7 ? 2 : 1, k / 2, &r->stem);
  r->maxpool = k == 7;
  for (int l = 1; l <= 4 && st == CT_OK; l++) {
    char name[16];
    snprintf(name, sizeof name, "layer%d", l);
    ct_module *layer = ct_module_child(m, name);
    int n = layer ? ct_module_num_children(layer) : 0;
    if (!n) st = CT_ERR(CT_ERR_VALUE, "ct_cuda_resnet_infer_new: %s missing", name);
    for (int b = 0; b < n && st == CT_OK; b++) {
      ct_module *blk = ct_module_child_at(layer, b);
      if (r->nblocks >= 64) {
        st = CT_ERR(CT_ERR_VALUE, "ct_cuda_resnet_infer_new: more than 64 blocks");
        break;
      }
      int i = r->nblocks++;
      ct_module *ds = ct_module_child(blk, "downsample");
      /* ct_resnet_basic_new gives a block a downsample branch exactly where it has stride 2 */
      int stride = ds && l > 1 ? 2 : 1;
      st = fold(ct_module_child(blk, "conv1"), ct_module_child(blk, "bn1"), stride, 1, &r->c1[i]);
      if (st == CT_OK) st = fold(ct_module_child(blk, "conv2"), ct_module_child(blk, "bn2"), 1, 1, &r->c2[i]);
      if (st == CT_OK && ds) {
        r->has_ds[i] = true;
        st = fold(ct_module_child_at(ds, 0), ct_module_child_at(ds, 1), stride, 0, &r->ds[i]);
      }
    }
  }
  ct_module *fc = ct_module_child(m, "fc");
  if (st == CT_OK) {
    ct_tensor *fw = fc ? ct_module_param(fc, "weight") : NULL, *fb = fc ? ct_module_param(fc, "bias") : NULL;
    if (!fw || !fb) st = CT_ERR(CT_ERR_VALUE, "ct_cuda_resnet_infer_new: the model has no fc layer");
    else {
      r->fc_w = ct_retain(fw);
      r->fc_b = ct_retain(fb);
    }
  }
  ct_set_grad_enabled(prev);
  if (st != CT_OK) {
    ct_cuda_resnet_infer_free(r);
    return NULL;
  }
  return r;
#endif
}

#ifdef CT_HAVE_CUDA
/* y = act(conv(x) + b + z) into a new tensor */
static ct_tensor *run_conv(const fconv *f, const ct_tensor *x, const ct_tensor *z, bool relu) {
  int64_t ys[4] = {ct_size(x, 0), ct_size(f->w, 0), 0, 0};
  for (int i = 0; i < 2; i++) ys[2 + i] = (ct_size(x, 2 + i) + 2 * f->pad - ct_size(f->w, 2 + i)) / f->stride + 1;
  if (ys[2] < 1 || ys[3] < 1) {
    ct_set_error(CT_ERR_VALUE, "ResNet inference: input image too small");
    return NULL;
  }
  ct_options o = ct_opts();
  o.device = ct_tensor_device(x);
  ct_tensor *y = ct_empty(4, ys, o);
  if (y && ct_cuda_conv_bias_act(x, f->w, f->b, z, relu, f->stride, f->pad, y) != CT_OK) {
    ct_release(y);
    return NULL;
  }
  return y;
}
#endif

ct_tensor *ct_cuda_resnet_infer_forward(ct_cuda_resnet_infer *r, const ct_tensor *x) {
  if (!r || !x) {
    ct_set_error(CT_ERR_VALUE, "ct_cuda_resnet_infer_forward: NULL argument");
    return NULL;
  }
#ifndef CT_HAVE_CUDA
  ct_set_error(CT_ERR_RUNTIME, "ct_cuda_resnet_infer_forward: this build has no CUDA backend");
  return NULL;
#else
  ct_device d = ct_tensor_device(r->stem.w), xd = ct_tensor_device(x);
  if (ct_ndim(x) != 4 || ct_size(x, 1) != ct_size(r->stem.w, 1) || ct_tensor_dtype(x) != CT_FLOAT32 ||
      xd.type != d.type || xd.index != d.index) {
    ct_set_error(CT_ERR_VALUE, "ct_cuda_resnet_infer_forward: expected a float32 [N, %lld, H, W] input on cuda:%d",
                 (long long)ct_size(r->stem.w, 1), d.index);
    return NULL;
  }
  bool prev = ct_set_grad_enabled(false);
  ct_scope *sc = ct_scope_begin();
  ct_tensor *h = run_conv(&r->stem, ct_contiguous(x), NULL, true);
  if (h && r->maxpool) h = ct_max_pool2d(h, (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 1}, NULL, false, NULL);
  for (int i = 0; h && i < r->nblocks; i++) {
    ct_tensor *t = run_conv(&r->c1[i], h, NULL, true);
    ct_tensor *idn = r->has_ds[i] ? run_conv(&r->ds[i], h, NULL, false) : h;
    h = t && idn ? run_conv(&r->c2[i], t, idn, true) : NULL;
  }
  ct_tensor *p = h ? ct_adaptive_avg_pool2d(h, (int64_t[]){1, 1}) : NULL;
  ct_tensor *out = p ? ct_linear(ct_flatten(p, 1, -1), r->fc_w, r->fc_b) : NULL;
  if (out) ct_keep(out);
  ct_scope_end(sc);
  ct_set_grad_enabled(prev);
  return out;
#endif
}
