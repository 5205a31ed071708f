/* The Vision Transformer in timm's layout (timm.models.vision_transformer.VisionTransformer with
 * a class token, learned position embeddings, pre-norm blocks and token pooling), so the
 * state_dict keys of timm's vit_tiny_patch16_224 and friends load unchanged. The attention is
 * timm's explicit path: q * scale @ k^T, softmax, @ v. */
#include "vision_internal.h"
#include <math.h>
#include <stdio.h>

typedef struct {
  int64_t heads;
  double attn_drop, proj_drop;
} attn_cfg;

/* x [B, N, D] -> proj(softmax(q k^T / sqrt(hd)) v) */
static ct_tensor *attn_forward(ct_module *m, const ct_tensor *x) {
  const attn_cfg *c = ct_module_user(m);
  if (ct_check_tensor(x, "Attention")) return NULL;
  if (ct_ndim(x) != 3) {
    ct_set_error(CT_ERR_RUNTIME, "Attention: expected [B, N, D] input, got %d dims", ct_ndim(x));
    return NULL;
  }
  bool train = ct_module_is_training(m);
  int64_t B = ct_size(x, 0), N = ct_size(x, 1), D = ct_size(x, 2), hd = D / c->heads;
  ct_scope *s = ct_scope_begin();
  ct_tensor *qkv = ct_module_forward(ct_module_child(m, "qkv"), x);
  int64_t shp[5] = {B, N, 3, c->heads, hd}, perm[5] = {2, 0, 3, 1, 4}, back[3] = {B, N, D};
  qkv = qkv ? ct_permute(ct_reshape(qkv, 5, shp), 5, perm) : NULL; /* [3, B, H, N, hd] */
  ct_tensor *out = NULL;
  if (qkv) {
    ct_tensor *q = ct_mul_scalar(ct_select(qkv, 0, 0), ct_sf(1.0 / sqrt((double)hd)));
    ct_tensor *k = ct_select(qkv, 0, 1), *v = ct_select(qkv, 0, 2);
    ct_tensor *a = q && k ? ct_matmul(q, ct_transpose(k, -2, -1)) : NULL;
    a = a ? ct_softmax(a, -1, -1) : NULL;
    if (a && c->attn_drop > 0 && train) a = ct_dropout(a, c->attn_drop, true, NULL);
    out = a && v ? ct_matmul(a, v) : NULL; /* [B, H, N, hd] */
    out = out ? ct_reshape(ct_transpose(out, 1, 2), 3, back) : NULL;
    out = out ? ct_module_forward(ct_module_child(m, "proj"), out) : NULL;
    if (out && c->proj_drop > 0 && train) out = ct_dropout(out, c->proj_drop, true, NULL);
  }
  if (out) ct_keep(out);
  ct_scope_end(s);
  return out;
}
static const ct_module_vtable attn_vt = {attn_forward, NULL, vm_free_user, NULL};

typedef struct {
  double drop;
} mlp_cfg;

/* gelu(fc1(x)): on WebGPU without grad one addmm whose output pass applies the GELU
 * (src/backend/webgpu/webgpu_kernels.c); elsewhere the two ops */
ct_tensor *ct_webgpu_linear_gelu(ct_module *lin, const ct_tensor *x, bool *fused);
static ct_tensor *mlp_forward(ct_module *m, const ct_tensor *x) {
  const mlp_cfg *c = ct_module_user(m);
  bool train = ct_module_is_training(m), fused = false;
  ct_scope *s = ct_scope_begin();
  ct_tensor *h = ct_webgpu_linear_gelu(ct_module_child(m, "fc1"), x, &fused);
  h = h && !fused ? ct_gelu(h, "none") : h;
  if (h && c->drop > 0 && train) h = ct_dropout(h, c->drop, true, NULL);
  h = h ? ct_module_forward(ct_module_child(m, "fc2"), h) : NULL;
  if (h && c->drop > 0 && train) h = ct_dropout(h, c->drop, true, NULL);
  if (h) ct_keep(h);
  ct_scope_end(s);
  return h;
}
static const ct_module_vtable mlp_vt = {mlp_forward, NULL, vm_free_user, NULL};

/* x + attn(norm1(x)), then + mlp(norm2(x)) */
static ct_tensor *block_forward(ct_module *m, const ct_tensor *x) {
  ct_scope *s = ct_scope_begin();
  ct_tensor *h = ct_module_forward(ct_module_child(m, "norm1"), x);
  h = h ? ct_module_forward(ct_module_child(m, "attn"), h) : NULL;
  ct_tensor *y = h ? ct_add(x, h) : NULL;
  h = y ? ct_module_forward(ct_module_child(m, "norm2"), y) : NULL;
  h = h ? ct_module_forward(ct_module_child(m, "mlp"), h) : NULL;
  y = h ? ct_add(y, h) : NULL;
  if (y) ct_keep(y);
  ct_scope_end(s);
  return y;
}
static const ct_module_vtable block_vt = {block_forward, NULL, NULL, NULL};

/* PatchEmbed: proj, then [B, D, h, w] -> [B, h*w, D]. The convolution's kernel equals its stride and
 * it has no padding, so it is exactly a matrix product over non-overlapping patches:
 * [B*h*w, C*P*P] @ W[D, C*P*P]^T + b, computed that way (the packed GEMM) with the same weights. */
static ct_tensor *patch_forward(ct_module *m, const ct_tensor *x) {
  ct_module *proj = ct_module_child(m, "proj");
  ct_tensor *w = ct_module_param(proj, "weight"), *b = ct_module_param(proj, "bias");
  if (w && ct_ndim(x) == 4 && ct_size(x, 1) == ct_size(w, 1)) {
    int64_t B = ct_size(x, 0), C = ct_size(x, 1), P = ct_size(w, 2), D = ct_size(w, 0);
    int64_t gh = ct_size(x, 2) / P, gw = ct_size(x, 3) / P;
    if (ct_size(w, 3) == P && gh * P == ct_size(x, 2) && gw * P == ct_size(x, 3)) {
      int64_t s6[6] = {B, C, gh, P, gw, P}, perm[6] = {0, 2, 4, 1, 3, 5}, s2[2] = {B * gh * gw, C * P * P};
      int64_t ws[2] = {D, C * P * P}, out[3] = {B, gh * gw, D};
      ct_scope *s = ct_scope_begin();
      ct_tensor *patches = ct_reshape(ct_permute(ct_reshape(x, 6, s6), 6, perm), 2, s2);
      ct_tensor *y = patches ? ct_linear(patches, ct_reshape(w, 2, ws), b) : NULL;
      y = y ? ct_reshape(y, 3, out) : NULL;
      if (y) ct_keep(y);
      ct_scope_end(s);
      return y;
    }
  }
  ct_tensor *p = ct_module_forward(proj, x); /* anything else: the convolution (and its errors) */
  if (!p) return NULL;
  ct_tensor *f = ct_flatten(p, 2, -1);
  ct_release(p);
  if (!f) return NULL;
  ct_tensor *t = ct_transpose(f, 1, 2);
  ct_release(f);
  return t;
}
static const ct_module_vtable patch_vt = {patch_forward, NULL, NULL, NULL};

static ct_tensor *vit_forward(ct_module *m, const ct_tensor *x) {
  const ct_vit_config *c = ct_module_user(m);
  if (vm_check_image(x, "VisionTransformer", c->in_chans) != CT_OK) return NULL;
  /* timm's PatchEmbed (strict_img_size) wording */
  if (ct_size(x, 2) != c->image_size) {
    ct_set_error(CT_ERR_RUNTIME, "Input height (%lld) doesn't match model (%lld).", (long long)ct_size(x, 2),
                 (long long)c->image_size);
    return NULL;
  }
  if (ct_size(x, 3) != c->image_size) {
    ct_set_error(CT_ERR_RUNTIME, "Input width (%lld) doesn't match model (%lld).", (long long)ct_size(x, 3),
                 (long long)c->image_size);
    return NULL;
  }
  int64_t B = ct_size(x, 0);
  ct_scope *s = ct_scope_begin();
  ct_tensor *h = ct_module_forward(ct_module_child(m, "patch_embed"), x); /* [B, N, D] */
  int64_t es[3] = {B, 1, c->embed_dim};
  ct_tensor *cls = ct_expand(ct_module_param(m, "cls_token"), 3, es);
  if (h && cls) {
    const ct_tensor *parts[2] = {cls, h};
    h = ct_cat(2, parts, 1);
  } else h = NULL;
  h = h ? ct_add(h, ct_module_param(m, "pos_embed")) : NULL;
  if (h && c->drop_rate > 0 && ct_module_is_training(m)) h = ct_dropout(h, c->drop_rate, true, NULL);
  h = h ? ct_module_forward(ct_module_child(m, "blocks"), h) : NULL;
  h = h ? ct_module_forward(ct_module_child(m, "norm"), h) : NULL;
  h = h ? ct_select(h, 1, 0) : NULL; /* the class token */
  h = h ? ct_module_forward(ct_module_child(m, "head"), h) : NULL;
  if (h) ct_keep(h);
  ct_scope_end(s);
  return h;
}
static const ct_module_vtable vit_vt = {vit_forward, NULL, vm_free_user, NULL};

ct_vit_config ct_vit_config_tiny16(int64_t num_classes) {
  ct_vit_config c = {.image_size = 224, .patch_size = 16, .in_chans = 3, .num_classes = num_classes,
                     .embed_dim = 192, .depth = 12, .num_heads = 3, .mlp_ratio = 4.0, .qkv_bias = true,
                     .eps = 1e-6, .drop_rate = 0.0, .attn_drop_rate = 0.0};
  return c;
}

static ct_module *vit_block(const ct_vit_config *c) {
  ct_module *b = ct_module_new("Block", &block_vt, NULL);
  if (!b) return NULL;
  int64_t D = c->embed_dim, hidden = (int64_t)(D * c->mlp_ratio);
  attn_cfg ac = {c->num_heads, c->attn_drop_rate, c->drop_rate};
  mlp_cfg mc = {c->drop_rate};
  ct_module *attn = vm_new("Attention", &attn_vt, &ac, sizeof ac);
  ct_status st = vm_add(b, "norm1", ct_layer_norm_new(1, &D, c->eps, true));
  if (attn) {
    if (!st) st = vm_add(attn, "qkv", ct_linear_new(D, 3 * D, c->qkv_bias));
    if (!st) st = vm_add(attn, "proj", ct_linear_new(D, D, true));
    if (!st) st = vm_add(b, "attn", attn);
    else ct_module_free(attn);
  } else if (!st) st = ct_last_status();
  if (!st) st = vm_add(b, "norm2", ct_layer_norm_new(1, &D, c->eps, true));
  ct_module *mlp = st ? NULL : vm_new("Mlp", &mlp_vt, &mc, sizeof mc);
  if (!st && !mlp) st = ct_last_status();
  if (mlp) {
    st = vm_add(mlp, "fc1", ct_linear_new(D, hidden, true));
    if (!st) st = vm_add(mlp, "fc2", ct_linear_new(hidden, D, true));
    if (!st) st = vm_add(b, "mlp", mlp);
    else ct_module_free(mlp);
  }
  if (st) {
    ct_module_free(b);
    return NULL;
  }
  return b;
}

/* timm's init_weights("") after construction: pos_embed, cls_token, then every Linear in order. */
static ct_status init_linears(ct_module *m) {
  if (!strcmp(ct_module_type_name(m), "Linear")) {
    CT_TRY(vm_trunc_normal(ct_module_param(m, "weight"), 0.0, 0.02, -2.0, 2.0));
    ct_tensor *b = ct_module_param(m, "bias");
    if (b) CT_TRY(vm_zero(b));
  }
  for (int i = 0; i < ct_module_num_children(m); i++) CT_TRY(init_linears(ct_module_child_at(m, i)));
  return CT_OK;
}

ct_module *ct_vit_new(const ct_vit_config *c) {
  if (!c) {
    ct_set_error(CT_ERR_VALUE, "VisionTransformer: config is NULL");
    return NULL;
  }
  if (c->image_size < 1 || c->patch_size < 1 || c->in_chans < 1 || c->num_classes < 1 || c->embed_dim < 1 ||
      c->depth < 0 || c->num_heads < 1 || !(c->mlp_ratio > 0) || !(c->eps > 0) || c->image_size > (1 << 20)) {
    ct_set_error(CT_ERR_VALUE, "VisionTransformer: sizes must be positive (depth non-negative)");
    return NULL;
  }
  if (c->embed_dim % c->num_heads) {
    ct_set_error(CT_ERR_VALUE, "VisionTransformer: embed_dim (%lld) must be divisible by num_heads (%lld)",
                 (long long)c->embed_dim, (long long)c->num_heads);
    return NULL;
  }
  if (c->image_size % c->patch_size) {
    ct_set_error(CT_ERR_VALUE, "VisionTransformer: image_size (%lld) must be a multiple of patch_size (%lld)",
                 (long long)c->image_size, (long long)c->patch_size);
    return NULL;
  }
  if (!(c->drop_rate >= 0 && c->drop_rate < 1) || !(c->attn_drop_rate >= 0 && c->attn_drop_rate < 1)) {
    ct_set_error(CT_ERR_VALUE, "VisionTransformer: dropout rates must be in [0, 1)");
    return NULL;
  }
  int64_t D = c->embed_dim, g = c->image_size / c->patch_size, hidden = (int64_t)(D * c->mlp_ratio);
  if (hidden < 1) {
    ct_set_error(CT_ERR_VALUE, "VisionTransformer: embed_dim * mlp_ratio must be at least 1");
    return NULL;
  }
  ct_module *m = vm_new("VisionTransformer", &vit_vt, c, sizeof *c);
  if (!m) return NULL;
  /* construction order and draws as timm: patch_embed, cls_token (zeros), pos_embed (randn * .02), blocks,
   * norm, head; then init_weights */
  ct_module *pe = ct_module_new("PatchEmbed", &patch_vt, NULL);
  ct_conv_opts o = ct_conv_defaults();
  o.stride[0] = o.stride[1] = c->patch_size;
  ct_status st = pe ? vm_add(pe, "proj", ct_conv2d_new(c->in_chans, D, c->patch_size, c->patch_size, &o)) : ct_last_status();
  int64_t cs[3] = {1, 1, D}, ps[3] = {1, g * g + 1, D};
  ct_tensor *cls = st ? NULL : ct_zeros(3, cs, ct_opts());
  ct_tensor *pos = cls ? ct_randn(3, ps, ct_opts(), NULL) : NULL;
  if (!st && !pos) st = ct_last_status();
  if (!st) st = ct_mul_scalar_(pos, ct_sf(0.02));
  if (!st) st = ct_module_register_parameter(m, "cls_token", cls);
  if (!st) st = ct_module_register_parameter(m, "pos_embed", pos);
  ct_release(cls);
  ct_release(pos);
  if (pe) {
    if (!st) st = vm_add(m, "patch_embed", pe);
    else ct_module_free(pe);
  }
  ct_module *blocks = st ? NULL : ct_sequential_new(0, NULL);
  if (!st && !blocks) st = ct_last_status();
  for (int64_t i = 0; blocks && !st && i < c->depth; i++) {
    ct_module *b = vit_block(c);
    st = b ? ct_sequential_append(blocks, b) : ct_last_status();
  }
  if (blocks) {
    if (!st) st = vm_add(m, "blocks", blocks);
    else ct_module_free(blocks);
  }
  if (!st) st = vm_add(m, "norm", ct_layer_norm_new(1, &D, c->eps, true));
  if (!st) st = vm_add(m, "head", ct_linear_new(D, c->num_classes, true));
  if (!st) st = vm_trunc_normal(ct_module_param(m, "pos_embed"), 0.0, 0.02, -2.0, 2.0);
  if (!st) st = vm_normal(ct_module_param(m, "cls_token"), 0.0, 1e-6);
  if (!st) st = init_linears(m);
  if (st) {
    ct_module_free(m);
    return NULL;
  }
  return m;
}
