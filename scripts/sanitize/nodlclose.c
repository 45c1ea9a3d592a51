/* Keeps every shared object loaded until the process ends (dlclose does nothing): linked into the
 * MPI fuzz harness. Open MPI and PMIx unload their plugins in MPI_Finalize; LeakSanitizer reports
 * at exit, when it could no longer name a plugin in a leak's stack ("<unknown module>", or the name
 * of whatever library was mapped there since), which makes reports of leaks hard to read. */
#include <dlfcn.h>

int dlclose(void *handle) {
  (void)handle;
  return 0;
}
