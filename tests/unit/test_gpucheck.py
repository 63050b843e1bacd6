"""The GPU check's pieces that need no process (conformance/gpucheck/): which production files a bundle
holds under its budget, how the production files are sharded, what the summary counts and says."""

from __future__ import annotations

import types
from pathlib import Path

from conformance.gpucheck.bundle import choose
from conformance.gpucheck.stages import Stage, gpu_targets, shards_of
from conformance.gpucheck.summary import _campaign, markdown, per_target, summarize
from conformance.results import Record


def _case(hidden, seq=10, batch=2, direction="forward"):
    return types.SimpleNamespace(shape={"seq_length": seq, "batch_size": batch},
                                 attributes={"hidden_size": hidden, "direction": direction})


def test_the_bundle_takes_the_smallest_production_files_that_fit_its_budget():
    by_file = {"big.yaml": [_case(1024, seq=200)], "small.yaml": [_case(8)], "mid.yaml": [_case(64, seq=50)]}
    chosen, left_out = choose(by_file, 100_000, 1)
    assert chosen == ["small.yaml", "mid.yaml"]
    assert [x["file"] for x in left_out] == ["big.yaml"] and "budget" in left_out[0]["reason"]
    assert choose(by_file, 100_000, 4)[0] == ["small.yaml"]          # four profiles take four times the room
    assert choose(by_file, 0, 1)[0] == []


def test_production_shards_give_the_largest_files_a_shard_each():
    files = [f"f{i}" for i in range(5)]                               # smallest first
    assert shards_of(files, 16) == [["f4"], ["f3"], ["f2"], ["f1"], ["f0"]]
    assert shards_of(files, 2) == [["f4", "f2", "f0"], ["f3", "f1"]]
    assert shards_of(["only"], 0) == [["only"]]


def test_the_gpu_targets_are_every_device_but_the_cpu():
    targets = [types.SimpleNamespace(device=d) for d in ("CPU", "CUDA", "GPU.0", "default", "TensorRT")]
    assert [t.device for t in gpu_targets(targets)] == ["CUDA", "GPU.0", "TensorRT"]


def _rec(verdict, gate="", kind="", declared=None, target="t/CUDA@torch"):
    line = {"case": "c", "target": target, "verdict": verdict, "gate": gate}
    if kind:
        line["expected"] = {"kind": kind, "reason": "r", "link": "", "where": "w"}
    if declared:
        line["declared"] = {"precision": "tf32", "verdict": declared}
    return Record.from_dict(line)


def test_the_summary_tells_a_declaration_from_an_entry_and_from_new():
    rows = per_target([_rec("fail", "expected", "declared", "pass"), _rec("fail", "expected", "declared", "pass"),
                       _rec("crash", "expected", "known-bug"), _rec("crash", "new"), _rec("pass", "ok", "", "pass")])
    row = rows["t/CUDA@torch"]
    assert row["gate"] == {"declared": 2, "expected": 1, "new": 1}
    assert row["verdicts"] == {"fail": 2, "crash": 2, "pass": 1} and row["declared"] == {"pass": 3}


def test_the_summary_of_a_machine_with_no_gpu_lists_the_gaps_and_says_so(tmp_path):
    found = summarize(tmp_path, [], {"results": 0}, [], [("torch", "CUDA not available")])
    assert found["status"] == 0 and found["gpu_targets"] == []
    text = (tmp_path / "check.md").read_text()
    assert "No GPU target present" in text and "torch: CUDA not available" in text


def test_a_stopped_stage_fails_the_check_and_says_so(tmp_path):
    stage = Stage("production", tmp_path / "production", status=None, seconds=3.0)
    found = summarize(tmp_path, [stage], {"results": 1, "production_files": ["a"]},
                      [types.SimpleNamespace(id="t/CUDA@torch")], [])
    assert found["status"] == 1 and "stopped at its limit" in markdown(found)


def test_the_fuzz_campaigns_own_account_is_read_from_its_log(tmp_path):
    log = Path(tmp_path) / "command.log"
    log.write_text("...\n174 cases (150 valid, 24 invalid) on 2 targets in 31 s: 5.65 cases/s, 0.40\ncases/s per "
                   "worker (14 workers; 16 after 1 s of start-up); seed 1\n")
    assert _campaign(log).startswith("174 cases (150 valid, 24 invalid) on 2 targets in 31 s: 5.65 cases/s")
    assert _campaign(Path(tmp_path) / "absent.log") == ""
