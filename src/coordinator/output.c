/* Atomic outputs, SIGTERM safety, the spec hash and the resume/force decision. */
#include "rmdiag/output.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmdiag/h5in.h"
#include "rmdiag/jsonutil.h"
#include "rmdiag/kind.h"
#include "rmdiag/sha256.h"
#include "rmdiag/version.h"

volatile int rd_interrupted = 0;

/* Temporary paths to remove on a signal: fixed slots, written before the file is created, so
 * the handler only reads memory and calls unlink (async-signal-safe). */
#define TMP_SLOTS 8
#define TMP_LEN 4096
static char tmp_paths[TMP_SLOTS][TMP_LEN];
static volatile sig_atomic_t tmp_used[TMP_SLOTS];

/* The folders rd_mkdirs created: made_path cut at made_pos[0..made_n) (shallowest first). */
#define MADE_MAX (TMP_LEN / 2)  /* every new level takes at least two characters */
static char made_path[TMP_LEN], made_scratch[TMP_LEN];
static volatile sig_atomic_t made_pos[MADE_MAX];
static volatile sig_atomic_t made_n;

void rd_made_dir_forget(void) { made_n = 0; }

void rd_made_dir_remove(void) {
  for (int k = made_n - 1; k >= 0; k--) {
    int n = made_pos[k];
    for (int i = 0; i < n; i++) made_scratch[i] = made_path[i];
    made_scratch[n] = '\0';
    rmdir(made_scratch);  /* fails harmlessly when not empty (or already gone) */
  }
  made_n = 0;
}

/* The journal of an output replacement (see rd_commit_begin). */
static char commit_json[TMP_LEN], commit_h5[TMP_LEN], commit_tmp[TMP_LEN], commit_stale[TMP_LEN], commit_old[TMP_LEN];
static volatile sig_atomic_t commit_active, commit_has_stale, commit_has_old, commit_h5_existed;

void rd_commit_begin(const char *json, const char *h5, const char *h5tmp, const char *stale_json, const char *old_h5,
                     int h5_existed) {
  commit_active = 0;
  snprintf(commit_json, TMP_LEN, "%s", json);
  snprintf(commit_h5, TMP_LEN, "%s", h5);
  snprintf(commit_tmp, TMP_LEN, "%s", h5tmp);
  snprintf(commit_stale, TMP_LEN, "%s", stale_json ? stale_json : "");
  snprintf(commit_old, TMP_LEN, "%s", old_h5 ? old_h5 : "");
  commit_has_stale = stale_json != NULL;
  commit_has_old = old_h5 != NULL;
  commit_h5_existed = h5_existed;
  commit_active = 1;
}

void rd_commit_end(void) { commit_active = 0; }

/* Undoes a replacement in progress, judging from the files how far it got: before the new .h5 was
 * renamed in, the old report comes back and the second link goes; after it, without the new report,
 * the old .h5 and report come back; with the new report in place the replacement is complete and
 * only the old files go. */
void rd_commit_rollback(void) {
  if (!commit_active) return;
  /* commit_active stays set until the end: each step is decided from the files and may be repeated,
   * so a handler interrupting this one (or running beside it on another thread) redoes the rest */
  int h5_replaced = access(commit_tmp, F_OK) != 0;
  if (h5_replaced && access(commit_json, F_OK) == 0) {
    if (commit_has_stale) unlink(commit_stale);
    if (commit_has_old) unlink(commit_old);
    commit_active = 0;
    return;
  }
  int restore_report = commit_has_stale;
  if (h5_replaced) {
    if (commit_has_old) {
      rename(commit_old, commit_h5);
    } else {
      unlink(commit_h5);  /* the new .h5 must not stand without its report */
      if (commit_h5_existed) {
        /* the old .h5 is gone (no second link could be made): no report may claim it */
        restore_report = 0;
        if (commit_has_stale) unlink(commit_stale);
      }
    }
  } else if (commit_has_old) {
    unlink(commit_old);  /* a second link to the .h5 still in place */
  }
  if (restore_report) rename(commit_stale, commit_json);
  commit_active = 0;
}

void rd_tmp_cleanup(void) {
  rd_commit_rollback();
  for (int i = 0; i < TMP_SLOTS; i++)
    if (tmp_used[i]) unlink(tmp_paths[i]);
  rd_made_dir_remove();  /* fails harmlessly unless empty */
}

static void on_signal(int sig) {
  rd_interrupted = 1;
  rd_tmp_cleanup();
  signal(sig, SIG_DFL);
  raise(sig);
}

void rd_signals_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  /* a termination request arriving while the handler restores outputs waits for it */
  static const int term[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXFSZ};
  for (size_t i = 0; i < sizeof term / sizeof term[0]; i++) sigaddset(&sa.sa_mask, term[i]);
  /* termination requests, and faults (bus errors from a file that shrank under a mapping, file
   * size limits): none may leave a temporary file behind */
  static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGBUS, SIGSEGV, SIGXFSZ, SIGABRT};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

void rd_tmp_register(const char *path) {
  for (int i = 0; i < TMP_SLOTS; i++)
    if (!tmp_used[i]) {
      snprintf(tmp_paths[i], TMP_LEN, "%s", path);
      tmp_used[i] = 1;
      return;
    }
}

void rd_tmp_unregister(const char *path) {
  for (int i = 0; i < TMP_SLOTS; i++)
    if (tmp_used[i] && strcmp(tmp_paths[i], path) == 0) tmp_used[i] = 0;
}

char *rd_side_path(const char *final_path, const char *tag) {
  const char *slash = strrchr(final_path, '/');
  size_t dirlen = slash ? (size_t)(slash - final_path + 1) : 0;
  const char *base = slash ? slash + 1 : final_path;
  size_t n = strlen(final_path) + strlen(tag) + 64;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%.*s.%s.%s.%ld", (int)dirlen, final_path, base, tag, (long)getpid());
  return p;
}

char *rd_tmp_path(const char *final_path) { return rd_side_path(final_path, "tmp"); }

int rd_mkdirs(const char *dir, rd_status *st) {
  char buf[PATH_MAX];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof buf) return rd_fail(st, RD_EINPUT, "output_dir \"%s\" is not a usable path", dir);
  memcpy(buf, dir, n + 1);
  made_n = 0;
  if (n < TMP_LEN) memcpy(made_path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char save = buf[i];
      buf[i] = '\0';
      if (mkdir(buf, 0777) == 0) {
        if (n < TMP_LEN && made_n < MADE_MAX) {  /* remembered: removed again if the run fails */
          made_pos[made_n] = (int)i;
          made_n = made_n + 1;
        }
      } else if (errno != EEXIST) {  /* a file in the way is the job's fault, not the system's */
        return rd_fail(st, errno == ENOTDIR ? RD_EINPUT : RD_EFAIL, "cannot create output folder %s: %s", buf,
                       strerror(errno));
      }
      buf[i] = save;
    }
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return rd_fail(st, RD_EINPUT, "output_dir %s exists and is not a folder", dir);
  return RD_OK;
}

int rd_write_file_atomic(const char *final_path, const char *text, rd_status *st) {
  char *tmp = rd_tmp_path(final_path);
  if (!tmp) return rd_fail(st, RD_EFAIL, "out of memory");
  rd_tmp_register(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  int rc = RD_OK;
  if (fd < 0) {
    rc = rd_fail(st, RD_EFAIL, "cannot create %s: %s", tmp, strerror(errno));
  } else {
    size_t len = strlen(text), off = 0;
    while (off < len) {
      ssize_t w = write(fd, text + off, len - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        rc = rd_fail(st, RD_EFAIL, "cannot write %s: %s", tmp, strerror(errno));
        break;
      }
      off += (size_t)w;
    }
    if (rc == RD_OK && fsync(fd) != 0) rc = rd_fail(st, RD_EFAIL, "cannot sync %s: %s", tmp, strerror(errno));
    close(fd);
    if (rc == RD_OK && rename(tmp, final_path) != 0)
      rc = rd_fail(st, RD_EFAIL, "cannot rename %s to %s: %s", tmp, final_path, strerror(errno));
    if (rc != RD_OK) unlink(tmp);
  }
  rd_tmp_unregister(tmp);
  free(tmp);
  return rc;
}

int rd_input_stat_get(const char *path, const char *jobfile, const char *key, rd_input_stat *in, rd_status *st) {
  memset(in, 0, sizeof *in);
  struct stat sb;
  if (stat(path, &sb) != 0)
    return rd_fail(st, RD_EINPUT, "%s: %s: input file %s: %s", jobfile, key, path, strerror(errno));
  if (!S_ISREG(sb.st_mode)) return rd_fail(st, RD_EINPUT, "%s: %s: input %s is not a regular file", jobfile, key, path);
  char *real = realpath(path, NULL);
  in->path = real ? real : strdup(path);
  in->bytes = (int64_t)sb.st_size;
  in->mtime_s = (int64_t)sb.st_mtim.tv_sec;
  in->mtime_ns = (int64_t)sb.st_mtim.tv_nsec;
  return RD_OK;
}

int rd_spec_sha256(const rd_job *job, const rd_jobfile *jf, const rd_input_stat *in, char hex[65], rd_status *st) {
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
  snprintf(seed, sizeof seed, "%lld", (long long)jf->seed);
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
