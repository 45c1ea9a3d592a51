/* The floor for a cm job: the time to map the input's [P, R] datasets from the page cache and read
 * them once, as rmdiag does (mmap with MAP_POPULATE, then one pass of 8-lane sums), with T threads
 * each taking a contiguous share of the rows of every dataset (a rank's share). Prints the median
 * over REPS of the whole (map + read + unmap) in seconds, each repetition mapping afresh.
 *   stream_cm FILE THREADS REPS OFFSET BYTES [OFFSET BYTES ...]
 * Built by bench/bench_cm_full.py (gcc -O2 -mavx2 -pthread). */
#include <fcntl.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_DS 8

static const char *path;
static int n_ds, T;
static int64_t ds_off[MAX_DS], ds_len[MAX_DS];

typedef struct part {
  int t;
  float sum;
} part;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Thread t maps its share of every dataset (page-aligned), sums it as floats, unmaps. */
static void *work(void *arg) {
  part *p = arg;
  long page = sysconf(_SC_PAGESIZE);
  int fd = open(path, O_RDONLY);
  __m256 acc = _mm256_setzero_ps();
  for (int d = 0; d < n_ds; d++) {
    int64_t lo = ds_off[d] + ds_len[d] * p->t / T, hi = ds_off[d] + ds_len[d] * (p->t + 1) / T;
    int64_t a = lo / page * page;
    size_t len = (size_t)(hi - a);
    const char *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, a);
    if (m == MAP_FAILED) {
      perror("mmap");
      exit(1);
    }
    const char *x = m + (lo - a);
    int64_t n = (hi - lo) / 32;
    for (int64_t i = 0; i < n; i++) acc = _mm256_add_ps(acc, _mm256_loadu_ps((const float *)(x + 32 * i)));
    munmap((void *)m, len);
  }
  close(fd);
  float t[8];
  _mm256_storeu_ps(t, acc);
  p->sum = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
  return NULL;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 6 || (argc - 4) % 2 != 0) {
    fprintf(stderr, "usage: stream_cm FILE THREADS REPS OFFSET BYTES [OFFSET BYTES ...]\n");
    return 2;
  }
  path = argv[1];
  T = atoi(argv[2]);
  int reps = atoi(argv[3]);
  if (T < 1 || T > 64) T = 1;
  if (reps < 1) reps = 1;
  for (int i = 4; i + 1 < argc && n_ds < MAX_DS; i += 2) {
    ds_off[n_ds] = atoll(argv[i]);
    ds_len[n_ds++] = atoll(argv[i + 1]);
  }
  double *times = malloc(sizeof(double) * (size_t)reps);
  pthread_t th[64];
  part parts[64];
  float check = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    for (int t = 0; t < T; t++) {
      parts[t].t = t;
      pthread_create(&th[t], NULL, work, &parts[t]);
    }
    for (int t = 0; t < T; t++) {
      pthread_join(th[t], NULL);
      check += parts[t].sum;
    }
    times[r] = now() - t0;
  }
  qsort(times, (size_t)reps, sizeof *times, cmp_d);
  printf("%.4f %g\n", times[reps / 2], (double)check);
  return 0;
}
