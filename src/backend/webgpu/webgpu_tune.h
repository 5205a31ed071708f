/* Kernel variants chosen by measurement (issue 9, item 5), webgpu_tune.c.
 * A kernel with several variants (the GEMM's tile, the attention's query tile) asks for a
 * decision per (kind, shape class); unknown ones are measured once on the adapter at hand:
 * every candidate runs on the real operands (a warm-up that also compiles it, then the best
 * of a few timed runs, each waited for), the fastest wins. Decisions are keyed by the
 * adapter and its driver and persisted: natively in a text file (CT_WEBGPU_TUNE_FILE, else
 * $XDG_CACHE_HOME/ctorch/webgpu_tune.txt, else ~/.cache/ctorch/webgpu_tune.txt), in the
 * browser in localStorage ("ctorch.webgpu_tune"), so a second run times nothing. A missing
 * file means measuring; a corrupt one is ignored with a warning on stderr and rewritten.
 * CT_WEBGPU_TUNE=0 turns measuring off (every kernel then takes its built-in heuristic).
 * Nothing is measured while a capture is recording. */
#ifndef CT_WEBGPU_TUNE_H
#define CT_WEBGPU_TUNE_H
#include "../backend.h"

/* Runs variant v (0..n-1) once on the caller's operands; results land in scratch. */
typedef ct_status (*wg_tune_run_fn)(int v, void *ctx);
/* The chosen variant for (kind, cls), measuring through run when no decision is known;
 * -1 when measuring is off or failed (the caller keeps its default). Called with the
 * backend lock held; kind and cls must not contain tabs or newlines. */
int wg_tune_pick(const char *kind, const char *cls, int n, wg_tune_run_fn run, void *ctx);
/* Whether picks may measure now (on, and no capture recording). */
bool wg_tune_active(void);

/* For tests and tools: timed runs so far (each candidate's timed runs count one each);
 * forgetting the decisions held in memory (the next pick reads the file again, as a new
 * process would); the file in use. */
int64_t ct_webgpu_tune_timings(void);
void ct_webgpu_tune_forget(void);
const char *ct_webgpu_tune_path(void);
/* The decision recorded for (kind, cls) on this adapter, -1 if none (no measuring). */
int ct_webgpu_tune_lookup(const char *kind, const char *cls);
#endif
