/* File utilities: side paths next to an output, mkdir -p that remembers what it made, atomic
 * text files, and the identity of an input file. */
#include "rmdiag/common/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmdiag/common/signals.h"

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
  rd_made_dir_begin(dir);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char save = buf[i];
      buf[i] = '\0';
      if (mkdir(buf, 0777) == 0) {
        rd_made_dir_note(i);  /* remembered: removed again if the run fails */
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
