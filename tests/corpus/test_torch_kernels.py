"""The test doubles of torch's CUDA kernels (tests/doubles/torch_kernels.py) on the whole corpus at the
torch spec, through the real CLI: the correct double passes the float32 spec bound on every valid pair
and rejects every invalid one (proof that it implements every program the torch spec writes), the
deliberately wrong tanh fails every float32 pair that computes a tanh, and the TF32 kernel stays within
its declared precision wherever the declared judgement is made.

The other tiers: tests/runtime/test_torch_kernels.py (eager torch, a sample through the suite),
tests/unit/test_torch_kernels.py (the doubles themselves)."""

from __future__ import annotations

from collections import Counter

import pytest

import tests.doubles.torch_kernels as kernels
from conformance.case import load_paths
from conformance.case.vocabulary import canonical_activation
from conformance.run import read_results
from tests.conftest import ROOT, conformance

#: every double but StickyCuda, whose one poisoned worker answers every later pair with its error (the
#: suite's soundness check is what must notice it; tests/unit/test_torch_kernels.py tests the double)
DOUBLES = tuple(cls for cls in kernels.DOUBLES if cls is not kernels.StickyCuda)


def uses_tanh(case) -> bool:
    names = case.attributes.get("activations")
    return case.op != "RNN" or not names or canonical_activation(names[0]) != "Relu"


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict:
    """{double: [(case, record)]} of one CLI run of every double on the corpus at the torch spec."""
    cases, errors = load_paths([ROOT / "cases"])
    assert not errors, errors[:3]
    by_id = {c.id: c for c in cases}
    out = tmp_path_factory.mktemp("torch-kernels") / "out"
    plugins = [a for cls in DOUBLES for a in ("--runtime-plugin", f"tests.doubles.torch_kernels:{cls.__name__}",
                                              "--runtime", cls.name)]
    proc = conformance("run", "cases", "--spec", "torch", *plugins, "--no-ablation", "--no-expectations",
                       "--jobs", "2", "--out", out, "-q", "--artifacts", "full", timeout=1800)
    records = [r for r in read_results(out / "results.jsonl") if r["verdict"] != "not-expressible"]
    found: dict = {cls: [] for cls in DOUBLES}
    names = {cls.name: cls for cls in DOUBLES}
    for r in records:
        found[names[r["runtime"]]].append((by_id[r["case"]], r))
    assert all(len(rows) > 500 for rows in found.values()), (Counter(r["runtime"] for r in records),
                                                             proc.stdout[-2000:] + proc.stderr[-2000:])
    return found


def test_the_correct_double_passes_every_valid_pair_and_rejects_every_invalid_one(verdicts):
    rows = verdicts[kernels.Exact]
    valid = [r for c, r in rows if c.valid]
    assert len(valid) >= 415 and all(r["verdict"] == "pass" for r in valid), Counter(r["verdict"] for r in valid)
    assert max(r["ratio"] for r in valid) < 0.5  # measured: median 2.5 %, at most 21 % of the allowed error
    invalid = [r for c, r in rows if not c.valid]
    assert len(invalid) >= 100 and all(r["verdict"] == "pass" for r in invalid), Counter(r["verdict"] for r in invalid)


def test_every_double_runs_every_valid_pair_and_rejects_every_invalid_one(verdicts):
    for cls, rows in verdicts.items():
        invalid = Counter(r["verdict"] for c, r in rows if not c.valid)
        assert set(invalid) == {"pass"}, (cls.__name__, invalid)  # each one rejected
        assert not [r for c, r in rows if c.valid and r["verdict"] not in ("pass", "fail")], cls.__name__


def test_a_tanh_one_percent_off_fails_every_float32_pair_that_computes_a_tanh(verdicts):
    """tanh × 1.01 against the float32 spec bound: measured, 370 of the 370 valid float32 pairs that
    compute a tanh fail (every RNN tanh, GRU and LSTM pair); the Relu RNNs and the other dtypes pass."""
    rows = [(c, r) for c, r in verdicts[kernels.TanhOff1Pct] if c.valid]
    affected = [r for c, r in rows if c.dtype == "float32" and uses_tanh(c)]
    failing = [r for r in affected if r["verdict"] == "fail"]
    assert len(affected) >= 360 and len(failing) >= 0.95 * len(affected), (len(failing), len(affected))
    assert all(r["verdict"] == "pass" for c, r in rows if c.dtype != "float32" or not uses_tanh(c))


def test_tf32_is_within_its_declared_precision_and_a_wrong_tanh_in_tf32_is_not(verdicts):
    """The declared judgement (docs/precision.md, "Reduced-precision kernels") of the TF32 doubles'
    float32 pairs, where it is made (not yet for stacked layers: the oracle's TF32 model is one layer's):
    the TF32 kernel passes every pair, its tanh × 1.01 fails most (measured 288 of 294)."""
    def declared(cls):
        return Counter(r["declared"]["verdict"] for c, r in verdicts[cls] if c.valid and r.get("declared"))
    tf32, wrong = declared(kernels.Tf32), declared(kernels.TanhOff1PctTf32)
    assert tf32["pass"] >= 290 and tf32["fail"] == 0, tf32
    assert wrong["fail"] >= 0.9 * (wrong["fail"] + wrong["pass"]), wrong
