"""One evaluation: a problem under one combination of readings, at one precision.

Walks each direction and each batch entry through its valid time steps (sequence_lens), calling
the op's cell, and lays the states out as the ONNX outputs (layout 0, flattened row-major).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import gru, ieee, lstm, rnn
from .activations import Activation, assign_parameters, missing_parameters
from .arith import ZERO, from_float, neg
from .exact import clip_to

CELLS = {"RNN": rnn, "GRU": gru, "LSTM": lstm}

BEYOND_LENGTH = "sequence_lens.beyond_length"
ZERO_LENGTH = "sequence_lens.zero_length"
MISSING_PARAMETER = "activation_defaults.missing"

REASONS = {
    BEYOND_LENGTH: (
        "Y[t, d, b, :] for t >= sequence_lens[b]: the spec does not say what Y holds past a "
        "sequence's length ({clause})"
    ),
    ZERO_LENGTH: (
        "Y_h/Y_c[d, b, :] where sequence_lens[b] == 0: the spec does not say what the last state "
        "of an empty sequence is ({clause})"
    ),
    MISSING_PARAMETER: (
        "{what}: a parameter is neither given nor defaulted; ONNX's defaults are \"the same as of "
        "corresponding ONNX operators\" and there is no standalone {names} operator, so every "
        "output of that direction is unspecified"
    ),
}


@dataclass
class Context:
    """What a cell needs besides its constants: precision, clip, the readings in force; ``ieee``
    for a problem with a non-finite input (clip and the GRU update then follow ieee.py)."""

    prec: int
    clip_bound: tuple | None
    choices: dict
    input_forget: bool
    touched: set = field(default_factory=set)
    ieee: bool = False

    def __post_init__(self):
        self.clip_bound_neg = None if self.clip_bound is None else neg(self.clip_bound)
        if self.ieee:
            self.clip = lambda value: ieee.clip(value, self)

    def clip(self, value):
        return clip_to(value, self.clip_bound, self.clip_bound_neg)


@dataclass
class Output:
    shape: tuple[int, ...]
    values: list  # raw values, row-major; None where unspecified
    reasons: list  # reason code or None, row-major


@dataclass
class Evaluation:
    outputs: dict[str, Output]
    reasons: dict[str, str]  # code -> sentence, for the codes used
    touched: set


def direction_functions(problem, d: int, choices: dict):
    """The activation functions of direction d, parameters resolved, and what is missing."""
    names = problem.activations
    k = problem.info.functions
    listed = names[:k] if problem.shared_activations else names
    assigned = assign_parameters(listed, problem.activation_alpha, problem.activation_beta,
                                 choices["alpha_beta_consumption"])
    if problem.shared_activations:
        assigned = assigned * 2
    defaults = choices["activation_defaults"]["defaults"]
    strict = choices["thresholded_relu_boundary"] == ">"
    functions, missing = [], []
    for index in range(d * k, (d + 1) * k):
        name = names[index]
        alpha, beta = assigned[index]
        lacking = missing_parameters(name, alpha, beta, defaults)
        if lacking:
            missing.append((name, lacking))
        own = defaults.get(name, {})
        alpha = own.get("alpha") if alpha is None else alpha
        beta = own.get("beta") if beta is None else beta
        functions.append(Activation(
            name,
            None if alpha is None else from_float(alpha),
            None if beta is None else from_float(beta),
            strict_threshold=strict,
        ))
    return functions, missing


def prepared(problem):
    """Per-direction constants of the problem's cell (exact, so computed once and kept)."""
    if problem.constants is None:
        cell = CELLS[problem.op]
        prepare = cell.prepare_ieee if problem.nonfinite else cell.prepare
        problem.constants = [prepare(problem, d) for d in range(problem.num_directions)]
    return problem.constants


def evaluate(problem, profile, choices: dict, prec: int) -> Evaluation:
    cell = CELLS[problem.op]
    step = cell.step_ieee if problem.nonfinite else cell.step
    constants = prepared(problem)
    S, D, B = problem.seq_length, problem.num_directions, problem.batch_size
    H = problem.output_size  # Y and Y_h (proj_size under a projection); Y_c is hidden_size wide
    Hc = problem.hidden_size
    clip = None if problem.clip is None else from_float(problem.clip)
    ctx = Context(prec, clip, choices, problem.input_forget, ieee=problem.nonfinite)
    policy = choices["sequence_lens"]
    names = problem.info.outputs
    sizes = {"Y": S * D * B * H, "Y_h": D * B * H, "Y_c": D * B * Hc}
    values = {n: [None] * sizes[n] for n in names}
    reasons = {n: [None] * sizes[n] for n in names}
    used: dict[str, str] = {}
    all_functions = []
    missing_what: list[str] = []
    missing_names: set[str] = set()

    def y_index(t, d, b):
        return ((t * D + d) * B + b) * H

    def width(name):
        return Hc if name == "Y_c" else H

    def state_index(d, b, name="Y_h"):
        return (d * B + b) * width(name)

    def mark(name, start, code):
        reasons[name][start:start + width(name)] = [code] * width(name)

    for d in range(D):
        functions, missing = direction_functions(problem, d, choices)
        all_functions.extend(functions)
        if missing:
            where = ("reverse" if d else "forward") if D == 2 else problem.direction
            missing_what.extend(f"{name} {' and '.join(params)} ({where} direction)"
                                for name, params in missing)
            missing_names.update(name for name, _ in missing)
            for b in range(B):
                for t in range(S):
                    mark("Y", y_index(t, d, b), MISSING_PARAMETER)
                for name in names[1:]:
                    mark(name, state_index(d, b, name), MISSING_PARAMETER)
            continue
        reverse = problem.direction == "reverse" or d == 1
        if ctx.ieee:  # special inputs by the IEEE rules; the finite ones as always
            functions = [ieee.Activation(fn, ctx) for fn in functions]
        for b in range(B):
            length = problem.sequence_lens[b]
            state = cell.initial_state(problem, d, b)
            initial = state
            for t in (range(length - 1, -1, -1) if reverse else range(length)):
                state = step(constants[d], t, b, state, functions, ctx)
                start = y_index(t, d, b)
                values["Y"][start:start + H] = state[0]
            for t in range(length, S):
                start = y_index(t, d, b)
                if policy["beyond_length"] == "zeros":
                    values["Y"][start:start + H] = [ZERO] * H
                else:
                    mark("Y", start, BEYOND_LENGTH)
                    used[BEYOND_LENGTH] = REASONS[BEYOND_LENGTH].format(
                        clause="sequence_lens: " + profile.point("sequence_lens").clause)
            for s, name in enumerate(names[1:]):
                start, w = state_index(d, b, name), width(name)
                if length == 0 and policy["zero_length"] == "unspecified":
                    mark(name, start, ZERO_LENGTH)
                    used[ZERO_LENGTH] = REASONS[ZERO_LENGTH].format(
                        clause="sequence_lens: " + profile.point("sequence_lens").clause)
                elif length == 0 and policy["zero_length"] == "zeros":
                    values[name][start:start + w] = [ZERO] * w
                else:
                    values[name][start:start + w] = (initial if length == 0 else state)[s]

    if missing_what:
        used[MISSING_PARAMETER] = REASONS[MISSING_PARAMETER].format(
            what="; ".join(missing_what), names=" or ".join(sorted(missing_names)))
    if any(f.ties for f in all_functions):
        ctx.touched.add("thresholded_relu_boundary")
    shapes = {"Y": (S, D, B, H), "Y_h": (D, B, H), "Y_c": (D, B, Hc)}
    outputs = {}
    for name in names:
        vals = [None if r is not None else v for v, r in zip(values[name], reasons[name])]
        outputs[name] = Output(shapes[name], vals, reasons[name])
    return Evaluation(outputs, used, ctx.touched)
