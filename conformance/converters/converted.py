"""A converter target's runtime: the program converted by a converter (conformance/converters/), the
result checked, then run by a runtime, all in this worker (which cannot install packages:
docs/isolation.md).

``Converted(converter, options, runtime, config)`` is built in the worker like any adapter. Its
``run(model, feeds)`` hands the suite's program (a torch program's description path, or ONNX bytes)
to the converter's library function, checks what came back with ``onnx.checker`` (full check) where
it is ONNX, and runs it: onnxruntime (CPU, the configuration's threads) or OpenVINO (CPU,
``precision=pinned``: INFERENCE_PRECISION_HINT f32). A refusal names its stage
(``RuntimeRejected.stage``, the record's ``effective.stage``):

- ``converter``: the converter raised (refused the program);
- ``checker``: the converter wrote a model ``onnx.checker`` rejects (an invalid program);
- ``runtime``: the runtime rejected what the converter wrote, or failed running it.

A torch program's outputs come back as its module returns them and are shaped like the eager
target's (``torch_program.finish``). ``load(model)`` converts once, at the first input it runs
(an exporter traces with example inputs), and runs every later input through the same converted
model: the ``shape=dynamic`` form, where the exporter was asked for symbolic dimensions, runs the
case and two other shapes through it (a frozen dimension shows there). ``artefacts()`` keeps the
converter's input and output; ``effective()`` names the converter, its version and options, and the
runtime's own configuration.
"""

from __future__ import annotations

import hashlib
import json
import re
from importlib import metadata
from typing import Any

import numpy as np

from conformance.runtimes.base import RuntimeRejected


def _holds(model: bytes, precision: str) -> bool:
    """Whether the ONNX ``model`` holds a tensor (an initializer) of ``precision``'s type."""
    import onnx

    from conformance.runtimes.effective import BY_NAME
    wanted = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(BY_NAME[precision].dtype))
    return any(t.data_type == wanted for t in onnx.load_from_string(model).graph.initializer)


def converter_version(name: str) -> str:
    from conformance.converters import resolve
    package = resolve(name).package
    version = metadata.version(package)
    return version.split("+", 1)[0]


class Converted:
    def __init__(self, converter: str, options: str = "{}", runtime: str = "onnxruntime", config: str = "default"):
        from conformance.converters import resolve
        self.converter = resolve(converter)
        self.options = json.loads(options)
        self.name = runtime
        self.format = self.converter.reads
        self.device = "CPU"
        self.config = config
        self.converter_version = converter_version(converter)
        self.label = self.converter.label(self.converter_version, self.options)
        self.forms = {"shape": ["dynamic"]} if self.converter.reads == "torch" else {}
        if runtime == "onnxruntime":
            from conformance.runtimes.forms import built_config
            from conformance.runtimes.onnxruntime import OnnxRuntime
            built = built_config(config)
            self.inner = OnnxRuntime(config=built) if built != "default" else OnnxRuntime()
        elif runtime == "openvino":
            import openvino as ov

            from conformance.runtimes.openvino import version
            self.core = ov.Core()
            self.inner = None  # type: ignore[assignment]  # OpenVINO is compiled here, not through an adapter
            self.ov_version = version()
        else:
            raise ValueError(f"converter targets run on onnxruntime or openvino, not {runtime!r}")
        self.version = self.inner.version if self.inner is not None else self.ov_version
        self._reset()

    def _reset(self) -> None:
        self._files: dict[str, bytes] = {}
        self._stage = ""
        self._compiled = None
        self._facts: dict = {}

    # -- the runtime contract ---------------------------------------------------------------------

    def run(self, model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.load(model).run(feeds)

    def load(self, model):
        self._reset()
        return _Lazy(self, model)

    def effective(self) -> dict:
        found = {"converter": self.converter.name, "converter_version": self.converter_version,
                 "converter_options": ",".join(f"{k}={v}" for k, v in self.options.items()), **self._facts}
        if self._stage:
            found["stage"] = self._stage
        if self.inner is not None:
            found.update(self.inner.effective() if self.inner._session is not None else {})
            found.update({k: v for k, v in self._facts.items() if k.startswith("precision")})  # the converter's word
        elif self._compiled is not None:
            from conformance.runtimes.effective import parse
            hint = str(self._compiled.get_property("INFERENCE_PRECISION_HINT"))
            precision = parse(hint)
            found.update({"INFERENCE_PRECISION_HINT": hint, "precision": precision.name if precision else ""})
        return found

    def path(self) -> dict:
        if self.inner is not None and self.inner._session is not None:
            return self.inner.path()
        if self._compiled is not None:
            from conformance.runtimes.openvino import layers_of
            return layers_of(self._compiled)
        return {}

    def artefacts(self) -> dict[str, bytes]:
        return dict(self._files)

    # -- the stages ------------------------------------------------------------------------------

    def _convert(self, model, feeds: dict[str, np.ndarray]):
        """The converter's model, checked; kept (input and output) as artefacts."""
        import importlib
        self._files = _inputs_of(model)
        module, _, function = self.converter.call.partition(":")
        try:
            written = getattr(importlib.import_module(module), function)(model, feeds, self.options)
        except Exception as exc:  # noqa: BLE001 - the converter's refusal, whatever it raises
            self._stage = "converter"
            raise RuntimeRejected(f"{self.label} refused: {type(exc).__name__}: {_first(exc)}", stage="converter") \
                from None
        self._files.update({f"output.{name}": data for name, data in written.files.items()})
        self._facts = {"converted_sha256": hashlib.sha256(b"".join(written.files.values())).hexdigest()[:16]}
        if self.converter.declares and written.format == "onnx" and _holds(written.model, self.converter.declares):
            self._facts.update(precision=self.converter.declares, precision_declared_by="the converter")
        if written.format == "onnx":
            import onnx
            try:
                onnx.checker.check_model(onnx.load_from_string(written.model), full_check=True)
            except Exception as exc:  # noqa: BLE001 - the checker's ValidationError or InferenceError
                self._stage = "checker"
                raise RuntimeRejected(f"{self.label} wrote a model onnx.checker rejects: {type(exc).__name__}: "
                                      f"{_first(exc)}", stage="checker") from None
        return written

    def _runner(self, written):
        """A callable running feeds on the converted model (the runtime's load)."""
        try:
            if written.format == "onnx" and self.inner is not None:
                handle = self.inner.load(written.model)
                names = [i.name for i in self.inner._session.get_inputs()]
            else:
                from conformance.runtimes.openvino import Loaded, compile_model
                model = written.model
                if written.format == "onnx":
                    model = self.core.read_model(written.model, b"")
                self._compiled = compile_model(self.core, model, "CPU", "precision=pinned")
                handle = Loaded(self._compiled)
                names = [p.get_any_name() for p in self._compiled.inputs]
        except Exception as exc:  # noqa: BLE001 - the runtime refused the converted model
            self._stage = "runtime"
            raise RuntimeRejected(f"{self.name} rejected what {self.label} wrote: {type(exc).__name__}: "
                                  f"{_first(exc)}", stage="runtime") from None
        if written.format == "openvino":  # the frontend names inputs after the traced arguments: by position
            handle = _Renamed(handle, dict(zip(written.inputs, names)))
            names = list(written.inputs)[:len(names)]
        return handle, names

    def _outputs(self, model, feeds: dict, returned: list) -> list[np.ndarray]:
        if self.converter.reads != "torch":
            return returned
        from conformance.runtimes import torch_program as tp
        desc, _ = tp.read(model)
        return tp.finish(desc, [np.asarray(r) for r in returned], tp.steps_of(desc, feeds))


class _Lazy:
    """A loaded converter target: converts at its first input, runs every input through that model."""

    def __init__(self, owner: Converted, model):
        self.owner, self.model = owner, model
        self.handle: Any = None
        self.names: list[str] = []

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        owner = self.owner
        if self.handle is None:
            written = owner._convert(self.model, feeds)
            self.handle, self.names = owner._runner(written)
        missing = [n for n in self.names if n not in feeds]
        if missing:
            owner._stage = "runtime"
            raise RuntimeRejected(f"the model {owner.label} wrote has input(s) {missing} the program does not feed "
                                  f"(it feeds {sorted(feeds)})", stage="runtime")
        try:
            returned = self.handle.run({n: feeds[n] for n in self.names})
        except Exception as exc:  # noqa: BLE001 - the runtime failed running the converted model
            owner._stage = "runtime"
            raise RuntimeRejected(f"{owner.name} failed running what {owner.label} wrote: {type(exc).__name__}: "
                                  f"{_first(exc)}", stage="runtime") from None
        owner._stage = ""
        return owner._outputs(self.model, feeds, list(returned))


class _Renamed:
    """A loaded model whose inputs are fed by the program's names, mapped to the model's own."""

    def __init__(self, handle, names: dict[str, str]):
        self.handle, self.names = handle, names

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.handle.run({self.names[k]: v for k, v in feeds.items() if k in self.names})


def _first(exc: BaseException) -> str:
    """An exception's message without the exporters' long tails (graphs, tracebacks, advice), with
    the exception it was raised from where that says more (torch.export's own error behind the
    exporter's TorchExportError)."""
    def lines_of(e: BaseException) -> list[str]:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()
        return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("%")]
    lines = lines_of(exc)
    summary = next((k for k, line in enumerate(lines) if "Exception summary" in line), None)
    said = (lines[summary + 1:] if summary is not None else lines)[:6]
    cause = exc.__cause__ or exc.__context__
    if cause is not None and cause is not exc:
        said += [f"(from {type(cause).__name__}: " + " ".join(lines_of(cause)[:4]) + ")"]
    return " ".join(said)[:1500]


def _inputs_of(model) -> dict[str, bytes]:
    """The converter's input as artefacts: the ONNX program, or the torch program's two files."""
    if isinstance(model, (bytes, bytearray)):
        return {"input.onnx": bytes(model)}
    from pathlib import Path
    path = Path(model)
    found = {f"input.{path.name}": path.read_bytes()}
    try:
        weights = json.loads(path.read_text()).get("weights")
        if weights:
            found[f"input.{weights}"] = (path.parent / weights).read_bytes()
    except (OSError, ValueError):
        pass
    return found
