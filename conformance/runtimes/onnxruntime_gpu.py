"""onnxruntime's GPU execution providers, CUDA and TensorRT (the onnxruntime-gpu package): their targets
in their precision configurations, found at every run, and what each declares it computes in.

**CUDA.** Two plain configurations, as OpenVINO has: ``default``, the provider's own options, in which
``use_tf32`` is 1 (float32 GEMMs and convolutions may run on TF32 tensor cores), and
``precision=pinned``, ``use_tf32=0``. The execution forms go on the pinned one, so that a form's
divergence is not hidden behind TF32. **TensorRT.** One plain configuration, ``default``: onnxruntime's
TensorRT provider builds its engines with TensorRT's TF32 builder flag and has no option that clears
it (``trt_fp16_enable``, ``trt_bf16_enable`` and ``trt_int8_enable`` only narrow further), so it
declares TF32 for float32 models, and its forms go on ``default``. Sources: docs/targets.md, "GPUs".

The target's provider is the only one listed to the session: a node it does not take is still
assigned to the CPU provider, and ``path()`` marks the pair ``fallback``. onnxruntime's own Python
fallback (a session whose provider fails is made again on the CPU, saying so only on stdout) is off
(``enable_fallback=0``): a provider that fails raises.

**Where they cannot run.** The package is not imported to find out it has no GPU provider (its
provider libraries are looked for beside it), and a GPU provider that is in the package but cannot
make a session here (no GPU, no driver, no TensorRT) is a declared gap with onnxruntime's reason.
"""

from __future__ import annotations

import functools
import os
import sys

from conformance.runtimes.onnxruntime import FORMS_TAKEN, GPU_PROVIDERS, OnnxRuntime, device_of

CUDA, TENSORRT = GPU_PROVIDERS
PINNED = "precision=pinned"
#: the plain configurations of each GPU provider and the provider options each gives the session (none:
#: the provider's own); the execution forms go on the last one
PLAIN = {CUDA: (("default", ()), (PINNED, (("use_tf32", "0"),))),
         TENSORRT: (("default", ()),)}
#: the shared library each GPU provider is loaded from, beside onnxruntime's own (onnxruntime/capi/)
LIBRARIES = {CUDA: "onnxruntime_providers_cuda", TENSORRT: "onnxruntime_providers_tensorrt"}
#: TF32 tensor cores exist from compute capability 8.0 (Ampere) on
TF32_FROM = (8, 0)
#: the environment variable that turns TF32 off in cuBLAS, cuDNN and TensorRT, whatever is asked
TF32_OVERRIDE = "NVIDIA_TF32_OVERRIDE"


class OnnxRuntimeGPU(OnnxRuntime):
    """onnxruntime on a GPU execution provider, with the provider ``options`` ((key, value) pairs; none:
    the provider's own defaults)."""

    def __init__(self, provider: str = CUDA, config: str = "default", options: tuple = ()):
        super().__init__(provider, config)
        self.options = dict(options)
        preload(self._ort)

    def session(self, model: bytes, options):
        session = self._ort.InferenceSession(model, options, providers=[(self.provider, dict(self.options))],
                                             enable_fallback=0)
        if self.provider not in session.get_providers():
            raise RuntimeError(f"onnxruntime made the session without {self.provider} (its providers: "
                               f"{session.get_providers()}): the provider cannot run here")
        return session

    def effective(self) -> dict:
        """The session's providers and the provider's resolved precision options (``use_tf32`` as the
        session resolved it, its default included), and the precision they make a float32 model
        compute in (:func:`declared_precision`)."""
        found = super().effective()
        if not found or self._session is None:
            return found
        override = os.environ.get(TF32_OVERRIDE)
        if override is not None:
            found[TF32_OVERRIDE] = override
        float32 = any(i.type == "tensor(float)" for i in self._session.get_inputs())
        resolved = self._session.get_provider_options().get(self.provider, {})
        precision = declared_precision(self.provider, resolved, cuda_device().get("capability", ""), override)
        if float32 and precision:
            found["precision"] = precision
        return found

    def describe(self) -> dict:
        return {**super().describe(), "provider_options": self.options, **cuda_device()}


def preload(ort) -> None:
    """onnxruntime's own loading of the CUDA and cuDNN libraries pip installed beside it (the nvidia-*
    packages of ``onnxruntime-gpu[cuda,cudnn]``), where the release has it (``preload_dlls``, 1.21 on):
    without it the CUDA provider finds them only on the loader's path."""
    loader = getattr(ort, "preload_dlls", None)
    if callable(loader):
        try:
            loader()
        except Exception:  # noqa: BLE001, S110 - then the loader's path decides, and the session says why
            pass


def truthy(value) -> bool:
    return str(value).strip().lower() in ("1", "true")


def declared_precision(provider: str, options: dict, capability: str = "", override: str | None = None) -> str:
    """What a float32 model computes in on ``provider`` under its resolved provider ``options``, as
    declared ('' for float32 itself): TensorRT's fp16 or bf16 where enabled, else TF32 (its builder
    flag is on, and no option clears it); CUDA's TF32 where ``use_tf32`` is 1. TF32 only on a GPU of
    compute capability 8.0 or more (where ``capability`` is known) and where ``NVIDIA_TF32_OVERRIDE``
    is not 0."""
    if provider == TENSORRT:
        if truthy(options.get("trt_fp16_enable", "0")):
            return "f16"
        if truthy(options.get("trt_bf16_enable", "0")):
            return "bf16"
        tf32 = True
    else:
        tf32 = provider == CUDA and truthy(options.get("use_tf32", "0"))
    return "tf32" if tf32 and tf32_capable(capability) and override != "0" else ""


def tf32_capable(capability: str) -> bool:
    """Whether a GPU of compute capability ``capability`` ("9.0") has TF32; unknown ('') counts as yes."""
    try:
        return tuple(int(p) for p in capability.split(".")[:2]) >= TF32_FROM
    except ValueError:
        return True


@functools.cache
def cuda_device(index: int = 0) -> dict:
    """The CUDA driver's name and compute capability of device ``index`` ({} where no driver answers)."""
    import ctypes
    try:
        driver = ctypes.CDLL("nvcuda.dll" if os.name == "nt" else "libcuda.so.1")
        device, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        name = ctypes.create_string_buffer(256)
        if driver.cuInit(0) or driver.cuDeviceGet(ctypes.byref(device), index):
            return {}
        # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR and _MINOR
        if driver.cuDeviceGetAttribute(ctypes.byref(major), 75, device) or \
                driver.cuDeviceGetAttribute(ctypes.byref(minor), 76, device):
            return {}
        driver.cuDeviceGetName(name, len(name), device)
    except (OSError, AttributeError):
        return {}
    return {"device_name": name.value.decode(errors="replace"), "capability": f"{major.value}.{minor.value}"}


def configurations(provider: str) -> list[tuple[str, tuple]]:
    """(configuration, provider options) of a GPU provider's targets: its plain ones, then each form
    configuration on the last of them (conformance/runtimes/forms.py ``CONFIGURATIONS``)."""
    from conformance.runtimes.forms import CONFIGURATIONS, compose
    plain = list(PLAIN[provider])
    base, options = plain[-1]
    return plain + [(compose(base, f), options) for f in CONFIGURATIONS]


def targets_for(available: list[str], version: str, specs: list[str], unusable: dict[str, str]) -> tuple[list, list]:
    """(targets, gaps) of the GPU providers among ``available`` (onnxruntime ``version``'s), per
    configuration and spec; a provider in ``unusable`` ({provider: why}) is a gap with that reason, and so
    is a GPU provider the package lacks where it has the other."""
    from conformance.runtimes.base import RuntimeRef, Target
    from conformance.runtimes.forms import built_config
    found: list = []
    gaps: list[tuple[str, str]] = []
    if not specs:
        return found, gaps
    if not set(GPU_PROVIDERS) & set(available):
        return found, [("onnxruntime", NO_GPU_PROVIDER.format(where=f"onnxruntime {version}"))]
    path = f"{OnnxRuntimeGPU.__module__}:{OnnxRuntimeGPU.__qualname__}"
    for provider in GPU_PROVIDERS:
        device = device_of(provider)
        if provider not in available:
            gaps.append(("onnxruntime", f"{device}: onnxruntime {version} has no {provider} (its providers: "
                                        f"{', '.join(available)})"))
            continue
        if provider in unusable:
            gaps.append(("onnxruntime", f"{device}: onnxruntime {version}'s {provider} cannot run here: "
                                        f"{unusable[provider]}; {device} not checked"))
            continue
        for config, options in configurations(provider):
            built = built_config(config)  # targets that differ only in the suite's forms share a worker
            kwargs = (("provider", provider),) + ((("config", built),) if built != "default" else ()) \
                + ((("options", options),) if options else ())
            said = f" ({', '.join(f'{k}={v}' for k, v in options)})" if options else ""
            found += [Target("onnxruntime", version, device, config, spec, RuntimeRef(path, kwargs),
                             description=f"onnxruntime {provider}{said}", forms=FORMS_TAKEN)
                      for spec in specs]
    return found, gaps


def packaged(location: str | None) -> list[str]:
    """The GPU providers whose library the onnxruntime package at ``location`` (its folder) ships."""
    if not location:
        return []
    capi = os.path.join(location, "capi")
    names = os.listdir(capi) if os.path.isdir(capi) else []
    return [p for p in GPU_PROVIDERS if any(LIBRARIES[p] in name for name in names)]


def why_unusable(provider: str) -> str:
    """'' where a session of a one-node model gets ``provider`` here, else why not: onnxruntime's error,
    or what it logged when it made the session without it (a provider library that did not load)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "probe",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "ab"],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8).SerializeToString()
    preload(ort)
    options = ort.SessionOptions()
    options.log_severity_level = 2  # warnings: why a provider was not created
    try:
        session, logged = _stderr_of(lambda: ort.InferenceSession(model, options, providers=[provider],
                                                                  enable_fallback=0))
    except Exception as exc:  # noqa: BLE001 - its refusal is the reason
        return _last_line(str(exc))
    if provider in session.get_providers():
        return ""
    said = [line for line in logged.splitlines() if "Failed" in line or "rror" in line]
    return (f"onnxruntime made a session without it (providers: {session.get_providers()})"
            + (f": {_last_line(' '.join(said[:2]))}" if said else ""))


def _last_line(text: str, limit: int = 400) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else text.strip())[:limit]


def _stderr_of(call):
    """``call()``'s result and what was written to the stderr file descriptor meanwhile (native code's
    log lines included)."""
    import tempfile
    sys.stderr.flush()
    with tempfile.TemporaryFile() as held:
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        try:
            result = call()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        held.seek(0)
        return result, held.read().decode(errors="replace")


def targets(specs_by_format: dict):
    """The GPU providers' targets, found at every run (whether one can run is the machine's); where the
    installed onnxruntime ships no GPU provider library, a gap that says so, without importing it."""
    import importlib.util
    specs = specs_by_format.get("onnx", [])
    spec = importlib.util.find_spec("onnxruntime") if specs else None
    if spec is None:
        return [], []   # no onnxruntime at all: the onnxruntime module's gap says so
    location = next(iter(spec.submodule_search_locations or []), None)
    if not packaged(location):
        return [], [("onnxruntime", NO_GPU_PROVIDER.format(where=location))]
    import onnxruntime as ort

    from conformance.runtimes.onnxruntime import providers
    available = providers()
    unusable = {p: why for p in GPU_PROVIDERS if p in available for why in [why_unusable(p)] if why}
    return targets_for(available, ort.__version__, specs, unusable)


#: the gap of an onnxruntime package that ships no GPU provider (the onnxruntime distribution)
NO_GPU_PROVIDER = ("CUDA, TensorRT: the installed onnxruntime package ({where}) ships no GPU execution provider; "
                   "the onnxruntime-gpu package has CUDA's and TensorRT's: nox -s conformance-gpu installs it "
                   "(docs/targets.md, \"GPUs\")")
