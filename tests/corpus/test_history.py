"""`conformance history` on a small synthetic history without network access: releases of a test
double (tests/doubles/history.py), each in an environment of its own, run through the real machinery
(environments and their checks, the pipe protocol, version gates, worker processes, the oracle, the
merge, repeats, the gate with version ranges, the history view and the exit status).

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/unit/test_history.py."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from conformance.case import load_paths
from conformance.gate import Expectations
from conformance.history.bisect import gaps
from conformance.history.environments import Env, _import_check, numpy_choices
from conformance.history.merge import merge, model_of
from conformance.history.session import choose_releases, run_releases
from conformance.history.versions import Selection, VersionSpecError, parse
from conformance.run import compile_expression
from conformance.selection import specs_by_format
from tests.conftest import ROOT, conformance
from tests.doubles.history import make_release

CASES = ROOT / "cases" / "rnn" / "layout.yaml"


SELECT = "initial_h=random and sequence_lens=absent"


EXPECTATIONS = """\
targets: "double-*"
entries:
- features: [layout=1]
  verdict: rejected
  versions: "<2"
  kind: unsupported
  reason: release 1 has no layout 1
"""


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    root = tmp_path_factory.mktemp("history")
    envs = {v: make_release(root / "envs", v) for v in ("0.7", "0.8", "0.9", "1.0", "2.0", "3.0")}
    envs["4.0"] = Env("double", "4.0", root / "envs" / "double-4.0", error="could not be installed: no such release")
    cases, errors = load_paths([CASES])
    select = compile_expression(SELECT)
    cases = [c for c in cases if select(c.id)]
    (root / "expect.yaml").write_text(EXPECTATIONS)
    expectations = Expectations.load([root / "expect.yaml"])
    out = root / "out"
    log = io.StringIO()
    facts, timings = run_releases(
        Console(file=log, width=100), [("double", v) for v in envs], cases, errors, specs_by_format(("onnx",)), out, 1,
        60.0, expectations, True, False, False, make_env=lambda package, version, **_: envs[version])
    summary = merge(out, facts, expectations, "2026-11-24T00:00:00+00:00", timings, [str(CASES)])
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {"out": out, "facts": facts, "summary": summary, "records": records, "cases": cases, "log": log.getvalue()}



def test_selections_parse_and_pick_release_lines():
    assert parse("onnxruntime==1.18.0..1.32.0:3") == Selection("onnxruntime", "1.18.0", "1.32.0", (), 3)
    assert parse("openvino==2024.0.0,2025.1.0").listed == ("2024.0.0", "2025.1.0")
    releases = ["1.18.0", "1.18.1", "1.19.0", "1.19.2", "1.20.0", "1.21.0", "1.21.1", "1.22.0"]
    assert parse("onnxruntime==1.18.0..1.22.0").pick(releases) == ["1.18.1", "1.19.2", "1.20.0", "1.21.1", "1.22.0"]
    assert parse("onnxruntime==1.18.0..1.22.0:3").pick(releases) == ["1.18.1", "1.20.0", "1.22.0"]
    assert parse("onnxruntime==1.19.0..1.20.0").pick(releases, limit=1) == ["1.20.0"]
    for bad in ("onnxruntime>=1.18", "tensorflow==2.0", "onnxruntime==1.20..1.18", "openvino==x.y"):
        with pytest.raises(VersionSpecError):
            parse(bad)


def test_a_bad_selection_is_a_usage_error():
    proc = conformance("history", "onnxruntime>=1.18", "--out", "/nonexistent/never-written")
    assert proc.returncode == 2
    assert "expected NAME==LOW..HIGH" in proc.stdout + proc.stderr


# ------------------------------------------------------------------------- a pair that fails in turns


# -------------------------------------------------------------------- environments and the range


def test_numpy_follows_what_the_release_metadata_says_else_it_is_tried():
    pinned = "numpy==2.4.6"
    assert [c for c, _ in numpy_choices(["numpy<2.0.0,>=1.16.6", "openvino-telemetry"], pinned)] == ["numpy<2"]
    assert [c for c, _ in numpy_choices(["numpy>=1.21.6", "flatbuffers"], pinned)] == [pinned, "numpy<2"]
    assert [c for c, _ in numpy_choices([], pinned)] == [pinned, "numpy<2"]
    assert [c for c, _ in numpy_choices(['numpy<2; extra == "old"'], pinned)] == [pinned, "numpy<2"]
    why = dict(numpy_choices(["numpy<1.27,>=1.16.6"], pinned))
    assert why == {"numpy<2": "its Requires-Dist says numpy<1.27,>=1.16.6"}


def test_a_release_without_a_version_attribute_gets_its_metadata_version(tmp_path):
    """OpenVINO 2023.0 has no ``openvino.__version__``: the import check reads the package's
    metadata instead (a stand-in package named openvino, with only a dist-info)."""
    import sysconfig
    import venv
    folder = tmp_path / "env"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    site = next(folder.glob("lib/python3*/site-packages"))
    (site / "openvino").mkdir()
    (site / "openvino" / "__init__.py").write_text(
        '"""a stand-in without __version__ (tests/corpus/test_history.py)"""\n')
    (site / "openvino-2023.0.2.dist-info").mkdir()
    (site / "openvino-2023.0.2.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: openvino\nVersion: 2023.0.2\n")
    (site / "zz_parent.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")   # numpy from here
    assert _import_check(folder / "bin" / "python", "openvino") == ("", "2023.0.2")


def test_a_release_outside_the_supported_range_is_left_out_with_a_warning():
    proc = conformance("history", "onnxruntime==1.15.0", "--out", "/nonexistent/never-written")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2
    assert "onnxruntime 1.15.0: outside the range the suite supports (onnxruntime>=1.18" in text
    assert "--allow-unsupported" in text


def test_a_release_outside_the_supported_range_runs_when_allowed():
    from conformance.history.versions import PYPI
    console = Console(file=io.StringIO(), width=200)
    chosen = [parse("onnxruntime==1.15.0,1.20.1")]
    releases, _, unsupported = choose_releases(console, chosen, 0, 0, PYPI, True)
    assert releases == [("onnxruntime", "1.15.0"), ("onnxruntime", "1.20.1")]
    assert unsupported == {("onnxruntime", "1.15.0")}
    assert "1.15.0: outside the range the suite supports" in console.file.getvalue()
    releases, _, unsupported = choose_releases(console, chosen, 0, 0, PYPI, False)
    assert releases == [("onnxruntime", "1.20.1")] and unsupported == set()


def verdicts(records, version, spec):
    return Counter(r["verdict"] for r in records if r["target"] == f"double-{version}/CPU@{spec}")


def test_the_merge_keeps_every_release_as_its_own_target(history):
    records, cases = history["records"], history["cases"]
    assert len(cases) == 6
    targets = {r["target"] for r in records}
    assert targets == {f"double-{v}/CPU@{s}" for v in ("1.0", "2.0", "3.0") for s in ("onnx-7", "onnx-14", "onnx-22")}
    assert len(records) == 3 * 3 * 6
    assert len({(r["case"], r["target"]) for r in records}) == len(records)
    summary = dict(history["summary"])
    model = summary.pop("model")
    assert summary == {"records": 54, "runs": 3, "unavailable": 4}
    assert json.loads(json.dumps(model)) == json.loads((history["out"] / "history.json").read_text())
    assert {r["runtime_version"] for r in records} == {"1.0", "2.0", "3.0"}   # none of the broken 0.8 and 0.9


def test_a_release_that_cannot_be_installed_is_listed_with_its_reason(history):
    info = json.loads((history["out"] / "run.json").read_text())
    by_version = {e["version"]: e for e in info["history"]["environments"]}
    assert by_version["4.0"]["error"] == "could not be installed: no such release"
    assert by_version["4.0"]["state"] == "unavailable" and "run" not in by_version["4.0"]
    assert by_version["1.0"]["error"] == "" and by_version["1.0"]["targets"] and by_version["1.0"]["state"] == "ready"


def test_a_release_whose_import_prints_a_system_error_is_broken_not_buggy(history):
    """0.9 imports, prints numpy's SystemError and exits 0; every call of it would crash. Its
    environment is broken, with the reason, and none of its verdicts exists, let alone enters a
    class's range."""
    facts = {f["version"]: f for f in history["facts"]}
    broken = facts["0.9"]
    assert broken["state"] == "broken" and "run" not in broken
    assert "SystemError: <built-in function __import__> returned a result with an exception set" in broken["error"]
    assert "compiled using NumPy 1.x" in broken["error"]
    assert not [r for r in history["records"] if r["runtime_version"] == "0.9"]
    model = history["summary"]["model"]
    assert all(ln["first"] not in ("0.8", "0.9") and "0.9" not in ln["affected"]
               for cls in model["classes"] for ln in cls["lines"])
    versions = {v["release"]: v for v in model["versions"]["double"]}
    assert versions["0.9"]["state"] == "broken" and versions["0.9"]["pairs"] == 0
    assert "double 0.9: not run (broken)" in history["log"]


def test_a_release_whose_every_probe_crashes_is_broken(history):
    """0.8 imports cleanly and crashes on every call: each version gate's probe crashes, so the
    environment is broken; 3.0, which crashes on the RNN probe only, is not."""
    facts = {f["version"]: f for f in history["facts"]}
    assert facts["0.8"]["state"] == "broken" and "run" not in facts["0.8"]
    assert facts["0.8"]["error"].startswith("broken: every probe crashed (9 minimal programs on 3 targets")
    assert "signal 11" in facts["0.8"]["error"]
    assert facts["0.8"]["support"] == []
    three = {(s["spec"], s["op"]): s["state"] for s in facts["3.0"]["support"]}
    assert {op: three[("onnx-14", op)] for op in ("RNN", "GRU", "LSTM")} == {
        "RNN": "crashes", "GRU": "accepts", "LSTM": "accepts"}
    assert facts["3.0"]["state"] == "ready" and facts["3.0"]["run"]


def test_a_release_where_the_suites_adapter_cannot_import_what_it_needs_is_broken(history):
    """0.7's probes fail with a ModuleNotFoundError of the adapter's own: no refusal of the release
    (no version gate), but targets that cannot run there, left out; with none left, it is broken."""
    facts = {f["version"]: f for f in history["facts"]}
    assert facts["0.7"]["state"] == "broken" and "run" not in facts["0.7"] and not facts["0.7"].get("gates")
    assert "the suite's adapters cannot run there" in facts["0.7"]["error"]
    assert "No module named 'a_module_this_environment_lacks'" in facts["0.7"]["error"]


def test_a_release_that_predates_the_spec_version_is_gated_not_divergent(history):
    records = history["records"]
    gated = [r for r in records if r["target"] == "double-1.0/CPU@onnx-22"]
    assert {r["verdict"] for r in gated} == {"not-expressible"}
    facts = {f["version"]: f for f in history["facts"]}
    assert set(facts["1.0"]["gates"]) == {"double-1.0/CPU@onnx-22"}
    assert "release 1.0 knows opsets up to 21" in facts["1.0"]["gates"]["double-1.0/CPU@onnx-22"]["RNN"]
    assert not facts["2.0"]["gates"] and not facts["3.0"]["gates"]  # 3.0's crash on the probe gates nothing
    assert verdicts(records, "2.0", "onnx-22")["not-expressible"] == 0  # 2.0 knows opset 22


def test_each_release_keeps_its_own_behaviour(history):
    records = history["records"]
    assert verdicts(records, "1.0", "onnx-14") == Counter({"pass": 3, "rejected": 3})
    assert verdicts(records, "2.0", "onnx-14") == Counter({"pass": 4, "fail": 2})
    v3 = verdicts(records, "3.0", "onnx-14")
    assert v3 == Counter({"pass": 2, "rejected": 3, "crash": 1})
    crash = [r for r in records if r["verdict"] == "crash"]
    assert {r["case"] for r in crash} == {
        "rnn/layout[layout=0,direction=forward,initial_h=random,sequence_lens=absent]"}
    assert all("SIGSEGV" in r["message"] for r in crash)


def test_version_ranges_in_expectations_apply_per_release(history):
    rejected = [r for r in history["records"] if r["verdict"] == "rejected"]
    gates = {(r["runtime_version"], r["gate"]) for r in rejected}
    assert gates == {("1.0", "expected"), ("3.0", "new")}


def test_bisect_asks_for_the_middle_release_of_each_gap_where_a_class_changes(history):
    every = {"double": ["0.5", "1.0", "1.2", "1.5", "1.7", "2.0", "2.5", "3.0", "4.0"]}
    expectations = Expectations.load([history["out"].parent / "expect.yaml"])
    assert gaps(history["facts"], expectations, every) == [("double", "1.5"), ("double", "2.5")]
    assert gaps(history["facts"], expectations, every) == [("double", "1.5"), ("double", "2.5")]
    assert gaps(history["facts"], expectations, {"double": ["1.0", "2.0", "3.0"]}) == []


def test_the_support_timeline_shows_since_when_opset_22_is_accepted(history):
    model = history["summary"]["model"]
    rows = {(r["spec"], r["op"]): r for r in model["support"]["double"]}
    assert model["releases"]["double"] == ["0.7", "0.8", "0.9", "1.0", "2.0", "3.0", "4.0"]
    for op in ("GRU", "LSTM"):
        row = rows[("onnx-22", op)]
        assert row["lines"] == ["double/CPU@onnx-22"]
        assert row["states"] == [None, None, None, "refuses", "accepts", "accepts", None]   # 0.7-0.9 broken
        assert (row["first"], row["since"], row["lost"]) == ("2.0", "2.0", [])
        assert "release 1.0 knows opsets up to 21" in row["why"]["1.0"]
    rnn = rows[("onnx-22", "RNN")]   # 3.0 crashes on every forward RNN, the probe's too
    assert rnn["states"] == [None, None, None, "refuses", "accepts", "crashes", None]
    assert (rnn["first"], rnn["since"], rnn["lost"]) == ("2.0", None, ["3.0"])
    assert rows[("onnx-14", "RNN")]["states"] == [None, None, None, "accepts", "accepts", "crashes", None]
    assert rows[("onnx-14", "RNN")]["lost"] == ["3.0"]
    md = (history["out"] / "history.md").read_text()
    assert "| double | `onnx-22` | LSTM | `double/CPU@onnx-22` | 2.0 | 2.0 |" in md


def test_the_exit_status_fails_on_what_is_new_in_the_newest_release_or_regresses(history):
    gate = history["summary"]["model"]["gate"]
    assert gate["status"] == 1 and gate["newest"] == {"double": "3.0"}
    assert gate["not_run"] == {"double": {"release": "4.0", "why": "could not be installed: no such release"}}
    new_classes = {u["name"] for u in gate["uncovered"]}
    assert any("release 1 has no layout 1" in n for n in new_classes)   # its `versions` end before 3.0
    assert any(n.startswith("double: crashes") for n in new_classes)
    assert {(r["shown"], r["fixed"], r["again"]) for r in gate["regressions"]} == {("1.0", "2.0", "3.0")}
    assert {r["line"] for r in gate["regressions"]} == {"double/CPU@onnx-14"}   # onnx-7 has no layout


def test_the_releases_runs_warn_about_no_expectation_and_the_end_prints_the_gate(history):
    assert "matches nothing" not in history["log"]   # no warning per release (the history warns once)
    out = io.StringIO()
    from conformance.report.history_terminal import print_history
    print_history(Console(file=out, width=80), history["summary"]["model"])
    text = out.getvalue()
    assert "1.0 → fixed 2.0 → again 3.0" in text
    assert "gate: exit status 1" in text


def test_the_history_view_dates_each_class_and_flags_the_regression(history):
    model = json.loads((history["out"] / "history.json").read_text())
    by_name = {c["name"]: c for c in model["classes"]}
    layout = next(c for n, c in by_name.items() if "release 1 has no layout 1" in n)
    line = next(ln for ln in layout["lines"] if ln["line"] == "double/CPU@onnx-14")
    assert (line["first"], line["last"]) == ("1.0", "3.0")
    assert [(r["shown"], r["fixed"], r["again"]) for r in line["regressions"]] == [("1.0", "2.0", "3.0")]
    bidirectional = next(c for n, c in by_name.items() if n.startswith("double: fails"))
    for ln in bidirectional["lines"]:
        assert (ln["first"], ln["last"], ln["fixed"], ln["regressions"]) == ("2.0", "2.0", "3.0", [])
    assert model["releases"]["double"] == ["0.7", "0.8", "0.9", "1.0", "2.0", "3.0", "4.0"]
    assert (history["out"] / "history.html").is_file() and (history["out"] / "history.md").is_file()


def test_the_merge_keeps_only_the_selected_cases(history, tmp_path):
    one = history["cases"][0].id
    facts = [f for f in history["facts"] if f.get("run")]
    summary = merge(tmp_path / "one", facts, None, "2026-11-24T00:00:00+00:00", {}, [str(CASES)], {one})
    records = [json.loads(line) for line in (tmp_path / "one" / "results.jsonl").read_text().splitlines()]
    assert {r["case"] for r in records} == {one} and summary["records"] == 9


def test_a_verdict_that_varies_between_runs_of_a_release_is_unstable_not_a_regression(history, tmp_path):
    """Repeat runs that disagree with the first (as uninitialised memory does) turn the release's
    state into `unstable`: the class neither shows, fixes nor comes back there."""
    import shutil
    runs = tmp_path / "runs"
    shutil.copytree(history["out"] / "runs", runs)
    facts = [dict(f, run=str(runs / Path(f["run"]).name)) if f.get("run") else f for f in history["facts"]]
    layout_rejected = [r for r in history["records"] if r["runtime_version"] == "3.0" and r["verdict"] == "rejected"]
    repeat = runs / "double-3.0" / "repeat-1"
    repeat.mkdir()
    (repeat / "results.jsonl").write_text("".join(json.dumps(dict(r, verdict="pass")) + "\n" for r in layout_rejected))
    expectations = Expectations.load([history["out"].parent / "expect.yaml"])
    merge(tmp_path / "out", facts, expectations, "2026-11-24T00:00:00+00:00", {}, [str(CASES)])
    model = json.loads((tmp_path / "out" / "history.json").read_text())
    layout = next(c for c in model["classes"] if "release 1 has no layout 1" in c["name"])
    line = next(ln for ln in layout["lines"] if ln["line"] == "double/CPU@onnx-14")
    assert line["regressions"] == [] and line["unstable"] == ["3.0"]
    assert line["states"][3:6] == ["shows", "fixed", "unstable"]   # 0.7 to 0.9 are broken: no pairs
    records = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert {tuple(r["unstable"]) for r in records if r.get("unstable")} == {("pass", "rejected")}


@pytest.fixture(scope="module")
def alternating(tmp_path_factory):
    """2.0 negates a bidirectional RNN, 2.2 computes it right, 2.5 crashes on it and gets it wrong
    in turns, 2.7 gets it wrong and right in turns; run with two repeats, as the history does."""
    from conformance.history.repeats import run_repeats
    root = tmp_path_factory.mktemp("alternating")
    envs = {v: make_release(root / "envs", v) for v in ("2.0", "2.2", "2.5", "2.7")}
    cases, errors = load_paths([CASES])
    select = compile_expression(SELECT + " and direction=bidirectional")
    cases = [c for c in cases if select(c.id)]
    formats = specs_by_format(("onnx-14",))
    out = root / "out"
    console = Console(file=io.StringIO(), width=100)
    facts, timings = run_releases(
        console, [("double", v) for v in envs], cases, errors, formats, out, 1, 60.0, None, True, False, False,
        make_env=lambda package, version, **_: envs[version])
    before = model_of(facts, None)
    run_repeats(console, facts, before, cases, formats, 1, 60.0, 2)
    summary = merge(out, facts, None, "2026-11-24T00:00:00+00:00", timings, [str(CASES)])
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {"before": before, "model": summary["model"], "records": records, "cases": cases, "facts": facts}


def test_a_pair_that_fails_every_time_in_whatever_way_is_affected_not_unstable(alternating):
    """2.5's first run crashes on the bidirectional cases, its repeats get them wrong and crash
    again: they never pass, so 2.5 is affected and the fixed class came back there (a regression,
    real); 2.7 gets them wrong in one run and right in the next: unstable."""
    assert len(alternating["cases"]) == 2
    seen = {r["runtime_version"]: r for r in alternating["records"] if r["case"] == alternating["cases"][0].id}
    assert seen["2.5"]["verdict"] == "crash"
    assert seen["2.5"]["verdicts_seen"] == ["crash", "fail"] and "unstable" not in seen["2.5"]
    assert seen["2.7"]["verdict"] == "fail" and seen["2.7"]["unstable"] == ["fail", "pass"]
    classes = {c["name"]: c for c in alternating["model"]["classes"]}
    fails = classes["double: fails in rnn/layout"]["lines"][0]
    assert fails["states"] == ["shows", "fixed", "otherwise", "unstable"]
    assert (fails["first"], fails["last"], fails["fixed"]) == ("2.0", "2.5", None)
    assert fails["affected"] == ["2.0", "2.5"] and fails["unstable"] == ["2.7"]
    assert [(r["shown"], r["fixed"], r["again"], r["became"]) for r in fails["regressions"]] == [
        ("2.0", "2.2", "2.5", "crash")]
    crashes = classes["double: crashes in rnn/layout"]["lines"][0]
    assert (crashes["first"], crashes["last"]) == ("2.5", "2.5")
    assert crashes["states"] == ["otherwise", "clean", "shows", "unstable"]   # 2.0 fails them another way


def test_bisect_does_not_chase_a_pair_that_fails_in_turns(alternating):
    every = {"double": ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7"]}
    wanted = gaps(alternating["facts"], None, every)
    assert wanted == [("double", "2.1"), ("double", "2.4")]   # 2.0 | 2.2 and 2.2 | 2.5; never 2.6 (2.7 is unstable)
    assert gaps(alternating["facts"], None, every) == wanted
