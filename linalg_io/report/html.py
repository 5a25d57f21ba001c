"""One self-contained HTML page: tables inline, plots embedded as base64 PNG.

The page also links the CSV, Markdown and PNG files written beside it, so it can be
mailed alone (everything is embedded) or browsed with its directory.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from linalg_io.report.tables import RUN_COLUMNS, formatted_rows, to_markdown

TERMS_TITLE = ("time beside the model's terms (latency = alpha x messages, bandwidth = "
               "beta x bytes, compute = flops / gamma, of the rank with the largest sum)")

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 0.8em; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
td.text { text-align: left; white-space: nowrap; }
div.wide { overflow-x: auto; }
th { background: #f0f0f0; }
td.failed { background: #fdd; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.3em 0; }
code, .formula { font-family: ui-monospace, monospace; font-size: 0.85em; }
.files a { margin-right: 1em; }
table.provenance th { text-align: left; }
"""


@dataclass
class KernelSection:
    """What the page (and K.md) shows for one kernel: the lead table, the parameters
    every run shares, why some runs have no wire bytes, the ranks x threads pairs."""

    kernel: str
    table: pd.DataFrame
    common: str = ""
    notes: list[str] = field(default_factory=list)
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    terms: pd.DataFrame = field(default_factory=pd.DataFrame)
    files: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    formulas: dict[str, list[str]] = field(default_factory=dict)

    def markdown(self, csv_name: str) -> str:
        parts = [f"# {self.kernel}\n"]
        if self.common:
            parts.append(f"All runs: {self.common}\n")
        parts.append(to_markdown(self.table))
        parts += [f"wire bytes {note}\n" for note in self.notes]
        if len(self.pairs):
            parts += ["## ranks x threads on the same cores\n", to_markdown(self.pairs)]
        if len(self.terms):
            parts += [f"## {TERMS_TITLE}\n", to_markdown(self.terms)]
        parts.append(f"Every column of every run: {csv_name}\n")
        return "\n".join(parts)


def table_html(table: pd.DataFrame) -> str:
    """The table in a box that scrolls sideways when wider than the page; one number
    format per column, text columns left-aligned, a failed verdict's cell marked."""
    header = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
    text = {name: not pd.api.types.is_numeric_dtype(table[name]) for name in table.columns}
    rows = []
    for row, texts in zip(table.itertuples(index=False), formatted_rows(table)):
        cells = []
        for name, value, shown in zip(table.columns, row, texts):
            failed = name in ("verify_passed", "verify", "verdict") and (
                value is False or "FAILED" in str(value))
            classes = " ".join(c for c, on in (("failed", failed), ("text", text[name])) if on)
            css = f' class="{classes}"' if classes else ""
            cells.append(f"<td{css}>{html.escape(shown)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="wide"><table><thead><tr>{header}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def embedded_image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    name = html.escape(path.name)
    return (f'<a href="{name}"><img alt="{name}" title="{name}" '
            f'src="data:image/png;base64,{data}"></a>')


def provenance_html(items: list[tuple[str, str]]) -> str:
    return ('<table class="provenance"><tbody>' + "".join(
        f'<tr><th>{html.escape(k)}</th><td class="text">{html.escape(v)}</td></tr>'
        for k, v in items) + "</tbody></table>")


def render_page(out_dir: Path, sources: list[tuple[str, int]], sections: list[KernelSection],
                summary: pd.DataFrame, generated: str,
                provenance: list[tuple[str, str]] = ()) -> str:
    """The page's HTML; images are read from `out_dir`."""
    parts = [("<!DOCTYPE html><html><head><meta charset='utf-8'><title>linalg-io report</title>"
              f"<style>{STYLE}</style></head><body>"),
             "<h1>linalg-io report</h1>", provenance_html(list(provenance)),
             f"<p>Generated {html.escape(generated)} from "
             + ", ".join(f"<code>{html.escape(s)}</code> ({n} records)" for s, n in sources)
             + ". Bytes are MB (10<sup>6</sup>) per rank per timed repetition, of the "
               "busiest rank: <b>received</b> (logical payload, docs/records.md#counting: "
               "the data a rank must obtain from others, what the lower bound bounds) and on the "
               "<b>wire</b> (what the MPI library moved, collective internals included), "
               "each beside the model's; logical bytes sent are in the CSV files. n/a: the "
               "record has no such number.</p>",
             "<ul>" + "".join(f'<li><a href="#{html.escape(s.kernel)}">{html.escape(s.kernel)}</a>'
                              f" ({len(s.table)} runs)</li>" for s in sections) + "</ul>",
             ]
    if len(summary):
        parts += [("<p>Times: the median over the timed repetitions of the slowest rank, the "
                   "kernel only (the LU's factorization), beside the model's prediction and "
                   "their ratio; rows on grey (plots) or marked <i>yes</i> under "
                   "<code>oversubscribed</code> ran more ranks x threads than cores.</p>"),
                  "<h2>All runs</h2>", table_html(summary),
                  ('<p class="files"><a href="summary.csv">summary.csv</a>'
                   '<a href="summary.md">summary.md</a></p>')]
    for section in sections:
        kernel = html.escape(section.kernel)
        parts.append(f'<h2 id="{kernel}">{kernel}</h2>')
        parts.append('<p class="files">' + "".join(
            f'<a href="{html.escape(f)}">{html.escape(f)}</a>' for f in section.files) + "</p>")
        if section.common:
            parts.append(f"<p>All runs: <code>{html.escape(section.common)}</code></p>")
        parts.append(table_html(section.table))
        parts += [f"<p>wire bytes {html.escape(note)}</p>" for note in section.notes]
        if len(section.pairs):
            parts += ["<h3>ranks x threads on the same cores</h3>", table_html(section.pairs)]
        if len(section.terms):
            parts += [f"<details><summary>{html.escape(TERMS_TITLE)}</summary>",
                      table_html(section.terms), "</details>"]
        for title, formulas in section.formulas.items():
            if formulas:
                parts.append(f"<p><b>{html.escape(title)}</b></p><ul>" + "".join(
                    f'<li class="formula">{html.escape(f)}</li>' for f in formulas) + "</ul>")
        parts.extend(embedded_image(out_dir / image) for image in section.images)
    parts.append("<details><summary>Columns</summary><dl>" + "".join(
        f"<dt><code>{html.escape(k)}</code></dt><dd>{html.escape(v)}</dd>"
        for k, v in RUN_COLUMNS.items()) + "</dl></details>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
