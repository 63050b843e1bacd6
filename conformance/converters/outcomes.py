"""What a converter did with a valid case, in one of four words: the outcome of a converter target's
pair, read from its record (its verdict, and the stage its refusal names: conformance/converters/
converted.py).

- ``pass``: it ran and is right (where the converter declares a narrower precision by design, as
  float16 conversion does, right in that precision: the pair's second judgement, ``declared``);
- ``refused``: the converter said no (stage ``converter``);
- ``invalid``: it wrote a program that ``onnx.checker`` (stage ``checker``) or the runtime (stage
  ``runtime``) rejects;
- ``wrong``: it ran and is off (``fail``, ``state-leak``, ``inconsistent``);

and ``crash`` where the worker died or hung. Whose fault a divergence is, the converter's or the
runtime's, is the cause's business (conformance/converters/causes.py): an ``invalid`` pair whose
runtime rejects the suite's own translation of the case too is the runtime's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

#: the outcomes, in the report's order, with what each means
OUTCOMES: tuple[tuple[str, str], ...] = (
    ("pass", "it ran and is right (in the precision the converter declares, where it declares one)"),
    ("refused", "the converter said no (stage converter)"),
    ("invalid", "it wrote a program the checker or the runtime rejects (stage checker or runtime)"),
    ("wrong", "it ran and is off (fail, state-leak, inconsistent)"),
    ("crash", "the worker crashed or hung (crash, timeout), or the suite failed (error)"),
)
MEANING = dict(OUTCOMES)
WRONG = ("fail", "state-leak", "inconsistent")


def outcome(record: Record) -> str | None:
    """The outcome of a converter target's pair on a valid case; None for any other record, and for a
    case the converter's input spec cannot say (not-expressible: no program to convert)."""
    if not record.converter or (record.expect or "valid") != "valid":
        return None
    verdict = record.verdict
    if verdict in ("pass", "unspecified"):
        return "pass"
    if verdict == "rejected":
        stage = (record.effective or {}).get("stage", "")
        return "refused" if stage == "converter" else "invalid"
    if verdict in WRONG:
        declared = record.declared or {}
        return "pass" if verdict == "fail" and declared.get("verdict") == "pass" else "wrong"
    if verdict in ("crash", "timeout", "error"):
        return "crash"
    return None


def column(record: Record) -> str:
    """A converter target's pairs as one column: the converter, the runtime and its configuration
    (``torch.onnx-dynamo-2.13.0(opset=18) → onnxruntime-1.32.0 shape=dynamic``), spec versions merged."""
    config = str(record.config or "default")
    runtime = f"{record.runtime or '?'}-{record.runtime_version}".rstrip("-")
    return f"{record.converter} → {runtime}" + ("" if config == "default" else f" {config}")
