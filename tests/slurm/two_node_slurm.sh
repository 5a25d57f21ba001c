#!/usr/bin/env bash
# A two-node Slurm on this one machine, for the multi-node tests: the nodes are the
# network namespaces of an emulated cluster (bench/emulated_cluster.sh, name
# $LIO_CLUSTER, default lio24, subnet $LIO_CLUSTER_SUBNET, default 10.214.0), each link
# shaped to $LINALG_IO_SLURM2_RATE (default 1gbit, tc tbf). Each node runs its own slurmd
# inside its namespace under its own hostname (a UTS namespace: the node name), so its
# tasks see that hostname and Open MPI tells the nodes apart; slurmctld runs in node
# 0's namespace; munged runs on the machine (its socket is a file, which every
# namespace reaches). Configuration, state and logs in $LINALG_IO_SLURM2_DIR (default
# /tmp/linalg-io-slurm2), ports 16917/16918, all apart from tests/slurm/local_slurm.sh.
#
#   tests/slurm/two_node_slurm.sh start     the namespaces, munged, slurmctld, two
#                                           slurmd; wait until both nodes are idle
#                                           (nothing if running)
#   tests/slurm/two_node_slurm.sh stop      cancel every job, stop the daemons, remove
#                                           the namespaces and the folder (idempotent)
#   tests/slurm/two_node_slurm.sh status    exit 0 when both nodes answer and are up
#   tests/slurm/two_node_slurm.sh env       the environment a client needs (exports)
#   tests/slurm/two_node_slurm.sh run CMD   CMD (sbatch, srun, squeue, ...) inside node
#                                           0's namespace with that environment
#
# Two slurmd on one machine: Debian's Slurm is built without --enable-multiple-slurmd,
# which only matters when the daemons share one hostname and network; here each has
# its own namespace, address and hostname, and its own spool, pid and log files
# (slurm.conf's %n). Each slurmd also gets a private $DIR/nodetmp (a mount namespace,
# bind-mounted from $DIR/nodetmp-NODE), Slurm's TmpFS: the PMIx plugin makes its
# per-step client directory there under a name without the node's, which two nodes
# sharing /tmp would both make and remove. Between the nodes Open MPI runs over TCP on the subnet
# (btl_tcp_if_include); coll/han is excluded (it crashes in MPI_Finalize across the
# emulated nodes with Open MPI 5.0.x); a waiting rank yields its core (the nodes share
# this machine's cores): `env` exports those settings, sbatch passes them on to the job.
# Needs root, iproute2 and network namespaces (refused with one line, exit 3, where
# they are not permitted); installs Slurm as tests/slurm/local_slurm.sh does. A start
# that fails, or is interrupted, part way stops what it started.
set -Eeuo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export LIO_CLUSTER=${LIO_CLUSTER:-lio24}
export LIO_CLUSTER_SUBNET=${LIO_CLUSTER_SUBNET:-10.214.0}
DIR=${LINALG_IO_SLURM2_DIR:-/tmp/linalg-io-slurm2}
RATE=${LINALG_IO_SLURM2_RATE:-1gbit}
CPUS=${LINALG_IO_SLURM2_CPUS:-4}
CTLD_PORT=16917
SLURMD_PORT=16918
CONF=$DIR/slurm.conf
NODES=("$LIO_CLUSTER-n0" "$LIO_CLUSTER-n1")
CLUSTER=$REPO/bench/emulated_cluster.sh

# shellcheck source=common.sh
. "$HERE/common.sh"

say() { echo "two_node_slurm: $*" >&2; }

client_env() {
    echo "SLURM_CONF=$CONF"
    echo "OMPI_MCA_btl_tcp_if_include=$LIO_CLUSTER_SUBNET.0/24"
    echo "OMPI_MCA_oob_tcp_if_include=$LIO_CLUSTER_SUBNET.0/24"
    echo "OMPI_MCA_coll=^han"
    echo "OMPI_MCA_osc=^ucx"
    # the two nodes share this machine's cores: a node's own count (what linalg-io
    # checks) does not see the other node's ranks spinning on them
    echo "OMPI_MCA_mpi_yield_when_idle=1"
}

# nsenter, not `ip netns exec`: that one remounts /sys, without the cgroup file system
# slurmd needs
in_node() {   # in_node I CMD...: CMD in node I's namespaces (network, hostname, TmpFS)
    local node=${NODES[$1]}
    shift
    nsenter --net="/run/netns/$node" unshare --uts --mount --propagation private sh -c \
        'mount --bind "$1" "$2" && hostname "$0" && shift 2 && exec "$@"' \
        "$node" "$DIR/nodetmp-$node" "$DIR/nodetmp" "$@"
}

clients() {   # a client command in node 0's network namespace
    local vars
    mapfile -t vars < <(client_env)
    nsenter --net="/run/netns/${NODES[0]}" env "${vars[@]}" "$@"
}

running() {
    [[ -f $CONF ]] && [[ -e /run/netns/${NODES[0]} ]] \
        && clients scontrol ping 2>/dev/null | grep -q "is UP" \
        && [[ $(clients sinfo -h -N -o '%N %t' 2>/dev/null | grep -c -E ' (idle|mix|alloc)$') \
              == "${#NODES[@]}" ]]
}

write_config() {
    local i
    mkdir -p "$DIR"/{state,log,nodetmp}
    munge_key "$DIR"
    for i in "${!NODES[@]}"; do
        mkdir -p "$DIR/spool/${NODES[$i]}" "$DIR/nodetmp-${NODES[$i]}"
    done
    common_conf "$DIR" "$CTLD_PORT" "$SLURMD_PORT" >"$CONF"
    cat >>"$CONF" <<EOF
ClusterName=$LIO_CLUSTER
SlurmctldHost=${NODES[0]}($LIO_CLUSTER_SUBNET.1)
SlurmdSpoolDir=$DIR/spool/%n
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmdLogFile=$DIR/log/slurmd-%n.log
TmpFS=$DIR/nodetmp
EOF
    for i in "${!NODES[@]}"; do
        echo "NodeName=${NODES[$i]} NodeAddr=$LIO_CLUSTER_SUBNET.$((i + 1)) CPUs=$CPUS" \
             "RealMemory=2048 State=UNKNOWN" >>"$CONF"
    done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$CONF"
}

fail_start() {
    say "start failed; logs in $DIR/log"
    tail -n 5 "$DIR"/log/*.log >&2 2>/dev/null || true
    stop_all
    exit 1
}

start() {
    local i rc=0
    if running; then
        say "already running ($CONF)"
        return 0
    fi
    [[ $(id -u) == 0 ]] || { say "needs root (network namespaces, daemons)"; exit 3; }
    "$HERE/local_slurm.sh" install
    stop_all
    # (a signal waits for the command in the foreground, then undoes everything)
    trap 'say "interrupted"; stop_all; exit 130' INT TERM HUP
    # a refusal (no namespaces here) is one line, exit 3: passed on as it is
    "$CLUSTER" up "${#NODES[@]}" "$RATE" >/dev/null || rc=$?
    [[ $rc == 0 ]] || { stop_all; exit "$rc"; }
    trap fail_start ERR
    write_config
    start_munged "$DIR"
    in_node 0 slurmctld -c -f "$CONF"
    for i in "${!NODES[@]}"; do
        in_node "$i" slurmd -c -f "$CONF" -N "${NODES[$i]}"
    done
    for _ in $(seq 100); do
        running && break
        sleep 0.3
    done
    running || false
    trap - ERR INT TERM HUP
    say "up: nodes ${NODES[*]} ($LIO_CLUSTER_SUBNET.1-${#NODES[@]}, $RATE links), $CPUS CPUs" \
        "declared each, state in $DIR"
}

stop_all() {
    local node
    if [[ -f $CONF ]] && [[ -e /run/netns/${NODES[0]} ]]; then
        clients scancel --full --quiet --user=root 2>/dev/null || true
        # let the steps' processes end before the slurmds go
        for _ in $(seq 50); do
            [[ -z $(clients squeue -h -o %i 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
    for node in "${NODES[@]}"; do
        stop_pidfile "$DIR/slurmd-$node.pid"
    done
    stop_pidfile "$DIR/slurmctld.pid"
    stop_pidfile "$DIR/munge/munged.pid"
    # the namespaces (and any process left in them)
    "$CLUSTER" down >/dev/null 2>&1 || true
}

stop() {
    stop_all
    rm -rf "$DIR"
    say "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) running ;;
    env) client_env | sed 's/^/export /; s/=\(.*\)/="\1"/' ;;
    run) shift; [[ $# -ge 1 ]] || { echo "usage: $0 run CMD..." >&2; exit 2; }
         clients "$@" ;;
    *) echo "usage: $0 start|stop|status|env|run CMD..." >&2; exit 2 ;;
esac
