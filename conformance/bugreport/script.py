"""``repro.py``: the pair's program run with the runtime's own calls, as a user would, and compared
with the spec's values; one runner per runtime (templates/run_*.py.j2), one body for all
(templates/repro.py.j2).

:data:`RUNNERS` is the one table of how each runtime is reproduced: (runtime family, program
format) -> the runner template, the packages repro.py imports (pinned in requirements.txt), its
import lines and the API in words; or, for a built-in runtime no standalone script can run, why not
(:func:`not_standalone`: the report is refused with that reason). Every built-in runtime has its row
(tests/unit/test_tables.py). A runtime plugin is run through its own ``run(model, feeds)``, its
module copied beside the script where no installed distribution carries it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

import json
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np

#: the runner of a runtime in a browser: repro.html (templates/repro.html.j2), not repro.py
PAGE = "webnn_page"


@dataclass(frozen=True)
class Runner:
    template: str              # templates/run_<template>.py.j2 (PAGE: templates/repro.html.j2)
    packages: tuple            # distributions repro.py imports, pinned in requirements.txt
    imports: tuple             # its import lines
    api: str                   # what it calls, in words
    #: why no standalone script reproduces the runtime ("" where one does): the report is refused saying so
    unreproducible: str = ""

    @property
    def file(self) -> str:
        """The template the runner is written from (in conformance/bugreport/templates/)."""
        return "repro.html.j2" if self.template == PAGE else f"run_{self.template}.py.j2"


def not_standalone(why: str) -> Runner:
    """The row of a built-in runtime that no standalone script can run, saying why."""
    return Runner("", (), (), "", unreproducible=why)


RUNNERS = {
    ("onnxruntime", "onnx"): Runner("onnxruntime", ("onnxruntime",), ("import onnxruntime as ort",),
                                    "onnxruntime (InferenceSession)"),
    ("onnx-reference", "onnx"): Runner("onnx_reference", ("onnx",), ("from onnx.reference import ReferenceEvaluator",),
                                       "onnx (onnx.reference.ReferenceEvaluator)"),
    ("openvino", "onnx"): Runner("openvino", ("openvino",), ("import openvino as ov",),
                                 "openvino (Core.read_model of the ONNX file, compile_model)"),
    ("openvino", "openvino-ir"): Runner("openvino", ("openvino",), ("import openvino as ov",),
                                        "openvino (Core.read_model of the IR's .xml and .bin, compile_model)"),
    ("openvino", "openvino-model"): Runner("openvino_builders", ("openvino",), ("import openvino as ov",),
                                           "openvino (its Python opset builders, compile_model; no IR file)"),
    ("torch", "torch"): Runner("torch", ("torch",), ("import torch",), "torch (torch.nn modules)"),
    ("tract", "onnx"): Runner("tract", ("tract",), ("import tract",), "tract (tract.onnx().load)"),
    ("mnn", "onnx"): Runner("mnn", ("MNN",), ("import _tools  # MNN's converter, the extension mnnconvert wraps",
                                              "import MNN"),
                            "MNN (its converter's library entry point, MNN.nn.load_module_from_file)"),
    ("iree", "onnx"): Runner("iree", ("iree-base-compiler", "iree-base-runtime", "onnx"),
                             ("import iree.runtime as rt", "import onnx",
                              "from iree.compiler.extras import onnx_importer", "from iree.compiler.ir import Context",
                              "from iree.compiler.tools import compile_str"),
                             "IREE (its ONNX importer, which reads the model with onnx; compile_str; iree.runtime)"),
    ("tvm", "onnx"): Runner("tvm", ("apache-tvm", "apache-tvm-ffi", "onnx"),
                            ("import onnx", "import tvm", "from tvm import relax",
                             "from tvm.relax.frontend.onnx import from_onnx"),
                            "Apache TVM (its Relax ONNX frontend, which reads the model with onnx; tvm.compile; "
                            "the Relax VM)"),
    ("webnn", "webnn"): Runner(PAGE, (), (), "the browser's WebNN (navigator.ml, MLGraphBuilder)"),
    # DirectML has no Python API: the suite checks its descriptors with an interpreter of its own and runs them on
    # DirectML through onnxruntime, converted back to ONNX (conformance/runtimes/directml/)
    ("directml-interpreter", "directml"): not_standalone(
        "directml-interpreter is the suite's own numpy evaluation of DirectML's documented semantics "
        "(conformance/runtimes/directml/interpreter.py), not DirectML: a divergence there is a fault of the "
        "suite's DirectML translator or interpreter, for this project, not for an upstream tracker"),
    ("onnxruntime", "directml"): not_standalone(
        "onnxruntime-dml runs the descriptor as an ONNX model the suite converts it back to "
        "(conformance/runtimes/directml/to_onnx.py), DirectML having no Python API to run a descriptor with; "
        "report the divergence from onnxruntime's DmlExecutionProvider target on an ONNX spec "
        "(onnxruntime-<version>/Dml@onnx-22, the same provider on the suite's own ONNX model), whose repro.py "
        "runs that model with onnxruntime alone"),
}
PLUGIN = Runner("plugin", (), (), "the runtime plugin's own run(model, feeds)")

#: OpenVINO's builder call of each native op (the spec's translation: conformance/specs/openvino/build.py)
OPENVINO_CALLS = {
    "RNNSequence-5": "ov.opset5.rnn_sequence({X}, {H}, {L}, {W}, {R}, {B}, {hidden}, {direction}, {common})",
    "GRUSequence-5": "ov.opset5.gru_sequence({X}, {H}, {L}, {W}, {R}, {B}, {hidden}, {direction}, "
                     "linear_before_reset={lbr}, {common})",
    "LSTMSequence-5": "ov.opset5.lstm_sequence({X}, {H}, {C}, {L}, {W}, {R}, {B}, {hidden}, {direction}, {common})",
    "RNNCell-3": "ov.opset3.rnn_cell({X}, {H}, {W}, {R}, {B}, {hidden}, {common})",
    "GRUCell-3": "ov.opset3.gru_cell({X}, {H}, {W}, {R}, {B}, {hidden}, linear_before_reset={lbr}, {common})",
    "LSTMCell-4": "ov.opset4.lstm_cell({X}, {H}, {C}, {W}, {R}, {B}, {hidden}, {common})",
    "LSTMCell-1": "NodeFactory('opset1').create('LSTMCell', [{X}.output(0), {H}.output(0), {C}.output(0), "
                  "{W}.output(0), {R}.output(0), {B}.output(0){P}], {{{attrs}}})",
    "LSTMSequence-1": "NodeFactory('opset1').create('LSTMSequence', [{X}.output(0), {H}.output(0), {C}.output(0), "
                      "{L}.output(0), {W}.output(0), {R}.output(0), {B}.output(0)], {{{attrs}}})",
}
#: OpenVINO's hint names of the element types (INFERENCE_PRECISION_HINT takes f32, f16 and bf16)
OV_ELEMENT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}
OV_HINTS = ("f32", "f16", "bf16")


def runner_of(record: Record, plugin: bool = False) -> Runner | None:
    if plugin:
        return PLUGIN
    return RUNNERS.get((str(record.runtime_family or record.runtime), program_format(record)))


def program_format(record: Record) -> str:
    from conformance.specs import SPECS
    spec = SPECS.get(record.spec)
    return spec.format if spec is not None else "onnx"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("conformance.bugreport", "templates"),
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    env.filters["py"] = repr
    return env


def openvino_properties(config: str, dtype: str) -> dict:
    """The compile properties of an OpenVINO configuration (conformance/runtimes/openvino.py
    ``compile_properties``), named as OpenVINO's Python API takes them."""
    from conformance.runtimes.configuration import TargetConfig
    from conformance.runtimes.forms import BY_KEY
    # the forms are the program's and the calls', not compile properties
    asked = TargetConfig.parse(config).without(BY_KEY).pairs.get("precision")
    if asked is None:
        return {}
    if asked in OV_HINTS:
        return {"INFERENCE_PRECISION_HINT": asked}
    element = OV_ELEMENT.get(dtype, "f32")
    return {"INFERENCE_PRECISION_HINT": element if element in OV_HINTS else "f32"}


def _openvino_call(program) -> tuple[str, list[int], list[str]]:
    """(the builder call, the output ports, extra imports) of an in-memory OpenVINO program."""
    recipe = json.loads(program.model)
    op, attrs = recipe["op"], recipe["attrs"]
    p = {name: f'params["{feed}"]' for name, feed in
         (("X", "X"), ("H", "initial_hidden_state"), ("C", "initial_cell_state"), ("L", "sequence_lengths"))}
    p.update({name: f'params["{name}"]' if name in program.feeds else f'constants["{name}"]'
              for name in ("W", "R", "B")})
    common = {k: attrs[k] for k in ("activations", "activations_alpha", "activations_beta", "clip")}
    fields = dict(p, hidden=attrs["hidden_size"], direction=repr(attrs.get("direction")),
                  lbr=repr(bool(attrs.get("linear_before_reset"))),
                  common=", ".join(f"{k}={v!r}" for k, v in common.items()),
                  P=', params["P"].output(0)' if "P" in program.feeds else
                  ', constants["P"].output(0)' if "P" in program.extra.get("constants", {}) else "",
                  attrs=", ".join(f"{k!r}: {v!r}" for k, v in attrs.items()))
    call = OPENVINO_CALLS[op].format(**fields)
    ports_of = ({"Ho": 0, "Co": 1} if recipe["form"] == "cell" else {"Y": 0, "Ho": 1, "Co": 2})
    imports = ["from openvino.utils.node_factory import NodeFactory"] if op.endswith("-1") else []
    return call, [ports_of[name] for name, _ in program.outputs], imports


def _torch_context(program) -> dict:
    desc = json.loads(program.model)
    kwargs = {"input_size": desc["input_size"], "hidden_size": desc["hidden_size"], "bias": desc["bias"]}
    if desc["module"].startswith("RNN"):
        kwargs["nonlinearity"] = desc["nonlinearity"]
    cell = desc["module"].endswith("Cell")
    if not cell:
        kwargs.update(num_layers=desc["num_layers"], bidirectional=desc["bidirectional"],
                      batch_first=desc["batch_first"])
    return {"module": desc["module"], "kwargs": ", ".join(f"{k}={v!r}" for k, v in kwargs.items()),
            "dtype": desc["dtype"], "cell": cell, "batch_first": bool(desc.get("batch_first")),
            "packed": bool(desc.get("packed")), "directions": 2 if desc.get("bidirectional") else 1,
            "hidden": desc["hidden_size"], "keep": desc.get("keep_direction"), "outputs": desc["outputs"]}


def graph_io(model: bytes) -> tuple[list[str], list[str]]:
    """An ONNX model's fed inputs and its outputs, in order."""
    import onnx
    proto = onnx.load_from_string(model)
    constants = {t.name for t in proto.graph.initializer}
    return ([i.name for i in proto.graph.input if i.name not in constants], [o.name for o in proto.graph.output])


def bound_for(dtype: str, compute: str = "") -> str:
    """Whom the allowed error is for, in words."""
    return (f"a correct implementation computing {dtype} in {compute}" if compute
            else f"a correct {dtype} implementation")


def _parameters(program) -> dict:
    """{Parameter name: (its shape, -1 for a dynamic dimension; its element type)} of an in-memory
    OpenVINO program, as the suite builds them (conformance/specs/openvino/build.py)."""
    from conformance.specs.openvino.build import partial_shape
    from conformance.specs.openvino.vocabulary import FEED_NAMES
    recipe = json.loads(program.model)
    element = OV_ELEMENT.get(recipe["dtype"], "f32")
    return {FEED_NAMES.get(k, k): (partial_shape(k, tuple(shape), recipe["form"], recipe.get("dynamic")),
                                   "i32" if k == "sequence_lens" else element)
            for k, shape in recipe["shapes"].items()}


#: the runners that load a model once (``open_model()``, a function of the feeds): the runtimes that
#: take the execution forms whose calls share one loaded model (conformance/runtimes/forms.py)
LOADERS = ("onnxruntime", "openvino", "openvino_builders", "plugin")


def render(ran, runner: Runner, files: dict, title: str, summary: str, verdict: str, plugin: dict | None = None,
           compute: str = "", replay=None) -> str:
    """repro.py for the pair ``ran`` (conformance.bugreport.pair.Ran); ``files`` names the program's
    files in the bundle by role (model, weights, ...); ``replay`` (conformance/bugreport/forms.py) the
    calls of a form, the last compared."""
    record, case = ran.record, ran.case
    program = replay.program if replay is not None else ran.program   # the compared call's outputs
    env = _env()
    config, device = str(record.config or "default"), str(record.device or "CPU")
    model = files["model"]
    context: dict = {"model": model, "config": config, "device": device}
    imports = list(runner.imports)
    if runner.template == "onnxruntime":
        providers = (record.effective or {}).get("providers") or [f"{device}ExecutionProvider"]
        context["provider"] = providers[0]
        # the provider options that set its precision, as the session resolved them (a CUDA target's
        # use_tf32: docs/targets.md, "GPUs"); none for the CPU provider
        from conformance.runtimes.onnxruntime import PRECISION_OPTIONS
        context["provider_options"] = {k: str(v) for k, v in (record.effective or {}).items()
                                       if k in PRECISION_OPTIONS}
    elif runner.template == "openvino":
        context["properties"] = openvino_properties(config, case.dtype)
        if model.endswith(".xml"):
            context.update(reader="the IR's .xml and .bin",
                           read_args=f'str(HERE / {json.dumps(model)}), str(HERE / {json.dumps(files["weights"])})')
        else:
            # from memory, as the suite reads it: OpenVINO 2026.4's ONNX frontend keeps a fed LSTM P among the
            # model's inputs when it reads a path, and drops it when it reads the bytes (docs/bugreports.md)
            context.update(reader="its ONNX frontend, from the file's bytes",
                           read_args=f"model=(HERE / {json.dumps(model)}).read_bytes()")
    elif runner.template == "openvino_builders":
        call, ports, extra = _openvino_call(ran.program)
        imports += extra
        context.update(properties=openvino_properties(config, case.dtype), op=ran.program.extra.get("op", ""),
                       call=call, ports=ports, constants=sorted(ran.program.extra.get("constants", {})),
                       parameters=_parameters(ran.program))
    elif runner.template == "torch":
        context.update(_torch_context(ran.program), weights=files["weights"])
    elif runner.template in ("tract", "mnn", "iree", "tvm"):
        context["inputs"], context["outputs"] = graph_io(ran.program.model)
    elif runner.template == "plugin":
        assert plugin is not None
        context.update(plugin)
    run = env.get_template(runner.file).render(**context).rstrip() + "\n"
    outputs = [[name, canonical, "reshape" in program.transforms.get(canonical, {})]
               for name, canonical in program.outputs]
    if replay is not None and replay.several:
        calls = [[f"inputs/call{k + 1}", label, list(feeds)] for k, (label, feeds) in
                 enumerate(zip(replay.labels, replay.feeds))]
    else:
        calls = [["inputs", replay.labels[-1] if replay is not None else "the case", list(program.feeds)]]
    return env.get_template("repro.py.j2").render(
        title=title, summary=summary, api=runner.api, program_files=list(files.values()), imports=imports,
        verdict=verdict, outputs=outputs, dtype=case.dtype, calls=calls, runner=run.rstrip(),
        loads=runner.template in LOADERS,
        loaded=bool(replay is not None and replay.loaded and runner.template in LOADERS),
        form=replay.words if replay is not None else "", config=config,
        bound_for=bound_for(case.dtype, compute),
        runtime=f"{record.runtime} {record.runtime_version}".strip(),
        violates=getattr(case, "violates", "") or "")


def render_page(ran, files: dict, title: str, summary: str, verdict: str, browser: str, compute: str = "") -> str:
    """repro.html for a WebNN pair: the suite's replay page's script (conformance/specs/webnn/replay.html)
    and the comparison with expected/*.json."""
    import re

    from conformance.specs.webnn import REPLAY_PAGE
    replay = re.search(r"<script>(.*?)</script>", REPLAY_PAGE.read_text(), re.S)
    assert replay is not None, "the replay page has its script inline"
    device = str(ran.record.device or "default").lower()
    outputs = [[name, canonical] for name, canonical in ran.program.outputs]
    return _env().get_template("repro.html.j2").render(
        title=title, summary=summary, model=files["model"], browser=browser, replay=replay.group(1).strip(),
        verdict=verdict, context={} if device == "default" else {"deviceType": device}, outputs=outputs,
        bound_for=bound_for(ran.case.dtype, compute))


def save_array(folder: Path, name: str, array) -> str:
    """``folder/name.npy`` (bfloat16 as its raw bits in ``name.bf16.npy``); the file's name."""
    folder.mkdir(parents=True, exist_ok=True)
    array = np.asarray(array)
    if array.dtype.name == "bfloat16":
        np.save(folder / f"{name}.bf16.npy", array.view(np.uint16))
        return f"{name}.bf16.npy"
    np.save(folder / f"{name}.npy", array)
    return f"{name}.npy"
