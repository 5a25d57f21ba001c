"""core_map: the same results, in order, as a plain map (forked workers where there are
two or more cores); `model lu` prints the same table either way."""

import io
from contextlib import redirect_stdout
from functools import partial

from linalg_io import parallel
from linalg_io.cli import main as cli_main


def scaled(factor: int, x: int) -> int:
    return factor * x


def test_core_map_keeps_order_and_values():
    with parallel.core_map() as mapper:
        assert mapper(partial(scaled, 3), range(40)) == [3 * x for x in range(40)]
        assert mapper(partial(scaled, 2), [5]) == [10]


def test_model_lu_table_is_the_same_on_one_core(monkeypatch):
    args = ["model", "lu", "--n", "8192", "--p", "16", "--mem", "2G"]
    tables = []
    for one_core in (False, True):
        if one_core:
            monkeypatch.setattr(parallel, "usable_cores", lambda: 1)
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli_main(args) == 0
        tables.append(out.getvalue())
    assert tables[0] == tables[1] and tables[0].count("\n") > 20
