#!/bin/bash
# jobs/rmdiag.sbatch as shipped, on a real single-host Slurm brought up for the test: slurmctld, slurmd
# and a munged of its own, on free ports, with every state file, log and socket in a scratch folder, so
# runs started at the same time (other checkouts, other CTest runs) cannot collide. The node claims two
# GPUs (count-only GRES) so the script's GPU path runs too. Covers: a 2-rank run through srun
# --mpi=pmix with the same report as a plain process; the binary found from a checkout's build folder,
# from an install prefix (and a copy of the installed script), through a module (a stand-in module
# system), and the failures before srun (binary not found, not executable, no module command, a module
# that does not load, an MPI plugin srun lacks, a missing job file) with their messages; --backend cuda
# when GPUs are requested (the run fails loudly on a node whose CUDA does not start, or runs on the
# GPU); a requeue (scontrol requeue) continuing with --resume in the same, appended log; a job array
# over a list of job files; the check-only mode outside Slurm.
# usage: scripts/slurm_test.sh PATH/TO/rmdiag        (exit 77 = skipped: not root or no Slurm)
set -uo pipefail
RMDIAG=$(readlink -f "${1:?usage: slurm_test.sh RMDIAG}")
export RMDIAG  # the submissions that do not test the lookup name the binary under test
BUILD=$(dirname "$RMDIAG")
SRC=$(cd "$(dirname "$0")/.." && pwd)
SCRIPT=$SRC/jobs/rmdiag.sbatch

if [ "$(id -u)" != 0 ]; then echo "SKIP: the single-host Slurm test needs root (to start slurmd and munged)"; exit 77; fi
PATH=$PATH:/usr/sbin
for b in slurmctld slurmd sbatch sinfo scontrol srun munged; do
  command -v "$b" >/dev/null 2>&1 || { echo "SKIP: $b not installed (apt-get install slurmctld slurmd slurm-client munge)"; exit 77; }
done
id munge >/dev/null 2>&1 || { echo "SKIP: no munge user (apt-get install munge)"; exit 77; }

W=$(mktemp -d "${TMPDIR:-/tmp}/rmdiag-slurm.XXXXXX")
chmod 755 "$W"  # munged (user munge) reaches its socket folder through it
HOST=$(hostname -s)
CONF=$W/slurm.conf
mkdir -p "$W/state" "$W/spool" "$W/run" "$W/munge" "$W/bin"

cleanup() {
  for f in "$W/run/slurmd.pid" "$W/run/slurmctld.pid" "$W/munge/munged.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  sleep 0.5
  rm -rf "$W"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# ---- the cluster -------------------------------------------------------------------------------
# Two free TCP ports: bound to port 0 and released (another program could take one in between, so the
# start is retried with fresh ports).
free_ports() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("", 0))
print(*[x.getsockname()[1] for x in s])'
  else
    echo $((20000 + RANDOM % 20000)) $((40000 + RANDOM % 20000))
  fi
}

# A munged of our own: its key, socket, pid and log in $W/munge (Slurm finds it through AuthInfo).
dd if=/dev/urandom of="$W/munge/munge.key" bs=1024 count=1 2>/dev/null
chown -R munge:munge "$W/munge"
chmod 755 "$W/munge" && chmod 400 "$W/munge/munge.key"
runuser -u munge -- munged --socket="$W/munge/socket" --key-file="$W/munge/munge.key" \
  --pid-file="$W/munge/munged.pid" --log-file="$W/munge/munged.log" --seed-file="$W/munge/seed" ||
  { echo "FAIL: cannot start munged"; cat "$W/munge/munged.log" 2>/dev/null; exit 1; }

write_conf() {
  cat > "$CONF" <<CONF
ClusterName=rmdiagtest
SlurmctldHost=$HOST
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$W/munge/socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=pmix
MailProg=/bin/true
SlurmdParameters=config_overrides
EnforcePartLimits=ALL
SchedulerParameters=batch_sched_delay=0
MinJobAge=60
KillWait=2
ReturnToService=2
GresTypes=gpu
TmpFS=$W/tmp
FirstJobId=$FIRST_JOB
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/run/slurmctld.pid
SlurmdPidFile=$W/run/slurmd.pid
SlurmctldLogFile=$W/slurmctld.log
SlurmdLogFile=$W/slurmd.log
SlurmctldPort=$1
SlurmdPort=$2
NodeName=$HOST CPUs=8 Gres=gpu:2 State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
  # two stand-in GPUs (the devices are only counted; nothing opens them)
  printf 'NodeName=%s Name=gpu File=/dev/null\nNodeName=%s Name=gpu File=/dev/zero\n' "$HOST" "$HOST" > "$W/gres.conf"
}
export SLURM_CONF=$CONF
# job ids of our own: slurmstepd and the PMIx server name their files and sockets by job and step, so
# two test clusters on one host must never run the same job id
FIRST_JOB=$(( (RANDOM * 32768 + RANDOM) % 50000000 + 1000 ))
mkdir -p "$W/tmp"
state=none
for attempt in 1 2 3; do
  write_conf $(free_ports)
  slurmctld -f "$CONF" && slurmd -f "$CONF" || { cat "$W/slurmctld.log" "$W/slurmd.log" 2>/dev/null; }
  for i in $(seq 100); do
    state=$(sinfo -h -o %T 2>/dev/null | head -1)
    [ "$state" = idle ] && break
    sleep 0.2
  done
  [ "$state" = idle ] && break
  for f in "$W/run/slurmd.pid" "$W/run/slurmctld.pid"; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  sleep 1
done
if [ "$state" != idle ]; then echo "FAIL: node not idle ($state)"; tail -20 "$W/slurmctld.log" "$W/slurmd.log"; exit 1; fi
echo "cluster up: ports $(sed -n 's/^Slurm\(ctld\|d\)Port=//p' "$CONF" | tr '\n' ' ')in $W"

# srun as the script sees it: a wrapper that notes every launch (not --mpi=list) before the real srun,
# so "nothing was launched" can be checked.
REAL_SRUN=$(command -v srun)
cat > "$W/bin/srun" <<EOF
#!/bin/bash
case " \$* " in *" --mpi=list "*) ;; *) echo "\${SLURM_JOB_ID:-?} \$*" >> "$W/srun.calls" ;; esac
exec "$REAL_SRUN" "\$@"
EOF
chmod +x "$W/bin/srun"
touch "$W/srun.calls"
# the system PATH (no build folder in it), the srun wrapper first
CLEAN_PATH=$W/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ON_PATH=$(PATH=$CLEAN_PATH command -v rmdiag)
launched() { grep -q "^$1 " "$W/srun.calls"; }

# Submissions run side by side: `submit NAME [SBATCH OPTIONS] -- SCRIPT ARGS` queues a job whose log is
# $W/NAME.out; `wait_all` polls the controller until every queued job has ended and writes each exit
# status to $W/NAME.rc (polling is much quicker than sbatch --wait's own back-off).
queued=()
submit() {
  local name=$1; shift
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  : > "$W/$name.out"
  (cd "$W" && PATH=$CLEAN_PATH sbatch --parsable --nodes=1 --ntasks=2 --gpus-per-node=0 --time=5 \
     --output="$W/$name.out" "${opts[@]}" "$@" > "$W/$name.id" 2> "$W/$name.sbatch") ||
    { echo "FAIL: sbatch $name: $(cat "$W/$name.sbatch")"; exit 1; }
  queued+=("$name")
}
# the state of a job (an array: a state of a task that has not ended, else the first task's)
TERMINAL="COMPLETED FAILED CANCELLED TIMEOUT NODE_FAIL OUT_OF_MEMORY BOOT_FAIL DEADLINE PREEMPTED"
job_state() {
  local states st
  states=$(scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
  for st in $states; do case " $TERMINAL " in *" $st "*) ;; *) echo "$st"; return ;; esac; done
  echo "$states" | head -1
}
wait_all() {
  local left=("${queued[@]}") t=0
  while [ ${#left[@]} -gt 0 ] && [ $t -lt 1500 ]; do
    local still=()
    for n in "${left[@]}"; do
      local id st
      id=$(id_of "$n")
      st=$(job_state "$id")
      if [ -n "$st" ] && [[ " $TERMINAL " == *" $st "* ]]; then
        scontrol show job "$id" | grep -o ' ExitCode=[0-9]*' | cut -d= -f2 | sort -n | tail -1 > "$W/$n.rc"
      else
        still+=("$n")
      fi
    done
    left=("${still[@]}")
    [ ${#left[@]} -gt 0 ] && { sleep 0.2; t=$((t + 1)); }
  done
  for n in "${left[@]}"; do echo "FAIL: job $n did not end in 5 minutes"; echo 99 > "$W/$n.rc"; done
  queued=()
}
rc_of() { cat "$W/$1.rc" 2>/dev/null || echo none; }
id_of() { grep -o '^[0-9]*' "$W/$1.id" | head -1; }
log_has() { grep -qF -- "$2" "$W/$1.out"; }

# ---- inputs ------------------------------------------------------------------------------------
# A small cm input made with rmdiag's own importer: 40 pairs x 4 runs, 8 users.
awk 'BEGIN { print "run,pair,user,reward_chosen,reward_rejected,in_train";
  for (p = 0; p < 40; p++) for (r = 0; r < 4; r++) {
    u = p % 8; flag = ((u + r) % 3 != 0) ? 1 : 0;
    printf "%d,%d,u%d,%.3f,%.3f,%d\n", r, p, u, (p * 7 + r * 3) % 11 / 4.0, (p * 5 + r) % 7 / 4.0, flag } }' > "$W/pairs.csv"
"$RMDIAG" import cm-csv "$W/pairs.csv" -o "$W/pairs.h5" 2>/dev/null || { echo "FAIL: import"; exit 1; }
job() {  # job NAME OUTDIR BOOTSTRAP: a one-job file $W/NAME.json
  printf '{"output_dir": "%s", "seed": 1, "jobs": [{"name": "%s", "kind": "cm", "input": "pairs.h5", "bootstrap": %s}]}\n' \
    "$2" "$1" "$3" > "$W/$1.json"
}

# ---- phase 1: every independent submission at once ---------------------------------------------
# 1. the shipped script with RMDIAG set: 2 ranks under srun --mpi=pmix
job slurm-cm out 100
submit first -- "$SCRIPT" "$W/slurm-cm.json" --quiet
# 2. finding the binary: a checkout (the shipped script in jobs/, the binary in build/, whatever this
# build folder is called), an install prefix, nothing to find, RMDIAG not executable
mkdir -p "$W/checkout/jobs" "$W/checkout/build" "$W/lone" "$W/mine"
cp "$SCRIPT" "$W/checkout/jobs/" && ln -s "$RMDIAG" "$W/checkout/build/rmdiag"
cp "$SCRIPT" "$W/lone/"
job find-build out-build 50
RMDIAG= submit build -- "$W/checkout/jobs/rmdiag.sbatch" "$W/find-build.json"
installed=0
if cmake --install "$BUILD" --prefix "$W/prefix" > "$W/install.log" 2>&1; then
  installed=1
  job find-prefix out-prefix 50
  RMDIAG= submit prefix -- "$W/prefix/share/rmdiag/jobs/rmdiag.sbatch" "$W/find-prefix.json"
else
  fail "cmake --install $BUILD: $(tail -3 "$W/install.log")"
fi
[ -z "$ON_PATH" ] && RMDIAG= submit none -- "$W/lone/rmdiag.sbatch" "$W/slurm-cm.json"
RMDIAG=$W/pairs.csv submit notexec -- "$SCRIPT" "$W/slurm-cm.json"
# 3. modules: none on the node; a stand-in module system (what Lmod's init script provides: a
# `module` function) whose rmdiag/test puts a folder holding rmdiag on PATH; a module that does not load
have_modules=0
for f in /etc/profile.d/lmod.sh /etc/profile.d/modules.sh /usr/share/lmod/lmod/init/bash /usr/share/modules/init/bash; do
  [ -f "$f" ] && have_modules=1
done
[ $have_modules = 0 ] && RMDIAG= RMDIAG_MODULES="gcc openmpi" submit nomod -- "$W/lone/rmdiag.sbatch" "$W/slurm-cm.json"
mkdir -p "$W/modules/init" "$W/modules/rmdiag/test/bin"
ln -s "$RMDIAG" "$W/modules/rmdiag/test/bin/rmdiag"
{
  echo 'module() {'
  echo '  [ "$1" = load ] || return 1'
  echo '  shift'
  echo '  for m in "$@"; do'
  echo "    [ -d \"$W/modules/\$m\" ] ||"
  echo "      { echo \"Lmod has detected the following error: module \$m not found\" >&2; return 1; }"
  echo "    PATH=$W/modules/\$m/bin:\$PATH"
  echo '  done'
  echo '}'
} > "$W/modules/init/bash"
job find-module out-module 50
RMDIAG= MODULESHOME=$W/modules RMDIAG_MODULES=rmdiag/test submit mod -- "$W/lone/rmdiag.sbatch" "$W/find-module.json"
RMDIAG= MODULESHOME=$W/modules RMDIAG_MODULES="rmdiag/test hdf5/none" \
  submit badmod -- "$W/lone/rmdiag.sbatch" "$W/slurm-cm.json"
# 4. an MPI plugin srun lacks; a missing job file
RMDIAG_MPI=pmi1 submit mpi -- "$SCRIPT" "$W/slurm-cm.json"
submit nojob -- "$SCRIPT" "$W/no-such-job.json"
# 5. GPUs requested: --backend cuda (never a silent CPU run); an explicit --backend wins
job gpu-cm out-gpu 50
job gpucpu-cm out-gpucpu 50
submit gpu --gpus-per-node=1 -- "$SCRIPT" "$W/gpu-cm.json"
submit gpucpu --gpus-per-node=1 -- "$SCRIPT" "$W/gpucpu-cm.json" --backend cpu --quiet
# 7. a job array over a list of job files (6, the requeue, comes last)
mkdir -p "$W/sweep"
for k in 1 2 3; do
  printf '{"output_dir": "out", "seed": %d, "jobs": [{"name": "a%d", "kind": "cm", "input": "../pairs.h5", "bootstrap": 50}]}\n' \
    "$k" "$k" > "$W/sweep/a$k.json"
done
(cd "$W" && ls sweep/a*.json > sweep.list)
submit arr --array=1-3 --ntasks=1 --output="$W/arr-%A_%a.out" -- "$SCRIPT" @sweep.list
submit noarray -- "$SCRIPT" @sweep.list
wait_all

# ---- checks of phase 1 --------------------------------------------------------------------------
R=$W/out/slurm-cm.json
if [ "$(rc_of first)" = 0 ] && grep -q '"ranks":[[:space:]]*2' "$R" && grep -q '"n_pairs":[[:space:]]*40' "$R" &&
   grep -q '"n_users":[[:space:]]*8' "$R" && [ -f "$W/out/slurm-cm.h5" ]; then
  ok "sbatch ran rmdiag on 2 ranks through srun --mpi=pmix (RMDIAG set)"
else
  fail "the plain submission (exit $(rc_of first))"; cat "$W/first.out" "$W/first.sbatch"
fi
log_has first "binary: $RMDIAG" && log_has first "1 CPU each" && log_has first "attempt 1" ||
  fail "the log names the binary, one CPU per rank and the attempt"
# the same job as a plain process: the same result and .h5 bytes (determinism through srun)
cp "$R" "$W/slurm.json" && cp "$W/out/slurm-cm.h5" "$W/slurm.h5"
"$RMDIAG" run "$W/slurm-cm.json" --force --quiet >/dev/null
result() { sed -n '/"result"/,$p' "$1"; }
[ "$(result "$W/slurm.json")" = "$(result "$R")" ] && cmp -s "$W/slurm.h5" "$W/out/slurm-cm.h5" &&
  ok "the srun report and .h5 equal the plain process's" || fail "srun and plain process differ"

[ "$(rc_of build)" = 0 ] && log_has build "binary: $W/checkout/build/rmdiag" && [ -f "$W/out-build/find-build.json" ] &&
  ok "found in the checkout's build folder" || { fail "lookup from the checkout"; cat "$W/build.out"; }
if [ $installed = 1 ]; then
  [ "$(rc_of prefix)" = 0 ] && log_has prefix "binary: $W/prefix/bin/rmdiag" &&
    ok "the installed script finds the installed binary" || { fail "lookup from the prefix"; cat "$W/prefix.out"; }
fi
if [ -z "$ON_PATH" ]; then
  [ "$(rc_of none)" = 2 ] && log_has none "error: cannot find rmdiag; looked at:" && log_has none "Set RMDIAG=" &&
    ! launched "$(id_of none)" && ok "no binary: exit 2 before srun, saying what to set" ||
    { fail "a missing binary"; cat "$W/none.out"; }
else
  echo "note: $ON_PATH is on the system PATH; the binary-not-found case is not tried"
fi
[ "$(rc_of notexec)" = 2 ] && log_has notexec "RMDIAG=$W/pairs.csv is not an executable file" &&
  ! launched "$(id_of notexec)" && ok "RMDIAG not executable: exit 2 before srun" ||
  { fail "RMDIAG not executable"; cat "$W/notexec.out"; }

if [ $have_modules = 0 ]; then
  [ "$(rc_of nomod)" = 2 ] && log_has nomod 'RMDIAG_MODULES="gcc openmpi" but this node has no `module` command' &&
    ! launched "$(id_of nomod)" && ok "RMDIAG_MODULES without a module system: exit 2 before srun" ||
    { fail "no module command"; cat "$W/nomod.out"; }
else
  echo "note: this machine has a module system; the no-module case is not tried"
fi
[ "$(rc_of mod)" = 0 ] && log_has mod "modules: rmdiag/test" &&
  log_has mod "binary: $W/modules/rmdiag/test/bin/rmdiag" &&
  [ -f "$W/out-module/find-module.json" ] && ok "RMDIAG_MODULES loads a module that provides rmdiag" ||
  { fail "loading a module"; cat "$W/mod.out"; }
[ "$(rc_of badmod)" = 2 ] && log_has badmod "module load rmdiag/test hdf5/none failed" &&
  ! launched "$(id_of badmod)" &&
  ok "a module that does not load: exit 2 before srun" || { fail "a failing module load"; cat "$W/badmod.out"; }

[ "$(rc_of mpi)" = 2 ] && log_has mpi "RMDIAG_MPI=pmi1 is not an MPI plugin of this cluster's srun (it has: pmix" &&
  log_has mpi "pmi2 for MPICH" && ! launched "$(id_of mpi)" && ok "an MPI plugin srun lacks: exit 2 before srun" ||
  { fail "RMDIAG_MPI=pmi1"; cat "$W/mpi.out"; }
[ "$(rc_of nojob)" = 2 ] && log_has nojob "job file $W/no-such-job.json not found" && ! launched "$(id_of nojob)" &&
  ok "a missing job file: exit 2 before srun" || { fail "missing job file"; cat "$W/nojob.out"; }

if ! log_has gpu "rmdiag run $W/gpu-cm.json --resume --wait --backend cuda" || ! launched "$(id_of gpu)"; then
  fail "GPUs requested: the launch does not ask for --backend cuda"; cat "$W/gpu.out"
elif [ "$(rc_of gpu)" != 0 ]; then
  log_has gpu "rmdiag: error: --backend cuda" && [ ! -f "$W/out-gpu/gpu-cm.json" ] &&
    ok "GPUs requested where CUDA does not start: the run fails loudly (exit $(rc_of gpu)):" \
       "$(grep -o 'rmdiag: error: .*' "$W/gpu.out" | head -1)" ||
    { fail "the failed GPU run says why"; cat "$W/gpu.out"; }
else
  grep -q '"backend":[[:space:]]*"cuda' "$W/out-gpu/gpu-cm.json" && ok "GPUs requested: the run used CUDA" ||
    fail "GPUs requested but the report's backend is not cuda"
fi
[ "$(rc_of gpucpu)" = 0 ] && ! log_has gpucpu "--backend cuda" && [ -f "$W/out-gpucpu/gpucpu-cm.json" ] &&
  ok "an explicit --backend wins" || { fail "--backend cpu with GPUs"; cat "$W/gpucpu.out"; }

[ "$(rc_of arr)" = 0 ] && [ -f "$W/sweep/out/a1.json" ] && [ -f "$W/sweep/out/a2.json" ] &&
  [ -f "$W/sweep/out/a3.json" ] &&
  grep -q "array task 2: sweep/a2.json" "$W"/arr-*_2.out && ok "--array=1-3 over @sweep.list ran the three job files (one output folder: they took turns, --wait)" ||
  { fail "the job array (exit $(rc_of arr))"; cat "$W"/arr-*.out; }
[ "$(rc_of noarray)" = 2 ] && log_has noarray "submit it as an array, e.g. sbatch --array=1-3" &&
  ok "@LIST without --array: exit 2" || { fail "@LIST without --array"; cat "$W/noarray.out"; }

# ---- phase 2: a copy of the installed script (the job prefix ran is skipped); requeue ------------
[ $installed = 1 ] && cp "$W/prefix/share/rmdiag/jobs/rmdiag.sbatch" "$W/mine/run.sbatch" &&
  RMDIAG= submit copy -- "$W/mine/run.sbatch" "$W/find-prefix.json"
# 6. requeue: quick runs first, slow takes a few seconds; the job is requeued once quick's report
# exists, and the next attempt continues with --resume in the same, appended log
printf '%s\n' '{"output_dir": "out-rq", "seed": 3, "jobs": [' \
  '  {"name": "quick", "kind": "cm", "input": "pairs.h5", "bootstrap": 100},' \
  '  {"name": "slow", "kind": "cm", "input": "pairs.h5", "bootstrap": 1500000}]}' > "$W/rq.json"
RMDIAG_RANKS_PER_JOB=all submit rq -- "$SCRIPT" "$W/rq.json"
RQ=$(id_of rq)
for i in $(seq 600); do [ -f "$W/out-rq/quick.json" ] && break; sleep 0.1; done
if scontrol requeue "$RQ"; then
  # a requeued job waits for its begin time (about two minutes); let it start sooner. Not in the
  # same second: slurmd revoked the first attempt's credential when it killed it and refuses any
  # credential of this job created in or before that second ("Job credential revoked"), so the
  # next attempt starts two seconds after the job is pending again.
  for i in $(seq 200); do
    [ "$(job_state "$RQ")" = PENDING ] && { sleep 2; scontrol update JobId="$RQ" StartTime=now; break; }
    sleep 0.1
  done
else
  fail "scontrol requeue $RQ"
fi
wait_all
if [ $installed = 1 ]; then
  [ "$(rc_of copy)" = 0 ] && log_has copy "binary: $W/prefix/bin/rmdiag" && log_has copy "skipped (--resume)" &&
    ok "a copy of the installed script finds it too" || { fail "lookup from a copy"; cat "$W/copy.out"; }
fi
attempts=$(grep -c "rmdiag.sbatch: job $RQ, attempt" "$W/rq.out")
[ "$(rc_of rq)" = 0 ] && [ "$attempts" = 2 ] && log_has rq "attempt 2" && log_has rq "quick (cm) done" &&
  log_has rq "quick is up to date (same spec), skipped (--resume)" && [ -f "$W/out-rq/slow.json" ] &&
  ok "requeued: attempt 2 skipped the finished job (--resume), finished the other, and the log kept attempt 1" ||
  { fail "requeue with --resume (exit $(rc_of rq), $attempts attempts in the log)"; cat "$W/rq.out"; }

# ---- 8. outside Slurm: the same checks, then validate -----------------------------------------------
out=$(cd "$W" && env -u SLURM_JOB_ID RMDIAG="$RMDIAG" bash "$SCRIPT" "$W/slurm-cm.json" 2>&1)
[ $? = 0 ] && echo "$out" | grep -q "checking only" && echo "$out" | grep -q "1 job valid" &&
  ok "outside Slurm the script checks and validates" || fail "check-only mode: $out"

if [ $fails != 0 ]; then echo "$fails checks failed"; tail -5 "$W/slurmctld.log"; exit 1; fi
echo "PASS: jobs/rmdiag.sbatch on the single-host Slurm: run, lookup, failures before srun, GPUs, requeue, array"
