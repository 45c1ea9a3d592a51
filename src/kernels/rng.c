/* Keys for the counter-based streams: a pure function of (seed, job name, purpose). */
#include "rmdiag/rng.h"

#include <stdio.h>
#include <string.h>

#include "rmdiag/sha256.h"

void rd_stream_init(rd_stream *s, int64_t seed, const char *job, const char *purpose) {
  rd_sha256 c;
  uint8_t d[32];
  char num[32];
  static const char tag[] = "rmdiag-rng-v1";
  rd_sha256_init(&c);
  rd_sha256_update(&c, tag, sizeof tag);  /* includes the NUL separator */
  int len = snprintf(num, sizeof num, "%lld", (long long)seed);
  rd_sha256_update(&c, num, (size_t)len + 1);
  rd_sha256_update(&c, job, strlen(job) + 1);
  rd_sha256_update(&c, purpose, strlen(purpose) + 1);
  rd_sha256_final(&c, d);
  s->key[0] = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
  s->key[1] = (uint32_t)d[4] | (uint32_t)d[5] << 8 | (uint32_t)d[6] << 16 | (uint32_t)d[7] << 24;
}
