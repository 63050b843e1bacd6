"""The record read back: ``Record.from_dict`` is the inverse of ``as_dict`` for every line a results
file can hold (a real run's full and summary lines, and an older release's), and the judgement's
fields read as typed attributes (conformance/results.py; docs/architecture.md, "The record").

This module holds the unit tier's tests of it (no runtime, no process); the real run's lines:
tests/runtime/test_records.py."""

import json

from conformance.gate import Expectations, classify, gated
from conformance.results import Record, line_of

#: a line as a release before spec_family, runtime_family, features, case_digest and the judgement's
#: fields wrote it, with a non-finite error as JSON cannot hold it
OLD = ('{"case": "gru/x[direction=forward]", "target": "onnxruntime-1.17.0/CPU@onnx-14", "spec": "onnx-14", '
       '"runtime": "onnxruntime", "runtime_version": "1.17.0", "device": "CPU", "op": "GRU", "verdict": "fail", '
       '"max_abs_err": "inf", "max_ulp": null, "message": "Y[0] is inf", "repro": "conformance run ..."}')


def _round_trips(lines: list[str]) -> None:
    for text in lines:
        line = json.loads(text)
        again = Record.from_dict(line).as_dict()
        assert list(again) == list(line), (list(again), list(line))   # same keys, same order
        assert again == line and line_of(again) == line_of(line)


def test_an_older_release_line_reads_with_its_missing_fields_at_their_defaults():
    _round_trips([OLD])
    record = Record.from_dict(json.loads(OLD))
    assert record.spec_family == "" and record.features == [] and record.line is None and record.gate == ""
    assert not record.has("features") and record.has("case") and record.expected is None
    assert record.max_abs_err == "inf" and record.worst is None and record.notes == []
    record.gate = "new"   # a field set after reading is written after the line's own
    assert list(record.as_dict())[-1] == "gate" and "features" not in record.as_dict()


def test_the_gate_reads_records_and_writes_its_fields_where_the_line_has_them(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text('entries:\n  - {cases: "gru/*", targets: "onnxruntime-*", verdict: fail, kind: known-bug, '
                    'reason: r, upstream: "none found (searched 2026-11-27)"}\n')
    exp = Expectations.load([path])
    line = dict(json.loads(OLD), gate="new", expected=None)
    record = Record.from_dict(line)
    assert classify(record, exp)["gate"] == "expected"
    again = gated(record, exp)
    assert again.gate == "expected" and again.expected and again.expected["reason"] == "r"
    assert list(again.as_dict()) == list(line) and record.gate == "new"   # a copy; the keys keep their place
    # a line from before features were recorded is in no feature class
    exp.entries[0].features = [(False, [])]
    assert classify(record, exp)["gate"] == "new"
