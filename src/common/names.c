/* Names that become HDF5 group names (see names.h). */
#include "rmdiag/common/names.h"

#include <string.h>

int rd_name_valid(const char *s) {
  /* a leading '.' would read as "." or ".." in a path; the length keeps paths within fixed buffers */
  if (!s[0] || s[0] == '.' || strlen(s) > 200) return 0;
  for (const char *c = s; *c; c++)
    if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' ||
          *c == '-' || *c == '.'))
      return 0;
  return 1;
}
