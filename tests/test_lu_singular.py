"""A matrix singular to working precision whose HPL residual still passes (two equal rows:
a pivot of rounding size, a huge x, a small scaled residual) fails as "numerically
singular" with exit 1, for both LU algorithms; a regular matrix records the same
conditioning signal and passes."""

import numpy as np
import pytest
from mpi_harness import run_cli, run_cli_records


@pytest.fixture(scope="module")
def equal_rows(tmp_path_factory):
    a = np.random.default_rng(3).uniform(-0.5, 0.5, (96, 96))
    a[57] = a[12]
    path = tmp_path_factory.mktemp("singular") / "equal_rows.npy"
    np.save(path, a)
    return path


@pytest.mark.parametrize("algo,grid", [("2d", "2x2"), ("conflux", "2x2x1")])
def test_equal_rows_fail_as_numerically_singular(equal_rows, algo, grid):
    result = run_cli(4, ["lu", "--algo", algo, "--dist", "file", "--file", str(equal_rows),
                         "--grid", grid, "--nb", "16", "--reps", "1", "--warmup", "0"],
                     check=False)
    assert result.returncode == 1, result.stderr[-2000:]
    (line,) = [row for row in result.stdout.splitlines() if row.startswith("lu ")]
    ratio = float(line.split("max|A| = ")[1].split()[0])
    assert "FAILED (numerically singular" in line and ratio < 96 * np.finfo(float).eps
    residual = float(line.split("hpl_scaled_residual=")[1].split()[0])
    assert residual < 16   # the residual alone would have passed it


def test_regular_matrix_records_the_signal():
    record, = run_cli_records(4, ["lu", "--algo", "2d", "--n", "200", "--nb", "16", "--grid",
                                  "2x2", "--reps", "1", "--warmup", "0"])
    verify = record["verify"]
    assert verify["passed"] and not verify["numerically_singular"]
    assert 1e-4 < verify["min_pivot_ratio"] <= 1 and 1 <= verify["growth_factor"] < 100
