"""Case files.

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/unit/test_case_loading.py."""

from pathlib import Path

from conformance.case import load_paths


def test_every_corpus_file_loads_without_error():
    corpus = Path(__file__).parents[2] / "cases"
    cases, errors = load_paths([corpus])
    assert errors == [], "\n".join(map(str, errors))
    assert len(cases) >= 300
    assert {c.op for c in cases} == {"RNN", "GRU", "LSTM"}
    assert any(c.expect == "invalid" for c in cases)
