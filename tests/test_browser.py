"""The report page in a real browser: headless Chromium opens index.html, and every image
must decode and every table render (rows with height on the page).

Needs Debian's `chromium` (`make chromium` installs it where apt exists); skipped, with
the reason, elsewhere, unless LINALG_IO_REQUIRE_CHROMIUM=1 (CI), where its absence fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
from synthetic_records import make_record

from linalg_io.records import append_record
from linalg_io.report.build import build_report

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
BROWSER = next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)
REQUIRED = os.environ.get("LINALG_IO_REQUIRE_CHROMIUM") == "1"   # CI: absent = failure
pytestmark = pytest.mark.skipif(
    BROWSER is None and not REQUIRED,
    reason="no headless Chromium (install Debian's: `make chromium`)")

# Runs when the page has loaded: one line of JSON with what the reader would see.
CHECK = """<script>
window.addEventListener("load", () => {
  const images = [...document.images].map(i => ({name: i.alt, complete: i.complete,
                                                 width: i.naturalWidth, height: i.naturalHeight}));
  const tables = [...document.querySelectorAll("table")].map(t => ({
    columns: t.querySelectorAll("thead th").length, rows: t.querySelectorAll("tbody tr").length,
    height: t.getBoundingClientRect().height}));
  const out = document.createElement("pre");
  out.id = "browser-check";
  out.textContent = JSON.stringify({images, tables});
  document.body.appendChild(out);
});
</script>"""


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu",
                           "--virtual-time-budget=10000", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A report of LU, TS-GEMM, ping-pong runs and LU predictions, opened in Chromium."""
    assert BROWSER is not None, "LINALG_IO_REQUIRE_CHROMIUM=1 but no Chromium on PATH"
    root = tmp_path_factory.mktemp("browser")
    path = root / "runs.jsonl"
    append_record(path, make_record(run_id="a"))
    append_record(path, make_record(run_id="b", algo="conflux", params={"n": 2048, "nb": 128,
                                                                     "grid": [2, 2, 1]}))
    append_record(path, make_record(kernel="tsgemm", algo="atb", nranks=2, run_id="c",
                                    params={"m": 1048576, "n": 16, "k": 16},
                                    per_rank_sent=[2e6, 2e6], model_per_rank=[2e6, 2e6]))
    pingpong = make_record(kernel="pingpong", algo="sendrecv", nranks=2, run_id="d",
                           params={"min_bytes": 8, "max_bytes": 262144}, lower_bound=None,
                           per_rank_sent=[1e6, 1e6], model_per_rank=[1e6, 1e6])
    pingpong["model"] = None
    pingpong["results"] = [{"bytes": b, "iters": 10, "one_way_s": 1e-6 + b * 1e-9,
                            "bandwidth_Bps": b / (1e-6 + b * 1e-9), "data_ok": True}
                           for b in (8, 32, 128, 65536, 262144)]
    append_record(path, pingpong)
    for p in (4, 16):
        predicted = make_record(run_id=f"p{p}", nranks=p, per_rank_sent=[1e6] * p,
                                model_per_rank=[1e6] * p,
                                params={"n": 8192, "nb": 128, "grid": [2, p // 2, 1],
                                        "scan": "strong"})
        predicted.update({"prediction": True, "machine": {"name": "example", "example": True}})
        append_record(path, predicted)
    index = build_report([path], root / "report", quiet=True)
    checked = root / "report" / "checked.html"
    checked.write_text(index.read_text().replace("</body>", CHECK + "</body>"))
    dumped = _chromium("--dump-dom", checked.as_uri())
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    found = re.search(r'<pre id="browser-check">(.*?)</pre>', dumped.stdout, re.DOTALL)
    assert found, "the check script did not run: " + dumped.stdout[-500:]
    return index, json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_every_image_decodes(page):
    index, seen = page
    embedded = index.read_text().count("data:image/png;base64,")
    assert len(seen["images"]) == embedded >= 8   # time, bytes, GFLOP/s, ... scaling
    for image in seen["images"]:
        assert image["complete"] and image["width"] > 300 and image["height"] > 200, image


def test_every_table_renders(page):
    index, seen = page
    assert len(seen["tables"]) == index.read_text().count("<table") >= 5
    for table in seen["tables"]:
        assert table["rows"] >= 1 and table["height"] > 10, table
    lead = [t for t in seen["tables"] if t["columns"] >= 10]
    assert lead, "no lead table rendered"


def test_screenshot_of_the_page(page, tmp_path):
    index, _ = page
    shot = tmp_path / "page.png"
    done = _chromium(f"--screenshot={shot}", "--window-size=1400,3000", index.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as picture:
        assert picture.size == (1400, 3000)
        colours = picture.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50   # text, tables and plots, not blank
