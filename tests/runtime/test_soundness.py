"""A runtime whose error outlives its call costs its own pair only (conformance/isolation/soundness.py,
docs/isolation.md, "A device error that outlives its call"): the sticky test doubles of
tests/doubles/sticky.py beside onnxruntime, whose verdicts they must repeat on every other pair."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from conformance.run import read_results
from tests.conftest import ROOT, conformance, runtime

runtime("onnxruntime")

DOUBLES = {"sticky": "tests.doubles.sticky:StickyAfterRefusal",
           "sticky-sound": "tests.doubles.sticky:StickyWithSound",
           "sticky-silent": "tests.doubles.sticky:StickyAfterRefusalSilently"}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    out = tmp_path_factory.mktemp("sticky")
    plugins = [a for path in DOUBLES.values() for a in ("--runtime-plugin", path)]
    names = [a for name in DOUBLES for a in ("--runtime", name)]
    proc = conformance("run", ROOT / "cases", "-k", "lstm", "--spec", "onnx-14", "--config", "default",
                       "--runtime", "onnxruntime", *names, *plugins, "--jobs", "2", "--no-ablation",
                       "--out", out)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    by_case: dict = defaultdict(dict)
    for r in read_results(out / "results.jsonl"):
        by_case[r["case"]][r["runtime"]] = r
    return by_case


@pytest.mark.parametrize("name", sorted(DOUBLES))
def test_a_sticky_error_costs_its_own_pair_and_no_other(verdicts, name):
    seen = Counter()
    for case, got in verdicts.items():
        plain, sticky = got["onnxruntime"], got[name]
        refused = plain["verdict"] in ("rejected",) or (plain["verdict"] == "pass" and plain["expect"] != "valid")
        if refused:  # onnxruntime refused it: the double's refusal left its worker unsound
            assert sticky["verdict"] == "crash" and sticky.get("unsound"), (case, sticky["message"])
            assert "then the worker was unsound" in sticky["message"]
            seen["trigger"] += 1
        else:  # every other pair exactly as onnxruntime's, though a trigger ran before it in that worker
            assert sticky["verdict"] == plain["verdict"], (case, sticky["message"][:300])
            assert not sticky.get("unsound")
            seen["kept"] += 1
    assert seen["trigger"] >= 20 and seen["kept"] >= 200, seen
    # no valid pair is lost to another pair's error
    lost = [c for c, got in verdicts.items() if got[name]["expect"] == "valid" and got[name]["verdict"] == "rejected"]
    assert not lost, lost[:5]
