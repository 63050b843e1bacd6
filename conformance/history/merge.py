"""Every release's run of a history merged into one results set (``OUT/results.jsonl``), judged
under the expectations, with the usual report and the history view beside it (docs/history.md);
and the history model of the runs so far, which the repeats and the bisection read."""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path


def load_runs(envs: list):
    """(the run folders of ``envs`` that hold results, their records merged and marked by
    :func:`.repeats.mark`, the :class:`~conformance.report.merge.Loaded` they came from)."""
    from conformance.history.repeats import mark
    from conformance.report.merge import Loaded, load
    runs = [e["run"] for e in envs if e.get("run") and (Path(e["run"]) / "results.jsonl").is_file()]
    loaded = load(runs) if runs else Loaded()
    return runs, mark(loaded.records, runs), loaded


def model_of(envs: list, expectations) -> dict | None:
    """The history model of the runs so far (no report written)."""
    from conformance.report import history
    runs, records, loaded = load_runs(envs)
    return history.build(records, expectations, loaded.clusters, envs) if runs else None


def merge(out_dir: Path, envs: list, expectations, started: str, timings: dict, case_paths: list,
          case_ids: set | None = None) -> dict:
    """Every release's run merged into OUT/results.jsonl (only the pairs of ``case_ids`` where given:
    a release's run folder keeps the pairs of earlier selections too), judged under the
    expectations, with the report and the history view beside it."""
    from conformance.files import write_atomic
    from conformance.gate import gated
    from conformance.report import history
    from conformance.run.session import write_reports

    out_dir = Path(out_dir)
    runs, marked, loaded = load_runs(envs)
    records = [gated(r, expectations) for r in marked if case_ids is None or r.case in case_ids]
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "results.jsonl", "".join(json.dumps(r.as_dict(), sort_keys=True) + "\n" for r in records))
    targets = [t for info in loaded.runs for t in info.get("targets", [])]
    info = {"started": started, "finished": datetime.datetime.now(datetime.UTC).isoformat(),
            "argv": sys.argv, "cases": case_paths, "targets": targets,
            "history": {"environments": envs, "seconds": timings}}
    write_atomic(out_dir / "run.json", json.dumps(info, indent=2, sort_keys=True))
    write_reports(records, info, out_dir, loaded.clusters)
    model = history.build(records, expectations, loaded.clusters, envs)
    history.write(model, out_dir)
    return {"records": len(records), "runs": len(runs), "unavailable": sum(1 for e in envs if e.get("error")),
            "model": model}
