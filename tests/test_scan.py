"""`model ... --scan`: prediction records per P and algorithm, and what `report` draws of
them."""

import pandas as pd
import pytest
from linalg_io.models import conflux
from linalg_io.models import tsgemm as tsgemm_model
from linalg_io.models.lu2d import lu2d_costs, lu_lower_bound
from linalg_io.models.profile import load_profile

from linalg_io.cli import main as cli_main
from linalg_io.lu.choice import candidate_table, ranked
from linalg_io.records import read_records
from linalg_io.report.build import build_report

CPU = load_profile("example_cpu")


def test_lu_strong_and_weak_scans_write_the_chosen_runs(tmp_path, capsys):
    out = tmp_path / "scan.jsonl"
    assert cli_main(["model", "lu", "--scan", "strong", "--n", "4096", "--p", "4:16",
                     "--machine", "example_cpu", "--out", str(out)]) == 0
    assert cli_main(["model", "lu", "--scan", "weak", "--mem-per-rank", "64M", "--p", "4,8",
                     "--machine", "example_cpu", "--objective", "volume", "--out", str(out)]) == 0
    capsys.readouterr()
    records = read_records([out])
    assert [(r["nranks"], r["algo"]) for r in records] == [
        (p, algo) for p in (4, 8, 16, 4, 8) for algo in ("conflux", "2d")]
    assert all(r["prediction"] is True and r["backend"] == "model" for r in records)
    for record in records[:6]:      # strong: N fixed; the model block is the model's
        p, params, placement = record["nranks"], record["params"], CPU.placement(record["nranks"])
        assert params["n"] == 4096 and record["machine"]["example"] is True
        mem = placement.memory_per_rank
        assert record["lower_bound"] == lu_lower_bound(4096, p, mem / 8,
                                                       "the memory per rank allowed")
        if record["algo"] == "conflux":
            px, py, c = params["grid"]
            best = ranked(candidate_table(4096, p, mem, CPU, placement=placement), "time")[0]
            assert (px, py, c, params["nb"]) == (best["px"], best["py"], best["c"], best["v"])
            block = conflux.record_block(4096, params["nb"], px, py, c, CPU, "uniform", placement)
        else:
            assert params["grid"] == {4: [2, 2], 8: [2, 4], 16: [4, 4]}[p]
            block = lu2d_costs(4096, params["nb"], *params["grid"], "expected").record_block(
                CPU, placement)
        assert record["model"]["bytes_recv"] == block["bytes_recv"]
        assert record["model"]["wire"]["bytes_sent"] == block["wire"]["bytes_sent"]
        assert record["model"]["time_s"] == block["time_s"]
        assert "per_rank_bytes_recv" not in record["model"]
    weak = records[6:]       # every rank holds 64 MiB of the matrix: N = sqrt(P M / 8)
    assert [r["params"]["n"] for r in weak] == [5632, 5632, 8192, 8192]   # 5792 -> 5632
    assert all(r["params"]["objective"] == "volume" for r in weak)


def test_tsgemm_and_sptrsv_scans(tmp_path, capsys):
    out = tmp_path / "scan.jsonl"
    assert cli_main(["model", "tsgemm", "--scan", "weak", "--variant", "tsm2r", "--m", "100000",
                     "--n", "16", "--k", "64", "--p", "1:4", "--out", str(out)]) == 0
    assert cli_main(["model", "sptrsv", "--scan", "strong", "--matrix", "lap2d:32", "--p", "1,2",
                     "--out", str(out)]) == 0
    capsys.readouterr()
    records = read_records([out])
    gemm = [r for r in records if r["kernel"] == "tsgemm"]
    assert [(r["nranks"], r["params"]["dist"], r["params"]["m"]) for r in gemm] == [
        (p, dist, 100000 * p) for p in (1, 2, 4) for dist in ("1d", "2d")]
    profile = load_profile()
    block = tsgemm_model.model_block("tsm2r", 400000, 16, 64, 4, 8, "2d", profile)
    assert gemm[-1]["model"]["time_s"] == block["time_s"]
    solve = [r for r in records if r["kernel"] == "sptrsv"]
    assert [(r["nranks"], r["algo"]) for r in solve] == [
        (1, "levelset"), (1, "syncfree"), (2, "levelset"), (2, "syncfree")]
    assert solve[0]["model"]["message_levels"] == 0 and solve[0]["model"]["msgs_sent"]["max"] == 0
    assert solve[2]["model"]["critical_path_levels"] == 63    # lap2d:32: 2 * 32 - 1 levels
    assert solve[2]["model"]["message_levels"] > 0


def test_report_draws_predictions_apart_from_runs(tmp_path, capsys):
    out = tmp_path / "scan.jsonl"
    assert cli_main(["model", "lu", "--scan", "strong", "--n", "4096", "--p", "4:16",
                     "--out", str(out)]) == 0
    capsys.readouterr()
    build_report([out], tmp_path / "report", quiet=True)
    table = pd.read_csv(tmp_path / "report" / "scaling_lu.csv")
    records = read_records([out])
    assert len(table) == 6 and (tmp_path / "report" / "scaling_lu.png").stat().st_size > 10000
    conflux_rows = table[table["series"].str.startswith("conflux")].reset_index()
    times = [r["model"]["time_s"] for r in records if r["algo"] == "conflux"]
    assert list(conflux_rows["time_s"]) == pytest.approx(times)
    # strong scaling against one baseline, the fastest series at P = 4: T0 4 / (T(P) P)
    fastest = min(t for t in table["time_s"][table["P"] == 4])
    assert list(conflux_rows["efficiency"]) == pytest.approx(
        [fastest * 4 / (t * p) for t, p in zip(times, (4, 8, 16))])
    assert table["efficiency"].max() == pytest.approx(1.0)
    assert list(conflux_rows["lower_bound_MB"]) == pytest.approx(
        [r["lower_bound"]["bytes_per_rank"] / 1e6 for r in records if r["algo"] == "conflux"])
    page = (tmp_path / "report" / "index.html").read_text()
    assert "lu (predicted for " in page and "scaling_lu.png" in page
    assert "parallel efficiency against one baseline" in page
    assert "<h2>All runs</h2>" not in page                    # no runs: no empty table
    assert not (tmp_path / "report" / "lu.csv").exists()     # no runs: no run table
