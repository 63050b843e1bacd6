"""The execution forms' machinery, without a runtime: the form table, the programs each form writes,
the other inputs, the worker's plans, and the verdicts (state-leak, inconsistent) from their answers.

The real runtimes in each form, and the test doubles each form must catch: tests/runtime/test_forms_runtimes.py.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from conformance.case import load_paths
from conformance.case.variants import at_shape, lengths, other_values, shapes
from conformance.isolation.plans import Plan, execute
from conformance.results import Record
from conformance.run import forms as pair_forms
from conformance.run import relations as rel
from conformance.runtimes import plugin_forms
from conformance.runtimes.forms import (
    BY_KEY,
    CONFIGURATIONS,
    FORMS,
    asked,
    base_config,
    built_config,
    compose,
    of,
    program_form,
    unsupported,
)
from conformance.specs import SPECS, NotExpressible, translate
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def gru_cases():
    cases, errors = load_paths([ROOT / "cases" / "gru" / "sequence_lens.yaml"])
    assert not errors
    return cases


def _case(cases, **want):
    """The first case whose id names every ``key=value`` of ``want`` (its matrix labels)."""
    return next(c for c in cases if all(f"{k}={v}" in c.id for k, v in want.items()))


# -- the table ---------------------------------------------------------------------------------------

def test_a_configuration_names_its_forms_and_keeps_the_rest():
    config = compose("precision=pinned", {"session": "reused", "shape": "dynamic"})
    assert config == "precision=pinned/shape=dynamic/session=reused"  # the table's order, not the call's
    assert of(config) == {"shape": "dynamic", "weights": "constants", "session": "reused", "threads": "1",
                          "relations": "off"}
    assert asked(config) == {"shape": "dynamic", "session": "reused"}
    assert base_config(config) == "precision=pinned"
    assert built_config(config) == "precision=pinned"  # the suite's business: one worker with the plain target
    assert built_config("threads=4") == "threads=4"     # the runtime itself is built for it
    assert program_form(config) == {"shape": "dynamic"}
    assert compose("default", {}) == "default"
    # the measured precision after the arrow is never a form
    assert asked("precision=default→bf16") == {}


def test_every_configuration_the_suite_makes_is_a_form_of_the_table():
    for forms in CONFIGURATIONS:
        for key, value in forms.items():
            assert value == BY_KEY[key].other
    assert {f.key for f in FORMS} == {"shape", "weights", "session", "threads", "relations"}


def test_a_runtime_that_does_not_take_a_form_is_told_why():
    why = unsupported("shape=dynamic", {"weights": ["inputs"]})
    assert why and "shape=dynamic" in why and "weights=inputs" in why
    assert unsupported("shape=dynamic/session=reused", {"shape": ["dynamic"]}) is not None
    assert unsupported("weights=inputs", {"weights": ["inputs"]}) is None
    assert unsupported("relations=on", {}) is None  # relations run programs as any pair does


def test_a_plugin_declares_its_forms_and_is_checked():
    class Loads:
        forms = {"shape": ["static", "dynamic"]}

        def load(self, model):
            return None
    assert plugin_forms(Loads(), "x:Loads") == {"shape": ["dynamic"]}

    class NoLoad:
        forms = {"session": ["reused"]}
    with pytest.raises(TypeError, match="load"):
        plugin_forms(NoLoad(), "x:NoLoad")

    class Unknown:
        forms = {"shape": ["ragged"]}
    with pytest.raises(TypeError, match="shape=static|dynamic"):
        plugin_forms(Unknown(), "x:Unknown")


# -- the programs --------------------------------------------------------------------------------------

def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_onnx_dynamic_writes_symbolic_batch_and_sequence_dimensions(gru_cases):
    case = gru_cases[0]
    prog = translate(SPECS["onnx-14"], case, {"shape": "dynamic"})
    model = onnx.load_from_string(prog.model)
    onnx.checker.check_model(model, full_check=True)
    dims = {i.name: _dims(i) for i in list(model.graph.input) + list(model.graph.output)}
    assert dims["X"] == ["seq_length", "batch_size", case.shape["input_size"]]
    assert dims["initial_h"][1] == "batch_size" and dims["sequence_lens"] == ["batch_size"]
    assert dims["Y"][0] == "seq_length" and dims["Y"][2] == "batch_size"
    assert {i.name for i in model.graph.initializer} == {"W", "R", "B"}


def test_onnx_weights_as_inputs_feeds_them_and_stores_none(gru_cases):
    case = gru_cases[0]
    prog = translate(SPECS["onnx-22"], case, {"weights": "inputs"})
    model = onnx.load_from_string(prog.model)
    onnx.checker.check_model(model, full_check=True)
    assert not model.graph.initializer
    for name in ("W", "R", "B"):
        assert np.array_equal(prog.feeds[name], case.tensors[name])
    assert any("weights=inputs" in n for n in prog.notes)


def test_layout_1_weights_are_fed_as_they_are(tmp_path):
    cases, _ = load_paths([ROOT / "cases" / "gru" / "layout.yaml"])
    case = next(c for c in cases if c.layout == 1 and c.valid)
    prog = translate(SPECS["onnx-14"], case, {"weights": "inputs", "shape": "dynamic"})
    assert np.array_equal(prog.feeds["W"], case.tensors["W"])       # not transposed like X
    assert prog.feeds["X"].shape == (case.shape["batch_size"], case.shape["seq_length"], case.shape["input_size"])
    model = onnx.load_from_string(prog.model)
    assert _dims(next(i for i in model.graph.input if i.name == "X"))[:2] == ["batch_size", "seq_length"]


def test_a_spec_that_writes_no_form_says_so(gru_cases):
    found = translate(SPECS["directml-fl1_0"], gru_cases[0], {"shape": "dynamic"})
    assert isinstance(found, NotExpressible) and "shape=dynamic" in found.reason


# -- the other inputs ----------------------------------------------------------------------------------

def test_other_shapes_keep_the_program_and_draw_the_feeds_again(gru_cases):
    case = _case(gru_cases, sequence_lens="[4,2,1]")
    found = shapes(case)
    assert len(found) == 2 and (case.shape["seq_length"], case.shape["batch_size"]) not in found
    assert any(b >= 3 for _, b in found)  # a batch where buffers sized for one row show
    s, b = found[0]
    other = at_shape(case, s, b, 0)
    assert other.tensors["X"].shape == (s, b, case.shape["input_size"])
    for name in ("W", "R", "B"):
        assert other.tensors[name] is case.tensors[name]
    lens = other.tensors["sequence_lens"]
    assert lens.shape == (b,) and lens.min() >= 1 and lens.max() == s
    again = at_shape(case, s, b, 0)
    assert np.array_equal(again.tensors["X"], other.tensors["X"])  # deterministic
    x = case.tensors["X"]
    assert other.tensors["X"].min() >= x.min() and other.tensors["X"].max() <= x.max()
    assert other.tensors["X"].dtype == x.dtype
    same = other_values(case, 1)
    assert same.shape == case.shape and not np.array_equal(same.tensors["X"], x)


def test_a_cell_keeps_one_step_and_lengths_are_never_empty():
    cases, _ = load_paths([ROOT / "cases" / "gru" / "cell.yaml"])
    cell = next(c for c in cases if c.valid)
    assert all(s == 1 for s, _ in shapes(cell))
    rng = np.random.default_rng(0)
    for _ in range(50):
        found = lengths(5, 4, rng)
        assert found.min() >= 1 and found.max() == 5


# -- the worker's plans ---------------------------------------------------------------------------------

class Counting:
    """A runtime double for the plan machinery: returns [X summed, the call's number on its handle]."""

    def __init__(self):
        self.loads = 0

    def run(self, model, feeds):
        return self.load(model).run(feeds)

    def load(self, model):
        self.loads += 1
        return _Handle()


class _Handle:
    def __init__(self):
        self.calls = 0

    def run(self, feeds):
        self.calls += 1
        out = feeds["X"].sum(keepdims=True)
        if "h" in feeds:
            out = out + feeds["h"]
        return [out, np.array([self.calls])]


def _arrays(value):
    """What the worker takes for outputs (conformance/isolation/serve.py)."""
    from conformance.isolation.serve import _as_arrays
    return _as_arrays(value)


def test_a_plan_loads_once_for_its_loaded_calls_and_afresh_for_each_fresh_one():
    rt = Counting()
    feeds = [{"X": np.full((2,), k, np.float32)} for k in range(4)]
    answer = execute(rt, Plan([b"m"], feeds, [("fresh", 0, [0]), ("loaded", 0, [1, 2, 3])]), _arrays, lambda r: {})
    assert [c[0] for c in answer.calls] == ["ok"] * 4
    assert rt.loads == 2 and answer.loaded_by == "load"
    assert [int(c[1][1][0]) for c in answer.calls] == [1, 1, 2, 3]  # the loaded calls share one handle


def test_a_chain_feeds_each_step_the_previous_outputs():
    rt = Counting()
    feeds = [{"X": np.ones((1,), np.float32), "h": np.zeros((1,), np.float32)} for _ in range(3)]
    answer = execute(rt, Plan([b"m"], feeds, [("chain", 0, [0, 1, 2], {"h": 0})]), _arrays, lambda r: {})
    assert [float(c[1][0][0]) for c in answer.calls] == [1.0, 2.0, 3.0]


def test_concurrent_calls_all_answer_and_a_refusal_costs_only_its_call():
    class Refuses(Counting):
        def load(self, model):
            handle = super().load(model)
            run = handle.run

            def picky(feeds):
                if feeds["X"][0] == 2:
                    raise ValueError("no twos")
                return run(feeds)
            handle.run = picky
            return handle
    feeds = [{"X": np.full((1,), k, np.float32)} for k in range(5)]
    answer = execute(Refuses(), Plan([b"m"], feeds, [("concurrent", 0, [0, 1, 2, 3, 4], 4)]), _arrays, lambda r: {})
    assert [c[0] for c in answer.calls] == ["ok", "ok", "error", "ok", "ok"]
    assert "no twos" in answer.calls[2][2]


def test_a_runtime_without_load_runs_each_call_and_says_so():
    class RunOnly:
        def run(self, model, feeds):
            return [feeds["X"]]
    feeds = [{"X": np.ones(1, np.float32)}] * 2
    answer = execute(RunOnly(), Plan([b"m"], feeds, [("loaded", 0, [0, 1])]), _arrays, lambda r: {})
    assert answer.loaded_by == "run" and [c[0] for c in answer.calls] == ["ok", "ok"]


def test_what_is_not_outputs_is_garbage_for_that_call():
    class Garbage:
        def run(self, model, feeds):
            return "nothing"
    answer = execute(Garbage(), Plan([b"m"], [{"X": np.ones(1)}], [("fresh", 0, [0])]), _arrays, lambda r: {})
    assert answer.calls[0][0] == "garbage"


# -- the verdicts --------------------------------------------------------------------------------------

def _plan(case, config, translate_to="onnx-14"):
    spec = SPECS[translate_to]
    form = program_form(config)

    def translated(other):
        found = translate(spec, other, form)
        return found.reason if isinstance(found, NotExpressible) else found
    prog = translated(case)
    return pair_forms.build(case, config, translated, prog, lambda p: p.runtime_input())


def _canonical_outputs(call):
    """Outputs of the right shapes (values fixed per input: the same input gives the same values)."""
    case, prog = call.case, call.program
    d = 2 if case.direction == "bidirectional" else 1
    s, b, h = case.shape["seq_length"], case.shape["batch_size"], case.hidden_size
    rng = np.random.default_rng(int(abs(case.tensors["X"]).sum() * 1e6) % 2**31)
    y = rng.uniform(-1, 1, (s, d, b, h)).astype(np.float32)
    return [y if name == "Y" else y[-1] for name in prog.output_names]


def test_a_reused_run_that_differs_from_a_fresh_one_is_a_state_leak(gru_cases):
    case = _case(gru_cases, sequence_lens="full", initial_h="absent")
    pp = _plan(case, "shape=dynamic/session=reused")
    assert pp.calls[0].label.endswith("fresh session") and pp.calls[pp.main].main
    assert [c.case.id for c in pp.calls[1:-1]] != [c.case.id for c in pp.calls[1:-1]][::-1] or len(pp.calls) < 4
    answers = [("ok", _canonical_outputs(c), "") for c in pp.calls]
    same = pair_forms.judge(pp, answers, lambda call, out: ("pass", "", None), "float32")
    assert same.verdict == "pass" and same.extra["same_input"][0]["ulps"] == 0
    leaked = list(answers)
    leaked[pp.main] = ("ok", [o * np.float32(1.001) for o in answers[pp.main][1]], "")
    found = pair_forms.judge(pp, leaked, lambda call, out: ("pass", "", None), "float32")
    assert found.verdict == "state-leak" and "fresh" in found.message
    # the reused run fails the oracle while the fresh one passes: a leak, not a wrong kernel
    found = pair_forms.judge(pp, answers, lambda call, out: ("fail" if call.main else "pass", "off", None), "float32")
    assert found.verdict == "state-leak"


def test_a_variant_that_fails_names_its_shape(gru_cases):
    case = _case(gru_cases, sequence_lens="[4,2,1]")
    pp = _plan(case, "shape=dynamic")
    assert len(pp.calls) == 3 and all(c.judged for c in pp.calls)
    answers = [("ok", _canonical_outputs(c), "") for c in pp.calls]
    found = pair_forms.judge(pp, answers, lambda call, out: ("pass" if call.main else "fail", "Y off", None),
                             "float32")
    assert (found.verdict == "fail" and found.message.startswith("at ")
            and "through the same compiled model" in found.message)
    assert [r["verdict"] for r in found.extra["runs"]] == ["pass", "fail", "fail"]


def test_a_broken_relation_is_inconsistent_and_named(gru_cases):
    """The relations' plan run in this process on the numpy test double (tests/doubles/forms.py): the
    correct one satisfies every relation; one whose batch entries past the first are 2^-19 off breaks
    batch-slice, and only that."""
    from tests.doubles.forms import BatchSliceBreaker, FormsNumpy
    case = _case(gru_cases, direction="bidirectional", sequence_lens="[4,2,1]")
    pp = _plan(case, "relations=on")
    assert {"batch-slice", "truncation", "directions", "layout"} <= {r.name for r, _ in pp.relations}
    passes = lambda call, out: ("pass", "", None)  # noqa: E731 - the oracle's part is not tested here
    ok = pair_forms.judge(pp, execute(FormsNumpy(), pp.plan, _arrays, lambda r: {}).calls, passes, "float32")
    assert ok.verdict == "pass", ok.message
    assert all(r["checked"] and r["ulps"] <= rel.ULPS for r in ok.extra["relations"])
    broken = pair_forms.judge(pp, execute(BatchSliceBreaker(), pp.plan, _arrays, lambda r: {}).calls, passes,
                              "float32")
    assert broken.verdict == "inconsistent" and "batch-slice" in broken.message


def test_the_unrolled_relation_chains_the_states(gru_cases):
    from tests.doubles.forms import FormsNumpy
    case = _case(gru_cases, sequence_lens="full", direction="reverse", initial_h="random")
    pp = _plan(case, "relations=on")
    unrolled = next((r, start) for r, start in pp.relations if r.name == "unrolled")
    assert unrolled[0].chain and len(unrolled[0].cases) == case.shape["seq_length"]
    found = pair_forms.judge(pp, execute(FormsNumpy(), pp.plan, _arrays, lambda r: {}).calls,
                             lambda call, out: ("pass", "", None), "float32")
    checked = {r["relation"]: r for r in found.extra["relations"]}
    assert found.verdict == "pass" and checked["unrolled"]["checked"] and checked["unrolled"]["ulps"] <= rel.ULPS


def test_the_distance_is_in_units_of_the_larger_magnitude():
    a = np.array([1.0, 0.5, 1e-9], np.float32)
    b = a.copy()
    b[2] = 2e-9  # a huge relative change of a tiny value is still a small distance at this scale
    assert rel.distance(a, b, "float32") < 1
    b[0] = np.nextafter(np.float32(1.0), np.float32(2.0))
    assert rel.distance(a, b, "float32") == pytest.approx(1.0)  # one unit at the largest magnitude, 1
    assert rel.distance(np.array([np.nan]), np.array([np.nan]), "float32") == 0
    assert rel.distance(np.array([np.nan]), np.array([1.0]), "float32") == float("inf")


def test_the_representative_slice_covers_every_class(gru_cases):
    from conformance.case.features import features
    chosen = pair_forms.representative(gru_cases)
    assert 0 < len(chosen) < len(gru_cases)
    wanted = {(c.op, c.form, t) for c in gru_cases if c.valid for t in features(c)}
    got = {(c.op, c.form, t) for c in gru_cases if c.id in chosen for t in features(c)}
    assert wanted <= got


# -- selection and the gate ------------------------------------------------------------------------------

def _target(config: str):
    from conformance.runtimes.base import RuntimeRef, Target
    return Target("rt", "1", "CPU", config, "onnx-14", RuntimeRef("x:y"))


def test_config_selects_a_form_and_its_default_and_the_plain_targets():
    from conformance.selection import has_config
    plain, dynamic = _target("precision=pinned"), _target("precision=pinned/shape=dynamic")
    reused = _target("precision=pinned/shape=dynamic/session=reused")
    assert has_config(dynamic, {"shape": "dynamic"}) and has_config(reused, {"shape": "dynamic"})
    assert not has_config(plain, {"shape": "dynamic"})
    assert has_config(plain, {"shape": "static"}) and not has_config(dynamic, {"shape": "static"})
    assert has_config(plain, {"precision": "pinned", "forms": "default"})
    assert not has_config(dynamic, {"forms": "default"})
    assert _target("precision=pinned/shape=dynamic").id == "rt-1/CPU/precision=pinned/shape=dynamic@onnx-14"


def test_a_pair_that_fell_back_is_gated_fallback_whatever_its_verdict():
    from conformance.gate import classify
    for verdict in ("fail", "pass"):
        record = {"verdict": verdict, "fallback": "GRU ran on CPUExecutionProvider, not CUDAExecutionProvider"}
        assert classify(Record.from_dict(record), None)["gate"] == "fallback"


def test_onnxruntime_names_a_node_that_fell_back():
    from conformance.runtimes.onnxruntime import assignment_path
    found = assignment_path([("CUDAExecutionProvider", "Transpose", "t"), ("CPUExecutionProvider", "GRU", "gru0")],
                            "CUDAExecutionProvider")
    assert found["nodes"] == ["GRU gru0: CPU"] and "GRU ran on CPUExecutionProvider" in found["fallback"]
    assert "fallback" not in assignment_path([("CPUExecutionProvider", "GRU", "gru0")], "CPUExecutionProvider")


def test_a_drawn_case_runs_on_the_plain_targets_and_its_forms():
    import dataclasses

    from conformance.fuzz.examiner import runs_in
    cases, _ = load_paths([ROOT / "cases" / "gru" / "basic.yaml"])
    case = dataclasses.replace(cases[0], params={"execution": "shape=dynamic"})
    assert runs_in(_target("default"), case) and runs_in(_target("precision=pinned"), case)
    assert runs_in(_target("precision=pinned/shape=dynamic"), case)
    assert not runs_in(_target("precision=pinned/weights=inputs"), case)
    assert not runs_in(_target("shape=dynamic"), cases[0])  # a corpus case: the plain targets only


def test_a_plan_scheduled_after_its_variants_oracle_result_went_asks_for_it_again(tmp_path):
    """A plan's other inputs (the case at other shapes) share one oracle result per case and semantics,
    dropped once every plan then waiting on it is judged. The engine makes a case's plans lazily, one
    target at a time, so a plan of another target can come after that: it must ask for the result
    again, or its pair waits for ever and has no record (seen before this test: 3 to 15 pairs of a
    run of `-k "basic or cell"` missing on OpenVINO's shape=dynamic targets). The judgement's state is the
    real one (conformance/run/judging/state.py), and so are the plans, the case and its translation; what the
    engine lends is a test double (its oracle jobs are tuples, nothing is settled)."""
    from types import SimpleNamespace

    from conformance.isolation.jobs import Outcome
    from conformance.run.judging import JudgeState, Policy
    from conformance.run.planned import Planned
    from conformance.run.scheduling import Scheduling
    from conformance.runtimes.base import RuntimeRef, Target
    from conformance.specs import SPECS, translate

    case = next(c for c in load_paths([ROOT / "cases" / "rnn" / "basic.yaml"])[0] if c.valid)
    state = JudgeState()
    lent = Scheduling(cases=[case], timeout=1.0, programs=SimpleNamespace(folder=lambda case: tmp_path),
                      oracle_job=lambda okey, other, profile: ("oracle", okey), run_job=None, settle=None,
                      record=None, spent=lambda *a: None, receive=None, submit=None)
    planned = Planned(state, Policy(), lent)
    spec = SPECS["onnx-14"]
    prog = translate(spec, case, {"shape": "dynamic"})
    first, later = (Target("double", "1", "CPU", config, "onnx-14", RuntimeRef("x:y"))
                    for config in ("shape=dynamic", "shape=dynamic/session=reused"))
    asked = [job[1] for job in planned.jobs(0, case, first, prog) if isinstance(job, tuple)]
    assert asked, "a shape=dynamic plan judges the case at other shapes"
    for okey in asked:   # the results arrive, the first plan is judged and lets them go
        state.oracle[okey] = Outcome(("oracle", okey), "ok", None)
        planned.oracle_in(okey)
        state.release(okey)
    assert not state.oracle
    again = [job[1] for job in planned.jobs(0, case, later, prog) if isinstance(job, tuple)]
    assert sorted(again, key=str) == sorted(asked, key=str)
