"""`linalg-io report RESULTS.jsonl... --out DIR`: tables, plots and one HTML page.

Writes into DIR, per kernel K: ``K.csv`` (one row per run, every column: the lead
columns of `tables.LEAD_COLUMNS`, then parameters, sent bytes, ratios, balance,
messages, ...), ``K.md`` (the lead columns only: configuration, time, GFLOP/s,
received and wire bytes per rank beside the model's, the lower bound and received
over it, the verdict; the parameters all runs share above the table),
``K_ranks_threads.csv`` where a problem ran on the same cores as different ranks x
threads splits (side by side), ``bytes_K.png`` (received and wire bytes, measured vs
model per run), ``balance_K.png`` (bytes received per rank), ``gflops_K.png``
(GFLOP/s vs P), ``phases_K.png`` (bytes by phase); for all records
``summary.csv``/``summary.md``, ``phases.csv``/``phases.md`` (LU time per phase,
measured against the model, `linalg_io.report.phases`); and ``index.html``, which
embeds everything.
Prediction records (`model ... --scan`) are not runs: per kernel K they get
``scaling_K.csv``/``scaling_K.md`` and ``scaling_K.png`` (`linalg_io.report.scaling`).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from linalg_io.errors import InputError
from linalg_io.records import flatten, read_records_counted
from linalg_io.report import html, phases, plots, scaling, tables
from linalg_io.report.labels import common_params
from linalg_io.report.pairs import ranks_threads_table
from linalg_io.report.provenance import provenance


def read_inputs(paths: Iterable[str | os.PathLike]
                ) -> tuple[list[dict], list[tuple[str, int]], list[str]]:
    """All records of the files, each run once (a file given twice, or records copied
    between files, do not count twice: the first of a run_id is kept), (file, records
    kept) per file, and "N in FILE" for each file with N corrupt lines skipped;
    InputError for a bad file."""
    records: list[dict] = []
    sources = []
    corrupt: list[str] = []   # "N in PATH": lines skipped as not a whole record
    seen: set[str] = set()
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(f"{path}: no such results file")
        if not path.is_file():
            raise InputError(f"{path}: not a file (expected a JSON-lines results file)")
        try:
            found, skipped = read_records_counted([path])
        except OSError as error:
            raise InputError(f"{path}: cannot read: {error.strerror}") from None
        if not found:
            raise InputError(f"{path}: no linalg-io records in it (expected JSON lines with "
                             "\"schema\": 1, as written by --out)")
        if skipped:
            corrupt.append(f"{skipped} in {path}")
        new = [r for r in found if r.get("run_id") is None or r["run_id"] not in seen]
        seen.update(r["run_id"] for r in new if r.get("run_id") is not None)
        records.extend(new)
        sources.append((str(path), len(new)))
    if not sources:
        raise InputError("no results files given")
    return records, sources, corrupt


def file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "unknown"


def _formulas(frame: pd.DataFrame, name: str) -> list[str]:
    if name not in frame or "algo" not in frame:
        return []
    pairs = frame[["algo", name]].dropna().drop_duplicates()
    return [f"{algo}: {formula}" for algo, formula in pairs.itertuples(index=False)]


MANIFEST = ".linalg-io-report"


def _forget_older_files(out: Path, written: list[str]) -> None:
    """Delete what an earlier report in `out` wrote and this one did not (a plot of a
    kernel or P no longer in the records would sit there unlinked); files of the user's
    own are never touched: only names the earlier report listed in its manifest."""
    manifest = out / MANIFEST
    try:
        earlier = set(manifest.read_text().split("\n")) if manifest.exists() else set()
    except OSError:
        earlier = set()
    for name in sorted(earlier - set(written)):
        if name and "/" not in name and name != MANIFEST:
            (out / name).unlink(missing_ok=True)
    manifest.write_text("\n".join(sorted(written)) + "\n")


def _scaling_section(part: pd.DataFrame, kernel: str, out: Path) -> tuple[html.KernelSection, list]:
    """The section of one kernel's predictions, its files written into `out`."""
    stem = f"scaling_{file_stem(kernel)}"
    table = scaling.scaling_table(part)
    table.to_csv(out / f"{stem}.csv", index=False)
    machines = "; ".join(dict.fromkeys(
        f"{name}" + (", an example, not measured" if example is True else "")
        for name, example in zip(part.get("machine.name", pd.Series(dtype=object)),
                                 part.get("machine.example", pd.Series(dtype=object)))))
    section = html.KernelSection(
        kernel=f"{kernel} (predicted" + (f" for {machines})" if machines else ")"), table=table,
        common=common_params(part.dropna(axis=1, how="all")),
        formulas={"efficiency": [scaling.baseline_text(table)] if len(table) else [],
                  "model": _formulas(part, "model.formula"),
                  "time": _formulas(part, "model.time_formula"),
                  "lower bound": _formulas(part, "lower_bound.formula")})
    (out / f"{stem}.md").write_text(section.markdown(f"{stem}.csv"))
    for name, figure in scaling.scaling_figures(table, kernel, file_stem(kernel)).items():
        figure.savefig(out / f"{name}.png", dpi=100)
        section.images.append(f"{name}.png")
    section.files = [f"{stem}.csv", f"{stem}.md"] + section.images
    return section, section.files


def build_report(paths: Iterable[str | os.PathLike], out_dir: str | os.PathLike,
                 quiet: bool = False) -> Path:
    """Write the report of the records in `paths` into `out_dir`; return index.html's path."""
    records, sources, corrupt = read_inputs(paths)
    everything = pd.DataFrame([flatten(r) for r in records])
    predicted = scaling.is_prediction(everything)
    frame, predictions = everything[~predicted], everything[predicted]
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"--out {out}: cannot create the directory: {error.strerror}") from None

    summary = tables.summary_table(frame)
    summary.to_csv(out / "summary.csv", index=False)
    (out / "summary.md").write_text(tables.to_markdown(summary))
    written = ["summary.csv", "summary.md", "index.html"]
    by_phase = phases.phase_table(records)
    if len(by_phase):
        by_phase.to_csv(out / "phases.csv", index=False)
        (out / "phases.md").write_text(tables.to_markdown(by_phase))
        written += ["phases.csv", "phases.md"]
    sections = []
    for kernel, table in tables.kernel_tables(frame).items():
        stem = file_stem(kernel)
        part = frame[frame["kernel"] == kernel].dropna(axis=1, how="all")
        part = part.loc[tables.run_table(part, keep_index=True).index]   # plots: table order
        table.to_csv(out / f"{stem}.csv", index=False)
        section = html.KernelSection(
            kernel=kernel, table=tables.lead_table(table), common=common_params(part),
            notes=sorted({n for n in table["wire_note"] if n.startswith("n/a")}),
            pairs=ranks_threads_table(part),
            terms=tables.terms_table(table),
            formulas={"model": _formulas(part, "model.formula"),
                      "time": _formulas(part, "model.time_formula"),
                      "lower bound": _formulas(part, "lower_bound.formula")})
        files = [f"{stem}.csv", f"{stem}.md"]
        if len(section.pairs):
            section.pairs.to_csv(out / f"{stem}_ranks_threads.csv", index=False)
            files.append(f"{stem}_ranks_threads.csv")
        (out / f"{stem}.md").write_text(section.markdown(f"{stem}.csv"))
        for name, figure in plots.kernel_figures(part, stem).items():
            figure.savefig(out / f"{name}.png", dpi=100)
            section.images.append(f"{name}.png")
        section.files = files + section.images
        written += section.files
        sections.append(section)
    for kernel in sorted(predictions["kernel"].unique()) if len(predictions) else []:
        section, files = _scaling_section(predictions[predictions["kernel"] == kernel],
                                          str(kernel), out)
        written += files
        sections.append(section)
    generated = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    index = out / "index.html"
    index.write_text(html.render_page(out, sources, sections, summary, generated,
                                      provenance(frame, predictions)))
    _forget_older_files(out, written)
    if not quiet:
        skipped = f" (corrupt lines skipped: {', '.join(corrupt)})" if corrupt else ""
        print(f"report: {len(records)} records, {len(sections)} kernels -> {index}{skipped}",
              file=sys.stderr, flush=True)
    return index
