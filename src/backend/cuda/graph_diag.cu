/* Diagnostics of a captured CUDA graph, printed on stderr after each capture (cuda_backend.cu calls
 * ct_cuda_graph_diagnostics):
 *   CT_CUDA_GRAPH_NODES=1    the graph's nodes by kind and kernel name, most frequent first;
 *   CT_CUDA_GRAPH_TIMELINE=N a timed replay of a copy of the graph in which every kernel node has
 *                            a one-thread kernel hanging off it that writes %globaltimer (event-record nodes were
 *                            tried first: they run when the graph's executor gets to them, which gave nodes that
 *                            finished before their own dependencies). So each node's stamp is its completion plus
 *                            one dependent launch's latency, in a real replay (the streams' branches overlapping as
 *                            they do); the median of N replays after warm-ups. From those: the critical path
 *                            (walking back from the last stamp through the dependency stamped last), each of its
 *                            nodes' own share (its stamp minus its latest dependency's: launch gap + run time),
 *                            grouped by kernel name, and the path in order. The replays run the step (they change
 *                            the model: a diagnostic run only).
 * The extra nodes are cheap but not free: the timeline's total runs above a plain replay's; its shares are for
 * deciding what to remove or overlap, not for quoting as kernel times.
 * Kernel names come from the driver (cuDNN's and cuBLAS's kernels are not the runtime's), through entry points, so
 * nothing links libcuda. */
#include <cuda_runtime.h>
#include <cuda.h>
#include <cxxabi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cuda_backend.h"
}

typedef CUresult (*kparams_fn)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*fname_fn)(const char **, CUfunction);
typedef CUresult (*kname_fn)(const char **, CUkernel);

/* "kernel name" (demangled, without its parameter list), "(memset)", "(memcpy)" or "(node type N)";
 * *blocks = the kernel's grid size (0 for other nodes) */
static void node_name(cudaGraphNode_t node, char *name, size_t cap, long *blocks) {
  static void *fp, *fn, *kn;
  static bool looked;
  if (!looked) {
    cudaDriverEntryPointQueryResult q;
    cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", &fp, 12000, cudaEnableDefault, &q);
    cudaGetDriverEntryPointByVersion("cuFuncGetName", &fn, 12030, cudaEnableDefault, &q);
    cudaGetDriverEntryPointByVersion("cuKernelGetName", &kn, 12030, cudaEnableDefault, &q);
    looked = true;
  }
  cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
  cudaGraphNodeGetType(node, &t);
  *blocks = 0;
  snprintf(name, cap, "(node type %d)", (int)t);
  if (t == cudaGraphNodeTypeMemset) snprintf(name, cap, "(memset)");
  if (t == cudaGraphNodeTypeMemcpy) snprintf(name, cap, "(memcpy)");
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  const char *raw = NULL;
  if (t == cudaGraphNodeTypeKernel && fp && ((kparams_fn)fp)((CUgraphNode)node, &kp) == CUDA_SUCCESS) {
    if (kp.func && fn) ((fname_fn)fn)(&raw, kp.func);
    if (!raw && kp.kern && kn) ((kname_fn)kn)(&raw, kp.kern);
    *blocks = (long)kp.gridDimX * kp.gridDimY * kp.gridDimZ;
  }
  if (raw) {
    int dst = 0;
    char *dm = abi::__cxa_demangle(raw, NULL, NULL, &dst);
    const char *use = dm ? dm : raw;
    size_t len = strcspn(use, "("); /* the name without its parameter list */
    snprintf(name, cap, "%.*s", (int)(len < cap - 1 ? len : cap - 1), use);
    free(dm);
  }
}

struct hist {
  char name[112];
  int count;
  double us;
};
static size_t hist_add(struct hist *h, size_t kinds, const char *name, double us) {
  size_t k = 0;
  while (k < kinds && strcmp(h[k].name, name)) k++;
  if (k == kinds) snprintf(h[kinds++].name, sizeof h->name, "%s", name);
  h[k].count++;
  h[k].us += us;
  return kinds;
}
static int by_count(const void *a, const void *b) {
  return ((const struct hist *)b)->count - ((const struct hist *)a)->count;
}
static int by_time(const void *a, const void *b) {
  double d = ((const struct hist *)b)->us - ((const struct hist *)a)->us;
  return d > 0 ? 1 : d < 0 ? -1 : 0;
}

static void histogram(cudaGraph_t graph) {
  size_t n = 0;
  if (cudaGraphGetNodes(graph, NULL, &n) != cudaSuccess || n == 0) return;
  cudaGraphNode_t *nodes = (cudaGraphNode_t *)malloc(n * sizeof *nodes);
  struct hist *h = (struct hist *)calloc(n, sizeof *h);
  size_t kinds = 0;
  if (nodes && h && cudaGraphGetNodes(graph, nodes, &n) == cudaSuccess) {
    for (size_t i = 0; i < n; i++) {
      char name[112];
      long blocks;
      node_name(nodes[i], name, sizeof name, &blocks);
      kinds = hist_add(h, kinds, name, 0);
    }
    qsort(h, kinds, sizeof *h, by_count);
    fprintf(stderr, "CUDA graph: %zu nodes, %zu kinds\n", n, kinds);
    for (size_t k = 0; k < kinds; k++) fprintf(stderr, "  %5d  %s\n", h[k].count, h[k].name);
  }
  free(nodes);
  free(h);
}

static __global__ void k_stamp(unsigned long long *slots, int i) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  slots[i] = t;
}

/* a one-thread k_stamp node writing slots[slot], after `after` (NULL: a root) */
static bool add_stamp(cudaGraph_t g, const cudaGraphNode_t *after, unsigned long long *slots, int slot) {
  cudaGraphNode_t sn;
  void *args[2] = {&slots, &slot};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)k_stamp;
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(1);
  kp.kernelParams = args;
  return cudaGraphAddKernelNode(&sn, g, after, after ? 1 : 0, &kp) == cudaSuccess;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

static void timeline(cudaGraph_t graph, int reps) {
  cudaGraph_t g = NULL;
  cudaGraphExec_t ex = NULL;
  cudaStream_t s = NULL;
  unsigned long long *slots = NULL, *host = NULL;
  cudaGraphNode_t *nodes = NULL, *deps = NULL;
  cudaGraphEdgeData *edata = NULL;
  size_t n = 0, *dep_off = NULL, *dep = NULL; /* dep: each dependency as a node index (n: not a node) */
  int *stamped = NULL;
  float *t = NULL, *samples = NULL;
  struct hist *h = NULL;
  const char *why = NULL;
  if (cudaGraphClone(&g, graph) != cudaSuccess || cudaGraphGetNodes(g, NULL, &n) != cudaSuccess || n == 0) {
    why = "clone";
    goto out;
  }
  nodes = (cudaGraphNode_t *)malloc(n * sizeof *nodes);
  host = (unsigned long long *)calloc(n + 1, sizeof *host);
  stamped = (int *)calloc(n, sizeof *stamped);
  t = (float *)calloc(n, sizeof *t);
  samples = (float *)calloc(n * (size_t)reps, sizeof *samples);
  dep_off = (size_t *)calloc(n + 1, sizeof *dep_off);
  h = (struct hist *)calloc(n, sizeof *h);
  if (!nodes || !host || !stamped || !t || !samples || !dep_off || !h ||
      cudaGraphGetNodes(g, nodes, &n) != cudaSuccess) {
    why = "memory";
    goto out;
  }
  /* every node's dependencies (on the clone, before the stamp nodes are added), as indices */
  for (size_t i = 0; i < n; i++) {
    size_t nd = 0; /* with edge data: programmatic (PDL) edges make a query without it fail as lossy */
    cudaGraphNodeGetDependencies(nodes[i], NULL, NULL, &nd);
    dep_off[i + 1] = dep_off[i] + nd;
  }
  deps = (cudaGraphNode_t *)malloc((dep_off[n] + 1) * sizeof *deps);
  edata = (cudaGraphEdgeData *)calloc(dep_off[n] + 1, sizeof *edata);
  if (!deps || !edata) {
    why = "memory";
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    size_t nd = dep_off[i + 1] - dep_off[i];
    if (nd && cudaGraphNodeGetDependencies(nodes[i], deps + dep_off[i], edata + dep_off[i], &nd) != cudaSuccess) {
      why = "dependencies";
      goto out;
    }
  }
  dep = (size_t *)malloc((dep_off[n] + 1) * sizeof *dep);
  if (!dep) {
    why = "memory";
    goto out;
  }
  for (size_t d = 0; d < dep_off[n]; d++) {
    size_t j = 0;
    while (j < n && nodes[j] != deps[d]) j++;
    dep[d] = j;
  }
  if (cudaMalloc((void **)&slots, (n + 1) * sizeof *slots) != cudaSuccess) {
    why = "cudaMalloc";
    goto out;
  }
  if (!add_stamp(g, NULL, slots, (int)n)) { /* the start: a stamp with no dependencies */
    why = "stamp nodes";
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    cudaGraphNodeType ty = cudaGraphNodeTypeEmpty;
    cudaGraphNodeGetType(nodes[i], &ty);
    /* kernels only: a stamp hanging off a memset node ran hundreds of us late on the H200 (its successor's stamp came
     * first), so memsets and copies count as done with their latest dependency, their time in their successor's */
    if (ty != cudaGraphNodeTypeKernel) continue;
    if (!add_stamp(g, &nodes[i], slots, (int)i)) {
      why = "stamp nodes";
      goto out;
    }
    stamped[i] = 1;
  }
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaGraphInstantiate(&ex, g, 0) != cudaSuccess) {
    why = "instantiate";
    goto out;
  }
  for (int r = -3; r < reps; r++) { /* 3 warm-ups */
    if (cudaGraphLaunch(ex, s) != cudaSuccess || cudaStreamSynchronize(s) != cudaSuccess ||
        cudaMemcpy(host, slots, (n + 1) * sizeof *host, cudaMemcpyDeviceToHost) != cudaSuccess) {
      why = "replay";
      goto out;
    }
    if (r < 0) continue;
    for (size_t i = 0; i < n; i++)
      if (stamped[i]) samples[i * reps + r] = (float)((long long)(host[i] - host[n]) * 1e-3); /* ns -> us */
  }
  for (size_t i = 0; i < n; i++)
    if (stamped[i]) {
      qsort(samples + i * reps, reps, sizeof *samples, cmp_float);
      t[i] = samples[i * reps + reps / 2];
    }
  {
    /* nodes without an event (empty, event waits): complete when their latest dependency does; a topological
     * order by repeated passes (the graph is small) */
    int *done = (int *)calloc(n, sizeof *done);
    size_t nd_done = 0;
    if (!done) {
      why = "memory";
      goto out;
    }
    while (nd_done < n) {
      size_t before = nd_done;
      for (size_t i = 0; i < n; i++) {
        if (done[i]) continue;
        bool ready = true;
        float latest = 0;
        for (size_t d = dep_off[i]; d < dep_off[i + 1] && ready; d++) {
          size_t j = dep[d];
          if (j == n || !done[j]) ready = false;
          else if (t[j] > latest) latest = t[j];
        }
        if (!ready) continue;
        if (!stamped[i]) t[i] = latest;
        nd_done++;
        done[i] = 1;
      }
      if (nd_done == before) break; /* a cycle cannot be: stop rather than spin */
    }
    free(done);
  }
  {
    size_t last = 0;
    double sum_own = 0;
    for (size_t i = 1; i < n; i++)
      if (t[i] > t[last]) last = i;
    /* walk back from the last node through the dependency that completed last */
    size_t *path = (size_t *)malloc(n * sizeof *path), np = 0;
    float *own = (float *)malloc(n * sizeof *own);
    if (!path || !own) {
      free(path);
      free(own);
      why = "memory";
      goto out;
    }
    for (size_t cur = last;;) {
      float latest = 0;
      size_t from = n;
      for (size_t d = dep_off[cur]; d < dep_off[cur + 1]; d++) {
        size_t j = dep[d];
        if (j < n && (from == n || t[j] > latest)) {
          latest = t[j];
          from = j;
        }
      }
      own[np] = t[cur] - latest;
      path[np++] = cur;
      if (from == n || np == n) break;
      cur = from;
    }
    size_t kinds = 0, kernels = 0;
    for (size_t i = 0; i < n; i++) kernels += stamped[i];
    for (size_t k = 0; k < np; k++) {
      char name[112];
      long blocks;
      node_name(nodes[path[k]], name, sizeof name, &blocks);
      if (!stamped[path[k]]) continue;
      kinds = hist_add(h, kinds, name, own[k]);
      sum_own += own[k];
    }
    qsort(h, kinds, sizeof *h, by_time);
    fprintf(stderr,
            "CUDA graph timeline (median of %d replays with a stamp after each of %zu timed nodes): last stamp at "
            "%.1f us; critical path %zu nodes (%.1f us of own time)\n",
            reps, kernels, t[last], np, sum_own);
    fprintf(stderr, "  critical path by kernel: count, us (own time = completion - latest dependency's completion)\n");
    for (size_t k = 0; k < kinds; k++) fprintf(stderr, "  %4d %8.1f  %s\n", h[k].count, h[k].us, h[k].name);
    fprintf(stderr, "  critical path in order: done at us, own us, blocks, kernel\n");
    for (size_t k = np; k-- > 0;) {
      char name[112];
      long blocks;
      node_name(nodes[path[k]], name, sizeof name, &blocks);
      fprintf(stderr, "  %8.1f %6.1f %6ld  %.90s\n", t[path[k]], own[k], blocks, name);
    }
    /* every timed node off the path, by kernel: how much work runs beside it */
    memset(h, 0, n * sizeof *h);
    kinds = 0;
    for (size_t i = 0; i < n; i++) {
      bool on = false;
      for (size_t k = 0; k < np && !on; k++) on = path[k] == i;
      if (on || !stamped[i]) continue;
      char name[112];
      long blocks;
      node_name(nodes[i], name, sizeof name, &blocks);
      kinds = hist_add(h, kinds, name, 0);
    }
    qsort(h, kinds, sizeof *h, by_count);
    fprintf(stderr, "  off the critical path: count, kernel\n");
    for (size_t k = 0; k < kinds; k++) fprintf(stderr, "  %4d  %s\n", h[k].count, h[k].name);
    free(path);
    free(own);
  }
out:
  if (why) fprintf(stderr, "CT_CUDA_GRAPH_TIMELINE: no timeline (%s failed: %s)\n", why, cudaGetErrorString(cudaGetLastError()));
  (void)cudaGetLastError();
  if (ex) cudaGraphExecDestroy(ex);
  if (g) cudaGraphDestroy(g);
  if (s) cudaStreamDestroy(s);
  if (slots) cudaFree(slots);
  free(host);
  free(stamped);
  free(nodes);
  free(deps);
  free(edata);
  free(dep_off);
  free(dep);
  free(t);
  free(samples);
  free(h);
}

extern "C" void ct_cuda_graph_diagnostics(void *graph) {
  if (getenv("CT_CUDA_GRAPH_NODES")) histogram((cudaGraph_t)graph);
  const char *tl = getenv("CT_CUDA_GRAPH_TIMELINE");
  int reps = tl ? atoi(tl) : 0;
  if (reps > 0) timeline((cudaGraph_t)graph, reps > 101 ? 101 : reps);
}
