"""Runs and fuzz campaigns on a Dask cluster (conformance/cluster/client.py, cluster_worker.py,
conformance/fuzz/sharded.py): real schedulers and workers on loopback, no mocks.

The fast tests drive a ClusterPool on an in-process cluster with the suite's own worker
processes; the slow ones start ``dask scheduler`` and ``conformance worker`` subprocesses on
127.0.0.1 (free ports, always cleaned up), run a corpus slice on them, kill a worker mid-run, and
compare with a local run of the same targets.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.calibration import budget
from tests.conftest import ROOT, conformance, runtime

distributed = runtime("distributed")

from conformance.cluster.client import (  # noqa: E402
    ORACLE_RESOURCE,
    ClusterPool,
    ClusterRef,
    clustered,
    gather,
    resource_of,
    resources_for,
)
from conformance.cluster.worker import ServicePlugin  # noqa: E402
from conformance.isolation.jobs import Job  # noqa: E402
from conformance.isolation.processes import ORACLE  # noqa: E402
from conformance.runtimes import Skipped  # noqa: E402
from conformance.runtimes.base import RuntimeRef, Target  # noqa: E402

SLICE = "lstm"                      # the corpus slice the slow tests run (a few thousand pairs)
PAIR_FIELDS = ("verdict", "message", "max_abs_err", "max_ulp", "ratio", "gate", "features", "reading")


def target(runtime="onnxruntime", version="1.32.0", device="CPU", config="default", spec="onnx-14", precision=""):
    return Target(runtime, version, device, config, spec, RuntimeRef(f"conformance.runtimes.{runtime}:Runtime"),
                  precision=precision)


# -- resource names, refs, the cluster's targets -----------------------------------------------------

def test_every_target_id_names_one_valid_dask_resource():
    ids = [target(), target(spec="onnx-7"), target(version="1.31.0"),
           target(config="precision=default", precision="bf16"),
           target(config="precision=pinned"), target(runtime="my plugin, v2", device="GPU:0")]
    names = [resource_of(t) for t in ids]
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+", name), name
        # as `dask worker --resources "NAME=1 ..."` parses it (distributed/cli/dask_worker.py)
        assert dict(r.split("=") for r in f"{name}=1 {ORACLE_RESOURCE}=2".replace(",", " ").split()) == \
            {name: "1", ORACLE_RESOURCE: "2"}
    assert names[0] == names[1], "the specs of one runtime configuration share its resource"
    assert len(set(names[1:])) == len(names) - 1, "other versions, precisions and configurations are other resources"
    assert resources_for([ids[0], ids[2]], 3) == {names[0]: 3.0, names[2]: 3.0, ORACLE_RESOURCE: 3.0}


def test_a_clustered_ref_travels_and_builds_like_its_runtime_ref():
    t = Target("plain", "1", "CPU", "default", "onnx-14", RuntimeRef("tests.doubles.plugins:Segfault"))
    ref = clustered(t).ref
    assert isinstance(ref, ClusterRef) and ref.resource == resource_of(t)
    assert pickle.loads(pickle.dumps(ref)) == ref and ref != t.ref
    assert type(ref.build()) is type(t.ref.build())


def test_the_cluster_lists_each_target_once_with_the_machines_that_hold_it():
    a = {"name": "a", "host": "box-a", "targets": [target(spec="onnx-7"), target()],
         "skipped": [Skipped("openvino", "not installed")]}
    b = {"name": "b", "host": "box-b", "targets": [target(), target("openvino", "2026.4.1")], "skipped": []}
    targets, skipped = gather([a, b])
    by_id = {t.id: t for t in targets}
    assert sorted(by_id) == ["onnxruntime-1.32.0/CPU@onnx-14", "onnxruntime-1.32.0/CPU@onnx-7",
                             "openvino-2026.4.1/CPU@onnx-14"]
    assert by_id["onnxruntime-1.32.0/CPU@onnx-14"].configuration["workers"] == [
        {"host": "box-a", "worker": "a"}, {"host": "box-b", "worker": "b"}]
    assert all(isinstance(t.ref, ClusterRef) for t in targets)
    assert skipped == [], "a runtime one machine lacks but another has is not a gap of the cluster"


# -- the pool on an in-process cluster ----------------------------------------------------------------

def twice(x):
    return 2 * x


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster
    plugin = ServicePlugin([], [], 2, memory_limit=0)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                      resources=resources_for([], 2), plugins=[plugin]) as cluster, \
            Client(cluster, set_as_default=False) as c:
        yield c


def test_the_pool_runs_jobs_and_jobs_submitted_while_it_is_iterated(client):
    pool = ClusterPool(client, jobs=2)
    seen = {}
    for outcome in pool.outcomes(Job(("first", i), "call", (twice, (i,)), 60.0) for i in range(3)):
        seen[outcome.key] = outcome.value
        if outcome.key == ("first", 0):       # as the engine runs a batched pair again alone
            pool.submit(Job(("again", 0), "call", (twice, (21,)), 60.0))
    assert seen == {("first", 0): 0, ("first", 1): 2, ("first", 2): 4, ("again", 0): 42}


def test_a_job_whose_target_no_worker_holds_is_a_crash_after_the_wait(client, monkeypatch):
    import conformance.cluster.client as cluster
    monkeypatch.setattr(cluster, "CHECK_S", 0.2)
    pool = ClusterPool(client, jobs=1, wait_s=0.5)
    ref = ClusterRef("tests.doubles.plugins:Segfault", resource="rt-nowhere-00000000")
    outcomes = list(pool.outcomes([Job("lost", "run", (ref, b"", {}, 0.0), 5.0),
                                   Job("oracle", "call", (twice, (1,)), 60.0)]))
    by_key = {o.key: o for o in outcomes}
    assert by_key["oracle"].status == "ok" and by_key["oracle"].value == 2
    assert by_key["lost"].status == "crash" and "no worker of the cluster holds" in by_key["lost"].error
    assert Job("x", "call", (twice, ()), 1.0).binding == ORACLE


# -- the real thing: scheduler and workers as subprocesses --------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """Subprocesses in sessions of their own, each ended with its whole group."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, *argv, env=None) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
        proc = subprocess.Popen([str(a) for a in argv], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                env=full_env, start_new_session=True)
        self.procs[name] = proc
        return proc

    def kill(self, name: str, sig=signal.SIGKILL) -> None:
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(proc.pid, sig)
                        proc.wait(timeout=10)
                        break
                    except (ProcessLookupError, subprocess.TimeoutExpired):
                        continue


@pytest.fixture
def processes(tmp_path):
    procs = Processes(tmp_path)
    yield procs
    procs.close()


def scheduler(processes) -> str:
    port = free_port()
    dask = Path(sys.executable).with_name("dask")
    argv = [dask, "scheduler"] if dask.exists() else [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    processes.start("scheduler", *argv, "--host", "127.0.0.1", "--port", port, "--no-dashboard")
    return f"tcp://127.0.0.1:{port}"


def worker(processes, address: str, name: str, runtime: str):
    return processes.start(name, sys.executable, "-m", "conformance", "worker", "--scheduler", address,
                           "--runtime", runtime, "--name", name, "--jobs", "1", "--host", "127.0.0.1")


def records(folder: Path) -> dict:
    out = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out[(rec["case"], rec["target"])] = rec
    return out


def worker_of(line: str) -> str:
    """The worker a results line ran on ("" for one being written, or not run)."""
    try:
        return json.loads(line).get("effective", {}).get("worker", "")
    except ValueError:
        return ""


def same_results(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    diffs = [(k, f, a[k].get(f), b[k].get(f)) for k in a for f in PAIR_FIELDS if a[k].get(f) != b[k].get(f)]
    assert not diffs, diffs[:5]


def local_run(tmp_path, *runtimes) -> dict:
    out = tmp_path / "local"
    conformance("run", "cases", "-k", SLICE, *[a for r in runtimes for a in ("--runtime", r)], "--jobs", "2",
                "--out", out, "--no-ablation", "-q", "--expectations", "expectations", check=0)
    return records(out)


def test_a_cluster_run_sends_each_pair_to_a_worker_with_its_target_and_survives_a_killed_worker(tmp_path,
                                                                                                processes):
    address = scheduler(processes)
    worker(processes, address, "ort", "onnxruntime")
    worker(processes, address, "ref", "onnx-reference")
    out = tmp_path / "cluster"
    run = processes.start("run", sys.executable, "-m", "conformance", "run", "cases", "-k", SLICE, "--cluster", address,
                          "--workers", "2", "--out", out, "--no-ablation", "-q", "--expectations", "expectations",
                          "--config", "forms=default")
    results = out / "results.jsonl"
    deadline = time.monotonic() + budget(300)
    ran_on_ort = 0
    while ran_on_ort < 100:   # the onnxruntime worker is busy: kill it mid-run
        assert run.poll() is None and time.monotonic() < deadline, processes.log("run")
        time.sleep(0.2)
        ran_on_ort = sum(worker_of(line) == "ort" for line in
                         (results.read_text().splitlines() if results.exists() else []))
    processes.kill("ort")
    written_at_kill = len(results.read_text().splitlines())
    worker(processes, address, "ort2", "onnxruntime")   # the machine comes back
    assert run.wait(timeout=600) == 0, processes.log("run")

    local = local_run(tmp_path, "onnxruntime", "onnx-reference")
    cluster = records(out)
    assert written_at_kill < len(cluster), "the worker was killed before the run's end"
    same_results(cluster, local)   # no pair lost, none a crash, every verdict as a local run's
    holders = {"onnxruntime": {"ort", "ort2"}, "onnx-reference": {"ref"}}
    ran = {(r["runtime"], r["effective"]["worker"]) for r in cluster.values() if "worker" in r.get("effective", {})}
    assert ran and all(w in holders[runtime] for runtime, w in ran), ran
    assert ("onnxruntime", "ort2") in ran, "the killed worker's pairs went to the one that came back"
    info = json.loads((out / "run.json").read_text())
    assert {w["name"] for w in info["cluster"]["workers"]} == {"ort", "ref"}
    assert all(w["host"] == socket.gethostname() for w in info["cluster"]["workers"])
    assert all(t["configuration"]["workers"] for t in info["targets"])

    # a report merged from the cluster's and the local results names the machines of each target
    conformance("report", out, "--out", tmp_path / "merged", check=0)
    assert f"ran on {socket.gethostname()} (ort)" in (tmp_path / "merged" / "index.html").read_text()


def test_a_local_cluster_run_equals_a_local_run_and_its_fuzz_campaign_merges_its_shards(tmp_path):
    out = tmp_path / "cluster"
    conformance("run", "cases", "-k", SLICE, "--runtime", "onnxruntime", "--runtime", "onnx-reference",
                "--cluster", "local", "--workers", "2", "--out", out, "--no-ablation", "-q",
                "--expectations", "expectations", check=0)
    same_results(records(out), local_run(tmp_path, "onnxruntime", "onnx-reference"))
    workers = {r["effective"]["worker"] for r in records(out).values() if "worker" in r.get("effective", {})}
    assert len(workers) == 2, workers

    # the reference evaluator ignores activations: both shards find it, one file is written per signature
    findings = tmp_path / "findings"
    proc = conformance("fuzz", "--cluster", "local", "--workers", "2", "--jobs", "1", "--budget", "1h",
                       "--max-examples", "60",
                       "--runtime", "onnx-reference", "--spec", "onnx-14", "--no-expectations", "--no-shrink",
                       "--seed", "7", "--out", findings, "--regressions", tmp_path / "none")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.count("cases (") == 1 and "shards answered" in proc.stdout, proc.stdout
    signatures = [re.search(r"signature: (.+)", p.read_text()).group(1) for p in findings.glob("*.yaml")]
    assert signatures and len(signatures) == len(set(signatures))
