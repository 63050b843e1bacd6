"""The ONNX translator.

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/unit/test_onnx_translation.py."""


import onnx
import pytest

from conformance.case import load_paths
from conformance.specs import SPECS, NotExpressible
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def corpus():
    cases, errors = load_paths([ROOT / "cases"])
    assert not errors
    return cases


@pytest.mark.parametrize("spec", ["onnx-7", "onnx-14", "onnx-22"])
def test_every_valid_case_passes_the_checker(corpus, spec):
    checked = 0
    for case in corpus:
        prog = SPECS[spec].translate(case)
        if isinstance(prog, NotExpressible):
            assert prog.reason
            continue
        model = onnx.load_from_string(prog.model)
        assert model.opset_import[0].version == int(spec.split("-")[1])
        if case.valid:
            onnx.checker.check_model(model, full_check=True)
            assert not any("checker" in n for n in prog.notes), (case.id, prog.notes)
            checked += 1
    assert checked > 100


