"""The execution forms end to end, through the real CLI: each test double of tests/doubles/forms.py is
caught by the form or relation meant for it while its fresh, static, constant twin passes; the real
runtimes in their forms; the path a pair took; a pair that fell back to another provider.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from conformance.run import read_results
from tests.conftest import ROOT, conformance, runtime

#: select every configuration of a plugin: naming session=... also runs the sliced forms on every case
EVERY_FORM = ("--config", "session=reused", "--config", "session=fresh")


def _run(tmp_path, double: str, cases: str, *extra: str, check=None) -> dict:
    import tests.doubles.forms as doubles
    out = tmp_path / double
    proc = conformance("run", cases, "--runtime-plugin", f"tests.doubles.forms:{double}", "--no-entry-points",
                       "--runtime", getattr(doubles, double).name, "--artifacts", "full",
                       "--spec", "onnx-14", "--out", out, "--no-ablation", "--jobs", "2", *EVERY_FORM, *extra)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    if check is not None:
        assert proc.returncode == check, proc.stdout + proc.stderr
    by_config: dict = defaultdict(Counter)
    for r in read_results(out / "results.jsonl"):
        by_config[r["config"]][r["verdict"]] += 1
    return by_config


def _only(counter: Counter, verdicts: set) -> bool:
    return bool(counter) and set(counter) <= verdicts


@pytest.mark.parametrize(("double", "cases", "form", "caught"), [
    ("IgnoresFedWeights", "cases/gru/basic.yaml", "weights=inputs", "fail"),
    ("LeaksState", "cases/gru/basic.yaml", "shape=dynamic/session=reused", "state-leak"),
    ("ShapeSpecialized", "cases/lstm/basic.yaml", "shape=dynamic", "fail"),
    ("BatchSliceBreaker", "cases/gru/basic.yaml", "relations=on", "inconsistent"),
])
def test_each_double_is_caught_by_its_form_and_its_plain_twin_passes(tmp_path, double, cases, form, caught):
    found = _run(tmp_path, double, cases)
    assert _only(found["default"], {"pass"}), found["default"]
    assert found[form][caught] > 0, dict(found)


def test_the_correct_double_passes_every_form(tmp_path):
    found = _run(tmp_path, "FormsNumpy", "cases/gru/sequence_lens.yaml", check=0)
    assert set(found) == {"default", "shape=dynamic", "weights=inputs", "shape=dynamic/session=reused", "threads=4",
                          "relations=on"}
    for config, counts in found.items():
        assert _only(counts, {"pass", "unspecified"}), (config, counts)


def test_a_plain_defect_is_ablated_once_and_its_forms_take_the_plain_targets_cause(tmp_path):
    out = tmp_path / "clip"
    conformance("run", "cases/gru/clip.yaml", "-k", "activations=Sigmoid+Tanh", "--runtime-plugin",
                "tests.doubles.forms:IgnoresClipInEveryForm", "--no-entry-points", "--runtime", "numpy-ignores-clip",
                "--spec", "onnx-14", "--out", out, "--jobs", "2", "--config", "shape=dynamic",
                "--config", "forms=default", check=1)
    failing = {r["target"] for r in read_results(out / "results.jsonl") if r["verdict"] == "fail"}
    assert len(failing) >= 2 and any("/shape=dynamic" in t for t in failing)
    clusters = json.loads((out / "clusters.json").read_text())
    assert [c["cause"] for c in clusters] == ["fails whenever clip is set"], [c["cause"] for c in clusters]
    assert set(clusters[0]["targets"]) == failing
    # the forms' pairs were not ablated again: every ablation run is the plain target's
    ran_on = {a["target"] for a in clusters[0]["ablations"]}
    assert ran_on and not any("shape=" in t for t in ran_on), ran_on


def test_a_forms_cause_without_its_plain_sibling_in_the_run_says_it_cannot_tell(tmp_path):
    out = tmp_path / "alone"
    conformance("run", "cases/lstm/basic.yaml", "-k", "forward",
                "--runtime-plugin", "tests.doubles.forms:ShapeSpecialized",
                "--no-entry-points", "--runtime", "numpy-shape-specialized", "--spec", "onnx-14", "--out", out,
                "--jobs", "2", "--config", "shape=dynamic/session=fresh", check=1)
    causes = [c["cause"] for c in json.loads((out / "clusters.json").read_text())]
    assert causes and all("with shape=dynamic" in c and "no plain-form target in this run" in c
                          and "the plain" not in c for c in causes), causes


def test_a_pair_that_fell_back_is_not_the_targets_verdict(tmp_path):
    out = tmp_path / "fallback"
    proc = conformance("run", "cases/gru/basic.yaml", "-k", "forward",
                       "--runtime-plugin", "tests.doubles.plugins:FallsBack",
                       "--runtime", "pretend-accelerator", "--no-entry-points", "--spec", "onnx-14", "--out", out,
                       "--no-ablation", "--artifacts", "full")
    records = read_results(out / "results.jsonl")
    assert records and all(r["verdict"] == "fail" for r in records)  # its outputs are wrong ...
    assert all(r["gate"] == "fallback" and "CPUExecutionProvider" in r["fallback"] for r in records)
    assert proc.returncode == 0, proc.stdout + proc.stderr              # ... but not this target's
    assert "fallback" in proc.stdout


def test_onnxruntime_takes_every_form_and_names_its_provider(tmp_path):
    out = tmp_path / "ort"
    conformance("run", "cases/lstm/sequence_lens.yaml", "--runtime", "onnxruntime", "--spec", "onnx-14",
                "--out", out, "--no-ablation", "--jobs", "2", "--artifacts", "full", *EVERY_FORM, check=0)
    records = read_results(out / "results.jsonl")
    configs = Counter(r["config"] for r in records)
    assert set(configs) == {"default", "shape=dynamic", "weights=inputs", "shape=dynamic/session=reused", "threads=4",
                            "relations=on"}
    leaks = [r for r in records if r["verdict"] in ("state-leak", "inconsistent")]
    assert not leaks, leaks[0]["message"]
    full = read_results(out / "results.jsonl")
    assert any("CPU" in " ".join(r.get("path", {}).get("nodes", [])) for r in full if r.get("path"))


def test_openvino_dynamic_shapes_and_the_cause_names_the_form_and_paths(tmp_path):
    """OpenVINO's CPU plugin on the pinned release: a dynamic recurrent sequence runs as RNNSeq, which
    ignores sequence lengths (docs/forms.md); the static one runs as TensorIterator and is right."""
    runtime("openvino", reason="OpenVINO is not installed here")
    out = tmp_path / "ov"
    conformance("run", "cases/gru/sequence_lens.yaml", "-k", "direction=forward and initial_h=random",
                "--runtime", "openvino", "--spec", "openvino-opset5", "--config", "precision=pinned",
                "--out", out, "--jobs", "2", "--ablation-time", "120", "--artifacts", "full")
    records = {(r["case"], r["config"]): r for r in read_results(out / "results.jsonl")}
    dynamic = [r for (case, config), r in records.items() if config == "precision=pinned/shape=dynamic"]
    static = [r for (case, config), r in records.items() if config == "precision=pinned"]
    assert static and all(r["verdict"] == "pass" for r in static)
    failing = [r for r in dynamic if r["verdict"] == "fail"]
    assert failing and all("RNNSeq" in " ".join(r["path"]["layers"]) for r in failing)
    clusters = json.loads((out / "clusters.json").read_text())
    causes = [c["cause"] for c in clusters if any("shape=dynamic" in t for t in c["targets"])]
    assert any("with shape=dynamic, where it runs as RNNSeq" in c and "passes with shape=static, where it runs as "
               "TensorIterator" in c for c in causes), causes


def test_list_targets_shows_and_selects_the_forms():
    proc = conformance("list", "--targets", "--config", "shape=dynamic", check=0)
    ids = [line.split("\t")[0] for line in proc.stdout.splitlines() if "@" in line]
    assert ids and all("/shape=dynamic" in i for i in ids)
    assert any(i.startswith("onnxruntime") and "session=reused" in i for i in ids)
    forms = {line.split(":")[0]: line for line in proc.stdout.splitlines() if line.startswith("forms ")}
    assert any("onnxruntime" in k and "shape=dynamic" in v and "session=reused" in v for k, v in forms.items())
    assert (ROOT / "docs" / "forms.md").exists()
