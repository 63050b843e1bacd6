"""The CI gate on real runs.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_gate.py."""

import json

from conformance.run import read_results
from tests.conftest import DATA, conformance
from tests.unit.test_gate import _expectations

WRONG = ["--runtime", "wrong-gru-gate-order", "--runtime-plugin", "tests.doubles.plugins:WrongGateOrderGRU"]


def test_new_divergence_fails_and_expected_one_passes(tmp_path):
    args = ["run", DATA / "cases", "--spec", "onnx-14", *WRONG, "-q"]
    new = conformance(*args, "--out", tmp_path / "a", check=1)
    assert "2 new failing verdicts" in new.stdout

    exp = _expectations(tmp_path, """\
        targets: "wrong-gru-gate-order*"
        entries:
          - cases: "gru/small[*"
            verdict: fail
            kind: known-bug
            reason: swaps the z and r gates (a deliberate test double)
            link: https://example.org/issue/1
        """)
    ok = conformance(*args, "--out", tmp_path / "b", "--expectations", exp, check=0)
    assert "2 expected" in ok.stdout
    records = read_results(tmp_path / "b" / "results.jsonl")
    assert {r["gate"] for r in records if r["verdict"] == "fail"} == {"expected"}
    assert all(r["expected"]["reason"].startswith("swaps") for r in records if r["verdict"] == "fail")


def test_fixed_divergence_is_reported_and_unused_entry_warns(tmp_path):
    exp = _expectations(tmp_path, """\
        targets: "onnxruntime-*"
        entries:
          - cases: "gru/small[direction=forward]"
            kind: known-bug
            reason: once failed here
          - cases: "lstm/nothing-like-this*"
            kind: unsupported
            reason: matches no case
        """)
    proc = conformance("run", DATA / "cases", "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", tmp_path / "o",
                       "--expectations", exp, "-q", check=0)
    assert "fixed gru/small[direction=forward] on onnxruntime" in proc.stdout
    assert "matches nothing (matches no case)" in proc.stdout
    assert f"{exp}:6" in proc.stdout


def test_baseline_fails_only_on_regressions(tmp_path):
    # the baseline: onnxruntime (passing) results relabelled as the wrong runtime's target
    args = ["run", DATA / "cases", "--spec", "onnx-14", "-q"]
    conformance(*args, *WRONG, "--out", tmp_path / "old", check=1)
    old = read_results(tmp_path / "old" / "results.jsonl")
    # same failures as the baseline: nothing regressed
    same = conformance(*args, *WRONG, "--out", tmp_path / "same", "--baseline", tmp_path / "old" / "results.jsonl",
                       check=0)
    assert "2 baseline" in same.stdout
    # a baseline where those pairs passed: now they regressed
    passing = tmp_path / "passing.jsonl"
    import json
    passing.write_text("".join(json.dumps(dict(r, verdict="pass")) + "\n" for r in old))
    conformance(*args, *WRONG, "--out", tmp_path / "regressed", "--baseline", passing, check=1)


def test_bad_expectations_file_is_a_usage_error_with_file_and_line(tmp_path):
    exp = _expectations(tmp_path, """\
        targets: "*"
        entries:
          - cases: "gru/*"
            kind: bug
            reason: x
        """)
    proc = conformance("run", DATA / "cases", "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", tmp_path / "o",
                       "--expectations", exp, "-q", check=2)
    assert f"{exp}:3: kind 'bug' is not one of known-bug, unsupported, spec-ambiguity" in proc.stderr


def test_expectations_tolerance_override_is_used_and_named(tmp_path):
    exp = _expectations(tmp_path, """\
        targets: "wrong-gru-gate-order*"
        entries:
          - cases: "gru/small[direction=forward]"
            tolerance: {abs: 10.0, rel: 0.0, source: "test policy: anything within 10 passes"}
            reason: a deliberately huge tolerance, to see it applied
        """)
    conformance("run", DATA / "cases", "-k", "small", "--spec", "onnx-14", *WRONG, "--out", tmp_path / "o",
                "--expectations", exp, "-q", "--no-ablation", "--artifacts", "full", check=1)
    got = {r["case"]: r for r in read_results(tmp_path / "o" / "results.jsonl")}
    fwd, rev = got["gru/small[direction=forward]"], got["gru/small[direction=reverse]"]
    assert fwd["verdict"] == "pass" and fwd["tolerance"]["kind"] == "override"
    assert fwd["tolerance"]["source"] == "test policy: anything within 10 passes"
    assert f"{exp}:3" in fwd["tolerance"]["name"] and "test policy" in fwd["message"]
    assert rev["verdict"] == "fail" and rev["tolerance"]["kind"] == "derived"


# -- entries by configuration (the record's measured `effective` configuration) -------------------


def test_a_baseline_from_another_precision_is_not_compared_silently(tmp_path):
    """Results of an f32 machine as the baseline of a bf16 one: the run says the pairs differ. The double
    is wrong beyond bf16 (a sigmoid 2 % off): its failures are not excused by the f32 machine's passes (those
    within bf16 are judged by the declaration whatever the baseline: docs/gate.md)."""
    plugins = ["--runtime-plugin", "tests.doubles.precision:SigmoidOff2Bf16", "--runtime", "kernel-double-sigmoidoff2"]
    args = ["run", DATA / "cases", "--spec", "onnx-14", *plugins, "--no-ablation"]
    conformance(*args, "--out", tmp_path / "a", "-q")
    base = tmp_path / "f32-machine.jsonl"
    records = read_results(tmp_path / "a" / "results.jsonl")
    assert records and all("/precision=default→bf16@" in r["target"] for r in records)
    base.write_text("".join(json.dumps(dict(r, target=r["target"].replace("/precision=default→bf16@", "@"),
                                            verdict="pass")) + "\n" for r in records))
    proc = conformance(*args, "--out", tmp_path / "b", "--baseline", base)
    assert ("the baseline has kernel-double-sigmoidoff2-test-double/CPU@onnx-14 where this run has "
            "kernel-double-sigmoidoff2-test-double/CPU/precision=default→bf16@onnx-14") in proc.stdout
    assert proc.returncode == 1  # the failures beyond bf16 are not excused by the f32 machine's passes


def test_a_summarised_divergence_that_becomes_new_is_run_again_with_its_detail(tmp_path):
    """--artifacts failing keeps only a summary of an expected divergence; when a resumed run's gate
    calls it new (its expectation removed), the pair runs again and gets its full record."""
    out = tmp_path / "o"
    exp = _expectations(tmp_path, """\
        targets: "wrong-gru-gate-order*"
        entries:
          - cases: "gru/small*"
            kind: known-bug
            reason: the test double's gate order
        """)
    base = ["run", DATA / "cases", "-k", "small", "--spec", "onnx-14", *WRONG, "--out", out, "-q", "--no-ablation"]
    conformance(*base, "--expectations", exp, check=0)
    first = [r for r in read_results(out / "results.jsonl") if r["verdict"] == "fail"]
    assert first and all(r.get("detail") == "summary" for r in first)
    empty = tmp_path / "none.yaml"
    empty.write_text("entries: []\n")
    again = conformance(*base, "--expectations", empty, check=1)
    assert f"{len(first)} run now" in again.stdout, again.stdout
    latest = {(r["case"], r["target"]): r for r in read_results(out / "results.jsonl")}
    redone = [latest[(r["case"], r["target"])] for r in first]
    assert all(r.get("detail") != "summary" and r["gate"] == "new" and r.get("repro") for r in redone)
    same = conformance(*base, "--expectations", empty, check=1)
    assert "0 run now" in same.stdout, same.stdout
