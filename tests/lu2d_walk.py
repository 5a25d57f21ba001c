"""The reference the fast 2D LU model is held to: the per-rank walk of every block
column, [process row, process column] arrays, one step at a time (`models/lu2d.py`'s
`lu2d_plan_counts` before the rank classes, commit 5419b77). tests/test_model_fast.py
checks the two agree."""

from __future__ import annotations

import numpy as np
from linalg_io.models.lu2d import PIVOTING

from linalg_io.layout.blockcyclic import counts_from, pivot_rows_by_owner
from linalg_io.layout.lu2d_steps import (
    TRAFFIC_PHASES,
    block_columns,
    candidate_words,
    diagonal,
    panel_words,
)
from linalg_io.layout.schedules import allgatherv_costs, bcast_costs
from linalg_io.layout.words import WORD


def _step_pivot_rows(pivoting, j0, kb, nb, pr, m_below):
    prow, _ = diagonal(j0 // nb, pr, 1)
    diag = np.arange(pr) == prow
    if isinstance(pivoting, np.ndarray):
        return pivot_rows_by_owner(pivoting[j0:j0 + kb], j0, nb, pr)
    if pivoting == "none":
        return diag * float(kb), np.zeros(pr)
    if pivoting == "worst":
        s = np.minimum(kb, m_below).astype(float)
    else:
        s = kb * m_below / (m_below.sum() + kb)
    s = s * ~diag
    kept = max(0.0, kb - s.sum())
    return np.where(diag, kept, s), s


def walk(n, nb, pr, pc, pivoting="worst") -> dict:
    if not isinstance(pivoting, str):
        pivoting = np.asarray(pivoting, dtype=np.int64)
    assert isinstance(pivoting, np.ndarray) or pivoting in PIVOTING
    sent = {ph: np.zeros((pr, pc)) for ph in TRAFFIC_PHASES}
    recv = {ph: np.zeros((pr, pc)) for ph in TRAFFIC_PHASES}
    msgs = np.zeros((pr, pc))
    flops = np.zeros((pr, pc))
    rows = np.arange(pr).reshape(-1, 1)
    cols = np.arange(pc).reshape(1, -1)

    def add(phase, mask, costs):
        out, into, count = (np.broadcast_to(np.asarray(a, dtype=float), (pr, pc)) for a in costs)
        sent[phase] += mask * out
        recv[phase] += mask * into
        msgs[:] += mask * count

    for k, (j0, kb) in enumerate(zip(*block_columns(n, nb))):
        j0, kb = int(j0), int(kb)
        j1 = j0 + kb
        prow, pcol = diagonal(k, pr, pc)
        below = counts_from(j1, n, nb, pr)
        trail = counts_from(j1, n, nb, pc)
        m_below = below.reshape(-1, 1) + 0 * cols
        n_trail = trail.reshape(1, -1) + 0 * rows
        diag_row = rows == prow
        in_pcol = cols == pcol
        m_active = m_below + diag_row * kb
        flops += in_pcol * (m_active * kb * kb - kb**3 / 3.0)
        if pr > 1:
            base, extra = candidate_words(kb)
            candidates = np.full(pr, base * WORD, dtype=float)
            candidates[prow] += extra * WORD
            add("panel", in_pcol,
                tuple(kb * a.reshape(-1, 1) for a in allgatherv_costs(candidates)))
        size = panel_words(kb, m_below) * WORD
        add("bcast_L", np.ones((pr, pc), dtype=bool), bcast_costs((cols - pcol) % pc, pc, size))
        flops += kb * kb * n_trail + 2.0 * m_below * n_trail * kb
        if pr > 1:
            owned, displaced = _step_pivot_rows(pivoting, j0, kb, nb, pr, below)
            blocks = np.outer(owned, trail) * WORD
            spread = allgatherv_costs(blocks.T)
            add("bcast_U", np.ones((pr, pc), dtype=bool), tuple(a.T for a in spread))
            remote = displaced * (np.arange(pr) != prow)
            moved = remote.reshape(-1, 1) * n_trail * WORD
            sent["swap"] += diag_row * moved.sum(axis=0, keepdims=True)
            recv["swap"] += moved
            msgs += diag_row * (n_trail > 0) * (remote > 0).sum()
    return {"sent": sent, "recv": recv, "msgs": msgs, "flops": flops}


def assert_counts_equal_walk(fast: dict, walked: dict, pivoting, what: str, rtol: float,
                             more: tuple = ()) -> None:
    """The fast model's sent and received bytes per phase, messages (and `more`: (new,
    walked, name) pairs) equal to the walk's: to the byte for whole-number pivotings, to
    `rtol` for "expected"; flops to `rtol`."""
    pairs = [(fast[key][phase], walked[key][phase], f"{key} {phase}")
             for key in ("sent", "recv") for phase in TRAFFIC_PHASES]
    pairs += [*more, (fast["msgs"], walked["msgs"], "msgs")]
    for new, old, name in pairs:
        if pivoting == "expected":
            np.testing.assert_allclose(new, old, rtol=rtol, atol=1e-9, err_msg=f"{name}, {what}")
        else:
            np.testing.assert_array_equal(new, old, err_msg=f"{name}, {what}")
    np.testing.assert_allclose(fast["flops"], walked["flops"], rtol=rtol,
                               err_msg=f"flops, {what}")
