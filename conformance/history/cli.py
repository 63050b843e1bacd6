"""`conformance history SELECTION...`: the corpus on several releases of a runtime, merged into one
results set with a history view (docs/history.md).

For each release: its environment (:mod:`.environments`, cached), its targets (:mod:`.targets`,
with the version gates), and an ordinary run into ``OUT/runs/PACKAGE-VERSION/`` (resumed like any
run, so a history grows release by release). Then every run merges into ``OUT/results.jsonl``,
judged under the expectations, with the usual report (``OUT/index.html``) and the history view
(``OUT/history.html``, ``history.md``, ``history.json``).
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import sys
import time
from pathlib import Path

import click
from rich.console import Console

from conformance.history.versions import PYPI, VersionSpecError, available, parse

#: the ops in the order a feature class's file is taken from: the LSTM has the most features
OPS_BY_REACH = ("lstm", "gru", "rnn")


def representative(root: Path = Path("cases"), limits=None) -> list[Path]:
    """The default selection when no case path is given: one file per feature class (each file name
    under ``root/<op>/``, the LSTM's, else the GRU's, else the RNN's, and ``root/invalid/lstm/``),
    then the files that bring in every (op, feature) class of the corpus still missing (the features
    of conformance/case/features.py, by which the expectations name divergences): greedy set cover,
    the file adding the most classes first, the smaller on a tie, then by path. The production tier
    is left out."""
    from conformance.case import load_paths
    from conformance.case.features import features
    root = Path(root)
    classes: dict[Path, set] = {}
    sizes: dict[Path, int] = {}
    for path in sorted(p for p in root.rglob("*.yaml") if "production" not in p.relative_to(root).parts):
        cases, _ = load_paths([path], **({"limits": limits} if limits else {}))
        classes[path] = {(c.op, token) for c in cases for token in features(c)}
        sizes[path] = len(cases)
    by_stem: dict[str, Path] = {}
    for op in OPS_BY_REACH:
        for path in sorted((root / op).glob("*.yaml")):
            by_stem.setdefault(path.stem, path)
    chosen = sorted(set(by_stem.values()) | set((root / "invalid" / "lstm").glob("*.yaml")))
    left = set().union(*classes.values()) - set().union(set(), *(classes[p] for p in chosen if p in classes))
    while left:
        best = min(classes, key=lambda p: (-len(classes[p] & left), sizes[p], str(p)))
        if not classes[best] & left:
            break
        chosen.append(best)
        left -= classes[best]
    return sorted(chosen)


@click.command("history")
@click.argument("selections", nargs=-1, required=True)
@click.option("--cases", "case_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Case files or folders (repeatable); default: one file per feature class of ./cases.")
@click.option("--full", is_flag=True, help="The whole corpus (./cases) instead of one file per feature class.")
@click.option("-k", "expr", default="", help="Select cases by id, as `conformance run -k`.")
@click.option("--spec", "spec_filter", multiple=True, help="Only these spec versions (prefix match, repeatable).")
@click.option("--limit", default=0, type=click.IntRange(0), help="Keep at most N releases of each range (0: all).")
@click.option("--out", "out_dir", default=Path("reports/history"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Output folder.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256), help="Worker processes.")
@click.option("--timeout", default=60.0, show_default=True, type=float, help="Seconds one runtime call may take.")
@click.option("--expectations", "expectation_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Known divergences (files or folders, repeatable); their `versions:` ranges apply per release.")
@click.option("--fresh", is_flag=True, help="Run every release again instead of resuming its results.")
@click.option("--retry", is_flag=True, help="Try again to install the releases that failed before.")
@click.option("--ablation/--no-ablation", default=True, show_default=True, help="Name the causes of each release's failures.")
@click.option("--bisect", "bisect_rounds", default=0, type=click.IntRange(0, 20), metavar="ROUNDS",
              help="Then narrow each change of a class (it appears, or is fixed) between two releases run, "
                   "by running the releases between them: at most ROUNDS rounds, one middle release per gap "
                   "each (0: off).")
@click.option("--repeat", "repeats", default=2, show_default=True, type=click.IntRange(0, 10),
              help="Run the cases of every class that comes back after a fix this many times more on each "
                   "release: a case whose verdict varies between runs of one release marks that release "
                   "unstable for its class instead of a regression (0: off).")
@click.option("--index-url", default=PYPI, show_default=True, help="The package index's JSON API.")
def history_command(selections, case_paths, full, expr, spec_filter, limit, out_dir, jobs, timeout, expectation_paths,
                    fresh, retry, ablation, bisect_rounds, repeats, index_url):
    """Run the corpus on every release SELECTIONS name and merge the runs: OUT/history.html shows for
    each divergence the first and last release it shows in and the release that fixed it, a timeline
    of verdicts per runtime and a strip of verdicts per case.

    SELECTIONS: NAME==LOW..HIGH[:N] (the newest patch of each minor release line in the range, N of
    them evenly spread), NAME==V1,V2 or NAME==V; NAME is onnxruntime or openvino. Exit status 0
    (a history describes; `conformance run` gates), 2 on a usage error or a case file with an error.
    """
    from conformance.case import load_paths
    from conformance.cli import case_limits
    from conformance.gate import Expectations, ExpectationsError
    from conformance.run import SelectError, compile_expression
    from conformance.selection import specs_by_format

    console = Console(stderr=False)
    try:
        chosen = [parse(s) for s in selections]
        select = compile_expression(expr)
        expectations = Expectations.load(expectation_paths) if expectation_paths else None
    except (VersionSpecError, SelectError, ExpectationsError) as exc:
        raise click.UsageError(str(exc)) from exc
    if any(sel.package == "openvino" for sel in chosen) and importlib.util.find_spec("openvino") is None:
        raise click.UsageError("a history of OpenVINO needs the pinned openvino here too: its builders write the IR "
                               "programs every release reads (pip install -c constraints.txt openvino, or use "
                               "`nox -s history`)")
    paths = list(case_paths) or ([Path("cases")] if full else representative(Path("cases"), case_limits()))
    if not paths or not all(Path(p).exists() for p in paths):
        raise click.UsageError("no case paths given and ./cases does not exist")
    cases, load_errors = load_paths(paths, limits=case_limits())
    cases = [c for c in cases if select(c.id)]
    formats = specs_by_format(spec_filter)

    releases, every = [], {}
    for sel in chosen:
        try:
            if not sel.listed or bisect_rounds:
                every[sel.package] = available(sel.package, index_url)
            found = sel.pick(every.get(sel.package, []), limit)
        except OSError as exc:
            raise click.UsageError(f"{sel.package}: cannot list its releases at {index_url} ({exc}); name the "
                                   f"releases instead (NAME==V1,V2)") from exc
        if not found:
            raise click.UsageError(f"{sel.package}: no release installable here in {sel.low}..{sel.high}")
        releases += [(sel.package, v) for v in found]
    console.print(f"history of {len(releases)} releases on {len(cases)} cases: "
                  + ", ".join(f"{p} {v}" for p, v in releases), highlight=False, soft_wrap=True)
    started = datetime.datetime.now(datetime.UTC).isoformat()
    envs, timings = run_releases(console, releases, cases, load_errors, formats, out_dir, jobs, timeout,
                                 expectations, fresh, retry, ablation)
    for _ in range(bisect_rounds):
        between = gaps(envs, expectations, every)
        if not between:
            break
        console.print("bisecting: " + ", ".join(f"{p} {v}" for p, v in between), highlight=False, soft_wrap=True)
        more, more_timings = run_releases(console, between, cases, load_errors, formats, out_dir, jobs, timeout,
                                          expectations, fresh, retry, ablation)
        envs += more
        timings.update(more_timings)
    if repeats:
        repeat_regressions(console, envs, expectations, cases, formats, out_dir, jobs, timeout, repeats)
    merged = merge(out_dir, envs, expectations, started, timings, [str(p) for p in paths], {c.id for c in cases})
    print_classes(console, merged["model"])
    console.print(f"history: {merged['records']} verdicts from {merged['runs']} release runs; "
                  f"{merged['unavailable']} release(s) unavailable; report {out_dir / 'history.html'}",
                  highlight=False, soft_wrap=True)
    sys.exit(2 if load_errors else 0)


def run_releases(console, releases, cases, load_errors, formats, out_dir, jobs, timeout, expectations, fresh,
                 retry, ablation, make_env=None):
    """Each release's environment (``make_env(package, version, retry, log)``, by default
    :func:`.environments.ensure`), targets and run; ([environment facts], {release: seconds})."""
    from conformance.cli import _execute
    from conformance.gate import classify
    from conformance.history.environments import ensure
    from conformance.history.targets import env_targets
    from conformance.run import Options
    from conformance.run.files import OutLock

    envs, timings = [], {}
    gate = (lambda rec: classify(rec, expectations, None)) if expectations else None
    for package, version in releases:
        start = time.perf_counter()
        env = (make_env or ensure)(package, version, retry=retry,
                                   log=lambda text: console.print(text, highlight=False))
        facts = env.to_json()
        if not env.error:
            targets, skipped = env_targets(env, formats)
            facts["targets"] = [t.id for t in targets]
            facts["gates"] = {t.id: t.gates for t in targets if t.gates}
            facts["skipped"] = [s.__dict__ for s in skipped]
            if not targets:
                env.error = "no targets: " + "; ".join(f"{s.runtime}: {s.reason}" for s in skipped)[:600]
        if env.error:
            facts["error"] = env.error
            console.print(f"{package} {version}: unavailable: {env.error}", highlight=False, markup=False,
                          soft_wrap=True)
        else:
            run_dir = Path(out_dir) / "runs" / env.name
            options = Options(out_dir=run_dir, jobs=jobs, timeout=timeout)
            console.print(f"{package} {version}: {len(targets)} targets, {len(cases)} cases -> {run_dir}",
                          highlight=False)
            with OutLock(run_dir):
                _execute(console, cases, load_errors, targets, skipped, options, fresh, expectations, None, gate,
                         ablation, 4000, 600.0, None, True)
            facts["run"] = str(run_dir)
        timings[env.name] = round(time.perf_counter() - start, 1)
        facts["seconds"] = timings[env.name]
        envs.append(facts)
    return envs, timings


def _load_runs(envs: list):
    """(the run folders of ``envs`` that hold results, their records merged and marked by
    :func:`mark_unstable`, the :class:`~conformance.report.merge.Loaded` they came from)."""
    from conformance.report.merge import Loaded, load
    runs = [e["run"] for e in envs if e.get("run") and (Path(e["run"]) / "results.jsonl").is_file()]
    loaded = load(runs) if runs else Loaded()
    return runs, mark_unstable(loaded.records, runs), loaded


def _model(envs: list, expectations) -> dict | None:
    """The history model of the runs so far (no report written)."""
    from conformance.report import history
    runs, records, loaded = _load_runs(envs)
    return history.build(records, expectations, loaded.clusters, envs) if runs else None


def repeat_regressions(console, envs: list, expectations, cases, formats, out_dir, jobs, timeout, times: int) -> None:
    """Run the cases of every class with a regression ``times`` more times on each release of its
    runtime (``RUN/repeat-K/``): :func:`mark_unstable` then finds the pairs whose verdict varies."""
    from conformance.cli import _execute
    from conformance.history.environments import Env
    from conformance.history.targets import env_targets
    from conformance.run import Options
    from conformance.run.files import OutLock

    model = _model(envs, expectations)
    suspects: dict[str, set[str]] = {}
    for cls in (model or {}).get("classes", []):
        for line in cls["lines"]:
            if line.get("regressions"):
                suspects.setdefault(line["runtime"], set()).update(cls.get("case_ids") or [])
    for env in envs:
        wanted = suspects.get(env["package"])
        if not wanted or not env.get("run"):
            continue
        chosen = [c for c in cases if c.id in wanted]
        release = Env(env["package"], env["version"], Path(env["python"]).parent.parent, python=env["python"])
        targets, skipped = env_targets(release, formats)
        console.print(f"{env['package']} {env['version']}: {len(chosen)} cases of classes that came back, "
                      f"{times} more time{'s' if times != 1 else ''}", highlight=False)
        for k in range(1, times + 1):
            folder = Path(env["run"]) / f"repeat-{k}"
            with OutLock(folder):
                _execute(console, chosen, [], targets, skipped, Options(out_dir=folder, jobs=jobs, timeout=timeout),
                         True, None, None, None, False, 0, 0.0, None, True)


def mark_unstable(records: list, runs: list) -> list:
    """The records, each whose (case, target) got another verdict in a repeat of its release's run
    (``RUN/repeat-*/results.jsonl``) marked ``unstable`` with every verdict seen."""
    from conformance.run.results import read_results
    seen: dict[tuple, set] = {}
    for run in runs:
        for path in sorted(Path(run).glob("repeat-*/results.jsonl")):
            for rec in read_results(path):
                if "case" in rec and "target" in rec:
                    seen.setdefault((rec["case"], rec["target"]), set()).add(rec["verdict"])
    out = []
    for rec in records:
        verdicts = seen.get((rec["case"], rec["target"]), set()) | {rec["verdict"]}
        out.append(dict(rec, unstable=sorted(verdicts)) if len(verdicts) > 1 else rec)
    return out


def gaps(envs: list, expectations, every: dict) -> list[tuple[str, str]]:
    """The middle release of each gap in which a class changes on a line (it shows in one release
    run and not in the next one run, or the other way round) and releases not run lie between."""
    from packaging.version import Version

    model = _model(envs, expectations)
    if model is None:
        return []
    tried = {(e["package"], e["version"]) for e in envs}
    wanted: set[tuple[str, str]] = set()
    for cls in model["classes"]:
        for line in cls["lines"]:
            runtime = line["line"].split("/", 1)[0]
            order = model["releases"].get(runtime, [])
            ran = [(v, st) for v, st in zip(order, line["states"]) if st in ("shows", "fixed", "clean")]
            for (low, was), (high, now) in zip(ran, ran[1:]):
                if (was == "shows") == (now == "shows"):
                    continue
                inside = [v for v in every.get(runtime, [])
                          if Version(low) < Version(v) < Version(high) and (runtime, v) not in tried]
                if inside:
                    wanted.add((runtime, inside[len(inside) // 2]))
    return sorted(wanted, key=lambda pv: (pv[0], Version(pv[1])))


def merge(out_dir: Path, envs: list, expectations, started: str, timings: dict, case_paths: list,
          case_ids: set | None = None) -> dict:
    """Every release's run merged into OUT/results.jsonl (only the pairs of ``case_ids`` where given:
    a release's run folder keeps the pairs of earlier selections too), judged under the
    expectations, with the report and the history view beside it."""
    from conformance.cli import write_reports
    from conformance.gate import classify
    from conformance.report import history
    from conformance.run.files import write_atomic

    out_dir = Path(out_dir)
    runs, marked, loaded = _load_runs(envs)
    records = [dict(r, **classify(r, expectations, None)) for r in marked
               if case_ids is None or r["case"] in case_ids]
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "results.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
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


def print_classes(console, model: dict, limit: int = 40) -> None:
    """The divergence classes on the terminal: per class and runtime, the first and last release it
    shows in on any line, the release that fixed it on every line (— while one still shows it), and
    its regressions."""
    from rich.table import Table
    table = Table(title="divergence classes across releases", show_lines=False)
    table.add_column("class", overflow="ellipsis", no_wrap=True, max_width=max(30, console.width - 60))
    for column in ("runtime", "first", "last", "fixed", "regressions"):
        table.add_column(column, no_wrap=True)
    rows = 0
    for cls in model.get("classes", []):
        by_runtime: dict = {}
        for line in cls["lines"]:
            by_runtime.setdefault(line["line"].split("/", 1)[0], []).append(line)
        for runtime, lines in sorted(by_runtime.items()):
            order = model["releases"].get(runtime, [])
            shown = [ln for ln in lines if ln.get("first")]
            if not shown:
                continue
            first = min((ln["first"] for ln in shown), key=order.index)
            last = max((ln["last"] for ln in shown), key=order.index)
            fixed = "—" if any(ln.get("fixed") is None for ln in shown) else max(
                (ln["fixed"] for ln in shown), key=order.index)
            again = sorted({r["again"] for ln in shown for r in ln.get("regressions", [])}, key=order.index)
            rows += 1
            if rows <= limit:
                table.add_row(cls["name"][:110], runtime, first, last, fixed, ", ".join(again))
    if rows:
        console.print(table)
    if rows > limit:
        console.print(f"... and {rows - limit} more rows in history.html", highlight=False)
