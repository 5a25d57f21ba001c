"""What a reader sees of a run: the summary line's time beside its model."""

from __future__ import annotations

from synthetic_records import make_record

from linalg_io.comm.summary import summary_line


def test_summary_line_puts_the_time_beside_its_model_and_says_what_was_timed():
    record = make_record(median=0.766)          # model.time_s = 0.4
    record["model"]["time_s"] = 0.150
    line = summary_line("N=2048 NB=128 grid=2x2", record)
    assert "time=0.766 s (model 0.15 s, x5.1; median of 3 reps of the slowest rank, " \
           "factorization only)" in line
    # the busiest rank's received, then wire sent / received, each beside the model's
    assert "recv_max=3.000 MB (model 2.500)" in line
    assert "wire_max sent/recv=5.000/4.000 MB (model 4.500/4.000)" in line
    assert line.endswith("PASSED")
    record["model"]["time_s"] = None
    assert "time=0.766 s (no model time; median of 3 reps" in summary_line("", record)
