/* The public CUDA queries (include/ctorch/cuda.h) in every build: they forward to the
 * backend when it is compiled in (CT_HAVE_CUDA, set by cuda.mk where nvcc exists) and
 * answer "no CUDA" otherwise, so programs link and run the same everywhere. */
#include "ctorch/cuda.h"

#ifdef CT_HAVE_CUDA
int ct_cuda_impl_device_count(void);
const char *ct_cuda_impl_reason(void);
const char *ct_cuda_impl_name(int index);
ct_status ct_cuda_impl_sync(int index);
void ct_cuda_impl_set_tf32(bool allow);
bool ct_cuda_impl_tf32(void);

int ct_cuda_device_count(void) { return ct_cuda_impl_device_count(); }
bool ct_cuda_is_available(void) { return ct_cuda_impl_device_count() > 0; }
const char *ct_cuda_unavailable_reason(void) { return ct_cuda_impl_reason(); }
const char *ct_cuda_device_name(int index) { return ct_cuda_impl_name(index); }
ct_status ct_cuda_synchronize(int index) { return ct_cuda_impl_sync(index); }
void ct_cuda_set_allow_tf32(bool allow) { ct_cuda_impl_set_tf32(allow); }
bool ct_cuda_allow_tf32(void) { return ct_cuda_impl_tf32(); }
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
static bool tf32_flag;
void ct_cuda_set_allow_tf32(bool allow) { tf32_flag = allow; }
bool ct_cuda_allow_tf32(void) { return tf32_flag; }
#endif
