"""OpenVINO's targets: the devices it offers (CPU, GPU, NPU), every way in (the ONNX frontend, the IR
read from its files, the native op built in memory) per device and configuration, and the declared gap
where it offers no GPU.

OpenVINO's GPU plugin runs on Intel GPUs (integrated and discrete) through their OpenCL driver; where
``Core().available_devices`` lists a ``GPU`` (``GPU.0``, ``GPU.1`` with several), each way in makes its
targets there in both configurations. Its ``default`` computes float32 in f16 (the GPU plugin's
``INFERENCE_PRECISION_HINT``), which the adapter reports from the compiled model, so the id says
``precision=default→f16``; ``precision=pinned`` asks for f32 (docs/targets.md, "GPUs").
"""

from __future__ import annotations

from conformance.runtimes.openvino import CONFIGS, FORMS_TAKEN, OpenVINO
from conformance.runtimes.openvino_batches import BATCH

#: the kinds of device the suite makes OpenVINO targets on (a device is KIND or KIND.N)
KINDS = ("CPU", "GPU", "NPU")
#: the program formats of OpenVINO's ways in: the ONNX frontend, the IR, in memory
FORMATS = ("onnx", "openvino-ir", "openvino-model")


def devices() -> list[str]:
    """The devices OpenVINO offers here, of the kinds in :data:`KINDS`."""
    import openvino as ov
    return [d for d in ov.Core().available_devices if d.split(".")[0] in KINDS]


def targets_of(fmt: str, specs: list, description: str, found: list[str] | None = None,
               release: str | None = None) -> list:
    """OpenVINO's targets for programs of format ``fmt``: one per device (``found``, else the devices
    offered here) and configuration, for every spec in ``specs``. Every way in of one device and
    configuration runs on the same :class:`~conformance.runtimes.openvino.OpenVINO` worker (one
    ``RuntimeRef``)."""
    from conformance.runtimes.base import RuntimeRef, Target
    from conformance.runtimes.forms import built_config
    from conformance.runtimes.openvino import version
    found = devices() if found is None else found
    release = version() if release is None else release
    path = f"{OpenVINO.__module__}:{OpenVINO.__qualname__}"
    return [Target("openvino", release, device, config, spec,
                   RuntimeRef(path, (("device", device), ("config", built_config(config)))), format=fmt,
                   description=description, batch=BATCH, forms=FORMS_TAKEN)
            for device in found for config in CONFIGS for spec in specs]


def gaps_of(specs_by_format: dict, found: list[str], release: str) -> list[tuple[str, str]]:
    """Where OpenVINO ``release`` offers no GPU among ``found`` while one of its ways in has specs to
    run, the gap that says so, once for all of them."""
    if not any(specs_by_format.get(fmt) for fmt in FORMATS) or any(d.split(".")[0] == "GPU" for d in found):
        return []
    return [("openvino", f"GPU: OpenVINO {release} offers no GPU device here (its devices: "
                         f"{', '.join(found) or 'none'}); its GPU plugin runs on an Intel GPU through the GPU's "
                         f"OpenCL driver; OpenVINO on GPU (ONNX frontend, IR, in memory) not checked")]
