"""The GPU runtimes on the real packages of this machine (no GPU here or in CI): the CPU onnxruntime still
makes exactly the targets it made before the GPU providers were split off (so CPU verdicts do not
change), and every GPU runtime that cannot run here is a declared gap with its reason.

The target construction from given provider and device lists: tests/unit/test_gpu_runtimes.py."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.conftest import runtime

ort = runtime("onnxruntime")

SPECS = ["onnx-7", "onnx-14", "onnx-22"]
FORMS = ["shape=dynamic", "weights=inputs", "shape=dynamic/session=reused", "threads=4", "relations=on"]


def _gpu_package() -> bool:
    from conformance.runtimes.onnxruntime_gpu import packaged
    spec = importlib.util.find_spec("onnxruntime")
    return bool(packaged(next(iter(spec.submodule_search_locations or []), None))) if spec else False


def test_the_cpu_onnxruntime_makes_exactly_the_targets_it_made_before():
    from conformance.runtimes import discover
    v = ort.__version__
    before = [f"onnxruntime-{v}/CPU{'' if not c else '/' + c}@{s}" for c in ["", *FORMS] for s in SPECS]
    found, skipped = discover({"onnx": SPECS}, use_entry_points=False, runtimes=("onnxruntime",))
    cpu = [t for t in found if t.runtime == "onnxruntime" and t.device == "CPU"]
    assert [t.id for t in cpu] == before
    assert {t.ref.path for t in cpu} == {"conformance.runtimes.onnxruntime:OnnxRuntime"}
    assert {dict(t.ref.kwargs).get("config", "default") for t in cpu} == {"default", "threads=4"}
    if not _gpu_package():
        assert [t.device for t in found if t.runtime == "onnxruntime"] == ["CPU"] * len(before)
        (gap,) = [s for s in skipped if s.runtime == "onnxruntime"]
        assert gap.reason.startswith("CUDA, TensorRT: the installed onnxruntime package (")
        assert "ships no GPU execution provider" in gap.reason and "nox -s conformance-gpu" in gap.reason


def test_the_cpu_provider_runs_and_reports_as_before():
    from conformance.run.probe import probe_case
    from conformance.runtimes.onnxruntime import OnnxRuntime
    from conformance.specs import SPECS as ALL
    from conformance.specs import translate
    prog = translate(ALL["onnx-14"], probe_case())
    rt = OnnxRuntime()
    outputs = rt.run(prog.runtime_input(), prog.feeds)
    assert outputs and np.isfinite(np.asarray(outputs[0], dtype=np.float64)).all()
    cpu = "CPUExecutionProvider"
    assert rt.effective() == {"providers": [cpu]}   # no precision option, no precision declared
    assert rt.path()["providers"] == [cpu] and "fallback" not in rt.path()


@pytest.mark.skipif(_gpu_package(), reason="this onnxruntime ships a GPU provider: the other case is its own")
def test_a_gpu_target_whose_provider_cannot_run_raises_instead_of_running_on_the_cpu():
    """onnxruntime makes a session without a provider it lacks (warning that it is not available):
    the GPU adapter refuses such a session, so a CUDA target never computes on the CPU unnoticed."""
    from conformance.run.probe import probe_case
    from conformance.runtimes.onnxruntime_gpu import CUDA, TENSORRT, OnnxRuntimeGPU, why_unusable
    from conformance.specs import SPECS as ALL
    from conformance.specs import translate
    prog = translate(ALL["onnx-14"], probe_case())
    rt = OnnxRuntimeGPU(CUDA, "precision=pinned", (("use_tf32", "0"),))
    assert rt.options == {"use_tf32": "0"} and rt.describe()["provider_options"] == {"use_tf32": "0"}
    with pytest.raises(Exception, match="CUDAExecutionProvider"):
        rt.run(prog.runtime_input(), prog.feeds)
    for provider in (CUDA, TENSORRT):
        assert why_unusable(provider)   # a reason, never ''


def test_openvino_without_a_gpu_says_so_once():
    runtime("openvino")
    from conformance.runtimes.openvino import targets
    from conformance.runtimes.openvino_targets import devices
    found, gaps = targets({"onnx": ["onnx-14"], "openvino-ir": ["openvino-opset5"]})
    if any(d.startswith("GPU") for d in devices()):
        assert gaps == [] and any(t.device.startswith("GPU") for t in found)
    else:
        (gap,) = gaps
        assert gap[0] == "openvino" and gap[1].startswith("GPU: OpenVINO ") and "not checked" in gap[1]
        assert {t.device for t in found} <= {"CPU", "NPU"}
