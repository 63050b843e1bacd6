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
import functools
import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path

import click
from rich.console import Console

from conformance.history.versions import EXTRA, PYPI, VersionSpecError, available, outside, parse

#: the targets a history runs without --config: each release's plain targets (docs/history.md)
DEFAULT_CONFIGS = ("forms=default",)
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
@click.option("--allow-unsupported", is_flag=True,
              help="Also run releases outside the range the suite supports (the `runtimes` extra of "
                   "pyproject.toml); without it they are left out, with a warning.")
@click.option("--ablation/--no-ablation", default=True, show_default=True,
              help="Name the causes of each release's failures.")
@click.option("--bisect", "bisect_rounds", default=0, type=click.IntRange(0, 20), metavar="ROUNDS",
              help="Then narrow each change between two releases run (a class appears or is fixed, a spec "
                   "version's op becomes accepted or refused) by running the releases between them: at most "
                   "ROUNDS rounds, one middle release per gap each (0: off).")
@click.option("--repeat", "repeats", default=2, show_default=True, type=click.IntRange(0, 10),
              help="Run again, this many times more, the cases of every class that comes back after a fix "
                   "(on each release) and of every class at its ends (the clean release before it shows, the "
                   "one that fixes it): a case that passes in one run of a release and fails in another marks "
                   "that release unstable for its class (0: off).")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Only each release's targets in this configuration (repeatable: any of them), as `conformance "
                   "run --config` selects them; an execution form (shape=dynamic, weights=inputs, session=reused, "
                   "threads=4, relations=on; docs/forms.md) runs in the release itself. Default: forms=default "
                   "(the plain targets).")
@click.option("--index-url", default=PYPI, show_default=True, help="The package index's JSON API.")
def history_command(selections, case_paths, full, expr, spec_filter, limit, out_dir, jobs, timeout, expectation_paths,
                    fresh, retry, allow_unsupported, ablation, bisect_rounds, repeats, configs, index_url):
    """Run the corpus on every release SELECTIONS name and merge the runs: OUT/history.html shows for
    each divergence the first and last release it affects and the release that fixed it, for each
    spec version and op the releases that accept it, a timeline of verdicts per runtime and a strip
    of verdicts per case.

    SELECTIONS: NAME==LOW..HIGH[:N] (the newest patch of each minor release line in the range, N of
    them evenly spread), NAME==V1,V2 or NAME==V; NAME is onnxruntime or openvino. Exit status 1 when
    the newest release of a runtime has a divergence the expectations do not cover, or a class
    regresses where they do not excuse it (a CI job's gate); 2 on a usage error or a case file with
    an error; else 0.
    """
    from conformance.case import load_paths
    from conformance.cli.options import case_limits
    from conformance.gate import Expectations, ExpectationsError
    from conformance.history.repeats import run_repeats
    from conformance.report.history_terminal import print_history
    from conformance.run import SelectError, compile_expression
    from conformance.selection import parse_config, specs_by_format

    console = Console(stderr=False)
    configs = tuple(configs) or DEFAULT_CONFIGS
    for value in configs:
        parse_config(value)  # a malformed value fails before any release is installed
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
    releases, every, unsupported = choose_releases(console, chosen, limit, bisect_rounds, index_url, allow_unsupported)
    paths = list(case_paths) or ([Path("cases")] if full else representative(Path("cases"), case_limits()))
    if not paths or not all(Path(p).exists() for p in paths):
        raise click.UsageError("no case paths given and ./cases does not exist")
    cases, load_errors = load_paths(paths, limits=case_limits())
    cases = [c for c in cases if select(c.id)]
    formats = specs_by_format(spec_filter)

    console.print(f"history of {len(releases)} releases on {len(cases)} cases: "
                  + ", ".join(f"{p} {v}" for p, v in releases), highlight=False, soft_wrap=True)
    started = datetime.datetime.now(datetime.UTC).isoformat()
    run = functools.partial(run_releases, console, cases=cases, load_errors=load_errors, formats=formats,
                            out_dir=out_dir, jobs=jobs, timeout=timeout, expectations=expectations, fresh=fresh,
                            retry=retry, ablation=ablation, unsupported=unsupported, configs=configs)
    envs, timings = run(releases)
    for round_ in range(bisect_rounds + 1):
        if repeats:  # before bisecting: an unstable pair is no change to narrow
            run_repeats(console, envs, _model(envs, expectations), cases, formats, jobs, timeout, repeats,
                            configs)
        between = gaps(envs, expectations, every) if round_ < bisect_rounds else []
        if not between:
            break
        console.print("bisecting: " + ", ".join(f"{p} {v}" for p, v in between), highlight=False, soft_wrap=True)
        more, more_timings = run(between)
        envs += more
        timings.update(more_timings)
    merged = merge(out_dir, envs, expectations, started, timings, [str(p) for p in paths], {c.id for c in cases})
    print_history(console, merged["model"])
    console.print(f"history: {merged['records']} verdicts from {merged['runs']} release runs; "
                  f"{merged['unavailable']} release(s) not run; report {out_dir / 'history.html'}",
                  highlight=False, soft_wrap=True)
    sys.exit(2 if load_errors else merged["model"]["gate"]["status"])


def choose_releases(console, chosen, limit, bisect_rounds, index_url, allow_unsupported):
    """([(package, version)] to run, {package: releases a bisection may add}, {(package, version)
    outside the supported range that run anyway}). A release outside the range the suite supports
    (:func:`.versions.supported`) is left out with a warning (a range then spreads over the rest),
    unless ``allow_unsupported``."""
    releases, every, unsupported = [], {}, set()
    for sel in chosen:
        try:
            if not sel.listed or bisect_rounds:
                every[sel.package] = available(sel.package, index_url)
        except OSError as exc:
            raise click.UsageError(f"{sel.package}: cannot list its releases at {index_url} ({exc}); name the "
                                   f"releases instead (NAME==V1,V2)") from exc
        pool = every.get(sel.package, [])
        out, supported_range = outside(sel.package, sel.pick(pool))   # every release line it names
        if not allow_unsupported:
            pool = [v for v in pool if v not in set(outside(sel.package, pool)[0])]
            every[sel.package] = pool
        found = sel.pick(pool, limit)
        if out:
            what = "left out (--allow-unsupported runs them)" if not allow_unsupported else "run, as asked"
            console.print(f"warning: {sel.package} {', '.join(out)}: outside the range the suite supports "
                          f"({supported_range}, the `{EXTRA}` extra of pyproject.toml): {what}", highlight=False,
                          markup=False, soft_wrap=True)
            if allow_unsupported:
                unsupported.update((sel.package, v) for v in found if v in out)
            else:
                found = [v for v in found if v not in out]
        if not found:
            why = (f"every release it names is outside {supported_range} (--allow-unsupported runs them)" if out
                   else f"no release installable here in {sel.low}..{sel.high}")
            raise click.UsageError(f"{sel.package}: {why}")
        releases += [(sel.package, v) for v in found]
    return releases, every, unsupported


def run_releases(console, releases, cases, load_errors, formats, out_dir, jobs, timeout, expectations, fresh,
                 retry, ablation, make_env=None, unsupported=(), configs=DEFAULT_CONFIGS):
    """Each release's environment (``make_env(package, version, retry, log)``, by default
    :func:`.environments.ensure`), checked (:func:`.targets.discover`: a broken one is listed with
    the reason and not run), its targets in ``configs`` (``--config``) and run; ([environment
    facts], {release: seconds})."""
    from conformance.history.environments import ensure
    from conformance.history.targets import discover, in_configs
    from conformance.run.session import RunConfig, run_session

    envs, timings = [], {}
    for package, version in releases:
        start = time.perf_counter()
        env = (make_env or ensure)(package, version, retry=retry,
                                   log=lambda text: console.print(text, highlight=False))
        facts = env.to_json()
        if (package, version) in unsupported:
            facts["supported"] = False
        if not env.error:
            found = discover(env, formats)
            (targets, unselected), skipped = in_configs(found.targets, configs), found.skipped
            facts["targets"] = [t.id for t in targets]
            facts["gates"] = {t.id: t.gates for t in targets if t.gates}
            facts["skipped"] = [s.__dict__ for s in skipped]
            facts["support"] = [] if found.broken else found.support   # a broken release says nothing of support
            if found.broken:
                env.error, facts["state"] = found.broken, "broken"
            elif not targets:
                env.error = "no targets: " + (unselected
                                              or "; ".join(f"{s.runtime}: {s.reason}" for s in skipped))[:600]
        if env.error:
            facts["error"] = env.error
            facts["state"] = facts.get("state") if facts.get("state") not in (None, "ready") else "unavailable"
            console.print(f"{package} {version}: not run ({facts['state']}): {env.error}", highlight=False,
                          markup=False, soft_wrap=True)
        else:
            run_dir = Path(out_dir) / "runs" / env.name
            console.print(f"{package} {version}: {len(targets)} targets, {len(cases)} cases -> {run_dir}",
                          highlight=False)
            if fresh:  # repeats of an earlier run do not speak for this one
                for old in run_dir.glob("repeat-*"):
                    shutil.rmtree(old, ignore_errors=True)
            run_session(cases, targets, RunConfig(out_dir=run_dir, jobs=jobs, timeout=timeout, fresh=fresh,
                                                  expectations=expectations, ablation=ablation, quiet=True,
                                                  warn_unused=False, configs=tuple(configs)),
                        console, load_errors, skipped)
            facts["run"] = str(run_dir)
        timings[env.name] = round(time.perf_counter() - start, 1)
        facts["seconds"] = timings[env.name]
        envs.append(facts)
    return envs, timings


def _load_runs(envs: list):
    """(the run folders of ``envs`` that hold results, their records merged and marked by
    :func:`.repeats.mark`, the :class:`~conformance.report.merge.Loaded` they came from)."""
    from conformance.history.repeats import mark
    from conformance.report.merge import Loaded, load
    runs = [e["run"] for e in envs if e.get("run") and (Path(e["run"]) / "results.jsonl").is_file()]
    loaded = load(runs) if runs else Loaded()
    return runs, mark(loaded.records, runs), loaded


def _model(envs: list, expectations) -> dict | None:
    """The history model of the runs so far (no report written)."""
    from conformance.report import history
    runs, records, loaded = _load_runs(envs)
    return history.build(records, expectations, loaded.clusters, envs) if runs else None


def gaps(envs: list, expectations, every: dict) -> list[tuple[str, str]]:
    """The middle release of each gap in which something changes between two releases run on a
    line, with releases not run between them: a class affects one and not the other (an unstable
    release is neither), or a spec version's op is accepted by one and not the other. The same
    runs give the same releases."""
    model = _model(envs, expectations)
    return [] if model is None else gaps_in(model, {(e["package"], e["version"]) for e in envs}, every)


def gaps_in(model: dict, tried: set, every: dict) -> list[tuple[str, str]]:
    """:func:`gaps` of a history model, ``tried`` the (package, version) already run."""
    from packaging.version import Version
    wanted: set[tuple[str, str]] = set()

    def between(runtime: str, steps: list[tuple[str, bool]]) -> None:
        for (low, was), (high, now) in zip(steps, steps[1:]):
            if was == now:
                continue
            inside = [v for v in every.get(runtime, [])
                      if Version(low) < Version(v) < Version(high) and (runtime, v) not in tried]
            if inside:
                wanted.add((runtime, inside[len(inside) // 2]))

    for cls in model["classes"]:
        for line in cls["lines"]:
            order = model["releases"].get(line["runtime"], [])
            between(line["runtime"], [(v, v in line["affected"]) for v, st in zip(order, line["states"])
                                      if st in ("shows", "otherwise", "fixed", "clean")])
    for runtime, rows in model.get("support", {}).items():
        order = model["releases"].get(runtime, [])
        for row in rows:
            between(runtime, [(v, st == "accepts") for v, st in zip(order, row["states"]) if st is not None])
    return sorted(wanted, key=lambda pv: (pv[0], Version(pv[1])))


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
    runs, marked, loaded = _load_runs(envs)
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
