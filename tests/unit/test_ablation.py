"""Divergence clusters.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_ablation.py."""


from conformance.results import records_of
from tests.calibration import budget as budget_s
from tests.conftest import ROOT


def test_the_configuration_axis_reads_the_pinned_verdicts_the_run_already_has(tmp_path, monkeypatch):
    """A group within its declared bf16 is explained by re-running its first case pinned, unless the
    run itself ran that case on the pinned sibling: then its record is read, and nothing runs."""
    from conformance.case import load_paths
    from conformance.run import ablation_axes
    from conformance.runtimes.base import RuntimeRef, Target

    cases, _ = load_paths([ROOT / "cases" / "gru" / "basic.yaml"])
    case = next(c for c in cases if c.valid)
    ref = RuntimeRef("tests.doubles.precision:DeclaredBf16")
    default = Target("double", "1", "CPU", "default", "onnx-14", ref, precision="bf16")
    pinned = Target("double", "1", "CPU", "precision=pinned", "onnx-14", ref)
    records = records_of([
        {"case": case.id, "target": default.id, "verdict": "fail",
         "declared": {"verdict": "pass", "precision": "bf16"}},
        {"case": case.id, "target": pinned.id, "verdict": "pass"}])
    ran = []
    monkeypatch.setattr(ablation_axes, "_run", lambda variants, *a, **k: ran.append(variants) or {})
    key = (default.id, "fail", case.id, "pass")
    explained: list = []
    spent = ablation_axes._ablate_configuration([(key, [case.id])], default, [default, pinned], {case.id: case},
                                                records, None, tmp_path, budget_s(10.0), explained, budget=10)
    assert spent == 0 and not ran
    assert explained[0][2].endswith("and passes with the precision pinned"), explained
    # without the pinned record, the case is run on the sibling
    spent = ablation_axes._ablate_configuration([(key, [case.id])], default, [default, pinned], {case.id: case},
                                                records[:1], None, tmp_path, budget_s(10.0), [], budget=10)
    assert spent == 1 and [v.id for v in ran[0]] == [case.id]
