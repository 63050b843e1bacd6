"""Repeats: a verdict that varies between runs of one release (docs/history.md, "Repeats").

A release can give a pair one verdict in one run and another in the next (uninitialised memory, a
race). What counts is whether the pair *passes*: a pair that passed in one run of a release and
failed in another is ``unstable`` there, and that release neither shows, fixes nor brings back its
class. A pair that fails in every run, whatever the ways (``fail`` in one run, ``crash`` in the
next: stale memory that is sometimes garbage and sometimes a bad pointer), is not unstable: the
release is affected, and the record keeps every verdict seen (``verdicts_seen``).

Before a history reports a regression (a class fixed, then showing again), it runs the cases of
that class again on each release of its runtime (``RUN/repeat-K/``), so that an unstable pair
cannot pass for a fix; and it runs every class's cases again on the releases at its ends (the
clean one before its first showing, the one that fixed it), so that a pair that passed by luck
cannot move a boundary unseen.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.compare.verdicts import FAILING
from conformance.report.history_classes import NOT_RUN

if TYPE_CHECKING:
    from conformance.results import Record


def unstable(verdicts: set[str]) -> bool:
    """Whether the verdicts of one pair's runs move between passing and failing (a verdict that
    says the pair did not run counts as neither)."""
    return bool(verdicts & FAILING) and bool(verdicts - FAILING - NOT_RUN)


def mark(records: list[Record], runs: list) -> list[Record]:
    """The records, each whose (case, target) got another verdict in a repeat of its release's run
    (``RUN/repeat-*/results.jsonl``) given every verdict seen (``verdicts_seen``), and marked
    ``unstable`` with them where it passed in one run and failed in another."""
    from conformance.results import read_records
    seen: dict[tuple, set] = {}
    for run in runs:
        for path in sorted(Path(run).glob("repeat-*/results.jsonl")):
            for rec in read_records(path):
                if rec.has("case") and rec.has("target"):
                    seen.setdefault((rec.case, rec.target), set()).add(rec.verdict)
    out = []
    for rec in records:
        verdicts = seen.get((rec.case, rec.target), set()) | {rec.verdict}
        if len(verdicts) == 1:
            out.append(rec)
            continue
        rec = dataclasses.replace(rec, extra=dict(rec.extra))
        rec.verdicts_seen = sorted(verdicts)
        if unstable(verdicts):
            rec.unstable = sorted(verdicts)
        out.append(rec)
    return out


def suspects(model: dict | None) -> dict[tuple[str, str], set[str]]:
    """{(runtime, release): case ids} to run again: the cases of every class with a regression after
    a fix (the cases passed, then failed again: an unstable pair would look so), on each release of
    its runtime; and the cases of every class on the releases at its ends (the one before its first
    showing, where it ran clean, and the one that fixed it), where a pair that passes by luck (stale
    memory that happened to hold the right values) would move a boundary."""
    found: dict[tuple[str, str], set[str]] = {}
    for cls in (model or {}).get("classes", []):
        ids = set(cls.get("case_ids") or [])
        for line in cls["lines"]:
            order = model["releases"].get(line["runtime"], []) if model else []
            if any(r.get("fixed") is not None for r in line.get("regressions", [])):
                ends = list(order)
            else:
                ran = [(r, st) for r, st in zip(order, line["states"])
                       if st in ("shows", "otherwise", "fixed", "clean")]
                ends = [r for (r, st), (_, then) in zip(ran, ran[1:]) if st == "clean" and then == "shows"][:1]
                ends += [line["fixed"]] if line.get("fixed") else []
            for release in ends:
                found.setdefault((line["runtime"], release), set()).update(ids)
    return found


def run_repeats(console, envs: list, model: dict | None, cases, formats, jobs, timeout, times: int,
                configs=("forms=default",)) -> None:
    """Run the cases :func:`suspects` names ``times`` more times on their releases, on the targets
    of ``configs`` (``RUN/repeat-K/``, resumed: a pair already repeated is not run again)."""
    from conformance.history.environments import Env
    from conformance.history.targets import env_targets, in_configs
    from conformance.run.session import RunConfig, run_session

    wanted_by_release = suspects(model)
    for env in envs:
        wanted = wanted_by_release.get((env["package"], env["version"]))
        if not wanted or not env.get("run"):
            continue
        chosen = [c for c in cases if c.id in wanted]
        release = Env(env["package"], env["version"], Path(env["python"]).parent.parent, python=env["python"],
                      modules=tuple(env.get("modules") or ()))
        targets, skipped = env_targets(release, formats)
        targets = in_configs(targets, configs)[0]
        if not chosen or not targets:
            continue
        console.print(f"{env['package']} {env['version']}: {len(chosen)} cases of classes that change there or "
                      f"come back, {times} more time{'s' if times != 1 else ''}", highlight=False)
        for k in range(1, times + 1):
            folder = Path(env["run"]) / f"repeat-{k}"
            run_session(chosen, targets, RunConfig(out_dir=folder, jobs=jobs, timeout=timeout, ablation=False,
                                                   ablation_budget=0, ablation_time=0.0, quiet=True,
                                                   configs=tuple(configs), slice_of=cases), console,
                        skipped=skipped)
