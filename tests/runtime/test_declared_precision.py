"""The judgement of a target that computes in a narrower precision than its model's type (the record's
``declared``): sharp enough to catch what is wrong beyond that precision, and no false alarm for
the ways a correct reduced-precision kernel computes (docs/precision.md, "Reduced-precision
kernels"; issue 33).

The runtimes here are deliberate test doubles (tests/doubles/precision.py) that compute bf16, f16
and TF32 the way oneDNN's kernels do, so every machine tests what only some machines' runtimes do.
The corpus-wide sweeps are ``slow``; the fast loop judges a sample of the same cases.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/corpus/test_declared_precision.py, tests/unit/test_declared_precision.py."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

import oracles
import tests.doubles.precision as doubles
from conformance.case import load_paths
from conformance.compare import judge_computed_in
from conformance.run import read_results
from conformance.run.engine import oracle_for
from conformance.specs import SPECS, NotExpressible
from tests.conftest import conformance, runtime

COMPUTE = {"bf16": "bfloat16", "f16": "float16", "tf32": "tfloat32"}
#: the base kernel each wrong double deviates from (what "affected" is measured against)
BASE = {cls: next(b for b in (doubles.PairwiseF16, doubles.Tf32, doubles.Kernel) if issubclass(cls, b))
        for cls in doubles.WRONG}


CORPUS = ("cases/gru", "cases/lstm", "cases/rnn")


def _sweep(classes, every: int = 1, paths=CORPUS) -> dict:
    """{double: [(case id, declared verdict, ratio, affected)]} over the float32 cases of ``paths``
    (the corpus's RNN, GRU and LSTM; every ``every``-th), each judged against the precision the
    double declares."""
    cases, errors = load_paths([str(p) for p in paths])
    assert not errors, errors
    cases = [c for c in cases if c.valid and c.dtype == "float32"][::every]
    out: dict = {cls: [] for cls in classes}
    for case in cases:
        prog = SPECS["onnx-14"].translate(case)
        if isinstance(prog, NotExpressible):
            continue
        res = oracle_for(case.op, case.attributes, case.tensors, "onnx", 128)
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        ran: dict = {}

        def run(cls, prog=prog, ran=ran):
            if cls not in ran:
                try:
                    ran[cls] = cls().run(prog.model, prog.feeds)
                except Exception:  # noqa: BLE001 - a refusal (the doubles refuse what NumpyRNN does)
                    ran[cls] = None
            return ran[cls]

        memo: dict = {}
        for cls in classes:
            got = run(cls)
            if got is None:
                continue
            compute, acc = COMPUTE[cls.declared["precision"]], cls.declared.get("accumulation")

            def bounds(choices, compute=compute, acc=acc, case=case, attrs=attrs, memo=memo):
                key = (compute, acc, tuple(sorted(choices.items())))
                if key not in memo:
                    memo[key] = oracles.computed_in(case.op, attrs, case.tensors, "onnx", choices, compute, acc)
                return memo[key]
            base = run(BASE[cls]) if cls in BASE else None
            affected = base is None or any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(got, base))
            j = judge_computed_in(case, prog, got, res, bounds)
            out[cls].append((case.id, j.verdict, j.ratio, affected))
    return out


def _failing(rows, affected_only=True):
    return [r for r in rows if r[1] == "fail" and (r[3] or not affected_only)]


#: the sweep runs every double through every case (about 5 CPU-minutes; more on a loaded machine)
SWEEP_TIMEOUT = 3600


# -- the same on a sample, for the fast loop ------------------------------------------------------------

def test_on_a_sample_the_legitimate_kernels_pass_and_the_wrong_ones_fail():
    found = _sweep((doubles.PairwiseBf16, doubles.StateF32Bf16, doubles.DeclaredBf16, doubles.DeclaredF16,
                    doubles.TanhOff3Bf16, doubles.TanhOffHalfF16), every=15)
    for cls in (doubles.PairwiseBf16, doubles.StateF32Bf16, doubles.DeclaredBf16, doubles.DeclaredF16):
        assert found[cls] and not _failing(found[cls], affected_only=False), cls.__name__
    for cls in (doubles.TanhOff3Bf16, doubles.TanhOffHalfF16):
        affected = [r for r in found[cls] if r[3]]
        assert len(_failing(affected)) > len(affected) // 3, cls.__name__


#: one step of 64-term dot products (Relu, no recurrence worth the name): where an accumulation
#: that rounds partial sums to bf16 and one in float32 rounded once part (OpenVINO's measurement below)
DOT64 = """\
op: RNN
clause: ONNX RNN-22
description: 64-term dot products through Relu; the accumulation is what differs
attributes: {hidden_size: 32, direction: forward, activations: [Relu]}
shape: {seq_length: 2, batch_size: 16, input_size: 64}
inputs: {seed: 7, distribution: {uniform: [-1.0, 1.0]}}
"""


def test_partial_sums_rounded_to_bf16_pass_undeclared_and_fail_a_float32_accumulation_claim(tmp_path):
    """The other side of OpenVINO's measurement (test_openvinos_bf16_dot_products_...), on every
    machine: a kernel that rounds its running sum to bf16 is right for bf16 where it declares no
    accumulation (the judgement admits the narrow one) and beyond the bound where it claims float32
    accumulation, while a kernel that does accumulate in float32 passes that claim."""
    (tmp_path / "rnn").mkdir()
    (tmp_path / "rnn" / "dot64.yaml").write_text(DOT64)
    found = _sweep((doubles.PartialSumsBf16, doubles.ClaimsF32PartialSumsBf16, doubles.PairwiseBf16),
                   paths=[tmp_path / "rnn"])
    verdicts = {cls.__name__: [r[1] for r in rows] for cls, rows in found.items()}
    assert verdicts == {"PartialSumsBf16": ["pass"], "ClaimsF32PartialSumsBf16": ["fail"],
                        "PairwiseBf16": ["pass"]}, verdicts


# -- the kernel model -------------------------------------------------------------------------------------


# -- no runtime can loosen its own bound --------------------------------------------------------------


def test_a_double_that_fakes_a_narrower_probe_is_still_judged_at_bf16(tmp_path):
    out = tmp_path / "out"
    proc = conformance("run", "cases", "-k", "gru/basic or rnn/basic", "--spec", "onnx-14", "--out", out, "--fresh",
                       "-q", "--artifacts", "full", "--no-ablation",
                       "--runtime-plugin", "tests.doubles.precision:FakesProbeBf16",
                       "--runtime", doubles.FakesProbeBf16.name)
    records = read_results(out / "results.jsonl")
    assert records, proc.stdout + proc.stderr
    info = json.loads((out / "run.json").read_text())
    target = next(t for t in info["targets"] if doubles.FakesProbeBf16.name in t["id"])
    assert target["configuration"]["measured"]["bits"] == 4          # the probe was fooled ...
    assert "precision=default→bf16" in target["id"]                  # ... the target is not
    for r in records:
        assert r["effective"]["precision"] == "bf16" and r["effective"]["rounding"] == "nearest"
        assert "4-bit significand" in r["effective"]["probe"]
        assert "bfloat16 u=2^-8" in r["declared"]["tolerance"]
        assert r["declared"]["judged_by"] in ("rigorous", "statistical")  # which bound judged
        assert r["declared"]["verdict"] == "pass"
    assert Counter(r["verdict"] for r in records)["fail"] > 0        # bf16 still fails the float32 spec


# -- OpenVINO's default configuration on this machine, whatever its CPU ----------------------------------

@pytest.mark.timeout(SWEEP_TIMEOUT)
def test_openvinos_default_is_within_its_declared_precision_wherever_it_is_right_in_f32():
    """Every float32 RNN/GRU/LSTM case of the corpus on OpenVINO's ONNX frontend: where the default
    configuration computes narrower here (bf16 on AVX512-BF16/AMX, f16 on ARM), each pair the
    pinned (f32) configuration gets right is within the declared bound (no false alarm), and each
    pair beyond it is one the pinned configuration fails too (a known divergence, not a
    precision-specific one). Where the default computes in f32, its pairs are judged as float32."""
    runtime("openvino")
    from conformance.compare import for_case, judge_outputs
    from conformance.runtimes.effective import BY_NAME, narrower
    from conformance.runtimes.openvino import OpenVINOOnnxFrontend
    default, pinned = OpenVINOOnnxFrontend("CPU", "default"), OpenVINOOnnxFrontend("CPU", "precision=pinned")
    cases, _ = load_paths(["cases/gru", "cases/lstm", "cases/rnn"])
    judged = Counter()
    for case in (c for c in cases if c.valid and c.dtype == "float32"):
        prog = SPECS["onnx-14"].translate(case)
        if isinstance(prog, NotExpressible):
            continue
        try:
            got = default.run(prog.model, prog.feeds)
        except Exception:  # noqa: BLE001 - refusals are the gate's business (expectations/)
            continue
        declared = default.effective()
        compute = BY_NAME.get(declared.get("precision"))
        res = oracle_for(case.op, case.attributes, case.tensors, "onnx", 128)
        right = judge_outputs(case, prog, pinned.run(prog.model, prog.feeds), res, for_case(case)).verdict == "pass"
        if not narrower(compute, "float32"):
            judged["f32", judge_outputs(case, prog, got, res, for_case(case)).verdict, right] += 1
            continue
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        j = judge_computed_in(case, prog, got, res, lambda ch, c=case, a=attrs, p=compute, d=declared:
                              oracles.computed_in(c.op, a, c.tensors, "onnx", ch, p.dtype, d.get("accumulation")))
        judged[compute.name, j.verdict, right] += 1
        assert j.verdict == "pass" or not right, (case.id, j.message)
    assert sum(judged.values()) > 400, judged  # the ones OpenVINO refuses (other activations) are not judged
    assert all(verdict == "pass" for (_, verdict, right) in judged if right), judged


def test_openvinos_bf16_dot_products_are_not_a_float32_accumulation_rounded_once():
    """Why OpenVINO's adapter declares no accumulation (conformance/runtimes/openvino.py): where its
    default computes in bf16, one RNN step of 64-term dot products (Relu, R = 0, no bias) lands
    farther from every float32 accumulation of the products rounded once than one can, whatever
    rounding of X and W (to nearest, truncated, kept) is assumed, while its pinned (f32)
    configuration lands within it. The day it does not, the adapter may declare float32
    accumulation again."""
    runtime("openvino")
    import ml_dtypes
    from onnx import TensorProto, helper, numpy_helper

    from conformance.runtimes.openvino import OpenVINOOnnxFrontend
    rng = np.random.default_rng(1)
    batch, inputs, hidden = 64, 64, 32
    x = rng.uniform(-1, 1, (1, batch, inputs)).astype(np.float32)
    W = rng.uniform(-1, 1, (1, hidden, inputs)).astype(np.float32)
    node = helper.make_node("RNN", ["X", "W", "R"], ["Y"], hidden_size=hidden, activations=["Relu"])
    graph = helper.make_graph([node], "dot", [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(W, "W"),
                               numpy_helper.from_array(np.zeros((1, hidden, hidden), np.float32), "R")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]).SerializeToString()
    rt = OpenVINOOnnxFrontend("CPU", "default")
    y = rt.run(model, {"X": x})[0][0, 0].astype(np.float64)
    if rt.effective().get("precision") != "bf16":
        pytest.skip(f"OpenVINO's default computes float32 in {rt.effective().get('precision')} on this CPU, not bf16")
    assert "accumulation" not in rt.effective()
    pinned = OpenVINOOnnxFrontend("CPU", "precision=pinned").run(model, {"X": x})[0][0, 0].astype(np.float64)

    def rounded(v, how):
        v = np.asarray(v, np.float32)
        if how == "nearest":
            return v.astype(ml_dtypes.bfloat16).astype(np.float64)
        if how == "truncated":
            return (v.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)
        return v.astype(np.float64)
    def beyond(got, hx, hw):
        """How far ``got`` is from the products of X and W (rounded as ``hx``, ``hw``) accumulated
        in float32 and rounded once, in units of what that can be off."""
        terms = rounded(x[0], hx)[:, None, :] * rounded(W[0], hw)[None, :, :]
        exact = np.maximum(terms.sum(-1), 0)
        ulp = 2.0 ** (np.floor(np.log2(np.maximum(exact, 1e-30))) - 7)      # a whole bf16 ulp
        slack = ulp + inputs * 2.0 ** -24 * np.abs(terms).sum(-1) + 1e-30    # and γ_64 of float32
        return np.max(np.abs(got - exact) / slack)
    assert beyond(pinned, "kept", "kept") <= 1  # the control: float32 accumulation is within it
    for hx in ("nearest", "truncated", "kept"):
        for hw in ("nearest", "truncated", "kept"):
            assert beyond(y, hx, hw) > 4, (hx, hw)
