/* Choosing the compute backend: the CPU always; CUDA from a module loaded with dlopen when it
 * is there and a device answers. Every rank must end up on the same backend, so that results are
 * identical for any rank count; the choice is agreed over the communicator by the caller. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmdiag/backend_select.h"
#include "rmdiag/common/status.h"
#include "rmdiag/version.h"

/* Candidate module paths: $RMDIAG_CUDA_MODULE, then beside the executable (a build folder), then
 * where `cmake --install` puts it relative to the installed binary (RMDIAG_MODULE_RELDIR, e.g.
 * ../lib/rmdiag). */
static void *load_module(char *why, size_t whylen) {
  const char *env = getenv("RMDIAG_CUDA_MODULE");
  char exe[PATH_MAX], cand[3][PATH_MAX + 64];
  int nc = 0;
  if (env && env[0]) snprintf(cand[nc++], sizeof cand[0], "%s", env);
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(cand[nc++], sizeof cand[0], "%s/librmdiag_cuda.so", exe);
    snprintf(cand[nc++], sizeof cand[0], "%s/%s/librmdiag_cuda.so", exe, RMDIAG_MODULE_RELDIR);
  }
  why[0] = '\0';
  for (int i = 0; i < nc; i++) {
    if (access(cand[i], R_OK) != 0) continue;
    void *h = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    snprintf(why, whylen, "cannot load %.1024s: %.1024s", cand[i], dlerror());
    return NULL;
  }
  snprintf(why, whylen, "the CUDA module librmdiag_cuda.so was not found beside the rmdiag binary "
                        "(set RMDIAG_CUDA_MODULE to its path)");
  return NULL;
}

static int have_driver(void) {
  return access("/proc/driver/nvidia/version", F_OK) == 0 || access("/dev/nvidiactl", F_OK) == 0;
}

int rd_backend_select(const char *want, int node_rank, const rd_backend **out, char *info, size_t infolen,
                      char *note, size_t notelen, rd_status *st) {
  *out = &rd_backend_cpu;
  snprintf(info, infolen, "cpu");
  if (notelen) note[0] = '\0';
  if (strcmp(want, "cpu") == 0) return RD_OK;
  int explicit_cuda = strcmp(want, "cuda") == 0;
  if (!RMDIAG_HAVE_CUDA) {
    if (explicit_cuda)
      return rd_fail(st, RD_EINPUT, "--backend cuda: this rmdiag was built without CUDA (nvcc was not found when "
                                    "it was configured); use --backend cpu or rebuild with the CUDA Toolkit");
    if (have_driver())
      snprintf(note, notelen, "this node has an NVIDIA driver but this rmdiag was built without CUDA; running on "
                              "the CPU");
    return RD_OK;
  }
  /* auto on a machine without an NVIDIA driver: no need to load the module (it brings cuBLAS,
   * several hundred MB of libraries, which costs about 0.07 s) only to learn there is no GPU */
  if (!explicit_cuda && !have_driver()) return RD_OK;
  char why[PATH_MAX + 256];
  void *h = load_module(why, sizeof why);
  const rd_backend *b = NULL;
  if (h) {
    rd_backend_entry_fn entry = (rd_backend_entry_fn)dlsym(h, RD_CUDA_ENTRY);
    b = entry ? entry() : NULL;
    if (!b || b->abi != RD_BACKEND_ABI) {
      snprintf(why, sizeof why, "the CUDA module does not match this rmdiag (ABI)");
      b = NULL;
    }
  }
  if (b) {
    char err[512] = "";
    if (b->init(node_rank, info, infolen, err, sizeof err) == 0) {
      *out = b;
      return RD_OK;
    }
    snprintf(why, sizeof why, "%s", err);
  }
  if (explicit_cuda) return rd_fail(st, RD_EFAIL, "--backend cuda: no usable GPU: %s", why);
  snprintf(info, infolen, "cpu");
  /* auto where a driver is present: a GPU was probably meant to be used; say why it is not */
  snprintf(note, notelen, "--backend auto: this node has an NVIDIA driver but the CUDA backend did not start (%.*s); "
                          "running on the CPU", (int)(notelen > 200 ? notelen - 200 : 0), why);
  return RD_OK;
}

void rd_backend_versions(char *out, size_t n) {
  if (!RMDIAG_HAVE_CUDA) {
    snprintf(out, n, "CUDA backend not built");
    return;
  }
  if (!have_driver()) {
    snprintf(out, n, "CUDA backend built with CUDA %s; this machine: no NVIDIA driver", RMDIAG_CUDA_BUILD_VERSION);
    return;
  }
  char why[PATH_MAX + 256];
  void *h = load_module(why, sizeof why);
  rd_cuda_versions_fn fn = h ? (rd_cuda_versions_fn)dlsym(h, RD_CUDA_VERSIONS) : NULL;
  if (!fn) {
    snprintf(out, n, "CUDA backend built with CUDA %s; this machine: %.300s", RMDIAG_CUDA_BUILD_VERSION,
             h ? "the CUDA module does not report its versions" : why);
    return;
  }
  int driver = 0, runtime = 0;
  fn(&driver, &runtime);
  char d[64];
  if (driver > 0) snprintf(d, sizeof d, "driver for CUDA %d.%d", driver / 1000, driver % 1000 / 10);
  else snprintf(d, sizeof d, "no CUDA driver library (libcuda)");
  snprintf(out, n, "CUDA backend built with CUDA %s; this machine: %s, runtime %d.%d", RMDIAG_CUDA_BUILD_VERSION, d,
           runtime / 1000, runtime % 1000 / 10);
}
