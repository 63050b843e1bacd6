"""Bad input gets a clear error and loses nothing: every bad case file, expectations file or
baseline costs itself (a CaseError, or a usage error for the run's own files) with file:line, the
rest goes on, nothing hangs, nothing is allocated without bound, and no message echoes a file
beyond what its schema knows (or a clipped, escaped value).

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_bad_input.py."""

from __future__ import annotations

import json
import os
import random
import re
import threading
import tracemalloc
from pathlib import Path

import pytest

from conformance.case import load_file, load_paths
from conformance.case.limits import DEFAULT_LIMITS, Limits
from conformance.case.yamlio import load_yaml
from conformance.gate import Expectations, ExpectationsError, glob_to_regex
from conformance.gate.baseline import Baseline
from conformance.run import SelectError, compile_expression
from tests.calibration import budget
from tests.conftest import DATA, ROOT

BAD = DATA / "bad"
HEAD = "op: GRU\nclause: c\nattributes: {hidden_size: 2}\nshape: {seq_length: 2, batch_size: 1, input_size: 2}\n"


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _finishes_within(seconds: float, func, *args):
    """func(*args) in a daemon thread; fail (instead of hanging the suite) if it blocks for longer
    than `seconds` on an idle machine, scaled by its load now."""
    seconds = budget(seconds)
    box = {}

    def call():
        try:
            box["value"] = func(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{getattr(func, '__name__', func)} did not finish within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# -- 1. case files that would crash or exhaust the loader -----------------------------------------

@pytest.mark.parametrize("distribution, problem", [
    ("{uniform: [-.inf, .inf]}", "finite numbers"),
    ("{uniform: [.nan, 1.0]}", "finite numbers"),
    ("{uniform: [1.0, -1.0]}", "low <= high"),
    ("{normal: [0.0, -1.0]}", "std >= 0"),
    ("{normal: [.inf, 1.0]}", "finite numbers"),
])
def test_a_distribution_that_cannot_be_drawn_from_is_a_case_error_at_its_line(tmp_path, distribution, problem):
    path = _write(tmp_path, "d.yaml", HEAD + f"inputs:\n  seed: 1\n  distribution: {distribution}\n")
    cases, errors = load_file(path)
    assert cases == []
    (err,) = errors
    assert err.where.line == 7 and err.key == "inputs.distribution", str(err)
    assert problem in str(err) and "cannot draw" in str(err)


def test_a_tensors_own_distribution_is_checked_too(tmp_path):
    path = _write(tmp_path, "d.yaml", HEAD + "inputs:\n  W: {fill: random, distribution: {uniform: [-.inf, 0.0]}}\n")
    (err,) = load_file(path)[1]
    assert err.where.line == 6 and err.key == "inputs.W" and "finite numbers" in str(err)


@pytest.mark.parametrize("attributes, shape, key, line", [
    ("{hidden_size: 1000000}", "{seq_length: 2, batch_size: 1, input_size: 2}", "attributes.hidden_size", 3),
    ("{hidden_size: 2}", "{seq_length: 1000000000, batch_size: 4, input_size: 1000}", "shape.seq_length", 4),
    ("{hidden_size: 2}", "{seq_length: 2, batch_size: 10000000000, input_size: 1000}", "shape.batch_size", 4),
    ("{hidden_size: 2}", "{seq_length: 2, batch_size: 1, input_size: 100000000000}", "shape.input_size", 4),
])
def test_a_huge_case_is_refused_before_any_tensor_is_built(tmp_path, attributes, shape, key, line):
    path = _write(tmp_path, "huge.yaml", f"op: GRU\nclause: c\nattributes: {attributes}\nshape: {shape}\n")
    tracemalloc.start()
    try:
        cases, errors = load_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cases == [] and peak < 20 * 2 ** 20, peak
    (err,) = errors
    assert (err.where.line, err.key) == (line, key), str(err)
    assert f"over the limit of {DEFAULT_LIMITS.max_elements:,} elements (--max-elements)" in str(err)


def test_an_explicit_tensor_shape_counts_against_the_limit(tmp_path):
    path = _write(tmp_path, "x.yaml", HEAD + "expect: invalid\nviolates: W must be [D, 3*H, I]\n"
                  "inputs:\n  W: {fill: zeros, shape: [1000000, 1000000, 3]}\n")
    (err,) = load_file(path)[1]
    assert err.where.line == 8 and err.key == "inputs.W" and "--max-elements" in str(err)


def test_the_multiply_add_limit_names_its_flag(tmp_path):
    path = _write(tmp_path, "m.yaml", HEAD)
    cases, (err,) = load_paths([path], limits=Limits(max_macs=10))
    assert not cases
    assert "multiply-adds" in str(err) and "over the limit of 10 (--max-macs)" in str(err)
    assert err.where.line in (3, 4)
    cases, errors = load_paths([path], limits=Limits(max_macs=48))   # 2 x 1 x 1 x 3 x 2 x (2 + 2)
    assert len(cases) == 1 and errors == []


def test_production_shapes_load_within_the_default_limits(tmp_path):
    path = _write(tmp_path, "prod.yaml",
                  "op: LSTM\nclause: c\nattributes: {hidden_size: 1024, direction: bidirectional}\n"
                  "shape: {seq_length: 500, batch_size: 64, input_size: 1024}\n")
    (case,), errors = load_file(path, materialize=False)
    assert errors == [] and case.tensors == {}


def test_the_listing_path_reports_build_errors_without_building(tmp_path, monkeypatch):
    from conformance.case import build
    monkeypatch.setattr(build, "build_tensor", lambda plan: pytest.fail("a tensor was built"))
    _write(tmp_path, "ok.yaml", HEAD)
    _write(tmp_path, "ragged.yaml", HEAD + "expect: invalid\nviolates: X ragged\ninputs:\n  X: [[[1.0], [2.0, 3.0]]]\n")
    cases, errors = load_paths([tmp_path], materialize=False)
    assert [c.id for c in cases] == ["gru/ok"] and cases[0].tensors == {}
    (err,) = errors
    assert "ragged.yaml" in str(err) and "cannot build the input tensors" in str(err)


# -- 2. YAML resource limits, and files that are not regular files ---------------------------------


@pytest.mark.parametrize("text, problem, line", [
    ("a: &a [1, *a]\n", "recursive alias", 1),
    ("op: " + "[" * 5000 + "]" * 5000 + "\n", "nests deeper than 64 levels", 1),
    ("a: &a " + "[" * 36 + "1" + "]" * 36 + "\nb: " + "[" * 36 + "*a" + "]" * 36 + "\n", "nests deeper than 64", 2),
])
def test_recursive_and_deep_documents_are_refused(tmp_path, text, problem, line):
    _, (err,) = load_file(_write(tmp_path, "y.yaml", text))
    assert problem in str(err) and err.where.line == line, str(err)


def test_the_yaml_limits_are_overridable(tmp_path):
    path = _write(tmp_path, "c.yaml", HEAD)
    assert load_paths([path], limits=Limits(max_yaml_nodes=5))[1][0].message.startswith(
        "the document expands to more than 5 YAML nodes")
    assert "nests deeper than 2 levels" in str(load_paths([path], limits=Limits(max_yaml_depth=2))[1][0])
    (err,) = load_paths([path], limits=Limits(max_file_bytes=50))[1]
    assert "over the limit of 50 bytes" in str(err) and err.where.line == 1


def test_a_fifo_or_bomb_as_expectations_or_baseline_is_a_clean_error(tmp_path):
    os.mkfifo(tmp_path / "exp.yaml")
    with pytest.raises(ExpectationsError, match=r"exp.yaml:1: .*FIFO"):
        _finishes_within(10, Expectations.load, [tmp_path / "exp.yaml"])
    os.mkfifo(tmp_path / "base.jsonl")
    with pytest.raises(ExpectationsError, match=r"base.jsonl:1: .*FIFO"):
        _finishes_within(10, Baseline.load, tmp_path / "base.jsonl")
    bomb = (BAD / "alias_bomb.yaml").read_text().replace("\nop: ", "\nlol: ")
    path = _write(tmp_path, "bomb.yaml", bomb + "entries: []\n")
    with pytest.raises(ExpectationsError, match=r"bomb.yaml:7: .*1,000,000 YAML nodes"):
        Expectations.load([path])


# -- 3. numbers as people write them ----------------------------------------------------------------

@pytest.mark.parametrize("text, value", [("1e-4", 1e-4), ("1E5", 1e5), ("-2e+3", -2e3), (".5e-3", 0.5e-3),
                                         ("1.0e5", 1e5), ("+3e2", 300.0)])
def test_exponent_floats_load_as_numbers(text, value):
    assert load_yaml(f"x: {text}\n", "n")["x"] == value
    assert load_yaml(f"x: '{text}'\n", "n")["x"] == text  # quoted stays a string


def test_the_readme_tolerance_example_loads_in_a_case_and_in_expectations(tmp_path):
    path = _write(tmp_path, "t.yaml", HEAD + 'tolerance: {abs: 1e-4, rel: 1e-3, source: "ONNX GRU-22 note"}\n')
    (case,), errors = load_file(path)
    assert errors == [] and case.tolerance["abs"] == 1e-4 and case.tolerance["rel"] == 1e-3
    exp = _write(tmp_path, "e.yaml", 'entries:\n  - cases: "gru/*"\n    tolerance: {abs: 1e-4, rel: 1e-3, source: s}\n'
                 '    reason: r\n')
    (entry,) = Expectations.load([exp]).entries
    assert entry.tolerance["abs"] == 1e-4


# -- 4. non-UTF-8 files ------------------------------------------------------------------------------

def test_a_bad_byte_is_reported_at_its_line(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_bytes(b"op: GRU\nclause: c\nattributes: {hidden_size: 2}\n  \xff\n")
    (err,) = load_file(path)[1]
    assert err.where.line == 4 and "not UTF-8" in str(err) and "0xff" in str(err)
    exp = tmp_path / "e.yaml"
    exp.write_bytes(b"entries:\n  - cases: x\n    kind: known-bug\n    reason: r\xe9sum\xe9\n")
    with pytest.raises(ExpectationsError, match=r"e.yaml:4: .*not UTF-8"):
        Expectations.load([exp])


# -- 5. the same file named twice -------------------------------------------------------------------


# -- 6. messages never echo a file beyond what the schema knows --------------------------------------

SECRET = "AKIA" + "Q7XJ2SECRETTOKENVALUE" * 12  # 256 characters


@pytest.mark.parametrize("text", [
    f"{SECRET}: 1\n",                                                   # an unknown top-level key
    f"op: {SECRET}\nattributes: {{hidden_size: 2}}\nshape: {{batch_size: 1, input_size: 1}}\n",  # an enum
    HEAD.replace("hidden_size: 2", f"hidden_size: {SECRET}"),          # a string where a number goes
    HEAD + f"description: [{SECRET}]\n",                                # a type error
    HEAD + f"matrix:\n  {SECRET}: [1, 2]\n",                            # an unknown matrix key
    HEAD + f"inputs:\n  W: {SECRET}\n",                                 # oneOf
    HEAD + f"attributes2: 1\nfinding: {{target: t, verdict: v, signature: s, {SECRET}: 1}}\n",
    HEAD.replace("direction", "x") + f"matrix:\n  direction: [{SECRET}]\n",   # a value in a case id
    HEAD + f"key: &{SECRET} 1\nother: *{SECRET}x\n",                    # a YAML error quoting an anchor
    HEAD + f"expect: invalid\nviolates: v\nmatrix:\n  direction: [{SECRET}, {SECRET}]\n",  # a duplicate case id
    HEAD + f"{SECRET}: 1\n{SECRET}: 2\n",                               # a duplicate key
])
def test_no_message_echoes_a_secret_beyond_the_clip(tmp_path, text):
    target = _write(tmp_path, "secret.txt", text)
    link = tmp_path / "x.yaml"
    link.symlink_to(target)
    cases, errors = load_paths([link])
    assert errors, cases
    shown = "\n".join(str(e) + json.dumps(e.to_json()) for e in errors)
    assert SECRET[:61] not in shown, shown
    assert all(e.where.line >= 1 for e in errors)


def test_a_short_misspelt_key_is_still_named_and_a_long_one_is_not(tmp_path):
    (err,) = load_file(_write(tmp_path, "k.yaml", HEAD + "inptus: {}\n"))[1]
    assert "unknown key 'inptus'" in str(err) and err.where.line == 5
    (err,) = load_file(_write(tmp_path, "l.yaml", HEAD + f"{SECRET}: {{}}\n"))[1]
    assert "an unknown key" in str(err) and err.where.line == 5 and "AKIA" not in str(err)


# -- 7. expectations files are validated -------------------------------------------------------------

@pytest.mark.parametrize("body, line, message", [
    ('entries:\n  - cases: "gru/*"\n    verdict: failz\n    kind: known-bug\n    reason: r\n', 3,
     "'failz' is not one of 'pass', 'fail'"),
    ('entries:\n  - cases: "gru/*"\n    verdict: [fail, nope]\n    kind: known-bug\n    reason: r\n', 3,
     "'nope' is not one of"),
    ("entries:\n  - cases: 5\n    kind: known-bug\n    reason: r\n", 2,
     "5 is an integer, not of type 'string' or 'array'"),
    ("entries: 5\n", 1, "entries: 5 is an integer"),
    ("targets: null\nentries: []\n", 1, "targets: null is null"),
    ("target: x\nentries: []\n", 1, "unknown key 'target'"),
    ('entries:\n  - cases: x\n    kind: known-bug\n    reason: r\n    resaon: typo\n', 5, "unknown key 'resaon'"),
    ("entries:\n  - cases: x\n    kind: known-bug\n    reason: [1, 2]\n", 4, "not of type 'string'"),
    ("entries:\n  - 7\n", 2, "7 is an integer, not of type 'object'"),
])
def test_a_malformed_expectations_file_names_its_first_problem_and_line(tmp_path, body, line, message):
    path = _write(tmp_path, "exp.yaml", body)
    with pytest.raises(ExpectationsError) as info:
        Expectations.load([path])
    assert str(info.value).startswith(f"{path}:{line}: "), str(info.value)
    assert message in str(info.value)


def test_the_shipped_expectations_are_valid():
    assert len(Expectations.load([ROOT / "expectations"]).entries) >= 30


# -- 8. globs and -k expressions match in linear time ------------------------------------------------


def test_globs_match_as_the_regexes_did():
    def regex(pattern, flags):
        parts = [".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern]
        return re.compile("".join(parts) + r"\Z", flags | re.DOTALL)
    rng = random.Random(7)
    for _ in range(20000):
        pattern = "".join(rng.choice("ab?*[=") for _ in range(rng.randint(0, 7)))
        text = "".join(rng.choice("abAB[=") for _ in range(rng.randint(0, 9)))
        for flags in (0, re.IGNORECASE):
            assert bool(regex(pattern, flags).match(text)) == bool(glob_to_regex(pattern, flags).match(text)), \
                (pattern, text, flags)
    assert glob_to_regex("act=*relu", re.IGNORECASE).match("act=ThresholdedRelu")
    assert not glob_to_regex("act=*relu").match("act=ThresholdedRelu")


def test_k_expressions_of_any_length_do_not_recurse():
    assert compile_expression(" and ".join(["gru"] * 20000))("gru/basic")
    assert compile_expression(" or ".join(["x"] * 20000 + ["basic"]))("gru/basic")
    assert compile_expression("not " * 20001 + "lstm")("gru/basic") is True
    assert compile_expression("not " * 20000 + "lstm")("gru/basic") is False
    assert compile_expression("(" * 50 + "basic" + ")" * 50)("gru/basic")
    with pytest.raises(SelectError, match="nest deeper"):
        compile_expression("(" * 5000 + "basic" + ")" * 5000)


# -- 9. baselines are read strictly -------------------------------------------------------------------

GOOD = json.dumps({"case": "gru/small[direction=forward]", "target": "onnxruntime-1.0/CPU@onnx-14", "verdict": "fail"})


@pytest.mark.parametrize("content, line, message", [
    (b"[1, 2]\n", 1, "a JSON list, not an object"),
    (b'"results"\n', 1, "a JSON string, not an object"),
    (b'\n{"target": "t", "verdict": "pass"}\n', 2, "without case"),
    (b'{"case": "c", "target": "t"}\n', 1, "without verdict"),
    (b'{"case": "c", "verdict": "pass"}\n', 1, "without target"),
    (b'{"case": "c", "target": "t", "verdict": "failz"}\n', 1, "verdict 'failz' is not one of"),
    (b"\x00\x01\x02\xff\xfe\n\x00\n", 1, "not UTF-8"),
    (b"[" * 100000 + b"]" * 100000 + b"\n", 1, "nested too deeply"),
])
def test_a_baseline_that_is_not_results_is_an_error_with_its_line(tmp_path, content, line, message):
    path = tmp_path / "base.jsonl"
    path.write_bytes(content)
    with pytest.raises(ExpectationsError) as info:
        Baseline.load(path)
    assert str(info.value).startswith(f"{path}:{line}: not a baseline: "), str(info.value)
    assert message in str(info.value)


def test_garbage_beside_a_result_is_skipped_and_counted(tmp_path):
    path = tmp_path / "base.jsonl"
    path.write_bytes(b"garbage\n\xff\xfe\n" + GOOD.encode() + b"\n[1]\n")
    base = Baseline.load(path)
    assert base.skipped == 3 and base.first_skipped == 1
    assert base.failing == {("gru/small[direction=forward]", "onnxruntime/CPU@onnx-14"): "fail"}


# -- 10. a plugin module in the current folder -------------------------------------------------------

