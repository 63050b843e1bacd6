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
    the divergence classes (conformance/report/history_classes.py). A failing pair belongs to the
    expectation entry that covers it (named by its file:line, relative to the current folder, and
    reason), else to the ablation cluster whose cause explains it (the same pair, else the same
    case, else the same case family, for that runtime and verdict), else to ``runtime: verb in
    family``. For each class and line: its state in each release, the releases it *shows* in, those
    it *affects* (its cases still fail, another way, while it is open), the first showing, the last
    affected release, the release that *fixed* it (its cases all ran and passed), every fix, and its
    *regressions* (a fix followed by a showing, or a refusal that became a silent divergence), and
    per release the pairs the gate calls new (``new_by_release``).
``support``
    per runtime, the support timelines: for each spec version, op and line, which releases accept
    the op's minimal program (conformance/report/history_support.py).
``gate``
    what the history says to a CI job (conformance/report/history_gate.py): its exit status and why.
``cases``
    per case and line, its verdict in each release of the runtime: only the strips whose verdict
    changes are kept, the steady ones are counted.
``expectations``
    (with expectations) per entry whose ``targets`` match a release of the history (an entry of
    another runtime is left out), per release: how many failing pairs it covers there;
    ``covers_nothing`` lists the releases where it covers none, and ``not_applicable`` those its
    ``versions`` exclude.

:func:`write` lays the model out as ``history.json``, ``history.html`` (self-contained) and
``history.md``.
"""

from __future__ import annotations

import datetime
import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from packaging.version import InvalidVersion, Version

from conformance.compare.verdicts import COLOURS, FAILING, MEANING, SEVERITY, SHORT, VERDICTS, worst
from conformance.files import write_atomic
from conformance.gate import Entry, Expectations, version_of_target
from conformance.report import history_gate, history_support
from conformance.report.history_classes import (
    NOT_RUN,
    REFUSALS,
    SOURCE_RANK,
    Clusters,
    class_of,
    follow,
    regression_text,
    relative,
)
from conformance.report.history_markdown import markdown, verdict_rows
from conformance.report.view import natural_key, safe_link
from conformance.results import Record

TEMPLATES = Path(__file__).parent / "templates"


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


def release_of(record: Record) -> str:
    """The runtime release a record ran on: its ``runtime_version``, else the one its target names."""
    return str(record.runtime_version or version_of_target(str(record.target)))


def runtime_of(record: Record, release: str) -> str:
    """The record's runtime (package) name, as the history's environments name it."""
    if record.runtime:
        return str(record.runtime)
    head = str(record.target).split("/", 1)[0].split("@", 1)[0]
    return head[:-len(release) - 1] if release and head.endswith(f"-{release}") else head


def _ordered_counts(counter: Counter) -> dict[str, int]:
    known = [v for v in VERDICTS if counter.get(v)]
    return {v: counter[v] for v in known + sorted(v for v in counter if v not in VERDICTS)}


def _applies(entry: Entry, version: str) -> bool:
    check = getattr(entry, "applies_to_version", None)
    return True if check is None else bool(check(version))


# ------------------------------------------------------------------------------------------- build

def build(records: Iterable[Record], expectations: Expectations | None = None, clusters: list[dict] | None = None,
          environments: Iterable[dict] = ()) -> dict:
    """The history model (see the module's docstring); plain JSON values only."""
    rows = _rows(records)
    envs = _environments(environments)
    order, versions, targets_of = _versions(rows, envs)
    seen = _failures(rows, expectations, Clusters(clusters))
    class_list = _classes(seen, order)
    strips, steady_by_line = _strips(rows, seen.runtime_of_line, order)
    runtime_of_line = seen.runtime_of_line
    model: dict[str, Any] = {
        "versions": versions,
        "releases": order,
        "lines": {rt: sorted({ln for ln, r in runtime_of_line.items() if r == rt}, key=natural_key) for rt in order},
        "classes": class_list,
        "cases": {"strips": strips, "steady": sum(steady_by_line.values()),
                  "steady_by_line": dict(sorted(steady_by_line.items()))},
        "expectations": (_expectations(expectations, order, targets_of, seen.matched)
                         if expectations is not None else None),
        "support": history_support.timelines(envs, order, line_of),
    }
    model["gate"] = history_gate.summarise(versions, class_list)
    return model


#: a record with what the history reads it by: (record, runtime, release, line)
_Row = tuple[Record, str, str, str]


def _rows(records: Iterable[Record]) -> list[_Row]:
    """Each record that names its case, target and verdict, with its runtime, release and line."""
    rows = []
    for rec in records:
        if rec.case and rec.target and rec.verdict:
            release = release_of(rec)
            rows.append((rec, runtime_of(rec, release), release, line_of(str(rec.target), release)))
    return rows


def _environments(environments: Iterable[dict]) -> dict[tuple[str, str], dict]:
    """The environments the history made, by (package, release); those that name neither are left out."""
    envs: dict[tuple[str, str], dict] = {}
    for given in environments or ():
        if isinstance(given, dict) and given.get("package") and given.get("version"):
            envs[(str(given["package"]), str(given["version"]))] = dict(given)
    return envs


def _versions(rows: list[_Row], envs: dict[tuple[str, str], dict]) -> tuple[
        dict[str, list[str]], dict[str, list[dict]], defaultdict[tuple[str, str], set[str]]]:
    """The releases of each runtime in order (those with records and those with an environment), each
    with its counts and environment (the model's ``versions``), and the target ids of each (runtime,
    release)."""
    counts: defaultdict[tuple[str, str], Counter] = defaultdict(Counter)
    targets_of: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for rec, runtime, release, _line in rows:
        counts[(runtime, release)][str(rec.verdict)] += 1
        targets_of[(runtime, release)].add(str(rec.target))
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
                "error": str((env or {}).get("error") or ""), "state": _state(env), "environment": env})
    return order, versions, targets_of


def _by_release() -> defaultdict[str, defaultdict[str, set[str]]]:
    return defaultdict(lambda: defaultdict(set))


@dataclass
class _Seen:
    """What the records say per line and release (the cases that ran, were unstable, failed, were
    new), and the classes their failing pairs belong to, with each class's cases per line and release."""
    present: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    runtime_of_line: dict[str, str] = field(default_factory=dict)
    ran: defaultdict[str, defaultdict[str, set[str]]] = field(default_factory=_by_release)
    unstable: defaultdict[str, defaultdict[str, set[str]]] = field(default_factory=_by_release)
    failing: defaultdict[str, defaultdict[str, dict[str, str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(dict)))
    new: defaultdict[str, defaultdict[str, set[str]]] = field(default_factory=_by_release)
    classes: dict[tuple, dict] = field(default_factory=dict)
    members: dict[tuple, defaultdict[str, defaultdict[str, set[str]]]] = field(default_factory=dict)
    #: id(entry) -> (runtime, release) -> the failing pairs it covers
    matched: dict[int, Counter] = field(default_factory=lambda: defaultdict(Counter))


def _failures(rows: list[_Row], expectations: Expectations | None, index: Clusters) -> _Seen:
    """Every row read into a :class:`_Seen`; each failing pair into its class."""
    seen = _Seen()
    for rec, runtime, release, line in rows:
        seen.present[line].add(release)
        seen.runtime_of_line.setdefault(line, runtime)
        verdict = str(rec.verdict)
        if rec.unstable:  # its verdict varied between repeated runs of this release
            seen.unstable[line][release].add(str(rec.case))
        if verdict not in NOT_RUN:
            seen.ran[line][release].add(str(rec.case))
        if verdict not in FAILING:
            continue
        seen.failing[line][release][str(rec.case)] = verdict
        if rec.gate in ("", "new"):   # a record no gate judged is new
            seen.new[line][release].add(str(rec.case))
        entry = expectations.match(rec) if expectations is not None else None
        if entry is not None:
            seen.matched[id(entry)][(runtime, release)] += 1
        # the class is the entry's on every release, whatever its `versions` say: a divergence that
        # comes back after the releases an entry names is the same class, a regression
        named = expectations.match(rec, any_version=True) if expectations is not None else None
        key, info = class_of(rec, named, index, expectations is not None)
        if key not in seen.classes:
            seen.classes[key] = dict(info, runtimes=set(), verdicts=Counter(), pairs=0, cases=set())
            seen.members[key] = _by_release()
        cls = seen.classes[key]
        cls["runtimes"].add(runtime)
        cls["verdicts"][verdict] += 1
        cls["pairs"] += 1
        cls["cases"].add(str(rec.case))
        seen.members[key][line][release].add(str(rec.case))
    return seen


def _classes(seen: _Seen, order: dict[str, list[str]]) -> list[dict]:
    """The model's ``classes``: each class with its lines followed release by release, in their order,
    numbered ``k1``, ``k2``, ..."""
    peers: defaultdict[str, defaultdict[str, dict[str, set[str]]]] = defaultdict(lambda: defaultdict(dict))
    for by_line in seen.members.values():   # line -> release -> failing case -> the cases of its class there
        for line, by_release in by_line.items():
            for release, cases in by_release.items():
                for case in cases:
                    peers[line][release][case] = cases
    class_list = []
    for key, cls in seen.classes.items():
        lines = _class_lines(seen, key, cls, order, peers)
        cls.update(runtimes=sorted(cls["runtimes"]), cases=len(cls["cases"]), case_ids=sorted(cls["cases"]),
                   lines=lines, verdicts=_ordered_counts(cls["verdicts"]), verdict=worst(list(cls["verdicts"])),
                   regressions=sum(len(ln["regressions"]) for ln in lines),
                   open=any(ln["fixed"] is None for ln in lines))
        class_list.append(cls)
    class_list.sort(key=lambda c: (c["runtimes"], SOURCE_RANK[c["source"]], natural_key(c["name"])))
    for i, cls in enumerate(class_list, 1):
        cls["id"] = f"k{i}"
    return class_list


def _class_lines(seen: _Seen, key: tuple, cls: dict, order: dict[str, list[str]],
                 peers: defaultdict[str, defaultdict[str, dict[str, set[str]]]]) -> list[dict]:
    """One class's lines, each followed through its runtime's releases (history_classes.follow)."""
    lines = []
    new = seen.new
    for line in sorted(seen.members[key], key=lambda ln: (seen.runtime_of_line[ln], natural_key(ln))):
        runtime = seen.runtime_of_line[line]
        by_release = seen.members[key][line]
        followed = follow(order[runtime], seen.present[line], by_release, seen.ran[line], seen.failing.get(line),
                          seen.unstable.get(line), refusal=set(cls["verdicts"]) <= REFUSALS, new=new.get(line),
                          peers=peers.get(line))
        lines.append({"line": line, "runtime": runtime, **followed,
                      "cases": len(set().union(*by_release.values())),
                      "new_by_release": {r: len(by_release[r] & new[line][r]) for r in order[runtime]
                                         if by_release.get(r) and by_release[r] & new[line][r]},
                      "unstable": [r for r, st in zip(order[runtime], followed["states"]) if st == "unstable"],
                      "pairs_by_release": {r: len(by_release[r]) for r in order[runtime] if by_release.get(r)}})
    return lines


def _strips(rows: list[_Row], runtime_of_line: dict[str, str], order: dict[str, list[str]]
            ) -> tuple[list[dict[str, Any]], Counter]:
    """The model's case strips: per case and line whose verdict changes, its verdict in each release;
    and per line, how many cases kept theirs."""
    verdict_of: defaultdict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for rec, _runtime, release, line in rows:
        verdict_of[(str(rec.case), line)][release] = str(rec.verdict)
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
    return strips, steady_by_line


def _state(env: dict | None) -> str:
    """An environment's state: ``ready``, or why it has no pairs (``unavailable``: not installed;
    ``broken``: installed, but its import or its probes show it cannot work; ``unsupported``:
    outside the range the suite supports, left out); "" where the history did not say."""
    if env is None:
        return ""
    return str(env.get("state") or ("unavailable" if env.get("error") else "ready"))


def _expectations(expectations: Expectations, order: dict[str, list[str]],
                  targets_of: dict[tuple[str, str], set[str]], matched: dict[int, Counter]) -> list[dict]:
    """Per entry, per release of the runtimes its targets match: the failing pairs it covers there;
    an entry whose targets match no release of the history is left out."""
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
        if not by_runtime:
            continue
        where = relative(str(entry.where))
        out.append({"where": where, "name": f"{where}: {entry.reason}", "reason": entry.reason,
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
    env.filters.update(short=lambda v: SHORT.get(v, v), link=safe_link, regression=regression_text)
    env.globals.update(COLOURS=COLOURS, SEVERITY=SEVERITY, VERDICT_HELP=MEANING, SHORT=SHORT,
                       tokens=lambda records: "")
    return env


def html(model: dict) -> str:
    generated = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    tables = {rt: verdict_rows(rel) for rt, rel in model["versions"].items()}
    return _env().get_template("history.html.j2").render(model=model, root="", generated=generated,
                                                         verdict_rows=tables)


def write(model: dict, out_dir: str | Path) -> Path:
    """``out_dir/history.json``, ``history.html`` and ``history.md``; returns the HTML's path."""
    out = Path(out_dir)
    write_atomic(out / "history.json", json.dumps(model, indent=1, ensure_ascii=False, default=str) + "\n")
    write_atomic(out / "history.md", markdown(model))   # conformance/report/history_markdown.py
    page = out / "history.html"
    write_atomic(page, html(model))
    return page
