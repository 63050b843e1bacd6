"""The activation probe (conformance/run/activations.py) through real runtimes and test doubles: a
correct kernel's tanh and sigmoid need nothing beyond the model's own accuracy, a kernel whose tanh is
off is measured so (per op), and the judgement widens only where the measurement passes the model."""

from __future__ import annotations

import json
import subprocess
import sys

from conformance.isolation.workers import Pool
from conformance.runtimes.base import RuntimeRef, Target
from conformance.runtimes.effective import activations_judged, activations_label
from tests.conftest import ROOT, runtime

runtime("onnxruntime")


def _target(path: str, name: str, precision: str = "f32") -> Target:
    return Target(name, "1", "CPU", "default", "onnx-14", RuntimeRef(path), precision=precision)


def test_a_correct_kernel_needs_nothing_and_a_tanh_off_by_one_percent_is_measured_so(tmp_path):
    from conformance.run import activations
    plain = _target("conformance.runtimes.onnxruntime:OnnxRuntime", "onnxruntime")
    wrong = _target("tests.doubles.precision:TanhOff1Tf32", "tanh-off", "tf32")
    with Pool(2) as pool:
        found = activations.measure([plain, wrong], pool, timeout=120.0, folder=tmp_path)
    ort, off = found[plain.ref], found[wrong.ref]
    assert set(ort["by_op"]) == {"RNN", "GRU", "LSTM"} and not ort.get("not_measured")
    assert activations_judged(ort, "GRU") == {}                                  # within the model's own
    assert all(info["points"] == 8193 for per in ort["by_op"].values() for info in per.values())
    judged = activations_judged(off, "LSTM")
    assert set(judged) == {"Tanh"} and judged["Tanh"] > 10_000                    # 1 % is ~84,000 such ulps
    assert all(info["points"] == 2049 for per in off["by_op"].values() for info in per.values())   # TF32's grid
    assert activations_label(off, "RNN").startswith("tanh ≤ ") and "sigmoid" not in activations_label(off, "RNN")


def test_each_target_names_its_kernels_activations_in_its_configuration(tmp_path):
    """Through the run session: the targets' summaries in run.json carry what the probe measured."""
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", ROOT / "cases" / "lstm" / "basic.yaml",
                           "--runtime", "onnxruntime", "--spec", "onnx-14", "--config", "default", "--no-ablation",
                           "--out", out, "-q"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    target = next(t for t in json.loads((out / "run.json").read_text())["targets"] if t["device"] == "CPU")
    measured = target["configuration"]["activations"]["by_op"]["LSTM"]
    assert set(measured) == {"Tanh", "Sigmoid"} and all(v["k"] <= 4 for v in measured.values())


def test_a_pinned_torch_configuration_turns_tf32_off_and_says_so():
    runtime("torch")
    code = ("import json; from conformance.runtimes.torch import TorchRuntime as T; r = T('CPU', '{}'); "
            "print(json.dumps([r.effective(), r.sound()]))")
    pinned, sound = json.loads(subprocess.run([sys.executable, "-c", code.format("precision=pinned")], cwd=ROOT,
                                              capture_output=True, text=True, check=True).stdout)
    assert pinned["cudnn.allow_tf32"] is False and pinned["cuda.matmul.allow_tf32"] is False
    assert pinned["float32_matmul_precision"] == "highest" and "precision" not in pinned and sound is None
    default, _ = json.loads(subprocess.run([sys.executable, "-c", code.format("default")], cwd=ROOT,
                                           capture_output=True, text=True, check=True).stdout)
    assert default["cudnn.allow_tf32"] is True     # torch ships TF32 on in cuDNN (it matters on CUDA only)
