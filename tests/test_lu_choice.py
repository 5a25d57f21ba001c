"""One LU choice (`linalg_io.lu.choice`): the choice a run resolves is the one `model lu` marks
with * and the one its scan records, for random problems; and the cases run it."""

import random

import pytest
from linalg_io.models.memory import lu_bytes_per_rank
from linalg_io.models.profile import load_profile

from linalg_io.cli import main as cli_main
from linalg_io.errors import InputError
from linalg_io.lu.choice import (
    SQUARE_TIE,
    LUChoice,
    candidates,
    choose_lu,
    fastest_2d,
    lu2d_seconds,
)
from linalg_io.lu.fits import check_lu_memory
from linalg_io.records import read_records

pytestmark = pytest.mark.usefixtures("one_core")

MACHINES = (None, "example_cpu", "example_gpu")
RANKS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


def _problems(count: int, seed: int = 22) -> list[dict]:
    """(N, P, memory per rank, objective, machine) drawn at random: memory from below the
    least any LU needs (refused) to far above it, and the sizes of the tables' edge
    cases (N below a tile, P above N / v)."""
    draw = random.Random(seed)
    problems = []
    for _ in range(count):
        n = draw.choice([draw.randint(16, 400), draw.randint(400, 2000)])
        p = draw.choice(RANKS)
        least = lu_bytes_per_rank(n, p, "2d")[0]
        problems.append({"n": n, "p": p, "mem": int(least * 2 ** draw.uniform(-0.5, 7)),
                         "objective": draw.choice(("time", "volume")),
                         "machine": draw.choice(MACHINES)})
    return problems


def _starred(text: str) -> dict[str, tuple[tuple[int, ...], int]]:
    """The * rows of `model lu`'s tables: {"conflux" or "2d": (grid, block)}."""
    found = {}
    for line in text.splitlines():
        if line.startswith("* "):
            grid, block = line.split()[1:3]
            dims = tuple(int(d) for d in grid.split("x"))
            found["conflux" if len(dims) == 3 else "2d"] = (dims, int(block))
    return found


def _options(problem: dict) -> list[str]:
    words = ["--n", str(problem["n"]), "--mem", str(problem["mem"]),
             "--objective", problem["objective"]]
    return words + (["--machine", problem["machine"]] if problem["machine"] else [])


@pytest.mark.slow
def test_the_run_choice_is_the_model_lu_star_row_and_the_scan_record(tmp_path, capsys):
    checked = {"conflux": 0, "2d": 0, "refused": 0, "none fits": 0}
    for index, problem in enumerate(_problems(30)):
        n, p, mem = problem["n"], problem["p"], problem["mem"]
        profile = load_profile(problem["machine"])
        placement = profile.placement(p)
        try:
            check_lu_memory(n, p, ("2d", "conflux"), mem, "--mem")
        except InputError:   # every command refuses it before any choice
            assert cli_main(["model", "lu", "--p", str(p)] + _options(problem)) == 2
            checked["refused"] += 1
            capsys.readouterr()
            continue
        assert cli_main(["model", "lu", "--p", str(p)] + _options(problem)) == 0
        starred = _starred(capsys.readouterr().out)
        out = tmp_path / f"scan{index}.jsonl"
        assert cli_main(["model", "lu", "--scan", "strong", "--p", str(p), "--out", str(out)]
                        + _options(problem)) == 0
        capsys.readouterr()
        scanned = {r["algo"]: (tuple(r["params"]["grid"]), r["params"]["nb"])
                   for r in read_records([out])}
        for algo in ("conflux", "2d"):
            try:
                choice = choose_lu(algo, n, p, mem, profile, placement,
                                   objective=problem["objective"])
            except InputError as error:
                assert algo == "conflux" and "fits" in str(error)
                assert algo not in starred and algo not in scanned
                checked["none fits"] += 1
                continue
            assert isinstance(choice, LUChoice) and choice.p == p and choice.n == n
            assert starred[algo] == (choice.grid, choice.nb), (problem, algo)
            assert scanned[algo] == (choice.grid, choice.nb), (problem, algo)
            checked[algo] += 1
    # the draw reaches every branch: both algorithms, refusals, nothing fitting
    assert min(checked.values()) > 0, checked
    assert checked["conflux"] + checked["none fits"] == checked["2d"] > 20


def test_a_given_grid_or_block_is_the_choice_and_marked():
    """--grid and --nb given: the choice takes them (2.5D: with no search; a fixed grid that
    nothing fits at the memory falls back to tiles of 128), `model lu` marks that row."""
    profile = load_profile()
    placement = profile.placement(8)
    fixed = choose_lu("conflux", 2048, 8, 1e3, profile, placement, "2x2x2", 256)
    assert (fixed.grid, fixed.nb, fixed.pivoting) == ((2, 2, 2), 256, "tournament")
    fallback = choose_lu("conflux", 2048, 8, 1e3, profile, placement, "2x2x2")
    assert (fallback.grid, fallback.nb) == ((2, 2, 2), 128)
    table = candidates("conflux", 2048, 8, 1e3, profile, placement, "2x2x2")
    assert fallback in [candidate.choice for candidate in table]
    block_cyclic = choose_lu("2d", 2048, 8, 1e9, profile, placement, "4x2", 32)
    assert (block_cyclic.grid, block_cyclic.nb, block_cyclic.record_grid) == ((4, 2), 32,
                                                                              [4, 2, 1])
    with pytest.raises(InputError, match="--nb must lie in 1..N = 2048, got 4096"):
        choose_lu("2d", 2048, 8, 1e9, profile, placement, "auto", 4096)
    with pytest.raises(InputError, match="exceeds N=2048"):
        choose_lu("conflux", 2048, 8, 1e9, profile, placement, "2x2x2", 4096)


@pytest.mark.parametrize("n, p, machine", [(131072, 1024, "example_cpu"), (1024, 4, None),
                                           (4096, 4, None), (20000, 96, "example_gpu")])
def test_2d_auto_runs_the_grid_the_2d_model_predicts_fastest(n, p, machine):
    """`--algo 2d --grid auto` takes the least predicted time of every candidate grid
    (e.g. 16x64 over 32x32 at N=131072 on 1024 ranks of example_cpu), ScaLAPACK and HPL the
    same grid; --nb still as given."""
    profile = load_profile(machine)
    placement = profile.placement(p)
    table = candidates("2d", n, p, 1e12, profile, placement)
    times = {c.choice.grid: lu2d_seconds(profile, c.choice) for c in table}
    chosen = choose_lu("2d", n, p, 1e12, profile, placement)
    best = min(times.values())
    assert times[chosen.grid] <= best * (1 + SQUARE_TIE)
    close = [grid for grid, t in times.items() if t <= best * (1 + SQUARE_TIE)]
    assert max(chosen.grid) / min(chosen.grid) == min(max(g) / min(g) for g in close)
    assert {choose_lu(algo, n, p, 1e12, profile, placement).grid
            for algo in ("scalapack", "hpl")} == {chosen.grid}
    if (n, p) == (131072, 1024):
        assert chosen.grid == (16, 64) and times[(16, 64)] < 0.95 * times[(32, 32)]
    assert choose_lu("2d", n, p, 1e12, profile, placement, nb=32).nb == 32


def test_2d_ties_go_to_the_squarest_grid_rows_first():
    profile = load_profile()
    placement = profile.placement(8)

    def choice(pr: int, pc: int) -> LUChoice:
        return choose_lu("2d", 4096, 8, 1e12, profile, placement, f"{pr}x{pc}")

    tied = [(1.0, choice(1, 8)), (1.02, choice(4, 2)), (1.04, choice(2, 4)),
            (1.5, choice(8, 1))]
    assert fastest_2d(tied).grid == (2, 4)
    assert fastest_2d([(1.0, choice(1, 8)), (1.06, choice(2, 4))]).grid == (1, 8)
