"""`conformance history` on a small synthetic history without network access: three releases of a test
double (tests/history_doubles.py), each in an environment of its own, run through the real machinery
(environments, the pipe protocol, version gates, worker processes, the oracle, the merge, the gate
with version ranges and the history view)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from conformance.case import load_paths
from conformance.gate import Expectations
from conformance.history import cli as history_cli
from conformance.history.environments import Env
from conformance.history.versions import Selection, VersionSpecError, installable, parse
from conformance.run import compile_expression
from conformance.selection import specs_by_format
from tests.conftest import ROOT, conformance
from tests.history_doubles import make_release

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
    envs = {v: make_release(root / "envs", v) for v in ("1.0", "2.0", "3.0")}
    envs["4.0"] = Env("double", "4.0", root / "envs" / "double-4.0", error="could not be installed: no such release")
    cases, errors = load_paths([CASES])
    select = compile_expression(SELECT)
    cases = [c for c in cases if select(c.id)]
    (root / "expect.yaml").write_text(EXPECTATIONS)
    expectations = Expectations.load([root / "expect.yaml"])
    out = root / "out"
    facts, timings = history_cli.run_releases(
        Console(quiet=True), [("double", v) for v in envs], cases, errors, specs_by_format(("onnx",)), out, 1, 60.0,
        expectations, True, False, False, make_env=lambda package, version, **_: envs[version])
    summary = history_cli.merge(out, facts, expectations, "2026-11-24T00:00:00+00:00", timings, [str(CASES)])
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {"out": out, "facts": facts, "summary": summary, "records": records, "cases": cases}


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
    assert summary == {"records": 54, "runs": 3, "unavailable": 1}
    assert json.loads(json.dumps(model)) == json.loads((history["out"] / "history.json").read_text())
    assert {r["runtime_version"] for r in records} == {"1.0", "2.0", "3.0"}


def test_a_release_that_cannot_be_installed_is_listed_with_its_reason(history):
    info = json.loads((history["out"] / "run.json").read_text())
    by_version = {e["version"]: e for e in info["history"]["environments"]}
    assert by_version["4.0"]["error"] == "could not be installed: no such release"
    assert "run" not in by_version["4.0"]
    assert by_version["1.0"]["error"] == "" and by_version["1.0"]["targets"]


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
    assert {r["case"] for r in crash} == {"rnn/layout[layout=0,direction=forward,initial_h=random,sequence_lens=absent]"}
    assert all("SIGSEGV" in r["message"] for r in crash)


def test_version_ranges_in_expectations_apply_per_release(history):
    rejected = [r for r in history["records"] if r["verdict"] == "rejected"]
    gates = {(r["runtime_version"], r["gate"]) for r in rejected}
    assert gates == {("1.0", "expected"), ("3.0", "new")}


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


def test_installable_keeps_final_releases_with_a_wheel_for_this_interpreter():
    from packaging.tags import sys_tags
    tag = next(iter(sys_tags()))
    here = f"pkg-1.0-{tag.interpreter}-{tag.abi}-{tag.platform}.whl"
    releases = {"1.0": [{"filename": here}], "1.1": [{"filename": "pkg-1.1-cp27-cp27m-win32.whl"}],
                "1.2rc1": [{"filename": here.replace("1.0", "1.2rc1")}], "1.3": [{"filename": "pkg-1.3.tar.gz"}],
                "1.4": [{"filename": here.replace("1.0", "1.4"), "yanked": True}]}
    assert installable(releases) == ["1.0"]


def test_a_bad_selection_is_a_usage_error():
    proc = conformance("history", "onnxruntime>=1.18", "--out", "/nonexistent/never-written")
    assert proc.returncode == 2
    assert "expected NAME==LOW..HIGH" in proc.stdout + proc.stderr


def test_the_representative_subset_keeps_every_op_and_feature_class():
    from conformance.case.features import features
    chosen = history_cli.representative(ROOT / "cases")
    every = sorted(p for p in (ROOT / "cases").rglob("*.yaml") if "production" not in p.parts)
    assert 0 < len(chosen) < len(every)
    assert all("production" not in p.parts for p in chosen)

    def classes(paths):
        cases, _ = load_paths(paths)
        return {(c.op, token) for c in cases for token in features(c)}, len(cases)
    kept, kept_cases = classes(chosen)
    corpus, corpus_cases = classes(every)
    assert kept == corpus
    assert kept_cases < 0.75 * corpus_cases
    stems = {p.stem for op in ("rnn", "gru", "lstm") for p in (ROOT / "cases" / op).glob("*.yaml")}
    assert stems <= {p.stem for p in chosen}  # one file per feature class at least
    assert ROOT / "cases" / "lstm" / "activation_defaults.yaml" in chosen
    assert history_cli.representative(ROOT / "cases") == chosen  # deterministic


def test_arrays_cross_the_pipe_bit_exact_bfloat16_included():
    import ml_dtypes
    import numpy as np

    from conformance.history.remote import pack, unpack
    for arr in (np.array([[1.5, -0.0, np.nan]], np.float32), np.arange(6, dtype=np.float16).reshape(2, 3),
                np.array([1.0, 3.140625, -2.5e-3], dtype=ml_dtypes.bfloat16), np.array([4, 2], np.int32)):
        back = unpack(pack(arr))
        assert back.dtype == arr.dtype and back.shape == arr.shape
        assert back.tobytes() == arr.tobytes()


def test_bisect_asks_for_the_middle_release_of_each_gap_where_a_class_changes(history):
    every = {"double": ["0.5", "1.0", "1.2", "1.5", "1.7", "2.0", "2.5", "3.0", "4.0"]}
    expectations = Expectations.load([history["out"].parent / "expect.yaml"])
    assert history_cli.gaps(history["facts"], expectations, every) == [("double", "1.5"), ("double", "2.5")]
    assert history_cli.gaps(history["facts"], expectations, {"double": ["1.0", "2.0", "3.0"]}) == []


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
    assert model["releases"]["double"] == ["1.0", "2.0", "3.0", "4.0"]
    assert (history["out"] / "history.html").is_file() and (history["out"] / "history.md").is_file()


def test_the_merge_keeps_only_the_selected_cases(history, tmp_path):
    one = history["cases"][0].id
    facts = [f for f in history["facts"] if f.get("run")]
    summary = history_cli.merge(tmp_path / "one", facts, None, "2026-11-24T00:00:00+00:00", {}, [str(CASES)], {one})
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
    history_cli.merge(tmp_path / "out", facts, expectations, "2026-11-24T00:00:00+00:00", {}, [str(CASES)])
    model = json.loads((tmp_path / "out" / "history.json").read_text())
    layout = next(c for c in model["classes"] if "release 1 has no layout 1" in c["name"])
    line = next(ln for ln in layout["lines"] if ln["line"] == "double/CPU@onnx-14")
    assert line["regressions"] == [] and line["unstable"] == ["3.0"]
    assert line["states"][:3] == ["shows", "fixed", "unstable"]
    records = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert {tuple(r["unstable"]) for r in records if r.get("unstable")} == {("pass", "rejected")}
