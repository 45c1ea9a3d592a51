/* rmdiag's entry point: everything else lives in the library (see include/rmdiag/rmdiag.h). */
#include <cblas.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "rmdiag/rmdiag.h"

/* Started without a launcher (mpiexec, srun), the process is an MPI singleton: it talks to no
 * one, so Open MPI need not start a helper daemon or probe high-speed networks (probing
 * InfiniPath/PSM alone costs 0.2 s). An isolated singleton has no job id of its own, so it also
 * keeps no session directory: every isolated singleton on a host would share one, and one
 * process removing it as another starts makes the second fail. The user's own settings win;
 * other MPIs ignore these. */
static int under_launcher(void) {
  static const char *const launcher_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", NULL};
  for (const char *const *v = launcher_vars; *v; v++)
    if (getenv(*v)) return 1;
  return 0;
}

static void singleton_defaults(void) {
  if (under_launcher()) return;
  setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
  setenv("OMPI_MCA_pml", "ob1", 0);
  setenv("OMPI_MCA_orte_create_session_dirs", "0", 0);
}

/* One BLAS thread per rank: rmdiag's parallelism is its ranks, and BLAS results may depend on the
 * thread count. OpenBLAS (pthreads build) starts its worker threads when it is loaded, and an idle
 * worker spins for about 0.1 s of CPU before it sleeps, which a job started on every core pays;
 * shutting the pool down stops that (BLAS calls then run in the calling thread). */
extern int blas_thread_shutdown_(void) __attribute__((weak));
static void blas_one_thread(void) {
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_) blas_thread_shutdown_();
}

/* A rank started by a launcher ends with it: if mpiexec (or the step daemon under srun) is killed,
 * each rank gets SIGTERM, whose handler removes its temporary files as for any terminated run,
 * instead of going on with its jobs unsupervised until MPI notices. A process started by hand
 * outlives its shell as any program does. */
static void end_with_launcher(void) {
#ifdef __linux__
  if (!under_launcher()) return;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() == 1) raise(SIGTERM); /* the launcher was gone before the request took effect */
#endif
}

int main(int argc, char **argv) {
  blas_one_thread();
  singleton_defaults();
  end_with_launcher();
  /* HDF5 never uses MPI-IO's shared file pointers; Open MPI's "sm" component for them keeps a file
   * in the session directory, which isolated singletons lack and which every MPI-IO open on a
   * sub-communicator complains about. The user's own setting wins; other MPIs ignore it. */
  setenv("OMPI_MCA_sharedfp", "^sm", 0);
  /* Threads that MPI starts inherit a mask that blocks termination signals, so rmdiag's handler
   * (which removes temporary files and restores replaced outputs) runs on the main thread only. */
  sigset_t term, old;
  sigemptyset(&term);
  static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXFSZ};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&term, sigs[i]);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  MPI_Init(&argc, &argv);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  int code = rmdiag_main(argc, argv, MPI_COMM_WORLD, stdout, stderr);
  MPI_Finalize();
  return code;
}
