/* Dense ids for arbitrary byte-string keys (user ids, pair ids, names) in first-appearance
 * order: an open-addressing hash table over copies of the keys. */
#ifndef RMDIAG_IDMAP_H
#define RMDIAG_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct rd_idmap {
  size_t cap;        /* slots, a power of two */
  int64_t *slots;    /* index into keys, or -1 */
  uint64_t *hashes;  /* per key */
  char **keys;       /* key bytes */
  size_t *lens;
  int64_t n;         /* distinct keys */
  int64_t kcap;
} rd_idmap;

int rd_idmap_init(rd_idmap *m, size_t expected);
void rd_idmap_free(rd_idmap *m);
/* Returns the id of `key` (adding it when new), or -1 when out of memory. *is_new tells which. */
int64_t rd_idmap_get(rd_idmap *m, const void *key, size_t len, int *is_new);
/* Returns the id of `key`, or -1 when absent. */
int64_t rd_idmap_find(const rd_idmap *m, const void *key, size_t len);

#endif
