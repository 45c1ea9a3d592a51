/* First-appearance dense ids over byte-string keys (FNV-1a hashing, linear probing). */
#include "rmdiag/common/idmap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const void *key, size_t len) {
  const unsigned char *p = key;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  h ^= h >> 29;  /* spread the low bits used as the slot index */
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 32;
  return h;
}

int rd_idmap_init(rd_idmap *m, size_t expected) {
  memset(m, 0, sizeof *m);
  size_t cap = 64;
  while (cap < 2 * expected + 2) cap <<= 1;
  m->cap = cap;
  m->slots = malloc(sizeof(int64_t) * cap);
  if (!m->slots) return -1;
  for (size_t i = 0; i < cap; i++) m->slots[i] = -1;
  return 0;
}

void rd_idmap_free(rd_idmap *m) {
  for (int64_t i = 0; i < m->n; i++) free(m->keys[i]);
  free(m->keys);
  free(m->lens);
  free(m->hashes);
  free(m->slots);
  memset(m, 0, sizeof *m);
}

static int grow(rd_idmap *m) {
  size_t cap = m->cap * 2;
  int64_t *slots = malloc(sizeof(int64_t) * cap);
  if (!slots) return -1;
  for (size_t i = 0; i < cap; i++) slots[i] = -1;
  for (int64_t k = 0; k < m->n; k++) {
    size_t s = (size_t)m->hashes[k] & (cap - 1);
    while (slots[s] >= 0) s = (s + 1) & (cap - 1);
    slots[s] = k;
  }
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return 0;
}

int64_t rd_idmap_find(const rd_idmap *m, const void *key, size_t len) {
  uint64_t h = fnv1a(key, len);
  size_t s = (size_t)h & (m->cap - 1);
  while (m->slots[s] >= 0) {
    int64_t k = m->slots[s];
    if (m->hashes[k] == h && m->lens[k] == len && memcmp(m->keys[k], key, len) == 0) return k;
    s = (s + 1) & (m->cap - 1);
  }
  return -1;
}

int64_t rd_idmap_get(rd_idmap *m, const void *key, size_t len, int *is_new) {
  uint64_t h = fnv1a(key, len);
  size_t s = (size_t)h & (m->cap - 1);
  if (is_new) *is_new = 0;
  while (m->slots[s] >= 0) {
    int64_t k = m->slots[s];
    if (m->hashes[k] == h && m->lens[k] == len && memcmp(m->keys[k], key, len) == 0) return k;
    s = (s + 1) & (m->cap - 1);
  }
  if (m->n >= m->kcap) {
    int64_t kcap = m->kcap ? 2 * m->kcap : 64;
    char **keys = realloc(m->keys, sizeof(char *) * (size_t)kcap);
    if (!keys) return -1;
    m->keys = keys;
    size_t *lens = realloc(m->lens, sizeof(size_t) * (size_t)kcap);
    if (!lens) return -1;
    m->lens = lens;
    uint64_t *hashes = realloc(m->hashes, sizeof(uint64_t) * (size_t)kcap);
    if (!hashes) return -1;
    m->hashes = hashes;
    m->kcap = kcap;
  }
  char *copy = malloc(len + 1);
  if (!copy) return -1;
  memcpy(copy, key, len);
  copy[len] = '\0';
  int64_t id = m->n++;
  m->keys[id] = copy;
  m->lens[id] = len;
  m->hashes[id] = h;
  m->slots[s] = id;
  if (is_new) *is_new = 1;
  if ((size_t)m->n * 2 > m->cap && grow(m) != 0) return -1;
  return id;
}
