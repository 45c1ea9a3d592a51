/* The spec hash of a job and what to do with its existing outputs (--resume, --force), checked at
 * start-up and again when a job's outputs are replaced; and the recovery of what runs that ended
 * without cleaning up (kill -9) left in an output folder. */
#include "rmdiag/resume.h"

#include <dirent.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmdiag/common/h5in.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kind.h"
#include "rmdiag/kernels/sha256.h"
#include "rmdiag/version.h"

int rd_spec_sha256(const rd_job *job, const rd_jobfile *jf, const rd_input_stat *in, char hex[65], rd_status *st) {
  (void)jf;  /* the seed is the job's own (the file's unless the job or its sweep sets one) */
  cJSON *o = cJSON_CreateObject();
  char mtime[64];
  snprintf(mtime, sizeof mtime, "%lld.%09lld", (long long)in->mtime_s, (long long)in->mtime_ns);
  cJSON *inputs = cJSON_CreateArray(), *one = cJSON_CreateObject();
  cJSON_AddStringToObject(one, "path", in->path);
  cJSON_AddNumberToObject(one, "bytes", (double)in->bytes);
  cJSON_AddStringToObject(one, "mtime", mtime);
  cJSON_AddItemToArray(inputs, one);
  cJSON_AddStringToObject(o, "name", job->name);
  cJSON_AddStringToObject(o, "kind", job->kind->name);
  cJSON_AddStringToObject(o, "group", job->group);
  cJSON_AddItemToObject(o, "options", cJSON_Duplicate(job->effective, 1));
  char seed[32];
  snprintf(seed, sizeof seed, "%lld", (long long)job->seed);
  cJSON_AddStringToObject(o, "seed", seed);
  cJSON_AddStringToObject(o, "version", RMDIAG_VERSION);
  cJSON_AddItemToObject(o, "inputs", inputs);
  char *canon = rd_json_canonical(o);
  cJSON_Delete(o);
  if (!canon) return rd_fail(st, RD_EFAIL, "out of memory");
  rd_sha256_hex(canon, strlen(canon), hex);
  free(canon);
  return RD_OK;
}

static char *slurp(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n + 65536 + 1 > cap) {
      cap = cap ? 2 * cap : 131072;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(fp);
        return NULL;
      }
      buf = nb;
    }
    size_t r = fread(buf + n, 1, 65536, fp);
    n += r;
    if (r < 65536) break;
  }
  fclose(fp);
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* The spec_sha256 an existing report was made from, or "" when it cannot be read. */
static void json_spec(const char *path, char *out, size_t outlen) {
  out[0] = '\0';
  size_t len = 0;
  char *text = slurp(path, &len);
  if (!text) return;
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  const cJSON *r = root ? cJSON_GetObjectItemCaseSensitive(root, "rmdiag") : NULL;
  const cJSON *s = r ? cJSON_GetObjectItemCaseSensitive(r, "spec_sha256") : NULL;
  if (cJSON_IsString(s)) snprintf(out, outlen, "%s", s->valuestring);
  cJSON_Delete(root);
}

static void h5_spec(const char *path, char *out, size_t outlen) {
  out[0] = '\0';
  if (H5Fis_hdf5(path) <= 0) return;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return;
  rd_h5_read_attr_string(f, "/", "spec_sha256", out, outlen);
  H5Fclose(f);
}

int rd_output_decide(const char *json_path, const char *h5_path, const char *spec, int resume, int force,
                     rd_out_action *action, rd_status *st) {
  *action = RD_OUT_WRITE;
  int have_json = access(json_path, F_OK) == 0, have_h5 = access(h5_path, F_OK) == 0;
  if (!have_json && !have_h5) return RD_OK;
  /* a folder in the way is never replaced, --force or not */
  struct stat sb;
  for (int k = 0; k < 2; k++) {
    const char *p = k ? h5_path : json_path;
    if (stat(p, &sb) == 0 && !S_ISREG(sb.st_mode))
      return rd_fail(st, RD_EINPUT, "%s exists and is not a file; nothing was written: move it away or choose another "
                     "output_dir", p);
  }
  if (force && !resume) return RD_OK;  /* written whatever made them: no need to read them */
  char js[128] = "", hs[128] = "";
  if (have_json) json_spec(json_path, js, sizeof js);
  if (have_h5) h5_spec(h5_path, hs, sizeof hs);
  int json_same = have_json && strcmp(js, spec) == 0;
  int h5_same = have_h5 && strcmp(hs, spec) == 0;
  if (json_same && h5_same && resume) {
    *action = RD_OUT_SKIP;
    return RD_OK;
  }
  if (force) return RD_OK;
  if (have_json && !json_same)
    return rd_fail(st, RD_EINPUT,
                   "%s exists and was made from a different job spec (spec_sha256 %s, this job %.16s...); "
                   "nothing was written: pass --force to overwrite it, or choose another output_dir",
                   json_path, js[0] ? js : "unreadable", spec);
  if (have_h5 && !h5_same)
    return rd_fail(st, RD_EINPUT,
                   "%s exists and was made from a different job spec (spec_sha256 %s, this job %.16s...); "
                   "nothing was written: pass --force to overwrite it, or choose another output_dir",
                   h5_path, hs[0] ? hs : "unreadable", spec);
  return RD_OK;
}

int rd_output_recheck(const char *json_path, const char *h5_path, const char *spec, int force, rd_status *st) {
  if (force) return RD_OK;
  struct stat sb;
  for (int k = 0; k < 2; k++) {
    const char *p = k ? h5_path : json_path;
    if (stat(p, &sb) != 0) continue;
    char have[128] = "";
    if (S_ISREG(sb.st_mode)) {
      if (k) h5_spec(p, have, sizeof have);
      else json_spec(p, have, sizeof have);
    }
    if (strcmp(have, spec) != 0)
      return rd_fail(st, RD_EINPUT, "%s changed while this job ran: another run wrote it from a different job spec "
                     "(spec_sha256 %s, this job %.16s...); nothing was replaced: pass --force to overwrite it, or "
                     "choose another output_dir", p, have[0] ? have : "unreadable", spec);
  }
  return RD_OK;
}

/* ---- recovery of side files left by runs that ended without cleaning up ---------------------- */

typedef struct stale_file {
  char name[256];
  rd_side_name s;
} stale_file;

static int exists_at(const char *dir, const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

static void rename_at(const char *dir, const char *from, const char *to) {
  char a[4096], b[4096];
  snprintf(a, sizeof a, "%s/%s", dir, from);
  snprintf(b, sizeof b, "%s/%s", dir, to);
  rename(a, b);
}

/* Whether a side file is stale (see rd_outputs_recover). */
static int is_stale(const rd_side_name *s, const char *const *names, int n_names, int lock_held) {
  int alive = rd_side_owner_alive(s);
  if (alive >= 0) return !alive;
  if (!lock_held) return 0;
  for (int i = 0; i < n_names; i++) {
    size_t k = strlen(names[i]);
    if (strncmp(s->base, names[i], k) == 0 && (strcmp(s->base + k, ".json") == 0 || strcmp(s->base + k, ".h5") == 0))
      return 1;
  }
  return 0;
}

/* Undoes the replacement of NAME's outputs that owner X left half done, as rd_commit_rollback would
 * have: the state is read from the files (see run_job.c, commit_outputs). Returns 1 when the
 * previous outputs were put back. */
static int undo_commit(const char *dir, const char *name, const char *owner) {
  char j[300], h[300], s[600], o[600], t[600];
  snprintf(j, sizeof j, "%s.json", name);
  snprintf(h, sizeof h, "%s.h5", name);
  snprintf(s, sizeof s, ".%s.json.stale.%s", name, owner);
  snprintf(o, sizeof o, ".%s.h5.old.%s", name, owner);
  snprintf(t, sizeof t, ".%s.h5.tmp.%s", name, owner);
  int has_s = exists_at(dir, s), has_o = exists_at(dir, o), has_t = exists_at(dir, t), restored = 0;
  if (!exists_at(dir, j)) {  /* with the new report in place the replacement was complete */
    /* the new .h5 was renamed in (its temporary is gone) but has no report: the old one comes back */
    if (has_o && !has_t) rename_at(dir, o, h), restored = 1;
    /* the old report comes back when its .h5 is in place: never renamed over, or just put back */
    if (has_s && (has_t || has_o)) rename_at(dir, s, j), restored = 1;
  }
  return restored;
}

void rd_outputs_recover(const char *dir, const char *const *names, int n_names, int lock_held, FILE *log) {
  DIR *d = opendir(dir);
  if (!d) return;
  stale_file *list = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    rd_side_name s;
    if (strlen(e->d_name) >= sizeof list->name || !rd_side_parse(e->d_name, &s)) continue;
    if (!is_stale(&s, names, n_names, lock_held)) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      stale_file *q = realloc(list, cap * sizeof *q);
      if (!q) break;
      list = q;
    }
    snprintf(list[n].name, sizeof list[n].name, "%s", e->d_name);
    list[n++].s = s;
  }
  closedir(d);
  /* first the replacements left half done (their side files tell how far each got), then the rest */
  int restored = 0;
  for (size_t i = 0; i < n; i++) {
    const rd_side_name *s = &list[i].s;
    size_t bl = strlen(s->base);
    int is_stale_json = strcmp(s->tag, "stale") == 0 && bl > 5 && strcmp(s->base + bl - 5, ".json") == 0;
    int is_old_h5 = strcmp(s->tag, "old") == 0 && bl > 3 && strcmp(s->base + bl - 3, ".h5") == 0;
    if (!is_stale_json && !is_old_h5) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(bl - (is_stale_json ? 5 : 3)), s->base);
    const char *owner = list[i].name + 1 + bl + 1 + strlen(s->tag) + 1;
    if (undo_commit(dir, name, owner)) {
      restored++;
      if (log)
        fprintf(log, "rmdiag: %s: put back the previous %s.json and %s.h5, which a run that ended while replacing "
                "them (pid %ld%s%s) had moved aside\n", dir, name, name, s->pid, s->host[0] ? " on " : "", s->host);
    }
  }
  int removed = 0;
  for (size_t i = 0; i < n; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, list[i].name);
    removed += unlink(p) == 0;
  }
  if (removed && log)
    fprintf(log, "rmdiag: %s: removed %d temporary file%s left by runs that ended without cleaning up (%s%s)\n", dir,
            removed, removed == 1 ? "" : "s", list[0].name, removed > 1 ? ", ..." : "");
  if ((removed || restored) && log) fflush(log);
  free(list);
}
