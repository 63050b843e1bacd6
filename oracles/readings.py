"""From a problem and a profile to readings: evaluate each combination of choices that can matter,
certify the precision, merge combinations whose outputs are identical, and name what is left.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from . import ieee, precision, silent
from .activations import PARAMETERS, assign_parameters, canonical_name
from .arith import to_double_double
from .certificate import certificate
from .evaluation import evaluate
from .result import Expected, OracleResult, Reading

#: points whose readings can only differ where an evaluation reports it (a ThresholdedRelu input
#: equal to alpha; a cell state beyond the clip bound; an infinity or NaN reaching an operation
#: IEEE leaves open); the others differ whenever they apply.
DYNAMIC = {"thresholded_relu_boundary", "clip_h", *ieee.POINTS}


def _listed(problem) -> tuple[str, ...]:
    """The activation list the alpha/beta lists are read against."""
    k = problem.info.functions
    return problem.activations[:k] if problem.shared_activations else problem.activations


def _consumption_matters(problem, profile) -> bool:
    readings = {
        tuple(assign_parameters(_listed(problem), problem.activation_alpha,
                                problem.activation_beta, consumption))
        for consumption in ("positional", "popped")
    }
    return len(readings) > 1


def _defaults_used(problem, profile) -> bool:
    for choice in profile.point("alpha_beta_consumption").choices:
        assigned = assign_parameters(_listed(problem), problem.activation_alpha,
                                     problem.activation_beta, choice.value)
        for name, (alpha, beta) in zip(_listed(problem), assigned):
            uses_alpha, uses_beta = PARAMETERS[name]
            if (uses_alpha and alpha is None) or (uses_beta and beta is None):
                return True
    return False


def _case_differs(problem, profile) -> bool:
    given = problem.given_activations or ()
    return any(canonical_name(name) != name for name in given)


#: when each point bears on a problem at all (points not listed here are settled rules)
APPLIES = {
    "input_forget": lambda p, prof: p.op == "LSTM" and p.input_forget,
    "peephole_output": lambda p, prof: p.op == "LSTM" and p.peephole_output_nonzero,
    "clip_h": lambda p, prof: p.op == "LSTM" and p.clip is not None,
    "alpha_beta_consumption": _consumption_matters,
    "activation_defaults": _defaults_used,
    "thresholded_relu_boundary": lambda p, prof: "ThresholdedRelu" in p.activations,
    "sequence_lens": lambda p, prof: p.sequence_lens_given and min(p.sequence_lens) < p.seq_length,
    "activation_case": _case_differs,
    # IEEE 754's open points (ieee.py): listed only when an evaluation reaches them
    "nan_relu": lambda p, prof: p.nonfinite and "Relu" in p.activations,
    "nan_thresholded_relu": lambda p, prof: p.nonfinite and "ThresholdedRelu" in p.activations,
    "nan_hard_sigmoid": lambda p, prof: p.nonfinite and "HardSigmoid" in p.activations,
    "nan_clip": lambda p, prof: p.nonfinite and p.clip is not None,
    "tanh_at_infinity": lambda p, prof: p.nonfinite and bool({"Tanh", "ScaledTanh"}
                                                             & set(p.activations)),
    "sigmoid_at_infinity": lambda p, prof: p.nonfinite and "Sigmoid" in p.activations,
    "softsign_at_infinity": lambda p, prof: p.nonfinite and "Softsign" in p.activations,
    "gru_update": lambda p, prof: p.nonfinite and p.op == "GRU",
}


def _expected(problem, output, reasons: dict, bound: np.ndarray, walk=None,
              mismatch=None) -> Expected:
    hi = np.full(len(output.values), np.nan)
    lo = np.full(len(output.values), np.nan)
    for i, value in enumerate(output.values):
        if value is not None:
            hi[i], lo[i] = to_double_double(value)
    unspecified = np.array([r is not None for r in output.reasons], dtype=bool)
    hi, lo, unspecified = (a.reshape(output.shape) for a in (hi, lo, unspecified))
    if walk is not None:  # a problem with a non-finite input: IEEE classes
        bound, masks = _classes(output, hi, unspecified, bound, walk, mismatch)
        if masks:
            texts = {ieee.VANISHING: ieee.VANISHING_REASON, ieee.DISAGREES: ieee.DISAGREES_REASON}
            reasons = dict(reasons, **{code: texts[code] for code in masks})
            codes = np.array(output.reasons, dtype=object).reshape(output.shape)
            for code, mask in masks.items():
                codes[mask] = code
                unspecified = unspecified | mask
            hi, lo = np.where(unspecified, np.nan, hi), np.where(unspecified, np.nan, lo)
            output = type(output)(output.shape, output.values, codes.ravel().tolist())
    # NaN where unspecified; a trajectory that overflowed float64 gives no finite bound: inf
    bound = np.where(unspecified, np.nan, np.where(np.isnan(bound), np.inf, bound))
    per_element = np.array(output.reasons, dtype=object).reshape(output.shape)
    if problem.layout == 1:
        axes = (2, 0, 1, 3) if len(output.shape) == 4 else (1, 0, 2)
        hi, lo, unspecified, bound, per_element = (np.ascontiguousarray(a.transpose(axes))
                                                   for a in (hi, lo, unspecified, bound, per_element))
    present = {r for r in output.reasons if r is not None}
    return Expected(hi, lo, unspecified, {code: reasons[code] for code in sorted(present)}, bound,
                    codes=per_element)


def _classes(output, hi, unspecified, bound, walk, mismatch):
    """The IEEE class of each specified element, and what the precision model says of it.

    ``walk`` = (values, taint): the model's float64 trajectory for this output and where a factor
    it may hold as 0 met an infinity (precision/nonfinite.py). An element becomes unspecified with reason
    ieee.VANISHING where it is tainted so, or where the two precisions disagree on its class
    (``mismatch``: the oracle's own rounding of a factor to 0 or 1 decided it); with reason
    ieee.DISAGREES where the model's trajectory has another class than the exact value (it cannot
    vouch for it then). A specified non-finite element gets bound 0: the comparison requires its
    class, not a distance. Returns (bound, {reason code: mask}) for the masks that are not empty."""
    values, taint = walk
    exact = np.array([v is not None and ieee.special(v) for v in output.values],
                     dtype=bool).reshape(hi.shape)
    walked = ~np.isfinite(values)
    same = ((np.isnan(values) == np.isnan(hi)) & (np.isposinf(values) == np.isposinf(hi))
            & (np.isneginf(values) == np.isneginf(hi)))
    vanishing = ~unspecified & taint
    if mismatch is not None:
        vanishing |= ~unspecified & mismatch.reshape(hi.shape)
    disagrees = ~unspecified & ~vanishing & ((exact & ~same) | (~exact & np.isnan(values)))
    bound = np.where(exact, 0.0, bound)
    bound = np.where(~exact & walked, np.inf, bound)  # the float64 walk overflowed: no bound
    masks = {ieee.VANISHING: vanishing, ieee.DISAGREES: disagrees}
    return bound, {code: mask for code, mask in masks.items() if mask.any()}


def _mismatch(low, high, name) -> np.ndarray | None:
    """Where the ``prec`` and ``check_prec`` evaluations give an element different IEEE classes."""
    pairs = zip(low.outputs[name].values, high.outputs[name].values)
    flags = [a is not None and b is not None and (ieee.special(a) or ieee.special(b)) and a != b
             for a, b in pairs]
    return np.array(flags, dtype=bool) if any(flags) else None


def _describe(profile, applicable, distinguishing, representative, also) -> str:
    parts = []
    for pid, point in profile.points.items():
        if not point.ambiguous or pid not in applicable:
            continue
        if pid in distinguishing:
            choice = representative[pid]
            parts.append(f"{pid} = {choice.tag}: {choice.description} [{point.clause}]")
        elif len(point.choices) > 1:
            parts.append(f"{pid}: the readings {', '.join(point.choice_tags)} give the same "
                         f"outputs here [{point.clause}]")
        else:
            parts.append(f"{pid}: {point.choices[0].description} [{point.clause}]")
    if also:
        parts.append(f"The readings {', '.join(also)} give these same outputs.")
    if not parts:
        return f"{profile.spec}, as documented; no ambiguity applies to this case."
    return f"{profile.spec}. " + " ".join(parts)


def _distinguishing(multi, group_of: dict) -> list:
    """The points that change the outputs: two combinations differing only there disagree."""
    def only_in(i, a, b):
        return a[i] != b[i] and a[:i] + a[i + 1:] == b[:i] + b[i + 1:]

    return [pid for i, pid in enumerate(multi)
            if any(group_of[a] != group_of[b] and only_in(i, a, b)
                   for a in group_of for b in group_of)]


def expected_outputs(problem, choices: dict, low, high, profile=None, check_prec=None) -> tuple[dict, dict]:
    """The Expected outputs of one combination of choices (point id -> value) from its
    evaluations at prec (``low``) and check_prec (``high``), and the precision model's record;
    with ``profile``, each Expected carries the plausible readings of its unspecified elements
    (silent.py)."""
    if not problem.nonfinite:
        bounds, record = precision.bound(problem, choices)
        outputs = {out: _expected(problem, high.outputs[out], high.reasons, bounds[out])
                   for out in problem.info.outputs}
    else:
        bounds, record, walk = precision.walk(problem, choices)
        assert walk is not None  # a non-finite problem always has classes
        outputs = {out: _expected(problem, high.outputs[out], high.reasons, bounds[out],
                                  (walk["value"][out], walk["taint"][out]), _mismatch(low, high, out))
                   for out in problem.info.outputs}
    if profile is not None:
        silent.attach(problem, profile, choices, outputs, check_prec)
    return outputs, record


def solve(problem, profile, prec: int, check_prec: int) -> OracleResult:
    points = profile.points
    multi = [pid for pid, point in points.items() if len(point.choices) > 1]
    applicable = {pid for pid, applies in APPLIES.items() if applies(problem, profile)}
    varied = {pid for pid in multi if pid in applicable and pid not in DYNAMIC}
    evaluated: dict[tuple, tuple] = {}
    while True:
        axes = [points[pid].choices if pid in varied else points[pid].choices[:1] for pid in multi]
        for combo in product(*axes):
            key = tuple(choice.tag for choice in combo)
            if key in evaluated:
                continue
            chosen = {pid: point.choices[0] for pid, point in points.items()}
            chosen.update(zip(multi, combo))
            values = {pid: choice.value for pid, choice in chosen.items()}
            evaluated[key] = (chosen, evaluate(problem, profile, values, prec),
                              evaluate(problem, profile, values, check_prec))
        touched = set().union(*(low.touched | high.touched for _, low, high in evaluated.values()))
        new = (touched & applicable & set(multi)) - varied
        if not new:
            break
        varied |= new

    def outputs_of(chosen, low, high):
        return expected_outputs(problem, {pid: c.value for pid, c in chosen.items()}, low, high, profile,
                                check_prec)

    groups: dict[tuple, list] = {}
    group_of = {}
    expected = {}
    for key, (chosen, low, high) in evaluated.items():
        signature = tuple((name, tuple(out.values), tuple(out.reasons))
                          for name, out in high.outputs.items())
        if problem.nonfinite:
            # the same exact values may be certain under one combination and depend on rounding
            # under another (ieee.VANISHING): the model's verdict is part of what is merged
            expected[key] = outputs_of(chosen, low, high)
            signature += tuple(e.unspecified.tobytes() for e in expected[key][0].values())
        groups.setdefault(signature, []).append((key, chosen, low, high))
        group_of[key] = signature
    distinguishing = _distinguishing(multi, group_of)
    # IEEE's open points are listed only where an evaluation reached them
    listed = {pid for pid in applicable if pid not in ieee.POINTS or pid in touched}

    def name_of(chosen):
        return "+".join(chosen[pid].tag for pid in distinguishing) or "default"

    readings = []
    model = {}
    for members in groups.values():
        key, representative, low, high = members[0]
        name = name_of(representative)
        also = list(dict.fromkeys(name_of(chosen) for _, chosen, _, _ in members[1:]))
        outputs, model = expected.get(key) or outputs_of(representative, low, high)
        readings.append(Reading(
            name=name,
            description=_describe(profile, listed, distinguishing, representative,
                                  [other for other in also if other != name]),
            outputs=outputs,
            choices={pid: representative[pid].tag for pid in distinguishing},
        ))
    model.update(precision.shape_facts(problem))
    return OracleResult(
        op=problem.op,
        profile=profile.name,
        readings=readings,
        certificate=certificate([(low, high) for _, low, high in evaluated.values()],
                                prec, check_prec),
        ambiguities=[pid for pid, point in points.items()
                     if point.ambiguous and pid in listed],
        notes=list(problem.notes),
        precision=model,
    )
