"""Support timelines of a history: for each spec version and op, the releases that accept its
minimal program, refuse it or crash on it (the version gates' probes, conformance/history/targets.py).

A release that refuses an op at a spec version turns every pair of that op there into
``not-expressible``: right as a verdict, but it hides *since when* the runtime accepts it, which is
what a timeline shows. Rows are per line (a target without its release, so a configuration that
changes what a runtime accepts keeps a row of its own); lines with the same states and reasons
share one row.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from conformance.report.view import natural_key

#: a probe's outcome on one release
SUPPORT_STATES = ("accepts", "refuses", "crashes")
OP_ORDER = {"RNN": 0, "GRU": 1, "LSTM": 2}


def timelines(environments: dict[tuple[str, str], dict], order: dict[str, list[str]], line_of) -> dict[str, list]:
    """{runtime: [row]} from each environment's ``support`` facts (``[{target, spec, op, state,
    why}]``); a row: ``spec``, ``op``, ``lines``, ``states`` (aligned with ``order[runtime]``, None
    where the release was not probed), ``why`` (release -> the refusal or crash), ``first`` (the
    first release that accepts it), ``since`` (the release from which every probed release accepts
    it; None when the newest does not) and ``lost`` (releases that refuse or crash on it after one
    accepted it)."""
    seen: defaultdict[tuple, dict[str, tuple[str, str]]] = defaultdict(dict)
    runtime_of: dict[tuple, str] = {}
    for (runtime, release), facts in environments.items():
        for probe in facts.get("support") or []:
            line = line_of(str(probe["target"]), release)
            key = (runtime, str(probe["spec"]), str(probe["op"]), line)
            seen[key][release] = (str(probe["state"]), str(probe.get("why") or ""))
            runtime_of[key] = runtime
    rows: dict[tuple, dict[str, Any]] = {}
    for (runtime, spec, op, line), by_release in seen.items():
        releases = order.get(runtime, [])
        states = [by_release[r][0] if r in by_release else None for r in releases]
        why = {r: by_release[r][1] for r in releases if r in by_release and by_release[r][0] != "accepts"}
        probed = [(r, s) for r, s in zip(releases, states) if s is not None]
        accepting = [r for r, s in probed if s == "accepts"]
        first = accepting[0] if accepting else None
        since = None
        for r, s in reversed(probed):
            if s != "accepts":
                break
            since = r
        lost = [r for r, s in probed
                if s != "accepts" and first is not None and releases.index(r) > releases.index(first)]
        ident = (runtime, spec, op, tuple(states), tuple(sorted(why.items())))
        row = rows.setdefault(ident, {"runtime": runtime, "spec": spec, "op": op, "lines": [], "states": states,
                                      "why": why, "first": first, "since": since, "lost": lost})
        row["lines"].append(line)
    out: dict[str, list] = defaultdict(list)
    for row in sorted(rows.values(), key=lambda r: (natural_key(r["spec"]), OP_ORDER.get(r["op"], 9), r["op"],
                                                    natural_key(min(r["lines"])))):
        row["lines"].sort(key=natural_key)
        out[row["runtime"]].append(row)
    return dict(sorted(out.items()))


def changes(rows: list[dict]) -> list[dict]:
    """The rows whose support is not the same on every probed release (for the terminal)."""
    return [r for r in rows if len({s for s in r["states"] if s is not None}) > 1 or r["since"] is None]
