"""Where a spec is silent: the readings a reasonable implementation could choose there.

The oracle marks the elements a spec leaves undefined *unspecified* (``Expected.unspecified``,
with a reason code per element in ``Expected.codes``) and never judges them against the spec.
That is honest about the spec, but it must not mean that anything goes: heap contents, NaN or an
infinity where no implementation would compute one. So for every reason code, ``SILENT`` lists the
*plausible* readings, each with its source, and :func:`attach` computes each one's values, in the
problem's layout, beside the unspecified mask (``Expected.plausible``). The comparison then
classifies what a runtime put there: one of these readings, a finite value none of them gives
(implausible), or NaN, an infinity or a value that changes between two runs (garbage).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from . import ieee, precision
from .arith import to_double_double
from .evaluation import BEYOND_LENGTH, MISSING_PARAMETER, ZERO_LENGTH, evaluate
from .result import Plausible


@dataclass(frozen=True)
class SilentChoice:
    """One plausible reading of a silent point: its short name and where it comes from."""

    name: str
    source: str
    kind: str = "value"   # "value": a value (within a bound); "nan" / "inf": an IEEE class


#: per reason code of the unspecified elements, the plausible readings, preferred first
SILENT: dict[str, tuple[SilentChoice, ...]] = {
    BEYOND_LENGTH: (
        SilentChoice("zeros", "Y is 0 past a sequence's length: onnxruntime's CPU kernels and OpenVINO's "
                     "sequence ops fill it so; torch's pad_packed_sequence pads with padding_value=0.0 "
                     "(https://pytorch.org/docs/stable/generated/torch.nn.utils.rnn.pad_packed_sequence.html)"),
        SilentChoice("held-state", "Y past the length repeats the last valid state (Keras' masking carries "
                     "the previous output over masked steps: https://keras.io/api/layers/recurrent_layers/"
                     "rnn/, 'mask'); the initial state where the length is 0"),
        SilentChoice("continued", "the recurrence runs on over X's padding steps as though the length were "
                     "seq_length (an implementation that masks nothing: onnx.reference 1.23 does)"),
    ),
    ZERO_LENGTH: (
        SilentChoice("zeros", "Y_h/Y_c of an empty sequence are 0: onnxruntime (since "
                     "microsoft/onnxruntime#28052, which stopped it reading memory before Y)"),
        SilentChoice("initial-state", "no step ran, so the last state is the initial one (initial_h, "
                     "initial_c; 0 where absent): the reading asked for in onnx/onnx#1674 and proposed in "
                     "onnx/onnx#2089"),
        SilentChoice("continued", "the state after every step of X, as though the length were seq_length "
                     "(an implementation that ignores sequence_lens)"),
    ),
    MISSING_PARAMETER: (
        SilentChoice("params-zero", "a missing activation_alpha/beta reads as 0 (onnxruntime's kernels: "
                     "Affine and ScaledTanh then give 0)"),
        SilentChoice("identity", "a missing parameter takes the value that makes the function plain: "
                     "Affine alpha 1, beta 0 (the identity); ScaledTanh alpha 1, beta 1 (tanh)"),
        SilentChoice("directml-typical", "the 'typical default' DirectML's DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC "
                     "and DML_ACTIVATION_LINEAR_OPERATOR_DESC pages give: ScaledTanh alpha 1.0, beta 0.5; Affine "
                     "alpha 1, beta 0"),
    ),
    ieee.VANISHING: (
        SilentChoice("nan", "the vanishing factor is held as 0: 0 x Inf = NaN (IEEE 754-2019 7.2)", "nan"),
        SilentChoice("inf", "the vanishing factor is held as a tiny nonzero: the product is an infinity "
                     "(IEEE 754-2019 6.1)", "inf"),
    ),
    ieee.DISAGREES: (),
}

#: the parameters each reading of MISSING_PARAMETER gives the functions that have no default
MISSING_VALUES = {
    "params-zero": {"Affine": {"alpha": 0.0, "beta": 0.0}, "ScaledTanh": {"alpha": 0.0, "beta": 0.0}},
    "identity": {"Affine": {"alpha": 1.0, "beta": 0.0}, "ScaledTanh": {"alpha": 1.0, "beta": 1.0}},
    "directml-typical": {"Affine": {"alpha": 1.0, "beta": 0.0}, "ScaledTanh": {"alpha": 1.0, "beta": 0.5}},
}


def _axes(problem, ndim: int):
    """Layout 0 -> the problem's layout (and its inverse), for Y [S,D,B,H] and the states [D,B,H]."""
    if problem.layout != 1:
        return None, None
    forward = (2, 0, 1, 3) if ndim == 4 else (1, 0, 2)
    return forward, tuple(np.argsort(forward))


def _to_layout0(problem, array):
    _, back = _axes(problem, array.ndim)
    return array if back is None else np.ascontiguousarray(array.transpose(back))


def _from_layout0(problem, array):
    forward, _ = _axes(problem, array.ndim)
    return array if forward is None else np.ascontiguousarray(array.transpose(forward))


def attach(problem, profile, choice_values: dict, expected: dict, check_prec: int,
           continued=None) -> None:
    """Compute ``Expected.plausible`` of every output in ``expected`` (name -> Expected, in the
    problem's layout, with ``codes``) under the reading ``choice_values`` (point id -> value).
    ``continued``: the (values, bounds) of the problem with every length = seq_length, where the
    caller has them (the float64 fast path, fast.py); computed by mpmath otherwise."""
    codes0 = {name: _to_layout0(problem, e.codes) for name, e in expected.items() if e.codes is not None}
    if not any(np.any(c != None) for c in codes0.values()):  # noqa: E711 - object arrays
        for e in expected.values():
            e.plausible = []
        return
    F = problem.floats
    lens = np.asarray(problem.sequence_lens)
    hi0 = {name: _to_layout0(problem, e.hi) for name, e in expected.items()}
    bound0 = {name: _to_layout0(problem, e.bound) for name, e in expected.items()}
    missing = {}
    if any(np.any(c == MISSING_PARAMETER) for c in codes0.values()):
        missing = _missing_readings(problem, profile, choice_values, check_prec)
    if continued is None and any(np.any((c == BEYOND_LENGTH) | (c == ZERO_LENGTH)) for c in codes0.values()):
        continued = _continued(problem, profile, choice_values, check_prec)
    states = {"Y_h": F["initial_h"], "Y_c": F["initial_c"]}
    for name, e in expected.items():
        found = []
        codes = codes0.get(name)
        if codes is None:
            e.plausible = []
            continue
        for point, choices in SILENT.items():
            mask0 = codes == point
            if not mask0.any():
                continue
            for choice in choices:
                hi = np.full(codes.shape, np.nan)
                bound = np.full(codes.shape, np.nan)
                covered = mask0.copy()
                if choice.kind == "nan":
                    pass
                elif choice.kind == "inf":
                    hi[mask0] = np.inf
                elif choice.name == "continued":
                    values, bounds = continued
                    hi[mask0], bound[mask0] = values[name][mask0], bounds[name][mask0]
                    covered &= ~np.isnan(hi)
                elif point == BEYOND_LENGTH and choice.name == "zeros":
                    hi[mask0], bound[mask0] = 0.0, 0.0
                elif point == BEYOND_LENGTH:  # held-state: Y_h of the entry, or the initial state
                    held, held_bound = _held(problem, lens, hi0.get("Y_h"), bound0.get("Y_h"), F)
                    for t, d, b, h in zip(*np.nonzero(mask0)):
                        hi[t, d, b, h], bound[t, d, b, h] = held[d, b, h], held_bound[d, b, h]
                    covered &= ~np.isnan(hi)
                elif point == ZERO_LENGTH and choice.name == "zeros":
                    hi[mask0], bound[mask0] = 0.0, 0.0
                elif point == ZERO_LENGTH:  # initial-state
                    initial = states.get(name)
                    values = np.zeros(codes.shape) if initial is None else np.asarray(initial, dtype=np.float64)
                    hi[mask0], bound[mask0] = values[mask0], 0.0
                elif point == MISSING_PARAMETER and choice.name in missing:
                    values, bounds = missing[choice.name]
                    hi[mask0], bound[mask0] = values[name][mask0], bounds[name][mask0]
                    covered &= ~np.isnan(hi)
                else:
                    continue
                found.append(Plausible(point, choice.name, choice.source, choice.kind,
                                       _from_layout0(problem, covered), _from_layout0(problem, hi),
                                       _from_layout0(problem, np.where(covered, bound, np.nan))))
        e.plausible = found


def _held(problem, lens, y_h, y_h_bound, F):
    """The state Y repeats past each entry's length: Y_h where the entry ran, else initial_h."""
    D, B, H = problem.num_directions, problem.batch_size, problem.hidden_size
    held = np.full((D, B, H), np.nan)
    bound = np.zeros((D, B, H))
    initial = np.asarray(F["initial_h"], dtype=np.float64)
    for b in range(B):
        if lens[b] == 0:
            held[:, b] = initial[:, b]
        elif y_h is not None:
            held[:, b] = y_h[:, b]
            bound[:, b] = np.nan_to_num(y_h_bound[:, b], nan=np.inf)
    return held, bound


def _arrays(evaluation) -> dict:
    out = {}
    for output, result in evaluation.outputs.items():
        hi = np.array([np.nan if v is None else to_double_double(v)[0] for v in result.values])
        out[output] = hi.reshape(result.shape)
    return out


def _continued(problem, profile, choice_values: dict, check_prec: int):
    """(values, bounds) per output, layout 0: the problem as though every length were seq_length."""
    full = dataclasses.replace(problem, sequence_lens=[problem.seq_length] * problem.batch_size)
    bounds, _ = precision.bound(full, choice_values)
    return (_arrays(evaluate(full, profile, choice_values, check_prec)),
            {k: np.where(np.isnan(v), np.inf, v) for k, v in bounds.items()})


def _missing_readings(problem, profile, choice_values: dict, check_prec: int) -> dict:
    """{reading name: (values, bounds)} per output, layout 0, for the readings of MISSING_PARAMETER:
    the problem evaluated with the missing parameters filled as each reading says."""
    out = {}
    base = choice_values["activation_defaults"]
    for name, filled in MISSING_VALUES.items():
        defaults = dict(base["defaults"])
        for function, params in filled.items():
            defaults[function] = {**params, **defaults.get(function, {})}
        values = dict(choice_values, activation_defaults=dict(base, defaults=defaults))
        evaluation = evaluate(problem, profile, values, check_prec)
        bounds, _ = precision.bound(problem, values)
        out[name] = (_arrays(evaluation), {k: np.where(np.isnan(v), np.inf, v) for k, v in bounds.items()})
    return out
