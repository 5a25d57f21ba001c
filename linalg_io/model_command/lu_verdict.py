"""What `linalg-io model lu` prints: a verdict first, then the best candidates.

The headline names the 2D and the 2.5D configuration that `lu --grid auto` would run
(`*` in the tables below it), each with its predicted time, the bytes the busiest rank
receives and moves on the wire (sent / received), the predicted GFLOP/s and its share
of the machine's peak (a rank's gamma_flops at its threads times the ranks computing
at once), and the ratio 2.5D / 2D of time and of received bytes. The tables then list
the best `limit` candidates of each algorithm (every one with `--all`), columns
aligned, the chosen row always among them. Rows are dicts: the 2.5D ones of
`models.conflux.candidate_table`, the 2D ones of `row_2d`.
"""

from __future__ import annotations

from linalg_io.lu.hpl import hpl_flops
from linalg_io.models.lu2d import PHASES, PIVOT_PHASES, critical_path_time, lu2d_traffic
from linalg_io.models.profile import MachineProfile, Placement

MB = 1e6
TOP = 10


def row_2d(n: int, profile: MachineProfile, placement: Placement,
           shape: tuple[int, int, int]) -> dict:
    """One 2D grid (Pr, Pc, NB): received and wire bytes and messages of the busiest rank
    for the pivoting a run's record assumes ("expected"), the received bytes with no row
    swaps and in the worst case, and the predicted time: `lu2d_costs`' totals over the
    phases (wire = logical) and critical path, without its flops; the received bytes
    of the phases that do not depend on the pivots summed once for the three."""
    pr, pc, nb = shape
    expected = lu2d_traffic(n, nb, pr, pc, "expected")
    # PHASES: those that do not depend on the pivots first, as `lu2d_costs` sums them
    fixed = sum(expected["recv"][phase] for phase in PHASES if phase not in PIVOT_PHASES)

    def recv_max(recv: dict) -> float:
        return float(sum((recv[phase] for phase in PIVOT_PHASES), fixed).max())

    def other_max(pivoting: str) -> float:
        return recv_max(lu2d_traffic(n, nb, pr, pc, pivoting, received_only=True)["recv"])

    def total_max(phases: dict) -> float:
        return float(sum(phases[phase] for phase in PHASES).max())

    received = recv_max(expected["recv"])
    return {"pr": pr, "pc": pc, "nb": nb,
            "bytes_recv_max": received,
            "wire_sent_max": total_max(expected["sent"]), "wire_recv_max": received,
            "msgs_max": total_max(expected["msgs_by_phase"]),
            "recv_none_max": other_max("none"), "recv_worst_max": other_max("worst"),
            "time_s": float(critical_path_time(n, nb, pr, pc, "expected", profile,
                                               placement))}


def peak_flops(profile: MachineProfile, placement: Placement) -> float:
    """The flop/s of the cores the ranks compute on: a rank's gamma (at its threads) per
    rank, or per rank the shared cores hold at once."""
    cores = placement.p if placement.shared_cores is None else placement.shared_cores
    return profile.gamma_flops * cores


def _summary(name: str, grid: str, block: str, row: dict, n: int, peak: float) -> str:
    gflops = hpl_flops(n) / row["time_s"]
    return (f"  {name:<14} {grid:>10} {block:<7} {row['time_s']:>9.4g} s  "
            f"recv {row['bytes_recv_max'] / MB:>9.1f} MB  wire "
            f"{row['wire_sent_max'] / MB:.1f}/{row['wire_recv_max'] / MB:.1f} MB  "
            f"{gflops / 1e9:>9.1f} GFLOP/s ({100 * gflops / peak:.1f}% of peak)")


def conflux_name(row: dict) -> tuple[str, str]:
    return f"{row['px']}x{row['py']}x{row['c']}", f"v={row['v']}"


def headline(n: int, p: int, profile: MachineProfile, placement: Placement,
             conflux: dict | None, lu2d: dict | None, objective: str) -> list[str]:
    """The verdict (module doc); an algorithm without a row is left out."""
    peak = peak_flops(profile, placement)
    lines = [(f"verdict, N={n} P={p} (time, bytes of the busiest rank per run, MB = 1e6 B; "
              f"peak {peak / 1e9:.6g} GFLOP/s):")]
    if conflux is not None:
        lines.append(_summary(f"2.5D ({objective})", *conflux_name(conflux), conflux, n, peak))
    if lu2d is not None:
        lines.append(_summary("2D", f"{lu2d['pr']}x{lu2d['pc']}", f"NB={lu2d['nb']}", lu2d,
                              n, peak))
    if conflux is not None and lu2d is not None:
        def wire(row: dict) -> float:
            return max(row["wire_sent_max"], row["wire_recv_max"])

        def ratio(a: float, b: float) -> str:
            return f"x{a / b:.3f}" if b else "n/a (P = 1: none)"

        faster = "2.5D" if conflux["time_s"] < lu2d["time_s"] else "2D"
        lines.append(f"  2.5D / 2D: time x{conflux['time_s'] / lu2d['time_s']:.3f}, received "
                     f"{ratio(conflux['bytes_recv_max'], lu2d['bytes_recv_max'])}, wire "
                     f"{ratio(wire(conflux), wire(lu2d))} -> {faster} is predicted faster")
    return lines


def shown(rows: list[dict], chosen: dict | None, limit: int | None) -> list[dict]:
    """The first `limit` rows (all for None), the chosen one added where it is not."""
    first = rows if limit is None else rows[:limit]
    if chosen is not None and not any(r is chosen for r in first):
        first = first + [chosen]
    return first


def conflux_lines(rows: list[dict], chosen: dict | None, limit: int | None) -> list[str]:
    """The 2.5D table: mark, grid, v, bytes (MB) received, wire sent and received, wire
    max/mean, logical sent, messages, memory the layout needs (GiB), time."""
    out = [(f"  {'grid':>10} {'v':>4} {'recv max':>9} {'wire sent':>9} {'wire recv':>9} "
            f"{'max/mean':>8} {'sent max':>9} {'msgs max':>9} {'needs GiB':>9} {'time s':>9}")]
    for r in shown(rows, chosen, limit):
        mark = "*" if r is chosen else ("!" if not r["fits"] else " ")
        spread = r["wire_max"] / r["wire_mean"] if r["wire_mean"] else 1.0   # P = 1: no wire
        out.append(f"{mark} {conflux_name(r)[0]:>10} {r['v']:>4} "
                   f"{r['bytes_recv_max'] / MB:>9.2f} {r['wire_sent_max'] / MB:>9.2f} "
                   f"{r['wire_recv_max'] / MB:>9.2f} {spread:>8.3f} "
                   f"{r['bytes_sent_max'] / MB:>9.2f} {r['msgs_max']:>9.0f} "
                   f"{r['mem_bytes'] / 2**30:>9.3f} {r['time_s']:>9.4g}")
    return out


def lu2d_lines(rows: list[dict], chosen: dict | None, limit: int | None) -> list[str]:
    """The 2D table: mark, grid, NB, bytes (MB) received, wire sent and received,
    messages, received with no swaps and in the worst case, time."""
    out = [(f"  {'grid':>10} {'NB':>4} {'recv max':>9} {'wire sent':>9} {'wire recv':>9} "
            f"{'msgs max':>9} {'recv none':>9} {'recv worst':>10} {'time s':>9}")]
    for r in shown(rows, chosen, limit):
        mark = "*" if r is chosen else " "
        out.append(f"{mark} {str(r['pr']) + 'x' + str(r['pc']):>10} {r['nb']:>4} "
                   f"{r['bytes_recv_max'] / MB:>9.2f} {r['wire_sent_max'] / MB:>9.2f} "
                   f"{r['wire_recv_max'] / MB:>9.2f} {r['msgs_max']:>9.0f} "
                   f"{r['recv_none_max'] / MB:>9.2f} {r['recv_worst_max'] / MB:>10.2f} "
                   f"{r['time_s']:>9.4g}")
    return out


def more_line(rows: list[dict], limit: int | None, unevaluated: int = 0,
              far: float | None = None) -> list[str]:
    """The count of the rows not shown; `unevaluated` of them were never evaluated: a
    lower bound on their time already put them below the rows shown
    (`linalg_io.lu.choice.pruned_rows`), or, where the search stops at `far` times the
    fastest time before the limit's row (fewer rows, or that row slower), over that."""
    hidden = 0 if limit is None else max(0, len(rows) - limit)
    line = f"  ... {hidden} more (--all shows every candidate)" if hidden else ""
    if unevaluated:
        times = sorted(r["time_s"] for r in rows)
        why = "ranks them after these"
        if far is not None and limit is not None and (len(times) < limit
                                                      or times[limit - 1] > far * times[0]):
            why = f"is over {far:g} times the fastest's or ranks them after these"
        line = (f"{line}; " if line else "  ... ") + (f"{unevaluated} more not evaluated "
                                                     f"(a lower bound on their time {why})")
    return [line] if line else []
