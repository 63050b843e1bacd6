"""WebNN.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_webnn.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.calibration import budget_arg
from tests.conftest import runtime
from tests.unit.test_webnn import ED

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "conformance"]


# -- the translator, feature by feature --------------------------------------------------------------


# -- refusals ---------------------------------------------------------------------------------------


# -- the real browser -------------------------------------------------------------------------------

def browser_or_skip():
    from conformance.runtimes.webnn_browser import NoBrowser, find
    runtime("playwright", "Playwright for Python is not installed")
    try:
        return find()
    except NoBrowser as exc:
        pytest.skip(f"no browser with a working WebNN could be found or installed here: {exc}")


def run_cli(*args, env=None, timeout=600):
    return subprocess.run(CLI + list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def records(folder) -> list[dict]:
    return [json.loads(line) for line in (Path(folder) / "results.jsonl").read_text().splitlines()]


def test_real_browser_runs_gru_and_lstm_and_refuses_a_bad_shape(tmp_path):
    browser = browser_or_skip()
    assert browser.facts["contexts"]["cpu"]["opSupportLimits"]["lstm"]
    done = run_cli("run", "cases/gru/basic.yaml", "cases/lstm/peephole_output_gate.yaml",
                   "cases/invalid/lstm/B_shape.yaml",
                   "--runtime", "webnn", "--device", "CPU", "--spec", ED, "--out", str(tmp_path), "--fresh",
                   "--jobs", "1", "--no-ablation", "--artifacts", "full")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    got = records(tmp_path)
    assert got and {r["verdict"] for r in got} == {"pass"}, [(r["case"], r["verdict"]) for r in got]
    refused = [r for r in got if r["expect"] == "invalid"]
    assert refused and all("cases/invalid/lstm/B_shape.yaml:" in r["message"] for r in refused)
    run = json.loads((tmp_path / "run.json").read_text())
    target = next(t for t in run["targets"] if t["runtime"] == "webnn")
    described = target["configuration"]["describe"]
    assert described["browser"] and described["backend"] and set(described["opSupportLimits"]) == {
        "gru", "gruCell", "lstm", "lstmCell"}
    assert target["configuration"]["probe"] == "measured"


@pytest.mark.parametrize("double", ["Sabotaged", "SabotagedInBatches"])
def test_a_renderer_crash_and_a_hang_each_cost_one_verdict(tmp_path, double):
    """Alone and in batches: a crash or hang inside a batch sends its pairs again alone."""
    browser = browser_or_skip()

    def browsers() -> int:
        return sum(1 for p in Path("/proc").glob("[0-9]*") if _cmdline(p).startswith(browser.path))

    before = browsers()
    env = {"WEBNN_SABOTAGE_CRASH": "direction=forward,B=random,initial_h=absent",
           "WEBNN_SABOTAGE_HANG": "direction=reverse,B=random,initial_h=absent"}
    name = "webnn-sabotaged" + ("-batched" if double == "SabotagedInBatches" else "")
    done = run_cli("run", "cases/gru/basic.yaml", "-k", "B=random", "--runtime-plugin", f"tests.doubles.webnn:{double}",
                   "--runtime", name, "--spec", ED, "--timeout", budget_arg(15), "--out", str(tmp_path),
                   "--fresh", "--jobs", "1", "--no-ablation", env=env)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    verdicts = {r["case"]: r for r in records(tmp_path)}
    assert len(verdicts) == 6
    crash = verdicts["gru/basic[direction=forward,B=random,initial_h=absent]"]
    hang = verdicts["gru/basic[direction=reverse,B=random,initial_h=absent]"]
    assert crash["verdict"] == "crash" and "Target crashed" in crash.get("runtime_output", "")
    assert hang["verdict"] == "timeout"
    others = [r for r in verdicts.values() if r is not crash and r is not hang]
    assert [r["verdict"] for r in others] == ["pass"] * 4
    if double == "SabotagedInBatches":  # the crash's and the hang's batches were run again alone
        alone = {r["case"]: r["batch"]["alone"] for r in verdicts.values() if "alone" in r.get("batch", {})}
        assert "ended with" in alone[crash["case"]] and "ended with" in alone[hang["case"]]
        assert len(alone) > 2  # the pairs that shared a batch with them, run alone too
    if sys.platform.startswith("linux"):
        assert browsers() <= before, "a browser outlived its worker"


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


# -- the declared gap -------------------------------------------------------------------------------

def test_no_browser_is_a_declared_gap(tmp_path, monkeypatch):
    from conformance.runtimes import webnn
    monkeypatch.setenv("CONFORMANCE_WEBNN_BROWSER", str(tmp_path / "no-such-browser"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    found, gaps = webnn.targets({"webnn": [ED]})
    assert found == [] and len(gaps) == 1 and gaps[0][0] == "webnn"
    assert "no-such-browser" in gaps[0][1]


def test_no_browser_anywhere_names_every_place_tried(tmp_path, monkeypatch):
    from conformance.runtimes import webnn_browser
    monkeypatch.delenv("CONFORMANCE_WEBNN_BROWSER", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(webnn_browser, "machine_candidates", lambda: [])
    with pytest.raises(webnn_browser.NoBrowser, match="not installed .*--install"):
        webnn_browser.find()


def test_the_cli_lists_the_gap_and_runs_green(tmp_path):
    env = {"CONFORMANCE_WEBNN_BROWSER": str(tmp_path / "no-such-browser"), "XDG_CACHE_HOME": str(tmp_path)}
    listed = run_cli("list", "--targets", env=env)
    assert "webnn" in listed.stdout + listed.stderr and "no-such-browser" in listed.stdout + listed.stderr
    done = run_cli("run", "cases/gru/basic.yaml", "-k", "direction=forward", "--runtime", "webnn", "--runtime",
                   "directml-interpreter", "--out", str(tmp_path / "out"), "--jobs", "1", "--no-ablation", env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert any("webnn" in json.dumps(s) for s in run["skipped_runtimes"])
