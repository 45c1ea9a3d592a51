/* Keeps every shared object loaded until the process ends (dlclose does nothing), for the sanitizer
 * runs. Open MPI and PMIx unload their plugins in MPI_Finalize; LeakSanitizer reports at exit, when
 * it can no longer name the plugin that made an allocation ("<unknown module>"), so no suppression
 * could match Open MPI's own start-up leaks. Linked into the MPI fuzz harness, and preloaded
 * (LD_PRELOAD) for the rmdiag processes of the asan test runs (scripts/sanitize/run_asan.sh). */
#include <dlfcn.h>

int dlclose(void *handle) {
  (void)handle;
  return 0;
}
