"""``conformance gpu-check`` end to end on the CPU (docs/gpu.md): a bundle made with ``--prepare`` from a
small corpus (a corpus file, a production file), then the check on the torch-spec test doubles of
cuDNN's kernels (tests/doubles/torch_kernels.py), which report the device CUDA: every stage runs from
the bundle, every spec failure of the TF32 and approximate-activation double is judged by its
declaration, the sticky device error costs its triggers only (each a new crash: exit status 1), and a
machine without a GPU target says so with exit status 2."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import ROOT, conformance, runtime

runtime("torch")

KERNELS = "tests.doubles.torch_kernels"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-check-cases")
    (root / "lstm").mkdir()
    (root / "invalid" / "lstm").mkdir(parents=True)
    (root / "production").mkdir()
    (root / "regressions").mkdir()
    shutil.copy(ROOT / "cases" / "lstm" / "basic.yaml", root / "lstm")
    shutil.copy(ROOT / "cases" / "invalid" / "lstm" / "initial_h_shape.yaml", root / "invalid" / "lstm")
    shutil.copy(ROOT / "cases" / "production" / "lstm_h17.yaml", root / "production")
    bundle = root.parent / "bundle"
    proc = conformance("gpu-check", bundle, "--prepare", "--cases", root, "--spec", "torch", "--jobs", "2",
                       timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return root, bundle


def test_the_bundle_holds_the_corpus_and_the_production_file(corpus):
    root, bundle = corpus
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["specs"] == ["torch"] and manifest["profiles"] == ["torch"] and not manifest["failed"]
    assert [f.rsplit("/", 1)[-1] for f in manifest["production_files"]] == ["lstm_h17.yaml"]
    assert len(list((bundle / "oracle-cache").glob("*.json.gz"))) == manifest["results"] >= 10


def test_the_check_runs_every_stage_from_the_bundle_and_judges_by_the_declaration(corpus, tmp_path):
    root, bundle = corpus
    out = tmp_path / "check"
    proc = conformance("gpu-check", bundle, "--cases", root, "--out", out, "--jobs", "2",
                       "--runtime-plugin", f"{KERNELS}:CudnnLikeTf32", "--runtime", "torch-cudnn-like-tf32-double",
                       "--runtime-plugin", f"{KERNELS}:StickyCuda", "--runtime", "torch-sticky-cuda-double",
                       "--fuzz-budget", "10m", "--fuzz-examples", "30", "--stage-limit", "900", timeout=1800)
    found = json.loads((out / "check.json").read_text())
    # the one finding: the sticky double's triggers, new crashes (no expectation knows a test double)
    assert proc.returncode == 1 and found["status"] == 1, proc.stdout[-3000:] + (out / "check.md").read_text()
    corpus_stage = found["stages"]["corpus"]["targets"]
    tf32 = next(row for t, row in corpus_stage.items() if "tf32-double" in t)
    assert tf32["verdicts"]["fail"] >= 10 and tf32["gate"] == {"declared": tf32["verdicts"]["fail"]}
    assert tf32["declared"].get("fail", 0) == 0 and "tanh ≤" in tf32["activations"]
    sticky = next(row for t, row in corpus_stage.items() if "sticky" in t)
    assert sticky["verdicts"].get("rejected", 0) == 0 and sticky["verdicts"]["crash"] >= 1   # triggers, no loss
    assert sticky["gate"] == {"new": sticky["verdicts"]["crash"]} and sticky["verdicts"]["pass"] >= 20
    production = found["stages"]["production"]["targets"]
    assert production and all(row["gate"].get("new", 0) == 0 for row in production.values())
    assert found["stages"]["fuzz"]["campaign"].startswith("30 cases")
    assert "## corpus: exit" in (out / "check.md").read_text()


def test_a_machine_without_a_gpu_target_lists_its_gaps_and_exits_2(corpus, tmp_path):
    root, bundle = corpus
    out = tmp_path / "none"
    proc = conformance("gpu-check", bundle, "--cases", root, "--out", out, "--runtime-plugin", f"{KERNELS}:Exact",
                       "--runtime", "torch-exact-double")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "no GPU target present" in proc.stdout and "No GPU target present" in (out / "check.md").read_text()
