"""What makes two findings the same: a signature, from the target without versions, the verdict,
the op and the case's *features* (the attributes that matter).

A feature is a token such as ``reverse``, ``clip``, ``act=ThresholdedRelu``, ``dtype=float16``,
``sequence_lens=partial``, ``subnormal`` or, for an invalid case, the constraint it breaks
(``violates=shape:W``). A bidirectional case has both ``reverse`` and ``bidirectional`` (it has a
reverse pass), so a finding that needs a reverse pass covers bidirectional examples too; likewise a
zero length is also ``sequence_lens=partial``. Only non-default choices are tokens; since the
strategies draw every feature so that it shrinks toward its default, a minimized case carries the
tokens its failure needs (and, where hypothesis settles on a local minimum, a finding that needs
fewer found later supersedes it: see ``Campaign._supersede``).

De-duplication then has two levels:

- *origin* ``(runtime key, verdict, op[, violated constraint of an accepted invalid case])``: the
  failure hypothesis shrinks as one bug (one exception type per origin);
- *signature*: origin plus the minimized case's tokens; one regression file per signature.

An example whose failure has the origin of a written finding and carries at least that finding's
tokens is *known* (the finding subsumes it), so a campaign does not report one bug a thousand
times, and a second campaign does not write it again.
"""

from __future__ import annotations

import hashlib

import numpy as np

from conformance.case.vocabulary import DEFAULT_ACTIVATIONS, OUTPUTS
from conformance.fuzz import values as V
from conformance.specs import SPECS


def runtime_key(record: dict) -> str:
    """A target without the runtime's version, and with the spec's family instead of its version:
    ``onnxruntime-1.32.0/CPU@onnx-14`` -> ``onnxruntime/CPU@onnx``. One bug in one kernel shows at
    every opset; the family stays, since OpenVINO's IR and its ONNX frontend are different code."""
    spec = record["spec"]
    family = SPECS[spec].family if spec in SPECS else spec
    config = "" if record.get("config", "default") == "default" else f"/{record['config']}"
    return f"{record['runtime']}/{record.get('device', 'default')}{config}@{family}"


def case_tokens(case) -> frozenset[str]:
    """The case's non-default features, from its content alone (so a case read back from its
    regression file has the same tokens)."""
    a, t = case.attributes, case.tensors
    tokens = set()
    if case.form != "sequence":
        tokens.add(f"form={case.form}")
    direction = a.get("direction", "forward")
    if direction in ("reverse", "bidirectional"):
        tokens.add("reverse")            # a pass that walks time backwards (bidirectional has one too)
    if direction == "bidirectional":
        tokens.add("bidirectional")
    elif direction not in ("forward", "reverse"):
        tokens.add(f"direction={direction}")
    if case.dtype != "float32":
        tokens.add(f"dtype={case.dtype}")
    for name in ("B", "initial_h", "initial_c", "P"):
        if name in t:
            tokens.add(name)
    lens = t.get("sequence_lens")
    if lens is not None and np.ndim(lens) == 1:
        S = case.shape["seq_length"]
        tokens.add("sequence_lens=full" if np.all(lens == S) else "sequence_lens=partial")
        if np.any(lens == 0):
            tokens.add("zero_length")
    names = a.get("activations")
    if names:
        defaults = DEFAULT_ACTIVATIONS.get(case.op, ())
        per = len(defaults) or 1
        for k, name in enumerate(names):
            if k // per < 2 and defaults and name != defaults[k % per]:
                tokens.add(f"act={name}")
        if (a.get("direction") == "bidirectional" and len(names) == 2 * per
                and list(names[:per]) != list(names[per:])):
            tokens.add("per_direction_activations")
    for key in ("activation_alpha", "activation_beta", "clip"):
        if key in a:
            tokens.add(key)
    if a.get("linear_before_reset"):
        tokens.add("linear_before_reset")
    if a.get("input_forget"):
        tokens.add("input_forget")
    if a.get("layout", 0) != 0:
        tokens.add(f"layout={a['layout']}")
    if case.outputs and tuple(case.outputs) != OUTPUTS.get(case.op):
        tokens.add("outputs=" + "+".join(case.outputs))
    tokens |= _value_tokens(case)
    if not case.valid:
        from conformance.fuzz.mutations import broken_constraints
        tokens |= {f"violates={c}" for c in broken_constraints(case)}
    return frozenset(tokens)


def _value_tokens(case) -> set[str]:
    out = set()
    try:
        fi = V.finfo(case.dtype)
    except KeyError:
        return out
    tiny, big = float(fi.smallest_normal), 8.0
    for name, arr in case.tensors.items():
        if name == "sequence_lens":
            continue
        v = np.abs(np.asarray(arr, dtype=np.float64))
        if np.any((v > 0) & (v < tiny)):
            out.add("subnormal")
        if np.any(v > big):
            out.add("large")
    return out


def origin(record: dict, case) -> tuple:
    """What hypothesis shrinks as one bug: (runtime key, verdict, op[, violated constraints]).

    The violated constraint tells accepted-invalid findings apart (each is a missing check); a crash,
    timeout or error is one bug whether the input was valid or not, so its origin leaves it out."""
    return (runtime_key(record), record["verdict"], case.op) + _violated_for(record["verdict"], case)


def _violated_for(verdict: str, case) -> tuple:
    return violated(case) if verdict == "accepted-invalid" else ()


def violated(case) -> tuple:
    if case.valid:
        return ()
    from conformance.fuzz.mutations import broken_constraints
    return tuple(broken_constraints(case))


def origin_of_signature(sig: str, case) -> tuple:
    """The origin a written finding's signature records (the case gives the violated constraints)."""
    key, verdict, op = sig.split("|")[:3]
    return (key, verdict, op) + _violated_for(verdict, case)


def signature(origin_key: tuple, tokens) -> str:
    key, verdict, op = origin_key[:3]
    return f"{key}|{verdict}|{op}|{','.join(sorted(tokens)) or 'plain'}"


def signature_hash(sig: str) -> str:
    return hashlib.sha256(sig.encode()).hexdigest()[:8]


def subsumes(finding_tokens, example_tokens) -> bool:
    """A finding covers an example of its origin that has every feature the finding needed."""
    return set(finding_tokens) <= set(example_tokens)
