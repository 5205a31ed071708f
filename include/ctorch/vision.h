/* ctorch vision: image data sets (IDX files, MNIST) and models with torchvision's and timm's
 * parameter names: an MLP (torchvision.ops.MLP), a LeNet-style CNN, ResNet-18/34 (torchvision's
 * ImageNet layout, and the CIFAR variant with a 3x3 stem and no max-pool) and the Vision
 * Transformer (timm's VisionTransformer, ViT-Tiny/16 and other sizes).
 *
 * Every model is a ct_module (include/ctorch/module.h): run it with ct_module_forward, switch
 * train/eval with ct_module_train / ct_module_eval, save and load it with ct_module_state_dict /
 * ct_module_load_state_dict (the keys equal the PyTorch model's, so weights move both ways
 * through safetensors files), and free it with ct_module_free. Constructors draw their
 * initialisation from the default generator (ct_manual_seed), in the PyTorch model's order. */
#ifndef CTORCH_VISION_H
#define CTORCH_VISION_H
#include "core.h"
#include "module.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ==== data ================================================================================ */
/* An IDX file (MNIST's format; raw, or gzip-compressed: detected by its magic bytes, decoded
 * natively) as a tensor of the file's shape and type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C
 * int32, 0x0D float32, 0x0E float64. A damaged file (bad magic, unknown type, data shorter or
 * longer than the dimensions, bad gzip/DEFLATE data, CRC-32 or length mismatch) is refused with
 * a RuntimeError naming the file and the problem. */
ct_tensor *ct_idx_load(const char *path);
/* The same for a file held in memory (what names it in messages; NULL: "<buffer>"). */
ct_tensor *ct_idx_load_buffer(const void *buf, size_t len);
ct_tensor *ct_idx_load_buffer_named(const void *buf, size_t len, const char *what);

/* The MNIST-format pair dir/<prefix>-images-idx3-ubyte[.gz] and dir/<prefix>-labels-idx1-ubyte[.gz]
 * (prefix "train" or "t10k"; the "-images.idx3-ubyte" spelling is found too): images uint8
 * [N, H, W] and labels int64 [N] (new references). */
ct_status ct_mnist_load(const char *dir, const char *prefix, ct_tensor **images, ct_tensor **labels);
bool ct_mnist_exists(const char *dir, const char *prefix);

/* ==== MLP ================================================================================= */
/* torchvision.ops.MLP(in_features, hidden_channels=channels[0..n), activation_layer=ReLU,
 * dropout, bias=True, no norm layer): a Sequential of Linear, ReLU, Dropout for each hidden width
 * and a final Linear, Dropout, so the parameters are "0.weight", "0.bias", "3.weight", ...
 * (n >= 1; the last width is the output size). Input [..., in_features]. */
ct_module *ct_mlp_new(int64_t in_features, int n, const int64_t *channels, double dropout);

/* ==== LeNet-style CNN ===================================================================== */
/* conv1 (k x k, padding) -> ReLU -> 2x2 max-pool -> conv2 -> ReLU -> 2x2 max-pool -> flatten ->
 * fc1 -> ReLU -> dropout -> fc2. Parameters "conv1.weight", "conv1.bias", "conv2.*", "fc1.*",
 * "fc2.*"; the layers are PyTorch's Conv2d and Linear with their default initialisation. */
typedef struct {
  int64_t in_channels, image_size; /* square images: [N, in_channels, image_size, image_size] */
  int64_t conv1_channels, conv2_channels, kernel_size, padding;
  int64_t hidden, num_classes;
  double dropout;
} ct_cnn_config;
/* MNIST: 1x28x28, 16 and 32 channels of 5x5, no padding (28 -> 24 -> 12 -> 8 -> 4), fc1 512 -> 128,
 * 10 classes, no dropout. */
ct_cnn_config ct_cnn_config_mnist(void);
ct_module *ct_cnn_new(const ct_cnn_config *c);

/* ==== ResNet ============================================================================== */
/* torchvision.models.resnet18(num_classes): conv1 (7x7/2) bn1 relu maxpool (3x3/2) layer1..layer4
 * of BasicBlocks (conv1 bn1 relu conv2 bn2 [downsample.0 = 1x1 conv, downsample.1 = BatchNorm]),
 * avgpool (adaptive 1x1), fc. Initialised like torchvision: convolutions kaiming_normal_
 * (fan_out, relu), BatchNorms 1 and 0, fc nn.Linear's default. Input [N, 3, H, W]. */
ct_module *ct_resnet18_new(int64_t num_classes);
/* The CIFAR variant: conv1 is 3x3 stride 1 padding 1 (no bias) and maxpool an Identity; the
 * state_dict keys are the same as resnet18's. For 3x32x32 inputs. */
ct_module *ct_resnet18_cifar_new(int64_t num_classes);
/* ResNet with BasicBlocks and blocks[4] blocks per stage ({2,2,2,2}: ResNet-18, {3,4,6,3}:
 * ResNet-34); cifar_stem as above. */
ct_module *ct_resnet_basic_new(const int64_t *blocks, int64_t num_classes, bool cifar_stem);

/* ==== Vision Transformer ================================================================== */
/* timm's VisionTransformer (class token, learned positions, pre-norm blocks, token pooling):
 *   cls_token [1, 1, D], pos_embed [1, 1 + (S/P)^2, D], patch_embed.proj (Conv2d C -> D, P x P,
 *   stride P), blocks.<i>.norm1, blocks.<i>.attn.qkv (Linear D -> 3D), blocks.<i>.attn.proj,
 *   blocks.<i>.norm2, blocks.<i>.mlp.fc1 (D -> mlp_ratio D), blocks.<i>.mlp.fc2, norm, head.
 * x = cat(cls_token, patches) + pos_embed; each block x += attn(norm1(x)); x += mlp(norm2(x))
 * (exact GELU); logits = head(norm(x)[:, 0]). LayerNorm eps 1e-6 as timm. Initialised like timm's
 * default ("" mode): pos_embed trunc_normal_(std .02), cls_token normal_(std 1e-6), every Linear
 * trunc_normal_(std .02) with zero bias, patch_embed PyTorch's Conv2d default. */
typedef struct {
  int64_t image_size, patch_size, in_chans, num_classes;
  int64_t embed_dim, depth, num_heads;
  double mlp_ratio;
  bool qkv_bias;
  double eps;       /* LayerNorm eps */
  double drop_rate; /* dropout after the position embedding, in the MLP and after the projections */
  double attn_drop_rate;
} ct_vit_config;
/* vit_tiny_patch16_224: 224, patch 16, 3 channels, D 192, depth 12, 3 heads, mlp_ratio 4, qkv_bias,
 * eps 1e-6, no dropout. */
ct_vit_config ct_vit_config_tiny16(int64_t num_classes);
ct_module *ct_vit_new(const ct_vit_config *c);

#ifdef __cplusplus
}
#endif
#endif
