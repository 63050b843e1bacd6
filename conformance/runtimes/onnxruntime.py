"""onnxruntime, one target per execution provider present, in each execution form it takes.

The GPU execution providers (CUDA, TensorRT: the onnxruntime-gpu package) are the targets of
:mod:`conformance.runtimes.onnxruntime_gpu`, which finds them at every run (a GPU is the machine's,
not the package's) in their precision configurations; this module makes the others' targets, a
function of the installed package alone.

A pair runs in a fresh session with one intra-op thread; the forms (conformance/runtimes/forms.py)
load one session for several runs (``load``) and, with ``threads=4``, give it four intra-op threads.
Each session records which execution provider each node was assigned to
(``session.record_ep_graph_assignment_info``), so a pair's record names the provider that really ran
the recurrent node (``path()``), and a node that fell back from the target's provider to another
(a CUDA target whose GRU ran on the CPU) is marked ``fallback``.
"""

from __future__ import annotations

import numpy as np

#: providers that do not execute kernels themselves
NOT_COMPUTE = {"AzureExecutionProvider"}
#: the GPU providers (onnxruntime-gpu), whose targets conformance/runtimes/onnxruntime_gpu.py makes
GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")
#: a provider's device as a target names it, where it is not the provider's name less its suffix
DEVICES = {"TensorrtExecutionProvider": "TensorRT"}
#: provider options that change the arithmetic (CUDA's TF32 switch, TensorRT's reduced precisions)
PRECISION_OPTIONS = ("use_tf32", "trt_fp16_enable", "trt_bf16_enable", "trt_int8_enable",
                     "enable_cuda_graph")
#: the execution forms it takes, beyond the defaults
FORMS_TAKEN = {"shape": ["dynamic"], "weights": ["inputs"], "session": ["reused"], "threads": ["4"]}
#: the session option that makes a session record its nodes' execution providers (onnxruntime 1.23+)
ASSIGNMENT = "session.record_ep_graph_assignment_info"
#: the ops whose assignment is the pair's path
RECURRENT_OPS = ("RNN", "GRU", "LSTM")


def providers() -> list[str]:
    import onnxruntime as ort
    return [p for p in ort.get_available_providers() if p not in NOT_COMPUTE]


def device_of(provider: str) -> str:
    return DEVICES.get(provider, provider.removesuffix("ExecutionProvider"))


class OnnxRuntime:
    name = "onnxruntime"
    format = "onnx"
    forms = FORMS_TAKEN

    def __init__(self, provider: str = "CPUExecutionProvider", config: str = "default"):
        import onnxruntime as ort

        from conformance.runtimes.forms import of
        self._ort = ort
        ort.set_default_logger_severity(4)  # refusals come back as exceptions; keep stderr quiet
        self.provider = provider
        self.version = ort.__version__
        self.device = device_of(provider)
        self.config = config
        self.threads = int(of(config)["threads"])
        self._session = None

    def load(self, model: bytes):
        """The runtime contract's optional ``load``: one session, whose ``run(feeds)`` each call goes
        through (onnxruntime's sessions take calls from several threads at once)."""
        self._session = None
        options = self._ort.SessionOptions()
        options.log_severity_level = 4  # fatal only: refusals come back as exceptions
        options.intra_op_num_threads = self.threads
        try:
            options.add_session_config_entry(ASSIGNMENT, "1")
        except Exception:  # noqa: BLE001, S110 - an older release: no assignment to read
            pass
        self._session = self.session(model, options)
        return _Loaded(self._session)

    def session(self, model: bytes, options):
        """The InferenceSession of ``model``: the target's provider alone is listed (a node it does not
        take is still assigned to the CPU provider, and ``path()`` marks it)."""
        return self._ort.InferenceSession(model, options, providers=[self.provider])

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.load(model).run(feeds)

    def effective(self) -> dict:
        """The session's providers as it resolved them, and the precision options of the target's
        provider as the session resolved them (defaults included): CUDA's TF32 switch, TensorRT's
        reduced precisions. The CPU provider has none and computes in the model's type; what a GPU
        provider's options mean for the precision is declared by its adapter
        (conformance/runtimes/onnxruntime_gpu.py)."""
        session = self._session
        if session is None:
            return {}
        found = {"providers": session.get_providers()}
        options = session.get_provider_options().get(self.provider, {})
        for key in PRECISION_OPTIONS:
            if key in options:
                found[key] = options[key]
        return found

    def path(self) -> dict:
        """Which execution provider the session assigned the recurrent node to, and ``fallback``
        where that is not the target's provider."""
        session = self._session
        reader = getattr(session, "get_provider_graph_assignment_info", None)
        if not callable(reader):
            return {}
        try:
            assigned = [(sub.ep_name, node.op_type, node.name) for sub in reader() for node in sub.get_nodes()]
        except Exception:  # noqa: BLE001 - a release that records nothing
            return {}
        return assignment_path(assigned, self.provider)

    def describe(self) -> dict:
        return {"provider": self.provider, "available_providers": self._ort.get_available_providers(),
                "device": self._ort.get_device()}


class _Loaded:
    def __init__(self, session):
        self.session = session

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.session.run(None, feeds)


def assignment_path(assigned: list[tuple[str, str, str]], provider: str) -> dict:
    """The path of a session's node assignment [(provider, op type, node name)]: the provider of each
    recurrent node, every provider used, and ``fallback`` (in words) where a recurrent node ran on a
    provider other than the target's."""
    recurrent = [(ep, op, name) for ep, op, name in assigned if op in RECURRENT_OPS]
    found: dict = {"providers": sorted({ep for ep, _, _ in assigned})}
    if recurrent:
        found["nodes"] = [f"{op} {name or '(unnamed)'}: {device_of(ep)}" for ep, op, name in recurrent]
    fell = [f"{op} ran on {ep}, not {provider}" for ep, op, _ in recurrent if ep != provider]
    if fell:
        found["fallback"] = "; ".join(fell)
    return found


def targets(specs_by_format: dict):
    """One target per execution provider present but the GPU ones, for every ONNX spec version, in its
    plain configuration and each form configuration (conformance/runtimes/forms.py ``CONFIGURATIONS``):
    :func:`targets_for` the providers onnxruntime lists."""
    import onnxruntime as ort
    return targets_for(providers(), ort.__version__, specs_by_format.get("onnx", []))


def targets_for(available: list[str], version: str, specs: list[str]) -> tuple[list, list]:
    """(targets, gaps) for the execution providers ``available`` of onnxruntime ``version``: one target
    per provider but the GPU ones (conformance/runtimes/onnxruntime_gpu.py), in each configuration, per
    spec."""
    from conformance.runtimes.base import RuntimeRef, Target
    from conformance.runtimes.forms import CONFIGURATIONS, built_config, compose
    found = []
    configs = ["default"] + [compose("default", f) for f in CONFIGURATIONS]
    for provider in [p for p in available if p not in GPU_PROVIDERS]:
        for config in configs:
            built = built_config(config)  # targets that differ only in the suite's forms share a worker
            ref = RuntimeRef("conformance.runtimes.onnxruntime:OnnxRuntime",
                             (("provider", provider),) + ((("config", built),) if built != "default" else ()))
            found += [Target("onnxruntime", version, device_of(provider), config, spec, ref,
                             description=f"onnxruntime {provider}", forms=FORMS_TAKEN)
                      for spec in specs]
    return found, []
