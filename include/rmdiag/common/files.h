/* File utilities: where an output is written before it is renamed into place, mkdir -p, atomic
 * text files, and the identity of an input file (for the spec hash and the report). */
#ifndef RMDIAG_COMMON_FILES_H
#define RMDIAG_COMMON_FILES_H

#include <stdint.h>

#include "rmdiag/common/status.h"

#include <stdio.h>

/* The cause of a failed write for messages: "no space left on device" (ENOSPC), "file size limit
 * exceeded ..." (EFBIG), "disk quota exceeded" (EDQUOT), else strerror. */
const char *rd_io_cause(int err);

/* This process as the owner of side files: "HOST.PID.START", HOST this machine's name up to its
 * first '.' (letters, digits and '-'; anything else as '_'), START the process's start time in
 * clock ticks since boot (/proc/self/stat; 0 where unknown), which tells a reused pid apart. */
const char *rd_owner_tag(void);
const char *rd_owner_host(void);
/* "<dir>/.<name>.tmp.<owner>": where an output is written before it is renamed into place. */
char *rd_tmp_path(const char *final_path);
/* "<dir>/.<name>.<tag>.<owner>" */
char *rd_side_path(const char *final_path, const char *tag);

/* A side file's name taken apart: ".BASE.TAG.HOST.PID.START" (TAG tmp, stale or old), or the
 * older ".BASE.TAG.PID" (legacy: no host, no start time). */
typedef struct rd_side_name {
  char base[256], tag[8], host[128];
  long pid;
  unsigned long long start;
  int legacy;
} rd_side_name;

/* 1 when `name` (a file name, no folder) is a side file; fills *out. */
int rd_side_parse(const char *name, rd_side_name *out);
/* Whether a side file's owner still runs: 1 yes, 0 no (this host, and no process has its pid, or
 * one does with another start time), -1 unknown (another host, or a legacy name). */
int rd_side_owner_alive(const rd_side_name *s);

/* One run per output folder: an fcntl write lock on <dir>/.rmdiag.lock (the file holds the
 * holder's host and pid, for messages). */
#define RD_LOCK_NAME ".rmdiag.lock"
typedef struct rd_dir_lock {
  int fd;           /* >= 0 while held */
  int unsupported;  /* the file system has no locks: a warning was printed, nothing is held */
  char *path;
} rd_dir_lock;

/* Takes the lock of `dir` (which exists). Held by another run: RD_EINPUT naming the folder and the
 * holder, or with `wait` a message on `log` (may be NULL) and a wait until it is free. A file system
 * without locks: a warning on `log`, RD_OK and nothing held; a folder this process cannot write to:
 * RD_OK and nothing held (nothing can be written there anyway). */
int rd_dir_lock_take(const char *dir, int wait, FILE *log, rd_dir_lock *lk, rd_status *st);
/* Removes the lock file and lets go (nothing when not held). */
void rd_dir_lock_drop(rd_dir_lock *lk);
/* mkdir -p; the folders it creates are remembered (rd_made_dir_remove). */
int rd_mkdirs(const char *dir, rd_status *st);
/* Writes `text` to `final_path` atomically (temporary file + fsync + rename). */
int rd_write_file_atomic(const char *final_path, const char *text, rd_status *st);

/* Inputs of a job, as the spec hash and the report see them. */
typedef struct rd_input_stat {
  char *path;       /* realpath */
  int64_t bytes;
  int64_t mtime_s, mtime_ns;
} rd_input_stat;

int rd_input_stat_get(const char *path, const char *jobfile, const char *key, rd_input_stat *in, rd_status *st);

#endif
