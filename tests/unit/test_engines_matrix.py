"""The cross-runtime feature matrix (conformance/report/engines_matrix.py): op × feature × runtime,
each cell the class of its verdicts with counts, in the HTML report and summary.md, from records
built here (in tests/corpus/test_html_report.py's style) and looked at in headless Chromium.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_engines_matrix.py."""

from __future__ import annotations

from collections import Counter

from conformance.report import engines_matrix as em
from conformance.results import records_of
from tests.unit.test_html_report import record

ENGINE, OTHER = "eng-2.0/CPU@onnx-14", "ref-1.0/CPU@onnx-14"


def _records() -> list[dict]:
    recs = []
    for i in range(4):   # clip: the engine fails every clipped case, the other runtime passes them
        recs.append(record(f"lstm/clip[clip={i}]", ENGINE, "fail", op="LSTM", features=["clip", "B"]))
        recs.append(record(f"lstm/clip[clip={i}]", OTHER, "pass", op="LSTM", features=["clip", "B"]))
    for i in range(3):   # peepholes: refused by the engine; passes on one of the other's three
        recs.append(record(f"lstm/p[i={i}]", ENGINE, "rejected", op="LSTM", features=["P"]))
        recs.append(record(f"lstm/p[i={i}]", OTHER, "pass" if i == 0 else "fail", op="LSTM", features=["P"]))
    recs.append(record("lstm/plain", ENGINE, "pass", op="LSTM", features=[]))
    recs.append(record("lstm/plain", OTHER, "pass", op="LSTM", features=[]))
    recs.append(record("lstm/layout[layout=1]", ENGINE, "not-expressible", op="LSTM", features=["layout=1"]))
    recs.append(record("lstm/layout[layout=1]", OTHER, "crash", op="LSTM", features=["layout=1"]))
    recs.append(record("invalid/lstm/w", ENGINE, "accepted-invalid", op="LSTM", expect="invalid",
                       features=["violates=shape:W"]))
    recs.append(record("gru/reverse", ENGINE, "pass", op="GRU", features=["reverse", "bidirectional"]))
    return recs


def test_the_verdict_class_of_a_cell():
    assert em.verdict_class(Counter({"pass": 3})) == "all pass"
    assert em.verdict_class(Counter({"pass": 2, "fail": 1})) == "some fail"
    assert em.verdict_class(Counter({"fail": 2, "rejected": 1})) == "all fail"
    assert em.verdict_class(Counter({"rejected": 2, "not-expressible": 1})) == "rejected"
    assert em.verdict_class(Counter({"pass": 5, "crash": 1})) == "crashes"
    assert em.verdict_class(Counter({"not-expressible": 2})) == "not expressible"
    assert em.verdict_class(Counter({"pass": 1, "unspecified": 2})) == "all pass"


def test_rows_are_the_feature_tables_per_op_and_columns_the_runtimes():
    matrix = em.build(records_of(_records()))
    assert [c.label for c in matrix["columns"]] == ["eng 2.0", "ref 1.0"]
    ops = dict(matrix["ops"])
    assert list(ops) == ["GRU", "LSTM"]
    lstm = {row.name: row for row in ops["LSTM"]}
    assert list(lstm)[0] == em.ALL_VALID and list(lstm)[-1] == em.INVALID
    engine, other = zip(*(row.cells for row in ops["LSTM"]), strict=True)
    cell = dict(zip(lstm, engine, strict=True))
    assert cell["clip"].klass == "all fail" and cell["clip"].summary == "0/4 pass · fail 4"
    peepholes = next(name for name in lstm if "peepholes" in name)   # peepholes and zero_peepholes: one token, one row
    assert cell[peepholes].klass == "rejected" and cell[peepholes].summary == "0/3 pass · rej 3"
    assert cell["layout"].klass == "not expressible"
    assert cell[em.INVALID].klass == "all fail" and cell[em.INVALID].counts == Counter({"accepted-invalid": 1})
    assert cell[em.ALL_VALID].n == 9   # the invalid case is only in its own row
    theirs = dict(zip(lstm, other, strict=True))
    assert theirs["clip"].klass == "all pass" and theirs[peepholes].klass == "some fail"
    assert theirs["layout"].klass == "crashes" and theirs[em.INVALID].n == 0
    gru = {row.name: row for row in ops["GRU"]}
    assert {"direction", "bidirectional"} <= set(gru) and gru["direction"].tokens == "reverse"


def test_a_runtimes_configurations_are_columns_of_their_own():
    """OpenVINO's default configuration (bf16 on some CPUs) and its pinned one do not share a cell."""
    recs = [dict(record("lstm/clip[clip=0]", ENGINE, "fail", op="LSTM", features=["clip"]),
                 config="default", target_precision="bf16"),
            dict(record("lstm/clip[clip=0]", ENGINE, "pass", op="LSTM", features=["clip"]),
                 config="precision=pinned")]
    matrix = em.build(records_of(recs))
    assert [c.label for c in matrix["columns"]] == ["eng 2.0 precision=default→bf16", "eng 2.0 precision=pinned"]
    clip = {row.name: row for row in dict(matrix["ops"])["LSTM"]}["clip"]
    assert [cell.klass for cell in clip.cells] == ["all fail", "all pass"]
