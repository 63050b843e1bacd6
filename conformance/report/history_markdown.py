"""``history.md``: the history model (conformance/report/history.py) as Markdown, for a CI job's
page or a pull request: the verdicts per release, the divergence classes, the support timelines,
the gate, the expectations across releases and the cases whose verdict changes."""

from __future__ import annotations

from typing import Any

from conformance.compare.verdicts import SEVERITY, SHORT
from conformance.report.history_classes import regression_text
from conformance.report.markdown import code, text


def verdict_rows(releases: list[dict]) -> list[str]:
    found = {v for r in releases for v in r["counts"]}
    return [v for v in SEVERITY if v in found] + sorted(v for v in found if v not in SEVERITY)


def _cell(value: Any) -> str:
    return "—" if value in (None, "") else text(value)


def _regressions(line: dict) -> str:
    return ", ".join(regression_text(r) for r in line["regressions"])


def _support(model: dict) -> list[str]:
    out = ["## Support: the releases that accept each spec version's op", ""]
    if not model.get("support"):
        return out + ["No release was probed.", ""]
    out += ["| runtime | spec | op | lines | first accepted | accepted since | refused or crashed on |",
            "|---|---|---|---|---|---|---|"]
    for runtime, rows in model["support"].items():
        for row in rows:
            others = "; ".join(f"{rel}: {why}" for rel, why in row["why"].items())
            out.append(f"| {text(runtime)} | {code(row['spec'])} | {text(row['op'])} | "
                       f"{', '.join(code(ln) for ln in row['lines'])} | {_cell(row['first'])} | "
                       f"{_cell(row['since'])} | {_cell(others)} |")
    return out + [""]


def _gate(model: dict) -> list[str]:
    gate = model.get("gate") or {}
    out = ["## Gate", "", f"Exit status {gate.get('status', 0)}: newest releases "
           + (", ".join(f"{rt} {rel}" for rt, rel in (gate.get("newest") or {}).items()) or "none") + ".", ""]
    for label, found in (("new on the newest release", gate.get("uncovered", [])),
                         ("regression", gate.get("regressions", [])),
                         ("regression the expectations cover", gate.get("known_regressions", []))):
        by_class: dict[tuple, list[dict]] = {}
        for item in found:
            by_class.setdefault((item["class"], item["name"]), []).append(item)
        for (_, name), items in by_class.items():
            said = (f"{items[0]['runtime']} {items[0]['release']}, {sum(i['pairs'] for i in items)} pairs"
                    if "pairs" in items[0] else regression_text(items[0]))
            out.append(f"- {label}: {text(name)}: {text(said)} (on {', '.join(code(i['line']) for i in items)})")
    return out + [""]


def markdown(model: dict, limit: int = 200) -> str:
    out = ["# Conformance history", ""]
    for runtime, releases in model["versions"].items():
        out += [f"## {text(runtime)}: verdicts per release", ""]
        names = [r["release"] for r in releases]
        out += ["| verdict | " + " | ".join(code(n) for n in names) + " |", "|---|" + "---:|" * len(names)]
        for v in verdict_rows(releases):
            out.append(f"| {text(v)} | " + " | ".join(str(r["counts"].get(v, "")) for r in releases) + " |")
        out.append("| pairs | " + " | ".join(str(r["pairs"]) for r in releases) + " |")
        failed = [r for r in releases if r["error"]]
        if failed:
            out += [""] + [f"- {code(runtime + '-' + r['release'])} not run ({text(r['state'])}): {text(r['error'])}"
                           for r in failed]
        out.append("")
    out += ["## Divergence classes", ""]
    if not model["classes"]:
        out.append("No divergence in any release.")
    else:
        out += ["| class | line | affected | first | last | fixed | regressions |", "|---|---|---|---|---|---|---|"]
        for cls in model["classes"]:
            for line in cls["lines"]:
                out.append(f"| {text(cls['name'])} | {code(line['line'])} | {text(', '.join(line['affected']))} | "
                           f"{_cell(line['first'])} | {_cell(line['last'])} | {_cell(line['fixed'])} | "
                           f"{_cell(_regressions(line))} |")
    out.append("")
    out += _support(model) + _gate(model)
    if model.get("expectations") is not None:
        out += ["## Expectations across releases", ""]
        for e in model["expectations"]:
            facts = [f"{text(rt)} {text(r['release'])}: {r['pairs'] if r['status'] == 'covers' else r['status']}"
                     for rt, rows in e["releases"].items() for r in rows]
            out.append(f"- {code(e['where'])} {text(e['reason'])}: "
                       + ("; ".join(facts) or "no release of its targets"))
        out.append("")
    strips = model["cases"]["strips"]
    out += ["## Cases whose verdict changes", "",
            f"{len(strips)} case × line strips change across releases; {model['cases']['steady']} stay the same.", ""]
    for s in strips[:limit]:
        releases = model["releases"][s["runtime"]]
        path = " → ".join(f"{rel} {SHORT.get(v, v)}" for rel, v in zip(releases, s["verdicts"]) if v)
        out.append(f"- {code(s['case'])} on {code(s['line'])}: {text(path)}")
    if len(strips) > limit:
        out.append(f"- … and {len(strips) - limit} more (history.json)")
    out.append("")
    return "\n".join(out)
