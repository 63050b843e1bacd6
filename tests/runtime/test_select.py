"""Target selection on the command line (conformance/selection.py).

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_select.py."""


def test_a_misspelt_runtime_on_the_command_line_names_the_closest(tmp_path):
    from tests.conftest import DATA, conformance
    proc = conformance("run", DATA / "cases", "--runtime", "onnxrutime", "--no-entry-points", "--out", tmp_path, "-q",
                       check=2)
    assert "did you mean 'onnxruntime'?" in proc.stderr and "Runtimes:" in proc.stderr
    proc = conformance("run", DATA / "cases", "--config", "pinned", "--out", tmp_path, "-q", check=2)
    assert "expected KEY=VALUE" in proc.stderr
