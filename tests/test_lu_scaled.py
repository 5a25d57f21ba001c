"""Every LU (2d, conflux, the drop-in, and ScaLAPACK where a library is installed) on one
well-conditioned matrix scaled by 1e-20 ... 1e20 passes HPL's check with a residual
that does not depend on the scale: bit for bit where the scale is a power of two (the
factorization is then exactly scale-equivariant), within rounding where it is a power
of ten (the scaled entries are rounded, a slightly different matrix). A matrix with
Wilkinson's growth (2^N in U) still fails every one. One launch for all cases."""

import json

import numpy as np
import pytest
from mpi_harness import run_mpi_json

from linalg_io.errors import EnvironmentProblem
from linalg_io.lu import scalapack

N = 64
DECIMAL = (-20, -5, 5, 20)
BINARY = (-66, 66)   # 2^-66 = 1.4e-20, 2^66 = 7.4e19


def _algorithms() -> list[str]:
    import os

    try:
        scalapack.find_library(None)
        return ["2d", "conflux", "dropin", "scalapack"]
    except EnvironmentProblem as error:
        if os.environ.get("LINALG_IO_REQUIRE_SCALAPACK"):
            pytest.fail(f"LINALG_IO_REQUIRE_SCALAPACK is set but: {error}")
        return ["2d", "conflux", "dropin"]


def _wilkinson(n: int) -> np.ndarray:
    """1 on the diagonal and in the last column, -0.99 below the diagonal: partial (and
    tournament) pivoting keep the diagonal (no ties), and U's last column grows as 1.99^i."""
    a = np.eye(n) - 0.99 * np.tril(np.ones((n, n)), -1)
    a[:, -1] = 1.0
    return a


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scaled")
    a = np.random.default_rng(11).uniform(-0.5, 0.5, (N, N))
    np.save(folder / "unscaled.npy", a)
    for exponent in DECIMAL:
        np.save(folder / f"ten{exponent:+d}.npy", a * 10.0**exponent)
    for exponent in BINARY:
        np.save(folder / f"two{exponent:+d}.npy", a * 2.0**exponent)
    np.save(folder / "wilkinson.npy", _wilkinson(N))
    out = run_mpi_json(4, "scaled_lu_cases.py", [str(folder)] + _algorithms(), timeout=240)
    by_algo: dict[str, dict[str, dict]] = {}
    for case in out:
        by_algo.setdefault(case["algo"], {})[case["file"].removesuffix(".npy")] = case
    return by_algo


@pytest.mark.parametrize("algo", ["2d", "conflux", "dropin", "scalapack"])
def test_residual_independent_of_scale(results, algo):
    if algo not in results:
        pytest.skip("no ScaLAPACK library (make scalapack installs one)")
    cases = results[algo]
    unscaled = cases["unscaled"]["value"]
    assert cases["unscaled"]["passed"] and 0 < unscaled < 1, json.dumps(cases)
    for exponent in BINARY:
        case = cases[f"two{exponent:+d}"]
        assert case["passed"], case
        assert case["value"] == pytest.approx(unscaled, rel=1e-12), case
    for exponent in DECIMAL:
        case = cases[f"ten{exponent:+d}"]
        assert case["passed"], case
        assert unscaled / 4 < case["value"] < unscaled * 4, (case, unscaled)


@pytest.mark.parametrize("algo", ["2d", "conflux", "dropin", "scalapack"])
def test_wilkinson_growth_still_fails(results, algo):
    if algo not in results:
        pytest.skip("no ScaLAPACK library (make scalapack installs one)")
    case = results[algo]["wilkinson"]
    assert not case["passed"] and case["value"] > 1e6, case
