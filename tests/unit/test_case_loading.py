"""Case files: file:line errors, one bad file does not stop the others, matrix ids, tensors.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_case_loading.py."""

import json
import shutil

import jsonschema
import numpy as np
import pytest
import yaml

from conformance.case import SCHEMA, load_file, load_paths
from tests.conftest import DATA


def test_syntax_error_reports_file_and_line_and_other_files_still_load(tmp_path):
    shutil.copytree(DATA / "cases", tmp_path / "cases")
    shutil.copy(DATA / "bad" / "broken.yaml", tmp_path / "cases" / "gru" / "broken.yaml")
    cases, errors = load_paths([tmp_path / "cases"])
    assert len(errors) == 1
    err = str(errors[0])
    assert err.startswith(f"{tmp_path / 'cases' / 'gru' / 'broken.yaml'}:4:"), err
    assert "YAML syntax error" in err
    assert {c.id for c in cases} == {"gru/small[direction=forward]", "gru/small[direction=reverse]",
                                     "gru/invalid_w"}


def test_unknown_attribute_points_at_its_line_with_a_hint():
    cases, errors = load_file(DATA / "bad" / "unknown_key.yaml")
    assert cases == []
    (err,) = errors
    assert err.where.line == 5 and err.key == "attributes.peepholes"
    assert "unknown key 'peepholes'" in str(err) and "Consider one of the known keys" in str(err)


def test_shape_mismatch_fails_only_its_matrix_combination():
    cases, errors = load_file(DATA / "bad" / "shape_mismatch.yaml")
    # W [1, 3, 2] is wrong for both directions (should be [1,2,2] / [2,2,2]); each combination errs
    assert cases == []
    assert len(errors) == 2
    assert all(e.where.line == 7 and e.key == "inputs.W" for e in errors)
    assert "should be [2, 2, 2]" in str(errors[1]) and "direction=bidirectional" in str(errors[1])


def test_a_wrong_shape_is_refused_whatever_activations_the_case_lists(tmp_path):
    """The shape check reads the op's input names, not the activations' (a case listing its
    activations once had its literal W of the wrong shape accepted)."""
    (tmp_path / "w.yaml").write_text(
        "op: RNN\nattributes: {hidden_size: 1, direction: forward, activations: [Tanh]}\n"
        "shape: {seq_length: 1, batch_size: 1, input_size: 1}\n"
        "inputs:\n  X: [[[0.75]]]\n  W: [[[0.75]], [[0.75]]]\n  R: [[[0.75]]]\n")
    cases, (err,) = load_file(tmp_path / "w.yaml")
    assert cases == [] and err.key == "inputs.W" and err.where.line == 6
    assert "W has shape [2, 1, 1] but should be [1, 1, 1]" in str(err)

def test_matrix_expands_to_stable_readable_ids():
    cases, errors = load_file(DATA / "cases" / "gru" / "small.yaml")
    assert not errors
    assert [c.id for c in cases] == ["gru/small[direction=forward]", "gru/small[direction=reverse]"]
    again, _ = load_file(DATA / "cases" / "gru" / "small.yaml")
    assert [c.digest for c in cases] == [c.digest for c in again]


def test_tensors_depend_on_seed_and_name_only_and_are_exact_in_dtype():
    cases, _ = load_file(DATA / "cases" / "gru" / "small.yaml")
    fwd, rev = cases
    np.testing.assert_array_equal(fwd.tensors["X"], rev.tensors["X"])
    assert not np.array_equal(fwd.tensors["W"][0, :2], fwd.tensors["R"][0, :2])
    assert fwd.tensors["W"].dtype == np.float32 and fwd.tensors["W"].shape == (1, 9, 2)
    assert "sequence_lens" not in fwd.tensors and "B" in fwd.tensors


def test_invalid_case_keeps_its_wrong_shape_and_reason():
    (case,), errors = load_file(DATA / "cases" / "gru" / "invalid_w.yaml")
    assert not errors
    assert case.expect == "invalid" and case.tensors["W"].shape == (1, 12, 2)
    assert "3*hidden_size" in case.violates


def test_invalid_case_without_reason_is_an_error(tmp_path):
    doc = yaml.safe_load((DATA / "cases" / "gru" / "invalid_w.yaml").read_text())
    del doc["violates"]
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(doc))
    cases, (err,) = load_file(tmp_path / "x.yaml")
    assert not cases and "must say which constraint" in str(err)


def test_bidirectional_single_activation_set_is_repeated_and_noted(tmp_path):
    (tmp_path / "a.yaml").write_text(
        "op: GRU\nclause: c\nattributes: {hidden_size: 2, direction: bidirectional, activations: [HardSigmoid, Tanh]}\n"
        "shape: {seq_length: 1, batch_size: 1, input_size: 1}\n")
    (case,), errors = load_file(tmp_path / "a.yaml")
    assert not errors
    assert case.attributes["activations"] == ["HardSigmoid", "Tanh", "HardSigmoid", "Tanh"]
    assert "for the reverse direction" in case.notes[0]


def test_schema_is_valid_and_accepts_the_example_of_the_design_doc():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    example = yaml.safe_load((DATA / "cases" / "gru" / "small.yaml").read_text())
    jsonschema.validate(example, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**example, "op": "Transformer"}, SCHEMA)
    json.dumps(SCHEMA)


