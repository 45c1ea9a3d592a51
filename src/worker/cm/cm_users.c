/* cm: numbering the users by first appearance in the `user` column. Integer ids are numbered in
 * parallel: each rank numbers the ids of its own pairs (an open-addressing table), rank 0 merges
 * the ranks' lists of distinct ids in rank order, which keeps first-appearance order, and sends
 * each rank the numbers of its ids. String ids are numbered on rank 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/common/idmap.h"

void cm_users_free(cm_users *u) {
  free(u->of_pair);
  free(u->first_pair);
  free(u->labels);
  free(u->label_off);
  memset(u, 0, sizeof *u);
}

/* ---- integer ids: a table from id to number ---------------------------------------------- */

/* Open addressing keyed by the id, doubled when half full; numbers are given in insertion order
 * and the ids kept in that order (ids[number]). */
typedef struct id_table {
  size_t cap, used;
  uint64_t *key;
  int32_t *val;  /* -1: empty slot */
  uint64_t *ids; /* [used] in order of insertion */
  size_t ids_cap;
} id_table;

static size_t id_slot(uint64_t id, size_t cap) { return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); }

static int id_table_init(id_table *t, size_t expected) {
  memset(t, 0, sizeof *t);
  size_t cap = 4096;
  while (cap < 2 * expected) cap <<= 1;
  t->cap = cap;
  t->key = malloc(sizeof(uint64_t) * cap);
  t->val = malloc(sizeof(int32_t) * cap);
  t->ids_cap = 1024;
  t->ids = malloc(sizeof(uint64_t) * t->ids_cap);
  if (!t->key || !t->val || !t->ids) return -1;
  for (size_t i = 0; i < cap; i++) t->val[i] = -1;
  return 0;
}

static void id_table_free(id_table *t) {
  free(t->key);
  free(t->val);
  free(t->ids);
  memset(t, 0, sizeof *t);
}

/* Doubles the table; returns -1 when out of memory (the old table stays valid). */
static int id_table_grow(id_table *t) {
  size_t cap = 2 * t->cap;
  uint64_t *key = malloc(sizeof(uint64_t) * cap);
  int32_t *val = malloc(sizeof(int32_t) * cap);
  if (!key || !val) {
    free(key);
    free(val);
    return -1;
  }
  for (size_t i = 0; i < cap; i++) val[i] = -1;
  for (size_t i = 0; i < t->cap; i++) {
    if (t->val[i] < 0) continue;
    size_t s = id_slot(t->key[i], cap);
    while (val[s] >= 0) s = (s + 1) & (cap - 1);
    key[s] = t->key[i];
    val[s] = t->val[i];
  }
  free(t->key);
  free(t->val);
  t->key = key;
  t->val = val;
  t->cap = cap;
  return 0;
}

/* The number of `id`, adding it when new (*added = 1); -1 when out of memory, -2 past INT32_MAX. */
static int64_t id_number(id_table *t, uint64_t id, int *added) {
  size_t s = id_slot(id, t->cap);
  while (t->val[s] >= 0 && t->key[s] != id) s = (s + 1) & (t->cap - 1);
  *added = 0;
  if (t->val[s] >= 0) return t->val[s];
  if (t->used >= (size_t)INT32_MAX) return -2;
  if (t->used == t->ids_cap) {
    uint64_t *n = realloc(t->ids, sizeof(uint64_t) * 2 * t->ids_cap);
    if (!n) return -1;
    t->ids = n;
    t->ids_cap *= 2;
  }
  int32_t k = (int32_t)t->used;
  t->key[s] = id;
  t->val[s] = k;
  t->ids[t->used++] = id;
  *added = 1;
  if (2 * t->used > t->cap && id_table_grow(t) != 0) return -1;
  return k;
}

/* ---- labels for messages ------------------------------------------------------------------- */

static int labels_alloc(cm_users *u, size_t total, rd_status *st) {
  u->label_off = rd_malloc(sizeof(int64_t) * (size_t)(u->U + 1), st, "user labels");
  u->labels = u->label_off ? rd_malloc(total + 1, st, "user labels") : NULL;
  return u->labels ? RD_OK : st->code;
}

/* "quoted" strings */
static int labels_of_strings(const rd_idmap *m, cm_users *u, rd_status *st) {
  u->U = m->n;
  size_t total = 0;
  for (int64_t k = 0; k < u->U; k++) total += m->lens[k] + 3;
  RD_TRY(labels_alloc(u, total, st));
  size_t pos = 0;
  for (int64_t k = 0; k < u->U; k++) {
    u->label_off[k] = (int64_t)pos;
    pos += (size_t)sprintf(u->labels + pos, "\"%s\"", m->keys[k]) + 1;
  }
  u->label_off[u->U] = (int64_t)pos;
  u->labels_len = pos;
  return RD_OK;
}

/* integer ids as written */
static int labels_of_words(const uint64_t *ids, int64_t U, int is_signed, cm_users *u, rd_status *st) {
  u->U = U;
  RD_TRY(labels_alloc(u, (size_t)U * 24, st));
  size_t pos = 0;
  for (int64_t k = 0; k < U; k++) {
    u->label_off[k] = (int64_t)pos;
    if (is_signed) pos += (size_t)sprintf(u->labels + pos, "%lld", (long long)(int64_t)ids[k]) + 1;
    else pos += (size_t)sprintf(u->labels + pos, "%llu", (unsigned long long)ids[k]) + 1;
  }
  u->label_off[U] = (int64_t)pos;
  u->labels_len = pos;
  return RD_OK;
}

/* ---- string ids (rank 0) ------------------------------------------------------------------- */

int cm_users_read_all(hid_t f, const rd_job *job, const cm_layout *L, cm_users *u, rd_status *st) {
  int64_t P = L->P;
  rd_idmap m;
  if (rd_idmap_init(&m, 1024) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  u->of_pair = rd_malloc(sizeof(int32_t) * (size_t)P, st, "user index");
  char *sbuf = NULL;
  int64_t *soff = NULL;
  size_t slen = 0;
  int rc = u->of_pair ? rd_h5_read_strings(f, job->input, &L->user, &sbuf, &slen, &soff, st) : st->code;
  for (int64_t p = 0; rc == RD_OK && p < P; p++) {
    int64_t id = rd_idmap_get(&m, sbuf + soff[p], strlen(sbuf + soff[p]), NULL);
    if (id < 0) rc = rd_fail(st, RD_EFAIL, "out of memory numbering users");
    else if (id > INT32_MAX) rc = rd_fail(st, RD_EINPUT, "%s: more than 2^31 users", job->input);
    else u->of_pair[p] = (int32_t)id;
  }
  if (rc == RD_OK) rc = labels_of_strings(&m, u, st);
  free(sbuf);
  free(soff);
  rd_idmap_free(&m);
  return rc;
}

/* Every rank: rank 0's numbering of every pair (cm_users_read_all) is cut into the ranks' rows;
 * the labels and first pairs are broadcast. */
static int users_scatter(const rd_ctx *ctx, int64_t P, int64_t lo, int64_t hi, cm_users *u) {
  long long head[2] = {(long long)u->U, (long long)u->labels_len};
  RD_MPI_CHECK(ctx, MPI_Bcast(head, 2, MPI_LONG_LONG, 0, ctx->comm));
  int32_t *all = u->of_pair;
  u->of_pair = malloc(sizeof(int32_t) * (size_t)(hi - lo ? hi - lo : 1));
  u->first_pair = malloc(sizeof(int64_t) * (size_t)(head[0] ? head[0] : 1));
  if (ctx->rank != 0) {
    u->U = head[0];
    u->labels_len = (size_t)head[1];
    u->label_off = malloc(sizeof(int64_t) * (size_t)(u->U + 1));
    u->labels = malloc(u->labels_len + 1);
  }
  if (!u->of_pair || !u->first_pair || !u->label_off || !u->labels)
    rd_abort(ctx, __FILE__, __LINE__, "out of memory for users");
  if (ctx->rank == 0) {
    for (int64_t k = 0; k < u->U; k++) u->first_pair[k] = -1;
    for (int64_t p = 0; p < P; p++)
      if (u->first_pair[all[p]] < 0) u->first_pair[all[p]] = p;
  }
  rd_scatter_rows(ctx, all, u->of_pair, P, CM_BLOCK, sizeof(int32_t));
  if (ctx->rank == 0) {  /* rank 0 keeps every pair's user (its own pairs come first) */
    free(u->of_pair);
    u->of_pair = all;
  }
  rd_bcast_bytes(ctx, u->first_pair, sizeof(int64_t) * (size_t)u->U, 0);
  rd_bcast_bytes(ctx, u->label_off, sizeof(int64_t) * (size_t)(u->U + 1), 0);
  rd_bcast_bytes(ctx, u->labels, u->labels_len, 0);
  return RD_OK;
}

/* ---- integer ids (every rank) -------------------------------------------------------------- */

/* This rank's ids of pairs [lo, hi): mapped when stored as 64-bit little-endian words, else read.
 * *buf is what to free, *map what to unmap. */
static const uint64_t *local_ids(const rd_job *job, const cm_layout *L, hid_t f, int64_t lo, int64_t n, uint64_t **buf,
                                 rd_h5_map *map, rd_status *st) {
  *buf = NULL;
  memset(map, 0, sizeof *map);
  if (n == 0) return NULL;
  if (L->user_offset >= 0) {
    const void *p = rd_map_rows(job->input, L->user_offset, 8, lo, n, map);
    if (!p) rd_fail(st, RD_EFAIL, "%s: cannot map rows %lld..%lld of %s", job->input, (long long)lo,
                    (long long)(lo + n - 1), L->user.path);
    return p;
  }
  *buf = rd_malloc_big(sizeof(uint64_t) * (size_t)n, st, "user ids");
  if (*buf && rd_h5_read_int_words(f, job->input, &L->user, lo, n, *buf, st) != RD_OK) return NULL;
  return *buf;
}

/* This rank's numbering: lof[i] the local number of pair lo + i; the distinct ids in order of
 * first appearance and each one's first pair. */
typedef struct local_users {
  id_table t;
  int32_t *lof;
  int64_t *first;
  size_t first_cap;
} local_users;

static int number_local(const uint64_t *ids, int64_t lo, int64_t n, local_users *lu, rd_status *st) {
  memset(lu, 0, sizeof *lu);
  lu->lof = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  lu->first_cap = 1024;
  lu->first = malloc(sizeof(int64_t) * lu->first_cap);
  if (!lu->lof || !lu->first || id_table_init(&lu->t, 1024) != 0) return rd_fail(st, RD_EFAIL, "out of memory numbering users");
  for (int64_t i = 0; i < n; i++) {
    if (i + 16 < n) {  /* the table is larger than L2: fetch the slot of a later id ahead */
      size_t s = id_slot(ids[i + 16], lu->t.cap);
      __builtin_prefetch(&lu->t.key[s]);
      __builtin_prefetch(&lu->t.val[s]);
    }
    int added;
    int64_t k = id_number(&lu->t, ids[i], &added);
    if (k < 0) return rd_fail(st, RD_EFAIL, "out of memory numbering users");
    if (added) {
      if ((size_t)k == lu->first_cap) {
        int64_t *nf = realloc(lu->first, sizeof(int64_t) * 2 * lu->first_cap);
        if (!nf) return rd_fail(st, RD_EFAIL, "out of memory numbering users");
        lu->first = nf;
        lu->first_cap *= 2;
      }
      lu->first[k] = lo + i;
    }
    lu->lof[i] = (int32_t)k;
  }
  return RD_OK;
}

static void local_users_free(local_users *lu) {
  id_table_free(&lu->t);
  free(lu->lof);
  free(lu->first);
}

/* Rank 0: the ranks' distinct ids (in rank order, each list in first-appearance order) merged into
 * the global numbering; map[i] is the global number of the i-th listed id. */
static int merge_lists(const uint64_t *ids, const int64_t *first, int64_t n, int32_t *map, uint64_t **gids,
                       int64_t **gfirst, int64_t *U, rd_status *st) {
  id_table t;
  int64_t *fp = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!fp || id_table_init(&t, 1024) != 0) {
    free(fp);
    id_table_free(&t);
    return rd_fail(st, RD_EFAIL, "out of memory numbering users");
  }
  for (int64_t i = 0; i < n; i++) {
    int added;
    int64_t k = id_number(&t, ids[i], &added);
    if (k < 0) {
      free(fp);
      id_table_free(&t);
      return rd_fail(st, RD_EFAIL, "out of memory numbering users");
    }
    if (added) fp[k] = first[i];
    map[i] = (int32_t)k;
  }
  *U = (int64_t)t.used;
  *gids = t.ids;
  t.ids = NULL;
  *gfirst = fp;
  id_table_free(&t);
  return RD_OK;
}

/* Every rank but 0: room for the broadcast user table. */
static void users_recv_alloc(const rd_ctx *ctx, cm_users *u) {
  u->first_pair = malloc(sizeof(int64_t) * (size_t)(u->U ? u->U : 1));
  u->label_off = malloc(sizeof(int64_t) * (size_t)(u->U + 1));
  u->labels = malloc(u->labels_len + 1);
  if (!u->first_pair || !u->label_off || !u->labels) rd_abort(ctx, __FILE__, __LINE__, "out of memory for users");
}

/* The merge: rank 0 gathers every rank's list, numbers, and scatters the numbers back; first pairs
 * and labels are broadcast; the rank's n pairs take their global numbers. */
static int users_merge(const rd_ctx *ctx, const cm_layout *L, local_users *lu, int64_t n, cm_users *u, rd_status *st) {
  int size = ctx->size, mine = (int)lu->t.used;
  int *cnt = NULL, *dis = NULL;
  uint64_t *all_ids = NULL;
  int64_t *all_first = NULL, total = 0;
  int32_t *all_map = NULL;
  if (ctx->rank == 0) {
    cnt = malloc(sizeof(int) * (size_t)size);
    dis = malloc(sizeof(int) * (size_t)size);
    if (!cnt || !dis) rd_abort(ctx, __FILE__, __LINE__, "out of memory for users");
  }
  RD_MPI_CHECK(ctx, MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, ctx->comm));
  if (ctx->rank == 0) {
    for (int r = 0; r < size; r++) {
      if (total + cnt[r] > INT32_MAX) rd_abort(ctx, __FILE__, __LINE__, "too many distinct users to merge");
      dis[r] = (int)total;
      total += cnt[r];
    }
    all_ids = malloc(sizeof(uint64_t) * (size_t)(total ? total : 1));
    all_first = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
    all_map = malloc(sizeof(int32_t) * (size_t)(total ? total : 1));
    if (!all_ids || !all_first || !all_map) rd_abort(ctx, __FILE__, __LINE__, "out of memory for users");
  }
  RD_MPI_CHECK(ctx, MPI_Gatherv(lu->t.ids, mine, MPI_UINT64_T, all_ids, cnt, dis, MPI_UINT64_T, 0, ctx->comm));
  RD_MPI_CHECK(ctx, MPI_Gatherv(lu->first, mine, MPI_INT64_T, all_first, cnt, dis, MPI_INT64_T, 0, ctx->comm));
  uint64_t *gids = NULL;
  if (ctx->rank == 0 && merge_lists(all_ids, all_first, total, all_map, &gids, &u->first_pair, &u->U, st) == RD_OK)
    labels_of_words(gids, u->U, L->user.is_signed, u, st);
  free(gids);
  free(all_ids);
  free(all_first);
  int32_t *map = malloc(sizeof(int32_t) * (size_t)(mine ? mine : 1));
  if (!map) rd_abort(ctx, __FILE__, __LINE__, "out of memory for users");
  if (rd_share_status(ctx, st, 0) == RD_OK) {
    RD_MPI_CHECK(ctx, MPI_Scatterv(all_map, cnt, dis, MPI_INT32_T, map, mine, MPI_INT32_T, 0, ctx->comm));
    long long head[2] = {(long long)u->U, (long long)u->labels_len};
    RD_MPI_CHECK(ctx, MPI_Bcast(head, 2, MPI_LONG_LONG, 0, ctx->comm));
    if (ctx->rank != 0) {
      u->U = head[0];
      u->labels_len = (size_t)head[1];
      users_recv_alloc(ctx, u);
    }
    rd_bcast_bytes(ctx, u->first_pair, sizeof(int64_t) * (size_t)u->U, 0);
    rd_bcast_bytes(ctx, u->label_off, sizeof(int64_t) * (size_t)(u->U + 1), 0);
    rd_bcast_bytes(ctx, u->labels, u->labels_len, 0);
    u->of_pair = lu->lof;
    lu->lof = NULL;
    for (int64_t i = 0; i < n; i++) u->of_pair[i] = map[u->of_pair[i]];
  }
  free(map);
  free(all_map);
  free(cnt);
  free(dis);
  return st->code;
}

int cm_users_load(const rd_ctx *ctx, const rd_job *job, const cm_layout *L, hid_t f, int64_t lo, int64_t hi,
                  cm_users *u, rd_status *st) {
  if (L->user.tclass == RD_TC_STRING) return users_scatter(ctx, L->P, lo, hi, u);
  int64_t n = hi - lo;
  uint64_t *buf;
  rd_h5_map map;
  local_users lu;
  memset(&lu, 0, sizeof lu);
  const uint64_t *ids = local_ids(job, L, f, lo, n, &buf, &map, st);
  if (st->code == RD_OK) number_local(ids, lo, n, &lu, st);
  free(buf);
  rd_h5_unmap(&map);
  if (rd_agree(ctx, st) != RD_OK) {
    /* a read that failed: the error is the one reading the whole column gives (it names the rows
     * read, which must not depend on the rank count) */
    if (ctx->rank == 0 && f >= 0 && st->code == RD_EINPUT) {
      rd_status whole;
      rd_status_init(&whole);
      uint64_t *all = rd_malloc(sizeof(uint64_t) * (size_t)L->P, &whole, "user ids");
      if (all && rd_h5_read_int_words(f, job->input, &L->user, 0, L->P, all, &whole) != RD_OK) *st = whole;
      free(all);
    }
    rd_share_status(ctx, st, 0);
  } else if (users_merge(ctx, L, &lu, n, u, st) == RD_OK) {
    /* rank 0 also holds every pair's user (its own pairs come first), for the report's extras */
    if (ctx->rank == 0) {
      int32_t *all = realloc(u->of_pair, sizeof(int32_t) * (size_t)(L->P ? L->P : 1));
      if (!all) rd_abort(ctx, __FILE__, __LINE__, "out of memory for users");
      u->of_pair = all;
    }
    rd_gather_rows_inplace(ctx, u->of_pair, L->P, CM_BLOCK, sizeof(int32_t));
  }
  local_users_free(&lu);
  return st->code;
}
