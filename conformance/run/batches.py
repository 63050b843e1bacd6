"""Batches. A target whose runtime takes several programs per call (``Target.batch``: WebNN's
page round trip, OpenVINO's compile) gets its pairs in batches of that many; the targets of one
runtime configuration share its batches, so a case's programs for several specs go together. A
batch can neither create nor hide a divergence: a pair whose verdict from the batch is not
``pass``, and every pair of a batch that crashed, hung or failed as a whole, is run again alone,
and that run is what is recorded (with ``batch`` saying so). Pairs whose outputs may hold
unspecified elements (they are run twice) never go in a batch. Pairs whose target computes in a
precision narrower than the case's type fail the spec's bound by design, so merging them would
only run them twice: they go in batches of their own that the worker runs each on its own, one
after the other in one call (only the round trips are shared), recorded as pairs run alone. A
runtime may run some programs of a batch on their own within the call (``RanAlone``: OpenVINO
compiles a batch as one model, and a program it refuses is compiled by itself); those are
recorded as pairs run alone too. Each pair's record names the configuration its own part of the
call ran in (``RanMerged``). ``--no-batch`` (``Options.batch``) turns batches off.

The targets of one runtime configuration (one ``RuntimeRef``, one worker) share its open batch, so a
case's programs for several specs go together. A batch closes when it holds ``Target.batch``
programs or :data:`BATCH_BYTES` of them; pairs computing narrower than their type go in batches of
their own that the worker runs one program at a time (:data:`NARROWER_ALONE`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.isolation.jobs import Job, Outcome
from conformance.run.judging.state import JudgeState
from conformance.run.scheduling import Scheduling
from conformance.runtimes.effective import BY_NAME, narrower
from conformance.specs import SPECS, Program

#: a batch closes when its programs together pass this many bytes (production shapes stay small in
#: number per call: a worker's answer travels through a pipe, WebNN's documents through the page)
BATCH_BYTES = 8 << 20
#: why a pair of a batch that runs each program on its own ran alone (``computes_narrower``)
NARROWER_ALONE = ("its target computes in a precision narrower than its type, so it is not merged (it would only "
                  "run twice); run on its own, in one call with the rest of its batch")


def size(prog: Program) -> int:
    """Bytes of a program's model (its bytes, or its written main file)."""
    model = prog.runtime_input()
    if isinstance(model, (bytes, bytearray)):
        return len(model)
    try:
        return Path(model).stat().st_size
    except (OSError, TypeError):
        return 0


def computes_narrower(case, target) -> bool:
    """Whether the target's measured precision is narrower than the case's type (OpenVINO's default
    configuration on a bf16 CPU): such a pair fails the spec's bound by design and would be run again
    alone after a merged batch, so its batch runs each program on its own (``NARROWER_ALONE``)."""
    return narrower(BY_NAME.get(target.precision), case.dtype)


class Batches:
    """The open batches of one engine run, and the pairs of a batch run again alone."""

    def __init__(self, state: JudgeState, lent: Scheduling):
        self.state, self.lent = state, lent
        #: (runtime ref, whether its programs run each on its own) -> [(case index, program, target)]
        self.open: dict[Any, list[tuple[int, Program, Any]]] = {}
        self.bytes: dict[Any, int] = {}              # open batch key -> the size of its programs
        self.alone: dict[tuple[int, Any], str] = {}  # (case index, target) -> why a batched pair runs alone

    def add(self, ci: int, case, prog, target):
        """A pair into its open batch; the batch's job when that fills it."""
        key = (target.ref, computes_narrower(case, target))
        self.open.setdefault(key, []).append((ci, prog, target))
        self.bytes[key] = self.bytes.get(key, 0) + size(prog)
        if len(self.open[key]) >= target.batch or self.bytes[key] >= BATCH_BYTES:
            yield self.job(key)

    def flush(self):
        """The jobs of every batch still open (the selection's last pairs)."""
        for key in list(self.open):
            yield self.job(key)

    def job(self, key) -> Job:
        """The open batch ``key`` as one job (a batch of one is the pair's own job)."""
        entries = self.open.pop(key)
        self.bytes.pop(key, None)
        if len(entries) == 1:
            return self.lent.run_job(*entries[0])
        ref, alone = key
        return Job(("batch", ref, entries), "batch",
                   (ref, [(prog.runtime_input(), prog.feeds) for _, prog, _ in entries])
                   + ((NARROWER_ALONE,) if alone else ()),
                   2 * self.lent.timeout)

    def rerun(self, ci: int, target, prog, why: str) -> None:
        """A batched pair run again on its own (its record says why); its oracle result is kept for it."""
        if self.lent.cases[ci].valid:
            self.state.runs_left[(ci, SPECS[target.spec].semantics)] += 1
        self.alone[(ci, target)] = why
        self.lent.submit(self.lent.run_job(ci, prog, target))

    def answered(self, outcome) -> None:
        """A batch's answer, as one outcome per pair (marked as batched); a batch that crashed, hung
        or failed as a whole sends each of its pairs again alone."""
        _, _, entries = outcome.key
        answers = outcome.value if outcome.status == "ok" else None
        if not isinstance(answers, list) or len(answers) != len(entries):
            why = f"its batch of {len(entries)} ended with {outcome.status}: {outcome.error}"[:300]
            self.lent.spent(entries[0][2], outcome.elapsed)  # one runtime configuration: one runtime
            for ci, prog, target in entries:
                self.rerun(ci, target, prog, why)
            return
        for (ci, prog, target), (status, value, error, elapsed, *rest) in zip(entries, answers):
            why = rest[0] if rest else ""
            effective = rest[1] if len(rest) > 1 and rest[1] is not None else outcome.effective
            if why:  # the runtime ran it on its own within the call: recorded as a pair run alone
                self.alone[(ci, target)] = f"in a batch of {len(entries)}: {why}"[:300]
            self.lent.receive(Outcome(("run", ci, target, prog), status, value, error, "", elapsed,
                                      effective, batched=0 if why else len(entries)))

    def settled(self, outcome, ci: int, target, prog, verdict: str, message: str) -> dict | None:
        """The record's ``batch`` field for a judged pair ({} where it was not batched), or None where
        it came from a batch and is not ``pass``: then it is run again alone first."""
        if outcome.batched:
            if verdict != "pass":
                self.rerun(ci, target, prog, f"in a batch of {outcome.batched} it was {verdict}: {message}"[:300])
                return None
            return {"size": outcome.batched}
        if (ci, target) in self.alone:
            return {"alone": self.alone.pop((ci, target))}
        return {}
