/* libFuzzer target: the whole-file safetensors reader (ct_safetensors_load_buffer).
 * Any input must be refused with a message or accepted; an accepted file must round-trip
 * through the writer to identical tensors, agree with the header-only reader, and leak
 * no tensor handle. Build and run with `make fuzz`. */
#include "ctorch.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *why) {
  fprintf(stderr, "fuzz_safetensors: %s (last error: %s)\n", why, ct_last_error());
  abort();
}

static int same(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b || ct_tensor_dtype(a) != ct_tensor_dtype(b) || ct_ndim(a) != ct_ndim(b)) return 0;
  for (int d = 0; d < ct_ndim(a); d++)
    if (ct_shape(a)[d] != ct_shape(b)[d]) return 0;
  size_t n = (size_t)ct_numel(a) * ct_dtype_size(ct_tensor_dtype(a));
  return n == 0 || !memcmp(ct_data_ptr(a), ct_data_ptr(b), n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int64_t live = ct_live_tensors();
  ct_dict *d = NULL;
  ct_clear_error();
  ct_status st = ct_safetensors_load_buffer(data, size, &d);
  ct_safetensors_info *info = ct_safetensors_info_buffer(data, size);
  if (st != CT_OK) {
    if (d) die("failed load returned a dict");
    if (!ct_last_error()[0]) die("refused without a message");
  } else {
    if (!d || !info) die("load accepted what the header reader refused");
    if (ct_safetensors_info_len(info) != ct_dict_len(d)) die("tensor count differs from the header reader");
    void *buf = NULL;
    size_t n = 0;
    if (ct_safetensors_save_buffer(d, &buf, &n) != CT_OK) die("cannot save what was loaded");
    ct_dict *e = NULL;
    if (ct_safetensors_load_buffer(buf, n, &e) != CT_OK) die("cannot load what was saved");
    if (ct_dict_len(e) != ct_dict_len(d) || ct_dict_meta_len(e) != ct_dict_meta_len(d)) die("round trip changed counts");
    for (int64_t i = 0; i < ct_dict_len(d); i++)
      if (!same(ct_dict_tensor(d, i), ct_dict_get(e, ct_dict_name(d, i)))) die("round trip changed a tensor");
    for (int64_t i = 0; i < ct_dict_meta_len(d); i++) {
      const char *k = ct_dict_meta_key(d, i), *v = ct_dict_get_meta(e, k);
      if (!v || strcmp(v, ct_dict_get_meta(d, k))) die("round trip changed metadata");
    }
    ct_dict_free(e);
    free(buf);
  }
  ct_safetensors_info_free(info);
  ct_dict_free(d);
  if (ct_live_tensors() != live) die("tensor handles leaked");
  return 0;
}
