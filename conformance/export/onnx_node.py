"""ONNX node tests: one folder per case and ONNX version, in the layout ONNX's backend test runner
(``onnx.backend.test``) and onnxruntime's ``onnx_test_runner`` read.

::

    test_<case>_<spec>/
      model.onnx                   the program the suite runs (conformance/specs/onnx.py)
      test_data_set_0/input_*.pb   the graph inputs, in the graph's order (TensorProto)
      test_data_set_0/output_*.pb  the oracle's exact outputs rounded to the case's dtype
      data.json                    {"rtol", "atol"}: the one tolerance ONNX's runner takes per test
      tolerance.json               the allowed error per element (or its summary), how it was derived,
                                   and what the spec leaves unspecified

ONNX's runner compares every element with one ``rtol``/``atol`` per test (``data.json``, read by
``onnx.backend.test.loader.load_model_tests``). ``atol`` is the largest allowed error of the test's
elements (``rtol`` 0), so a result the suite passes passes there too; the per-element bound in
``tolerance.json`` is the sharper judgement.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

#: an output's allowed errors are listed element by element up to this many elements; beyond, a summary
ELEMENTWISE_LIMIT = 4096


def _tensor(array: np.ndarray, name: str):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.ascontiguousarray(array), name)


def graph_inputs(model_bytes: bytes) -> list[str]:
    """The model's graph inputs that are fed (not initializers), in order."""
    import onnx
    model = onnx.load_from_string(model_bytes)
    constants = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in constants]


def write_test_data(folder: Path, model_bytes: bytes, feeds: dict, expected: list[tuple[str, np.ndarray]]) -> list[str]:
    """``folder/test_data_set_0/input_*.pb`` and ``output_*.pb``; the files written."""
    data = Path(folder) / "test_data_set_0"
    data.mkdir(parents=True, exist_ok=True)
    written = []
    for i, name in enumerate(graph_inputs(model_bytes)):
        (data / f"input_{i}.pb").write_bytes(_tensor(feeds[name], name).SerializeToString())
        written.append(f"test_data_set_0/input_{i}.pb")
    for i, (name, array) in enumerate(expected):
        (data / f"output_{i}.pb").write_bytes(_tensor(array, name).SerializeToString())
        written.append(f"test_data_set_0/output_{i}.pb")
    return written


def tolerance_document(vectors, program, dtype: str) -> dict:
    """What tolerance.json holds: per output the allowed error against output_i.pb (element-wise, or
    summarized), how the bound was derived, and what the spec leaves unspecified."""
    from conformance.export.vectors import program_layout
    outputs, widest = [], 0.0
    for i, (name, canonical) in enumerate(program.outputs):
        out = vectors.outputs[canonical]
        allowed, _ = program_layout(program, canonical, out.allowed_against_rounded(dtype))
        judged = allowed[np.isfinite(allowed)]
        entry: dict = {"name": name, "file": f"test_data_set_0/output_{i}.pb", "shape": list(allowed.shape),
                       "unspecified": int(out.unspecified.sum())}
        if judged.size:
            widest = max(widest, float(judged.max()))
            entry["summary"] = {"max": float(judged.max()), "min": float(judged.min()),
                                "median": float(np.median(judged))}
        if allowed.size <= ELEMENTWISE_LIMIT:
            entry["allowed"] = [float(a) if np.isfinite(a) else None for a in allowed.ravel()]
        outputs.append(entry)
    return {
        "schema": "rnn-conformance/tolerance/1",
        "case": vectors.case.id, "spec": program.spec, "dtype": dtype, "reading": vectors.reading,
        "readings": vectors.readings,
        "compare": (f"element by element: |got - expected| <= allowed, expected being output_i.pb (the oracle's "
                    f"exact value rounded to {dtype}); allowed (C order, null where unspecified) is the suite's "
                    f"derived tolerance plus the rounding of expected"),
        "derivation": vectors.tolerance.get("source", ""),
        "tolerance": vectors.tolerance,
        "outputs": outputs,
        "runner": {"rtol": 0.0, "atol": widest,
                   "note": "data.json: the one tolerance per test ONNX's backend runner takes; every element's allowed "
                           "error is at most atol, so what the suite passes passes there, and a result wrong by "
                           "less than atol passes there but not here"},
        "unspecified": {"reasons": vectors.unspecified,
                        "note": "elements the spec leaves undefined are not judged (null in allowed)"},
    }


def write_node_test(folder: Path, model_bytes: bytes, feeds: dict, program, vectors, dtype: str) -> list[str]:
    """One node test in ``folder`` (created): model.onnx, test data, data.json and tolerance.json."""
    from conformance.export.vectors import program_layout
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(model_bytes)
    expected = [(name, program_layout(program, canonical, vectors.outputs[canonical].rounded(dtype))[0])
                for name, canonical in program.outputs]
    written = ["model.onnx"] + write_test_data(folder, model_bytes, feeds, expected)
    document = tolerance_document(vectors, program, dtype)
    (folder / "tolerance.json").write_text(json.dumps(document, indent=1) + "\n")
    (folder / "data.json").write_text(json.dumps({"rtol": 0.0, "atol": document["runner"]["atol"]}) + "\n")
    return written + ["tolerance.json", "data.json"]
