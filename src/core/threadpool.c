/* A persistent thread pool: workers sleep on a condition variable between jobs.
 * One job at a time; a nested ct_parallel_for runs inline on the calling worker. */
#include "internal.h"
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 256

static struct {
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  pthread_t th[MAX_THREADS];
  int n_workers;       /* started workers (threads - 1; the caller works too) */
  int n_threads;       /* threads used per job */
  uint64_t generation; /* bumps per job */
  /* current job */
  ct_range_fn fn;
  void *ctx;
  int64_t n, chunk, next, pending;
  bool shutdown;
} P = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

static pthread_mutex_t job_mu = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static _Thread_local bool in_worker = false;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void run_chunks(void) {
  for (;;) {
    int64_t b = __atomic_fetch_add(&P.next, P.chunk, __ATOMIC_RELAXED);
    if (b >= P.n) break;
    int64_t e = b + P.chunk < P.n ? b + P.chunk : P.n;
    P.fn(P.ctx, b, e);
  }
}

static void *worker(void *arg) {
  (void)arg;
  in_worker = true;
  uint64_t seen = 0;
  pthread_mutex_lock(&P.mu);
  for (;;) {
    while (P.generation == seen && !P.shutdown) pthread_cond_wait(&P.wake, &P.mu);
    if (P.shutdown) break;
    seen = P.generation;
    pthread_mutex_unlock(&P.mu);
    run_chunks();
    pthread_mutex_lock(&P.mu);
    if (--P.pending == 0) pthread_cond_signal(&P.done);
  }
  pthread_mutex_unlock(&P.mu);
  return NULL;
}

static void start_workers(int threads) {
  for (int i = P.n_workers; i < threads - 1 && i < MAX_THREADS; i++) {
    if (pthread_create(&P.th[i], NULL, worker, NULL) != 0) break;
    P.n_workers = i + 1;
  }
}

static void stop_pool(void) {
  pthread_mutex_lock(&P.mu);
  P.shutdown = true;
  pthread_cond_broadcast(&P.wake);
  pthread_mutex_unlock(&P.mu);
  for (int i = 0; i < P.n_workers; i++) pthread_join(P.th[i], NULL);
  P.n_workers = 0;
}

static void init_pool(void) {
  int n = 0;
  const char *env = getenv("CT_NUM_THREADS");
  if (env) n = atoi(env);
  if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  P.n_threads = n;
  atexit(stop_pool);
}

int ct_get_num_threads(void) {
  pthread_once(&once, init_pool);
  return P.n_threads;
}

ct_status ct_set_num_threads(int n) {
  pthread_once(&once, init_pool);
  if (n < 1) return CT_ERR(CT_ERR_RUNTIME, "Number of threads must be positive, got %d", n);
  if (n > MAX_THREADS) n = MAX_THREADS;
  pthread_mutex_lock(&job_mu);
  P.n_threads = n;
  pthread_mutex_unlock(&job_mu);
  return CT_OK;
}

void ct_parallel_for(int64_t n, int64_t grain, ct_range_fn fn, void *ctx) {
  if (n <= 0) return;
  pthread_once(&once, init_pool);
  if (grain < 1) grain = 1;
  int threads = P.n_threads;
  if (in_worker || threads <= 1 || n <= grain || pthread_mutex_trylock(&job_mu) != 0) {
    fn(ctx, 0, n); /* nested, single-threaded, small, or another job running: inline */
    return;
  }
  int64_t max_tasks = (n + grain - 1) / grain;
  if (threads > max_tasks) threads = (int)max_tasks;
  start_workers(P.n_threads);
  int helpers = threads - 1 < P.n_workers ? threads - 1 : P.n_workers;
  pthread_mutex_lock(&P.mu);
  P.fn = fn;
  P.ctx = ctx;
  P.n = n;
  int64_t chunk = (n + (int64_t)threads * 4 - 1) / ((int64_t)threads * 4);
  P.chunk = chunk < grain ? grain : chunk;
  P.next = 0;
  P.pending = P.n_workers;
  P.generation++;
  pthread_cond_broadcast(&P.wake);
  pthread_mutex_unlock(&P.mu);
  (void)helpers;
  bool was = in_worker;
  in_worker = true;
  run_chunks();
  in_worker = was;
  pthread_mutex_lock(&P.mu);
  while (P.pending > 0) pthread_cond_wait(&P.done, &P.mu);
  pthread_mutex_unlock(&P.mu);
  pthread_mutex_unlock(&job_mu);
}
