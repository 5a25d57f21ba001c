"""`calibrate` on 2 local ranks writes the SpTRSV trips (linalg_io.tools.calibrate_trips):
the one-sided put-with-signal trip on a node (positive), the wake-up where two ranks
share a core (over alpha: 0 where sharing costs nothing more) and the level-set
executor's calls per batch at each end (positive), and a model reads them back."""

import json

import pytest
from linalg_io.models.profile import load_profile
from mpi_harness import run_cli


@pytest.mark.mpi
def test_calibrate_writes_the_one_sided_trip_and_the_wake_up(tmp_path):
    path = tmp_path / "machine.json"
    result = run_cli(2, ["calibrate", "--reps", "2", "--write", str(path)])
    data = json.loads(path.read_text())
    assert 0 < data["onesided_trip_s"] < 0.1 and 0 <= data["wake_s"] < 0.1
    assert "inter_node" not in data          # one node: no trip across
    profile = load_profile(path)
    assert (profile.onesided_trip_s, profile.wake_s) == (data["onesided_trip_s"],
                                                         data["wake_s"])
    assert f"put-with-signal {data['onesided_trip_s'] * 1e6:.1f} us one way on a node" \
        in result.stdout
    assert 0 < data["send_cpu_s"] < 0.1 and 0 < data["recv_cpu_s"] < 0.1
    assert (profile.send_cpu_s, profile.recv_cpu_s) == (data["send_cpu_s"], data["recv_cpu_s"])
    assert (f"level-set batch calls {data['send_cpu_s'] * 1e6:.2f} us at the sender (pack, "
            f"Isend), {data['recv_cpu_s'] * 1e6:.2f} us at the receiver") in result.stdout
