"""The differential fuzzer (conformance/fuzz).

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_fuzz.py."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings

from conformance.case import load_paths
from conformance.case.load import load_document
from conformance.case.vocabulary import ATTRIBUTE
from conformance.case.yamlio import load_yaml
from conformance.fuzz.campaign import Campaign, CampaignConfig
from conformance.fuzz.mutations import broken_constraints, expected_constraint
from conformance.fuzz.reproducer import case_document, render
from conformance.fuzz.scope import Limits, Scope
from conformance.fuzz.session import parse_budget
from conformance.fuzz.signature import case_tokens
from conformance.fuzz.strategies import invalid_cases, valid_cases
from conformance.specs import SPECS, NotExpressible, translate

STRATEGY_SETTINGS = settings(max_examples=80, deadline=None, database=None,
                             suppress_health_check=list(HealthCheck))


FINDING = {"target": "x/CPU@onnx-22", "verdict": "fail", "signature": "x/CPU@onnx|fail|GRU|plain", "seed": 1}


def read_back(case, expect=None, finding=FINDING):
    """The case through the case-file writer and the real loader (schema, validator, builder)."""
    doc = case_document(case, ["ONNX test clause"], "drawn by the fuzzer's strategies", finding)
    if expect:
        doc["expect"] = expect
        doc.pop("violates", None)
    text = render(doc, ["a header comment"])
    return load_document(load_yaml(text, "cases/regressions/drawn.yaml"), Path("cases/regressions/drawn.yaml"))


@STRATEGY_SETTINGS
@given(valid_cases())
def test_valid_cases_pass_the_validator_and_translate_checker_clean_at_opset_22(case):
    assert case.valid and broken_constraints(case) == [], case.describe()
    loaded, errors = read_back(case)
    assert not errors, [str(e) for e in errors]
    assert loaded[0].digest == case.digest, "the case file must reproduce the drawn case bit for bit"
    for name, arr in case.tensors.items():
        assert arr.dtype == (np.int32 if name == "sequence_lens" else loaded[0].tensors[name].dtype)
    # through the entry every run takes (conformance.specs.translate): torch.nn's own axes, which no
    # ONNX node has, are not expressible there and never reach the node
    program = translate(SPECS["onnx-22"], case)
    framework = [k for k in case.attributes if "onnx" not in ATTRIBUTE[k].families]
    if framework:
        assert isinstance(program, NotExpressible) and repr(framework[0]) in program.reason, case.describe()
    if isinstance(program, NotExpressible):
        assert program.reason
    else:
        onnx.checker.check_model(onnx.load_from_string(program.model), full_check=True)
        assert not [n for n in program.notes if "checker" in n]


@STRATEGY_SETTINGS
@given(invalid_cases())
def test_invalid_cases_break_exactly_one_constraint(case):
    assert case.expect == "invalid" and case.violates
    assert broken_constraints(case) == [expected_constraint(case)], case.params
    loaded, errors = read_back(case)
    assert not errors and loaded[0].digest == case.digest
    assert f"violates={expected_constraint(case)}" in case_tokens(case)
    # the suite's own validator agrees: read as a valid case, the same file is refused
    _, as_valid = read_back(case, expect="valid")
    assert as_valid, f"the validator accepted a case that breaks {expected_constraint(case)}"


def test_draws_are_labelled_and_recorded_on_the_case():
    seen = []

    @settings(max_examples=20, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(valid_cases(Scope(ops=("LSTM",))))
    def check(case):
        seen.append(case)
        for label in ("op", "form", "direction", "dtype", "activations", "clip", "input_forget", "B",
                      "sequence_lens", "initial_c", "P", "seq_length", "batch_size", "input_size",
                      "hidden_size", "X.style", "X.seed", "W.overrides"):
            assert label in case.params
        assert case.params["op"] == "LSTM"
        assert re.fullmatch(r"fuzz/lstm-[0-9a-f]{10}(\[.*\])?", case.id)

    check()
    assert seen


def test_each_labelled_draw_reuses_one_strategy_object_across_cases():
    """Hypothesis validates a strategy and works out its properties on the object's first draw,
    which cost as much again as the draw: the builder reuses one object per label and argument
    (docs/speed.md, "The fuzzer"). Two cases of the same shapes draw every label from the same
    objects."""
    from hypothesis import strategies as st

    from conformance.fuzz.strategies import draw_case
    used: list = []

    @settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        scope = Scope(ops=("GRU",), limits=dataclasses.replace(Scope().limits, max_seq_length=1, max_batch_size=1,
                                                               max_input_size=1, max_hidden_size=1))
        for _ in range(2):
            seen: dict = {}

            def draw(strategy, label, seen=seen):
                seen.setdefault(label, strategy)
                return data.draw(strategy)
            draw_case(draw, scope)
            used.append(seen)

    check()
    assert len(used) >= 2
    first = used[0]
    for later in used[1:]:
        # a mutation's draws depend on the case it breaks; overrides on the dtype's special values
        shared = {label for label in set(first) & set(later)
                  if not label.startswith("mutation") and not label.endswith(".overrides")}
        assert {"op", "dtype", "clip.value", "X.seed", "X.style", "sequence_lens.values",
                "activation_alpha.values", "hidden_size"} <= shared
        assert all(first[label] is later[label] for label in shared), [
            label for label in shared if first[label] is not later[label]]


#: the first drawn case that has what a test looks for: generation only (no shrinking), the same cases at
#: every run (derandomize), and a bound on their count
FIRST_FOUND = settings(max_examples=300, phases=[Phase.generate], derandomize=True, database=None, deadline=None,
                       suppress_health_check=list(HealthCheck))
#: small sizes: cheap cases, and room for unbatched (one batch entry) and a projection (proj_size < hidden_size)
SMALL = Limits(max_seq_length=2, max_batch_size=1, max_input_size=2, max_hidden_size=3)


def test_every_attribute_of_the_table_is_drawn():
    """The fuzzer reads its attributes from the attribute table (conformance/fuzz/attributes.py): every row
    is drawn, from its row or by the strategies' own code, and some drawn case of an op and form that own
    it gives it (torch.nn's axes where the campaign reads torch programs)."""
    from conformance.case.vocabulary import ATTRIBUTE_TABLE, SPEC_FAMILIES
    from conformance.fuzz import attributes

    common, partial = attributes.rows_drawn(Scope(framework=True))
    assert [a.name for a in ATTRIBUTE_TABLE if a.name not in attributes.OWN_DRAWS] == [a.name for a in common + partial]
    assert all(set(a.families) <= set(SPEC_FAMILIES) for a in ATTRIBUTE_TABLE)
    assert attributes.rows_drawn(Scope())[1] == ()   # torch's axes only where a target reads torch programs
    for row in ATTRIBUTE_TABLE:
        scope = Scope(ops=row.ops, forms=row.forms, limits=SMALL, framework=True, valid_weight=1, invalid_weight=0)
        case = find(valid_cases(scope), lambda c, name=row.name: name in c.attributes, settings=FIRST_FOUND)
        value = case.attributes[row.name]
        assert row.values is None or value in row.values, (row.name, value)
        assert row.span is None or row.span[0] <= value <= row.span[1], (row.name, value)


def test_a_row_added_to_the_attribute_table_is_drawn_for_the_ops_that_own_it(monkeypatch):
    """docs/extending.md's zoneout, a float in [0, 1) that ONNX's LSTM gains: its row is all the fuzzer
    needs. Only ONNX knows it, so it is drawn in the share of cases that give such attributes."""
    from conformance.case import vocabulary
    from conformance.fuzz import attributes

    row = vocabulary.Attribute("zoneout", {"type": "number"}, ops=("LSTM",), since=26, families=("onnx",),
                               default=0.0, span=(0.0, 0.9))
    monkeypatch.setattr(vocabulary, "ATTRIBUTE_TABLE", (*vocabulary.ATTRIBUTE_TABLE, row))
    monkeypatch.setitem(vocabulary.ATTRIBUTE, "zoneout", row)
    assert row in attributes.rows_drawn(Scope())[1]
    scope = Scope(ops=("LSTM",), limits=SMALL, valid_weight=1, invalid_weight=0)
    # peepholes stay: only a case torch alone expresses drops them (torch.nn.LSTM has none)
    case = find(valid_cases(scope), lambda c: "zoneout" in c.attributes and "P" in c.tensors, settings=FIRST_FOUND)
    zoneout = case.attributes["zoneout"]
    assert 0 < zoneout <= 0.9 and float(np.float32(zoneout)) == zoneout
    drawn = [(row, 0.25)]
    assert attributes.kept("GRU", "sequence", {"hidden_size": 2}, {"batch_size": 1}, drawn) == {}
    assert attributes.kept("LSTM", "cell", {"hidden_size": 2}, {"batch_size": 1}, drawn) == {"zoneout": 0.25}


def test_a_row_the_fuzzer_cannot_draw_says_so():
    from conformance.case.vocabulary import Attribute
    from conformance.fuzz import attributes
    with pytest.raises(attributes.NotDrawable, match="'zoneout' has no values, examples or span"):
        attributes.draw(lambda strategy, label: pytest.fail("nothing to draw"),
                        [Attribute("zoneout", {"type": "number"})])


def test_budget_parsing():
    assert parse_budget("90s") == 90 and parse_budget("10m") == 600 and parse_budget("1h") == 3600
    assert parse_budget("1h30m") == 5400 and parse_budget("45") == 45
    for bad in ("ten minutes", "10x", "0s", ""):
        with pytest.raises(ValueError):
            parse_budget(bad)


def test_schema_accepts_a_finding_and_names_a_wrong_key_with_its_line(tmp_path):
    good = tmp_path / "cases" / "regressions" / "f.yaml"
    good.parent.mkdir(parents=True)
    body = textwrap.dedent("""\
        op: RNN
        attributes: {hidden_size: 1}
        shape: {seq_length: 1, batch_size: 1, input_size: 1}
        finding:
          target: x-1/CPU@onnx-22
          verdict: fail
          signature: x/CPU@onnx|fail|RNN|plain
          seed: 3
        """)
    good.write_text(body)
    cases, errors = load_paths([good])
    assert not errors and cases[0].id == "regressions/f"
    bad = good.with_name("g.yaml")
    bad.write_text(body + "  colour: red\n")
    _, errors = load_paths([bad])
    assert len(errors) == 1 and "finding.colour" in str(errors[0]) and f"{bad}:9" in str(errors[0])


def test_a_finding_that_needs_fewer_features_supersedes_one_of_the_same_origin(tmp_path):
    import dataclasses
    import time

    from conformance.fuzz.finding import Finding
    from conformance.fuzz.signature import origin
    from conformance.results import Record
    cases, _ = load_paths([Path(__file__).parents[2] / "cases" / "gru" / "basic.yaml"])
    with_b = next(c for c in cases if "B" in c.tensors and "initial_h" not in c.tensors)
    plain = dataclasses.replace(with_b, tensors={k: v for k, v in with_b.tensors.items() if k != "B"})
    record = Record.from_dict({"target": "x-1/CPU@onnx-22", "runtime": "x", "device": "CPU", "config": "default",
                               "spec": "onnx-22", "verdict": "fail",
                               "message": "Y[0] = 1, but should be within 0 … 0.5"})
    campaign = Campaign(CampaignConfig(targets=[], out_dir=tmp_path / "found"))
    campaign._start = time.monotonic()
    findings = [Finding(origin(record, c), case_tokens(c), c, [record]) for c in (with_b, plain)]
    assert findings[0].tokens == findings[1].tokens | {"B"}
    campaign._write(findings[0])
    campaign._write(findings[1])
    assert [w.signature for w in campaign.result.written] == [findings[1].signature]
    assert [p.name for p in (tmp_path / "found").iterdir()] == [campaign.result.written[0].path.name]
    assert campaign.result.superseded and campaign.result.superseded[0][2] is True
    campaign._write(findings[0])            # the more specific one is now covered: nothing written
    assert len(list((tmp_path / "found").iterdir())) == 1


def test_the_quick_start_environment_has_what_the_fuzzer_needs_and_findings_stay_out_of_the_corpus():
    import tomllib

    from conformance.cli.fuzz import fuzz_command
    root = Path(__file__).parents[2]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("hypothesis") for r in extras["runtimes"]), "nox -s conformance installs .[runtimes]"
    assert 'install(session, "runtimes")' in (root / "noxfile.py").read_text()
    assert re.search(r"^hypothesis==", (root / "constraints.txt").read_text(), re.M)
    defaults = {p.name: p.default for p in fuzz_command.params}
    assert defaults["out_dir"] == Path("reports/fuzz") and "keep" in defaults
    assert defaults["regressions"] == Path("cases/regressions")


def test_keep_copies_a_finding_and_its_repro_names_the_copy(tmp_path, monkeypatch):
    from conformance.fuzz.reproducer import keep
    monkeypatch.chdir(tmp_path)
    source = Path(__file__).parents[2] / "cases" / "regressions" / "gru-onnxruntime-fail-96698945.yaml"
    out = tmp_path / "reports" / "fuzz"
    out.mkdir(parents=True)
    text = source.read_text().replace("cases/regressions/", "reports/fuzz/")
    (out / source.name).write_text(text)
    (copy,) = keep([out / source.name], tmp_path / "cases" / "regressions")
    kept = copy.read_text()
    assert "reports/fuzz/" not in kept and kept.count(f"conformance run cases/regressions/{source.name}") == 2
    cases, errors = load_paths([copy])
    assert not errors and len(cases) == 1
