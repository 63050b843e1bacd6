"""A baseline: the results of an earlier run (its results.jsonl), against which a failing pair
fails the gate only when it was not failing before (``conformance run --baseline``). A line that
cannot be read is a file:line error; pairs whose targets differ in their effective configuration
are not comparable, and say so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.case.limits import DEFAULT_LIMITS, Limits, shorten, shorten_text
from conformance.case.yamlio import (
    FileProblem,
    decode_utf8,
    open_regular,
)
from conformance.compare import FAILING, VERDICTS
from conformance.gate.schema import ExpectationsError
from conformance.runtimes.configuration import TargetName

if TYPE_CHECKING:
    from conformance.results import Record


def target_key(target_id: str) -> str:
    """A target id without the runtime version: `onnxruntime-1.32.0/CPU@onnx-14` -> `onnxruntime/CPU@onnx-14`,
    so that a run can be compared with a baseline taken on another version."""
    name = TargetName.parse(target_id)
    return str(TargetName(name.runtime, name.device, name.config, name.spec))


def _baseline_line(raw: bytes, number: int, max_bytes: int):
    """(record, None) for a result line, (None, problem) for anything else, (None, None) if blank."""
    if len(raw) > max_bytes:
        return None, f"a line of more than {max_bytes:,} bytes (max_file_bytes)"
    try:
        text = decode_utf8(raw, number).strip()
    except FileProblem as exc:
        return None, exc.message
    if not text:
        return None, None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({shorten_text(exc.msg, 60)} at column {exc.colno})"
    except RecursionError:
        return None, "JSON nested too deeply"
    if not isinstance(record, dict):
        kind = {list: "list", str: "string", int: "number", float: "number", bool: "boolean",
                type(None): "null"}.get(type(record), type(record).__name__)
        return None, f"a JSON {kind}, not an object"
    missing = [k for k in ("case", "target", "verdict") if not isinstance(record.get(k), str)]
    if missing:
        return None, f"an object without {', '.join(missing)} (as strings)"
    if record["verdict"] not in VERDICTS:
        return None, f"verdict {shorten(record['verdict'])} is not one of {', '.join(VERDICTS)}"
    return record, None


def _read_baseline(path, limits: Limits) -> tuple[list[dict], list[tuple[int, str]]]:
    """(result records, [(line, problem) of every other non-blank line]) of a baseline file; unlike
    :func:`conformance.results.read_results`, nothing is skipped silently."""
    records, bad = [], []
    try:
        f = open_regular(path)
    except FileProblem as exc:
        raise ExpectationsError(f"{path}:{exc.line}: cannot read the baseline: {exc.message}") from None
    with f:
        number = 0
        while True:
            raw = f.readline(limits.max_file_bytes + 1)
            if not raw:
                break
            number += 1
            if len(raw) > limits.max_file_bytes and not raw.endswith(b"\n"):
                while (rest := f.readline(1 << 20)) and not rest.endswith(b"\n"):
                    pass  # the rest of an over-long line
            record, problem = _baseline_line(raw, number, limits.max_file_bytes)
            if record is not None:
                records.append(record)
            elif problem is not None:
                bad.append((number, problem))
    return records, bad


@dataclass
class Baseline:
    failing: dict  # (case, target key) -> verdict
    skipped: int = 0         # lines of the file that are not results (Baseline.load warns of them)
    first_skipped: int = 0   # the line of the first of them

    @classmethod
    def load(cls, path, limits: Limits = DEFAULT_LIMITS) -> "Baseline":
        """The failing pairs of a results.jsonl, read strictly: a file with no result line is an
        ExpectationsError naming its first bad line; lines that are not results beside good ones
        are skipped and counted (``skipped``, ``first_skipped``: the CLI warns)."""
        records, bad = _read_baseline(path, limits)
        if not records:
            if bad:
                line, problem = bad[0]
                raise ExpectationsError(f"{path}:{line}: not a baseline: {problem}; a baseline is the results.jsonl "
                                        f"of `conformance run`, one JSON object per line with case, target and verdict")
            raise ExpectationsError(f"{path}: the baseline has no results")
        return cls({(r["case"], target_key(r["target"])): r["verdict"] for r in records},
                   skipped=len(bad), first_skipped=bad[0][0] if bad else 0)

    def not_comparable(self, target_ids) -> list[tuple[str, str]]:
        """(this run's target key, the baseline's) for targets of the same runtime, device and spec
        whose configurations differ, an effective precision above all (``precision=default→bf16``
        against ``default``): their pairs are not compared, and the user should hear why."""
        def split(key):
            name = TargetName.parse(key)
            return (name.head, name.device, name.spec)
        mine = {target_key(t) for t in target_ids}
        theirs = {key for _, key in self.failing}
        out = []
        for key in sorted(mine - theirs):
            out += [(key, other) for other in sorted(theirs - mine) if split(other) == split(key)]
        return out

    def regressed(self, record: Record) -> bool:
        before = self.failing.get((record.case, target_key(record.target)))
        return before is None or before not in FAILING
