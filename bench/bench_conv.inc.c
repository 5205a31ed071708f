/* Convolution benchmarks of issue 3, included by bench_main.c (they use its emit, torch_time, wanted,
 * quick, die_if_null and now): conv2d forward, and forward + backward (input and weight gradients,
 * through autograd as training runs it), on ResNet-18's layer shapes at 224x224 with batch 16 (4 with
 * --quick), float32, at 1 thread and at --threads N. The PyTorch side is bench/bench_conv_torch.py
 * (run through run_torch, same thread counts); the names match it exactly. Each line also reports
 * ctorch's GFLOP/s (forward: 2*N*O*C*k*k*OH*OW; forward + backward: 3x that). */

/* the same table as bench/bench_conv_layers.py */
static const struct {
  const char *name;
  int64_t C, O, H, W, k, s, p;
} conv_layers[] = {
    {"conv1", 3, 64, 224, 224, 7, 2, 3},         {"layer1", 64, 64, 56, 56, 3, 1, 1},
    {"layer2_0_c1", 64, 128, 56, 56, 3, 2, 1},   {"layer2_ds", 64, 128, 56, 56, 1, 2, 0},
    {"layer2", 128, 128, 28, 28, 3, 1, 1},       {"layer3_0_c1", 128, 256, 28, 28, 3, 2, 1},
    {"layer3_ds", 128, 256, 28, 28, 1, 2, 0},    {"layer3", 256, 256, 14, 14, 3, 1, 1},
    {"layer4_0_c1", 256, 512, 14, 14, 3, 2, 1},  {"layer4_ds", 256, 512, 14, 14, 1, 2, 0},
    {"layer4", 512, 512, 7, 7, 3, 1, 1},
};

typedef struct {
  ct_tensor *x, *w, *gy;
  int64_t s[2], p[2], one[2];
  bool backward;
} conv_bench_ctx;

static void run_conv(void *p) {
  conv_bench_ctx *c = p;
  ct_scope *sc = ct_scope_begin();
  bool prev = ct_set_grad_enabled(c->backward);
  ct_tensor *y = ct_conv2d(c->x, c->w, NULL, c->s, c->p, c->one, 1);
  die_if_null(y);
  if (c->backward) {
    ct_set_grad(c->x, NULL);
    ct_set_grad(c->w, NULL);
    if (ct_backward(y, c->gy, false, false) != CT_OK) die_if_null(NULL);
  }
  ct_set_grad_enabled(prev);
  ct_scope_end(sc);
}

static void bench_conv(int threads) {
  int64_t batch = quick ? 4 : 16;
  int reps = quick ? 3 : 10;
  double budget = quick ? 1.0 : 4.0;
  int tl[2] = {1, threads};
  for (int ti = 0; ti < (threads > 1 ? 2 : 1); ti++) {
    int t = tl[ti];
    ct_set_num_threads(t);
    for (size_t i = 0; i < sizeof conv_layers / sizeof conv_layers[0]; i++) {
      char nf[96], nb[96];
      snprintf(nf, sizeof nf, "conv_r18_%s_b%lld_fwd_t%d", conv_layers[i].name, (long long)batch, t);
      snprintf(nb, sizeof nb, "conv_r18_%s_b%lld_fwdbwd_t%d", conv_layers[i].name, (long long)batch, t);
      if (!wanted(nf) && !wanted(nb)) continue;
      int64_t C = conv_layers[i].C, O = conv_layers[i].O, k = conv_layers[i].k, s = conv_layers[i].s,
              p = conv_layers[i].p;
      int64_t OH = (conv_layers[i].H + 2 * p - k) / s + 1, OW = (conv_layers[i].W + 2 * p - k) / s + 1;
      int64_t xs[4] = {batch, C, conv_layers[i].H, conv_layers[i].W}, ws[4] = {O, C, k, k}, ys[4] = {batch, O, OH, OW};
      conv_bench_ctx c = {NULL, NULL, NULL, {s, s}, {p, p}, {1, 1}, false};
      c.x = ct_keep(ct_randn(4, xs, ct_opts(), NULL));
      c.w = ct_keep(ct_randn(4, ws, ct_opts(), NULL));
      c.gy = ct_keep(ct_randn(4, ys, ct_opts(), NULL));
      die_if_null(c.x && c.w && c.gy ? c.x : NULL);
      double flop = 2.0 * (double)(batch * O * C * k * k * OH * OW);
      char extra[64];
      if (wanted(nf)) {
        double tf = time_it(run_conv, &c, reps, budget);
        snprintf(extra, sizeof extra, "(%.1f GFLOP/s)", flop / tf / 1e9);
        double peer = torch_time(nf);
        if (peer > 0) emit(nf, tf, peer, "pytorch", "s", false, extra);
        else printf("%-40s ours %9.3f ms %s (no PyTorch peer)\n", nf, tf * 1e3, extra);
      }
      if (wanted(nb)) {
        ct_requires_grad_(c.x, true);
        ct_requires_grad_(c.w, true);
        c.backward = true;
        double tb = time_it(run_conv, &c, reps, budget);
        snprintf(extra, sizeof extra, "(%.1f GFLOP/s)", 3 * flop / tb / 1e9);
        double peer = torch_time(nb);
        if (peer > 0) emit(nb, tb, peer, "pytorch", "s", false, extra);
        else printf("%-40s ours %9.3f ms %s (no PyTorch peer)\n", nb, tb * 1e3, extra);
      }
      ct_release(c.x);
      ct_release(c.w);
      ct_release(c.gy);
    }
  }
  ct_set_num_threads(threads);
}
