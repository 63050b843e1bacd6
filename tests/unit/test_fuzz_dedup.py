"""How the fuzzer counts divergences: features recorded on every result, expectations that name
a divergence by feature (so they cover the fuzzer's cases), the feature-level reduction of a
shrunk finding (on the real engine, with the deliberately wrong implementations of tests/doubles/wrong),
and signatures that merge one divergence across ops, configurations and activation names.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_fuzz_dedup.py, tests/runtime/test_fuzz_dedup.py."""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import pytest

from conformance.case import load_paths
from conformance.case.features import features
from conformance.fuzz.campaign import Campaign, CampaignConfig
from conformance.fuzz.finding import Finding
from conformance.fuzz.reduce import reduce_case
from conformance.fuzz.reproducer import FindingIndex, Known
from conformance.fuzz.signature import cause, origin, signature, with_id
from conformance.gate import Expectations, ExpectationsError, classify
from conformance.results import Record
from tests.conftest import ROOT


def _case(path: str, id_part: str):
    cases, errors = load_paths([ROOT / "cases" / path])
    assert not errors
    return next(c for c in cases if id_part in c.id)


EXPECT = textwrap.dedent("""\
    targets: "wrong-clip-after-activation*"
    entries:
      - features: [clip, [act=Relu, act=Softsign]]
        verdict: fail
        kind: known-bug
        reason: clip bounds the activation's output
""")


def test_features_name_the_non_default_choices():
    case = _case("gru/sequence_lens.yaml", "direction=bidirectional,sequence_lens=[2,0,4],initial_h=random")
    assert features(case) == {"B", "bidirectional", "initial_h", "reverse", "sequence_lens=partial", "zero_length"}
    spelled = _case("rnn/activation_name_case.yaml", "relu")
    assert "activation_spelling" in features(spelled)


def test_an_entry_by_features_covers_corpus_and_fuzz_cases_alike(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(EXPECT)
    expectations = Expectations.load([path])
    base = {"target": "wrong-clip-after-activation-test-double/CPU@onnx-22", "verdict": "fail"}
    for case_id in ("gru/clip[clip=0.5]", "fuzz/gru-0123456789[act=Relu,clip]"):
        assert classify(Record.from_dict(dict(base, case=case_id, features=["B", "act=Relu", "clip"])),
                        expectations)["gate"] == "expected"
    # no act
    assert classify(Record.from_dict(dict(base, case="x", features=["clip"])), expectations)["gate"] == "new"
    assert classify(Record.from_dict(dict(base, case="x", features=["act=Elu", "clip"])), expectations)["gate"] == "new"
    assert classify(Record.from_dict(dict(base, case="x")), expectations)["gate"] == "new"    # no features


@pytest.mark.parametrize("item, words", [("[]", "a list of features"), ("[[]]", "a features item"),
                                         ("[3]", "a features item")])
def test_a_bad_features_item_is_an_error_with_its_line(tmp_path, item, words):
    path = tmp_path / "bad.yaml"
    path.write_text(f"entries:\n  - cases: a\n    kind: known-bug\n    reason: r\n  - features: {item}\n"
                    f"    kind: known-bug\n    reason: r\n")
    with pytest.raises(ExpectationsError) as err:
        Expectations.load([path])
    assert f"{path}:5" in str(err.value) and words in str(err.value)


def test_reduction_stops_at_its_budget_and_never_keeps_a_removal_that_cures():
    case = _case("gru/clip.yaml", "clip=0.5,direction=bidirectional,linear_before_reset=1,activations=Sigmoid+Tanh")
    tried = []

    def still_fails(c):
        tried.append(c)
        return "clip" in c.attributes and "B" in c.tensors

    result = reduce_case(case, still_fails, with_id)
    assert {"clip", "B"} <= features(result.case) and not {"initial_h", "bidirectional"} & features(result.case)
    assert result.tried == len(tried)
    capped = reduce_case(case, lambda c: True, with_id, budget=2)
    assert capped.tried == 2 and len(capped.removed) == 2


def test_reduction_scales_large_values_down_when_the_failure_does_not_need_them():
    case = _case("gru/clip.yaml", "clip=0.5,direction=bidirectional,linear_before_reset=1,activations=Sigmoid+Tanh")
    big = dataclasses.replace(case, tensors={**case.tensors, "X": case.tensors["X"] * 100})
    assert "large" in features(big)
    result = reduce_case(big, lambda c: "B" in c.tensors, with_id)
    assert "large" in result.removed and "large" not in features(result.case)
    assert np.all(np.abs(result.case.tensors["X"]) <= 1.0) and np.any(result.case.tensors["X"] != 0)
    kept = reduce_case(big, lambda c: "large" in features(c), with_id)
    assert "large" not in kept.removed and "large" in features(kept.case)


def _record(config="default", spec="onnx-22", verdict="rejected", message=""):
    return Record.from_dict({"target": f"openvino-2026.4.1/CPU{'' if config == 'default' else '/' + config}@{spec}",
                             "runtime": "openvino", "device": "CPU", "config": config, "spec": spec, "verdict": verdict,
                             **({"message": message} if message else {})})


def test_one_divergence_is_one_signature_across_ops_configurations_versions_and_activation_names():
    elu = _case("gru/activations.yaml", "Elu")
    softsign = _case("lstm/activations.yaml", "Softsign")
    a = origin(_record(), elu)
    b = origin(_record("precision=pinned", "onnx-7"), softsign)
    assert a[0] == b[0] == "openvino/CPU@onnx"
    sig_a = signature(a, cause("rejected", {"act=Elu"}))
    assert sig_a == signature(b, cause("rejected", {"act=Softsign"})) == "openvino/CPU@onnx|rejected|*|act"
    # a plain-path divergence stays with its op
    assert signature(a, frozenset()) == "openvino/CPU@onnx|rejected|GRU|plain"
    # whether an invalid case is checked does not depend on its values
    assert cause("accepted-invalid", {"clip", "subnormal", "large", "violates=hidden_size"}) == {
        "clip", "violates=hidden_size"}


def test_a_written_finding_covers_every_op_unless_it_is_plain(tmp_path):
    elu = _case("gru/activations.yaml", "Elu")
    known = Known.of("openvino/CPU@onnx|rejected|*|act", elu, tmp_path / "f.yaml")
    lstm = _case("lstm/activations.yaml", "Softsign")
    assert known.covers(origin(_record("precision=pinned"), lstm), features(lstm))
    assert not known.covers(origin(_record(verdict="fail"), lstm), features(lstm))
    plain = Known.of("openvino/CPU@openvino|rejected|LSTM|plain", lstm, tmp_path / "p.yaml")
    rnn = _case("rnn/basic.yaml", "")
    assert plain.covers(("openvino/CPU@openvino", "rejected", "LSTM"), features(lstm))
    assert not plain.covers(("openvino/CPU@openvino", "rejected", "RNN"), features(rnn))
    # a signature written before configurations were merged reads as the merged key
    old = Known.of("openvino/CPU/precision=pinned@onnx|rejected|GRU|act=Elu", elu, tmp_path / "o.yaml")
    assert old.key == "openvino/CPU@onnx" and old.cause == {"act"} and known.supersedes(old)


def test_the_regressions_folder_reads_back_as_an_index():
    index = FindingIndex.load(ROOT / "cases" / "regressions")
    files = [p for p in (ROOT / "cases" / "regressions").glob("*.yaml") if "finding:" in p.read_text()]
    assert len(index) == len(files) >= 20 and not index.problems
    for known in index.by_signature.values():
        assert known.verdict in ("fail", "rejected", "accepted-invalid", "crash", "timeout", "error")
        assert "@" in known.key and not any(ch.isdigit() for ch in known.key.split("/")[0])   # no version
        if known.verdict == "accepted-invalid":
            assert known.violated and any(t.startswith("violates=") for t in known.cause)
        assert "subnormal" not in known.cause or known.verdict != "accepted-invalid"


def test_a_reduced_finding_is_written_once_with_what_it_needs(tmp_path):
    import time
    case = with_id(_case("gru/clip.yaml", "clip=0.5,direction=forward,linear_before_reset=0,activations=Sigmoid+Tanh"))
    record = _record(verdict="fail", message="Y[0] = 1, but should be within 0 … 0.5")
    campaign = Campaign(CampaignConfig(targets=[], out_dir=tmp_path / "found"))
    campaign._start = time.monotonic()
    finding = Finding(origin(record, case), features(case), case, [record], removed=("initial_h",))
    campaign._write(finding)
    (written,) = campaign.result.written
    text = written.path.read_text()
    assert "the finding needs: B, clip, initial_h" in text and "then reduced" in text and "initial_h" in text
    other = dataclasses.replace(case, op="GRU")
    campaign._write(Finding(origin(_record("precision=pinned", verdict="fail"), other), features(case), other,
                            [record]))
    assert len(campaign.result.written) == 1      # the pinned configuration's copy is the same finding


def test_the_shipped_expectations_know_the_runtimes_divergences_by_feature():
    shipped = Expectations.load([ROOT / "expectations"])

    def gate(target, verdict, tokens, case="fuzz/lstm-0123456789"):
        return classify(Record.from_dict({"case": case, "target": target, "verdict": verdict, "features": tokens}),
                        shipped)["gate"]

    ov = "openvino-2026.4.1/CPU/precision=pinned@onnx-14"
    assert gate(ov, "fail", ["P", "B"]) == "expected"                  # ignores peepholes
    assert gate(ov, "rejected", ["act=Softsign"]) == "expected"        # only relu/sigmoid/tanh
    assert gate(ov, "rejected", ["act=Relu"]) == "new"
    assert gate(ov, "fail", ["clip"]) == "new"
    ort = "onnxruntime-1.32.0/CPU@onnx-22"
    assert gate(ort, "fail", ["act=ThresholdedRelu"]) == "expected"
    assert gate(ort, "fail", ["act=Softplus", "initial_h"]) == "expected"      # log(1 + exp(x)) overflows
    assert gate(ort, "fail", ["act=Elu"]) == "new"
    torch = "torch-2.13.0+cpu/CPU@torch"                                         # packed input skips the h0 check
    assert gate(torch, "crash", ["sequence_lens=partial", "violates=shape:initial_h"]) == "expected"
    assert gate(torch, "crash", ["violates=shape:initial_h"]) == "new"
    assert gate(ort, "rejected", ["activation_spelling"], case="fuzz/rnn-0123456789") == "expected"
    assert gate(ort, "rejected", ["activation_spelling"], case="fuzz/gru-0123456789") == "new"
    ir1 = "openvino-2026.4.1/CPU@openvino-opset1"
    assert gate(ir1, "rejected", ["B"]) == "expected"                  # LSTMSequence-1 not implemented
    assert gate(ir1, "rejected", ["form=cell"]) == "new"
    # a passing pair in a feature class is ok, not "fixed"
    assert gate(ov, "pass", ["P"]) == "ok"
