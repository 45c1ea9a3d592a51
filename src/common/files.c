/* File utilities: side paths next to an output (named after the process that owns them, so a
 * later run can tell when they are stale), mkdir -p that remembers what it made, atomic text files,
 * the lock that keeps one run per output folder, and the identity of an input file. */
#include "rmdiag/common/files.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rmdiag/common/signals.h"

const char *rd_io_cause(int err) {
  switch (err) {
    case ENOSPC: return "no space left on device";
    case EFBIG: return "file size limit exceeded (ulimit -f, or the file system's largest file)";
    case EDQUOT: return "disk quota exceeded";
    default: return strerror(err);
  }
}

/* The start time of process `pid` in clock ticks since boot (field 22 of /proc/PID/stat), or 0 when
 * it cannot be read (no such process, or no /proc); *state gets field 3 ('Z' for a zombie: a process
 * that has ended but was not reaped, as the ranks of a killed mpiexec may stay). The command name
 * (field 2) may hold spaces and parentheses: the fields after it start after its last ')'. */
static unsigned long long proc_start(long pid, char *state) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  if (!p) return 0;
  p++;
  while (*p == ' ') p++;
  if (state) *state = *p;
  for (int field = 3; field < 22 && *p; field++) {  /* skip fields 3..21 */
    while (*p == ' ') p++;
    while (*p && *p != ' ') p++;
  }
  return strtoull(p, NULL, 10);
}

/* This machine's name as a side file carries it: up to the first '.', anything but letters, digits
 * and '-' as '_' (so the name parses back from the right: the host holds no '.'). */
static void host_tag(char *out, size_t len) {
  char h[256] = "";
  if (gethostname(h, sizeof h - 1) != 0 || !h[0]) snprintf(h, sizeof h, "localhost");
  h[sizeof h - 1] = '\0';
  size_t k = 0;
  for (const char *c = h; *c && *c != '.' && k + 1 < len; c++)
    out[k++] = isalnum((unsigned char)*c) || *c == '-' ? *c : '_';
  out[k] = '\0';
  if (!k) snprintf(out, len, "localhost");
}

static char owner_host[128];
static char owner[256];

const char *rd_owner_tag(void) {
  if (!owner[0]) {
    host_tag(owner_host, sizeof owner_host);
    snprintf(owner, sizeof owner, "%s.%ld.%llu", owner_host, (long)getpid(), proc_start((long)getpid(), NULL));
  }
  return owner;
}

const char *rd_owner_host(void) {
  rd_owner_tag();
  return owner_host;
}

char *rd_side_path(const char *final_path, const char *tag) {
  const char *slash = strrchr(final_path, '/');
  size_t dirlen = slash ? (size_t)(slash - final_path + 1) : 0;
  const char *base = slash ? slash + 1 : final_path;
  const char *who = rd_owner_tag();
  size_t n = strlen(final_path) + strlen(tag) + strlen(who) + 8;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%.*s.%s.%s.%s", (int)dirlen, final_path, base, tag, who);
  return p;
}

/* The last dot-separated field of s[0..*end) when it is all digits: its value, *end moved to the dot
 * before it; -1 otherwise. */
static long long last_number(const char *s, size_t *end) {
  size_t e = *end, b = e;
  while (b > 0 && isdigit((unsigned char)s[b - 1])) b--;
  if (b == e || b == 0 || s[b - 1] != '.' || e - b > 18) return -1;
  *end = b - 1;
  return strtoll(s + b, NULL, 10);
}

int rd_side_parse(const char *name, rd_side_name *out) {
  memset(out, 0, sizeof *out);
  size_t n = strlen(name), end = n;
  if (n < 4 || name[0] != '.') return 0;
  long long a = last_number(name, &end);
  if (a < 0) return 0;
  /* ".BASE.TAG.HOST.PID.START", or the older ".BASE.TAG.PID" (no host, no start time) */
  size_t e2 = end;
  long long b = last_number(name, &e2);
  size_t tag_end = end;
  if (b >= 0) {
    size_t h = e2;
    while (h > 0 && name[h - 1] != '.') h--;
    if (h > 1 && h < e2 && e2 - h < sizeof out->host) {
      memcpy(out->host, name + h, e2 - h);
      out->host[e2 - h] = '\0';
      out->pid = (long)b;
      out->start = (unsigned long long)a;
      tag_end = h - 1;
    }
  }
  if (!out->host[0]) {
    out->legacy = 1;
    out->pid = (long)a;
  }
  static const char *const tags[] = {"tmp", "stale", "old"};
  for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++) {
    size_t tl = strlen(tags[t]);
    if (tag_end > tl + 1 && name[tag_end - tl - 1] == '.' && strncmp(name + tag_end - tl, tags[t], tl) == 0) {
      size_t bl = tag_end - tl - 2;  /* between the leading '.' and the '.' before the tag */
      if (bl == 0 || bl >= sizeof out->base) return 0;
      memcpy(out->base, name + 1, bl);
      out->base[bl] = '\0';
      snprintf(out->tag, sizeof out->tag, "%s", tags[t]);
      return 1;
    }
  }
  return 0;
}

int rd_side_owner_alive(const rd_side_name *s) {
  if (s->legacy || strcmp(s->host, rd_owner_host()) != 0) return -1;  /* cannot tell from here */
  if (s->pid <= 0) return 0;
  if (kill((pid_t)s->pid, 0) != 0 && errno == ESRCH) return 0;
  char state = '?';
  unsigned long long now = proc_start(s->pid, &state);
  if (state == 'Z' || state == 'X') return 0;  /* ended, not yet reaped */
  /* a process with that pid and another start time reused the pid; without /proc (start 0 on either
   * side) the pid alone decides */
  return now == 0 || s->start == 0 || now == s->start;
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

/* ---- one run per output folder ---------------------------------------------------------------- */

/* "HOST, pid PID" of the run holding the lock on fd, from what it wrote into the file (fcntl's
 * l_pid when it wrote nothing yet: a process on this host). */
static void lock_holder(int fd, char *out, size_t len) {
  char buf[512];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  buf[n > 0 ? n : 0] = '\0';
  char host[128];
  long pid = 0;
  if (n > 0 && sscanf(buf, "host=%127s pid=%ld", host, &pid) == 2) {
    snprintf(out, len, "host %s, pid %ld", host, pid);
    return;
  }
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0)
    snprintf(out, len, "pid %ld on this or another host", (long)fl.l_pid);
  else
    snprintf(out, len, "holder not recorded");
}

static int lock_unsupported(int err) { return err == ENOLCK || err == ENOSYS || err == EOPNOTSUPP || err == EINVAL; }

/* One attempt: 1 taken, 0 held by another run (holder in `who`), -1 an error (errno set), -2 the
 * file vanished or was replaced under us (its holder removed it on leaving): try again; -3 the
 * folder cannot be written at all. */
static int lock_try(const char *path, rd_dir_lock *lk, char *who, size_t wholen) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return errno == ENOENT ? -2 : errno == EROFS || errno == EACCES || errno == EPERM ? -3 : -1;
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fcntl(fd, F_SETLK, &fl) != 0) {
    int e = errno;
    if (e == EACCES || e == EAGAIN) lock_holder(fd, who, wholen);
    close(fd);
    errno = e;
    return e == EACCES || e == EAGAIN ? 0 : e == ESTALE ? -2 : -1;
  }
  /* the file we locked must still be the one at the path: a holder removes it before it lets go */
  struct stat a, b;
  if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
    close(fd);
    return -2;
  }
  char rec[300];
  int n = snprintf(rec, sizeof rec, "host=%s pid=%ld owner=%s\n", rd_owner_host(), (long)getpid(), rd_owner_tag());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, rec, (size_t)n, 0) != n) {
    /* the record only serves messages; the lock holds without it */
  }
  lk->fd = fd;
  return 1;
}

int rd_dir_lock_take(const char *dir, int wait, FILE *log, rd_dir_lock *lk, rd_status *st) {
  lk->fd = -1;
  lk->unsupported = 0;
  size_t n = strlen(dir) + sizeof "/" RD_LOCK_NAME;
  if (!(lk->path = malloc(n))) return rd_fail(st, RD_EFAIL, "out of memory");
  snprintf(lk->path, n, "%s/%s", dir, RD_LOCK_NAME);
  int said = 0;
  for (;;) {
    char who[256] = "";
    int r = lock_try(lk->path, lk, who, sizeof who);
    if (r == 1) break;
    /* a folder nobody can write to needs no lock: a run whose jobs are all up to date still works
     * there, and one that has to write fails at its first output with the reason */
    if (r == -3) return RD_OK;
    if (r == -1 && lock_unsupported(errno)) {
      lk->unsupported = 1;
      if (log)
        fprintf(log, "rmdiag: warning: %s: this file system does not support file locks (%s); another run on the same "
                "output folder would not be stopped (docs/reference.md, 'The job file': One run per output folder)\n",
                dir, strerror(errno));
      return RD_OK;
    }
    if (r == -1) return rd_fail(st, RD_EFAIL, "%s: cannot lock the output folder: %s", lk->path, strerror(errno));
    if (r == 0 && !wait)
      return rd_fail(st, RD_EINPUT, "%s: another rmdiag run is writing to this output folder (%s); nothing was "
                     "written: wait for it to end, or pass --wait to start when it has (if that run is gone with its "
                     "node, remove %s)", dir, who, lk->path);
    if (r == 0 && !said && log) {
      fprintf(log, "rmdiag: %s: another rmdiag run is writing to this output folder (%s); waiting for it to end "
              "(--wait)\n", dir, who);
      fflush(log);
      said = 1;
    }
    /* a vanished folder (its last run failed and removed it while empty) is made again */
    if (r == -2 && access(dir, F_OK) != 0) RD_TRY(rd_mkdirs(dir, st));
    struct timespec ts = {0, r == -2 ? 10 * 1000 * 1000 : 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  rd_lock_register(lk->path);
  return RD_OK;
}

void rd_dir_lock_drop(rd_dir_lock *lk) {
  if (lk->fd >= 0) {
    /* removed while still held, so whoever opens the path next makes a new file (and a waiter holding
     * the old one sees that and tries again) */
    rd_lock_unregister();
    unlink(lk->path);
    close(lk->fd);
  }
  lk->fd = -1;
  free(lk->path);
  lk->path = NULL;
}

int rd_write_file_atomic(const char *final_path, const char *text, rd_status *st) {
  char *tmp = rd_tmp_path(final_path);
  if (!tmp) return rd_fail(st, RD_EFAIL, "out of memory");
  rd_tmp_register(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  int rc = RD_OK;
  if (fd < 0) {
    rc = rd_fail(st, RD_EFAIL, "cannot create %s: %s", tmp, rd_io_cause(errno));
  } else {
    size_t len = strlen(text), off = 0;
    while (off < len) {
      ssize_t w = write(fd, text + off, len - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        rc = rd_fail(st, RD_EFAIL, "cannot write %s: %s", tmp, rd_io_cause(errno));
        break;
      }
      off += (size_t)w;
    }
    if (rc == RD_OK && fsync(fd) != 0) rc = rd_fail(st, RD_EFAIL, "cannot sync %s: %s", tmp, rd_io_cause(errno));
    /* (a network file system may report a full disk only when the file is closed) */
    if (close(fd) != 0 && rc == RD_OK) rc = rd_fail(st, RD_EFAIL, "cannot write %s: %s", tmp, rd_io_cause(errno));
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
