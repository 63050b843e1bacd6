"""How the fuzzer counts divergences.

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/runtime/test_fuzz_dedup.py, tests/unit/test_fuzz_dedup.py."""

from __future__ import annotations

from conformance.case import load_paths
from conformance.case.constraints import broken_constraints
from conformance.case.features import features
from tests.conftest import ROOT
from tests.unit.test_fuzz_dedup import _case


def test_every_corpus_case_names_exactly_the_constraints_it_breaks():
    cases, errors = load_paths([ROOT / "cases"])
    assert not errors and len(cases) > 800
    for case in cases:
        broken = broken_constraints(case)
        tokens = features(case)
        if case.valid:
            assert broken == [] and not any(t.startswith("violates=") for t in tokens), case.id
        else:
            assert broken, f"{case.id}: breaks {case.violates!r} but the checker names nothing"
            assert {f"violates={b}" for b in broken} <= tokens
    foreign = _case("invalid/gru/foreign_attribute.yaml", "")
    assert "attribute:input_forget" in broken_constraints(foreign)
    assert broken_constraints(_case("invalid/rnn/layout.yaml", "")) == ["layout"]
