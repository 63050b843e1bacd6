"""The GPU runtimes' targets, built from what each runtime offers given as data (no GPU, no runtime
imported): onnxruntime's CUDA and TensorRT execution providers (conformance/runtimes/onnxruntime_gpu.py),
OpenVINO's GPU plugin (conformance/runtimes/openvino_targets.py), WebNN's gpu deviceType
(conformance/runtimes/webnn.py ``targets_in``); their declared gaps; and the precision each declares.

The runtime tier's tests of the same: tests/runtime/test_gpu_runtimes.py."""

from __future__ import annotations

import pytest

from conformance.runtimes.forms import CONFIGURATIONS, asked, base_config

CPU, CUDA, TRT = "CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider"
GPU_PACKAGE = [TRT, CUDA, CPU]   # onnxruntime-gpu's get_available_providers(), as 1.31 lists them
SPECS = ["onnx-7", "onnx-14", "onnx-22"]
#: the form configurations' part after the base, in the table's order
FORMS = ["shape=dynamic", "weights=inputs", "shape=dynamic/session=reused", "threads=4", "relations=on"]


def cpu_ids(version: str, specs: list[str]) -> list[str]:
    """The ids the CPU provider had before the GPU providers were split off: the same, in the same order."""
    return [f"onnxruntime-{version}/CPU{'' if not c else '/' + c}@{s}" for c in ["", *FORMS] for s in specs]


# -- onnxruntime: the CPU provider's targets do not change ----------------------------------------

def test_the_cpu_provider_makes_exactly_the_targets_it_made_before():
    from conformance.runtimes.onnxruntime import targets_for
    for available in ([CPU], GPU_PACKAGE):
        found, gaps = targets_for(available, "1.32.0", SPECS)
        assert [t.id for t in found] == cpu_ids("1.32.0", SPECS) and gaps == []
        for t in found:
            built = [("config", c) for c in [base_config(t.config)] if c != "default"]
            if asked(t.config).get("threads") == "4":
                built = [("config", "threads=4")]
            assert t.ref.path == "conformance.runtimes.onnxruntime:OnnxRuntime"
            assert t.ref.kwargs == (("provider", CPU), *built), t.id


# -- onnxruntime: CUDA and TensorRT -----------------------------------------------------------------

def test_cuda_has_two_precision_configurations_and_its_forms_on_the_pinned_one():
    from conformance.runtimes.onnxruntime_gpu import targets_for
    found, gaps = targets_for(GPU_PACKAGE, "1.31.1", ["onnx-14"], {})
    assert gaps == []
    cuda = [t for t in found if t.device == "CUDA"]
    assert [t.id for t in cuda] == ["onnxruntime-1.31.1/CUDA@onnx-14",
                                    "onnxruntime-1.31.1/CUDA/precision=pinned@onnx-14",
                                    *(f"onnxruntime-1.31.1/CUDA/precision=pinned/{f}@onnx-14" for f in FORMS)]
    assert len(FORMS) == len(CONFIGURATIONS)
    by_config = {t.config: t.ref for t in cuda}
    assert by_config["default"].kwargs == (("provider", CUDA),)   # the provider's own options: use_tf32 is 1
    pinned = (("provider", CUDA), ("config", "precision=pinned"), ("options", (("use_tf32", "0"),)))
    assert by_config["precision=pinned"].kwargs == pinned
    assert by_config["precision=pinned/shape=dynamic"] == by_config["precision=pinned"]   # one worker
    assert by_config["precision=pinned/threads=4"].kwargs == (
        ("provider", CUDA), ("config", "precision=pinned/threads=4"), ("options", (("use_tf32", "0"),)))
    assert all(t.ref.path == "conformance.runtimes.onnxruntime_gpu:OnnxRuntimeGPU" and t.runtime == "onnxruntime"
               and t.runtime_family == "onnxruntime" and t.forms for t in cuda)
    assert "use_tf32=0" in cuda[1].description and "use_tf32" not in cuda[0].description


def test_tensorrt_has_no_pinned_configuration_and_its_forms_on_the_default_one():
    from conformance.runtimes.onnxruntime_gpu import targets_for
    found, _ = targets_for(GPU_PACKAGE, "1.31.1", ["onnx-14"], {})
    trt = [t for t in found if t.device == "TensorRT"]
    assert [t.config for t in trt] == ["default", *FORMS]
    assert all(t.ref.kwargs[0] == ("provider", TRT) and "options" not in dict(t.ref.kwargs) for t in trt)


def test_the_pinned_sibling_of_the_cuda_default_is_found_by_the_ablation():
    from conformance.run.ablation_axes import pinned_sibling
    from conformance.runtimes.onnxruntime import targets_for as cpu_targets
    from conformance.runtimes.onnxruntime_gpu import targets_for
    found, _ = targets_for(GPU_PACKAGE, "1.31.1", ["onnx-14", "onnx-22"], {})
    everything = found + cpu_targets(GPU_PACKAGE, "1.31.1", ["onnx-14", "onnx-22"])[0]
    for spec in ("onnx-14", "onnx-22"):
        default = next(t for t in found if t.device == "CUDA" and t.config == "default" and t.spec == spec)
        sibling = pinned_sibling(default, everything)
        assert sibling is not None and sibling.id == f"onnxruntime-1.31.1/CUDA/precision=pinned@{spec}"
        trt = next(t for t in found if t.device == "TensorRT" and t.config == "default" and t.spec == spec)
        assert pinned_sibling(trt, everything) is None   # no option pins TensorRT: nothing to compare with
        cpu = next(t for t in everything if t.device == "CPU" and t.config == "default" and t.spec == spec)
        assert pinned_sibling(cpu, everything) is None


def test_the_precision_a_target_computes_in_is_named_in_its_id():
    import dataclasses

    from conformance.runtimes.onnxruntime_gpu import targets_for
    found, _ = targets_for(GPU_PACKAGE, "1.31.1", ["onnx-14"], {})
    cuda = {t.config: t for t in found if t.device == "CUDA"}
    assert dataclasses.replace(cuda["default"], precision="tf32").id == \
        "onnxruntime-1.31.1/CUDA/precision=default→tf32@onnx-14"
    assert dataclasses.replace(cuda["precision=pinned"], precision="f32").id == \
        "onnxruntime-1.31.1/CUDA/precision=pinned@onnx-14"
    # where the pinned configuration still measures narrower, its id says so too
    assert dataclasses.replace(cuda["precision=pinned/shape=dynamic"], precision="tf32").id == \
        "onnxruntime-1.31.1/CUDA/precision=pinned→tf32/shape=dynamic@onnx-14"


def test_a_gpu_provider_that_cannot_run_here_is_a_gap_with_its_reason():
    from conformance.runtimes.onnxruntime_gpu import targets_for
    why = "Failed to load library libonnxruntime_providers_tensorrt.so with error: libnvinfer.so.10: cannot open"
    found, gaps = targets_for(GPU_PACKAGE, "1.31.1", ["onnx-14"], {TRT: why})
    assert {t.device for t in found} == {"CUDA"}
    assert gaps == [("onnxruntime", f"TensorRT: onnxruntime 1.31.1's {TRT} cannot run here: {why}; "
                                    "TensorRT not checked")]
    found, gaps = targets_for(GPU_PACKAGE, "1.31.1", ["onnx-14"], {CUDA: "no CUDA-capable device is detected",
                                                                  TRT: why})
    assert found == [] and [g[1].split(":")[0] for g in gaps] == ["CUDA", "TensorRT"]
    assert "no CUDA-capable device is detected; CUDA not checked" in gaps[0][1]


def test_a_package_without_gpu_providers_says_so_and_one_without_tensorrt_too():
    from conformance.runtimes.onnxruntime_gpu import NO_GPU_PROVIDER, targets_for
    assert targets_for([CPU], "1.32.0", SPECS, {}) == (
        [], [("onnxruntime", NO_GPU_PROVIDER.format(where="onnxruntime 1.32.0"))])
    assert "onnxruntime-gpu" in NO_GPU_PROVIDER and "nox -s conformance-gpu" in NO_GPU_PROVIDER
    found, gaps = targets_for([CUDA, CPU], "1.31.1", ["onnx-14"], {})
    assert {t.device for t in found} == {"CUDA"}
    assert gaps == [("onnxruntime", f"TensorRT: onnxruntime 1.31.1 has no {TRT} (its providers: {CUDA}, {CPU})")]
    assert targets_for(GPU_PACKAGE, "1.31.1", [], {}) == ([], [])   # no ONNX spec selected: nothing to say


def test_the_gpu_provider_libraries_are_looked_for_beside_the_package(tmp_path):
    from conformance.runtimes.onnxruntime_gpu import packaged
    (tmp_path / "capi").mkdir()
    (tmp_path / "capi" / "libonnxruntime.so.1.32.0").write_bytes(b"")
    assert packaged(str(tmp_path)) == [] and packaged(None) == [] and packaged(str(tmp_path / "absent")) == []
    (tmp_path / "capi" / "libonnxruntime_providers_cuda.so").write_bytes(b"")
    assert packaged(str(tmp_path)) == [CUDA]
    (tmp_path / "capi" / "onnxruntime_providers_tensorrt.dll").write_bytes(b"")
    assert packaged(str(tmp_path)) == [CUDA, TRT]


@pytest.mark.parametrize(("provider", "options", "capability", "override", "precision"), [
    (CUDA, {"use_tf32": "1"}, "9.0", None, "tf32"),      # the provider's default (docs/targets.md, "GPUs")
    (CUDA, {"use_tf32": "0"}, "9.0", None, ""),          # the pinned configuration
    (CUDA, {}, "9.0", None, ""),                         # a release without the option
    (CUDA, {"use_tf32": "1"}, "7.5", None, ""),          # no TF32 before Ampere
    (CUDA, {"use_tf32": "1"}, "", None, "tf32"),         # capability unknown: as the options say
    (CUDA, {"use_tf32": "1"}, "8.0", "0", ""),           # NVIDIA_TF32_OVERRIDE=0 turns it off everywhere
    (TRT, {"trt_fp16_enable": "0"}, "9.0", None, "tf32"),  # TensorRT's TF32 builder flag, no option to clear
    (TRT, {"trt_fp16_enable": "1"}, "9.0", None, "f16"),
    (TRT, {"trt_fp16_enable": "False", "trt_bf16_enable": "True"}, "9.0", None, "bf16"),
    (TRT, {}, "8.6", "0", ""),
    (CPU, {}, "9.0", None, ""),
])
def test_the_precision_a_gpu_provider_declares(provider, options, capability, override, precision):
    from conformance.runtimes.onnxruntime_gpu import declared_precision
    assert declared_precision(provider, options, capability, override) == precision


# -- OpenVINO's GPU plugin ------------------------------------------------------------------------

def test_every_openvino_way_in_makes_gpu_targets_where_openvino_offers_a_gpu():
    from conformance.runtimes.openvino import CONFIGS
    from conformance.runtimes.openvino_targets import FORMATS, gaps_of, targets_of
    for fmt in FORMATS:
        found = targets_of(fmt, ["spec-a"], "way in", ["CPU", "GPU.0", "GPU.1"], "2026.4.1")
        for device in ("CPU", "GPU.0", "GPU.1"):
            mine = [t for t in found if t.device == device]
            assert [t.config for t in mine] == list(CONFIGS) and all(t.format == fmt for t in mine)
            assert all(dict(t.ref.kwargs)["device"] == device for t in mine)
        assert "openvino-2026.4.1/GPU.0/precision=pinned@spec-a" in [t.id for t in found]
    assert gaps_of({"onnx": ["onnx-14"]}, ["CPU", "GPU"], "2026.4.1") == []


def test_openvino_without_a_gpu_is_a_gap_with_its_reason_once_for_every_way_in():
    from conformance.runtimes.openvino_targets import gaps_of
    (gap,) = gaps_of({"onnx": ["onnx-14"], "openvino-ir": ["openvino-opset5"]}, ["CPU"], "2026.4.1")
    assert gap[0] == "openvino" and gap[1].startswith("GPU: OpenVINO 2026.4.1 offers no GPU device here (its "
                                                      "devices: CPU)")
    assert "Intel GPU" in gap[1] and "not checked" in gap[1]
    assert gaps_of({"openvino-model": ["openvino-memory-opset5"]}, [], "2026.4.1")[0][1].count("devices: none") == 1
    assert gaps_of({"torch": ["torch"], "onnx": []}, ["CPU"], "2026.4.1") == []   # no OpenVINO spec selected


# -- WebNN's gpu deviceType -------------------------------------------------------------------------

def _browser(**contexts):
    from conformance.runtimes.webnn_browser import Browser
    cpu = {"ok": True, "options": {"deviceType": "cpu"}, "accelerated": False, "opSupportLimits": {"gru": 1}}
    facts = {"version": "HeadlessChrome/153.0.8010.0", "contextOptionsRead": ["deviceType"],
             "contexts": {"cpu": cpu, **contexts}, "backend": "LiteRT"}
    return Browser("/opt/chromium/chrome", "found on this machine", facts)


def test_webnn_makes_a_gpu_target_where_the_gpu_context_is_its_own():
    from conformance.runtimes.webnn import targets_in
    gpu = {"ok": True, "options": {"deviceType": "gpu"}, "accelerated": True, "opSupportLimits": {"gru": 2}}
    found, gaps = targets_in(_browser(gpu=gpu), ["webnn-cr-20260122"], [])
    assert [t.id for t in found] == ["webnn-chrome-153.0.8010.0/CPU@webnn-cr-20260122",
                                     "webnn-chrome-153.0.8010.0/GPU@webnn-cr-20260122"] and gaps == []
    assert dict(found[1].ref.kwargs)["context_options"] == '{"deviceType": "gpu"}'


def test_webnn_without_a_gpu_is_a_gap_with_its_reason():
    from conformance.runtimes.webnn import DEVICES_ENV, targets_in
    rejected = {"ok": False, "options": {"deviceType": "gpu"}, "error": "NotSupportedError: GPU is not available"}
    found, gaps = targets_in(_browser(gpu=rejected), ["webnn-cr-20260122"], [])
    assert [t.device for t in found] == ["CPU"]
    assert gaps == [("webnn", 'chrome-153.0.8010.0: createContext({"deviceType": "gpu"}) for deviceType \'gpu\' '
                              "rejects: NotSupportedError: GPU is not available")]
    same = {"ok": True, "options": {"deviceType": "gpu"}, "accelerated": False, "opSupportLimits": {"gru": 1}}
    found, gaps = targets_in(_browser(gpu=same), ["webnn-cr-20260122"], [])
    assert [t.device for t in found] == ["CPU"] and "deviceType 'gpu' folded into CPU" in gaps[0][1]
    assert f"{DEVICES_ENV}=cpu,gpu makes it a target" in gaps[0][1]
    found, gaps = targets_in(_browser(gpu=same), ["webnn-cr-20260122"], ["cpu", "gpu"])
    assert [t.device for t in found] == ["CPU", "GPU"] and gaps == []


# -- the probe measures the target's provider, not the one its node fell back to -------------------

class _FallsBackOnRelu:
    """A test double of the worker pool (conformance/isolation/workers.py ``Pool.outcomes``): it answers
    the probe as onnxruntime's CUDA provider did on an H200 (docs/targets.md, "GPUs"), whose session
    left the Relu RNN to the CPU provider and ran the Tanh one itself."""

    def __init__(self):
        self.asked: list[str] = []

    def outcomes(self, jobs):
        import numpy as np

        from conformance.isolation.jobs import Outcome
        for job in jobs:
            if job.key[0] == "activations":   # the activation probe (conformance/run/activations.py): not modelled
                yield Outcome(job.key, "error", error="not modelled by this test double")
                continue
            _, ref, prog = job.key
            relu = b"Relu" in bytes(prog.runtime_input())   # the ONNX model's activation
            self.asked.append("Relu" if relu else "Tanh")
            x = prog.feeds["X"].astype(np.float64)
            y = np.tanh(x[0, :, 0] * 2.0 ** 10 + x[0, :, 1] * 2.0 ** -64).astype(np.float32)[None, :, None]
            ran = "CPUExecutionProvider" if relu else "CUDAExecutionProvider"
            path = {"providers": [ran], "nodes": [f"RNN rnn0: {ran[:-17]}"]}
            if relu:
                path["fallback"] = "RNN ran on CPUExecutionProvider, not CUDAExecutionProvider"
            yield Outcome(job.key, "ok", value=[y if canonical == "Y_h" else None for _, canonical in prog.outputs],
                          effective={"providers": [ran], "use_tf32": "1", "precision": "tf32", "path": path})


def test_a_probe_that_fell_back_to_another_provider_is_not_a_measurement(tmp_path):
    from conformance.run.probe import measured
    from conformance.runtimes.effective import summary
    from conformance.runtimes.onnxruntime_gpu import targets_for
    found, _ = targets_for(GPU_PACKAGE, "1.31.1", ["onnx-14"], {})
    default = next(t for t in found if t.device == "CUDA" and t.config == "default")
    pool = _FallsBackOnRelu()
    (got,) = measured([default], pool, folder=tmp_path)
    assert pool.asked == ["Relu", "Tanh"]   # the Relu probe ran on the CPU: the Tanh one is asked
    assert got.configuration["probe"] == "measured" and got.configuration["measured"]["activation"] == "Tanh"
    assert got.precision == "tf32" and got.id == "onnxruntime-1.31.1/CUDA/precision=default→tf32@onnx-14"
    assert "computes float32 in tf32" in summary(got.configuration)
