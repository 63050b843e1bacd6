"""DirectML (DML_RNN/GRU/LSTM_OPERATOR_DESC, feature level 1.0).

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/runtime/test_directml.py, tests/unit/test_directml.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from conformance.case import load_paths
from conformance.case.features import features
from conformance.case.vocabulary import canonical_activation
from conformance.compare import for_case, judge_outputs
from conformance.runtimes.base import RuntimeRejected
from conformance.runtimes.directml.bridge import OnnxRuntimeDirectML
from conformance.runtimes.directml.interpreter import DirectMLInterpreter
from conformance.specs import SPECS, NotExpressible
from conformance.specs.directml import calc_buffer_tensor_size, validate
from conformance.specs.directml import vocabulary as v
from tests.conftest import ROOT, runtime
from tests.known import ort_known_divergence
from tests.unit.test_directml import (
    SPEC,
    _folder,
    _written,
)


@pytest.fixture(scope="module")
def corpus():
    cases, errors = load_paths([ROOT / "cases"])
    assert not errors
    return cases


def test_valid_corpus_descriptors_validate_cleanly(corpus, tmp_path):
    checked = 0
    for n, case in enumerate(corpus):
        program = SPEC.translate(case)
        if isinstance(program, NotExpressible):
            assert program.reason
            continue
        SPEC.write(program, _folder(tmp_path, n))
        if case.valid:
            assert validate(program.files["model"]) == [], case.id
            checked += 1
    assert checked > 600


def test_json_round_trip_has_every_struct_field_and_buffers_of_TotalTensorSizeInBytes(corpus, tmp_path):
    for n, case in enumerate(c for c in corpus if c.valid):
        program = SPEC.translate(case)
        if isinstance(program, NotExpressible):
            continue
        SPEC.write(program, _folder(tmp_path, n))
        path = Path(program.files["model"])
        document = json.loads(path.read_text())
        op = v.OP_OF_TYPE[document["OperatorDesc"]["Type"]]
        assert op == case.op and document["FeatureLevel"] == "DML_FEATURE_LEVEL_1_0"
        desc = document["OperatorDesc"]["Desc"]
        assert list(desc) == list(v.struct_fields(op)), case.id
        assert program.feeds == {}
        for field in v.INPUT_FIELDS[op] + v.OUTPUT_FIELDS[op]:
            tensor, binding = desc[field], document["bindings"][field]
            assert (tensor is None) == (binding is None), (case.id, field)
            if tensor is None:
                continue
            buf = tensor["Desc"]
            assert tensor["Type"] == "DML_TENSOR_TYPE_BUFFER" and list(buf) == list(v.BUFFER_DESC_FIELDS)
            assert buf["Strides"] is not None and buf["DimensionCount"] == 4
            total = calc_buffer_tensor_size(buf["DataType"], buf["Sizes"], buf["Strides"])
            assert buf["TotalTensorSizeInBytes"] == total == binding["bytes"], (case.id, field)
            if binding["kind"] == "input":
                assert (path.parent / binding["file"]).stat().st_size == total, (case.id, field)


def test_layout_2_and_foreign_attributes_are_not_expressible(corpus):
    reasons = {c.id: SPEC.translate(c) for c in corpus if "layout[layout=2]" in c.id or "foreign" in c.id}
    assert reasons and all(isinstance(r, NotExpressible) for r in reasons.values())
    assert any("no layout field" in r.reason for r in reasons.values())
    assert any("CoupleInputForget" in r.reason for r in reasons.values())


def _unspecified_mask(case, name, shape):
    """Elements DirectML leaves undefined: Y past a sequence's length, states of empty sequences."""
    mask = np.ones(shape, bool)
    lengths = case.tensors.get("sequence_lens")
    if lengths is not None:
        for b, length in enumerate(lengths):
            if name == "Y":
                mask[length:, :, b] = False
            elif length == 0:
                mask[:, b] = False
    return mask


def test_every_invalid_corpus_case_is_not_expressible_or_refused(corpus, tmp_path):
    interpreter = DirectMLInterpreter()
    for n, case in enumerate(corpus):
        if case.valid:
            continue
        program = SPEC.translate(case)
        if isinstance(program, NotExpressible):
            continue
        SPEC.write(program, _folder(tmp_path, n))
        with pytest.raises(RuntimeRejected):
            interpreter.run(program.runtime_input(), program.feeds)


#: corpus files where onnxruntime departs from the ONNX operator defaults: judged against the
#: oracle below instead (ORT reads ThresholdedRelu without activation_alpha differently from the
#: ThresholdedRelu operator's alpha 1.0; ScaledTanh has no ONNX default at all)
ORT_DEFAULTS_DIFFER = "activation_defaults"


def _float32_runnable(corpus):
    for case in corpus:
        if case.valid and case.dtype == "float32":
            program = SPEC.translate(case)
            if not isinstance(program, NotExpressible):
                yield case, program


def test_interpreter_matches_onnxruntime_on_float32_corpus_cases(corpus, tmp_path):
    from conformance.runtimes.onnxruntime import OnnxRuntime
    ort, interpreter, onnx14 = OnnxRuntime(), DirectMLInterpreter(), SPECS["onnx-14"]
    compared, worst = 0, []
    for n, (case, program) in enumerate(_float32_runnable(corpus)):
        # onnxruntime refuses layout=1 (the canonical tensors are layout 0 either way) and matches
        # activation names case-sensitively (not this test's subject): both are normalized away
        attrs = {k: x for k, x in case.attributes.items() if k != "layout"}
        if "activations" in attrs:
            attrs["activations"] = [canonical_activation(a) for a in attrs["activations"]]
        normalized = dataclasses.replace(case, attributes=attrs)
        if ORT_DEFAULTS_DIFFER in case.id:
            continue
        if {"nan", "inf"} & features(case):
            continue  # IEEE leaves Relu(NaN) and the like to the formula (two correct answers): the oracle judges them
        SPEC.write(program, _folder(tmp_path, n))
        got = interpreter.run(program.runtime_input(), program.feeds)
        reference = onnx14.translate(normalized)
        expected = ort.run(reference.model, reference.feeds)
        errors = []
        for (_, name), a, b in zip(program.outputs, got, expected):
            a = program.to_canonical(name, a)
            mask = _unspecified_mask(case, name, a.shape)
            # 1e-5 relative to max(1, |y|): a few float32 roundings over these short recurrences
            with np.errstate(invalid="ignore"):
                err = np.abs(a - b) / np.maximum(1.0, np.abs(b))
            err = float(np.max(err[mask])) if mask.any() else 0.0
            if not err <= 1e-5:
                errors.append((case.id, name, err))
        if errors and ort_known_divergence(normalized):
            continue   # onnxruntime's known divergence (expectations/onnxruntime.yaml): the oracle judges it
        worst += errors
        compared += 1
    assert compared > 580 and not worst, worst


def test_interpreter_matches_the_directml_oracle(corpus, tmp_path):
    import oracles
    interpreter = DirectMLInterpreter()
    spread = [c for c in corpus if c.valid and c.dtype in ("float32", "float16")]
    verdicts, bad = {}, []
    for n, case in enumerate(spread):
        program = SPEC.translate(case)
        if isinstance(program, NotExpressible):
            continue
        SPEC.write(program, _folder(tmp_path, n))
        got = interpreter.run(program.runtime_input(), program.feeds)
        attrs = {k: x for k, x in case.attributes.items() if k != "layout"}
        result = oracles.evaluate(case.op, attrs, case.tensors, profile="directml", cache=False)
        verdict = judge_outputs(case, program, got, result, for_case(case))
        verdicts[verdict.verdict] = verdicts.get(verdict.verdict, 0) + 1
        if verdict.verdict not in ("pass", "unspecified"):
            bad.append((case.id, verdict.message))
    assert not bad, bad[:5]
    assert verdicts.get("pass", 0) > 600


def _unspecified_mask(case, name, shape):
    """Elements DirectML leaves undefined: Y past a sequence's length, states of empty sequences."""
    mask = np.ones(shape, bool)
    lengths = case.tensors.get("sequence_lens")
    if lengths is not None:
        for b, length in enumerate(lengths):
            if name == "Y":
                mask[length:, :, b] = False
            elif length == 0:
                mask[:, b] = False
    return mask


def test_sequence_lengths_past_seq_length_are_refused_at_run_time(corpus, tmp_path):
    case = next(c for c in corpus if c.id == "invalid/gru/sequence_lens[direction=forward,sequence_lens=[5,2,1]]")
    program = _written(case, tmp_path / "prog")
    assert validate(program.files["model"]) == []
    with pytest.raises(RuntimeRejected, match=r"SequenceLengthsTensor\[0\] = 5, but should be <= seq_length = 4"):
        DirectMLInterpreter().run(program.runtime_input(), {})


def test_onnxruntime_bridge_reproduces_the_interpreter_through_onnx(corpus, tmp_path):
    """The descriptor -> ONNX conversion of onnxruntime-dml, run on the CPU provider here."""
    runtime("onnxruntime")
    bridge, interpreter = OnnxRuntimeDirectML("CPUExecutionProvider"), DirectMLInterpreter()
    picked = [c for c in corpus if c.valid and c.dtype == "float32" and not {"nan", "inf"} & features(c) and any(
        key in c.id for key in ("basic", "activation_alpha_beta", "linear_before_reset", "peephole",
                                "input_forget", "lstm/clip", "layout"))]  # ORT's GRU drops NaN: not this test's subject
    compared = 0
    for n, case in enumerate(picked):
        program = SPEC.translate(case)
        if isinstance(program, NotExpressible):
            continue
        SPEC.write(program, _folder(tmp_path, n))
        for (_, name), a, b in zip(program.outputs, interpreter.run(program.runtime_input(), {}),
                                   bridge.run(program.runtime_input(), {})):
            a, b = program.to_canonical(name, a), program.to_canonical(name, b)
            mask = _unspecified_mask(case, name, a.shape)
            assert a.shape == b.shape and np.allclose(a[mask], b[mask], atol=1e-5), (case.id, name)
        compared += 1
    assert compared > 40
