"""2D LU on 1, 2, 4, 6 and 8 ranks: factors and pivots against SciPy, HPL residual,
measured traffic, logical and on the wire, against the model (exact, given the run's
pivots),
the CLI record and the singular-matrix error. Three mpiexec launches in all."""

import json

import numpy as np
import pytest
from linalg_io.models.lu2d import TIME_FORMULA, critical_path_time, lu2d_plan_counts
from linalg_io.models.profile import load_profile
from mpi_harness import open_mpi, run_cli, run_cli_records, run_mpi_json

FACTOR_CASES = [  # (grid, n, nb): N not a multiple of NB or of the grid in most
    ([1, 1], 97, 16), ([1, 2], 130, 32), ([2, 1], 101, 8), ([2, 2], 150, 32),
    ([2, 3], 131, 16), ([3, 2], 120, 20), ([2, 4], 160, 16), ([4, 2], 99, 10),
    ([1, 4], 70, 64), ([2, 2], 40, 64), ([2, 3], 4, 1), ([3, 2], 7, 2),
]
# ([1, 4], 1536, 128): panels of 1.5 MiB, chained in two pieces that the posted receives
# of the middle ranks forward
TRAFFIC_CASES = [([2, 2], 1024, 64), ([2, 4], 512, 32), ([4, 2], 256, 16), ([1, 4], 1536, 128)]


@pytest.fixture(scope="module")
def eight_rank_results(tmp_path_factory):
    from scipy.io import mmwrite

    from linalg_io.layout.generate import matrix_entries

    tmp = tmp_path_factory.mktemp("lu2d")
    full = matrix_entries("random", 7, 90, np.arange(90), np.arange(90))
    np.save(tmp / "a.npy", full)
    mmwrite(str(tmp / "a.mtx"), full)
    cases = [{"grid": g, "n": n, "nb": nb, "check_factors": True} for g, n, nb in FACTOR_CASES]
    cases += [{"grid": [2, 3], "n": 100, "nb": 16, "dist": "diagdom", "check_factors": True},
              {"grid": [2, 2], "nb": 16, "dist": "file", "file": str(tmp / "a.npy"),
               "check_factors": True},
              {"grid": [3, 1], "nb": 32, "dist": "file", "file": str(tmp / "a.mtx"),
               "check_factors": True}]
    cases += [{"grid": g, "n": n, "nb": nb, "dist": dist}
              for g, n, nb in TRAFFIC_CASES for dist in ("diagdom", "random")]
    return run_mpi_json(8, "lu2d_cases.py", [json.dumps(cases)], timeout=240)


def test_factors_and_pivots_match_scipy(eight_rank_results):
    checked = [r for r in eight_rank_results if r["case"].get("check_factors")]
    assert len(checked) == len(FACTOR_CASES) + 3
    for result in checked:
        assert result["pivots_equal"], result["case"]
        assert result["lu_max_diff"] < 1e-9, result["case"]
        assert result["residual"] < 16, result["case"]


def _measured(result):
    traffic = result["traffic"]
    return (np.array([t["sent"] for t in traffic]), np.array([t["recv"] for t in traffic]),
            np.array([t["msgs"] for t in traffic]))


def _traffic_results(results, dist):
    """The TRAFFIC_CASES results for `dist`, each checked for a passing HPL residual."""
    cases = [r for r in results
             if r["case"].get("dist") == dist and not r["case"].get("check_factors")]
    assert len(cases) == len(TRAFFIC_CASES)
    for result in cases:
        assert result["residual"] < 16, result["case"]
    return cases


def _plan(case, pivoting):
    return lu2d_plan_counts(case["n"], case["nb"], *case["grid"], pivoting)


def test_traffic_exact_without_swaps(eight_rank_results):
    for result in _traffic_results(eight_rank_results, "diagdom"):
        case = result["case"]
        model = _plan(case, "none")
        sent, recv, msgs = _measured(result)
        assert np.array_equal(sent, sum(model["sent"].values()).reshape(-1)), case
        assert np.array_equal(recv, sum(model["recv"].values()).reshape(-1)), case
        assert np.array_equal(msgs, model["msgs"].reshape(-1)), case
        if open_mpi():
            wire = np.array([t["wire"] for t in result["traffic"]], dtype=float).T
            assert wire.tolist() == [sent.tolist(), recv.tolist(), msgs.tolist()], case
        for rank, traffic in enumerate(result["traffic"]):
            for phase, value in model["sent"].items():
                assert traffic["by_phase"].get(phase, 0) == value.reshape(-1)[rank], (case, phase)


def test_traffic_exact_with_the_runs_pivots(eight_rank_results):
    """Random matrices: per rank, the logical counts and (Open MPI) the wire counts equal
    the model given the pivots the run chose; the a priori expectation is within 5%."""
    for result in _traffic_results(eight_rank_results, "random"):
        case = result["case"]
        exact = _plan(case, np.array(result["pivots"]))
        sent, recv, msgs = _measured(result)
        model = (sum(exact["sent"].values()).reshape(-1), sum(exact["recv"].values()).reshape(-1),
                 exact["msgs"].reshape(-1))
        assert [sent.tolist(), recv.tolist(), msgs.tolist()] == [m.tolist() for m in model], case
        if open_mpi():
            wire = np.array([t["wire"] for t in result["traffic"]], dtype=float).T
            assert wire.tolist() == [m.tolist() for m in model], case
        if case["grid"][0] > 1:   # rows do swap
            assert sent.max() > sum(_plan(case, "none")["sent"].values()).max(), case
        expected = _plan(case, "expected")
        assert sent.max() == pytest.approx(sum(expected["sent"].values()).max(), rel=0.05), case


def test_cli_record_on_2x3_grid():
    records = run_cli_records(6, ["lu", "--algo", "2d", "--n", "250", "--nb", "32", "--grid",
                                  "2x3", "--dist", "diagdom", "--reps", "2", "--warmup", "1"])
    (record,) = records
    assert record["kernel"] == "lu" and record["algo"] == "2d"
    assert record["params"]["grid"] == [2, 3, 1] and record["params"]["nb"] == 32
    assert record["verify"]["passed"] and record["verify"]["metric"] == "hpl_scaled_residual"
    assert len(record["times_s"]) == 2 and record["gflops"] > 0
    traffic, model = record["traffic"], record["model"]
    assert traffic["bytes_sent"]["max"] == pytest.approx(model["bytes_sent"]["max"], rel=1e-12)
    assert traffic["bytes_recv"]["mean"] == pytest.approx(model["bytes_recv"]["mean"], rel=1e-12)
    assert traffic["per_rank_bytes_sent"] == pytest.approx(model["per_rank_bytes_sent"])
    assert {"panel", "bcast_L", "bcast_U"} <= set(traffic["by_phase"])
    assert model["pivoting"] == "none" and record["lower_bound"]["bytes_per_rank"] > 0
    # the time is the critical path the record names, on this node's 6 ranks
    profile = load_profile()
    expected_time = critical_path_time(250, 32, 2, 3, "none", profile,
                                       profile.for_run(6).placement(6))
    assert model["time_s"] == pytest.approx(expected_time, rel=1e-12)
    assert model["time_formula"] == TIME_FORMULA
    assert record["lower_bound"]["mem_words"] == pytest.approx(250**2 / 6)
    assert "M = N^2/P, the 2D layout's memory per rank = 1.042e+04 words" in \
        record["lower_bound"]["formula"]


def test_singular_matrix_fails_cleanly_on_all_ranks(tmp_path):
    matrix = np.random.default_rng(0).uniform(-0.5, 0.5, (60, 60))
    matrix[:, 37] = 0.0
    np.save(tmp_path / "singular.npy", matrix)
    result = run_cli(4, ["lu", "--algo", "2d", "--dist", "file", "--file",
                         str(tmp_path / "singular.npy"), "--nb", "16", "--grid", "2x2",
                         "--reps", "1", "--warmup", "0"], timeout=90, check=False)
    assert result.returncode == 1, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if "singular" in line]
    assert len(lines) == 1, result.stderr[-2000:]   # agreed by the 4 ranks, printed once
    assert "column 37" in lines[0]
