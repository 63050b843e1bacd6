"""Stacked layers (torch.nn's ``num_layers``, framework.py): each layer evaluated as one problem,
its input the exact output of the layer below.

"In a multilayer LSTM, the input x_t^(l) of the l-th layer (l >= 2) is the hidden state h_t^(l-1)
of the previous layer" (dropout being the identity in eval mode); for a bidirectional stack that is
both directions' states side by side, forward first. So layer l >= 1 is an ordinary problem whose X
[S, B, D*H'] is layer l-1's Y [S, D, B, H'] (H' = proj_size or hidden_size) with the direction axis
moved beside the features, and whose weights and initial states are the case's layer-l ones
(``W_l<l>``, ``R_l<l>``, ``B_l<l>``, ``W_hr_l<l>``; initial_h/initial_c rows l*D ... l*D+D-1).

Exactness: the oracle evaluates the whole stack at ``prec`` and again at ``check_prec``, each
layer reading the layer below *at the same precision*, so the certificate compares two independent
evaluations of the stack, as it does for one layer.

The bound: a correct implementation computes layer l from its own computed output of layer l-1, so
layer l's X carries the layer below's bound, which precision.py carries through |W| into X·Wᵀ
(``floats["X_error"]``), with no product of it exact; the trajectory walked is the layer below's
exact output rounded to float64 (``hi``). Y is the last layer's; Y_h and Y_c stack every layer's final
states, layer-major ([num_layers * D, B, ...], torch's h_n and c_n).

The stack is evaluated under the profile's one reading: only a profile whose framework axes are
torch.nn's (framework.py: every point settled) takes it, and non-finite inputs are refused (their
IEEE classes through a stack are not modelled).
"""

from __future__ import annotations

import copy

import numpy as np

from . import ieee, precision
from .arith import to_double_double
from .certificate import certificate
from .errors import OracleError
from .evaluation import Output, evaluate
from .ops import DIRECTIONS
from .problem import build_problem
from .readings import _expected
from .result import OracleResult, Reading

#: the inputs each layer has its own of (layer l >= 1 names them ``<name>_l<l>``)
LAYER_INPUTS = ("W", "R", "B", "W_hr")
#: the most layers evaluated
MAX_LAYERS = 8


def layers_of(attributes: dict) -> int:
    value = (attributes or {}).get("num_layers", 1)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_LAYERS:
        raise OracleError(f"num_layers={value!r} should be an integer from 1 to {MAX_LAYERS}.")
    return int(value)


def layer_name(name: str, layer: int) -> str:
    return name if layer == 0 else f"{name}_l{layer}"


def _split(op: str, attributes: dict, tensors: dict, layers: int) -> tuple[dict, list[dict]]:
    """(the attributes of one layer, each layer's tensors without X), checking every input name."""
    direction = str(attributes.get("direction", "forward"))
    D = DIRECTIONS.get(direction, 1)
    one = {k: v for k, v in attributes.items() if k != "num_layers"}
    known = {"X", "sequence_lens", "initial_h", "initial_c", "P"}
    known |= {layer_name(n, layer) for n in LAYER_INPUTS for layer in range(layers)}
    unknown = sorted(set(tensors) - known)
    if unknown:
        raise OracleError(f"input {unknown[0]!r} is not an input of a {layers}-layer {op} stack; each layer "
                          f"l >= 1 has W_l<l>, R_l<l>, B_l<l> (and W_hr_l<l> with proj_size).")
    if "P" in tensors:
        raise OracleError("P (peepholes) in a stack: torch.nn.LSTM has no peepholes.")
    per_layer = []
    for layer in range(layers):
        found = {n: tensors[layer_name(n, layer)] for n in LAYER_INPUTS if layer_name(n, layer) in tensors}
        if "sequence_lens" in tensors:
            found["sequence_lens"] = tensors["sequence_lens"]
        for state in ("initial_h", "initial_c"):
            if state in tensors:
                value = np.asarray(tensors[state])
                if value.ndim != 3 or value.shape[0] != layers * D:
                    raise OracleError(f"{state}.shape={tuple(value.shape)!r}, but a {layers}-layer {direction} "
                                      f"stack's {state} is [num_layers * num_directions = {layers * D}, "
                                      f"batch_size, ...], layer-major (torch's h0/c0).")
                found[state] = value[layer * D:(layer + 1) * D]
        per_layer.append(found)
    return one, per_layer


def _next_input(output: Output, dtype) -> tuple[list, np.ndarray]:
    """Layer l's Y as layer l+1's X: exact raw values [t][b][d*H' + j], and their float64 stand-in."""
    S, D, B, H = output.shape
    values = output.values
    raw = [[[values[((t * D + d) * B + b) * H + j] for d in range(D) for j in range(H)] for b in range(B)]
           for t in range(S)]
    floats = np.array([[[0.0 if v is None else to_double_double(v)[0] for v in row] for row in x_t] for x_t in raw])
    return raw, floats


def evaluate_stack(op: str, attributes: dict, tensors: dict, semantics, prec: int, check_prec: int) -> OracleResult:
    """The stack's OracleResult under ``semantics`` (a profile whose framework axes are torch.nn's)."""
    if semantics.value("framework_axes") != "torch.nn":
        raise OracleError(f"num_layers={attributes.get('num_layers')!r}: the {semantics.name} profile has one "
                          f"layer per node; stacked layers are torch.nn's. Consider profile='torch'.")
    layers = layers_of(attributes)
    one, per_layer = _split(op, attributes, tensors, layers)
    if "layout" in one and one["layout"] != 0:
        raise OracleError("layout=1 with num_layers > 1: give the stack's tensors in layout 0.")
    values = {pid: point.choices[0].value for pid, point in semantics.points.items()}
    multi = [pid for pid, point in semantics.points.items() if len(point.choices) > 1 and pid not in ieee.POINTS]
    if multi:
        raise OracleError(f"the {semantics.name} profile has several readings of {multi}; a stack is evaluated "
                          "under one reading")
    X = np.asarray(tensors["X"])
    dtype = X.dtype
    low_x: list = []           # layer l's exact input at prec / check_prec (layer 0: the case's X)
    high_x: list = []
    x_floats = X.astype(np.float64)   # its float64 stand-in, and the bound it carries
    x_error = np.zeros(X.shape)
    pairs: list = []
    evaluations: list = []
    problems: list = []
    bounds: list = []
    model: dict = {}
    for layer, found in enumerate(per_layer):
        stand_in = X if layer == 0 else x_floats.astype(dtype)
        problem = build_problem(op, one, dict(found, X=stand_in), semantics)
        if problem.nonfinite:
            raise OracleError("a non-finite input in a stack: the IEEE 754 classes through stacked layers are "
                              "not modelled; consider finite inputs.")
        low, high = problem, problem
        if layer:
            problem.floats = dict(problem.floats, X=x_floats, X_error=x_error)
            low, high = copy.copy(problem), copy.copy(problem)
            low.X, low.constants = low_x, None
            high.X, high.constants = high_x, None
        ev_low = evaluate(low, semantics, values, prec)
        ev_high = evaluate(high, semantics, values, check_prec)
        layer_bounds, model = precision.bound(problem, values)
        pairs.append((ev_low, ev_high))
        evaluations.append(ev_high)
        problems.append(problem)
        bounds.append(layer_bounds)
        low_x, _ = _next_input(ev_low.outputs["Y"], dtype)
        high_x, x_floats = _next_input(ev_high.outputs["Y"], dtype)
        y_bound = np.nan_to_num(layer_bounds["Y"], nan=0.0)  # [S, D, B, H']: unspecified past a length
        x_error = np.ascontiguousarray(y_bound.transpose(0, 2, 1, 3).reshape(y_bound.shape[0], y_bound.shape[2], -1))
    last = problems[-1]
    reasons: dict[str, str] = {}
    for ev in evaluations:
        reasons.update(ev.reasons)
    outputs = {"Y": _expected(last, evaluations[-1].outputs["Y"], reasons, bounds[-1]["Y"])}
    for name in last.info.outputs[1:]:
        parts = [ev.outputs[name] for ev in evaluations]
        shape = (layers * parts[0].shape[0],) + tuple(parts[0].shape[1:])
        stacked = Output(shape, [v for p in parts for v in p.values], [r for p in parts for r in p.reasons])
        outputs[name] = _expected(last, stacked, reasons, np.concatenate([b[name] for b in bounds]))
    model = dict(model, **precision.shape_facts(problems[0]), layers=layers,
                 stack="each layer's input carries the bound of the layer below's output")
    description = (f"{semantics.spec}. A stack of {layers} layers, each reading the exact output of the layer "
                   f"below [{semantics.point('framework_axes').clause}]")
    notes = [n for p in problems for n in p.notes]
    return OracleResult(op=op, profile=semantics.name,
                        readings=[Reading(name="default", description=description, outputs=outputs, choices={})],
                        certificate=certificate(pairs, prec, check_prec), ambiguities=[],
                        notes=list(dict.fromkeys(notes)), precision=model)


def stack_bounds(op: str, attributes: dict, tensors: dict, semantics, values: dict, compute: str,
                 accumulation: str | None, rounding: str, kernel: bool, act_ulps: dict | None = None
                 ) -> tuple[dict, dict]:
    """The precision model's bound for a stack computed by a kernel in ``compute`` (api.computed_in for
    num_layers > 1): each layer walked as one problem, its input the float64 trajectory of the layer
    below (a bound needs a few correct digits, not the oracle's exact values) carrying that layer's
    bound, as evaluate_stack's bound does. Per output (layout 0) and the model's parameters; the
    statistical model does not take stacks (precision.sigma), so the rigorous bound alone."""
    layers = layers_of(attributes)
    one, per_layer = _split(op, attributes, tensors, layers)
    if "layout" in one and one["layout"] != 0:
        raise OracleError("layout=1 with num_layers > 1: give the stack's tensors in layout 0.")
    X = np.asarray(tensors["X"])
    x_floats, x_error = X.astype(np.float64), np.zeros(X.shape)
    bounds: list = []
    model: dict = {}
    problems: list = []
    for layer, found in enumerate(per_layer):
        problem = build_problem(op, one, dict(found, X=X if layer == 0 else x_floats.astype(X.dtype)), semantics)
        if layer:
            problem.floats = dict(problem.floats, X=x_floats, X_error=x_error)
        layer_bounds, model = precision.bound(problem, values, dtype=compute, accumulation=accumulation,
                                              rounding=rounding, kernel=kernel, act_ulps=act_ulps)
        trajectory, _ = precision.trajectory(problem, values)
        bounds.append(layer_bounds)
        problems.append(problem)
        x_floats = _features_last(np.nan_to_num(trajectory["Y"], nan=0.0))
        x_error = _features_last(np.nan_to_num(layer_bounds["Y"], nan=0.0))
    out = {"Y": bounds[-1]["Y"]}
    for name in problems[-1].info.outputs[1:]:
        out[name] = np.concatenate([b[name] for b in bounds])
    model = dict(model, **precision.shape_facts(problems[0]), layers=layers,
                 stack="each layer's input carries the bound of the layer below's output")
    return out, model


def _features_last(y: np.ndarray) -> np.ndarray:
    """A layer's Y [S, D, B, H'] as the next layer's X [S, B, D*H'] (both directions side by side)."""
    return np.ascontiguousarray(y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1))
