/* What a signal must undo: temporary files, folders a failed run created, and an output
 * replacement in progress; all of it async-signal-safe. */
#include "rmdiag/common/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
static size_t made_len;

void rd_made_dir_forget(void) { made_n = 0; }

void rd_made_dir_begin(const char *dir) {
  made_n = 0;
  size_t n = strlen(dir);
  made_len = n;
  if (n < TMP_LEN) memcpy(made_path, dir, n + 1);
}

void rd_made_dir_note(size_t end) {
  if (made_len < TMP_LEN && made_n < MADE_MAX) {
    made_pos[made_n] = (int)end;
    made_n = made_n + 1;
  }
}

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

/* The output folder's lock file while this process holds it: removed on a signal like a temporary
 * (the kernel releases the lock itself when the process ends). */
static char lock_path[TMP_LEN];
static volatile sig_atomic_t lock_held;

void rd_lock_register(const char *path) {
  lock_held = 0;
  snprintf(lock_path, TMP_LEN, "%s", path);
  lock_held = strlen(path) < TMP_LEN;
}

void rd_lock_unregister(void) { lock_held = 0; }

void rd_tmp_cleanup(void) {
  rd_commit_rollback();
  for (int i = 0; i < TMP_SLOTS; i++)
    if (tmp_used[i]) unlink(tmp_paths[i]);
  if (lock_held) unlink(lock_path);
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
  static const int term[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  for (size_t i = 0; i < sizeof term / sizeof term[0]; i++) sigaddset(&sa.sa_mask, term[i]);
  /* termination requests, and faults (bus errors from a file that shrank under a mapping): none may
   * leave a temporary file behind */
  static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGBUS, SIGSEGV, SIGABRT};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
  /* a write past the file size limit (ulimit -f) fails with EFBIG instead of killing the process,
   * so the failure is reported like a full disk (which file, what cause) and the run ends cleanly */
  signal(SIGXFSZ, SIG_IGN);
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

