/* The CUDA backend's switches and queries. Every function exists in every build:
 * without the backend compiled in (no nvcc at build time) or without a driver and
 * device at run time, the device count is 0 and the reason says why. */
#ifndef CTORCH_CUDA_H
#define CTORCH_CUDA_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

static inline ct_device ct_cuda(int index) { ct_device d = {CT_DEVICE_CUDA, index}; return d; }
/* torch.cuda.device_count(): 0 without the backend, a driver or a device. */
int ct_cuda_device_count(void);
bool ct_cuda_is_available(void);
/* Why CUDA is not available ("" when it is), e.g. "CUDA driver not found". */
const char *ct_cuda_unavailable_reason(void);
/* The device's name ("NVIDIA H200"), "" if none. */
const char *ct_cuda_device_name(int index);
/* torch.cuda.get_device_properties: what the driver reports of device `index`. */
typedef struct {
  char name[256];
  int64_t total_memory; /* bytes */
  int major, minor;     /* compute capability */
  int multi_processor_count;
} ct_cuda_device_props;
ct_status ct_cuda_get_device_properties(int index, ct_cuda_device_props *out);
/* torch.cuda.mem_get_info: the device's free and total bytes as the driver sees them now. */
ct_status ct_cuda_mem_get_info(int index, int64_t *free_bytes, int64_t *total_bytes);
/* Waits for every queued kernel and copy of the device; reports an asynchronous error. */
ct_status ct_cuda_synchronize(int index);
/* torch.backends.cuda.matmul.allow_tf32 (default false, as PyTorch): float32 matrix
 * products on the TF32 tensor cores (10-bit mantissa inputs, float32 accumulation). */
void ct_cuda_set_allow_tf32(bool allow);
bool ct_cuda_allow_tf32(void);
/* torch.backends.cudnn.allow_tf32: float32 convolutions on the TF32 tensor cores. mode -1 (the default in C)
 * follows ct_cuda_set_allow_tf32; 0 / 1 set it apart (Python's torch.backends.cudnn.allow_tf32 starts at 1, as
 * PyTorch's). */
void ct_cuda_set_cudnn_allow_tf32(int mode);
bool ct_cuda_cudnn_allow_tf32(void);
/* bf16 mixed precision (an autocast-style mode for the training step): while on, float32 matrix
 * products on CUDA (mm, bmm, addmm, baddbmm, linear) round their inputs to bfloat16 and multiply on
 * the bf16 tensor cores with float32 accumulation and float32 results; parameters, gradients,
 * optimizer state, reductions, norms and softmax stay float32 (the master weights). It takes
 * precedence over TF32. Fails only when turned on in a build without CUDA. */
ct_status ct_cuda_set_autocast_bf16(bool on);
bool ct_cuda_autocast_bf16(void);
/* PyTorch's autocast outputs (off by default): while on together with ct_cuda_set_autocast_bf16, the
 * ops of autocast's lower-precision list (mm, addmm, bmm, baddbmm, and matmul / linear through them)
 * cast their float32 CUDA operands to bfloat16 (recorded casts: gradients come back as float32) and
 * return bfloat16, and ops of its float32 list (logsumexp, cross_entropy) cast bfloat16 CUDA inputs
 * to float32 first; activations between products are then bfloat16, as in torch.autocast. CPU tensors
 * never change. Fails only when turned on in a build without CUDA. */
ct_status ct_cuda_set_autocast_bf16_outputs(bool on);
bool ct_cuda_autocast_bf16_outputs(void); /* both switches on */

/* CUDA graphs (torch.cuda.CUDAGraph): a compiled step. ct_cuda_graph_capture calls fn(user) once
 * with every launch on device `index` recorded instead of run (nothing executes during the
 * capture), and returns the graph; each ct_cuda_graph_replay runs the recorded launches again on
 * the same device memory. Rules, as PyTorch's: run the step eagerly once first (so that the
 * gradients, optimizer state and library handles exist), keep the inputs in fixed device tensors
 * and copy each new batch into them before a replay, keep the outputs' handles and read them
 * after it, and make no host<->device copy, host read or synchronize inside the step (the capture
 * fails with the reason). Host-side values are frozen into the graph: scalars such as a learning
 * rate or Adam's bias corrections stay as they were at capture. Memory allocated during the
 * capture stays reserved for the graphs until the last one is freed. Index checks inside a
 * replayed graph are not reported (the kernels skip a bad index). NULL with the error on failure. */
typedef struct ct_cuda_graph ct_cuda_graph;
ct_cuda_graph *ct_cuda_graph_capture(int index, ct_status (*fn)(void *user), void *user);
ct_status ct_cuda_graph_replay(ct_cuda_graph *g);
int64_t ct_cuda_graph_num_nodes(const ct_cuda_graph *g); /* the launches and copies recorded */
void ct_cuda_graph_free(ct_cuda_graph *g);                 /* NULL-safe; waits for the device */
/* The capture in two halves, for a step that is not one C function (torch.cuda.CUDAGraph's capture_begin /
 * capture_end, Python's `with torch.cuda.graph(g):`): between ct_cuda_graph_begin and ct_cuda_graph_end the
 * device's launches are recorded, under the same rules. body is the step's status: anything but CT_OK ends the
 * capture, discards it and returns NULL with the step's error left in place. */
ct_status ct_cuda_graph_begin(int index);
ct_cuda_graph *ct_cuda_graph_end(int index, ct_status body);
/* torch.cuda.is_current_stream_capturing: device `index` is between ct_cuda_graph_begin and _end (or inside
 * ct_cuda_graph_capture's fn). Ops whose checks read values on the host skip those reads then (a bad index is
 * skipped by the kernels, as above). */
bool ct_cuda_is_capturing(int index);

/* ResNet inference on CUDA (torchvision's BasicBlock ResNets, ct_resnet_basic_new): each batch norm's
 * running statistics folded into the convolution before it (w * gamma / sqrt(var + eps), beta - mean *
 * gamma / sqrt(var + eps), eps 1e-5 as those models'), and bias, ReLU and the residual add fused into
 * the convolution (one cuDNN call each); max pool, average pool and the classifier as the model's.
 * The model must be in eval mode with float32 parameters on one CUDA device; the plan copies the folded
 * weights at creation (later changes to the model are not seen). Forward takes [N, 3, H, W] float32 on
 * that device and returns the logits, without autograd; it can be captured in a CUDA graph. NULL with
 * the error on failure (no CUDA, no cuDNN, another model, training mode). */
struct ct_module; /* include/ctorch/module.h */
typedef struct ct_cuda_resnet_infer ct_cuda_resnet_infer;
ct_cuda_resnet_infer *ct_cuda_resnet_infer_new(struct ct_module *resnet);
ct_tensor *ct_cuda_resnet_infer_forward(ct_cuda_resnet_infer *r, const ct_tensor *x);
void ct_cuda_resnet_infer_free(ct_cuda_resnet_infer *r); /* NULL-safe */

#ifdef __cplusplus
}
#endif
#endif
