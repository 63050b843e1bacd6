"""Case files: file:line errors, one bad file does not stop the others, matrix ids, tensors."""

from pathlib import Path

from conformance.case import load_paths


def test_every_corpus_file_loads_without_error():
    corpus = Path(__file__).parents[2] / "cases"
    cases, errors = load_paths([corpus])
    assert errors == [], "\n".join(map(str, errors))
    assert len(cases) >= 300
    assert {c.op for c in cases} == {"RNN", "GRU", "LSTM"}
    assert any(c.expect == "invalid" for c in cases)
