"""`conformance bugreport`.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_bugreport.py."""

from __future__ import annotations

import pytest


def test_a_form_repro_py_does_not_replay_is_refused_saying_so(tmp_path):
    """threads=4 (requests at once), a broken relation and a state leak whose runs both pass are not
    replayed by repro.py: each refused before anything is run, saying why; a precision alone is no form."""
    from conformance.bugreport.forms import FormNotReproduced, replay_of
    from conformance.bugreport.pair import Ran
    from conformance.results import Record

    class Target:
        spec = "onnx-14"

    def ran(config, verdict, runs=()):
        return Ran(None, Target(), Record.from_dict({"config": config, "verdict": verdict, "runs": list(runs)}), None)
    with pytest.raises(FormNotReproduced, match="threads=4: .*single-threaded repro.py does not replay"):
        replay_of(ran("threads=4", "state-leak"))
    with pytest.raises(FormNotReproduced, match="self-consistency relation"):
        replay_of(ran("relations=on", "inconsistent"))
    with pytest.raises(FormNotReproduced, match="both pass but differ"):
        replay_of(ran("shape=dynamic/session=reused", "state-leak", [{"verdict": "pass"}, {"verdict": "pass"}]))
    assert replay_of(ran("precision=pinned", "fail")) is None
    assert replay_of(ran("relations=on", "fail")) is None


def test_a_drafted_feature_covers_every_record_of_the_cluster():
    """On a form, the cause "sequence_lens is given (full)" spans cases whose lengths are partial (the
    form's other inputs draw partial lengths from it): the draft names both tokens of that input."""
    from conformance.bugreport.expectation import draft
    from conformance.results import records_of
    cluster = {"id": "c1", "runtime": "openvino", "verdict": "fail", "features": ["full_lengths", "form"],
               "cause": "fails whenever sequence_lens is given (full), with shape=dynamic",
               "targets": ["openvino-2026.4.1/CPU/precision=pinned/shape=dynamic@onnx-14"]}
    records = records_of([{"features": ["sequence_lens=full", "B"], "config": "precision=pinned/shape=dynamic",
                           "runtime_version": "2026.4.1"},
                          {"features": ["sequence_lens=partial"], "config": "precision=pinned/shape=dynamic",
                           "runtime_version": "2026.4.1"}])
    entry = draft(cluster, records)
    assert entry["features"] == [["sequence_lens=full", "sequence_lens=partial"]], entry
    assert entry["config"] == {"shape": "dynamic"}
    assert draft(cluster, records[:1])["features"] == ["sequence_lens=full"]


def test_the_duplicate_search_of_a_form_cause_names_the_form_not_the_ablation_marker():
    from types import SimpleNamespace

    from conformance.bugreport.issue import TRACKERS, search_link
    from conformance.bugreport.subject import Subject
    subject = Subject("cluster", "c1-openvino", "openvino-2026.4.1/CPU/precision=pinned/shape=dynamic@onnx-14", "fail",
                      "fails whenever sequence_lens is given (full), with shape=dynamic", [], [],
                      ["full_lengths", "form"])
    link = search_link(TRACKERS["openvino"], SimpleNamespace(op="RNN"), subject)
    assert link.endswith("issues?q=is%3Aissue+RNN+full_lengths+dynamic"), link
    subject.cause_features = ["input_forget", "initial_c"]
    assert search_link(TRACKERS["openvino"], SimpleNamespace(op="LSTM"), subject).endswith(
        "+LSTM+input_forget+initial_c")


def test_a_gpu_targets_repro_py_gives_its_session_the_provider_options_it_ran_with():
    """A pinned CUDA target ran with use_tf32=0: its repro.py's session does too (docs/targets.md, "GPUs");
    the CPU provider's session is made as before, with no options."""
    from conformance.bugreport.pair import Ran
    from conformance.bugreport.script import RUNNERS, render
    from conformance.results import Record
    from conformance.run.probe import probe_case
    from conformance.specs import SPECS, translate
    case = probe_case()
    program = translate(SPECS["onnx-14"], case)

    def repro(device, config, effective):
        record = Record.from_dict({"case": case.id, "target": "t", "runtime": "onnxruntime", "device": device,
                                   "config": config, "verdict": "fail", "effective": effective})
        return render(Ran(case, None, record, program), RUNNERS[("onnxruntime", "onnx")], {"model": "model.onnx"},
                      "title", "summary", "fail")
    cuda = repro("CUDA", "precision=pinned", {"providers": ["CUDAExecutionProvider", "CPUExecutionProvider"],
                                              "use_tf32": "0", "enable_cuda_graph": "0"})
    assert "providers = [('CUDAExecutionProvider', {'use_tf32': '0', 'enable_cuda_graph': '0'})]" in cuda
    assert "ort.preload_dlls()" in cuda
    cpu = repro("CPU", "default", {"providers": ["CPUExecutionProvider"]})
    assert "options, providers=['CPUExecutionProvider'])" in cpu and "preload_dlls" not in cpu
