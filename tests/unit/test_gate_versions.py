"""Expectations entries that know runtime versions (`versions`, a PEP 440 specifier set): which
records they cover, a file's top-level `versions`, malformed specifiers with file:line, and the
CLI's exit status 2 for one.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_gate_versions.py."""

import textwrap

import pytest

from conformance.gate import Expectations, ExpectationsError, classify, version_of_target
from conformance.results import Record


def _load(tmp_path, body: str, name: str = "expect.yaml") -> Expectations:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return Expectations.load([path])


def _record(version, verdict: str = "fail", case: str = "gru/small[direction=forward]", **extra) -> dict:
    record = {"case": case, "target": f"onnxruntime-{version or '0'}/CPU@onnx-14", "runtime": "onnxruntime",
              "verdict": verdict, "features": []}
    if version is not None:
        record["runtime_version"] = version
    return dict(record, **extra)


RANGE = """\
    targets: "onnxruntime-*"
    entries:
      - cases: "gru/*"
        versions: ">=1.20,<1.29"
        kind: known-bug
        reason: fixed in 1.29
    """


def test_an_entry_with_versions_covers_records_in_range_only(tmp_path):
    exp = _load(tmp_path, RANGE)
    (entry,) = exp.entries
    assert entry.versions == ">=1.20,<1.29"
    assert exp.match(Record.from_dict(_record("1.24.3"))) is entry
    assert exp.match(Record.from_dict(_record("1.32.0"))) is None
    assert exp.match(Record.from_dict(_record("1.18.0"))) is None
    # the rest of the entry still has to match
    assert exp.match(Record.from_dict(_record("1.24.3", case="lstm/small"))) is None


def test_boundaries_are_exact(tmp_path):
    exp = _load(tmp_path, RANGE)
    covered = {v: exp.match(Record.from_dict(_record(v))) is not None
               for v in ("1.19.9", "1.20", "1.20.0", "1.20.0.post1", "1.28.99", "1.29", "1.29.0", "1.29.0.post1")}
    assert covered == {"1.19.9": False, "1.20": True, "1.20.0": True, "1.20.0.post1": True, "1.28.99": True,
                       "1.29": False, "1.29.0": False, "1.29.0.post1": False}


def test_prereleases_are_matched(tmp_path):
    exp = _load(tmp_path, """\
        entries:
          - cases: "*"
            versions: ">=2023.3,<2024.1"
            kind: known-bug
            reason: r
          - cases: "lstm/*"
            versions: "<1.29"
            kind: known-bug
            reason: r
        """)
    first, second = exp.entries
    assert exp.match(Record.from_dict(_record("2024.0.0rc1"))) is first
    assert first.applies_to_version("2024.1.0rc1") is False   # a pre-release of 2024.1 is above 2024.0
    assert first.applies_to_version("2023.3.0.dev2") is False  # below 2023.3
    # PEP 440: `<V` excludes V's own pre-releases, even with pre-releases allowed
    assert second.applies_to_version("1.29.0rc1") is False
    assert second.applies_to_version("1.28.0rc1") is True


def test_records_without_a_usable_version_are_covered_only_by_entries_without_versions(tmp_path):
    exp = _load(tmp_path, """\
        entries:
          - cases: "gru/*"
            versions: ">=1.0"
            kind: known-bug
            reason: with versions
          - cases: "gru/*"
            kind: known-bug
            reason: without versions
        """)
    with_versions, without = exp.entries
    assert exp.match(Record.from_dict(_record("1.5.0"))) is with_versions
    assert exp.match(Record.from_dict(_record(None))) is without
    assert exp.match(Record.from_dict(_record(""))) is without
    assert exp.match(Record.from_dict(_record("not a version"))) is without
    assert exp.match(Record.from_dict(_record("1.5.0", runtime_version=["1.5.0"]))) is without   # not a string
    assert with_versions.applies_to_version(None) is False
    assert without.applies_to_version(None) is True
    assert without.applies_to_version("garbage") is True


def test_top_level_versions_are_inherited_and_overridden(tmp_path):
    exp = _load(tmp_path, """\
        targets: "onnxruntime-*"
        versions: ">=1.20"
        entries:
          - cases: "gru/*"
            kind: known-bug
            reason: inherits the file's versions
          - cases: "lstm/*"
            versions: "==1.18.*"
            kind: known-bug
            reason: its own versions
        """)
    inherits, own = exp.entries
    assert inherits.versions == ">=1.20" and own.versions == "==1.18.*"
    assert exp.match(Record.from_dict(_record("1.32.0"))) is inherits
    assert exp.match(Record.from_dict(_record("1.19.0"))) is None
    assert exp.match(Record.from_dict(_record("1.18.2", case="lstm/x"))) is own
    assert exp.match(Record.from_dict(_record("1.32.0", case="lstm/x"))) is None   # the file's >=1.20: not to it
    # a second file without top-level versions is not affected by the first's
    other = _load(tmp_path, """\
        entries:
          - cases: "gru/*"
            kind: known-bug
            reason: no versions
        """, name="other.yaml")
    assert other.entries[0].versions == "" and other.match(Record.from_dict(_record("1.0.0"))) is other.entries[0]


@pytest.mark.parametrize(("versions", "line"), [(">=1.20,<<1.29", 4), ("1.20", 4), ("banana", 4), ("", 4)])
def test_a_malformed_entry_specifier_is_an_error_with_file_and_line(tmp_path, versions, line):
    path = tmp_path / "bad-versions.yaml"
    path.write_text(textwrap.dedent(f"""\
        targets: "*"
        entries:
          - cases: "gru/*"
            versions: "{versions}"
            kind: known-bug
            reason: r
        """))
    with pytest.raises(ExpectationsError) as info:
        Expectations.load([path])
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: versions ")
    assert "PEP 440" in message


def test_a_malformed_top_level_specifier_and_a_non_string_are_errors_with_file_and_line(tmp_path):
    path = tmp_path / "top.yaml"
    path.write_text('targets: "*"\nversions: "~=1"\nentries:\n  - cases: "*"\n    kind: known-bug\n    reason: r\n')
    with pytest.raises(ExpectationsError, match=r"top\.yaml:2: versions '~=1' is not a PEP 440"):
        Expectations.load([path])
    path.write_text('entries:\n  - cases: "*"\n    versions: 1.20\n    kind: known-bug\n    reason: r\n')
    with pytest.raises(ExpectationsError) as info:
        Expectations.load([path])
    assert str(info.value).startswith(f"{path}:3:") and "versions" in str(info.value)


def test_to_json_names_the_versions_when_set(tmp_path):
    exp = _load(tmp_path, """\
        versions: ">=1.20"
        entries:
          - cases: "gru/*"
            kind: known-bug
            reason: r
        """)
    assert exp.entries[0].to_json()["versions"] == ">=1.20"
    assert classify(Record.from_dict(_record("1.25.0")), exp)["expected"]["versions"] == ">=1.20"
    plain = _load(tmp_path, 'entries:\n  - cases: "*"\n    kind: known-bug\n    reason: r\n', name="plain.yaml")
    assert "versions" not in plain.entries[0].to_json()


def test_classify_gates_by_version(tmp_path):
    exp = _load(tmp_path, RANGE)
    assert classify(Record.from_dict(_record("1.25.0")), exp)["gate"] == "expected"
    assert classify(Record.from_dict(_record("1.29.0")), exp)["gate"] == "new"
    assert classify(Record.from_dict(_record("1.25.0", verdict="pass")), exp)["gate"] == "fixed"
    assert classify(Record.from_dict(_record("1.29.0", verdict="pass")), exp)["gate"] == "ok"


def test_target_versions_for_tolerances_and_unused_entries(tmp_path):
    assert version_of_target("onnxruntime-1.32.0/CPU@onnx-14") == "1.32.0"
    assert version_of_target("onnx-reference-1.17.0/CPU@onnx-7") == "1.17.0"
    assert version_of_target("openvino-2024.0.0-rc1/CPU/precision=pinned@onnx-14") == "2024.0.0-rc1"
    assert version_of_target("wrong-gru-gate-order/CPU@onnx-14") == ""
    exp = _load(tmp_path, """\
        targets: "onnxruntime-*"
        entries:
          - cases: "gru/*"
            versions: "<1.29"
            tolerance: {abs: 1.0e-3, rel: 0, source: "vendor policy"}
            reason: r
          - cases: "lstm/*"
            versions: "<1.29"
            kind: known-bug
            reason: r
        """)
    assert exp.tolerance_for("gru/x", "onnxruntime-1.28.0/CPU@onnx-14")["abs"] == 1.0e-3
    assert exp.tolerance_for("gru/x", "onnxruntime-1.32.0/CPU@onnx-14") is None
    assert exp.tolerance_for("gru/x", "onnxruntime-1.32.0/CPU@onnx-14", runtime_version="1.2") is not None
    # an entry for versions that did not run has nothing to cover, and does not warn
    assert exp.unused({"onnxruntime-1.32.0/CPU@onnx-14"}) == []
    assert exp.unused({"onnxruntime-1.28.0/CPU@onnx-14"}) == [exp.entries[1]]


