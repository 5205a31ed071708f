/* torch.nn.init's functions used by the layers' default initialisations. Each computes its
 * bound in double exactly as PyTorch's Python code does (same operations, same order) and
 * fills with uniform_/normal_ from the default generator, so the draws match bit for bit. */
#include "module_internal.h"
#include <math.h>

ct_status ct_init_fans(const ct_tensor *w, int64_t *fan_in, int64_t *fan_out) {
  if (w->ndim < 2)
    return CT_ERR(CT_ERR_VALUE, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t rf = 1;
  for (int d = 2; d < w->ndim; d++) rf *= w->shape[d];
  *fan_in = w->shape[1] * rf;
  *fan_out = w->shape[0] * rf;
  return CT_OK;
}

static ct_status no_grad_uniform(ct_tensor *t, double lo, double hi) {
  bool prev = ct_set_grad_enabled(false);
  ct_status st = ct_uniform_(t, lo, hi, NULL);
  ct_set_grad_enabled(prev);
  return st;
}

/* kaiming_uniform_(w, a, mode='fan_in', nonlinearity='leaky_relu') */
ct_status ct_init_kaiming_uniform_a(ct_tensor *w, double a) {
  if (ct_numel(w) == 0) return CT_OK; /* PyTorch: "Initializing zero-element tensors is a no-op" */
  int64_t fan_in, fan_out;
  CT_TRY(ct_init_fans(w, &fan_in, &fan_out));
  double gain = sqrt(2.0 / (1 + a * a));
  double std = gain / sqrt((double)fan_in);
  double bound = sqrt(3.0) * std;
  return no_grad_uniform(w, -bound, bound);
}

/* the bias init of Linear and _ConvNd: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in of the weight */
ct_status ct_init_fan_in_uniform(ct_tensor *b, const ct_tensor *w) {
  int64_t fan_in, fan_out;
  CT_TRY(ct_init_fans(w, &fan_in, &fan_out));
  double bound = fan_in > 0 ? 1 / sqrt((double)fan_in) : 0;
  return no_grad_uniform(b, -bound, bound);
}

ct_status ct_init_xavier_uniform(ct_tensor *w, double gain) {
  int64_t fan_in, fan_out;
  CT_TRY(ct_init_fans(w, &fan_in, &fan_out));
  double std = gain * sqrt(2.0 / (double)(fan_in + fan_out));
  double a = sqrt(3.0) * std;
  return no_grad_uniform(w, -a, a);
}
