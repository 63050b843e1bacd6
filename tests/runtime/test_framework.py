"""torch.nn's own axes (docs/framework.md): the case format (num_layers, proj_size, dropout, unbatched;
torch's batch_first, bias and packed read as layout, B and sequence_lens), the torch translator, and
the oracle's torch profile, stacks and projections, checked against eager torch in float64 on every
framework-level case of the corpus (cases/torch/) and against a numpy rendering of PyTorch's
documented formulas.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_framework.py."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

import oracles
from conformance.case.load import load_paths
from tests.conftest import ROOT

TORCH_CASES = ROOT / "cases" / "torch"


def _cases():
    cases, errors = load_paths([TORCH_CASES])
    assert not errors, errors
    return cases


def _eager_float64(case):
    """The torch program of ``case`` run by eager torch in float64 (weights and inputs widened exactly),
    its outputs in canonical layout."""
    import ml_dtypes
    import torch

    from conformance.runtimes import torch_program as tp
    from conformance.specs import SPECS
    prog = SPECS["torch"].translate(case)
    folder = tempfile.mkdtemp()
    SPECS["torch"].write(prog, folder)
    desc, weights = tp.read(prog.runtime_input())
    desc64 = dict(desc, dtype="float64")
    wide = {k: (v.view(ml_dtypes.bfloat16) if desc["dtype"] == "bfloat16" else v).astype(np.float64)
            for k, v in weights.items()}
    program = tp.build(torch, desc64, wide)
    args = [torch.from_numpy(np.asarray(prog.feeds[n]).astype(np.int32 if n == "lengths" else np.float64))
            for n in desc["inputs"]]
    with torch.no_grad():
        returned = program(*args)
    outs = tp.finish(desc64, [r.numpy() for r in returned], tp.steps_of(desc64, prog.feeds))
    return {name: prog.to_canonical(name, out) for (_, name), out in zip(prog.outputs, outs)}


def test_the_oracle_agrees_with_eager_torch_in_float64_on_every_framework_case():
    """Stacks, projections, packed sequences, batch_first, bias=False, dropout in eval mode and
    unbatched input: the oracle's exact value and torch's float64 run differ by float64 rounding only."""
    torch_cases = [c for c in _cases() if c.valid]
    assert len(torch_cases) > 100
    seen = set()
    for case in torch_cases:
        eager = _eager_float64(case)
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        res = oracles.evaluate(case.op, attrs, case.tensors, profile="torch", cache=False)
        assert len(res.readings) == 1, case.id
        expected = res.readings[0].outputs
        for name, got in eager.items():
            e = expected[name]
            assert got.shape == e.hi.shape, (case.id, name)
            scale = max(1.0, float(np.nanmax(np.abs(e.hi))))
            assert not e.unspecified.any(), (case.id, name)   # torch specifies every element (pad zeros)
            assert np.max(np.abs(got - e.hi)) <= 64 * 2.0 ** -53 * scale, (case.id, name)
        seen |= {k for k in ("num_layers", "proj_size", "dropout", "unbatched") if k in case.attributes}
        seen |= {"sequence_lens"} & set(case.tensors) | ({"layout"} if case.layout == 1 else set())
    assert seen == {"num_layers", "proj_size", "dropout", "unbatched", "sequence_lens", "layout"}


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm_layer(x, W, R, Wb, Rb, Whr, h, c):
    """One direction of one torch LSTM layer from its documented formulas (gates i, f, g, o), in float64."""
    out = []
    for x_t in x:
        z = W @ x_t + Wb + R @ h + Rb
        i, f, g, o = np.split(z, 4)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        if Whr is not None:
            h = Whr @ h
        out.append(h)
    return np.array(out), h, c


def test_a_projected_stack_is_the_documented_formulas():
    """A 2-layer forward LSTM with proj_size 2, in ONNX gate order as the case holds it (i, o, f, c),
    against PyTorch's formulas written out here: h_t = W_hr (o_t (.) tanh(c_t)), layer 1 reading layer
    0's h_t."""
    rng = np.random.default_rng(7)
    S, B, I, H, P = 4, 1, 3, 5, 2
    t = {"X": rng.uniform(-1, 1, (S, B, I)), "W": rng.uniform(-1, 1, (1, 4 * H, I)),
         "R": rng.uniform(-1, 1, (1, 4 * H, P)), "B": rng.uniform(-1, 1, (1, 8 * H)),
         "W_hr": rng.uniform(-1, 1, (1, P, H)), "W_l1": rng.uniform(-1, 1, (1, 4 * H, P)),
         "R_l1": rng.uniform(-1, 1, (1, 4 * H, P)), "B_l1": rng.uniform(-1, 1, (1, 8 * H)),
         "W_hr_l1": rng.uniform(-1, 1, (1, P, H)), "initial_h": rng.uniform(-1, 1, (2, B, P)),
         "initial_c": rng.uniform(-1, 1, (2, B, H))}
    res = oracles.evaluate("LSTM", {"hidden_size": H, "proj_size": P, "num_layers": 2}, t, profile="torch",
                           cache=False)
    onnx_to_torch = np.concatenate([np.arange(0, H), np.arange(2 * H, 3 * H), np.arange(3 * H, 4 * H),
                                    np.arange(H, 2 * H)])  # i, o, f, c -> i, f, g, o
    x = t["X"][:, 0]
    finals = []
    for layer, sfx in enumerate(("", "_l1")):
        W, R, Bb = t["W" + sfx][0][onnx_to_torch], t["R" + sfx][0][onnx_to_torch], t["B" + sfx][0]
        Wb, Rb = Bb[:4 * H][onnx_to_torch], Bb[4 * H:][onnx_to_torch]
        x, h, c = _lstm_layer(x, W, R, Wb, Rb, t["W_hr" + sfx][0], t["initial_h"][layer, 0], t["initial_c"][layer, 0])
        finals.append((h, c))
    out = res.readings[0].outputs
    assert np.allclose(out["Y"].hi[:, 0, 0], x, rtol=0, atol=1e-13)
    assert np.allclose(out["Y_h"].hi[:, 0], [h for h, _ in finals], rtol=0, atol=1e-13)
    assert np.allclose(out["Y_c"].hi[:, 0], [c for _, c in finals], rtol=0, atol=1e-13)
    assert out["Y"].hi.shape == (S, 1, B, P) and out["Y_c"].hi.shape == (2, B, H)
    assert res.certificate["agree_bits"] > 100
    assert res.precision["layers"] == 2 and np.all(out["Y"].bound > 0)


def test_a_stack_chains_single_layers_exactly():
    """Layer 1 of a GRU stack is the single-layer problem whose X is layer 0's exact Y: evaluated apart
    on float64 inputs that hold layer 0's outputs exactly enough, the two agree to float64."""
    rng = np.random.default_rng(11)
    S, B, I, H = 3, 2, 2, 3
    t = {"X": rng.uniform(-1, 1, (S, B, I)), "W": rng.uniform(-1, 1, (2, 3 * H, I)),
         "R": rng.uniform(-1, 1, (2, 3 * H, H)), "W_l1": rng.uniform(-1, 1, (2, 3 * H, 2 * H)),
         "R_l1": rng.uniform(-1, 1, (2, 3 * H, H))}
    attrs = {"hidden_size": H, "direction": "bidirectional", "linear_before_reset": 1}
    stack = oracles.evaluate("GRU", dict(attrs, num_layers=2), t, profile="torch", cache=False)
    first = oracles.evaluate("GRU", attrs, {k: t[k] for k in ("X", "W", "R")}, profile="torch", cache=False)
    y0 = first.readings[0].outputs["Y"].hi  # [S, D, B, H]
    x1 = y0.transpose(0, 2, 1, 3).reshape(S, B, 2 * H)
    second = oracles.evaluate("GRU", attrs, {"X": x1, "W": t["W_l1"], "R": t["R_l1"]}, profile="torch", cache=False)
    got = stack.readings[0].outputs
    assert np.allclose(got["Y"].hi, second.readings[0].outputs["Y"].hi, rtol=0, atol=1e-14)
    assert np.allclose(got["Y_h"].hi[:2], first.readings[0].outputs["Y_h"].hi, rtol=0, atol=0)
    # the second layer's bound carries the first's: wider than the layer's own with exact inputs
    assert np.all(got["Y"].bound >= second.readings[0].outputs["Y"].bound)


@pytest.mark.parametrize("attributes, tensors, words", [
    ({"hidden_size": 3, "proj_size": 3}, {}, "proj_size < hidden_size"),
    ({"hidden_size": 3, "proj_size": 1}, {"no_whr": True}, "W_hr"),
    ({"hidden_size": 3, "num_layers": 2}, {"profile": "onnx"}, "profile='torch'"),
    ({"hidden_size": 3, "dropout": 1.5}, {}, "dropout"),
])
def test_the_oracle_refuses_what_torch_refuses(attributes, tensors, words):
    rng = np.random.default_rng(1)
    H = attributes["hidden_size"]
    P = attributes.get("proj_size") or H
    t = {"X": rng.uniform(-1, 1, (2, 1, 2)), "W": rng.uniform(-1, 1, (1, 4 * H, 2)),
         "R": rng.uniform(-1, 1, (1, 4 * H, P))}
    if attributes.get("proj_size") and not tensors.get("no_whr"):
        t["W_hr"] = rng.uniform(-1, 1, (1, P, H))
    if attributes.get("num_layers"):
        t.update({"W_l1": rng.uniform(-1, 1, (1, 4 * H, H)), "R_l1": rng.uniform(-1, 1, (1, 4 * H, H))})
    with pytest.raises(oracles.OracleError, match=words.replace("(", r"\(").replace(")", r"\)")):
        oracles.evaluate("LSTM", attributes, t, profile=tensors.get("profile", "torch"), cache=False)


def test_a_stack_has_each_layers_weights_and_states_per_layer():
    [case] = [c for c in _cases() if c.id == "torch/layers[num_layers=3,direction=bidirectional,initial_h=random,"
              "initial_c=random]"]
    shapes = {k: v.shape for k, v in case.tensors.items()}
    assert shapes["W_l1"] == shapes["W_l2"] == (2, 12, 6) and shapes["initial_h"] == (6, 2, 3)
    from conformance.case.features import features
    assert "num_layers=3" in features(case)


def test_the_removals_of_the_frameworks_axes_make_cases_the_oracle_takes():
    from conformance.case.features import FEATURES
    removals = {f.name: f for f in FEATURES}
    cases = {c.id: c for c in _cases()}
    stack = cases["torch/projection[proj_size=2,num_layers=2,direction=bidirectional]"]
    for name in ("num_layers", "proj_size", "direction"):
        feature = removals[name]
        assert feature.present(stack)
        smaller = feature.remove(stack)
        assert not removals[name].present(smaller) or name == "direction"
        attrs = {k: v for k, v in smaller.attributes.items() if k != "layout"}
        oracles.evaluate(smaller.op, attrs, smaller.tensors, profile="torch", cache=False)


def test_the_frameworks_own_axes_are_not_expressible_outside_torch():
    """num_layers, proj_size, dropout and unbatched are torch.nn's alone (``Attribute.families``): every
    other family's translator, through the entry every run takes and called directly (as the tests and
    benchmarks do), calls a case that has one of them not expressible and names it, so none reaches an
    ONNX, OpenVINO, DirectML or WebNN node; torch
    writes them all. torch's batch_first, bias and packed are the case format's layout, B and
    sequence_lens, which every family knows."""
    from conformance.case.vocabulary import ATTRIBUTE, ATTRIBUTE_TABLE
    from conformance.specs import SPECS, NotExpressible, translate
    own = {a.name for a in ATTRIBUTE_TABLE if a.families == ("torch",)}
    assert own == {"num_layers", "proj_size", "dropout", "unbatched"}
    assert all(ATTRIBUTE[k].families == tuple(ATTRIBUTE_TABLE[0].families) for k in ("layout", "hidden_size"))
    seen = set()
    for case in (c for c in _cases() if c.valid):
        has = [k for k in case.attributes if k in own]
        seen.update(has)
        for name, spec in SPECS.items():
            for got in (translate(spec, case), spec.translate(case)):
                if spec.family == "torch":
                    assert not isinstance(got, NotExpressible), (case.id, got.reason)
                elif has:
                    assert isinstance(got, NotExpressible) and repr(has[0]) in got.reason, (name, case.id)
    assert seen == own
