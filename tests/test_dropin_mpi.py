"""The 2.5D LU as a drop-in for pdgetrf: `linalg_io.lu.factor` on 4 and 8 ranks (one launch)
returns P A = L U in the caller's block-cyclic layout with LAPACK's pivots, moves
exactly the entries that change owner in and out, and ScaLAPACK's pdgetrs accepts the
result; `lu --algo conflux --input-layout` records its traffic per rank equal to the
model, logical and on the wire, with the redistribution apart."""

import json
import os

import pytest
from mpi_harness import run_cli, run_cli_records, run_mpi_json

from linalg_io.errors import EnvironmentProblem


def _have_scalapack() -> bool:
    from linalg_io.lu.scalapack import find_library

    try:
        find_library(None)
        return True
    except EnvironmentProblem:
        if os.environ.get("LINALG_IO_REQUIRE_SCALAPACK"):
            raise
        return False


HAVE_SCALAPACK = _have_scalapack()


CASES = [  # p, n, (mb, nb) on pr x pc, order, 2.5D shape or "api", relabel, memory fraction
    (4, 128, (8, 8), (2, 2), "row", [2, 2, 1, 16], True, None),     # reflected tile columns
    (8, 90, (5, 7), (2, 4), "row", [2, 2, 2, 8], True, None),
    (8, 120, (4, 4), (4, 2), "col", [1, 4, 2, 16], False, None),
    (8, 150, (16, 16), (2, 4), "row", [2, 4, 1, 32], True, 0.5),
    (4, 97, (6, 6), (2, 2), "row", "api", True, None),
    (2, 128, (8, 8), (1, 2), "row", [1, 2, 1, 32], False, None),  # reflected, U in place
]


@pytest.fixture(scope="module")
def factored():
    cases = [{"p": p, "n": n, "mb": mb, "nb": nb, "pr": pr, "pc": pc, "order": order,
              "shape": shape, "relabel": relabel, "mem_fraction": fraction,
              "pdgetrs": HAVE_SCALAPACK and mb == nb}     # pdgetrs needs MB = NB
             for p, n, (mb, nb), (pr, pc), order, shape, relabel, fraction in CASES]
    return run_mpi_json(8, "dropin_cases.py", [json.dumps(cases)], timeout=240)


def test_factors_in_the_callers_layout(factored):
    assert len(factored) == len(CASES)
    for result in factored:
        assert result["factor_error"] < 1e-13, result["case"]     # |P A - L U| / max|A|
        assert result["pivots_valid"], result["case"]
        assert all(rank["in_place"] for rank in result["ranks"])


def test_redistribution_moves_exactly_the_owner_changes(factored):
    for result in factored:
        if result["case"]["shape"] == "api":
            continue
        for rank in result["ranks"]:
            assert rank["sent"].get("redistribute_in", 0) == 8 * rank["model_in"][0]
            assert rank["recv"].get("redistribute_in", 0) == 8 * rank["model_in"][1]
            assert rank["sent"].get("redistribute_out", 0) == 8 * rank["model_out"][0]
            assert rank["recv"].get("redistribute_out", 0) == 8 * rank["model_out"][1]
        assert sum(rank["model_out"][0] for rank in result["ranks"]) > 0


@pytest.mark.skipif(not HAVE_SCALAPACK, reason="no ScaLAPACK library (make scalapack)")
def test_pdgetrs_accepts_our_factors(factored):
    checked = [result for result in factored if result["case"]["pdgetrs"]]
    assert len(checked) == 5
    for result in checked:
        assert all(rank["getrs_info"] == 0 for rank in result["ranks"]), result["case"]
        assert result["hpl_residual"] < 16, result["case"]


def test_cli_record_traffic_is_the_model_per_rank():
    record, = run_cli_records(4, ["lu", "--algo", "conflux", "--input-layout", "scalapack:16x24",
                                  "--n", "256", "--grid", "2x2x1", "--nb", "32", "--reps", "2",
                                  "--warmup", "0", "--redist-mem", "0.5"])
    assert record["verify"]["passed"] and record["verify"]["value"] < 16
    traffic, model = record["traffic"], record["model"]
    for level_t, level_m in ((traffic, model), (traffic["wire"], model["wire"])):
        assert level_t["per_rank_bytes_sent"] == level_m["per_rank_bytes_sent"]
        assert level_t["per_rank_bytes_recv"] == level_m["per_rank_bytes_recv"]
        assert level_t["msgs_sent"] == level_m["msgs_sent"]
    for phase in ("redistribute_in", "redistribute_out"):
        assert traffic["by_phase"][phase] > 0
        assert max(model["redistribution"][phase]["per_rank_bytes_sent"]) > 0
    params = record["params"]
    assert params["input_layout"] == "scalapack:16x24" and params["input_grid"] == [2, 2]
    moved = params["redistribute_in_entries"]
    assert 0 < moved["moved"] <= moved["without_relabelling"] < moved["total"] == 256 * 256
    assert [len(params["part_times_s"][p]) for p in
            ("redistribute_in", "factor", "redistribute_out")] == [2, 2, 2]


def test_bad_input_layout_is_bad_input():
    result = run_cli(2, ["lu", "--algo", "conflux", "--n", "64", "--input-layout", "cyclic:4"],
                     check=False)
    assert result.returncode == 2
    assert "--input-layout 'cyclic:4': expected scalapack:MBxNB" in result.stderr
