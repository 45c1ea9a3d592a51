/* SHA-256 (FIPS 180-4), for spec_sha256 and random stream keys. */
#ifndef RMDIAG_SHA256_H
#define RMDIAG_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct rd_sha256 {
  uint32_t h[8];
  uint64_t nbytes;
  uint8_t buf[64];
  size_t nbuf;
} rd_sha256;

void rd_sha256_init(rd_sha256 *c);
void rd_sha256_update(rd_sha256 *c, const void *data, size_t n);
void rd_sha256_final(rd_sha256 *c, uint8_t digest[32]);
/* Hex digest (65 bytes with the NUL) of a buffer. */
void rd_sha256_hex(const void *data, size_t n, char hex[65]);

#endif
