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
    """Two LU 2D runs, one COnfLUX run on 8 ranks, one TS-GEMM run without lower bound
    and with a partial model, and a truncated last line."""
    path = tmp_path_factory.mktemp("records") / "results.jsonl"
    append_record(path, make_record(run_id="lu-a"))
    append_record(path, make_record(run_id="lu-b", passed=False, median=0.25,
                                    params={"n": 1024, "nb": 64, "grid": [2, 2, 1],
                                            "dist": "diagdom"}))
    append_record(path, make_record(run_id="lu-c", algo="conflux", nranks=8,
                                    per_rank_sent=[1e6] * 7 + [3e6],
                                    model_per_rank=[1.5e6] * 8, lower_bound=5e5))
    gemm = make_record(kernel="tsgemm", algo="atb", params={"m": 1048576, "n": 16, "k": 16},
                       lower_bound=None, by_phase={}, run_id="ts-a", nranks=2,
                       per_rank_sent=[2e6, 2e6], model_per_rank=[2e6, 2e6])
    del gemm["model"]["msgs_sent"], gemm["model"]["per_rank_bytes_sent"]
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
    assert list(lu["run_id"]) == ["lu-b", "lu-a", "lu-c"]  # by algo, params (dist), P
    a = lu.set_index("run_id").loc["lu-a"]
    assert (a["algo"], a["n"], a["nb"], a["dist"], a["grid"], a["P"]) == \
        ("2d", 1024, 64, "random", "2x2x1", 4)
    assert a["time_median_s"] == 0.5 and a["gflops"] == pytest.approx(2.0)
    assert a["verify_metric"] == "hpl_residual" and a["verify_value"] == 0.25
    assert bool(a["verify_passed"]) is True
    # per rank sent [4, 2, 2, 0] MB, model [3, 2, 2, 1] MB, lower bound 1 MB
    assert a["sent_max_MB"] == pytest.approx(4.0) and a["sent_mean_MB"] == pytest.approx(2.0)
    assert a["model_sent_max_MB"] == pytest.approx(3.0)
    assert a["model_sent_mean_MB"] == pytest.approx(2.0)
    assert a["sent_over_model"] == pytest.approx(4 / 3)
    assert a["balance"] == pytest.approx(2.0) and a["model_balance"] == pytest.approx(1.5)
    assert a["lower_bound_MB"] == pytest.approx(1.0)
    assert a["sent_over_lower_bound"] == pytest.approx(4.0)
    assert (a["msgs_max"], a["model_msgs_max"]) == (12, 10)
    assert a["bandwidth_MB_s"] == pytest.approx(8.0)
    b = lu.set_index("run_id").loc["lu-b"]
    assert bool(b["verify_passed"]) is False and b["gflops"] == pytest.approx(4.0)
    c = lu.set_index("run_id").loc["lu-c"]
    assert c["balance"] == pytest.approx(3e6 / 1.25e6)
    assert c["sent_over_model"] == pytest.approx(2.0)
    assert c["sent_over_lower_bound"] == pytest.approx(6.0)

    gemm = pd.read_csv(out / "tsgemm.csv")
    assert set(gemm.columns[:5]) == {"algo", "m", "n", "k", "grid"}
    row = gemm.iloc[0]
    assert (row["m"], row["n"], row["k"], row["P"]) == (1048576, 16, 16, 2)
    assert math.isnan(row["lower_bound_MB"]) and math.isnan(row["sent_over_lower_bound"])
    assert math.isnan(row["model_msgs_max"])
    assert row["sent_over_model"] == pytest.approx(1.0)
    assert "dist" not in gemm.columns and "nb" not in gemm.columns

    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 4
    assert summary.loc[0, "params"] == "n=1024 nb=64 dist=random grid=2x2x1"
    assert summary.loc[1, "verify"] == "hpl_residual=40 FAILED"
    assert sorted(summary.loc[3, "params"].split()) == ["k=16", "m=1048576", "n=16"]


def test_report_markdown_plots_and_page(report):
    out = report
    markdown = (out / "lu.md").read_text().splitlines()
    assert markdown[0] == "# lu"
    assert len([line for line in markdown if line.startswith("| ")]) == 1 + 3
    assert "| 2d | 1024 | 64 | random | 2x2x1 | 4 |" in "\n".join(markdown)
    expected = {"bytes_lu", "gflops_lu", "phases_lu", "balance_lu",
                "bytes_tsgemm", "gflops_tsgemm", "balance_tsgemm"}  # tsgemm has no phases
    assert {p.stem for p in out.glob("*.png")} == expected
    for png in out.glob("*.png"):
        assert png.read_bytes().startswith(PNG_MAGIC)
    page = (out / "index.html").read_text()
    assert page.count("data:image/png;base64,") == len(expected)
    for name in ["lu.csv", "lu.md", "tsgemm.csv", "summary.csv", "bytes_lu.png"]:
        assert f'href="{name}"' in page
    assert "N^2/sqrt(P) words" in page and "lu-c" in page
    assert page.count('class="failed"') == 2  # lu-b in the summary and in the lu table


def test_plots_draw_the_records_values(results):
    frame = load_records([results])
    lu = frame[frame["kernel"] == "lu"].dropna(axis=1, how="all")
    bars = plots.bytes_figure(lu, "lu").axes[0].patches
    assert [round(b.get_height(), 6) for b in bars] == [4.0, 4.0, 3.0, 3.0, 3.0, 1.5]

    (balance,) = plots.balance_figures(lu, "lu")
    first = balance.axes[0]
    assert [b.get_height() for b in first.patches] == pytest.approx([4.0, 2.0, 2.0, 0.0])
    assert list(first.lines[0].get_ydata()) == pytest.approx([3.0, 2.0, 2.0, 1.0])
    assert len(balance.axes) == 3

    phases = plots.phase_figure(lu, "lu").axes[0].patches
    assert [b.get_height() for b in phases] == pytest.approx([1.0, 1.0, 0.75, 3.0, 3.0, 2.25])

    lines = plots.gflops_figure(lu, "lu").axes[0].lines
    points = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in lines}
    assert points["2d n=1024 nb=64 dist=diagdom"] == ([4.0], [pytest.approx(4.0)])
    assert points["conflux n=1024 nb=64 dist=random"] == ([8.0], [pytest.approx(2.0)])


def test_labels_name_what_varies_and_model_phases_stand_beside():
    records = [make_record(run_id="x", nranks=2, per_rank_sent=[2e6, 2e6]),
               make_record(run_id="y", params={"n": 2048, "nb": 64, "grid": [2, 2, 1],
                                                "dist": "random"})]
    records[1]["model"]["by_phase"] = {"panel": 1e6, "swap": 5e5}
    frame = pd.DataFrame([flatten(r) for r in records])
    assert plots.run_labels(frame) == ["2d n=1024 P=2", "2d n=2048 P=4"]
    assert plots.run_labels(frame, limit=12) == ["2d ... P=2", "2d ... P=4"]
    twins = pd.DataFrame([flatten(make_record(run_id=r, params={"n": 8, "rate": 1.5 * i}))
                          for i, r in enumerate(["abcdefgh", "zyxwvuts"])])
    assert plots.run_labels(twins) == ["2d P=4 [abcdef]", "2d P=4 [zyxwvu]"]
    bars = plots.phase_figure(frame, "lu").axes[0].patches
    heights = [round(b.get_height(), 6) for b in bars]
    # measured: panel then update, two runs each; model: panel then swap
    assert heights == [0.5, 1.0, 1.5, 3.0, 0.0, 1.0, 0.0, 0.5]
    assert [b.get_hatch() for b in bars] == [None] * 4 + ["//"] * 4


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
                           "traffic.per_rank_bytes_sent": [1e6, 2e6]} for n in range(14)])
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
    assert math.isnan(lu["sent_max_MB"]) and math.isnan(lu["sent_over_model"])
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == []


def test_markdown_formatting():
    table = pd.DataFrame({"name": ["a|b", "c"], "value": [1234567.0, float("nan")],
                          "small": [0.5, 1e-5]})
    text = tables.to_markdown(table).splitlines()
    assert text[1] == "|---|---:|---:|"
    assert text[2] == "| a\\|b | 1.235e+06 | 0.5 |"
    assert text[3] == "| c |  | 1.000e-05 |"


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
                                     params={"matrix": "lap2d:256", "nrhs": 1},
                                     lower_bound=None))
    index = build_report([results, other], tmp_path / "r", quiet=True)
    assert len(pd.read_csv(tmp_path / "r" / "summary.csv")) == 5
    assert pd.read_csv(tmp_path / "r" / "sptrsv.csv")["matrix"].tolist() == ["lap2d:256"]
    assert "other.jsonl</code> (1 records)" in index.read_text()


def test_notebook_cells_run_headless(results, tmp_path, monkeypatch, capsys):
    notebook = json.loads(NOTEBOOK.read_text())
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    assert len(cells) >= 3
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "run.jsonl").write_bytes(results.read_bytes())
    (tmp_path / "notebooks").mkdir()
    monkeypatch.delenv("LINALG_IO_RESULTS", raising=False)
    # as Jupyter runs it (../results/*.jsonl) and as papermill does (results/*.jsonl)
    for where in (tmp_path / "notebooks", tmp_path):
        monkeypatch.chdir(where)
        namespace: dict = {}
        for source in cells:
            exec(compile(source, str(NOTEBOOK), "exec"), namespace)  # noqa: S102 (our notebook)
        assert len(namespace["frame"]) == 4
        assert set(namespace["by_kernel"]) == {"lu", "tsgemm"}
        assert len(namespace["figures"]) == 7
        assert "4 records from 1 files" in capsys.readouterr().out
    assert os.listdir(tmp_path / "notebooks") == []  # the notebook writes nothing
    assert sorted(os.listdir(tmp_path)) == ["notebooks", "results"]
    (tmp_path / "elsewhere" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "elsewhere" / "deeper")
    with pytest.raises(FileNotFoundError, match="no records files match results/"):
        exec(compile(cells[0], str(NOTEBOOK), "exec"), {})  # noqa: S102


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
