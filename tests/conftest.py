"""Shared fixtures, and the markers every test gets from what it does:

mpi   it launches mpiexec: it (or a fixture, or a function or class of its module it
      calls) uses `mpi_harness`'s launchers, passes "--np" to the command line (a sweep
      or `linalg-io ... --np P` relaunching itself), np= to `linalg_io.run`, or starts
      ranks through Slurm (it uses `slurm_harness`); declared by the test where a
      script it runs launches (ReFrame's job scripts);
gpu   it needs CuPy and a GPU (it names `require_cupy` or cupy, or its file is a
      test_*_gpu.py);
slow  declared by the test itself (`@pytest.mark.slow`): it takes tens of seconds;
package  declared by the test: it builds the sdist and installs it into a fresh venv
      (minutes); `make test` leaves it out, `make test-package` (and .ci/run) runs it;
alone declared by the test: it needs the machine to itself, as it bounds how long
      something took against a deadline or measures the machine (a bandwidth, a latency,
      the core time of waiting ranks); `make test` runs it after the others, one at a time.

`pytest -m "not mpi"` is the inner loop: no mpiexec at all, which the guard of
tests/launch_guard proves: under that marker expression, starting mpiexec, srun or
`linalg-io ... --np P` from pytest or from any Python process it starts raises, and a
Python process started as an MPI rank some other way exits at once. It runs on two
pytest-xdist workers (`-n 2 --dist loadfile`, as `make test` runs it): a module's tests
share one worker (its module-scoped fixtures are built once), and the session's
`cuda_emulator` (g++ over every tile) is built once for both workers.

The MPI tests that are not `alone` run on two workers too (`--dist loadfile`), their jobs
oversubscribing the cores. Nothing they use is shared between the workers: a test's files
under its tmp_path, an emulated cluster's name and subnet its worker's own
(tests/emulated_cluster.py), MPI's ports chosen by each job, TMPDIR a folder of the
worker's own (`private_tmpdir`); the local Slurm, which two modules use, is started and
stopped under a lock (the `slurm` fixture of tests/test_slurm_live.py).
"""

import fcntl
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
GUARD = TESTS / "launch_guard"
sys.path.insert(0, str(TESTS))

LAUNCHERS = {"run_mpi", "run_mpi_json", "run_cli", "run_cli_records", "run_job", "open_mpi",
             "find_mpiexec", "relaunch"}
RUNNERS = {"main", "run", "run_sweep", "Popen", "check_call", "check_output"}
FAKE_LAUNCHERS = {"FakeLauncher"}
LAUNCHING_MODULES = {"slurm_harness"}   # its helpers start ranks through Slurm
GPU_NAMES = {"require_cupy", "cupy", "cupyx"}
MARKERS = {"mpi": "launches mpiexec (automatic)",
           "gpu": "needs CuPy and a GPU (automatic)",
           "slow": "takes tens of seconds (declared by the test)",
           "package": "builds and installs the sdist in a fresh venv: `make test-package`, "
                      "outside `make test` (declared by the test)",
           "alone": "needs the machine to itself (a deadline or a measurement): `make test` "
                    "runs it after the others, one at a time (declared by the test)"}


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    if "not mpi" in (config.option.markexpr or ""):
        guard_launches()
    private_tmpdir(config)


def private_tmpdir(config) -> None:
    """TMPDIR a fresh folder of this process's own (each xdist worker's), removed at the
    end: Open MPI 5's mpiexec keeps its session files under TMPDIR, and two of them
    starting and ending at once in one TMPDIR now and then fail to start one of them
    ("The PMIx server's listener thread failed to start"), about 1 start in 800 with
    four loops of `mpiexec -n 1 true` side by side, none in 4000 with a TMPDIR each."""
    folder = tempfile.mkdtemp(prefix=f"lio-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = None
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def guard_launches() -> None:
    """The pure loop's guard (tests/launch_guard/sitecustomize.py), here and in every
    Python process the tests start."""
    sys.path.insert(0, str(GUARD))
    import sitecustomize

    os.environ[sitecustomize.OUTER_RANK] = ",".join(
        name for name in sitecustomize.RANK_VARIABLES if name in os.environ)
    os.environ[sitecustomize.VARIABLE] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(GUARD), os.environ.get("PYTHONPATH")]))
    sitecustomize.install()


def _codes(code: types.CodeType):
    """A code object and every one nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _strings(consts) -> set:
    """The str constants, those inside tuples included (a list literal of constants is a
    tuple constant in the code object)."""
    found = set()
    for const in consts:
        if isinstance(const, str):
            found.add(const)
        elif isinstance(const, (tuple, frozenset)):
            found |= _strings(const)
    return found


def _uses(function, module_globals: dict, seen: set) -> tuple[set, set]:
    """(names, string constants) of `function` and of the functions of its module it
    calls, transitively."""
    names, strings = set(), set()
    code = getattr(function, "__code__", None)
    if code is None or code in seen:
        return names, strings
    seen.add(code)
    for inner in _codes(code):
        names.update(inner.co_names)
        strings.update(_strings(inner.co_consts))
    for name in list(names):
        helper = module_globals.get(name)
        if getattr(helper, "__module__", None) != function.__module__:
            continue
        if isinstance(helper, types.FunctionType):
            helpers = [helper]
        elif isinstance(helper, type):   # a helper class: its methods
            helpers = [f for f in vars(helper).values() if isinstance(f, types.FunctionType)]
        else:
            helpers = []
        for one in helpers:
            more_names, more_strings = _uses(one, module_globals, seen)
            names |= more_names
            strings |= more_strings
    return names, strings


def _defined_in(module, name: str, module_globals: dict) -> bool:
    """Whether the test module's `name` is `module`'s own function, class or constant
    (not a module or a name it imported itself)."""
    if name not in module_globals or module_globals[name] is not getattr(module, name, None):
        return False
    value = module_globals[name]
    return (getattr(value, "__module__", None) == module.__name__
            or (name.isupper() and isinstance(value, (dict, list, tuple, str))))


def _relaunches(names: set, strings: set) -> bool:
    """Whether the test runs a command that relaunches itself under mpiexec: "--np" on
    a command line it hands to something that runs commands (not to a fake launcher, and
    not as text in a synthetic record), or np= to `linalg_io.run`."""
    if "--np" in strings and names & RUNNERS and not names & FAKE_LAUNCHERS:
        return True
    return "np" in strings and {"linalg_io", "run"} <= names


def pytest_collection_modifyitems(config, items):
    for item in items:
        function = getattr(item, "function", None)
        if function is None:
            continue
        module_globals = function.__globals__
        seen: set = set()
        names, strings = _uses(function, module_globals, seen)
        fixtures = item._fixtureinfo.name2fixturedefs if hasattr(item, "_fixtureinfo") else {}
        for definitions in fixtures.values():
            for definition in definitions:
                more_names, more_strings = _uses(definition.func, module_globals, seen)
                names |= more_names
                strings |= more_strings
        from_launchers = any(_defined_in(module, name, module_globals)
                             for module in map(sys.modules.get, LAUNCHING_MODULES)
                             if module is not None for name in names)
        if names & LAUNCHERS or from_launchers or _relaunches(names, strings):
            item.add_marker(pytest.mark.mpi)
        if names & GPU_NAMES or "_gpu" in Path(str(item.fspath)).stem:
            item.add_marker(pytest.mark.gpu)


@pytest.fixture
def one_core(monkeypatch):
    """`model` commands run in this process evaluate their candidates here, with no forked
    workers (`linalg_io.parallel`): the same tables (tests/test_parallel.py checks it), for
    tests that run dozens of commands, each of which would fork this process twice."""
    from linalg_io import parallel

    monkeypatch.setattr(parallel, "usable_cores", lambda: 1)


@pytest.fixture(scope="session")
def cuda_emulator(tmp_path_factory):
    """The CUDA kernels built for the host (tests/cuda_emulator.py); skipped without g++."""
    import cuda_emulator as emulation

    if emulation.GXX is None:
        pytest.skip("g++ not installed: the CUDA kernels cannot be emulated on the host")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return emulation.build(tmp_path_factory.mktemp("cuda_host"))
    # pytest-xdist: the first worker to want it builds it in the run's base directory
    # (its workers' parent), the other waits on the lock and loads that library
    shared = tmp_path_factory.getbasetemp().parent / "cuda_host"
    shared.mkdir(exist_ok=True)
    with open(shared / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        library = shared / "kernels_host.so"
        return emulation.Emulator(library) if library.exists() else emulation.build(shared)
