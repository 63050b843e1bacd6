"""The runtime contract, and the picklable reference a worker process rebuilds a runtime from.

The minimal plugin contract (docs/plugins.md, "The contract"): an object with ``name`` (str),
``format = "onnx"`` and ``run(model: bytes, feeds: dict[str, numpy.ndarray]) -> list[numpy.ndarray]``
returning the model's outputs in order; raising means the runtime rejected the model. Optional
attributes ``version``, ``device`` and ``config`` (str) name the target more precisely. Optional
methods report the configuration really in effect (:mod:`conformance.runtimes.effective`):
``effective() -> dict``, called after each ``run``, says what that call computed in, read from the
compiled or loaded object (``{"precision": "bf16", ...}``); ``describe() -> dict`` gives the
target's static facts (device name, capabilities).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

# the answers ``run_many`` may give per program: defined below the runtimes, beside the worker that reads them
from conformance.isolation.jobs import RanAlone as RanAlone
from conformance.isolation.jobs import RanMerged as RanMerged
from conformance.runtimes.configuration import TargetConfig, TargetName


@runtime_checkable
class Runtime(Protocol):
    name: str
    format: str

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]: ...


@dataclass(frozen=True)
class RuntimeRef:
    """How to build a runtime in any process: ``module:attr`` plus keyword arguments.

    ``attr`` may be a class (instantiated with ``kwargs``), a factory function, or an instance.
    ``cwd`` is the folder the user named the plugin from (``--runtime-plugin my_module:Cls``): a
    module found nowhere else is imported from there, as ``python -m`` and pytest would, in every
    process that builds the runtime (the workers are spawned, possibly elsewhere).
    """

    path: str
    kwargs: tuple = ()
    cwd: str = ""

    def build(self):
        module, _, attr = self.path.partition(":")
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            top = module.split(".")[0]
            if not self.cwd or exc.name not in (top, module) or self.cwd in sys.path:
                raise
            sys.path.append(self.cwd)  # after everything installed: it never shadows a package
            importlib.invalidate_caches()
            obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "run")):
            obj = obj(**dict(self.kwargs))
        return obj


@dataclass(frozen=True)
class Target:
    """runtime × device × configuration × spec version: one column of the report."""

    runtime: str          # e.g. "onnxruntime"
    version: str          # e.g. "1.32.0"
    device: str           # e.g. "CPU"
    config: str           # e.g. "default"
    spec: str             # e.g. "onnx-14"
    ref: RuntimeRef = field(compare=False)
    format: str = "onnx"
    plugin: bool = False
    description: str = ""  # what the target is, in words (e.g. "DirectML descriptor interpreter")
    #: what a float32 model computes in here, as measured (conformance.run.probe): "bf16" where the
    #: configuration computes in bf16; "" where not measured. Part of the id where not f32.
    precision: str = ""
    #: the measured configuration: declared (effective()), describe(), the probe's measurement
    configuration: dict = field(default_factory=dict, compare=False)
    #: the implementation it shares with other runtimes under another program format
    #: (``onnxruntime-dml`` is onnxruntime); "" where that is the runtime itself
    family: str = ""
    #: what the runtime printed (stdout and stderr, native code's included) while it was imported and
    #: built to find its targets; in run.json, never on the terminal
    load_output: str = field(default="", compare=False)
    #: the most programs one worker call may take (the runtime's ``run_many``: WebNN replays many
    #: documents in one page round trip); 0: one at a time. ``--no-batch`` turns it off.
    batch: int = field(default=0, compare=False)
    #: version gates {op: why}: the ops whose minimal program at this spec version the runtime refuses
    #: (a release that predates the spec version; conformance/history/targets.py): their pairs are
    #: not-expressible with that reason, never a divergence
    gates: dict = field(default_factory=dict, compare=False)
    #: the execution forms its runtime takes beyond the defaults ({key: [values]}:
    #: conformance/runtimes/forms.py); its own are in ``config``
    forms: dict = field(default_factory=dict, compare=False)
    #: the converter that writes the program the runtime runs, with its version and options
    #: (``torch.onnx-dynamo-2.13.0(opset=18)``: conformance/converters/); "" where the runtime runs the
    #: suite's own program. Part of the id, before an arrow.
    converter: str = ""

    @property
    def form(self) -> dict[str, str]:
        """Every execution form key of this target's configuration, defaults included."""
        from conformance.runtimes.forms import of
        return of(self.config)

    @property
    def runtime_family(self) -> str:
        return self.family or self.runtime

    @property
    def setup(self) -> TargetConfig:
        """Its configuration as a value (conformance/runtimes/configuration.py): what it is asked to run
        in, the precision measured, the converter."""
        found = TargetConfig.parse(self.config, self.converter)
        return TargetConfig(found.items, self.precision, self.converter)

    @property
    def config_label(self) -> str:
        """``default``, ``precision=pinned``, or with the effective precision where it is not
        float32's: ``precision=default→bf16``."""
        return self.setup.label

    @property
    def name(self) -> TargetName:
        """Its id's parts (``str`` of it is the id)."""
        version = f"-{self.version}" if self.version else ""
        return TargetName(f"{self.runtime}{version}", self.device, self.setup, self.spec)

    @property
    def id(self) -> str:
        return str(self.name)

    def to_json(self) -> dict:
        return {"id": self.id, "runtime": self.runtime, "version": self.version, "device": self.device,
                "config": self.config, "spec": self.spec, "format": self.format, "plugin": self.plugin,
                "description": self.description, "precision": self.precision,
                "configuration": self.configuration, "runtime_family": self.runtime_family,
                **({"load_output": self.load_output} if self.load_output else {}),
                **({"gates": self.gates} if self.gates else {}),
                **({"forms": self.forms} if self.forms else {}),
                **({"converter": self.converter} if self.converter else {})}


#: the steps of a runtime that converts or compiles a program before it runs it (RuntimeRejected.stage);
#: ``checker``: onnx.checker rejects what a converter wrote (conformance/converters/converted.py)
STAGES = ("converter", "checker", "compiler", "runtime")


class RuntimeRejected(Exception):
    """The runtime refused the program (raised by adapters for a clean refusal). ``stage``: which of
    :data:`STAGES` refused, for a runtime with several; the record's ``effective.stage`` says it."""

    def __init__(self, message: str = "", stage: str = ""):
        super().__init__(message)
        if stage and stage not in STAGES:
            raise ValueError(f"stage {stage!r} is none of {STAGES}")
        self.stage = stage
