"""OpenVINO reading the ONNX model through its ONNX frontend, per device and configuration.

Two configurations: ``default`` (the device's own defaults, which on some CPUs compute in bf16)
and ``precision=pinned`` (INFERENCE_PRECISION_HINT set to the model's element type). A
configuration ``precision=bf16`` (or f16, f32) forces that hint; it is not a discovered target,
but a plugin or a test can build one.

After each run the adapter reports what the compiled model resolved its hints to
(``effective()``: INFERENCE_PRECISION_HINT, EXECUTION_MODE_HINT), and once per target the device's
own facts (``describe()``: FULL_DEVICE_NAME, OPTIMIZATION_CAPABILITIES, the denormals setting).
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import shutil
import tempfile
import weakref
from collections import OrderedDict
from pathlib import Path

import numpy as np

from conformance.caches import digest
from conformance.runtimes.openvino_batches import (
    BATCH_MARK,
    MERGE_RETRIES,
    _copy,
    _element_type,
    _feeds_key,
    _last_line,
    _owner,
)
from conformance.runtimes.openvino_compiled import (
    Loaded,
    _from_output,
    _text,
    _to_tensor,
    compile_model,
    compile_properties,
    layers_of,
    run_compiled,
)

#: the execution forms every OpenVINO way in takes, beyond the defaults (conformance/runtimes/forms.py)
FORMS_TAKEN = {"shape": ["dynamic"], "weights": ["inputs"], "session": ["reused"], "threads": ["4"]}
#: the plain configurations, then each form on the pinned one (float32 results: a form's divergence is
#: not hidden behind the default configuration's bf16 on bf16 CPUs)
PLAIN = ("default", "precision=pinned")


def _configs() -> tuple[str, ...]:
    from conformance.runtimes.forms import CONFIGURATIONS, compose
    return PLAIN + tuple(compose("precision=pinned", f) for f in CONFIGURATIONS)


CONFIGS = _configs()


def version() -> str:
    import openvino as ov
    return ov.get_version().split("-")[0]


#: what each run reports of its compiled model, and what describe() reads from the device
COMPILED_PROPERTIES = ("INFERENCE_PRECISION_HINT", "EXECUTION_MODE_HINT")
DEVICE_PROPERTIES = ("FULL_DEVICE_NAME", "OPTIMIZATION_CAPABILITIES", "CPU_DENORMALS_OPTIMIZATION")


class Adapter:
    """What both OpenVINO adapters share: compile under the configuration, report what the compiled
    model resolved to (``effective``) and the device's facts (``describe``)."""

    #: the execution forms it takes (conformance/runtimes/forms.py): every one
    forms = FORMS_TAKEN

    def __init__(self, device: str = "CPU", config: str = "default"):
        import openvino as ov
        self.core = ov.Core()
        self.device = device
        self.config = config
        self.version = version()
        #: compiled models by their model's content (content_key), the most recent last: a program
        #: that several specs read into the same model (ONNX 7, 14 and 22 of one case, through the
        #: ONNX frontend) is compiled once, and a pair's repeat runs on the same compiled model.
        #: ``keep = 0`` compiles every call (the benchmark's bare calls)
        self.keep = KEPT
        self._kept: OrderedDict = OrderedDict()  # content key -> (compiled model, bytes of its constants)
        self._contents: OrderedDict = OrderedDict()  # prepare()'s key -> its model's content key
        #: compile refusals by content key: a model refused once is refused again without compiling
        #: (the message is the first compile's, whose generated node names are that read's)
        self._refused: OrderedDict = OrderedDict()
        self._scratch = ""    # where content_key serializes a model (made on first use)
        self._current = None  # the compiled model the last call ran (what effective() reports)

    def prepare(self, model, feeds: dict[str, np.ndarray]):
        """``(key, read)`` for one program: what identifies it, and a call giving its ov.Model (or
        raising the refusal). Each adapter says how it reads its format."""
        raise NotImplementedError

    def run(self, model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        key, read = self.prepare(model, feeds)
        return self.infer(key, read, feeds)

    def run_many(self, items: list) -> list:
        """The runtime contract's optional batch call: the programs merged into one model of
        independent subgraphs, compiled once and run once; answers in ``items``' order.

        Each program is read on its own first: one OpenVINO refuses to read is answered by that
        refusal. Programs of different element types are compiled apart (the pinned configuration's
        hint is the model's type). Where the merged compile is refused and the refusal names a node,
        the program owning it is compiled on its own and the rest merged again (at most
        ``MERGE_RETRIES`` times); otherwise each is compiled on its own. Every program not run as
        part of a merged model is answered ``RanAlone``, so the suite records it as run alone; the
        others ``RanMerged``, with the configuration their group's compiled model reports."""
        from conformance.runtimes.base import RanAlone, RanMerged
        answers: list = [None] * len(items)
        groups: dict[tuple, list] = {}   # (element type, its reader) -> (index, model) to merge
        same: dict[int, int] = {}   # a program -> the earlier one of the batch it is identical to
        first: dict[tuple, int] = {}
        for k, (model, feeds) in enumerate(items):
            try:
                _, read = self.prepare(model, feeds)
                ov_model = read()
                identity = (self.content_key(ov_model), _feeds_key(feeds))
                if identity in first:  # the same model on the same inputs: one subgraph answers both
                    same[k] = first[identity]
                    continue
                first[identity] = k
                for op in ov_model.get_ops():  # whose node a refusal names (see _owner)
                    op.set_friendly_name(f"{BATCH_MARK}{k}.{op.get_friendly_name()}")
            except Exception as exc:  # noqa: BLE001 - that program's refusal is its answer
                answers[k] = RanAlone(exc, "refused when read on its own", {})
                continue
            # merged per element type and per way in: a frontend program the CPU plugin refuses
            # (a quarter of GRU and LSTM's, for their activations) costs its own group's compile a
            # retry, not the IR's and the recipes' (merging those two as well was slower: measured
            # in docs/speed.md)
            groups.setdefault((_element_type(ov_model), _reader(model)), []).append((k, ov_model))
        for members in groups.values():
            why, refused = "the only one of its element type and way in in its batch", 0
            while len(members) > 1:
                try:
                    outputs = self._run_merged([m for _, m in members], [items[k][1] for k, _ in members])
                except Exception as exc:  # noqa: BLE001 - the merged model's refusal: find whose it is
                    culprit, refused = _owner(str(exc), [k for k, _ in members]), refused + 1
                    why = f"its batch's merged model was refused: {_last_line(exc)}"
                    if culprit is None or refused > MERGE_RETRIES:
                        break
                    members = [(k, m) for k, m in members if k != culprit]
                    answers[culprit] = self._alone(items[culprit], f"the merged model's refusal named its node: "
                                                                   f"{_last_line(exc)}")
                    why = "the only one of its batch left after a refusal"
                    continue
                effective = self.effective()  # this group's compiled model: its pairs' configuration
                for (k, _), out in zip(members, outputs):
                    answers[k] = RanMerged(out, dict(effective, path=layers_of(self._current, f"{BATCH_MARK}{k}.")))
                members = []
            for k, _ in members:
                answers[k] = self._alone(items[k], why)
        for k, earlier in same.items():
            answers[k] = _copy(answers[earlier])
        return answers

    def _alone(self, item, why: str):
        """One program of a batch run by itself, as ``run`` runs it (read again: a merged model may
        have taken its nodes), as ``RanAlone``."""
        from conformance.runtimes.base import RanAlone
        answer: object
        try:
            answer = self.run(*item)
        except Exception as exc:  # noqa: BLE001 - its refusal is its answer
            answer = exc
        return RanAlone(answer, why, dict(self.effective(), **({"path": self.path()} if self._current else {})))

    def _run_merged(self, models: list, feeds: list) -> list[list[np.ndarray]]:
        """``models`` as one ov.Model (their Parameters and Results side by side), compiled and run
        once; each model's outputs in its own order."""
        import openvino as ov
        self._current = None
        merged = ov.Model([r for m in models for r in m.get_results()],
                          [p for m in models for p in m.get_parameters()], "batch")
        compiled = compile_model(self.core, merged, self.device, self.config)
        self._current = compiled
        fed: dict[int, object] = {}
        for m, given in zip(models, feeds):
            for inp in m.inputs:
                fed[len(fed)] = _to_tensor(ov, given[inp.get_any_name()])
        result = compiled.create_infer_request().infer(fed)
        outputs = [_from_output(ov, out, result[out]) for out in compiled.outputs]
        split, at = [], 0
        for m in models:
            split.append([np.array(o, copy=True) for o in outputs[at:at + len(m.outputs)]])
            at += len(m.outputs)
        return split

    def infer(self, key, read, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Run the model ``read()`` gives, on a fresh infer request (:meth:`compiled`)."""
        return run_compiled(self.compiled(key, read), feeds)

    def compiled(self, key, read):
        """The compiled model of what ``read()`` gives. It is compiled once per content: the same
        program asked again (``key``, as the repeat of a pair is), or another that reads into the
        same model, is the compiled model kept from before (``keep`` of them)."""
        self._current = None
        content = self._contents.get(key) if key is not None else None
        if content not in self._kept:
            model = read()
            content, size = self._content(model) if self.keep else (None, 0)
            if content in self._refused:  # the same model, refused before: refused again, unasked
                raise copy.copy(self._refused[content])
            if content not in self._kept:
                try:
                    compiled = compile_model(self.core, model, self.device, self.config)
                except Exception as exc:
                    if self.keep:
                        self._refused[content] = copy.copy(exc)  # its message, not its frames
                        while len(self._refused) > REFUSALS_KEPT:
                            self._refused.popitem(last=False)
                    raise
                if not self.keep:
                    self._current = compiled
                    return compiled
                self._kept[content] = (compiled, size)
                while len(self._kept) > 1 and (len(self._kept) > self.keep or self._kept_bytes() > KEPT_BYTES):
                    self._kept.popitem(last=False)
            if key is not None:
                self._contents[key] = content
                while len(self._contents) > 4 * self.keep:
                    self._contents.popitem(last=False)
        self._kept.move_to_end(content)
        self._current = self._kept[content][0]
        return self._current

    def load(self, model):
        """The runtime contract's optional ``load``: the program compiled once (:meth:`compiled`), as a
        handle whose ``run(feeds)`` infers on it; each thread that runs it keeps one infer request of
        its own, reused from call to call (as an application reuses its request)."""
        key, read = self.prepare(model, {})
        return Loaded(self.compiled(key, read))

    def path(self) -> dict:
        """The layers the last call's compiled model runs the recurrent op with (its runtime model's
        ``layerType`` and ``primitiveType``): RNNSeq, TensorIterator, ... (docs/forms.md)."""
        return layers_of(self._current) if self._current is not None else {}

    def content_key(self, model) -> str:
        """What identifies a model's compiled form: its serialized IR (topology, attributes,
        types, shapes, tensor names, constants) without the names OpenVINO generates for its inner
        nodes (``Transpose_656`` in one read, ``Transpose_728`` in the next: a counter, not the
        model). Parameters and Results keep theirs. The configuration is the adapter's own."""
        return self._content(model)[0]

    def _content(self, model) -> tuple[str, int]:
        """``content_key`` and the bytes of the model's constants (what a kept model holds)."""
        import openvino as ov
        if not self._scratch:
            self._scratch = tempfile.mkdtemp(prefix="conformance-openvino-")
            weakref.finalize(self, shutil.rmtree, self._scratch, True)
        xml, weights = os.path.join(self._scratch, "m.xml"), os.path.join(self._scratch, "m.bin")
        ov.serialize(model, xml, weights)
        with open(xml, "rb") as f:
            text = NOT_COMPILED.sub(b"", INNER_NAME.sub(rb"\1", f.read()))
        with open(weights, "rb") as f:
            data = f.read()
        os.unlink(xml)
        os.unlink(weights)
        return digest(text, data), len(data)

    def _kept_bytes(self) -> int:
        return sum(size for _, size in self._kept.values())

    def effective(self) -> dict:
        """The compiled model's own INFERENCE_PRECISION_HINT and EXECUTION_MODE_HINT (not what was
        asked: the default configuration asks for nothing). The accumulation of bf16 dot products is
        not declared: AVX512-BF16's VDPBF16PS and AMX's TDPBF16PS add bf16 products into float32,
        but the kernels round partial sums to bf16 on the way. Measured on OpenVINO 2026.4.1 (Intel
        Xeon with avx512_bf16): one RNN step of 64-term dot products lands at least 45 times farther
        from a float32 accumulation rounded once than that can, whatever rounding of X and W is
        assumed (91 times with both rounded to nearest), and up to u·Σ|x·w| from it
        (docs/configuration.md). Undeclared, the judgement
        admits bf16 accumulation."""
        if self._current is None:
            return {}
        found = {}
        for key in COMPILED_PROPERTIES:
            try:
                found[key] = _text(self._current.get_property(key))
            except Exception as exc:  # noqa: BLE001 - a device without the property
                found[key] = f"unavailable ({type(exc).__name__})"
        from conformance.runtimes.effective import parse
        precision = parse(found.get("INFERENCE_PRECISION_HINT"))
        return {"precision": precision.name if precision else "", **found}

    def program(self, model: str, suffix: str, what: str) -> Path:
        """The written program's main file; a program OpenVINO refused to build (its
        ``.build-error.txt``: OpenVINO's own op validation refused the case) raises that refusal."""
        from conformance.runtimes.base import RuntimeRejected
        from conformance.specs.openvino.vocabulary import BUILD_ERROR_SUFFIX
        self._current = None  # a refusal runs nothing: effective() reports nothing
        path = Path(model)
        if path.name.endswith(BUILD_ERROR_SUFFIX):
            raise RuntimeRejected(path.read_text().strip())
        if path.suffix != suffix:
            raise RuntimeRejected(f"{model!r} is not {what}")
        return path

    def describe(self) -> dict:
        found = {}
        for key in DEVICE_PROPERTIES:
            try:
                found[key] = _text(self.core.get_property(self.device, key))
            except Exception:  # noqa: BLE001, S112 - a device without the property
                continue
        return found


#: compiled models an adapter keeps, by content (Adapter.infer), and the most bytes of constants
#: they may hold together (production shapes: one model of hidden size 1024 holds tens of MB)
KEPT = 8
KEPT_BYTES = 64 << 20
#: compile refusals an adapter remembers (by content key; a refusal holds only its message)
REFUSALS_KEPT = 256
#: an inner node's generated name in serialized IR (Parameters and Results keep theirs)
INNER_NAME = re.compile(rb'(<layer id="\d+") name="[^"]*"(?= type="(?!Parameter"|Result")[^"]*")')
#: what a serialized model holds that its compiled form does not depend on: the version of
#: OpenVINO that wrote an IR file (the model's rt_info), and a Result's output tensor names (the
#: outputs are read by position; an IR names them, a model built in memory does not)
NOT_COMPILED = re.compile(rb'<rt_info>\s*<info name="OpenVINO Runtime" value="[^"]*" />\s*</rt_info>|<rt_info />'
                          rb'|(?<=type="Result" version="opset1") output_names="[^"]*"')
class OpenVINOOnnxFrontend(Adapter):
    name = "openvino"
    format = "onnx"

    def properties(self, model) -> dict:
        return compile_properties(model, self.config)

    def prepare(self, model: bytes, feeds: dict[str, np.ndarray]):
        return read_onnx(self, model, feeds)


def read_onnx(adapter: Adapter, model: bytes, feeds: dict[str, np.ndarray]):
    """``prepare`` for an ONNX model's bytes, read by the ONNX frontend."""
    return hashlib.sha256(model).digest(), lambda: adapter.core.read_model(model=model)


class OpenVINO(Adapter):
    """Every way into OpenVINO, for one device and configuration: the ONNX model's bytes (the
    frontend), an IR's ``.xml`` path (read from its files) and an in-memory recipe's ``.json`` path
    (built with the Python builders). The targets of one configuration share this worker
    (conformance/runtimes/openvino_targets.py ``targets_of``), so their programs share its compiled
    models (a program that reads into a model compiled before runs on it) and its batches (a case's
    programs for the three ways in merge into one compile). The three are one runtime, the CPU plugin
    under one configuration: only the reading differs, and each way in reads as its own adapter does."""
    name = "openvino"

    def prepare(self, model, feeds: dict[str, np.ndarray]):
        return _reader(model)(self, model, feeds)


def _reader(model):
    """How a program reaches OpenVINO: the ONNX frontend for bytes, the builders for a recipe's
    ``.json``, else an IR's files (whose reader also reports a build refusal's file)."""
    if isinstance(model, (bytes, bytearray)):
        return read_onnx
    if str(model).endswith(".json"):   # the recipe's reader needs the suite's OpenVINO vocabulary
        from conformance.runtimes.openvino_memory import read_recipe
        return read_recipe
    from conformance.runtimes.openvino_ir import read_ir  # a release's environment has this one only
    return read_ir


def targets(specs_by_format: dict):
    """Per device and configuration, for every ONNX spec version (through the ONNX frontend); where
    OpenVINO offers no GPU, the gap that says so for every way in (conformance/runtimes/openvino_targets.py)."""
    from conformance.runtimes.openvino_targets import devices, gaps_of, targets_of
    found = devices()
    return (targets_of("onnx", specs_by_format.get("onnx", []), "OpenVINO reading the ONNX model (ONNX frontend)",
                       found), gaps_of(specs_by_format, found, version()))
