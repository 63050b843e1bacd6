"""Spec-silent is not anything-goes: unspecified elements are classified (plausible, naming the
reading; implausible; garbage), garbage fails the pair, and the report tabulates what each runtime
chose. The runtimes here are deliberate test doubles (tests/doubles/silent.py) around onnxruntime.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_silent.py."""

from __future__ import annotations

from conformance.run import read_results
from tests.conftest import conformance

#: rnn/sequence_lens with a zero length: Y_h of batch entry 1 is unspecified (and Y past lengths)
SELECT = ["cases/rnn/sequence_lens.yaml", "-k", "sequence_lens=[2,0,4]", "--spec", "onnx-14"]
DOUBLES = {"ZeroLengthZeros": "silent-zeros", "ZeroLengthInitial": "silent-initial",
           "ZeroLengthFinite": "silent-finite", "ZeroLengthInf": "silent-inf", "ZeroLengthHeap": "silent-heap"}


def _run(tmp_path, *classes, expectations=None, name="out"):
    args = ["run", *SELECT, "--out", tmp_path / name, "--no-ablation", "-q", "--runtime", "onnxruntime",
            "--artifacts", "full"]
    for cls in classes:
        args += ["--runtime-plugin", f"tests.doubles.silent:{cls}", "--runtime", DOUBLES[cls]]
    if expectations:
        path = tmp_path / f"{name}.yaml"
        path.write_text(expectations)
        args += ["--expectations", path]
    proc = conformance(*args)
    return proc, read_results(tmp_path / name / "results.jsonl")


def test_each_sub_verdict_of_the_unspecified_elements(tmp_path):
    proc, records = _run(tmp_path, *DOUBLES)
    by = {}
    for r in records:
        by.setdefault(r["runtime"], []).append(r)
    assert len(by["onnxruntime"]) == 6  # 3 directions x initial_h random/absent

    def zero_length(runtime):
        return [r["silent"]["points"]["sequence_lens.zero_length"] for r in by[runtime]]

    assert {p["reading"] for p in zero_length("silent-zeros")} == {"zeros"}
    assert {p["reading"] for p in zero_length("silent-initial")} <= {"initial-state", "zeros"}
    assert "initial-state" in {p["reading"] for p in zero_length("silent-initial")}  # where initial_h is given
    assert {p["reading"] for p in zero_length("silent-finite")} == {"implausible"}
    assert {p["reading"] for p in zero_length("silent-inf")} == {"garbage"}
    assert {p["reading"] for p in zero_length("silent-heap")} == {"garbage"}
    # implausible is reported, not failed; garbage fails, with the message in the suite's shape
    assert {r["verdict"] for r in by["silent-finite"]} == {"pass"}
    assert all(r["silent"]["verdict"] == "implausible" for r in by["silent-finite"])
    for r in by["silent-inf"]:
        assert r["verdict"] == "fail"
        assert r["message"].startswith("Y_h[0,1,0] is unspecified by RNN (onnx-14: sequence_lens.zero_length) "
                                       "but holds inf (plausible: 0 or initial-state")
    for r in by["silent-heap"]:
        assert r["verdict"] == "fail" and "in one run and" in r["message"] and "in the next" in r["message"]
        assert r["silent"]["repeated"]
    assert proc.returncode == 1


def test_specified_elements_are_judged_as_before(tmp_path):
    """The doubles change only unspecified elements: every specified judgement equals onnxruntime's."""
    _, records = _run(tmp_path, *DOUBLES)
    plain = {r["case"]: r for r in records if r["runtime"] == "onnxruntime"}
    for r in records:
        if r["runtime"] == "onnxruntime":
            continue
        base = plain[r["case"]]
        assert (r["max_abs_err"], r["max_ulp"], r["ratio"]) == (base["max_abs_err"], base["max_ulp"], base["ratio"])
        assert r["unspecified"] == base["unspecified"] > 0


def test_an_expectations_file_sets_what_the_sub_verdicts_do(tmp_path):
    policy = 'targets: "silent-*"\nunspecified: {garbage: report, implausible: fail}\nentries: []\n'
    _, records = _run(tmp_path, "ZeroLengthFinite", "ZeroLengthInf", expectations=policy)
    by = {r["runtime"]: r["verdict"] for r in records if r["runtime"] != "onnxruntime"}
    assert by == {"silent-finite": "fail", "silent-inf": "pass"}


def test_the_spec_silent_table_in_the_report_and_the_summary(tmp_path):
    _run(tmp_path, *DOUBLES)
    html = (tmp_path / "out" / "index.html").read_text()
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert 'id="silent"' in html and "sequence_lens.zero_length" in html
    for reading in ("zeros", "initial-state", "implausible", "garbage"):
        assert reading in html
    assert "## Where the specs are silent" in summary
    row = next(line for line in summary.splitlines() if line.startswith("| `sequence_lens.zero_length`"))
    assert "garbage" in row and "zeros" in row


