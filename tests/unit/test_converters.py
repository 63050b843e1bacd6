"""Converters as a stage of a target (docs/converters.md).

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_converters.py."""

from __future__ import annotations

from conformance.results import Record, records_of
from tests.conftest import ROOT


def test_every_shipped_converter_finding_names_a_script_that_exists():
    """Each entry of expectations/converters.yaml that names a standalone script (docs/repro/) names one
    that is there, and each of the findings table's scripts in docs/converters.md is there."""
    import re
    text = (ROOT / "expectations" / "converters.yaml").read_text() + (ROOT / "docs" / "converters.md").read_text()
    named = set(re.findall(r"docs/repro/(\w+\.py)", text)) | set(re.findall(r"`(\w+\.py)`", text))
    assert len(named) >= 8
    assert all((ROOT / "docs" / "repro" / name).is_file() for name in named), \
        sorted(n for n in named if not (ROOT / "docs" / "repro" / n).is_file())


def test_a_converter_targets_id_parses_as_every_reader_reads_ids():
    from conformance.gate import version_of_target
    from conformance.gate.baseline import target_key
    from conformance.runtimes.base import RuntimeRef, Target
    t = Target("onnxruntime", "1.32.0", "CPU", "shape=dynamic", "torch", RuntimeRef("x:y"), format="torch",
               family="torch.onnx-dynamo", converter="torch.onnx-dynamo-2.13.0(opset=18)")
    assert t.id == "torch.onnx-dynamo-2.13.0(opset=18) → onnxruntime-1.32.0/CPU/shape=dynamic@torch"
    assert version_of_target(t.id) == "1.32.0"
    assert target_key(t.id) == "torch.onnx-dynamo-2.13.0(opset=18) → onnxruntime/CPU/shape=dynamic@torch"
    assert t.runtime_family == "torch.onnx-dynamo" and t.form["shape"] == "dynamic"
    plain = Target("onnxruntime", "1.32.0", "CPU", "default", "onnx-14", RuntimeRef("x:y"))
    assert "→" not in plain.id and plain != t


def test_expectations_name_a_converter_and_its_version(tmp_path):
    from conformance.gate import Expectations
    path = tmp_path / "e.yaml"
    path.write_text('targets: "* → onnxruntime-*"\nentries:\n  - features: [proj_size]\n'
                    '    config: {converter: torch.onnx-dynamo, converter_version: "2.13.*"}\n'
                    '    kind: known-bug\n    reason: writes an invalid LSTM for a projection\n'
                    '    upstream: none found (searched 2026-11-27)\n')
    exp = Expectations.load([path])
    record = {"case": "torch/x", "target": "torch.onnx-dynamo-2.13.0(opset=18) → onnxruntime-1.32.0/CPU@torch",
              "verdict": "rejected", "features": ["proj_size"], "runtime_version": "1.32.0",
              "effective": {"converter": "torch.onnx-dynamo", "converter_version": "2.13.0", "stage": "checker"}}
    assert exp.match(Record.from_dict(record)) is not None
    assert exp.match(Record.from_dict(
        dict(record, effective=dict(record["effective"], converter_version="2.14.0")))) is None
    assert exp.match(Record.from_dict(
        dict(record, effective=dict(record["effective"], converter="torch.onnx-torchscript")))) is None


def test_the_converters_table_counts_each_outcome():
    from conformance.report import converters, engines_matrix
    base = {"expect": "valid", "op": "LSTM", "converter": "c-1.0", "runtime": "onnxruntime", "runtime_version": "1.0",
            "config": "default", "spec_family": "torch", "target": "c-1.0 → onnxruntime-1.0/CPU@torch"}
    records = [dict(base, case=f"k{i}", verdict=v, features=f, effective={"stage": s})
               for i, (v, s, f) in enumerate([("pass", "", []), ("rejected", "converter", ["proj_size"]),
                                              ("rejected", "checker", ["proj_size"]), ("fail", "", ["num_layers=2"]),
                                              ("not-expressible", "", [])])]
    table = converters.build(records_of(records))
    assert table["columns"] == ["c-1.0 → onnxruntime-1.0"]
    rows = dict(table["rows"])
    assert rows["every valid case"]["c-1.0 → onnxruntime-1.0"] == {"pass": 1, "refused": 1, "invalid": 1, "wrong": 1}
    assert rows["proj_size"]["c-1.0 → onnxruntime-1.0"] == {"refused": 1, "invalid": 1}
    md = "\n".join(engines_matrix.to_markdown(engines_matrix.build(records_of(records))))
    assert "Converters × features" in md and "1 pass · 1 ref · 1 inv · 1 wrong" in md
    html = engines_matrix.to_html(engines_matrix.build(records_of(records)))
    assert "through a converter" not in html  # no plain column: no group header needed
    assert "c-1.0 → onnxruntime 1.0" in html


def test_the_fuzzer_draws_the_frameworks_axes_and_a_converter():
    """Where the campaign has a torch target and converter targets, drawn cases carry a stack, a
    projection, dropout or unbatched input (each a valid case the torch translator writes and the oracle
    evaluates), and a converter; the examiner runs a converter target only on the cases drawn with its
    converter."""
    import dataclasses

    from hypothesis import HealthCheck, given, settings

    import oracles
    from conformance.fuzz.examiner import runs_in
    from conformance.fuzz.scope import CONVERTERS, Limits, Scope
    from conformance.fuzz.strategies import valid_cases
    from conformance.runtimes.base import RuntimeRef, Target
    from conformance.specs import SPECS, NotExpressible
    seen: dict = {"num_layers": 0, "proj_size": 0, "dropout": 0, "unbatched": 0, "converter": set()}
    target = Target("onnxruntime", "1.32.0", "CPU", "default", "torch", RuntimeRef("x:y"), family="torch.onnx-dynamo",
                    converter="torch.onnx-dynamo-2.13.0(opset=18)")
    eager = Target("torch", "2.13.0", "CPU", "default", "torch", RuntimeRef("x:y"))
    # batches of 1 or 2, so that unbatched input (batch_size 1) is drawn often enough to be seen; derandomized,
    # so the draws are the same whatever ran before in the process (150 random draws once saw no dropout)
    scope = Scope(ops=("LSTM",), dtypes=("float32",), limits=Limits(max_batch_size=2)).for_targets([eager, target])
    assert scope.framework and scope.converters == ("torch.onnx-dynamo",)

    @settings(max_examples=300, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(valid_cases(dataclasses.replace(scope, converters=CONVERTERS)))
    def draw(case):
        for key in ("num_layers", "proj_size", "dropout", "unbatched"):
            seen[key] += key in case.attributes
        seen["converter"].add(case.params.get("converter"))
        if {"num_layers", "proj_size"} & set(case.attributes):
            prog = SPECS["torch"].translate(case)
            if not isinstance(prog, NotExpressible):
                attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
                oracles.evaluate(case.op, attrs, case.tensors, profile="torch", cache=False)

    draw()
    assert all(seen[k] for k in ("num_layers", "proj_size", "dropout", "unbatched")), seen
    assert {"none", "torch.onnx-dynamo", "onnxsim"} <= seen["converter"]
    case = dataclasses.replace(load_case(), params={"converter": "torch.onnx-dynamo"})
    assert runs_in(target, case) and not runs_in(target, dataclasses.replace(case, params={"converter": "onnxsim"}))
    assert not runs_in(target, load_case())  # a corpus case: the plain targets only


def load_case():
    from conformance.case.load import load_paths
    cases, _ = load_paths([ROOT / "cases" / "torch" / "dropout.yaml"])
    return cases[0]
