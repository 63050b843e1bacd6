"""`conformance bugreport`: a report folder is written only when its repro.py reproduces the divergence
outside the suite; `--expectation` drafts the entry that covers a cluster.

The runtimes are the deliberate test doubles of tests/doubles/bugreport.py (onnxruntime with a known
gate-order bug everywhere, or only inside the suite's worker); the reports of the real runtimes'
clusters are made by `conformance bugreport RESULTS --all` (docs/bugreports.md).

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_bugreport.py."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, conformance

CASE = ["cases/gru/basic.yaml", "-k", "gru/basic[direction=forward,B=random,initial_h=random]"]
SWAPPED = "tests.doubles.bugreport:SwappedGateGRU"
SUITE_ONLY = "tests.doubles.bugreport:SuiteOnlyGRU"


def _run(tmp_path: Path, plugin: str, runtime: str) -> Path:
    out = tmp_path / "run"
    conformance("run", *CASE, "--runtime-plugin", plugin, "--runtime", runtime, "--spec", "onnx-14",
                "--out", out, "-q", check=1)
    clusters = json.loads((out / "clusters.json").read_text())
    assert [c["runtime"] for c in clusters] == [runtime], clusters
    return out


def _standalone(folder: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """repro.py from a copy outside the repository, in an isolated interpreter that cannot import the
    suite's packages (sys.modules entries of None make an import fail)."""
    copy = tmp_path / "elsewhere"
    shutil.copytree(folder, copy)
    hide = ("import runpy, sys; sys.modules['conformance'] = sys.modules['oracles'] = None; "
            "sys.argv = ['repro.py']; runpy.run_path('repro.py', run_name='__main__')")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run([sys.executable, "-I", "-c", hide], cwd=copy, capture_output=True, text=True,
                          env=env, timeout=300)


def test_a_bundle_for_a_deliberate_bug_reproduces_and_the_report_links_to_it(tmp_path):
    run = _run(tmp_path, SWAPPED, "swapped-gate-gru")
    proc = conformance("bugreport", run, "--runtime-plugin", SWAPPED, "--verify", "isolated", check=0)
    assert "1 report written" in proc.stdout, proc.stdout
    folder = run / "bugreports" / "c1-swapped-gate-gru"
    names = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    assert {"ISSUE.md", "repro.py", "requirements.txt", "bundle.json", "case.yaml", "model.onnx", "tolerance.json",
            "bugreport.py", "test_data_set_0/input_0.pb", "test_data_set_0/output_0.pb",
            "expected/Y.npy", "expected/Y.allowed.npy", "inputs/X.npy"} <= names, names
    pins = (folder / "requirements.txt").read_text()
    import numpy
    import onnxruntime
    assert f"numpy=={numpy.__version__}" in pins and f"onnxruntime=={onnxruntime.__version__}" in pins
    bundle = json.loads((folder / "bundle.json").read_text())
    assert bundle["verified"]["reproduced"] is True and bundle["verified"]["how"] == "isolated"
    assert bundle["verdict"] == "fail" and bundle["cluster"] == "c1"
    # the reduction took away what the failure does not need (the gate swap shows without B and initial_h)
    assert set(bundle["removed"]) == {"B", "initial_h"}, bundle["removed"]
    # repro.py imports neither the suite nor the oracle, and exits 1 showing got, expected, bound and worst element
    done = _standalone(folder, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    for line in ("worst element Y", "  got ", "  expected ", "  bound ", "the divergence shows"):
        assert line in done.stdout, done.stdout
    issue = (folder / "ISSUE.md").read_text()
    assert "the divergence shows" in issue and "https://onnx.ai/onnx/operators/onnx__GRU.html#gru-14" in issue
    # the run's report links the cluster and the case page to the bundle
    conformance("report", run, "--artifacts", "full", check=0)
    assert 'href="bugreports/c1-swapped-gate-gru/ISSUE.md"' in (run / "index.html").read_text()
    pages = list((run / "cases").glob("*.html"))
    assert any("../bugreports/c1-swapped-gate-gru/ISSUE.md" in p.read_text() for p in pages)


def test_a_bundle_whose_divergence_does_not_reproduce_outside_the_suite_is_refused(tmp_path):
    run = _run(tmp_path, SUITE_ONLY, "suite-only-gru")
    proc = conformance("bugreport", run, "--runtime-plugin", SUITE_ONLY, "--verify", "isolated", check=1)
    assert "the divergence did not show outside the suite" in proc.stderr, proc.stdout + proc.stderr
    assert "no divergence: every element is within its bound" in proc.stderr
    assert not (run / "bugreports" / "c1-suite-only-gru").exists()
    index = json.loads((run / "bugreports" / "index.json").read_text())
    assert index[0]["folder"] is None and "did not show outside the suite" in index[0]["refused"]


def test_the_drafted_expectation_covers_the_cluster(tmp_path):
    from conformance.gate import Expectations, classify
    from conformance.results import Record, read_results
    run = _run(tmp_path, SWAPPED, "swapped-gate-gru")
    proc = conformance("bugreport", run, "--expectation", check=0)
    assert "upstream: none found (searched" in proc.stdout and "# the issue's URL once it is filed" in proc.stdout
    body = "\n".join(line for line in proc.stdout.splitlines() if not line.startswith("# c"))
    path = tmp_path / "drafted.yaml"
    path.write_text("entries:\n" + body + "\n")
    expectations = Expectations.load([path])
    records = read_results(run / "results.jsonl")
    assert [classify(Record.from_dict(r), expectations)["gate"] for r in records] == ["expected"]


def test_verification_reads_the_divergence_line_not_only_the_exit_status(tmp_path):
    """A script that dies with a traceback also exits 1: it is no reproduction."""
    import numpy

    from conformance.bugreport.verify import same_refusal, verify
    cases = {"traceback": ("raise RuntimeError('the script itself is broken')", False),
             "shown": ("print('the divergence shows'); raise SystemExit(1)", True),
             "clean": ("print('no divergence'); raise SystemExit(0)", False),
             "refusal": ("print('rt refused the model: TypeError: data type not understood'); "
                         "print('the divergence shows'); raise SystemExit(1)", False)}
    for name, (body, reproduced) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "repro.py").write_text(f"import numpy\n{body}\n")
        (folder / "requirements.txt").write_text(f"numpy=={numpy.__version__}\n")
        refusal = "Couldn't create operation: LSTMSequence" if name == "refusal" else ""
        check = verify(folder, "isolated", refusal=refusal)
        assert check.reproduced is reproduced, (name, check)
        assert reproduced or check.reason
    assert same_refusal("OpenVINO's builders refused LSTMSequence-1: RuntimeError: Couldn't create operation: "
                        "LSTMSequence", "RuntimeError: Couldn't create operation: LSTMSequence")
    assert not same_refusal("Couldn't create operation: LSTMSequence", "TypeError: data type 'f32' not understood")


def test_a_fresh_virtual_environment_reproduces_the_deliberate_bug(tmp_path):
    """The default verification: a venv holding only requirements.txt (made once per set of pins)."""
    from conformance.bugreport.verify import environment_for
    run = _run(tmp_path, SWAPPED, "swapped-gate-gru")
    conformance("bugreport", run, "--runtime-plugin", SWAPPED, "--verify", "isolated", check=0)
    folder = run / "bugreports" / "c1-swapped-gate-gru"
    pins = [ln for ln in (folder / "requirements.txt").read_text().splitlines() if not ln.startswith("#")]
    python, why = environment_for(pins)
    if python is None:
        pytest.skip(f"no fresh environment can be made here: {why}")
    conformance("bugreport", run, "--runtime-plugin", SWAPPED, "--verify", "venv", check=0)
    bundle = json.loads((folder / "bundle.json").read_text())
    assert bundle["verified"]["how"] == "venv" and bundle["verified"]["reproduced"] is True
    assert str(python) == bundle["verified"]["where"]


def test_a_webnn_report_is_a_page_verified_in_the_real_browser(tmp_path):
    """repro.html replays the graph document in the browser the target ran in, and says whether the
    divergence shows: not for a pair that passes, and yes once an expected value is wrong."""
    from tests.runtime.test_webnn import browser_or_skip
    browser_or_skip()
    from conformance.bugreport import files
    from conformance.bugreport.bundle import Bundle
    from conformance.bugreport.pair import run_pair
    from conformance.bugreport.subject import Subject
    from conformance.bugreport.verify import verify_page
    from conformance.case.load import load_file
    from conformance.isolation.workers import Pool
    from conformance.run.probe import measured
    from conformance.selection import select_targets
    cases, _ = load_file(ROOT / CASE[0])
    case = next(c for c in cases if c.id == CASE[2])
    found, _, _ = select_targets(("webnn-cr",), (), ("webnn",), ())
    with Pool(1) as pool:
        target = measured(found, pool)[0]
        ran = run_pair(case, target, pool, tmp_path / "run")
    assert ran.verdict == "pass"
    bundle = Bundle(Subject("pair", "webnn", target.id, "fail", "a test", [case], [ran.record]), ran,
                    tmp_path / "out", browser=dict(target.ref.kwargs)["executable"])
    folder = tmp_path / "bundle"
    files.write(bundle, folder)
    assert {"repro.html", "expected/Y.json", "requirements.txt", ran.files[0].name} <= {
        str(p.relative_to(folder)) for p in folder.rglob("*")}
    check = verify_page(folder, bundle.browser)
    assert not check.reproduced and "no divergence: every element is within its bound" in check.output
    wrong = json.loads((folder / "expected" / "Y.json").read_text())
    wrong["expected"][0] += 0.5
    (folder / "expected" / "Y.json").write_text(json.dumps(wrong))
    check = verify_page(folder, bundle.browser)
    assert check.reproduced, check
    assert "worst element Y[0]" in check.output and "the divergence shows" in check.output


def test_a_fuzzer_finding_and_one_case_x_target_are_reported_as_they_are(tmp_path):
    """A finding is reduced already and a named pair is the user's choice: neither is reduced again."""
    finding = "cases/regressions/gru-onnxruntime-fail-96698945.yaml"
    conformance("bugreport", "--finding", finding, "--verify", "isolated", "--out", tmp_path / "f", check=0)
    bundle = json.loads((tmp_path / "f" / "finding-gru-onnxruntime-fail-96698945" / "bundle.json").read_text())
    assert bundle["kind"] == "finding" and bundle["removed"] == [] and bundle["verified"]["reproduced"]
    assert bundle["target"].startswith("onnxruntime-") and bundle["target"].endswith("@onnx-7")
    run = _run(tmp_path, SWAPPED, "swapped-gate-gru")
    record = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    conformance("bugreport", run, "--case", record["case"], "--target", record["target"], "--verify", "isolated",
                check=0)
    [folder] = (run / "bugreports").glob("pair-swapped-gate-gru-gru-basic-*")
    bundle = json.loads((folder / "bundle.json").read_text())
    assert bundle["case"] == record["case"] and bundle["removed"] == [] and bundle["verified"]["reproduced"]


def test_reports_of_several_pairs_share_a_folder_without_replacing_each_other(tmp_path):
    """Two `--case --target` reports into one --out: each keeps its folder and its index entry (a pair's
    folder is named by its case and target, not by its runtime alone)."""
    out = tmp_path / "run"
    conformance("run", "cases/gru/basic.yaml", "-k", "gru/basic[direction=forward,B=random", "--runtime-plugin",
                SWAPPED, "--runtime", "swapped-gate-gru", "--spec", "onnx-14", "--out", out, "-q", check=1)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 and {r["verdict"] for r in records} == {"fail"}, records
    for record in records:
        conformance("bugreport", out, "--case", record["case"], "--target", record["target"], "--verify",
                    "isolated", "--runtime-plugin", SWAPPED, check=0)
    index = json.loads((out / "bugreports" / "index.json").read_text())
    assert sorted(e["case"] for e in index) == sorted(r["case"] for r in records), index
    assert len({e["folder"] for e in index}) == 2, index
    for entry in index:
        bundle = json.loads((out / "bugreports" / entry["folder"] / "bundle.json").read_text())
        assert bundle["case"] == entry["case"] and bundle["verified"]["reproduced"], bundle


FIRST_SHAPE = "tests.doubles.bugreport:FirstShapeGRU"


def test_a_form_report_replays_the_form_calls_through_one_loaded_model(tmp_path):
    """A bug only a loaded model's later call at another shape shows (shape=dynamic): the report's
    program has symbolic dimensions, repro.py loads it once and makes the calls up to the failing one
    in the suite's order, and compares that call; the failing call alone on a fresh model passes."""
    import onnx
    out = tmp_path / "run"
    conformance("run", *CASE, "--runtime-plugin", FIRST_SHAPE, "--runtime", "first-shape-gru", "--spec", "onnx-14",
                "--config", "shape=dynamic", "--out", out, "-q", check=1)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((r["config"], r["verdict"]) for r in records) == [
        ("shape=dynamic", "fail"), ("shape=dynamic/session=reused", "state-leak")], records
    drafted = conformance("bugreport", out, "--expectation", check=0).stdout
    assert drafted.count("config: {shape: dynamic}") == 1 and "config: {shape: dynamic, session: reused}" in drafted
    proc = conformance("bugreport", out, "--runtime-plugin", FIRST_SHAPE, "--verify", "isolated", check=0)
    assert "2 reports written" in proc.stdout, proc.stdout + proc.stderr
    # session=reused: the case on one session after the other inputs, compared (the fresh run passes)
    reused = json.loads((out / "bugreports" / "c2-first-shape-gru" / "bundle.json").read_text())
    assert reused["form"]["config"] == "shape=dynamic/session=reused" and reused["form"]["loaded"] is True
    assert reused["verified"]["reproduced"] and "other inputs first" in reused["form"]["calls"][-1]
    # shape=dynamic: the case, then another shape through the same compiled model, which fails
    folder = out / "bugreports" / "c1-first-shape-gru"
    bundle = json.loads((folder / "bundle.json").read_text())
    assert bundle["form"]["config"] == "shape=dynamic" and bundle["form"]["loaded"] is True
    assert len(bundle["form"]["calls"]) == 2 and "through the same compiled model" in bundle["form"]["calls"][1]
    model = onnx.load(str(folder / "model.onnx"))
    assert {d.dim_param for i in model.graph.input for d in i.type.tensor_type.shape.dim} >= {"batch_size",
                                                                                             "seq_length"}
    x1, x2 = (np.load(folder / "inputs" / f"call{k}" / "X.npy") for k in (1, 2))
    assert x1.shape != x2.shape
    done = _standalone(folder, tmp_path)
    assert done.returncode == 1 and "call 2 of 2" in done.stdout and "the divergence shows" in done.stdout, \
        done.stdout + done.stderr
    issue = (folder / "ISSUE.md").read_text()
    assert "execution form `shape=dynamic`" in issue and "loaded once" in issue
    # the same call on a fresh model passes: what the report shows is the form's, not the input's
    script = (folder / "repro.py").read_text().replace("LOADED = True", "LOADED = False")
    (folder / "repro.py").write_text(script)
    fresh = _standalone(folder, tmp_path / "fresh")
    assert fresh.returncode == 0 and "no divergence" in fresh.stdout, fresh.stdout + fresh.stderr


TVM = importlib.util.find_spec("tvm") is not None


@pytest.mark.skipif(not TVM, reason="Apache TVM is not installed here (the `engines` extra: pip install -c "
                                    "constraints.txt -e '.[runtimes,engines]'; nox -s conformance-all has it)")
def test_a_tvm_report_reproduces_its_frontend_refusal(tmp_path):
    """Apache TVM's Relax ONNX frontend refuses the recurrent ops: its report's repro.py, run in an
    interpreter without the suite, is refused by TVM's own OpNotImplemented, as the suite saw."""
    out = tmp_path / "run"
    conformance("run", *CASE, "--runtime", "tvm", "--spec", "onnx-22", "--out", out, "-q", check=0)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["verdict"] for r in records] == ["rejected"], records
    proc = conformance("bugreport", out, "--all", "--verify", "isolated", check=0)
    assert "1 report written" in proc.stdout, proc.stdout + proc.stderr
    folder = out / "bugreports" / "c1-tvm"
    pins = (folder / "requirements.txt").read_text()
    assert f"apache-tvm=={metadata.version('apache-tvm')}" in pins and "onnx==" in pins
    done = _standalone(folder, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "refused the model: tvm.error.OpNotImplemented" in done.stdout and "the divergence shows" in done.stdout
    assert "apache/tvm" in (folder / "ISSUE.md").read_text()


def test_the_report_writes_a_bug_report_per_new_cluster_and_links_it(tmp_path):
    """`conformance report --bugreports`: the new clusters' reports first, then the pages that link them."""
    run = _run(tmp_path, SWAPPED, "swapped-gate-gru")
    proc = conformance("report", run, "--bugreports", check=0)
    assert "bug reports: 1 written" in proc.stdout, proc.stdout + proc.stderr
    bundle = json.loads((run / "bugreports" / "c1-swapped-gate-gru" / "bundle.json").read_text())
    assert bundle["verified"]["reproduced"] is True
    assert 'href="bugreports/c1-swapped-gate-gru/ISSUE.md"' in (run / "index.html").read_text()


def test_a_run_without_a_divergence_has_nothing_to_report_with_or_without_all(tmp_path):
    out = tmp_path / "run"
    conformance("run", *CASE, "--runtime", "onnxruntime", "--config", "forms=default", "--spec", "onnx-14",
                "--out", out, "-q", check=0)
    assert {json.loads(line)["verdict"] for line in (out / "results.jsonl").read_text().splitlines()} == {"pass"}
    every = conformance("bugreport", out, "--all", check=0).stdout
    assert "nothing to report: no divergence cluster to report in the run" in every, every
    assert "--all reports the known ones too" in conformance("bugreport", out, check=0).stdout
    assert not (out / "bugreports").exists()


def test_a_cluster_whose_case_file_is_gone_is_an_error_not_nothing_to_report(tmp_path):
    """A new cluster whose cases cannot be read any more (the case file moved since the run) gets no
    report, and the command says so and exits 1: not 0 with a logged error."""
    case_file = tmp_path / "basic.yaml"
    shutil.copy(ROOT / CASE[0], case_file)
    out = tmp_path / "run"
    conformance("run", case_file, *CASE[1:], "--runtime-plugin", SWAPPED, "--runtime", "swapped-gate-gru",
                "--spec", "onnx-14", "--out", out, "-q", check=1)
    case_file.unlink()
    proc = conformance("bugreport", out, "--runtime-plugin", SWAPPED, "--verify", "isolated", check=1)
    assert "could not be made one" in proc.stderr and "error:" in proc.stdout, proc.stdout + proc.stderr
    assert not any((out / "bugreports").glob("c*")) if (out / "bugreports").exists() else True


def test_the_drafted_expectation_of_a_form_cluster_loads_and_covers_it(tmp_path):
    """A form's cause carries the ablation's marker `form` (the plain sibling passes): the drafted entry
    says the form as `config:`, not as a feature (an empty feature item does not load)."""
    from conformance.gate import Expectations, classify
    from conformance.results import Record, read_results
    out = tmp_path / "run"
    conformance("run", *CASE, "--runtime-plugin", FIRST_SHAPE, "--runtime", "first-shape-gru", "--spec", "onnx-14",
                "--config", "forms=default", "--config", "shape=dynamic/session=fresh", "--out", out, "-q", check=1)
    [cluster] = json.loads((out / "clusters.json").read_text())
    assert "form" in cluster["features"], cluster
    drafted = conformance("bugreport", out, "--expectation", check=0).stdout
    assert "config: {shape: dynamic}" in drafted and "[]" not in drafted, drafted
    path = tmp_path / "drafted.yaml"
    path.write_text("entries:\n" + "\n".join(line for line in drafted.splitlines() if not line.startswith("# c")))
    expectations = Expectations.load([path])
    gates = {r.get("config", "default"): classify(Record.from_dict(r), expectations)["gate"]
             for r in read_results(out / "results.jsonl")}
    assert gates == {"default": "ok", "shape=dynamic": "expected"}, gates


