"""The test doubles of torch's CUDA kernels (tests/doubles/torch_kernels.py) against eager torch and through
the suite: the correct double computes what torch.nn computes on every valid program the torch spec writes
and refuses every invalid one, and as a runtime plugin of the torch spec (format "torch") it passes a
sample of the corpus where the deliberately wrong one fails.

The whole corpus through the suite: tests/corpus/test_torch_kernels.py; the doubles themselves (the
activations' errors, the sticky CUDA error): tests/unit/test_torch_kernels.py."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import tests.doubles.torch_kernels as kernels
from conformance.case import load_paths
from conformance.run import read_results
from conformance.specs import SPECS, NotExpressible
from tests.conftest import ROOT, conformance, runtime

torch = runtime("torch")

#: how close the double and eager torch on the CPU must be, relative and absolute, per dtype: float32 as
#: tests/runtime/test_torch.py's AGREEMENT (two float32 implementations of the same formulas), float64 a few
#: thousand float64 ulps, float16 and bfloat16 two ulps of their type (the double keeps the gates in float32)
AGREEMENT = {"float32": 1e-5, "float64": 1e-12, "float16": 2.0 ** -9, "bfloat16": 2.0 ** -6}


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """(case, model path, feeds) of every torch program of the corpus."""
    cases, errors = load_paths([ROOT / "cases"])
    assert not errors, errors[:3]
    root, found = tmp_path_factory.mktemp("torch-programs"), []
    for i, case in enumerate(cases):
        prog = SPECS["torch"].translate(case)
        if isinstance(prog, NotExpressible):
            continue
        folder = root / str(i)
        folder.mkdir()
        SPECS["torch"].write(prog, folder)
        found.append((case, prog.runtime_input(), prog.feeds))
    return found


def test_the_correct_double_computes_what_eager_torch_does_on_every_valid_program(programs):
    from conformance.runtimes.torch import TorchRuntime
    eager, double = TorchRuntime("CPU"), kernels.Exact()
    compared, disagree = Counter(), []
    for case, model, feeds in programs:
        if not case.valid:
            continue
        expected, got = eager.run(model, feeds), double.run(model, feeds)
        tolerance = AGREEMENT[case.dtype]
        for name, e, g in zip(("output", "h_n", "c_n"), expected, got):
            if g.shape != e.shape or g.dtype != e.dtype:
                disagree.append(f"{case.id}: {name} {g.dtype}{list(g.shape)}, torch gives {e.dtype}{list(e.shape)}")
            elif not np.allclose(g.astype(np.float64), e.astype(np.float64), rtol=tolerance, atol=tolerance,
                                 equal_nan=True):
                worst = float(np.nanmax(np.abs(g.astype(np.float64) - e.astype(np.float64))))
                disagree.append(f"{case.id}: {name} differs from torch's by up to {worst:.3g} (> {tolerance:g})")
        compared[case.dtype] += 1
    assert not disagree, f"{len(disagree)} disagreements:\n" + "\n".join(disagree[:20])
    assert compared["float32"] >= 380 and sum(compared.values()) >= 415, compared


def test_the_correct_double_refuses_every_invalid_program(programs):
    """Every invalid case the torch spec writes, those torch itself accepts (cases/regressions/*-torch-
    accepted-invalid-*) or crashes on (*-torch-crash-*) included: torch's own checks, all applied."""
    double, accepted, refused = kernels.Exact(), [], 0
    for case, model, feeds in programs:
        if case.valid:
            continue
        try:
            double.run(model, feeds)
            accepted.append(f"{case.id}: ran it ({case.violates})")
        except (RuntimeError, ValueError):
            refused += 1
    assert not accepted and refused >= 100, "\n".join(accepted)


#: a sample of the torch corpus: stacked projected LSTMs packed and batch-first with and without bias,
#: unbatched input, GRU cells, and the LSTMs that crash torch on the CPU
SAMPLE = "torch/combinations or torch/unbatched or gru/cell or torch-crash"


def test_as_plugins_of_the_torch_spec_the_correct_double_passes_and_the_wrong_one_fails(tmp_path):
    out = tmp_path / "out"
    doubles = (kernels.Exact, kernels.TanhOff1Pct, kernels.Tf32)
    plugins = [a for cls in doubles for a in ("--runtime-plugin", f"tests.doubles.torch_kernels:{cls.__name__}",
                                              "--runtime", cls.name)]
    proc = conformance("run", "cases", "-k", SAMPLE, "--spec", "torch", *plugins, "--no-ablation",
                       "--no-expectations", "--jobs", "2", "--out", out, "-q", "--artifacts", "full")
    records = [r for r in read_results(out / "results.jsonl") if r["verdict"] != "not-expressible"]
    by = {cls: [r for r in records if r["runtime"] == cls.name] for cls in doubles}
    shown = proc.stdout[-2000:] + proc.stderr[-2000:]
    assert all(len(rows) >= 25 for rows in by.values()), ({cls.name: len(rows) for cls, rows in by.items()}, shown)
    assert all(r["verdict"] == "pass" for r in by[kernels.Exact]), Counter(r["verdict"] for r in by[kernels.Exact])
    valid = [r for r in by[kernels.TanhOff1Pct] if r["expect"] == "valid"]
    assert all(r["verdict"] == "fail" for r in valid), Counter(r["verdict"] for r in valid)
    assert all(r["verdict"] == "pass" for r in by[kernels.TanhOff1Pct] if r["expect"] == "invalid")
    assert all("precision=default→tf32" in r["target"] for r in by[kernels.Tf32]), by[kernels.Tf32][0]["target"]
    # TF32 fails the float32 spec bound and is within its declared precision wherever that is judged
    judged = [r["declared"]["verdict"] for r in by[kernels.Tf32] if r["expect"] == "valid" and r.get("declared")]
    assert judged and "fail" not in judged, Counter(judged)
