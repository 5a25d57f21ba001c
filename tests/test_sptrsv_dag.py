"""The SpTRSV model's critical path through the (rank, level) tasks (models/sptrsv_dag.py):
exactly a brute-force simulation of the same solve on small random matrices, and on
rows in contiguous blocks the pipelined wavefront (a trip per hop of the chain of ranks,
not one per level)."""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from linalg_io.models.profile import InterNode, MachineProfile
from linalg_io.models.sptrsv import sptrsv_costs
from linalg_io.models.sptrsv_dag import critical_path, task_graph

from linalg_io.sptrsv import analysis
from linalg_io.sptrsv.matrices import load_matrix


def random_lower(n: int, density: float, rng: np.random.Generator) -> sp.csr_matrix:
    strict = sp.random(n, n, density=density, random_state=rng, format="csr")
    return (sp.tril(strict, k=-1) + sp.eye(n)).tocsr()


def simulate(lower, levels, owner, algo, value_bytes, mem_bw, hold_per_batch, delay_of):
    """The solve replayed rank by rank in plain Python: each rank takes its levels in
    order; level l of rank r starts when r is free and every batch it waits for has
    arrived (level-set: every batch of a level between its previous level and l;
    sync-free: every batch whose values r reads first at level l)."""
    n = lower.shape[0]
    nranks = int(owner.max()) + 1
    stream, batches = {}, {}
    for i in range(n):
        r, lev = int(owner[i]), int(levels[i])
        cols = lower.indices[lower.indptr[i]:lower.indptr[i + 1]]
        stream[r, lev] = stream.get((r, lev), 0.0) + 12.0 * cols.size + 2 * value_bytes
        for j in cols:
            s = int(owner[j])
            if s != r:
                key = (s, r, int(levels[j]))
                values, first = batches.get(key, (set(), {}))
                values.add(int(j))
                first[int(j)] = min(first.get(int(j), lev), lev)
                batches[key] = (values, first)
    gates = {}
    for (s, r, lev), (values, first) in batches.items():
        gate = min(first.values()) if algo == "syncfree" else \
            min(k[1] for k in stream if k[0] == r and k[1] > lev)
        gates.setdefault((r, gate), []).append((s, lev, len(values)))
    hold = {task: 0.0 for task in stream}
    for (s, r, lev) in batches:
        hold[s, lev] += hold_per_batch(s, r)
    finish, free = {}, [0.0] * nranks
    todo = {r: sorted(lev for (q, lev) in stream if q == r) for r in range(nranks)}
    while any(todo.values()):
        for r in range(nranks):
            while todo[r]:
                lev = todo[r][0]
                needs = gates.get((r, lev), [])
                if any((s, sl) not in finish for s, sl, _ in needs):
                    break
                start = max([free[r]] + [finish[s, sl] + delay_of(s, r, count)
                                         for s, sl, count in needs])
                finish[r, lev] = start + stream[r, lev] / mem_bw + hold[r, lev]
                free[r] = finish[r, lev]
                todo[r].pop(0)
    return max(finish.values())


@pytest.mark.parametrize("algo", ["levelset", "syncfree"])
@pytest.mark.parametrize("seed", range(6))
def test_critical_path_equals_a_brute_force_simulation(algo, seed):
    rng = np.random.default_rng(seed)
    lower = random_lower(int(rng.integers(20, 60)), 0.08, rng)
    levels = analysis.levels(lower)
    owner = rng.integers(0, 4, lower.shape[0]).astype(np.int32)
    graph = task_graph(lower.indptr, lower.indices, levels, owner, algo, 16)
    mem_bw, hold_rate = 1e6, 3e-4
    link = rng.uniform(1e-5, 1e-3, (4, 4))

    def delay_of(s, r, count):
        return link[s, r] + 1e-7 * 16 * count

    def hold_of(s, r):
        return hold_rate * (s + 1) if s // 2 != r // 2 else 0.0

    src_rank, dst_rank = graph.rank[graph.src], graph.rank[graph.dst]
    delay = link[src_rank, dst_rank] + 1e-7 * 16 * graph.values
    hold = np.zeros(graph.ntasks)
    np.add.at(hold, graph.src, [hold_of(s, r) for s, r in zip(src_rank, dst_rank)])
    path = critical_path(graph, hold, delay, graph.stream / mem_bw)
    expected = simulate(lower, levels, owner, algo, 16, mem_bw, hold_of, delay_of)
    assert path == pytest.approx(expected, rel=1e-12)
    assert graph.values.sum() == analysis.comm_plan(lower, owner, levels, 4).row.size


# 4 ranks, 2 per node, memory so fast that only the trips count
FAST = MachineProfile(alpha_s=1e-6, beta_s_per_byte=0.0, gamma_flops=1e9,
                      mem_bw_bytes_per_s=1e30, ranks_per_node=2, cores_per_node=2, nodes=2,
                      inter_node=InterNode(latency_s=1e-6, bandwidth_bytes_per_s=1e30))


def lap3d_blocks(algo: str):
    lower = load_matrix("lap3d:16")
    levels = analysis.levels(lower)
    owner = analysis.partition_rows(lower, levels, 4, "nnz")
    return sptrsv_costs(lower.indptr, lower.indices, levels, owner, 4, 1, algo, 2)


def test_level_set_wavefront_pipelines_one_trip_per_hop():
    """lap3d:16 in 4 contiguous blocks: 38 message levels, but a batch of level l gates
    level l + 1 of the next rank only, so the longest path takes ranks - 1 = 3 trips."""
    costs = lap3d_blocks("levelset")
    assert costs.message_levels == 38
    assert costs.path_time(FAST, FAST.placement(4)) == pytest.approx(3e-6, rel=1e-9)
    assert costs.record_block(FAST)["time_s"] >= 3e-6


def test_sync_free_wavefront_is_charged_levels_plus_hops_not_levels_times_hops():
    """The sender's blocking flush: each batch holds its sender one trip t. In contiguous
    blocks rank r pushes level l once rank r-1's push of l-1 arrived, so the path is
    about one trip per level carrying messages plus one per hop (42 + 3), not the
    message levels on top of each rank's batches (the old charge: 30 + 38)."""
    costs = lap3d_blocks("syncfree")
    trip = 1e-4
    profile = replace(FAST, onesided_trip_s=trip,
                      inter_node=replace(FAST.inter_node, onesided_trip_s=trip))
    path = costs.path_time(profile, profile.placement(4))
    assert costs.message_levels * trip * (1 - 1e-9) <= path <= (costs.message_levels + 3) * trip
    assert path == pytest.approx(38 * trip, rel=1e-12)
    batches_per_rank = costs.msgs_sent / 2
    assert batches_per_rank.max() == 30
    assert costs.record_block(profile)["time_s"] == pytest.approx(path, rel=1e-12)
