"""OpenVINO compiling a batch of programs as one model (conformance/runtimes/openvino.py
``Adapter.run_many``), on the real OpenVINO, for all three ways in: the ONNX frontend, the IR read
from its files, and the model built in memory.

What must hold: every program's answer from a batch equals its answer alone (the same outputs bit
for bit, or a refusal both ways); a program OpenVINO refuses, to read or to compile, is answered by
its own refusal and marked as run alone; the rest of its batch still runs merged. And through the
engine, the whole corpus gives the same verdicts batched and with ``--no-batch``, while batches
really ran (docs/speed.md). An adapter compiles a model once however many programs read into
it (ONNX 7, 14 and 22 of one case), and those answers equal fresh compiles'.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from conformance.case import load_paths
from conformance.runtimes.base import RanAlone, RanMerged
from conformance.runtimes.openvino import OpenVINO, OpenVINOOnnxFrontend
from conformance.runtimes.openvino_batches import BATCH_MARK, _owner
from conformance.runtimes.openvino_ir import OpenVINOIR
from conformance.runtimes.openvino_memory import OpenVINOMemory
from conformance.specs import SPECS, NotExpressible
from tests.conftest import ROOT, runtime

runtime("openvino")

ADAPTERS = {"onnx-14": OpenVINOOnnxFrontend, "openvino-opset5": OpenVINOIR,
            "openvino-memory-opset5": OpenVINOMemory}


def _programs(spec: str, tmp_path, n: int = 40):
    """(model, feeds) of the first ``n`` valid cases of cases/gru and cases/lstm the spec expresses,
    written where the format is files (the IR, the in-memory recipe)."""
    cases, errors = load_paths([ROOT / "cases" / "gru", ROOT / "cases" / "lstm"])
    assert not errors
    items = []
    for case in cases:
        if not case.valid:
            continue
        prog = SPECS[spec].translate(case)
        if isinstance(prog, NotExpressible):
            continue
        folder = tmp_path / f"p{len(items)}"
        folder.mkdir()
        SPECS[spec].write(prog, folder)
        items.append((prog.runtime_input(), prog.feeds))
        if len(items) == n:
            break
    return items


def _answer_alone(runtime, model, feeds):
    try:
        return runtime.run(model, feeds)
    except Exception as exc:  # noqa: BLE001 - a refusal is an answer
        return exc


def _same(a, b) -> bool:
    if isinstance(a, Exception) or isinstance(b, Exception):
        return isinstance(a, Exception) and isinstance(b, Exception)
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype
                                    and np.array_equal(x.view(np.uint8), y.view(np.uint8)) for x, y in zip(a, b))


@pytest.mark.parametrize("spec", sorted(ADAPTERS))
def test_a_batch_answers_as_each_program_alone(spec, tmp_path):
    items = _programs(spec, tmp_path)
    runtime = ADAPTERS[spec](config="precision=pinned")
    alone = [_answer_alone(runtime, model, feeds) for model, feeds in items]
    refused = sum(isinstance(a, Exception) for a in alone)
    merged = Counter()
    for start in range(0, len(items), 8):
        batch = items[start:start + 8]
        for k, answer in enumerate(runtime.run_many(batch)):
            ran_alone = isinstance(answer, RanAlone)
            assert ran_alone or isinstance(answer, RanMerged), answer
            value = answer.answer
            assert _same(value, alone[start + k]), (spec, start + k, value)
            assert ran_alone or "INFERENCE_PRECISION_HINT" in answer.effective   # its own part's
            merged["alone" if ran_alone else "merged"] += 1
            if isinstance(value, Exception):
                assert ran_alone, "a refusal is answered by the program's own refusal, run alone"
    assert merged["merged"] >= len(items) - refused - 8, merged  # batches really merged
    good = [item for item, a in zip(items, alone) if not isinstance(a, Exception)][:3]
    assert not any(isinstance(a, RanAlone) for a in runtime.run_many(good))
    assert runtime.effective().get("INFERENCE_PRECISION_HINT") == "f32"   # the merged model's, as compiled


def test_a_refused_program_is_found_by_its_node_and_the_rest_run_merged(tmp_path):
    """The ONNX frontend's CPU plugin refuses LeakyRelu inside GRU at compile time; the merged
    model's refusal names the node, so only that program runs alone."""
    items = _programs("onnx-14", tmp_path, n=80)
    runtime = OpenVINOOnnxFrontend(config="precision=pinned")
    alone = [_answer_alone(runtime, m, f) for m, f in items]
    bad = [k for k, a in enumerate(alone) if isinstance(a, Exception) and "activation" in str(a).lower()]
    good = [k for k, a in enumerate(alone) if not isinstance(a, Exception)]
    assert bad and len(good) >= 4, "the corpus has GRU cases OpenVINO's CPU plugin refuses"
    batch = [items[k] for k in good[:2] + bad[:1] + good[2:4]]
    answers = runtime.run_many(batch)
    assert [isinstance(a, RanAlone) for a in answers] == [False, False, True, False, False]
    assert isinstance(answers[2].answer, Exception)
    assert "named its node" in answers[2].why
    for k, a in zip(good[:2] + good[2:4], answers[:2] + answers[3:]):
        assert _same(a.answer, alone[k])


def test_a_program_refused_when_read_is_its_own_answer(tmp_path):
    runtime = OpenVINOOnnxFrontend(config="precision=pinned")
    model, feeds = next(item for item in _programs("onnx-14", tmp_path, n=80)
                        if not isinstance(_answer_alone(runtime, *item), Exception))
    answers = runtime.run_many([(model, feeds), (b"not an onnx model", feeds)])
    assert isinstance(answers[1], RanAlone) and isinstance(answers[1].answer, Exception)
    assert answers[1].why == "refused when read on its own"
    assert isinstance(answers[0], RanAlone), "the one left of its batch compiles by itself"
    assert _same(answers[0].answer, _answer_alone(runtime, model, feeds))


def _versions_of_cases(n: int = 10):
    """For the first ``n`` valid cases of cases/gru that ONNX 7, 14 and 22 all express and
    OpenVINO runs in all three: [(model, feeds)] per case, one per version."""
    cases, _ = load_paths([ROOT / "cases" / "gru"])
    fresh = OpenVINOOnnxFrontend(config="precision=pinned")
    fresh.keep = 0
    found = []
    for case in cases:
        programs = [SPECS[spec].translate(case) for spec in ("onnx-7", "onnx-14", "onnx-22")]
        if not case.valid or any(isinstance(p, NotExpressible) for p in programs):
            continue
        items = [(p.runtime_input(), p.feeds) for p in programs]
        if any(isinstance(_answer_alone(fresh, *item), Exception) for item in items):
            continue
        found.append(items)
        if len(found) == n:
            break
    return found


def test_the_onnx_versions_of_a_case_compile_once_and_answer_as_fresh_compiles(monkeypatch):
    """ONNX 7, 14 and 22 of one case read into the same model (only the names OpenVINO generates
    for inner nodes differ), so their content key is one, and an adapter compiles it once; every
    answer equals that of a compile of its own, bit for bit. Cases may share a model too (two that
    differ only in their inputs' values, or in an activation_alpha that no activation consumes):
    the compiles are one per distinct model."""
    import conformance.runtimes.openvino as ov_adapter
    compiles = Counter()
    real = ov_adapter.compile_model
    monkeypatch.setattr(ov_adapter, "compile_model",
                        lambda core, model, device, config:
                        compiles.update([config]) or real(core, model, device, config))
    groups = _versions_of_cases()
    assert len(groups) == 10
    keeping = OpenVINOOnnxFrontend(config="precision=pinned")
    fresh = OpenVINOOnnxFrontend(config="precision=pinned")
    fresh.keep = 0
    keys = []
    for items in groups:
        contents = {keeping.content_key(keeping.prepare(model, feeds)[1]()) for model, feeds in items}
        assert len(contents) == 1, "the three versions read into one model"
        keys.append(contents.pop())
    assert len(set(keys)) > 5, "different cases, different models"
    compiles.clear()
    kept = [keeping.run(model, feeds) for items in groups for model, feeds in items]
    assert compiles["precision=pinned"] == len(set(keys)), compiles   # once per model, not per version
    compiles.clear()
    alone = [fresh.run(model, feeds) for items in groups for model, feeds in items]
    assert compiles["precision=pinned"] == 3 * len(groups)          # keep = 0: every call compiles
    assert all(_same(a, b) for a, b in zip(kept, alone))
    assert keeping.effective().get("INFERENCE_PRECISION_HINT") == "f32"


def test_kept_models_are_bounded_by_their_constants_bytes(monkeypatch):
    """Production shapes hold tens of MB of constants per model: the models kept stay under
    KEPT_BYTES together, always keeping the last one (so the versions of one case still share it)."""
    import conformance.runtimes.openvino as ov_adapter
    monkeypatch.setattr(ov_adapter, "KEPT_BYTES", 1)
    runtime = OpenVINOOnnxFrontend(config="precision=pinned")
    groups = _versions_of_cases(4)
    for items in groups:
        for model, feeds in items:
            runtime.run(model, feeds)
        assert len(runtime._kept) == 1
    assert runtime._kept_bytes() > 1   # its constants' bytes were counted


def test_identical_programs_in_a_batch_run_as_one_subgraph(monkeypatch):
    """Two cases in ONNX 14 and 22: the batch's merged model holds two subgraphs, not four, and each
    of the four answers equals its program's answer alone, in arrays of its own."""
    runtime = OpenVINOOnnxFrontend(config="precision=pinned")
    groups = list({runtime.content_key(runtime.prepare(*items[0])[1]()): items
                   for items in _versions_of_cases()}.values())[:2]   # two cases of different models
    batch = [groups[0][1], groups[1][1], groups[0][2], groups[1][2]]
    merged_sizes = []
    real = runtime._run_merged
    monkeypatch.setattr(runtime, "_run_merged", lambda models, feeds: merged_sizes.append(len(models))
                        or real(models, feeds))
    answers = runtime.run_many(batch)
    assert merged_sizes == [2]
    assert not any(isinstance(a, RanAlone) for a in answers)
    fresh = OpenVINOOnnxFrontend(config="precision=pinned")
    fresh.keep = 0
    for (model, feeds), answer in zip(batch, answers):
        assert _same(answer.answer, fresh.run(model, feeds))
    first, again = answers[0].answer[0], answers[2].answer[0]
    assert first is not again and not np.shares_memory(first, again)


def _counting_compiles(monkeypatch) -> Counter:
    import conformance.runtimes.openvino as ov_adapter
    compiles: Counter = Counter()
    real = ov_adapter.compile_model
    monkeypatch.setattr(ov_adapter, "compile_model",
                        lambda core, model, device, config:
                        compiles.update([config]) or real(core, model, device, config))
    return compiles


def test_one_worker_per_configuration_takes_every_way_in(tmp_path, monkeypatch):
    """The frontend's, the IR's and the in-memory targets of one device and configuration share one
    RuntimeRef (one worker), whose adapter reads each program the way its own adapter does: the
    same answers, bit for bit, as the frontend, IR and memory adapters give alone. An IR and a
    recipe of the same case usually read into the same model (the IR's file names its outputs and
    records the OpenVINO that wrote it; neither reaches the compiled model): those compile once."""
    from conformance.runtimes import openvino, openvino_ir, openvino_memory
    specs = {"onnx": ["onnx-14"], "openvino-ir": ["openvino-opset5"], "openvino-model": ["openvino-memory-opset5"]}
    found = openvino.targets(specs)[0] + openvino_ir.targets(specs)[0] + openvino_memory.targets(specs)[0]
    by_config: dict = {}
    for t in found:
        by_config.setdefault((t.device, t.config), set()).add(t.ref)
    assert by_config and all(len(refs) == 1 for refs in by_config.values()), by_config
    assert {t.format for t in found} == {"onnx", "openvino-ir", "openvino-model"}

    for way in ("ir", "memory", "onnx"):
        (tmp_path / way).mkdir()
    ir = _programs("openvino-opset5", tmp_path / "ir", n=20)
    memory = _programs("openvino-memory-opset5", tmp_path / "memory", n=20)
    frontend = _programs("onnx-14", tmp_path / "onnx", n=20)
    shared = OpenVINO(config="precision=pinned")
    compiles = _counting_compiles(monkeypatch)
    order = [item for trio in zip(ir, memory, frontend) for item in trio]   # a case's programs together
    answers = [_answer_alone(shared, model, feeds) for model, feeds in order]
    shared_compiles = compiles["precision=pinned"]
    alone = (OpenVINOIR(config="precision=pinned"), OpenVINOMemory(config="precision=pinned"),
             OpenVINOOnnxFrontend(config="precision=pinned"))
    own = [_answer_alone(alone[k % 3], *item) for k, item in enumerate(order)]
    assert all(_same(a, b) for a, b in zip(answers, own))
    assert sum(not isinstance(a, Exception) for a in answers) > 40
    same_model = sum(shared.content_key(shared.prepare(*a)[1]()) == shared.content_key(shared.prepare(*b)[1]())
                     for a, b in zip(ir, memory))
    assert same_model >= 5, "an IR and the recipe of one case often read into one model"
    assert shared_compiles <= 60 - same_model


def test_a_refused_model_is_refused_again_without_compiling(monkeypatch):
    """A compile refusal is kept by content: the other ONNX versions of a case the CPU plugin refuses
    are refused with the same message, without compiling again; ``keep = 0`` compiles every time."""
    cases, errors = load_paths([ROOT / "cases" / "gru"])
    case = next(c for c in cases
                if c.id == "gru/activation_alpha_beta[activations=Sigmoid+LeakyRelu,activation_alpha=[0.3]]")
    items = [(SPECS[s].translate(case).runtime_input(), SPECS[s].translate(case).feeds)
             for s in ("onnx-7", "onnx-14", "onnx-22")]
    compiles = _counting_compiles(monkeypatch)
    runtime = OpenVINO(config="precision=pinned")
    refusals = [_answer_alone(runtime, *item) for item in items]
    assert all(isinstance(r, Exception) for r in refusals), refusals
    assert compiles["precision=pinned"] == 1
    assert len({str(r) for r in refusals}) == 1 and "GRUSequence" in str(refusals[0])
    assert refusals[0] is not refusals[1]
    fresh = OpenVINO(config="precision=pinned")
    fresh.keep = 0
    compiles.clear()
    assert all(isinstance(_answer_alone(fresh, *item), Exception) for item in items)
    assert compiles["precision=pinned"] == 3


def test_owner_reads_the_node_openvino_names():
    message = (f"[ConvertGRUSequenceToTensorIterator] END: node: opset5::GRUSequence {BATCH_MARK}4.GRUSequence_31 "
               f"(opset1::Transpose {BATCH_MARK}2.Transpose_8[0]) CALLBACK HAS THROWN: Unknown activation")
    assert _owner(message, [1, 2, 4]) == 4
    assert _owner(message, [1, 2]) is None
    assert _owner("Unsupported activation function", [0, 1]) is None


def test_a_pair_computing_narrower_than_its_type_is_not_merged(tmp_path):
    """On a CPU where the default configuration computes float32 in bf16 (measured; here a target
    double says so), its float32 pairs fail the spec's bound by design: they are never merged. They
    go in batches whose programs the worker runs each on its own, recorded as run alone, with the
    verdicts of a run without batches."""
    from conformance.run import Engine, MemoryStore, Options
    from conformance.run.engine import NARROWER_ALONE
    from conformance.runtimes.openvino import targets as frontend_targets
    cases, _ = load_paths([ROOT / "cases" / "gru" / "basic.yaml"])
    target = next(t for t in frontend_targets({"onnx": ["onnx-14"]})[0] if t.config == "precision=pinned")
    assert target.batch > 1
    records = {}
    for precision, batch in (("f32", True), ("bf16", True), ("bf16-no-batch", False)):
        store = MemoryStore(tmp_path / precision)
        double = dataclasses.replace(target, precision=precision.split("-")[0])
        Engine(cases, [double], store, Options(out_dir=tmp_path / precision, jobs=1, batch=batch)).run()
        records[precision] = {r["case"]: r for r in store.records}
    assert any((r.get("batch") or {}).get("size") for r in records["f32"].values()), "f32 pairs ran merged"
    narrower = [r for r in records["bf16"].values() if r["expect"] == "valid"]
    assert narrower and not any((r.get("batch") or {}).get("size") for r in records["bf16"].values())
    assert all(NARROWER_ALONE[:40] in r["batch"]["alone"] for r in narrower), narrower[0].get("batch")
    assert {k: r["verdict"] for k, r in records["bf16"].items()} == \
        {k: r["verdict"] for k, r in records["bf16-no-batch"].items()}


def test_each_pair_of_a_batch_names_the_configuration_its_own_part_ran_in(tmp_path):
    """A batch of float32 and float16 programs on the pinned configuration compiles one model per
    element type; each pair's record names the configuration its own part ran in, as the same pair
    run alone does, not the call's last compile's (the CPU plugin resolves the float16 model's
    hint to a precision of its own)."""
    from conformance.run import Engine, MemoryStore, Options
    from conformance.runtimes.openvino import targets as frontend_targets
    cases, _ = load_paths([ROOT / "cases" / "gru"])
    f16 = [c for c in cases if c.valid and c.dtype == "float16"][:4]
    f32 = [c for c in cases if c.valid and c.dtype == "float32" and "activations" not in c.attributes][:4]
    assert len(f16) == len(f32) == 4
    mixed = [c for pair in zip(f32, f16) for c in pair]
    target = next(t for t in frontend_targets({"onnx": ["onnx-14"]})[0] if t.config == "precision=pinned")
    records = {}
    for batch in (True, False):
        store = MemoryStore(tmp_path / str(batch))
        Engine(mixed, [target], store, Options(out_dir=tmp_path / str(batch), jobs=1, batch=batch)).run()
        records[batch] = {r["case"]: r for r in store.records}
    dtype = {c.id: c.dtype for c in mixed}
    merged = [r for r in records[True].values() if (r.get("batch") or {}).get("size")]
    assert {dtype[r["case"]] for r in merged} == {"float16", "float32"}, [
        r.get("batch") for r in records[True].values()]
    assert len({r["effective"]["precision"] for r in merged}) == 2, "the two parts ran in different precisions"
    for r in merged:
        assert r["effective"]["source"] == "declared by the runtime for this call"
        alone = records[False][r["case"]]["effective"]
        assert r["effective"]["INFERENCE_PRECISION_HINT"] == alone["INFERENCE_PRECISION_HINT"], (r["case"], alone)
        assert r["effective"]["precision"] == alone["precision"]


def test_the_corpus_gives_the_same_verdicts_batched_and_alone(tmp_path):
    """The whole corpus on OpenVINO's pinned configuration, through each way in, both ways. Two
    ONNX versions share the frontend's batches (one runtime configuration), where a case's two
    programs read alike and run as one subgraph."""
    verdicts, batched = {}, Counter()
    for mode in ("batch", "no-batch"):
        out = tmp_path / mode
        cmd = [sys.executable, "-m", "conformance", "run", str(ROOT / "cases"), "--runtime", "openvino",
               "--config", "precision=pinned/forms=default", "--spec", "onnx-14", "--spec", "onnx-22",
               "--spec", "openvino-opset5",
               "--spec", "openvino-memory-opset5", "--jobs", "2", "--fresh", "-q", "--artifacts", "full",
               "--out", str(out)] + (["--no-batch"] if mode == "no-batch" else [])
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900)
        assert done.returncode in (0, 1), done.stderr[-2000:]
        records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        verdicts[mode] = {(r["case"], r["target"]): r["verdict"] for r in records}
        for r in records:
            b = r.get("batch") or {}
            batched[(mode, "merged" if b.get("size") else "alone" if b.get("alone") else "-")] += 1
    assert len(verdicts["batch"]) > 2000
    assert verdicts["batch"] == verdicts["no-batch"]
    assert batched[("batch", "merged")] > 1000, batched
    assert not batched[("no-batch", "merged")] and not batched[("no-batch", "alone")]
