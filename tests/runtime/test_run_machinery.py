"""The run machinery on the real onnxruntime, with deliberate test doubles (tests/doubles/plugins.py)
for a crashing, hanging and known-wrong runtime.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_run_machinery.py."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.run import read_results
from tests.calibration import budget_arg
from tests.conftest import DATA, ROOT, conformance


def verdicts(out: Path) -> dict:
    return {(r["case"], r["runtime"]): r for r in read_results(out / "results.jsonl")}


def test_segfault_and_hang_each_cost_one_verdict_and_the_run_completes(tmp_path):
    out = tmp_path / "out"
    proc = conformance("run", DATA / "cases", "-k", "small and forward", "--spec", "onnx-14",
                       "--runtime", "onnxruntime", "--runtime", "segfault", "--runtime", "hang",
                       "--runtime-plugin", "tests.doubles.plugins:Segfault",
                       "--runtime-plugin", "tests.doubles.plugins:Hang",
                       "--timeout", budget_arg(3), "--jobs", "2", "--out", out, "-q", check=1)
    got = verdicts(out)
    case = "gru/small[direction=forward]"
    assert got[(case, "segfault")]["verdict"] == "crash"
    assert "SIGSEGV" in got[(case, "segfault")]["message"]
    assert got[(case, "hang")]["verdict"] == "timeout"
    assert got[(case, "onnxruntime")]["verdict"] == "pass", got[(case, "onnxruntime")]["message"]
    assert len(got) == 3
    assert "crash" in proc.stdout and "timeout" in proc.stdout


def test_deliberately_wrong_gru_is_failed_with_a_located_message(tmp_path):
    out = tmp_path / "out"
    conformance("run", DATA / "cases", "--spec", "onnx-14", "--runtime", "wrong-gru-gate-order",
                "--runtime", "onnxruntime", "--runtime-plugin", "tests.doubles.plugins:WrongGateOrderGRU",
                "--out", out, "-q", check=1)
    got = verdicts(out)
    for direction in ("forward", "reverse"):
        case = f"gru/small[direction={direction}]"
        wrong = got[(case, "wrong-gru-gate-order")]
        assert wrong["verdict"] == "fail"
        assert "but should be within" in wrong["message"] and "tolerance" in wrong["message"]
        assert wrong["worst"]["ratio"] > 1 and wrong["max_abs_err"] > 1e-3
        assert (wrong["repro"].startswith("conformance run ")
                and "--runtime-plugin tests.doubles.plugins:WrongGateOrderGRU" in wrong["repro"])
        assert got[(case, "onnxruntime")]["verdict"] == "pass"
    # the invalid case: onnxruntime refuses the wrong W shape, so it passes
    assert got[("gru/invalid_w", "onnxruntime")]["verdict"] == "pass"


def test_results_have_the_documented_fields(tmp_path):
    out = tmp_path / "out"
    conformance("run", DATA / "cases", "--spec", "onnx-22", "--runtime", "onnxruntime", "--out", out, "-q",
                "--artifacts", "full", check=0)
    records = read_results(out / "results.jsonl")
    assert len(records) == 3
    for r in records:
        for key in ("case", "target", "spec", "spec_family", "runtime", "runtime_family", "verdict", "max_abs_err",
                    "max_ulp", "tolerance", "message", "repro"):
            assert key in r, key
    # by default (--artifacts failing) a passing pair's line is the documented summary
    conformance("run", DATA / "cases", "--spec", "onnx-22", "--runtime", "onnxruntime", "--out", tmp_path / "d",
                "-q", check=0)
    summaries = [r for r in read_results(tmp_path / "d" / "results.jsonl") if r["verdict"] == "pass"]
    assert summaries and all(r.get("detail") == "summary" and "pair_digest" in r and "repro" not in r
                             for r in summaries)
    passing = [r for r in records if r["expect"] == "valid"]
    assert all(r["tolerance"]["source"] for r in passing)
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["counts"] == {"pass": 3}


#: the calls a run makes of each runtime configuration before its pairs: the arithmetic probe (one), the
#: activation probe (its RNN, GRU and LSTM programs)
PROBE_CALLS = 4


def test_interrupted_run_resumes_without_redoing_finished_pairs(tmp_path):
    """Kill a real run part-way (SIGKILL), run again: only the missing pairs are run."""
    out, calls, hold = tmp_path / "out", tmp_path / "calls.txt", tmp_path / "hold"
    # after the probes' calls (the arithmetic probe and the activation probe's three) and two pairs', every
    # call waits: the run is killed part-way, not raced
    hold.touch()
    env = dict(os.environ, PYTHONPATH=str(ROOT), CONFORMANCE_TEST_CALLS=str(calls), CONFORMANCE_TEST_HOLD=str(hold),
               CONFORMANCE_TEST_HOLD_AFTER=str(PROBE_CALLS + 2))
    # the valid cases only: a refusal is followed by the soundness check's call of the probe
    # (conformance/isolation/soundness.py), which would count as a call here
    args = [sys.executable, "-m", "conformance", "run", str(DATA / "cases"), "-k", "small", "--runtime", "counting-ort",
            "--runtime-plugin", "tests.doubles.plugins:OnlyOnce", "--out", str(out), "-q", "--timeout", "3600"]
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    results = out / "results.jsonl"
    while proc.poll() is None and len(read_results(results)) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = read_results(results)
    assert len(first) == 2, "the run should have been interrupted after two pairs"
    calls_before = len(calls.read_text().splitlines())

    hold.unlink()
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    final = read_results(results)
    pairs = [(r["case"], r["target"]) for r in final]
    assert len(set(pairs)) == 6 == len(pairs), "every pair exactly once"
    # every run starts with the probes' calls per runtime (conformance/run/probe.py, conformance/run/activations.py)
    redone = len(calls.read_text().splitlines()) - calls_before - PROBE_CALLS
    assert redone == 6 - len(first), f"{redone} runtime calls on resume for {6 - len(first)} missing pairs"
    assert f"{len(first)} resumed from earlier" in done.stdout


def _pairs(out: Path) -> dict:
    return {r["case"]: r for r in read_results(out / "results.jsonl")}


def test_batches_change_no_verdict_and_a_pair_not_passing_in_a_batch_runs_again_alone(tmp_path):
    """A batching runtime (run_many) gets its pairs in batches; a pair that is wrong only inside a
    batch, crashes a batch, or is refused inside one is run again alone, so the verdicts equal
    those of --no-batch, and the records say which pairs were batched and which ran alone."""
    select = ("cases/gru", "-k", "not sequence_lens", "--spec", "onnx-14", "--timeout", budget_arg(20), "--jobs", "2",
              "-q", "--no-ablation", "--artifacts", "full")
    plugins = [a for name in ("Batching", "WrongInBatch", "CrashInBatch", "RefusesInBatch")
               for a in ("--runtime-plugin", f"tests.doubles.plugins:{name}")]
    runtimes = [a for name in ("batching", "wrong-in-batch", "crash-in-batch", "refuses-in-batch")
                for a in ("--runtime", name)]
    conformance("run", *select, *plugins, *runtimes, "--out", tmp_path / "batched", timeout=900)
    conformance("run", *select, *plugins, *runtimes, "--out", tmp_path / "alone", "--no-batch", timeout=900)
    batched, alone = (verdicts(tmp_path / name) for name in ("batched", "alone"))
    assert batched.keys() == alone.keys() and len(batched) > 40
    assert {k: r["verdict"] for k, r in batched.items()} == {k: r["verdict"] for k, r in alone.items()}
    assert all("batch" not in r for r in alone.values())
    by_runtime: dict = {}
    for (_case, runtime), r in batched.items():
        by_runtime.setdefault(runtime, []).append(r)
    sizes = [r["batch"]["size"] for r in by_runtime["batching"] if "size" in r.get("batch", {})]
    assert sizes and max(sizes) == 4  # batches really happened
    plain = {r["case"]: r["verdict"] for r in by_runtime["batching"]}  # onnxruntime's own verdicts

    def alone(runtime):
        return [r for r in by_runtime[runtime] if "alone" in r.get("batch", {})]
    wrong = [r for r in alone("wrong-in-batch") if "it was fail" in r["batch"]["alone"]]
    assert wrong and all(r["verdict"] == plain[r["case"]] for r in alone("wrong-in-batch"))
    assert any(r["verdict"] == "pass" for r in wrong)  # wrong only in the batch: right alone
    crashed = [r for r in by_runtime["crash-in-batch"] if r["verdict"] == "crash"]
    assert crashed and all("direction=reverse" in r["case"] for r in crashed)
    shared = [r for r in alone("crash-in-batch") if "ended with crash" in r["batch"]["alone"]
              and "direction=reverse" not in r["case"]]  # cases that shared a batch with the crash
    assert shared and all(r["verdict"] == plain[r["case"]] for r in shared)
    refused = [r for r in alone("refuses-in-batch") if "it was rejected" in r["batch"]["alone"]]
    assert refused and all(r["verdict"] == plain[r["case"]] for r in refused)
    assert any(r["verdict"] == "pass" for r in refused)


def test_a_converting_runtime_keeps_its_artefact_beside_the_program_and_names_the_step_that_refused(tmp_path):
    out = tmp_path / "out"
    conformance("run", DATA / "cases", "--spec", "onnx-14", "--runtime", "converting", "--runtime-plugin",
                "tests.doubles.plugins:Converting", "--out", out, "-q", "--artifacts", "full", "--no-ablation")
    got = verdicts(out)
    refused = got[("gru/small[direction=reverse]", "converting")]
    assert refused["verdict"] == "rejected" and refused["effective"]["stage"] == "converter"
    assert "the converter has no reverse direction" in refused["message"]
    passed = got[("gru/small[direction=forward]", "converting")]
    assert passed["verdict"] == "pass" and "stage" not in passed["effective"]
    for record in (refused, passed):
        (path,) = record["artefacts"]
        assert path.startswith("programs/") and path.endswith(".converted.txt")
        text = (out / path).read_text()
        assert "GRU" in text and (out / path).parent.is_dir()
        assert any(f.name.startswith("onnx-14.") and f.suffix == ".onnx" for f in (out / path).parent.iterdir())


def test_a_cached_oracle_result_is_read_in_the_main_process_and_changes_no_verdict(tmp_path, monkeypatch):
    """The first run sends the oracle jobs; the second finds every result in the oracle's disk cache
    and sends none (no worker slot taken from the runtimes), with the same verdicts."""
    from conformance.case import load_paths
    from conformance.run import Engine, MemoryStore, Options, Pool
    from conformance.runtimes import plugin_targets
    monkeypatch.setenv("CONFORMANCE_ORACLE_CACHE", str(tmp_path / "cache"))
    cases = [c for c in load_paths([DATA / "cases"])[0] if c.valid]
    targets = plugin_targets("tests.doubles.plugins:Batching", {"onnx": ["onnx-14"]})

    class Counting(Pool):
        def outcomes(self, source=None):
            return super().outcomes(job for job in source if not kinds.append(job.kind))

    runs = []
    for i in range(2):
        kinds: list = []
        store = MemoryStore(tmp_path / f"run{i}")
        with Counting(1) as pool:
            Engine(cases, targets, store, Options(out_dir=tmp_path / f"run{i}")).run(pool)
        runs.append(({r["case"]: r["verdict"] for r in store.records}, kinds))
    (first, first_kinds), (second, second_kinds) = runs
    assert first_kinds.count("call") == len(cases) and "call" not in second_kinds
    assert first == second and len(first) == len(cases) and set(first.values()) == {"pass"}


def test_a_runtime_cannot_install_packages_from_its_worker(tmp_path):
    """A dependency's tool that runs pip inside a call finds no package index in the worker."""
    out = tmp_path / "out"
    conformance("run", DATA / "cases", "-k", "small and forward", "--spec", "onnx-14", "--runtime",
                "tries-to-install", "--runtime-plugin", "tests.doubles.plugins:TriesToInstall", "--out", out, "-q",
                "--artifacts", "full", "--no-ablation")
    (record,) = read_results(out / "results.jsonl")
    assert record["verdict"] == "fail"  # its outputs are pip's status, not the GRU's
    assert "no matching distribution" in record["runtime_output"].lower() or \
        "could not find" in record["runtime_output"].lower(), record["runtime_output"]


def test_a_job_sent_ahead_keeps_its_own_output_and_a_crash_before_it_sends_it_elsewhere():
    """With every worker slot busy, the pool sends a worker its next job before it answers the
    current one (workers.py, ``_send_ahead``). Each answer still carries exactly what its own call
    printed (the worker reads its output before answering), and the job sent ahead to a worker
    that then crashes runs in a new worker, uncharged: only the crashing job is a crash."""
    from conformance.isolation.jobs import Job
    from conformance.run import Pool
    from conformance.runtimes.base import RuntimeRef
    ref = RuntimeRef("tests.doubles.plugins:Echo", cwd=str(ROOT))
    models = [b"first", b"second", b"crash", b"after", b"last"]
    with Pool(1) as pool:
        jobs = [Job(("echo", k), "run", (ref, model, {}, 0.0), 60) for k, model in enumerate(models)]
        outcomes = {o.key[1]: o for o in pool.outcomes(iter(jobs))}
        sent_ahead = pool.sent_ahead
    assert sent_ahead >= 2
    assert outcomes[2].status == "crash" and "SIGSEGV" in outcomes[2].error
    for k in (0, 1, 3, 4):
        assert outcomes[k].status == "ok", outcomes[k]
        assert bytes(outcomes[k].value[0]) == models[k]
        assert outcomes[k].output.strip() == f"echo {models[k].decode()}", outcomes[k].output
    assert "echo crash" in outcomes[2].output


def test_a_broken_pipe_inside_the_suite_is_an_error_not_a_closed_stdout(tmp_path, monkeypatch, capsys):
    """click takes every BrokenPipeError for a closed standard output (`| head`) and exits 1
    silently; one raised inside the suite (its pipe to a worker) is an internal error: the
    traceback, a message, exit status 2, and the results written so far kept."""
    from conformance.cli import main
    from conformance.isolation.workers import Pool
    real, calls = Pool._send_ahead, []

    def breaks(self):
        calls.append(1)
        if len(calls) > 5:
            raise BrokenPipeError(32, "Broken pipe")
        return real(self)
    monkeypatch.setattr(Pool, "_send_ahead", breaks)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as ended:
        main.main(["run", str(DATA / "cases"), "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", str(out),
                   "-q", "--no-ablation"])
    said = capsys.readouterr()
    assert ended.value.code == 2, said.out + said.err
    assert "a pipe inside the suite broke" in said.out + said.err and "BrokenPipeError" in said.err
    assert (out / "results.jsonl").exists()


class _OneByOne:
    """Test double for ``serve._batch``: a runtime without ``run_many`` whose configuration changes
    with each program (it reports the program's own number), and which refuses by stage."""

    def __init__(self):
        self.last = None

    def run(self, model, feeds):
        import numpy as np

        from conformance.runtimes.base import RuntimeRejected
        self.last = model
        if model == "refused":
            raise RuntimeRejected("no", stage="compiler")
        return [np.zeros(1)]

    def effective(self):
        return {"precision": "f32", "program": self.last}


@pytest.mark.parametrize("alone", ["", "packed"])
def test_a_batch_run_one_program_after_another_gives_each_its_own_configuration(alone):
    """Without ``run_many`` (or when each program must run on its own), a batch job runs ``run``
    per program; each answer carries the configuration its own call reported, a refusal with the
    step that refused, and ``alone`` marks each as run on its own."""
    from conformance.isolation.serve import _batch
    answers = _batch(_OneByOne(), [("a", {}), ("refused", {}), ("b", {})], alone)
    assert [a[0] for a in answers] == ["ok", "error", "ok"]
    assert [a[4]["program"] for a in answers] == ["a", "refused", "b"]
    assert answers[1][4]["stage"] == "compiler"
    assert [a[3] for a in answers] == [alone] * 3


def test_a_program_runs_the_suite_through_the_library_session(tmp_path, monkeypatch):
    """conformance.run.session.run_session is the run `conformance run` and `history` make: called
    from a program, it judges, gates, writes the results and the reports, and gives run's exit status
    (1 for a new divergence of the wrong test double, 0 once an expectation covers it)."""
    from conformance.case import load_paths
    from conformance.gate import Expectations
    from conformance.run.session import RunConfig, run_session
    from conformance.runtimes import plugin_targets
    monkeypatch.setenv("CONFORMANCE_ORACLE_CACHE", str(tmp_path / "cache"))
    cases = [c for c in load_paths([DATA / "cases"])[0] if c.valid and c.op == "GRU" and "small" in c.id]
    targets = plugin_targets("tests.doubles.plugins:WrongGateOrderGRU", {"onnx": ["onnx-14"]})
    assert cases and targets
    code = run_session(cases, targets, RunConfig(out_dir=tmp_path / "a", quiet=True, ablation=False))
    got = verdicts(tmp_path / "a")
    assert code == 1 and {r["verdict"] for r in got.values()} == {"fail"} and len(got) == len(cases)
    assert (tmp_path / "a" / "index.html").exists() and (tmp_path / "a" / "junit.xml").exists()
    entry = tmp_path / "known.yaml"
    entry.write_text(f"targets: {targets[0].runtime}-*\nentries:\n- cases: [\"gru/small*\"]\n"
                     f"  verdict: fail\n  kind: known-bug\n"
                     f"  reason: a test double that swaps the GRU's gates (tests/doubles/plugins.py)\n")
    expectations = Expectations.load([entry])
    code = run_session(cases, targets, RunConfig(out_dir=tmp_path / "b", quiet=True, ablation=False,
                                                 expectations=expectations))
    assert code == 0
    assert {r.get("gate") for r in read_results(tmp_path / "b" / "results.jsonl")} == {"expected"}
