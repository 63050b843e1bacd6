"""The differential property, and the campaign that searches it under a time budget.

The property: for a drawn case, every target either agrees with the oracle within the tolerance
or gives a clean verdict (``pass``, ``not-expressible``, ``unspecified``; for an invalid case,
``pass`` means it was rejected). The :class:`~conformance.run.engine.Engine` does the judging, with
the tolerance and the oracle the corpus uses, on one warm worker :class:`~conformance.isolation.workers.Pool`
kept for the whole campaign, so a runtime that crashes costs a verdict and not the campaign.

Anything else (``fail``, ``rejected`` valid case, ``accepted-invalid``, ``crash``, ``timeout``,
``error``) is a *finding*, unless an expectations file covers it for that target (``gate:
expected``) or a regression file already written subsumes it (:mod:`conformance.fuzz.signature`):
those are *known*. A new finding raises one exception type per origin, so hypothesis shrinks each
distinct bug to its own minimal case; the campaign writes each as a case file
(:mod:`conformance.fuzz.reproducer`) and goes on: once written, the finding is known and the
search moves past it.

Valid cases steer the search with ``hypothesis.target(ratio, label=<target id>)``, the record's
error over its allowed error, so hypothesis climbs toward larger errors before they fail.
"""

from __future__ import annotations

import math
import os
import random
import tempfile
import time
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, event, given, settings, target
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from conformance.compare.verdicts import FAILING, severity
from conformance.fuzz.examiner import Examiner
from conformance.fuzz.finding import Finding, FindingFailure, Written, _clauses, _finding_text, _wrap, failure_for
from conformance.fuzz.reduce import reduce_case
from conformance.fuzz.reproducer import FindingIndex, Known, case_document, file_name, render, repro_command
from conformance.fuzz.scope import Scope
from conformance.fuzz.signature import case_tokens, origin, with_id
from conformance.fuzz.strategies import draw_case
from conformance.gate import Expectations, classify
from conformance.run import Pool
from conformance.run.probe import measured

DATABASE = Path(".hypothesis/conformance-fuzz")


@dataclass
class CampaignConfig:
    targets: list
    out_dir: Path = Path("cases/regressions")
    budget_s: float = 600.0
    jobs: int = 1
    seed: int | None = None
    expectations: Expectations | None = None
    database: Path | None = DATABASE       # None: no persistent database
    timeout: float = 20.0
    scope: Scope = field(default_factory=Scope)
    max_examples: int | None = None        # stop after this many examined cases as well
    chunk: int = 200                       # examples per hypothesis run
    shrink: bool = True
    #: the share of the budget spent searching; the rest is for shrinking, reducing and writing what
    #: was found (without shrinking, nearly all of it searches). The whole campaign, start-up and
    #: writing included, ends within the budget: a finding left unshrunk then is written unshrunk.
    search_share: float | None = None
    started: float | None = None           # time.monotonic() when the command started (the budget's clock)
    prec: int = 128
    tolerance: str | None = None           # a named policy; None: the derived bound
    plugins: dict = field(default_factory=dict)   # runtime name -> MOD:ATTR, for repro commands
    #: other folders whose findings are known (the repository's cases/regressions/): an example they
    #: cover is not new; findings are written to ``out_dir`` only
    known: tuple = ()


@dataclass
class CampaignResult:
    examples: int = 0                      # cases run on the targets
    valid: int = 0
    invalid: int = 0
    skipped: int = 0                       # drawn after the budget, not run
    elapsed_s: float = 0.0
    ready_s: float = 0.0                   # of elapsed_s, before the first case: workers started, targets measured
    busy_s: float = 0.0
    verdicts: dict = field(default_factory=lambda: defaultdict(Counter))     # target -> verdict -> n
    new_by_target: Counter = field(default_factory=Counter)                  # examples with a new finding
    known_by_target: Counter = field(default_factory=Counter)                # covered by a written finding
    expected_by_target: Counter = field(default_factory=Counter)             # covered by an expectation
    written: list = field(default_factory=list)                              # [Written]
    superseded: list = field(default_factory=list)   # (path, by path, removed) of redundant findings
    first_new_at: dict = field(default_factory=dict)     # origin -> (examples, s) when first seen new
    first_failure_at: dict = field(default_factory=dict) # target id -> (examples, s) of its first finding verdict
    expected_by_entry: Counter = field(default_factory=Counter)              # "file:line reason" -> verdicts
    reduction_runs: int = 0                  # cases run to take features away from shrunk findings
    seed: int = 0
    chunks: int = 0
    interrupted: bool = False

    @property
    def throughput(self) -> float:
        return self.examples / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def searching_throughput(self) -> float:
        """Cases per second once the campaign is ready (its start-up, ``ready_s``, left out): the
        rate a longer campaign approaches."""
        searching = self.elapsed_s - self.ready_s
        return self.examples / searching if searching > 0 else 0.0


class Campaign:
    """Search for findings until the budget is spent; write each as a regression case file."""

    def __init__(self, config: CampaignConfig, observer=None):
        self.config = config
        self.observer = observer
        self.result = CampaignResult()
        self.index = FindingIndex.load(config.out_dir)
        for folder in config.known:
            if Path(folder).resolve() != Path(config.out_dir).resolve():
                self.index.merge(FindingIndex.load(folder))
        self.gate = ((lambda record: classify(record, config.expectations))   # the engine's Record
                     if config.expectations else None)
        self._start = self._stop_at = time.monotonic()
        self._hard_stop = math.inf  # set by run(); a finding reduced outside a campaign has no time limit
        self._seen: dict = {}       # origin -> Finding (latest raised in this hypothesis run)
        self._final: dict = {}      # origin -> Finding (from hypothesis' final replay)
        self._found_in_run = False

    @property
    def scope(self) -> Scope:
        """What the campaign draws: its scope, with torch.nn's own axes where a target reads torch
        programs and the converters its targets name (``Scope.for_targets``)."""
        return self.config.scope.for_targets(self.config.targets)

    # -- the property --------------------------------------------------------------------------

    def _property(self, case) -> None:
        from hypothesis.control import current_build_context
        final = getattr(current_build_context(), "is_final", False)
        if not final and not self.examiner.seen(case) and self._should_skip():
            self.result.skipped += 1
            return
        fresh = not self.examiner.seen(case)
        records = self.examiner.examine(case)
        if fresh:
            self._count(case, records)
        for rec in records:
            ratio = rec.ratio
            if case.valid and isinstance(ratio, (int, float)) and math.isfinite(ratio):
                target(float(min(ratio, 1e300)), label=rec.target)
        new = self._new_findings(case, records, count=fresh)
        if self.observer:
            self.observer.example(self, case, records, new)
        if new:
            self._found_in_run = True
            first = new[0]
            self._seen[first.origin] = first
            if final:
                self._final[first.origin] = first
            event("finding", first.signature)
            raise failure_for(first.origin)(first.headline)

    def _should_skip(self) -> bool:
        now = time.monotonic()
        cap = self.config.max_examples
        spent = now >= self._stop_at or (cap is not None and self.result.examples >= cap)
        return (spent and not self._found_in_run) or now >= self._hard_stop

    def _count(self, case, records) -> None:
        r = self.result
        r.examples += 1
        r.valid += case.valid
        r.invalid += not case.valid
        for rec in records:
            r.verdicts[rec.target][rec.verdict] += 1
            if rec.verdict in FAILING:
                r.first_failure_at.setdefault(rec.target, (r.examples, self._elapsed()))

    def _new_findings(self, case, records, count: bool) -> list[Finding]:
        failing = [rec for rec in records if rec.verdict in FAILING]
        groups: dict = OrderedDict()
        for rec in failing:
            if rec.gate == "expected":
                if count:
                    self.result.expected_by_target[rec.target] += 1
                    entry = rec.expected or {}
                    self.result.expected_by_entry[f"{entry.get('where', '?')}: {entry.get('reason', '')}"] += 1
                continue
            groups.setdefault(origin(rec, case), []).append(rec)
        if not groups:
            return []
        tokens = case_tokens(case)
        new = []
        for key, recs in groups.items():
            if self.index.covering(key, tokens):
                if count:
                    for rec in recs:
                        self.result.known_by_target[rec.target] += 1
                continue
            if count:
                for rec in recs:
                    self.result.new_by_target[rec.target] += 1
                self.result.first_new_at.setdefault(key, (self.result.examples, self._elapsed()))
            new.append(Finding(key, tokens, case, recs))
        new.sort(key=lambda f: (severity(f.verdict), f.origin))
        return new

    def _elapsed(self) -> float:
        return time.monotonic() - self._start

    # -- the campaign --------------------------------------------------------------------------

    def run(self) -> CampaignResult:
        cfg = self.config
        self.result.seed = cfg.seed if cfg.seed is not None else random.SystemRandom().randrange(2 ** 32)
        self._start = cfg.started if cfg.started is not None else time.monotonic()
        share = cfg.search_share if cfg.search_share is not None else (0.75 if cfg.shrink else 0.95)
        self._stop_at = self._start + share * cfg.budget_s
        self._hard_stop = self._start + cfg.budget_s
        saved = {k: os.environ.get(k) for k in ("CONFORMANCE_ORACLE_CACHE", "PYTHONWARNINGS")}
        with tempfile.TemporaryDirectory(prefix="conformance-fuzz-") as tmp:
            # a campaign's oracle results are worth keeping for its own replays only; and the
            # workers' numeric warnings on wild inputs are verdicts' business, not the terminal's
            os.environ["CONFORMANCE_ORACLE_CACHE"] = str(Path(tmp) / "oracle-cache")
            os.environ.setdefault("PYTHONWARNINGS", "ignore::RuntimeWarning")
            try:
                with Pool(cfg.jobs) as pool:
                    # each target's effective configuration, measured, so ids name it as the corpus's do
                    cfg.targets = measured(cfg.targets, pool, timeout=min(cfg.timeout, 120.0), folder=tmp)
                    self.examiner = Examiner(cfg.targets, pool, Path(tmp) / "work", cfg.timeout, cfg.prec,
                                             self.gate, cfg.tolerance, deadline=self._hard_stop)
                    self.result.ready_s = self._elapsed()
                    try:
                        while not self._spent():
                            self._run_chunk(self.result.chunks)
                            self.result.chunks += 1
                    except KeyboardInterrupt:  # Ctrl-C ends the campaign, not its report
                        self.result.interrupted = True
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
        self.result.elapsed_s = self._elapsed()
        self.result.busy_s = self.examiner.busy_s
        return self.result

    def _spent(self) -> bool:
        cap = self.config.max_examples
        return time.monotonic() >= self._stop_at or (cap is not None and self.result.examples >= cap)

    def _settings(self) -> settings:
        cfg = self.config
        phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
        if cfg.shrink:
            phases.append(Phase.shrink)
        database = DirectoryBasedExampleDatabase(str(cfg.database)) if cfg.database else None
        return settings(max_examples=cfg.chunk, deadline=None, database=database, phases=phases,
                        suppress_health_check=list(HealthCheck), report_multiple_bugs=True,
                        verbosity=Verbosity.quiet, derandomize=False, print_blob=False)

    def _run_chunk(self, index: int) -> None:
        self._seen, self._final, self._found_in_run = {}, {}, False
        test = self._settings()(given(self._cases())(self._property_wrapper()))
        # What @hypothesis.seed sets, without the database=None it adds: a seeded campaign still
        # reads and grows the database (--no-database for an exact rerun). As hypothesis.find does,
        # the database key is set explicitly, so every campaign of one scope shares its examples.
        # hypothesis's private attributes, absent from its types
        test._hypothesis_internal_use_seed = (  # type: ignore[attr-defined]
            (self.result.seed * 1_000_003 + index) % 2 ** 64)
        test._hypothesis_internal_database_key = (  # type: ignore[attr-defined]
            f"conformance-fuzz:{self.scope.key()}".encode())
        try:
            test()
        except BaseException as exc:  # noqa: BLE001 - sorted out below
            if isinstance(exc, KeyboardInterrupt):
                for key, found in self._seen.items():   # the best case so far, rather than nothing
                    self._write(self._final.get(key, found))
                raise
            foreign = [e for e in _leaves(exc) if not isinstance(e, FindingFailure) and not _hypothesis_error(e)]
            if foreign:
                raise
        for key, found in self._seen.items():
            found = self._final.get(key, found)
            self._write(self._reduce(found) if self.config.shrink else found)
        if self.observer:
            self.observer.chunk(self)

    def _property_wrapper(self):
        def differential_property(case):
            self._property(case)
        return differential_property

    def _cases(self) -> st.SearchStrategy:
        """The scope's cases, drawn by a composite strategy: its draws go straight to hypothesis'
        choice sequence, without ``st.data()``'s per-draw bookkeeping (a random-state check and a
        printed label per draw cost a quarter of the fuzzer's time; the labels are in
        ``Case.params`` and the written findings anyway)."""
        scope = self.scope

        @st.composite
        def campaign_cases(draw):
            return draw_case(lambda strategy, label: draw(strategy), scope)
        return campaign_cases()

    def _reduce(self, finding: Finding) -> Finding:
        """The finding with every feature removed that it does not need, checked on its targets."""
        if self.index.covering(finding.origin, finding.tokens):
            return finding
        ids = {r.target for r in finding.records}
        targets = [t for t in self.config.targets if t.id in ids]

        def failing(case):
            return [r for r in self.examiner.examine(case, targets)
                    if r.verdict in FAILING and r.gate != "expected"
                    and origin(r, case) == finding.origin]

        reduced = reduce_case(finding.case, lambda c: bool(failing(c)), with_id,
                              out_of_time=lambda: time.monotonic() >= self._hard_stop)
        self.result.reduction_runs += reduced.tried
        if not reduced.removed:
            return finding
        records = failing(reduced.case)
        if not records:   # not reproducible (a flaky runtime): keep what hypothesis found
            return finding
        return Finding(finding.origin, case_tokens(reduced.case), reduced.case, records, tuple(reduced.removed))

    def _write(self, finding: Finding) -> None:
        sig = finding.signature
        if sig in self.index.by_signature or self.index.covering(finding.origin, finding.tokens):
            return
        cfg = self.config
        case, records = finding.case, finding.records
        first = records[0]
        path = Path(cfg.out_dir) / file_name(case, first.runtime, finding.verdict, sig)
        repro = repro_command(path, records, cfg.plugins)
        text = _finding_text(finding)
        doc = case_document(
            case, clause=_clauses(case, records), description=text,
            finding={"target": first.target, "targets": sorted({r.target for r in records}),
                     "verdict": finding.verdict, "message": first.message, "seed": self.result.seed,
                     "signature": sig, "repro": repro})
        header = ["Minimized by `conformance fuzz`; reproduce with:", f"  {repro}",
                  "The draws that made it (hypothesis labels; values of absent inputs are drawn but unused):"]
        header += _wrap([f"{k}={v!r}" for k, v in case.params.items()])
        if finding.removed:
            header.append(f"then reduced, keeping the failure, by: {', '.join(finding.removed)} "
                          "(conformance.fuzz.reduce)")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(doc, header), encoding="utf-8")
        self.index.add(Known.of(sig, case, path))
        written = Written(path, sig, finding, repro, self.result.first_new_at.get(finding.origin, ()),
                          self._elapsed())
        self._supersede(written)
        self.result.written.append(written)
        if self.observer:
            self.observer.written(self, written)


    def _supersede(self, new: "Written") -> None:
        """A finding that needs fewer features makes the ones of its origin needing more redundant
        (hypothesis may first settle on a local minimum, e.g. {B} at S=1 before {} at S=2): those
        written by this campaign are removed; older ones are listed for the user to remove."""
        mine_new = self.index.by_signature[new.signature]
        for known in list(self.index.by_signature.values()):
            if not mine_new.supersedes(known):
                continue
            mine = [w for w in self.result.written if w.signature == known.signature]
            if mine:
                known.path.unlink(missing_ok=True)
                del self.index.by_signature[known.signature]
                self.result.written = [w for w in self.result.written if w.signature != known.signature]
            self.result.superseded.append((known.path, new.path, bool(mine)))


def _leaves(exc: BaseException):
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            yield from _leaves(sub)
    else:
        yield exc


def _hypothesis_error(exc: BaseException) -> bool:
    """Hypothesis' own verdicts about the run (flaky replays, nothing satisfiable)."""
    return type(exc).__module__.startswith("hypothesis")
