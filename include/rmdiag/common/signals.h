/* What a signal must undo. Outputs are written under temporary names and renamed into place;
 * SIGTERM/SIGINT/SIGHUP/SIGQUIT (and faults) remove any registered temporary file, roll back an output
 * replacement in progress and remove the folders a failed run created, so an interrupted job
 * leaves no half-written output. Everything the handler touches is async-signal-safe. */
#ifndef RMDIAG_COMMON_SIGNALS_H
#define RMDIAG_COMMON_SIGNALS_H

#include <stddef.h>

/* Installs the SIGTERM/SIGINT/SIGHUP/SIGQUIT (and SIGBUS/SIGSEGV/SIGABRT) handlers that unlink
 * registered temporary files, and ignores SIGXFSZ (a write past ulimit -f then fails with EFBIG). */
void rd_signals_install(void);
/* Registers / unregisters a temporary path for removal on a signal (at most a few at a time). */
void rd_tmp_register(const char *path);
void rd_tmp_unregister(const char *path);
/* The folders rd_mkdirs created (and only those) are remembered: rd_made_dir_remove removes them,
 * deepest first, as far as they are empty (a failure or a signal; async-signal-safe);
 * rd_made_dir_forget keeps them (a run that finished). */
void rd_made_dir_remove(void);
void rd_made_dir_forget(void);
/* Used by rd_mkdirs: starts remembering the folders made along `dir`, then notes each one made
 * (the length of its prefix of `dir`). */
void rd_made_dir_begin(const char *dir);
void rd_made_dir_note(size_t end);
/* The lock file of the output folder this process holds (rd_dir_lock_take): removed by
 * rd_tmp_cleanup before the folders it made. */
void rd_lock_register(const char *path);
void rd_lock_unregister(void);
/* Removes every registered temporary file and the held lock file, and the folders this run made
 * if empty (signal handlers, aborts), after rolling back an output replacement in progress.
 * Async-signal-safe. */
void rd_tmp_cleanup(void);

/* The replacement of a finished job's outputs, journalled so that a signal in the middle restores
 * the old report and .h5 (the old pair stands until the new pair is complete). rd_commit_begin(json,
 * h5, h5tmp, stale_json or NULL, old_h5 or NULL, h5_existed) is called before the old report moves
 * to stale_json; old_h5 is a second link to the old .h5 (NULL with h5_existed when no link could be
 * made: then the old report is not restored over a replaced .h5). How far the replacement got is
 * read from the files themselves (h5tmp gone: the .h5 was renamed in; the report present after
 * that: the new one is in place), so no step can be missed by a signal. rd_commit_end() once done. */
void rd_commit_begin(const char *json, const char *h5, const char *h5tmp, const char *stale_json, const char *old_h5,
                     int h5_existed);
void rd_commit_end(void);
/* Undoes the replacement in progress, if any (async-signal-safe; rd_tmp_cleanup calls it). */
void rd_commit_rollback(void);
/* Set by the handler; long loops may poll it. */
extern volatile int rd_interrupted;

#endif
