/* The public CUDA queries (include/ctorch/cuda.h) in every build: they forward to the
 * backend when it is compiled in (CT_HAVE_CUDA, set by cuda.mk where nvcc exists) and
 * answer "no CUDA" otherwise, so programs link and run the same everywhere. */
#include "ctorch/cuda.h"

#ifdef CT_HAVE_CUDA
int ct_cuda_impl_device_count(void);
const char *ct_cuda_impl_reason(void);
const char *ct_cuda_impl_name(int index);
ct_status ct_cuda_impl_sync(int index);
ct_status ct_cuda_impl_props(int index, ct_cuda_device_props *out);
ct_status ct_cuda_impl_mem_info(int index, int64_t *free_bytes, int64_t *total_bytes);
void ct_cuda_impl_set_tf32(bool allow);
bool ct_cuda_impl_tf32(void);
void ct_cuda_impl_set_conv_tf32(int mode);
bool ct_cuda_conv_tf32(void);
void ct_cuda_impl_set_bf16(bool on);
ct_status ct_cuda_impl_graph_begin(int dev);
bool ct_cuda_impl_capturing(int dev);
ct_cuda_graph *ct_cuda_impl_graph_end(int dev, ct_status body);
ct_status ct_cuda_impl_graph_replay(ct_cuda_graph *cg);
int64_t ct_cuda_impl_graph_nodes(const ct_cuda_graph *cg);
void ct_cuda_impl_graph_free(ct_cuda_graph *cg);
bool ct_cuda_impl_bf16(void);

int ct_cuda_device_count(void) { return ct_cuda_impl_device_count(); }
bool ct_cuda_is_available(void) { return ct_cuda_impl_device_count() > 0; }
const char *ct_cuda_unavailable_reason(void) { return ct_cuda_impl_reason(); }
const char *ct_cuda_device_name(int index) { return ct_cuda_impl_name(index); }
ct_status ct_cuda_synchronize(int index) { return ct_cuda_impl_sync(index); }
ct_status ct_cuda_get_device_properties(int index, ct_cuda_device_props *out) {
  return ct_cuda_impl_props(index, out);
}
ct_status ct_cuda_mem_get_info(int index, int64_t *free_bytes, int64_t *total_bytes) {
  return ct_cuda_impl_mem_info(index, free_bytes, total_bytes);
}
void ct_cuda_set_allow_tf32(bool allow) { ct_cuda_impl_set_tf32(allow); }
bool ct_cuda_allow_tf32(void) { return ct_cuda_impl_tf32(); }
void ct_cuda_set_cudnn_allow_tf32(int mode) { ct_cuda_impl_set_conv_tf32(mode); }
bool ct_cuda_cudnn_allow_tf32(void) { return ct_cuda_conv_tf32(); }
ct_status ct_cuda_set_autocast_bf16(bool on) {
  ct_cuda_impl_set_bf16(on);
  return CT_OK;
}
bool ct_cuda_autocast_bf16(void) { return ct_cuda_impl_bf16(); }
static bool bf16_outputs;
ct_status ct_cuda_set_autocast_bf16_outputs(bool on) {
  bf16_outputs = on;
  return CT_OK;
}
bool ct_cuda_autocast_bf16_outputs(void) { return bf16_outputs && ct_cuda_impl_bf16(); }
#include "core/internal.h"
/* the device check of every capture entry point */
static ct_status graph_device(int index) {
  if (index < 0 || index >= ct_cuda_impl_device_count())
    return CT_ERR(CT_ERR_RUNTIME, "CUDA graph capture: no CUDA device %d (%d available)", index,
                  ct_cuda_impl_device_count());
  return CT_OK;
}
ct_status ct_cuda_graph_begin(int index) {
  CT_TRY(graph_device(index));
  return ct_cuda_impl_graph_begin(index);
}
ct_cuda_graph *ct_cuda_graph_end(int index, ct_status body) {
  return graph_device(index) == CT_OK ? ct_cuda_impl_graph_end(index, body) : NULL;
}
ct_cuda_graph *ct_cuda_graph_capture(int index, ct_status (*fn)(void *user), void *user) {
  if (!fn) {
    ct_set_error(CT_ERR_VALUE, "CUDA graph capture: the step function is NULL");
    return NULL;
  }
  if (ct_cuda_graph_begin(index) != CT_OK) return NULL;
  return ct_cuda_graph_end(index, fn(user));
}
bool ct_cuda_is_capturing(int index) { return ct_cuda_impl_capturing(index); }
ct_status ct_cuda_graph_replay(ct_cuda_graph *g) { return ct_cuda_impl_graph_replay(g); }
int64_t ct_cuda_graph_num_nodes(const ct_cuda_graph *g) { return ct_cuda_impl_graph_nodes(g); }
void ct_cuda_graph_free(ct_cuda_graph *g) { ct_cuda_impl_graph_free(g); }
#else
#include "core/internal.h"
int ct_cuda_device_count(void) { return 0; }
bool ct_cuda_is_available(void) { return false; }
const char *ct_cuda_unavailable_reason(void) { return "ctorch was built without CUDA (no nvcc at build time)"; }
const char *ct_cuda_device_name(int index) { (void)index; return ""; }
ct_status ct_cuda_synchronize(int index) {
  (void)index;
  return CT_ERR(CT_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
}
ct_status ct_cuda_get_device_properties(int index, ct_cuda_device_props *out) {
  (void)index, (void)out;
  return CT_ERR(CT_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
}
ct_status ct_cuda_mem_get_info(int index, int64_t *free_bytes, int64_t *total_bytes) {
  (void)index, (void)free_bytes, (void)total_bytes;
  return CT_ERR(CT_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
}
static bool tf32_flag;
void ct_cuda_set_allow_tf32(bool allow) { tf32_flag = allow; }
bool ct_cuda_allow_tf32(void) { return tf32_flag; }
static int conv_tf32_mode = -1;
void ct_cuda_set_cudnn_allow_tf32(int mode) { conv_tf32_mode = mode < 0 ? -1 : mode > 0; }
bool ct_cuda_cudnn_allow_tf32(void) { return conv_tf32_mode < 0 ? tf32_flag : conv_tf32_mode != 0; }
ct_status ct_cuda_set_autocast_bf16(bool on) {
  return on ? CT_ERR(CT_ERR_RUNTIME, "Torch not compiled with CUDA enabled") : CT_OK;
}
bool ct_cuda_autocast_bf16(void) { return false; }
ct_status ct_cuda_set_autocast_bf16_outputs(bool on) {
  return on ? CT_ERR(CT_ERR_RUNTIME, "Torch not compiled with CUDA enabled") : CT_OK;
}
bool ct_cuda_autocast_bf16_outputs(void) { return false; }
ct_cuda_graph *ct_cuda_graph_capture(int index, ct_status (*fn)(void *user), void *user) {
  (void)index, (void)fn, (void)user;
  ct_set_error(CT_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
  return NULL;
}
ct_status ct_cuda_graph_replay(ct_cuda_graph *g) {
  (void)g;
  return CT_ERR(CT_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
}
bool ct_cuda_is_capturing(int index) {
  (void)index;
  return false;
}
ct_status ct_cuda_graph_begin(int index) {
  (void)index;
  return CT_ERR(CT_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
}
ct_cuda_graph *ct_cuda_graph_end(int index, ct_status body) {
  (void)index;
  if (body == CT_OK) ct_set_error(CT_ERR_RUNTIME, "Torch not compiled with CUDA enabled");
  return NULL;
}
int64_t ct_cuda_graph_num_nodes(const ct_cuda_graph *g) { (void)g; return 0; }
void ct_cuda_graph_free(ct_cuda_graph *g) { (void)g; }
#endif
