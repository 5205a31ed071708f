/* ctorch train-cnn: trains the LeNet-style CNN of include/ctorch/vision.h on an MNIST-format IDX
 * pair (gzip read natively), with Adam and a per-step cosine learning-rate decay; prints a progress
 * bar, per-epoch loss and held-out accuracy, and writes a loss/accuracy SVG plot, a checkpoint
 * (model + optimizer + scheduler + shuffle RNG, io.h's format) after every epoch, the model's weights
 * and a JSON log. --resume continues from that checkpoint bit for bit (the shuffle generator's state is
 * the data order). bench/train_cnn_ref.py is the same recipe in PyTorch (same init, same batches). */
#include "cli.h"
#include "core/internal.h" /* CT_ERR for the command's own failures */
#include "ctorch.h"
#include "ctorch/cuda.h"
#include "ctorch/train.h"
#include "util/json.h"
#include "util/trainlog.h"
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  const char *data, *out, *resume, *device;
  int64_t epochs, batch, seed, threads, train_size, eval_size, c1, c2, hidden, stop_after;
  double lr;
  bool quiet, cuda_graph;
} cnn_opts;

#define DEFAULT_OUT "train-cnn-out"

static void defaults(cnn_opts *o) {
  memset(o, 0, sizeof *o);
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
         "  --device D         cpu (default), cuda or cuda:N: where the model, the data and the steps live\n"
         "  --out DIR          writes checkpoint.safetensors, model.safetensors, training.svg and log.json\n"
         "                     after every epoch (default %s)\n"
         "  --resume DIR       continue the run whose checkpoint is in DIR (bit for bit as if it had not\n"
         "                     stopped); its options are kept, --data defaults to its data, --out to DIR\n"
         "  --stop-after-epoch N  stop after epoch N (the checkpoint is written; --resume continues)\n"
         "  --quiet            no progress bar\n"
         "  --cuda-graph       (--device cuda) replay each full batch's forward and backward as one CUDA graph\n"
         "                     captured after the first step; the Adam step and the learning rate stay eager\n",
         (long long)d.epochs, (long long)d.batch, d.lr, (long long)d.seed, (long long)d.train_size,
         (long long)d.eval_size, (long long)d.c1, (long long)d.c2, (long long)d.hidden, DEFAULT_OUT);
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
    if (!strcmp(a, "--cuda-graph")) {
      o->cuda_graph = true;
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
    else if (!strcmp(a, "--resume")) o->resume = v;
    else if (!strcmp(a, "--device")) o->device = v;
    else if (!strcmp(a, "--stop-after-epoch")) ok = parse_i64(a, v, 1, 100000, &o->stop_after);
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
  if (!o->data && !o->resume) {
    fprintf(stderr, "ctorch train-cnn: --data DIR is required (a directory with MNIST IDX files; see --help)\n");
    return 1;
  }
  return 0;
}

/* ---- --resume: the saved run's options (checkpoint metadata) ---- */
typedef struct {
  const char *key;
  size_t off;
  int64_t lo, hi; /* the command line's bounds */
} int_opt;
#define IOPT(k, f, lo, hi) {k, offsetof(cnn_opts, f), lo, hi}
/* the options that define a run: a resumed run keeps them */
static const int_opt run_opts[] = {
    IOPT("epochs", epochs, 1, 100000),          IOPT("batch", batch, 1, 1 << 20),
    IOPT("seed", seed, 0, INT64_MAX),           IOPT("train_size", train_size, 1, INT64_C(1) << 30),
    IOPT("eval_size", eval_size, 1, INT64_C(1) << 30), IOPT("conv1", c1, 1, 4096),
    IOPT("conv2", c2, 1, 4096),                 IOPT("hidden", hidden, 1, 1 << 16)};
#undef IOPT

static ct_status opts_to_meta(const cnn_opts *o, ct_dict *meta) {
  char v[64];
  ct_status st = CT_OK;
  for (size_t i = 0; i < sizeof run_opts / sizeof *run_opts && !st; i++) {
    snprintf(v, sizeof v, "%lld", (long long)*(const int64_t *)((const char *)o + run_opts[i].off));
    st = ct_dict_set_meta(meta, run_opts[i].key, v);
  }
  snprintf(v, sizeof v, "%.17g", o->lr);
  if (!st) st = ct_dict_set_meta(meta, "lr", v);
  if (!st) st = ct_dict_set_meta(meta, "data_dir", o->data);
  return st;
}

/* Sets o's run options from the checkpoint's metadata; false (with a message) if one is missing. */
static bool opts_from_meta(cnn_opts *o, const ct_dict *meta, const char *path, char **owned) {
  for (size_t i = 0; i < sizeof run_opts / sizeof *run_opts; i++) {
    const char *v = ct_dict_get_meta(meta, run_opts[i].key);
    int64_t x;
    if (!v || !parse_i64(run_opts[i].key, v, run_opts[i].lo, run_opts[i].hi, &x)) {
      fprintf(stderr, "ctorch train-cnn: %s is not a train-cnn checkpoint (no valid '%s' in its metadata)\n", path,
              run_opts[i].key);
      return false;
    }
    *(int64_t *)((char *)o + run_opts[i].off) = x;
  }
  const char *lr = ct_dict_get_meta(meta, "lr");
  if (!lr || !parse_f64("lr", lr, 0, 10, &o->lr)) {
    fprintf(stderr, "ctorch train-cnn: %s is not a train-cnn checkpoint (no valid 'lr' in its metadata)\n", path);
    return false;
  }
  const char *d = ct_dict_get_meta(meta, "data_dir");
  if (!o->data && d) o->data = *owned = strdup(d); /* freed by the caller */
  return true;
}

/* The command line may not change a resumed run's recipe (the schedule and the batches depend on it). */
static bool same_recipe(const cnn_opts *saved, const cnn_opts *cl) {
  for (size_t i = 0; i < sizeof run_opts / sizeof *run_opts; i++) {
    int64_t a = *(const int64_t *)((const char *)saved + run_opts[i].off),
            b = *(const int64_t *)((const char *)cl + run_opts[i].off);
    if (a != b) {
      fprintf(stderr, "ctorch train-cnn: --resume continues the saved run, whose %s is %lld; it cannot be changed to %lld\n",
              run_opts[i].key, (long long)a, (long long)b);
      return false;
    }
  }
  if (saved->lr != cl->lr) {
    fprintf(stderr, "ctorch train-cnn: --resume continues the saved run, whose lr is %g; it cannot be changed to %g\n",
            saved->lr, cl->lr);
    return false;
  }
  return true;
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
  /* every label a class of the model, checked once here: the --cuda-graph loss cannot check them */
  int64_t classes = ct_cnn_config_mnist().num_classes;
  const ct_tensor *ys[2] = {d->ytr, d->yte};
  for (int i = 0; i < 2; i++) {
    int64_t hi = 0;
    ct_tensor *mx = ct_numel(ys[i]) ? ct_max(ys[i]) : NULL;
    if (mx && ct_item_int64(mx, &hi) == CT_OK && hi >= classes) {
      fprintf(stderr, "ctorch train-cnn: a label in %s is %lld; the model has %lld classes (0 to %lld)\n", o->data,
              (long long)hi, (long long)classes, (long long)classes - 1);
      ct_release(mx);
      dataset_free(d);
      return false;
    }
    ct_release(mx);
  }
  return true;
}

/* --cuda-graph: gradients zeroed in place, forward, loss, backward of one full batch, captured
 * once as a CUDA graph over fixed device buffers (x, y) and replayed (ct_classifier_train_step: its
 * loss does not check the labels on the host, which a capture cannot record; they were checked at
 * load); the optimizer steps outside the graph. */
typedef struct {
  ct_module *m;
  ct_optim *opt;
  ct_tensor *x, *y, *loss; /* retained */
  ct_cuda_graph *graph;
  bool warm, eager;
} cnn_graph;

static ct_status cnn_fwd_bwd(void *u) {
  cnn_graph *c = u;
  return ct_classifier_train_step(c->m, c->opt, c->x, c->y, false, false, &c->loss);
}

/* One batch's forward and backward through the graph (eager for the first step, a short last
 * batch, or after a failed capture); the step's loss is then c->loss. */
static ct_status cnn_graph_step(cnn_graph *c, ct_device dev, const ct_tensor *xb, const ct_tensor *yb, int64_t batch) {
  if (ct_size(xb, 0) != batch) { /* a short last batch: eager on its own buffers */
    cnn_graph e = {c->m, c->opt, (ct_tensor *)xb, (ct_tensor *)yb, NULL, NULL, true, true};
    ct_status st = cnn_fwd_bwd(&e);
    if (st == CT_OK) {
      ct_release(c->loss);
      c->loss = e.loss;
    }
    /* the eager backward may have given parameters new gradient tensors, which the graph does
     * not write: the next full batch captures afresh */
    ct_cuda_graph_free(c->graph);
    c->graph = NULL;
    return st;
  }
  if (!c->x) {
    c->x = ct_retain(ct_clone(xb)); /* the step's scope releases its own reference */
    c->y = ct_retain(ct_clone(yb));
    if (!c->x || !c->y) return ct_last_status();
  }
  CT_TRY(ct_copy_(c->x, xb));
  CT_TRY(ct_copy_(c->y, yb));
  if (!c->warm || c->eager) {
    c->warm = true;
    return cnn_fwd_bwd(c);
  }
  if (!c->graph) {
    if (!(c->graph = ct_cuda_graph_capture(dev.index, cnn_fwd_bwd, c))) {
      fprintf(stderr, "ctorch train-cnn: --cuda-graph: the step cannot be captured (%s); training eagerly\n",
              ct_last_error());
      ct_clear_error();
      c->eager = true;
      return cnn_fwd_bwd(c);
    }
    printf("CUDA graph: %lld nodes captured (forward, loss, backward)\n", (long long)ct_cuda_graph_num_nodes(c->graph));
    fflush(stdout);
  }
  return ct_cuda_graph_replay(c->graph);
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

static ct_status put_history(ct_dict *d, const char *name, const double *v, int64_t n) {
  ct_tensor *t = ct_from_buffer(v, CT_FLOAT64, 1, &n, ct_opts_dtype(CT_FLOAT64));
  ct_status st = t ? ct_dict_set(d, name, t) : ct_last_status();
  ct_release(t);
  return st;
}

/* Copies a saved curve back: false unless it has exactly n values. */
static bool get_history(const ct_dict *d, const char *name, double *v, int64_t n) {
  const ct_tensor *t = ct_dict_get(d, name);
  return t && ct_ndim(t) == 1 && ct_numel(t) == n && ct_copy_to_buffer(t, v, CT_FLOAT64, n) == CT_OK;
}

/* Seconds of the saved epochs from the resumed run's log.json (NaN where unknown: timing is not
 * part of the checkpoint, which stays byte-identical to an uninterrupted run's). */
static void load_seconds(const char *dir, double *sec, int64_t n) {
  for (int64_t i = 0; i < n; i++) sec[i] = NAN;
  char path[4200];
  snprintf(path, sizeof path, "%s/log.json", dir);
  size_t len;
  char *s = ctj_read_file(path, &len);
  ctj *j = s ? ctj_parse(s, len, NULL, 0) : NULL;
  free(s);
  const ctj *e = ctj_get(j, "epochs");
  for (size_t i = 0; e && e->type == CTJ_ARR && i < e->n; i++) {
    double ep = ctj_get_num(&e->items[i], "epoch", -1);
    if (ep >= 1 && ep <= (double)n) sec[(int64_t)ep - 1] = ctj_get_num(&e->items[i], "seconds", NAN);
  }
  ctj_free(j);
}

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
  ct_status st = ms && os && meta ? ct_module_state_dict(m, ms) : CT_ERR(CT_ERR_OOM, "out of memory");
  if (!st) st = ct_optim_state_dict(opt, os);
  if (!st) st = ct_sched_state_dict_prefixed(sched, os, "sched.");
  /* the curves so far, for the plot of a resumed run ("train." entries: the optimizer skips them) */
  if (!st) st = put_history(os, "train.step_loss", h->step_loss, h->n_steps);
  if (!st) st = put_history(os, "train.epoch_loss", h->ep_loss, h->n_ep);
  if (!st) st = put_history(os, "train.epoch_accuracy", h->ep_acc, h->n_ep);
  snprintf(v, sizeof v, "%lld", (long long)h->n_ep);
  if (!st) st = ct_dict_set_meta(meta, "epochs_done", v);
  if (!st) st = opts_to_meta(o, meta);
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
      fprintf(f, isnan(h->ep_sec[i]) ? "%s\n  {\"epoch\": %lld, \"loss\": %.6f, \"accuracy\": %.2f, \"seconds\": null}"
                                     : "%s\n  {\"epoch\": %lld, \"loss\": %.6f, \"accuracy\": %.2f, \"seconds\": %.2f}",
              i ? "," : "", (long long)(i + 1), h->ep_loss[i], h->ep_acc[i], h->ep_sec[i]);
    fprintf(f, "\n]}\n");
    ok = fclose(f) == 0 && ok;
  } else ok = false;
  return ok;
}

/* Reads the checkpoint of --resume DIR (every part, before anything is built from it). */
static bool load_resume(const char *dir, ct_dict **msd, ct_dict **osd, ct_dict **meta, ct_generator *g, int64_t *step) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, CT_CHECKPOINT_FILE);
  if (ct_checkpoint_load(path, msd, osd, g, step, meta, false) == CT_OK) return true;
  fprintf(stderr, "ctorch train-cnn: cannot resume from %s: %s\n", dir, ct_last_error());
  return false;
}

int ct_cmd_train_cnn(int argc, char **argv) {
  cnn_opts o;
  defaults(&o);
  int pr = parse(argc, argv, &o);
  if (pr) return pr == 2 ? 0 : 2;
  int rc = 1;
  ct_module *m = NULL;
  ct_optim *opt = NULL;
  ct_sched *sched = NULL;
  cnn_graph cg = {0}; /* --cuda-graph */
  ct_generator *g = ct_generator_new((uint64_t)o.seed + 1); /* the shuffle: torch.Generator().manual_seed(seed + 1) */
  ct_tensor **params = NULL;
  ct_dict *r_msd = NULL, *r_osd = NULL, *r_meta = NULL;
  char *saved_data = NULL;
  int64_t step = 0, first_epoch = 0;
  history h;
  memset(&h, 0, sizeof h);
  dataset d;
  memset(&d, 0, sizeof d);
  if (!g) {
    fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error());
    return 1;
  }
  if (o.resume) {
    /* the saved options are the run's; the command line may repeat them but not change them */
    cnn_opts saved;
    defaults(&saved);
    saved.data = o.data;
    if (!load_resume(o.resume, &r_msd, &r_osd, &r_meta, g, &step) || !opts_from_meta(&saved, r_meta, o.resume, &saved_data))
      goto out;
    cnn_opts cl = saved; /* --data: the command line's, else the saved run's */
    if (parse(argc, argv, &cl) || !same_recipe(&saved, &cl)) {
      rc = 2;
      goto out;
    }
    const char *ed = ct_dict_get_meta(r_meta, "epochs_done");
    int64_t done = -1;
    if (!ed || !parse_i64("epochs_done", ed, 0, saved.epochs, &done)) goto out;
    first_epoch = done;
    o = cl;
    if (!o.data) {
      fprintf(stderr, "ctorch train-cnn: the checkpoint in %s does not name its data: give --data DIR\n", o.resume);
      goto out;
    }
    if (!o.out) o.out = o.resume;
  }
  if (!o.out) o.out = DEFAULT_OUT;
  if (o.threads && ct_set_num_threads((int)o.threads)) {
    fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error());
    goto out;
  }
  if (!mkdir_p(o.out)) {
    fprintf(stderr, "ctorch train-cnn: cannot create %s: %s\n", o.out, strerror(errno));
    goto out;
  }
  /* --device: resolved (and a missing GPU or driver reported) before any work */
  ct_device dev = ct_cpu();
  if (o.device && strcmp(o.device, "cpu")) {
    char *end = NULL;
    long idx = 0;
    if (!strncmp(o.device, "cuda", 4) && (o.device[4] == 0 || o.device[4] == ':')) {
      if (o.device[4] == ':') idx = strtol(o.device + 5, &end, 10);
      if (o.device[4] == ':' && (end == o.device + 5 || *end || idx < 0 || idx > 1024)) {
        fprintf(stderr, "ctorch train-cnn: --device: invalid device string '%s' (cpu, cuda or cuda:N)\n", o.device);
        goto out;
      }
    } else {
      fprintf(stderr, "ctorch train-cnn: --device: invalid device string '%s' (cpu, cuda or cuda:N)\n", o.device);
      goto out;
    }
    if (!ct_cuda_is_available()) {
      fprintf(stderr, "ctorch train-cnn: --device %s: %s\n", o.device, ct_cuda_unavailable_reason());
      goto out;
    }
    if (idx >= ct_cuda_device_count()) {
      fprintf(stderr, "ctorch train-cnn: --device %s: there are %d CUDA device(s)\n", o.device, ct_cuda_device_count());
      goto out;
    }
    dev = ct_cuda((int)idx);
  }
  if (o.cuda_graph && dev.type != CT_DEVICE_CUDA) {
    fprintf(stderr, "ctorch train-cnn: --cuda-graph needs --device cuda\n");
    goto out;
  }
  if (!load_data(&o, &d)) goto out;
  if (dev.type != CT_DEVICE_CPU) {
    /* the whole (small) data set moves once; batches are gathered on the device */
    ct_tensor **dt[4] = {&d.xtr, &d.ytr, &d.xte, &d.yte};
    for (int k = 0; k < 4; k++) {
      ct_tensor *t = ct_to_device(*dt[k], dev);
      if (!t) {
        fprintf(stderr, "ctorch train-cnn: moving the data to %s: %s\n", o.device, ct_last_error());
        goto out;
      }
      ct_release(*dt[k]);
      *dt[k] = t;
    }
  }
  int64_t n = ct_size(d.xtr, 0), H = ct_size(d.xtr, 2), W = ct_size(d.xtr, 3);
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
  if (m && dev.type != CT_DEVICE_CPU && ct_module_to_device(m, dev)) {
    fprintf(stderr, "ctorch train-cnn: moving the model to %s: %s\n", o.device, ct_last_error());
    goto out;
  }
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
  h.step_x = malloc(sizeof(double) * (size_t)total);
  h.step_loss = malloc(sizeof(double) * (size_t)total);
  h.ep_x = malloc(sizeof(double) * (size_t)o.epochs);
  h.ep_loss = malloc(sizeof(double) * (size_t)o.epochs);
  h.ep_acc = malloc(sizeof(double) * (size_t)o.epochs);
  h.ep_sec = malloc(sizeof(double) * (size_t)o.epochs);
  if (!sched || !h.step_x || !h.step_loss || !h.ep_x || !h.ep_loss || !h.ep_acc || !h.ep_sec) {
    fprintf(stderr, "ctorch train-cnn: %s\n", ct_last_error()[0] ? ct_last_error() : "out of memory");
    goto out;
  }
  if (o.resume) {
    /* model, optimizer and scheduler from the checkpoint (the generator was restored when it was read) */
    if (step != first_epoch * steps_per_epoch) {
      fprintf(stderr, "ctorch train-cnn: cannot resume from %s: its step %lld is not the end of epoch %lld (%lld steps "
                      "each); was the data changed?\n", o.resume, (long long)step, (long long)first_epoch,
              (long long)steps_per_epoch);
      goto out;
    }
    if (ct_module_load_state_dict(m, r_msd, true) || ct_optim_load_state_dict(opt, r_osd) ||
        ct_sched_load_state_dict_prefixed(sched, r_osd, "sched.")) {
      fprintf(stderr, "ctorch train-cnn: cannot resume from %s: %s\n", o.resume, ct_last_error());
      goto out;
    }
    h.n_steps = step;
    h.n_ep = first_epoch;
    if (!get_history(r_osd, "train.step_loss", h.step_loss, h.n_steps) ||
        !get_history(r_osd, "train.epoch_loss", h.ep_loss, h.n_ep) ||
        !get_history(r_osd, "train.epoch_accuracy", h.ep_acc, h.n_ep)) {
      fprintf(stderr, "ctorch train-cnn: cannot resume from %s: its training curves do not match its step\n", o.resume);
      goto out;
    }
    for (int64_t i = 0; i < h.n_steps; i++) h.step_x[i] = (double)i / (double)steps_per_epoch;
    for (int64_t i = 0; i < h.n_ep; i++) h.ep_x[i] = (double)(i + 1);
    load_seconds(o.resume, h.ep_sec, h.n_ep);
  }
  printf("ctorch train-cnn: MNIST %s\n", d.source);
  printf("model: CNN conv1 %lld, conv2 %lld (5x5), fc1 %lld -> %lld, %lld parameters; Adam lr %g, cosine decay, "
         "batch %lld, %lld epochs of %lld steps, %d threads\n",
         (long long)o.c1, (long long)o.c2, (long long)ct_size(ct_module_param(m, "fc1.weight"), 1), (long long)o.hidden,
         (long long)ct_module_num_parameters(m, false), o.lr, (long long)o.batch, (long long)o.epochs,
         (long long)steps_per_epoch, ct_get_num_threads());
  if (o.resume) printf("resuming after epoch %lld (step %lld) from %s\n", (long long)first_epoch, (long long)step, o.resume);
  fflush(stdout);
  bool bar = !o.quiet && isatty(2);
  ct_module_train(m, true);
  cg = (cnn_graph){m, opt, NULL, NULL, NULL, NULL, false, false};
  double prev_sec = first_epoch > 0 && isfinite(h.ep_sec[first_epoch - 1]) ? h.ep_sec[first_epoch - 1] : 0;
  double t0 = now() - prev_sec, t_eval = 0, t_run = now();
  const int64_t first_step = step;
  for (int64_t ep = first_epoch; ep < o.epochs; ep++) {
    ct_tensor *perm = ct_randperm(n, NULL, g); /* torch.randperm(n, generator=g) */
    if (!perm) goto fail;
    double sum = 0;
    for (int64_t s = 0; s < steps_per_epoch; s++, step++) {
      int64_t len = n - s * o.batch < o.batch ? n - s * o.batch : o.batch;
      ct_scope *sc = ct_scope_begin();
      ct_tensor *idx = ct_narrow(perm, 0, s * o.batch, len);
      if (idx && dev.type != CT_DEVICE_CPU) idx = ct_to_device(idx, dev);
      ct_tensor *xb = idx ? ct_index_select(d.xtr, 0, idx) : NULL, *yb = idx ? ct_index_select(d.ytr, 0, idx) : NULL;
      double lv = NAN;
      bool ok;
      if (o.cuda_graph) {
        ok = xb && yb && !cnn_graph_step(&cg, dev, xb, yb, o.batch) && !ct_optim_step(opt) && !ct_sched_step(sched) &&
             !ct_item_double(cg.loss, &lv);
      } else {
        ct_tensor *out = xb && yb ? ct_module_forward(m, xb) : NULL;
        ct_tensor *loss = out ? ct_cross_entropy(out, yb, NULL, CT_REDUCTION_MEAN, -100, 0.0) : NULL;
        ok = loss && !ct_optim_zero_grad(opt, true) && !ct_backward(loss, NULL, false, false) && !ct_optim_step(opt) &&
             !ct_sched_step(sched) && !ct_item_double(loss, &lv);
      }
      ct_scope_end(sc);
      if (!ok) {
        ct_release(perm);
        goto fail;
      }
      sum += lv * (double)len;
      h.step_x[h.n_steps] = (double)step / (double)steps_per_epoch;
      h.step_loss[h.n_steps++] = lv;
      if (bar) {
        int64_t done = step + 1 - first_step;
        double el = now() - t_run - t_eval, rate = (double)done * (double)o.batch / (el > 0 ? el : 1e-9);
        ct_progress_unit(stderr, step + 1, total, lv, rate, "img", el / (double)done * (double)(total - step - 1));
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
    /* a checkpoint after every epoch: an interrupted run loses at most one epoch */
    if (!write_outputs(&o, m, opt, sched, g, &h, &d, step)) goto out;
    if (o.stop_after && ep + 1 == o.stop_after && ep + 1 < o.epochs) {
      printf("stopped after epoch %lld of %lld; continue with: ctorch train-cnn --resume %s\n", (long long)(ep + 1),
             (long long)o.epochs, o.out);
      rc = 0;
      goto out;
    }
  }
  if (step == first_step) { /* resumed a finished run: nothing was trained or written */
    printf("the run in %s had finished its %lld epochs: final accuracy %.2f%%\n", o.resume, (long long)o.epochs,
           h.ep_acc[h.n_ep - 1]);
    rc = 0;
    goto out;
  }
  double secs = now() - t_run;
  int64_t trained = (step - first_step) / steps_per_epoch;
  printf("final accuracy %.2f%% on %lld held-out images; trained in %.1f s (%.0f images/s)\n", h.ep_acc[h.n_ep - 1],
         (long long)ct_size(d.xte, 0), secs,
         (double)(n * trained) / (secs - t_eval > 0 ? secs - t_eval : 1e-9));
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
  ct_dict_free(r_msd);
  ct_dict_free(r_osd);
  ct_dict_free(r_meta);
  free(saved_data);
  ct_generator_free(g);
  ct_cuda_graph_free(cg.graph);
  ct_release(cg.x);
  ct_release(cg.y);
  ct_release(cg.loss);
  ct_sched_free(sched);
  ct_optim_free(opt);
  free(params);
  ct_module_free(m);
  dataset_free(&d);
  return rc;
}
