/* Unit tests of the shared facilities: SHA-256, Philox streams, statistics, sorting, the id map,
 * JSON helpers (duplicate keys in O(n log n)), the row partition, the job file parser, the output
 * journal, side-file names and the recovery of what killed runs left. Expected values are published
 * test vectors or worked by hand. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rmdiag/common/comm.h"
#include "rmdiag/common/idmap.h"
#include "rmdiag/job.h"
#include "rmdiag/common/files.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/signals.h"
#include "rmdiag/common/view.h"
#include "rmdiag/resume.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kernels/scan.h"
#include "rmdiag/kernels/sha256.h"
#include "rmdiag/kernels/stats.h"

static void test_sha256(void) {
  char hex[65];
  rd_sha256_hex("", 0, hex);
  CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0, "sha256('') %s", hex);
  rd_sha256_hex("abc", 3, hex);
  CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0, "sha256(abc) %s", hex);
  const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  rd_sha256_hex(m, strlen(m), hex);
  CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0, "sha256(448 bits) %s", hex);
  rd_sha256 c;
  uint8_t d[32];
  rd_sha256_init(&c);
  char a[1000];
  memset(a, 'a', sizeof a);
  for (int i = 0; i < 1000; i++) rd_sha256_update(&c, a, sizeof a);
  rd_sha256_final(&c, d);
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
  CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "sha256(1e6 a) %s", hex);
}

static void test_philox(void) {
  /* Random123 known-answer vectors for philox4x32-10 */
  static const uint32_t cases[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
       0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
       0x24126ea1}};
  for (int i = 0; i < 3; i++) {
    uint32_t out[4];
    rd_philox4x32_10(cases[i], cases[i] + 4, out);
    CHECK(memcmp(out, cases[i] + 6, sizeof out) == 0, "philox KAT %d: %08x %08x %08x %08x", i, out[0], out[1], out[2],
          out[3]);
  }
  rd_stream s, s2, s3;
  rd_stream_init(&s, 42, "job", "purpose");
  rd_stream_init(&s2, 42, "job", "other");
  rd_stream_init(&s3, 43, "job", "purpose");
  CHECK(memcmp(&s, &s2, sizeof s) != 0 && memcmp(&s, &s3, sizeof s) != 0, "streams differ by purpose and seed");
  /* the batch generator gives exactly the per-draw values, odd counts included */
  for (uint64_t n = 1; n < 5000; n = n * 3 + 1) {
    for (int64_t count = 1; count < 300; count += 37) {
      uint32_t buf[302];
      rd_rng_below_fill(&s, 7 + n, n, count, buf);
      int same = 1;
      for (int64_t j = 0; j < count; j++) same &= buf[j] == rd_rng_below(&s, 7 + n, (uint64_t)j, n);
      CHECK(same, "rd_rng_below_fill(n=%llu, count=%lld) matches rd_rng_below", (unsigned long long)n, (long long)count);
    }
  }
  /* 32-bit products give the 128-bit high word exactly, across the range */
  for (uint64_t u = 1; u < UINT64_MAX / 3; u = u * 7 + 12345) {
    uint64_t n = (u % 4000000000u) + 1;
    CHECK(rd_below32(u, n) == (uint64_t)(((unsigned __int128)u * n) >> 64), "rd_below32(%llu, %llu)",
          (unsigned long long)u, (unsigned long long)n);
  }
  double sum = 0.0;
  int in_range = 1;
  for (uint64_t j = 0; j < 200000; j++) {
    double x = rd_rng_uniform(&s, 3, j);
    in_range &= x >= 0.0 && x < 1.0;
    sum += x;
  }
  CHECK(in_range, "uniforms in [0, 1)");
  CHECK(fabs(sum / 200000 - 0.5) < 0.005, "uniform mean %.5f near 0.5 (sd of the mean 0.00065)", sum / 200000);
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void test_stats(void) {
  double x[8] = {2, 4, 4, 4, 5, 5, 7, 9}, mean, sd;
  rd_mean_sd(x, 8, &mean, &sd);
  CHECK_CLOSE(mean, 5.0, 1e-15, "mean");
  CHECK_CLOSE(sd, sqrt(32.0 / 7.0), 1e-15, "sd ddof=1");
  rd_mean_sd(x, 1, &mean, &sd);
  CHECK(mean == 2.0 && isnan(sd), "sd undefined for n = 1");
  /* numpy linear: [1,2,3,4], q = .1 -> h = .3 -> 1.3; q = .5 -> 2.5; q = .9 -> h = 2.7 -> 3.7 */
  double w[4] = {4, 1, 3, 2}, q[3] = {0.1, 0.5, 0.9}, out[3];
  rd_quantiles_inplace(w, 4, q, 3, out);
  CHECK_CLOSE(out[0], 1.3, 1e-15, "q10");
  CHECK_CLOSE(out[1], 2.5, 1e-15, "median");
  CHECK_CLOSE(out[2], 3.7, 1e-15, "q90");
  double s[4] = {1, 2, 3, 4};
  rd_quantiles_sorted(s, 4, q, 3, out);
  CHECK_CLOSE(out[0], 1.3, 1e-15, "sorted q10");
  CHECK_CLOSE(out[2], 3.7, 1e-15, "sorted q90");
  double one = 7.0;
  CHECK(rd_quantile_inplace(&one, 1, 0.95) == 7.0, "quantile of one value");
  double lo, hi;
  rd_wilson(5, 10, &lo, &hi);
  CHECK_CLOSE(lo, 0.2365930905, 1e-9, "wilson(5,10) lo");
  CHECK_CLOSE(hi, 0.7634069095, 1e-9, "wilson(5,10) hi");
  rd_wilson(0, 10, &lo, &hi);
  CHECK(lo == 0.0, "wilson(0,10) lo = 0");
  CHECK_CLOSE(hi, 3.8414588206941254 / 13.841458820694125, 1e-12, "wilson(0,10) hi = z^2/(n+z^2)");
  rd_wilson(10, 10, &lo, &hi);
  CHECK(hi == 1.0 && lo > 0.72 && lo < 0.73, "wilson(10,10) = [%.6f, %.6f]", lo, hi);
  CHECK(rd_wilson(0, 0, &lo, &hi) == 0 && isnan(lo), "wilson undefined for n = 0");
  double reps[6] = {NAN, 1, 2, 3, 4, INFINITY};
  size_t dropped = rd_percentile_ci95(reps, 6, &lo, &hi);
  CHECK(dropped == 2, "two undefined replicates dropped (got %zu)", dropped);
  CHECK_CLOSE(lo, 1.075, 1e-14, "ci lo = quantile .025 of 1..4");
  CHECK_CLOSE(hi, 3.925, 1e-14, "ci hi = quantile .975 of 1..4");
  /* the radix sort agrees with qsort on negatives, zeros, duplicates, huge and tiny values */
  size_t n = 20000;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  rd_stream st;
  rd_stream_init(&st, 1, "t", "sort");
  for (size_t i = 0; i < n; i++) {
    double u = rd_rng_uniform(&st, 0, i);
    a[i] = (i % 7 == 0) ? 0.0 : (i % 11 == 0) ? -3.5 : (u - 0.5) * pow(10.0, (double)(i % 40) - 20.0);
    if (i % 13 == 0) a[i] = 1e308;
    if (i % 17 == 0) a[i] = -4.9e-324;
    b[i] = a[i];
  }
  rd_sort_doubles(a, n);
  qsort(b, n, sizeof *b, cmpd);
  int same = 1;
  for (size_t i = 0; i < n; i++) same &= a[i] == b[i];
  CHECK(same, "radix sort matches qsort");
  free(a);
  free(b);
  double sumx[3] = {1e16, 1.0, -1e16};
  CHECK(rd_sum(sumx, 3) == 0.0, "rd_sum is plain left-to-right within a block");
}

static void test_idmap_scan_json(void) {
  rd_idmap m;
  rd_idmap_init(&m, 4);
  int is_new = 0;
  char key[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(key, sizeof key, "user-%d", i % 1000);
    int64_t id = rd_idmap_get(&m, key, strlen(key), &is_new);
    if (id != i % 1000 || is_new != (i < 1000)) {
      CHECK(0, "idmap id %lld for %s (new %d)", (long long)id, key, is_new);
      break;
    }
  }
  CHECK(m.n == 1000, "idmap counts distinct keys");
  CHECK(rd_idmap_find(&m, "user-7", 6) == 7 && rd_idmap_find(&m, "nope", 4) == -1, "idmap find");
  rd_idmap_free(&m);
  float f[9000];
  for (int i = 0; i < 9000; i++) f[i] = (float)i;
  CHECK(rd_first_nonfinite_f32(f, 9000) == -1, "no non-finite");
  f[8191] = NAN;
  f[8500] = INFINITY;
  CHECK(rd_first_nonfinite_f32(f, 9000) == 8191, "first non-finite found");
  double dd[3] = {1, -INFINITY, NAN};
  CHECK(rd_first_nonfinite_f64(dd, 3) == 1, "double -inf found");
  cJSON *o = cJSON_Parse("{\"b\": 1, \"a\": {\"d\": [1, {\"z\": 2, \"y\": 3}], \"c\": null}}");
  char *canon = rd_json_canonical(o);
  CHECK(strcmp(canon, "{\"a\":{\"c\":null,\"d\":[1,{\"y\":3,\"z\":2}]},\"b\":1}") == 0, "canonical JSON %s", canon);
  free(canon);
  cJSON_Delete(o);
  cJSON *nan = rd_json_num(NAN);
  CHECK(cJSON_IsNull(nan), "NaN becomes null");
  cJSON_Delete(nan);
  /* a null filled in place keeps its key and place; an undefined end leaves it null */
  cJSON *t = cJSON_CreateObject(), *slot = cJSON_CreateNull(), *undef = cJSON_CreateNull();
  cJSON_AddItemToObject(t, "a", slot);
  cJSON_AddItemToObject(t, "b", undef);
  cJSON_AddNumberToObject(t, "c", 1);
  CHECK(rd_json_fill_pair(slot, 0.25, 0.5) == 0 && rd_json_fill_pair(undef, 0.25, NAN) == 0, "pairs filled");
  CHECK(rd_json_fill_pair(cJSON_GetObjectItem(t, "c"), 0, 1) == -1, "only a null is filled");
  char *txt = cJSON_PrintUnformatted(t);
  CHECK(strcmp(txt, "{\"a\":[0.25,0.5],\"b\":null,\"c\":1}") == 0, "filled pair in place: %s", txt);
  free(txt);
  cJSON *same = cJSON_CreateObject();
  cJSON_AddItemToObject(same, "a", rd_json_pair(0.25, 0.5));
  cJSON_AddItemToObject(same, "b", rd_json_pair(0.25, NAN));
  cJSON_AddNumberToObject(same, "c", 1);
  CHECK(cJSON_Compare(t, same, 1), "a filled null equals rd_json_pair's tree");
  cJSON_Delete(same);
  cJSON_Delete(t);
}

static void test_partition(void) {
  for (int size = 1; size <= 8; size++) {
    for (int64_t n = 0; n < 50; n += 7) {
      int64_t next = 0;
      int ok = 1;
      for (int r = 0; r < size; r++) {
        int64_t lo, hi;
        rd_rank_rows(n, 4, size, r, &lo, &hi);
        ok &= lo == next && hi >= lo && (lo % 4 == 0 || lo == n);
        next = hi;
      }
      CHECK(ok && next == n, "rows of %lld over %d ranks: contiguous whole blocks", (long long)n, size);
    }
  }
}

static int parse_text(const char *text, rd_status *st) {
  rd_jobfile jf;
  rd_status_init(st);
  int rc = rd_jobfile_parse("/tmp/x/job.json", text, strlen(text), &jf, st);
  rd_jobfile_free(&jf);
  return rc;
}

/* ---- the output-replacement journal: what a signal handler's rollback restores ---- */
static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) fputs(text, f), fclose(f);
}

static int has(const char *path, const char *text) {
  char buf[64] = "";
  FILE *f = fopen(path, "r");
  if (!f) return text == NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return text && strcmp(buf, text) == 0;
}

static void test_commit_rollback(void) {
  char dir[] = "/tmp/rmdiag-commit-XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(0, "mkdtemp");
    return;
  }
  char j[128], h[128], t[128], st[128], old[128];
  snprintf(j, sizeof j, "%s/x.json", dir);
  snprintf(h, sizeof h, "%s/x.h5", dir);
  snprintf(t, sizeof t, "%s/.x.h5.tmp", dir);
  snprintf(st, sizeof st, "%s/.x.json.stale", dir);
  snprintf(old, sizeof old, "%s/.x.h5.old", dir);
  /* 1: the report moved aside, the new .h5 renamed in (its temporary gone), no new report yet: both
   * old files come back (also the moment between the rename and anything recorded after it) */
  put(st, "old report"), put(old, "old h5"), put(h, "new h5");
  rd_commit_begin(j, h, t, st, old, 1);
  rd_tmp_cleanup();
  CHECK(has(j, "old report") && has(h, "old h5") && has(st, NULL) && has(old, NULL),
        "rollback after the .h5 was replaced restores the old pair");
  /* 2: the report moved aside, the new .h5 still under its temporary name: the report comes back,
   * the second link goes (the temporary is an ordinary registered temporary, not the journal's) */
  rename(j, st);
  link(h, old);
  put(t, "new h5");
  rd_commit_begin(j, h, t, st, old, 1);
  rd_tmp_cleanup();
  CHECK(has(j, "old report") && has(h, "old h5") && has(st, NULL) && has(old, NULL) && has(t, "new h5"),
        "rollback before the .h5 was replaced restores the report and drops the second link");
  unlink(t);
  /* 3: not even the report moved yet: nothing changes but the second link */
  link(h, old);
  put(t, "new h5");
  rd_commit_begin(j, h, t, st, old, 1);
  rd_tmp_cleanup();
  CHECK(has(j, "old report") && has(h, "old h5") && has(old, NULL), "rollback before anything moved changes nothing");
  unlink(t);
  /* 4: no second link could be made and the .h5 was replaced: the old .h5 is gone, so no report may
   * claim it; neither file stands */
  rename(j, st);
  put(h, "new h5");
  rd_commit_begin(j, h, t, st, NULL, 1);
  rd_tmp_cleanup();
  CHECK(has(j, NULL) && has(h, NULL) && has(st, NULL), "without a second link nothing inconsistent stands");
  /* 5: the new report is in place (a signal between its rename and rd_commit_end): complete, only the
   * old files go */
  put(st, "old report"), put(old, "old h5"), put(h, "new h5"), put(j, "new report");
  rd_commit_begin(j, h, t, st, old, 1);
  rd_tmp_cleanup();
  CHECK(has(j, "new report") && has(h, "new h5") && has(st, NULL) && has(old, NULL),
        "a signal after the new report landed keeps the new pair");
  /* 6: a fresh folder (no old files), the new .h5 in, no report yet: the .h5 goes */
  unlink(j);
  rd_commit_begin(j, h, t, NULL, NULL, 0);
  rd_tmp_cleanup();
  CHECK(has(j, NULL) && has(h, NULL), "a new .h5 without its report does not stand");
  /* 8: a rollback interrupted half-way (the old .h5 back, the report not yet) is finished by the next
   * one: the journal stays active until the last step and every step can be repeated */
  put(st, "old report"), put(h, "old h5");
  unlink(j);
  rd_commit_begin(j, h, t, st, old, 1);  /* old (the second link) already renamed back over the .h5 */
  rd_tmp_cleanup();
  CHECK(has(j, "old report") && has(h, "old h5") && has(st, NULL) && has(old, NULL),
        "an interrupted rollback is completed by the next");
  /* 7: after rd_commit_end a cleanup changes nothing */
  put(j, "new report"), put(h, "new h5");
  rd_commit_begin(j, h, t, NULL, NULL, 0);
  rd_commit_end();
  rd_tmp_cleanup();
  CHECK(has(j, "new report") && has(h, "new h5"), "a finished replacement is left alone");
  unlink(j), unlink(h), rmdir(dir);
}

static void test_jobfile(void) {
  rd_status st;
  CHECK(parse_text("{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x.h5\"}]}", &st) ==
            0, "minimal job file parses: %s", st.msg);
  struct {
    const char *text, *needle;
  } bad[] = {
      {"{\"output_dir\": \"o\", \"jobs\": []}", "non-empty"},
      {"{\"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\"}]}", "missing required key \"output_dir\""},
      {"{\"output_dir\": \"o\", \"seed\": 1.5, \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\"}]}",
       "\"seed\" must be an integer"},
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a b\", \"kind\": \"cm\", \"input\": \"x\"}]}", "\"name\" must be"},
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\"}, "
       "{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"y\"}]}", "already used by jobs[0]"},
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"kind\": \"nope\", \"input\": \"x\"}]}", "\"kind\" must be one of"},
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\", \"bootstrapp\": 5}]}",
       "jobs[0] (\"a\"): unknown key \"bootstrapp\""},
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\", \"bootstrap\": -1}]}",
       "out of range"},
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\", \"bootstrap\": \"10\"}]}",
       "must be an integer, got a string"},
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\", "
       "\"strata\": [{\"covariate\": \"c\"}]}]}", "exactly one of"},
      {"{\"output_dir\": \"o\", \"output_dir\": \"p\", \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\"}]}",
       "appears twice"},
      {"{\"output_dir\": \"o\",\n \"jobs\": [}", "malformed JSON at line 2"},
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\"}]} trailing",
       "unexpected text after the end"},
      /* an escaped NUL would cut the key to "bootstrap" (and a name or path short) */
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"kind\": \"cm\", \"input\": \"x\",\n"
       "\"bootstrap\\u0000zzz\": 5}]}", "line 2, column 11: a \\u0000 escape (NUL)"},
      {"{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"b\\u0000/../x\", \"kind\": \"cm\", \"input\": \"x\"}]}",
       "a \\u0000 escape (NUL)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = parse_text(bad[i].text, &st);
    CHECK(rc == RD_EINPUT && strstr(st.msg, bad[i].needle) && strstr(st.msg, "/tmp/x/job.json"),
          "bad job file %zu: code %d, message \"%s\" should name the file and contain \"%s\"", i, rc, st.msg,
          bad[i].needle);
  }
}

/* ---- duplicate keys and names: the first repeat in document order, in O(n log n) ---- */
/* CPU seconds of this thread: the machines running the suite are shared, wall time is not a measure */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *many_keys(int n, const char *last_key) {
  char *t = malloc((size_t)n * 24 + 64);
  if (!t) return NULL;
  size_t k = 0;
  t[k++] = '{';
  for (int i = 0; i < n; i++) k += (size_t)sprintf(t + k, "%s\"k%d\": %d", i ? ", " : "", (i * 7919) % n, i);
  if (last_key) k += (size_t)sprintf(t + k, ", \"%s\": 0", last_key);
  strcpy(t + k, "}");
  return t;
}

static void test_duplicates(void) {
  rd_status st;
  struct {
    const char *text, *key;
  } cases[] = {
      /* depth first: d's object comes before the second b */
      {"{\"b\": 1, \"c\": {\"d\": 1, \"d\": 2}, \"b\": 2}", "d"},
      {"{\"b\": 1, \"b\": 2, \"c\": {\"d\": 1, \"d\": 2}}", "b"},
      {"{\"a\": [{\"x\": 1}, {\"y\": 1, \"z\": 0, \"y\": 2}], \"q\": {\"q\": 1}}", "y"},
      {"{\"a\": {\"x\": 1, \"x\": 2}, \"a\": 3}", "x"},
      {"[{\"a\": 1}, {\"a\": 1}]", NULL},  /* equal keys in different objects are fine */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cJSON *v = cJSON_Parse(cases[i].text);
    rd_status_init(&st);
    int rc = rd_json_no_duplicate_keys(v, "F: line 3", &st);
    char want[256];
    snprintf(want, sizeof want, "F: line 3: key \"%s\" appears twice in one object (JSON readers disagree on which "
             "value counts)", cases[i].key ? cases[i].key : "");
    CHECK(cases[i].key ? rc == RD_EINPUT && strcmp(st.msg, want) == 0 : rc == RD_OK, "duplicate case %zu: %d \"%s\"", i,
          rc, st.msg);
    cJSON_Delete(v);
  }
  /* 200,000 keys: well under a second (the pairwise check took hours at this size) */
  const int n = 200000;
  char *text = many_keys(n, NULL), *text2 = many_keys(n, "k123");
  cJSON *v = text ? cJSON_Parse(text) : NULL, *v2 = text2 ? cJSON_Parse(text2) : NULL;
  CHECK(v && v2 && cJSON_GetArraySize(v) == n, "200,000 keys parse");
  double t0 = cpu_now();
  rd_status_init(&st);
  int rc = rd_json_no_duplicate_keys(v, "big", &st);
  double t1 = cpu_now();
  rd_status_init(&st);
  int rc2 = rd_json_no_duplicate_keys(v2, "big", &st);
  double t2 = cpu_now();
  CHECK(rc == RD_OK, "200,000 distinct keys: no duplicate (%s)", st.msg);
  CHECK(rc2 == RD_EINPUT && strstr(st.msg, "big: key \"k123\" appears twice in one object"),
        "the repeat at the end: %s", st.msg);
  CHECK(t1 - t0 < 0.5 && t2 - t1 < 0.5, "200,000 keys checked in %.3f s and %.3f s of CPU (expected well under a "
        "second)", t1 - t0, t2 - t1);
  printf("duplicate keys: 200,000 keys checked in %.3f s (no repeat) and %.3f s (a repeat at the end) of CPU\n",
         t1 - t0, t2 - t1);
  cJSON_Delete(v), cJSON_Delete(v2), free(text), free(text2);
  /* the lists: the first position that repeats an earlier value, and that earlier value's first position */
  const char *strs[] = {"a", "b", NULL, "c", NULL, "b", "a"};
  int64_t first = -7;
  CHECK(rd_first_duplicate(strs, 7, &first) == 5 && first == 1, "first repeated string at 5 (of 1), got first %lld",
        (long long)first);
  CHECK(rd_first_duplicate(strs, 5, &first) == -1, "no repeat among a, b, NULL, c, NULL");
  /* the index of the same strings: the first position of each, -1 for one not there (NULL left out) */
  rd_str_index six;
  CHECK(rd_str_index_make(&six, strs, 7) == 0 && six.n == 5, "index of 7 strings, 2 of them NULL: 5 entries");
  CHECK(rd_str_index_find(&six, "a") == 0 && rd_str_index_find(&six, "b") == 1 && rd_str_index_find(&six, "c") == 3,
        "a at 0, b at 1 (not 5), c at 3");
  CHECK(rd_str_index_find(&six, "d") == -1 && rd_str_index_find(&six, "") == -1, "d and the empty string: -1");
  rd_str_index_free(&six);
  const int64_t vals[] = {5, 3, 9, 3, 5, 5};
  CHECK(rd_first_duplicate_i64(vals, 6, &first) == 3 && first == 1, "first repeated integer at 3 (of 1)");
  CHECK(rd_first_duplicate_i64(vals, 3, &first) == -1, "no repeat among 5, 3, 9");
  /* a job file with 50,000 jobs whose last name repeats an earlier one; the CPU bound tells a sort from
   * a pairwise scan (about 18 s here), with room for sanitizer builds (about 4x slower) */
#if defined(__SANITIZE_ADDRESS__)
  const double cpu_limit = 20.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  const double cpu_limit = 20.0;
#else
  const double cpu_limit = 5.0;
#endif
#else
  const double cpu_limit = 5.0;
#endif
  const int nj = 50000;
  char *jt = malloc((size_t)nj * 64 + 64);
  size_t k = (size_t)sprintf(jt, "{\"output_dir\": \"o\", \"jobs\": [");
  for (int i = 0; i < nj; i++)
    k += (size_t)sprintf(jt + k, "%s{\"name\": \"j%d\", \"kind\": \"cm\", \"input\": \"x\"}", i ? ", " : "",
                         i == nj - 1 ? 777 : i);
  strcpy(jt + k, "]}");
  t0 = cpu_now();
  rc = parse_text(jt, &st);
  t1 = cpu_now();
  CHECK(rc == RD_EINPUT && strstr(st.msg, "jobs[49999] (\"j777\"): name \"j777\" is already used by jobs[777]"),
        "50,000 jobs, the last name repeated: %s", st.msg);
  CHECK(t1 - t0 < cpu_limit, "50,000 jobs parsed in %.3f s of CPU", t1 - t0);
  printf("job names: 50,000 jobs parsed in %.3f s of CPU\n", t1 - t0);
  /* the kinds' lists: 50,000 cm strata, benchmark sections and subsets, the last one repeated */
  const char *lists[3][2] = {
      {"\"kind\": \"cm\", \"strata\": [", "covariate \"c777\" is already stratified by strata[777]"},
      {"\"kind\": \"benchmark\", \"scheme\": {\"sections\": {", "section \"c777\" appears twice"},
      {"\"kind\": \"benchmark\", \"scheme\": {\"sections\": {\"s\": {", "section \"s\" names subset \"c777\" twice"}};
  for (int l = 0; l < 3; l++) {
    k = (size_t)sprintf(jt, "{\"output_dir\": \"o\", \"jobs\": [{\"name\": \"a\", \"input\": \"x\", %s", lists[l][0]);
    for (int i = 0; i < nj; i++) {
      int c = i == nj - 1 ? 777 : i;
      if (l == 0) k += (size_t)sprintf(jt + k, "%s{\"covariate\": \"c%d\", \"bins\": 2}", i ? ", " : "", c);
      else if (l == 1) k += (size_t)sprintf(jt + k, "%s\"c%d\": {\"x\": 1}", i ? ", " : "", c);
      else k += (size_t)sprintf(jt + k, "%s\"c%d\": 1", i ? ", " : "", c);
    }
    strcpy(jt + k, l == 0 ? "]}]}" : l == 1 ? "}}}]}" : "}}}}]}");
    t0 = cpu_now();
    rc = parse_text(jt, &st);
    t1 = cpu_now();
    CHECK(rc == RD_EINPUT && strstr(st.msg, lists[l][1]), "list %d of 50,000, the last repeated: %s", l, st.msg);
    CHECK(t1 - t0 < cpu_limit, "list %d of 50,000 parsed in %.3f s of CPU", l, t1 - t0);
  }
  free(jt);
}

/* ---- side-file names and what killed runs left behind ---- */
static void test_side_names(void) {
  rd_side_name s;
  CHECK(rd_side_parse(".a.b.h5.tmp.node-1.4242.987654", &s) && strcmp(s.base, "a.b.h5") == 0 &&
            strcmp(s.tag, "tmp") == 0 && strcmp(s.host, "node-1") == 0 && s.pid == 4242 && s.start == 987654 &&
            !s.legacy, "a side file's name parses back: base %s tag %s host %s", s.base, s.tag, s.host);
  CHECK(rd_side_parse(".x.json.stale.777", &s) && s.legacy && s.pid == 777 && strcmp(s.base, "x.json") == 0 &&
            strcmp(s.tag, "stale") == 0, "the older name .NAME.TAG.PID parses as legacy");
  CHECK(!rd_side_parse("x.h5", &s) && !rd_side_parse(".rmdiag.lock", &s) && !rd_side_parse(".x.h5.new.1.2", &s) &&
            !rd_side_parse(".tmp.1", &s), "other names are not side files");
  char *p = rd_tmp_path("/d/out/r.h5");
  CHECK(p && rd_side_parse(strrchr(p, '/') + 1, &s) && strcmp(s.base, "r.h5") == 0 && s.pid == (long)getpid() &&
            strcmp(s.host, rd_owner_host()) == 0, "this process's temporary names itself: %s", p ? p : "");
  CHECK(rd_side_owner_alive(&s) == 1, "this process is alive");
  s.start += 1;
  CHECK(rd_side_owner_alive(&s) == 0 || s.start == 1, "the same pid with another start time is another process");
  free(p);
  snprintf(s.host, sizeof s.host, "elsewhere");
  CHECK(rd_side_owner_alive(&s) == -1, "another host cannot be judged from here");
}

static void test_recover(void) {
  char dir[] = "/tmp/rmdiag-recover-XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(0, "mkdtemp");
    return;
  }
  char path[4096], me[256], dead[256], other[] = "elsewhere.12.34";
  rd_side_name s;
  char *p = rd_tmp_path("/x/y");
  rd_side_parse(strrchr(p, '/') + 1, &s);
  free(p);
  snprintf(me, sizeof me, "%s.%ld.%llu", s.host, s.pid, s.start);
  snprintf(dead, sizeof dead, "%s.%ld.%llu", s.host, s.pid, s.start + 1);  /* our pid, reused: its owner is gone */
#define AT(...) (snprintf(path, sizeof path, __VA_ARGS__), path)
  /* a: killed while computing: only its temporary */
  put(AT("%s/a.json", dir), "old report a"), put(AT("%s/a.h5", dir), "old h5 a");
  put(AT("%s/.a.h5.tmp.%s", dir, dead), "partial");
  /* b: killed after the new .h5 was renamed in, before its report: the old pair comes back */
  put(AT("%s/.b.json.stale.%s", dir, dead), "old report b"), put(AT("%s/.b.h5.old.%s", dir, dead), "old h5 b");
  put(AT("%s/b.h5", dir), "new h5 b"), put(AT("%s/.b.json.tmp.%s", dir, dead), "new report b, partial");
  /* c: killed after the report moved aside, the new .h5 still a temporary */
  put(AT("%s/.c.json.stale.%s", dir, dead), "old report c"), put(AT("%s/c.h5", dir), "old h5 c");
  put(AT("%s/.c.h5.old.%s", dir, dead), "old h5 c"), put(AT("%s/.c.h5.tmp.%s", dir, dead), "new h5 c");
  /* d: killed after the new report landed: complete, the old files go */
  put(AT("%s/d.json", dir), "new report d"), put(AT("%s/d.h5", dir), "new h5 d");
  put(AT("%s/.d.json.stale.%s", dir, dead), "old report d"), put(AT("%s/.d.h5.old.%s", dir, dead), "old h5 d");
  /* e: the report moved aside and the .h5 replaced without a second link: nothing may claim the old
   * .h5, so the old report goes too */
  put(AT("%s/.e.json.stale.%s", dir, dead), "old report e"), put(AT("%s/e.h5", dir), "new h5 e");
  /* f: a live process's temporary (this one) stays; another host's stays unless the lock is held */
  put(AT("%s/.f.h5.tmp.%s", dir, me), "live"), put(AT("%s/.g.h5.tmp.%s", dir, other), "other host");
  put(AT("%s/.g.json.tmp.77", dir), "legacy"), put(AT("%s/.zz.h5.tmp.%s", dir, other), "not a job of this file");
  const char *names[] = {"a", "b", "c", "d", "e", "f", "g"};
  rd_outputs_recover(dir, names, 7, 0, NULL);
  CHECK(has(AT("%s/a.json", dir), "old report a") && has(AT("%s/a.h5", dir), "old h5 a") &&
            has(AT("%s/.a.h5.tmp.%s", dir, dead), NULL), "a: the temporary of a dead run goes, the outputs stay");
  CHECK(has(AT("%s/b.json", dir), "old report b") && has(AT("%s/b.h5", dir), "old h5 b") &&
            has(AT("%s/.b.json.tmp.%s", dir, dead), NULL) && has(AT("%s/.b.h5.old.%s", dir, dead), NULL),
        "b: the old pair comes back over a new .h5 without its report");
  CHECK(has(AT("%s/c.json", dir), "old report c") && has(AT("%s/c.h5", dir), "old h5 c") &&
            has(AT("%s/.c.h5.tmp.%s", dir, dead), NULL) && has(AT("%s/.c.h5.old.%s", dir, dead), NULL),
        "c: the old report comes back beside its .h5");
  CHECK(has(AT("%s/d.json", dir), "new report d") && has(AT("%s/d.h5", dir), "new h5 d") &&
            has(AT("%s/.d.json.stale.%s", dir, dead), NULL) && has(AT("%s/.d.h5.old.%s", dir, dead), NULL),
        "d: a complete replacement keeps the new pair");
  CHECK(has(AT("%s/e.json", dir), NULL) && has(AT("%s/.e.json.stale.%s", dir, dead), NULL),
        "e: no report claims a .h5 that was replaced");
  CHECK(has(AT("%s/.f.h5.tmp.%s", dir, me), "live") && has(AT("%s/.g.h5.tmp.%s", dir, other), "other host") &&
            has(AT("%s/.g.json.tmp.77", dir), "legacy"), "without the lock: live and other-host temporaries stay");
  rd_outputs_recover(dir, names, 7, 1, NULL);
  CHECK(has(AT("%s/.f.h5.tmp.%s", dir, me), "live") && has(AT("%s/.g.h5.tmp.%s", dir, other), NULL) &&
            has(AT("%s/.g.json.tmp.77", dir), NULL) &&
            has(AT("%s/.zz.h5.tmp.%s", dir, other), "not a job of this file"),
        "with the lock: other hosts' (and legacy) temporaries of this file's jobs go; a live one and others stay");
  unlink(AT("%s/.f.h5.tmp.%s", dir, me)), unlink(AT("%s/.zz.h5.tmp.%s", dir, other));
  const char *left[] = {"a.json", "a.h5", "b.json", "b.h5", "c.json", "c.h5", "d.json", "d.h5", "e.h5"};
  for (size_t i = 0; i < sizeof left / sizeof left[0]; i++) unlink(AT("%s/%s", dir, left[i]));
  CHECK(rmdir(dir) == 0, "nothing else is left in the folder");
#undef AT
}

/* ---- (key, index) pairs: the radix sort against qsort's (key, index) order ---- */
static int cmp_pair(const void *a, const void *b) {
  const rd_key_idx *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

static void test_sort_key_idx(void) {
  uint64_t x = 88172645463325252ull;
  const int64_t sizes[] = {0, 1, 5, RD_SORT_SMALL - 1, RD_SORT_SMALL, 1000, 70001};
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
    for (int spread = 0; spread < 3; spread++) {
      int64_t n = sizes[t];
      rd_key_idx *a = malloc(sizeof(rd_key_idx) * (size_t)(n + 1)), *b = malloc(sizeof(rd_key_idx) * (size_t)(n + 1));
      for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* few distinct keys (many ties), keys packed as the leakage tables make them, keys of either sign */
        int64_t key = spread == 0 ? (int64_t)(x % 7) : spread == 1 ? (int64_t)((x % 54) << 24 | (x >> 20) % 480)
                                                                   : (int64_t)x;
        a[i] = b[i] = (rd_key_idx){key, i};
      }
      rd_sort_key_idx(a, (size_t)n);
      qsort(b, (size_t)n, sizeof *b, cmp_pair);
      CHECK(n == 0 || memcmp(a, b, sizeof(rd_key_idx) * (size_t)n) == 0,
            "rd_sort_key_idx: %lld pairs (keys %d) in qsort's order", (long long)n, spread);
      /* indices not in increasing order: the same order (the qsort fallback) */
      for (int64_t i = 0; i < n; i++) a[i] = b[n - 1 - i];
      rd_sort_key_idx(a, (size_t)n);
      CHECK(n == 0 || memcmp(a, b, sizeof(rd_key_idx) * (size_t)n) == 0, "rd_sort_key_idx: %lld pairs given reversed",
            (long long)n);
      free(a);
      free(b);
    }
  }
}

static int cmp_u64_t(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* rd_sort_u64 (the cm planner's distinct users) against qsort: below and above the radix threshold,
 * many ties, keys using the top bit, and keys equal in the low 11-bit digits (skipped passes). */
static void test_sort_u64(void) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  const int64_t sizes[] = {0, 1, 7, RD_SORT_SMALL - 1, RD_SORT_SMALL, 4097, 65536};
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++)
    for (int spread = 0; spread < 3; spread++) {
      int64_t n = sizes[t];
      uint64_t *a = malloc(sizeof(uint64_t) * (size_t)(n + 1)), *b = malloc(sizeof(uint64_t) * (size_t)(n + 1));
      for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        a[i] = b[i] = spread == 0 ? x % 40000 : spread == 1 ? x : (x % 5) << 44;
      }
      rd_sort_u64(a, (size_t)n);
      qsort(b, (size_t)n, sizeof *b, cmp_u64_t);
      CHECK(n == 0 || memcmp(a, b, sizeof(uint64_t) * (size_t)n) == 0, "rd_sort_u64: %lld keys (spread %d) in qsort's order",
            (long long)n, spread);
      free(a);
      free(b);
    }
}

/* ---- tasks over ranks: rank 0 keeps its own results, the others' arrive packed ---- */
static int square_task(int64_t k, void *arg, double **out, int64_t *n, rd_status *st) {
  (void)arg;
  (void)st;
  *n = k % 4;  /* task 0, 4, 8...: an empty result */
  *out = *n ? malloc(sizeof(double) * (size_t)*n) : NULL;
  for (int64_t i = 0; i < *n; i++) (*out)[i] = (double)(k * k) + (double)i;
  return RD_OK;
}

static void test_run_tasks(void) {
  rd_ctx ctx;
  if (rd_ctx_init(&ctx, MPI_COMM_WORLD, NULL, NULL) != RD_OK) {
    CHECK(0, "rd_ctx_init");
    return;
  }
  const int64_t T = 23;
  double cost[23];
  for (int64_t k = 0; k < T; k++) cost[k] = (double)(k % 5 + 1);
  double **res = NULL;
  int64_t *len = NULL;
  rd_status st;
  rd_status_init(&st);
  int rc = rd_run_tasks(&ctx, T, cost, square_task, NULL, &res, &len, &st);
  CHECK(rc == RD_OK, "rd_run_tasks: %d tasks ran on %d ranks", (int)T, ctx.size);
  int rank = ctx.rank;
  rd_ctx_free(&ctx);
  if (rank != 0) {
    CHECK(res == NULL && len == NULL, "rd_run_tasks: results on rank 0 only");
    return;
  }
  int ok = res && len;
  for (int64_t k = 0; ok && k < T; k++) {
    ok &= len[k] == k % 4 && res[k] != NULL;
    for (int64_t i = 0; ok && i < len[k]; i++) ok &= res[k][i] == (double)(k * k) + (double)i;
  }
  CHECK(ok, "rd_run_tasks: every task's result, empty ones included, in place on rank 0");
  rd_free_task_results(res, len, T);
}

/* rd_handout: every index once over the ranks, whoever asks; rank 0 starts late (as the benchmark's
 * rank 0 does with its report), so the others take the first ones. */
static void test_handout(void) {
  rd_ctx ctx;
  if (rd_ctx_init(&ctx, MPI_COMM_WORLD, NULL, NULL) != RD_OK) {
    CHECK(0, "rd_ctx_init");
    return;
  }
  const int64_t n = 101;
  int64_t got[101], k, m = 0;
  rd_handout h;
  rd_handout_open(&ctx, n, &h);
  if (ctx.rank == 0 && ctx.size > 1) usleep(50000);
  while ((k = rd_handout_next(&ctx, &h)) >= 0) {
    if (m < n) got[m] = k;
    m++;
    usleep(200);
  }
  CHECK(rd_handout_next(&ctx, &h) == -1, "rd_handout: stays ended for a rank that saw the end");
  rd_handout_close(&ctx, &h);
  int mine = (int)m, *cnt = calloc((size_t)ctx.size, sizeof(int)), *dsp = calloc((size_t)ctx.size, sizeof(int));
  int64_t *all = calloc((size_t)n + 64, sizeof(int64_t));
  MPI_Allgather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < ctx.size; r++) dsp[r] = total, total += cnt[r];
  CHECK(total == n, "rd_handout: %d indices handed out over %d ranks (expected %d)", total, ctx.size, (int)n);
  if (total == n) {
    MPI_Allgatherv(got, mine, MPI_INT64_T, all, cnt, dsp, MPI_INT64_T, MPI_COMM_WORLD);
    int seen[101] = {0}, ok = 1;
    for (int i = 0; i < total; i++) ok &= all[i] >= 0 && all[i] < n && !seen[all[i]]++;
    for (int r = 0; r < ctx.size; r++)
      for (int i = 1; i < cnt[r]; i++) ok &= all[dsp[r] + i] > all[dsp[r] + i - 1];
    CHECK(ok, "rd_handout: each index once, increasing on each rank");
    if (ctx.size > 1) CHECK(cnt[0] < n / ctx.size, "rd_handout: rank 0 started late and took fewer (%d of %d)", cnt[0], (int)n);
  }
  free(cnt);
  free(dsp);
  free(all);
  rd_ctx_free(&ctx);
}

/* rd_format_fixed against printf, byte for byte: random magnitudes and digits, exact ties (0.125 to
 * 2 digits), values one ulp either side of a decimal tie, signs, zeros and the fallbacks. */
static void test_format_fixed(void) {
  char a[96], b[96];
  int bad = 0, shown = 0;
  uint64_t x = 0x9E3779B97F4A7C15u;
  double special[] = {0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.125, 0.375, -0.125, 1e-300, -1e-7, 0.99995, 0.00005,
                      1099511627775.4, 1e15, 1e300, INFINITY, -INFINITY, NAN, 0.1, 0.7, 123456.78915, 9.9999999999};
  for (int i = 0; i < 2000000 + (int)(sizeof special / sizeof *special); i++) {
    double v;
    int d;
    if (i < (int)(sizeof special / sizeof *special)) {
      v = special[i];
      d = i % 10;
    } else {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      d = (int)(x % 10);
      double u = (double)(x >> 11) / 9007199254740992.0;
      switch ((x >> 4) % 4) {
        case 0: v = u; break;                                      /* [0, 1): scores */
        case 1: v = (u - 0.5) * pow(10.0, (double)((x >> 8) % 14) - 4); break;
        case 2: {                                                  /* near a decimal tie at d digits */
          double t = (floor(u * 1000.0) + 0.5) / pow(10.0, d);
          v = nextafter(t, (x >> 20) & 1 ? INFINITY : -INFINITY);
          if ((x >> 21) & 1) v = t;
          break;
        }
        default: v = floor(u * 4096.0) / 64.0; break;             /* exact binary fractions */
      }
      if ((x >> 30) & 1) v = -v;
    }
    int la = rd_format_fixed(a, sizeof a, v, d), lb = snprintf(b, sizeof b, "%.*f", d, v);
    if (la != lb || strcmp(a, b) != 0) {
      if (shown++ < 5) fprintf(stderr, "  %.17g to %d digits: %s, printf %s\n", v, d, a, b);
      bad++;
    }
  }
  CHECK(bad == 0, "rd_format_fixed equals printf's %%.*f on 2,000,000 values (%d differ)", bad);
  char small[4];
  int len = rd_format_fixed(small, sizeof small, 12.345, 2);
  CHECK(len == 5 && strcmp(small, "12.") == 0, "rd_format_fixed truncates as snprintf (%d, %s)", len, small);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc > 1 && strcmp(argv[1], "tasks") == 0) {  /* the part that runs on several ranks */
    test_run_tasks();
    test_handout();
    int rc = t_finish("test_core tasks");
    MPI_Finalize();
    return rc;
  }
  test_sha256();
  test_philox();
  test_stats();
  test_idmap_scan_json();
  test_partition();
  test_jobfile();
  test_commit_rollback();
  test_duplicates();
  test_side_names();
  test_recover();
  test_sort_key_idx();
  test_sort_u64();
  test_run_tasks();
  test_handout();
  test_format_fixed();
  int rc = t_finish("test_core");
  MPI_Finalize();
  return rc;
}
