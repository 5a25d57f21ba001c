"""Records: whole-line appends (also from concurrent processes), tolerant loading."""

from __future__ import annotations

import json
import multiprocessing

from synthetic_records import make_record

from linalg_io.records import append_record, flatten, load_records, read_records


def test_append_then_read_round_trip(tmp_path):
    path = tmp_path / "sub" / "r.jsonl"
    first = make_record(run_id="first")
    second = make_record(kernel="tsgemm", algo="atb", run_id="second", lower_bound=None)
    append_record(path, first)
    append_record(path, second)
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    assert [r["run_id"] for r in read_records([path])] == ["first", "second"]
    assert read_records([path])[1]["lower_bound"] is None
    assert read_records([path])[0] == json.loads(json.dumps(first))


def test_numpy_values_are_written_as_plain_json(tmp_path):
    import numpy as np

    path = tmp_path / "r.jsonl"
    record = make_record()
    record["traffic"]["per_rank_bytes_sent"] = np.array([1.0, 2.0])
    record["nranks"] = np.int64(2)
    append_record(path, record)
    (loaded,) = read_records([path])
    assert loaded["traffic"]["per_rank_bytes_sent"] == [1.0, 2.0]
    assert loaded["nranks"] == 2


def test_truncated_last_line_and_foreign_lines_are_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    append_record(path, make_record(run_id="a"))
    with open(path, "a") as handle:
        handle.write("not json at all\n")
        handle.write(json.dumps({"schema": 99, "run_id": "future"}) + "\n")
        handle.write("\n")
    append_record(path, make_record(run_id="b"))
    with open(path, "a") as handle:
        handle.write(json.dumps(make_record(run_id="cut"))[:200])  # job killed mid-write
    assert [r["run_id"] for r in read_records([path])] == ["a", "b"]


def test_several_files_load_in_order_into_one_frame(tmp_path):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    append_record(one, make_record(run_id="a", nranks=4))
    append_record(two, make_record(run_id="b", nranks=2, per_rank_sent=[6e6, 2e6],
                                   model_per_rank=[5e6, 3e6]))
    frame = load_records([one, two])
    assert list(frame["run_id"]) == ["a", "b"]
    assert list(frame["traffic.bytes_sent.max"]) == [4e6, 6e6]
    assert list(frame["traffic.bytes_sent.mean"]) == [2e6, 4e6]
    assert frame["traffic.by_phase.update"].tolist() == [3e6, 4.5e6]
    assert frame.loc[1, "traffic.per_rank_bytes_sent"] == [6e6, 2e6]


def test_flatten_joins_nested_keys_and_keeps_lists():
    row = flatten({"a": {"b": {"c": 1}, "d": [1, 2]}, "e": None})
    assert row == {"a.b.c": 1, "a.d": [1, 2], "e": None}


def _append_many(path: str, writer: int, count: int, payload: int) -> None:
    for index in range(count):
        record = make_record(run_id=f"{writer}-{index}")
        record["env"]["padding"] = chr(ord("a") + writer) * payload
        append_record(path, record)


def test_concurrent_appends_never_interleave(tmp_path):
    path = tmp_path / "shared.jsonl"
    writers, count, payload = 4, 15, 200_000  # lines far above PIPE_BUF
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_append_many, args=(str(path), w, count, payload))
                 for w in range(writers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    lines = path.read_text().splitlines()
    assert len(lines) == writers * count
    records = [json.loads(line) for line in lines]  # every line is one whole record
    seen = set()
    for record in records:
        writer, _ = record["run_id"].split("-")
        assert record["env"]["padding"] == chr(ord("a") + int(writer)) * payload
        seen.add(record["run_id"])
    assert len(seen) == writers * count
    for writer in range(writers):  # each writer's records stay in its own order
        mine = [r["run_id"] for r in records if r["run_id"].startswith(f"{writer}-")]
        assert mine == [f"{writer}-{i}" for i in range(count)]


def test_append_after_a_cut_last_line_keeps_the_new_record(tmp_path):
    path = tmp_path / "r.jsonl"
    append_record(path, make_record(run_id="whole"))
    with open(path, "a") as handle:
        handle.write('{"schema": 1, "run_id": "cut", "kern')   # an interrupted writer
    append_record(path, make_record(run_id="after"))
    assert [r["run_id"] for r in read_records([path])] == ["whole", "after"]
    assert path.read_text().count("\n") == 3
