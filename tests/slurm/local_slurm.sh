#!/usr/bin/env bash
# A one-node Slurm on this machine, for the tests: munged, slurmctld and slurmd as root,
# with their configuration, state and logs under one folder ($LINALG_IO_SLURM_DIR,
# default /tmp/linalg-io-slurm) and ports of their own (16817/16818), so that no
# system Slurm or munge is touched.
#
#   tests/slurm/local_slurm.sh start    install the Debian packages if missing, write
#                                       the configuration, start the daemons, wait
#                                       until the node is idle (nothing if running)
#   tests/slurm/local_slurm.sh stop     cancel every job, stop the daemons, remove the
#                                       folder (nothing if stopped)
#   tests/slurm/local_slurm.sh status   exit 0 when the node answers and is up
#   tests/slurm/local_slurm.sh env      print `export SLURM_CONF=...` for the clients
#   tests/slurm/local_slurm.sh install  only install the Debian packages if missing
#
# The node is declared with $LINALG_IO_SLURM_CPUS CPUs (8) whatever it has
# (SlurmdParameters=config_overrides), so 4- and 8-task jobs run on a small machine;
# MpiDefault=none as Debian's stock file has it, so jobs ask `srun --mpi=pmix`. The
# node also declares 8 GPUs whose "devices" are character devices like /dev/null made
# in the folder (slurmd counts GPUs by device files; nothing opens them), so the GPU
# templates' `--gpus-per-task` schedules here; the tests run their kernels on the CPU.
# A start that fails part way stops what it started. Needs root and apt-get (Debian).
set -euo pipefail

DIR=${LINALG_IO_SLURM_DIR:-/tmp/linalg-io-slurm}
CPUS=${LINALG_IO_SLURM_CPUS:-8}
CTLD_PORT=16817
SLURMD_PORT=16818
PACKAGES=(slurm-wlm munge libpmix-dev)
CONF=$DIR/slurm.conf
NODE=$(hostname -s)

# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

say() { echo "local_slurm: $*" >&2; }

clients() { SLURM_CONF=$CONF "$@"; }

running() {
    [[ -f $CONF ]] && clients scontrol ping 2>/dev/null | grep -q "is UP" \
        && clients sinfo -h -n "$NODE" -o %t 2>/dev/null | grep -q -E '^(idle|mix|alloc)'
}

install_packages() {
    dpkg -s "${PACKAGES[@]}" >/dev/null 2>&1 && return 0
    if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
        say "needs root and apt-get to install ${PACKAGES[*]}"
        return 1
    fi
    say "installing ${PACKAGES[*]}"
    # the lock timeout: another apt-get on this machine finishes first
    { apt-get -o DPkg::Lock::Timeout=600 update -qq \
        && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
            --no-install-recommends "${PACKAGES[@]}"; } >"${TMPDIR:-/tmp}/local_slurm_apt.log" 2>&1 \
        || { say "apt-get failed:"; tail -5 "${TMPDIR:-/tmp}/local_slurm_apt.log" >&2; return 1; }
}

write_config() {
    mkdir -p "$DIR"/{state,spool,log}
    munge_key "$DIR"
    {
        common_conf "$DIR" "$CTLD_PORT" "$SLURMD_PORT"
        cat <<EOF
ClusterName=linalgio
SlurmctldHost=$NODE
SlurmdSpoolDir=$DIR/spool
SlurmdPidFile=$DIR/slurmd.pid
SlurmdLogFile=$DIR/log/slurmd.log
GresTypes=gpu
NodeName=$NODE CPUs=$CPUS RealMemory=4096 Gres=gpu:8 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    } >"$CONF"
    mkdir -p "$DIR/gpu"
    for i in $(seq 0 7); do
        [[ -c $DIR/gpu/$i ]] || mknod "$DIR/gpu/$i" c 1 3
    done
    echo "NodeName=$NODE Name=gpu File=$DIR/gpu/[0-7]" >"$DIR/gres.conf"
}

start() {
    if running; then
        say "already running ($CONF)"
        return 0
    fi
    install_packages
    stop_daemons
    write_config
    trap 'say "start failed; logs in $DIR/log"; tail -n 5 "$DIR"/log/*.log >&2 || true; stop_daemons; exit 1' ERR
    start_munged "$DIR"
    slurmctld -c -f "$CONF"
    slurmd -c -f "$CONF" -N "$NODE"
    for _ in $(seq 100); do
        running && break
        sleep 0.3
    done
    running || false
    trap - ERR
    say "up: node $NODE, $CPUS CPUs declared, state in $DIR"
}

stop_daemons() {
    if [[ -f $CONF ]]; then
        clients scancel --full --quiet --user=root 2>/dev/null || true
        # let the steps' processes end before slurmd goes (it kills them after KillWait)
        for _ in $(seq 50); do
            [[ -z $(clients squeue -h -o %i 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
    stop_pidfile "$DIR/slurmd.pid"
    stop_pidfile "$DIR/slurmctld.pid"
    stop_pidfile "$DIR/munge/munged.pid"
}

stop() {
    stop_daemons
    rm -rf "$DIR"
    say "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) running ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    install) install_packages ;;
    *) echo "usage: $0 start|stop|status|env|install" >&2; exit 2 ;;
esac
