"""How much do ranks waiting inside MPI slow a rank that computes (oversubscribed node)?

One rank runs a fixed dgemm workload while the other P-1 ranks wait in a Barrier;
the slowdown is its time over the time of the same workload with P = 1, measured
in the same run (alternating, best of --trials). Target: <= 1.3x at 8, 16, 64 ranks.
Usage: .venv/bin/python bench/bench_oversubscription.py [--ranks 8 16 64]
"""

import argparse
import subprocess
from pathlib import Path

from linalg_io.launch.relaunch import (
    find_mpiexec,
    mpi_environment,
    mpiexec_command,
    mpiexec_flavour,
)

WORKER = str(Path(__file__).with_name("oversubscription_worker.py"))


def timed(nranks: int, order: int, repeats: int) -> float:
    mpiexec = find_mpiexec()
    flavour = mpiexec_flavour(mpiexec)
    command = mpiexec_command(nranks, [WORKER, str(order), str(repeats)], flavour, mpiexec)
    out = subprocess.run(command, env=mpi_environment(1, flavour), capture_output=True,
                         text=True, timeout=600, check=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[8, 16, 64])
    parser.add_argument("--order", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    mpiexec = find_mpiexec()
    print(f"MPI: {mpiexec_flavour(mpiexec)} ({mpiexec}); dgemm {args.order}^3 x {args.repeats}")
    print(f"{'ranks':>6} {'alone s':>9} {'with waiters s':>15} {'slowdown':>9}")
    for nranks in args.ranks:
        alone, crowded = [], []
        for _ in range(args.trials):
            alone.append(timed(1, args.order, args.repeats))
            crowded.append(timed(nranks, args.order, args.repeats))
        ratio = min(crowded) / min(alone)
        print(f"{nranks:>6} {min(alone):>9.3f} {min(crowded):>15.3f} {ratio:>8.2f}x", flush=True)


if __name__ == "__main__":
    main()
