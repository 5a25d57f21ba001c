#!/usr/bin/env bash
# An emulated cluster on one Linux machine: K "nodes" as network namespaces on a bridge.
#
#   bench/emulated_cluster.sh up K RATE      K nodes, each node's link shaped to RATE
#                                            (tc tbf, both directions: 1gbit, 300mbit, ...;
#                                            `none`: unshaped veth)
#   bench/emulated_cluster.sh run NP -- CMD  NP ranks of CMD under Open MPI, NP/K per node
#                                            in blocks (ranks 0..NP/K-1 on node 0, ...)
#   bench/emulated_cluster.sh exec PER -- CMD  CMD in node 0, where an mpiexec it starts
#                                            (`linalg-io --np`, `sweep`) places PER ranks
#                                            per node over the cluster's nodes
#   bench/emulated_cluster.sh down           end every process `run`/`exec` started and
#                                            remove everything `up` made
#   bench/emulated_cluster.sh status         the nodes, their addresses and shaping
#
# Each node is a network namespace NAME-nI with its own hostname (a UTS namespace per
# process tree: Open MPI tells nodes apart by hostname, and ranks of two "nodes" with one
# hostname connect and then hang). A veth pair joins each node to a bridge that lives in
# a namespace of its own (NAME-sw), so nothing is added to the machine's own network:
# no interface, address or route outside the namespaces made here, and the addresses
# (SUBNET.1 .. SUBNET.K, a private /24) never leave them. RATE shapes both directions of
# a node's link with a token bucket (tbf on the node's end and on the bridge's end):
# the node's NIC. Between nodes Open MPI runs over TCP (btl tcp), inside a node over
# shared memory (btl sm); the job's head (prterun) runs in node 0 and starts the other
# nodes' daemons through a launch agent that enters their namespaces.
# Needs root (ip netns, tc); where namespaces cannot be made it refuses with one line,
# exit 3. `up` undoes what it made when interrupted. `run` and `exec` forward INT, TERM
# and HUP to the job and end its whole process tree (the head, the other nodes'
# daemons, every rank), killing what still runs GRACE_S seconds later: a head whose
# daemons sit behind a dead link never ends by itself. `down` does the same to every
# job still running, then to every process left in the namespaces; it is idempotent.
#
# Settings (environment): LIO_CLUSTER (name prefix, default lio), LIO_CLUSTER_SUBNET
# (first three octets, default 10.213.0), MPIEXEC (default the venv's, then PATH's),
# LIO_CLUSTER_MCA (extra mpiexec arguments).
set -u
NAME=${LIO_CLUSTER:-lio}
SUBNET=${LIO_CLUSTER_SUBNET:-10.213.0}
STATE=/run/linalg-io-cluster/$NAME
HERE=$(cd "$(dirname "$0")/.." && pwd)
GRACE_S=2

die() { echo "emulated_cluster: $1" >&2; exit "${2:-2}"; }
usage() { die "usage: $0 up K RATE | run NP -- CMD... | exec PER -- CMD... | down | status" 2; }

require_root() {
  [ "$(id -u)" = 0 ] || die "needs root (ip netns, tc)" 3
  command -v ip >/dev/null && command -v tc >/dev/null || die "needs iproute2 (ip, tc)" 3
  command -v unshare >/dev/null || die "needs unshare (util-linux)" 3
  local probe="$NAME-probe$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    die "network namespaces are not permitted here (ip netns add failed)" 3
  fi
  ip netns del "$probe"
}

# every process below PID (its children, theirs, ...)
descendants() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}

# SIGNAL to each process of the list, then KILL to those still there after GRACE_S
end_processes() {
  local signal=$1 pid waited=0
  shift
  [ $# -ge 1 ] || return 0
  kill "-$signal" "$@" 2>/dev/null
  while [ "$waited" -lt $((GRACE_S * 10)) ]; do
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && break; pid=; done
    [ -z "$pid" ] && return 0
    sleep 0.1
    waited=$((waited + 1))
  done
  kill -KILL "$@" 2>/dev/null
}

# a job's head PID and its whole tree (read before any of it ends): SIGNAL, then KILL
end_job() {
  # shellcheck disable=SC2046
  end_processes "$2" "$1" $(descendants "$1")
}

# every one of NP ranks ended its command (a line each in the status file STATUS,
# linalg-io's LINALG_IO_LAUNCHER_STATUS) and one of them stalled (its watchdog)
stalled_and_ended() {
  [ -n "${STATUS:-}" ] && [ -f "$STATUS" ] && grep -q stalled "$STATUS" \
    && [ "$(wc -l < "$STATUS")" -ge "$NP" ]
}

# run the job's head CMD... in the background and wait for it; INT, TERM or HUP ends
# its whole tree (end_job) and exits 128 + the signal's number. A head that outlives
# the ranks of a stalled job (STATUS, NP: stalled_and_ended) by GRACE_S waits on a
# daemon behind a lost link: its tree is ended and the exit is 5, as the ranks'.
supervise() {
  local head code stop="" ended=0
  "$@" &
  head=$!
  echo "$head" > "$STATE/job.$head"
  trap 'stop=INT' INT
  trap 'stop=TERM' TERM
  trap 'stop=HUP' HUP
  while [ -z "$stop" ] && kill -0 "$head" 2>/dev/null; do
    if stalled_and_ended; then
      ended=$((ended + 1))
      if [ "$ended" -gt $((GRACE_S * 5)) ]; then
        end_job "$head" TERM
        echo "emulated_cluster: a rank stalled and the job's head did not end (its daemons" \
             "wait on a lost link): ended it" >&2
        wait "$head" 2>/dev/null
        rm -f "$STATE/job.$head"
        trap - INT TERM HUP
        return 5
      fi
    fi
    sleep 0.2
  done
  if [ -z "$stop" ]; then
    wait "$head"
    code=$?
  fi
  if [ -n "$stop" ]; then
    end_job "$head" "$stop"
    wait "$head" 2>/dev/null
    code=$((128 + $(kill -l "$stop")))
    echo "emulated_cluster: interrupted by SIG$stop: the job's head, daemons and ranks" \
         "were ended" >&2
  fi
  rm -f "$STATE/job.$head"
  trap - INT TERM HUP
  return "$code"
}

down() {
  local ns job pids=""
  for job in "$STATE"/job.*; do
    [ -f "$job" ] && end_job "$(cat "$job")" TERM
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NAME-(n[0-9]+|sw)$"); do
    pids="$pids $(ip netns pids "$ns" 2>/dev/null)"
  done
  # shellcheck disable=SC2086
  end_processes TERM $pids
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NAME-(n[0-9]+|sw)$"); do
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$STATE"
}

rate_ok() {
  [ "$1" = none ] || [[ "$1" =~ ^[0-9]+(\.[0-9]+)?(kbit|mbit|gbit|bit)$ ]]
}

# the token bucket of RATE: a burst of 1 ms at the rate, at least 128 KiB (two 64 KiB
# TSO segments). A larger bucket refills while a ping-pong waits for the reply and
# lets messages up to its size through faster than RATE.
shape() {   # NS DEV RATE
  local bits burst
  bits=$(echo "$3" | awk '{ v = $0 + 0; u = $0; sub(/^[0-9.]+/, "", u);
    m = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : 1;
    printf "%d", v * m }')
  burst=$(( bits / 8 / 1000 ))
  [ "$burst" -lt 131072 ] && burst=131072
  ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$3" burst "$burst" latency 200ms
}

up() {
  local k=$1 rate=$2 i ns
  [[ "$k" =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -le 200 ] \
    || die "K must be a node count from 1 to 200, got '$k'"
  rate_ok "$rate" || die "RATE must be like 1gbit, 300mbit or none, got '$rate'"
  require_root
  [ -d "$STATE" ] && die "cluster '$NAME' is up already ($0 down first)"
  trap 'down; exit 130' INT TERM HUP
  mkdir -p "$STATE"
  ip netns add "$NAME-sw" || { down; die "cannot add namespace $NAME-sw"; }
  ip -n "$NAME-sw" link add br0 type bridge
  ip -n "$NAME-sw" link set br0 up
  for i in $(seq 0 $((k - 1))); do
    ns="$NAME-n$i"
    ip netns add "$ns" || { down; die "cannot add namespace $ns"; }
    ip -n "$ns" link set lo up
    ip -n "$ns" link add eth0 type veth peer name "p$i" netns "$NAME-sw" \
      || { down; die "cannot add the veth pair of $ns"; }
    ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$NAME-sw" link set "p$i" master br0
    ip -n "$NAME-sw" link set "p$i" up
    if [ "$rate" != none ]; then
      shape "$ns" eth0 "$rate" && shape "$NAME-sw" "p$i" "$rate" \
        || { down; die "tc tbf failed on $ns"; }
    fi
    echo "$SUBNET.$((i + 1)) $ns" >> "$STATE/nodes"
  done
  printf 'K=%s\nRATE=%s\nSUBNET=%s\n' "$k" "$rate" "$SUBNET" > "$STATE/cluster.env"
  # the launch agent: `agent ADDRESS CMD...` runs CMD in that node's namespace, under
  # its own hostname
  cat > "$STATE/agent" <<EOF
#!/bin/sh
ns=\$(awk -v a="\$1" '\$1 == a {print \$2}' "$STATE/nodes")
[ -n "\$ns" ] || { echo "emulated_cluster agent: no node \$1" >&2; exit 1; }
shift
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$ns; \$*"
EOF
  chmod +x "$STATE/agent"
  trap - INT TERM HUP
  echo "emulated_cluster: $k nodes $NAME-n0..$NAME-n$((k - 1)) on $SUBNET.0/24, rate $rate"
}

run() {
  local np=$1 k per mpiexec hosts node0
  shift
  [ "${1:-}" = "--" ] && shift
  [ $# -ge 1 ] || usage
  [ -f "$STATE/cluster.env" ] || die "cluster '$NAME' is not up ($0 up K RATE)"
  . "$STATE/cluster.env"
  [[ "$np" =~ ^[0-9]+$ ]] && [ "$np" -ge 1 ] && [ $((np % K)) -eq 0 ] \
    || die "NP must be a positive multiple of the $K nodes, got '$np'"
  per=$((np / K))
  mpiexec=${MPIEXEC:-}
  [ -z "$mpiexec" ] && [ -x "$HERE/.venv/bin/mpiexec" ] && mpiexec=$HERE/.venv/bin/mpiexec
  [ -z "$mpiexec" ] && mpiexec=$(command -v mpiexec)
  [ -n "$mpiexec" ] || die "no mpiexec (set MPIEXEC)" 3
  hosts=$(awk -v per="$per" '{printf "%s%s:%d", (NR > 1 ? "," : ""), $1, per}' "$STATE/nodes")
  node0=$(awk 'NR == 1 {print $2}' "$STATE/nodes")
  NP=$np
  STATUS=$STATE/status.$$
  : > "$STATUS"
  export LINALG_IO_LAUNCHER_STATUS=$STATUS
  exports="-x LINALG_IO_LAUNCHER_STATUS"
  for var in PATH PYTHONPATH OMP_NUM_THREADS OPENBLAS_NUM_THREADS OPENBLAS_CORETYPE \
             OPENBLAS_L2_SIZE; do
    [ -n "${!var+x}" ] && exports="$exports -x $var"
  done
  # the nodes share this machine's cores: with more ranks than cores, a waiting rank
  # yields its core (as linalg-io's own launcher does)
  [ "$np" -gt "$(nproc)" ] && exports="$exports --mca mpi_yield_when_idle 1"
  # the head runs in node 0 under its hostname; ranks in blocks of NP/K per node.
  # coll/han (hierarchical collectives, chosen once a communicator spans nodes)
  # crashes in MPI_Finalize here (Open MPI 5.0.x): excluded
  # shellcheck disable=SC2086
  supervise ip netns exec "$node0" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$node0" \
    "$mpiexec" --allow-run-as-root --host "$hosts" --map-by "ppr:$per:node" --bind-to none \
    --prtemca plm_ssh_agent "$STATE/agent" \
    --prtemca oob_tcp_if_include "$SUBNET.0/24" \
    --mca btl tcp,sm,self --mca btl_tcp_if_include "$SUBNET.0/24" --mca coll ^han \
    --mca osc ^ucx \
    --mca pml_monitoring_enable 1 $exports ${LIO_CLUSTER_MCA:-} "$@"
  code=$?
  rm -f "$STATUS"
  return "$code"
}

# `exec PER -- CMD`: CMD in node 0 under its hostname, with the settings of `run` in
# its environment (PRTE_MCA_*, OMPI_MCA_*) and a default hostfile of PER slots per
# node, so that an mpiexec it starts (linalg-io --np P, a sweep's points) places its
# ranks in blocks of PER over the nodes
exec_in_node0() {
  local per=$1 node0
  shift
  [ "${1:-}" = "--" ] && shift
  [ $# -ge 1 ] || usage
  [ -f "$STATE/cluster.env" ] || die "cluster '$NAME' is not up ($0 up K RATE)"
  [[ "$per" =~ ^[0-9]+$ ]] && [ "$per" -ge 1 ] || die "PER must be a positive rank count"
  awk -v per="$per" '{print $1 " slots=" per}' "$STATE/nodes" > "$STATE/hostfile"
  node0=$(awk 'NR == 1 {print $2}' "$STATE/nodes")
  . "$STATE/cluster.env"
  supervise env PRTE_MCA_prte_default_hostfile="$STATE/hostfile" \
    PRTE_MCA_plm_ssh_agent="$STATE/agent" PRTE_MCA_oob_tcp_if_include="$SUBNET.0/24" \
    OMPI_MCA_btl=tcp,sm,self OMPI_MCA_btl_tcp_if_include="$SUBNET.0/24" \
    OMPI_MCA_coll=^han OMPI_MCA_osc=^ucx OMPI_MCA_pml_monitoring_enable=1 \
    ip netns exec "$node0" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$node0" "$@"
}

status() {
  [ -f "$STATE/cluster.env" ] || { echo "cluster '$NAME' is not up"; return 1; }
  cat "$STATE/cluster.env"
  while read -r addr ns; do
    echo "$ns $addr $(ip netns exec "$ns" tc qdisc show dev eth0 | head -1)"
  done < "$STATE/nodes"
}

case "${1:-}" in
  up) [ $# -eq 3 ] || usage; up "$2" "$3" ;;
  run) [ $# -ge 3 ] || usage; shift; run "$@" ;;
  exec) [ $# -ge 3 ] || usage; shift; exec_in_node0 "$@" ;;
  down) [ $# -eq 1 ] || usage; [ "$(id -u)" = 0 ] || die "needs root" 3; down
        echo "emulated_cluster: $NAME is down" ;;
  status) status ;;
  *) usage ;;
esac
