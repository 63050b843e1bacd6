"""The CI gate on real runs: a new divergence fails, an expected one passes, a fixed one is
reported, a regression against a baseline fails, an expectation that matches nothing warns.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_gate.py."""

import textwrap

import pytest

from conformance.gate import Expectations, ExpectationsError, classify, glob_to_regex
from conformance.gate.baseline import Baseline, target_key
from conformance.results import Record

WRONG = ["--runtime", "wrong-gru-gate-order", "--runtime-plugin", "tests.doubles.plugins:WrongGateOrderGRU"]


def _expectations(tmp_path, body: str):
    path = tmp_path / "expect.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def test_globs_match_case_ids_literally_except_wildcards():
    assert glob_to_regex("gru/x[direction=*]").match("gru/x[direction=reverse]")
    assert not glob_to_regex("gru/x[d]").match("gru/xd")
    assert target_key("onnxruntime-1.32.0/CPU@onnx-14") == "onnxruntime/CPU@onnx-14"
    assert target_key("openvino-2026.4.1/CPU/precision=pinned@onnx-7") == "openvino/CPU/precision=pinned@onnx-7"


def test_classify_rules(tmp_path):
    exp = Expectations.load([_expectations(tmp_path, """\
        targets: "rt-*"
        entries:
          - {cases: "a*", verdict: crash, kind: known-bug, reason: r}
        """)])
    rec = {"case": "a1", "target": "rt-1/CPU@onnx-14", "verdict": "crash"}
    assert classify(Record.from_dict(rec), exp)["gate"] == "expected"
    assert classify(Record.from_dict(dict(rec, verdict="fail")), exp)["gate"] == "new"  # entry: another verdict
    assert classify(Record.from_dict(dict(rec, verdict="pass")), exp)["gate"] == "fixed"
    assert classify(Record.from_dict(dict(rec, target="other/CPU@onnx-14")), exp)["gate"] == "new"
    base = Baseline({("a1", "rt/CPU@onnx-14"): "crash"})
    assert classify(Record.from_dict(dict(rec, target="rt-2/CPU@onnx-14")), None, base)["gate"] == "baseline"
    with pytest.raises(ExpectationsError):
        Expectations.load([_expectations(tmp_path, "entries:\n  - {cases: x}\n")])


def test_an_entry_for_a_runtime_that_did_not_run_is_not_called_unused(tmp_path):
    exp = Expectations.load([_expectations(tmp_path, """\
        entries:
          - {cases: "a*", targets: "engine-*", verdict: crash, kind: known-bug, reason: r}
          - {cases: "b*", targets: "rt-*", verdict: crash, kind: known-bug, reason: r}
        """)])
    ran = {"rt-1/CPU@onnx-14"}
    assert [e.reason for e in exp.unused(ran)] == ["r"] and exp.unused(ran)[0].cases
    assert len(exp.unused()) == 2  # without the targets that ran: every entry that covered nothing
    classify(Record.from_dict({"case": "b1", "target": "rt-1/CPU@onnx-14", "verdict": "crash"}), exp)
    assert exp.unused(ran) == []


def test_tolerance_override_without_source_is_refused(tmp_path):
    exp = _expectations(tmp_path, """\
        entries:
          - cases: "gru/*"
            tolerance: {abs: 1.0}
            reason: no source
        """)
    with pytest.raises(ExpectationsError, match="must name its source"):
        Expectations.load([exp])


def _bf16_record(verdict="fail", declared="pass", precision="bf16", features=("B",)):
    rec = {"case": "gru/basic[x]", "target": "rt-1/CPU/precision=default→bf16@onnx-14", "verdict": verdict,
           "features": list(features), "effective": {"precision": precision, "source": "declared"}}
    if declared:
        rec["declared"] = {"precision": precision, "verdict": declared}
    return rec


def test_a_config_entry_covers_only_pairs_within_their_declared_precision(tmp_path):
    exp = Expectations.load([_expectations(tmp_path, """\
        entries:
          - config: {precision: [bf16, f16]}
            within: declared
            kind: reduced-precision
            reason: computes in bf16 by design
        """)])
    assert classify(Record.from_dict(_bf16_record()), exp)["gate"] == "expected"
    assert classify(Record.from_dict(_bf16_record(precision="f16")), exp)["gate"] == "expected"
    assert classify(Record.from_dict(_bf16_record(declared="fail")), exp)["gate"] == "new"          # wrong beyond bf16
    assert classify(Record.from_dict(_bf16_record(precision="f32", declared="")), exp)["gate"] == "new"
    assert classify(Record.from_dict(_bf16_record(verdict="pass")), exp)["gate"] == "ok"   # a class: not "fixed"
    # no configuration for the entry to match: the gate judges it by its declaration all the same
    judged = classify(Record.from_dict({k: v for k, v in _bf16_record().items() if k != "effective"}), exp)
    assert judged["gate"] == "expected" and judged["expected"]["kind"] == "declared"


def test_a_pair_within_its_declaration_is_judged_by_it_with_no_entry(tmp_path):
    """docs/gate.md, "Judged by the declaration": a spec failure whose second judgement passes is expected
    (kind declared), one wrong beyond its declaration is new, whatever the configuration."""
    exp = Expectations.load([_expectations(tmp_path, """\
        entries:
          - features: [P]
            kind: known-bug
            reason: drops the peepholes
            upstream: none found (searched 2026-11-28)
        """)])
    for precision in ("bf16", "tf32", "f32"):
        got = classify(Record.from_dict(_bf16_record(precision=precision)), exp)
        assert got["gate"] == "expected" and got["expected"]["kind"] == "declared", precision
        assert precision in got["expected"]["reason"] and got["expected"]["where"] == "its configuration"
    assert classify(Record.from_dict(_bf16_record(declared="fail")), exp)["gate"] == "new"
    assert classify(Record.from_dict(_bf16_record(declared="")), exp)["gate"] == "new"
    named = classify(Record.from_dict(_bf16_record(declared="fail", features=("P",))), exp)
    assert named["gate"] == "expected" and named["expected"]["kind"] == "known-bug"   # an entry names the defect
    rec = _bf16_record(precision="f32")
    rec["declared"]["activations"] = "tanh k=125"
    rec["effective"]["activations"] = "tanh ≤ 125 ulp, sigmoid ≤ 4.1 ulp"
    got = classify(Record.from_dict(rec), exp)
    assert got["gate"] == "expected" and "tanh ≤ 125 ulp" in got["expected"]["reason"]


def test_config_without_within_covers_every_failure_in_that_configuration(tmp_path):
    exp = Expectations.load([_expectations(tmp_path, """\
        entries:
          - config: {precision: bf16, INFERENCE_PRECISION_HINT: "bf*"}
            kind: reduced-precision
            reason: any failure in bf16
        """)])
    rec = _bf16_record(declared="fail")
    assert classify(Record.from_dict(rec), exp)["gate"] == "new"  # the record lacks the hint the entry asks for
    rec["effective"]["INFERENCE_PRECISION_HINT"] = "bf16"
    assert classify(Record.from_dict(rec), exp)["gate"] == "expected"


@pytest.mark.parametrize("body, message", [
    ("- config: bf16\n  kind: reduced-precision\n  reason: r\n", "config is a mapping"),
    ("- config: {precision: []}\n  kind: reduced-precision\n  reason: r\n", "a value or a list of values"),
    ("- config: {precision: bf16}\n  within: spec\n  kind: reduced-precision\n  reason: r\n",
     "within 'spec' is not one of declared"),
    ("- config: {precision: bf16}\n  tolerance: {abs: 1, source: s}\n  reason: r\n",
     "cannot depend on the configuration"),
])
def test_a_malformed_config_entry_is_an_error_with_its_line(tmp_path, body, message):
    path = tmp_path / "bad.yaml"
    path.write_text("entries:\n" + body)
    with pytest.raises(ExpectationsError, match=message) as info:
        Expectations.load([path])
    assert f"{path}:2" in str(info.value)


def test_every_shipped_entry_names_its_upstream_issue_or_says_none_was_found():
    """issue 16: expectations link to upstream issues where one exists, and say so where none does."""
    import re
    from pathlib import Path

    import yaml

    from conformance.gate.schema import UPSTREAM_PATTERN
    folder = Path(__file__).parents[2] / "expectations"
    missing, source_links = [], []
    for path in sorted(folder.glob("*.yaml")):
        for i, entry in enumerate(yaml.safe_load(path.read_text())["entries"]):
            upstream = entry.get("upstream", "")
            if not re.match(UPSTREAM_PATTERN, upstream):
                missing.append(f"{path.name} entry {i}: {upstream!r}")
            elif upstream.startswith("https://") and "/tree/" in entry.get("link", ""):
                source_links.append(f"{path.name} entry {i}")
    assert not missing and not source_links, (missing, source_links)
    links = {e.link for e in Expectations.load([folder]).entries}
    assert "https://github.com/openvinotoolkit/openvino/issues/37820" in links   # layout=1, the issue's example


@pytest.mark.parametrize("upstream", ["see the tracker", "none found", "none found (searched last week)",
                                      "https://github.com/onnx/onnx/tree/main/onnx/reference/ops"])
def test_an_upstream_that_is_neither_an_issue_nor_a_dated_none_is_an_error_with_its_line(tmp_path, upstream):
    path = tmp_path / "bad.yaml"
    path.write_text(f'entries:\n- features: [clip]\n  kind: known-bug\n  reason: r\n  upstream: "{upstream}"\n')
    with pytest.raises(ExpectationsError, match="upstream") as info:
        Expectations.load([path])
    assert f"{path}:" in str(info.value)
    path.write_text("entries:\n- features: [clip]\n  kind: known-bug\n  reason: r\n"
                    "  upstream: https://github.com/onnx/onnx/issues/1 (a note)\n")
    (entry,) = Expectations.load([path]).entries
    assert entry.link == "https://github.com/onnx/onnx/issues/1"   # the report's link, where no link is given


def test_an_entry_for_another_defect_gives_way_to_the_declaration_the_cause_names(tmp_path):
    """A bf16 pair within its declaration whose cluster's cause is the configuration: an entry that matches it
    by its features (float64 computed in float32) but does not name that cause gives way to the declaration,
    so it excuses nothing it does not explain; where the entry names the cause, it stays."""
    exp = Expectations.load([_expectations(tmp_path, """\
        entries:
          - features: [B]
            kind: known-bug
            reason: another defect
            upstream: none found (searched 2026-11-28)
        """)])
    record = Record.from_dict(_bf16_record())
    assert classify(record, exp)["expected"]["kind"] == "known-bug"          # no cause yet: the entry
    got = classify(record, exp, cause=frozenset({"configuration"}))
    assert got["gate"] == "expected" and got["expected"]["kind"] == "declared"
    assert classify(record, exp, cause=frozenset({"B"}))["expected"]["kind"] == "known-bug"
