"""The report's history view (conformance/report/history.py) on a small hand-written history of a
test runtime ``double`` over releases 1.0, 2.0 and 3.0 (and a 1.5 that could not be installed):
divergence classes with their first, last and fixing releases and a regression, a release whose
pairs are not-expressible, the verdict counts per release, the case strips, the expectations per
release, and the three files it writes. No runtime, no network."""

from __future__ import annotations

import io
import json
import os

import pytest
from rich.console import Console

from conformance.gate import Expectations
from conformance.history.repeats import mark, suspects, unstable
from conformance.report.history import build, line_of, write
from conformance.report.history_classes import relative
from conformance.report.history_terminal import print_history
from conformance.results import records_of

RELEASES = ("1.0", "2.0", "3.0")
LINE = "double/CPU@onnx-14"
LINE7 = "double/CPU@onnx-7"

#: case -> its verdict in 1.0, 2.0, 3.0 on onnx-14
VERDICTS = {
    "double/a[x=1]": ("fail", "pass", "pass"),              # fixed in 2.0 (expectation, versions "<2")
    "double/a[x=2]": ("fail", "pass", "pass"),
    "double/b[x=1]": ("pass", "fail", "fail"),              # appears in 2.0 (expectation covering nothing in 1.0)
    "double/b[x=2]": ("pass", "pass", "pass"),
    "double/c[x=1]": ("fail", "pass", "fail"),              # a regression (named by an ablation cluster)
    "double/d[x=1]": ("fail", "not-expressible", "fail"),   # 2.0 neither shows nor fixes it
    "double/e[x=1]": ("fail", "not-expressible", "pass"),   # fixed in 3.0, not 2.0
    "double/f[x=1]": ("rejected", "rejected", "pass"),      # fixed in 3.0 (a family class)
    "double/steady[x=1]": ("pass", "pass", "pass"),
}
#: on onnx-7, one more line: c passes throughout, f is rejected in 2.0 only
VERDICTS7 = {
    "double/c[x=1]": ("pass", "pass", "pass"),
    "double/f[x=1]": ("pass", "rejected", "pass"),
}

CLUSTERS = [{
    "id": "c1", "runtime": "double", "verdict": "fail", "cause": "fails whenever clip is set",
    "features": ["clip"], "case_families": ["double/c"], "cases": ["double/c[x=1]"],
    "targets": ["double-1.0/CPU@onnx-14"], "cases_by_target": {"double-1.0/CPU@onnx-14": ["double/c[x=1]"]},
}]

ENVIRONMENTS = [
    {"package": "double", "version": "1.5", "error": "could not be installed: no wheel for this platform"},
    {"package": "double", "version": "2.0", "error": ""},
]


def record(case: str, release: str, verdict: str, spec: str = "onnx-14") -> dict:
    return {"case": case, "target": f"double-{release}/CPU@{spec}", "runtime": "double", "runtime_version": release,
            "device": "CPU", "spec": spec, "spec_family": "onnx", "op": "GRU", "verdict": verdict,
            "features": ["clip"] if case.startswith("double/c") else []}


def records() -> list[dict]:
    out = []
    for table, spec in ((VERDICTS, "onnx-14"), (VERDICTS7, "onnx-7")):
        for case, verdicts in table.items():
            out += [record(case, rel, v, spec) for rel, v in zip(RELEASES, verdicts)]
    return out


EXPECTATIONS = """\
targets: "double-*/CPU@*"
entries:
  - cases: "double/b*"
    verdict: fail
    kind: known-bug
    reason: b breaks from 2.0 on
  - cases: "double/a*"
    versions: "<2"
    kind: known-bug
    reason: a is wrong before 2.0
"""


@pytest.fixture
def expectations(tmp_path):
    path = tmp_path / "double.yaml"
    path.write_text(EXPECTATIONS, encoding="utf-8")
    return Expectations.load([path])


def by_name(model: dict) -> dict:
    return {c["name"]: c for c in model["classes"]}


def one_line(cls: dict, line: str = LINE) -> dict:
    found = [ln for ln in cls["lines"] if ln["line"] == line]
    assert len(found) == 1, (line, [ln["line"] for ln in cls["lines"]])
    return found[0]


def facts(line: dict) -> tuple:
    return line["shows"], line["first"], line["last"], line["fixed"], line["fixes"], line["regressions"]


# ---------------------------------------------------------------------------------------------- tests

def test_line_of_drops_the_release_only():
    assert line_of("onnxruntime-1.18.0/CPU@onnx-14", "1.18.0") == "onnxruntime/CPU@onnx-14"
    assert (line_of("openvino-2024.0.0/CPU/precision=pinned@onnx-22", "2024.0.0")
            == "openvino/CPU/precision=pinned@onnx-22")
    assert line_of("onnx-reference-1.17.0/CPU@onnx-7", "1.17.0") == "onnx-reference/CPU@onnx-7"
    assert line_of("torch-2.13.0+cpu/CPU@torch", "2.13.0+cpu") == "torch/CPU@torch"
    # a release that appears later in the id (a spec version, a configuration) is not touched
    assert line_of("double-1.0/CPU@onnx-1.0", "1.0") == "double/CPU@onnx-1.0"
    assert line_of("double/CPU@onnx-14", "1.0") == "double/CPU@onnx-14"


def test_versions_are_ordered_with_counts_per_verdict_and_environments():
    model = build(records_of(records()), clusters=CLUSTERS, environments=ENVIRONMENTS)
    releases = model["versions"]["double"]
    assert [r["release"] for r in releases] == ["1.0", "1.5", "2.0", "3.0"]
    assert model["releases"] == {"double": ["1.0", "1.5", "2.0", "3.0"]}
    counts = {r["release"]: r["counts"] for r in releases}
    assert counts == {
        "1.0": {"pass": 5, "fail": 5, "rejected": 1},
        "1.5": {},
        "2.0": {"pass": 6, "fail": 1, "rejected": 2, "not-expressible": 2},
        "3.0": {"pass": 8, "fail": 3},
    }
    assert [r["pairs"] for r in releases] == [11, 0, 11, 11]
    assert [r["targets"] for r in releases] == [2, 0, 2, 2]
    assert releases[1]["error"] == "could not be installed: no wheel for this platform"
    assert releases[1]["environment"]["package"] == "double"
    assert releases[2]["error"] == "" and releases[2]["environment"]["version"] == "2.0"
    assert releases[0]["environment"] is None
    assert model["lines"] == {"double": [LINE7, LINE]}   # spec versions in natural order


def test_releases_follow_pep440_order_not_text_order():
    recs = [record("double/a[x=1]", rel, "pass") for rel in ("10.0", "9.0", "9.0rc1", "1.10")]
    model = build(records_of(recs))
    assert model["releases"]["double"] == ["1.10", "9.0rc1", "9.0", "10.0"]


def test_classes_first_last_fixed_and_regressions(expectations):
    model = build(records_of(records()), expectations=expectations, clusters=CLUSTERS, environments=ENVIRONMENTS)
    classes = by_name(model)
    where_b, where_a = (str(e.where) for e in expectations.entries)
    assert where_b.endswith("double.yaml:3") and where_a.endswith("double.yaml:7")
    assert set(classes) == {f"{where_b}: b breaks from 2.0 on", f"{where_a}: a is wrong before 2.0",
                            "double: fails whenever clip is set", "double: fails in double/d",
                            "double: fails in double/e", "double: rejects the case in double/f"}

    a = classes[f"{where_a}: a is wrong before 2.0"]
    assert (a["source"], a["where"], a["reason"], a["kind"], a["versions"]) == (
        "expectation", where_a, "a is wrong before 2.0", "known-bug", "<2")
    assert [ln["line"] for ln in a["lines"]] == [LINE]
    assert facts(one_line(a)) == (["1.0"], "1.0", "1.0", "2.0", ["2.0"], [])
    assert one_line(a)["states"] == ["shows", None, "fixed", "clean"]
    assert one_line(a)["cases"] == 2 and one_line(a)["pairs_by_release"] == {"1.0": 2}
    assert a["open"] is False

    b = classes[f"{where_b}: b breaks from 2.0 on"]
    assert facts(one_line(b)) == (["2.0", "3.0"], "2.0", "3.0", None, [], [])
    assert one_line(b)["states"] == ["clean", None, "shows", "shows"]
    assert b["open"] is True

    c = classes["double: fails whenever clip is set"]
    assert (c["source"], c["cluster"], c["cause"]) == ("cluster", "c1", "fails whenever clip is set")
    assert facts(one_line(c)) == (["1.0", "3.0"], "1.0", "3.0", None, ["2.0"],
                                  [{"shown": "1.0", "fixed": "2.0", "again": "3.0", "became": "", "new": 1}])
    assert one_line(c)["states"] == ["shows", None, "fixed", "shows"]
    assert c["regressions"] == 1

    d = classes["double: fails in double/d"]
    assert d["source"] == "family" and d["family"] == "double/d"
    assert facts(one_line(d)) == (["1.0", "3.0"], "1.0", "3.0", None, [], [])
    assert one_line(d)["states"] == ["shows", None, "not-run", "shows"]

    e = classes["double: fails in double/e"]
    assert facts(one_line(e)) == (["1.0"], "1.0", "1.0", "3.0", ["3.0"], [])
    assert one_line(e)["states"] == ["shows", None, "not-run", "fixed"]

    f = classes["double: rejects the case in double/f"]
    assert [ln["line"] for ln in f["lines"]] == [LINE7, LINE]
    assert facts(one_line(f)) == (["1.0", "2.0"], "1.0", "2.0", "3.0", ["3.0"], [])
    assert facts(one_line(f, LINE7)) == (["2.0"], "2.0", "2.0", "3.0", ["3.0"], [])
    assert one_line(f, LINE7)["states"] == ["clean", None, "shows", "fixed"]
    assert f["verdicts"] == {"rejected": 3} and f["pairs"] == 3 and f["cases"] == 1
    assert [cls["id"] for cls in model["classes"]] == [f"k{i}" for i in range(1, 7)]


def test_without_expectations_the_records_own_gate_names_the_class():
    recs = records()
    for r in recs:
        if r["case"].startswith("double/b") and r["verdict"] == "fail":
            r.update(gate="expected", expected={"where": "expectations/double.yaml:3", "kind": "known-bug",
                                                "reason": "b breaks from 2.0 on", "link": ""})
    classes = by_name(build(records_of(recs), clusters=CLUSTERS))
    b = classes["expectations/double.yaml:3: b breaks from 2.0 on"]
    assert facts(one_line(b)) == (["2.0", "3.0"], "2.0", "3.0", None, [], [])
    # without the expectations or the clusters: a is a family class, and c too
    plain = by_name(build(records_of(records())))
    assert facts(one_line(plain["double: fails in double/a"])) == (["1.0"], "1.0", "1.0", "2.0", ["2.0"], [])
    assert one_line(plain["double: fails in double/c"])["regressions"] == [
        {"shown": "1.0", "fixed": "2.0", "again": "3.0", "became": "", "new": 1}]
    assert "double: fails whenever clip is set" not in plain


def test_a_cluster_of_another_verdict_or_runtime_does_not_name_a_class():
    other = [dict(CLUSTERS[0], verdict="rejected", cases_by_target={}, cases=[], id="c2"),
             dict(CLUSTERS[0], runtime="other", cases_by_target={}, cases=[], id="c3")]
    classes = by_name(build(records_of(records()), clusters=other))
    assert "double: fails in double/c" in classes
    assert "double: fails whenever clip is set" not in classes


def test_case_strips_keep_only_the_changing_cases():
    model = build(records_of(records()), clusters=CLUSTERS, environments=ENVIRONMENTS)
    strips = {(s["case"], s["line"]): s["verdicts"] for s in model["cases"]["strips"]}
    assert strips == {
        ("double/a[x=1]", LINE): ["fail", None, "pass", "pass"],
        ("double/a[x=2]", LINE): ["fail", None, "pass", "pass"],
        ("double/b[x=1]", LINE): ["pass", None, "fail", "fail"],
        ("double/c[x=1]", LINE): ["fail", None, "pass", "fail"],
        ("double/d[x=1]", LINE): ["fail", None, "not-expressible", "fail"],
        ("double/e[x=1]", LINE): ["fail", None, "not-expressible", "pass"],
        ("double/f[x=1]", LINE): ["rejected", None, "rejected", "pass"],
        ("double/f[x=1]", LINE7): ["pass", None, "rejected", "pass"],
    }
    assert [(s["line"], s["case"]) for s in model["cases"]["strips"]][:3] == [
        (LINE7, "double/f[x=1]"), (LINE, "double/a[x=1]"), (LINE, "double/a[x=2]")]
    assert model["cases"]["steady"] == 3
    assert model["cases"]["steady_by_line"] == {LINE: 2, LINE7: 1}


def test_expectations_per_release(expectations):
    model = build(records_of(records()), expectations=expectations, clusters=CLUSTERS, environments=ENVIRONMENTS)
    b, a = model["expectations"]
    assert b["reason"] == "b breaks from 2.0 on" and a["reason"] == "a is wrong before 2.0"
    assert b["releases"] == {"double": [{"release": "1.0", "status": "covers nothing", "pairs": 0},
                                        {"release": "2.0", "status": "covers", "pairs": 1},
                                        {"release": "3.0", "status": "covers", "pairs": 1}]}
    assert b["covers_nothing"] == {"double": ["1.0"]} and b["not_applicable"] == {}
    assert b["pairs"] == 2 and b["versions"] == "" and b["targets"] == ["double-*/CPU@*"]
    assert a["releases"] == {"double": [{"release": "1.0", "status": "covers", "pairs": 2},
                                        {"release": "2.0", "status": "not applicable", "pairs": 0},
                                        {"release": "3.0", "status": "not applicable", "pairs": 0}]}
    assert a["covers_nothing"] == {} and a["not_applicable"] == {"double": ["2.0", "3.0"]}
    assert a["versions"] == "<2"


def entries(tmp_path, targets: str, *reasons: str) -> Expectations:
    """An expectations file for ``targets`` with one entry per reason (its cases: the reason's first word*)."""
    path = tmp_path / "entries.yaml"
    path.write_text(f'targets: "{targets}"\nentries:\n' + "".join(
        f'  - cases: "double/{r.split()[0]}*"\n    kind: known-bug\n    reason: {r}\n' for r in reasons),
        encoding="utf-8")
    return Expectations.load([path])


def test_an_entry_for_a_runtime_not_in_the_history_is_left_out(tmp_path):
    model = build(records_of(records()), expectations=entries(tmp_path, "other-*", "another runtime's"))
    assert model["expectations"] == []
    out = io.StringIO()
    print_history(Console(file=out, width=80), model)
    assert "another runtime's" not in out.getvalue() and "cover no failing pair" not in out.getvalue()


def test_write_makes_the_three_files(tmp_path, expectations):
    model = build(records_of(records()), expectations=expectations, clusters=CLUSTERS, environments=ENVIRONMENTS)
    page = write(model, tmp_path / "out")
    assert page == tmp_path / "out" / "history.html"
    data = json.loads((tmp_path / "out" / "history.json").read_text(encoding="utf-8"))
    assert data == json.loads(json.dumps(model))
    html = page.read_text(encoding="utf-8")
    md = (tmp_path / "out" / "history.md").read_text(encoding="utf-8")
    # self-contained: the style and the script inline, nothing fetched
    assert "<style>" in html and "<script>" in html and 'src="' not in html and "<link" not in html
    assert len(model["classes"]) == 6
    for cls in model["classes"]:
        assert cls["name"] in html, cls["name"]
        assert cls["name"].split(": ")[-1] in md, cls["name"]
    for rel in ("1.0", "1.5", "2.0", "3.0"):
        assert f">{rel}</th>" in html
        assert f"`{rel}`" in md
    assert "could not be installed: no wheel for this platform" in html
    assert "1.0 → fixed 2.0 → again 3.0" in html and "1.0 → fixed 2.0 → again 3.0" in md
    # the strips' cells carry the verdict in their title, coloured by the main report's classes
    assert 'class="sq v-not-expressible" title="2.0: not-expressible"' in html
    assert 'class="sq v-rejected" title="2.0: rejected"' in html
    assert "double/d[x=1]" in html and "double/d\\[x=1\\]" not in md and "`double/d[x=1]`" in md
    assert "| fail | 5 |  | 1 | 3 |" in md


def test_html_escapes_what_the_records_say(tmp_path):
    recs = records() + [record("double/<script>alert(1)</script>[x=1]", rel, v)
                        for rel, v in zip(RELEASES, ("fail", "pass", "pass"))]
    page = write(build(records_of(recs)), tmp_path)
    html = page.read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# ------------------------------------------------------------------ failing in turns, refusals, the gate

def strip_records(case: str, verdicts: dict, spec: str = "onnx-14", **extra) -> list[dict]:
    return [dict(record(case, rel, v, spec), **extra) for rel, v in verdicts.items() if v]


def test_a_case_that_fails_in_turns_keeps_its_class_affected_and_asks_no_bisection():
    """fail in 1.0, crash in 2.0, fail in 3.0, pass in 4.0: the class of the failure is open from
    1.0 to 3.0 (2.0 fails it another way), fixed in 4.0, with no regression; the crash's class is
    its own, from 2.0 to 3.0."""
    recs = strip_records("double/z[x=1]", {"1.0": "fail", "2.0": "crash", "3.0": "fail", "4.0": "pass"})
    classes = by_name(build(records_of(recs)))
    fails = one_line(classes["double: fails in double/z"])
    assert fails["states"] == ["shows", "otherwise", "shows", "fixed"]
    assert (fails["first"], fails["last"], fails["fixed"], fails["regressions"]) == ("1.0", "3.0", "4.0", [])
    assert fails["affected"] == ["1.0", "2.0", "3.0"]
    crashes = one_line(classes["double: crashes in double/z"])
    assert crashes["states"] == ["otherwise", "shows", "otherwise", "fixed"]
    assert (crashes["first"], crashes["last"], crashes["fixed"]) == ("2.0", "3.0", "4.0")


def test_only_passing_and_failing_in_turns_is_unstable(tmp_path):
    assert unstable({"pass", "fail"}) and unstable({"crash", "unspecified"})
    assert not unstable({"fail", "crash"}) and not unstable({"rejected", "crash", "fail"})
    assert not unstable({"pass", "not-expressible"}) and not unstable({"fail", "error"})
    run = tmp_path / "double-1.0"
    (run / "repeat-1").mkdir(parents=True)
    first = [record("double/a[x=1]", "1.0", "fail"), record("double/b[x=1]", "1.0", "fail"),
             record("double/c[x=1]", "1.0", "pass")]
    again = [dict(first[0], verdict="crash"), dict(first[1], verdict="pass"), dict(first[2])]
    (run / "repeat-1" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in again))
    a, b, c = mark(records_of(first), [run])
    assert a.verdicts_seen == ["crash", "fail"] and a.unstable is None and not a.has("unstable")
    assert b.unstable == ["fail", "pass"] and c.as_dict() == first[2]
    later = [record("double/b[x=1]", "2.0", "fail")]
    model = build(records_of([a, b, c] + later))
    assert one_line(by_name(model)["double: fails in double/a"])["states"] == ["shows", "not-run"]
    assert one_line(by_name(model)["double: fails in double/b"])["states"] == ["unstable", "shows"]
    out = io.StringIO()
    print_history(Console(file=out, width=80), model)
    assert "unstable (passed in one run, failed in another): 1.0" in out.getvalue()


def test_a_refusal_that_becomes_a_silent_divergence_is_a_regression_not_a_fix():
    """Peepholes refused in 1.0 and 2.0, accepted from 3.0 on and ignored: the cases whose P is
    zero pass, the others fail silently. The refusal's class is not fixed in 3.0: it regresses."""
    recs = (strip_records("double/p[P=zeros]", {"1.0": "rejected", "2.0": "rejected", "3.0": "pass", "4.0": "pass"})
            + strip_records("double/p[P=random]", {"1.0": "rejected", "2.0": "rejected", "3.0": "fail", "4.0": "fail"}))
    classes = by_name(build(records_of(recs)))
    refused = one_line(classes["double: rejects the case in double/p"])
    assert refused["states"] == ["shows", "shows", "otherwise", "otherwise"]
    assert (refused["first"], refused["last"], refused["fixed"]) == ("1.0", "4.0", None)
    assert [(r["shown"], r["fixed"], r["again"], r["became"]) for r in refused["regressions"]] == [
        ("2.0", None, "3.0", "fail")]
    silent = one_line(classes["double: fails in double/p"])
    assert (silent["first"], silent["last"], silent["fixed"]) == ("3.0", "4.0", None)


def test_a_refusal_whose_cases_fail_with_a_broader_divergence_is_fixed():
    """Layout 1 refused in 1.0, accepted in 2.0, where a bidirectional defect shows on layout 0 and
    1 alike: the wrong numbers are that defect's, so layout 1's refusal is fixed in 2.0."""
    recs = (strip_records("double/l[layout=1,bidi=0]", {"1.0": "rejected", "2.0": "pass"})
            + strip_records("double/l[layout=1,bidi=1]", {"1.0": "rejected", "2.0": "fail"})
            + strip_records("double/l[layout=0,bidi=1]", {"1.0": "pass", "2.0": "fail"}))
    classes = by_name(build(records_of(recs)))
    refused = one_line(classes["double: rejects the case in double/l"])
    assert (refused["states"], refused["fixed"], refused["regressions"]) == (["shows", "fixed"], "2.0", [])


def test_the_gate_fails_on_new_classes_of_the_newest_release_and_on_uncovered_regressions():
    base = strip_records("double/c[x=1]", {"1.0": "fail", "2.0": "pass", "3.0": "fail"}, gate="new")
    model = build(records_of(base + strip_records("double/k[x=1]", {"1.0": "fail", "2.0": "fail", "3.0": "pass"},
                                                  gate="new")))
    gate = model["gate"]
    assert gate["status"] == 1 and gate["newest"] == {"double": "3.0"}
    assert [u["name"] for u in gate["uncovered"]] == ["double: fails in double/c"]
    assert [(r["name"], r["again"], r["new"]) for r in gate["regressions"]] == [("double: fails in double/c", "3.0", 1)]
    # the regression and the newest release's failure known to the expectations: status 0
    known = [dict(r, gate="expected") if r["verdict"] == "fail" else r for r in base]
    gate = build(records_of(known))["gate"]
    assert gate["status"] == 0 and gate["uncovered"] == [] and gate["regressions"] == []
    assert [r["again"] for r in gate["known_regressions"]] == ["3.0"]
    # the newest release ran clean, the older ones did not: status 0
    assert build(records_of(strip_records("double/k[x=1]", {"1.0": "fail", "2.0": "pass"},
                                          gate="new")))["gate"]["status"] == 0


def test_support_timelines_show_the_first_release_that_accepts_each_op():
    envs = [{"package": "double", "version": v, "error": "", "support": [
        {"target": f"double-{v}/CPU@onnx-22", "spec": "onnx-22", "op": op, "state": state,
         "why": "" if state == "accepts" else f"{v} says no"} for op, state in ops.items()]}
        for v, ops in (("1.0", {"GRU": "refuses", "LSTM": "refuses"}), ("2.0", {"GRU": "accepts", "LSTM": "refuses"}),
                       ("3.0", {"GRU": "accepts", "LSTM": "accepts"}))]
    envs.append({"package": "double", "version": "2.5", "error": "broken: every probe crashed", "state": "broken"})
    model = build(records_of(records()), environments=envs)
    rows = {(r["spec"], r["op"]): r for r in model["support"]["double"]}
    assert model["releases"]["double"] == ["1.0", "2.0", "2.5", "3.0"]
    gru, lstm = rows[("onnx-22", "GRU")], rows[("onnx-22", "LSTM")]
    assert gru["states"] == ["refuses", "accepts", None, "accepts"] and (gru["first"], gru["since"]) == ("2.0", "2.0")
    assert (lstm["states"] == ["refuses", "refuses", None, "accepts"]
            and (lstm["first"], lstm["since"]) == ("3.0", "3.0"))
    assert lstm["why"] == {"1.0": "1.0 says no", "2.0": "2.0 says no"} and lstm["lines"] == ["double/CPU@onnx-22"]
    versions = {v["release"]: v["state"] for v in model["versions"]["double"]}
    assert versions["2.5"] == "broken" and versions["2.0"] == "ready"
    out = io.StringIO()
    print_history(Console(file=out, width=80), model)
    assert "support: double onnx-22 LSTM: accepted since 3.0; refused or crashed on 1.0, 2.0" in out.getvalue()


def test_the_terminal_table_keeps_versions_whole_names_files_relatively_and_narrows_off_a_terminal(tmp_path):
    where = os.path.join(os.getcwd(), "expectations", "double.yaml") + ":12"
    assert relative(where) == os.path.join("expectations", "double.yaml") + ":12"
    assert relative("/elsewhere/x.yaml:3") in ("/elsewhere/x.yaml:3", os.path.relpath("/elsewhere/x.yaml") + ":3")
    recs = strip_records("double/c[x=1]", {"1.0": "fail", "2.0": "pass", "3.0": "fail"}, gate="expected",
                         expected={"where": where, "reason": "c is wrong", "kind": "known-bug"})
    for r in recs:
        r["runtime_version"] = r["runtime_version"].replace("1.0", "2026.0.0").replace("2.0", "2026.1.0").replace(
            "3.0", "2026.10.12")
        r["target"] = f"double-{r['runtime_version']}/CPU@onnx-14"
    model = build(records_of(recs))
    for width, terminal in ((80, False), (60, True), (200, True)):
        out = io.StringIO()
        print_history(Console(file=out, width=width, force_terminal=terminal, color_system=None), model)
        text = out.getvalue()
        assert "2026.10.12" in text and "2026.0.0" in text and "…" not in text.split("gate:")[0].replace("→", "")
        assert where not in text and os.path.join("expectations", "double.yaml") + ":12: c is wrong" in text
        assert ("┃" in text) == (terminal and width == 200)   # a table only where it fits a terminal
    out = io.StringIO()
    print_history(Console(file=out, width=80), model)
    assert "first 2026.0.0 · last affected 2026.10.12 · fixed in —" in out.getvalue()


def test_expectations_that_cover_nothing_give_one_warning_with_a_count(tmp_path):
    model = build(records_of(records()),
                  expectations=entries(tmp_path, "double-*/CPU@*", "never seen", "nothing either"))
    out = io.StringIO()
    print_history(Console(file=out, width=80), model)
    text = out.getvalue()
    assert text.count("warning: 2 expectation entries") == 1 and "matches nothing" not in text


def test_bisect_narrows_a_change_of_support_as_it_narrows_a_class():
    from conformance.history.bisect import gaps_in
    envs = [{"package": "double", "version": v, "error": "", "support": [
        {"target": f"double-{v}/CPU@onnx-22", "spec": "onnx-22", "op": "LSTM", "state": state, "why": ""}]}
        for v, state in (("1.0", "refuses"), ("2.0", "accepts"), ("3.0", "accepts"))]
    steady = [record("double/b[x=2]", rel, "pass") for rel in ("1.0", "2.0", "3.0")]   # no class changes
    model = build(records_of(steady), environments=envs)
    every = {"double": ["1.0", "1.2", "1.4", "1.6", "2.0", "2.5", "3.0"]}
    tried = {("double", v) for v in ("1.0", "2.0", "3.0")}
    assert gaps_in(model, tried, every) == [("double", "1.4")]
    assert gaps_in(model, tried | {("double", "1.4")}, every) == [("double", "1.6")]   # tried: not asked again


def test_repeats_go_where_a_boundary_or_a_regression_could_be_luck():
    """A class's ends (the clean release before it shows, the release that fixes it) are run again,
    and a class that comes back after a fix is run again on every release: a pair that passes by
    luck (stale memory holding the right values) must not move a boundary unseen."""
    recs = (strip_records("double/z[x=1]", {"1.0": "pass", "2.0": "fail", "3.0": "fail", "4.0": "pass"})
            + strip_records("double/c[x=1]", {"1.0": "fail", "2.0": "pass", "3.0": "fail", "4.0": "fail"}))
    wanted = suspects(build(records_of(recs)))
    assert wanted == {("double", "1.0"): {"double/z[x=1]", "double/c[x=1]"},
                      ("double", "4.0"): {"double/z[x=1]", "double/c[x=1]"},
                      ("double", "2.0"): {"double/c[x=1]"}, ("double", "3.0"): {"double/c[x=1]"}}
