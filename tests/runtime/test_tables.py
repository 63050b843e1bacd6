"""Each vocabulary lives in one table; these tests fail when a table and one of its readers disagree.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/corpus/test_tables.py, tests/unit/test_tables.py."""

from __future__ import annotations

from conformance.case.load import load_paths


def test_a_family_that_does_not_know_an_attribute_calls_it_not_expressible(monkeypatch):
    """A new attribute known only to ONNX's translator (docs/extending.md) is not-expressible in
    every other family, with the reason; ONNX writes it onto the node."""
    import dataclasses

    from conformance.case import vocabulary
    from conformance.specs import SPECS, NotExpressible, translate
    from tests.conftest import ROOT as root
    cases, _ = load_paths([root / "cases" / "lstm" / "basic.yaml"])
    case = next(c for c in cases if c.valid)
    row = vocabulary.Attribute("zoneout", {"type": "number"}, ops=("LSTM",), families=("onnx",))
    monkeypatch.setitem(vocabulary.ATTRIBUTE, "zoneout", row)
    zoned = dataclasses.replace(case, attributes={**case.attributes, "zoneout": 0.25})
    for name, spec in SPECS.items():
        got = translate(spec, zoned)
        if spec.family == "onnx":
            assert not isinstance(got, NotExpressible), name
            assert b"zoneout" in got.model
        else:
            assert isinstance(got, NotExpressible) and "'zoneout'" in got.reason, name
    assert not any(isinstance(translate(s, case), NotExpressible) and "zoneout" in translate(s, case).reason
                   for s in SPECS.values())
