"""The 2.5D candidate search's branch and bound (`linalg_io.lu.choice.pruned_rows`): the
rows it evaluates give the table's first rows and the choice of every row (that its
bound, `linalg_io.models.lu_bounds`, never exceeds the model's time: tests/test_lu_bounds.py)."""

import re

import pytest
from linalg_io.models import conflux
from linalg_io.models.lu_bounds import time_seconds, update_work
from linalg_io.models.profile import load_profile
from linalg_io.models.rates import gemm_efficiency

from linalg_io.cli import main as cli_main
from linalg_io.lu.choice import (
    UntilSettled,
    candidates,
    choose_lu,
    pruned_rows,
    pruned_table,
    ranked,
)
from linalg_io.model_command.lu_verdict import TOP

pytestmark = pytest.mark.usefixtures("one_core")


def _profile(name: str):
    return load_profile(None if name == "default" else name)


def test_update_work_is_the_sum_of_the_updates():
    """N = 1000, v = 256, c = 3: widths 256, 256, 256, 232; slices 86/85/85 and 78/77/77."""
    expected = 0.0
    left = 1000
    for w in (256, 256, 256, 232):
        left -= w
        slices = [w // 3 + (layer < w % 3) for layer in range(3)]
        expected += sum(2.0 * left * left * s / float(gemm_efficiency(s)) for s in slices)
    assert update_work(1000, 256, 3) == pytest.approx(expected, rel=1e-12)
    assert update_work(1000, 256, 3) > update_work(1000, 256, 1) > 2 * 744**2 * 256


@pytest.mark.parametrize("machine,n,p", [
    ("example_cpu", 8192, 64), ("default", 4096, 64), ("example_gpu", 16384, 256),
    ("example_cpu", 65536, 64), ("example_cpu", 32768, 256), ("example_cpu", 16384, 256)])
def test_pruned_table_is_the_unpruned_one(machine, n, p):
    """The first TOP rows of the pruned candidates, and the choice, are those of every
    candidate; the rows not evaluated come last, without costs. (N = 16384, P = 256 on
    example_cpu is communication-bound: only the bound with the messages skips any, 24 of
    51.)"""
    profile = _profile(machine)
    placement = profile.placement(p)
    ask = {"n": n, "p": p, "memory": placement.memory_per_rank, "profile": profile,
           "placement": placement}
    full = candidates("conflux", **ask)
    pruned = candidates("conflux", **ask, keep=TOP)
    assert len(pruned) == len(full)
    evaluated = [c for c in pruned if c.costs is not None]
    assert [c.costs for c in evaluated[:TOP]] == [c.costs for c in full[:TOP]]
    assert [c.choice for c in evaluated[:TOP]] == [c.choice for c in full[:TOP]]
    assert all(c.costs is None for c in pruned[len(evaluated):])
    assert ({c.choice for c in pruned} == {c.choice for c in full})
    assert choose_lu("conflux", **ask) == choose_lu("conflux", **ask, table=full)


@pytest.mark.parametrize("fitting", [0, 3])
def test_pruned_table_is_the_unpruned_one_where_few_fit(fitting):
    """N = 16384, P = 256 on example_cpu with a memory per rank that none or three of the
    candidates fit: the first TOP rows (those that fit, then the fastest of the others)
    are those of every candidate, yet some are not evaluated."""
    profile = _profile("example_cpu")
    placement = profile.placement(256)
    ask = {"n": 16384, "p": 256, "profile": profile, "placement": placement}
    needs = sorted(c.costs["mem_bytes"] for c in candidates("conflux", **ask, memory=1e30))
    memory = needs[fitting - 1] if fitting else needs[0] / 2
    full = candidates("conflux", **ask, memory=memory)
    pruned = candidates("conflux", **ask, memory=memory, keep=TOP)
    evaluated = [c for c in pruned if c.costs is not None]
    assert sum(c.costs["fits"] for c in full) == fitting
    assert [c.costs for c in evaluated[:TOP]] == [c.costs for c in full[:TOP]]
    assert TOP <= len(evaluated) < len(full)
    assert all(c.costs is None for c in pruned[len(evaluated):])


def test_pruning_skips_and_stops_at_the_bound():
    """At P = 256, N = 131072 on example_cpu (compute-bound) most candidates are never
    evaluated, and every one left out has a bound above the keep-th row's time."""
    profile = _profile("example_cpu")
    placement = profile.placement(256)
    rows, skipped = pruned_table(131072, 256, placement.memory_per_rank, profile,
                                 placement=placement, keep=TOP)
    assert len(skipped) > len(rows) >= TOP
    kth = ranked(rows, "time")[TOP - 1]["time_s"]
    mem = placement.memory_per_rank
    over = [(px, py, c, v) for px, py, c, v in skipped
            if conflux.memory_words(131072, v, px, py, c) * 8 > mem]
    assert all(time_seconds(131072, v, px, py, c, profile, placement) > kth
               for px, py, c, v in skipped if (px, py, c, v) not in over)
    assert len(over) < len(skipped)


def test_model_lu_prints_what_every_row_gives(capsys):
    """`model lu` at N = 65536, P = 64 on example_cpu skips candidates: its verdict and
    its 2.5D rows are those of `--all` (which evaluates every one), and it says how many
    it did not evaluate."""
    ask = ["model", "lu", "--n", "65536", "--p", "64", "--machine", "example_cpu"]
    assert cli_main(ask + ["--all"]) == 0
    every = capsys.readouterr().out.splitlines()
    assert cli_main(ask) == 0
    pruned = capsys.readouterr().out.splitlines()
    table = pruned.index(next(line for line in pruned if line.startswith("2.5D LU")))
    assert pruned[:table + 2 + TOP] == every[:table + 2 + TOP]
    more = pruned[table + 2 + TOP]
    assert re.fullmatch(r"  \.\.\. \d+ more \(--all shows every candidate\); \d+ more not "
                        r"evaluated \(a lower bound on their time ranks them after these\)", more)
    shown, unevaluated = (int(x) for x in re.findall(r"\d+", more))
    rows = [line for line in every[table + 2:] if re.match(r"[*! ] +\d+x\d+x\d+ ", line)]
    assert unevaluated > 0 and TOP + shown + unevaluated == len(rows)


def test_until_settled_hands_out_no_item_the_results_rule_out():
    """The branch and bound's items as workers ask for them: each while the results in
    hand leave its bound open, none from the first one they settle (bounds ascending)."""
    results: list[str] = []
    wanted = UntilSettled(list("abcdef"), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                           lambda bound: len(results) >= 2 and bound > 3.0)
    handed = []
    for item in wanted:
        handed.append(item)
        results.append(item)
    assert handed == ["a", "b", "c"]


def test_few_candidates_go_costliest_first_back_in_the_bounds_order():
    """Where the configurations are no more than `keep` (a prime P: P x 1 x 1 and 1 x P x
    1 of each tile), every one is evaluated whatever the results: handed out most
    process rows first, then the smallest tile (the longest evaluations first, so that
    the workers end together); the rows come back in the bounds' order, nothing left."""
    profile = _profile("example_cpu")
    n, p = 65536, 509
    placement = profile.placement(p)
    configs = [(1, p, 1, 256), (p, 1, 1, 512), (1, p, 1, 128), (p, 1, 1, 128),
               (p, 1, 1, 256), (1, p, 1, 512)]
    handed = []

    class Recording:
        """A mapper whose window hands the items out in their order, one at a time."""

        def __call__(self, function, items):
            return [function(item) for item in items]

        def window(self, function, items):
            for item in items:
                handed.append(item)
                yield function(item)

    def row(config):
        return {"config": config, "time_s": 1.0}

    rows, left = pruned_rows(row, n, 1.0, profile, placement, configs, TOP, Recording())
    assert handed == [(p, 1, 1, 128), (p, 1, 1, 256), (p, 1, 1, 512), (1, p, 1, 128),
                      (1, p, 1, 256), (1, p, 1, 512)]
    by_bound = sorted(configs, key=lambda c: time_seconds(n, c[3], *c[:3], profile, placement))
    assert [r["config"] for r in rows] == by_bound and left == []
