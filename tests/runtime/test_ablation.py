"""Divergence clusters: the ablation names the feature a known-wrong runtime mishandles.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_ablation.py."""

import json

from conformance.run import read_results
from tests.conftest import ROOT, conformance


def test_ablation_names_clip_as_the_cause_for_a_runtime_that_ignores_clip(tmp_path):
    out = tmp_path / "out"
    proc = conformance("run", ROOT / "cases" / "gru" / "clip.yaml", "-k", "activations=Sigmoid+Tanh",
                       "--spec", "onnx-14",
                       "--runtime", "ignores-clip", "--runtime-plugin", "tests.doubles.plugins:IgnoresClip",
                       "--out", out, "-q", check=1)
    fails = [r for r in read_results(out / "results.jsonl") if r["verdict"] == "fail"]
    assert fails, "ignoring clip must be caught on the clip cases"
    clusters = json.loads((out / "clusters.json").read_text())
    assert clusters and clusters[0]["target"].startswith("ignores-clip")
    assert clusters[0]["cause"].startswith("fails whenever clip is set")
    assert clusters[0]["features"] == ["clip"]
    assert sorted(clusters[0]["cases"]) == sorted(r["case"] for r in fails)
    assert clusters[0]["case_families"] == ["gru/clip"]          # the case ids' family, shown by the report
    assert " · case family gru/clip · cluster c1" in (out / "index.html").read_text()
    flipped = [a for a in clusters[0]["ablations"] if a["feature"] == "clip"]
    assert flipped and all(a["verdict"] == "pass" for a in flipped)
    assert "divergence clusters" in proc.stdout and "fails whenever clip is set" in proc.stdout


def test_no_ablation_flag_writes_no_clusters(tmp_path):
    out = tmp_path / "out"
    conformance("run", ROOT / "cases" / "gru" / "clip.yaml", "-k", "activations=Sigmoid+Tanh and forward", "--spec",
                "onnx-14", "--runtime", "ignores-clip", "--runtime-plugin", "tests.doubles.plugins:IgnoresClip",
                "--out", out, "-q", "--no-ablation", check=1)
    assert not (out / "clusters.json").exists()


def test_one_cause_is_one_cluster_whatever_the_values(tmp_path):
    """Clip values and activation names do not split a cause: onnx.reference ignores both clip and
    the activations attribute, and each is one cluster naming the activations it was seen with."""
    out = tmp_path / "out"
    conformance("run", ROOT / "cases" / "gru" / "clip.yaml", ROOT / "cases" / "gru" / "activations.yaml",
                "--spec", "onnx-22", "--runtime", "onnx-reference", "--out", out, "-q", "--no-expectations", check=1)
    clusters = json.loads((out / "clusters.json").read_text())
    causes = [c["cause"] for c in clusters]
    assert len(causes) == len(set(causes))
    (clip,) = [c for c in clusters if c["features"] == ["clip"]]
    assert clip["cause"] == "fails whenever clip is set"
    assert {"clip=0.5", "clip=2.0"} <= {part for cid in clip["cases"] for part in cid.split("[")[1].split(",")}
    (acts,) = [c for c in clusters if c["features"] == ["activations"]]
    assert acts["cause"].startswith("fails whenever non-default activations are used (seen with ")
    assert len(acts["activations"]) >= 4 and "Softsign" in acts["activations"]


def test_a_groups_cases_that_lack_its_first_cases_cause_get_a_cause_of_their_own(tmp_path):
    """lstm/peepholes_input_forget holds cases that fail for input_forget=1 and cases that fail for their
    peepholes alone: each gets the cause it has, not the first case's of their group (one case family)."""
    out = tmp_path / "two"
    conformance("run", ROOT / "cases" / "lstm" / "peepholes_input_forget.yaml", "--spec", "onnx-14",
                "--runtime", "numpy-ignores-input-forget-and-peepholes", "--no-entry-points",
                "--runtime-plugin", "tests.doubles.forms:IgnoresInputForgetAndPeepholes", "--out", out, "-q", check=1)
    clusters = json.loads((out / "clusters.json").read_text())
    by_cause = {c["cause"]: c["cases"] for c in clusters}
    forget = [ids for cause, ids in by_cause.items() if "input_forget is 1" in cause]
    peep = [ids for cause, ids in by_cause.items() if "peepholes are non-zero" in cause and "input_forget" not in cause]
    assert forget and peep, list(by_cause)
    assert all("input_forget=1" in i for i in forget[0])
    assert peep[0] and all("input_forget=0" in i and "P=random" in i for i in peep[0])
