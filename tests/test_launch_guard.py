"""The pure loop's guard (tests/launch_guard): which command lines it refuses, and that a
Python process started with it refuses them too."""

import os
import subprocess
import sys

from conftest import GUARD
from launch_guard.sitecustomize import GUARD_HELP, OUTER_RANK, RANK_EXIT, VARIABLE, launches


def test_it_knows_a_launch_from_another_command():
    assert launches(["/venv/bin/mpiexec", "-n", "2", "python"])
    assert launches("srun -n 4 linalg-io info")
    assert launches([sys.executable, "-m", "linalg_io", "lu", "--n", "8", "--np", "2"])
    assert launches(["/venv/bin/linalg-io", "sptrsv", "--np", "4"])
    assert not launches([sys.executable, "-m", "linalg_io", "lu", "--n", "8"])
    assert not launches([sys.executable, "-c", "print('--np')"])
    assert not launches(["g++", "--version"])


def _guarded_environment() -> dict:
    return {**os.environ, VARIABLE: "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(GUARD),
                                                        os.environ.get("PYTHONPATH")]))}


def test_a_child_process_refuses_to_launch():
    env = _guarded_environment()
    child = ("import subprocess\n"
             "subprocess.run(['mpiexec', '--version'], capture_output=True)\n")
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1 and GUARD_HELP in done.stderr, done.stderr


def test_a_rank_launched_around_the_guard_exits():
    """A launch the guard cannot see (a shell script's mpiexec, ReFrame's job): the ranks
    are Python processes with the guard's environment, and each exits at once."""
    for variable in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        env = {**_guarded_environment(), variable: "0"}
        done = subprocess.run([sys.executable, "-c", "print('ran')"], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == RANK_EXIT and done.stdout == "", done.stdout
        assert f"{GUARD_HELP}, but this process is an MPI rank ({variable} is set)" \
            in done.stderr, done.stderr
    # no guard, or pytest itself a rank (run as a Slurm task): the variable is no launch
    unguarded = {key: value for key, value in _guarded_environment().items()
                 if key != VARIABLE}
    for env in ({**unguarded, "PMI_RANK": "0"},
                {**_guarded_environment(), "SLURM_PROCID": "0", OUTER_RANK: "SLURM_PROCID"}):
        done = subprocess.run([sys.executable, "-c", "print('ran')"], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0 and done.stdout == "ran\n", done.stderr
