"""One error line per job: the agreed message, and the launcher's stderr less its
exit-code box (the multi-rank cases run in test_cli_mpi.py)."""

import io

from linalg_io.launch.agree import agreed_message, rank_ranges
from linalg_io.launch.output import relay_stderr

RULER = b"-" * 74 + b"\n"
EXIT_BOX = (RULER + b"prterun detected that one or more processes exited with non-zero status,\n"
            b"thus causing the job to be terminated. The first process to do so was:\n\n"
            b"   Process name: [prterun-vm-4732@1,1]\n   Exit code:    2\n" + RULER)
ABORT_BOX = (RULER + b"MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD\n"
             b"  Proc: [[1,0],0]\n  Errorcode: 1\n" + RULER)


def test_the_same_error_on_every_rank_is_one_message():
    assert agreed_message([(0, "bad grid"), (1, "bad grid")], 2) == "bad grid"


def test_ranks_that_disagree_keep_their_detail():
    assert agreed_message([(0, "--out x: not a file")], 4) == "rank 0: --out x: not a file"
    failed = [(0, "a"), (1, "b"), (2, "b"), (3, "b"), (5, "a"), (6, "c"), (7, "d")]
    assert agreed_message(failed, 8) == ("ranks 0, 5: a; ranks 1-3: b; rank 6: c; "
                                         "and 1 other messages")
    assert rank_ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"


def test_the_exit_code_box_is_dropped_and_everything_else_kept():
    out = io.BytesIO()
    stream = io.BytesIO(b"linalg-io: error: grid 3x3 needs 9 ranks but the job has 4\n"
                        + EXIT_BOX + b"  rep 1/5: 2.0 s\n" + ABORT_BOX + RULER + b"cut short\n")
    relay_stderr(stream, out)
    assert out.getvalue() == (b"linalg-io: error: grid 3x3 needs 9 ranks but the job has 4\n"
                              b"  rep 1/5: 2.0 s\n" + ABORT_BOX + RULER + b"cut short\n")
