"""Expectations entries that know runtime versions (`versions`, a PEP 440 specifier set).

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_gate_versions.py."""

import textwrap

from tests.conftest import DATA, conformance


def test_cli_run_with_a_malformed_versions_exits_2(tmp_path):
    exp = tmp_path / "expect.yaml"
    exp.write_text(textwrap.dedent("""\
        targets: "*"
        entries:
          - cases: "gru/*"
            versions: ">=1.20,,<1.29 x"
            kind: known-bug
            reason: r
        """))
    proc = conformance("run", DATA / "cases", "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", tmp_path / "o",
                       "--expectations", exp, "-q", check=2)
    assert f"{exp}:4: versions '>=1.20,,<1.29 x' is not a PEP 440 specifier set" in proc.stderr
    assert not (tmp_path / "o" / "results.jsonl").exists()
