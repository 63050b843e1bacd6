"""torch as a runtime, on the real torch: the torch translator (conformance.specs.torch) and adapter
(conformance.runtimes.torch) agree with onnxruntime running the ONNX translation and with the oracle
on every valid float32 corpus case torch can express; deliberately wrong weight mappings are caught;
each case torch cannot say is not-expressible with its reason."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from conformance.case import load_file, load_paths
from conformance.case.vocabulary import canonical_activation
from conformance.compare import for_case, judge_outputs
from conformance.runtimes import torch as torch_runtime
from conformance.runtimes.onnxruntime import OnnxRuntime
from conformance.specs import SPECS, NotExpressible, torch_weights
from tests.conftest import ROOT, runtime

torch = runtime("torch")


#: float32 agreement of two runtimes on the corpus' small cases (S <= 6, |inputs| <= 1, H <= 8):
#: about 100 float32 ulps at 1; a gate-order or bias-packing mistake moves outputs by > 1e-2
AGREEMENT = 1e-5
#: what a wrong mapping must at least move some output by, to count as caught
GROSS = 1e-2


@cache
def corpus():
    cases, errors = load_paths([ROOT / "cases"])
    assert not errors, errors[:3]
    return tuple(cases)


#: torch.nn's own axes: their cases have no ONNX twin to compare with (tests/runtime/test_framework.py checks them
#: against the oracle and eager torch in float64)
FRAMEWORK = {"num_layers", "proj_size", "dropout", "unbatched"}


def expressible(dtypes) -> list:
    return [c for c in corpus() if c.valid and c.dtype in dtypes and not FRAMEWORK & set(c.attributes)
            and not isinstance(SPECS["torch"].translate(c), NotExpressible)]


def by_id(case_id: str):
    return next(c for c in corpus() if c.id == case_id)


FLOAT32 = expressible(("float32",))
OTHER_DTYPES = expressible(("float16", "bfloat16", "float64"))


@pytest.fixture(scope="module")
def runtimes():
    return torch_runtime.TorchRuntime("CPU"), OnnxRuntime()


@pytest.fixture(scope="module", autouse=True)
def oracle_cache(tmp_path_factory):
    """Oracle results go to a throwaway folder, not the package's cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("CONFORMANCE_ORACLE_CACHE", str(tmp_path_factory.mktemp("oracle-cache")))
    yield
    mp.undo()


def run_torch(case, runtime, folder: Path) -> tuple:
    """(program, canonical outputs) of the case run by torch from its written files."""
    prog = SPECS["torch"].translate(case)
    assert not isinstance(prog, NotExpressible), prog.reason
    folder.mkdir(parents=True, exist_ok=True)
    SPECS["torch"].write(prog, folder)
    outputs = runtime.run(prog.runtime_input(), prog.feeds)
    return prog, outputs, {n: prog.to_canonical(n, o) for (_, n), o in zip(prog.outputs, outputs)}


def run_onnx(case, runtime) -> dict:
    """onnxruntime on the ONNX-14 translation of the case's twin: the same canonical tensors and
    outputs, in layout 0 (onnxruntime's CPU kernels refuse layout 1) and with the activations' canonical
    spelling (onnxruntime matches names case-sensitively; docs/disagreements.md#activation-name-case)."""
    attributes = {k: v for k, v in case.attributes.items() if k != "layout"}
    if "activations" in attributes:
        attributes["activations"] = [canonical_activation(a) for a in attributes["activations"]]
    case = dataclasses.replace(case, attributes=attributes)
    prog = SPECS["onnx-14"].translate(case)
    outputs = runtime.run(prog.model, prog.feeds)
    return {n: prog.to_canonical(n, o) for (_, n), o in zip(prog.outputs, outputs)}


def specified(case, name: str, shape: tuple) -> np.ndarray:
    """The elements ONNX defines: not Y past a sequence's length (a length of 0, whose Y_h is
    also unspecified, is not expressible in torch)."""
    mask = np.ones(shape, dtype=bool)
    lens = case.tensors.get("sequence_lens")
    if name == "Y" and lens is not None:
        for b, length in enumerate(lens):
            mask[int(length):, :, b, :] = False
    return mask


def max_difference(case, got: dict, expected: dict) -> float:
    assert got.keys() == expected.keys()
    worst = 0.0
    for name, exp in expected.items():
        assert got[name].shape == exp.shape, (
            f"{name} has shape {got[name].shape}, but should have {exp.shape} [{case.id}]")
        mask = specified(case, name, exp.shape)
        diff = np.abs(got[name].astype(np.float64) - exp.astype(np.float64))
        worst = max(worst, float(diff[mask].max()) if mask.any() else 0.0)
    return worst


def oracle(case):
    import oracles
    attributes = {k: v for k, v in case.attributes.items() if k != "layout"}
    return oracles.evaluate(case.op, attributes, case.tensors, profile="onnx")


# --- the weight mapping -----------------------------------------------------------------------


def test_the_float32_cases_spread_over_every_mapping_path():
    seen = {(c.op, c.form, c.direction, c.layout, "sequence_lens" in c.tensors, "initial_h" in c.tensors,
             "initial_c" in c.tensors, "B" in c.tensors) for c in FLOAT32}
    assert {s[0] for s in seen} == {"RNN", "GRU", "LSTM"}
    assert {s[1] for s in seen} == {"sequence", "cell"}
    assert {s[2] for s in seen} == {"forward", "reverse", "bidirectional"}
    for axis in range(3, 8):  # layout 0/1; sequence_lens, initial_h, initial_c, B absent/present
        assert {s[axis] for s in seen} == {False, True}, axis
    partial = [c for c in FLOAT32 if "sequence_lens" in c.tensors
               and (c.tensors["sequence_lens"] < c.shape["seq_length"]).any()]
    assert {(c.op, c.direction) for c in partial} >= {(op, d) for op in ("RNN", "GRU", "LSTM")
                                                     for d in ("forward", "reverse", "bidirectional")}
    assert any(c.attributes.get("activations") == ["Relu"] for c in FLOAT32)
    assert any(c.outputs for c in FLOAT32)


@pytest.mark.parametrize("case", FLOAT32, ids=lambda c: c.id)
def test_torch_matches_onnxruntime_on_the_onnx_translation(case, runtimes, tmp_path):
    torch_rt, ort = runtimes
    _, _, got = run_torch(case, torch_rt, tmp_path)
    diff = max_difference(case, got, run_onnx(case, ort))
    assert diff <= AGREEMENT, f"max |torch - onnxruntime| = {diff:.3g}, but should be <= {AGREEMENT} [{case.id}]"


@pytest.mark.parametrize("case", FLOAT32 + OTHER_DTYPES, ids=lambda c: c.id)
def test_torch_passes_against_the_oracle(case, runtimes, tmp_path):
    prog, outputs, _ = run_torch(case, runtimes[0], tmp_path)
    judgement = judge_outputs(case, prog, outputs, oracle(case), for_case(case))
    assert judgement.verdict == "pass", f"{judgement.message} [{case.id}]"


# --- deliberately wrong mappings are caught ---------------------------------------------------

WRONG_MAPPINGS = [
    ("GRU", (0, 1, 2), "gru/linear_before_reset[linear_before_reset=1,B=random,direction=bidirectional]"),
    ("LSTM", (0, 1, 2, 3), "lstm/basic[direction=bidirectional,B=random,initial_h=random,initial_c=random]"),
]


@pytest.mark.parametrize("op,order,case_id", WRONG_MAPPINGS,
                         ids=[f"{op} gates in ONNX order" for op, *_ in WRONG_MAPPINGS])
def test_gates_left_in_onnx_order_diverge(op, order, case_id, runtimes, tmp_path, monkeypatch):
    case = by_id(case_id)
    torch_rt, ort = runtimes
    expected = run_onnx(case, ort)
    _, _, right = run_torch(case, torch_rt, tmp_path / "right")
    assert max_difference(case, right, expected) <= AGREEMENT
    monkeypatch.setitem(torch_weights.GATE_ORDER, op, order)
    prog, outputs, wrong = run_torch(case, torch_rt, tmp_path / "wrong")
    diff = max_difference(case, wrong, expected)
    assert diff > GROSS, f"{op} gates left in ONNX order moved outputs by {diff:.3g} only [{case.id}]"
    judgement = judge_outputs(case, prog, outputs, oracle(case), for_case(case))
    assert judgement.verdict == "fail" and "but should be within" in judgement.message


# --- what torch cannot say ---------------------------------------------------------------------

SHAPE = "shape: {seq_length: 3, batch_size: 2, input_size: 2}\n"


def yaml_case(tmp_path, op: str, attributes: str, inputs: str = "", extra: str = ""):
    text = (f"op: {op}\nclause: test\nattributes: {{hidden_size: 2{', ' + attributes if attributes else ''}}}\n"
            + (extra or SHAPE) + (f"inputs: {{{inputs}}}\n" if inputs else ""))
    (tmp_path / "c.yaml").write_text(text)
    cases, errors = load_file(tmp_path / "c.yaml")
    assert not errors, errors
    return cases[0]


NOT_EXPRESSIBLE = [
    ("RNN", "activations: [Sigmoid]", "", "", "torch.nn.RNN computes ['Tanh'] or ['Relu'] only"),
    ("GRU", "linear_before_reset: 1, activations: [HardSigmoid, Tanh]", "", "", "torch.nn.GRU computes"),
    ("LSTM", "activations: [Sigmoid, Tanh, Relu]", "", "", "torch.nn.LSTM computes"),
    ("RNN", "direction: bidirectional, activations: [Tanh, Relu]", "", "", "differ per direction"),
    ("RNN", "activations: [LeakyRelu], activation_alpha: [0.1]", "", "", "activation_alpha"),
    ("RNN", "activations: [Affine], activation_alpha: [1.0], activation_beta: [0.5]", "", "", "activation_beta"),
    ("LSTM", "clip: 0.5", "", "", "does not clip"),
    ("LSTM", "", "P: random", "", "peepholes P"),
    ("LSTM", "input_forget: 1", "", "", "input_forget=1"),
    ("GRU", "linear_before_reset: 0", "", "", "linear_before_reset=0"),
    ("GRU", "", "", "", "linear_before_reset=0"),  # ONNX's default
    ("RNN", "", "sequence_lens: [3, 0]", "", "need every length >= 1"),
    ("GRU", "linear_before_reset: 1, direction: bidirectional", "",
     "form: cell\nshape: {batch_size: 2, input_size: 2}\n", "bidirectional cell"),
]


@pytest.mark.parametrize("op,attributes,inputs,extra,reason", NOT_EXPRESSIBLE,
                         ids=[f"{r[0]} {r[1] or r[2] or 'defaults'}" for r in NOT_EXPRESSIBLE])
def test_not_expressible_with_the_reason(op, attributes, inputs, extra, reason, tmp_path):
    case = yaml_case(tmp_path, op, attributes, inputs, extra)
    got = SPECS["torch"].translate(case)
    assert isinstance(got, NotExpressible), f"{case.describe()} should be not-expressible ({reason})"
    assert got.spec == "torch" and reason in got.reason, got.reason


INVALID_NOT_EXPRESSIBLE = [
    ("invalid/gru/direction", "torch has no direction attribute"),
    ("invalid/lstm/layout", "batch_first is a bool"),
    ("invalid/rnn/activations_unknown", "are not ONNX activations"),
    ("invalid/rnn/activations_count", "torch has no activation list"),
    ("invalid/lstm/foreign_attribute", "has no counterpart of the attribute"),
    ("invalid/gru/required_inputs[X=absent", "X absent"),
    ('invalid/gru/W_shape[W={"shape":[9,2]}]', "torch keeps one parameter per direction"),
    ('invalid/lstm/B_shape[B={"shape":[24]}]', "torch keeps one parameter per direction"),
]


@pytest.mark.parametrize("prefix,reason", INVALID_NOT_EXPRESSIBLE, ids=[p for p, _ in INVALID_NOT_EXPRESSIBLE])
def test_invalid_values_torch_has_no_words_for_are_not_expressible(prefix, reason):
    cases = [c for c in corpus() if c.id.startswith(prefix)]
    assert cases and all(not c.valid for c in cases)
    for case in cases:
        got = SPECS["torch"].translate(case)
        assert isinstance(got, NotExpressible) and reason in got.reason, (case.id, got)


def test_invalid_shapes_are_refused_by_torch_itself(runtimes, tmp_path):
    """W, R, B, initial states and lengths of a wrong shape go through as given; torch's
    load_state_dict(strict=True), its hidden-size check or pack_padded_sequence refuses them."""
    checked = 0
    for case in corpus():
        if case.valid or not case.id.split("[")[0].endswith(("W_shape", "R_shape", "B_shape", "initial_h_shape",
                                                              "initial_c_shape", "sequence_lens", "hidden_size")):
            continue
        prog = SPECS["torch"].translate(case)
        if isinstance(prog, NotExpressible):
            continue
        folder = tmp_path / str(checked)
        folder.mkdir()
        SPECS["torch"].write(prog, folder)
        with pytest.raises((RuntimeError, ValueError)):
            runtimes[0].run(prog.runtime_input(), prog.feeds)
        checked += 1
    assert checked > 50


# --- translation details -----------------------------------------------------------------------


def test_the_program_is_a_json_description_and_an_npz_state_dict(tmp_path):
    case = by_id("lstm/basic[direction=bidirectional,B=random,initial_h=random,initial_c=random]")
    prog = SPECS["torch"].translate(case)
    SPECS["torch"].write(prog, tmp_path)
    desc = json.loads(Path(prog.files["model"]).read_text())
    assert prog.files["model"].endswith(".json") and prog.runtime_input() == prog.files["model"]
    assert {k: desc[k] for k in ("module", "num_layers", "bidirectional", "batch_first", "packed")} == {
        "module": "LSTM", "num_layers": 1, "bidirectional": True, "batch_first": False, "packed": False}
    with np.load(tmp_path / desc["weights"]) as weights:
        names = set(weights.files)
        h = case.hidden_size
        w = case.tensors["W"]
        # torch i, f, g, o from ONNX i, o, f, c; direction 1 is *_reverse
        np.testing.assert_array_equal(weights["weight_ih_l0_reverse"],
                                      np.concatenate([w[1, :h], w[1, 2 * h:3 * h], w[1, 3 * h:], w[1, h:2 * h]]))
        np.testing.assert_array_equal(weights["bias_hh_l0"][:h], case.tensors["B"][0, 4 * h:5 * h])
    assert names == {f"{p}_l0{s}" for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh") for s in ("", "_reverse")}


def test_reverse_is_torchs_own_reverse_direction_of_a_bidirectional_module():
    case = by_id("rnn/sequence_lens[direction=reverse,sequence_lens=[4,2,1],initial_h=random]")
    prog = SPECS["torch"].translate(case)
    desc = json.loads(prog.model)
    assert desc["bidirectional"] and desc["keep_direction"] == 1 and desc["packed"]
    assert not prog.extra["state_dict"]["weight_ih_l0"].any()
    np.testing.assert_array_equal(prog.extra["state_dict"]["weight_ih_l0_reverse"], case.tensors["W"][0])
    np.testing.assert_array_equal(prog.feeds["h0"], np.concatenate([np.zeros_like(case.tensors["initial_h"]),
                                                                    case.tensors["initial_h"]]))
    assert any("reverse" in n and "bidirectional" in n for n in prog.notes)


def test_layout_1_is_batch_first():
    case = by_id("rnn/layout[layout=1,direction=bidirectional,initial_h=random,sequence_lens=[4,2,1]]")
    prog = SPECS["torch"].translate(case)
    assert json.loads(prog.model)["batch_first"] is True
    np.testing.assert_array_equal(prog.feeds["input"], np.transpose(case.tensors["X"], (1, 0, 2)))
    np.testing.assert_array_equal(prog.feeds["h0"], case.tensors["initial_h"])  # torch keeps [D,B,H]
    assert prog.transforms["Y"] == {"transpose": (1, 2, 0, 3)}


# --- targets -----------------------------------------------------------------------------------


def test_targets_cpu_always_and_cuda_only_where_present(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    found, gaps = torch_runtime.targets({"torch": ["torch"], "onnx": ["onnx-14"]})
    assert [(t.device, t.spec, t.format) for t in found] == [("CPU", "torch", "torch")]
    assert found[0].id == f"torch-{torch.__version__}/CPU@torch"
    assert gaps == [("torch", gaps[0][1])] and "CUDA not available" in gaps[0][1]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    found, gaps = torch_runtime.targets({"torch": ["torch"]})
    # CUDA in two configurations: TF32 as torch ships it, and pinned (docs/targets.md, "GPUs")
    assert [(t.device, t.config) for t in found] == [("CPU", "default"), ("CUDA", "default"),
                                                     ("CUDA", "precision=pinned")] and gaps == []
    assert found[1].ref.build().device == "CUDA"
    assert dict(found[2].ref.kwargs) == {"device": "CUDA", "config": "precision=pinned"}
    assert found[2].id == f"torch-{torch.__version__}/CUDA/precision=pinned@torch"
    assert torch_runtime.targets({"onnx": ["onnx-14"]}) == ([], [])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device here")
def test_cuda_passes_against_the_oracle(tmp_path):
    cuda = torch_runtime.TorchRuntime("CUDA")
    failed = []
    for i, case in enumerate(FLOAT32 + OTHER_DTYPES):
        prog, outputs, _ = run_torch(case, cuda, tmp_path / str(i))
        judgement = judge_outputs(case, prog, outputs, oracle(case), for_case(case))
        if judgement.verdict != "pass":
            failed.append(f"{judgement.message} [{case.id}]")
    assert not failed, "\n".join(failed)
