/* A view made in inference mode is an inference tensor exactly when its base is (PyTorch 1.13): a view of a
 * normal tensor stays normal and may be written outside inference mode when nothing requires grad; a view
 * of an inference tensor, made in any mode, is refused an in-place write outside inference mode. */
#include "test.h"

static const char *INF_MSG = "Inplace update to inference tensor outside InferenceMode is not allowed.";

TEST(inference_view_of_normal_tensor_is_normal) {
  int64_t n = 3;
  ct_tensor *a = ct_ones(1, &n, ct_opts());
  bool prev = ct_set_inference_mode(true);
  ct_tensor *v = ct_narrow(a, 0, 0, 2);
  ct_set_inference_mode(prev);
  CHECK(v != NULL);
  CHECK_OK(ct_add_scalar_(v, ct_si(1)));
  float buf[3];
  CHECK_OK(ct_copy_to_buffer(a, buf, CT_FLOAT32, 3));
  CHECK(buf[0] == 2.0f && buf[1] == 2.0f && buf[2] == 1.0f);
  ct_release(v);
  ct_release(a);
}

TEST(inference_view_of_inference_tensor_is_inference) {
  int64_t n = 3;
  bool prev = ct_set_inference_mode(true);
  ct_tensor *a = ct_ones(1, &n, ct_opts());
  ct_set_inference_mode(prev);
  ct_tensor *v = ct_narrow(a, 0, 1, 2); /* made outside inference mode */
  CHECK(a && v);
  CHECK_ERR(ct_add_scalar_(v, ct_si(1)), INF_MSG);
  float buf[3];
  CHECK_OK(ct_copy_to_buffer(a, buf, CT_FLOAT32, 3));
  CHECK(buf[0] == 1.0f && buf[1] == 1.0f && buf[2] == 1.0f);
  ct_release(v);
  ct_release(a);
}
