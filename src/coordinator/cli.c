/* The command line: one option table per command drives both parsing and --help. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rmdiag/backend_select.h"
#include "rmdiag/common/comm.h"
#include "rmdiag/import/formats.h"
#include "rmdiag/init.h"
#include "rmdiag/kind.h"
#include "rmdiag/common/signals.h"
#include "rmdiag/rmdiag.h"
#include "rmdiag/run.h"
#include "rmdiag/version.h"
#include "report_internal.h"

typedef struct opt_def {
  const char *name;
  const char *arg;  /* NULL: a flag */
  const char *help;
} opt_def;

static const opt_def run_opts[] = {
    {"--resume", NULL, "skip every job whose outputs exist and were made from the same spec"},
    {"--force", NULL, "overwrite outputs that were made from a different job spec"},
    {"--backend", "auto|cpu|cuda", "compute backend; auto (default) uses CUDA when every rank has a GPU"},
    {"--quiet", NULL, "no progress or summary lines on stderr"},
    {"--plan", NULL, "print how the jobs would be spread over the ranks (groups, order, estimated times); compute nothing"},
    {"--ranks-per-job", "N|all|auto", "ranks in each group that runs a job; auto (default) plans it from the jobs' sizes"},
    {"--wait", NULL, "when another run is writing to the output folder, wait for it to end (else exit 2)"},
    {NULL, NULL, NULL},
};

static const opt_def validate_opts[] = {
    {"--quiet", NULL, "print nothing on success"},
    {NULL, NULL, NULL},
};

static void print_opts(FILE *fp, const opt_def *opts) {
  for (const opt_def *o = opts; o->name; o++) {
    char left[64];
    snprintf(left, sizeof left, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    fprintf(fp, "    %-24s %s\n", left, o->help);
  }
}

/* The keys every job has, whatever its kind. */
static void print_job_keys(FILE *fp, const rd_kind *k) {
  fprintf(fp, "  name\n      string; required\n      the job's name: letters, digits, '.', '_' and '-', not starting "
              "with '.'; names the outputs <name>.json and <name>.h5\n");
  fprintf(fp, "  kind\n      string; required\n      \"%s\"\n", k->name);
  fprintf(fp, "  input\n      string; required\n      the input HDF5 file, relative to the job file's folder\n");
  fprintf(fp, "  group\n      string; default \"%s\"\n      the HDF5 group that holds the %s input layout\n",
          k->default_group, k->name);
  fprintf(fp, "  seed\n      integer; default the file's \"seed\"; -(2^53-1)..2^53-1\n"
              "      this job's seed (its random streams are keyed by the seed, the job's name and the purpose)\n");
  fprintf(fp, "  sweep\n      object {KEY: [VALUE, ...], ...}; default none\n      one job per combination of the "
              "values (named NAME.KEY-I...), summarized across seeds in NAME.summary.json\n");
}

/* `rmdiag help KIND`: every option of a kind, from its option table. */
static void print_kind_help(FILE *fp, const rd_kind *k) {
  fprintf(fp, "%s: %s\n\nJob keys (see docs/reference.md, '%s options'):\n", k->name, k->summary ? k->summary : "",
          k->name);
  print_job_keys(fp, k);
  if (k->options) rd_options_print(k->options, fp);
  fprintf(fp, "\nInput layout: docs/reference.md, '%s input layout'; report: '%s report'.\n", k->name, k->name);
}

static void print_help(FILE *fp) {
  fprintf(fp,
          "rmdiag %s - diagnostic reports from reward-model and foundation-model experiments\n\n"
          "usage:\n"
          "  rmdiag run JOB.json [--resume] [--force] [--backend auto|cpu|cuda] [--quiet] [--plan]\n"
          "             [--ranks-per-job N|all|auto] [--wait]\n"
          "  rmdiag validate JOB.json      check the job file and every input's layout and values; compute nothing\n"
          "  rmdiag import FORMAT [options] -o OUT.h5\n"
          "  rmdiag table REPORT.json [--format md|csv|tsv|latex|text] [--table NAME] [--digits N]\n"
          "  rmdiag report PATH... -o FILE.html   one self-contained page: tables, figures, warnings\n"
          "  rmdiag init KIND INPUT.h5 [-o JOB.json]   a job file filled from the input's layout (it validates)\n"
          "  rmdiag help [KIND | FORMAT]   every option of a report kind or an import format\n"
          "  rmdiag --version | --help     (COMMAND --help shows a command's usage)\n\n"
          "run options:\n",
          RMDIAG_VERSION);
  print_opts(fp, run_opts);
  fprintf(fp, "\nreport kinds (rmdiag help KIND lists a kind's options):\n");
  for (const rd_kind *const *k = rd_kinds(); *k; k++)
    fprintf(fp, "    %-14s %s (group %s)\n", (*k)->name, (*k)->summary ? (*k)->summary : "", (*k)->default_group);
  fprintf(fp, "import formats (rmdiag help FORMAT lists a format's options):\n");
  for (const rd_import_format *const *f = rd_import_formats(); *f; f++)
    fprintf(fp, "    %-14s %s\n", (*f)->name, (*f)->summary);
  fprintf(fp,
          "\nRuns as a plain process or under mpiexec -n N / srun --mpi=pmix (one rank per GPU).\n"
          "Exit status: 0 success; 2 bad usage, job file or input (nothing is written); 1 other failure.\n"
          "Reference: docs/reference.md.\n");
}

/* `rmdiag help [TOPIC]`. */
static int cmd_help(rd_ctx *ctx, int argc, char **argv, rd_status *st) {
  if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
    if (ctx->out)
      fprintf(ctx->out, "usage: rmdiag help [KIND | FORMAT]\nWithout a topic: the commands, kinds and import formats. "
              "With a report kind: every key a job of\nthe kind may carry (type, default, range, help). With an "
              "import format: its usage and options.\n");
    return RD_OK;
  }
  if (argc > 3) return rd_fail(st, RD_EINPUT, "rmdiag help takes at most one topic (a kind or an import format)");
  if (argc < 3) {
    if (ctx->out) print_help(ctx->out);
    return RD_OK;
  }
  const char *topic = argv[2];
  const rd_kind *k = rd_kind_find(topic);
  if (k) {
    if (ctx->out) print_kind_help(ctx->out, k);
    return RD_OK;
  }
  for (const rd_import_format *const *f = rd_import_formats(); *f; f++)
    if (strcmp((*f)->name, topic) == 0) {
      if (ctx->out) rd_import_usage(*f, ctx->out);
      return RD_OK;
    }
  char list[512];
  size_t n = 0;
  for (const rd_kind *const *q = rd_kinds(); *q && n < sizeof list - 64; q++)
    n += (size_t)snprintf(list + n, sizeof list - n, "%s ", (*q)->name);
  for (const rd_import_format *const *f = rd_import_formats(); *f && n < sizeof list - 64; f++)
    n += (size_t)snprintf(list + n, sizeof list - n, "%s ", (*f)->name);
  if (n > 0) list[n - 1] = '\0';
  return rd_fail(st, RD_EINPUT, "rmdiag help: unknown topic \"%s\" (kinds and import formats: %s)", topic, list);
}

/* `rmdiag run --help`, `rmdiag validate --help`. */
static void print_command_help(FILE *fp, const char *cmd) {
  if (strcmp(cmd, "run") == 0) {
    fprintf(fp, "usage: rmdiag run JOB.json [options]\n"
                "Runs every job of the job file (a plain process, or under mpiexec -n N / srun); each job writes\n"
                "<output_dir>/<name>.json and <name>.h5 atomically. Every input is checked before any job computes.\n\n"
                "options:\n");
    print_opts(fp, run_opts);
  } else {
    fprintf(fp, "usage: rmdiag validate JOB.json [--quiet]\n"
                "Checks the job file, every input's layout and every value the jobs would check; computes and\n"
                "writes nothing. Exit status 0 when everything is valid, 2 otherwise.\n\noptions:\n");
    print_opts(fp, validate_opts);
  }
}

/* Parses argv[first..] against `opts`; one positional argument. Returns RD_OK or RD_EINPUT. */
static int parse_opts(int argc, char **argv, int first, const opt_def *opts, const char *cmd, const char **values,
                      const char **positional, rd_status *st) {
  *positional = NULL;
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--", 2) == 0) {
      const char *eq = strchr(a, '=');
      size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
      int found = -1;
      for (int k = 0; opts[k].name; k++)
        if (strlen(opts[k].name) == nlen && strncmp(opts[k].name, a, nlen) == 0) found = k;
      if (found < 0) return rd_fail(st, RD_EINPUT, "rmdiag %s: unknown option %s (see rmdiag --help)", cmd, a);
      if (opts[found].arg) {
        if (eq) values[found] = eq + 1;
        else if (i + 1 < argc) values[found] = argv[++i];
        else return rd_fail(st, RD_EINPUT, "rmdiag %s: option %s needs a value (%s)", cmd, opts[found].name,
                            opts[found].arg);
      } else {
        if (eq) return rd_fail(st, RD_EINPUT, "rmdiag %s: option %s takes no value", cmd, opts[found].name);
        values[found] = "1";
      }
    } else if (!*positional) {
      *positional = a;
    } else {
      return rd_fail(st, RD_EINPUT, "rmdiag %s: unexpected argument \"%s\" (one job file expected)", cmd, a);
    }
  }
  if (!*positional) return rd_fail(st, RD_EINPUT, "rmdiag %s: missing JOB.json (see rmdiag --help)", cmd);
  return RD_OK;
}

static int cmd_run(rd_ctx *ctx, int argc, char **argv, int validate_only, rd_status *st) {
  const opt_def *opts = validate_only ? validate_opts : run_opts;
  const char *values[8] = {0};
  const char *job = NULL;
  const char *cmd = validate_only ? "validate" : "run";
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      if (ctx->out) print_command_help(ctx->out, cmd);
      return RD_OK;
    }
  RD_TRY(parse_opts(argc, argv, 2, opts, cmd, values, &job, st));
  rd_run_flags fl = {.validate_only = validate_only, .backend = "auto"};
  if (validate_only) {
    ctx->quiet = values[0] != NULL;
    if (ctx->quiet) ctx->out = NULL;
  } else {
    fl.resume = values[0] != NULL;
    fl.force = values[1] != NULL;
    if (values[2]) fl.backend = values[2];
    ctx->quiet = values[3] != NULL;
    fl.plan_only = values[4] != NULL;
    fl.wait = values[6] != NULL;
    /* the option, else $RMDIAG_RANKS_PER_JOB (a site or a test suite can fix it for every run) */
    if (!values[5] && getenv("RMDIAG_RANKS_PER_JOB") && getenv("RMDIAG_RANKS_PER_JOB")[0])
      values[5] = getenv("RMDIAG_RANKS_PER_JOB");
    if (values[5] && strcmp(values[5], "auto") != 0) {
      char *end = NULL;
      long w = strcmp(values[5], "all") == 0 ? -1 : strtol(values[5], &end, 10);
      if (w == 0 || w < -1 || (w > 0 && (!end || *end)) || w > 1 << 24)
        return rd_fail(st, RD_EINPUT, "rmdiag run: --ranks-per-job must be a positive integer, all or auto (got \"%s\")",
                       values[5]);
      fl.ranks_per_job = (int)w;
    }
    if (strcmp(fl.backend, "auto") && strcmp(fl.backend, "cpu") && strcmp(fl.backend, "cuda"))
      return rd_fail(st, RD_EINPUT, "rmdiag run: --backend must be auto, cpu or cuda (got \"%s\")", fl.backend);
  }
  return rd_cmd_run(ctx, job, &fl, st);
}

/* The import's output must be creatable: its folder exists and it is not a folder. (That it is none
 * of the files the import reads is checked where those are opened: rd_input_fopen, rd_h5_atomic_finish.) */
static int check_import_output(const char *fmt, const char *out, rd_status *st) {
  char *dir = strdup(out);
  if (!dir) return rd_fail(st, RD_EFAIL, "out of memory");
  char *slash = strrchr(dir, '/');
  const char *folder = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
  struct stat sd, so;
  if (stat(folder, &sd) != 0 || !S_ISDIR(sd.st_mode)) {
    rd_fail(st, RD_EINPUT, "rmdiag import %s: -o %s: the folder %s does not exist", fmt, out, folder);
    free(dir);
    return st->code;
  }
  free(dir);
  if (stat(out, &so) != 0) return RD_OK;
  if (S_ISDIR(so.st_mode))
    return rd_fail(st, RD_EINPUT, "rmdiag import %s: -o %s is a folder, expected a file path", fmt, out);
  return RD_OK;
}

static int cmd_import(rd_ctx *ctx, int argc, char **argv, rd_status *st) {
  if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0) {
    if (argc < 3) return rd_fail(st, RD_EINPUT, "rmdiag import: missing FORMAT (see rmdiag import --help)");
    if (ctx->out) {
      fprintf(ctx->out, "usage: rmdiag import FORMAT [options] -o OUT.h5\n\nformats:\n");
      for (const rd_import_format *const *f = rd_import_formats(); *f; f++)
        fprintf(ctx->out, "  %-14s %s\n", (*f)->name, (*f)->summary);
      fprintf(ctx->out, "\nrmdiag import FORMAT --help shows a format's options.\n");
    }
    return RD_OK;
  }
  const rd_import_format *fmt = NULL;
  for (const rd_import_format *const *f = rd_import_formats(); *f; f++)
    if (strcmp((*f)->name, argv[2]) == 0) fmt = *f;
  if (!fmt) return rd_fail(st, RD_EINPUT, "rmdiag import: unknown format \"%s\" (see rmdiag import --help)", argv[2]);
  const char *out = NULL;
  char **rest = calloc((size_t)argc, sizeof *rest);
  int nrest = 0;
  if (!rest) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      if (ctx->out) rd_import_usage(fmt, ctx->out);
      free(rest);
      return RD_OK;
    }
    if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
      if (i + 1 >= argc) {
        free(rest);
        return rd_fail(st, RD_EINPUT, "rmdiag import %s: -o needs a path", fmt->name);
      }
      out = argv[++i];
    } else {
      rest[nrest++] = argv[i];
    }
  }
  if (!out) {
    free(rest);
    char *usage = rd_import_usage_text(fmt);
    rd_fail(st, RD_EINPUT, "rmdiag import %s: missing -o OUT.h5\n%s", fmt->name, usage ? usage : "");
    free(usage);
    return st->code;
  }
  if (ctx->rank == 0 && check_import_output(fmt->name, out, st) == RD_OK)
    fmt->run(nrest, rest, out, ctx->err, st);
  free(rest);
  return rd_share_status(ctx, st, 0);
}

int rmdiag_main(int argc, char **argv, MPI_Comm comm, FILE *out, FILE *err) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  rd_signals_install();
  rd_ctx ctx;
  if (rd_ctx_init(&ctx, comm, out, err) != RD_OK) {
    fprintf(err, "rmdiag: cannot set up the MPI communicator\n");
    return RD_EFAIL;
  }
  rd_status st;
  rd_status_init(&st);
  const char *cmd = argc > 1 ? argv[1] : NULL;
  if (!cmd) {
    if (ctx.err) print_help(ctx.err);
    rd_fail(&st, RD_EINPUT, "missing command");
  } else if (argc > 2 && (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0 || strcmp(cmd, "--help") == 0 ||
                          strcmp(cmd, "-h") == 0)) {
    rd_fail(&st, RD_EINPUT, "%s takes no arguments (got \"%s\"; see rmdiag --help)", cmd, argv[2]);
  } else if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    char cuda[1024];
    rd_backend_versions(cuda, sizeof cuda);
    if (ctx.out) fprintf(ctx.out, "rmdiag %s (%s)\n", RMDIAG_VERSION, cuda);
  } else if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    if (ctx.out) print_help(ctx.out);
  } else if (strcmp(cmd, "help") == 0) {
    cmd_help(&ctx, argc, argv, &st);
  } else if (strcmp(cmd, "run") == 0) {
    cmd_run(&ctx, argc, argv, 0, &st);
  } else if (strcmp(cmd, "validate") == 0) {
    cmd_run(&ctx, argc, argv, 1, &st);
  } else if (strcmp(cmd, "import") == 0) {
    cmd_import(&ctx, argc, argv, &st);
  } else if (strcmp(cmd, "init") == 0) {
    rd_cmd_init(&ctx, argc, argv, &st);
  } else if (strcmp(cmd, "table") == 0) {
    rd_cmd_table(&ctx, argc, argv, &st);
  } else if (strcmp(cmd, "report") == 0) {
    rd_cmd_report(&ctx, argc, argv, &st);
  } else {
    rd_fail(&st, RD_EINPUT, "unknown command \"%s\" (expected run, validate, import, init, table, report, help, "
            "--version or --help)", cmd);
  }
  if (st.code != RD_OK && ctx.err) fprintf(ctx.err, "rmdiag: error: %s\n", st.msg);
  if (ctx.out) fflush(ctx.out);
  if (ctx.err) fflush(ctx.err);
  rd_ctx_free(&ctx);
  return st.code;
}
