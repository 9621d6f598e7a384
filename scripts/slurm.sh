#!/usr/bin/env bash
# A private single-node Slurm cluster on this machine, for trying and testing the Slurm
# launchers (packaging/slurm/):
#   bash scripts/slurm.sh install  # install slurm-wlm and munge (apt; sudo when not root)
#   bash scripts/slurm.sh start    # install if missing, start, wait until the node is idle
#   bash scripts/slurm.sh status   # daemons and `sinfo`
#   bash scripts/slurm.sh env      # prints `export SLURM_CONF=...` for sbatch, squeue, sinfo
#   bash scripts/slurm.sh stop     # cancel its jobs, stop the daemons, remove the state
#
# Everything (munge key and socket, slurm.conf, spool, state, logs) lives in one folder,
# $FRAMECULL_SLURM_DIR (default ${TMPDIR:-/tmp}/framecull-slurm); nothing in /etc is
# changed and a system Slurm, if any, is left alone. No cgroups (proctrack/linuxproc,
# task/none), so it runs in a container too. The ports are $FRAMECULL_SLURM_PORT and the
# next one (default 16817 and 16818, beside Slurm's usual 6817/6818). Clients find this
# cluster through SLURM_CONF (see `env`). start and stop are idempotent. Runs as root (CI) or
# as an ordinary user, whose jobs then run as that user.
set -euo pipefail

state="${FRAMECULL_SLURM_DIR:-${TMPDIR:-/tmp}/framecull-slurm}"
port="${FRAMECULL_SLURM_PORT:-16817}"
conf="$state/slurm.conf"
socket="$state/munge/munge.socket.2"
export SLURM_CONF="$conf"

say() { printf 'slurm.sh: %s\n' "$*" >&2; }

install_packages() {
  local missing=() p
  for p in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    say "apt-get not found; install these packages by hand: ${missing[*]}"
    exit 2
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  # Debian's packages do not start their services where policy-rc.d forbids it (containers);
  # where they do start, the system daemons use /etc and the usual ports, not ours.
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Whether daemon NAME (munged, slurmctld, slurmd) of this cluster runs: the pid in its pid
# file is alive and is that program (not another process that got the pid since).
alive() {
  local pid
  [ -f "$state/$1.pid" ] || return 1
  pid="$(cat "$state/$1.pid" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ "$(ps -p "$pid" -o comm= 2>/dev/null)" = "$1" ]
}

write_config() {
  local user node
  user="$(id -un)"
  # This host as slurmd sees it: NodeName=... CPUs=... RealMemory=... (first line).
  node="$(slurmd -C | sed -n 1p)"
  case "$node" in
    NodeName=*) ;;
    *) say "unexpected output of 'slurmd -C': $node"; exit 2 ;;
  esac
  host="${node%% *}"
  host="${host#NodeName=}"
  cat >"$conf" <<EOF
# Written by scripts/slurm.sh: a single-node cluster on localhost, state in $state.
ClusterName=framecull
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
# cred_expire: also how long a requeued job waits before it may run again (default 120 s).
AuthInfo=socket=$socket,cred_expire=15
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: this may run in a container.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobContainerType=job_container/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
# One task per core: array tasks share the node.
SchedulerType=sched/backfill
# Jobs that become eligible (a requeued one after cred_expire) start within seconds.
SchedulerParameters=bf_interval=5
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

wait_idle() {
  local i out=""
  for i in $(seq 1 60); do
    out="$(sinfo -h -o '%t' 2>/dev/null || true)"
    case "$out" in
      idle* | mix* | alloc*) return 0 ;;
    esac
    # A node that came up down (an earlier run's state) is resumed.
    if [ "$i" -eq 10 ]; then
      scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
    fi
    sleep 1
  done
  say "the node did not become idle (sinfo: '${out:-no answer}'); logs in $state"
  tail -n 20 "$state/slurmctld.log" "$state/slurmd.log" >&2 || true
  exit 1
}

start() {
  install_packages
  mkdir -p "$state"
  chmod 0700 "$state"
  mkdir -p "$state/munge" "$state/ctld" "$state/spool"
  chmod 0700 "$state/munge"
  if [ ! -f "$state/munge.key" ]; then
    (umask 077 && head -c 1024 /dev/urandom >"$state/munge.key")
  fi
  if ! alive munged; then
    # --force: munged refuses some setups (running as root, a key in /tmp) without it.
    munged --force --key-file="$state/munge.key" --socket="$socket" \
      --pid-file="$state/munged.pid" --log-file="$state/munged.log" \
      --seed-file="$state/munged.seed"
  fi
  if [ ! -f "$conf" ]; then
    write_config
  fi
  host="$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' "$conf")"
  if ! alive slurmctld; then
    # -i: ignore state files an earlier, killed run left behind.
    slurmctld -i -f "$conf"
  fi
  if ! alive slurmd; then
    slurmd -f "$conf" -N "$host"
  fi
  wait_idle
  say "running (SLURM_CONF=$conf)"
}

stop() {
  if [ -f "$conf" ] && alive slurmctld; then
    scancel --full --quiet --user "$(id -un)" 2>/dev/null || true
    # Give the jobs' steps a moment to end before their slurmd goes.
    for _ in 1 2 3 4 5; do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 1
    done
  fi
  local name pid
  for name in slurmd slurmctld munged; do
    if alive "$name"; then
      pid="$(cat "$state/$name.pid")"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 20); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$state"
}

status() {
  local name up=0
  for name in munged slurmctld slurmd; do
    if alive "$name"; then
      echo "$name: running (pid $(cat "$state/$name.pid"))"
      up=$((up + 1))
    else
      echo "$name: not running"
    fi
  done
  if ((up == 3)); then
    sinfo
    squeue
  fi
  ((up == 3))
}

case "${1:-}" in
  install) install_packages ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *)
    echo "usage: $0 install|start|stop|status|env" >&2
    exit 2
    ;;
esac
