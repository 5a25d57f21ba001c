"""The command line without MPI jobs: parsing, help and local commands (the launcher,
`info`, `pingpong`, `calibrate` and error agreement on real jobs: test_cli_mpi.py)."""

import os
import subprocess
import sys

CLI = [sys.executable, "-m", "linalg_io"]


def test_usage_error_exits_2():
    out = subprocess.run(CLI + ["lu", "--n", "-3"], capture_output=True, text=True, timeout=60,
                         check=False)
    assert out.returncode == 2 and "positive integer" in out.stderr
    for size in ("0", "-5G"):
        out = subprocess.run(CLI + ["model", "lu", "--n", "64", "--p", "2", f"--mem={size}"],
                             capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 2 and "must be a positive size" in out.stderr, out.stderr


def test_output_into_a_closed_pipe_ends_quietly():
    """`linalg-io model lu ... | head`, head gone before the table: no error line, the
    status a shell gives a process SIGPIPE ended (128 + 13)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    job = subprocess.Popen(CLI + ["model", "lu", "--n", "1024", "--p", "4"], stdout=write_end,
                           stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    _, err = job.communicate(timeout=120)
    assert job.returncode == 141 and err == "", err


def test_model_lu_of_a_2_5d_grid_tables_the_2_5d_lu_alone():
    # a grid with c > 1 is no 2D grid: without --algo the model tables the 2.5D LU on it
    # (not a search of it, then a refusal of the 2D side)
    out = subprocess.run(CLI + ["model", "lu", "--n", "1024", "--p", "8", "--grid", "2x2x2"],
                         capture_output=True, text=True, timeout=120, check=True)
    assert "2.5D LU (conflux)" in out.stdout and "2D LU (block-cyclic" not in out.stdout
    assert any(line.split()[:2] == ["*", "2x2x2"] for line in out.stdout.splitlines()), \
        out.stdout
    both = subprocess.run(CLI + ["model", "lu", "--n", "1024", "--p", "8", "--grid", "2x4"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert "2.5D LU (conflux)" in both.stdout and "2D LU (block-cyclic" in both.stdout


def test_pingpong_sizes_end_with_the_largest_asked_for():
    from linalg_io.tools.pingpong import message_sizes

    assert message_sizes(8, 64 * 1024) == [8, 32, 128, 512, 2048, 8192, 32768, 65536]
    assert message_sizes(8, 131072)[-2:] == [32768, 131072]
    assert message_sizes(5, 5) == [5]


def test_every_option_of_every_command_says_what_it_does():
    import argparse

    from linalg_io.cli import build_parser

    silent = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, path + [name])
            elif action.option_strings and not action.help:
                silent.append(f"{' '.join(path)} {action.option_strings[0]}")

    walk(build_parser(), [])
    assert silent == []
    pingpong = subprocess.run(CLI + ["pingpong", "--help"], capture_output=True, text=True,
                              timeout=60, check=True).stdout
    assert "largest message, always measured itself (64M)" in pingpong
