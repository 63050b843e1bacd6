"""Orchestration: cases × targets through translators, worker processes, the oracle and compare.

Results are appended as they arrive; a pair already judged for the same case content is skipped,
so an interrupted run resumes where it stopped. Every pair is judged by one function,
``conformance.run.judging.judge``, over the run's explicit state (``JudgeState``) and policy
(``Policy``), whether it ran alone, in a batch (conformance/run/batches.py, whose docstring says how
a batch can neither create nor hide a divergence) or as a plan (conformance/run/planned.py); the
engine lends those two what they need (``Scheduling``), and a pair's ``Record`` goes from its making
through the gate to the store.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.case.features import features
from conformance.compare import FAILING
from conformance.converters.targets import sliced as converter_sliced
from conformance.files import write_atomic
from conformance.isolation.workers import Job, Outcome, Pool
from conformance.results import Record
from conformance.run import forms as pair_forms
from conformance.run.batches import NARROWER_ALONE, Batches
from conformance.run.judging import (
    ORACLE_TIMEOUT,
    Judged,
    JudgeState,
    Policy,
    effective_of,
    judge,
    judge_version,
    oracle_cached,
    oracle_for,
)
from conformance.run.planned import Planned
from conformance.run.programs import Programs
from conformance.run.scheduling import Scheduling
from conformance.runtimes.forms import program_form, sliced, unsupported
from conformance.specs import SPECS, NotExpressible, Program, translate

__all__ = ["NARROWER_ALONE", "ORACLE_TIMEOUT", "Engine", "Options", "RunSummary", "effective_of", "oracle_for", "repro"]


#: seconds: a pair whose spec may leave elements unspecified is run a second time, in the same
#: worker right after the first, when its first call took at most this (the repeat is what tells
#: computed values from stale memory)
REPEAT_UNDER = 0.5
#: the features of a case whose outputs a spec may leave undefined (oracles/silent.py's points):
#: partial or zero lengths, a non-finite input, an activation whose parameters may have no default
MAY_BE_SILENT = {"sequence_lens=partial", "nan", "inf", "act=scaledtanh", "act=affine"}


def may_leave_unspecified(case) -> bool:
    """Whether the case's outputs may include unspecified elements (then a cheap pair is repeated)."""
    return case.valid and any(token.lower() in MAY_BE_SILENT for token in features(case))


@dataclass
class Options:
    out_dir: Path
    jobs: int = 1
    timeout: float = 60.0
    resume: bool = True
    prec: int = 128
    argv_paths: tuple = ()          # for repro commands
    write_programs: bool = True
    tolerance: str | None = None    # a named policy of compare/policies.yaml; None: the default (derived)
    repeat_under: float = REPEAT_UNDER  # repeat a pair with unspecified elements when its call took at most this
    deadline: float | None = None   # time.monotonic() after which no new job is started (the ablation's budget)
    batch: bool = True              # send a batching target (Target.batch) several programs per call
    #: the case ids a target whose execution form is sliced runs on (``session=reused``, ``threads=4``:
    #: conformance/runtimes/forms.py); None: every case
    slice_ids: frozenset | None = None


@dataclass
class RunSummary:
    counts: Counter = field(default_factory=Counter)
    by_target: dict = field(default_factory=lambda: defaultdict(Counter))
    failures: list = field(default_factory=list)
    skipped_pairs: int = 0
    outside_slice: int = 0          # pairs of a sliced form's target whose case is not in the slice
    wall_s: float = 0.0
    #: time spent inside runtime calls (the bare cost), per runtime name
    runtime_by: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    @property
    def runtime_s(self) -> float:
        """Time spent inside runtime calls, all runtimes together."""
        return sum(self.runtime_by.values())

    @property
    def failed(self) -> bool:
        return any(self.counts[v] for v in FAILING)


def repro(case, target, targets=()) -> str:
    """The command that runs this one pair again: its case, runtime, device and spec, and, where
    ``targets`` (the run's) hold other configurations of that runtime and device, its own (``--config
    precision=pinned``, or ``precision=default`` for the default), so it reruns one configuration."""
    from conformance.selection import config_selecting
    cmd = ["conformance", "run", case.file or ".", "-k", case.id, "--runtime", target.runtime,
           "--device", target.device, "--spec", target.spec]
    config = config_selecting(target.config, [t.config for t in targets if t.runtime == target.runtime
                                              and t.device == target.device and t.spec == target.spec])
    if config:
        cmd += ["--config", config]
    if target.plugin:
        cmd += ["--runtime-plugin", target.ref.path]
    if getattr(target, "converter", ""):  # a converter target (conformance/converters/): its converter and form
        cmd += ["--converter", dict(target.ref.kwargs).get("converter", target.family)]
        if not config:  # its form, where the selection above did not name it already
            cmd += ["--config", target.config]
    return " ".join(shlex.quote(c) for c in cmd)


def _program_form(target) -> tuple:
    """The target's program form (conformance/runtimes/forms.py), hashable: what its program is
    translated with, shared by the targets of a spec that write the same one."""
    return tuple(sorted(program_form(target.config).items()))


class Engine:
    def __init__(self, cases, targets, store, options: Options, progress=None, gate=None, overrides=None,
                 silent_policy=None):
        self.gate = gate                  # Record -> gate fields (conformance.gate.classify)
        self.overrides = overrides        # (case id, target id, features) -> tolerance override dict | None
        self.silent_policy = silent_policy  # target id -> {garbage|implausible: fail|report} (expectations)
        self.cases = cases
        self.targets = targets
        self.store = store
        self.opt = options
        self.progress = progress or (lambda n=1: None)
        self.summary = RunSummary()
        #: the judgement's state: the oracle's results, the runs left of each, the pairs waiting, the bounds
        self.state = JudgeState()
        self.policy = Policy(options.tolerance, overrides, silent_policy, lambda case: self._facts_of(case)[2])
        self._facts: dict[int, tuple[Any, str, frozenset]] = {}  # id(case) -> (case, digest, features)
        self.programs = Programs(store.dir, lambda case: self._facts_of(case)[1], options.write_programs)
        self.pool: Any = None               # the pool of this run (a batched pair is run again alone on it)
        lent = Scheduling(cases=cases, timeout=options.timeout, programs=self.programs, oracle_job=self.oracle_job,
                          run_job=self.run_job, settle=self.settle, record=self.record, spent=self.spent,
                          receive=self.receive, submit=lambda job: self.pool.submit(job))
        #: the pairs sent in batches (conformance/run/batches.py), and those run as a plan (an execution
        #: form, the relations: conformance/run/planned.py)
        self.batches = Batches(self.state, lent)
        self.planned = Planned(self.state, self.policy, lent)

    def _facts_of(self, case) -> tuple[Any, str, frozenset]:
        """A case's content digest and feature tokens, computed once per run (cases do not change
        during a run; the case is held so that its id stays its own)."""
        found = self._facts.get(id(case))
        if found is None or found[0] is not case:
            found = self._facts[id(case)] = (case, case.digest, frozenset(features(case)))
        return found

    def pending_pairs(self):
        """(case index, case, targets still to run) for every case with something left to run: a
        pair is done when a record of it exists for the same case content *and* the same judgement
        (pair_digest)."""
        for ci, case in enumerate(self.cases):
            _, digest, tokens = self._facts_of(case)
            todo = []
            for t in self.targets:
                if self.opt.slice_ids is not None and case.id not in self.opt.slice_ids and (
                        sliced(t.config) or converter_sliced(t, case.id)):
                    continue
                if (not self.store.is_done(case.id, t.id, self.pair_digest(case, t, digest, tokens))
                        or self._needs_detail(case.id, t.id)):
                    todo.append(t)
            if todo:
                yield ci, case, todo

    def _needs_detail(self, case_id: str, target_id: str) -> bool:
        """A pair kept only as a summary (``--artifacts failing``) whose divergence the gate now
        calls new (an expectation removed, another baseline) is run again, so that it has its full
        record, program and page like every new divergence."""
        if not self.gate:
            return False
        rec = self.store.stored(case_id, target_id)
        return bool(rec and rec.get("detail") == "summary" and rec.get("verdict") in FAILING
                    and self.gate(Record.from_dict(rec)).get("gate") == "new")

    def _outside_slice(self) -> int:
        if self.opt.slice_ids is None:
            return 0
        return sum(1 for t in self.targets for c in self.cases
                   if c.id not in self.opt.slice_ids and (sliced(t.config) or converter_sliced(t, c.id)))

    def pair_digest(self, case, target, digest: str | None = None, tokens=None) -> str:
        """The case's content, and everything its verdict on ``target`` is judged by: the tolerance
        policy, an expectations override, the case's own tolerance, the oracle's version and
        precision, and the comparison's own code. A resumed run redoes a pair when any of it
        changed (the runtime's version is in the target id)."""
        _, known, found = self._facts_of(case)
        override = self.overrides(case.id, target.id, tokens if tokens is not None else found) \
            if self.overrides else None
        policy = self.silent_policy(target.id) if self.silent_policy else None
        judged = json.dumps([self.opt.tolerance, override, case.tolerance, self.opt.prec, policy, judge_version()],
                            sort_keys=True, default=str)
        return f"{digest or known}:{hashlib.sha256(judged.encode()).hexdigest()[:12]}"

    def count_pending(self) -> int:
        if not getattr(self.store, "records", True):  # nothing judged yet: every pair is pending, and
            return len(self.cases) * len(self.targets)  # no case's digest is needed before its turn
        return sum(len(todo) for _, _, todo in self.pending_pairs())

    def run(self, pool: Pool | None = None) -> RunSummary:
        """Run every pending pair. With ``pool`` (kept open, e.g. by the fuzzer or the ablation),
        its warm workers are reused; otherwise a pool of ``jobs`` workers lives for this call."""
        start = time.perf_counter()
        if pool is not None:
            self._drive(pool)
        else:
            with Pool(self.opt.jobs) as own:
                self._drive(own)
        self.summary.wall_s = time.perf_counter() - start
        return self.summary

    def _drive(self, pool) -> None:
        self.pool = pool
        try:
            for outcome in pool.outcomes(self._jobs()):
                self.receive(outcome)
        finally:
            self.pool = None

    def _jobs(self):
        """Jobs for every pending pair, made lazily: the oracle's first, then each target's. A case's
        digest and features are computed when its turn comes, so the first job starts at once."""
        pending, pairs, late = 0, self.pending_pairs(), False
        for ci, case, todo in pairs:
            pending += len(todo)
            if self.opt.deadline is not None and time.monotonic() > self.opt.deadline:
                late = True  # out of time: the pairs not started have no record
                pending += sum(len(t) for _, _, t in pairs)
                break
            yield from self._schedule(ci, case, todo)
        self.summary.outside_slice = self._outside_slice()
        self.summary.skipped_pairs += len(self.cases) * len(self.targets) - pending - self.summary.outside_slice
        if late:
            return
        yield from self.batches.flush()

    def run_job(self, ci: int, prog, target, repeat: float = 0.0) -> Job:
        """One pair's job: ``prog`` on ``target``, run a second time in the same worker when its
        first call takes at most ``repeat`` seconds."""
        return Job(("run", ci, target, prog), "run", (target.ref, prog.runtime_input(), prog.feeds, repeat),
                   self.opt.timeout)

    def _schedule(self, ci: int, case, todo):
        programs: dict[tuple, Program | NotExpressible | Exception] = {}
        for spec, form in sorted({(t.spec, _program_form(t)) for t in todo}):
            try:
                programs[(spec, form)] = translate(SPECS[spec], case, dict(form))
            except Exception as exc:  # a translator bug costs its pairs, recorded as a suite error
                programs[(spec, form)] = exc
            self.programs.write(case, programs[(spec, form)], dict(form))
        runnable = [t for t in todo if not isinstance(programs[(t.spec, _program_form(t))], (NotExpressible, Exception))
                    and case.op not in t.gates and not unsupported(t.config, t.forms)]
        if case.valid:
            for t in runnable:
                self.state.runs_left[(ci, SPECS[t.spec].semantics)] += 1
            for profile in sorted({SPECS[t.spec].semantics for t in runnable}):
                job = self.oracle_job((ci, profile), case, profile)
                if job is not None:
                    yield job
        for t in todo:
            prog = programs[(t.spec, _program_form(t))]
            if case.op in t.gates:
                self.record(case, t, None, "not-expressible", f"version gate: {t.gates[case.op]}")
            elif isinstance(prog, NotExpressible):
                self.record(case, t, None, "not-expressible", prog.reason)
            elif isinstance(prog, Exception):
                self.record(case, t, None, "error", f"translator failed: {type(prog).__name__}: {prog}")
            elif unsupported(t.config, t.forms):
                self.record(case, t, None, "not-expressible", str(unsupported(t.config, t.forms)))
            elif pair_forms.needs_plan(t.config):
                yield from self.planned.jobs(ci, case, t, prog)
            else:
                repeat = self.opt.repeat_under if may_leave_unspecified(case) else 0.0
                if t.batch > 1 and self.opt.batch and not repeat:
                    yield from self.batches.add(ci, case, prog, t)
                    continue
                yield self.run_job(ci, prog, t, repeat)

    def oracle_job(self, okey, case, profile: str) -> Job | None:
        """The oracle's job for ``case`` under ``profile`` (kept under ``okey``), or None where its disk
        cache holds the result (read here: no job, and no worker slot taken from the runtimes)."""
        hit = oracle_cached(case.op, case.attributes, case.tensors, profile, self.opt.prec)
        if hit is not None:
            self.state.oracle[okey] = Outcome(("oracle", okey), "ok", hit)
            return None
        return Job(("oracle", okey), "call",
                   (oracle_for, (case.op, case.attributes, case.tensors, profile, self.opt.prec)),
                   ORACLE_TIMEOUT)

    def receive(self, outcome) -> None:
        key = outcome.key
        if key[0] == "oracle":
            okey = key[1]
            self.state.oracle[okey] = outcome
            for args in self.state.waiting.pop(okey, []):
                self._judge(okey[0], *args)
                self.state.release(okey)
            self.planned.oracle_in(okey)
            return
        if key[0] == "batch":
            return self.batches.answered(outcome)
        if key[0] == "plan":
            return self.planned.answered(outcome)
        _, ci, target, prog = key
        self.spent(target, outcome.elapsed)
        case = self.cases[ci]
        okey = (ci, SPECS[target.spec].semantics)
        if case.valid and outcome.status == "ok" and okey not in self.state.oracle:
            self.state.waiting[okey].append((target, prog, outcome))
            return
        self._judge(ci, target, prog, outcome)
        if case.valid:
            self.state.release(okey)

    def _judge(self, ci: int, target, prog, outcome) -> None:
        self.settle(outcome, ci, target, prog, judge(ci, self.cases[ci], target, prog, outcome, self.state,
                                                     self.policy, write_artefacts=self.programs.artefacts))

    def spent(self, target, seconds: float) -> None:
        self.summary.runtime_by[target.runtime] += seconds

    def settle(self, outcome, ci: int, target, prog, judged: Judged) -> None:
        """Record a judged pair, or, when it came from a batch and is not ``pass``, run it again
        alone first (a batch may neither create nor hide a divergence)."""
        extra = dict(judged.extra)
        found = self.batches.settled(outcome, ci, target, prog, judged.verdict, judged.message)
        if found is None:
            return  # run again alone first
        if found:
            extra["batch"] = found
        self.record(self.cases[ci], target, prog, judged.verdict, judged.message, extra)

    def record(self, case, target, prog, verdict, message, extra=None) -> None:
        """The pair's Record, made once, gated and stored as it is."""
        _, digest, tokens = self._facts_of(case)
        record = Record.of(case, target, SPECS.get(target.spec), tokens, self.pair_digest(case, target, digest, tokens),
                           digest)
        record.verdict, record.message, record.repro = verdict, message, repro(case, target, self.targets)
        extra = dict(extra or {})
        for name in ("max_abs_err", "max_ulp", "tolerance"):
            if name in extra:
                setattr(record, name, extra.pop(name))
        record.extra = extra
        if self.gate:
            record.extra.update(self.gate(record))
        if record.fallback:  # it did not run on the target: not the target's verdict (docs/forms.md)
            record.extra["gate"] = "fallback"
        self.store.append(record)
        self.summary.counts[verdict] += 1
        self.summary.by_target[target.id][verdict] += 1
        if verdict in FAILING:
            self.summary.failures.append(record)
        self.progress(1)


def write_run_info(out_dir: Path, info: dict) -> None:
    path = Path(out_dir) / "run.json"
    write_atomic(path, json.dumps(info, indent=2, default=str) + "\n")
