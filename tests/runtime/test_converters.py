"""Converters as a stage of a target (docs/converters.md): the converter targets' ids, stages and
artefacts, the outcomes (pass, refused, invalid, wrong) and whose fault a divergence is, with the
deliberately wrong converters of tests/doubles/converter.py and the real converters of the
`converters` extra (their tests skip, saying so, where it is not installed).

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_converters.py."""

from __future__ import annotations

import importlib.util
import json

import pytest

from conformance.results import Record, records_of
from conformance.run import read_results
from tests.conftest import ROOT, conformance, required_runtimes

CONVERTERS_EXTRA = all(importlib.util.find_spec(m) is not None
                       for m in ("onnxscript", "onnxsim", "onnxconverter_common"))
#: skips where the extra is absent, unless CONFORMANCE_REQUIRE_RUNTIMES names it (tests/conftest.py):
#: then the tests run and fail
needs_extra = pytest.mark.skipif(not CONVERTERS_EXTRA
                                 and not {"onnxscript", "onnxsim", "onnxconverter_common"} & required_runtimes(),
                                 reason="the converters extra is not installed here "
                                 "(pip install -c constraints.txt -e '.[converters]', "
                                 "or nox -s conformance-converters)")


def _run(tmp_path, paths, converter, *extra, k=None):
    out = tmp_path / "out"
    args = ["run", *[ROOT / p for p in paths], "--converter", converter, "--out", out, "-q", "--fresh",
            "--artifacts", "full", *extra]
    if k:
        args += ["-k", k]
    proc = conformance(*args)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    records = read_results(out / "results.jsonl")
    clusters = json.loads((out / "clusters.json").read_text()) if (out / "clusters.json").exists() else []
    return out, records, clusters


# -- the test doubles: each gets the verdict and the cause meant for it ----------------------------

def test_a_converter_that_writes_linear_before_reset_wrong_is_wrong_and_named(tmp_path):
    out, records, clusters = _run(tmp_path, ["cases/gru/linear_before_reset.yaml"], "tests.doubles.converter:WRONG_LBR",
                                  "--config", "shape=static", k="linear_before_reset=1 and direction=forward")
    ran = [r for r in records if r["verdict"] != "not-expressible"]
    assert ran and all(r["verdict"] == "fail" for r in ran)
    assert all(r["converter"] == "wrong-lbr-2.13.0(opset=14)" for r in ran)
    assert ran[0]["target"] == "wrong-lbr-2.13.0(opset=14) → onnxruntime-1.32.0/CPU@torch"
    from conformance.converters.outcomes import outcome
    assert {outcome(Record.from_dict(r)) for r in ran} == {"wrong"}
    [cluster] = clusters
    assert cluster["runtime"] == "wrong-lbr"
    assert ("the converter writes GRU linear_before_reset=0 (the suite writes 1); onnxruntime passes the suite's "
            "own translation (onnx-14)") in cluster["cause"]
    # its input and output are kept beside the program
    kept = [p for r in ran for p in r.get("artefacts") or ()]
    assert any(p.endswith("output.model.onnx") for p in kept) and any(p.endswith("input.torch.json") for p in kept)
    assert all((out / p).exists() for p in kept)


def test_a_converter_that_freezes_the_sequence_length_shows_at_the_other_lengths(tmp_path):
    # the plain target and its shape=dynamic form (the tests' runs select the plain targets otherwise)
    _, records, clusters = _run(tmp_path, ["cases/torch/gru_layers.yaml"], "tests.doubles.converter:FROZEN",
                                "--config", "forms=default", "--config", "shape=dynamic",
                                k="num_layers=2 and forward and bias=True")
    by_config = {r["config"]: r for r in records}
    assert by_config["default"]["verdict"] == "pass"           # at the traced shape it is right
    dynamic = by_config["shape=dynamic"]
    assert dynamic["verdict"] == "rejected" and "through the same compiled model" in dynamic["message"]
    [cluster] = clusters
    assert "with shape=dynamic" in cluster["cause"] and "passes with shape=static" in cluster["cause"]
    assert "the converter writes a fixed sequence length and batch size (input 'input' has dims [4, 2, 3])" \
        in cluster["cause"]


def test_a_converter_that_drops_the_projection_is_wrong_and_named(tmp_path):
    _, records, clusters = _run(tmp_path, ["cases/torch/projection.yaml"], "tests.doubles.converter:NO_PROJECTION",
                                "--config", "shape=static", k="num_layers=1 and direction=forward")
    assert records and all(r["verdict"] == "fail" for r in records)
    assert all("Y has shape" in r["message"] for r in records)
    [cluster] = clusters
    assert cluster["cause"].startswith("fails whenever an LSTM projection is used")
    assert "the converter writes output 'output' 4 wide where the case's is" in cluster["cause"]
    assert "(the projection dropped)" in cluster["cause"]
    assert "the suite has no onnx-14 translation to compare with" in cluster["cause"]


def test_a_converter_that_writes_an_invalid_node_is_caught_by_the_checker(tmp_path):
    _, records, clusters = _run(tmp_path, ["cases/gru/linear_before_reset.yaml"],
                                "tests.doubles.converter:INVALID_NODE",
                                "--config", "shape=static", k="linear_before_reset=1 and direction=forward")
    ran = [r for r in records if r["verdict"] != "not-expressible"]
    assert ran and all(r["verdict"] == "rejected" and r["effective"]["stage"] == "checker" for r in ran)
    from conformance.converters.outcomes import outcome
    assert {outcome(Record.from_dict(r)) for r in ran} == {"invalid"}
    [cluster] = clusters
    assert "the converter writes a model onnx.checker rejects (ValidationError: Mismatched attribute type" \
        in cluster["cause"]
    assert "onnxruntime passes the suite's own translation (onnx-14)" in cluster["cause"]


def test_a_refusal_names_the_converter_stage(tmp_path):
    """The real TorchScript exporter refuses an LSTM projection: stage converter, outcome refused."""
    _, records, clusters = _run(tmp_path, ["cases/torch/projection.yaml"], "torch.onnx-torchscript",
                                "--config", "shape=static", k="proj_size=1 and num_layers=1 and forward")
    assert {r["converter"] for r in records} == {f"torch.onnx-torchscript-2.13.0(opset={n})" for n in (14, 17, 20)}
    assert all(r["verdict"] == "rejected" and r["effective"]["stage"] == "converter" for r in records)
    assert all("LSTMs with projections" in r["message"] for r in records)
    assert all(r["gate"] == "expected" and "converters.yaml" in r["expected"]["where"] for r in records), \
        [(r["gate"], r.get("expected")) for r in records]  # the shipped gate knows it (expectations/converters.yaml)
    assert any("the converter refuses it (SymbolicValueError: Unsupported: ONNX export of operator LSTM, LSTMs "
               "with projections" in c["cause"] for c in clusters)


def test_the_runtimes_own_limit_is_not_blamed_on_the_converter(tmp_path):
    """onnxruntime has no float64 GRU: the exported model is rejected, and so is the suite's own onnx-14
    translation; the cause is the runtime's."""
    case = tmp_path / "gru64.yaml"
    case.write_text("op: GRU\nattributes: {hidden_size: 3, linear_before_reset: 1}\ndtype: float64\n"
                    "shape: {seq_length: 3, batch_size: 2, input_size: 2}\ninputs: {B: random}\n")
    _, records, clusters = _run(tmp_path, [case], "torch.onnx-torchscript", "--config", "shape=static")
    assert records and all(r["verdict"] == "rejected" and r["effective"]["stage"] == "runtime" for r in records)
    assert clusters and all("fails the suite's own translation (onnx-14) too" in c["cause"] and
                            c["cause"].endswith("the runtime's cause") for c in clusters)


# -- the environment a run leaves ------------------------------------------------------------------

def _installed() -> set[tuple[str, str]]:
    from importlib import metadata
    return {(d.metadata["Name"], d.version) for d in metadata.distributions()}


@needs_extra
def test_a_converter_run_leaves_the_environment_as_it_was(tmp_path):
    """Converters run through their library entry points in the runtime's worker, which finds no
    package index: a converter that runs ``pip install`` (as MNN's mnnconvert script does) is refused
    with pip's failure, the real ONNX-to-ONNX converters beside it still run, and the installed
    packages are the same after the run as before it."""
    from tests.doubles.converter import PACKAGE
    before = _installed()
    assert PACKAGE not in {name for name, _ in before}, f"{PACKAGE} is installed here: the test cannot tell"
    _, records, _ = _run(tmp_path, ["cases/lstm/basic.yaml"], "onnx", "--converter",
                         "tests.doubles.converter:TRIES_TO_INSTALL", "--no-ablation", "--spec", "onnx-14",
                         k="forward")
    tried = [r for r in records if r["converter"].startswith("tries-to-install")]
    assert tried and all(r["verdict"] == "rejected" and r["effective"]["stage"] == "converter" for r in tried)
    assert all(f"pip install {PACKAGE} failed" in r["message"] and
               ("no matching distribution" in r["message"].lower() or "could not find" in r["message"].lower())
               for r in tried), tried[0]["message"]
    real = [r for r in records if not r["converter"].startswith("tries-to-install")]
    assert {r["converter"].split("-")[0] for r in real} >= {"onnx.version_converter", "onnxsim"}
    assert any(r["verdict"] == "pass" for r in real)
    assert _installed() == before


def test_converter_targets_are_not_sent_to_a_cluster(tmp_path):
    """Converter targets are made on this machine: --cluster with --converter is a usage error (status
    2) that says so, before any cluster is opened."""
    for command in ("run", "fuzz"):
        args = [command, "--converter", "all", "--cluster", "local", "--out", tmp_path / command]
        if command == "fuzz":
            args += ["--budget", "1s"]
        proc = conformance(*args)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "--converter runs on this machine" in proc.stderr


# -- ids, selection, the report, the gate ------------------------------------------------------------


# -- the real converters -----------------------------------------------------------------------------

@needs_extra
def test_a_trimmed_passing_pair_still_counts_in_the_converters_table():
    """--artifacts failing (the default) trims a passing pair to its summary line: it keeps its converter,
    so the converters × features table still counts it as a pass."""
    from conformance.report.artifacts import summarize
    from conformance.report.converters import build
    record = {"case": "torch/x", "target": "torch.onnx-dynamo-2.13.0(opset=18) → onnxruntime-1.32.0/CPU@torch",
              "runtime": "onnxruntime", "runtime_version": "1.32.0", "config": "default", "expect": "valid",
              "converter": "torch.onnx-dynamo-2.13.0(opset=18)", "features": ["num_layers=2"], "verdict": "pass",
              "gate": "ok", "effective": {"converter": "torch.onnx-dynamo", "precision": "f32"}, "message": "ok"}
    table = build(records_of([summarize(Record.from_dict(record))]))   # the trimmed line, read back
    assert table["columns"] and dict(table["rows"])["every valid case"][table["columns"][0]]["pass"] == 1
    # float16 conversion: off against float32, right in the f16 it declares: a pass; beyond f16: wrong
    f16 = dict(record, verdict="fail", gate="expected", effective={"converter": "onnxconverter-common.float16",
                                                                    "precision": "f16"})
    right = dict(f16, declared={"precision": "f16", "verdict": "pass"})
    off = dict(f16, declared={"precision": "f16", "verdict": "fail"})
    trimmed = records_of([summarize(Record.from_dict(right)), summarize(Record.from_dict(off))])
    counts = dict(build(trimmed)["rows"])["every valid case"]
    assert list(counts.values())[0] == {"pass": 1, "wrong": 1}


def test_the_real_converters_are_targets_with_their_versions_and_options(tmp_path):
    proc = conformance("list", "--targets", "--converter", "all", check=0)
    ids = [line.split("\t")[0] for line in proc.stdout.splitlines() if "→" in line]
    wanted = {"torch.onnx-torchscript-2.13.0(opset=14) → onnxruntime-1.32.0/CPU@torch",
              "torch.onnx-torchscript-2.13.0(opset=20) → onnxruntime-1.32.0/CPU/shape=dynamic@torch",
              "torch.onnx-dynamo-2.13.0(opset=18) → onnxruntime-1.32.0/CPU@torch",
              "torch.onnx-dynamo-2.13.0(opset=18) → onnxruntime-1.32.0/CPU/shape=dynamic@torch",
              "openvino.convert_model-2026.4.1 → openvino-2026.4.1/CPU/precision=pinned@torch",
              "onnx.version_converter-1.23.2(to=22) → onnxruntime-1.32.0/CPU@onnx-7",
              "onnx.version_converter-1.23.2(to=7) → onnxruntime-1.32.0/CPU@onnx-22",
              # the precision it declares is named, as a runtime's narrower precision is
              "onnxconverter-common.float16-1.16.0(keep_io_types=True) → "
              "onnxruntime-1.32.0/CPU/precision=default→f16@onnx-14",
              "onnxsim-0.8.1 → onnxruntime-1.32.0/CPU@onnx-14"}
    assert wanted <= set(ids), ids


@needs_extra
def test_the_onnx_transforms_run_the_suites_own_programs(tmp_path):
    _, records, _ = _run(tmp_path, ["cases/lstm/basic.yaml"], "onnx", "--no-ablation",
                         k="direction=forward and B=random and initial_h=random and initial_c=random")
    by_converter = {r["converter"]: r for r in records}
    assert by_converter["onnxsim-0.8.1"]["verdict"] == "pass"
    assert by_converter["onnx.version_converter-1.23.2(to=22)"]["verdict"] == "pass"
    assert by_converter["onnx.version_converter-1.23.2(to=22)"]["spec"] in ("onnx-7", "onnx-14")
    assert all(r["effective"]["converter_version"] for r in records)


@needs_extra
def test_float16_conversion_is_judged_in_the_precision_it_declares(tmp_path):
    """float16 conversion rounds the weights to float16 by design: the pair is judged against float32
    (the model's type) and again in f16, which the converter declares; the shipped gate covers it only
    where it is right for f16 (within: declared); a float64 model, which it leaves alone, declares
    nothing."""
    out, records, _ = _run(tmp_path, ["cases/gru/activation_alpha_beta.yaml"], "onnxconverter", "--no-ablation",
                           "--expectations", ROOT / "expectations")
    assert records
    for r in records:
        assert (r["effective"]["precision"] == "f16"
                and r["effective"]["source"] == "declared by the converter for this call")
        assert r["declared"]["precision"] == "f16" and r["declared"]["verdict"] == "pass", r["declared"]
    assert any(r["verdict"] == "fail" for r in records)  # against float32 it is off: the weights are float16
    assert all(r["gate"] in ("expected", "ok") for r in records), {r["gate"] for r in records}
    case = tmp_path / "lstm64.yaml"
    case.write_text("op: LSTM\nattributes: {hidden_size: 3}\ndtype: float64\n"
                    "shape: {seq_length: 3, batch_size: 2, input_size: 2}\ninputs: {B: random}\n")
    _, wide, _ = _run(tmp_path / "64", [case], "onnxconverter", "--no-ablation")
    # (onnxruntime has no float64 LSTM kernel: the pair is rejected by the runtime, not judged in f16)
    assert wide and all(r["effective"]["precision"] == "f64" and "precision_declared_by" not in r["effective"]
                        for r in wide)


# -- the fuzzer ---------------------------------------------------------------------------------------


