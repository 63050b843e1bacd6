"""One history session: the corpus on several releases of a runtime, merged into one results set
with a history view (docs/history.md).

``conformance history`` builds a :class:`HistoryConfig` from its options and calls
:func:`history_session`; option parsing stays in conformance/cli/history.py. For each release: its
environment (:mod:`.environments`, cached), its targets (:mod:`.targets`, with the version gates),
and an ordinary run into ``OUT/runs/PACKAGE-VERSION/`` (resumed like any run, so a history grows
release by release). Then every run merges into ``OUT/results.jsonl`` (:mod:`.merge`), judged under
the expectations, with the usual report (``OUT/index.html``) and the history view
(``OUT/history.html``, ``history.md``, ``history.json``).
"""

from __future__ import annotations

import datetime
import functools
import importlib.util
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.history.versions import EXTRA, PYPI, available, outside

#: the targets a history runs without --config: each release's plain targets (docs/history.md)
DEFAULT_CONFIGS = ("forms=default",)


class HistoryError(ValueError):
    """A history that cannot run as asked (the command line's usage error); the message says why."""


@dataclass
class HistoryConfig:
    """Everything a history session needs: ``conformance history``'s options, read."""

    selections: list                  # the releases asked for: one versions.Selection per SELECTION
    out_dir: Path = Path("reports/history")
    case_paths: tuple = ()            # case files or folders; none: ./cases (full) or one file per feature class
    full: bool = False
    select: Callable[[str], bool] | None = None   # -k: whether a case id is in; None: every case
    spec_filter: tuple = ()           # --spec prefixes
    limit: int = 0                    # at most this many releases of each range (0: all)
    jobs: int = 1
    timeout: float = 60.0
    expectations: Any = None          # conformance.gate.Expectations, or None
    fresh: bool = False               # run every release again instead of resuming its results
    retry: bool = False               # try again to install the releases that failed before
    allow_unsupported: bool = False   # also run releases outside the range the suite supports
    ablation: bool = True
    bisect_rounds: int = 0
    repeats: int = 2
    configs: tuple = DEFAULT_CONFIGS  # --config values: each release's targets in any of them
    index_url: str = PYPI
    limits: Any = None                # conformance.case.limits.Limits; None: the defaults


def history_session(config: HistoryConfig, console) -> int:
    """Run the history ``config`` asks for, print its summary and write its reports under
    ``config.out_dir``: the exit status (docs/history.md). A history that cannot run as asked
    raises :class:`HistoryError` before any release runs."""
    from conformance.case import load_paths
    from conformance.case.limits import DEFAULT_LIMITS
    from conformance.history.bisect import gaps
    from conformance.history.corpus import representative
    from conformance.history.merge import merge, model_of
    from conformance.history.repeats import run_repeats
    from conformance.report.history_terminal import print_history
    from conformance.selection import specs_by_format

    configs, expectations, out_dir = tuple(config.configs) or DEFAULT_CONFIGS, config.expectations, config.out_dir
    limits = config.limits or DEFAULT_LIMITS
    if any(sel.package == "openvino" for sel in config.selections) and importlib.util.find_spec("openvino") is None:
        raise HistoryError("a history of OpenVINO needs the pinned openvino here too: its builders write the IR "
                           "programs every release reads (pip install -c constraints.txt openvino, or use "
                           "`nox -s history`)")
    releases, every, unsupported = choose_releases(console, config.selections, config.limit, config.bisect_rounds,
                                                   config.index_url, config.allow_unsupported)
    paths = list(config.case_paths) or ([Path("cases")] if config.full else representative(Path("cases"), limits))
    if not paths or not all(Path(p).exists() for p in paths):
        raise HistoryError("no case paths given and ./cases does not exist")
    cases, load_errors = load_paths(paths, limits=limits)
    cases = [c for c in cases if config.select is None or config.select(c.id)]
    formats = specs_by_format(config.spec_filter)

    console.print(f"history of {len(releases)} releases on {len(cases)} cases: "
                  + ", ".join(f"{p} {v}" for p, v in releases), highlight=False, soft_wrap=True)
    started = datetime.datetime.now(datetime.UTC).isoformat()
    run = functools.partial(run_releases, console, cases=cases, load_errors=load_errors, formats=formats,
                            out_dir=out_dir, jobs=config.jobs, timeout=config.timeout, expectations=expectations,
                            fresh=config.fresh, retry=config.retry, ablation=config.ablation, unsupported=unsupported,
                            configs=configs)
    envs, timings = run(releases)
    for round_ in range(config.bisect_rounds + 1):
        if config.repeats:  # before bisecting: an unstable pair is no change to narrow
            run_repeats(console, envs, model_of(envs, expectations), cases, formats, config.jobs, config.timeout,
                        config.repeats, configs)
        between = gaps(envs, expectations, every) if round_ < config.bisect_rounds else []
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
    return 2 if load_errors else merged["model"]["gate"]["status"]


def choose_releases(console, chosen, limit, bisect_rounds, index_url, allow_unsupported):
    """([(package, version)] to run, {package: releases a bisection may add}, {(package, version)
    outside the supported range that run anyway}). A release outside the range the suite supports
    (:func:`.versions.supported`) is left out with a warning (a range then spreads over the rest),
    unless ``allow_unsupported``; a selection left with no release raises :class:`HistoryError`."""
    releases, every, unsupported = [], {}, set()
    for sel in chosen:
        try:
            if not sel.listed or bisect_rounds:
                every[sel.package] = available(sel.package, index_url)
        except OSError as exc:
            raise HistoryError(f"{sel.package}: cannot list its releases at {index_url} ({exc}); name the "
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
            raise HistoryError(f"{sel.package}: {why}")
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
