"""The DirectML descriptor interpreter (runtime ``directml-interpreter``): DirectML's documented
semantics evaluated in numpy from the written descriptor and buffers. Not DirectML hardware: it
tells a descriptor the suite wrote wrongly from one DirectML computes differently."""

from __future__ import annotations

import numpy as np

from conformance import __version__
from conformance.runtimes.directml.loaded import Loaded, load, no_feeds
from conformance.specs.directml import vocabulary as v
from conformance.specs.directml.buffers import (
    write_through,
)

INTERPRETER_DESCRIPTION = ("DirectML descriptor interpreter: evaluates DirectML's documented semantics "
                           "in numpy from the written descriptor and buffers; not DirectML hardware")


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
        "DML_OPERATOR_ACTIVATION_HARD_SIGMOID": lambda x: np.maximum(np.float32(0),
                                                                     np.minimum(a * x + b, np.float32(1))),
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
        no_feeds(feeds)
        return interpret(load(model), self.output_peephole)
