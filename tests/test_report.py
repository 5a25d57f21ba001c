"""Report: tables with the right numbers, plots of the right data, one HTML page, errors."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest
from synthetic_records import make_record

from linalg_io.cli import main
from linalg_io.errors import InputError
from linalg_io.records import append_record, flatten, load_records
from linalg_io.report import plots, tables
from linalg_io.report.build import build_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "report.ipynb"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Two LU 2D runs, one COnfLUX run on 8 ranks, one TS-GEMM run without lower bound,
    with a partial model and without wire counts, and a truncated last line."""
    path = tmp_path_factory.mktemp("records") / "results.jsonl"
    append_record(path, make_record(run_id="lu-a"))
    append_record(path, make_record(run_id="lu-b", passed=False, median=0.25,
                                    params={"n": 1024, "nb": 64, "grid": [2, 2, 1],
                                            "dist": "diagdom"}))
    append_record(path, make_record(run_id="lu-c", algo="conflux", nranks=8,
                                    per_rank_sent=[1e6] * 7 + [3e6],
                                    model_per_rank=[1.5e6] * 8, lower_bound=5e5,
                                    per_rank_recv=[1e6] * 6 + [2e6, 4e6],
                                    model_per_rank_recv=[1.5e6] * 8,
                                    wire_per_rank=([1.5e6] * 7 + [3.5e6], [2e6] * 7 + [4.5e6])))
    gemm = make_record(kernel="tsgemm", algo="atb", params={"m": 1048576, "n": 16, "k": 16},
                       lower_bound=None, by_phase={}, run_id="ts-a", nranks=2,
                       per_rank_sent=[2e6, 2e6], model_per_rank=[2e6, 2e6], wire=False)
    del gemm["model"]["msgs_sent"], gemm["model"]["per_rank_bytes_sent"]
    del gemm["traffic"]["recv_by_phase"]
    append_record(path, gemm)
    with open(path, "a") as handle:
        handle.write(json.dumps(make_record(run_id="cut"))[:100])
    return path


@pytest.fixture(scope="module")
def report(results, tmp_path_factory) -> Path:
    """The report of `results`, written once through `linalg-io report`."""
    out = tmp_path_factory.mktemp("report") / "report"
    assert main(["report", str(results), "--out", str(out)]) == 0
    return out


def test_report_writes_tables_with_the_records_numbers(report):
    out = report
    lu = pd.read_csv(out / "lu.csv")
    assert list(lu.columns[:len(tables.LEAD_COLUMNS)]) == list(tables.LEAD_COLUMNS)
    assert list(lu["run_id"]) == ["lu-b", "lu-a", "lu-c"]  # by algo, params (dist), P
    a = lu.set_index("run_id").loc["lu-a"]
    assert (a["algo"], a["n"], a["nb"], a["dist"], a["grid"], a["P"], a["T"]) == \
        ("2d", 1024, 64, "random", "2x2", 4, 1)   # a 2D grid as `lu --algo 2d --grid` takes it
    # what differs anywhere between the LU runs: the grid's form (2D, 2.5D) and dist
    assert a["config"] == "2d grid=2x2 dist=random P=4"
    assert a["time_median_s"] == 0.5 and a["gflops"] == pytest.approx(2.0)
    assert a["verdict"] == "hpl_residual=0.25 PASSED"
    assert a["verify_metric"] == "hpl_residual" and a["verify_value"] == 0.25
    assert bool(a["verify_passed"]) is True
    # received per rank [3, 3, 1, 1] MB, model [2.5, 2, 2, 1.5]; wire sent [5, 3, 3, 1],
    # received [4, 4, 2, 2], the model's 4.5 and 4; lower bound 1 MB
    assert (a["recv_MB"], a["model_recv_MB"]) == pytest.approx((3.0, 2.5))
    assert (a["wire_sent_MB"], a["model_wire_sent_MB"]) == pytest.approx((5.0, 4.5))
    assert (a["wire_recv_MB"], a["model_wire_recv_MB"]) == pytest.approx((4.0, 4.0))
    assert a["lower_bound_MB"] == pytest.approx(1.0)
    assert a["recv_over_lower_bound"] == pytest.approx(3.0)
    assert (a["recv_mean_MB"], a["recv_over_model"], a["recv_balance"]) == \
        pytest.approx((2.0, 1.2, 1.5))
    assert a["wire_recv_over_model"] == pytest.approx(1.0)
    assert a["wire_note"] == "Open MPI monitoring"
    # sent per rank [4, 2, 2, 0] MB, model [3, 2, 2, 1]: a column, never the headline
    assert a["sent_MB"] == pytest.approx(4.0) and a["sent_mean_MB"] == pytest.approx(2.0)
    assert a["model_sent_MB"] == pytest.approx(3.0)
    assert a["model_sent_mean_MB"] == pytest.approx(2.0)
    assert a["sent_over_model"] == pytest.approx(4 / 3)
    assert a["balance"] == pytest.approx(2.0) and a["model_balance"] == pytest.approx(1.5)
    assert (a["msgs_max"], a["model_msgs_max"], a["wire_msgs_max"]) == (12, 10, 14)
    assert a["bandwidth_MB_s"] == pytest.approx(6.0)   # 3 MB received in 0.5 s
    assert "sent_over_lower_bound" not in lu.columns
    b = lu.set_index("run_id").loc["lu-b"]
    assert bool(b["verify_passed"]) is False and b["gflops"] == pytest.approx(4.0)
    assert b["verdict"] == "hpl_residual=40 FAILED"
    c = lu.set_index("run_id").loc["lu-c"]
    # the parameters that differ among its algorithm's runs
    assert c["config"] == "conflux grid=2x2x1 dist=random P=8"
    assert c["recv_MB"] == pytest.approx(4.0) and c["recv_balance"] == pytest.approx(4 / 1.5)
    assert c["recv_over_lower_bound"] == pytest.approx(8.0)
    assert (c["wire_sent_MB"], c["wire_recv_MB"]) == pytest.approx((3.5, 4.5))
    assert c["balance"] == pytest.approx(3e6 / 1.25e6)
    assert c["sent_over_model"] == pytest.approx(2.0)

    gemm = pd.read_csv(out / "tsgemm.csv")
    row = gemm.iloc[0]
    assert (row["m"], row["n"], row["k"], row["P"]) == (1048576, 16, 16, 2)
    assert math.isnan(row["lower_bound_MB"]) and math.isnan(row["recv_over_lower_bound"])
    assert math.isnan(row["wire_sent_MB"]) and math.isnan(row["wire_recv_MB"])
    assert row["wire_note"] == "n/a: MPICH: no monitoring component"
    assert math.isnan(row["model_msgs_max"])
    assert row["sent_over_model"] == pytest.approx(1.0)
    assert "dist" not in gemm.columns and "nb" not in gemm.columns

    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns) == ["kernel", "algo", "params", "P", "T", "time_s", "GFLOP/s",
                                     "recv_MB", "model_recv_MB", "wire_sent_MB",
                                     "model_wire_sent_MB", "wire_recv_MB", "model_wire_recv_MB",
                                     "sent_MB", "verify"]
    assert len(summary) == 4
    assert summary.loc[0, "params"] == "n=1024 nb=64 dist=random grid=2x2"
    assert summary.loc[0, ["recv_MB", "model_recv_MB", "wire_sent_MB", "model_wire_sent_MB",
                           "wire_recv_MB", "model_wire_recv_MB", "sent_MB"]].tolist() == \
        pytest.approx([3.0, 2.5, 5.0, 4.5, 4.0, 4.0, 4.0])
    assert summary.loc[1, "verify"] == "hpl_residual=40 FAILED"
    assert sorted(summary.loc[3, "params"].split()) == ["k=16", "m=1048576", "n=16"]
    assert math.isnan(summary.loc[3, "wire_recv_MB"])


def test_report_markdown_plots_and_page(report):
    out = report
    markdown = (out / "lu.md").read_text().splitlines()
    assert markdown[0] == "# lu"
    assert "All runs: n=1024 nb=64" in markdown
    rows = [line for line in markdown if line.startswith("| ")]
    assert len(rows) == 1 + 3
    assert rows[0] == "| " + " | ".join(tables.LEAD_COLUMNS) + " |"
    # the time beside the model's (0.4 s) and their ratio; no cores in the record: '?';
    # one number format per column (0.25 s in the same column: four decimals)
    assert "| 2d grid=2x2 dist=random P=4 | linalg-io abc123 | 4 | 1 | ? | 0.5000 | 0.4000 | " \
           "1.2500 | 2.000 | 3.000 | 2.500 | 5.000 | 4.500 | 4.000 | 4.000 | 1.0000 | 3.000 | " \
           "hpl_residual=0.25 PASSED |" in rows
    assert markdown[-1] == "Every column of every run: lu.csv"
    gemm = (out / "tsgemm.md").read_text()
    assert "| atb P=2 | linalg-io abc123 | 2 | 1 | ? | 0.5000 | 0.4000 | 1.250 | 2.000 | " \
           "3.000 | 2.500 | n/a | 4.500 | n/a | 4.000 | n/a | n/a |" in gemm
    assert "wire bytes n/a: MPICH: no monitoring component" in gemm
    expected = {"time_lu", "bytes_lu", "gflops_lu", "phases_lu", "balance_lu",
                "time_tsgemm", "bytes_tsgemm", "gflops_tsgemm", "balance_tsgemm"}  # no phases
    assert {p.stem for p in out.glob("*.png")} == expected
    for png in out.glob("*.png"):
        assert png.read_bytes().startswith(PNG_MAGIC)
    page = (out / "index.html").read_text()
    assert page.count("data:image/png;base64,") == len(expected)
    for name in ["lu.csv", "lu.md", "tsgemm.csv", "summary.csv", "bytes_lu.png"]:
        assert f'href="{name}"' in page
    assert "N^2/sqrt(P) words" in page and "2d grid=2x2 dist=diagdom P=4" in page
    # the header: where the records come from
    assert "<th>commits</th>" in page and "<th>ranks x threads</th><td class=\"text\">2 x 1, " \
        "4 x 1, 8 x 1</td>" in page
    # the time beside the model's terms, in a detail table, when the records have them
    assert "time beside the model's terms" not in page
    assert "<th>recv_MB</th><th>model_recv_MB</th><th>wire_sent_MB</th>" in page
    assert page.count('class="failed text"') == 2  # lu-b in the summary and in the lu table


def test_plots_draw_the_records_values(results):
    frame = load_records([results])
    lu = frame[frame["kernel"] == "lu"].dropna(axis=1, how="all")
    received, wire = plots.bytes_figure(lu, "lu").axes
    # runs lu-a, lu-b, lu-c: measured received, then the model's
    assert [round(b.get_height(), 6) for b in received.patches] == [3, 3, 4, 2.5, 2.5, 1.5]
    assert list(received.lines[0].get_ydata()) == pytest.approx([1.0, 1.0, 0.5])
    # wire sent, the model's, wire received, the model's
    assert [round(b.get_height(), 6) for b in wire.patches] == \
        [5, 5, 3.5, 4.5, 4.5, 4.5, 4, 4, 4.5, 4, 4, 4]
    assert received.get_yscale() == wire.get_yscale() == "linear"   # within a decade

    (balance,) = plots.balance_figures(lu, "lu")
    first = balance.axes[0]
    assert [b.get_height() for b in first.patches] == pytest.approx([3, 3, 1, 1, 4, 4, 2, 2])
    assert list(first.lines[0].get_ydata()) == pytest.approx([2.5, 2.0, 2.0, 1.5])
    assert len(balance.axes) == 3

    phases = plots.phase_figure(lu, "lu").axes[0]
    # received by phase: panel (a, b, c), then update
    assert [b.get_height() for b in phases.patches] == pytest.approx(
        [0.75, 0.75, 1.0, 2.25, 2.25, 3.0])
    assert phases.get_title() == ("lu: bytes received by phase\nthe records give no model "
                                  "phases of bytes received")

    lines = plots.gflops_figure(lu, "lu").axes[0].lines
    points = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in lines}
    # one name per problem: the algorithm, its size and what differs (not NB or grid)
    assert points["2d n=1024 dist=diagdom"] == ([4.0], [pytest.approx(4.0)])
    assert points["conflux n=1024 dist=random"] == ([8.0], [pytest.approx(2.0)])


def test_small_bars_get_a_log_axis_and_missing_ones_say_n_a():
    records = [make_record(run_id="big", per_rank_recv=[4e8, 4e8, 1e8, 1e8]),
               make_record(run_id="small", params={"n": 64}, per_rank_recv=[1e5] * 4,
                           wire=False),
               make_record(run_id="alone", params={"n": 32}, nranks=1, per_rank_sent=[0.0],
                           per_rank_recv=[0.0], model_per_rank_recv=[0.0],
                           model_per_rank=[0.0], wire_per_rank=([0.0], [0.0]))]
    records[2]["traffic"]["by_phase"] = records[2]["traffic"]["recv_by_phase"] = {}   # as P=1
    frame = pd.DataFrame([flatten(r) for r in records])
    assert plots.phase_basis(frame)[2] == "received"   # a run without phases does not count
    assert len(plots.balance_figures(frame, "lu")[0].axes) == 2   # nothing to balance on 1
    received, wire = plots.bytes_figure(frame, "lu").axes
    assert received.get_yscale() == "log"
    # the run without wire counts says n/a; the one-rank run's zeros say 0
    assert [(t.get_text(), round(t.get_position()[0], 2)) for t in wire.texts] == [
        ("n/a", 0.7), ("0", 1.7), ("n/a", 1.1), ("0", 2.1)]
    assert [(t.get_text(), round(t.get_position()[0], 2)) for t in received.texts] == [
        ("0", 1.8), ("0", 2.2)]


def test_labels_name_what_varies_and_model_phases_stand_beside():
    records = [make_record(run_id="x", nranks=2, per_rank_sent=[2e6, 2e6]),
               make_record(run_id="y", params={"n": 2048, "nb": 64, "grid": [2, 2, 1],
                                                "dist": "random"})]
    records[1]["model"]["recv_by_phase"] = {"panel": 1e6, "swap": 5e5}
    frame = pd.DataFrame([flatten(r) for r in records])
    assert plots.run_labels(frame) == ["2d n=1024 P=2", "2d n=2048 P=4"]
    assert plots.run_labels(frame, limit=12) == ["2d ... P=2", "2d ... P=4"]
    twins = pd.DataFrame([flatten(make_record(run_id=r, params={"n": 8, "rate": 1.5 * i}))
                          for i, r in enumerate(["abcdefgh", "zyxwvuts"])])
    assert plots.run_labels(twins) == ["2d P=4 [abcdef]", "2d P=4 [zyxwvu]"]
    axes = plots.phase_figure(frame, "lu").axes[0]
    heights = [round(b.get_height(), 6) for b in axes.patches]
    # measured received (x: 3 MB, y: 3 MB): panel then update; the model's only for y
    assert heights == [0.75, 0.75, 2.25, 2.25, 1.0, 0.5]
    assert [b.get_hatch() for b in axes.patches] == [None] * 4 + ["//"] * 2
    assert "hatched: the model's, for the 1 of 2 runs whose records give its phases" in \
        axes.get_title()
    older = pd.DataFrame([flatten(make_record(run_id=r, older=True)) for r in "ab"])
    assert plots.phase_basis(older)[2] == "sent"   # no received phases before: bytes sent


def test_auto_and_explicit_runs_are_named_by_their_resolved_configuration():
    def conflux(grid: str, threads: int = 1, run_id: str = "r") -> dict:
        return make_record(algo="conflux", run_id=run_id, threads=threads,
                           params={"n": 512, "nb": 128, "grid": [2, 2, 1]},
                           command=["linalg-io", "lu", "--algo", "conflux", "--n", "512",
                                    "--nb", "128", "--grid", grid, "--np", "4"])
    frame = pd.DataFrame([flatten(r) for r in (conflux("auto", run_id="441278"),
                                               conflux("2x2x1", run_id="9e20be"))])
    assert plots.run_labels(frame) == ["conflux grid=2x2x1(auto) P=4", "conflux grid=2x2x1 P=4"]
    threads = pd.DataFrame([flatten(r) for r in (conflux("2x2x1"), conflux("2x2x1", 2))])
    assert plots.run_labels(threads) == ["conflux P=4 T=1", "conflux P=4 T=2"]
    from linalg_io.report.labels import auto_options, common_params

    assert common_params(frame) == "n=512 nb=128"
    by_default = make_record(command=["linalg-io", "lu", "--n", "8", "--np", "4"])
    assert by_default["auto"] == {"nb": 64, "grid": [2, 2, 1]}
    older = {k: v for k, v in by_default.items() if k != "auto"}   # no `auto`: none known
    assert auto_options(pd.DataFrame([flatten(by_default), flatten(older)])) == [
        {"nb", "grid"}, set()]
    # what a run derives (here the memory per rank, node memory over P) names no run
    derived = [conflux("2x2x1", run_id=r) for r in ("a", "b")]
    derived[1]["params"]["mem_per_rank"] = 2**30
    derived[0]["params"]["mem_per_rank"] = 2**31
    frame = pd.DataFrame([flatten(r) for r in derived])
    assert plots.run_labels(frame) == ["conflux P=4 [a]", "conflux P=4 [b]"]
    assert tables.summary_table(frame)["params"].tolist() == ["n=512 nb=128 grid=2x2x1"] * 2


def test_gflops_lines_each_look_different():
    records = [make_record(run_id=str(i), params={"n": 64 * (i + 1)}, nranks=p,
                           per_rank_sent=[1e6] * p, model_per_rank=[1e6] * p,
                           per_rank_recv=[1e6] * p, model_per_rank_recv=[1e6] * p,
                           wire_per_rank=([1e6] * p, [1e6] * p))
               for i in range(15) for p in (2, 4)]
    frame = pd.DataFrame([flatten(r) for r in records])
    lines = plots.gflops_figure(frame, "lu").axes[0].lines
    assert len(lines) == 15
    assert len({(str(line.get_color()), line.get_marker()) for line in lines}) == 15
    assert len({str(line.get_color()) for line in lines}) == 15


def test_ranks_and_threads_pairs_stand_side_by_side(tmp_path):
    from linalg_io.report.pairs import ranks_threads_table

    def run(p: int, t: int, median: float, run_id: str) -> dict:
        return make_record(run_id=run_id, nranks=p, threads=t, median=median,
                           per_rank_sent=[1e6] * p, model_per_rank=[1e6] * p,
                           per_rank_recv=[2e6] * p, model_per_rank_recv=[2e6] * p,
                           wire_per_rank=([1e6] * p, [1e6] * p),
                           command=["linalg-io", "lu", "--n", "1024", "--np", str(p),
                                    "--threads", str(t)])
    records = [run(2, 1, 0.5, "a"), run(1, 2, 0.25, "b"), run(4, 1, 0.2, "c")]
    frame = pd.DataFrame([flatten(r) for r in records])
    (row,) = ranks_threads_table(frame).to_dict("records")
    assert row == {"problem": "2d n=1024", "cores": 2, "time_s 2x1": 0.5,
                   "GFLOP/s 2x1": pytest.approx(2.0), "recv_MB 2x1": pytest.approx(2.0),
                   "time_s 1x2": 0.25, "GFLOP/s 1x2": pytest.approx(4.0),
                   "recv_MB 1x2": pytest.approx(2.0), "best (ranks x threads)": "1x2"}
    path = tmp_path / "r.jsonl"
    for record in records:
        append_record(path, record)
    build_report([path], tmp_path / "rep", quiet=True)
    assert len(pd.read_csv(tmp_path / "rep" / "lu_ranks_threads.csv")) == 1
    assert "## ranks x threads on the same cores" in (tmp_path / "rep" / "lu.md").read_text()
    axes = plots.gflops_figure(frame, "lu").axes[0]
    points = {line.get_label(): list(line.get_xdata()) for line in axes.lines}
    assert points == {"2d n=1024 T=1": [2, 4], "2d n=1024 T=2": [2]}   # x: cores P x T
    assert axes.get_xlabel() == "cores: ranks P x threads per rank T"


def test_older_records_without_wire_counts_still_report(tmp_path):
    path = tmp_path / "old.jsonl"
    append_record(path, make_record(run_id="old", older=True))
    build_report([path], tmp_path / "rep", quiet=True)
    (row,) = pd.read_csv(tmp_path / "rep" / "lu.csv").to_dict("records")
    assert row["recv_MB"] == pytest.approx(3.0) and math.isnan(row["wire_recv_MB"])
    assert row["wire_note"] == "n/a: the record predates wire counts"
    markdown = (tmp_path / "rep" / "lu.md").read_text()
    assert "| 3.000 | 2.500 | n/a | n/a | n/a | n/a | 1.000 | 3.000 |" in markdown
    assert "wire bytes n/a: the record predates wire counts" in markdown
    assert {p.stem for p in (tmp_path / "rep").glob("*.png")} == {
        "time_lu", "bytes_lu", "gflops_lu", "phases_lu"}


def test_one_gflops_line_per_problem_across_p():
    records = [make_record(run_id=str(p), nranks=p, per_rank_sent=[1e6] * p,
                           model_per_rank=[1e6] * p, median=1.0 / p,
                           params={"n": 1024, "grid": [p, 1, 1], "mem_per_rank": 2**30 // p},
                           command=["linalg-io", "lu", "--algo", "2d", "--n", "1024",
                                    "--grid", f"{p}x1", "--np", str(p), "--out=r.jsonl"])
               for p in (1, 2, 4)]
    records.append(make_record(run_id="old", params={"n": 1024}, command=None))
    del records[-1]["command"]
    frame = pd.DataFrame([flatten(r) for r in records])
    assert plots.problem_labels(frame) == ["2d n=1024"] * 3 + ["2d n=1024"]
    (line,) = plots.gflops_figure(frame.iloc[:3], "lu").axes[0].lines
    assert list(line.get_xdata()) == [1, 2, 4]
    assert list(line.get_ydata()) == pytest.approx([1.0, 2.0, 4.0])


def test_balance_plots_split_into_pages_of_panels():
    frame = pd.DataFrame([{"algo": "2d", "nranks": 2, "params.n": n,
                           "traffic.per_rank_bytes_recv": [1e6, 2e6]} for n in range(14)])
    figures = plots.balance_figures(frame, "lu")
    assert [len(f.axes) for f in figures] == [plots.PANELS_PER_FIGURE, 2]


def test_sparse_records_still_make_a_report(tmp_path):
    path = tmp_path / "sparse.jsonl"
    lines = [{"schema": 1, "kernel": "pingpong", "run_id": "p"},
             {"schema": 1, "kernel": "lu", "algo": "2d", "params": {"n": 8}, "nranks": 2,
              "time_s": {"median": 0.1}, "verify": {"passed": True}, "traffic": None,
              "model": {}, "lower_bound": None},
             {"schema": 1, "run_id": "no-kernel"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    build_report([path], tmp_path / "out", quiet=True)
    summary = pd.read_csv(tmp_path / "out" / "summary.csv", keep_default_na=False)
    assert summary["kernel"].tolist() == ["pingpong", "lu", ""]
    assert summary["verify"].tolist() == ["?", "PASSED", "?"]
    lu = pd.read_csv(tmp_path / "out" / "lu.csv").iloc[0]
    assert (lu["n"], lu["P"], lu["time_median_s"]) == (8, 2, 0.1)
    assert math.isnan(lu["recv_MB"]) and math.isnan(lu["wire_recv_MB"])
    assert math.isnan(lu["sent_MB"]) and math.isnan(lu["recv_over_model"])
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == []


def test_markdown_formatting():
    table = pd.DataFrame({"name": ["a|b", "c"], "value": [1234567.0, float("nan")],
                          "small": [0.5, 1e-5]})
    text = tables.to_markdown(table).splitlines()
    assert text[1] == "|---|---:|---:|"
    # one number format per column: 1e-5 needs an exponent, so 0.5 gets one too
    assert text[2] == "| a\\|b | 1.235e+06 | 5.000e-01 |"
    assert text[3] == "| c | n/a | 1.000e-05 |"


def test_missing_inputs_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such results file"):
        build_report([tmp_path / "missing.jsonl"], tmp_path / "out")
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"hello": 1}\nnot json\n')
    with pytest.raises(InputError, match="no linalg-io records"):
        build_report([foreign], tmp_path / "out")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00\x81" * 10 + b"\n")
    with pytest.raises(InputError, match="not a JSON-lines records file \\(not UTF-8 text\\)"):
        build_report([binary], tmp_path / "out")
    with pytest.raises(InputError, match="not a file"):
        build_report([tmp_path], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_report_bad_input_exits_2(results, tmp_path, capsys):
    assert main(["report", str(results), str(tmp_path / "nope.jsonl"),
                 "--out", str(tmp_path / "r")]) == 2
    assert "nope.jsonl: no such results file" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    assert main(["report", str(results), "--out", str(results / "sub")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"linalg-io: error: --out {results / 'sub'}: cannot create the directory: " \
                   "Not a directory"


def test_several_files_make_one_report(results, tmp_path, monkeypatch):
    monkeypatch.setattr(plots, "kernel_figures", lambda frame, kernel: {})  # tables only
    other = tmp_path / "other.jsonl"
    append_record(other, make_record(kernel="sptrsv", algo="syncfree", run_id="sp-a",
                                     params={"matrix": "lap2d:256", "nrhs": 1, "upper": False},
                                     lower_bound=None))
    index = build_report([results, other], tmp_path / "r", quiet=True)
    assert len(pd.read_csv(tmp_path / "r" / "summary.csv")) == 5
    assert pd.read_csv(tmp_path / "r" / "sptrsv.csv")["matrix"].tolist() == ["lap2d:256"]
    summary = pd.read_csv(tmp_path / "r" / "summary.csv")
    assert summary["params"].iloc[-1] == "matrix=lap2d:256 nrhs=1"   # upper=False left out
    assert "other.jsonl</code> (1 records)" in index.read_text()


def _run_notebook(where: Path):
    """Execute notebooks/report.ipynb in a fresh kernel with `where` as its directory,
    as `jupyter nbconvert --execute` does (the notebook extra: nbclient, ipykernel)."""
    import nbclient
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(where)}}).execute()
    return [output for cell in notebook.cells if cell.cell_type == "code"
            for output in cell.outputs]


def test_notebook_runs_headless(results, tmp_path, monkeypatch):
    import nbclient

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "run.jsonl").write_bytes(results.read_bytes())
    (tmp_path / "notebooks").mkdir()
    monkeypatch.delenv("LINALG_IO_RESULTS", raising=False)
    outputs = _run_notebook(tmp_path / "notebooks")   # as Jupyter runs it: ../results
    text = "".join(output.get("text", "") for output in outputs)
    assert "4 records from 1 files: ../results/run.jsonl" in text
    assert "lu - all runs: n=1024 nb=64" in text
    assert "commits: " in text and "ranks x threads: 2 x 1, 4 x 1, 8 x 1" in text   # header
    html = [output["data"]["text/html"] for output in outputs
            if "text/html" in output.get("data", {})]
    assert len(html) == 3   # the summary, the lu and the tsgemm lead tables
    assert "<th>recv_MB</th>" in html[1] and "2d grid=2x2 dist=diagdom P=4" in html[1]
    images = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(images) == 9   # time, bytes, GFLOP/s, phases, balance; time, bytes, GFLOP/s, balance
    assert os.listdir(tmp_path / "notebooks") == []  # the notebook writes nothing
    (tmp_path / "elsewhere" / "deeper").mkdir(parents=True)   # neither results/ nor ../results/
    with pytest.raises(nbclient.exceptions.CellExecutionError,
                       match="no records files match results/"):
        _run_notebook(tmp_path / "elsewhere" / "deeper")


def test_a_run_given_twice_counts_once_and_pingpong_has_its_best_bandwidth(results, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(plots, "kernel_figures", lambda frame, kernel: {})  # tables only
    pings = tmp_path / "pp.jsonl"
    record = make_record(kernel="pingpong", algo="sendrecv", params={"min_bytes": 8},
                         nranks=2, lower_bound=None, run_id="pp-a")
    record["results"] = [{"bytes": 8, "one_way_s": 2e-6, "bandwidth_Bps": 4e6},
                         {"bytes": 1 << 20, "one_way_s": 2e-4, "bandwidth_Bps": 5.24288e9}]
    append_record(pings, record)
    build_report([results, results, pings], tmp_path / "r", quiet=True)
    assert len(pd.read_csv(tmp_path / "r" / "summary.csv")) == 5
    (row,) = pd.read_csv(tmp_path / "r" / "pingpong.csv").to_dict("records")
    assert row["bandwidth_MB_s"] == pytest.approx(5242.88) and math.isnan(row["time_median_s"])


def test_a_new_report_drops_the_files_of_the_older_one_it_does_not_rewrite(results, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(plots, "kernel_figures", lambda frame, kernel: {})  # tables only
    other = tmp_path / "other.jsonl"
    append_record(other, make_record(kernel="sptrsv", algo="syncfree", run_id="sp-a",
                                     params={"matrix": "lap2d:256", "nrhs": 1},
                                     lower_bound=None))
    out = tmp_path / "r"
    build_report([results, other], out, quiet=True)
    assert (out / "sptrsv.csv").exists()
    (out / "my_notes.txt").write_text("mine")
    build_report([results], out, quiet=True)
    assert not (out / "sptrsv.csv").exists() and not (out / "sptrsv.md").exists()
    assert (out / "my_notes.txt").read_text() == "mine" and (out / "lu.csv").exists()
