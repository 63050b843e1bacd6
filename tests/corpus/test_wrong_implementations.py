"""The deliberately wrong implementations (tests/doubles/wrong/): proof that the suite catches real bugs.

1. The numpy test double, with no bug switched on, is a correct implementation: it agrees with
   onnxruntime on the corpus's float32 cases onnxruntime runs, rejects the invalid cases, and
   passes the suite.
2. Each wrong implementation differs from the correct mode on every case of its registered
   selection, and the real CLI gives it at least one ``fail`` there; each benign control differs
   too, and gets no ``fail``.

Assertions are on verdicts, never on tolerance values: every wrong implementation must fail under
the default (derived) tolerance. ``caught_by_interim`` records whether the older per-dtype policy
would have seen the bug too (benchmarks/tolerance_policies.py compares the policies).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np
import pytest

from conformance.case import load_paths
from conformance.case.features import features
from conformance.run import read_results
from conformance.run.select import compile_expression
from conformance.specs import SPECS, NotExpressible, translate
from tests.conftest import ROOT, conformance
from tests.doubles.wrong import BENIGN, BUGS, WRONG, NumpyRNN, Rejected, plugin_path
from tests.known import ort_known_divergence

SPEC = "onnx-14"
CORRECT = NumpyRNN
#: how close two float32 implementations of the same formulas must be (the common atol = rtol = 1e-5 check,
#: policies.yaml `fixed-1e-5`, relative and absolute); not the suite's tolerance, which judges against the oracle
ORT_AGREEMENT = 1e-5


# -- helpers ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus():
    cases, errors = load_paths([ROOT / "cases"])
    assert not errors, "\n".join(map(str, errors))
    return cases


def selected(cases, cls) -> list:
    select = compile_expression(cls.select)
    return [c for c in cases if c.valid and select(c.id)]


def plugin_args(classes) -> list[str]:
    args = []
    for cls in classes:
        args += ["--runtime-plugin", plugin_path(cls), "--runtime", cls.name]
    return args


def outputs_of(runtime, case) -> list[np.ndarray]:
    """The runtime's outputs for the case at SPEC, brought back to the canonical layout."""
    program = translate(SPECS[SPEC], case)
    outputs = runtime.run(program.model, program.feeds)
    return [program.to_canonical(name, np.asarray(o)) for (_, name), o in zip(program.outputs, outputs)]


def verdict_lines(records) -> str:
    return "\n".join(f"  {r['verdict']:>12}  {r['case']}: {r['message'].splitlines()[0][:160]}" for r in records)


# -- 1. the correct mode is correct ---------------------------------------------------------------

def _ort_gap(case) -> str | None:
    """Why onnxruntime cannot be the reference for this case, or None: the reason of the shipped
    expectation (expectations/onnxruntime.yaml) that covers it."""
    return ort_known_divergence(case)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_correct_mode_agrees_with_onnxruntime_on_float32_cases(corpus, op):
    """Every valid float32 case of the op, at onnx-14, within ORT_AGREEMENT (relative and absolute) of
    onnxruntime, except the documented onnxruntime gaps (_ort_gap), each skipped with its reason.
    layout=1 cases are compared through the same case at layout 0, which onnxruntime runs."""
    from conformance.runtimes.onnxruntime import OnnxRuntime
    ort, mine = OnnxRuntime(), CORRECT()
    compared, skipped, disagree = 0, defaultdict(int), []
    for case in corpus:
        if case.op != op or not case.valid or case.dtype != "float32":
            continue
        said = translate(SPECS[SPEC], case)
        if isinstance(said, NotExpressible):  # torch.nn's own axes (cases/torch/): not an ONNX node's
            skipped[f"not expressible at {SPEC}"] += 1
            continue
        if {"nan", "inf"} & features(case):  # IEEE leaves Relu(NaN) and the like to the formula: the oracle judges them
            skipped["non-finite inputs, where two correct implementations may differ"] += 1
            continue
        reference = case
        if case.layout == 1:  # ours at layout 1 against onnxruntime on the same case at layout 0
            layout0 = {k: v for k, v in case.attributes.items() if k != "layout"}
            reference = dataclasses.replace(case, attributes=layout0)
        try:
            expected = outputs_of(ort, reference)
        except Exception as exc:  # an undocumented refusal is a finding, not a skip
            gap = _ort_gap(reference)
            if gap:
                skipped[gap] += 1
                continue
            disagree.append(f"{case.id}: onnxruntime refused it ({str(exc).splitlines()[0][:120]}); "
                            f"document the gap in expectations/onnxruntime.yaml if it is onnxruntime's")
            continue
        got = outputs_of(mine, case)
        found = []
        for (name, _), e, g in zip(said.outputs, expected, got):
            if not np.allclose(g, e, rtol=ORT_AGREEMENT, atol=ORT_AGREEMENT):
                i = np.unravel_index(int(np.argmax(np.abs(g - e))), g.shape)
                found.append(f"{case.id}: {name}[{','.join(map(str, i))}] = {g[i]:.9g}, but onnxruntime "
                             f"gives {e[i]:.9g} (|diff| {abs(g[i] - e[i]):.3g} > {ORT_AGREEMENT} * (1 + |x|))")
        gap = _ort_gap(reference) if found else None
        if gap:   # onnxruntime's known divergence: only the oracle judges this case
            skipped[gap] += 1
            continue
        compared += 1
        disagree += found
    assert not disagree, f"{len(disagree)} disagreements with onnxruntime:\n" + "\n".join(disagree[:20])
    assert compared >= 100, f"only {compared} {op} cases compared (skipped: {dict(skipped)})"


def test_correct_mode_rejects_every_invalid_case(corpus):
    """The correct mode refuses every case the spec forbids (so it passes the invalid corpus)."""
    mine = CORRECT()
    accepted = []
    for case in corpus:
        program = SPECS[SPEC].translate(case)
        if case.valid or not hasattr(program, "model"):
            continue
        try:
            mine.run(program.model, program.feeds)
            accepted.append(f"{case.id}: ran it, but should reject it ({case.violates})")
        except Rejected:
            pass
    assert not accepted, "\n".join(accepted)


def test_correct_mode_passes_the_whole_corpus(tmp_path):
    """The whole corpus at onnx-14 and onnx-22 (float16 and bfloat16 included) through the real CLI:
    no failing verdict."""
    out = tmp_path / "out"
    proc = conformance("run", "cases", "--spec", "onnx-14", "--spec", "onnx-22", *plugin_args([CORRECT]),
                       "--jobs", "2", "--out", out, "-q")
    records = read_results(out / "results.jsonl")
    bad = [r for r in records if r["verdict"] not in ("pass", "unspecified", "not-expressible")]
    assert records and not bad, verdict_lines(bad) + "\n" + proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


# -- the registry ---------------------------------------------------------------------------------

def test_registry_covers_every_bug_switch_once_with_a_small_visible_selection(corpus):
    classes = [*WRONG.values(), *BENIGN.values()]
    switches = [cls.bug for cls in classes]
    assert sorted(switches) == sorted(BUGS), "every switch in BUGS has exactly one plugin class"
    assert len({cls.name for cls in classes}) == len(classes)
    for cls in classes:
        prefix = "wrong-" if cls.name in WRONG else "benign-"
        assert cls.name.startswith(prefix), f"{cls.__name__}.name={cls.name!r} should start with {prefix!r}"
        assert cls.format == "onnx" and cls.ops and set(cls.ops) <= {"RNN", "GRU", "LSTM"}, cls.__name__
        assert cls.visible_when and cls.__doc__, cls.__name__
        cases = selected(corpus, cls)
        assert 1 <= len(cases) <= 10, f"{cls.name}: select {cls.select!r} matches {len(cases)} cases, want 1..10"
        assert {c.op for c in cases} <= set(cls.ops), f"{cls.name}: select reaches ops outside {cls.ops}"


@pytest.mark.parametrize("name", sorted(WRONG))
def test_bug_is_visible_on_every_selected_case(corpus, name):
    """The registry's selection is where the bug shows: each selected case's outputs differ from
    the correct mode's (by a rounding-level amount at least, for the precision bugs)."""
    cls, correct = WRONG[name], CORRECT()
    same = [c.id for c in selected(corpus, cls)
            if all(np.array_equal(a, b) for a, b in zip(outputs_of(cls(), c), outputs_of(correct, c)))]
    assert not same, f"{name} gives the correct mode's outputs on {same}; its select should avoid them"


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_benign_control_differs_from_the_correct_mode(corpus, name):
    cls, correct = BENIGN[name], CORRECT()
    differs = [c.id for c in selected(corpus, cls)
               if not all(np.array_equal(a, b) for a, b in zip(outputs_of(cls(), c), outputs_of(correct, c)))]
    assert differs, f"{name} is identical to the correct mode on its selection: the control proves nothing"


# -- 2. the suite catches each bug (the real CLI) ---------------------------------------------------

@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict:
    """One CLI run: the correct mode, every wrong implementation and every control, on the union of
    their selections. Returns runtime name -> case id -> result record."""
    classes = [CORRECT, *WRONG.values(), *BENIGN.values()]
    expr = " or ".join(f"({cls.select})" for cls in classes[1:])
    out = tmp_path_factory.mktemp("wrong") / "out"
    proc = conformance("run", "cases", "-k", expr, "--spec", SPEC, *plugin_args(classes), "--jobs", "2",
                       "--no-ablation", "--out", out, "-q")
    records = read_results(out / "results.jsonl")
    assert records, proc.stdout[-3000:] + proc.stderr[-3000:]
    by_runtime = defaultdict(dict)
    for r in records:
        by_runtime[r["runtime"]][r["case"]] = r
    return by_runtime


def _records(verdicts, corpus, cls) -> list:
    ids = [c.id for c in selected(corpus, cls)]
    got = verdicts[cls.name]
    missing = [i for i in ids if i not in got]
    assert not missing, f"{cls.name}: no verdict for {missing}"
    return [got[i] for i in ids]


def test_correct_mode_passes_every_selection(verdicts):
    records = list(verdicts[CORRECT.name].values())
    bad = [r for r in records if r["verdict"] != "pass"]
    assert records and not bad, verdict_lines(bad)


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_implementation_is_caught(verdicts, corpus, name):
    cls = WRONG[name]
    records = _records(verdicts, corpus, cls)
    errors = [r for r in records if r["verdict"] not in ("pass", "fail", "unspecified")]
    assert not errors, f"{name} should run every selected case:\n" + verdict_lines(errors)
    failed = [r for r in records if r["verdict"] == "fail"]
    assert failed, (f"{name} ({cls.bug}: {BUGS[cls.bug]}) passed every case of its selection "
                    f"{cls.select!r}; the suite should catch it:\n" + verdict_lines(records))
    assert all("but should be within" in r["message"] for r in failed), verdict_lines(failed)


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_benign_control_passes(verdicts, corpus, name):
    cls = BENIGN[name]
    records = _records(verdicts, corpus, cls)
    bad = [r for r in records if r["verdict"] not in ("pass", "unspecified")]
    assert not bad, f"{name} is acceptable ({cls.why}), but the suite did not pass it:\n" + verdict_lines(bad)
    assert any(r["verdict"] == "pass" for r in records), verdict_lines(records)


@pytest.mark.parametrize("name, reading", [("benign-activation-params-positional", "ab-pos"),
                                           ("benign-input-forget-i-from-f", "i=1-f")])
def test_documented_reading_is_recognized_as_such(verdicts, corpus, name, reading):
    """A control implementing an alternative documented reading passes *by matching that reading*."""
    records = _records(verdicts, corpus, BENIGN[name])
    assert all(r["reading"] == reading for r in records), "\n".join(f"{r['case']}: {r['reading']!r}" for r in records)
