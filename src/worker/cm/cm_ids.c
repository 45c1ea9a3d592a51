/* cm: the input's own ids of pairs and runs (the pair_id and run_id datasets cm-csv writes) in the
 * user-split message, so that it names what the user's files call a pair and a run as well as their
 * indices. The ids are read only on that error path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

static const char *const id_names[2] = {"pair_id", "run_id"};

void cm_ids_find(hid_t f, const rd_job *job, cm_layout *L) {
  const int64_t len[2] = {L->P, L->R};
  for (int k = 0; k < 2; k++) {
    char p[600];
    rd_dsinfo info;
    rd_status st;
    rd_status_init(&st);
    L->has_ids[k] = rd_h5_path(p, sizeof p, job->group, id_names[k]) >= 0 && rd_h5_exists(f, p) &&
                    rd_h5_info(f, job->input, p, &info, &st) == RD_OK && info.ndims == 1 && info.dims[0] == len[k] &&
                    (info.tclass == RD_TC_STRING || info.tclass == RD_TC_INT);
  }
}

/* Element i of GROUP/pair_id (which 0) or GROUP/run_id (1) as text: "\"p7\"" for strings, the number
 * for integers; 0 when the input has no such ids or they cannot be read. */
static int id_text(hid_t f, const rd_job *job, int which, int64_t i, char *out, size_t n) {
  char p[600];
  rd_dsinfo info;
  rd_status st;
  rd_status_init(&st);
  if (rd_h5_path(p, sizeof p, job->group, id_names[which]) < 0 || rd_h5_info(f, job->input, p, &info, &st) != RD_OK)
    return 0;
  if (info.tclass == RD_TC_INT) {
    uint64_t w;
    if (rd_h5_read_int_words(f, job->input, &info, i, 1, &w, &st) != RD_OK) return 0;
    if (info.is_signed) snprintf(out, n, "%lld", (long long)(int64_t)w);
    else snprintf(out, n, "%llu", (unsigned long long)w);
    return 1;
  }
  char *buf = NULL;
  size_t len = 0;
  int64_t *off = NULL;
  int ok = rd_h5_read_strings(f, job->input, &info, &buf, &len, &off, &st) == RD_OK;
  if (ok) snprintf(out, n, "\"%.200s\"", buf + off[i]);
  free(buf);
  free(off);
  return ok;
}

int cm_split_fail(const rd_job *job, const cm_layout *L, const char *user, int64_t p, int64_t r, int64_t first,
                  unsigned flag, unsigned first_flag, rd_status *st) {
  char run[300], pair[300], fp[300], id[232];
  hid_t f = H5I_INVALID_HID;
  rd_status ost;
  rd_status_init(&ost);
  int open = (L->has_ids[0] || L->has_ids[1]) && rd_h5_open(job->input, MPI_COMM_NULL, &f, &ost) == RD_OK;
  if (open && L->has_ids[1] && id_text(f, job, 1, r, id, sizeof id))
    snprintf(run, sizeof run, "%s (index %lld)", id, (long long)r);
  else
    snprintf(run, sizeof run, "%lld", (long long)r);
  if (open && L->has_ids[0] && id_text(f, job, 0, p, id, sizeof id)) {
    snprintf(pair, sizeof pair, "%s (index %lld)", id, (long long)p);
    id_text(f, job, 0, first, id, sizeof id);
    snprintf(fp, sizeof fp, "%s (index %lld; the user's first pair)", id, (long long)first);
  } else {
    snprintf(pair, sizeof pair, "%lld", (long long)p);
    snprintf(fp, sizeof fp, "%lld (the user's first pair)", (long long)first);
  }
  if (open) rd_h5_close(f);
  return rd_fail_at(st, RD_EINPUT, p * L->R + r,
                    "%s: %s: user %s is split inconsistently in run %s: pair %s has in_train = %u but pair %s has %u; "
                    "within a run all pairs of a user must share in_train", job->input, L->flag.path, user, run, pair,
                    flag, fp, first_flag);
}
