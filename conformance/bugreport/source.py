"""What bug reports are made from: a run's results (results.jsonl, clusters.json), the cases its
records name, the runtime plugins they were made with, and the subjects a command asks for (the
new clusters, every real one, the named ones, or one case × target)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

from pathlib import Path

from conformance.bugreport.subject import SubjectError

#: where a case a record names without its file is looked up: the corpus (``conformance run``'s default)
CORPUS = ("cases",)


class Run:
    """A run's results (results.jsonl, clusters.json) and the cases its records name; ``corpus``,
    the folders a summary line's case is looked up in."""

    def __init__(self, records: list[Record], clusters: list | None, corpus: tuple = CORPUS):
        self.records = records
        self.clusters = clusters or []
        self.corpus = tuple(corpus)
        self.by_pair = {(r.case, r.target): r for r in self.records}
        self._files: dict = {}

    @classmethod
    def load(cls, path: Path, corpus: tuple = CORPUS) -> Run:
        """The run whose results ``path`` is (a results.jsonl, or the folder of one); a path that holds
        none raises :class:`~conformance.report.merge.ReportInputError`."""
        from conformance.report.merge import load
        loaded = load([path])
        return cls(loaded.records, loaded.clusters, corpus)

    def case(self, record: Record):
        """The case a record names, read from its case file; a summary line of a known divergence
        (``--artifacts failing``) names no file, and its case is looked up in the corpus (every tier).
        None where neither has it."""
        from conformance.case.load import load_file, load_paths
        path = str(record.file or "")
        if path not in self._files:
            if path:
                cases, _ = load_file(path) if Path(path).is_file() else ([], [])
            else:
                cases, _ = load_paths([p for p in self.corpus if Path(p).is_dir()], tier="all")
            self._files[path] = {c.id: c for c in cases}
        return self._files[path].get(record.case)

    def cluster(self, cluster_id: str) -> dict:
        """The cluster of that id; one the run does not have raises :class:`SubjectError`."""
        found = next((c for c in self.clusters if c.get("id") == cluster_id), None)
        if found is None:
            known = ", ".join(str(c.get("id")) for c in self.clusters) or "none (the run has no clusters.json)"
            raise SubjectError(f"no cluster {cluster_id!r} in the run; its clusters: {known}")
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
    A cluster that cannot be made one (its cases cannot be read, ...) is logged and added to ``errors``;
    a pair or cluster the run does not have raises :class:`SubjectError`."""
    from conformance.bugreport.subject import from_cluster, from_pair, is_real
    from conformance.report.causes import cluster_status
    if case_id or target_id:
        if not (case_id and target_id):
            raise SubjectError("--case and --target go together")
        record = run.by_pair.get((case_id, target_id))
        if record is None:
            raise SubjectError(f"the run has no verdict of {case_id} on {target_id}")
        case = run.case(record)
        if case is None:
            raise SubjectError(f"{record.file}: the case file of {case_id} cannot be read")
        return [from_pair(record, case)]
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
