"""What a reader sees of a run: the summary line's time beside its model."""

from __future__ import annotations

import pytest
from synthetic_records import make_record

from linalg_io.report.line import summary_line


def test_summary_line_puts_the_time_beside_its_model_and_says_what_was_timed():
    record = make_record(median=0.766)          # model.time_s = 0.4
    record["model"]["time_s"] = 0.150
    line = summary_line("N=2048 NB=128 grid=2x2", record)
    assert "time=0.766 s (model 0.15 s, x5.11; median of 3 reps of the slowest rank, " \
           "factorization only)" in line
    # the busiest rank's received, then wire sent / received, each beside the model's
    assert "recv_max=3.000 MB (model 2.500)" in line
    assert "wire_max sent/recv=5.000/4.000 MB (model 4.500/4.000)" in line
    assert line.endswith("PASSED")
    record["model"]["time_s"] = 0.745               # within 3%: the ratio keeps its digits
    assert "(model 0.745 s, x1.03; " in summary_line("", record)
    record["model"]["time_s"] = None
    assert "time=0.766 s (no model time; median of 3 reps" in summary_line("", record)


def test_time_beside_model_oversubscription_and_one_order(tmp_path):
    import pandas as pd

    from linalg_io.records import append_record, flatten
    from linalg_io.report import plots, tables
    from linalg_io.report.build import build_report

    records = [make_record(run_id="b", params={"n": 2048, "nb": 128, "grid": [2, 2, 1]},
                           median=0.9),
               make_record(run_id="a", params={"n": 1024, "nb": 64, "grid": [2, 2, 1]},
                           median=0.2)]
    records[0]["env"]["cores"] = 2        # 4 ranks on 2 cores
    records[1]["env"]["cores"] = 8
    records[0]["model"]["time_terms_s"] = {"latency": 0.1, "bandwidth": 0.2, "compute": 0.1}
    frame = pd.DataFrame([flatten(r) for r in records])
    table = tables.run_table(frame)
    assert list(table["run_id"]) == ["a", "b"]                 # by n
    assert list(table["oversubscribed"]) == ["no", "yes"]
    assert list(table["time_over_model"]) == [0.2 / 0.4, 0.9 / 0.4]
    assert table.loc[1, ["model_latency_s", "model_bandwidth_s", "model_compute_s"]].tolist() \
        == [0.1, 0.2, 0.1]
    figure = plots.time_figure(frame.loc[tables.run_table(frame, keep_index=True).index], "lu")
    axes = figure.axes[0]
    assert [t.get_text() for t in axes.get_xticklabels()] == list(table["config"])
    heights = [round(bar.get_height(), 6) for bars in axes.containers for bar in bars]
    assert heights == [0.2, 0.9, 0.4, 0.4]                    # measured a, b; model a, b
    path = tmp_path / "r.jsonl"
    for record in records:
        append_record(path, record)
    build_report([path], tmp_path / "rep", quiet=True)
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "1 of 2 runs oversubscribed" in page and "time beside the model&#x27;s terms" in page


def test_python_api_runs_a_case_and_loads_records(tmp_path):
    """linalg_io.run gives the record of a real 2-rank run; records.load reads it back
    from a glob as a DataFrame; bad input raises the exit code's error."""
    import pytest

    import linalg_io
    from linalg_io.errors import InputError
    from linalg_io.records import load

    out = tmp_path / "mine.jsonl"
    record = linalg_io.run("lu", algo="2d", n=256, nb=32, grid="1x2", np=2, reps=1,
                           warmup=0, out=out)
    assert record["kernel"] == "lu" and record["nranks"] == 2
    assert record["params"]["grid"] == [1, 2, 1] and record["verify"]["passed"]
    assert record["verify"]["value"] < 16 and record["model"]["time_s"] > 0
    frame = load(str(tmp_path / "*.jsonl"))
    assert frame.loc[0, "run_id"] == record["run_id"]
    assert frame.loc[0, "traffic.bytes_recv.max"] == record["traffic"]["bytes_recv"]["max"]
    with pytest.raises(InputError, match="grid 3x3 needs 9 ranks"):
        linalg_io.run("lu", algo="2d", n=256, grid="3x3", np=2)
    with pytest.raises(InputError, match="no records file"):
        load(str(tmp_path / "none*.jsonl"))


def test_pingpong_is_reported_osu_style_with_its_fit():
    import pandas as pd

    from linalg_io.report import plots

    rows = [{"bytes": b, "iters": 10, "one_way_s": 1e-6 + b * 1e-9, "bandwidth_Bps": 0.0,
             "data_ok": True} for b in (8, 32, 128, 65536, 262144)]
    frame = pd.DataFrame([{"kernel": "pingpong", "algo": "sendrecv", "nranks": 2,
                           "results": rows}])
    figures = plots.kernel_figures(frame, "pingpong")
    assert list(figures) == ["pingpong_pingpong"]
    latency, bandwidth = figures["pingpong_pingpong"].axes
    assert latency.get_xscale() == latency.get_yscale() == bandwidth.get_yscale() == "log"
    measured, fitted = latency.lines
    assert list(measured.get_ydata()) == pytest.approx([1e-6 * 1e6 + b * 1e-3 for b in
                                                        (8, 32, 128, 65536, 262144)])
    # the 8-byte time, and the bandwidth
    assert "alpha 1.01 us" in fitted.get_label() and "1/beta 1000 MB/s" in fitted.get_label()
    assert bandwidth.lines[0].get_ydata()[-1] == pytest.approx(262144 / (1e-6 + 262144e-9) / 1e6)


def test_readme_machine_schema_pastes_as_json_and_docs_stand_alone(tmp_path):
    """The README's machine file is JSON that the loader takes; README, docs and code
    cite nothing outside the repository; the anchors the code cites exist."""
    import json
    import re
    from pathlib import Path

    from linalg_io.models.profile import load_profile

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    (block,) = re.findall(r"```json\n(.*?)```", readme, re.DOTALL)
    (tmp_path / "m.json").write_text(block)
    machine = load_profile(tmp_path / "m.json")
    assert json.loads(block)["ranks_per_node"] == machine.ranks_per_node == 128
    assert machine.inter_node.links_per_node == 1
    records_doc = (root / "docs" / "records.md").read_text()
    anchors = set(re.findall(r'<a id="([a-z-]+)"></a>', records_doc))
    cited = set()
    for path in [root / "README.md", *root.glob("docs/*.md"), *root.glob("linalg_io/**/*.py"),
                 *root.glob("models/*.py")]:
        text = path.read_text()
        assert "shared/" not in text and "SPEC.md" not in text, path
        cited |= set(re.findall(r"docs/records\.md#([a-z-]+)", text))
    assert cited and cited <= anchors
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (root / link).exists(), link


def _parsers():
    """(command words, parser) of every command and subcommand of `linalg-io`."""
    import argparse

    from linalg_io.cli import build_parser

    todo = [((), build_parser())]
    while todo:
        words, parser = todo.pop()
        yield words, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [((*words, name), child) for name, child in action.choices.items()]


def test_help_describes_every_command_shows_defaults_and_lists_only_what_it_takes(capsys):
    import re

    from linalg_io.cli import main

    seen = 0
    for words, parser in _parsers():
        seen += 1
        text = parser.format_help()
        assert parser.description, words
        assert "SPEC" not in text and "shared/" not in text, words
        accepted = {s for a in parser._actions for s in a.option_strings}
        # options another command of the package takes (named as where to use them)
        elsewhere = {"--np", "--algo", "--grid", "--nb", "--objective", "--mem", "--mca",
                     "--input-layout", "--p", "--n", "--m", "--write", "--profile", "--out",
                     "--report", "--resume", "--oversubscribe", "--threads", "--seed",
                     "--nodes", "--ntasks-per-node", "--gpus-per-task", "--cpus-per-task"}
        for action in parser._actions:
            for mentioned in re.findall(r"--[a-z][a-z-]*", action.help or ""):
                assert mentioned in accepted or mentioned in elsewhere, (words, mentioned)
    assert seen >= 12
    lu_help = dict(_parsers())[("lu",)].format_help()
    assert "(default: auto)" in lu_help and "(default: cpu)" in lu_help
    with pytest.raises(SystemExit) as version:
        main(["--version"])
    assert version.value.code == 0 and capsys.readouterr().out.startswith("linalg-io 0.1")
    assert main(["model", "lu", "--n", "1024", "--p", "4", "--machine", "nonexist"]) == 2
    assert capsys.readouterr().err.strip() == (
        "linalg-io: error: machine file nonexist: no such file; shipped machines: "
        "example_cpu, example_gpu, lumi_c, piz_daint_mc (or the path of a JSON file, "
        "schema in the README)")


def test_labels_show_what_differs_anywhere_in_the_section():
    """One run per algorithm used to show no parameter at all (they varied per algorithm
    only): every parameter that differs in the section is in every label."""
    import pandas as pd

    from linalg_io.records import flatten
    from linalg_io.report.labels import problem_labels, run_labels

    gemm = pd.DataFrame([flatten(make_record(kernel="tsgemm", algo=variant, nranks=2,
                                             params={"m": 4096, "n": 16, "k": k},
                                             per_rank_sent=[1e6, 1e6],
                                             model_per_rank=[1e6, 1e6]))
                         for variant, k in (("atb", 16), ("tsm2r", 64))])
    assert run_labels(gemm) == ["atb k=16 P=2", "tsm2r k=64 P=2"]
    solve = pd.DataFrame([flatten(make_record(kernel="sptrsv", algo=algo, nranks=2,
                                              params={"matrix": matrix, "nrhs": 1},
                                              per_rank_sent=[1e6, 1e6],
                                              model_per_rank=[1e6, 1e6]))
                          for algo, matrix in (("levelset", "lap2d:64"),
                                               ("syncfree", "lap3d:16"))])
    assert run_labels(solve) == ["levelset matrix=lap2d:64 P=2", "syncfree matrix=lap3d:16 P=2"]
    # one name per problem: an NB left to auto and the same NB given are one problem
    lu = pd.DataFrame([flatten(make_record(params={"n": 2048, "nb": 128, "grid": [2, 2, 1]},
                                           command=command))
                       for command in (["linalg-io", "lu", "--n", "2048"],
                                       ["linalg-io", "lu", "--n", "2048", "--nb", "128"])])
    assert problem_labels(lu) == ["2d n=2048", "2d n=2048"]
    assert run_labels(lu) == ["2d nb=128(auto) P=4", "2d nb=128 P=4"]


def test_one_number_format_per_column():
    import pandas as pd

    from linalg_io.report.tables import formatted_rows

    table = pd.DataFrame({"MB": [29225.845, 4551.2], "s": [0.25, 16.0], "n": [3, 4],
                          "tiny": [0.0005, 2.0]})
    assert formatted_rows(table) == [["29226", "0.2500", "3", "5.000e-04"],
                                     ["4551", "16.0000", "4", "2.000e+00"]]
