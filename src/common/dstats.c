/* Summaries of values spread over the ranks (see dstats.h): fixed-block sums from the parts'
 * pieces, and exact order statistics by a radix selection over all-reduced histograms. */
#include "rmdiag/common/dstats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void *dmalloc(const rd_ctx *ctx, size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) rd_abort(ctx, __FILE__, __LINE__, "out of memory for distributed statistics");
  return p;
}

/* Small arrays, zeroed. */
static void *dcalloc(const rd_ctx *ctx, size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) rd_abort(ctx, __FILE__, __LINE__, "out of memory for distributed statistics");
  return p;
}

int rd_dist_counts(const rd_ctx *ctx, int n_sets, const size_t *n, int64_t *off, int64_t *total) {
  long long *mine = dcalloc(ctx, (size_t)n_sets, sizeof *mine);
  long long *all = dmalloc(ctx, sizeof(long long) * (size_t)n_sets * (size_t)ctx->size);
  for (int s = 0; s < n_sets; s++) mine[s] = (long long)n[s];
  RD_MPI_CHECK(ctx, MPI_Allgather(mine, n_sets, MPI_LONG_LONG, all, n_sets, MPI_LONG_LONG, ctx->comm));
  for (int s = 0; s < n_sets; s++) {
    off[s] = total[s] = 0;
    for (int r = 0; r < ctx->size; r++) {
      if (r == ctx->rank) off[s] = total[s];
      total[s] += all[(size_t)r * (size_t)n_sets + (size_t)s];
    }
  }
  free(mine);
  free(all);
  return RD_OK;
}

int rd_dist_sums(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n, const int64_t *off,
                 const double *centers, double *sums) {
  /* every rank's pieces of every sequence, one message to rank 0 */
  size_t cap = 0;
  for (int s = 0; s < n_sets; s++) cap += RD_SUM_PART_MAX(n[s]);
  double *mine = dmalloc(ctx, sizeof(double) * cap);
  size_t len = 0;
  for (int s = 0; s < n_sets; s++) len += rd_sum_part(x[s], n[s], off[s], centers ? &centers[s] : NULL, mine + len);
  if (len > (size_t)INT32_MAX) rd_abort(ctx, __FILE__, __LINE__, "sum pieces too large");
  int cnt = (int)len, *counts = NULL, *displs = NULL;
  double *all = NULL;
  if (ctx->rank == 0) {
    counts = dmalloc(ctx, sizeof(int) * (size_t)ctx->size);
    displs = dmalloc(ctx, sizeof(int) * (size_t)ctx->size);
  }
  RD_MPI_CHECK(ctx, MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, ctx->comm));
  if (ctx->rank == 0) {
    int64_t t = 0;
    for (int r = 0; r < ctx->size; r++) {
      displs[r] = (int)t;
      t += counts[r];
    }
    if (t > INT32_MAX) rd_abort(ctx, __FILE__, __LINE__, "sum pieces too large");
    all = dmalloc(ctx, sizeof(double) * (size_t)t);
  }
  RD_MPI_CHECK(ctx, MPI_Gatherv(mine, cnt, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, ctx->comm));
  if (ctx->rank == 0) {
    /* rank r's message holds its piece of each sequence in turn; sequence s adds the ranks' pieces
     * in rank order */
    size_t *at = dmalloc(ctx, sizeof(size_t) * (size_t)ctx->size);
    for (int r = 0; r < ctx->size; r++) at[r] = (size_t)displs[r];
    for (int s = 0; s < n_sets; s++) {
      rd_sum_state z;
      rd_sum_begin(&z);
      for (int r = 0; r < ctx->size; r++) at[r] += rd_sum_add_part(&z, all + at[r]);
      sums[s] = rd_sum_end(&z);
    }
    free(at);
  }
  free(all);
  free(counts);
  free(displs);
  free(mine);
  return RD_OK;
}

/* ---- order statistics --------------------------------------------------------------------- */

#define TOP_BITS 16
#define TOP_BINS (1 << TOP_BITS)
#define DIGIT_BITS 8
#define DIGIT_BINS (1 << DIGIT_BITS)

/* The values of one sequence that share a prefix of their keys (the top `bits` bits), this rank's. */
typedef struct key_group {
  int set;
  int bits;
  uint64_t prefix;
  uint64_t *keys;
  size_t n;
} key_group;

/* The digit below the first `bits` bits of key. */
static inline unsigned digit_of(uint64_t key, int bits, int width) {
  return (unsigned)((key >> (64 - bits - width)) & ((1u << width) - 1));
}

/* The histogram of the top 16 bits of the defined values' keys added to h4: four histograms side
 * by side (close values, probabilities, fall in few bins and increments of one counter would wait
 * on each other), folded by fold_top16. Returns the number of NaN values. */
static size_t add_top16(uint32_t *h4, const double *x, size_t n) {
  size_t i = 0, n_nan = 0;
  for (; i + 4 <= n; i += 4)
    for (int c = 0; c < 4; c++) {
      if (isnan(x[i + c])) {
        n_nan++;
        continue;
      }
      h4[c * TOP_BINS + (rd_order_key(x[i + c]) >> (64 - TOP_BITS))]++;
    }
  for (; i < n; i++) {
    if (isnan(x[i])) {
      n_nan++;
      continue;
    }
    h4[rd_order_key(x[i]) >> (64 - TOP_BITS)]++;
  }
  return n_nan;
}

static void fold_top16(const uint32_t *h4, uint32_t *h) {
  for (int d = 0; d < TOP_BINS; d++) h[d] = h4[d] + h4[TOP_BINS + d] + h4[2 * TOP_BINS + d] + h4[3 * TOP_BINS + d];
}

/* The bucket of target t's remaining rank in a global histogram: the digit d with
 * cum(d) <= rem < cum(d) + h[d]; rem becomes the rank within it. */
static unsigned pick_bucket(const uint32_t *h, unsigned bins, int64_t *rem) {
  int64_t cum = 0;
  for (unsigned d = 0; d < bins; d++) {
    if (*rem < cum + (int64_t)h[d]) {
      *rem -= cum;
      return d;
    }
    cum += h[d];
  }
  return bins - 1;  /* unreachable when k < total */
}

/* Rounds 1 and 2 over the rank's whole parts: a histogram of the keys' top 16 bits of each set with
 * targets (add_top16; or the ones a pass before noted), all-reduced; every target takes its bucket; then a histogram of
 * the next 8 bits within the targets' buckets, all-reduced; then the groups (set, 24-bit prefix)
 * receive this rank's keys with those prefixes, a small fraction of the values (no copy of the
 * larger 16-bit buckets). */
static int first_rounds(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n, const uint32_t *noted,
                        int n_t, const int *set, int64_t *rem, uint64_t *prefix, int *group_of, key_group **groups_out,
                        int *n_groups_out) {
  int *want = dcalloc(ctx, (size_t)n_sets, sizeof *want), *hist_of = dcalloc(ctx, (size_t)n_sets, sizeof *hist_of);
  int nw = 0;
  for (int t = 0; t < n_t; t++) want[set[t]] = 1;
  for (int s = 0; s < n_sets; s++) hist_of[s] = want[s] ? nw++ : -1;
  uint32_t *loc = dcalloc(ctx, (size_t)nw * TOP_BINS, sizeof *loc), *glob = dmalloc(ctx, sizeof *glob * (size_t)nw * TOP_BINS);
  uint32_t *h4 = dmalloc(ctx, sizeof(uint32_t) * 4 * TOP_BINS);
  for (int s = 0; s < n_sets; s++) {
    if (!want[s]) continue;
    if (noted) { /* the histograms a pass before made (rd_dist_notes) */
      memcpy(loc + (size_t)hist_of[s] * TOP_BINS, noted + (size_t)s * TOP_BINS, sizeof(uint32_t) * TOP_BINS);
      continue;
    }
    memset(h4, 0, sizeof(uint32_t) * 4 * TOP_BINS);
    add_top16(h4, x[s], n[s]);
    fold_top16(h4, loc + (size_t)hist_of[s] * TOP_BINS);
  }
  free(h4);
  RD_MPI_CHECK(ctx, MPI_Allreduce(loc, glob, nw * TOP_BINS, MPI_UINT32_T, MPI_SUM, ctx->comm));
  /* the 16-bit buckets holding targets, one slot per distinct (set, bucket), in target order */
  int *slot_of_t = dmalloc(ctx, sizeof(int) * (size_t)n_t), ns = 0;
  int *slot_set = dmalloc(ctx, sizeof(int) * (size_t)n_t);
  for (int t = 0; t < n_t; t++) {
    unsigned d = pick_bucket(glob + (size_t)hist_of[set[t]] * TOP_BINS, TOP_BINS, &rem[t]);
    prefix[t] = d;
    slot_of_t[t] = -1;
    for (int t2 = 0; t2 < t; t2++)
      if (set[t2] == set[t] && prefix[t2] == d) slot_of_t[t] = slot_of_t[t2];
    if (slot_of_t[t] < 0) {
      slot_set[ns] = set[t];
      slot_of_t[t] = ns++;
    }
  }
  free(loc);
  free(glob);
  /* round 2: the next 8 bits within those buckets, straight from the values. Values inside and
   * outside the targets' buckets interleave at random, so both passes over the values are written
   * without branches: values outside (and NaN) go to a sink, row ns of the tables. */
  int32_t *slot = dmalloc(ctx, sizeof(int32_t) * TOP_BINS);
  uint32_t *l2 = dcalloc(ctx, (size_t)(ns + 1) * DIGIT_BINS, sizeof *l2);
  uint32_t *g2 = dmalloc(ctx, sizeof *g2 * (size_t)ns * DIGIT_BINS);
  for (int s = 0; s < n_sets; s++) {
    if (!want[s]) continue;
    for (int d = 0; d < TOP_BINS; d++) slot[d] = ns;
    for (int t = 0; t < n_t; t++)
      if (set[t] == s) slot[prefix[t]] = slot_of_t[t];
    for (size_t i = 0; i < n[s]; i++) {
      double v = x[s][i];
      uint64_t key = rd_order_key(v);
      int32_t j = isnan(v) ? ns : slot[key >> (64 - TOP_BITS)];
      l2[(size_t)j * DIGIT_BINS + digit_of(key, TOP_BITS, DIGIT_BITS)]++;
    }
  }
  RD_MPI_CHECK(ctx, MPI_Allreduce(l2, g2, ns * DIGIT_BINS, MPI_UINT32_T, MPI_SUM, ctx->comm));
  /* groups: one per distinct (set, 24-bit prefix), in target order; (slot, digit) -> group, the
   * sink group ng for every other (slot, digit) and for row ns */
  key_group *g = calloc((size_t)n_t, sizeof *g);
  int32_t *group_at = dmalloc(ctx, sizeof(int32_t) * (size_t)(ns + 1) * DIGIT_BINS);
  if (!g) rd_abort(ctx, __FILE__, __LINE__, "out of memory for distributed statistics");
  for (size_t i = 0; i < (size_t)(ns + 1) * DIGIT_BINS; i++) group_at[i] = -1;
  int ng = 0;
  for (int t = 0; t < n_t; t++) {
    int sl = slot_of_t[t];
    unsigned d = pick_bucket(g2 + (size_t)sl * DIGIT_BINS, DIGIT_BINS, &rem[t]);
    prefix[t] = (prefix[t] << DIGIT_BITS) | d;
    int32_t *at = &group_at[(size_t)sl * DIGIT_BINS + d];
    if (*at < 0) {
      g[ng] = (key_group){.set = set[t], .bits = TOP_BITS + DIGIT_BITS, .prefix = prefix[t]};
      g[ng].keys = dmalloc(ctx, sizeof(uint64_t) * l2[(size_t)sl * DIGIT_BINS + d]);
      *at = ng++;
    }
    group_of[t] = *at;
  }
  for (size_t i = 0; i < (size_t)(ns + 1) * DIGIT_BINS; i++)
    if (group_at[i] < 0) group_at[i] = ng;
  /* each group's next free place; the sink's one place is overwritten and its count stays 0 */
  uint64_t sink_key, **dst = dmalloc(ctx, sizeof(uint64_t *) * (size_t)(ng + 1));
  size_t *cnt = dcalloc(ctx, (size_t)ng + 1, sizeof *cnt);
  for (int q = 0; q < ng; q++) dst[q] = g[q].keys;
  dst[ng] = &sink_key;
  for (int s = 0; s < n_sets; s++) {
    if (!want[s]) continue;
    for (int d = 0; d < TOP_BINS; d++) slot[d] = ns;
    for (int t = 0; t < n_t; t++)
      if (set[t] == s) slot[prefix[t] >> DIGIT_BITS] = slot_of_t[t];
    for (size_t i = 0; i < n[s]; i++) {
      double v = x[s][i];
      uint64_t key = rd_order_key(v);
      int32_t j = isnan(v) ? ns : slot[key >> (64 - TOP_BITS)];
      int32_t q = group_at[(size_t)j * DIGIT_BINS + digit_of(key, TOP_BITS, DIGIT_BITS)];
      dst[q][cnt[q]] = key;
      cnt[q] += q != ng;
    }
  }
  for (int q = 0; q < ng; q++) g[q].n = cnt[q];
  free(dst);
  free(cnt);
  free(slot);
  free(l2);
  free(g2);
  free(group_at);
  free(slot_of_t);
  free(slot_set);
  free(want);
  free(hist_of);
  *groups_out = g;
  *n_groups_out = ng;
  return RD_OK;
}

/* One later round: an 8-bit histogram per group, all-reduced; each target takes its digit, and
 * the groups are split to the targets' new prefixes (keys outside every target's prefix drop). */
static void next_round(const rd_ctx *ctx, int n_t, int64_t *rem, uint64_t *prefix, int *group_of, key_group **gp,
                       int *ngp) {
  key_group *g = *gp;
  int ng = *ngp;
  uint32_t *loc = calloc((size_t)ng * DIGIT_BINS, sizeof *loc), *glob = dmalloc(ctx, sizeof *glob * (size_t)ng * DIGIT_BINS);
  if (!loc) rd_abort(ctx, __FILE__, __LINE__, "out of memory for distributed statistics");
  for (int j = 0; j < ng; j++)
    for (size_t i = 0; i < g[j].n; i++) loc[(size_t)j * DIGIT_BINS + digit_of(g[j].keys[i], g[j].bits, DIGIT_BITS)]++;
  RD_MPI_CHECK(ctx, MPI_Allreduce(loc, glob, ng * DIGIT_BINS, MPI_UINT32_T, MPI_SUM, ctx->comm));
  key_group *ng_g = calloc((size_t)n_t, sizeof *ng_g);
  int nn = 0;
  int *new_of = dmalloc(ctx, sizeof(int) * (size_t)n_t);
  if (!ng_g) rd_abort(ctx, __FILE__, __LINE__, "out of memory for distributed statistics");
  for (int t = 0; t < n_t; t++) {
    const key_group *o = &g[group_of[t]];
    unsigned d = pick_bucket(glob + (size_t)group_of[t] * DIGIT_BINS, DIGIT_BINS, &rem[t]);
    prefix[t] = (prefix[t] << DIGIT_BITS) | d;
    new_of[t] = -1;
    for (int j = 0; j < nn; j++)
      if (ng_g[j].set == o->set && ng_g[j].prefix == prefix[t]) new_of[t] = j;
    if (new_of[t] < 0) {
      ng_g[nn] = (key_group){.set = o->set, .bits = o->bits + DIGIT_BITS, .prefix = prefix[t]};
      ng_g[nn].keys = dmalloc(ctx, sizeof(uint64_t) * loc[(size_t)group_of[t] * DIGIT_BINS + d]);
      new_of[t] = nn++;
    }
  }
  /* each old group's keys go to the new groups made from it (a digit -> group table) */
  int map[DIGIT_BINS];
  for (int j = 0; j < ng; j++) {
    for (int d = 0; d < DIGIT_BINS; d++) map[d] = -1;
    for (int t = 0; t < n_t; t++)
      if (group_of[t] == j) map[prefix[t] & (DIGIT_BINS - 1)] = new_of[t];
    for (size_t i = 0; i < g[j].n; i++) {
      int m = map[digit_of(g[j].keys[i], g[j].bits, DIGIT_BITS)];
      if (m >= 0) ng_g[m].keys[ng_g[m].n++] = g[j].keys[i];
    }
    free(g[j].keys);
  }
  memcpy(group_of, new_of, sizeof(int) * (size_t)n_t);
  free(new_of);
  free(g);
  free(loc);
  free(glob);
  *gp = ng_g;
  *ngp = nn;
}

/* Sequences of fewer than RD_SORT_SMALL defined values: gathered in order on every rank and sorted
 * there as rd_summarize sorts them; their targets are answered and taken out (*set_out = -1). */
static void small_sets(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n, const size_t *defined,
                       int n_t, const int *set, const int64_t *k, double *value, int *set_out) {
  size_t *m = dcalloc(ctx, (size_t)n_sets, sizeof *m);
  int64_t *off = dcalloc(ctx, (size_t)n_sets, sizeof *off), *total = dcalloc(ctx, (size_t)n_sets, sizeof *total);
  for (int s = 0; s < n_sets; s++) m[s] = defined ? defined[s] : rd_count_defined(x[s], n[s]);
  rd_dist_counts(ctx, n_sets, m, off, total);
  memcpy(set_out, set, sizeof(int) * (size_t)n_t);
  int *cnt = dmalloc(ctx, sizeof(int) * (size_t)ctx->size), *dis = dmalloc(ctx, sizeof(int) * (size_t)ctx->size);
  for (int s = 0; s < n_sets; s++) {
    int used = 0;
    for (int t = 0; t < n_t; t++) used |= set[t] == s;
    if (!used || total[s] >= RD_SORT_SMALL) continue;
    double *mine = dmalloc(ctx, sizeof(double) * (m[s] + 1)), *all = dmalloc(ctx, sizeof(double) * (size_t)(total[s] + 1));
    size_t j = 0;
    for (size_t i = 0; i < n[s]; i++)
      if (!isnan(x[s][i])) mine[j++] = x[s][i];
    int c = (int)m[s];
    RD_MPI_CHECK(ctx, MPI_Allgather(&c, 1, MPI_INT, cnt, 1, MPI_INT, ctx->comm));
    for (int r = 0, at = 0; r < ctx->size; r++) {
      dis[r] = at;
      at += cnt[r];
    }
    RD_MPI_CHECK(ctx, MPI_Allgatherv(mine, c, MPI_DOUBLE, all, cnt, dis, MPI_DOUBLE, ctx->comm));
    rd_sort_doubles(all, (size_t)total[s]);
    for (int t = 0; t < n_t; t++)
      if (set[t] == s) {
        value[t] = all[k[t]];
        set_out[t] = -1;
      }
    free(mine);
    free(all);
  }
  free(cnt);
  free(dis);
  free(m);
  free(off);
  free(total);
}

static int radix_select(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n, const uint32_t *noted,
                        int n_targets, const int *set, const int64_t *k, double *value);

/* rd_dist_order_stats, with what a pass before noted (NULL: nothing): the rank's defined counts
 * and its histograms of the top 16 bits ([n_sets][TOP_BINS]). */
static int order_stats(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n, const size_t *defined,
                       const uint32_t *noted, int n_targets, const int *set, const int64_t *k, double *value) {
  if (n_targets <= 0) return RD_OK;
  /* small sequences first; the radix selection takes the other targets */
  int *set2 = dmalloc(ctx, sizeof(int) * (size_t)n_targets), *map = dmalloc(ctx, sizeof(int) * (size_t)n_targets);
  small_sets(ctx, n_sets, x, n, defined, n_targets, set, k, value, set2);
  int nt = 0;
  int64_t *k2 = dmalloc(ctx, sizeof(int64_t) * (size_t)n_targets);
  for (int t = 0; t < n_targets; t++)
    if (set2[t] >= 0) {
      map[nt] = t;
      set2[nt] = set2[t];
      k2[nt++] = k[t];
    }
  if (nt > 0) {
    double *v2 = dmalloc(ctx, sizeof(double) * (size_t)nt);
    radix_select(ctx, n_sets, x, n, noted, nt, set2, k2, v2);
    for (int t = 0; t < nt; t++) value[map[t]] = v2[t];
    free(v2);
  }
  free(set2);
  free(map);
  free(k2);
  return RD_OK;
}

int rd_dist_order_stats(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n, int n_targets,
                        const int *set, const int64_t *k, double *value) {
  return order_stats(ctx, n_sets, x, n, NULL, NULL, n_targets, set, k, value);
}

static int radix_select(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n, const uint32_t *noted,
                        int n_targets, const int *set, const int64_t *k, double *value) {
  int64_t *rem = dmalloc(ctx, sizeof(int64_t) * (size_t)n_targets);
  uint64_t *prefix = dmalloc(ctx, sizeof(uint64_t) * (size_t)n_targets);
  int *group_of = dmalloc(ctx, sizeof(int) * (size_t)n_targets);
  memcpy(rem, k, sizeof(int64_t) * (size_t)n_targets);
  key_group *g = NULL;
  int ng = 0;
  first_rounds(ctx, n_sets, x, n, noted, n_targets, set, rem, prefix, group_of, &g, &ng);
  for (int bits = TOP_BITS + DIGIT_BITS; bits < 64; bits += DIGIT_BITS)
    next_round(ctx, n_targets, rem, prefix, group_of, &g, &ng);
  for (int t = 0; t < n_targets; t++) value[t] = rd_order_value(prefix[t]);
  for (int j = 0; j < ng; j++) free(g[j].keys);
  free(g);
  free(rem);
  free(prefix);
  free(group_of);
  return RD_OK;
}

/* ---- summaries ---------------------------------------------------------------------------- */

#define N_QUANTILES 5
static const double summary_q[N_QUANTILES] = {0.05, 0.25, 0.5, 0.75, 0.95};

int rd_dist_notes_init(rd_dist_notes *nt, int n_sets) {
  nt->n_sets = n_sets;
  nt->defined = calloc((size_t)n_sets, sizeof *nt->defined);
  /* add_top16's four histograms per sequence, folded when read; pages that no value touches stay
   * unallocated */
  nt->hist = calloc((size_t)n_sets * 4 * TOP_BINS, sizeof *nt->hist);
  if (nt->defined && nt->hist) return 0;
  rd_dist_notes_free(nt);
  return -1;
}

void rd_dist_notes_add(rd_dist_notes *nt, int set, const double *x, size_t n) {
  nt->defined[set] += n - add_top16(nt->hist + (size_t)set * 4 * TOP_BINS, x, n);
}

void rd_dist_notes_free(rd_dist_notes *nt) {
  free(nt->defined);
  free(nt->hist);
  nt->defined = NULL;
  nt->hist = NULL;
}

int rd_dist_summaries(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n,
                      const rd_dist_notes *notes, rd_summary *out) {
  int64_t *off = dmalloc(ctx, sizeof(int64_t) * (size_t)n_sets), *total = dmalloc(ctx, sizeof(int64_t) * (size_t)n_sets);
  double *sums = dmalloc(ctx, sizeof(double) * (size_t)n_sets), *means = dmalloc(ctx, sizeof(double) * (size_t)n_sets);
  /* the counts and histograms: a caller's notes, or one pass here */
  rd_dist_notes own;
  if (!notes) {
    if (rd_dist_notes_init(&own, n_sets) != 0)
      rd_abort(ctx, __FILE__, __LINE__, "out of memory for distributed statistics");
    for (int s = 0; s < n_sets; s++) rd_dist_notes_add(&own, s, x[s], n[s]);
  }
  const rd_dist_notes *use = notes ? notes : &own;
  size_t *defined = dcalloc(ctx, (size_t)n_sets, sizeof *defined);
  uint32_t *hist = dmalloc(ctx, sizeof(uint32_t) * (size_t)n_sets * TOP_BINS);
  for (int s = 0; s < n_sets; s++) {
    fold_top16(use->hist + (size_t)s * 4 * TOP_BINS, hist + (size_t)s * TOP_BINS);
    defined[s] = use->defined[s];
  }
  if (!notes) rd_dist_notes_free(&own);
  rd_dist_counts(ctx, n_sets, defined, off, total);
  /* mean (rd_mean_sd: the fixed-block sum over n), then the second pass around it */
  rd_dist_sums(ctx, n_sets, x, n, off, NULL, sums);
  for (int s = 0; s < n_sets; s++) means[s] = total[s] > 0 ? sums[s] / (double)total[s] : NAN;
  RD_MPI_CHECK(ctx, MPI_Bcast(means, n_sets, MPI_DOUBLE, 0, ctx->comm));
  rd_dist_sums(ctx, n_sets, x, n, off, means, sums);
  /* the order statistics the quantiles need: k, and k + 1 when interpolating */
  int cap = n_sets * N_QUANTILES * 2, nt = 0;
  int *tset = dmalloc(ctx, sizeof(int) * (size_t)cap);
  int64_t *tk = dmalloc(ctx, sizeof(int64_t) * (size_t)cap);
  double *tv = dmalloc(ctx, sizeof(double) * (size_t)cap);
  for (int s = 0; s < n_sets; s++) {
    if (total[s] == 0) continue;
    for (int j = 0; j < N_QUANTILES; j++) {
      size_t kk;
      double g;
      rd_quantile_pos((size_t)total[s], summary_q[j], &kk, &g);
      tset[nt] = s;
      tk[nt++] = (int64_t)kk;
      if (g != 0.0 && (int64_t)kk + 1 < total[s]) {
        tset[nt] = s;
        tk[nt++] = (int64_t)kk + 1;
      }
    }
  }
  order_stats(ctx, n_sets, x, n, defined, hist, nt, tset, tk, tv);
  free(defined);
  free(hist);
  if (ctx->rank == 0) {
    for (int s = 0, t = 0; s < n_sets; s++) {
      rd_summary *o = &out[s];
      o->n = total[s];
      o->mean = means[s];
      o->sd = total[s] >= 2 ? sqrt(sums[s] / (double)(total[s] - 1)) : NAN;
      o->ci_lo = o->ci_hi = NAN;
      double qv[N_QUANTILES];
      for (int j = 0; j < N_QUANTILES; j++) {
        if (total[s] == 0) {
          qv[j] = NAN;
          continue;
        }
        size_t kk;
        double g;
        rd_quantile_pos((size_t)total[s], summary_q[j], &kk, &g);
        double a = tv[t++], b = a;
        if (g != 0.0 && (int64_t)kk + 1 < total[s]) b = tv[t++];
        qv[j] = g == 0.0 ? a : rd_quantile_lerp(a, b, g);
      }
      o->q05 = qv[0];
      o->q25 = qv[1];
      o->median = qv[2];
      o->q75 = qv[3];
      o->q95 = qv[4];
    }
  }
  free(tset);
  free(tk);
  free(tv);
  free(off);
  free(total);
  free(sums);
  free(means);
  return RD_OK;
}
