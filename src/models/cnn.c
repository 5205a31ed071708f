/* A LeNet-style CNN (the network of `ctorch train-cnn`): two convolution + ReLU + 2x2 max-pool
 * stages, then two fully connected layers, named like PyTorch's MNIST example (conv1, conv2,
 * fc1, fc2). */
#include "vision_internal.h"
#include <math.h>

ct_cnn_config ct_cnn_config_mnist(void) {
  ct_cnn_config c = {.in_channels = 1, .image_size = 28, .conv1_channels = 16, .conv2_channels = 32,
                     .kernel_size = 5, .padding = 0, .hidden = 128, .num_classes = 10, .dropout = 0.0};
  return c;
}

/* Spatial size after the two stages, or -1 if the image is too small. */
static int64_t cnn_out_size(const ct_cnn_config *c) {
  int64_t s = c->image_size + 2 * c->padding - c->kernel_size + 1;
  if (s < 2) return -1;
  s = s / 2 + 2 * c->padding - c->kernel_size + 1;
  if (s < 2) return -1;
  return s / 2;
}

static ct_tensor *cnn_forward(ct_module *m, const ct_tensor *x) {
  const ct_cnn_config *c = ct_module_user(m);
  if (vm_check_image(x, "CNN", c->in_channels) != CT_OK) return NULL;
  if (ct_size(x, 2) != c->image_size || ct_size(x, 3) != c->image_size) {
    ct_set_error(CT_ERR_RUNTIME, "CNN: expected %lldx%lld images, got %lldx%lld", (long long)c->image_size,
                 (long long)c->image_size, (long long)ct_size(x, 2), (long long)ct_size(x, 3));
    return NULL;
  }
  int64_t k2[2] = {2, 2};
  ct_scope *s = ct_scope_begin();
  ct_tensor *h = ct_module_forward(ct_module_child(m, "conv1"), x);
  h = h ? ct_max_pool2d(ct_relu(h), k2, NULL, NULL, NULL, false, NULL) : NULL;
  h = h ? ct_module_forward(ct_module_child(m, "conv2"), h) : NULL;
  h = h ? ct_max_pool2d(ct_relu(h), k2, NULL, NULL, NULL, false, NULL) : NULL;
  h = h ? ct_flatten(h, 1, -1) : NULL;
  h = h ? ct_relu(ct_module_forward(ct_module_child(m, "fc1"), h)) : NULL;
  if (h && c->dropout > 0 && ct_module_is_training(m)) h = ct_dropout(h, c->dropout, true, NULL);
  h = h ? ct_module_forward(ct_module_child(m, "fc2"), h) : NULL;
  if (h) ct_keep(h);
  ct_scope_end(s);
  return h;
}

static const ct_module_vtable cnn_vt = {cnn_forward, NULL, vm_free_user, NULL};

ct_module *ct_cnn_new(const ct_cnn_config *c) {
  if (!c) {
    ct_set_error(CT_ERR_VALUE, "CNN: config is NULL");
    return NULL;
  }
  if (c->in_channels < 1 || c->conv1_channels < 1 || c->conv2_channels < 1 || c->kernel_size < 1 || c->hidden < 1 ||
      c->num_classes < 1 || c->padding < 0 || c->image_size < 1) {
    ct_set_error(CT_ERR_VALUE, "CNN: channels, kernel_size, hidden, num_classes and image_size must be positive and "
                               "padding non-negative");
    return NULL;
  }
  if (!(c->dropout >= 0 && c->dropout < 1)) {
    ct_set_error(CT_ERR_VALUE, "dropout probability has to be between 0 and 1, but got %g", c->dropout);
    return NULL;
  }
  int64_t s = c->image_size > (INT64_C(1) << 24) ? -1 : cnn_out_size(c), flat;
  if (s < 1 || !ct_mul_ok(c->conv2_channels, s * s, &flat)) {
    ct_set_error(CT_ERR_VALUE, "CNN: %lldx%lld images are too small for two %lldx%lld convolutions and 2x2 pools",
                 (long long)c->image_size, (long long)c->image_size, (long long)c->kernel_size,
                 (long long)c->kernel_size);
    return NULL;
  }
  ct_module *m = vm_new("CNN", &cnn_vt, c, sizeof *c);
  if (!m) return NULL;
  ct_conv_opts o = ct_conv_defaults();
  o.padding[0] = o.padding[1] = c->padding;
  if (vm_add(m, "conv1", ct_conv2d_new(c->in_channels, c->conv1_channels, c->kernel_size, c->kernel_size, &o)) ||
      vm_add(m, "conv2", ct_conv2d_new(c->conv1_channels, c->conv2_channels, c->kernel_size, c->kernel_size, &o)) ||
      vm_add(m, "fc1", ct_linear_new(flat, c->hidden, true)) ||
      vm_add(m, "fc2", ct_linear_new(c->hidden, c->num_classes, true))) {
    ct_module_free(m);
    return NULL;
  }
  return m;
}
