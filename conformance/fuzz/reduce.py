"""Feature-level reduction of a shrunk finding: take its features away one at a time, keeping each
removal after which the finding persists, so the case written carries only the features whose
removal makes the failure go away (its *cause*).

Hypothesis shrinks draws, not meanings: a shrunk case can keep a clip, a bias or an unused
activation name that its failure does not need, because no shorter draw sequence drops it while
still failing. The removals here are the ablation's (:data:`conformance.run.ablation.FEATURES`)
plus a few that reach the defaults the strategies cannot shrink to in one step (a bidirectional
case to its reverse pass, full sequence lengths and zero peepholes to absent inputs). Each removal
is checked by running the reduced case on the finding's targets only.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from conformance.run.ablation import FEATURES, Feature, _replace, _without_tensors


def _reverse_only(case):
    """A bidirectional case as its reverse pass alone (the second half of every per-direction value)."""
    attrs = dict(case.attributes, direction="reverse")
    tensors = dict(case.tensors)
    for name in ("W", "R", "B", "initial_h", "initial_c", "P"):
        if name in tensors:
            tensors[name] = np.ascontiguousarray(tensors[name][1:])
    for key in ("activations", "activation_alpha", "activation_beta"):
        if key in attrs and len(attrs[key]) % 2 == 0:
            attrs[key] = list(attrs[key])[len(attrs[key]) // 2:]
    return _replace(case, "reverse", attrs, tensors)


def _full_lengths(case):
    lens = case.tensors.get("sequence_lens")
    return lens is not None and lens.size > 0 and bool(np.all(lens == case.shape["seq_length"]))


_BY_NAME = {f.name: f for f in FEATURES}

#: the order removals are tried in: whole-case simplifications first, then attributes, then inputs
REDUCTIONS = (
    _BY_NAME["outputs"], _BY_NAME["dtype"], _BY_NAME["layout"],
    Feature("bidirectional", lambda c: c.direction == "bidirectional", _reverse_only, lambda c: "bidirectional"),
    _BY_NAME["direction"], _BY_NAME["activations"], _BY_NAME["activation_params"], _BY_NAME["activation_spelling"],
    _BY_NAME["clip"], _BY_NAME["input_forget"], _BY_NAME["linear_before_reset"], _BY_NAME["peepholes"],
    Feature("zero_peepholes", lambda c: "P" in c.tensors and not np.any(c.tensors["P"] != 0),
            lambda c: _without_tensors(c, "no-P", "P"), lambda c: "P is given (zeros)"),
    _BY_NAME["sequence_lens"],
    Feature("full_lengths", _full_lengths, lambda c: _without_tensors(c, "no-lengths", "sequence_lens"),
            lambda c: "sequence_lens is given (full)"),
    _BY_NAME["initial_h"], _BY_NAME["initial_c"],
    Feature("zero_bias", lambda c: "B" in c.tensors and not np.any(c.tensors["B"] != 0),
            lambda c: _without_tensors(c, "no-B", "B"), lambda c: "B is given (zeros)"),
    _BY_NAME["B"],
)


@dataclasses.dataclass
class Reduction:
    case: object               # the reduced case (the input case when nothing could be removed)
    removed: list              # names of the removals kept
    tried: int                 # cases run


def reduce_case(case, still_fails, rename, budget: int = 32, out_of_time=lambda: False) -> Reduction:
    """Remove features greedily while ``still_fails(candidate)`` holds; ``rename`` gives a reduced
    case its id. At most ``budget`` candidates are run, and none once ``out_of_time()``: what is
    left unreduced stays."""
    current, removed, tried = case, [], 0
    progress = True
    while progress and tried < budget:
        progress = False
        for reduction in REDUCTIONS:
            if tried >= budget or out_of_time():
                progress = False
                break
            try:
                if not reduction.present(current):
                    continue
                candidate = rename(reduction.remove(current))
            except Exception:  # noqa: BLE001 - a removal that does not apply to this case is not tried
                continue
            if candidate.digest == current.digest:
                continue
            tried += 1
            if still_fails(candidate):
                current, progress = candidate, True
                removed.append(reduction.name)
    return Reduction(current, removed, tried)
