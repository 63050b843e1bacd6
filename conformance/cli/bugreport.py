"""`conformance bugreport`: verified standalone bug reports for a run's divergence clusters, one case ×
target of a run, or a fuzzer's finding; `--expectation` prints the expectations entry a cluster needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

import sys
from pathlib import Path

import click

from conformance.cli.options import DEFAULT_CASES, EXIT_FAILURES, EXIT_OK, runtime_plugin_option


class Run:
    """A run's results (results.jsonl, clusters.json) and the cases its records name."""

    def __init__(self, records: list[Record], clusters: list | None):
        self.records = records
        self.clusters = clusters or []
        self.by_pair = {(r.case, r.target): r for r in self.records}
        self._files: dict = {}

    @classmethod
    def load(cls, path: Path) -> Run:
        from conformance.report.merge import ReportInputError, load
        try:
            loaded = load([path])
        except ReportInputError as exc:
            raise click.UsageError(str(exc)) from exc
        return cls(loaded.records, loaded.clusters)

    def case(self, record: Record):
        """The case a record names, read from its case file; a summary line of a known divergence
        (``--artifacts failing``) names no file, and its case is looked up in ./cases (every tier).
        None where neither has it."""
        from conformance.case.load import load_file, load_paths
        path = str(record.file or "")
        if path not in self._files:
            if path:
                cases, _ = load_file(path) if Path(path).is_file() else ([], [])
            else:
                cases, _ = load_paths([p for p in DEFAULT_CASES if Path(p).is_dir()], tier="all")
            self._files[path] = {c.id: c for c in cases}
        return self._files[path].get(record.case)

    def cluster(self, cluster_id: str) -> dict:
        found = next((c for c in self.clusters if c.get("id") == cluster_id), None)
        if found is None:
            known = ", ".join(str(c.get("id")) for c in self.clusters) or "none (the run has no clusters.json)"
            raise click.UsageError(f"no cluster {cluster_id!r} in the run; its clusters: {known}")
        return found


def plugins_of(records: list[Record]) -> tuple:
    """The runtime plugins a run's records were made with (their repro commands name them)."""
    import shlex
    found = []
    for record in records:
        if record.plugin and "--runtime-plugin" in str(record.repro):
            words = shlex.split(record.repro)
            found += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--runtime-plugin"]
    return tuple(dict.fromkeys(found))


def subjects_of(run: Run, cluster_ids, case_id, target_id, every: bool, log, errors: list | None = None) -> list:
    """The subjects the options name: clusters (default: the new ones; --all: every real one) or a pair.
    A cluster that cannot be made one (its cases cannot be read, ...) is logged and added to ``errors``."""
    from conformance.bugreport.subject import SubjectError, from_cluster, from_pair, is_real
    from conformance.report.causes import cluster_status
    if case_id or target_id:
        if not (case_id and target_id):
            raise click.UsageError("--case and --target go together")
        record = run.by_pair.get((case_id, target_id))
        if record is None:
            raise click.UsageError(f"the run has no verdict of {case_id} on {target_id}")
        case = run.case(record)
        if case is None:
            raise click.UsageError(f"{record.file}: the case file of {case_id} cannot be read")
        try:
            return [from_pair(record, case)]
        except SubjectError as exc:
            raise click.UsageError(str(exc)) from exc
    chosen = [run.cluster(i) for i in cluster_ids] if cluster_ids else [
        c for c in run.clusters if every or cluster_status(c, run.by_pair)["status"] == "new"]
    subjects = []
    for cluster in chosen:
        real, why = is_real(cluster, run.by_pair)
        if not real and not cluster_ids:
            log(f"{cluster['id']} ({cluster['runtime']}): skipped, {why}")
            continue
        try:
            subjects.append(from_cluster(cluster, run.by_pair, run.case))
        except SubjectError as exc:
            log(f"error: {exc}")
            if errors is not None:
                errors.append(f"{cluster['id']}: {exc}")
    return subjects


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
    head, _, spec = wanted.rpartition("@")
    parts = head.split("/")
    base, config = "/".join(parts[:2]), "/".join(parts[2:]).split("→")[0]
    found = [t for t in targets if t.spec == spec and t.id.startswith((base + "/", base + "@"))]
    return next((t for t in found if (t.config or "default") == (config or "default")), None)


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
                  log=click.echo) -> tuple[list, list]:
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


@click.command("bugreport")
@click.argument("results", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("--cluster", "cluster_ids", multiple=True, metavar="ID",
              help="A cluster of the run's clusters.json (repeatable). Default: every new cluster.")
@click.option("--all", "every", is_flag=True, help="Every real divergence cluster, the known ones included.")
@click.option("--case", "case_id", default=None, help="A case id of the run (with --target).")
@click.option("--target", "target_id", default=None, help="A target id of the run (with --case).")
@click.option("--finding", "finding", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A fuzzer's finding file (conformance fuzz writes them), instead of RESULTS.")
@click.option("--expectation", is_flag=True,
              help="Print the expectations entry that would cover each cluster instead of writing reports.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the report folders go (default: RESULTS/bugreports, or reports/bugreports).")
@click.option("--verify", "mode", type=click.Choice(("auto", "venv", "isolated")), default="auto", show_default=True,
              help="How repro.py is run before a report is written: a fresh virtual environment with only the pinned "
                   "requirements (venv), this interpreter with the suite's packages hidden (isolated), or the first "
                   "that can be made (auto).")
@runtime_plugin_option
@click.option("--timeout", default=120.0, show_default=True, type=float, help="Seconds one runtime call may take.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 64), help="Worker processes.")
def bugreport_command(results, cluster_ids, every, case_id, target_id, finding, expectation, out_dir, mode, plugins,
                      timeout, jobs):
    """Write a verified bug report folder per divergence of RESULTS (a results.jsonl, or the folder
    `conformance run --out` wrote): the smallest failing case, its program, inputs and expected
    outputs with the allowed error per element, repro.py, requirements.txt and ISSUE.md. A report
    is written only when repro.py reproduces the divergence in a fresh interpreter; one that does
    not is an error with the reason (exit status 1)."""
    from conformance.bugreport.expectation import draft, render
    from conformance.bugreport.subject import SubjectError, from_finding
    log = click.echo
    unreadable: list = []  # clusters that could not be made a report's subject: an error, exit 1
    if finding is not None:
        if results or cluster_ids or case_id or target_id or expectation:
            raise click.UsageError("--finding stands alone (no RESULTS, --cluster, --case, --target or --expectation)")
        try:
            subjects = [from_finding(finding)]
        except SubjectError as exc:
            raise click.UsageError(str(exc)) from exc
        out = out_dir or Path("reports/bugreports")
    else:
        if results is None:
            raise click.UsageError("name the RESULTS of a run (or --finding FILE)")
        run = Run.load(results)
        if expectation:
            chosen = [run.cluster(i) for i in cluster_ids] if cluster_ids else run.clusters
            for cluster in chosen:
                pairs = [run.by_pair[(c, t)] for t, ids in cluster["cases_by_target"].items() for c in ids
                         if (c, t) in run.by_pair]
                click.echo(f"# {cluster['id']}: {cluster['runtime']} {cluster['verdict']}, {cluster.get('size')} cases")
                click.echo(render(draft(cluster, pairs)))
            sys.exit(EXIT_OK)
        subjects = subjects_of(run, cluster_ids, case_id, target_id, every, log, unreadable)
        plugins = tuple(dict.fromkeys(plugins + plugins_of(run.records)))
        base = results if results.is_dir() else results.parent
        out = out_dir or base / "bugreports"
    if not subjects and unreadable:
        log(f"error: no report written: {len(unreadable)} cluster(s) could not be made one", err=True)
        sys.exit(EXIT_FAILURES)
    if not subjects:
        log("nothing to report: " + ("no divergence cluster to report in the run" if every
                                     else "no new divergence cluster (--all reports the known ones too)"))
        sys.exit(EXIT_OK)
    written, refused = write_reports(subjects, out, plugins, mode, timeout, jobs, log)
    for subject, why in refused:
        log(f"error: {subject.name} ({subject.target_id}): {why}", err=True)
    log(f"{len(written)} report{'s' if len(written) != 1 else ''} written in {out}"
        + (f", {len(refused)} refused" if refused else "")
        + (f", {len(unreadable)} cluster(s) that could not be made one" if unreadable else ""))
    sys.exit(EXIT_FAILURES if refused or unreadable else EXIT_OK)
