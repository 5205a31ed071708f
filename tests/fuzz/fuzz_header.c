/* libFuzzer target: the JSON header parser alone (ct_safetensors_parse_header). The first
 * 8 bytes of an input are the data length (little-endian; a negative value means
 * unknown), the rest is the header text. What the parser accepts must satisfy the
 * invariants the loader relies on. Build and run with `make fuzz`. */
#include "ctorch.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *why) {
  fprintf(stderr, "fuzz_header: %s\n", why);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  uint64_t u = 0;
  for (int k = 7; k >= 0; k--) u = (u << 8) | data[k];
  int64_t data_len = (int64_t)u; /* negative: unknown */
  ct_clear_error();
  ct_safetensors_info *I = ct_safetensors_parse_header((const char *)data + 8, size - 8, data_len);
  if (!I) {
    if (!ct_last_error()[0]) die("refused without a message");
    return 0;
  }
  int64_t at = 0;
  for (int64_t i = 0; i < ct_safetensors_info_len(I); i++) {
    ct_safetensors_entry e = ct_safetensors_info_entry(I, i);
    if (!e.name || !e.dtype_name || e.ndim < 0 || (e.ndim && !e.shape)) die("incomplete entry");
    if (e.begin != at || e.end < e.begin) die("entries not contiguous in offset order");
    int64_t numel = 1;
    for (int d = 0; d < e.ndim; d++) {
      if (e.shape[d] < 0 || __builtin_mul_overflow(numel, e.shape[d], &numel)) die("bad shape accepted");
    }
    if (numel != e.numel) die("numel disagrees with the shape");
    at = e.end;
    for (int64_t j = 0; j < i; j++)
      if (!strcmp(ct_safetensors_info_entry(I, j).name, e.name)) die("duplicate name accepted");
  }
  if (data_len >= 0 && at != data_len) die("buffer not covered exactly");
  for (int64_t i = 0; i < ct_safetensors_info_meta_len(I); i++)
    if (!ct_safetensors_info_meta_key(I, i) || !ct_safetensors_info_meta_value(I, i)) die("incomplete metadata");
  ct_safetensors_info_free(I);
  return 0;
}
