"""The effective configuration.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_effective.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import oracles
from conformance.run.probe import FRACTION_BITS, decode, probe_case
from conformance.runtimes.effective import BY_NAME, PRECISIONS, config_label, narrower, parse


def _random_lstm(seed, with_p=True):
    rng = np.random.default_rng(seed)
    h, i, s, b = 3, 4, 5, 2
    t = {"X": rng.uniform(-1, 1, (s, b, i)), "W": rng.uniform(-0.5, 0.5, (1, 4 * h, i)),
         "R": rng.uniform(-0.5, 0.5, (1, 4 * h, h)), "B": rng.uniform(-0.5, 0.5, (1, 8 * h)),
         "initial_h": rng.uniform(-1, 1, (1, b, h)), "initial_c": rng.uniform(-1, 1, (1, b, h))}
    if with_p:
        t["P"] = rng.uniform(-0.5, 0.5, (1, 3 * h))
    return {k: v.astype(np.float32) for k, v in t.items()}, {"hidden_size": h}


@pytest.mark.parametrize("text, name", [
    ("bf16", "bf16"), ("<Type: 'bfloat16'>", "bf16"), ("BF16", "bf16"), ("bfloat16", "bf16"),
    ("f32", "f32"), ("FP32", "f32"), ("float32", "f32"), ("<Type: 'float32'>", "f32"),
    ("f16", "f16"), ("fp16", "f16"), ("half", "f16"), ("tf32", "tf32"), ("high", "tf32"),
    ("highest", "f32"), ("f64", "f64"), ("double64", "f64")])
def test_runtime_spellings_of_a_precision_parse_to_one_name(text, name):
    assert parse(text).name == name


@pytest.mark.parametrize("text", ["", "i8", "dynamic", None, "bfloat17"])
def test_what_names_no_precision_is_none(text):
    assert parse(text) is None


def test_narrower_compares_significands_against_the_models_type():
    assert narrower(BY_NAME["bf16"], "float32") and narrower(BY_NAME["f16"], "float32")
    assert narrower(BY_NAME["bf16"], "float16") and narrower(BY_NAME["f32"], "float64")
    assert not narrower(BY_NAME["f32"], "float32") and not narrower(BY_NAME["f16"], "float16")
    assert not narrower(None, "float32")


@pytest.mark.parametrize("config, precision, label", [
    ("default", "bf16", "precision=default→bf16"), ("default", "f32", "default"), ("default", "", "default"),
    ("precision=pinned", "f32", "precision=pinned"), ("precision=pinned", "f16", "precision=pinned→f16"),
    ("fast", "tf32", "fast/precision→tf32")])
def test_the_id_names_a_precision_other_than_float32s(config, precision, label):
    assert config_label(config, precision) == label


def _simulate(activation: str, rounds_to, *, flush=False, truncate=False) -> np.ndarray:
    """What an implementation computing the probe in ``rounds_to`` returns (Y_h, per batch entry)."""
    case = probe_case(activation)
    x, w = case.tensors["X"][0].astype(np.float64), case.tensors["W"][0, 0].astype(np.float64)

    def rnd(v):
        v = np.asarray(v, dtype=np.float64)
        if truncate and rounds_to == ml_dtypes.bfloat16:  # drop the low 16 bits of the float32
            bits = v.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
            return bits.view(np.float32).astype(np.float64)
        with np.errstate(over="ignore"):
            return np.asarray(v).astype(rounds_to).astype(np.float64)
    if flush:
        x = np.where(np.abs(x) < 2.0 ** -126, 0.0, x)
    y = rnd(rnd(x) @ rnd(w))
    if flush:
        y = np.where(np.abs(y) < 2.0 ** -126, 0.0, y)
    return np.tanh(y) if activation == "Tanh" else np.maximum(y, 0.0)


@pytest.mark.parametrize("activation", ["Relu", "Tanh"])
@pytest.mark.parametrize("dtype, name, bits", [(np.float32, "f32", 24), (ml_dtypes.bfloat16, "bf16", 8),
                                               (np.float16, "f16", 11)])
def test_the_probe_reads_the_significand_from_the_outputs(activation, dtype, name, bits):
    got = decode(_simulate(activation, dtype), activation)
    if activation == "Tanh" and name == "f16":  # the 2^-30 entries vanish: the range tells, not the bits
        bits = None
    assert (got["precision"], got["bits"]) == (name, bits)
    assert got["rounding"] == "nearest"


def test_the_probe_tells_tf32_from_float16_by_the_range():
    tf32 = _simulate("Relu", np.float16)  # float16's significand ...
    case = probe_case("Relu")
    n = len(FRACTION_BITS)
    x = case.tensors["X"][0].astype(np.float64)
    tf32[n] = x[n, 0] * 2.0 ** 10  # ... with float32's range: 2^20 stays
    assert decode(tf32)["precision"] == "tf32"
    assert decode(_simulate("Relu", np.float16))["float16_range"]


def test_the_probe_sees_flushed_subnormals_and_truncation():
    flushed = decode(_simulate("Relu", np.float32, flush=True))
    assert flushed["flushes_subnormals"] and flushed["denormals_are_zero"] and flushed["precision"] == "f32"
    kept = decode(_simulate("Relu", np.float32))
    assert not kept["flushes_subnormals"] and not kept["denormals_are_zero"]
    truncating = decode(_simulate("Relu", ml_dtypes.bfloat16, truncate=True))
    assert truncating["precision"] == "bf16" and truncating["rounding"] == "faithful"


def test_a_garbled_probe_answer_is_an_error_not_a_measurement():
    with pytest.raises(ValueError, match="should return"):
        decode(np.zeros(3))


def test_computed_in_the_models_own_type_is_the_ordinary_bound():
    tensors, attrs = _random_lstm(0)
    res = oracles.evaluate("LSTM", attrs, tensors, cache=False)
    bounds, model = oracles.computed_in("LSTM", attrs, tensors, "onnx", res.readings[0].choices, "float32")
    for name, exp in res.readings[0].outputs.items():
        np.testing.assert_array_equal(bounds[name], exp.bound)
    assert "inputs" not in model


def test_a_narrower_arithmetic_charges_the_rounded_inputs_and_its_own_unit_roundoff():
    tensors, attrs = _random_lstm(1)
    f32, _ = oracles.computed_in("LSTM", attrs, tensors, "onnx", {}, "float32")
    bf16, model = oracles.computed_in("LSTM", attrs, tensors, "onnx", {}, "bfloat16", "float32")
    worst, _ = oracles.computed_in("LSTM", attrs, tensors, "onnx", {}, "bfloat16")
    truncating, _ = oracles.computed_in("LSTM", attrs, tensors, "onnx", {}, "bfloat16", "float32", "faithful")
    assert model["inputs"] == "rounded to bfloat16" and model["accumulation"] == "float32"
    for name in f32:
        assert np.all(bf16[name] > 2.0 ** 8 * f32[name])      # u grows by 2^16, not by 2^8 only
        assert np.all(worst[name] >= bf16[name])                 # bf16 accumulation admits more
        assert np.all(truncating[name] > bf16[name])             # so does truncation
    with pytest.raises(oracles.OracleError, match="not admitted"):
        oracles.computed_in("LSTM", attrs, tensors, "onnx", {}, "tfloat32", "dtype")


def test_every_precision_in_the_table_has_an_arithmetic_in_the_oracle():
    from oracles.precision import ACCUMULATIONS
    assert {p.dtype for p in PRECISIONS} <= set(ACCUMULATIONS)
