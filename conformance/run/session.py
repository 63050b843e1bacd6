"""One run session: cases × targets in a pool of workers, the ablation, the gate, the reports.

``conformance run``, ``conformance history`` (each release's run and its repeats) and any program
that runs the suite call :func:`run_session` with a :class:`RunConfig`; what the command line adds
(option parsing, target discovery, the cluster, signals) stays in conformance/cli/run.py. The exit
status is the one docs/gate.md gives: 0, 1 for a new failure, 2 for a case-file error.
"""

from __future__ import annotations

import datetime
import platform
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.run.engine import REPEAT_UNDER, Options

EXIT_OK, EXIT_FAILURES, EXIT_BAD_INPUT = 0, 1, 2


@dataclass
class RunConfig:
    """Everything a run session needs besides its cases and targets: ``conformance run``'s options."""

    out_dir: Path
    jobs: int = 1
    timeout: float = 60.0
    fresh: bool = False             # start over instead of resuming the results in out_dir
    prec: int = 128                 # the oracle's precision in bits
    tolerance: str | None = None    # a named policy of compare/policies.yaml; None: the derived bound
    repeat_under: float = REPEAT_UNDER
    batch: bool = True
    expectations: Any = None        # conformance.gate.Expectations, or None
    baseline: Any = None            # conformance.gate.baseline.Baseline, or None
    ablation: bool = True
    ablation_budget: int = 4000
    ablation_time: float = 600.0
    memory_limit: int | None = None  # bytes per worker; None: the pool's default
    quiet: bool = False
    verbose: bool = False
    artifacts: str = "failing"
    cluster: Any = None             # an open conformance.cluster.client grid, or None for a local pool
    sliced: bool = False            # the run covers part of what its expectations were written for
    started: float | None = None    # time.monotonic() when the command started (the summary's time)
    warn_unused: bool = True        # print the gate's audit (a history audits once, over every release)
    configs: tuple = ()             # --config values: a named sliced form runs on every case
    #: the cases whose representative slice the sliced forms run on (a history's repeats: the release's
    #: whole selection); None: the run's own cases
    slice_of: list | None = None
    write_programs: bool = True
    extra: dict = field(default_factory=dict)  # more facts for run.json

    def options(self, cases, targets) -> Options:
        """The engine's options for these cases and targets (the sliced forms' cases included)."""
        options = Options(out_dir=Path(self.out_dir), jobs=self.jobs, timeout=self.timeout, prec=self.prec,
                          tolerance=self.tolerance, repeat_under=self.repeat_under, batch=self.batch,
                          write_programs=self.write_programs)
        options.slice_ids = form_slice(cases if self.slice_of is None else self.slice_of, targets, self.configs)
        return options

    def gate(self):
        """The pair-by-pair gate of the expectations and the baseline, or None."""
        if not (self.expectations or self.baseline):
            return None
        from conformance.gate import classify
        expectations, base = self.expectations, self.baseline
        return lambda record: classify(record, expectations, base)   # the engine's Record


def run_session(cases, targets, config: RunConfig, console=None, load_errors=(), skipped=()) -> int:
    """Run ``cases`` on ``targets`` under ``config`` inside out_dir's lock, and write the results, the
    clusters, the gate's judgement and the reports there: the exit status."""
    from rich.console import Console

    from conformance.files import OutLock
    console = console or Console(stderr=False)
    with OutLock(config.out_dir):
        return _session(console, list(cases), list(load_errors), list(targets), list(skipped), config)


def _session(console, cases, load_errors, targets, skipped, config: RunConfig) -> int:
    import json

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from conformance.compare.verdicts import FAILING
    from conformance.files import write_atomic
    from conformance.isolation.workers import Pool
    from conformance.report import terminal
    from conformance.report.artifacts import finish as finish_artifacts
    from conformance.results import ResultStore, records_of
    from conformance.run.ablation import ABLATED_VERDICTS, ablate
    from conformance.run.engine import Engine, write_run_info
    from conformance.run.probe import PROBE_TIMEOUT, measured
    from conformance.runtimes.effective import host
    out_dir, quiet, cluster = Path(config.out_dir), config.quiet, config.cluster
    expectations, base = config.expectations, config.baseline
    store = ResultStore(out_dir, resume=not config.fresh)
    write_atomic(out_dir / "load_errors.json", json.dumps([e.to_json() for e in load_errors], indent=2))
    with cluster.pool() if cluster else Pool(config.jobs, memory_limit=config.memory_limit) as pool:
        # each target's effective configuration (a cluster's workers measured theirs); a runtime that
        # hangs on the probe costs its timeout once. Measured in this thread, never a helper one: a
        # worker dies with the thread that started it (PR_SET_PDEATHSIG), and the probe's workers
        # go on to run the pairs
        if not cluster:
            targets = measured(targets, pool, timeout=min(config.timeout, PROBE_TIMEOUT), folder=out_dir)
        options = config.options(cases, targets)
        info = {
            "suite": __version__, "started": datetime.datetime.now(datetime.UTC).isoformat(),
            "argv": sys.argv, "python": platform.python_version(), "platform": platform.platform(),
            "host": host(), "cases": len(cases), "targets": [t.to_json() for t in targets],
            "skipped_runtimes": [s.__dict__ for s in skipped], "load_errors": len(load_errors),
            "memory_limit": pool.memory_limit, **({"cluster": cluster.describe()} if cluster else {}),
            "expectations": sorted({str(e.where.file) for e in expectations.entries}) if expectations else [],
            **config.extra,
        }
        write_run_info(out_dir, info)
        if not quiet:
            print_configurations(console, targets)
        for mine, theirs in (base.not_comparable([t.id for t in targets]) if base else ()):
            console.print(f"warning: the baseline has {theirs} where this run has {mine}: their configurations "
                          f"differ, so those pairs are not compared with the baseline (every failure there counts "
                          f"as new)", highlight=False, markup=False, soft_wrap=True)
        with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeRemainingColumn(), console=console, disable=quiet, transient=False) as bar:
            engine = Engine(cases, targets, store, options, gate=config.gate(),
                            overrides=expectations.tolerance_for if expectations else None,
                            silent_policy=expectations.silent_policy_for if expectations else None)
            task = bar.add_task("running", total=engine.count_pending())
            engine.progress = lambda n=1: bar.advance(task, n)
            try:
                summary = engine.run(pool)
            finally:
                store.close()
        read = records_of(store.latest())   # the ablation, the gate and the reports read Records
        clusters, ablation_s = None, 0.0
        if config.ablation and any(r.verdict in ABLATED_VERDICTS for r in read):
            if not quiet:
                console.print("ablating the failing groups to name their causes ...")
            started = time.perf_counter()
            clusters = ablate(read, cases, targets, pool, out_dir, budget=config.ablation_budget,
                              timeout=config.timeout, seconds=config.ablation_time)
            ablation_s = time.perf_counter() - started
            if not quiet:  # its share of the run: what naming the causes costs
                share = ablation_s / max(summary.wall_s + ablation_s, 1e-9)
                console.print(f"ablation: {ablation_s:.1f} s, {share:.0%} of the run", highlight=False)
    # judge the whole selection, resumed pairs included, under today's expectations, each pair with
    # its cluster's cause (the entry naming it preferred), and audit the entries (conformance/gate/audit.py)
    from conformance.gate import regate
    from conformance.gate.audit import audit
    if expectations:
        for entry in expectations.entries:
            entry.matched = 0
    wanted_cases, wanted_targets = {c.id for c in cases}, {t.id for t in targets}
    records = regate([r for r in read if r.case in wanted_cases and r.target in wanted_targets],
                     expectations, base, clusters)
    checked = audit(records, expectations, clusters)
    new = [r for r in records if r.gate in ("", "new") and r.verdict in FAILING]
    info.update({"finished": datetime.datetime.now(datetime.UTC).isoformat(),
                 "counts": dict(Counter(r.verdict for r in records)),
                 "gate": dict(Counter(r.gate for r in records)),
                 "wall_s": summary.wall_s, "runtime_s": summary.runtime_s, "ablation_s": round(ablation_s, 3),
                 "gate_audit": checked.to_json()})
    write_run_info(out_dir, info)
    gated = {(r.case, r.target): r for r in records}
    written = finish_artifacts(out_dir, [gated.get((r.case, r.target), r) for r in read], config.artifacts)
    write_reports([written.get(pair, r) for pair, r in gated.items()], info, out_dir, clusters, config.artifacts)
    terminal.summary(console, records, load_errors, skipped, out_dir, ran=sum(summary.counts.values()),
                     resumed=summary.skipped_pairs,
                     wall_s=time.monotonic() - config.started if config.started else summary.wall_s,
                     audit=checked if config.warn_unused else None, sliced=config.sliced, clusters=clusters,
                     verbosity=-1 if quiet else (1 if config.verbose else 0))
    if summary.outside_slice:
        exporters = (" and of the torch exporters outside cases/torch/ (docs/converters.md)"
                     if any(getattr(t, "converter", "") for t in targets) else "")
        console.print(f"{summary.outside_slice} pairs of session=reused, threads=4 and relations=on targets{exporters} "
                      f"left out: they run on the representative slice ({len(options.slice_ids or ())} case(s) "
                      f"covering every op and feature; docs/forms.md); naming a form in --config runs it on "
                      f"every case",
                      highlight=False, soft_wrap=True)
    return EXIT_BAD_INPUT if load_errors else EXIT_FAILURES if new else EXIT_OK


def form_slice(cases, targets, configs) -> frozenset | None:
    """The case ids the sliced execution forms run on (conformance/run/forms.py ``representative``),
    or None (every case) where no target is in one, or ``--config`` names a sliced form."""
    from conformance.converters.targets import sliced as converter_sliced
    from conformance.runtimes.forms import BY_KEY, sliced
    from conformance.selection import parse_config
    named = {key for value in configs for key in parse_config(value)}
    if any(BY_KEY[k].sliced for k in named if k in BY_KEY) or not any(sliced(t.config) or converter_sliced(t)
                                                                        for t in targets):
        return None
    from conformance.run.forms import representative
    return representative(cases)


def print_configurations(console, targets) -> None:
    """The host, and each runtime's measured configuration (once per runtime, not per spec)."""
    from rich.markup import escape

    from conformance.runtimes.effective import describe_host, host
    from conformance.runtimes.effective import summary as configuration_summary
    console.print(f"host: {escape(describe_host(host()))}", highlight=False, soft_wrap=True)
    seen = set()
    for t in targets:
        if t.ref in seen:
            continue
        seen.add(t.ref)
        name = t.name.without_spec
        console.print(f"  {escape(name)}: {escape(configuration_summary(t.configuration))}", highlight=False,
                      soft_wrap=True)


def write_reports(records: list, info: dict, out_dir: Path, clusters, artifacts: str = "failing") -> None:
    """Every run writes the HTML report, JUnit XML and the Markdown summary beside its results."""
    from conformance.report.html import render
    from conformance.report.junit import write_junit
    from conformance.report.markdown import write_markdown
    info = dict(info, results=str(out_dir / "results.jsonl"))
    render(records, info, out_dir, clusters, artifacts)
    write_junit(records, out_dir / "junit.xml")
    write_markdown(records, info, out_dir / "summary.md", clusters)
