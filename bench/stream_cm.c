/* The floor for a cm job: the time to map the input's [P, R] datasets from the page cache and read
 * them once, as rmdiag does (mmap with MAP_POPULATE, then one pass of 8-lane sums), with T threads
 * each taking a contiguous share of the rows of every dataset (a rank's share). Prints the median
 * over REPS of the whole (map + read + unmap) in seconds, each repetition mapping afresh.
 *   stream_cm [-s|-l] FILE THREADS REPS OFFSET BYTES [OFFSET BYTES ...]
 * With -s the first two datasets are the float32 rewards of chosen and rejected, read side by side,
 * and every element's σ(chosen − rejected) is computed with rmdiag's own branch-free float64 sigmoid
 * (include/rmdiag/kernels/fastmath.h, the one its pair kernel uses) and summed: the floor of reading
 * plus the arithmetic a bit-exact σ needs, without the split by training runs or the sums per pair.
 * With -l the same, with σ through glibc's vectorized exp (stream_cm_libm.c): the sigmoids at the
 * speed of the standard library, an independent measure of what 200 M float64 sigmoids cost.
 * Built by bench/bench_cm_full.py (gcc -O3 -mavx2 -ffp-contract=off -fno-trapping-math -pthread
 * -I include, the kernels' flags; stream_cm_libm.c with -O3 -mavx2 -mfma -ffast-math, linked
 * with -lmvec -lm). */
#include <fcntl.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rmdiag/kernels/fastmath.h"

#define MAX_DS 8

static const char *path;
static int n_ds, T, with_sigmoid; /* 1: rmdiag's σ, 2: glibc's */
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

static const char *map_share(int fd, int d, int t, const char **base, size_t *len, int64_t *bytes) {
  long page = sysconf(_SC_PAGESIZE);
  int64_t lo = ds_off[d] + ds_len[d] * t / T, hi = ds_off[d] + ds_len[d] * (t + 1) / T;
  int64_t a = lo / page * page;
  *len = (size_t)(hi - a);
  *base = mmap(NULL, *len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, a);
  if (*base == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  *bytes = hi - lo;
  return *base + (lo - a);
}

/* σ(rc − rr) of n elements into p (a flat loop the compiler vectorizes, as the pair kernel's). */
static void sigmoids(const float *restrict rc, const float *restrict rr, double *restrict p, int64_t n) {
  for (int64_t i = 0; i < n; i++) p[i] = rd_sigmoid_fast((double)rc[i] - (double)rr[i]);
}

void stream_sigmoids_libm(const float *restrict rc, const float *restrict rr, double *restrict p, int64_t n);

/* Thread t maps its share of every dataset (page-aligned), sums it as floats (or, with -s, sums the
 * sigmoids of the first two side by side and the rest as floats), unmaps. */
static void *work(void *arg) {
  part *p = arg;
  int fd = open(path, O_RDONLY);
  __m256 acc = _mm256_setzero_ps();
  __m256d dacc = _mm256_setzero_pd();
  int d = 0;
  if (with_sigmoid && n_ds >= 2) {
    const char *b0, *b1;
    size_t l0, l1;
    int64_t n0, n1;
    const float *rc = (const float *)map_share(fd, 0, p->t, &b0, &l0, &n0);
    const float *rr = (const float *)map_share(fd, 1, p->t, &b1, &l1, &n1);
    int64_t n = (n0 < n1 ? n0 : n1) / 4;
    static __thread double buf[4096];
    for (int64_t i0 = 0; i0 < n; i0 += 4096) {
      int64_t k = n - i0 < 4096 ? n - i0 : 4096;
      if (with_sigmoid == 2)
        stream_sigmoids_libm(rc + i0, rr + i0, buf, k);
      else
        sigmoids(rc + i0, rr + i0, buf, k);
      for (int64_t j = 0; j + 4 <= k; j += 4) dacc = _mm256_add_pd(dacc, _mm256_loadu_pd(buf + j));
    }
    munmap((void *)b0, l0);
    munmap((void *)b1, l1);
    d = 2;
  }
  for (; d < n_ds; d++) {
    const char *base;
    size_t len;
    int64_t bytes;
    const char *x = map_share(fd, d, p->t, &base, &len, &bytes);
    int64_t n = bytes / 32;
    for (int64_t i = 0; i < n; i++) acc = _mm256_add_ps(acc, _mm256_loadu_ps((const float *)(x + 32 * i)));
    munmap((void *)base, len);
  }
  close(fd);
  float t[8];
  double u[4];
  _mm256_storeu_ps(t, acc);
  _mm256_storeu_pd(u, dacc);
  p->sum = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7] + (float)(u[0] + u[1] + u[2] + u[3]);
  return NULL;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc > 1 && argv[1][0] == '-' && (argv[1][1] == 's' || argv[1][1] == 'l') && argv[1][2] == '\0') {
    with_sigmoid = argv[1][1] == 's' ? 1 : 2;
    argv++;
    argc--;
  }
  if (argc < 6 || (argc - 4) % 2 != 0) {
    fprintf(stderr, "usage: stream_cm [-s|-l] FILE THREADS REPS OFFSET BYTES [OFFSET BYTES ...]\n");
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
