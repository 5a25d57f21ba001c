# shellcheck shell=bash
# What tests/slurm/local_slurm.sh and tests/slurm/two_node_slurm.sh share (sourced):
# the slurm.conf lines of a test Slurm run as root with its files under one folder,
# its munged, and stopping a daemon by its pid file.

common_conf() {   # common_conf DIR CTLD_PORT SLURMD_PORT: slurm.conf lines on stdout
    cat <<EOF2
SlurmctldPort=$2
SlurmdPort=$3
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$1/munge/munge.socket
StateSaveLocation=$1/state
SlurmctldPidFile=$1/slurmctld.pid
SlurmctldLogFile=$1/log/slurmctld.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$1/log/jobcomp.log
ReturnToService=2
MinJobAge=3600
KillWait=30
SchedulerParameters=sched_interval=1
EOF2
}

munge_key() {   # munge_key DIR: DIR/munge with a key (kept if there is one)
    mkdir -p "$1/munge" "$1/log"
    chmod 700 "$1/munge"
    [[ -f $1/munge/munge.key ]] || dd if=/dev/urandom of="$1/munge/munge.key" bs=1024 \
        count=1 status=none
    chmod 400 "$1/munge/munge.key"
}

start_munged() {   # start_munged DIR: a munged of DIR's own, its socket in DIR/munge
    munged --force --socket="$1/munge/munge.socket" --key-file="$1/munge/munge.key" \
        --pid-file="$1/munge/munged.pid" --log-file="$1/log/munged.log" \
        --seed-file="$1/munge/munged.seed"
}

stop_pidfile() {   # stop_pidfile FILE: TERM the daemon of FILE and wait for it to go
    local pid
    [[ -f $1 ]] || return 0
    pid=$(cat "$1")
    if [[ -n $pid ]] && kill "$pid" 2>/dev/null; then
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$1"
}
