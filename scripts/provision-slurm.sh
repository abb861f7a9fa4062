#!/usr/bin/env bash
# A private one-node Slurm cluster on this machine, for the Slurm executor's tests and benchmark.
#
#   scripts/provision-slurm.sh start   installs slurm-wlm and munge from Debian when missing,
#                                      starts munged (if no munge daemon answers) and a private
#                                      slurmctld + slurmd on free ports with 4 pretend GPUs, and
#                                      prints SLURM_CONF=<path> once the node is idle
#   scripts/provision-slurm.sh stop    cancels every job of the cluster and stops what `start`
#                                      started (by the pids in its pid files), then removes its state
#   scripts/provision-slurm.sh env     prints SLURM_CONF=<path> of the running cluster
#
# Everything lives under $INFERTUNE_SLURM_DIR (default ${TMPDIR:-/tmp}/infertune-slurm): the
# configuration, state and spool folders, logs, pid files and the pretend GPU device files.
# `start` is idempotent: a cluster that is already up is reused. Jobs asking `--gres=gpu:N` get
# their own pretend GPUs (a fifth single-GPU job waits), but Slurm sets neither
# CUDA_VISIBLE_DEVICES nor SLURM_JOB_GPUS for them: the indices a job holds are in
# `scontrol show job -d $SLURM_JOB_ID` (`GRES=gpu:1(IDX:2)`). Needs root (the daemons run
# as root, as on a real node). Its install and start times: docs/benchmarks.md.
set -euo pipefail

DIR="${INFERTUNE_SLURM_DIR:-${TMPDIR:-/tmp}/infertune-slurm}"
CONF="$DIR/slurm.conf"
GPUS=4

log() { printf '[provision-slurm] %s\n' "$*" >&2; }
die() { printf '[provision-slurm] error: %s\n' "$*" >&2; exit 1; }

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_packages() {
    command -v slurmctld >/dev/null && command -v munged >/dev/null && return
    [[ $(id -u) == 0 ]] || die "Slurm is not installed: run 'apt-get install -y slurm-wlm munge' as root"
    log "installing slurm-wlm and munge from Debian"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >&2 \
        || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >&2; } \
        || die "apt-get could not install slurm-wlm and munge"
}

# munge authenticates every Slurm message; a munged that already answers is used as it is.
start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        return
    fi
    [[ -f /etc/munge/munge.key ]] || die "/etc/munge/munge.key is missing: reinstall munge"
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge: /run/munge /var/log/munge /var/lib/munge /etc/munge /etc/munge/munge.key
    chmod 0700 /etc/munge /var/lib/munge /var/log/munge
    chmod 0755 /run/munge
    su -s /bin/sh munge -c munged || die "munged did not start (see /var/log/munge/munged.log)"
    touch "$DIR/munged.ours"
    for _ in $(seq 50); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return
        sleep 0.1
    done
    die "munged started but 'munge -n | unmunge' fails"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

write_config() {
    local host cpus mem ctld_port slurmd_port
    host=$(hostname -s)
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ { print int($2 / 1024 * 0.8) }' /proc/meminfo)
    ctld_port=$(free_port)
    slurmd_port=$(free_port)
    while [[ $slurmd_port == "$ctld_port" ]]; do slurmd_port=$(free_port); done
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/dev"
    for i in $(seq 0 $((GPUS - 1))); do : >"$DIR/dev/gpu$i"; done
    cat >"$CONF" <<CONF
ClusterName=infertune
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
SlurmUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
GresTypes=gpu
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerParameters=sched_interval=1
MinJobAge=30
NodeName=$host CPUs=$cpus RealMemory=$mem Gres=gpu:$GPUS State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
    cat >"$DIR/gres.conf" <<CONF
AutoDetect=off
NodeName=$host Name=gpu File=$DIR/dev/gpu[0-$((GPUS - 1))]
CONF
}

running() {
    alive "$DIR/slurmctld.pid" && alive "$DIR/slurmd.pid" \
        && SLURM_CONF="$CONF" timeout 10 sinfo -h >/dev/null 2>&1
}

start() {
    mkdir -p "$DIR"
    if running; then
        log "reusing the cluster in $DIR"
        echo "SLURM_CONF=$CONF"
        return
    fi
    stop_daemons
    install_packages
    start_munge
    rm -rf "$DIR/state" "$DIR/spool" "$DIR/log"
    write_config
    export SLURM_CONF="$CONF"
    slurmctld -f "$CONF" || die "slurmctld did not start (see $DIR/log/slurmctld.log)"
    slurmd -f "$CONF" || die "slurmd did not start (see $DIR/log/slurmd.log)"
    local state=""
    for _ in $(seq 100); do
        state=$(timeout 5 sinfo -h -o %T 2>/dev/null | head -n 1 || true)
        [[ $state == idle* ]] && break
        sleep 0.2
    done
    [[ $state == idle* ]] || die "the node did not become idle (state '$state'); see $DIR/log/"
    log "cluster up: node $(hostname -s), $GPUS pretend GPUs, config $CONF"
    echo "SLURM_CONF=$CONF"
}

stop_daemons() {
    local name
    if [[ -f "$CONF" ]] && alive "$DIR/slurmctld.pid"; then
        SLURM_CONF="$CONF" timeout 10 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    fi
    for name in slurmd slurmctld; do
        if alive "$DIR/$name.pid"; then
            kill "$(cat "$DIR/$name.pid")" 2>/dev/null || true
            for _ in $(seq 50); do alive "$DIR/$name.pid" || break; sleep 0.1; done
            if alive "$DIR/$name.pid"; then kill -9 "$(cat "$DIR/$name.pid")" 2>/dev/null || true; fi
        fi
        rm -f "$DIR/$name.pid"
    done
}

# A munged this cluster started is handed to another cluster still running on this machine
# (its slurmctld's `-f` names its folder), which stops it in turn; with none left it is stopped.
release_munge() {
    [[ -f "$DIR/munged.ours" ]] || return 0
    rm -f "$DIR/munged.ours"
    local other
    other=$(pgrep -a -x slurmctld | sed -n 's|.* -f \(.*\)/slurm\.conf$|\1|p' | head -n 1)
    if [[ -n $other && -d $other ]]; then
        touch "$other/munged.ours"
        log "munged left running for the cluster in $other"
    else
        pkill -F /run/munge/munged.pid 2>/dev/null || true
    fi
}

stop() {
    [[ -d "$DIR" ]] || return 0
    stop_daemons
    release_munge
    rm -rf "$DIR"
    log "cluster stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env)
        running || die "no cluster is running in $DIR: run '$0 start'"
        echo "SLURM_CONF=$CONF"
        ;;
    *) die "usage: $0 start|stop|env" ;;
esac
