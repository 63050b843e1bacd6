"""A plain numpy implementation of ONNX RNN, GRU and LSTM (opsets 7, 14, 22), with bug switches.

This is a *test double*, not a runtime under test and not an oracle: with ``bug = None`` it is a
correct implementation (it passes the suite and agrees with onnxruntime where onnxruntime follows
the spec); each subclass in ``tests/wrong/bugs.py`` sets ``bug`` to one of ``BUGS`` and becomes a
deliberately wrong implementation, to prove the comparison catches that class of bug.

It reads the model as any runtime would: the node's attributes (hidden_size, direction,
activations, activation_alpha / activation_beta, clip, linear_before_reset, input_forget, layout),
its inputs from initializers and feeds (absent optional inputs are empty names), and returns the
graph's outputs in the graph's order. It refuses (raises ``Rejected``) what the spec forbids.

Readings taken where the spec is silent (SPECS.md, "Where the specs disagree"), all as onnxruntime
does, except the ThresholdedRelu default alpha (1.0, the ThresholdedRelu operator's):

- activation_alpha / activation_beta are *popped*: only the activations that take a parameter
  consume the next value (Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu);
  a missing one takes the standalone operator's default (LeakyRelu 0.01, ThresholdedRelu 1.0,
  HardSigmoid 0.2 / 0.5, Elu 1.0), and 0 for Affine and ScaledTanh, which have none.
- activation names are matched without regard to case; ThresholdedRelu is ``x > alpha``.
- input_forget = 1 couples the gates as ft = 1 - it; clip bounds the inputs of f and g, not Ct
  before h; clip = 0 clamps to [0, 0].
- sequence_lens: Y is 0 past a sequence's length, Y_h / Y_c of a 0-length sequence are 0, the
  reverse direction starts at t = len - 1.

Arithmetic: float32 models compute in float32, float64 models in float64; float16 and bfloat16
models compute in float32 and round the outputs to their type.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
import onnx
from onnx import helper, numpy_helper

OPS = ("RNN", "GRU", "LSTM")
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
PER_DIRECTION = {"RNN": 1, "GRU": 2, "LSTM": 3}
DEFAULT_ACTIVATIONS = {"RNN": ("Tanh",), "GRU": ("Sigmoid", "Tanh"), "LSTM": ("Sigmoid", "Tanh", "Tanh")}
INPUTS = {
    "RNN": ("X", "W", "R", "B", "sequence_lens", "initial_h"),
    "GRU": ("X", "W", "R", "B", "sequence_lens", "initial_h"),
    "LSTM": ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"),
}
OUTPUTS = {"RNN": ("Y", "Y_h"), "GRU": ("Y", "Y_h"), "LSTM": ("Y", "Y_h", "Y_c")}
DIRECTIONS = ("forward", "reverse", "bidirectional")
FLOAT_TYPES = {np.dtype(np.float16): "float16", np.dtype(np.float32): "float32",
               np.dtype(np.float64): "float64", np.dtype(ml_dtypes.bfloat16): "bfloat16"}

#: lower-case name -> (takes alpha, takes beta)
PARAMETERS = {
    "relu": (False, False), "tanh": (False, False), "sigmoid": (False, False),
    "affine": (True, True), "leakyrelu": (True, False), "thresholdedrelu": (True, False),
    "scaledtanh": (True, True), "hardsigmoid": (True, True), "elu": (True, False),
    "softsign": (False, False), "softplus": (False, False),
}
#: the standalone ONNX operators' defaults (FLOAT attributes, so float32 values)
DEFAULTS = {
    "leakyrelu": (np.float32(0.01), None), "thresholdedrelu": (np.float32(1.0), None),
    "hardsigmoid": (np.float32(0.2), np.float32(0.5)), "elu": (np.float32(1.0), None),
}

#: every bug switch, with what it does (the registry in tests/wrong/bugs.py says where it shows)
BUGS = {
    "gate-order-lstm-of": "LSTM W/R/B gate blocks read as i, f, o, c instead of ONNX's i, o, f, c "
                          "(o and f swapped)",
    "gate-order-lstm-if": "LSTM W/R/B gate blocks read as f, o, i, c (i and f swapped)",
    "gate-order-lstm-oc": "LSTM W/R/B gate blocks read as i, c, f, o (o and c swapped)",
    "gate-order-gru-zr": "GRU W/R/B gate blocks read as r, z, h (z and r swapped)",
    "linear-before-reset-inverted": "GRU uses the linear_before_reset = 1 formula when it is 0, and "
                                    "the 0 formula when it is 1",
    "y-off-by-one": "Y[t] holds the state before step t (H[t-1]; initial_h at the first step) "
                    "instead of after it: the output is written before the state is updated",
    "reverse-ignores-sequence-lens": "the reverse direction starts at t = S-1 for every sequence and "
                                     "runs over the padding, instead of at t = len-1",
    "clip-after-activation": "clip bounds the output of each activation instead of its input",
    "fast-tanh": "tanh (Tanh, ScaledTanh and LSTM's h) by a [5/4] rational minimax approximation, "
                 "clamped to +-1 past |x| = 5.5: relative error up to 8.7e-5, like a fast-math kernel",
    "float16-accumulation": "the dot products X.W^T and H.R^T rounded to float16 term by term and "
                            "accumulated in float16 (biases and activations stay in float32)",
    "sigmoid-float16": "Sigmoid evaluated in float16 internally (input rounded to float16, "
                       "1/(1+exp(-x)) in float16), then widened back",
    "recurrence-bias-dropped": "the recurrence bias Rb is ignored (only Wb is added)",
    "initial-h-ignored": "initial_h is ignored: the recurrence starts from zeros",
    "peephole-output-old-cell": "LSTM output gate peephole reads Po . C[t-1] instead of Po . C[t]",
    "bidirectional-swapped": "bidirectional outputs stacked reverse first on the direction axis",
    "reverse-y-not-reversed": "the reverse direction writes Y in processing order (Y[k] holds the "
                              "k-th step processed, that is time len-1-k) instead of at time t",
    "hardsigmoid-alpha-beta-swapped": "HardSigmoid computes max(0, min(1, beta*x + alpha))",
    "activation-params-positional": "activation_alpha[k] / activation_beta[k] belong to the k-th "
                                    "activation of the list (a documented reading, SPECS.md point 4)",
    "activation-params-ignored": "activation_alpha / activation_beta ignored: every activation takes "
                                 "its default (Affine and ScaledTanh: alpha 1, beta 0 / 1)",
    "thresholdedrelu-default-zero": "ThresholdedRelu without activation_alpha uses alpha 0 instead "
                                    "of the ThresholdedRelu operator's 1.0",
    "y-h-from-last-step": "Y_h read from Y at the last time step (S-1 forward, 0 reverse) regardless "
                          "of sequence_lens (Y is 0 past a sequence's length)",
    "input-forget-i-from-f": "input_forget = 1 couples the gates as it = 1 - ft (OpenVINO's "
                             "LSTMCell-1 reading; a documented reading, SPECS.md point 1)",
    "peepholes-ignored": "the peephole input P is ignored (as OpenVINO's ONNX frontend does)",
    "benign-noise": "outputs multiplied by (1 + noise_eps * eps) of the compute type (eps = 2^-23 "
                    "in float32): a correct-enough implementation that a good tolerance must accept",
}


class Rejected(ValueError):
    """The model breaks a constraint of the ONNX operator: the runtime refuses it."""


@dataclass
class Problem:
    op: str
    opset: int
    dtype: np.dtype                  # T, the models' float type
    compute: np.dtype                # float32, or float64 for float64 models
    hidden_size: int
    direction: str
    layout: int
    activations: list                # per direction: [(lower-case name, alpha, beta), ...]
    clip: float | None
    linear_before_reset: bool
    input_forget: bool
    X: np.ndarray                    # [S, B, I] (layout 0), compute dtype
    W: np.ndarray
    R: np.ndarray
    B: np.ndarray                    # [D, 2*G*H], zeros when absent
    sequence_lens: np.ndarray        # [B] int64, seq_length when absent
    initial_h: np.ndarray            # [D, B, H] (layout 0), zeros when absent
    initial_c: np.ndarray | None
    P: np.ndarray                    # [D, 3H], zeros when absent
    wanted: list                     # the output slots (Y, Y_h, Y_c) in the graph's output order

    @property
    def num_directions(self) -> int:
        return 2 if self.direction == "bidirectional" else 1


class NumpyRNN:
    """ONNX RNN/GRU/LSTM in numpy. ``bug = None``: correct; otherwise one of ``BUGS``."""

    name = "numpy-rnn"
    format = "onnx"
    version = "test-double"
    description = "numpy ONNX RNN/GRU/LSTM test double (correct mode)"
    bug: str | None = None
    #: for the "benign-noise" switch: the relative perturbation, in eps of the compute type
    noise_eps: float = 1.0

    def __init__(self):
        if self.bug is not None and self.bug not in BUGS:
            raise ValueError(f"bug={self.bug!r} is not a known switch; known: {', '.join(BUGS)}")

    # -- the plugin contract ------------------------------------------------------------------

    def run(self, model: bytes, feeds: dict) -> list:
        p = self.parse(onnx.load_from_string(model), feeds)
        out = self.compute(p)
        return [out[name] for name in p.wanted]

    # -- reading the model ----------------------------------------------------------------------

    def parse(self, model: onnx.ModelProto, feeds: dict) -> Problem:
        graph = model.graph
        nodes = [n for n in graph.node if n.op_type in OPS]
        if len(graph.node) != 1 or len(nodes) != 1:
            raise Rejected(f"expected one RNN, GRU or LSTM node, got {[n.op_type for n in graph.node]}")
        node = nodes[0]
        op = node.op_type
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
        if opset is None:
            raise Rejected("the model imports no default-domain opset")
        schema = onnx.defs.get_schema(op, opset)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        unknown = sorted(set(attrs) - set(schema.attributes))
        if unknown:
            raise Rejected(f"{op}-{schema.since_version} has no attribute {', '.join(unknown)}")

        values = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
        values.update({k: np.asarray(v) for k, v in feeds.items()})
        tensors = {}
        for slot, name in zip(INPUTS[op], node.input):
            if name == "":
                continue
            if name not in values:
                raise Rejected(f"input {slot} names {name!r}, which is neither fed nor an initializer")
            tensors[slot] = values[name]
        if len(node.input) > len(INPUTS[op]):
            raise Rejected(f"{op} takes at most {len(INPUTS[op])} inputs, got {len(node.input)}")
        for slot in ("X", "W", "R"):
            if slot not in tensors:
                raise Rejected(f"required input {slot} is absent")

        dtype = tensors["X"].dtype
        if dtype not in FLOAT_TYPES:
            raise Rejected(f"X has type {dtype}; T must be float16, bfloat16, float32 or float64")
        for slot, arr in tensors.items():
            if slot == "sequence_lens":
                if arr.dtype != np.int32:
                    raise Rejected(f"sequence_lens has type {arr.dtype}, but should be int32")
            elif arr.dtype != dtype:
                raise Rejected(f"{slot} has type {arr.dtype}, but should be {dtype} like X")
        compute = np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)

        direction = _text(attrs.get("direction", "forward"))
        if direction not in DIRECTIONS:
            raise Rejected(f"direction={direction!r}, but should be one of {', '.join(DIRECTIONS)}")
        d = 2 if direction == "bidirectional" else 1
        layout = int(attrs.get("layout", 0))
        if layout not in (0, 1):
            raise Rejected(f"layout={layout}, but should be 0 or 1")
        g = GATES[op]
        w, r, x = tensors["W"], tensors["R"], tensors["X"]
        hidden = int(attrs.get("hidden_size", r.shape[-1] if r.ndim == 3 else 0))
        if hidden <= 0:
            raise Rejected(f"hidden_size={hidden}, but should be > 0")
        if x.ndim != 3:
            raise Rejected(f"X has shape {list(x.shape)}, but should have rank 3")
        if layout == 1:
            x = np.transpose(x, (1, 0, 2))
        s, b, i = x.shape
        _shape("W", w, (d, g * hidden, i))
        _shape("R", r, (d, g * hidden, hidden))
        state_shape = (d, b, hidden) if layout == 0 else (b, d, hidden)
        states = {}
        for slot in ("initial_h", "initial_c"):
            if slot in tensors:
                _shape(slot, tensors[slot], state_shape)
                arr = tensors[slot]
                states[slot] = (arr if layout == 0 else np.transpose(arr, (1, 0, 2))).astype(compute)
        bias = tensors.get("B")
        if bias is not None:
            _shape("B", bias, (d, 2 * g * hidden))
        peep = tensors.get("P")
        if peep is not None:
            _shape("P", peep, (d, 3 * hidden))
        lens = tensors.get("sequence_lens")
        if lens is not None:
            _shape("sequence_lens", lens, (b,))
            if lens.size and (lens.min() < 0 or lens.max() > s):
                raise Rejected(f"sequence_lens={lens.tolist()}, but should satisfy 0 <= len <= seq_length = {s}")

        clip = attrs.get("clip")
        if clip is not None and not clip >= 0:
            raise Rejected(f"clip={clip}, but should be >= 0")
        input_forget = int(attrs.get("input_forget", 0))
        if input_forget not in (0, 1):
            raise Rejected(f"input_forget={input_forget}, but should be 0 or 1")

        graph_outputs = [o.name for o in graph.output]
        node_outputs = list(node.output)
        if len(node_outputs) > len(OUTPUTS[op]):
            raise Rejected(f"{op} has at most {len(OUTPUTS[op])} outputs, got {len(node_outputs)}")
        slot_of = {name: OUTPUTS[op][k] for k, name in enumerate(node_outputs) if name}
        missing = [n for n in graph_outputs if n not in slot_of]
        if missing:
            raise Rejected(f"graph outputs {missing} are not produced by the {op} node")

        return Problem(
            op=op, opset=opset, dtype=dtype, compute=compute, hidden_size=hidden, direction=direction,
            layout=layout, activations=self.activations(op, d, attrs), clip=clip,
            linear_before_reset=bool(attrs.get("linear_before_reset", 0)), input_forget=bool(input_forget),
            X=x.astype(compute), W=w.astype(compute), R=r.astype(compute),
            B=(bias.astype(compute) if bias is not None else np.zeros((d, 2 * g * hidden), compute)),
            sequence_lens=(lens.astype(np.int64) if lens is not None else np.full(b, s, np.int64)),
            initial_h=states.get("initial_h", np.zeros((d, b, hidden), compute)),
            initial_c=states.get("initial_c", np.zeros((d, b, hidden), compute)) if op == "LSTM" else None,
            P=(peep.astype(compute) if peep is not None else np.zeros((d, 3 * hidden), compute)),
            wanted=[slot_of[n] for n in graph_outputs],
        )

    def activations(self, op: str, d: int, attrs: dict) -> list:
        """Per direction, the activation functions with their (alpha, beta)."""
        per = PER_DIRECTION[op]
        names = [_text(n) for n in attrs.get("activations", DEFAULT_ACTIVATIONS[op] * d)]
        lower = [n.lower() for n in names]
        if op == "RNN" and d == 1 and len(lower) == 2 and lower[0] == lower[1]:
            lower = lower[:1]  # the schema's own default lists ["Tanh", "Tanh"] for a one-set RNN
        if len(lower) != per * d:
            raise Rejected(f"activations={names}, but {op} {'bidirectional ' if d == 2 else ''}takes "
                           f"{per * d} functions ({per} per direction)")
        unknown = [n for n, lo in zip(names, lower) if lo not in PARAMETERS]
        if unknown:
            raise Rejected(f"activations {unknown} are not ONNX activation functions")
        alphas = [float(a) for a in attrs.get("activation_alpha", [])]
        betas = [float(v) for v in attrs.get("activation_beta", [])]
        resolved = []
        ai = bi = 0
        for k, name in enumerate(lower):
            takes_alpha, takes_beta = PARAMETERS[name]
            default_alpha, default_beta = DEFAULTS.get(name, (0.0, 0.0))
            default_beta = 0.0 if default_beta is None else default_beta
            if self.bug == "thresholdedrelu-default-zero" and name == "thresholdedrelu":
                default_alpha = 0.0
            alpha = beta = None
            if self.bug == "activation-params-positional":
                alpha = alphas[k] if k < len(alphas) else None
                beta = betas[k] if k < len(betas) else None
            elif self.bug == "activation-params-ignored":
                default_alpha, default_beta = {"affine": (1.0, 0.0), "scaledtanh": (1.0, 1.0)}.get(
                    name, (default_alpha, default_beta))
            else:  # popped: only a parameterised activation consumes the next value
                if takes_alpha and ai < len(alphas):
                    alpha, ai = alphas[ai], ai + 1
                if takes_beta and bi < len(betas):
                    beta, bi = betas[bi], bi + 1
            alpha = float(default_alpha) if alpha is None else alpha
            beta = float(default_beta) if beta is None else beta
            resolved.append((name, alpha, beta))
        return [resolved[k * per:(k + 1) * per] for k in range(d)]

    # -- computing ------------------------------------------------------------------------------

    def compute(self, p: Problem) -> dict:
        g, h = GATES[p.op], p.hidden_size
        ys, hs, cs = [], [], []
        for d in range(p.num_directions):
            w, r = self.gate_order(p.op, p.W[d]), self.gate_order(p.op, p.R[d])
            wb, rb = self.gate_order(p.op, p.B[d, :g * h]), self.gate_order(p.op, p.B[d, g * h:])
            if self.bug == "recurrence-bias-dropped":
                rb = np.zeros_like(rb)
            h0 = p.initial_h[d]
            if self.bug == "initial-h-ignored":
                h0 = np.zeros_like(h0)
            c0 = p.initial_c[d] if p.initial_c is not None else np.zeros_like(h0)
            reverse = p.direction == "reverse" or d == 1
            y, y_h, y_c = self.direction(p, d, w, r, wb, rb, h0, c0, reverse)
            ys.append(y)
            hs.append(y_h)
            cs.append(y_c)
        if self.bug == "bidirectional-swapped":
            ys, hs, cs = ys[::-1], hs[::-1], cs[::-1]
        out = {"Y": np.stack(ys, axis=1), "Y_h": np.stack(hs), "Y_c": np.stack(cs)}
        if self.bug == "benign-noise":
            factor = p.compute.type(1 + self.noise_eps * np.finfo(p.compute).eps)
            out = {k: v * factor for k, v in out.items()}
        if p.layout == 1:
            out = {"Y": np.transpose(out["Y"], (2, 0, 1, 3)), "Y_h": np.transpose(out["Y_h"], (1, 0, 2)),
                   "Y_c": np.transpose(out["Y_c"], (1, 0, 2))}
        return {k: np.ascontiguousarray(v).astype(p.dtype) for k, v in out.items()}

    def gate_order(self, op: str, blocks: np.ndarray) -> np.ndarray:
        """The gate blocks (axis 0) in ONNX order, or in the wrong order a gate-order bug reads."""
        swaps = {"gate-order-lstm-of": ("LSTM", (0, 2, 1, 3)), "gate-order-lstm-if": ("LSTM", (2, 1, 0, 3)),
                 "gate-order-lstm-oc": ("LSTM", (0, 3, 2, 1)), "gate-order-gru-zr": ("GRU", (1, 0, 2))}
        if self.bug in swaps and swaps[self.bug][0] == op:
            order = swaps[self.bug][1]
            parts = np.split(blocks, len(order), axis=0)
            return np.concatenate([parts[k] for k in order], axis=0)
        return blocks

    def direction(self, p: Problem, d: int, w, r, wb, rb, h0, c0, reverse: bool):
        s, b = p.X.shape[:2]
        lens = p.sequence_lens
        batch = np.arange(b)
        y = np.zeros((s, b, p.hidden_size), p.compute)
        h, c = h0.copy(), c0.copy()
        for k in range(s):
            if reverse and self.bug == "reverse-ignores-sequence-lens":
                t = np.full(b, s - 1 - k)
                step = np.ones(b, bool)             # the state runs over the padding too
                write = t < lens
            elif reverse:
                t = lens - 1 - k
                step = write = k < lens
            else:
                t = np.full(b, k)
                step = write = k < lens
            t = np.where(step, t, 0)
            x = p.X[t, batch]
            h_new, c_new = self.cell(p, d, x, h, c, w, r, wb, rb)
            value = h if self.bug == "y-off-by-one" else h_new
            at = np.full(b, k) if reverse and self.bug == "reverse-y-not-reversed" else t
            y[at[write], batch[write]] = value[write]
            h = np.where(step[:, None], h_new, h)
            c = np.where(step[:, None], c_new, c)
        empty = (lens == 0)[:, None]
        y_h, y_c = np.where(empty, 0, h), np.where(empty, 0, c)
        if self.bug == "y-h-from-last-step":
            y_h = (y[0] if reverse else y[s - 1]).copy()
        return y, y_h, y_c

    def cell(self, p: Problem, d: int, x, h, c, w, r, wb, rb):
        """One time step for the batch rows: (H[t], C[t]) from X[t], H[t-1], C[t-1]."""
        acts = p.activations[d]
        hs = p.hidden_size
        xw = self.matmul(x, w) + wb
        if p.op == "RNN":
            (f,) = acts
            return self.act(p, f, xw + self.matmul(h, r) + rb), c
        if p.op == "GRU":
            f, g = acts
            hr = self.matmul(h, r[:2 * hs]) + rb[:2 * hs]
            z = self.act(p, f, xw[:, :hs] + hr[:, :hs])
            rt = self.act(p, f, xw[:, hs:2 * hs] + hr[:, hs:])
            lbr = p.linear_before_reset != (self.bug == "linear-before-reset-inverted")
            rh, rbh = r[2 * hs:], rb[2 * hs:]
            if lbr:
                hh = self.act(p, g, xw[:, 2 * hs:] + rt * (self.matmul(h, rh) + rbh))
            else:
                hh = self.act(p, g, xw[:, 2 * hs:] + self.matmul(rt * h, rh) + rbh)
            one = p.compute.type(1)
            return (one - z) * hh + z * h, c
        f, g, hf = acts
        gates = xw + self.matmul(h, r) + rb
        gi, go, gf, gc = (gates[:, k * hs:(k + 1) * hs] for k in range(4))
        pi, po, pf = (p.P[d, k * hs:(k + 1) * hs] * (self.bug != "peepholes-ignored") for k in range(3))
        one = p.compute.type(1)
        if p.input_forget and self.bug == "input-forget-i-from-f":
            ft = self.act(p, f, gf + pf * c)
            it = one - ft
        else:
            it = self.act(p, f, gi + pi * c)
            ft = one - it if p.input_forget else self.act(p, f, gf + pf * c)
        ct = self.act(p, g, gc)
        c_new = ft * c + it * ct
        o_cell = c if self.bug == "peephole-output-old-cell" else c_new
        ot = self.act(p, f, go + po * o_cell)
        return ot * self.act(p, hf, c_new, clip=False), c_new

    def matmul(self, a: np.ndarray, w: np.ndarray) -> np.ndarray:
        """a [B, K] times w [N, K] transposed, in the compute dtype."""
        if self.bug != "float16-accumulation":
            return a @ w.T
        acc = np.zeros((a.shape[0], w.shape[0]), np.float16)
        for k in range(a.shape[1]):
            acc = (acc + (a[:, k:k + 1] * w[None, :, k]).astype(np.float16)).astype(np.float16)
        return acc.astype(a.dtype)

    def act(self, p: Problem, fn: tuple, x: np.ndarray, clip: bool = True) -> np.ndarray:
        """An activation with its parameters, with clip bounding its input (or, as a bug, output)."""
        name, alpha, beta = fn
        bound = p.clip if clip else None
        if bound is not None and self.bug != "clip-after-activation":
            x = np.clip(x, -bound, bound)
        y = self.activation(name, alpha, beta, x)
        if bound is not None and self.bug == "clip-after-activation":
            y = np.clip(y, -bound, bound)
        return y

    def activation(self, name: str, alpha: float, beta: float, x: np.ndarray) -> np.ndarray:
        t = x.dtype.type
        a, bt = t(alpha), t(beta)
        zero, one = t(0), t(1)
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            if name == "relu":
                return np.maximum(x, zero)
            if name == "tanh":
                return self.tanh(x)
            if name == "sigmoid":
                return self.sigmoid(x)
            if name == "affine":
                return a * x + bt
            if name == "leakyrelu":
                return np.where(x >= zero, x, a * x)
            if name == "thresholdedrelu":
                return np.where(x > a, x, zero)
            if name == "scaledtanh":
                return a * self.tanh(bt * x)
            if name == "hardsigmoid":
                if self.bug == "hardsigmoid-alpha-beta-swapped":
                    a, bt = bt, a
                return np.maximum(zero, np.minimum(one, a * x + bt))
            if name == "elu":
                return np.where(x >= zero, x, a * np.expm1(x))
            if name == "softsign":
                return x / (one + np.abs(x))
            if name == "softplus":
                return np.logaddexp(zero, x)
        raise Rejected(f"activation {name!r} is not an ONNX activation function")

    def tanh(self, x: np.ndarray) -> np.ndarray:
        if self.bug == "fast-tanh":
            return fast_tanh(x)
        return np.tanh(x)

    def sigmoid(self, x: np.ndarray) -> np.ndarray:
        if self.bug == "sigmoid-float16":
            x16 = x.astype(np.float16)
            with np.errstate(over="ignore"):
                y16 = np.float16(1) / (np.float16(1) + np.exp(-x16))
            return y16.astype(x.dtype)
        e = np.exp(-np.abs(x))           # never overflows
        one = x.dtype.type(1)
        return np.where(x >= 0, one / (one + e), e / (one + e))


#: tanh(x) ~ x P(x^2) / Q(x^2) on |x| < 5.5, +-1 beyond: a [5/4] rational fitted for minimax
#: relative error (Loeb/Lawson iteration over [0, 5.5]); its error equi-oscillates at ~8.7e-5.
FAST_TANH_P = (0.999912595, 0.100841254, 6.23843852e-4)
FAST_TANH_Q = (1.0, 0.4336769, 0.01234516)
FAST_TANH_CLAMP = 5.5


def fast_tanh(x: np.ndarray) -> np.ndarray:
    t = x.dtype.type
    xc = np.clip(x, t(-FAST_TANH_CLAMP), t(FAST_TANH_CLAMP))
    u = xc * xc
    num = xc * (t(FAST_TANH_P[0]) + u * (t(FAST_TANH_P[1]) + u * t(FAST_TANH_P[2])))
    den = t(FAST_TANH_Q[0]) + u * (t(FAST_TANH_Q[1]) + u * t(FAST_TANH_Q[2]))
    return np.where(np.abs(x) >= t(FAST_TANH_CLAMP), np.sign(x), num / den).astype(x.dtype)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _shape(slot: str, arr: np.ndarray, expected: tuple) -> None:
    if tuple(arr.shape) != tuple(expected):
        raise Rejected(f"{slot} has shape {list(arr.shape)}, but should have shape {list(expected)}")
