/* ResNet with BasicBlocks in torchvision's layout (resnet18, resnet34) and the CIFAR variant
 * (3x3 stride-1 stem, no max-pool). Module tree and registration order follow
 * torchvision.models.resnet.ResNet, so state_dict keys, named_parameters order and the
 * initialisation (construction draws, then kaiming_normal_ over the convolutions in modules()
 * order) are torchvision's. */
#include "vision_internal.h"
#include <math.h>
#include <stdio.h>

/* relu(bn(x)) in one fused op on the CPU (src/nn/layers.c) */
ct_tensor *ct_module_forward_bn_relu(ct_module *m, const ct_tensor *x);
static ct_tensor *bn_relu_then(ct_module *bn, ct_tensor *a) {
  if (!a) return NULL;
  ct_tensor *r = ct_module_forward_bn_relu(bn, a);
  ct_release(a);
  return r;
}

/* ---- BasicBlock: relu(bn2(conv2(relu(bn1(conv1(x))))) + downsample(x)) ----
 * Each intermediate is released as soon as the next op has read it (what autograd saved stays
 * alive through its own hold): without grad, a ResNet-18 224 b16 forward otherwise keeps every
 * activation of the block, and of the whole network in resnet_forward, until the end. */
/* relu?(bn(conv(x)) + res?): on WebGPU in eval without grad one convolution whose output pass
 * applies bn, res and relu (src/backend/webgpu/webgpu_kernels.c); elsewhere the separate ops */
ct_tensor *ct_webgpu_conv_bn(ct_module *conv, ct_module *bn, double eps, const ct_tensor *x, const ct_tensor *res, bool relu,
                             bool *fused);
/* the CPU's: in eval without grad the conv kernel's output pass applies bn, res and relu (src/nn/layers.c) */
ct_tensor *ct_module_forward_conv_bn(ct_module *conv, ct_module *bn, const ct_tensor *x, const ct_tensor *residual,
                                     bool relu);
ct_tensor *ct_webgpu_avgpool_linear(ct_module *fc, const ct_tensor *x, bool *applied);
static ct_tensor *conv_bn(ct_module *conv, ct_module *bn, const ct_tensor *x, const ct_tensor *res, bool relu) {
  if (x && !ct_is_grad_enabled() && x->storage->device.type == CT_DEVICE_CPU)
    return ct_module_forward_conv_bn(conv, bn, x, res, relu);
  bool fused = false;
  ct_tensor *y = ct_webgpu_conv_bn(conv, bn, 1e-5 /* every BatchNorm2d of this file */, x, res, relu, &fused);
  if (!y || fused) return y;
  if (relu && !res) return bn_relu_then(bn, y);
  if (relu && ct_is_grad_enabled()) { /* training: relu(bn(y) + res) as one op on the CPU and CUDA (layers.c) */
    ct_tensor *ct_module_forward_bn_add_relu(ct_module *m, const ct_tensor *x, const ct_tensor *residual);
    ct_tensor *r = ct_module_forward_bn_add_relu(bn, y, res);
    ct_release(y);
    return r;
  }
  y = vm_forward_then(bn, y);
  if (res) {
    ct_tensor *sum = y ? ct_add(y, res) : NULL;
    ct_release(y);
    y = sum;
  }
  return relu ? vm_then(y, ct_relu) : y;
}
/* src/backend/stream_region.c: the launches between the two calls may run on another stream of on's device (CUDA,
 * session 13b: CT_CUDA_DS_FORK), which the device's stream meets where it reads what they wrote (the residual add);
 * the backward of the nodes recorded between them may fork the same way (session 14: CT_CUDA_DS_BWD_FORK). begin:
 * true when end must follow; nothing happens on the CPU and WebGPU. */
bool ct_stream_region_begin(const ct_tensor *on);
void ct_stream_region_end(const ct_tensor *on, const ct_tensor *read);
static ct_tensor *block_forward(ct_module *m, const ct_tensor *x) {
  ct_scope *s = ct_scope_begin();
  ct_tensor *out = conv_bn(ct_module_child(m, "conv1"), ct_module_child(m, "bn1"), x, NULL, true);
  ct_module *ds = ct_module_child(m, "downsample");
  ct_tensor *ds_out = NULL;
  if (out && ds && ct_module_num_children(ds) == 2) {
    /* the downsample branch (1x1 convolution, batch norm) beside conv2 / bn2 (CUDA: on a second stream) */
    bool region = ct_stream_region_begin(x);
    ds_out = conv_bn(ct_module_child(ds, "0"), ct_module_child(ds, "1"), x, NULL, false);
    if (region) ct_stream_region_end(x, x);
  } else if (out && ds) ds_out = ct_module_forward(ds, x);
  const ct_tensor *identity = ds ? ds_out : x;
  ct_tensor *r = out && identity ? conv_bn(ct_module_child(m, "conv2"), ct_module_child(m, "bn2"), out, identity, true) : NULL;
  ct_release(out);
  ct_release(ds_out);
  out = r;
  if (out) ct_keep(out);
  ct_scope_end(s);
  return out;
}
static const ct_module_vtable block_vt = {block_forward, NULL, NULL, NULL};

static ct_module *conv_bn_free(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  ct_conv_opts o = ct_conv_defaults();
  o.stride[0] = o.stride[1] = stride;
  o.padding[0] = o.padding[1] = pad;
  o.bias = false;
  return ct_conv2d_new(in, out, k, k, &o);
}

static ct_module *basic_block(int64_t inplanes, int64_t planes, int64_t stride) {
  /* torchvision builds the downsample branch first (in _make_layer), then the block */
  ct_module *ds = NULL;
  if (stride != 1 || inplanes != planes) {
    ct_module *conv = conv_bn_free(inplanes, planes, 1, stride, 0);
    ct_module *bn = conv ? ct_batch_norm2d_new(planes, 1e-5, 0.1, true, true) : NULL;
    if (!bn) {
      ct_module_free(conv);
      return NULL;
    }
    ct_module *parts[2] = {conv, bn};
    if (!(ds = ct_sequential_new(2, parts))) return NULL;
  }
  ct_module *m = ct_module_new("BasicBlock", &block_vt, NULL);
  if (!m) {
    ct_module_free(ds);
    return NULL;
  }
  ct_status st = vm_add(m, "conv1", conv_bn_free(inplanes, planes, 3, stride, 1));
  if (!st) st = vm_add(m, "bn1", ct_batch_norm2d_new(planes, 1e-5, 0.1, true, true));
  if (!st) st = vm_add(m, "relu", ct_relu_new());
  if (!st) st = vm_add(m, "conv2", conv_bn_free(planes, planes, 3, 1, 1));
  if (!st) st = vm_add(m, "bn2", ct_batch_norm2d_new(planes, 1e-5, 0.1, true, true));
  if (ds) {
    if (!st) st = vm_add(m, "downsample", ds); /* takes ds either way */
    else ct_module_free(ds);
  }
  if (st) {
    ct_module_free(m);
    return NULL;
  }
  return m;
}

/* ---- ResNet ---- */
static ct_tensor *resnet_forward(ct_module *m, const ct_tensor *x) {
  if (vm_check_image(x, "ResNet", 3) != CT_OK) return NULL;
  static const char *const order[] = {"conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool"};
  ct_scope *s = ct_scope_begin();
  /* conv1 -> bn1 -> relu: one fused op */
  ct_tensor *h = conv_bn(ct_module_child(m, order[0]), ct_module_child(m, order[1]), x, NULL, true);
  for (size_t i = 3; h && i + 1 < sizeof order / sizeof order[0]; i++) h = vm_forward_then(ct_module_child(m, order[i]), h);
  /* avgpool (always 1x1 here) -> flatten -> fc: on WebGPU without grad one kernel (webgpu_kernels.c) */
  bool applied = false;
  ct_tensor *out = h ? ct_webgpu_avgpool_linear(ct_module_child(m, "fc"), h, &applied) : NULL;
  if (!applied) {
    h = vm_forward_then(ct_module_child(m, "avgpool"), h);
    out = h ? ct_flatten(h, 1, -1) : NULL;
    out = vm_forward_then(ct_module_child(m, "fc"), out);
  }
  ct_release(h);
  if (out) ct_keep(out);
  ct_scope_end(s);
  return out;
}
static const ct_module_vtable resnet_vt = {resnet_forward, NULL, NULL, NULL};

/* kaiming_normal_(fan_out, relu) for every Conv2d in pre-order (torchvision's self.modules()). */
static ct_status init_convs(ct_module *m) {
  if (!strcmp(ct_module_type_name(m), "Conv2d")) CT_TRY(vm_kaiming_normal_fan_out(ct_module_param(m, "weight")));
  for (int i = 0; i < ct_module_num_children(m); i++) CT_TRY(init_convs(ct_module_child_at(m, i)));
  return CT_OK;
}

ct_module *ct_resnet_basic_new(const int64_t *blocks, int64_t num_classes, bool cifar_stem) {
  if (!blocks) {
    ct_set_error(CT_ERR_VALUE, "ResNet: blocks is NULL");
    return NULL;
  }
  for (int i = 0; i < 4; i++)
    if (blocks[i] < 1 || blocks[i] > 1024) {
      ct_set_error(CT_ERR_VALUE, "ResNet: each stage needs 1 to 1024 blocks, got %lld", (long long)blocks[i]);
      return NULL;
    }
  if (num_classes < 1) {
    ct_set_error(CT_ERR_VALUE, "ResNet: num_classes must be positive, got %lld", (long long)num_classes);
    return NULL;
  }
  ct_module *m = ct_module_new("ResNet", &resnet_vt, NULL);
  if (!m) return NULL;
  int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[2] = {1, 1}, one[2] = {1, 1};
  ct_status st = vm_add(m, "conv1", cifar_stem ? conv_bn_free(3, 64, 3, 1, 1) : conv_bn_free(3, 64, 7, 2, 3));
  if (!st) st = vm_add(m, "bn1", ct_batch_norm2d_new(64, 1e-5, 0.1, true, true));
  if (!st) st = vm_add(m, "relu", ct_relu_new());
  if (!st) st = vm_add(m, "maxpool", cifar_stem ? ct_identity_new() : ct_max_pool2d_new(k3, s2, p1, NULL, false));
  int64_t inplanes = 64;
  for (int l = 0; l < 4 && !st; l++) {
    int64_t planes = 64 << l;
    ct_module *layer = ct_sequential_new(0, NULL);
    if (!layer) {
      st = ct_last_status();
      break;
    }
    for (int64_t b = 0; b < blocks[l] && !st; b++) {
      ct_module *blk = basic_block(inplanes, planes, b == 0 && l > 0 ? 2 : 1);
      st = blk ? ct_sequential_append(layer, blk) : ct_last_status();
      inplanes = planes;
    }
    char name[16];
    snprintf(name, sizeof name, "layer%d", l + 1);
    if (st) ct_module_free(layer);
    else st = vm_add(m, name, layer);
  }
  if (!st) st = vm_add(m, "avgpool", ct_adaptive_avg_pool2d_new(one));
  if (!st) st = vm_add(m, "fc", ct_linear_new(512, num_classes, true));
  if (!st) st = init_convs(m);
  if (st) {
    ct_module_free(m);
    return NULL;
  }
  return m;
}

ct_module *ct_resnet18_new(int64_t num_classes) {
  static const int64_t b[4] = {2, 2, 2, 2};
  return ct_resnet_basic_new(b, num_classes, false);
}

ct_module *ct_resnet18_cifar_new(int64_t num_classes) {
  static const int64_t b[4] = {2, 2, 2, 2};
  return ct_resnet_basic_new(b, num_classes, true);
}
