/* libFuzzer target: the IDX reader with its gzip/DEFLATE decoder (ct_idx_load_buffer).
 * Any input must be refused with a message or accepted; an accepted input must give a tensor
 * whose byte size matches its header, decode the same way twice, and leak no tensor handle.
 * Build and run with `make fuzz`. */
#include "ctorch.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *why) {
  fprintf(stderr, "fuzz_idx: %s (last error: %s)\n", why, ct_last_error());
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int64_t live = ct_live_tensors();
  ct_clear_error();
  ct_tensor *t = ct_idx_load_buffer(data, size);
  if (!t) {
    if (!ct_last_error()[0]) die("refused without a message");
  } else {
    size_t bytes = (size_t)ct_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
    if (ct_ndim(t) < 1 || ct_ndim(t) > CT_MAX_DIMS) die("accepted a tensor with a bad rank");
    /* a raw file is exactly header + data; a gzip file decodes to that */
    if (!(size >= 2 && data[0] == 0x1f && data[1] == 0x8b) && size != 4 + 4 * (size_t)ct_ndim(t) + bytes)
      die("raw file size disagrees with the tensor");
    ct_tensor *u = ct_idx_load_buffer(data, size);
    if (!u || ct_numel(u) != ct_numel(t) || (bytes && memcmp(ct_data_ptr(t), ct_data_ptr(u), bytes)))
      die("decoding twice gave different results");
    ct_release(u);
    ct_release(t);
  }
  if (ct_live_tensors() != live) die("tensor handles leaked");
  return 0;
}
