"""DirectML's targets.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/corpus/test_directml.py, tests/unit/test_directml.py."""

from __future__ import annotations

from conformance.runtimes.directml import targets
from tests.conftest import runtime


def test_targets_offer_the_interpreter_and_report_the_directml_provider_gap():
    found, gaps = targets({"directml": ["directml-fl1_0"]})
    interpreter = [t for t in found if t.runtime == "directml-interpreter"]
    assert len(interpreter) == 1 and interpreter[0].format == "directml" and interpreter[0].device == "CPU"
    assert "not DirectML hardware" in interpreter[0].description
    assert interpreter[0].id.endswith("/CPU@directml-fl1_0")
    onnxruntime = runtime("onnxruntime")
    if "DmlExecutionProvider" not in onnxruntime.get_available_providers():
        assert [g[0] for g in gaps] == ["onnxruntime-dml"]
        assert "DirectML execution provider not present: Windows-only" in gaps[0][1]
    assert targets({"onnx": ["onnx-14"]}) == ([], [])
