/* The spec hash of a job and what to do with its existing outputs (--resume, --force). */
#include "rmdiag/resume.h"

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
