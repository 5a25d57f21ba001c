"""Argument types of the command line: each turns one string into a value or raises
``argparse.ArgumentTypeError`` with what was wrong (argparse makes that a usage error,
exit 2)."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def int_or_auto(text: str) -> int | str:
    return "auto" if text == "auto" else positive_int(text)


def byte_size(text: str) -> int:
    """'512M', '2G', '1.5e9' -> bytes."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        size = int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units \
            else int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 512M, 2G)") from None
    if size <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive size, got {text!r}")
    return size


def rank_counts(text: str) -> list[int]:
    """'64' -> [64]; '16:1024' -> [16, 32, ..., 1024] (doubling); '4,6,8' -> [4, 6, 8]."""
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
    return counts
