"""What makes two findings the same: a signature, from the target without versions or
configuration, the verdict and the *cause*: the features the finding needs.

Features are :mod:`conformance.case.features`' tokens (``reverse``, ``clip``, ``act=Elu``,
``dtype=float16``, ``violates=shape:W`` ...). A finding's cause is the feature set of its case after
hypothesis shrank it and :mod:`conformance.fuzz.reduce` took away every feature whose removal kept
it failing, generalized so that one divergence is one finding:

- an activation's name becomes ``act`` ("a non-default activation"): a runtime that refuses Elu
  refuses Softsign for the same reason, and the file lists the name it was found with;
- an accepted invalid case's cause leaves out the values' features (``large``, ``subnormal``):
  they do not decide whether a check is made;
- the op stays out of the signature unless the cause is empty (a plain-path divergence is one
  op's kernel; a feature the runtime mishandles is usually mishandled by all three ops);
- the runtime key drops the version, the spec version (one kernel shows at every opset) and the
  configuration (OpenVINO's default and pinned precision), and keeps the spec family, since
  OpenVINO's IR and its ONNX frontend are different code.

De-duplication has two levels:

- *origin* ``(runtime key, verdict, op[, violated constraints of an accepted invalid case])``: what
  hypothesis shrinks as one bug (one exception type per origin);
- *signature* ``runtime key|verdict|op or *|cause``: one regression file each.

An example is *known* when a written finding has its runtime key, verdict (and violated
constraints), its op unless the finding's scope is ``*``, and a cause within the example's
generalized features; a campaign then does not report one divergence a thousand times, and the
next campaign does not write it again.
"""

from __future__ import annotations

import hashlib

from conformance.case.constraints import broken_constraints
from conformance.case.features import features
from conformance.results import Record
from conformance.runtimes.configuration import TargetName
from conformance.specs import SPECS


def runtime_key(record: Record) -> str:
    """A target without the runtime's version or configuration, and with the spec's family instead
    of its version: ``openvino-2026.4.1/CPU/precision=pinned@onnx-14`` -> ``openvino/CPU@onnx``."""
    spec = record.spec
    family = SPECS[spec].family if spec in SPECS else spec
    return f"{record.runtime}/{record.device or 'default'}@{family}"


def case_tokens(case) -> frozenset[str]:
    """The case's features (:func:`conformance.case.features.features`)."""
    return features(case)


def origin(record: Record, case) -> tuple:
    """What hypothesis shrinks as one bug: (runtime key, verdict, op[, violated constraints]).

    The violated constraint tells accepted-invalid findings apart (each is a missing check); a crash,
    timeout or error is one bug whether the input was valid or not, so its origin leaves it out."""
    return (runtime_key(record), record.verdict, case.op) + violated_for(record.verdict, case)


def violated_for(verdict: str, case) -> tuple:
    """The violated constraints an origin records: only an accepted invalid case's."""
    return violated(case) if verdict == "accepted-invalid" else ()


def violated(case) -> tuple:
    return () if case.valid else tuple(broken_constraints(case))


def generalize(tokens) -> frozenset[str]:
    """Features with activation names folded into ``act``."""
    return frozenset("act" if t.startswith("act=") else t for t in tokens)


#: features of values, which say nothing about whether a runtime validates its input
VALUE_FEATURES = frozenset({"large", "subnormal"})


def cause(verdict: str, tokens) -> frozenset[str]:
    """The generalized cause of a finding whose (reduced) case has these features."""
    if verdict == "accepted-invalid":
        return generalize(tokens) - VALUE_FEATURES
    return generalize(tokens)


def signature(origin_key: tuple, cause_tokens) -> str:
    key, verdict, op = origin_key[:3]
    scope = "*" if cause_tokens else op
    return f"{key}|{verdict}|{scope}|{','.join(sorted(cause_tokens)) or 'plain'}"


def parse_signature(sig: str) -> tuple[str, str, str, frozenset]:
    """(runtime key, verdict, op or ``*``, cause) of a signature; one written before configurations
    were merged (``.../precision=pinned@...``) reads as the merged key."""
    key, verdict, scope, toks = sig.split("|", 3)
    name = TargetName.parse(key)
    runtime_device, family = f"{name.head}/{name.device}", name.spec
    tokens = frozenset() if toks == "plain" else frozenset(toks.split(","))
    return f"{runtime_device}@{family}", verdict, scope, cause(verdict, tokens)


def signature_hash(sig: str) -> str:
    return hashlib.sha256(sig.encode()).hexdigest()[:8]


def with_id(case):
    """The case under its content id, ``fuzz/<op>-<digest>[<the features it has>]``: a drawn or a
    reduced case named by what it is."""
    import dataclasses
    tokens = sorted(case_tokens(case))
    suffix = f"[{','.join(tokens)}]" if tokens else ""
    return dataclasses.replace(case, id=f"fuzz/{case.op.lower()}-{case.digest[:10]}{suffix}")
