"""torch.nn's own axes (docs/framework.md).

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_framework.py."""

from __future__ import annotations

from conformance.case.load import load_paths


def test_torch_spellings_read_as_the_case_formats_and_conflicts_are_errors(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("op: LSTM\nattributes: {hidden_size: 3, batch_first: true, bias: false, packed: true}\n"
                    "shape: {seq_length: 3, batch_size: 2, input_size: 2}\ninputs: {sequence_lens: [3, 1]}\n")
    [case], errors = load_paths([good])
    assert not errors
    assert case.layout == 1 and "B" not in case.tensors and list(case.tensors["sequence_lens"]) == [3, 1]
    assert any("batch_first: true read as layout: 1" in n for n in case.notes)
    bad = tmp_path / "bad.yaml"
    bad.write_text("op: LSTM\nattributes: {hidden_size: 3, batch_first: true, layout: 0, packed: true}\n"
                   "shape: {seq_length: 3, batch_size: 2, input_size: 2}\n")
    cases, errors = load_paths([bad])
    assert not cases and len(errors) == 2
    text = " ".join(str(e) for e in errors)
    assert "bad.yaml:2" in text and "layout is 0" in text and "sequence_lens is absent" in text


def test_the_frameworks_axes_are_checked_with_their_lines(tmp_path):
    bad = tmp_path / "axes.yaml"
    bad.write_text("op: LSTM\nattributes:\n  hidden_size: 3\n  proj_size: 3\n  unbatched: 1\n"
                   "shape: {seq_length: 3, batch_size: 2, input_size: 2}\n")
    _, errors = load_paths([bad])
    said = {e.key: str(e) for e in errors}
    assert "axes.yaml:4" in said["attributes.proj_size"] and "hidden_size" in said["attributes.proj_size"]
    assert "axes.yaml:5" in said["attributes.unbatched"] and "batch_size must be 1" in said["attributes.unbatched"]
