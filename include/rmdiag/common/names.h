/* Names that become HDF5 group names (probe tasks and reward models, importer groups): one rule,
 * shared by the report kinds and the importers. */
#ifndef RMDIAG_COMMON_NAMES_H
#define RMDIAG_COMMON_NAMES_H

/* 1 when `s` is 1 to 200 bytes of letters, digits, '_', '-' and '.', not starting with '.'; else 0. */
int rd_name_valid(const char *s);

#endif
