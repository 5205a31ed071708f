/* ctorch train-cnn: trains the LeNet-style CNN of include/ctorch/vision.h on an MNIST-format IDX
 * pair (gzip read natively), with Adam and a per-step cosine learning-rate decay; prints a progress
 * bar, per-epoch loss and held-out accuracy, and writes a loss/accuracy SVG plot, a checkpoint
 * (model + optimizer + scheduler + shuffle RNG, io.h's format), the model's weights and a JSON log.
 * bench/train_cnn_ref.py is the same recipe in PyTorch (same init from the seed, same batches). */
#include "cli.h"
#include "ctorch.h"
#include "util/trainlog.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  const char *data, *out;
  int64_t epochs, batch, seed, threads, train_size, eval_size, c1, c2, hidden;
  double lr;
  bool quiet;
} cnn_opts;

static void defaults(cnn_opts *o) {
  memset(o, 0, sizeof *o);
  o->out = "train-cnn-out";
  o->epochs = 5;
  o->batch = 64;
  o->seed = 1;
  o->train_size = 8000;
  o->eval_size = 2000;
  o->lr = 2e-3;
  ct_cnn_config c = ct_cnn_config_mnist();
  o->c1 = c.conv1_channels;
  o->c2 = c.conv2_channels;
  o->hidden = c.hidden;
}

static void usage(void) {
  cnn_opts d;
  defaults(&d);
  printf("usage: ctorch train-cnn --data DIR [options]\n\n"
         "Trains a LeNet-style CNN (conv1 -> ReLU -> max-pool -> conv2 -> ReLU -> max-pool -> fc1 -> ReLU -> fc2)\n"
         "on MNIST-format IDX files in DIR: train-images-idx3-ubyte[.gz] + train-labels-idx1-ubyte[.gz] for\n"
         "training and the t10k pair for evaluation, or, when only one pair is there, its first --train-size\n"
         "images for training and its last --eval-size for evaluation.\n\n"
         "  --data DIR         the IDX files (required)\n"
         "  --epochs N         passes over the training images (default %lld)\n"
         "  --batch N          images per step (default %lld)\n"
         "  --lr X             Adam's learning rate, decayed to 0 by a cosine over all steps (default %g)\n"
         "  --seed N           initialisation (torch.manual_seed) and shuffling (default %lld)\n"
         "  --train-size N     training images taken from a lone pair (default %lld)\n"
         "  --eval-size N      held-out images taken from its end (default %lld)\n"
         "  --conv1 N          channels of conv1 (default %lld)\n"
         "  --conv2 N          channels of conv2 (default %lld)\n"
         "  --hidden N         width of fc1 (default %lld)\n"
         "  --threads N        CPU threads (default: all cores)\n"
         "  --out DIR          writes checkpoint.safetensors, model.safetensors, training.svg and log.json\n"
         "                     (default %s)\n"
         "  --quiet            no progress bar\n",
         (long long)d.epochs, (long long)d.batch, d.lr, (long long)d.seed, (long long)d.train_size,
         (long long)d.eval_size, (long long)d.c1, (long long)d.c2, (long long)d.hidden, d.out);
}

static bool parse_i64(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi) {
    fprintf(stderr, "ctorch train-cnn: %s expects an integer in [%lld, %lld], got '%s'\n", opt, (long long)lo,
            (long long)hi, v);
    return false;
  }
  *out = x;
  return true;
}

static bool parse_f64(const char *opt, const char *v, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || *end || !(x > lo && x <= hi)) {
    fprintf(stderr, "ctorch train-cnn: %s expects a number in (%g, %g], got '%s'\n", opt, lo, hi, v);
    return false;
  }
  *out = x;
  return true;
}

/* 0 ok, 1 error, 2 help shown */
static int parse(int argc, char **argv, cnn_opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage();
      return 2;
    }
    if (!strcmp(a, "--quiet")) {
      o->quiet = true;
      continue;
    }
    if (strncmp(a, "--", 2)) {
      fprintf(stderr, "ctorch train-cnn: unexpected argument '%s' (see --help)\n", a);
      return 1;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "ctorch train-cnn: %s needs a value\n", a);
      return 1;
    }
    const char *v = argv[++i];
    bool ok = true;
    const int64_t BIG = INT64_C(1) << 30;
    if (!strcmp(a, "--data")) o->data = v;
    else if (!strcmp(a, "--out")) o->out = v;
    else if (!strcmp(a, "--epochs")) ok = parse_i64(a, v, 1, 100000, &o->epochs);
    else if (!strcmp(a, "--batch")) ok = parse_i64(a, v, 1, 1 << 20, &o->batch);
    else if (!strcmp(a, "--seed")) ok = parse_i64(a, v, 0, INT64_MAX, &o->seed);
    else if (!strcmp(a, "--threads")) ok = parse_i64(a, v, 1, 4096, &o->threads);
    else if (!strcmp(a, "--train-size")) ok = parse_i64(a, v, 1, BIG, &o->train_size);
    else if (!strcmp(a, "--eval-size")) ok = parse_i64(a, v, 1, BIG, &o->eval_size);
    else if (!strcmp(a, "--conv1")) ok = parse_i64(a, v, 1, 4096, &o->c1);
    else if (!strcmp(a, "--conv2")) ok = parse_i64(a, v, 1, 4096, &o->c2);
    else if (!strcmp(a, "--hidden")) ok = parse_i64(a, v, 1, 1 << 16, &o->hidden);
    else if (!strcmp(a, "--lr")) ok = parse_f64(a, v, 0, 10, &o->lr);
    else {
      fprintf(stderr, "ctorch train-cnn: unknown option '%s' (see --help)\n", a);
      ok = false;
    }
    if (!ok) return 1;
  }
  if (!o->data) {
    fprintf(stderr, "ctorch train-cnn: --data DIR is required (a directory with MNIST IDX files; see --help)\n");
    return 1;
  }
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* uint8 images [N, H, W] -> float32 [N, 1, H, W], ((x / 255) - 0.1307) / 0.3081 (MNIST's mean and std). */
static ct_tensor *prep_images(const ct_tensor *u8) {
  ct_scope *s = ct_scope_begin();
  ct_tensor *f = ct_to_dtype(u8, CT_FLOAT32);
  f = f ? ct_div_scalar(f, ct_sf(255.0)) : NULL;
  f = f ? ct_sub_scalar(f, ct_sf(0.1307)) : NULL;
  f = f ? ct_div_scalar(f, ct_sf(0.3081)) : NULL;
  f = f ? ct_unsqueeze(f, 1) : NULL;
  f = f ? ct_contiguous(f) : NULL;
  if (f) ct_keep(f);
  ct_scope_end(s);
  return f;
}

typedef struct {
  ct_tensor *xtr, *ytr, *xte, *yte;
  char source[256];
} dataset;

static void dataset_free(dataset *d) {
  ct_release(d->xtr);
  ct_release(d->ytr);
  ct_release(d->xte);
  ct_release(d->yte);
}

static bool load_data(const cnn_opts *o, dataset *d) {
  memset(d, 0, sizeof *d);
  bool has_train = ct_mnist_exists(o->data, "train"), has_test = ct_mnist_exists(o->data, "t10k");
  ct_tensor *xi = NULL, *yi = NULL;
  if (has_train && has_test) {
    ct_tensor *xe = NULL, *ye = NULL;
    if (ct_mnist_load(o->data, "train", &xi, &yi) || ct_mnist_load(o->data, "t10k", &xe, &ye)) {
      fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error());
      ct_release(xi);
      ct_release(yi);
      return false;
    }
    d->xtr = prep_images(xi);
    d->ytr = ct_retain(yi);
    d->xte = prep_images(xe);
    d->yte = ct_retain(ye);
    snprintf(d->source, sizeof d->source, "train set (%lld images), evaluated on the t10k set (%lld)",
             (long long)ct_size(xi, 0), (long long)ct_size(xe, 0));
    ct_release(xi);
    ct_release(yi);
    ct_release(xe);
    ct_release(ye);
  } else if (has_train || has_test) {
    const char *prefix = has_train ? "train" : "t10k";
    if (ct_mnist_load(o->data, prefix, &xi, &yi)) {
      fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error());
      return false;
    }
    int64_t n = ct_size(xi, 0);
    if (o->train_size + o->eval_size > n) {
      fprintf(stderr, "ctorch train-cnn: the %s set has %lld images, fewer than --train-size %lld + --eval-size %lld\n",
              prefix, (long long)n, (long long)o->train_size, (long long)o->eval_size);
      ct_release(xi);
      ct_release(yi);
      return false;
    }
    ct_tensor *x = prep_images(xi);
    if (x) {
      d->xtr = ct_narrow(x, 0, 0, o->train_size);
      d->xte = ct_narrow(x, 0, n - o->eval_size, o->eval_size);
      d->ytr = ct_narrow(yi, 0, 0, o->train_size);
      d->yte = ct_narrow(yi, 0, n - o->eval_size, o->eval_size);
    }
    ct_release(x);
    snprintf(d->source, sizeof d->source, "%s set: the first %lld images for training, the last %lld held out", prefix,
             (long long)o->train_size, (long long)o->eval_size);
    ct_release(xi);
    ct_release(yi);
  } else {
    fprintf(stderr,
            "ctorch train-cnn: no MNIST IDX pair in %s (expected t10k-images-idx3-ubyte.gz + t10k-labels-idx1-ubyte.gz "
            "or the train-* pair, gzip-compressed or not)\n",
            o->data);
    return false;
  }
  if (!d->xtr || !d->ytr || !d->xte || !d->yte) {
    fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error());
    dataset_free(d);
    return false;
  }
  return true;
}

/* Held-out accuracy in percent (eval mode, no grad, batches of 500). */
static double evaluate(ct_module *m, const dataset *d) {
  ct_module_eval(m);
  bool prev = ct_set_grad_enabled(false);
  int64_t n = ct_size(d->xte, 0), correct = 0;
  for (int64_t s = 0; s < n; s += 500) {
    int64_t len = n - s < 500 ? n - s : 500;
    ct_scope *sc = ct_scope_begin();
    int64_t dim = 1;
    ct_tensor *out = ct_module_forward(m, ct_narrow(d->xte, 0, s, len));
    ct_tensor *pred = out ? ct_argmax(out, &dim, false) : NULL;
    ct_tensor *hits = pred ? ct_sum(ct_eq(pred, ct_narrow(d->yte, 0, s, len))) : NULL;
    int64_t h = 0;
    if (!hits || ct_item_int64(hits, &h)) {
      ct_scope_end(sc);
      ct_set_grad_enabled(prev);
      return NAN;
    }
    correct += h;
    ct_scope_end(sc);
  }
  ct_set_grad_enabled(prev);
  ct_module_train(m, true);
  return 100.0 * (double)correct / (double)n;
}

static bool mkdir_p(const char *dir) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) return false;
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return false;
      *p = '/';
    }
  return mkdir(tmp, 0755) == 0 || errno == EEXIST;
}

typedef struct {
  double *step_x, *step_loss; /* per step (x in epochs) */
  double *ep_x, *ep_loss, *ep_acc, *ep_sec;
  int64_t n_steps, n_ep;
} history;

static bool write_outputs(const cnn_opts *o, ct_module *m, ct_optim *opt, ct_sched *sched, ct_generator *g,
                          const history *h, const dataset *d, int64_t step) {
  char path[4200];
  bool ok = true;
  /* the plot: per-step training loss and per-epoch held-out accuracy (as a fraction), one axis */
  double *acc = malloc(sizeof(double) * (size_t)(h->n_ep ? h->n_ep : 1));
  if (acc)
    for (int64_t i = 0; i < h->n_ep; i++) acc[i] = h->ep_acc[i] / 100.0;
  ct_plot_series s[3] = {
      {"training loss (per step)", "#9ab", h->step_x, h->step_loss, (size_t)h->n_steps},
      {"training loss (epoch mean)", "#1f77b4", h->ep_x, h->ep_loss, (size_t)h->n_ep},
      {"held-out accuracy (fraction)", "#d62728", h->ep_x, acc, (size_t)(acc ? h->n_ep : 0)},
  };
  snprintf(path, sizeof path, "%s/training.svg", o->out);
  if (!ct_plot_svg(path, "ctorch train-cnn", "epoch", "loss / accuracy", 3, s)) {
    fprintf(stderr, "ctorch train-cnn: cannot write %s\n", path);
    ok = false;
  }
  free(acc);
  /* the checkpoint: model, optimizer + scheduler, the shuffle generator, the step; options as metadata */
  ct_dict *ms = ct_dict_new(), *os = ct_dict_new(), *meta = ct_dict_new();
  char v[64];
  ct_status st = ct_module_state_dict(m, ms);
  if (!st) st = ct_optim_state_dict(opt, os);
  if (!st) st = ct_sched_state_dict_prefixed(sched, os, "sched.");
#define META_I(k, x) (snprintf(v, sizeof v, "%lld", (long long)(x)), ct_dict_set_meta(meta, k, v))
  if (!st) st = META_I("epochs_done", h->n_ep);
  if (!st) st = META_I("conv1", o->c1);
  if (!st) st = META_I("conv2", o->c2);
  if (!st) st = META_I("hidden", o->hidden);
  if (!st) st = META_I("batch", o->batch);
  if (!st) st = META_I("seed", o->seed);
#undef META_I
  if (!st && h->n_ep) {
    snprintf(v, sizeof v, "%.2f", h->ep_acc[h->n_ep - 1]);
    st = ct_dict_set_meta(meta, "accuracy", v);
  }
  if (!st) st = ct_dict_set_meta(meta, "data", d->source);
  snprintf(path, sizeof path, "%s/checkpoint.safetensors", o->out);
  if (!st) st = ct_checkpoint_save(path, ms, os, g, step, meta);
  snprintf(path, sizeof path, "%s/model.safetensors", o->out);
  if (!st) st = ct_safetensors_save(path, ms);
  if (st) {
    fprintf(stderr, "ctorch train-cnn: writing the checkpoint failed: %s\n", ct_last_error());
    ok = false;
  }
  ct_dict_free(ms);
  ct_dict_free(os);
  ct_dict_free(meta);
  /* the log */
  snprintf(path, sizeof path, "%s/log.json", o->out);
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "{\"threads\": %d, \"epochs\": [", ct_get_num_threads());
    for (int64_t i = 0; i < h->n_ep; i++)
      fprintf(f, "%s\n  {\"epoch\": %lld, \"loss\": %.6f, \"accuracy\": %.2f, \"seconds\": %.2f}", i ? "," : "",
              (long long)(i + 1), h->ep_loss[i], h->ep_acc[i], h->ep_sec[i]);
    fprintf(f, "\n]}\n");
    ok = fclose(f) == 0 && ok;
  } else ok = false;
  return ok;
}

int ct_cmd_train_cnn(int argc, char **argv) {
  cnn_opts o;
  defaults(&o);
  int pr = parse(argc, argv, &o);
  if (pr) return pr == 2 ? 0 : 2;
  if (o.threads && ct_set_num_threads((int)o.threads)) {
    fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error());
    return 1;
  }
  if (!mkdir_p(o.out)) {
    fprintf(stderr, "ctorch train-cnn: cannot create %s: %s\n", o.out, strerror(errno));
    return 1;
  }
  dataset d;
  if (!load_data(&o, &d)) return 1;
  int64_t n = ct_size(d.xtr, 0), H = ct_size(d.xtr, 2), W = ct_size(d.xtr, 3);
  int rc = 1;
  ct_module *m = NULL;
  ct_optim *opt = NULL;
  ct_sched *sched = NULL;
  ct_generator *g = NULL;
  ct_tensor **params = NULL;
  history h;
  memset(&h, 0, sizeof h);
  if (H != W) {
    fprintf(stderr, "ctorch train-cnn: the images are %lldx%lld; the CNN takes square images\n", (long long)H,
            (long long)W);
    goto out;
  }
  ct_cnn_config cfg = ct_cnn_config_mnist();
  cfg.image_size = H;
  cfg.conv1_channels = o.c1;
  cfg.conv2_channels = o.c2;
  cfg.hidden = o.hidden;
  /* torch.manual_seed(seed); model = CNN(...) draws the same initial weights */
  ct_manual_seed((uint64_t)o.seed);
  m = ct_cnn_new(&cfg);
  ct_dict *pd = m ? ct_dict_new() : NULL;
  if (!pd || ct_module_named_parameters(m, pd)) {
    fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error());
    ct_dict_free(pd);
    goto out;
  }
  int64_t np = ct_dict_len(pd);
  params = malloc(sizeof *params * (size_t)np);
  for (int64_t i = 0; params && i < np; i++) params[i] = ct_dict_tensor(pd, i);
  const int64_t steps_per_epoch = (n + o.batch - 1) / o.batch, total = steps_per_epoch * o.epochs;
  opt = params ? ct_optim_adam(np, params, o.lr) : NULL;
  sched = opt ? ct_sched_cosine_annealing_lr(opt, total, 0.0) : NULL;
  ct_dict_free(pd); /* the optimizer and the module hold the parameters */
  g = sched ? ct_generator_new((uint64_t)o.seed + 1) : NULL;
  h.step_x = malloc(sizeof(double) * (size_t)total);
  h.step_loss = malloc(sizeof(double) * (size_t)total);
  h.ep_x = malloc(sizeof(double) * (size_t)o.epochs);
  h.ep_loss = malloc(sizeof(double) * (size_t)o.epochs);
  h.ep_acc = malloc(sizeof(double) * (size_t)o.epochs);
  h.ep_sec = malloc(sizeof(double) * (size_t)o.epochs);
  if (!g || !h.step_x || !h.step_loss || !h.ep_x || !h.ep_loss || !h.ep_acc || !h.ep_sec) {
    fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error()[0] ? ct_last_error() : "out of memory");
    goto out;
  }
  printf("ctorch train-cnn: MNIST %s\n", d.source);
  printf("model: CNN conv1 %lld, conv2 %lld (5x5), fc1 %lld -> %lld, %lld parameters; Adam lr %g, cosine decay, "
         "batch %lld, %lld epochs of %lld steps, %d threads\n",
         (long long)o.c1, (long long)o.c2, (long long)ct_size(ct_module_param(m, "fc1.weight"), 1), (long long)o.hidden,
         (long long)ct_module_num_parameters(m, false), o.lr, (long long)o.batch, (long long)o.epochs,
         (long long)steps_per_epoch, ct_get_num_threads());
  fflush(stdout);
  bool bar = !o.quiet && isatty(2);
  ct_module_train(m, true);
  double t0 = now(), t_eval = 0;
  int64_t step = 0;
  for (int64_t ep = 0; ep < o.epochs; ep++) {
    ct_tensor *perm = ct_randperm(n, NULL, g); /* torch.randperm(n, generator=g) */
    if (!perm) goto fail;
    double sum = 0;
    for (int64_t s = 0; s < steps_per_epoch; s++, step++) {
      int64_t len = n - s * o.batch < o.batch ? n - s * o.batch : o.batch;
      ct_scope *sc = ct_scope_begin();
      ct_tensor *idx = ct_narrow(perm, 0, s * o.batch, len);
      ct_tensor *xb = idx ? ct_index_select(d.xtr, 0, idx) : NULL, *yb = idx ? ct_index_select(d.ytr, 0, idx) : NULL;
      ct_tensor *out = xb && yb ? ct_module_forward(m, xb) : NULL;
      ct_tensor *loss = out ? ct_cross_entropy(out, yb, NULL, CT_REDUCTION_MEAN, -100, 0.0) : NULL;
      double lv = NAN;
      bool ok = loss && !ct_optim_zero_grad(opt, true) && !ct_backward(loss, NULL, false, false) &&
                !ct_optim_step(opt) && !ct_sched_step(sched) && !ct_item_double(loss, &lv);
      ct_scope_end(sc);
      if (!ok) {
        ct_release(perm);
        goto fail;
      }
      sum += lv * (double)len;
      h.step_x[h.n_steps] = (double)step / (double)steps_per_epoch;
      h.step_loss[h.n_steps++] = lv;
      if (bar) {
        double el = now() - t0 - t_eval, rate = (double)(step + 1 - 0) * (double)o.batch / (el > 0 ? el : 1e-9);
        ct_progress_unit(stderr, step + 1, total, lv, rate, "img", el / (double)(step + 1) * (double)(total - step - 1));
      }
    }
    ct_release(perm);
    double te = now();
    double acc = evaluate(m, &d);
    t_eval += now() - te;
    if (isnan(acc)) goto fail;
    if (bar) ct_progress_done(stderr);
    h.ep_x[h.n_ep] = (double)(ep + 1);
    h.ep_loss[h.n_ep] = sum / (double)n;
    h.ep_acc[h.n_ep] = acc;
    h.ep_sec[h.n_ep++] = now() - t0;
    printf("epoch %lld/%lld  loss %.4f  accuracy %.2f%%  (%.1f s)\n", (long long)(ep + 1), (long long)o.epochs,
           sum / (double)n, acc, now() - t0);
    fflush(stdout);
  }
  double secs = now() - t0;
  printf("final accuracy %.2f%% on %lld held-out images; trained in %.1f s (%.0f images/s)\n", h.ep_acc[h.n_ep - 1],
         (long long)ct_size(d.xte, 0), secs, (double)(n * o.epochs) / (secs - t_eval > 0 ? secs - t_eval : 1e-9));
  if (!write_outputs(&o, m, opt, sched, g, &h, &d, step)) goto out;
  printf("wrote %s/training.svg, %s/checkpoint.safetensors, %s/model.safetensors and %s/log.json\n", o.out, o.out,
         o.out, o.out);
  rc = 0;
  goto out;
fail:
  if (bar) ct_progress_done(stderr);
  fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error());
out:
  free(h.step_x);
  free(h.step_loss);
  free(h.ep_x);
  free(h.ep_loss);
  free(h.ep_acc);
  free(h.ep_sec);
  ct_generator_free(g);
  ct_sched_free(sched);
  ct_optim_free(opt);
  free(params);
  ct_module_free(m);
  dataset_free(&d);
  return rc;
}
