#!/bin/bash
# Brings up a real single-host Slurm cluster (slurmctld + slurmd + munge, state in a scratch
# folder), submits jobs/rmdiag.sbatch with `sbatch --wait` on a small cm job (2 ranks through
# srun --mpi=pmix), checks the report, and shuts the daemons down again.
# usage: scripts/slurm_test.sh PATH/TO/rmdiag        (exit 77 = skipped: not root or no Slurm)
set -uo pipefail
RMDIAG=$(readlink -f "${1:?usage: slurm_test.sh RMDIAG}")
SRC=$(cd "$(dirname "$0")/.." && pwd)

if [ "$(id -u)" != 0 ]; then echo "SKIP: the single-host Slurm test needs root (to start slurmd and munged)"; exit 77; fi
for b in slurmctld slurmd sbatch sinfo munged munge; do
  if ! command -v "$b" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$b" ]; then
    echo "SKIP: $b not installed (apt-get install slurmctld slurmd slurm-client munge)"; exit 77
  fi
done
PATH=$PATH:/usr/sbin

W=$(mktemp -d "${TMPDIR:-/tmp}/rmdiag-slurm.XXXXXX")
HOST=$(hostname -s)
CONF=$W/slurm.conf
mkdir -p "$W/state" "$W/spool" "$W/run"
cat > "$CONF" <<CONF
ClusterName=rmdiagtest
SlurmctldHost=$HOST
SlurmUser=root
AuthType=auth/munge
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
MinJobAge=5
ReturnToService=2
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/run/slurmctld.pid
SlurmdPidFile=$W/run/slurmd.pid
SlurmctldLogFile=$W/slurmctld.log
SlurmdLogFile=$W/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
NodeName=$HOST CPUs=4 State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$CONF

started_munge=0
cleanup() {
  for f in "$W/run/slurmd.pid" "$W/run/slurmctld.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  if [ "$started_munge" = 1 ] && [ -f /run/munge/munged.pid ]; then kill "$(cat /run/munge/munged.pid)" 2>/dev/null; fi
  sleep 0.5
  rm -rf "$W"
}
trap cleanup EXIT

if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  install -d -o munge -g munge /run/munge
  [ -f /etc/munge/munge.key ] || { echo "FAIL: /etc/munge/munge.key missing"; exit 1; }
  runuser -u munge -- /usr/sbin/munged || { echo "FAIL: cannot start munged"; exit 1; }
  started_munge=1
fi
slurmctld -f "$CONF" || { echo "FAIL: slurmctld did not start"; cat "$W/slurmctld.log"; exit 1; }
slurmd -f "$CONF" || { echo "FAIL: slurmd did not start"; cat "$W/slurmd.log"; exit 1; }
for i in $(seq 100); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1)
  [ "$state" = idle ] && break
  sleep 0.2
done
if [ "$state" != idle ]; then echo "FAIL: node not idle ($state)"; cat "$W/slurmctld.log" "$W/slurmd.log"; exit 1; fi

# A small cm input made with rmdiag's own importer: 40 pairs x 4 runs, 8 users.
awk 'BEGIN { print "run,pair,user,reward_chosen,reward_rejected,in_train";
  for (p = 0; p < 40; p++) for (r = 0; r < 4; r++) {
    u = p % 8; flag = ((u + r) % 3 != 0) ? 1 : 0;
    printf "%d,%d,u%d,%.3f,%.3f,%d\n", r, p, u, (p * 7 + r * 3) % 11 / 4.0, (p * 5 + r) % 7 / 4.0, flag } }' > "$W/pairs.csv"
"$RMDIAG" import cm-csv "$W/pairs.csv" -o "$W/pairs.h5" || { echo "FAIL: import"; exit 1; }
cat > "$W/job.json" <<JOB
{"output_dir": "out", "seed": 1, "jobs": [{"name": "slurm-cm", "kind": "cm", "input": "pairs.h5", "bootstrap": 100}]}
JOB
cd "$W"
# The GPU directives of the script are for GPU clusters; this node has none.
sbatch --wait --nodes=1 --ntasks=2 --ntasks-per-node=2 --gpus-per-node=0 --cpus-per-task=1 --time=5 \
  --output="$W/batch.out" --export=ALL,RMDIAG="$RMDIAG" "$SRC/jobs/rmdiag.sbatch" "$W/job.json" --quiet
rc=$?
echo "--- batch output"; cat "$W/batch.out"
if [ $rc != 0 ]; then echo "FAIL: sbatch --wait returned $rc"; tail -20 "$W/slurmd.log"; exit 1; fi
R=$W/out/slurm-cm.json
[ -f "$R" ] || { echo "FAIL: no report $R"; exit 1; }
grep -q '"ranks":[[:space:]]*2' "$R" || { echo "FAIL: report does not say 2 ranks"; head -30 "$R"; exit 1; }
grep -q '"n_pairs":[[:space:]]*40' "$R" && grep -q '"n_users":[[:space:]]*8' "$R" || { echo "FAIL: wrong sizes"; exit 1; }
[ -f "$W/out/slurm-cm.h5" ] || { echo "FAIL: no .h5"; exit 1; }
# The same job as a plain process gives the same result and the same .h5 bytes (determinism through
# srun): the srun outputs are kept aside before the plain run replaces them.
cp "$R" "$W/slurm.json"
cp "$W/out/slurm-cm.h5" "$W/slurm.h5"
"$RMDIAG" run "$W/job.json" --force --quiet
python_free_compare() { sed -n '/"result"/,$p' "$1"; }
if [ "$(python_free_compare "$W/slurm.json")" != "$(python_free_compare "$R")" ]; then
  echo "FAIL: result under srun differs from the plain process"; exit 1
fi
cmp -s "$W/slurm.h5" "$W/out/slurm-cm.h5" || { echo "FAIL: the .h5 under srun differs from the plain process"; exit 1; }
# A second submission with --resume skips the finished job.
sbatch --wait --nodes=1 --ntasks=2 --gpus-per-node=0 --cpus-per-task=1 --time=5 --output="$W/batch2.out" \
  --export=ALL,RMDIAG="$RMDIAG" "$SRC/jobs/rmdiag.sbatch" "$W/job.json" >/dev/null
grep -q "skipped (--resume)" "$W/batch2.out" || { echo "FAIL: requeued batch did not skip"; cat "$W/batch2.out"; exit 1; }
echo "PASS: sbatch --wait ran rmdiag on 2 ranks under srun --mpi=pmix; report checked"
