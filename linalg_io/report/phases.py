"""Measured against predicted time per phase of the LU records (`phases.csv`/`phases.md`).

One row per record and phase: the slowest rank's seconds per repetition in that phase
(`time_by_phase.max`), the mean over the ranks, the model's (`model.time_by_phase.max`:
the phase's own work, no waiting) and their ratio, so a reader sees which phase is
off. Records without per-phase times (other kernels, older records) give no rows.
"""

from __future__ import annotations

import pandas as pd


def phase_table(records: list[dict]) -> pd.DataFrame:
    rows = []
    for record in records:
        measured = record.get("time_by_phase")
        if not measured:
            continue
        model = ((record.get("model") or {}).get("time_by_phase") or {}).get("max", {})
        params = record.get("params", {})
        for phase in measured["phases"]:
            predicted = model.get(phase)
            seconds = measured["max"][phase]
            rows.append({
                "algo": record.get("algo"), "n": params.get("n"), "nb": params.get("nb"),
                "grid": "x".join(str(g) for g in params.get("grid", [])),
                "nranks": record.get("nranks"), "time_s": record["time_s"]["median"],
                "phase": phase, "measured_max_s": seconds,
                "measured_mean_s": measured["mean"][phase], "model_s": predicted,
                "measured_over_model": (seconds / predicted if predicted else None)})
    return pd.DataFrame(rows)
