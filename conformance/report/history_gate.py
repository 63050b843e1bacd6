"""What a history says to a CI job: its exit status, by the gate's own rules (conformance/gate/:
a failing pair an expectation covers is ``expected``, any other is ``new``).

The history fails (status 1) when

- the newest release of a runtime that ran has a divergence class with a pair the gate calls new
  there (on any of its lines), or
- a class has a regression (fixed, then showing again; or a refusal that became a silent
  divergence) with a pair the gate calls new in the release it came back in; an expectation whose
  ``versions`` name that release excuses it, as it would in `conformance run`.
"""

from __future__ import annotations

from typing import Any


def newest(versions: dict[str, list[dict]]) -> dict[str, str]:
    """{runtime: its newest release that has pairs}."""
    out = {}
    for runtime, releases in versions.items():
        ran = [r["release"] for r in releases if r["pairs"]]
        if ran:
            out[runtime] = ran[-1]
    return out


def summarise(versions: dict[str, list[dict]], classes: list[dict]) -> dict[str, Any]:
    """``{"status", "newest", "uncovered", "regressions", "known_regressions", "not_run"}``:
    ``uncovered`` the classes with new pairs on a runtime's newest release, ``regressions`` those
    that count, ``known_regressions`` the ones the expectations excuse, ``not_run`` the runtimes
    whose newest selected release has no pairs (with why)."""
    last = newest(versions)
    uncovered: list[dict] = []
    regressions: list[dict] = []
    known: list[dict] = []
    for cls in classes:
        for line in cls["lines"]:
            release = last.get(line["runtime"])
            pairs = line.get("new_by_release", {}).get(release, 0)
            if release and pairs:
                uncovered.append({"class": cls["id"], "name": cls["name"], "line": line["line"],
                                  "runtime": line["runtime"], "release": release, "pairs": pairs})
            for r in line["regressions"]:
                item = {"class": cls["id"], "name": cls["name"], "line": line["line"], "runtime": line["runtime"], **r}
                (regressions if r.get("new") else known).append(item)
    not_run = {}
    for runtime, releases in versions.items():
        if releases and not releases[-1]["pairs"]:
            not_run[runtime] = {"release": releases[-1]["release"], "why": releases[-1]["error"] or "no pairs"}
    return {"status": 1 if uncovered or regressions else 0, "newest": last, "uncovered": uncovered,
            "regressions": regressions, "known_regressions": known, "not_run": not_run}
