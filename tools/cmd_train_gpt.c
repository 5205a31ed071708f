/* ctorch train-gpt: trains a GPT-2-architecture model on a text file (or the built-in text), with
 * AdamW, linear warmup + cosine decay, gradient clipping, validation on the last 10% of the
 * tokens, checkpoints that resume bit for bit, a JSON log, an SVG loss plot and a progress bar,
 * and prints a sample at the end. */
#include "cli.h"
#include "core/internal.h" /* ct_set_error for the command's own failures */
#include "ctorch/cuda.h"
#include "ctorch/io.h"
#include "ctorch/optim.h"
#include "gpt_cmd.h"
#include "util/trainlog.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  const char *data, *tokenizer, *tokenizer_dir, *out, *resume, *init;
  int64_t layers, heads, width, context, batch, steps, warmup, eval_every, eval_iters, threads, sample_tokens, seed;
  double lr, min_lr, weight_decay, grad_clip, dropout, beta1, beta2;
  bool quiet, cuda_graph;
  bool bias, gelu_erf, decay_embeddings; /* the model's variant and the weight decay's reach */
  bool batches_epoch, proj_init_plain;   /* --batches epoch, --proj-init plain */
  const char *device, *precision;       /* --device cpu|cuda[:N], --precision fp32|tf32|bf16|bf16-fp32act */
  ct_device dev;
} train_opts;

/* Batches of the last evaluation: one batch's loss varies by about 0.065 (Tiny Shakespeare, char
 * level), so 8 or 20 batches leave +-0.02 of noise on the number a run is judged by; 200 batches
 * (nanoGPT's eval_iters) bring it to about +-0.005. */
enum { FINAL_EVAL_ITERS = 200 };

static void defaults(train_opts *o) {
  memset(o, 0, sizeof *o);
  o->tokenizer = "byte";
  o->layers = 2;
  o->heads = 4;
  o->width = 128;
  o->context = 64;
  o->batch = 8;
  o->steps = 400;
  o->warmup = 100;
  o->eval_every = 100;
  o->eval_iters = 20;
  o->sample_tokens = 300;
  o->seed = 1337;
  o->lr = 3e-3;
  o->min_lr = -1; /* 0.3 lr: see the comment on the betas */
  o->weight_decay = 0.1;
  o->grad_clip = 0; /* off, PyTorch's default (nanoGPT clips at 1) */
  o->dropout = 0.0;
  /* betas (0.85, 0.999) (PyTorch's beta2), no clipping and a cosine floor of 0.3 lr: on nanoGPT's
   * Tiny Shakespeare char recipe (2000 steps of 768 tokens, under-trained) these beat nanoGPT's
   * (0.9, 0.99), clip 1 and lr / 10 on every seed tried (bench/results/s7_gpt.md) */
  o->beta1 = 0.85;
  o->beta2 = 0.999;
  /* nanoGPT's train.py: bias=False; the MLP's GELU is GPT-2's tanh form (the architecture,
   * and nanoGPT's when it published 1.88); --gelu erf is today's nanoGPT (nn.GELU), --bias yes GPT-2's */
  o->bias = false;
  o->gelu_erf = false;
  o->decay_embeddings = true;
  o->precision = "fp32";
  o->dev = ct_cpu();
}

static void usage(void) {
  train_opts d;
  defaults(&d);
  printf("usage: ctorch train-gpt [options]\n\n"
         "Trains a GPT-2-architecture transformer on a text file; without --data it trains on a built-in text.\n\n"
         "data\n"
         "  --data FILE          training text (the last 10%% of its tokens are the validation split)\n"
         "  --tokenizer KIND     byte | char | gpt2 (default %s; char builds its vocabulary from the data)\n"
         "  --tokenizer-dir DIR  GPT-2 tokenizer files (tokenizer.json, vocab.json + merges.txt, or\n"
         "                       encoder.json + vocab.bpe) for --tokenizer gpt2\n"
         "model\n"
         "  --layers N           transformer blocks (default %lld)\n"
         "  --heads N            attention heads (default %lld)\n"
         "  --width N            embedding width (default %lld)\n"
         "  --context N          context length (default %lld)\n"
         "  --dropout P          dropout probability (default %g)\n"
         "  --bias yes|no        biases in the linear layers and LayerNorms (default %s; no: nanoGPT's bias=False)\n"
         "  --gelu tanh|erf      the MLP's GELU (default %s; tanh: GPT-2's gelu_new, erf: today's nanoGPT nn.GELU)\n"
         "  --proj-init KIND     std of the residual projections' init: scaled (0.02 / sqrt(2 layers), GPT-2's)\n"
         "                       or plain (0.02) (default %s)\n"
         "  --init DIR           start from a saved model (ctorch or Hugging Face GPT-2: config.json +\n"
         "                       model.safetensors): fine-tuning; its tokenizer is used\n"
         "training\n"
         "  --batch N            sequences per step (default %lld)\n"
         "  --batches KIND       random: window starts drawn with replacement (nanoGPT's get_batch); epoch: a\n"
         "                       shuffled pass over every window start, without replacement (default %s)\n"
         "  --steps N            optimizer steps in all (default %lld)\n"
         "  --lr X               peak learning rate (default %g)\n"
         "  --min-lr X           final learning rate of the cosine decay (default 0.3 lr)\n"
         "  --warmup N           linear warmup steps (default %lld)\n"
         "  --weight-decay X     AdamW weight decay of the matrices (default %g)\n"
         "  --decay-embeddings yes|no  weight decay on wte/wpe too (default %s; no: only the linear layers' weights)\n"
         "  --beta1 X, --beta2 X AdamW betas (default %g, %g)\n"
         "  --grad-clip X        clip the gradients' total norm (0: off; default %g)\n"
         "  --seed N             seeds initialisation, batches and dropout (default %lld)\n"
         "  --eval-every N       evaluate every N steps (default %lld)\n"
         "  --eval-iters N       batches per evaluation (default %lld); the final one uses at least %d\n"
         "  --threads N          CPU threads (default: all cores)\n"
         "  --device D           cpu (default), cuda or cuda:N: where the model, the optimizer state and the steps live\n"
         "  --precision P        fp32 (default), tf32 (float32 matrix products on the TF32 tensor cores), bf16\n"
         "                       (torch.autocast's: products and the activations between them in bfloat16, float32\n"
         "                       master weights) or bf16-fp32act (bfloat16 products, float32 activations); needs\n"
         "                       --device cuda\n"
         "  --cuda-graph         replay each step's forward, backward and clipping as one CUDA graph captured after\n"
         "                       the first step (the optimizer step stays eager: its learning rate changes)\n"
         "output\n"
         "  --out DIR            write checkpoints (model.safetensors + config.json + checkpoint.safetensors),\n"
         "                       log.json and loss.svg into DIR\n"
         "  --resume DIR         continue a run saved with --out (same data); --out defaults to DIR\n"
         "  --sample-tokens N    tokens of the sample printed at the end (default %lld; 0: none)\n"
         "  --quiet              no progress bar\n",
         d.tokenizer, (long long)d.layers, (long long)d.heads, (long long)d.width, (long long)d.context, d.dropout,
         d.bias ? "yes" : "no", d.gelu_erf ? "erf" : "tanh", d.proj_init_plain ? "plain" : "scaled", (long long)d.batch,
         d.batches_epoch ? "epoch" : "random", (long long)d.steps, d.lr,
         (long long)d.warmup, d.weight_decay, d.decay_embeddings ? "yes" : "no", d.beta1, d.beta2, d.grad_clip,
         (long long)d.seed, (long long)d.eval_every, (long long)d.eval_iters, FINAL_EVAL_ITERS, (long long)d.sample_tokens);
}

static bool parse_yes_no(const char *name, const char *v, bool *out) {
  if (!strcmp(v, "yes") || !strcmp(v, "no")) {
    *out = !strcmp(v, "yes");
    return true;
  }
  fprintf(stderr, "ctorch train-gpt: %s must be yes or no, got '%s'\n", name, v);
  return false;
}

/* Parses argv into o; returns 0 ok, 1 error, 2 help shown. only_resume: just find --resume. */
static int parse(int argc, char **argv, train_opts *o, bool only_resume) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (!only_resume) usage();
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
      fprintf(stderr, "ctorch train-gpt: unexpected argument '%s' (see --help)\n", a);
      return 1;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "ctorch train-gpt: %s needs a value\n", a);
      return 1;
    }
    const char *v = argv[++i];
    if (only_resume) {
      if (!strcmp(a, "--resume")) o->resume = v;
      continue;
    }
    bool ok = true;
    const int64_t BIG = INT64_C(1) << 40;
    if (!strcmp(a, "--data")) o->data = v;
    else if (!strcmp(a, "--device")) o->device = v;
    else if (!strcmp(a, "--precision")) {
      o->precision = v;
      if (strcmp(v, "fp32") && strcmp(v, "tf32") && strcmp(v, "bf16") && strcmp(v, "bf16-fp32act")) {
        fprintf(stderr, "ctorch train-gpt: --precision must be fp32, tf32, bf16 or bf16-fp32act, got '%s'\n", v);
        ok = false;
      }
    }
    else if (!strcmp(a, "--tokenizer")) {
      o->tokenizer = v;
      if (strcmp(v, "byte") && strcmp(v, "char") && strcmp(v, "gpt2")) {
        fprintf(stderr, "ctorch train-gpt: --tokenizer must be byte, char or gpt2, got '%s'\n", v);
        ok = false;
      }
    } else if (!strcmp(a, "--tokenizer-dir")) o->tokenizer_dir = v;
    else if (!strcmp(a, "--out")) o->out = v;
    else if (!strcmp(a, "--resume")) o->resume = v;
    else if (!strcmp(a, "--init")) o->init = v;
    else if (!strcmp(a, "--layers")) ok = gpt_parse_i64(a, v, 0, 1024, &o->layers);
    else if (!strcmp(a, "--heads")) ok = gpt_parse_i64(a, v, 1, 1024, &o->heads);
    else if (!strcmp(a, "--width")) ok = gpt_parse_i64(a, v, 1, 1 << 16, &o->width);
    else if (!strcmp(a, "--context")) ok = gpt_parse_i64(a, v, 1, 1 << 20, &o->context);
    else if (!strcmp(a, "--batch")) ok = gpt_parse_i64(a, v, 1, 1 << 20, &o->batch);
    else if (!strcmp(a, "--steps")) ok = gpt_parse_i64(a, v, 0, BIG, &o->steps);
    else if (!strcmp(a, "--warmup")) ok = gpt_parse_i64(a, v, 0, BIG, &o->warmup);
    else if (!strcmp(a, "--eval-every")) ok = gpt_parse_i64(a, v, 1, BIG, &o->eval_every);
    else if (!strcmp(a, "--eval-iters")) ok = gpt_parse_i64(a, v, 1, 1 << 20, &o->eval_iters);
    else if (!strcmp(a, "--threads")) ok = gpt_parse_i64(a, v, 1, 4096, &o->threads);
    else if (!strcmp(a, "--sample-tokens")) ok = gpt_parse_i64(a, v, 0, 1 << 24, &o->sample_tokens);
    else if (!strcmp(a, "--seed")) ok = gpt_parse_i64(a, v, 0, INT64_MAX, &o->seed);
    else if (!strcmp(a, "--lr")) ok = gpt_parse_f64(a, v, 0, 1e3, &o->lr);
    else if (!strcmp(a, "--min-lr")) ok = gpt_parse_f64(a, v, 0, 1e3, &o->min_lr);
    else if (!strcmp(a, "--weight-decay")) ok = gpt_parse_f64(a, v, 0, 1e3, &o->weight_decay);
    else if (!strcmp(a, "--beta1")) ok = gpt_parse_f64(a, v, 0, 0.999999, &o->beta1);
    else if (!strcmp(a, "--beta2")) ok = gpt_parse_f64(a, v, 0, 0.999999, &o->beta2);
    else if (!strcmp(a, "--grad-clip")) ok = gpt_parse_f64(a, v, 0, 1e30, &o->grad_clip);
    else if (!strcmp(a, "--dropout")) ok = gpt_parse_f64(a, v, 0, 0.999999, &o->dropout);
    else if (!strcmp(a, "--bias")) ok = parse_yes_no(a, v, &o->bias);
    else if (!strcmp(a, "--decay-embeddings")) ok = parse_yes_no(a, v, &o->decay_embeddings);
    else if (!strcmp(a, "--batches")) {
      ok = !strcmp(v, "random") || !strcmp(v, "epoch");
      if (ok) o->batches_epoch = !strcmp(v, "epoch");
      else fprintf(stderr, "ctorch train-gpt: --batches must be random or epoch, got '%s'\n", v);
    } else if (!strcmp(a, "--proj-init")) {
      ok = !strcmp(v, "scaled") || !strcmp(v, "plain");
      if (ok) o->proj_init_plain = !strcmp(v, "plain");
      else fprintf(stderr, "ctorch train-gpt: --proj-init must be scaled or plain, got '%s'\n", v);
    } else if (!strcmp(a, "--gelu")) {
      ok = !strcmp(v, "tanh") || !strcmp(v, "erf") || !strcmp(v, "none");
      if (ok) o->gelu_erf = strcmp(v, "tanh") != 0;
      else fprintf(stderr, "ctorch train-gpt: --gelu must be tanh or erf, got '%s'\n", v);
    }
    else {
      fprintf(stderr, "ctorch train-gpt: unknown option '%s' (see --help)\n", a);
      ok = false;
    }
    if (!ok) return 1;
  }
  return 0;
}

/* The training options saved in config.json ("ctorch_train"), restored on --resume. */
static void opts_json(const train_opts *o, ctj_buf *b) {
  ctj_buf_printf(b, "\"ctorch_train\": {\"batch\": %lld, \"steps\": %lld, \"lr\": %.17g, \"min_lr\": %.17g, "
                    "\"warmup\": %lld, \"weight_decay\": %.17g, \"grad_clip\": %.17g, \"seed\": %lld, "
                    "\"eval_every\": %lld, \"eval_iters\": %lld, \"beta1\": %.17g, \"beta2\": %.17g, "
                    "\"decay_embeddings\": %s, \"batches\": \"%s\", \"data\": ",
                 (long long)o->batch, (long long)o->steps, o->lr, o->min_lr, (long long)o->warmup, o->weight_decay,
                 o->grad_clip, (long long)o->seed, (long long)o->eval_every, (long long)o->eval_iters, o->beta1,
                 o->beta2, o->decay_embeddings ? "true" : "false", o->batches_epoch ? "epoch" : "random");
  if (o->data) ctj_buf_str(b, o->data, strlen(o->data));
  else ctj_buf_puts(b, "null");
  ctj_buf_puts(b, "}");
}

static void opts_from_json(train_opts *o, const ctj *t, char **owned) {
  if (!t) return;
  o->batch = (int64_t)ctj_get_num(t, "batch", (double)o->batch);
  o->steps = (int64_t)ctj_get_num(t, "steps", (double)o->steps);
  o->lr = ctj_get_num(t, "lr", o->lr);
  o->min_lr = ctj_get_num(t, "min_lr", o->min_lr);
  o->warmup = (int64_t)ctj_get_num(t, "warmup", (double)o->warmup);
  o->weight_decay = ctj_get_num(t, "weight_decay", o->weight_decay);
  o->grad_clip = ctj_get_num(t, "grad_clip", o->grad_clip);
  o->seed = (int64_t)ctj_get_num(t, "seed", (double)o->seed);
  o->eval_every = (int64_t)ctj_get_num(t, "eval_every", (double)o->eval_every);
  o->eval_iters = (int64_t)ctj_get_num(t, "eval_iters", (double)o->eval_iters);
  o->beta1 = ctj_get_num(t, "beta1", o->beta1);
  o->beta2 = ctj_get_num(t, "beta2", o->beta2);
  const ctj *de = ctj_get(t, "decay_embeddings");
  if (de && de->type == CTJ_BOOL) o->decay_embeddings = de->b;
  const char *bt = ctj_get_str(t, "batches", NULL);
  if (bt) o->batches_epoch = !strcmp(bt, "epoch");
  const char *d = ctj_get_str(t, "data", NULL);
  if (d) o->data = *owned = strdup(d); /* freed by the caller */
}

/* nanoGPT's schedule: linear warmup to lr, cosine decay to min_lr at the last step. */
static double lr_at(const train_opts *o, int64_t step) {
  if (step < o->warmup) return o->lr * (double)(step + 1) / (double)(o->warmup + 1);
  if (o->steps <= o->warmup) return o->lr;
  double r = (double)(step - o->warmup) / (double)(o->steps - o->warmup);
  if (r > 1) r = 1;
  return o->min_lr + 0.5 * (1 + cos(M_PI * r)) * (o->lr - o->min_lr);
}

typedef struct {
  const int64_t *tok;
  int64_t n;
} split;

/* x, y: [B, T] windows at offsets drawn from g (nanoGPT's get_batch), or at the given offsets. */
static ct_status get_batch(const split *s, int64_t B, int64_t T, ct_generator *g, ct_device dev, ct_tensor **x,
                           ct_tensor **y, const int64_t *given) {
  int64_t bs[1] = {B}, shape[2] = {B, T};
  ct_tensor *ix = given ? NULL : ct_randint(0, s->n - T, 1, bs, NULL, g);
  if (!given && !ix) return ct_last_status();
  int64_t *off = malloc((size_t)B * sizeof *off), *xb = malloc((size_t)(B * T) * sizeof *xb),
          *yb = malloc((size_t)(B * T) * sizeof *yb);
  ct_status st = !(off && xb && yb) ? CT_ERR(CT_ERR_OOM, "out of memory")
                 : given            ? (memcpy(off, given, (size_t)B * sizeof *off), CT_OK)
                                    : ct_copy_to_buffer(ix, off, CT_INT64, B);
  ct_release(ix);
  if (st == CT_OK) {
    for (int64_t b = 0; b < B; b++) {
      memcpy(xb + b * T, s->tok + off[b], (size_t)T * sizeof *xb);
      memcpy(yb + b * T, s->tok + off[b] + 1, (size_t)T * sizeof *yb);
    }
    ct_options io = ct_opts_dtype(CT_INT64);
    io.device = dev; /* the batch is uploaded each step (the data stays on the host) */
    *x = ct_from_buffer(xb, CT_INT64, 2, shape, io);
    *y = ct_from_buffer(yb, CT_INT64, 2, shape, io);
    if (!*x || !*y) {
      ct_release(*x);
      ct_release(*y);
      st = ct_last_status();
    }
  }
  free(off);
  free(xb);
  free(yb);
  return st;
}

/* --batches epoch: step's batch is entries step*B .. step*B+B-1 of the per-epoch permutations of the
 * n window starts laid end to end; epoch e's permutation comes from its own generator seeded from
 * (seed, e), so a --resume continues the same order and g's draws are left to dropout. */
typedef struct {
  int64_t n, epoch, *perm, *off;
} epoch_batches;

static ct_status epoch_offsets(epoch_batches *e, int64_t step, int64_t B, int64_t seed) {
  for (int64_t i = 0; i < B; i++) {
    int64_t k = step * B + i, ep = k / e->n;
    if (ep != e->epoch) {
      ct_generator *pg = ct_generator_new(((uint64_t)seed ^ 0x9E3779B97F4A7C15ull) + (uint64_t)ep);
      ct_tensor *p = pg ? ct_randperm(e->n, NULL, pg) : NULL;
      ct_status st = p ? ct_copy_to_buffer(p, e->perm, CT_INT64, e->n) : ct_last_status();
      ct_release(p);
      ct_generator_free(pg);
      if (st != CT_OK) return st;
      e->epoch = ep;
    }
    e->off[i] = e->perm[k % e->n];
  }
  return CT_OK;
}

/* --cuda-graph: the forward, backward and gradient clipping of a step, captured once as a CUDA
 * graph over fixed device buffers for the batch; the optimizer step stays eager (the learning-rate
 * schedule changes its arguments every step) and the gradients keep their memory (zeroed in place). */
typedef struct {
  ct_gpt *m;
  ct_tensor *x, *y, *loss; /* the fixed batch buffers and the step's loss (retained) */
  int64_t np;
  ct_tensor **allp;
  double clip;
  ct_generator *g;
  ct_cuda_graph *graph;
  bool warm, eager; /* eager: the capture failed (reported once), the steps run eagerly */
} graph_step;

static ct_status fwd_bwd(void *user) {
  graph_step *c = user;
  ct_scope *sc = ct_scope_begin();
  ct_tensor *loss = NULL;
  ct_status st = ct_gpt_forward(c->m, c->x, c->y, true, c->g, NULL, &loss);
  if (st == CT_OK) st = ct_backward(loss, NULL, false, false);
  if (st == CT_OK && c->clip > 0) {
    ct_tensor *norm = ct_clip_grad_norm_(c->np, c->allp, c->clip, 2.0, false);
    if (!norm) st = ct_last_status();
    ct_release(norm);
  }
  if (st == CT_OK) {
    ct_release(c->loss);
    c->loss = ct_retain(loss);
  }
  ct_scope_end(sc);
  return st;
}

/* One step's forward and backward through the graph (the first step eager, the graph captured at
 * the second); x, y: the batch on the host. */
static ct_status graph_run(graph_step *c, ct_device dev, const ct_tensor *x, const ct_tensor *y, double *loss) {
  if (!c->x) {
    ct_options io = ct_opts_dtype(CT_INT64);
    io.device = dev;
    /* retained: the step's scope releases its own reference, the buffers live until the end */
    c->x = ct_retain(ct_empty(2, ct_shape(x), io));
    c->y = ct_retain(ct_empty(2, ct_shape(y), io));
    if (!c->x || !c->y) return ct_last_status();
  }
  CT_TRY(ct_copy_(c->x, x));
  CT_TRY(ct_copy_(c->y, y));
  if (!c->warm || c->eager) {
    c->warm = true;
    CT_TRY(fwd_bwd(c));
  } else {
    if (!c->graph) {
      if (!(c->graph = ct_cuda_graph_capture(dev.index, fwd_bwd, c))) {
        /* nothing ran during the failed capture: this step and the next ones run eagerly */
        fprintf(stderr, "ctorch train-gpt: --cuda-graph: the step cannot be captured (%s); training eagerly\n",
                ct_last_error());
        ct_clear_error();
        c->eager = true;
        return graph_run(c, dev, x, y, loss);
      }
      printf("CUDA graph: %lld nodes captured (forward, backward, clipping)\n", (long long)ct_cuda_graph_num_nodes(c->graph));
      fflush(stdout);
    }
    CT_TRY(ct_cuda_graph_replay(c->graph));
  }
  return ct_item_double(c->loss, loss);
}

/* Mean loss over iters batches drawn from a generator seeded afresh, so each evaluation sees the
 * same batches (comparable numbers, and the training stream is not disturbed). */
static ct_status evaluate(ct_gpt *m, const split *s, const train_opts *o, int64_t iters, uint64_t seed, double *out) {
  ct_generator *g = ct_generator_new(seed);
  if (!g) return ct_last_status();
  bool prev = ct_set_grad_enabled(false);
  double sum = 0;
  ct_status st = CT_OK;
  for (int64_t i = 0; i < iters && st == CT_OK; i++) {
    ct_scope *sc = ct_scope_begin();
    ct_tensor *x, *y, *loss;
    double v = 0;
    st = get_batch(s, o->batch, o->context, g, o->dev, &x, &y, NULL);
    if (st == CT_OK) st = ct_gpt_forward(m, x, y, false, NULL, NULL, &loss);
    if (st == CT_OK) st = ct_item_double(loss, &v);
    sum += v;
    ct_scope_end(sc);
  }
  ct_set_grad_enabled(prev);
  ct_generator_free(g);
  *out = sum / (double)iters;
  return st;
}

/* ---- the log: per-step losses and evaluations, written as log.json and loss.svg ---- */
typedef struct {
  double *step, *loss, *lr, *tps;
  size_t n, cap;
  double *estep, *etrain, *eval;
  size_t en, ecap;
} train_log;

static bool grow(double **arrs[], int k, size_t *cap, size_t n) {
  if (n < *cap) return true;
  size_t nc = *cap ? *cap * 2 : 256;
  for (int i = 0; i < k; i++) {
    double *p = realloc(*arrs[i], nc * sizeof **arrs[i]);
    if (!p) return false;
    *arrs[i] = p;
  }
  *cap = nc;
  return true;
}

static void log_step(train_log *l, double step, double loss, double lr, double tps) {
  double **a[4] = {&l->step, &l->loss, &l->lr, &l->tps};
  if (!grow(a, 4, &l->cap, l->n)) return;
  l->step[l->n] = step;
  l->loss[l->n] = loss;
  l->lr[l->n] = lr;
  l->tps[l->n++] = tps;
}

static void log_eval(train_log *l, double step, double tr, double va) {
  double **a[3] = {&l->estep, &l->etrain, &l->eval};
  if (!grow(a, 3, &l->ecap, l->en)) return;
  l->estep[l->en] = step;
  l->etrain[l->en] = tr;
  l->eval[l->en++] = va;
}

static void log_free(train_log *l) {
  free(l->step); free(l->loss); free(l->lr); free(l->tps);
  free(l->estep); free(l->etrain); free(l->eval);
}

/* Reloads log.json of a resumed run, keeping entries up to the resumed step. */
static void log_load(train_log *l, const char *dir, int64_t upto) {
  char path[4096];
  snprintf(path, sizeof path, "%s/log.json", dir);
  size_t n;
  char *s = ctj_read_file(path, &n);
  ctj *j = s ? ctj_parse(s, n, NULL, 0) : NULL;
  free(s);
  const ctj *st = ctj_get(j, "steps"), *ev = ctj_get(j, "evals");
  for (size_t i = 0; st && st->type == CTJ_ARR && i < st->n; i++) {
    double k = ctj_get_num(&st->items[i], "step", -1);
    if (k >= 0 && k <= (double)upto)
      log_step(l, k, ctj_get_num(&st->items[i], "loss", NAN), ctj_get_num(&st->items[i], "lr", NAN),
               ctj_get_num(&st->items[i], "tokens_per_s", NAN));
  }
  for (size_t i = 0; ev && ev->type == CTJ_ARR && i < ev->n; i++) {
    double k = ctj_get_num(&ev->items[i], "step", -1);
    if (k >= 0 && k <= (double)upto)
      log_eval(l, k, ctj_get_num(&ev->items[i], "train_loss", NAN), ctj_get_num(&ev->items[i], "val_loss", NAN));
  }
  ctj_free(j);
}

static void num(ctj_buf *b, double v) {
  if (isfinite(v)) ctj_buf_printf(b, "%.9g", v);
  else ctj_buf_puts(b, "null");
}

static bool log_write(const train_log *l, const char *dir, const char *cfg_json) {
  ctj_buf b = {0};
  ctj_buf_printf(&b, "{\n\"config\": {%s},\n\"steps\": [", cfg_json);
  for (size_t i = 0; i < l->n; i++) {
    ctj_buf_printf(&b, "%s\n{\"step\": %.0f, \"loss\": ", i ? "," : "", l->step[i]);
    num(&b, l->loss[i]);
    ctj_buf_puts(&b, ", \"lr\": ");
    num(&b, l->lr[i]);
    ctj_buf_puts(&b, ", \"tokens_per_s\": ");
    num(&b, l->tps[i]);
    ctj_buf_puts(&b, "}");
  }
  ctj_buf_puts(&b, "],\n\"evals\": [");
  for (size_t i = 0; i < l->en; i++) {
    ctj_buf_printf(&b, "%s\n{\"step\": %.0f, \"train_loss\": ", i ? "," : "", l->estep[i]);
    num(&b, l->etrain[i]);
    ctj_buf_puts(&b, ", \"val_loss\": ");
    num(&b, l->eval[i]);
    ctj_buf_puts(&b, "}");
  }
  ctj_buf_puts(&b, "]\n}\n");
  char path[4096];
  snprintf(path, sizeof path, "%s/log.json", dir);
  FILE *f = b.oom ? NULL : fopen(path, "w");
  bool ok = f && fwrite(b.p, 1, b.n, f) == b.n;
  if (f && fclose(f)) ok = false;
  ctj_buf_free(&b);
  /* the plot: per-step loss (thin) and the evaluations */
  snprintf(path, sizeof path, "%s/loss.svg", dir);
  ct_plot_series s[3] = {{"train (batch)", "#9ecae1", l->step, l->loss, l->n},
                         {"train (eval)", "#1f77b4", l->estep, l->etrain, l->en},
                         {"validation", "#d62728", l->estep, l->eval, l->en}};
  return ct_plot_svg(path, "ctorch train-gpt: loss", "step", "cross-entropy loss", 3, s) && ok;
}

/* ---- checkpoints ---- */
static ct_status save_all(ct_gpt *m, ct_optim *opt, ct_generator *g, int64_t step, const train_opts *o,
                          const ct_tokenizer *tok, const char *tok_src_dir, double last_loss) {
  ctj_buf extra = {0};
  gpt_tokenizer_json(tok, &extra);
  ctj_buf_puts(&extra, ",\n  ");
  opts_json(o, &extra);
  ctj_buf_printf(&extra, ",\n  \"ctorch_step\": %lld", (long long)step);
  ct_status st = extra.oom ? CT_ERR(CT_ERR_OOM, "out of memory") : ct_gpt_save(m, o->out, extra.p);
  ctj_buf_free(&extra);
  if (st != CT_OK) return st;
  if (tok_src_dir && ct_tokenizer_get_kind(tok) == CT_TOKENIZER_GPT2 && !gpt_copy_tokenizer_files(tok_src_dir, o->out))
    return CT_ERR(CT_ERR_RUNTIME, "cannot copy the tokenizer files from '%s' to '%s'", tok_src_dir, o->out);
  ct_dict *osd = ct_dict_new(), *meta = ct_dict_new();
  if (!osd || !meta) st = CT_ERR(CT_ERR_OOM, "out of memory");
  if (st == CT_OK) st = ct_optim_state_dict(opt, osd);
  char buf[64];
  snprintf(buf, sizeof buf, "%.9g", last_loss);
  if (st == CT_OK) st = ct_dict_set_meta(meta, "train_loss", buf);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", o->out, CT_CHECKPOINT_FILE);
  if (st == CT_OK) st = ct_checkpoint_save(path, ct_gpt_parameters(m), osd, g, step, meta);
  ct_dict_free(osd);
  ct_dict_free(meta);
  return st;
}

/* ---- the final sample ---- */
typedef struct {
  const ct_tokenizer *tok;
} sample_ctx;

static bool print_token(int64_t id, const float *probs, int64_t V, void *user) {
  sample_ctx *c = user;
  size_t n;
  const char *s = ct_tokenizer_token_bytes(c->tok, id, &n);
  if (s) fwrite(s, 1, n, stdout);
  fflush(stdout);
  return true;
}

static char *read_data(const char *path, size_t *n) {
  char *s = ctj_read_file(path, n);
  if (!s) fprintf(stderr, "ctorch train-gpt: cannot read '%s': %s\n", path, strerror(errno));
  return s;
}

static bool make_dir(const char *d) {
  if (mkdir(d, 0777) == 0 || errno == EEXIST) return true;
  fprintf(stderr, "ctorch train-gpt: cannot create '%s': %s\n", d, strerror(errno));
  return false;
}

#define FAIL(...)                                  \
  do {                                             \
    fprintf(stderr, "ctorch train-gpt: " __VA_ARGS__); \
    fprintf(stderr, "\n");                         \
    goto done;                                     \
  } while (0)
#define CHECK_ST(expr)                                                           \
  do {                                                                           \
    if ((expr) != CT_OK) FAIL("%s", ct_last_error());                            \
  } while (0)

int ct_cmd_train_gpt(int argc, char **argv) {
  train_opts o;
  defaults(&o);
  int rc = 1;
  char *text = NULL;
  int64_t *ids = NULL;
  ct_tokenizer *tok = NULL;
  ct_gpt *m = NULL;
  ct_optim *opt = NULL;
  ct_generator *g = NULL;
  ctj *saved = NULL;
  char *saved_data = NULL;
  train_log lg = {0};
  ct_tensor **decay = NULL, **no_decay = NULL, **allp = NULL;
  graph_step gs = {0};
  epoch_batches ep = {0};
  const char *tok_src_dir = NULL;
  ct_gpt_config cfg;
  /* --resume: the saved run's options are the defaults, the command line overrides them */
  int pr = parse(argc, argv, &o, true);
  if (pr == 2) {
    usage();
    return 0;
  }
  if (pr) return 2;
  if (o.resume) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", o.resume);
    size_t n;
    char *s = ctj_read_file(path, &n);
    char err[160];
    saved = s ? ctj_parse(s, n, err, sizeof err) : NULL;
    free(s);
    if (!saved) {
      fprintf(stderr, "ctorch train-gpt: cannot resume from '%s': no readable %s\n", o.resume, path);
      return 1;
    }
    opts_from_json(&o, ctj_get(saved, "ctorch_train"), &saved_data);
  }
  if (parse(argc, argv, &o, false)) {
    rc = 2;
    goto done;
  }
  if (o.resume && !o.out) o.out = o.resume;
  if (o.min_lr < 0) o.min_lr = o.lr * 0.3;
  if (o.threads) ct_set_num_threads((int)o.threads);
  if (!gpt_parse_device("train-gpt", o.device, &o.dev)) goto done;
  if (strcmp(o.precision, "fp32") && o.dev.type != CT_DEVICE_CUDA)
    FAIL("--precision %s needs --device cuda (the CPU trains in float32)", o.precision);
  if (!strcmp(o.precision, "tf32")) ct_cuda_set_allow_tf32(true);
  /* bf16: PyTorch's autocast, bfloat16 activations (session 10: gradients as accurate as torch.autocast's
   * at the same weights, and 1.42x its step on an H200); bf16-fp32act: the earlier mode */
  if (!strncmp(o.precision, "bf16", 4)) CHECK_ST(ct_cuda_set_autocast_bf16(true));
  if (!strcmp(o.precision, "bf16")) CHECK_ST(ct_cuda_set_autocast_bf16_outputs(true));
  if (o.cuda_graph && o.dev.type != CT_DEVICE_CUDA) FAIL("--cuda-graph needs --device cuda");

  /* data and tokenizer */
  size_t text_n = 0;
  if (o.data) {
    if (!(text = read_data(o.data, &text_n))) goto done;
  } else if (!(text = gpt_builtin_corpus(160000, &text_n))) FAIL("out of memory");
  const char *model_dir = o.resume ? o.resume : o.init;
  if (model_dir) {
    CHECK_ST(ct_gpt_read_config(model_dir, &cfg));
    if (!(tok = gpt_tokenizer_for_model(model_dir, &cfg))) FAIL("%s", ct_last_error());
    tok_src_dir = model_dir;
  } else if (!strcmp(o.tokenizer, "byte")) tok = ct_tokenizer_byte();
  else if (!strcmp(o.tokenizer, "char")) tok = ct_tokenizer_char_from_text(text, text_n);
  else {
    if (!o.tokenizer_dir) FAIL("--tokenizer gpt2 needs --tokenizer-dir DIR with GPT-2's tokenizer files");
    tok = ct_tokenizer_gpt2_load_dir(o.tokenizer_dir);
    tok_src_dir = o.tokenizer_dir;
  }
  if (!tok) FAIL("%s", ct_last_error());
  size_t n_ids;
  CHECK_ST(ct_tokenizer_encode(tok, text, text_n, &ids, &n_ids));
  /* nanoGPT's split: the first int(n * 0.9) tokens train */
  int64_t n_train = (int64_t)(n_ids / 10 * 9 + n_ids % 10 * 9 / 10), n_val = (int64_t)n_ids - n_train;
  split tr = {ids, n_train}, va = {ids + n_train, n_val};

  /* model */
  g = ct_generator_new((uint64_t)o.seed);
  if (!g) FAIL("%s", ct_last_error());
  if (model_dir) {
    if (!(m = ct_gpt_load(model_dir))) FAIL("%s", ct_last_error());
    CHECK_ST(ct_gpt_set_dropout(m, o.dropout));
    o.context = cfg.n_positions < o.context || o.resume ? cfg.n_positions : o.context;
    if (o.resume) {
      o.layers = cfg.n_layer;
      o.heads = cfg.n_head;
      o.width = cfg.n_embd;
    }
  } else {
    cfg = (ct_gpt_config){ct_tokenizer_vocab_size(tok), o.context, o.width, o.layers, o.heads, o.dropout, 1e-5};
    if (!(m = ct_gpt_new_variant(&cfg, o.bias, o.gelu_erf ? "none" : "tanh", g))) FAIL("%s", ct_last_error());
  }
  cfg = *ct_gpt_get_config(m);
  if (o.dev.type != CT_DEVICE_CPU) CHECK_ST(ct_gpt_to_device(m, o.dev)); /* before the optimizer makes its state */
  if (o.context > cfg.n_positions) o.context = cfg.n_positions;
  if (n_train <= o.context + 1 || n_val <= o.context + 1)
    FAIL("the data is too short: %lld tokens give %lld training and %lld validation tokens, and each split needs "
         "more than the context (%lld) + 1",
         (long long)n_ids, (long long)n_train, (long long)n_val, (long long)o.context);

  if (o.proj_init_plain && !model_dir) {
    /* --proj-init plain: N(0, 0.02) for the residual projections too; rescaling GPT-2's scaled draws
     * keeps every other draw of g, so runs differ from the default in this one respect */
    bool prev = ct_set_grad_enabled(false);
    const ct_dict *P0 = ct_gpt_parameters(m);
    ct_status st = CT_OK;
    for (int64_t i = 0; st == CT_OK && i < ct_dict_len(P0); i++)
      if (strstr(ct_dict_name(P0, i), ".c_proj.weight"))
        st = ct_mul_scalar_(ct_dict_tensor(P0, i), ct_sf(sqrt(2.0 * (double)cfg.n_layer)));
    ct_set_grad_enabled(prev);
    CHECK_ST(st);
  }
  if (o.batches_epoch) {
    ep = (epoch_batches){n_train - o.context, -1, malloc((size_t)(n_train - o.context) * sizeof *ep.perm),
                         malloc((size_t)o.batch * sizeof *ep.off)};
    if (!ep.perm || !ep.off) FAIL("out of memory");
  }

  /* AdamW: weight decay on the matrices and embeddings, none on biases and LayerNorms (as nanoGPT);
   * --decay-embeddings no: on the linear layers' weights only (nanoGPT until May 2023) */
  const ct_dict *P = ct_gpt_parameters(m);
  int64_t np = ct_dict_len(P), nd = 0, nn = 0;
  decay = calloc((size_t)np, sizeof *decay);
  no_decay = calloc((size_t)np, sizeof *no_decay);
  allp = calloc((size_t)np, sizeof *allp);
  if (!decay || !no_decay || !allp) FAIL("out of memory");
  for (int64_t i = 0; i < np; i++) {
    ct_tensor *p = allp[i] = ct_dict_tensor(P, i);
    const char *name = ct_dict_name(P, i);
    bool emb = strstr(name, ".wte.") || strstr(name, ".wpe.");
    if (ct_ndim(p) >= 2 && (o.decay_embeddings || !emb)) decay[nd++] = p;
    else no_decay[nn++] = p;
  }
  ct_optim_options oo = ct_optim_defaults(CT_OPTIM_ADAMW);
  oo.lr = o.lr;
  oo.beta1 = o.beta1;
  oo.beta2 = o.beta2;
  oo.eps = 1e-8;
  oo.weight_decay = o.weight_decay;
  if (!(opt = ct_optim_new(CT_OPTIM_ADAMW, nd, decay, &oo))) FAIL("%s", ct_last_error());
  oo.weight_decay = 0;
  if (nn) CHECK_ST(ct_optim_add_param_group(opt, nn, no_decay, &oo));

  int64_t step = 0;
  if (o.resume) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", o.resume, CT_CHECKPOINT_FILE);
    ct_dict *msd = NULL, *osd = NULL;
    ct_status st = ct_checkpoint_load(path, &msd, &osd, g, &step, NULL, false);
    if (st == CT_OK) st = ct_gpt_load_state_dict(m, msd);
    if (st == CT_OK) st = ct_optim_load_state_dict(opt, osd);
    ct_dict_free(msd);
    ct_dict_free(osd);
    if (st != CT_OK) FAIL("cannot resume from '%s': %s", path, ct_last_error());
    log_load(&lg, o.resume, step);
  }
  if (o.out && !make_dir(o.out)) goto done;

  bool bar = !o.quiet && isatty(2);
  printf("GPT: %lld layers, %lld heads, width %lld, context %lld, vocab %lld (%s tokenizer), %s, GELU %s: %.2fM "
         "parameters\n",
         (long long)cfg.n_layer, (long long)cfg.n_head, (long long)cfg.n_embd, (long long)o.context,
         (long long)cfg.vocab_size, ct_tokenizer_kind_name(ct_tokenizer_get_kind(tok)),
         ct_gpt_has_bias(m) ? "biases" : "no biases", strcmp(ct_gpt_gelu(m), "tanh") ? "erf" : "tanh",
         (double)ct_gpt_num_params(m) / 1e6);
  printf("data: %s, %zu bytes -> %zu tokens (%lld train, %lld val); batch %lld x %lld, %lld steps, lr %g, %d threads\n",
         o.data ? o.data : "built-in stories", text_n, n_ids, (long long)n_train, (long long)n_val, (long long)o.batch,
         (long long)o.context, (long long)o.steps, o.lr, ct_get_num_threads());
  if (o.dev.type != CT_DEVICE_CPU)
    printf("device: cuda:%d (%s), precision %s\n", o.dev.index, ct_cuda_device_name(o.dev.index), o.precision);
  if (o.resume) printf("resuming at step %lld from %s\n", (long long)step, o.resume);
  fflush(stdout);

  ctj_buf cfgj = {0};
  opts_json(&o, &cfgj);
  ctj_buf_printf(&cfgj, ", \"model\": {\"n_layer\": %lld, \"n_head\": %lld, \"n_embd\": %lld, \"n_positions\": %lld, "
                 "\"vocab_size\": %lld, \"dropout\": %g, \"tokenizer\": \"%s\", \"parameters\": %lld}",
                 (long long)cfg.n_layer, (long long)cfg.n_head, (long long)cfg.n_embd, (long long)cfg.n_positions,
                 (long long)cfg.vocab_size, cfg.dropout, ct_tokenizer_kind_name(ct_tokenizer_get_kind(tok)),
                 (long long)ct_gpt_num_params(m));
  double t_train = 0, last_loss = NAN, tr_loss = NAN, va_loss = NAN;
  int64_t tokens = 0, first_step = step;
  const uint64_t eval_seed = (uint64_t)o.seed ^ 0x5DEECE66Dull;
  double t_start = gpt_now();
  while (true) {
    bool last = step >= o.steps;
    if (step % o.eval_every == 0 || last) {
      if (bar) ct_progress_done(stderr);
      int64_t iters = last && o.eval_iters < FINAL_EVAL_ITERS ? FINAL_EVAL_ITERS : o.eval_iters;
      CHECK_ST(evaluate(m, &tr, &o, iters, eval_seed, &tr_loss));
      CHECK_ST(evaluate(m, &va, &o, iters, eval_seed + 1, &va_loss));
      printf("step %lld train loss %.4f val loss %.4f\n", (long long)step, tr_loss, va_loss);
      fflush(stdout);
      log_eval(&lg, (double)step, tr_loss, va_loss);
      if (o.out && (step > first_step || last)) {
        CHECK_ST(save_all(m, opt, g, step, &o, tok, tok_src_dir, last_loss));
        if (!log_write(&lg, o.out, cfgj.p ? cfgj.p : "")) FAIL("cannot write the log into '%s'", o.out);
      }
    }
    if (last) break;
    double t0 = gpt_now(), lr = lr_at(&o, step);
    for (int gi = 0; gi < ct_optim_num_groups(opt); gi++) CHECK_ST(ct_optim_set_lr(opt, gi, lr));
    ct_scope *sc = ct_scope_begin();
    ct_tensor *x, *y, *loss;
    ct_status st = CT_OK;
    const int64_t *given = NULL;
    if (o.batches_epoch) {
      st = epoch_offsets(&ep, step, o.batch, o.seed);
      given = ep.off;
    }
    if (st == CT_OK) st = get_batch(&tr, o.batch, o.context, g, o.cuda_graph ? ct_cpu() : o.dev, &x, &y, given);
    if (o.cuda_graph) {
      if (!gs.m) gs = (graph_step){m, NULL, NULL, NULL, np, allp, o.grad_clip, g, NULL, false, false};
      if (st == CT_OK) st = graph_run(&gs, o.dev, x, y, &last_loss);
      ct_scope_end(sc);
      if (st != CT_OK) FAIL("step %lld: %s", (long long)step, ct_last_error());
    } else {
    if (st == CT_OK) st = ct_gpt_forward(m, x, y, true, g, NULL, &loss);
    if (st == CT_OK) st = ct_backward(loss, NULL, false, false);
    if (st == CT_OK) st = ct_item_double(loss, &last_loss);
    if (st == CT_OK && o.grad_clip > 0) {
      ct_tensor *norm = ct_clip_grad_norm_(np, allp, o.grad_clip, 2.0, false);
      if (!norm) st = ct_last_status();
      ct_release(norm);
    }
    ct_scope_end(sc);
    if (st != CT_OK) FAIL("step %lld: %s", (long long)step, ct_last_error());
    }
    CHECK_ST(ct_optim_step(opt));
    CHECK_ST(ct_optim_zero_grad(opt, !o.cuda_graph)); /* the graph keeps writing the same gradients */
    step++;
    double dt = gpt_now() - t0;
    t_train += dt;
    tokens += o.batch * o.context;
    double tps = (double)tokens / t_train;
    log_step(&lg, (double)step, last_loss, lr, o.batch * o.context / dt);
    if (bar) ct_progress(stderr, step, o.steps, last_loss, tps, t_train / (double)(step - first_step) * (double)(o.steps - step));
  }
  double wall = gpt_now() - t_start;
  printf("done: %lld steps in %.1f s, %.0f tokens/s in training steps; final train loss %.4f, val loss %.4f\n",
         (long long)(step - first_step), wall, t_train > 0 ? (double)tokens / t_train : 0.0, tr_loss, va_loss);
  if (o.out) printf("saved to %s/ (model.safetensors, config.json, checkpoint.safetensors, log.json, loss.svg)\n", o.out);
  ctj_buf_free(&cfgj);
  if (o.sample_tokens > 0) {
    /* the prompt: a newline where the vocabulary has one, else GPT-2's <|endoftext|> or token 0 */
    int64_t *pid = NULL;
    size_t pn = 0;
    int64_t prompt = ct_tokenizer_eot(tok) >= 0 ? ct_tokenizer_eot(tok) : 0;
    if (ct_tokenizer_get_kind(tok) != CT_TOKENIZER_GPT2 && ct_tokenizer_encode(tok, "\n", 1, &pid, &pn) == CT_OK && pn == 1)
      prompt = pid[0];
    free(pid);
    ct_clear_error();
    ct_gpt_sampling sp = {0.8, 0, 1.0};
    sample_ctx sc = {tok};
    printf("sample (temperature 0.8):\n");
    CHECK_ST(ct_gpt_generate(m, &prompt, 1, o.sample_tokens, &sp, g, print_token, &sc));
    printf("\n");
  }
  rc = 0;
done:
  ct_cuda_graph_free(gs.graph);
  ct_release(gs.x);
  ct_release(gs.y);
  ct_release(gs.loss);
  ctj_free(saved);
  free(saved_data);
  log_free(&lg);
  free(ep.perm);
  free(ep.off);
  free(decay);
  free(no_decay);
  free(allp);
  ct_optim_free(opt);
  ct_gpt_free(m);
  ct_generator_free(g);
  ct_tokenizer_free(tok);
  free(ids);
  free(text);
  return rc;
}
