"""Sizes that cannot fit are refused at once, from a closed form, for every family (the
refusals on real jobs: test_memory_mpi.py)."""

import argparse
import time

import pytest
from linalg_io.models import conflux
from linalg_io.models.memory import (
    format_bytes,
    lu_bytes_per_rank,
    require_memory,
    sptrsv_bytes,
    tsgemm_bytes_per_rank,
)

from linalg_io.cli import main
from linalg_io.errors import InputError
from linalg_io.lu.choice import grid_candidates
from linalg_io.lu.fits import check_model_memory
from linalg_io.sptrsv.matrices import load_matrix, matrix_size


def test_closed_forms():
    assert lu_bytes_per_rank(1000, 4, "2d")[0] == 2 * 8 * 1000**2 / 4
    assert lu_bytes_per_rank(1000, 4, "conflux")[0] == 3 * 8 * 1000**2 / 4
    assert lu_bytes_per_rank(1000, 4, "scalapack")[0] == 2 * 8 * 1000**2 / 4
    assert lu_bytes_per_rank(1000, 4, "dropin")[0] == 6 * 8 * 1000**2 / 4
    assert lu_bytes_per_rank(1000, 4, "another")[0] == 8 * 1000**2 / 4
    # the least of the 2.5D layout's memory over every grid and tile is not below it
    least = min(conflux.memory_words(4096, v, px, py, c)
                for px, py, c in grid_candidates(8) for v in (64, 128, 256))
    assert least * 8 >= lu_bytes_per_rank(4096, 8, "conflux")[0]
    assert tsgemm_bytes_per_rank("atb", 100, 4, 3, 2, 8)[0] == 8 * (300 + 400 + 12) / 2
    assert sptrsv_bytes(10, 30, 2)[0] == 12 * 30 + 8 * 10 * 3
    assert [format_bytes(b) for b in (512, 2**30 * 11.8, 1.2e15)] == ["512 B", "11.8 GiB",
                                                                      "1.07 PiB"]


def test_matrix_sizes_from_the_description_alone():
    for spec in ("lap2d:7", "lap3d:5"):
        matrix = load_matrix(spec)
        assert matrix_size(spec) == (matrix.shape[0], matrix.nnz)
    for spec in ("rand:3000:0.01:10", "rand:400:1.0:4"):   # never above what is built
        n, nnz = matrix_size(spec)
        matrix = load_matrix(spec)
        assert n == matrix.shape[0] and 0.75 * matrix.nnz <= nnz <= matrix.nnz
    assert matrix_size("lap3d:x") is None and matrix_size("nothing") is None


def test_the_message_names_need_formula_and_what_is_available():
    require_memory("x", (10.0, "f"), 10.0, "s")   # fits exactly
    with pytest.raises(InputError) as caught:
        require_memory("lu N=9", (2**40, "2 N^2/P words"), 2**30, "--mem")
    assert str(caught.value) == ("lu N=9 needs at least 1 TiB per rank (2 N^2/P words), "
                                 "but 1 GiB per rank are available (--mem)")


def test_model_commands_refuse_at_once(capsys):
    start = time.monotonic()
    assert main(["model", "lu", "--n", "10000000", "--p", "2"]) == 2
    assert main(["model", "lu", "--algo", "conflux", "--n", "100000", "--p", "4",
                 "--mem", "1G"]) == 2
    assert main(["model", "sptrsv", "--matrix", "lap3d:5000", "--p", "2"]) == 2
    assert time.monotonic() - start < 5
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("linalg-io: error: lu N=10000000 on 2 ranks, even with "
                               "--algo 2d, needs at least 728 TiB per rank")
    assert lines[1] == ("linalg-io: error: lu --algo conflux N=100000 on 4 ranks needs at "
                        "least 55.9 GiB per rank (3 N^2/P words: the local block, its restart "
                        "copy and the factors, at c = 1), but 1 GiB per rank are available "
                        "(--mem)")
    assert lines[2].startswith("linalg-io: error: model sptrsv --matrix lap3d:5000 "
                               "(n=125000000000, nnz=499925000000) needs at least 7.28 TiB in "
                               "this process")
    fits = argparse.Namespace(n=512, p=2, algo=None, mem=None, profile=None, scan=None,
                              threads=None)
    check_model_memory(fits)   # a size that fits goes on to the model table
    check_model_memory(argparse.Namespace(n=None, p=2, algo="2d", mem=None, profile=None,
                                          scan=None, threads=None))   # --dist file
