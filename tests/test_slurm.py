"""slurm render: every template renders to a valid script; placeholders are checked."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from linalg_io.cli import build_parser, main
from linalg_io.errors import InputError
from linalg_io.slurm import render_template

TEMPLATES = Path(__file__).resolve().parent.parent / "slurm"
LEFTOVER = re.compile(r"(?<!\$)\{[a-z][a-z0-9_]*\}")


def render(*argv: str) -> str:
    return render_template(build_parser().parse_args(["slurm", "render", *argv]))


def sbatch_options(script: str) -> dict[str, str]:
    """{option: value} of the #SBATCH lines ('' for a flag such as --exclusive)."""
    return dict((line.removeprefix("#SBATCH --").split("=", 1) + [""])[:2]
                for line in script.splitlines() if line.startswith("#SBATCH --"))


@pytest.mark.parametrize("name, extra", [
    ("single", ["--set", "args=lu --algo 2d --n 4096"]),
    ("lu_sweep", []),
    ("gpu_tsgemm", []),
    ("sptrsv_multigpu", []),
    ("sweep", ["--set", "sweep=bench/default.yaml"]),
    ("calibrate", []),
])
def test_every_template_renders_a_complete_script(name, extra):
    script = render(name, "--nodes", "3", "--ntasks-per-node", "4", "--cpus-per-task", "8",
                    "--time", "01:00:00", *extra)
    assert script.startswith("#!/bin/bash\n")
    assert not LEFTOVER.search(script) and "#@" not in script and "None" not in script
    options = sbatch_options(script)
    assert (options["nodes"], options["ntasks-per-node"], options["cpus-per-task"],
            options["time"]) == ("3", "4", "8", "01:00:00")
    assert options["job-name"] == f"linalg-io-{name}"
    assert "partition" not in options and "account" not in options
    assert name == "sweep" or "export OMP_NUM_THREADS=8\n" in script
    sruns = [line for line in script.splitlines() if line.strip().startswith("srun")]
    assert name == "sweep" or "--threads 8" in script   # a sweep's points set theirs
    # timing jobs: a node of their own, SIGTERM ahead of the time limit
    assert options["exclusive"] == "" and options["signal"].endswith("TERM@" + (
        "60" if name == "calibrate" else "120"))
    if name == "sweep":   # the sweep launches its points itself (mpiexec in the allocation)
        assert options["signal"] == "B:TERM@120" and "exec python3 -m linalg_io sweep" in script
    else:
        assert all("srun --mpi=pmix --ntasks=12 --cpus-per-task=8" in line for line in sruns)
        assert "--cpu-bind=cores" in script
    if shutil.which("bash"):
        check = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True,
                               check=False)
        assert check.returncode == 0, check.stderr


def test_gpu_templates_run_one_rank_per_gpu():
    script = render("gpu_tsgemm", "--ntasks-per-node", "8", "--set", "variants=atb",
                    "--set", "m=1024")
    assert sbatch_options(script)["gpus-per-task"] == "1"
    assert "--gpus-per-task=1" in script and "--backend gpu" in script
    assert "for variant in atb; do" in script and "--m 1024 --n 16 --k 16" in script
    with pytest.raises(InputError, match="one rank per GPU: --gpus-per-task must be 1, got 2"):
        render("sptrsv_multigpu", "--gpus-per-task", "2")
    with pytest.raises(InputError, match="CPU template"):
        render("lu_sweep", "--gpus-per-task", "1")


def test_optional_lines_and_overrides():
    script = render("lu_sweep", "--partition", "normal", "--account", "proj42",
                    "--set", "sizes=1024 2048", "--set", "JOB-NAME=mine", "--set", "out=x.jsonl")
    options = sbatch_options(script)
    assert (options["partition"], options["account"], options["job-name"]) == \
        ("normal", "proj42", "mine")
    assert "for n in 1024 2048; do" in script and '--out "x.jsonl"' in script
    # the records file is one word to the shell, a space in its path included
    spaced = render("single", "--set", "args=lu --n 64", "--set", "out=my runs/x.jsonl")
    line = next(line for line in spaced.splitlines() if '--out "' in line)
    words = subprocess.run(["bash", "-c", f"printf '%s\\n' {line.split('--out', 1)[1]}"],
                           capture_output=True, text=True, check=True).stdout
    assert words == "my runs/x.jsonl\n"
    assert '${SLURM_JOB_ID' not in script and 'exit "$status"' in script


@pytest.mark.parametrize("args,message", [
    (("single",), r"no value for \{args\} \(give --set args=VALUE\)"),
    (("lu_sweep", "--set", "sizez=1"), r"no placeholder \{sizez\} for --set"),
    (("lu_sweep", "--set", "nodes=2"), "use --nodes instead"),
    (("lu_sweep", "--set", "sizes"), "expected KEY=VALUE"),
    (("lu_sweep", "--time", "1h"), "--time '1h'"),
    (("nope",), "no slurm template 'nope'.*lu_sweep, single, sptrsv_multigpu, sweep"),
    # values are pasted into the script as words: nothing the shell would act on, no
    # empty value, and `single` runs a benchmark (it adds --threads and --out)
    (("lu_sweep", "--set", "sizes=1024; rm -rf x"), "; would be read by the shell"),
    (("single", "--set", "args=lu --n $(echo 9)"), r"\$ \( \) would be read by the shell"),
    (("lu_sweep", "--set", "sizes="), "sizes=: empty value"),
    (("single", "--set", "args=info --json"), "must start with one of lu, tsgemm, sptrsv"),
    # the template's own --out and --threads come after {args} and would win
    (("single", "--set", "args=lu --n 64 --out mine.jsonl"),
     r"--out would be replaced by the template's own --out; give --set out=PATH instead"),
    (("single", "--set", "args=lu --n 64 --ou=mine.jsonl"), r"--ou=mine.jsonl would be"),
    (("single", "--set", "args=lu --n 64 --threads 4"), "give --cpus-per-task N instead"),
])
def test_placeholder_errors(args, message):
    with pytest.raises(InputError, match=message):
        render(*args)


def test_template_by_path_with_its_own_placeholders(tmp_path):
    template = tmp_path / "mine.sbatch"
    template.write_text("#!/bin/bash\n#@ default greeting=hello\n#SBATCH --nodes={nodes}\n"
                        "#SBATCH --partition={partition}\n"
                        "echo {greeting} {who} ${HOME} {1..3} ${n:-{ntasks}}\n")
    script = render(str(template), "--nodes", "2", "--ntasks-per-node", "3",
                    "--set", "who=world")
    assert script == "#!/bin/bash\n#SBATCH --nodes=2\necho hello world ${HOME} {1..3} ${n:-6}\n"
    with pytest.raises(InputError, match=r"no value for \{who\}"):
        render(str(template))
    template.write_text("#@ defualt x=1\n")
    with pytest.raises(InputError, match="unknown header"):
        render(str(template))


def test_templates_are_found_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "lu --algo" in render("lu_sweep.sbatch")
    assert {p.stem for p in TEMPLATES.glob("*.sbatch")} == \
        {"single", "lu_sweep", "gpu_tsgemm", "sptrsv_multigpu", "sweep", "calibrate"}


def test_cli_prints_the_script_or_exits_2(capsys):
    assert main(["slurm", "render", "lu_sweep", "--nodes", "2"]) == 0
    assert "#SBATCH --nodes=2" in capsys.readouterr().out
    assert main(["slurm", "render", "single"]) == 2
    assert "no value for {args}" in capsys.readouterr().err
    assert main(["slurm", "render", "single", "--set", "args=lu --out x.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give --set out=PATH instead" in err, err


def test_local_rank_count_from_each_launcher():
    from linalg_io.launch.node import local_rank_count, slurm_tasks_on_node

    assert [slurm_tasks_on_node("2(x3),1", i) for i in range(4)] == [2, 2, 2, 1]
    assert local_rank_count({"OMPI_COMM_WORLD_LOCAL_SIZE": "6"}) == 6
    assert local_rank_count({"MPI_LOCALNRANKS": "3"}) == 3
    assert local_rank_count({"SLURM_STEP_TASKS_PER_NODE": "4(x2),3", "SLURM_NODEID": "2"}) == 3
    assert local_rank_count({"SLURM_STEP_TASKS_PER_NODE": "4(x2)", "SLURM_NODEID": "5"}) is None
    assert local_rank_count({}) is None


@pytest.mark.parametrize("ranks, cores, machine, crowded", [
    (4, 2, 2, True),     # srun without binding on 2 cores: the case
    (4, 64, 64, False),  # room for all
    (4, 1, 64, False),   # bound to a core each, the node has them
    (4, 1, 2, True),     # bound, but 4 cores of their own cannot exist on 2
    (2, 2, 2, False),
])
def test_ranks_outnumber_cores(ranks, cores, machine, crowded):
    from linalg_io.launch.node import ranks_outnumber_cores

    assert ranks_outnumber_cores(ranks, cores, machine) is crowded


def test_prepare_node_sets_yield_and_keeps_the_users(monkeypatch):
    from linalg_io.launch import node

    monkeypatch.setattr(node, "usable_cores", lambda: {0, 1})
    monkeypatch.setattr(node.os, "cpu_count", lambda: 2)
    monkeypatch.delenv(node.YIELD_VARIABLE, raising=False)
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    assert node.prepare_node() and node.os.environ[node.YIELD_VARIABLE] == "1"
    monkeypatch.setenv(node.YIELD_VARIABLE, "0")
    assert node.prepare_node() and node.os.environ[node.YIELD_VARIABLE] == "0"
    monkeypatch.delenv(node.YIELD_VARIABLE)
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2")
    assert not node.prepare_node() and node.YIELD_VARIABLE not in node.os.environ


def test_slurm_job_facts():
    from linalg_io.launch.node import slurm_step_tasks
    from linalg_io.slurm_job import slurm_job

    assert slurm_job({}) is None
    batch = {"SLURM_JOB_ID": "17", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_NUM_NODES": "2",
             "SLURM_TASKS_PER_NODE": "4(x2)"}
    assert slurm_job(batch) == {"job_id": "17", "step_id": None, "nodelist": "n[1-2]",
                                "nodes": 2, "tasks_per_node": "4(x2)", "cpus_per_task": 1}
    step = {**batch, "SLURM_STEP_ID": "3", "SLURM_STEP_NODELIST": "n1", "SLURM_STEP_NUM_NODES": "1",
            "SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_CPUS_PER_TASK": "8",
            "SLURM_STEP_NUM_TASKS": "2"}
    assert slurm_job(step) == {"job_id": "17", "step_id": "3", "nodelist": "n1", "nodes": 1,
                               "tasks_per_node": "2", "cpus_per_task": 8}
    assert slurm_step_tasks(step) == 2 and slurm_step_tasks(batch) is None
