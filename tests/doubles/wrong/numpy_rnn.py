"""A plain numpy implementation of ONNX RNN, GRU and LSTM (opsets 7, 14, 22), with named hooks.

This is a *test double*, not a runtime under test and not an oracle: ``NumpyRNN`` is a correct
implementation (it passes the suite and agrees with onnxruntime where onnxruntime follows the
spec). Every point where a realistic bug could go wrong is a small method, a *hook* (``HOOKS``),
whose body here is the correct behaviour; each class in ``tests/doubles/wrong/bugs.py`` overrides the one
hook its bug is about and becomes a deliberately wrong implementation, to prove the comparison
catches that class of bug.

It reads the model as any runtime would: the node's attributes (hidden_size, direction,
activations, activation_alpha / activation_beta, clip, linear_before_reset, input_forget, layout),
its inputs from initializers and feeds (absent optional inputs are empty names), and returns the
graph's outputs in the graph's order. It refuses (raises ``Rejected``) what the spec forbids.

Readings taken where the spec is silent (docs/disagreements.md), all as onnxruntime
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


#: every hook: the methods a deliberately wrong subclass overrides (tests/doubles/wrong/bugs.py), each
#: doing one correct thing here
HOOKS = (
    "activation_defaults", "activation_params",            # reading the activations
    "gate_blocks", "recurrence_bias", "initial_state",     # reading W, R, B, initial_h
    "reverse_start", "y_time", "y_value", "final_hidden",  # the time loop and its outputs
    "stack_directions", "perturb_outputs",                 # assembling the outputs
    "linear_before_reset",                                 # GRU
    "peepholes", "input_forget_coupling", "output_peephole_cell",  # LSTM
    "matmul", "clip_then_activate", "hardsigmoid", "tanh", "sigmoid",  # arithmetic
)


class NumpyRNN:
    """ONNX RNN/GRU/LSTM in numpy, correct; a subclass overriding one of ``HOOKS`` is wrong."""

    name = "numpy-rnn"
    format = "onnx"
    version = "test-double"
    description = "numpy ONNX RNN/GRU/LSTM test double (correct mode)"
    #: the bug's switch name (tests/doubles/wrong/bugs.py: a label for ids and descriptions; None here)
    bug: str | None = None

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
        for name, (alpha, beta) in zip(lower, self.activation_params(lower, alphas, betas)):
            default_alpha, default_beta = self.activation_defaults(name)
            alpha = float(default_alpha) if alpha is None else alpha
            beta = float(default_beta) if beta is None else beta
            resolved.append((name, alpha, beta))
        return [resolved[k * per:(k + 1) * per] for k in range(d)]

    def activation_params(self, names: list, alphas: list, betas: list) -> list:
        """Hook: each activation's (alpha, beta) from activation_alpha / activation_beta, None where
        it takes its default. Popped: only a parameterised activation consumes the next value."""
        params = []
        ai = bi = 0
        for name in names:
            takes_alpha, takes_beta = PARAMETERS[name]
            alpha = beta = None
            if takes_alpha and ai < len(alphas):
                alpha, ai = alphas[ai], ai + 1
            if takes_beta and bi < len(betas):
                beta, bi = betas[bi], bi + 1
            params.append((alpha, beta))
        return params

    def activation_defaults(self, name: str) -> tuple:
        """Hook: the (alpha, beta) an activation takes when activation_alpha / _beta give it none:
        the standalone operator's defaults, 0 where it has none."""
        default_alpha, default_beta = DEFAULTS.get(name, (0.0, 0.0))
        return default_alpha, (0.0 if default_beta is None else default_beta)

    # -- computing ------------------------------------------------------------------------------

    def compute(self, p: Problem) -> dict:
        g, h = GATES[p.op], p.hidden_size
        ys, hs, cs = [], [], []
        for d in range(p.num_directions):
            w, r = self.gate_blocks(p.op, p.W[d]), self.gate_blocks(p.op, p.R[d])
            wb, rb = self.gate_blocks(p.op, p.B[d, :g * h]), self.gate_blocks(p.op, p.B[d, g * h:])
            rb = self.recurrence_bias(rb)
            h0 = self.initial_state(p.initial_h[d])
            c0 = p.initial_c[d] if p.initial_c is not None else np.zeros_like(h0)
            reverse = p.direction == "reverse" or d == 1
            y, y_h, y_c = self.direction(p, d, w, r, wb, rb, h0, c0, reverse)
            ys.append(y)
            hs.append(y_h)
            cs.append(y_c)
        out = self.perturb_outputs(self.stack_directions(ys, hs, cs), p.compute)
        if p.layout == 1:
            out = {"Y": np.transpose(out["Y"], (2, 0, 1, 3)), "Y_h": np.transpose(out["Y_h"], (1, 0, 2)),
                   "Y_c": np.transpose(out["Y_c"], (1, 0, 2))}
        return {k: np.ascontiguousarray(v).astype(p.dtype) for k, v in out.items()}

    def gate_blocks(self, op: str, blocks: np.ndarray) -> np.ndarray:
        """Hook: the gate blocks (axis 0) of W, R, Wb or Rb of one direction, in ONNX order
        (LSTM i, o, f, c; GRU z, r, h), as the cell reads them."""
        return blocks

    def recurrence_bias(self, rb: np.ndarray) -> np.ndarray:
        """Hook: the recurrence bias Rb (second half of B) the cell adds."""
        return rb

    def initial_state(self, h0: np.ndarray) -> np.ndarray:
        """Hook: the hidden state the recurrence starts from (initial_h, zeros when absent)."""
        return h0

    def stack_directions(self, ys: list, hs: list, cs: list) -> dict:
        """Hook: Y, Y_h, Y_c from the per-direction results, forward first on the direction axis."""
        return {"Y": np.stack(ys, axis=1), "Y_h": np.stack(hs), "Y_c": np.stack(cs)}

    def perturb_outputs(self, out: dict, compute: np.dtype) -> dict:
        """Hook: the outputs (layout 0, compute dtype) as returned: unchanged."""
        return out

    def direction(self, p: Problem, d: int, w, r, wb, rb, h0, c0, reverse: bool):
        s, b = p.X.shape[:2]
        lens = p.sequence_lens
        batch = np.arange(b)
        y = np.zeros((s, b, p.hidden_size), p.compute)
        h, c = h0.copy(), c0.copy()
        start = self.reverse_start(lens, s) if reverse else None
        for k in range(s):
            if reverse:
                t = start - k
                step = t >= 0                       # the state steps while t >= 0
                write = step & (t < lens)           # Y is written only within the sequence
            else:
                t = np.full(b, k)
                step = write = k < lens
            t = np.where(step, t, 0)
            x = p.X[t, batch]
            h_new, c_new = self.cell(p, d, x, h, c, w, r, wb, rb)
            at = self.y_time(t, k, reverse)
            y[at[write], batch[write]] = self.y_value(h, h_new)[write]
            h = np.where(step[:, None], h_new, h)
            c = np.where(step[:, None], c_new, c)
        empty = (lens == 0)[:, None]
        return y, self.final_hidden(y, h, lens, reverse), np.where(empty, 0, c)

    def reverse_start(self, lens: np.ndarray, seq_length: int) -> np.ndarray:
        """Hook: per batch row, the time step the reverse direction starts at: len - 1 (it then
        steps down to 0; a 0-length sequence never steps)."""
        return lens - 1

    def y_time(self, t: np.ndarray, k: int, reverse: bool) -> np.ndarray:
        """Hook: per batch row, where on Y's time axis the k-th step processed is written: its
        time step t."""
        return t

    def y_value(self, h_before: np.ndarray, h_after: np.ndarray) -> np.ndarray:
        """Hook: what Y[t] holds: the state after step t."""
        return h_after

    def final_hidden(self, y: np.ndarray, h: np.ndarray, lens: np.ndarray, reverse: bool) -> np.ndarray:
        """Hook: Y_h of one direction from the final state h: 0 for a 0-length sequence."""
        return np.where((lens == 0)[:, None], 0, h)

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
            rh, rbh = r[2 * hs:], rb[2 * hs:]
            if self.linear_before_reset(p.linear_before_reset):
                hh = self.act(p, g, xw[:, 2 * hs:] + rt * (self.matmul(h, rh) + rbh))
            else:
                hh = self.act(p, g, xw[:, 2 * hs:] + self.matmul(rt * h, rh) + rbh)
            one = p.compute.type(1)
            return (one - z) * hh + z * h, c
        f, g, hf = acts
        gates = xw + self.matmul(h, r) + rb
        gi, go, gf, gc = (gates[:, k * hs:(k + 1) * hs] for k in range(4))
        peep = self.peepholes(p.P[d])
        pi, po, pf = (peep[k * hs:(k + 1) * hs] for k in range(3))
        one = p.compute.type(1)

        def input_gate():
            return self.act(p, f, gi + pi * c)

        def forget_gate():
            return self.act(p, f, gf + pf * c)

        if p.input_forget:
            it, ft = self.input_forget_coupling(input_gate, forget_gate, one)
        else:
            it, ft = input_gate(), forget_gate()
        ct = self.act(p, g, gc)
        c_new = ft * c + it * ct
        ot = self.act(p, f, go + po * self.output_peephole_cell(c, c_new))
        return ot * self.act(p, hf, c_new, clip=False), c_new

    def linear_before_reset(self, flag: bool) -> bool:
        """Hook: whether GRU applies the reset gate after the recurrence's linear transformation
        (r . (H R^T + Rbh)) rather than before it ((r . H) R^T + Rbh): the attribute's value."""
        return flag

    def peepholes(self, peep: np.ndarray) -> np.ndarray:
        """Hook: one direction's peephole weights [Pi, Po, Pf] (zeros when P is absent)."""
        return peep

    def input_forget_coupling(self, input_gate, forget_gate, one):
        """Hook: (it, ft) when input_forget = 1, from the gates' thunks: ft = 1 - it."""
        it = input_gate()
        return it, one - it

    def output_peephole_cell(self, c_old: np.ndarray, c_new: np.ndarray) -> np.ndarray:
        """Hook: the cell state the output gate's peephole reads: Po . C[t]."""
        return c_new

    def matmul(self, a: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Hook: a [B, K] times w [N, K] transposed, in the compute dtype."""
        return a @ w.T

    def act(self, p: Problem, fn: tuple, x: np.ndarray, clip: bool = True) -> np.ndarray:
        """An activation with its parameters, with clip (when set and ``clip``) bounding its input."""
        return self.clip_then_activate(fn, x, p.clip if clip else None)

    def clip_then_activate(self, fn: tuple, x: np.ndarray, bound: float | None) -> np.ndarray:
        """Hook: the activation ``fn`` = (name, alpha, beta) of x, x first clipped to [-bound, bound]
        when bound is not None."""
        if bound is not None:
            x = np.clip(x, -bound, bound)
        return self.activation(*fn, x)

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
                return self.hardsigmoid(x, a, bt)
            if name == "elu":
                return np.where(x >= zero, x, a * np.expm1(x))
            if name == "softsign":
                return x / (one + np.abs(x))
            if name == "softplus":
                return np.logaddexp(zero, x)
        raise Rejected(f"activation {name!r} is not an ONNX activation function")

    def hardsigmoid(self, x: np.ndarray, alpha, beta) -> np.ndarray:
        """Hook: HardSigmoid, max(0, min(1, alpha*x + beta)) (alpha, beta of x's type)."""
        t = x.dtype.type
        return np.maximum(t(0), np.minimum(t(1), alpha * x + beta))

    def tanh(self, x: np.ndarray) -> np.ndarray:
        """Hook: tanh (Tanh, ScaledTanh and LSTM's h by default)."""
        return np.tanh(x)

    def sigmoid(self, x: np.ndarray) -> np.ndarray:
        """Hook: the logistic function, evaluated without overflow."""
        e = np.exp(-np.abs(x))           # never overflows
        one = x.dtype.type(1)
        return np.where(x >= 0, one / (one + e), e / (one + e))


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _shape(slot: str, arr: np.ndarray, expected: tuple) -> None:
    if tuple(arr.shape) != tuple(expected):
        raise Rejected(f"{slot} has shape {list(arr.shape)}, but should have shape {list(expected)}")
