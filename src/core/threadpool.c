/* A persistent thread pool. One job at a time; a nested ct_parallel_for runs inline on the
 * calling thread, and so does a call from a second thread while a job runs.
 *
 * Fork/join cost matters: a training step issues thousands of parallel loops of tens of
 * microseconds each. So:
 *  - the caller only waits for workers that really took part. A job is "open" while chunks may
 *    still be claimed; a worker joins it by a compare-and-swap on the job word (busy count + 1)
 *    that succeeds only while it is open, and the caller closes it once every chunk is claimed and
 *    then waits for the busy count to drop to zero. A worker that wakes late (a busy machine)
 *    therefore costs the caller nothing: before, the caller waited for every worker to wake up,
 *    even when it had done all the chunks itself.
 *  - workers spin briefly after a job before sleeping on the condition variable, so back-to-back
 *    loops find them awake; the caller broadcasts the wake-up only when a worker sleeps.
 * CT_POOL_SPIN_US sets the spin (default 200 microseconds; 0: sleep at once).
 * The job word: bits 0..15 busy workers, bit 16 open, bits 17.. job sequence number. */
#include "internal.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_THREADS 256
#define OPEN ((uint64_t)1 << 16)
#define BUSY_MASK (OPEN - 1)
#define SEQ_ONE ((uint64_t)1 << 17)

static struct {
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  pthread_t th[MAX_THREADS];
  int n_workers; /* started workers (threads - 1; the caller works too) */
  int n_threads; /* threads used per job */
  int sleepers;  /* workers waiting on `wake` (under mu) */
  bool shutdown;
  uint64_t state; /* the job word (atomic) */
  /* current job: written by the caller before it opens the job, read by workers after joining */
  ct_range_fn fn;
  void *ctx;
  int64_t n, chunk, next;
  int helpers;      /* workers allowed in this job */
  int64_t spin_ns;  /* how long an idle worker spins before sleeping */
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

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Joins the open job whose sequence differs from *seen (busy + 1); false when there is none or
 * it already has its helpers. */
static bool try_join(uint64_t *seen) {
  uint64_t s = __atomic_load_n(&P.state, __ATOMIC_ACQUIRE);
  while ((s & OPEN) && (s >> 17) != *seen) {
    if ((int)(s & BUSY_MASK) >= __atomic_load_n(&P.helpers, __ATOMIC_RELAXED)) { /* full (if s is stale, the CAS fails) */
      *seen = s >> 17;
      return false;
    }
    if (__atomic_compare_exchange_n(&P.state, &s, s + 1, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      *seen = s >> 17;
      return true;
    }
  }
  return false;
}

static void leave_job(void) {
  uint64_t s = __atomic_sub_fetch(&P.state, 1, __ATOMIC_ACQ_REL);
  if (!(s & OPEN) && (s & BUSY_MASK) == 0) { /* the caller may be waiting for the last helper */
    pthread_mutex_lock(&P.mu);
    pthread_cond_signal(&P.done);
    pthread_mutex_unlock(&P.mu);
  }
}

static void *worker(void *arg) {
  (void)arg;
  in_worker = true;
  uint64_t seen = 0;
  for (;;) {
    if (try_join(&seen)) {
      run_chunks();
      leave_job();
      continue;
    }
    /* spin a while for the next job, then sleep */
    bool got = false;
    int64_t t0 = mono_ns();
    for (int i = 1; !got; i++) {
      for (int k = 0; k < 64; k++) CPU_RELAX();
      uint64_t s = __atomic_load_n(&P.state, __ATOMIC_ACQUIRE);
      if ((s & OPEN) && (s >> 17) != seen) got = true;
      else if (__atomic_load_n(&P.shutdown, __ATOMIC_ACQUIRE)) return NULL;
      else if ((i & 15) == 0 && mono_ns() - t0 >= P.spin_ns) break;
    }
    if (got) continue;
    pthread_mutex_lock(&P.mu);
    P.sleepers++;
    for (;;) {
      uint64_t s = __atomic_load_n(&P.state, __ATOMIC_ACQUIRE);
      if (P.shutdown || ((s & OPEN) && (s >> 17) != seen)) break;
      pthread_cond_wait(&P.wake, &P.mu);
    }
    P.sleepers--;
    bool stop = P.shutdown;
    pthread_mutex_unlock(&P.mu);
    if (stop) return NULL;
  }
}

static void start_workers(int threads) {
  for (int i = P.n_workers; i < threads - 1 && i < MAX_THREADS; i++) {
    if (pthread_create(&P.th[i], NULL, worker, NULL) != 0) break;
    P.n_workers = i + 1;
  }
}

static void stop_pool(void) {
  pthread_mutex_lock(&P.mu);
  __atomic_store_n(&P.shutdown, true, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&P.wake);
  pthread_mutex_unlock(&P.mu);
  for (int i = 0; i < P.n_workers; i++) pthread_join(P.th[i], NULL);
  P.n_workers = 0;
}

/* The CPUs this process may use: the affinity mask (taskset, a container's cpuset), bounded by a
 * cgroup v2 CPU quota (cpu.max "quota period": a container limited to 4 CPUs of a 64-CPU host).
 * sysconf(_SC_NPROCESSORS_ONLN) counts the host's CPUs, so a container got several spinning workers
 * per core it may use (seen on the 16-core GPU machine's sandbox). */
static int usable_cpus(void) {
  int n = (int)sysconf(_SC_NPROCESSORS_ONLN);
#if defined(__linux__) && !defined(__EMSCRIPTEN__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) n = CPU_COUNT(&set);
  FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
  if (f) {
    char q[32] = "";
    long long period = 0;
    if (fscanf(f, "%31s %lld", q, &period) == 2 && strcmp(q, "max") && period > 0) {
      long long quota = atoll(q), c = (quota + period - 1) / period;
      if (c >= 1 && c < n) n = (int)c;
    }
    fclose(f);
  }
#endif
  return n;
}

static void init_pool(void) {
  int n = 0;
  const char *env = getenv("CT_NUM_THREADS");
  if (!env || !*env) env = getenv("OMP_NUM_THREADS"); /* as PyTorch's default thread count honours it */
  if (env) n = atoi(env);
  if (n <= 0) n = usable_cpus();
  if (n <= 0) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  P.n_threads = n;
  const char *sp = getenv("CT_POOL_SPIN_US");
  P.spin_ns = sp && *sp ? (int64_t)atoi(sp) * 1000 : 200000;
  if (P.spin_ns < 0) P.spin_ns = 0;
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
  if (helpers > (int)BUSY_MASK) helpers = (int)BUSY_MASK;
  /* the job is closed and no worker is in it (the previous call waited): set it up, then open it */
  P.fn = fn;
  P.ctx = ctx;
  P.n = n;
  int64_t chunk = (n + (int64_t)threads * 4 - 1) / ((int64_t)threads * 4);
  P.chunk = chunk < grain ? grain : chunk;
  P.next = 0;
  __atomic_store_n(&P.helpers, helpers, __ATOMIC_RELAXED);
  uint64_t seq = (__atomic_load_n(&P.state, __ATOMIC_RELAXED) >> 17) + 1;
  __atomic_store_n(&P.state, (seq << 17) | OPEN, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&P.mu);
  if (P.sleepers > 0) pthread_cond_broadcast(&P.wake);
  pthread_mutex_unlock(&P.mu);
  bool was = in_worker;
  in_worker = true;
  run_chunks();
  in_worker = was;
  /* every chunk is claimed: close the job (no worker joins any more), wait for those in it */
  uint64_t s = __atomic_and_fetch(&P.state, ~OPEN, __ATOMIC_ACQ_REL);
  for (int i = 0; (s & BUSY_MASK) != 0 && i < 4096; i++) {
    CPU_RELAX();
    s = __atomic_load_n(&P.state, __ATOMIC_ACQUIRE);
  }
  if (s & BUSY_MASK) {
    pthread_mutex_lock(&P.mu);
    while (__atomic_load_n(&P.state, __ATOMIC_ACQUIRE) & BUSY_MASK) pthread_cond_wait(&P.done, &P.mu);
    pthread_mutex_unlock(&P.mu);
  }
  pthread_mutex_unlock(&job_mu);
}
