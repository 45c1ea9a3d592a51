/* The floor for a probe epoch: the time to stream the training rows once from memory. Maps a
 * contiguous float32 dataset of an HDF5 file (file offset given), touches it once (page cache and
 * page tables warm, as in rmdiag's mapped reads), then reads the listed rows in the listed order with
 * T threads (contiguous shares, 8-lane float sums), and prints the median of R passes in seconds.
 *   stream_rows FILE OFFSET N D ROWS.bin THREADS [REPS]      (ROWS.bin: int64 row indices)
 * Built by bench/bench_probe.py (gcc -O2 -mavx2 -pthread). */
#include <fcntl.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const float *base;
static const int64_t *rows;
static int64_t nrows, d;

typedef struct part {
  int64_t a, b;
  float sum;
} part;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *work(void *arg) {
  part *p = arg;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t i = p->a; i < p->b; i++) {
    const float *x = base + rows[i] * d;
    int64_t j = 0;
    for (; j + 16 <= d; j += 16) {
      acc0 = _mm256_add_ps(acc0, _mm256_loadu_ps(x + j));
      acc1 = _mm256_add_ps(acc1, _mm256_loadu_ps(x + j + 8));
    }
    for (; j < d; j++) acc0[0] += x[j];
  }
  float t[8];
  _mm256_storeu_ps(t, _mm256_add_ps(acc0, acc1));
  p->sum = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: stream_rows FILE OFFSET N D ROWS.bin THREADS [REPS]\n");
    return 2;
  }
  int64_t off = atoll(argv[2]), N = atoll(argv[3]);
  d = atoll(argv[4]);
  int T = atoi(argv[6]), reps = argc > 7 ? atoi(argv[7]) : 5;
  if (T < 1 || T > 64) T = 1;
  int fd = open(argv[1], O_RDONLY);
  FILE *rf = fopen(argv[5], "rb");
  if (fd < 0 || !rf) {
    perror("open");
    return 1;
  }
  struct stat sb;
  fstat(fileno(rf), &sb);
  nrows = (int64_t)sb.st_size / 8;
  int64_t *r = malloc((size_t)sb.st_size);
  if (!r || fread(r, 8, (size_t)nrows, rf) != (size_t)nrows) return 1;
  fclose(rf);
  rows = r;
  long page = sysconf(_SC_PAGESIZE);
  int64_t al = off / page * page, len = N * d * 4 + (off - al);
  const char *m = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, (off_t)al);
  if (m == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  base = (const float *)(m + (off - al));
  double times[101];
  if (reps > 100) reps = 100;
  if (reps < 1) reps = 1;
  float keep = 0;
  for (int rep = 0; rep < reps + 1; rep++) {  /* the first pass warms the caches and is dropped */
    pthread_t th[64];
    part p[64];
    double t0 = now();
    for (int k = 0; k < T; k++) {
      p[k].a = nrows * k / T;
      p[k].b = nrows * (k + 1) / T;
      pthread_create(&th[k], NULL, work, &p[k]);
    }
    for (int k = 0; k < T; k++) {
      pthread_join(th[k], NULL);
      keep += p[k].sum;
    }
    if (rep > 0) times[rep - 1] = now() - t0;
  }
  for (int i = 1; i < reps; i++) /* insertion sort for the median */
    for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
      double t = times[j];
      times[j] = times[j - 1];
      times[j - 1] = t;
    }
  double med = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
  printf("%.6f %g\n", med, (double)keep);
  return 0;
}
