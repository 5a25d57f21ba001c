"""`python -m linalg_io.reframe_checks checks|local|slurm`: the path of that file."""

from __future__ import annotations

import sys

from linalg_io.reframe_checks import FILES


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in FILES:
        print(f"usage: python -m linalg_io.reframe_checks {'|'.join(FILES)}", file=sys.stderr)
        return 2
    print(FILES[argv[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
