"""One bug report session: verified standalone reports for a run's divergence clusters, one case ×
target of a run, or a fuzzer's finding; or the expectations entries a run's clusters need
(docs/bugreports.md).

``conformance bugreport`` builds a :class:`BugreportConfig` from its options and calls
:func:`bugreport_session`; ``conformance report --bugreports`` calls :func:`new_cluster_reports`.
What they print goes through ``log``, called as ``log(text)`` or ``log(text, err=True)`` for an
error (``click.echo``'s signature; :func:`echo` by default).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.bugreport.source import CORPUS, Run, plugins_of, subjects_of
from conformance.runtimes.configuration import TargetName

#: the exit statuses (docs/bugreports.md, "`conformance bugreport`"): 1 where a report was refused
EXIT_OK, EXIT_FAILURES = 0, 1
#: where a finding's report goes without --out
FINDING_OUT = Path("reports/bugreports")


def echo(text: str = "", err: bool = False) -> None:
    """A line on standard output, or on standard error for an error."""
    print(text, file=sys.stderr if err else sys.stdout, flush=True)


@dataclass
class BugreportConfig:
    """Everything a bug report session needs: ``conformance bugreport``'s options, read. Either
    ``results`` (a results.jsonl, or the folder of one) or ``finding`` (a fuzzer's finding file)."""

    results: Path | None = None
    finding: Path | None = None
    cluster_ids: tuple = ()           # clusters of the run's clusters.json; none: every new one
    every: bool = False               # --all: every real cluster, the known ones included
    case_id: str | None = None        # one case × target of the run (with target_id)
    target_id: str | None = None
    expectation: bool = False         # print the expectations entries instead of writing reports
    out_dir: Path | None = None       # default: RESULTS/bugreports, or reports/bugreports for a finding
    mode: str = "auto"                # how repro.py is verified: auto, venv or isolated
    plugins: tuple = ()               # runtime plugins (MOD:ATTR), besides those the run's records name
    timeout: float = 120.0
    jobs: int = 1
    corpus: tuple = CORPUS            # where a summary line's case is looked up


def bugreport_session(config: BugreportConfig, log: Callable = echo) -> int:
    """The reports (or the expectations entries) ``config`` asks for: the exit status, 1 where a
    report was refused or a cluster could not be made one (docs/bugreports.md). What the run or
    the finding does not have raises :class:`~conformance.bugreport.subject.SubjectError`, a results
    path that holds no results :class:`~conformance.report.merge.ReportInputError`."""
    from conformance.bugreport.expectation import draft, render
    from conformance.bugreport.subject import from_finding
    unreadable: list = []  # clusters that could not be made a report's subject: an error, exit 1
    plugins = tuple(config.plugins)
    if config.finding is not None:
        subjects = [from_finding(config.finding)]
        out = config.out_dir or FINDING_OUT
    else:
        if config.results is None:
            raise ValueError("a bug report session needs results or a finding")
        run = Run.load(config.results, config.corpus)
        if config.expectation:
            chosen = [run.cluster(i) for i in config.cluster_ids] if config.cluster_ids else run.clusters
            for cluster in chosen:
                pairs = [run.by_pair[(c, t)] for t, ids in cluster["cases_by_target"].items() for c in ids
                         if (c, t) in run.by_pair]
                log(f"# {cluster['id']}: {cluster['runtime']} {cluster['verdict']}, {cluster.get('size')} cases")
                log(render(draft(cluster, pairs)))
            return EXIT_OK
        subjects = subjects_of(run, config.cluster_ids, config.case_id, config.target_id, config.every, log,
                               unreadable)
        plugins = tuple(dict.fromkeys(plugins + plugins_of(run.records)))
        base = config.results if config.results.is_dir() else config.results.parent
        out = config.out_dir or base / "bugreports"
    if not subjects and unreadable:
        log(f"error: no report written: {len(unreadable)} cluster(s) could not be made one", err=True)
        return EXIT_FAILURES
    if not subjects:
        log("nothing to report: " + ("no divergence cluster to report in the run" if config.every
                                     else "no new divergence cluster (--all reports the known ones too)"))
        return EXIT_OK
    written, refused = write_reports(subjects, out, plugins, config.mode, config.timeout, config.jobs, log)
    for subject, why in refused:
        log(f"error: {subject.name} ({subject.target_id}): {why}", err=True)
    log(f"{len(written)} report{'s' if len(written) != 1 else ''} written in {out}"
        + (f", {len(refused)} refused" if refused else "")
        + (f", {len(unreadable)} cluster(s) that could not be made one" if unreadable else ""))
    return EXIT_FAILURES if refused or unreadable else EXIT_OK


def new_cluster_reports(records: list, clusters: list | None, out: Path, log: Callable = echo,
                        corpus: tuple = CORPUS) -> list:
    """``conformance report --bugreports``: a report per new cluster of these records, in
    OUT/bugreports; the refusals (printed)."""
    subjects = subjects_of(Run(records, clusters, corpus), (), None, None, False, log)
    if not subjects:
        log("bug reports: no new divergence cluster")
        return []
    written, refused = write_reports(subjects, out / "bugreports", plugins_of(records), log=log)
    for subject, why in refused:
        log(f"error: bug report {subject.name} ({subject.target_id}): {why}", err=True)
    log(f"bug reports: {len(written)} written in {out / 'bugreports'}"
        + (f", {len(refused)} refused" if refused else ""))
    return refused


def targets_for(subjects, plugins, timeout: float, pool):
    """The targets the subjects name, found and measured on this machine: {id: Target}."""
    from conformance.run.probe import PROBE_TIMEOUT, measured
    from conformance.selection import select_targets
    found, skipped, _ = select_targets((), plugins, (), ())
    found = [t for t in found if any(s.target_id.startswith((t.runtime + "-", t.runtime + "/")) for s in subjects)]
    return {t.id: t for t in measured(found, pool, timeout=min(timeout, PROBE_TIMEOUT))}, skipped


def same_target(wanted: str, targets):
    """The target here that ``wanted`` names up to its configuration's measured part
    (``precision=default`` for ``precision=default→bf16``; an id without a configuration, as ids were
    written before configurations were named, for the default one)."""
    name = TargetName.parse(wanted)
    found = [t for t in targets if (t.name.head, t.device, t.spec, t.converter)
             == (name.head, name.device, name.spec, name.config.converter)]
    return next((t for t in found if t.setup.plain == name.config.plain), None)


def plugin_of(target) -> dict | None:
    """A plugin target's module, as repro.py imports it."""
    if not target.plugin:
        return None
    import importlib.util
    module = target.ref.path.partition(":")[0]
    added = target.ref.cwd and target.ref.cwd not in sys.path
    if added:
        sys.path.append(target.ref.cwd)
    try:
        spec = importlib.util.find_spec(module)
    finally:
        if added:
            sys.path.remove(target.ref.cwd)
    return {"path": target.ref.path, "kwargs": target.ref.kwargs, "file": spec.origin if spec else ""}


def write_reports(subjects, out: Path, plugins=(), mode: str = "auto", timeout: float = 120.0, jobs: int = 1,
                  log: Callable = echo) -> tuple[list, list]:
    """Every subject's report under ``out``: (the written bundles' index entries, [(subject, reason)] refused)."""
    from conformance.bugreport.bundle import BundleError, make, write_index
    from conformance.bugreport.files import NotReportable
    from conformance.isolation.workers import Pool
    written, refused = [], []
    with Pool(jobs) as pool:
        targets, skipped = targets_for(subjects, plugins, timeout, pool)
        for subject in subjects:
            target = targets.get(subject.target_id) or same_target(subject.target_id, targets.values())
            if target is not None and target.id != subject.target_id:
                log(f"  {subject.name}: {subject.target_id} is not a target here; using {target.id} (the same runtime, "
                    f"version, device and spec; its configuration as measured here)")
                subject.target_id = target.id
            if target is None:
                why = "; ".join(f"{s.runtime}: {s.reason}" for s in skipped) or "not among this machine's targets"
                refused.append((subject, f"its target {subject.target_id} is not present here ({why})"))
                continue
            try:
                bundle = make(subject, target, pool, out, mode, timeout, plugin_of(target), log=log)
            except (BundleError, NotReportable) as exc:
                refused.append((subject, str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - a suite error costs this report, not the others
                import traceback
                traceback.print_exc()
                refused.append((subject, f"the suite failed making it (a suite bug to report): "
                                         f"{type(exc).__name__}: {exc}"))
                continue
            check = bundle.verification
            assert check is not None  # make() returns verified bundles only
            entry = {"folder": bundle.folder.name, "cluster": (subject.cluster or {}).get("id"), "kind": subject.kind,
                     "cause": subject.cause,
                     "case": bundle.ran.case.id, "source_cases": [c.id for c in subject.cases][:50],
                     "target": subject.target_id, "reproduced": check.reproduced, "how": check.how,
                     "bytes": bundle.size()}
            written.append(entry)
            log(f"wrote {bundle.folder} ({entry['bytes'] / 1024:.0f} KiB; reproduced in a fresh "
                f"{'virtual environment' if check.how == 'venv' else 'interpreter with the suite hidden'})")
    entries = written + [{"folder": None, "cluster": (s.cluster or {}).get("id"), "target": s.target_id,
                          "case": s.cases[0].id if s.cases else "", "refused": why} for s, why in refused]
    if entries:
        write_index(out, entries)
    return written, refused
