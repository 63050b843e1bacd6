"""A finding: a drawn case on which some target gives a failing verdict, with the cause its
features name, and the text written with it (the failing specs' clauses, the headline)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conformance.case.features import clause_names
from conformance.case.model import Case
from conformance.fuzz.signature import cause, signature
from conformance.results import Record


class FindingFailure(Exception):
    """Raised by the property for a new finding; one subclass per origin (see :func:`failure_for`)."""

    origin: tuple = ()


_FAILURES: dict = {}


def failure_for(origin_key: tuple) -> type:
    """The exception type of one origin: hypothesis tells bugs apart by exception type."""
    if origin_key not in _FAILURES:
        name = "Finding_" + "_".join("".join(ch if ch.isalnum() else "_" for ch in str(p)) for p in origin_key)
        _FAILURES[origin_key] = type(name[:120], (FindingFailure,), {"origin": origin_key})
    return _FAILURES[origin_key]


@dataclass
class Finding:
    """One origin's failure in one example."""

    origin: tuple
    tokens: frozenset
    case: Case
    records: list[Record]
    removed: tuple = ()        # features taken away after shrinking (conformance.fuzz.reduce)

    @property
    def cause(self) -> frozenset:
        return cause(self.verdict, self.tokens)

    @property
    def signature(self) -> str:
        return signature(self.origin, self.cause)

    @property
    def verdict(self) -> str:
        return self.origin[1]

    @property
    def headline(self) -> str:
        r = self.records[0]
        return f"{r.target}: {r.verdict} on {self.case.describe()}: {r.message.splitlines()[0][:300]}"


@dataclass
class Written:
    path: Path
    signature: str
    finding: Finding
    repro: str
    found_at: tuple = ()        # (examples, seconds) when its origin was first seen
    written_s: float = 0.0      # seconds into the campaign when it was written (shrinking done)


def _finding_text(finding: Finding) -> str:
    r = finding.records[0]
    tokens = ", ".join(sorted(finding.tokens)) or "no optional feature"
    needs = ", ".join(sorted(finding.cause)) or f"nothing optional (the plain {finding.case.op} path)"
    first = r.message.splitlines()[0] if r.message else ""
    first = first if len(first) <= 240 else first[:240] + " …"
    return (f"Fuzzer finding: {r.target} gave `{r.verdict}` on {finding.case.describe()} "
            f"(features: {tokens}; the finding needs: {needs}). {first} (the whole message is in finding.message)")


def _wrap(items: list[str], width: int = 96) -> list[str]:
    lines, line = [], ""
    for item in items:
        if line and len(line) + len(item) + 2 > width:
            lines.append("  " + line)
            line = ""
        line = f"{line}, {item}" if line else item
    return lines + (["  " + line] if line else [])


def _clauses(case, records: list[Record]) -> list[str]:
    """Each failing spec's clause, followed by the attributes and inputs the finding needs."""
    from conformance.specs import SPECS
    named = ", ".join(clause_names(case))
    out = []
    for spec in sorted({r.spec for r in records}):
        try:
            clause = SPECS[spec].clause(case)
        except Exception:  # noqa: BLE001 - a clause is a courtesy; the finding stands without it
            clause = spec
        out.append(f"{clause} {named}" if named else clause)
    if not case.valid:
        out.append(f"{case.op} input constraints: {case.violates}")
    return out
