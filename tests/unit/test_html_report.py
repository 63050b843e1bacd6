"""The HTML report, JUnit XML and Markdown summary, built from a real run (onnxruntime and the known-wrong GRU
test double) and looked at in a real headless Chromium over the DevTools protocol.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_html_report.py."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from conformance.case.model import case_family
from conformance.report.html import render
from conformance.report.junit import to_xml
from conformance.report.markdown import code, summary
from conformance.report.merge import load
from conformance.report.svg import error_plot
from conformance.report.view import matrix_params, slug
from conformance.results import Record, records_of
from conformance.run import read_results

XSS = "<script>alert(1)</script><b>x</b>"


def record(case="gru/x[direction=forward]", target="rt-1/CPU@onnx-14", verdict="fail", **extra):
    runtime, rest = target.split("/", 1)
    spec = rest.rsplit("@", 1)[1]
    r = {"case": case, "target": target, "spec": spec, "runtime": runtime.rsplit("-", 1)[0],
         "runtime_version": runtime.rsplit("-", 1)[1], "device": "CPU", "config": "default", "op": "GRU",
         "form": "sequence", "dtype": "float32", "expect": "valid", "clause": [], "verdict": verdict,
         "message": f"{verdict} message", "repro": f"conformance run x.yaml -k '{case}'", "max_abs_err": None}
    r.update(extra)
    return r


def test_family_and_matrix_values_of_a_case_id():
    cid = 'invalid/gru/B_shape[B={"shape":[2,18]},activations=Sigmoid+Tanh,alpha=[0.3,0.7]]'
    assert case_family(cid) == "invalid/gru/B_shape"
    assert matrix_params(cid) == [("B", '{"shape":[2,18]}'), ("activations", "Sigmoid+Tanh"), ("alpha", "[0.3,0.7]")]
    assert matrix_params("gru/plain") == []


def test_merge_keeps_the_newest_record_per_case_and_target(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, started, verdict in ((old, "2026-01-01T00:00:00+00:00", "fail"),
                                     (new, "2026-02-01T00:00:00+00:00", "pass")):
        folder.mkdir()
        recs = [record(verdict=verdict), record(target=f"rt-{folder.name}/CPU@onnx-14", verdict=verdict)]
        (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        (folder / "run.json").write_text(json.dumps({"started": started, "suite": "t"}))
    loaded = load([new, old / "results.jsonl"])       # given newest first: the order comes from run.json
    got = {(r.case, r.target): r.verdict for r in loaded.records}
    assert got == {("gru/x[direction=forward]", "rt-1/CPU@onnx-14"): "pass",
                   ("gru/x[direction=forward]", "rt-old/CPU@onnx-14"): "fail",
                   ("gru/x[direction=forward]", "rt-new/CPU@onnx-14"): "pass"}
    assert [r["started"][:7] for r in loaded.runs] == ["2026-01", "2026-02"] and loaded.clusters is None


def test_junit_maps_every_verdict():
    recs = [record(case=f"gru/{v}", verdict=v) for v in
            ("pass", "fail", "rejected", "accepted-invalid", "crash", "timeout", "error", "not-expressible",
             "unspecified")]
    recs.append(record(case="gru/known", verdict="fail", gate="expected", expected={"reason": "a reason"}))
    recs.append(record(case="gru/ctl", verdict="crash", message="died \x00\x1b[31m here"))
    root = to_xml(records_of(recs)).getroot()
    kinds = {c.get("name"): [e.tag for e in c if e.tag != "properties"] for c in root.iter("testcase")}
    assert kinds == {"gru/pass": [], "gru/fail": ["failure"], "gru/rejected": ["failure"],
                     "gru/accepted-invalid": ["failure"], "gru/crash": ["error"], "gru/timeout": ["error"],
                     "gru/error": ["error"], "gru/not-expressible": ["skipped"], "gru/unspecified": ["skipped"],
                     "gru/known": ["skipped"], "gru/ctl": ["error"]}
    ET.fromstring(ET.tostring(root))   # control characters from a runtime's text do not break the XML
    assert root.find(".//testcase[@name='gru/x']") is None
    assert root.find(".//testcase[@classname='gru/fail']") is not None   # no clause: the family


def test_markdown_escapes_and_fences():
    assert code("a`b") == "``a`b``"
    md = summary(records_of([record(case="gru/<b>|x", message="<img src=x> | *bold*")]), {"suite": "t"}, clusters=[])
    assert "<img" not in md and "&lt;img src=x&gt; \\| \\*bold\\*" in md
    assert "The ablation step formed no cluster." in md and "no gate applied" in md


def test_plot_uses_the_per_step_errors_when_present(tmp_path):
    steps = record(error_by_step={"Y": [0.1, 3.0, None, 40.0], "Y_h": [None, None, None, 50.0]},
                   worst={"output": "Y", "index": [3, 0, 0, 0], "time_step": "time step 3", "ratio": 50.0})
    point = record(target="rt-2/CPU@onnx-14", worst={"ratio": 0.5, "time_step": "final state after time step 2"})
    none = record(target="rt-3/CPU@onnx-14", verdict="rejected")
    svg = str(error_plot(records_of([steps, point, none])))
    assert svg.count('class="series"') == 2 and 'data-source="error_by_step"' in svg and 'data-source="worst"' in svg
    first = svg.split('class="series"')[1]
    assert first.count("<circle") == 3 and first.count("M") == 2   # a gap where step 2 is unspecified
    worst_elements = {"Y": [{"index": [1, 0, 0, 0], "time_step": 1, "got": 1.5, "expected": 0.25, "abs_err": 1.25,
                             "allowed": 0.01, "ratio": 125.0}]}
    out = render(records_of([dict(steps, worst_elements=worst_elements, description=XSS), point, none]),
                 {"suite": "t"}, tmp_path, clusters=None)
    html = (tmp_path / "cases" / f"{slug(steps['case'])}.html").read_text()
    assert "125" in html and "1.5" in html and "0.25" in html and XSS not in html
    assert "No ablation run" in out.read_text()


def test_a_bare_record_still_renders(tmp_path):
    """Only the fields every record has for sure: the report must not need more."""
    bare = [{"case": "rnn/odd[x=1]", "target": "some-runtime/CPU@onnx-7", "verdict": "crash"},
            {"case": "rnn/odd[x=1]", "target": "other/CPU@onnx-7", "verdict": "verdict-from-the-future"}]
    index = render(records_of(bare), [], tmp_path, clusters=[])
    assert "rnn/odd" in index.read_text()
    assert len(list((tmp_path / "cases").glob("*.html"))) == 1   # crash, and an unknown verdict, get a page
    assert "verdict-from-the-future" in (tmp_path / "cases" / f"{slug('rnn/odd[x=1]')}.html").read_text()
    junit = to_xml(records_of(bare)).getroot()
    assert junit.get("errors") == "2"


def _console(width=80, terminal=False):
    import io

    from rich.console import Console
    buf = io.StringIO()
    return Console(file=buf, width=width, force_terminal=terminal, color_system=None), buf


def _terminal_records():
    verdicts = ("pass", "fail", "rejected", "accepted-invalid", "crash", "timeout", "not-expressible", "unspecified")
    recs = [record(case=f"gru/v[{v}]", target=f"a-very-long-runtime-name-1.2.3/CPU/precision=default→bf16@onnx-{s}",
                   verdict=v, gate="new" if v not in ("pass", "not-expressible", "unspecified") else "ok")
            for v in verdicts for s in (7, 14, 22)]
    entry = {"kind": "known-bug", "reason": "known", "link": "", "where": "e.yaml:3"}
    recs += [record(case=f"lstm/k[{i}]", target="b-1/CPU@onnx-14", gate="expected", expected=entry) for i in range(30)]
    return recs


def test_terminal_tables_never_cut_columns_in_a_log():
    from conformance.report.terminal import summary as terminal_summary
    console, buf = _console(width=80, terminal=False)
    terminal_summary(console, records_of(_terminal_records()), [], [], "OUT", ran=1, resumed=0, wall_s=1.0,
                     clusters=None)
    out = buf.getvalue()
    assert "…" not in out
    line = next(x for x in out.splitlines() if "onnx-14:" in x and "a-very-long" in x)
    for v in ("fail", "rejected", "accepted-invalid", "crash", "timeout", "not-expressible", "unspecified", "pass"):
        assert f"1 {v}" in line, line
    # the end of the log: the new causes, then one line for the known ones, then the totals
    tail = out.strip().splitlines()[-20:]
    assert any(x.startswith("NEW a-very-long-runtime-name") and "crashes in gru/v" in x for x in tail)
    known = next(i for i, x in enumerate(tail) if "known divergent pairs in 1 causes" in x)
    assert all(i < known for i, x in enumerate(tail) if x.startswith("NEW "))
    # a wide terminal gets the table
    console, buf = _console(width=250, terminal=True)
    terminal_summary(console, records_of(_terminal_records()), [], [], "OUT", ran=1, resumed=0, wall_s=1.0,
                     clusters=None)
    assert "verdicts per target" in buf.getvalue() and "┃" in buf.getvalue()
    # a narrow terminal gets one line per target: rich's own measure clips a table to the width
    console, buf = _console(width=80, terminal=True)
    terminal_summary(console, records_of(_terminal_records()), [], [], "OUT", ran=1, resumed=0, wall_s=1.0,
                     clusters=None)
    assert "…" not in buf.getvalue() and "┃" not in buf.getvalue()


def test_terminal_quiet_and_verbose():
    from conformance.report.terminal import summary as terminal_summary
    console, buf = _console(terminal=False)
    terminal_summary(console, records_of(_terminal_records()), [], [], "OUT", ran=1, resumed=0, wall_s=1.0,
                     verbosity=-1)
    quiet = buf.getvalue()
    assert "verdicts per target" not in quiet and "new failing verdicts in" in quiet and "repro:" in quiet
    assert "fail message" not in quiet                                   # no per-pair messages
    console, buf = _console(terminal=False)
    terminal_summary(console, records_of(_terminal_records()), [], [], "OUT", ran=1, resumed=0, wall_s=1.0, verbosity=1)
    verbose = buf.getvalue()
    assert "one by one" in verbose and "fail message" in verbose and "EXPECTED b" in verbose
    assert len(verbose.splitlines()) > len(quiet.splitlines())


def test_trimmed_results_still_resume_gate_baseline_and_report(tmp_path):
    from conformance.gate import classify
    from conformance.gate.baseline import Baseline
    from conformance.report.artifacts import finish
    from conformance.results import ResultStore
    entry = {"kind": "known-bug", "reason": "known", "link": "", "where": "e.yaml:3"}
    full = {"worst_elements": {"Y": [{"index": [0], "ratio": 9.0}]}, "error_by_step": {"Y": [1.0]},
            "oracle": {"digits": 30}, "effective": {"precision": "f32"}, "features": ["clip"], "pair_digest": "d"}
    recs = [record(case="gru/new", gate="new", case_digest="aaaaaaaa1", **full),
            record(case="gru/new", target="rt-2/CPU@onnx-14", verdict="pass", gate="ok", case_digest="aaaaaaaa1",
                   **full),
            record(case="gru/known", gate="expected", expected=entry, case_digest="bbbbbbbb1", ratio=5.0,
                   worst={"ratio": 5.0}, **full),
            record(case="gru/ok", verdict="pass", gate="ok", case_digest="cccccccc1", **full)]
    for r in recs:
        folder = tmp_path / "programs" / re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{r['case']}-{r['case_digest'][:8]}")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "onnx-14.onnx").write_bytes(b"x")
    (tmp_path / "ablation" / "programs").mkdir(parents=True)
    finish(tmp_path, records_of(recs), "failing")
    lines = read_results(tmp_path / "results.jsonl")
    by_case = {(r["case"], r["target"]): r for r in lines}
    assert "worst_elements" in by_case[("gru/new", "rt-1/CPU@onnx-14")]
    companion = by_case[("gru/new", "rt-2/CPU@onnx-14")]      # its page compares every target: the plot
    assert companion["error_by_step"] == {"Y": [1.0]} and "worst_elements" not in companion
    known, ok = by_case[("gru/known", "rt-1/CPU@onnx-14")], by_case[("gru/ok", "rt-1/CPU@onnx-14")]
    assert known["detail"] == ok["detail"] == "summary" and "worst_elements" not in known
    assert known["message"] and "repro" not in known and known["ratio"] == 5.0 and "worst" not in known
    assert "message" not in ok and ok["features"] == ["clip"] and "effective" not in ok   # f32, as assumed
    assert known["effective"] == {"precision": "f32"}
    assert sorted(p.name[:7] for p in (tmp_path / "programs").iterdir()) == ["gru_new"]
    assert not (tmp_path / "ablation").exists()
    store = ResultStore(tmp_path)            # resume: every pair is done under its digest
    assert all(store.is_done(r["case"], r["target"], "d") for r in recs)
    store.close()
    base = Baseline.load(tmp_path / "results.jsonl")
    assert (not base.regressed(Record.from_dict(dict(recs[2])))
            and base.regressed(Record.from_dict(dict(recs[3], verdict="fail"))))
    assert classify(Record.from_dict(ok), None, base)["gate"] == "ok"
    index = render(records_of(lines), {"suite": "t"}, tmp_path / "report", clusters=None)
    assert "gru/known" in index.read_text()
    assert [p.name[:7] for p in (tmp_path / "report" / "cases").glob("*.html")] == ["gru_new"]
    md = summary(records_of(lines), {"suite": "t"}, clusters=None)
    assert "gru/known" not in md.split("<details>")[0] and "**NEW**" in md
    finish(tmp_path, records_of(lines), "full")          # full: nothing is touched
    assert read_results(tmp_path / "results.jsonl") == lines
