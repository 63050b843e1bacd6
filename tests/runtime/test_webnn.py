"""WebNN: the translator on every feature, the document's refusals, the real browser, a renderer
crash and a hang, and the declared gap (docs/webnn.md).

The real-browser tests need a browser whose WebNN works: CONFORMANCE_WEBNN_BROWSER, one on the
machine, or the project's (``python -m conformance.runtimes.webnn_browser --install``, which
``nox -s tests`` and ``.ci/run`` run where npm is present); they are skipped, saying so, only where
none can be found.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conformance.case.model import Case
from conformance.case.yamlio import Where
from conformance.specs import SPECS, NotExpressible
from conformance.specs.webnn import validate_document
from conformance.specs.webnn.document import WebNNSpec
from tests.calibration import budget_arg

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "conformance"]
RNG = np.random.default_rng(7)
ED = "webnn-ed-20260626"


def make(op="GRU", form="sequence", dtype="float32", S=3, N=2, I=2, H=3, outputs=(), source=True, **kw):
    """A canonical case with random tensors; ``kw`` sets attributes, or tensors (name=array|'random')."""
    g = {"GRU": 3, "LSTM": 4}[op]
    attributes = {"hidden_size": H}
    tensors = {}
    for key, value in kw.items():
        if key in ("X", "W", "R", "B", "P", "initial_h", "initial_c", "sequence_lens"):
            tensors[key] = value
        else:
            attributes[key] = value
    d = 2 if attributes.get("direction") == "bidirectional" else 1
    shapes = {"X": (S, N, I), "W": (d, g * H, I), "R": (d, g * H, H), "B": (d, 2 * g * H), "P": (d, 3 * H),
              "initial_h": (d, N, H), "initial_c": (d, N, H)}
    for name in ("X", "W", "R"):
        tensors.setdefault(name, "random")
    for name, value in list(tensors.items()):
        if isinstance(value, str) and value == "random":
            tensors[name] = RNG.uniform(-1, 1, shapes[name]).astype(dtype if dtype != "bfloat16" else "float32")
    return Case(id=f"test/{op.lower()}[{','.join(f'{k}={v}' for k, v in sorted(kw.items()) if not hasattr(v, 'shape'))}]",
                op=op, form=form, attributes=attributes, shape={"seq_length": S, "batch_size": N, "input_size": I},
                dtype=dtype, tensors=tensors, outputs=tuple(outputs),
                source=Where("cases/test/webnn.yaml", 3) if source else None)


def document(case, spec=None):
    program = (spec or SPECS[ED]).translate(case)
    assert not isinstance(program, NotExpressible), program
    return program, json.loads(program.model)


def operand(doc, name):
    o = doc["operands"][name]
    return np.frombuffer(base64.b64decode(o["data"]), dtype="<f4" if o["dataType"] == "float32" else "<f2"
                         ).reshape(o["shape"])


def call(doc):
    return next(c for c in doc["operations"] if c["op"] != "transpose")


# -- the translator, feature by feature --------------------------------------------------------------

def test_specs_are_registered_with_the_webnn_profile():
    assert {s for s in SPECS if s.startswith("webnn-")} == {"webnn-cr-20260122", ED}
    assert all(SPECS[s].semantics == "webnn" and SPECS[s].format == "webnn" for s in SPECS if s.startswith("webnn-"))
    from oracles.profiles import get_profile
    assert get_profile("webnn").point("peephole_output").choice_tags == ("po-ct1", "po-ct")


@pytest.mark.parametrize("layout", ["default", "permuted"])
def test_gru_layouts_reorder_weights_and_split_the_bias(layout):
    case = make("GRU", B="random", linear_before_reset=1)
    _, doc = document(case, WebNNSpec("ed-20260626", gate_layout=layout))
    c = call(doc)
    assert c["op"] == "gru" and c["args"] == ["X", "W", "R", 3, 3]
    assert c["options"]["layout"] == ("zrn" if layout == "default" else "rzn")
    assert c["options"]["resetAfter"] is True
    W, B = case.tensors["W"], case.tensors["B"]
    order = (0, 1, 2) if layout == "default" else (1, 0, 2)
    blocks = np.split(W, 3, axis=1)
    np.testing.assert_array_equal(operand(doc, "W"), np.concatenate([blocks[k] for k in order], axis=1))
    wb, rb = np.split(B, 2, axis=1)
    np.testing.assert_array_equal(operand(doc, "bias"), np.concatenate([np.split(wb, 3, 1)[k] for k in order], 1))
    np.testing.assert_array_equal(operand(doc, "recurrentBias"),
                                  np.concatenate([np.split(rb, 3, 1)[k] for k in order], 1))


def test_linear_before_reset_0_is_written_as_reset_after_false():
    _, doc = document(make("GRU"))
    assert call(doc)["options"]["resetAfter"] is False  # WebNN's default is true: always written


@pytest.mark.parametrize("layout", ["default", "permuted"])
def test_lstm_layouts_keep_the_peephole_order(layout):
    case = make("LSTM", P="random", B="random")
    _, doc = document(case, WebNNSpec("ed-20260626", gate_layout=layout))
    c = call(doc)
    assert c["options"]["layout"] == ("iofg" if layout == "default" else "ifgo")
    order = (0, 1, 2, 3) if layout == "default" else (0, 2, 3, 1)  # ONNX i, o, f, c
    blocks = np.split(case.tensors["W"], 4, axis=1)
    np.testing.assert_array_equal(operand(doc, "W"), np.concatenate([blocks[k] for k in order], axis=1))
    np.testing.assert_array_equal(operand(doc, "peepholeWeight"), case.tensors["P"])  # i, o, f always


@pytest.mark.parametrize("direction, webnn", [("forward", "forward"), ("reverse", "backward"),
                                              ("bidirectional", "both")])
def test_directions_and_the_sequence_output(direction, webnn):
    program, doc = document(make("LSTM", direction=direction, initial_h="random", initial_c="random"))
    c = call(doc)
    assert c["options"]["direction"] == webnn and c["options"]["returnSequence"] is True
    assert c["options"]["initialHiddenState"] == "initial_h" and c["options"]["initialCellState"] == "initial_c"
    assert c["outputs"] == ["lstm.Y_h", "lstm.Y_c", "lstm.Y"]
    assert [o for o, _ in program.outputs] == ["Y", "Y_h", "Y_c"]
    assert doc["violations"] == []


def test_return_sequence_only_when_y_is_asked_for():
    _, doc = document(make("GRU", outputs=("Y_h",)))
    assert call(doc)["options"]["returnSequence"] is False and call(doc)["outputs"] == ["gru.Y_h"]


def test_activations_are_the_enum_written_once_for_both_directions():
    _, doc = document(make("GRU", direction="bidirectional", activations=["SIGMOID", "relu", "Sigmoid", "Relu"]))
    assert call(doc)["options"]["activations"] == ["sigmoid", "relu"]


def test_layout_1_is_transposes_around_the_operator():
    case = make("GRU", layout=1, initial_h="random")
    program, doc = document(case)
    ops = [c["op"] for c in doc["operations"]]
    assert ops == ["transpose", "transpose", "gru", "transpose", "transpose"]
    assert doc["operands"]["X.batch_major"]["shape"] == [2, 3, 2]
    assert program.transforms["Y"] == {"transpose": (1, 2, 0, 3)}


def test_cell_form_and_its_absent_state():
    program, doc = document(make("LSTM", form="cell", S=1, initial_h="random"))
    c = call(doc)
    assert c["op"] == "lstmCell" and c["args"] == ["X", "W", "R", "initial_h", "initial_c", 3]
    assert doc["operands"]["initial_c"]["kind"] == "constant"  # cellState is required: zeros
    assert not operand(doc, "initial_c").any()
    assert doc["operands"]["W"]["shape"] == [12, 2]
    assert program.transforms["Y"] == {"reshape": [1, 1, 2, 3]}


def test_float16_and_full_lengths():
    lens = np.array([3, 3], dtype=np.int32)
    _, doc = document(make("GRU", dtype="float16", sequence_lens=lens))
    assert {o["dataType"] for o in doc["operands"].values()} == {"float16"}
    assert any("sequence_lens" in n for n in doc["notes"]) and "sequence_lens" not in doc["operands"]


@pytest.mark.parametrize("case, reason", [
    (lambda: make("GRU", clip=1.0), "clip"),
    (lambda: make("LSTM", input_forget=1), "input_forget=1"),
    (lambda: make("GRU", sequence_lens=np.array([3, 1], dtype=np.int32)), "sequence_lens [3, 1]"),
    (lambda: make("GRU", activations=["Sigmoid", "LeakyRelu"]), "MLRecurrentNetworkActivation"),
    (lambda: make("GRU", activations=["Sigmoid", "Tanh"], activation_alpha=[0.1]), "activation_alpha"),
    (lambda: make("GRU", direction="bidirectional", activations=["Sigmoid", "Tanh", "Sigmoid", "Relu"]),
     "differ per direction"),
    (lambda: make("GRU", dtype="float64"), "float64"),
    (lambda: make("GRU", dtype="bfloat16"), "bfloat16"),
    (lambda: make("GRU", form="cell", S=1, direction="bidirectional"), "bidirectional cell"),
    (lambda: make("GRU", layout=2), "layout=2"),
])
def test_what_webnn_cannot_say_is_not_expressible(case, reason):
    result = SPECS[ED].translate(case())
    assert isinstance(result, NotExpressible) and reason in result.reason


def test_a_plain_rnn_is_not_expressible():
    case = Case(id="t/rnn", op="RNN", form="sequence", attributes={"hidden_size": 1},
                shape={"seq_length": 1, "batch_size": 1, "input_size": 1}, dtype="float32",
                tensors={"X": np.zeros((1, 1, 1), "f4"), "W": np.zeros((1, 1, 1), "f4"),
                         "R": np.zeros((1, 1, 1), "f4")})
    assert "no plain RNN" in SPECS[ED].translate(case).reason


# -- refusals ---------------------------------------------------------------------------------------

def test_a_document_that_breaks_the_method_steps_says_where_and_why():
    bad_w = RNG.uniform(-1, 1, (1, 8, 2)).astype("f4")      # 3*hidden = 9
    _, doc = document(make("GRU", W=bad_w, B=RNG.uniform(-1, 1, (1, 12)).astype("f4")))
    assert doc["source"] == "cases/test/webnn.yaml:3"
    text = " | ".join(doc["violations"])
    assert "cases/test/webnn.yaml:3: gru() weight: shape [1, 8, 2] is not [1, 9, 2]" in text
    assert "options.bias: shape [1, 6] is not [1, 9]" in text  # an invalid B is split as it is


@pytest.mark.parametrize("edit, expected", [
    (lambda c: c["args"].__setitem__(3, 0), "steps"),
    (lambda c: c["options"].__setitem__("layout", "ifgo"), "options.layout"),
    (lambda c: c["options"].__setitem__("activations", ["sigmoid"]), "its size is 1"),
    (lambda c: c["options"].__setitem__("direction", "sideways"), "options.direction"),
    (lambda c: c["args"].__setitem__(4, -1), "hiddenSize"),
])
def test_validation_of_hand_broken_documents(edit, expected):
    _, doc = document(make("GRU"))
    edit(call(doc))
    assert any(expected in str(v) for v in validate_document(doc))


# -- the real browser -------------------------------------------------------------------------------

def browser_or_skip():
    from conformance.runtimes.webnn_browser import NoBrowser, find
    try:
        import playwright  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"Playwright for Python is not installed ({exc})")
    try:
        return find()
    except NoBrowser as exc:
        pytest.skip(f"no browser with a working WebNN could be found or installed here: {exc}")


def run_cli(*args, env=None, timeout=600):
    return subprocess.run(CLI + list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def records(folder) -> list[dict]:
    return [json.loads(line) for line in (Path(folder) / "results.jsonl").read_text().splitlines()]


def test_real_browser_runs_gru_and_lstm_and_refuses_a_bad_shape(tmp_path):
    browser = browser_or_skip()
    assert browser.facts["contexts"]["cpu"]["opSupportLimits"]["lstm"]
    done = run_cli("run", "cases/gru/basic.yaml", "cases/lstm/peephole_output_gate.yaml", "cases/invalid/lstm/B_shape.yaml",
                   "--runtime", "webnn", "--device", "CPU", "--spec", ED, "--out", str(tmp_path), "--fresh",
                   "--jobs", "1", "--no-ablation", "--artifacts", "full")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    got = records(tmp_path)
    assert got and {r["verdict"] for r in got} == {"pass"}, [(r["case"], r["verdict"]) for r in got]
    refused = [r for r in got if r["expect"] == "invalid"]
    assert refused and all("cases/invalid/lstm/B_shape.yaml:" in r["message"] for r in refused)
    run = json.loads((tmp_path / "run.json").read_text())
    target = next(t for t in run["targets"] if t["runtime"] == "webnn")
    described = target["configuration"]["describe"]
    assert described["browser"] and described["backend"] and set(described["opSupportLimits"]) == {
        "gru", "gruCell", "lstm", "lstmCell"}
    assert target["configuration"]["probe"] == "measured"


@pytest.mark.parametrize("double", ["Sabotaged", "SabotagedInBatches"])
def test_a_renderer_crash_and_a_hang_each_cost_one_verdict(tmp_path, double):
    """Alone and in batches: a crash or hang inside a batch sends its pairs again alone."""
    browser = browser_or_skip()

    def browsers() -> int:
        return sum(1 for p in Path("/proc").glob("[0-9]*") if _cmdline(p).startswith(browser.path))

    before = browsers()
    env = {"WEBNN_SABOTAGE_CRASH": "direction=forward,B=random,initial_h=absent",
           "WEBNN_SABOTAGE_HANG": "direction=reverse,B=random,initial_h=absent"}
    name = "webnn-sabotaged" + ("-batched" if double == "SabotagedInBatches" else "")
    done = run_cli("run", "cases/gru/basic.yaml", "-k", "B=random", "--runtime-plugin", f"tests.doubles.webnn:{double}",
                   "--runtime", name, "--spec", ED, "--timeout", budget_arg(15), "--out", str(tmp_path),
                   "--fresh", "--jobs", "1", "--no-ablation", env=env)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    verdicts = {r["case"]: r for r in records(tmp_path)}
    assert len(verdicts) == 6
    crash = verdicts["gru/basic[direction=forward,B=random,initial_h=absent]"]
    hang = verdicts["gru/basic[direction=reverse,B=random,initial_h=absent]"]
    assert crash["verdict"] == "crash" and "Target crashed" in crash.get("runtime_output", "")
    assert hang["verdict"] == "timeout"
    others = [r for r in verdicts.values() if r is not crash and r is not hang]
    assert [r["verdict"] for r in others] == ["pass"] * 4
    if double == "SabotagedInBatches":  # the crash's and the hang's batches were run again alone
        alone = {r["case"]: r["batch"]["alone"] for r in verdicts.values() if "alone" in r.get("batch", {})}
        assert "ended with" in alone[crash["case"]] and "ended with" in alone[hang["case"]]
        assert len(alone) > 2  # the pairs that shared a batch with them, run alone too
    if sys.platform.startswith("linux"):
        assert browsers() <= before, "a browser outlived its worker"


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


# -- the declared gap -------------------------------------------------------------------------------

def test_no_browser_is_a_declared_gap(tmp_path, monkeypatch):
    from conformance.runtimes import webnn
    monkeypatch.setenv("CONFORMANCE_WEBNN_BROWSER", str(tmp_path / "no-such-browser"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    found, gaps = webnn.targets({"webnn": [ED]})
    assert found == [] and len(gaps) == 1 and gaps[0][0] == "webnn"
    assert "no-such-browser" in gaps[0][1]


def test_no_browser_anywhere_names_every_place_tried(tmp_path, monkeypatch):
    from conformance.runtimes import webnn_browser
    monkeypatch.delenv("CONFORMANCE_WEBNN_BROWSER", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(webnn_browser, "machine_candidates", lambda: [])
    with pytest.raises(webnn_browser.NoBrowser, match="not installed .*--install"):
        webnn_browser.find()


def test_the_cli_lists_the_gap_and_runs_green(tmp_path):
    env = {"CONFORMANCE_WEBNN_BROWSER": str(tmp_path / "no-such-browser"), "XDG_CACHE_HOME": str(tmp_path)}
    listed = run_cli("list", "--targets", env=env)
    assert "webnn" in listed.stdout + listed.stderr and "no-such-browser" in listed.stdout + listed.stderr
    done = run_cli("run", "cases/gru/basic.yaml", "-k", "direction=forward", "--runtime", "webnn", "--runtime",
                   "directml-interpreter", "--out", str(tmp_path / "out"), "--jobs", "1", "--no-ablation", env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert any("webnn" in json.dumps(s) for s in run["skipped_runtimes"])
