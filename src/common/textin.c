/* Whole text input files (see textin.h). */
#include "rmdiag/common/textin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/common/h5out.h"
#include "rmdiag/common/vec.h"

int rd_text_read(const char *path, char **text, size_t *len, rd_status *st) {
  FILE *fp = rd_input_fopen(path);
  if (!fp) return rd_fail(st, RD_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
  char *buf = NULL;
  size_t cap = 0, n = 0;
  int oom = 0;
  for (;;) {
    if (rd_vec_reserve(&buf, &cap, n + 65536 + 1, 1) != 0) {
      oom = 1;
      break;
    }
    size_t r = fread(buf + n, 1, cap - n - 1, fp);
    n += r;
    if (r == 0) break;
  }
  int err = ferror(fp);
  fclose(fp);
  if (oom) {
    free(buf);
    return rd_fail(st, RD_EFAIL, "out of memory reading %s", path);
  }
  if (err) {
    free(buf);
    return rd_fail(st, RD_EINPUT, "%s: read error", path);
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return RD_OK;
}
