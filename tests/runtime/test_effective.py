"""The effective configuration: measured on every target, named in its id, judged on two counts.

None of these tests assumes what this machine's CPU is. The arithmetic of both sides (float32, and
bf16 or f16) comes from deliberate test doubles that declare their precision
(tests/doubles/precision.py); OpenVINO forced to bf16 runs only where the CPU says it can, and
says why where it cannot; OpenVINO's default configuration is checked against whatever it
declares here.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_effective.py."""

from __future__ import annotations

import json

import pytest

import oracles
from conformance.case import load_paths
from conformance.isolation.workers import Pool
from conformance.run import read_results
from conformance.run.probe import measured
from conformance.runtimes import plugin_targets
from conformance.runtimes.effective import BY_NAME, narrower, summary
from conformance.selection import specs_by_format
from tests.conftest import ROOT, conformance, runtime
from tests.unit.test_effective import _random_lstm

DOUBLES = "tests.doubles.precision"


# -- the vocabulary -----------------------------------------------------------------------------------


# -- the probe ------------------------------------------------------------------------------------------


def _plugin_targets(*names, spec="onnx-14"):
    formats = {k: [s for s in v if s == spec] for k, v in specs_by_format(()).items()}
    return [t for name in names for t in plugin_targets(f"{DOUBLES}:{name}", formats)]


def test_the_probe_measures_each_double_through_the_engines_workers():
    targets = _plugin_targets("DeclaredBf16", "DeclaredF16", "PinnedF32")
    with Pool(1) as pool:
        found = {t.config_label + t.runtime: t for t in measured(targets, pool)}
    bf16 = found["precision=default→bf16bf16-double"]
    assert bf16.configuration["measured"]["precision"] == "bf16"
    assert bf16.configuration["declared"] == {"precision": "bf16", "accumulation": "float32"}
    assert bf16.id == "bf16-double-test-double/CPU/precision=default→bf16@onnx-14"
    assert found["precision=default→f16f16-double"].configuration["measured"]["precision"] == "f16"
    pinned = found["precision=pinnedbf16-double"]
    assert pinned.precision == "f32" and pinned.id == "bf16-double-test-double/CPU/precision=pinned@onnx-14"
    assert "computes float32 in bf16" in summary(bf16.configuration)


# -- the precision model of a narrower arithmetic --------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_the_declared_bound_covers_a_correct_bf16_implementation(seed):
    """The bf16 double (inputs rounded, float32 accumulation, bf16 results) stays inside the
    derived tolerance over the bf16 bound, and uses a visible part of it."""
    from conformance.compare import judge_computed_in
    from conformance.specs import SPECS
    from tests.doubles.precision import DeclaredBf16
    tensors, attrs = _random_lstm(seed, with_p=seed % 2 == 0)
    case = _case("LSTM", attrs, tensors)
    prog = SPECS["onnx-14"].translate(case)
    res = oracles.evaluate("LSTM", attrs, tensors, cache=False)
    outputs = DeclaredBf16().run(prog.model, prog.feeds)
    j = judge_computed_in(case, prog, outputs, res,
                          lambda ch: oracles.computed_in("LSTM", attrs, tensors, "onnx", ch, "bfloat16", "float32"))
    assert j.verdict == "pass", j.message
    assert 1e-3 < j.ratio <= 1.0
    assert "inputs rounded to bfloat16" in j.message


def _case(op, attrs, tensors):
    from conformance.case.model import Case
    x = tensors["X"]
    return Case(id=f"test/{op}", op=op, form="sequence", attributes=dict(attrs),
                shape={"seq_length": x.shape[0], "batch_size": x.shape[1], "input_size": x.shape[2]},
                dtype="float32", tensors=tensors)


# -- the engine, the gate and the ablation, end to end --------------------------------------------------

SELECTION = "lstm/basic or lstm/peephole_output_gate or gru/basic"
GATE = """\
targets: "*"
entries:
  - config: {precision: bf16}
    within: declared
    kind: reduced-precision
    reason: computes float32 in bf16 by design
"""


def _run(tmp_path, *plugins, expectations=True, extra=()):
    out = tmp_path / "out"
    args = ["run", "cases", "-k", SELECTION, "--spec", "onnx-14", "--out", out, "--fresh", "-q", "--artifacts", "full"]
    for p in plugins:
        args += ["--runtime-plugin", f"{DOUBLES}:{p}", "--runtime", _name(p)]
    if expectations:
        path = tmp_path / "gate.yaml"
        path.write_text(GATE)
        args += ["--expectations", path]
    proc = conformance(*args, *extra)
    return proc, out, read_results(out / "results.jsonl")


def _name(plugin: str) -> str:
    import tests.doubles.precision as doubles
    return getattr(doubles, plugin).name


def test_a_declared_bf16_runtime_fails_its_spec_passes_its_precision_and_the_gate_accepts_it(tmp_path):
    proc, out, records = _run(tmp_path, "DeclaredBf16", "PinnedF32", extra=["--no-ablation"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bf16 = [r for r in records if "precision=default→bf16" in r["target"]]
    pinned = [r for r in records if "precision=pinned" in r["target"]]
    assert bf16 and pinned and len(bf16) == len(pinned)
    failing = [r for r in bf16 if r["verdict"] == "fail"]
    assert len(failing) > len(bf16) // 2        # bf16 is far outside the float32 bound
    for r in failing:
        assert r["effective"]["precision"] == "bf16" and r["effective"]["accumulation"] == "float32"
        assert r["declared"]["verdict"] == "pass", r["declared"]["message"]
        assert r["gate"] == "expected" and r["expected"]["kind"] == "reduced-precision"
        assert "bfloat16" in r["declared"]["tolerance"]
    assert all(r["verdict"] == "pass" and "declared" not in r for r in pinned)
    info = json.loads((out / "run.json").read_text())
    ids = {t["id"]: t for t in info["targets"]}
    assert ids["bf16-double-test-double/CPU/precision=default→bf16@onnx-14"]["configuration"]["measured"]["bits"] == 8
    assert info["host"]["cpu"]


def test_declared_bf16_and_dropped_peepholes_still_fails_the_gate(tmp_path):
    proc, out, records = _run(tmp_path, "DeclaredBf16DroppedPeepholes", extra=["--no-ablation"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    new = [r for r in records if r.get("gate") == "new"]
    assert new and all("P" in r["features"] for r in new)
    assert all(r["declared"]["verdict"] == "fail" for r in new)
    plain = [r for r in records if "P" not in r["features"] and r["verdict"] == "fail"]
    assert plain and all(r["gate"] == "expected" for r in plain)


def test_without_an_entry_the_gate_judges_bf16_by_its_declaration_and_without_a_gate_all_is_new(tmp_path):
    """docs/gate.md, "Judged by the declaration": no entry names the double, yet its bf16 failures within
    their declared bf16 are expected (kind declared); with no gate at all every failure is new."""
    proc, _, records = _run(tmp_path, "DeclaredBf16", expectations=False, extra=["--no-ablation"])
    assert proc.returncode == 0, proc.stdout[-2000:]
    failing = [r for r in records if r["verdict"] == "fail"]
    assert failing and all(r["gate"] == "expected" and r["expected"]["kind"] == "declared" for r in failing)
    proc, _, records = _run(tmp_path, "DeclaredBf16", expectations=False, extra=["--no-ablation", "--no-expectations"])
    assert proc.returncode == 1 and any(r["verdict"] == "fail" for r in records)


def test_the_ablation_names_the_configuration_as_the_cause(tmp_path):
    proc, out, records = _run(tmp_path, "DeclaredBf16", "PinnedF32")
    clusters = json.loads((out / "clusters.json").read_text())
    bf16 = [c for c in clusters if "precision=default→bf16" in c["target"]]
    assert bf16, clusters
    assert all(c["features"] == ["configuration"] for c in bf16)
    cause = bf16[0]["cause"]
    assert cause.startswith("fails only in the default configuration, which computes in bf16 on this CPU")
    assert cause.endswith("and passes with the precision pinned")
    assert sum(c["size"] for c in bf16) == sum(r["verdict"] == "fail" for r in records
                                               if "precision=default→bf16" in r["target"])
    report = (out / "index.html").read_text()
    assert "measured configuration" in report and "computes float32 in bf16" in report
    assert json.loads((out / "run.json").read_text())["ablation_s"] > 0   # its share of the run, recorded


def test_a_failure_beyond_the_declared_precision_is_ablated_by_feature(tmp_path):
    _, out, _ = _run(tmp_path, "DeclaredBf16DroppedPeepholes", expectations=False)
    clusters = json.loads((out / "clusters.json").read_text())
    beyond = [c for c in clusters if "beyond its declared bf16" in c["cause"]]
    assert beyond and any("peepholes are non-zero" in c["cause"] for c in beyond)


# -- OpenVINO on this machine, whatever its CPU ---------------------------------------------------------

ov = runtime("openvino")


def _openvino_bf16_capable() -> bool:
    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def test_openvino_default_declares_what_its_probe_measures():
    """Whatever this CPU makes the default: the compiled model's hint and the probe agree."""
    from conformance.runtimes.openvino import targets
    found, _ = targets({"onnx": ["onnx-14"]})
    with Pool(1) as pool:
        found = measured(found, pool)
    for t in found:
        declared = t.configuration["declared"]["precision"]
        assert declared == t.configuration["measured"]["precision"], t.configuration
        assert t.precision == declared
        assert ("→" in t.id) == (declared != "f32"), t.id
    pinned = next(t for t in found if t.config == "precision=pinned")
    assert pinned.precision == "f32"


@pytest.mark.skipif(not _openvino_bf16_capable(),
                    reason="this CPU's OpenVINO has no BF16 among its OPTIMIZATION_CAPABILITIES "
                           "(no AVX512-BF16 or AMX): INFERENCE_PRECISION_HINT=bf16 cannot be forced here")
def test_openvino_forced_to_bf16_is_judged_within_bf16(tmp_path):
    plugin = tmp_path / "forced_bf16.py"
    plugin.write_text("from conformance.runtimes.openvino import OpenVINOOnnxFrontend\n"
                      "class ForcedBf16(OpenVINOOnnxFrontend):\n"
                      "    name = 'openvino-forced-bf16'\n"
                      "    def __init__(self):\n"
                      "        super().__init__('CPU', 'precision=bf16')\n")
    out = tmp_path / "out"
    proc = conformance("run", "cases", "-k", "gru/basic or rnn/basic", "--spec", "onnx-14", "--out", out, "-q",
                       "--runtime-plugin", "forced_bf16:ForcedBf16", "--runtime", "openvino-forced-bf16",
                       "--no-ablation", env={"PYTHONPATH": f"{ROOT}:{tmp_path}"})
    records = read_results(out / "results.jsonl")
    assert records, proc.stdout + proc.stderr
    assert all("precision=bf16→bf16" in r["target"] for r in records)
    failing = [r for r in records if r["verdict"] == "fail"]
    assert failing
    for r in failing:
        assert r["effective"]["INFERENCE_PRECISION_HINT"] == "bf16"
        assert r["declared"]["verdict"] == "pass", r["declared"]["message"]


def test_the_corpus_float32_cases_pass_openvinos_default_within_what_it_declares():
    """No false alarm from either judgement on this CPU: plain float32 cases pass the float32 bound
    where the default computes in f32, and the declared bound where it computes in less."""
    from conformance.compare import for_case, judge_computed_in, judge_outputs
    from conformance.run.engine import effective_of
    from conformance.runtimes.openvino import OpenVINOOnnxFrontend, targets
    from conformance.specs import SPECS
    rt = OpenVINOOnnxFrontend("CPU", "default")
    target = next(t for t in targets({"onnx": ["onnx-14"]})[0] if t.config == "default")
    cases, _ = load_paths(["cases/gru/basic.yaml", "cases/rnn/basic.yaml", "cases/lstm/basic.yaml"])
    judged = 0
    for case in cases:
        prog = SPECS["onnx-14"].translate(case)
        res = oracles.evaluate(case.op, case.attributes, case.tensors, cache=False)
        outputs = rt.run(prog.model, prog.feeds)
        eff = effective_of(case, target, rt.effective())
        compute = BY_NAME[eff["precision"]]
        if narrower(compute, case.dtype):
            j = judge_computed_in(case, prog, outputs, res, lambda ch, c=case, e=eff, p=compute: oracles.computed_in(
                c.op, c.attributes, c.tensors, "onnx", ch, p.dtype, e.get("accumulation"),
                e.get("rounding", "faithful")))
        else:
            j = judge_outputs(case, prog, outputs, res, for_case(case))
        assert j.verdict == "pass", (case.id, eff, j.message)
        judged += 1
    assert judged == len(cases) > 10


