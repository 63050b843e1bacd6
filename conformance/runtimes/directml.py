"""Runtimes of DirectML descriptors (format "directml"): the descriptor interpreter everywhere, and
onnxruntime's DirectML execution provider where it exists (Windows).

Both read the program back from its files: ``run(model, feeds)`` takes the path of the written
descriptor document, validates it against DirectML's documented constraints (a violation is a
refusal, raised as RuntimeRejected), reads every tensor from its buffer file through the desc's own
Sizes and Strides, and returns the outputs in the struct's output order (absent outputs are not
returned), each shaped like its desc's Sizes. ``feeds`` is empty: X and the initial states are in
buffers too, so that a C++ harness can bind the same files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conformance import __version__
from conformance.runtimes.base import RuntimeRejected
from conformance.specs.directml import vocabulary as v
from conformance.specs.directml.buffers import (
    DescriptorError,
    load_document,
    read_binding,
    read_tensor,
    write_through,
)
from conformance.specs.directml.validate import validate_document

INTERPRETER_DESCRIPTION = ("DirectML descriptor interpreter: evaluates DirectML's documented semantics "
                           "in numpy from the written descriptor and buffers; not DirectML hardware")
BRIDGE_DESCRIPTION = ("onnxruntime DmlExecutionProvider on an ONNX model converted back from the "
                      "written DirectML descriptor: DirectML through onnxruntime's ONNX-to-DirectML "
                      "lowering, not the descriptor bound directly")
DML_PROVIDER = "DmlExecutionProvider"


@dataclass
class Loaded:
    """A validated descriptor with its input tensors read from their buffers."""

    op: str
    desc: dict                 # the DML_*_OPERATOR_DESC object
    tensors: dict              # input field -> array shaped like its Sizes (absent: missing)
    outputs: list              # present output fields, struct order

    @property
    def dtype(self) -> np.dtype:
        return v.NUMPY_TYPE[self.desc["InputTensor"]["Desc"]["DataType"]].newbyteorder("=")

    @property
    def num_directions(self) -> int:
        return v.NUM_DIRECTIONS[self.desc["Direction"]]


def load(path) -> Loaded:
    """Read, validate and load a written descriptor; RuntimeRejected when DirectML would refuse it."""
    path = Path(path)
    try:
        document = load_document(path)
    except DescriptorError as exc:
        raise RuntimeRejected(str(exc)) from None
    violations = validate_document(document, path.parent)
    if violations:
        raise RuntimeRejected(f"{len(violations)} DirectML constraint(s) violated: "
                              + "; ".join(str(x) for x in violations))
    op = v.OP_OF_TYPE[document["OperatorDesc"]["Type"]]
    desc = document["OperatorDesc"]["Desc"]
    tensors = {}
    try:
        for field in v.INPUT_FIELDS[op]:
            if desc[field] is not None:
                raw = read_binding(path.parent, document["bindings"][field], field)
                tensors[field] = read_tensor(desc[field]["Desc"], raw, field)
    except DescriptorError as exc:
        raise RuntimeRejected(str(exc)) from None
    outputs = [f for f in v.OUTPUT_FIELDS[op] if desc[f] is not None]
    loaded = Loaded(op, desc, tensors, outputs)
    _check_lengths(loaded)
    if op == "LSTM" and desc["UseClipThreshold"] and desc["ClipThreshold"] < 0:
        raise RuntimeRejected(
            f"ClipThreshold = {desc['ClipThreshold']!r} with UseClipThreshold TRUE, but should be >= 0: "
            "DirectML bounds to [-ClipThreshold, +ClipThreshold], an empty range here, and documents "
            "no meaning for it")
    return loaded


def _no_feeds(feeds) -> None:
    if feeds:
        raise TypeError(f"feeds {sorted(feeds)!r} given, but a DirectML program reads every tensor "
                        "from its buffer files; feeds should be empty")


def _check_lengths(p: Loaded) -> None:
    lengths = p.tensors.get("SequenceLengthsTensor")
    if lengths is None:
        return
    s = p.tensors["InputTensor"].shape[1]
    for b, length in enumerate(lengths.reshape(-1).tolist()):
        if length > s:
            raise RuntimeRejected(
                f"SequenceLengthsTensor[{b}] = {length}, but should be <= seq_length = {s}: DirectML "
                "documents 'an independent seq_length for each element in the batch' and nothing past "
                "the InputTensor; the interpreter refuses rather than read past X")


# -- the interpreter -------------------------------------------------------------------------

def _activation(act: dict):
    """The DML_ACTIVATION_* function of one ActivationDesc, on float32 arrays."""
    kind = act["Type"]
    p = {k: np.float32(x) for k, x in act["Desc"].items() if k not in ("InputTensor", "OutputTensor")}
    a, b = p.get("Alpha"), p.get("Beta")
    functions = {
        "DML_OPERATOR_ACTIVATION_IDENTITY": lambda x: x,
        "DML_OPERATOR_ACTIVATION_RELU": lambda x: np.maximum(x, np.float32(0)),
        "DML_OPERATOR_ACTIVATION_TANH": np.tanh,
        "DML_OPERATOR_ACTIVATION_SIGMOID": lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)),
        "DML_OPERATOR_ACTIVATION_LINEAR": lambda x: a * x + b,
        "DML_OPERATOR_ACTIVATION_LEAKY_RELU": lambda x: np.where(x >= 0, x, a * x),
        "DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU": lambda x: np.where(x > a, x, np.float32(0)),
        "DML_OPERATOR_ACTIVATION_SCALED_TANH": lambda x: a * np.tanh(b * x),
        "DML_OPERATOR_ACTIVATION_HARD_SIGMOID": lambda x: np.maximum(np.float32(0), np.minimum(a * x + b, np.float32(1))),
        "DML_OPERATOR_ACTIVATION_ELU": lambda x: np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0))),
        "DML_OPERATOR_ACTIVATION_SCALED_ELU": lambda x: np.where(x > 0, p["Gamma"] * x,
                                                                 p["Gamma"] * (a * np.exp(np.minimum(x, 0)) - a)),
        "DML_OPERATOR_ACTIVATION_SOFTSIGN": lambda x: x / (np.float32(1) + np.abs(x)),
        "DML_OPERATOR_ACTIVATION_SOFTPLUS": lambda x: np.logaddexp(np.float32(0), p["Steepness"] * x) / p["Steepness"],
        "DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS": lambda x: a * np.logaddexp(np.float32(0), b * x),
    }
    return functions[kind]


class _Arith:
    """Arithmetic in the tensors' data type: float32 throughout, or float16 with every result
    rounded to float16 (matrix products accumulate in float32, activations are evaluated in float32
    with their FLOAT parameters, then rounded)."""

    def __init__(self, dtype: np.dtype):
        self.dtype = np.dtype(dtype)

    def mm(self, a, b):
        return (a.astype(np.float32) @ b.astype(np.float32)).astype(self.dtype)

    def act(self, fn, x):
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            return np.asarray(fn(x.astype(np.float32))).astype(self.dtype)


def interpret(p: Loaded, output_peephole: str = "Ct") -> list[np.ndarray]:
    """Evaluate the operator as DirectML documents it; outputs per present output field."""
    desc, t = p.desc, p.tensors
    ar = _Arith(p.dtype)
    dt = ar.dtype
    X = t["InputTensor"][0].astype(dt)                  # [S, B, I]
    W = t["WeightTensor"][0].astype(dt)                 # [D, G*H, I]
    R = t["RecurrenceTensor"][0].astype(dt)             # [D, G*H, H]
    S, B, _ = X.shape
    D, H, G = p.num_directions, R.shape[2], v.gates(p.op)
    bias = t["BiasTensor"][0, 0].astype(dt) if "BiasTensor" in t else np.zeros((D, 2 * G * H), dt)
    h0 = t["HiddenInitTensor"][0].astype(dt) if "HiddenInitTensor" in t else np.zeros((D, B, H), dt)
    c0 = t["CellMemInitTensor"][0].astype(dt) if "CellMemInitTensor" in t else np.zeros((D, B, H), dt)
    peep = t["PeepholeTensor"][0, 0].astype(dt) if "PeepholeTensor" in t else np.zeros((D, 3 * H), dt)
    lengths = (t["SequenceLengthsTensor"].reshape(-1).astype(np.int64) if "SequenceLengthsTensor" in t
               else np.full(B, S, np.int64))
    k = v.functions_per_direction(p.op)
    functions = [_activation(a) for a in desc["ActivationDescs"]]
    clip = (dt.type(desc["ClipThreshold"]) if p.op == "LSTM" and desc["UseClipThreshold"] else None)
    backward_only = desc["Direction"] == "DML_RECURRENT_NETWORK_DIRECTION_BACKWARD"

    Y = np.zeros((S, D, B, H), dt)
    Y_h, Y_c = np.zeros((D, B, H), dt), np.zeros((D, B, H), dt)
    for d in range(D):
        f = functions[d * k:(d + 1) * k]
        w = [W[d, g * H:(g + 1) * H].T for g in range(G)]
        r = [R[d, g * H:(g + 1) * H].T for g in range(G)]
        wb = [bias[d, g * H:(g + 1) * H] for g in range(G)]
        rb = [bias[d, (G + g) * H:(G + g + 1) * H] for g in range(G)]
        h, c = h0[d].copy(), c0[d].copy()
        steps = range(S - 1, -1, -1) if (backward_only or d == 1) else range(S)
        for step in steps:
            x = X[step]
            active = (step < lengths)[:, None]
            if p.op == "RNN":
                h_new = ar.act(f[0], ar.mm(x, w[0]) + ar.mm(h, r[0]) + wb[0] + rb[0])
                c_new = c
            elif p.op == "GRU":
                z = ar.act(f[0], ar.mm(x, w[0]) + ar.mm(h, r[0]) + wb[0] + rb[0])
                rg = ar.act(f[0], ar.mm(x, w[1]) + ar.mm(h, r[1]) + wb[1] + rb[1])
                if desc["LinearBeforeReset"]:
                    hh = ar.act(f[1], ar.mm(x, w[2]) + rg * (ar.mm(h, r[2]) + rb[2]) + wb[2])
                else:
                    hh = ar.act(f[1], ar.mm(x, w[2]) + ar.mm(rg * h, r[2]) + rb[2] + wb[2])
                h_new = (dt.type(1) - z) * hh + z * h
                c_new = c
            else:
                h_new, c_new = _lstm_step(ar, desc, f, x, h, c, w, r, wb, rb, peep[d], H, clip,
                                          output_peephole)
            Y[step, d] = np.where(active, h_new, dt.type(0))
            h = np.where(active, h_new, h)
            c = np.where(active, c_new, c)
        Y_h[d], Y_c[d] = h, c
    values = {"OutputSequenceTensor": Y, "OutputSingleTensor": Y_h[None], "OutputCellSingleTensor": Y_c[None]}
    return [write_through(desc[field]["Desc"], values[field]) for field in p.outputs]


def _lstm_step(ar, desc, f, x, h, c, w, r, wb, rb, peep, H, clip, output_peephole):
    """One DML_LSTM_OPERATOR_DESC step; gates i, o, f, c (W, R, B order), peepholes i, o, f."""
    pi, po, pf = peep[:H], peep[H:2 * H], peep[2 * H:]

    def pre(g, extra=None):
        z = ar.mm(x, w[g]) + ar.mm(h, r[g])
        if extra is not None:
            z = z + extra
        z = z + wb[g] + rb[g]
        return z if clip is None else np.clip(z, -clip, clip)

    i = ar.act(f[0], pre(0, pi * c))
    if desc["CoupleInputForget"]:
        fg = ar.dtype.type(1) - i
    else:
        fg = ar.act(f[0], pre(2, pf * c))
    cell = ar.act(f[1], pre(3))
    c_new = fg * c + i * cell
    o = ar.act(f[0], pre(1, po * (c_new if output_peephole == "Ct" else c)))
    return o * ar.act(f[2], c_new), c_new


class DirectMLInterpreter:
    """The descriptor interpreter. ``output_peephole`` picks the cell the output gate's peephole
    reads: "Ct" (the new cell, as ONNX; the default) or "Ct-1" (DirectML's text equations)."""

    name = "directml-interpreter"
    format = "directml"
    description = INTERPRETER_DESCRIPTION

    def __init__(self, output_peephole: str = "Ct"):
        if output_peephole not in ("Ct", "Ct-1"):
            raise ValueError(f"output_peephole={output_peephole!r} should be 'Ct' or 'Ct-1'")
        self.output_peephole = output_peephole
        self.version = __version__
        self.device = "CPU"
        self.config = "default" if output_peephole == "Ct" else "peephole=Ct-1"

    def run(self, model, feeds: dict) -> list[np.ndarray]:
        _no_feeds(feeds)
        return interpret(load(model), self.output_peephole)


# -- onnxruntime's DirectML execution provider -------------------------------------------------

ONNX_OF_ACTIVATION = {
    "DML_OPERATOR_ACTIVATION_RELU": ("Relu", ()),
    "DML_OPERATOR_ACTIVATION_TANH": ("Tanh", ()),
    "DML_OPERATOR_ACTIVATION_SIGMOID": ("Sigmoid", ()),
    "DML_OPERATOR_ACTIVATION_LINEAR": ("Affine", ("Alpha", "Beta")),
    "DML_OPERATOR_ACTIVATION_LEAKY_RELU": ("LeakyRelu", ("Alpha",)),
    "DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU": ("ThresholdedRelu", ("Alpha",)),
    "DML_OPERATOR_ACTIVATION_SCALED_TANH": ("ScaledTanh", ("Alpha", "Beta")),
    "DML_OPERATOR_ACTIVATION_HARD_SIGMOID": ("HardSigmoid", ("Alpha", "Beta")),
    "DML_OPERATOR_ACTIVATION_ELU": ("Elu", ("Alpha",)),
    "DML_OPERATOR_ACTIVATION_SOFTSIGN": ("Softsign", ()),
}
ONNX_DIRECTION = {"DML_RECURRENT_NETWORK_DIRECTION_FORWARD": "forward",
                  "DML_RECURRENT_NETWORK_DIRECTION_BACKWARD": "reverse",
                  "DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL": "bidirectional"}


def _onnx_activations(descs) -> tuple[list, list, list]:
    """ONNX names and the activation_alpha / activation_beta lists that give each its own
    parameters when consumed 'popped' (each parameterised activation takes the next value), which is
    how onnxruntime reads them."""
    names, alphas, betas = [], [], []
    for index, act in enumerate(descs):
        kind, params = act["Type"], act["Desc"]
        if kind == "DML_OPERATOR_ACTIVATION_SOFTPLUS" and params["Steepness"] == 1:
            names.append("Softplus")
            continue
        if kind == "DML_OPERATOR_ACTIVATION_IDENTITY":
            names.append("Affine")
            alphas.append(1.0)
            betas.append(0.0)
            continue
        if kind not in ONNX_OF_ACTIVATION:
            raise RuntimeRejected(f"ActivationDescs[{index}] = {kind} has no ONNX RNN activation, so "
                                  "the onnxruntime bridge cannot run it")
        name, fields = ONNX_OF_ACTIVATION[kind]
        names.append(name)
        if "Alpha" in fields:
            alphas.append(float(params["Alpha"]))
        if "Beta" in fields:
            betas.append(float(params["Beta"]))
    return names, alphas, betas


def to_onnx(p: Loaded):
    """The ONNX model (opset 14, layout 0) equivalent to a loaded descriptor, and its feeds."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    desc, t = p.desc, p.tensors
    elem = TensorProto.FLOAT16 if p.dtype == np.float16 else TensorProto.FLOAT
    S, B, _ = t["InputTensor"].shape[1:]
    H = t["RecurrenceTensor"].shape[3]
    feeds, inputs, initializers, node_inputs = {}, [], [], []
    squeeze = {"InputTensor": 1, "WeightTensor": 1, "RecurrenceTensor": 1, "BiasTensor": 2,
               "HiddenInitTensor": 1, "CellMemInitTensor": 1, "SequenceLengthsTensor": 3,
               "PeepholeTensor": 2}
    onnx_order = ["InputTensor", "WeightTensor", "RecurrenceTensor", "BiasTensor",
                  "SequenceLengthsTensor", "HiddenInitTensor"]
    if p.op == "LSTM":
        onnx_order += ["CellMemInitTensor", "PeepholeTensor"]
    for field in onnx_order:
        if field not in t:
            node_inputs.append("")
            continue
        name = v.CANONICAL_OF_FIELD[field]
        array = t[field].reshape(t[field].shape[squeeze[field]:])
        node_inputs.append(name)
        if field == "SequenceLengthsTensor":
            if (array > np.iinfo(np.int32).max).any():
                raise RuntimeRejected("SequenceLengthsTensor holds values past int32, which ONNX's "
                                      "sequence_lens cannot carry")
            array = array.astype(np.int32)
        if field in ("InputTensor", "SequenceLengthsTensor", "HiddenInitTensor", "CellMemInitTensor"):
            feeds[name] = np.ascontiguousarray(array)
            inputs.append(helper.make_tensor_value_info(
                name, TensorProto.INT32 if array.dtype == np.int32 else elem, list(array.shape)))
        else:
            initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    names, alphas, betas = _onnx_activations(desc["ActivationDescs"])
    attrs = {"hidden_size": int(H), "direction": ONNX_DIRECTION[desc["Direction"]], "activations": names}
    if alphas:
        attrs["activation_alpha"] = alphas
    if betas:
        attrs["activation_beta"] = betas
    if p.op == "GRU":
        attrs["linear_before_reset"] = int(desc["LinearBeforeReset"])
    if p.op == "LSTM":
        attrs["input_forget"] = int(desc["CoupleInputForget"])
        if desc["UseClipThreshold"]:
            attrs["clip"] = float(desc["ClipThreshold"])
    canonical = {"OutputSequenceTensor": "Y", "OutputSingleTensor": "Y_h", "OutputCellSingleTensor": "Y_c"}
    node_outputs = [canonical[f] if desc[f] is not None else "" for f in v.OUTPUT_FIELDS[p.op]]
    while node_outputs and node_outputs[-1] == "":
        node_outputs.pop()
    shapes = {"Y": [S, p.num_directions, B, H], "Y_h": [p.num_directions, B, H],
              "Y_c": [p.num_directions, B, H]}
    outputs = [helper.make_tensor_value_info(n, elem, shapes[n]) for n in node_outputs if n]
    node = helper.make_node(p.op, node_inputs, node_outputs, **attrs)
    graph = helper.make_graph([node], "directml-descriptor", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                              producer_name="rnn-conformance directml bridge")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model.SerializeToString(), feeds


class OnnxRuntimeDirectML:
    """onnxruntime on the ONNX model converted back from a descriptor; ``provider`` is the DirectML
    execution provider where it exists (any provider works, which is how the conversion is tested
    where DirectML is absent)."""

    name = "onnxruntime-dml"
    format = "directml"
    description = BRIDGE_DESCRIPTION

    def __init__(self, provider: str = DML_PROVIDER):
        import onnxruntime as ort
        self._ort = ort
        ort.set_default_logger_severity(4)
        self.provider = provider
        self.version = ort.__version__
        self.device = provider.removesuffix("ExecutionProvider")
        self.config = "default"

    def run(self, model, feeds: dict) -> list[np.ndarray]:
        _no_feeds(feeds)
        p = load(model)
        onnx_model, onnx_feeds = to_onnx(p)
        options = self._ort.SessionOptions()
        options.log_severity_level = 3
        session = self._ort.InferenceSession(onnx_model, options, providers=[self.provider])
        results = session.run(None, onnx_feeds)
        return [np.asarray(r).reshape(p.desc[f]["Desc"]["Sizes"]) for r, f in zip(results, p.outputs)]


def targets(specs_by_format: dict):
    """The interpreter for every DirectML spec; onnxruntime-dml where its provider exists, else a gap."""
    from conformance.runtimes.base import RuntimeRef, Target
    specs = specs_by_format.get("directml", [])
    if not specs:
        return [], []
    found = [Target("directml-interpreter", __version__, "CPU", "default", spec,
                    RuntimeRef("conformance.runtimes.directml:DirectMLInterpreter"), format="directml",
                    description=INTERPRETER_DESCRIPTION) for spec in specs]
    gaps = []
    try:
        import onnxruntime as ort
        providers = ort.get_available_providers()
    except ImportError as exc:
        reason = (f"onnxruntime not installed here ({exc}); DirectML descriptors are checked by the "
                  "interpreter only")
        return found, [("onnxruntime-dml", reason)]
    if DML_PROVIDER in providers:
        ref = RuntimeRef("conformance.runtimes.directml:OnnxRuntimeDirectML")
        found += [Target("onnxruntime-dml", ort.__version__, "DML", "default", spec, ref,
                         format="directml", description=BRIDGE_DESCRIPTION) for spec in specs]
    else:
        reason = ("DirectML execution provider not present: Windows-only (onnxruntime "
                  f"{ort.__version__} offers {', '.join(providers)}); DirectML descriptors are checked "
                  "by the interpreter only")
        gaps.append(("onnxruntime-dml", reason))
    return found, gaps
