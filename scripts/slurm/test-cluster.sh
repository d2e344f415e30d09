#!/usr/bin/env bash
# A single-host Slurm cluster for the tests (and for trying the job scripts by hand), as root: its own munge key
# and socket, a minimal slurm.conf (proctrack/linuxproc, task/none, no accounting), slurmctld and slurmd, all under
# one state directory and stopped by their PIDs. Needs Debian's slurm-wlm and munge (scripts/install-deps.sh).
#
#   scripts/slurm/test-cluster.sh up STATE_DIR [PORT]   starts it; prints `export SLURM_CONF=STATE_DIR/slurm.conf`
#   scripts/slurm/test-cluster.sh down STATE_DIR        stops the daemons it started
#
# Commands (sbatch, srun, squeue, scontrol) reach this cluster with SLURM_CONF set as printed. PORT (default 16817)
# is slurmctld's; slurmd listens on PORT+1. Up waits until the node is idle (60 s at most), and fails naming the log
# to read when a daemon does not come up.
set -euo pipefail
cmd=${1:?usage: test-cluster.sh up|down STATE_DIR [PORT]}
state=${2:?usage: test-cluster.sh up|down STATE_DIR [PORT]}
port=${3:-16817}

stop_pid_file() {  # stop_pid_file FILE: TERM, then KILL after 5 s, the process whose PID FILE holds
  local file=$1 pid
  [ -s "$file" ] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2> /dev/null; then
    kill "$pid" 2> /dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2> /dev/null || true
  fi
  rm -f "$file"
}

if [ "$cmd" = down ]; then
  stop_pid_file "$state/slurmd.pid"
  stop_pid_file "$state/slurmctld.pid"
  stop_pid_file "$state/munged.pid"
  exit 0
fi
[ "$cmd" = up ] || { echo "test-cluster.sh: unknown command '$cmd' (up or down)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "test-cluster.sh: the test cluster runs its daemons as root" >&2; exit 1; }
for tool in munged slurmctld slurmd sinfo; do
  command -v "$tool" > /dev/null || { echo "test-cluster.sh: $tool not found (apt-get install slurm-wlm munge)" >&2; exit 1; }
done

mkdir -p "$state"
state=$(cd "$state" && pwd)
chmod 0700 "$state"
mkdir -p "$state/munge" "$state/ctld" "$state/spool"
chmod 0700 "$state/munge"
[ -s "$state/munge/munge.key" ] || head -c 1024 /dev/urandom > "$state/munge/munge.key"
chmod 0400 "$state/munge/munge.key"
host=$(hostname -s)
cpus=$(nproc)
memory_mb=$(awk '/MemTotal/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)

munged --force --key-file="$state/munge/munge.key" --socket="$state/munge/munge.socket" \
  --pid-file="$state/munged.pid" --log-file="$state/munged.log" --seed-file="$state/munge/munge.seed"

cat > "$state/slurm.conf" <<CONF
# Written by scripts/slurm/test-cluster.sh: one node, this host, every daemon as root.
ClusterName=pwabtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$state/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
# A node that shares memory with everything else on the machine: jobs ask for no memory by default.
export SLURM_CONF="$state/slurm.conf"
slurmctld -i -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"

for _ in $(seq 600); do
  if sinfo -h -o '%T' 2> /dev/null | grep -q '^idle'; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.1
done
echo "test-cluster.sh: the node did not become idle within 60 s; see $state/slurmctld.log and $state/slurmd.log" >&2
sinfo >&2 || true
exit 1
