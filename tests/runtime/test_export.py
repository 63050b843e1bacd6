"""`conformance export`: the exported vectors, read back by ONNX's own backend test runner on
onnxruntime and by the WPT-style harness on the real Chromium WebNN target, pass where the suite
passes and fail where it fails.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_export.py."""

from __future__ import annotations

import io
import json
import unittest
import warnings
from pathlib import Path

import numpy as np

from conformance.results import read_results
from tests.conftest import ROOT, conformance

#: GRU cases onnxruntime passes (basic) and fails (a ThresholdedRelu without its own alpha, whose
#: default onnxruntime takes as 0: expectations/onnxruntime.yaml)
ONNX_CASES = ["cases/gru/basic.yaml", "cases/gru/activation_defaults.yaml"]
ONNX_SELECT = "direction=forward or ThresholdedRelu"


def _verdicts(out: Path) -> dict:
    return {(r["case"], r["spec"]): r["verdict"] for r in read_results(out / "results.jsonl")}


def _onnx_backend_runner(folder: Path) -> dict:
    """ONNX's backend test runner (onnx.backend.test) on onnxruntime's backend over the exported
    folder, with each test's data.json tolerance: {test folder: passed}."""
    import onnxruntime.backend as backend
    from onnx.backend.test.loader import load_model_tests
    from onnx.backend.test.runner import Runner
    with warnings.catch_warnings(), np.errstate(all="ignore"):   # ONNX's own node tests, loaded and dropped
        warnings.simplefilter("ignore")
        runner = Runner(backend, __name__)
    runner._test_items.clear()   # only the exported tests, not ONNX's own
    for test in load_model_tests(data_dir=str(folder.parent), kind=folder.name):
        runner._add_model_test(test, "Exported")
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(runner.test_suite)
    failed = {t.id().rsplit(".", 1)[1] for t, _ in result.failures + result.errors}
    skipped = {t.id().rsplit(".", 1)[1] for t, _ in result.skipped}
    ran = {n.removesuffix("_cpu") for n in (t.id().rsplit(".", 1)[1] for t in _tests(runner.test_suite))
           if n.endswith("_cpu") and n not in skipped}
    return {name: f"{name}_cpu" not in failed for name in ran}


def _tests(suite):
    for t in suite:
        yield from (_tests(t) if isinstance(t, unittest.TestSuite) else [t])


def test_node_tests_pass_on_onnx_backend_runner_where_the_suite_passes_and_fail_where_it_fails(tmp_path):
    run = tmp_path / "run"
    conformance("run", *ONNX_CASES, "-k", ONNX_SELECT, "--runtime", "onnxruntime", "--spec", "onnx-14",
                "--no-ablation", "--no-expectations", "--out", run, "-q", check=1)
    folder = tmp_path / "onnx-node-test"
    conformance("export", *ONNX_CASES, "-k", ONNX_SELECT, "--format", "onnx-node-test", "--spec", "onnx-14",
                "--out", folder, check=0)
    manifest = json.loads((folder / "export.json").read_text())
    suite = _verdicts(run)
    passed = _onnx_backend_runner(folder)
    compared = {}
    for item in manifest["written"]:
        compared[item["case"]] = (suite[(item["case"], item["spec"])] == "pass", passed[item["path"]])
    assert compared and all(s == r for s, r in compared.values()), compared
    assert {s for s, _ in compared.values()} == {True, False}, "both a passing and a failing case exported"
    test = folder / manifest["written"][0]["path"]
    tolerance = json.loads((test / "tolerance.json").read_text())
    assert tolerance["derivation"].startswith("derived:") and tolerance["outputs"][0]["allowed"]
    assert json.loads((test / "data.json").read_text())["atol"] == tolerance["runner"]["atol"] > 0


def test_a_node_test_with_a_wrong_expected_value_fails_the_runner(tmp_path):
    """The runner judges the exported values: one expected element moved by twice the test's atol fails it."""
    import onnx
    from onnx import numpy_helper
    folder = tmp_path / "onnx-node-test"
    conformance("export", "cases/gru/basic.yaml", "-k", "direction=forward,B=random,initial_h=random",
                "--format", "onnx-node-test", "--spec", "onnx-14", "--out", folder, check=0)
    test = next(p for p in folder.iterdir() if p.is_dir())
    assert _onnx_backend_runner(folder) == {test.name: True}
    atol = json.loads((test / "data.json").read_text())["atol"]
    path = test / "test_data_set_0" / "output_0.pb"
    tensor = onnx.load_tensor(str(path))
    values = numpy_helper.to_array(tensor).copy()
    values.flat[0] += np.float32(2 * atol + 1e-3)
    path.write_bytes(numpy_helper.from_array(values, tensor.name).SerializeToString())
    assert _onnx_backend_runner(folder) == {test.name: False}


def _harness(tests: list, browser: str) -> list:
    from playwright.sync_api import sync_playwright

    from conformance.runtimes.webnn_browser import FLAGS
    page_text = (ROOT / "conformance" / "export" / "wpt_harness.html").read_text()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=browser, args=list(FLAGS))
        try:
            page = b.new_page()
            page.route("http://localhost/**", lambda r: r.fulfill(status=200, content_type="text/html",
                                                                  body=page_text))
            page.goto("http://localhost/wpt_harness.html")
            return page.evaluate("([tests, options]) => runTests(tests, options)", [tests, {"deviceType": "cpu"}])
        finally:
            b.close()


def test_an_exported_wpt_file_runs_on_the_real_browser_target(tmp_path):
    from tests.runtime.test_webnn import browser_or_skip
    browser = browser_or_skip()
    cases = ["cases/gru/basic.yaml", "cases/lstm/basic.yaml"]
    select = "direction=forward or direction=reverse"
    spec = "webnn-cr-20260122"
    out = tmp_path / "wpt"
    conformance("export", *cases, "-k", select, "--format", "wpt-webnn", "--spec", spec, "--out", out, check=0)
    run = tmp_path / "run"
    conformance("run", *cases, "-k", select, "--runtime", "webnn", "--spec", spec, "--no-ablation", "--out", run,
                "-q", env={"CONFORMANCE_WEBNN_BROWSER": browser.path})
    suite = {cid: v for (cid, s), v in _verdicts(run).items() if s == spec}
    for name in ("gru", "lstm"):
        tests = json.loads((out / spec / f"{name}.json").read_text())
        reports = _harness(tests, browser.path)
        assert len(reports) == len(tests) > 0
        for test, report in zip(tests, reports):
            assert report["pass"] == (suite[test["source"]["case"]] == "pass"), report
        # a wrong expected value, beyond its element's budget, fails that test
        wrong = json.loads(json.dumps(tests[0]))
        output = next(iter(wrong["graph"]["expectedOutputs"].values()))
        output["data"][0] = output["data"][0] + 0.5
        assert _harness([wrong], browser.path)[0]["pass"] is False
