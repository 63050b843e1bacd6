"""`conformance history` runs the execution forms (conformance/runtimes/forms.py) in each release:
a history of one real release (the pinned onnxruntime, in an environment of its own that reads this
interpreter's packages, so no package index is needed) on its plain targets and on ``shape=dynamic``.
A form's plan of calls goes whole through the pipe to the release's interpreter
(conformance/history/proxy.py ``run_plan``), where the suite's adapter loads the model once and runs
it at three shapes, each judged by the oracle."""

from __future__ import annotations

import importlib.metadata
import io
import json
import sysconfig
import venv
from collections import defaultdict

import numpy as np
import pytest
from rich.console import Console

from conformance.case import load_paths
from conformance.history.environments import Env, _link_suite
from conformance.history.merge import merge
from conformance.history.session import run_releases
from conformance.run import compile_expression
from conformance.selection import specs_by_format
from tests.conftest import ROOT, conformance, runtime
from tests.doubles.history import make_release

runtime("onnxruntime", reason="the pinned onnxruntime is the release this history runs")

CASES = ROOT / "cases" / "rnn" / "basic.yaml"
SELECT = "B=random and initial_h=random"
SPEC = "onnx-14"


def pinned_release(root) -> Env:
    """The pinned onnxruntime as a release's environment: a virtual environment of its own (its own
    interpreter, the suite linked in as for any release) whose packages are this interpreter's."""
    folder = root / "onnxruntime-pinned"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python"
    site = next(folder.glob("lib/python3*/site-packages"))
    (site / "parent_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _link_suite(folder, python)
    return Env("onnxruntime", importlib.metadata.version("onnxruntime"), folder, python=str(python))


def forms_history_of(root, package: str, envs: dict) -> dict:
    """A history of the releases ``envs`` ({version: Env}) of ``package`` on the cases of
    :data:`CASES` that :data:`SELECT` picks, on the plain and the shape=dynamic targets."""
    cases, errors = load_paths([CASES])
    select = compile_expression(SELECT)
    cases = [c for c in cases if select(c.id)]
    out = root / "out"
    log = io.StringIO()
    facts, timings = run_releases(
        Console(file=log, width=100), [(package, v) for v in envs], cases, errors, specs_by_format((SPEC,)), out, 1,
        120.0, None, True, False, False, make_env=lambda package, version, **_: envs[version],
        configs=("forms=default", "shape=dynamic"))
    summary = merge(out, facts, None, "2026-11-27T00:00:00+00:00", timings, [str(CASES)])
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {"facts": facts, "records": records, "cases": cases, "summary": summary, "model": summary["model"],
            "log": log.getvalue()}


@pytest.fixture(scope="module")
def forms_history(tmp_path_factory):
    root = tmp_path_factory.mktemp("history-forms")
    env = pinned_release(root / "envs")
    return {"version": env.version, **forms_history_of(root, "onnxruntime", {env.version: env})}


def test_a_history_runs_the_forms_that_config_selects_in_the_release(forms_history):
    """--config forms=default and shape=dynamic: the plain target and the shape=dynamic ones
    (shape=dynamic/session=reused too), not weights=inputs, threads=4 nor relations=on."""
    v = forms_history["version"]
    (facts,) = forms_history["facts"]
    assert facts["state"] == "ready" and not facts["error"], forms_history["log"]
    assert sorted(facts["targets"]) == sorted([f"onnxruntime-{v}/CPU@{SPEC}",
                                               f"onnxruntime-{v}/CPU/shape=dynamic@{SPEC}",
                                               f"onnxruntime-{v}/CPU/shape=dynamic/session=reused@{SPEC}"])
    # the support timelines are the plain target's probes, once
    assert {s["target"] for s in facts["support"]} == {f"onnxruntime-{v}/CPU@{SPEC}"}
    assert {(s["op"], s["state"]) for s in facts["support"]} == {("RNN", "accepts"), ("GRU", "accepts"),
                                                                  ("LSTM", "accepts")}


def test_shape_dynamic_is_loaded_once_in_the_release_and_judged_at_three_shapes(forms_history):
    v = forms_history["version"]
    by_target = defaultdict(dict)
    for r in forms_history["records"]:
        by_target[r["target"]][r["case"]] = r
    plain, dynamic = by_target[f"onnxruntime-{v}/CPU@{SPEC}"], by_target[f"onnxruntime-{v}/CPU/shape=dynamic@{SPEC}"]
    ids = {c.id for c in forms_history["cases"]}
    assert set(plain) == set(dynamic) == ids and len(ids) == 3
    for case_id, rec in dynamic.items():
        assert (rec["runtime_version"], rec["config"]) == (v, "shape=dynamic")
        assert rec["verdict"] == plain[case_id]["verdict"] == "pass", rec.get("message")
    # session=reused runs on the representative slice, as in `conformance run`
    reused = by_target[f"onnxruntime-{v}/CPU/shape=dynamic/session=reused@{SPEC}"]
    assert len(reused) == 1 and all(r["verdict"] == "pass" for r in reused.values())
    assert "pairs of session=reused, threads=4 and relations=on targets left out" in forms_history["log"]


def test_a_plan_goes_whole_to_the_release_and_comes_back_as_it_runs_here(forms_history, tmp_path):
    """The plan of a shape=dynamic pair, run by the release's interpreter through the pipe
    (EnvRuntime.run_plan): the adapter's load() there (one session for the three shapes), each call's
    outputs as the same adapter gives them in this process, the path the release's session took."""
    from conformance.history.proxy import EnvRuntime
    from conformance.isolation.plans import execute
    from conformance.isolation.serve import _as_arrays, _effective
    from conformance.run import forms as pair_forms
    from conformance.runtimes.forms import program_form
    from conformance.runtimes.onnxruntime import OnnxRuntime
    from conformance.specs import SPECS, translate

    case = next(c for c in forms_history["cases"] if "bidirectional" in c.id)
    form = program_form("shape=dynamic")
    pp = pair_forms.build(case, "shape=dynamic", lambda other: translate(SPECS[SPEC], other, form),
                          translate(SPECS[SPEC], case, form), lambda p: p.runtime_input())
    python = forms_history["facts"][0]["python"]
    remote = EnvRuntime(python, "conformance.runtimes.onnxruntime:OnnxRuntime",
                        (("provider", "CPUExecutionProvider"),), name="onnxruntime")
    there = remote.run_plan(pp.plan)
    here = execute(OnnxRuntime(provider="CPUExecutionProvider"), pp.plan, _as_arrays, _effective)
    assert there.loaded_by == here.loaded_by == "load"
    assert len(there.calls) == len(here.calls) == 3
    for (status, outputs, error), (_, expected, _) in zip(there.calls, here.calls):
        assert status == "ok", error
        assert [o.shape for o in outputs] == [e.shape for e in expected]
        assert all(np.allclose(o, e, rtol=1e-6, atol=1e-7) for o, e in zip(outputs, expected))
    assert {o.shape[0] for o, *_ in (c[1] for c in there.calls)} == {call.case.shape["seq_length"]
                                                                    for call in pp.calls}
    assert remote.path().get("nodes"), "the release's session names the provider of its recurrent node"


def test_the_history_view_keeps_each_form_as_a_line_of_its_own(forms_history):
    model = forms_history["summary"]["model"]
    text = json.dumps(model)
    assert "onnxruntime/CPU/shape=dynamic@onnx-14" in text and "onnxruntime/CPU@onnx-14" in text
    assert forms_history["summary"]["records"] == len(forms_history["records"]) > 6


def test_a_malformed_config_is_a_usage_error_before_anything_is_installed():
    proc = conformance("history", "onnxruntime==1.32.0", "--config", "shape", "--out", "/nonexistent/never-written")
    assert proc.returncode == 2
    assert "--config 'shape': expected KEY=VALUE" in proc.stderr


@pytest.fixture(scope="module")
def double_forms(tmp_path_factory):
    """Releases 2.1, 2.3 and 2.4 of the test double (tests/doubles/history.py) on their plain and
    shape=dynamic targets: 2.3's loaded model gets every call after its first wrong."""
    root = tmp_path_factory.mktemp("history-double-forms")
    return forms_history_of(root, "double", {v: make_release(root / "envs", v) for v in ("2.1", "2.3", "2.4")})


def test_a_divergence_of_one_form_gets_its_own_releases(double_forms):
    """The shape=dynamic line of the double fails on 2.3 only, at the shapes after the first call of
    its loaded model; the plain line passes on every release. The class is the form's, first shown
    in 2.3 and fixed in 2.4."""
    records = double_forms["records"]
    plain = [r for r in records if "shape=dynamic" not in r["target"]]
    dynamic = {r["runtime_version"]: r for r in records if "/shape=dynamic@" in r["target"]
               and "bidirectional" in r["case"]}
    assert len(plain) == 9 and {r["verdict"] for r in plain} == {"pass"}
    assert {v: r["verdict"] for v, r in dynamic.items()} == {"2.1": "pass", "2.3": "fail", "2.4": "pass"}
    wrong = dynamic["2.3"]
    assert wrong["loaded_by"] == "load"   # the double's own load(), in the release's interpreter
    assert [run["verdict"] for run in wrong["runs"]] == ["pass", "fail", "fail"], wrong["runs"]
    assert wrong["message"].startswith("at ")   # judged at another shape than the case's
    lines = [line for cls in double_forms["model"]["classes"] for line in cls["lines"]]
    assert {line["line"] for line in lines} == {"double/CPU/shape=dynamic@onnx-14"}
    (line,) = lines
    assert (line["first"], line["last"], line["fixed"]) == ("2.3", "2.3", "2.4")
