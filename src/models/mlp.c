/* torchvision.ops.MLP as a Sequential: [Linear, ReLU, Dropout] per hidden width, then Linear,
 * Dropout, so the parameter names are torchvision's ("0.weight", "3.weight", ...). */
#include "vision_internal.h"
#include <math.h>

/* Appends mod; a NULL mod (a failed constructor) keeps its own error. */
static ct_status seq_add(ct_module *seq, ct_module *mod) {
  return mod ? ct_sequential_append(seq, mod) : ct_last_status();
}

ct_module *ct_mlp_new(int64_t in_features, int n, const int64_t *channels, double dropout) {
  if (n < 1 || !channels) {
    ct_set_error(CT_ERR_VALUE, "MLP: hidden_channels must list at least one width");
    return NULL;
  }
  if (!(dropout >= 0 && dropout <= 1)) {
    ct_set_error(CT_ERR_VALUE, "dropout probability has to be between 0 and 1, but got %g", dropout);
    return NULL;
  }
  ct_module *seq = ct_sequential_new(0, NULL);
  if (!seq) return NULL;
  int64_t in = in_features;
  for (int i = 0; i < n; i++) {
    ct_status st = seq_add(seq, ct_linear_new(in, channels[i], true));
    if (!st && i + 1 < n) st = seq_add(seq, ct_relu_new());
    if (!st) st = seq_add(seq, ct_dropout_new(dropout));
    if (st) {
      ct_module_free(seq);
      return NULL;
    }
    in = channels[i];
  }
  return seq;
}
