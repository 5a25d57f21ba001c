"""Argument types of the command line: each turns one string into a value or raises
``argparse.ArgumentTypeError`` with what was wrong (argparse makes that a usage error,
exit 2)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn

# the largest count or size accepted: the models' arithmetic is in 64-bit integers
MAX_COUNT = 2**62
MAX_MODEL_RANKS = 2**20   # the models evaluate per rank: arrays of P entries, a search per P
SEED_LIMIT = 2**64   # seeds feed 64-bit generators (splitmix64, NumPy's default_rng)


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def positive_int(text: str) -> int:
    value = _integer(text)
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be a positive integer up to 2^62, got {text}")
    return value


def nonnegative_int(text: str) -> int:
    value = _integer(text)
    if not 0 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be an integer in 0 .. 2^62, got {text}")
    return value


def seed(text: str) -> int:
    """A seed of the generated inputs: an integer in 0 .. 2^64 - 1."""
    value = _integer(text)
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"must be an integer in 0 .. 2^64-1, got {text}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def seconds_or_off(text: str) -> float | str:
    """'off' or a positive number of seconds (--stall-timeout)."""
    return "off" if text == "off" else positive_float(text)


def int_or_auto(text: str) -> int | str:
    return "auto" if text == "auto" else positive_int(text)


def byte_size(text: str) -> int:
    """'512M', '2G', '1.5e9' -> bytes."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        size = float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 512M, 2G)") from None
    if not math.isfinite(size) or not 1 <= size <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be a positive size, finite and at most 2^62 "
                                         f"bytes (4 EiB), got {text!r}")
    return int(size)


def rank_counts(text: str) -> list[int]:
    """'64' -> [64]; '16:1024' -> [16, 32, ..., 1024] (doubling); '4,6,8' -> [4, 6, 8];
    each count at most MAX_MODEL_RANKS (the models' per-rank arrays and searches)."""
    try:
        if ":" in text:
            first, last = (int(part) for part in text.split(":"))
            counts = [first * 2**i for i in range(64) if first * 2**i <= last]
        else:
            counts = [int(part) for part in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"not a rank count, A:B (doubling) or a list: {text!r}")
    if max(counts) > MAX_MODEL_RANKS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: at most {MAX_MODEL_RANKS} ranks (2^20): the models hold arrays of "
            f"P entries (up to 1 GB and seconds at 2^20), so {max(counts)} ranks would need "
            f"{max(counts) / MAX_MODEL_RANKS:.3g} times that")
    return counts


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (the error and where
    the usage is), exit 2, instead of the whole usage text before it."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)
