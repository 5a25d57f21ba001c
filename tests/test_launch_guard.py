"""The pure loop's guard (tests/launch_guard): which command lines it refuses, and that a
Python process started with it refuses them too."""

import os
import subprocess
import sys

from conftest import GUARD
from launch_guard.sitecustomize import GUARD_HELP, VARIABLE, launches


def test_it_knows_a_launch_from_another_command():
    assert launches(["/venv/bin/mpiexec", "-n", "2", "python"])
    assert launches("srun -n 4 linalg-io info")
    assert launches([sys.executable, "-m", "linalg_io", "lu", "--n", "8", "--np", "2"])
    assert launches(["/venv/bin/linalg-io", "sptrsv", "--np", "4"])
    assert not launches([sys.executable, "-m", "linalg_io", "lu", "--n", "8"])
    assert not launches([sys.executable, "-c", "print('--np')"])
    assert not launches(["g++", "--version"])


def test_a_child_process_refuses_to_launch():
    env = {**os.environ, VARIABLE: "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(GUARD), os.environ.get("PYTHONPATH")]))}
    child = ("import subprocess\n"
             "subprocess.run(['mpiexec', '--version'], capture_output=True)\n")
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1 and GUARD_HELP in done.stderr, done.stderr
