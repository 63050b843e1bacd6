"""The record read back from a real run: every line of its results file, full and summary, reads back
as the same line (conformance/results.py; the unit tier's tests: tests/unit/test_records.py)."""

from conformance.results import read_records, read_results
from tests.conftest import DATA, conformance
from tests.unit.test_records import _round_trips

WRONG = ["--runtime", "wrong-gru-gate-order", "--runtime-plugin", "tests.doubles.plugins:WrongGateOrderGRU",
         "--runtime", "onnxruntime"]   # and a runtime that passes: its lines are summaries under `failing`


def test_every_line_of_a_real_run_reads_back_as_the_same_line(tmp_path):
    for artifacts in ("full", "failing"):   # failing: the passing pairs' lines are summaries
        out = tmp_path / artifacts
        conformance("run", DATA / "cases", "-k", "small", "--spec", "onnx-14", *WRONG, "--out", out, "-q",
                    "--no-ablation", "--artifacts", artifacts, check=1)
        lines = (out / "results.jsonl").read_text().splitlines()
        assert len(lines) >= 2
        _round_trips(lines)
        records = read_records(out / "results.jsonl")
        assert [r.as_dict() for r in records] == read_results(out / "results.jsonl")
        failing = [r for r in records if r.verdict == "fail"]
        assert failing and all(r.gate == "new" and r.worst and r.worst["output"] for r in failing)
        assert all(isinstance(r.ratio, float) and r.ratio > 1 for r in failing)
        if artifacts == "failing":
            assert any(r.detail == "summary" for r in records)
