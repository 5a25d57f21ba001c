"""Threads per rank in the machine profile (models/profile.py `at_threads`): a rank's
rates at T threads, measured or T cores' worth, the cores its threads take, the machine
file's `at_threads` and `threads_per_rank`, `model --threads`, and the two published
machines."""

import json
import subprocess
import sys

import numpy as np
import pytest
from linalg_io.models.costs import RankCosts
from linalg_io.models.profile import load_profile

from linalg_io.errors import InputError

CLI = [sys.executable, "-m", "linalg_io"]
FILE = {"alpha_s": 1e-6, "beta_s_per_byte": 1e-10, "gamma_flops": 1e10,
        "mem_bw_bytes_per_s": 2e9, "cores_per_node": 8, "ranks_per_node": 2,
        "threads_per_rank": 4,
        "at_threads": {"4": {"gamma_flops": 3e10, "mem_bw_bytes_per_s": 5e9}}}


def write(tmp_path, data: dict) -> str:
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_rank_computes_at_its_measured_rate_else_t_cores(tmp_path):
    path = write(tmp_path, FILE)
    default = load_profile(path)              # the file's threads_per_rank: the measured 4
    assert (default.threads_per_rank, default.gamma_flops, default.mem_bw_bytes_per_s) == (
        4, 3e10, 5e9)
    one = load_profile(path, 1)
    assert (one.gamma_flops, one.mem_bw_bytes_per_s) == (1e10, 2e9)
    two = load_profile(path, 2)               # no entry for 2: twice one core's
    assert (two.gamma_flops, two.mem_bw_bytes_per_s) == (2e10, 4e9)
    assert two.at_threads(4).gamma_flops == 3e10 and two.at_threads(8).gamma_flops == 8e10
    # the file written back holds one thread's rates at the top and the others below
    again = json.loads(default.to_json())
    assert (again["gamma_flops"], again["threads_per_rank"], again["at_threads"]) == (
        1e10, 4, FILE["at_threads"])
    assert load_profile(write(tmp_path, again), 4) == default
    # a file without threads reads as before: one thread, rates one core's
    plain = {k: v for k, v in FILE.items() if k not in ("threads_per_rank", "at_threads")}
    old = load_profile(write(tmp_path, plain))
    assert (old.threads_per_rank, old.gamma_flops) == (1, 1e10)
    assert "at_threads" not in json.loads(old.to_json())


def test_threads_take_cores_and_ranks_beyond_them_share(tmp_path):
    plain = {k: v for k, v in FILE.items() if k not in ("threads_per_rank", "at_threads")}
    machine = load_profile(write(tmp_path, {**plain, "cores_per_node": 2,
                                            "ranks_per_node": 2}))
    assert machine.at_threads(2).placement(1).shared_cores is None    # 1 x 2 on 2 cores
    assert machine.at_threads(1).placement(2).shared_cores is None    # 2 x 1 on 2 cores
    assert machine.at_threads(2).placement(2).shared_cores == 1       # 2 x 2: one at once
    # two ranks of 2 threads on 2 cores take as long as one core each: 2 x (w / 2 gamma)
    flops = np.array([4e10, 4e10])
    costs = RankCosts(np.zeros(2), np.zeros(2), np.zeros(2), flops, "test")
    two = machine.at_threads(2)
    assert costs.record_block(two, two.placement(2))["time_s"] == pytest.approx(4.0)
    one = machine.at_threads(1)
    assert costs.record_block(one, one.placement(2))["time_s"] == pytest.approx(4.0)


@pytest.mark.parametrize("at_threads", [{"1": {"gamma_flops": 1, "mem_bw_bytes_per_s": 1}},
                                        {"x": {"gamma_flops": 1, "mem_bw_bytes_per_s": 1}},
                                        {"2": {"gamma_flops": -1, "mem_bw_bytes_per_s": 1}},
                                        {"2": {"gamma_flops": 1}}, [1, 2]])
def test_a_malformed_at_threads_is_refused(tmp_path, at_threads):
    with pytest.raises(InputError, match="at_threads must map thread counts > 1"):
        load_profile(write(tmp_path, {**FILE, "at_threads": at_threads}))
    with pytest.raises(InputError, match="threads_per_rank"):
        load_profile(write(tmp_path, {**FILE, "threads_per_rank": 1.5}))


def test_model_predicts_for_the_threads_asked(tmp_path):
    """One rank, no messages: the 2D LU's time scales by the rank's gamma at T threads
    (2 threads: the measured 3e10 under at_threads "2"; 1 thread: 1e10)."""
    path = write(tmp_path, {**FILE, "at_threads": {"2": {"gamma_flops": 3e10,
                                                         "mem_bw_bytes_per_s": 5e9}},
                            "threads_per_rank": 1, "cores_per_node": 2,
                            "ranks_per_node": 1, "nodes": 1})
    times = {}
    for threads in (1, 2):
        out = subprocess.run(CLI + ["model", "lu", "--n", "2048", "--p", "1", "--algo", "2d",
                                    "--machine", path, "--threads", str(threads), "--all"],
                             capture_output=True, text=True, timeout=120, check=True).stdout
        assert f"1 ranks x {threads} thread(s), dgemm {(1e10, 3e10)[threads - 1] / 1e9:.1f}" \
            in out, out
        row = next(line.split() for line in out.splitlines() if line.split()[:2] == ["*", "1x1"])
        times[threads] = float(row[-1])       # the table's time s, 3 significant digits
    assert times[1] / times[2] == pytest.approx(3.0, rel=1e-2)


def test_the_published_machines_are_examples_with_their_peaks():
    daint, lumi = load_profile("piz_daint_mc"), load_profile("lumi_c")
    for machine in (daint, lumi):
        assert machine.example and "EXAMPLE" in machine.name and "EXAMPLE" in machine.note
        assert "fitted" in machine.note            # says no constant was fitted to LU times
    # 2 ranks x 18 threads at 2.1 GHz x 16 flop/cycle: 1.21 TFLOP/s per node
    assert daint.threads_per_rank == 18 and daint.gamma_flops * 2 == pytest.approx(1.2096e12)
    assert daint.placement(1024).nodes == 512 and daint.placement(1024).shared_cores is None
    # 2 ranks x 64 threads at 2.45 GHz x 16: 5.02 TFLOP/s per node
    assert lumi.threads_per_rank == 64 and lumi.gamma_flops * 2 == pytest.approx(5.0176e12)
    assert daint.at_threads(1).gamma_flops == 3.36e10
