"""Orchestration: cases × targets through translators, worker processes, the oracle and compare.

Results are appended as they arrive; a pair already judged for the same case content is skipped,
so an interrupted run resumes where it stopped.

**Batches.** A target whose runtime takes several programs per call (``Target.batch``: WebNN's
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
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shlex
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.case.features import features
from conformance.compare import FAILING, for_case, judge_computed_in, judge_outputs
from conformance.compare.silent import DEFAULT_POLICY as SILENT_POLICY
from conformance.compare.silent import apply_policy
from conformance.run.files import write_atomic
from conformance.run.results import Record
from conformance.run.workers import Job, Outcome, Pool
from conformance.runtimes.effective import BY_NAME, narrower, of_dtype, probe_finding
from conformance.specs import SPECS, NotExpressible, Program, translate

ORACLE_TIMEOUT = 600.0


def oracle_for(op: str, attributes: dict, tensors: dict, profile: str, prec: int):
    """Runs in a worker: the oracle on the canonical case (inputs in layout 0, so no `layout`)."""
    import oracles
    attrs = {k: v for k, v in attributes.items() if k != "layout"}
    return oracles.evaluate(op, attrs, tensors, profile=profile, prec=prec)


def oracle_cached(op: str, attributes: dict, tensors: dict, profile: str, prec: int):
    """The oracle's result where its disk cache holds it (reading it computes nothing and cannot
    hang), else None: the job goes to the oracle's worker. A cache that does not read is a miss."""
    import oracles
    attrs = {k: v for k, v in attributes.items() if k != "layout"}
    try:
        return oracles.cached(op, attrs, tensors, profile=profile, prec=prec)
    except Exception:  # noqa: BLE001 - an invalid problem or an unreadable entry: the worker says why
        return None


def effective_of(case, target, reported: dict) -> dict:
    """The configuration one pair ran in: the runtime's own report on its compiled object for this
    call where it names a precision (declared), else the target's precision (its declaration for
    the probe's model, else the probe's reading of a known precision) for a float32 case, else the
    model's type (assumed). Where it is narrower than the model's type, how it rounds: as the
    runtime declares, else to nearest. No runtime can loosen its own bound: what the probe read
    beside that is recorded (``probe``), not used (docs/configuration.md)."""
    reported = dict(reported or {})
    precision = reported.pop("precision", "")
    if precision in BY_NAME:
        source = "declared by the runtime for this call"
    elif case.dtype == "float32" and target.precision in BY_NAME:
        declared = ((target.configuration or {}).get("declared") or {}).get("precision")
        precision = target.precision
        source = ("declared by the runtime for the probe's model" if declared in BY_NAME
                  else "measured by the arithmetic probe")
    else:
        precision, source = of_dtype(case.dtype).name, "assumed: the model's type"
    found = {"precision": precision, "source": source, **reported}
    if narrower(BY_NAME.get(precision), case.dtype):
        found.setdefault("rounding", "nearest")
        finding = probe_finding(target.configuration or {}, precision)
        if finding:
            found["probe"] = finding
    return found


#: the narrower-precision bounds kept for reuse across a case's targets
BOUNDS_KEPT = 256
#: seconds: a pair whose spec may leave elements unspecified is run a second time, in the same
#: worker right after the first, when its first call took at most this (the repeat is what tells
#: computed values from stale memory)
REPEAT_UNDER = 0.5
#: a batch closes when its programs together pass this many bytes (production shapes stay small in
#: number per call: a worker's answer travels through a pipe, WebNN's documents through the page)
BATCH_BYTES = 8 << 20
#: the features of a case whose outputs a spec may leave undefined (oracles/silent.py's points):
#: partial or zero lengths, a non-finite input, an activation whose parameters may have no default
MAY_BE_SILENT = {"sequence_lens=partial", "nan", "inf", "act=scaledtanh", "act=affine"}


def _size(prog: Program) -> int:
    """Bytes of a program's model (its bytes, or its written main file)."""
    model = prog.runtime_input()
    if isinstance(model, (bytes, bytearray)):
        return len(model)
    try:
        return Path(model).stat().st_size
    except (OSError, TypeError):
        return 0


#: why a pair of a batch that runs each program on its own ran alone (``_computes_narrower``)
NARROWER_ALONE = ("its target computes in a precision narrower than its type, so it is not merged (it would only "
                  "run twice); run on its own, in one call with the rest of its batch")


def _computes_narrower(case, target) -> bool:
    """Whether the target's measured precision is narrower than the case's type (OpenVINO's default
    configuration on a bf16 CPU): such a pair fails the spec's bound by design and would be run again
    alone after a merged batch, so its batch runs each program on its own (``NARROWER_ALONE``)."""
    return narrower(BY_NAME.get(target.precision), case.dtype)


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


@dataclass
class RunSummary:
    counts: Counter = field(default_factory=Counter)
    by_target: dict = field(default_factory=lambda: defaultdict(Counter))
    failures: list = field(default_factory=list)
    skipped_pairs: int = 0
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


def repro(case, target) -> str:
    cmd = ["conformance", "run", case.file or ".", "-k", case.id, "--runtime", target.runtime,
           "--device", target.device, "--spec", target.spec]
    if target.plugin:
        cmd += ["--runtime-plugin", target.ref.path]
    return " ".join(shlex.quote(c) for c in cmd)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)[:150]


@functools.cache
def judge_version() -> str:
    """What judging depends on besides the inputs: the oracle's version, its fast path's model
    (production shapes) and the comparison's code (conformance/compare, its policies, this module),
    as a digest."""
    import oracles
    from oracles import fast
    h = hashlib.sha256(f"{oracles.ORACLE_VERSION}+{fast.fingerprint()}".encode())
    here = Path(__file__).resolve().parent.parent
    for path in sorted((here / "compare").glob("*")) + [Path(__file__).resolve(),
                                                        here / "runtimes" / "effective.py"]:
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:12]


class Engine:
    def __init__(self, cases, targets, store, options: Options, progress=None, gate=None, overrides=None,
                 silent_policy=None):
        self.gate = gate                  # record -> gate fields (conformance.gate.classify)
        self.overrides = overrides        # (case id, target id, features) -> tolerance override dict | None
        self.silent_policy = silent_policy  # target id -> {garbage|implausible: fail|report} (expectations)
        self.cases = cases
        self.targets = targets
        self.store = store
        self.opt = options
        self.progress = progress or (lambda n=1: None)
        self.summary = RunSummary()
        # (case index, semantics profile) -> Outcome of the oracle
        self.oracle: dict[tuple[int, str], Outcome] = {}
        # (case index, profile) -> [(target, program, outcome)]
        self.waiting: defaultdict[tuple[int, str], list[tuple[Any, Any, Outcome]]] = defaultdict(list)
        #: runs still to be judged per (case, profile): an oracle result is dropped after its last
        #: one (production shapes make each result hundreds of MB: docs/production.md)
        self.runs_left: Counter[tuple[int, str]] = Counter()
        # (case index, profile, compute, choices) -> oracles.computed_in
        self.bounds: dict[tuple[Any, ...], tuple[dict[str, Any], dict[str, Any]]] = {}
        #: runtime ref -> [(case index, program, target)] waiting to fill a batch: the targets of one
        #: runtime configuration (one worker) share it, so a case's programs for several specs go in
        #: one call (OpenVINO compiles a program that several specs read alike once: openvino.py)
        self.open_batches: dict[Any, list[tuple[int, Program, Any]]] = {}
        self.batch_bytes: dict[Any, int] = {}  # open batch key -> the size of its programs
        self.pool: Any = None               # the pool of this run (a batched pair is run again alone on it)
        self.alone: dict[tuple[int, Any], str] = {}  # (case index, target) -> why a batched pair runs alone
        self._facts: dict[int, tuple[Any, str, frozenset]] = {}  # id(case) -> (case, digest, features)

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
                    and self.gate(rec).get("gate") == "new")

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
                self._receive(outcome)
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
        self.summary.skipped_pairs += len(self.cases) * len(self.targets) - pending
        if late:
            return
        for key in list(self.open_batches):
            yield self._batch_job(key)

    def _batch_job(self, key) -> Job:
        """The open batch ``key`` (a runtime configuration's ref, and whether its programs run each on
        its own) as one job."""
        entries = self.open_batches.pop(key)
        self.batch_bytes.pop(key, None)
        if len(entries) == 1:
            return self._run_job(*entries[0])
        ref, alone = key
        return Job(("batch", ref, entries), "batch",
                   (ref, [(prog.runtime_input(), prog.feeds) for _, prog, _ in entries]) + ((NARROWER_ALONE,) if alone else ()),
                   2 * self.opt.timeout)

    def _alone(self, ci: int, target, prog, why: str) -> None:
        """A batched pair run again on its own (its record says why); its oracle result is kept for it."""
        case = self.cases[ci]
        if case.valid:
            self.runs_left[(ci, SPECS[target.spec].semantics)] += 1
        self.alone[(ci, target)] = why
        self.pool.submit(self._run_job(ci, prog, target))

    def _run_job(self, ci: int, prog, target, repeat: float = 0.0) -> Job:
        """One pair's job: ``prog`` on ``target``, run a second time in the same worker when its
        first call takes at most ``repeat`` seconds."""
        return Job(("run", ci, target, prog), "run", (target.ref, prog.runtime_input(), prog.feeds, repeat),
                   self.opt.timeout)

    def _schedule(self, ci: int, case, todo):
        programs: dict[str, Program | NotExpressible | Exception] = {}
        for spec in sorted({t.spec for t in todo}):
            try:
                programs[spec] = translate(SPECS[spec], case)
            except Exception as exc:  # a translator bug costs its pairs, recorded as a suite error
                programs[spec] = exc
            self._write_program(case, programs[spec])
        runnable = [t for t in todo if not isinstance(programs[t.spec], (NotExpressible, Exception))
                    and case.op not in t.gates]
        if case.valid:
            for t in runnable:
                self.runs_left[(ci, SPECS[t.spec].semantics)] += 1
            for profile in sorted({SPECS[t.spec].semantics for t in runnable}):
                hit = oracle_cached(case.op, case.attributes, case.tensors, profile, self.opt.prec)
                if hit is not None:  # read here: no job, and no worker slot taken from the runtimes
                    self.oracle[(ci, profile)] = Outcome(("oracle", (ci, profile)), "ok", hit)
                    continue
                yield Job(("oracle", (ci, profile)), "call",
                          (oracle_for, (case.op, case.attributes, case.tensors, profile, self.opt.prec)),
                          ORACLE_TIMEOUT)
        for t in todo:
            prog = programs[t.spec]
            if case.op in t.gates:
                self._record(case, t, None, "not-expressible", f"version gate: {t.gates[case.op]}")
            elif isinstance(prog, NotExpressible):
                self._record(case, t, None, "not-expressible", prog.reason)
            elif isinstance(prog, Exception):
                self._record(case, t, None, "error", f"translator failed: {type(prog).__name__}: {prog}")
            else:
                repeat = self.opt.repeat_under if may_leave_unspecified(case) else 0.0
                if t.batch > 1 and self.opt.batch and not repeat:
                    key = (t.ref, _computes_narrower(case, t))
                    self.open_batches.setdefault(key, []).append((ci, prog, t))
                    self.batch_bytes[key] = self.batch_bytes.get(key, 0) + _size(prog)
                    if len(self.open_batches[key]) >= t.batch or self.batch_bytes[key] >= BATCH_BYTES:
                        yield self._batch_job(key)
                    continue
                yield self._run_job(ci, prog, t, repeat)

    def _program_folder(self, case) -> Path:
        return Path(self.store.dir) / "programs" / _slug(f"{case.id}-{self._facts_of(case)[1][:8]}")

    def _write_program(self, case, prog) -> None:
        if isinstance(prog, (NotExpressible, Exception)):
            return
        if not self.opt.write_programs and prog.format == "onnx":
            return
        folder = self._program_folder(case)
        folder.mkdir(parents=True, exist_ok=True)
        SPECS[prog.spec].write(prog, folder)

    def _write_artefacts(self, case, target, prog, artefacts: dict) -> list[str]:
        """What the runtime converted the program into (MNN's model, IREE's MLIR), beside the
        program, named ``<spec>.<target's runtime and device>.<name>`` (pruned with its program)."""
        folder = self._program_folder(case)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, data in sorted(artefacts.items()):
            path = folder / _slug(f"{prog.spec}.{target.runtime}-{target.version}-{target.device}.{name}")
            path.write_bytes(data)
            written.append(str(path.relative_to(self.store.dir)))
        return written

    def _receive(self, outcome) -> None:
        key = outcome.key
        if key[0] == "oracle":
            okey = key[1]
            self.oracle[okey] = outcome
            for args in self.waiting.pop(okey, []):
                self._judge(okey[0], *args)
                self._release(okey)
            return
        if key[0] == "batch":
            return self._unbatch(outcome)
        _, ci, target, prog = key
        self._spent(target, outcome.elapsed)
        case = self.cases[ci]
        okey = (ci, SPECS[target.spec].semantics)
        if case.valid and outcome.status == "ok" and okey not in self.oracle:
            self.waiting[okey].append((target, prog, outcome))
            return
        self._judge(ci, target, prog, outcome)
        if case.valid:
            self._release(okey)

    def _unbatch(self, outcome) -> None:
        """A batch's answer, as one outcome per pair (marked as batched); a batch that crashed, hung
        or failed as a whole sends each of its pairs again alone."""
        _, _, entries = outcome.key
        answers = outcome.value if outcome.status == "ok" else None
        if not isinstance(answers, list) or len(answers) != len(entries):
            why = f"its batch of {len(entries)} ended with {outcome.status}: {outcome.error}"[:300]
            self._spent(entries[0][2], outcome.elapsed)  # one runtime configuration: one runtime
            for ci, prog, target in entries:
                self._alone(ci, target, prog, why)
            return
        for (ci, prog, target), (status, value, error, elapsed, *rest) in zip(entries, answers):
            why = rest[0] if rest else ""
            effective = rest[1] if len(rest) > 1 and rest[1] is not None else outcome.effective
            if why:  # the runtime ran it on its own within the call: recorded as a pair run alone
                self.alone[(ci, target)] = f"in a batch of {len(entries)}: {why}"[:300]
            self._receive(Outcome(("run", ci, target, prog), status, value, error, "", elapsed,
                                  effective, batched=0 if why else len(entries)))

    def _spent(self, target, seconds: float) -> None:
        self.summary.runtime_by[target.runtime] += seconds

    def _release(self, okey) -> None:
        """One run of (case, profile) judged: the oracle result goes with the last one."""
        self.runs_left[okey] -= 1
        if self.runs_left[okey] <= 0:
            self.runs_left.pop(okey, None)
            self.oracle.pop(okey, None)

    def _judge(self, ci: int, target, prog, outcome) -> None:
        case = self.cases[ci]
        extra = {"notes": list(prog.notes) + list(case.notes), "program": prog.files.get("model", ""),
                 "elapsed_s": round(outcome.elapsed, 6)}
        if outcome.output.strip():  # what the runtime printed during the call (its tail), not the terminal's
            extra["runtime_output"] = outcome.output
        if outcome.artefacts:
            extra["artefacts"] = self._write_artefacts(case, target, prog, outcome.artefacts)
        if outcome.status in ("ok", "error", "garbage"):
            extra["effective"] = effective_of(case, target, outcome.effective)
        if outcome.status == "crash":
            return self._settle(outcome, ci, target, prog, "crash", outcome.error, extra)
        if outcome.status == "timeout":
            return self._settle(outcome, ci, target, prog, "timeout", outcome.error, extra)
        if outcome.status == "garbage":  # outputs that are not arrays: wrong, whatever the case
            return self._settle(outcome, ci, target, prog, "fail" if case.valid else "accepted-invalid",
                                outcome.error, extra)
        if outcome.status == "error":
            if case.valid:
                return self._settle(outcome, ci, target, prog, "rejected", f"rejected a valid case: {outcome.error}",
                                    extra)
            return self._settle(outcome, ci, target, prog, "pass", f"rejected as the spec requires "
                                f"({case.violates}): {outcome.error}", extra)
        if not case.valid:
            return self._settle(outcome, ci, target, prog, "accepted-invalid",
                                f"ran a case the spec forbids ({case.violates}) and returned "
                                f"{len(outcome.value)} outputs", extra)
        oracle = self.oracle[(ci, SPECS[target.spec].semantics)]
        if oracle.status != "ok":
            return self._settle(outcome, ci, target, prog, "error", f"oracle failed: {oracle.error}", extra)
        res: Any = oracle.value  # the oracle's OracleResult (oracles is imported lazily)
        again = outcome.again if isinstance(outcome.again, list) else None
        tol = for_case(case, self.opt.tolerance,
                       self.overrides(case.id, target.id, self._facts_of(case)[2]) if self.overrides else None)
        j = judge_outputs(case, prog, outcome.value, res, tol, repeat=again)
        if isinstance(outcome.again, str):
            extra["repeat"] = outcome.again
        verdict, message = apply_policy(j.verdict, j.message, j.silent, self._silent_policy(target))
        extra.update({
            "max_abs_err": j.max_abs_err, "max_rel_err": j.max_rel_err, "max_ulp": j.max_ulp,
            "ratio": j.ratio, "worst": j.worst, "reading": j.reading, "unspecified": j.unspecified,
            "unspecified_values": j.unspecified_values, "tolerance": j.tolerance or tol.to_json(),
            "worst_elements": j.worst_elements, "error_by_step": j.error_by_step,
            "oracle": dict(res.certificate, profile=SPECS[target.spec].semantics, readings=[r.name for r in res.readings],
                           ambiguities=list(res.ambiguities), precision=dict(res.precision)),
        })
        if j.silent is not None:
            extra["silent"] = j.silent
        effective = extra["effective"]
        compute = BY_NAME.get(effective["precision"])
        if narrower(compute, case.dtype) and tol.derived:
            extra["declared"] = self._declared(ci, case, target, prog, outcome.value, res, compute,
                                               effective.get("accumulation"), effective.get("rounding", "faithful"))
        self._settle(outcome, ci, target, prog, verdict, message, extra)

    def _settle(self, outcome, ci: int, target, prog, verdict: str, message: str, extra=None) -> None:
        """Record a judged pair, or, when it came from a batch and is not ``pass``, run it again
        alone first (a batch may neither create nor hide a divergence)."""
        extra = dict(extra or {})
        if outcome.batched:
            if verdict != "pass":
                return self._alone(ci, target, prog, f"in a batch of {outcome.batched} it was {verdict}: "
                                                     f"{message}"[:300])
            extra["batch"] = {"size": outcome.batched}
        elif (ci, target) in self.alone:
            extra["batch"] = {"alone": self.alone.pop((ci, target))}
        self._record(self.cases[ci], target, prog, verdict, message, extra)

    def _silent_policy(self, target) -> dict:
        return dict(SILENT_POLICY, **(self.silent_policy(target.id) if self.silent_policy else {}))

    def _declared(self, ci: int, case, target, prog, outputs, res, compute, accumulation, rounding) -> dict:
        """The pair judged against the precision it computed in (narrower than the model's type):
        what a correct implementation in that arithmetic may do."""
        import oracles
        profile = SPECS[target.spec].semantics
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}

        def bounds_for(choices):
            key = (ci, profile, compute.dtype, accumulation, rounding, tuple(sorted(choices.items())))
            if key not in self.bounds:
                if len(self.bounds) >= BOUNDS_KEPT:
                    self.bounds.clear()
                self.bounds[key] = oracles.computed_in(case.op, attrs, case.tensors, profile, choices,
                                                       compute.dtype, accumulation, rounding)
            return self.bounds[key]
        try:
            j = judge_computed_in(case, prog, outputs, res, bounds_for)
        except Exception as exc:  # noqa: BLE001 - the second judgement costs itself, not the verdict
            return {"precision": compute.name, "verdict": "error", "message": f"{type(exc).__name__}: {exc}"}
        tol = j.tolerance or {}
        return {"precision": compute.name, "verdict": j.verdict, "ratio": j.ratio,
                "max_abs_err": j.max_abs_err, "message": j.message, "tolerance": tol.get("source", ""),
                **{k: tol[k] for k in ("judged_by", "rigorous_ratio") if k in tol}}

    def _record(self, case, target, prog, verdict, message, extra=None) -> None:
        _, digest, tokens = self._facts_of(case)
        record = Record.of(case, target, SPECS.get(target.spec), tokens, self.pair_digest(case, target, digest, tokens),
                           digest)
        record.verdict, record.message, record.repro = verdict, message, repro(case, target)
        extra = dict(extra or {})
        for name in ("max_abs_err", "max_ulp", "tolerance"):
            if name in extra:
                setattr(record, name, extra.pop(name))
        record.extra = extra
        rec = record.as_dict()
        if self.gate:
            rec.update(self.gate(rec))
        self.store.append(rec)
        self.summary.counts[verdict] += 1
        self.summary.by_target[target.id][verdict] += 1
        if verdict in FAILING:
            self.summary.failures.append(rec)
        self.progress(1)


def write_run_info(out_dir: Path, info: dict) -> None:
    path = Path(out_dir) / "run.json"
    write_atomic(path, json.dumps(info, indent=2, default=str) + "\n")
