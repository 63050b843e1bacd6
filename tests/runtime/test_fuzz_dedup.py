"""How the fuzzer counts divergences.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/corpus/test_fuzz_dedup.py, tests/unit/test_fuzz_dedup.py."""

from __future__ import annotations

from conformance.case.features import features
from conformance.fuzz.campaign import Campaign, CampaignConfig
from conformance.fuzz.examiner import Examiner
from conformance.fuzz.finding import Finding
from conformance.fuzz.signature import origin, with_id
from conformance.run import Pool, read_results
from conformance.runtimes import plugin_targets
from tests.calibration import budget
from tests.conftest import ROOT, conformance
from tests.unit.test_fuzz_dedup import EXPECT, _case

# -- features --------------------------------------------------------------------------------------


# -- expectations by feature ---------------------------------------------------------------------


def test_a_run_records_features_and_gates_on_them(tmp_path):
    expect = tmp_path / "e.yaml"
    expect.write_text(EXPECT)
    out = tmp_path / "out"
    conformance("run", ROOT / "cases" / "gru" / "clip.yaml", "--runtime", "wrong-clip-after-activation",
                "--runtime-plugin", "tests.doubles.wrong:WrongClipAfterActivation", "--spec", "onnx-22",
                "--expectations", expect, "--out", out, "-q", "--no-ablation")
    records = read_results(out / "results.jsonl")
    assert records and all(r["features"] == sorted(features(_case("gru/clip.yaml", r["case"]))) for r in records)
    gates = {r["case"]: r["gate"] for r in records if r["verdict"] == "fail"}
    assert gates, "the wrong implementation fails some clip case"
    for case_id, gate in gates.items():
        assert gate == ("expected" if ("Relu" in case_id or "Softsign" in case_id) else "new"), case_id


# -- reduction -------------------------------------------------------------------------------------

def _reduce(tmp_path, plugin: str, case) -> Finding:
    targets = plugin_targets(f"tests.doubles.wrong:{plugin}", {"onnx": ["onnx-22"]})
    campaign = Campaign(CampaignConfig(targets=targets, out_dir=tmp_path / "found", database=None))
    with Pool(2) as pool:
        campaign.examiner = Examiner(targets, pool, tmp_path / "work", timeout=budget(30))
        records = [r for r in campaign.examiner.examine(case) if r.verdict == "fail"]
        assert records, f"{plugin} does not fail {case.id}"
        found = Finding(origin(records[0], case), features(case), case, records)
        return campaign._reduce(found)


def test_reduction_keeps_only_the_feature_a_failure_needs(tmp_path):
    case = with_id(_case("gru/clip.yaml",
                         "clip=0.5,direction=bidirectional,linear_before_reset=1,activations=Sigmoid+Tanh"))
    reduced = _reduce(tmp_path, "WrongClipAfterActivation", case)
    assert "clip" in reduced.cause
    assert reduced.cause <= {"clip", "B", "initial_h"}, reduced.cause
    assert {"bidirectional", "linear_before_reset"} <= set(reduced.removed)
    assert reduced.case.direction == "forward" and reduced.case.id.startswith("fuzz/gru-")
    assert reduced.records and all(r.verdict == "fail" for r in reduced.records)


def test_reduction_keeps_both_features_of_a_failure_that_needs_two(tmp_path):
    case = with_id(_case("gru/sequence_lens.yaml", "direction=bidirectional,sequence_lens=[4,2,1],initial_h=random"))
    reduced = _reduce(tmp_path, "WrongReverseIgnoresSequenceLens", case)
    assert {"reverse", "sequence_lens=partial"} <= reduced.cause, reduced.cause
    assert "bidirectional" not in reduced.cause and reduced.case.direction == "reverse"
    assert not {"B", "initial_h"} & reduced.cause


# -- signatures ------------------------------------------------------------------------------------


