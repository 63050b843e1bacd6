"""The history view: one results set over many releases of each runtime (``conformance history``),
read as timelines.

The records are ordinary result records whose target ids carry the release
(``onnxruntime-1.18.0/CPU@onnx-14``); a *line* is such a target without its release
(``onnxruntime/CPU@onnx-14``): the same runtime, device, configuration and spec version, followed
from release to release. :func:`build` makes a JSON-able model of four parts:

``versions``
    per runtime, its releases in PEP 440 order, each with its pair counts per verdict (the timeline)
    and the environment the history made for it (a release that could not be installed or imported
    is listed with its reason, and has no pairs).
``releases``, ``lines``
    per runtime, its release names in that order (what every timeline's and strip's cells align
    with), and its lines.
``classes``
    the divergence classes. A failing pair belongs to the expectation entry that covers it (named by
    its file:line and reason), else to the ablation cluster whose cause explains it (the same pair,
    else the same case, else the same case family, for that runtime and verdict), else to
    ``runtime: verb in family``. For each class and line: the releases it *shows* in (a failing pair
    of the class), the first and the last, the release that *fixed* it, and its *regressions*. A
    release fixes a class when the cases that failed that way in the last release it showed in all
    ran on that line there and none of them failed that way (and no other case did); ``fixed`` is
    the fix after its last showing (none while it still shows), ``fixes`` every one. A release
    where its cases did not all run (``not-expressible`` at that spec version, a suite ``error``,
    no record) neither shows nor fixes it. A regression is a fix followed by a later showing:
    ``{"shown", "fixed", "again"}``.
``cases``
    per case and line, its verdict in each release of the runtime: only the strips whose verdict
    changes are kept, the steady ones are counted.
``expectations``
    (with expectations) per entry and release of the runtimes its ``targets`` match: how many
    failing pairs it covers there; ``covers_nothing`` lists the releases where it covers none, and
    ``not_applicable`` those its ``versions`` exclude.

:func:`write` lays the model out as ``history.json``, ``history.html`` (self-contained) and
``history.md``.
"""

from __future__ import annotations

import datetime
import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2
from packaging.version import InvalidVersion, Version

from conformance.compare.verdicts import COLOURS, FAILING, MEANING, SEVERITY, SHORT, VERDICTS, worst
from conformance.gate import Entry, Expectations, version_of_target
from conformance.report.causes import VERB
from conformance.report.markdown import code, text
from conformance.report.view import family_of, natural_key, runtime_family, safe_link
from conformance.run.files import write_atomic

TEMPLATES = Path(__file__).parent / "templates"

#: verdicts that say a case did not run on a target: it neither shows a class nor fixes it
NOT_RUN = frozenset({"not-expressible", "error"})
#: the states of a class on a line in one release (a timeline's cells); None: no pair on the line there
STATES = ("shows", "fixed", "clean", "not-run", "unstable")
SOURCE_RANK = {"expectation": 0, "cluster": 1, "family": 2}


# ----------------------------------------------------------------------------------------- helpers

def version_key(version: str) -> tuple:
    """Releases in PEP 440 order; a release that is no PEP 440 version sorts after, naturally."""
    try:
        return (0, Version(str(version)), [])
    except InvalidVersion:
        return (1, Version("0"), natural_key(str(version)))


def line_of(target_id: str, version: str) -> str:
    """The target id without its release: ``onnxruntime-1.18.0/CPU@onnx-14`` (release ``1.18.0``)
    -> ``onnxruntime/CPU@onnx-14``. An id that does not name the release is returned as it is."""
    target_id = str(target_id)
    cut = min((i for i in (target_id.find("/"), target_id.find("@")) if i >= 0), default=len(target_id))
    head, rest = target_id[:cut], target_id[cut:]
    suffix = f"-{version}"
    if version and head.endswith(suffix) and len(head) > len(suffix):
        return head[:-len(suffix)] + rest
    return target_id


def release_of(record: dict) -> str:
    """The runtime release a record ran on: its ``runtime_version``, else the one its target names."""
    return str(record.get("runtime_version") or version_of_target(str(record["target"])))


def runtime_of(record: dict, release: str) -> str:
    """The record's runtime (package) name, as the history's environments name it."""
    if record.get("runtime"):
        return str(record["runtime"])
    head = str(record["target"]).split("/", 1)[0].split("@", 1)[0]
    return head[:-len(release) - 1] if release and head.endswith(f"-{release}") else head


def _ordered_counts(counter: Counter) -> dict[str, int]:
    known = [v for v in VERDICTS if counter.get(v)]
    return {v: counter[v] for v in known + sorted(v for v in counter if v not in VERDICTS)}


def _applies(entry: Entry, version: str) -> bool:
    check = getattr(entry, "applies_to_version", None)
    return True if check is None else bool(check(version))


# ----------------------------------------------------------------------------------------- classes

class _Clusters:
    """Which ablation cluster explains a failing record: the one naming the pair, else the case,
    else the case family, for the record's runtime family and verdict (first listed wins)."""

    def __init__(self, clusters: Iterable[dict] | None):
        self.by_pair: dict[tuple[str, str], dict] = {}
        self.by_case: dict[tuple[str, str, str], dict] = {}
        self.by_family: dict[tuple[str, str, str], dict] = {}
        for c in clusters or []:
            runtime, verdict = str(c.get("runtime") or ""), str(c.get("verdict") or "")
            by_target = c.get("cases_by_target")
            pairs = ([(str(case), str(t)) for t, ids in by_target.items() for case in ids or []]
                     if isinstance(by_target, dict) else
                     [(str(case), str(c.get("target") or "")) for case in c.get("cases") or []])
            cases = [str(x) for x in c.get("cases") or []] + [case for case, _ in pairs]
            for pair in pairs:
                self.by_pair.setdefault(pair, c)
            for case in cases:
                self.by_case.setdefault((runtime, verdict, case), c)
            for fam in [str(f) for f in c.get("families") or []] + [family_of(case) for case in cases]:
                self.by_family.setdefault((runtime, verdict, fam), c)

    def find(self, record: dict) -> dict | None:
        key = (runtime_family(record), str(record["verdict"]))
        pair = self.by_pair.get((record["case"], record["target"]))
        if pair is not None and str(pair.get("verdict") or record["verdict"]) == key[1]:
            return pair
        return self.by_case.get((*key, record["case"])) or self.by_family.get((*key, family_of(record["case"])))


def _class_of(record: dict, entry: Entry | None, clusters: _Clusters, gated_here: bool) -> tuple[tuple, dict]:
    """(key, description) of a failing record's divergence class; without expectations here
    (``gated_here`` false), the entry the record's own gate named (its ``expected``) counts."""
    verdict = str(record["verdict"])
    runtime = runtime_family(record)
    if entry is not None:
        where = str(entry.where)
        return (("expectation", where), {
            "source": "expectation", "name": f"{where}: {entry.reason}", "where": where, "reason": entry.reason,
            "kind": entry.kind, "link": entry.link, "versions": str(getattr(entry, "versions", "") or "")})
    given = None if gated_here else record.get("expected")
    if isinstance(given, dict) and given.get("where"):        # gated before; no expectations given here
        where = str(given["where"])
        return (("expectation", where), {
            "source": "expectation", "name": f"{where}: {given.get('reason') or ''}".rstrip(": "),
            "where": where, "reason": str(given.get("reason") or ""), "kind": str(given.get("kind") or ""),
            "link": str(given.get("link") or ""), "versions": str(given.get("versions") or "")})
    cluster = clusters.find(record)
    if cluster is not None:
        cause = str(cluster.get("cause") or "(no cause named)")
        return (("cluster", runtime, verdict, cause), {
            "source": "cluster", "name": f"{runtime}: {cause}", "cause": cause, "cluster": cluster.get("id"),
            "runtime": runtime, "verdict": verdict, "features": list(cluster.get("features") or [])})
    fam = family_of(str(record["case"]))
    return (("family", runtime, verdict, fam), {
        "source": "family", "name": f"{runtime}: {VERB.get(verdict, verdict)} in {fam}", "family": fam,
        "runtime": runtime, "verdict": verdict})


def _follow(releases: list[str], present: set[str], members: dict[str, set[str]],
            ran: dict[str, set[str]], unstable: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """A class on one line: its state in each release, and first, last, fixed, fixes, regressions.
    A release where a case of the class gave different verdicts in repeated runs (``unstable``:
    release -> cases) is ``unstable``: it neither shows, fixes nor brings the class back."""
    unstable = unstable or {}
    states: list[str | None] = []
    shows: list[str] = []
    fixes: list[str] = []
    regressions: list[dict[str, str]] = []
    reference: set[str] = set(next((members[r] for r in releases if members.get(r)), set()))
    last_shown: str | None = None
    fixed_at: str | None = None
    for r in releases:
        if r not in present:
            states.append(None)
            continue
        failing = members.get(r) or set()
        if unstable.get(r) and (unstable[r] & (failing | reference)):
            states.append("unstable")
            continue
        if failing:
            if fixed_at is not None and last_shown is not None:
                regressions.append({"shown": last_shown, "fixed": fixed_at, "again": r})
            fixed_at, last_shown, reference = None, r, set(failing)
            shows.append(r)
            states.append("shows")
        elif reference and reference <= ran.get(r, set()):
            if last_shown is not None and fixed_at is None:
                fixed_at = r
                fixes.append(r)
                states.append("fixed")
            else:
                states.append("clean")
        else:
            states.append("not-run")
    return {"states": states, "shows": shows, "first": shows[0] if shows else None,
            "last": shows[-1] if shows else None, "fixed": fixed_at, "fixes": fixes, "regressions": regressions}


# ------------------------------------------------------------------------------------------- build

def build(records: Iterable[dict], expectations: Expectations | None = None, clusters: list[dict] | None = None,
          environments: Iterable[dict] = ()) -> dict:
    """The history model (see the module's docstring); plain JSON values only."""
    rows = []   # (record, runtime, release, line)
    for rec in records:
        if not (isinstance(rec, dict) and rec.get("case") and rec.get("target") and rec.get("verdict")):
            continue
        release = release_of(rec)
        rows.append((rec, runtime_of(rec, release), release, line_of(str(rec["target"]), release)))

    # ---- versions: the releases of each runtime, with their counts and environments
    envs: dict[tuple[str, str], dict] = {}
    for given in environments or ():
        if isinstance(given, dict) and given.get("package") and given.get("version"):
            envs[(str(given["package"]), str(given["version"]))] = dict(given)
    counts: defaultdict[tuple[str, str], Counter] = defaultdict(Counter)
    targets_of: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for rec, runtime, release, _line in rows:
        counts[(runtime, release)][str(rec["verdict"])] += 1
        targets_of[(runtime, release)].add(str(rec["target"]))
    releases: defaultdict[str, set[str]] = defaultdict(set)
    for runtime, release in list(counts) + list(envs):
        releases[runtime].add(release)
    order = {rt: sorted(found, key=version_key) for rt, found in sorted(releases.items())}
    versions: dict[str, list[dict]] = {}
    for runtime, found in order.items():
        versions[runtime] = []
        for release in found:
            c = counts.get((runtime, release), Counter())
            env = envs.get((runtime, release))
            versions[runtime].append({
                "release": release, "counts": _ordered_counts(c), "pairs": sum(c.values()),
                "targets": len(targets_of.get((runtime, release), ())),
                "error": str((env or {}).get("error") or ""), "environment": env})

    # ---- classes
    index = _Clusters(clusters)
    ran: defaultdict[str, defaultdict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # line -> release
    present: defaultdict[str, set[str]] = defaultdict(set)
    runtime_of_line: dict[str, str] = {}
    classes: dict[tuple, dict] = {}
    members: dict[tuple, defaultdict[str, defaultdict[str, set[str]]]] = {}   # class -> line -> release -> cases
    matched: dict[int, Counter] = defaultdict(Counter)   # id(entry) -> (runtime, release) -> pairs
    unstable: defaultdict[str, defaultdict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for rec, runtime, release, line in rows:
        present[line].add(release)
        runtime_of_line.setdefault(line, runtime)
        verdict = str(rec["verdict"])
        if rec.get("unstable"):  # its verdict varied between repeated runs of this release
            unstable[line][release].add(str(rec["case"]))
        if verdict not in NOT_RUN:
            ran[line][release].add(str(rec["case"]))
        if verdict not in FAILING:
            continue
        entry = expectations.match(rec) if expectations is not None else None
        if entry is not None:
            matched[id(entry)][(runtime, release)] += 1
        # the class is the entry's on every release, whatever its `versions` say: a divergence that
        # comes back after the releases an entry names is the same class, a regression
        named = expectations.match(rec, any_version=True) if expectations is not None else None
        key, info = _class_of(rec, named, index, expectations is not None)
        if key not in classes:
            classes[key] = dict(info, runtimes=set(), verdicts=Counter(), pairs=0, cases=set())
            members[key] = defaultdict(lambda: defaultdict(set))
        cls = classes[key]
        cls["runtimes"].add(runtime)
        cls["verdicts"][verdict] += 1
        cls["pairs"] += 1
        cls["cases"].add(str(rec["case"]))
        members[key][line][release].add(str(rec["case"]))

    class_list = []
    for key, cls in classes.items():
        lines = []
        for line in sorted(members[key], key=lambda ln: (runtime_of_line[ln], natural_key(ln))):
            runtime = runtime_of_line[line]
            by_release = members[key][line]
            followed = _follow(order[runtime], present[line], by_release, ran[line], unstable.get(line))
            lines.append({"line": line, "runtime": runtime, **followed,
                          "cases": len(set().union(*by_release.values())),
                          "unstable": [r for r, st in zip(order[runtime], followed["states"]) if st == "unstable"],
                          "pairs_by_release": {r: len(by_release[r]) for r in order[runtime] if by_release.get(r)}})
        cls.update(runtimes=sorted(cls["runtimes"]), cases=len(cls["cases"]), case_ids=sorted(cls["cases"]), lines=lines,
                   verdicts=_ordered_counts(cls["verdicts"]), verdict=worst(list(cls["verdicts"])),
                   regressions=sum(len(ln["regressions"]) for ln in lines),
                   open=any(ln["fixed"] is None for ln in lines))
        class_list.append(cls)
    class_list.sort(key=lambda c: (c["runtimes"], SOURCE_RANK[c["source"]], natural_key(c["name"])))
    for i, cls in enumerate(class_list, 1):
        cls["id"] = f"k{i}"

    # ---- case strips
    verdict_of: defaultdict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for rec, _runtime, release, line in rows:
        verdict_of[(str(rec["case"]), line)][release] = str(rec["verdict"])
    strips: list[dict[str, Any]] = []
    steady_by_line: Counter = Counter()
    for (case, line), seen in verdict_of.items():
        if len(set(seen.values())) <= 1:
            steady_by_line[line] += 1
            continue
        runtime = runtime_of_line[line]
        strips.append({"case": case, "line": line, "runtime": runtime,
                       "verdicts": [seen.get(r) for r in order[runtime]]})
    strips.sort(key=lambda s: (s["runtime"], natural_key(s["line"]), natural_key(s["case"])))

    model: dict[str, Any] = {
        "versions": versions,
        "releases": order,
        "lines": {rt: sorted({ln for ln, r in runtime_of_line.items() if r == rt}, key=natural_key) for rt in order},
        "classes": class_list,
        "cases": {"strips": strips, "steady": sum(steady_by_line.values()),
                  "steady_by_line": dict(sorted(steady_by_line.items()))},
        "expectations": (_expectations(expectations, order, targets_of, matched)
                         if expectations is not None else None),
    }
    return model


def _expectations(expectations: Expectations, order: dict[str, list[str]],
                  targets_of: dict[tuple[str, str], set[str]], matched: dict[int, Counter]) -> list[dict]:
    """Per entry, per release of the runtimes its targets match: the failing pairs it covers there."""
    out = []
    for entry in expectations.entries:
        if entry.tolerance is not None:
            continue   # a tolerance changes how pairs are judged; it covers no failure
        by_runtime: dict[str, list[dict]] = {}
        nothing: dict[str, list[str]] = {}
        not_applicable: dict[str, list[str]] = {}
        for runtime, found in order.items():
            rows = []
            for release in found:
                ids = targets_of.get((runtime, release)) or set()
                if not any(p.match(t) for p in entry.targets for t in ids):
                    continue
                if not _applies(entry, release):
                    rows.append({"release": release, "status": "not applicable", "pairs": 0})
                    not_applicable.setdefault(runtime, []).append(release)
                    continue
                n = matched.get(id(entry), Counter()).get((runtime, release), 0)
                rows.append({"release": release, "status": "covers" if n else "covers nothing", "pairs": n})
                if not n:
                    nothing.setdefault(runtime, []).append(release)
            if rows:
                by_runtime[runtime] = rows
        out.append({"where": str(entry.where), "name": f"{entry.where}: {entry.reason}", "reason": entry.reason,
                    "kind": entry.kind, "link": entry.link, "versions": str(getattr(entry, "versions", "") or ""),
                    "targets": [p.pattern for p in entry.targets], "releases": by_runtime,
                    "covers_nothing": nothing, "not_applicable": not_applicable,
                    "pairs": sum(matched.get(id(entry), Counter()).values())})
    return out


# ------------------------------------------------------------------------------------------- write

def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters.update(short=lambda v: SHORT.get(v, v), link=safe_link)
    env.globals.update(COLOURS=COLOURS, SEVERITY=SEVERITY, VERDICT_HELP=MEANING, SHORT=SHORT,
                       tokens=lambda records: "")
    return env


def _verdict_rows(releases: list[dict]) -> list[str]:
    found = {v for r in releases for v in r["counts"]}
    return [v for v in SEVERITY if v in found] + sorted(v for v in found if v not in SEVERITY)


def html(model: dict) -> str:
    generated = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    tables = {rt: _verdict_rows(rel) for rt, rel in model["versions"].items()}
    return _env().get_template("history.html.j2").render(model=model, root="", generated=generated,
                                                         verdict_rows=tables)


def _cell(value: Any) -> str:
    return "—" if value in (None, "") else text(value)


def _regressions(line: dict) -> str:
    return ", ".join(f"{r['shown']} → fixed {r['fixed']} → again {r['again']}" for r in line["regressions"])


def markdown(model: dict, limit: int = 200) -> str:
    out = ["# Conformance history", ""]
    for runtime, releases in model["versions"].items():
        out += [f"## {text(runtime)}: verdicts per release", ""]
        names = [r["release"] for r in releases]
        out += ["| verdict | " + " | ".join(code(n) for n in names) + " |", "|---|" + "---:|" * len(names)]
        for v in _verdict_rows(releases):
            out.append(f"| {text(v)} | " + " | ".join(str(r["counts"].get(v, "")) for r in releases) + " |")
        out.append("| pairs | " + " | ".join(str(r["pairs"]) for r in releases) + " |")
        failed = [r for r in releases if r["error"]]
        if failed:
            out += [""] + [f"- {code(runtime + '-' + r['release'])} not run: {text(r['error'])}" for r in failed]
        out.append("")
    out += ["## Divergence classes", ""]
    if not model["classes"]:
        out.append("No divergence in any release.")
    else:
        out += ["| class | line | shows in | first | last | fixed | regressions |", "|---|---|---|---|---|---|---|"]
        for cls in model["classes"]:
            for line in cls["lines"]:
                out.append(f"| {text(cls['name'])} | {code(line['line'])} | {text(', '.join(line['shows']))} | "
                           f"{_cell(line['first'])} | {_cell(line['last'])} | {_cell(line['fixed'])} | "
                           f"{_cell(_regressions(line))} |")
    out.append("")
    if model.get("expectations") is not None:
        out += ["## Expectations across releases", ""]
        for e in model["expectations"]:
            facts = [f"{text(rt)} {text(r['release'])}: {r['pairs'] if r['status'] == 'covers' else r['status']}"
                     for rt, rows in e["releases"].items() for r in rows]
            out.append(f"- {code(e['where'])} {text(e['reason'])}: " + ("; ".join(facts) or "no release of its targets"))
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


def write(model: dict, out_dir: str | Path) -> Path:
    """``out_dir/history.json``, ``history.html`` and ``history.md``; returns the HTML's path."""
    out = Path(out_dir)
    write_atomic(out / "history.json", json.dumps(model, indent=1, ensure_ascii=False, default=str) + "\n")
    write_atomic(out / "history.md", markdown(model))
    page = out / "history.html"
    write_atomic(page, html(model))
    return page
