"""The verdicts: one table, from which every list, order and label the suite uses is derived.

A verdict is a string in the records (``"pass"``); :class:`Verdict` is a ``StrEnum``, so
``Verdict.PASS == "pass"`` and a record written with one reads back as the other.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    STATE_LEAK = "state-leak"
    INCONSISTENT = "inconsistent"
    REJECTED = "rejected"
    ACCEPTED_INVALID = "accepted-invalid"
    CRASH = "crash"
    TIMEOUT = "timeout"
    NOT_EXPRESSIBLE = "not-expressible"
    UNSPECIFIED = "unspecified"
    ERROR = "error"


@dataclass(frozen=True)
class Row:
    """Everything the suite says about one verdict."""

    verdict: Verdict
    failing: bool        # a divergence: the run's exit status counts it unless the gate covers it
    severity: int        # 0 is the worst: the order a matrix cell's colour and a list's sort follow
    short: str           # the matrix's label
    meaning: str         # the report's legend
    colours: tuple[str, str]  # (background, text) in the HTML report
    terminal: str        # the terminal's style (rich)
    junit: str           # "failure", "error", "skipped" or "" (a passing testcase)
    page: bool           # the case gets a page in the report


TABLE: tuple[Row, ...] = (
    Row(Verdict.CRASH, True, 0, "crash", "the worker process died", ("#8d1b1b", "#ffffff"), "red bold", "error", True),
    Row(Verdict.ERROR, True, 1, "err", "the suite itself failed (translator or oracle)", ("#27303d", "#ffffff"),
        "red reverse", "error", True),
    Row(Verdict.TIMEOUT, True, 2, "t/o", "no answer in time", ("#fbeebb", "#8a5a00"), "yellow", "error", True),
    Row(Verdict.FAIL, True, 3, "fail", "numbers outside tolerance", ("#fbd5d2", "#a3190f"), "red", "failure", True),
    Row(Verdict.STATE_LEAK, True, 4, "leak", "the same input gives another result on a reused session (or at once "
        "with other requests): state kept between runs", ("#fde2f3", "#9d174d"), "magenta", "failure", True),
    Row(Verdict.INCONSISTENT, True, 5, "incons", "a self-consistency relation breaks: the runtime disagrees with "
        "itself (conformance/run/relations.py)", ("#e0e7ff", "#3730a3"), "blue", "failure", True),
    Row(Verdict.ACCEPTED_INVALID, True, 6, "acc-inv", "the runtime ran a case the spec forbids",
        ("#eedcfb", "#6b21a8"), "magenta", "failure", True),
    Row(Verdict.REJECTED, True, 7, "rej", "the runtime refused a valid case", ("#fde3c8", "#a4470b"), "red",
        "failure", True),
    Row(Verdict.UNSPECIFIED, False, 8, "unsp", "the spec defines none of the compared elements",
        ("#d9ecfb", "#0b5c96"), "blue", "skipped", True),
    Row(Verdict.NOT_EXPRESSIBLE, False, 9, "n/e", "this spec version cannot say the case", ("#eef0f3", "#5b6574"),
        "cyan", "skipped", False),
    Row(Verdict.PASS, False, 10, "pass", "every specified element within tolerance (or an invalid case rejected)",
        ("#dcf2e3", "#17663a"), "green", "", False),
)
BY_VERDICT = {row.verdict.value: row for row in TABLE}

#: every verdict, in the order docs/outputs.md ("Verdicts") and the reports list them
VERDICTS: tuple[str, ...] = ("pass", "fail", "state-leak", "inconsistent", "rejected", "accepted-invalid", "crash",
                             "timeout", "not-expressible", "unspecified", "error")
#: the divergences: verdicts that fail the run unless an expectation or the baseline covers them
FAILING: frozenset[str] = frozenset(row.verdict.value for row in TABLE if row.failing)
#: worst first
SEVERITY: tuple[str, ...] = tuple(row.verdict.value for row in sorted(TABLE, key=lambda r: r.severity))
SHORT = {row.verdict.value: row.short for row in TABLE}
MEANING = {row.verdict.value: row.meaning for row in TABLE}
COLOURS = {row.verdict.value: row.colours for row in TABLE}
TERMINAL = {row.verdict.value: row.terminal for row in TABLE}
PAGED: frozenset[str] = frozenset(row.verdict.value for row in TABLE if row.page)


def severity(verdict: str) -> int:
    """The verdict's rank (0 the worst); an unknown verdict counts as bad as an error."""
    row = BY_VERDICT.get(str(verdict))
    return row.severity if row else BY_VERDICT["error"].severity


def worst(verdicts: Collection[str]) -> str:
    return min(verdicts, key=severity) if verdicts else ""


def is_failing(verdict: str) -> bool:
    return str(verdict) in FAILING or str(verdict) not in BY_VERDICT


assert set(VERDICTS) == set(BY_VERDICT), "VERDICTS and TABLE name the same verdicts"
