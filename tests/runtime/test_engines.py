"""The engines beyond the default runtimes (docs/engines.md): OpenVINO with its ops built in memory
(no IR), and tract (the `engines` extra). Each test runs the real engine; tract's skip when the
`tract` wheel is not installed here, and say so."""

from __future__ import annotations

import importlib.util
import json
from importlib import metadata

import numpy as np
import pytest

from conformance.case.load import load_paths
from conformance.run import read_results
from conformance.specs import SPECS, NotExpressible
from tests.conftest import ROOT, conformance

TRACT = importlib.util.find_spec("tract") is not None
needs_tract = pytest.mark.skipif(not TRACT, reason="tract is not installed here (pip install -c constraints.txt "
                                                  "-e '.[engines]', or nox -s conformance-all)")


def _case(path: str, case_id: str):
    cases, _ = load_paths([ROOT / "cases" / path])
    return next(c for c in cases if c.id == case_id)


# -- OpenVINO in memory ---------------------------------------------------------------------------

PEEPHOLES = "lstm/cell_peepholes_alone"


def test_the_in_memory_spec_carries_the_peepholes_the_ir_cannot():
    case = _case("lstm/cell_peepholes_alone.yaml", PEEPHOLES)
    ir = SPECS["openvino-opset1"].translate(case)
    assert isinstance(ir, NotExpressible) and "serializer drops input 6" in ir.reason
    prog = SPECS["openvino-memory-opset1"].translate(case)
    assert not isinstance(prog, NotExpressible)
    p = case.tensors["P"][0]
    h = case.hidden_size
    # ONNX i,o,f in v0::LSTMCell's f,i,o
    assert np.array_equal(prog.extra["constants"]["P"], np.concatenate([p[2 * h:], p[:h], p[h:2 * h]]))
    assert any("P reordered" in n for n in prog.notes)


def test_the_recipe_is_written_and_built_in_the_worker(tmp_path):
    from conformance.runtimes.openvino_memory import OpenVINOMemory
    case = _case("lstm/cell_peepholes_alone.yaml", PEEPHOLES)
    prog = SPECS["openvino-memory-opset1"].translate(case)
    SPECS["openvino-memory-opset1"].write(prog, tmp_path)
    recipe = json.loads((tmp_path / "openvino-memory-opset1.json").read_text())
    assert recipe["op"] == "LSTMCell-1" and (tmp_path / recipe["constants"]).exists()
    assert not list(tmp_path.glob("*.xml")), "no IR is written"
    runtime = OpenVINOMemory(config="precision=pinned")
    outputs = runtime.run(prog.runtime_input(), prog.feeds)
    assert [o.shape for o in outputs] == [(3, 3)] * 3  # Y and Y_h (both Ho), Y_c (Co)
    assert runtime.effective()["precision"] == "f32"


def test_the_cpu_plugin_ignores_lstmcell1_peepholes_and_the_run_names_the_cause(tmp_path):
    """The finding the in-memory target exists to show: a fail whose cause the ablation names, and
    that expectations/openvino-memory.yaml expects (so the gate stays green)."""
    out = tmp_path / "out"
    conformance("run", ROOT / "cases" / "lstm" / "cell_peepholes_alone.yaml", "--runtime", "openvino", "--spec",
                "openvino-memory-opset1", "--config", "precision=pinned/forms=default", "--out", out, "-q",
                "--expectations", ROOT / "expectations", check=0)
    [record] = read_results(out / "results.jsonl")
    assert record["verdict"] == "fail" and record["gate"] == "expected"
    assert "ignores it" in record["expected"]["reason"]
    clusters = json.loads((out / "clusters.json").read_text())
    assert [c["cause"] for c in clusters] == ["fails whenever peepholes are non-zero"]


def test_lstmsequence1_is_refused_by_the_builder_and_says_so(tmp_path):
    from conformance.runtimes.base import RuntimeRejected
    from conformance.runtimes.openvino_memory import OpenVINOMemory
    case = _case("lstm/basic.yaml", "lstm/basic[direction=forward,B=random,initial_h=random,initial_c=random]")
    prog = SPECS["openvino-memory-opset1"].translate(case)
    SPECS["openvino-memory-opset1"].write(prog, tmp_path)
    with pytest.raises(RuntimeRejected, match="builders refused LSTMSequence-1.*Couldn't create operation"):
        OpenVINOMemory().run(prog.runtime_input(), prog.feeds)


def test_the_in_memory_targets_are_found_per_configuration():
    from conformance.runtimes.openvino_memory import FORMAT, targets
    found, gaps = targets({FORMAT: ["openvino-memory-opset5", "openvino-memory-opset1"], "onnx": ["onnx-14"]})
    assert not gaps and {t.config for t in found if t.config in ("default", "precision=pinned")} == {
        "default", "precision=pinned"}
    assert all(t.config.startswith("precision=pinned/") for t in found
               if t.config not in ("default", "precision=pinned"))
    assert {t.spec for t in found} == {"openvino-memory-opset5", "openvino-memory-opset1"}
    assert all(t.runtime == "openvino" and t.format == FORMAT for t in found)
    assert targets({"onnx": ["onnx-14"]}) == ([], [])


# -- tract ----------------------------------------------------------------------------------------

def test_tract_is_a_gap_with_the_reason_where_it_is_not_installed():
    from conformance.runtimes import builtin_targets
    found, gaps = builtin_targets("conformance.runtimes.tract", {"onnx": ["onnx-14"]})
    if TRACT:
        assert [t.id.split("/")[0] for t in found] == [f"tract-{metadata.version('tract')}"] and not gaps
    else:
        assert not found and gaps[0].runtime == "tract" and "not installed here" in gaps[0].reason


@needs_tract
def test_tract_runs_a_case_and_a_refusal_names_the_step():
    from conformance.runtimes.base import RuntimeRejected
    from conformance.runtimes.tract import Tract
    runtime = Tract()
    case = _case("rnn/basic.yaml", "rnn/basic[direction=forward,B=random,initial_h=random]")
    prog = SPECS["onnx-14"].translate(case)
    outputs = runtime.run(prog.runtime_input(), prog.feeds)
    assert [o.shape for o in outputs] == [(4, 1, 3, 4), (1, 3, 4)]
    assert runtime.effective()["precision"] == "f32"
    partial = _case("rnn/sequence_lens.yaml",
                    "rnn/sequence_lens[direction=forward,sequence_lens=[2,0,4],initial_h=random]")
    prog = SPECS["onnx-14"].translate(partial)
    with pytest.raises(RuntimeRejected, match="(?s)^tract into_model: .*Non constant seq_len"):
        runtime.run(prog.runtime_input(), prog.feeds)


@needs_tract
def test_tract_on_a_few_families_is_green_with_its_expectations_and_leaves_packages_alone(tmp_path):
    before = sorted((d.metadata["Name"], d.version) for d in metadata.distributions())
    out = tmp_path / "out"
    conformance("run", ROOT / "cases" / "rnn" / "basic.yaml", ROOT / "cases" / "rnn" / "activations.yaml",
                "--runtime", "tract", "--spec", "onnx-14", "--out", out, "-q", "--expectations",
                ROOT / "expectations", check=0)
    records = read_results(out / "results.jsonl")
    assert {r["verdict"] for r in records} == {"pass", "fail"}
    assert all(r["gate"] in ("expected", "ok") for r in records)
    assert all(r["target"] == f"tract-{metadata.version('tract')}/CPU@onnx-14" for r in records)
    assert sorted((d.metadata["Name"], d.version) for d in metadata.distributions()) == before


# -- MNN ------------------------------------------------------------------------------------------

MNN = importlib.util.find_spec("MNN") is not None and importlib.util.find_spec("_tools") is not None
needs_mnn = pytest.mark.skipif(not MNN, reason="MNN is not installed here (pip install -c constraints.txt "
                                              "-e '.[engines]', or nox -s conformance-all)")


def _packages() -> list:
    return sorted((d.metadata["Name"], d.version) for d in metadata.distributions())


def test_mnn_is_a_gap_with_the_reason_where_it_is_not_installed():
    from conformance.runtimes import builtin_targets
    found, gaps = builtin_targets("conformance.runtimes.mnn", {"onnx": ["onnx-7", "onnx-14"]})
    if MNN:
        assert [t.id for t in found] == [f"mnn-{metadata.version('MNN')}/CPU@onnx-7",
                                         f"mnn-{metadata.version('MNN')}/CPU@onnx-14"] and not gaps
    else:
        assert not found and gaps[0].runtime == "mnn" and "not installed here" in gaps[0].reason


@needs_mnn
def test_mnn_runs_a_case_keeps_the_converted_model_and_a_converter_refusal_names_its_stage():
    from conformance.runtimes.base import RuntimeRejected
    from conformance.runtimes.mnn import MNNRuntime
    runtime = MNNRuntime()
    case = _case("rnn/basic.yaml", "rnn/basic[direction=forward,B=random,initial_h=random]")
    prog = SPECS["onnx-14"].translate(case)
    outputs = runtime.run(prog.runtime_input(), prog.feeds)
    assert [o.shape for o in outputs] == [(4, 1, 3, 4), (1, 3, 4)]
    [(name, model)] = runtime.artefacts().items()
    assert name == "model.mnn" and len(model) == runtime.effective()["converted_bytes"] > 0
    peepholes = _case("lstm/peephole_output_gate.yaml", "lstm/peephole_output_gate[direction=forward,initial_c=random]")
    prog = SPECS["onnx-14"].translate(peepholes)
    with pytest.raises(RuntimeRejected, match=r"^MNN converter: MNN LSTM not support 8th input \(peepholes\)") as info:
        runtime.run(prog.runtime_input(), prog.feeds)
    assert info.value.stage == "converter"
    assert runtime.artefacts() == {}, "the state of the last run, reset at its start"


@needs_mnn
def test_mnn_on_a_few_families_is_green_with_its_expectations_writes_artefacts_and_leaves_packages_alone(tmp_path):
    """The converter runs in the worker through its library entry point, never the mnnconvert
    script (whose wrapper runs pip install): the installed packages are the same afterwards, and
    the converter's scratch file lands in its temporary folder, not the working directory."""
    before, files = _packages(), sorted(p.name for p in ROOT.iterdir())
    out = tmp_path / "out"
    conformance("run", ROOT / "cases" / "rnn" / "basic.yaml", ROOT / "cases" / "lstm" / "peephole_output_gate.yaml",
                ROOT / "cases" / "gru" / "linear_before_reset.yaml", "--runtime", "mnn", "--spec", "onnx-14",
                "--out", out, "-q", "--no-ablation", "--artifacts", "full", "--expectations", ROOT / "expectations",
                check=0)
    records = read_results(out / "results.jsonl")
    assert {r["verdict"] for r in records} == {"pass", "fail", "rejected"}
    assert all(r["gate"] in ("expected", "ok") for r in records)
    rejected = [r for r in records if r["verdict"] == "rejected"]
    assert {r["effective"]["stage"] for r in rejected if r["case"].startswith("lstm/")} == {"converter"}
    ran = [r for r in records if r["verdict"] in ("pass", "fail")]
    assert all(len(r["artefacts"]) == 1 and (out / r["artefacts"][0]).stat().st_size > 0 for r in ran)
    assert all(r["artefacts"][0].endswith(".mnn") for r in ran)
    assert _packages() == before
    assert sorted(p.name for p in ROOT.iterdir()) == files  # no .__convert_external_data.bin here


# -- Apache TVM -----------------------------------------------------------------------------------

TVM = importlib.util.find_spec("tvm") is not None
needs_tvm = pytest.mark.skipif(not TVM, reason="Apache TVM is not installed here (pip install -c constraints.txt "
                                              "-e '.[engines]', or nox -s conformance-all)")


def test_tvm_is_a_gap_with_the_reason_where_it_is_not_installed():
    from conformance.runtimes import builtin_targets
    found, gaps = builtin_targets("conformance.runtimes.tvm", {"onnx": ["onnx-22"]})
    if TVM:
        assert [t.id for t in found] == [f"tvm-{metadata.version('apache-tvm')}/CPU@onnx-22"] and not gaps
    else:
        assert not found and gaps[0].runtime == "tvm" and "not installed here" in gaps[0].reason


@needs_tvm
def test_tvm_refuses_the_recurrent_ops_at_its_frontend_and_runs_what_it_has():
    import onnx
    from onnx import TensorProto, helper

    from conformance.runtimes.base import RuntimeRejected
    from conformance.runtimes.tvm import TVMRuntime
    runtime = TVMRuntime()
    case = _case("gru/basic.yaml", "gru/basic[direction=forward,B=random,initial_h=random]")
    prog = SPECS["onnx-14"].translate(case)
    with pytest.raises(RuntimeRejected, match="^TVM ONNX frontend: OpNotImplemented: .*not supported .*: GRU") as info:
        runtime.run(prog.runtime_input(), prog.feeds)
    assert info.value.stage == "converter" and runtime.artefacts() == {}
    # the rest of the path (compile for llvm, the Relax VM) on an op the frontend has
    graph = helper.make_graph([helper.make_node("Tanh", ["X"], ["Y"])], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    [y] = runtime.run(onnx.shape_inference.infer_shapes(model).SerializeToString(), {"X": x})
    np.testing.assert_allclose(y, np.tanh(x), rtol=1e-6)
    assert "R.tanh" in runtime.artefacts()["module.relax.py"].decode()


@needs_tvm
def test_tvm_on_a_family_is_green_with_its_expectations_and_leaves_packages_alone(tmp_path):
    before = _packages()
    out = tmp_path / "out"
    conformance("run", ROOT / "cases" / "lstm" / "basic.yaml", "--runtime", "tvm", "--spec", "onnx-22", "--out", out,
                "-q", "--no-ablation", "--expectations", ROOT / "expectations", check=0)
    records = read_results(out / "results.jsonl")
    assert {r["verdict"] for r in records} == {"rejected"} and {r["gate"] for r in records} == {"expected"}
    assert {r["effective"]["stage"] for r in records} == {"converter"}
    assert _packages() == before


# -- IREE -----------------------------------------------------------------------------------------

IREE = importlib.util.find_spec("iree") is not None and importlib.util.find_spec("iree.runtime") is not None \
    and importlib.util.find_spec("iree.compiler") is not None
needs_iree = pytest.mark.skipif(not IREE, reason="IREE is not installed here (pip install -c constraints.txt "
                                                "-e '.[engines]', or nox -s conformance-all)")


def test_iree_is_a_gap_with_the_reason_where_it_is_not_installed():
    from conformance.runtimes import builtin_targets
    found, gaps = builtin_targets("conformance.runtimes.iree", {"onnx": ["onnx-14"]})
    if IREE:
        assert [t.id for t in found] == [f"iree-{metadata.version('iree-base-compiler')}/CPU@onnx-14"] and not gaps
    else:
        assert not found and gaps[0].runtime == "iree" and "not installed here" in gaps[0].reason


@needs_iree
def test_iree_imports_compiles_and_runs_a_case_and_a_compiler_refusal_names_its_stage():
    from conformance.runtimes.base import RuntimeRejected
    from conformance.runtimes.iree import IREERuntime
    runtime = IREERuntime()
    case = _case("lstm/basic.yaml", "lstm/basic[direction=forward,B=random,initial_h=random,initial_c=random]")
    prog = SPECS["onnx-14"].translate(case)
    outputs = runtime.run(prog.runtime_input(), prog.feeds)
    assert [o.shape for o in outputs] == [(4, 1, 3, 3), (1, 3, 3), (1, 3, 3)]
    kept = runtime.artefacts()
    assert '"onnx.LSTM"' in kept["model.mlir"].decode() and len(kept["module.vmfb"]) > 0
    reverse = _case("gru/basic.yaml", "gru/basic[direction=reverse,B=random,initial_h=random]")
    prog = SPECS["onnx-14"].translate(reverse)
    with pytest.raises(RuntimeRejected, match=r"^IREE compile: <stdin>:\d+:\d+: error: failed to legalize operation "
                                              r"'torch.operator'") as info:
        runtime.run(prog.runtime_input(), prog.feeds)
    assert info.value.stage == "compiler" and "onnx.GRU" in str(info.value)
    assert set(runtime.artefacts()) == {"model.mlir"}, "the import is kept; there is no module"


@needs_iree
def test_iree_on_a_family_is_green_with_its_expectations_and_leaves_packages_alone(tmp_path):
    before = _packages()
    out = tmp_path / "out"
    conformance("run", ROOT / "cases" / "gru" / "basic.yaml", "--runtime", "iree", "--spec", "onnx-22", "-k",
                "B=random", "--out", out, "-q", "--no-ablation", "--artifacts", "full", "--expectations",
                ROOT / "expectations", check=0)
    records = read_results(out / "results.jsonl")
    assert "rejected" in {r["verdict"] for r in records}
    assert all(r["gate"] in ("expected", "ok") for r in records)
    assert {r["effective"]["stage"] for r in records if r["verdict"] == "rejected"} == {"compiler"}
    assert all(any(a.endswith(".model.mlir") for a in r["artefacts"]) for r in records)
    assert _packages() == before
