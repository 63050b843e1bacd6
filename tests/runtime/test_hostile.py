"""Nothing a runtime returns, and nothing a runtime does to its own process, can crash a run, hang
it, pass a wrong result, or change another runtime's verdicts; and a run owns what it starts.

Every runtime here is a deliberate test double (tests/doubles/hostile.py); onnxruntime and onnx.reference
are the controls whose verdicts must not move.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_hostile.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.run import read_results
from tests.calibration import budget, budget_arg
from tests.calibration import budget as budget_s
from tests.conftest import DATA, ROOT, conformance
from tests.doubles.hostile import KINDS, MARKER_ENV

CASE = ["-k", "gru/small[direction=forward]", "--spec", "onnx-14"]


def _plugins(*kinds):
    args = []
    for kind in kinds:
        args += ["--runtime-plugin", f"tests.doubles.hostile:Hostile_{kind.replace('-', '_')}",
                 "--runtime", f"hostile-{kind}"]
    return args


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


def _pids(folder: Path, name: str) -> list[int]:
    path = folder / f"{name}.pids"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


#: the kinds that never answer: a timeout at any --timeout, so their run may give a short one
HANGS = sorted(kind for kind, (_, verdict, _) in KINDS.items() if verdict == "timeout")
#: the kinds that answer, crash or are killed for their memory whatever the clock says: their run
#: gives a timeout no loaded machine reaches, so no verdict depends on how fast the machine is
ANSWERS = sorted(kind for kind in KINDS if kind not in HANGS)
NEVER_REACHED_S = "300"


def _hostile_run(out, kinds, timeout, marks, control=True):
    """The kinds' run, with onnxruntime as the control whose verdict must not move (only where the
    timeout is one no machine reaches: the control must answer)."""
    proc = conformance("run", DATA / "cases", *CASE, *(("--runtime", "onnxruntime") if control else ()),
                       *_plugins(*kinds), "--out", out,
                       "--timeout", timeout, "--memory-limit", "1GiB", "--jobs", "2", "--no-ablation", "-q",
                       "--artifacts", "full", env={MARKER_ENV: str(marks)}, timeout=1200)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    by_runtime = {}
    for r in read_results(out / "results.jsonl"):
        by_runtime.setdefault(r["runtime"], []).append(r)
    if control:
        assert [r["verdict"] for r in by_runtime["onnxruntime"]] == ["pass"]
    wrong = {}
    for kind in kinds:
        _, verdict, words = KINDS[kind]
        got = by_runtime.get(f"hostile-{kind}", [])
        if len(got) != 1 or got[0]["verdict"] != verdict or words not in got[0]["message"]:
            wrong[kind] = [(r["verdict"], r["message"][:160]) for r in got]
    assert not wrong, json.dumps(wrong, indent=1)
    for name in ("index.html", "junit.xml", "summary.md", "run.json"):
        assert (out / name).stat().st_size > 0, name
    return proc, by_runtime


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memory is read from /proc, and "
                    "process groups are POSIX: the rest of the suite covers other systems")
def test_every_misbehaving_runtime_costs_one_clean_verdict_and_the_run_completes(tmp_path):
    """Two runs, so that no verdict races the clock: the doubles that answer (or crash, or grow
    until the memory limit kills them) under a timeout no loaded machine reaches, and those that
    never answer under a short one (they time out whatever it is)."""
    assert HANGS and "memory-growth" in ANSWERS
    marks = tmp_path / "marks"
    marks.mkdir()
    proc, by_runtime = _hostile_run(tmp_path / "answers", ANSWERS, NEVER_REACHED_S, marks)
    # the chatter did not reach the terminal: it is attached to its own verdict
    assert len(proc.stdout) < 200_000
    chatter = by_runtime["hostile-chatter"][0]
    assert chatter["runtime_output"].endswith("x\n") and len(chatter["runtime_output"]) <= 4001
    _hostile_run(tmp_path / "hangs", HANGS, "3", marks, control=False)
    # nothing the runtimes started outlives the run
    for name in ("child-left-running", "orphan-making-hang", "orphan-making-hang-worker"):
        pids = _pids(marks, name)
        assert pids, name
        assert not [p for p in pids if _alive(p)], f"{name} left {pids} running"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and PR_SET_PDEATHSIG")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_the_run_kills_its_workers_and_what_they_started(tmp_path, sig):
    marks = tmp_path / "marks"
    marks.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{MARKER_ENV: str(marks)})
    args = [sys.executable, "-m", "conformance", "run", str(DATA / "cases"), *CASE,
            *_plugins("orphan-making-hang"), "--timeout", "300", "--out", str(tmp_path / "out"), "-q"]
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + budget(120)
    while time.time() < deadline and not (_pids(marks, "orphan-making-hang") and
                                          _pids(marks, "orphan-making-hang-worker")):
        time.sleep(0.1)
    started = _pids(marks, "orphan-making-hang") + _pids(marks, "orphan-making-hang-worker")
    assert len(started) == 2 and all(_alive(p) for p in started)
    os.kill(proc.pid, sig)
    proc.wait(timeout=30)
    deadline = time.time() + budget(10)
    while time.time() < deadline and any(_alive(p) for p in started):
        time.sleep(0.1)
    assert not [p for p in started if _alive(p)], f"{started} outlived the run killed by {sig.name}"


def _control_run(out, *extra, env=None):
    conformance("run", DATA / "cases", "--spec", "onnx-14", "--runtime", "onnxruntime", "--runtime", "onnx-reference",
                *extra, "--out", out, "--no-ablation", "-q", env=env)
    return {(r["case"], r["target"]): (r["verdict"], r.get("max_abs_err"), r.get("max_ulp"))
            for r in read_results(out / "results.jsonl") if not r["runtime"].startswith("hostile")}


def test_a_runtime_that_patches_its_process_changes_only_its_own_verdicts(tmp_path):
    clean = _control_run(tmp_path / "clean")
    hostile = _control_run(tmp_path / "hostile", "--runtime-plugin", "tests.doubles.hostile:NumpyPatcher",
                           "--runtime", "hostile-patcher", env={"CONFORMANCE_HOSTILE_PATCH_AT_IMPORT": "1"})
    assert clean and hostile == clean
    patched = [r for r in read_results(tmp_path / "hostile" / "results.jsonl") if r["runtime"] == "hostile-patcher"]
    assert patched and {r["verdict"] for r in patched if r["expect"] == "valid"} == {"fail"}


def test_two_runs_into_one_folder_the_second_stops_and_names_the_first(tmp_path):
    out, hold = tmp_path / "out", tmp_path / "hold"
    hold.touch()   # the first run's calls wait while it exists: it holds the folder for as long as the test needs
    env = dict(os.environ, PYTHONPATH=str(ROOT), CONFORMANCE_TEST_HOLD=str(hold))
    args = [sys.executable, "-m", "conformance", "run", str(DATA / "cases"), "--runtime", "counting-ort",
            "--runtime-plugin", "tests.doubles.plugins:OnlyOnce", "--out", str(out), "-q", "--no-ablation",
            "--timeout", "3600"]
    first = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while first.poll() is None and not (out / ".conformance.lock").exists():
            time.sleep(0.05)
        second = conformance(*args[3:])
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"is being written by another run (PID {first.pid})" in second.stdout
    finally:
        hold.unlink()
        first.wait(timeout=600)
    records = read_results(out / "results.jsonl")
    assert len(records) == len({(r["case"], r["target"]) for r in records}) == 9


@pytest.fixture
def small_disk(tmp_path):
    """A folder on a tmpfs of 96 KiB (mounted as root), grown to 64 MiB by calling the fixture's value."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("a full disk is simulated with a small tmpfs, which needs root to mount here")
    try:
        yield folder, lambda: subprocess.run(["mount", "-o", "remount,size=64m", str(folder)], check=True)
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_full_disk_ends_the_run_with_one_line_and_a_later_resume_works(small_disk):
    folder, grow = small_disk
    out = folder / "out"
    args = ["run", "cases/gru", "-k", "basic", "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", out, "-q",
            "--no-ablation"]
    proc = conformance(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "No space left on device" in proc.stdout and str(folder) in proc.stdout
    assert len(proc.stdout.strip().splitlines()) == 1, proc.stdout
    kept = read_results(out / "results.jsonl")
    grow()
    done = conformance(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(kept)} resumed from earlier" in done.stdout
    final = read_results(out / "results.jsonl")
    listed = conformance("list", "cases/gru", "-k", "basic").stdout.strip().splitlines()
    assert len({(r["case"], r["target"]) for r in final}) == len(listed) == len(final) > len(kept)


def test_results_that_are_not_a_file_are_refused_not_read(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").symlink_to("/dev/zero")  # reading it would never end
    proc = conformance("run", DATA / "cases", "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", out, "-q",
                       "--no-ablation")
    assert proc.returncode == 2 and "is not a regular file" in proc.stdout, proc.stdout + proc.stderr


def test_resume_rejudges_a_pair_whose_tolerance_changed(tmp_path):
    out = tmp_path / "out"
    base = ["run", DATA / "cases", "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", out, "--no-ablation",
            "--artifacts", "full"]
    conformance(*base, "--tolerance", "fixed-rel-1e-2", "-q")
    first = read_results(out / "results.jsonl")
    assert {r["tolerance"].get("name") for r in first if r["expect"] == "valid"} == {"fixed-rel-1e-2"}
    again = conformance(*base)
    assert "0 resumed from earlier" in again.stdout, again.stdout
    latest = {(r["case"], r["target"]): r for r in read_results(out / "results.jsonl")}
    assert {r["tolerance"].get("name") for r in latest.values() if r["expect"] == "valid"} == {"derived"}
    same = conformance(*base)
    assert "3 resumed from earlier" in same.stdout, same.stdout


def test_resume_rejudges_when_an_expectation_tolerance_goes(tmp_path):
    out = tmp_path / "out"
    exp = tmp_path / "exp.yaml"
    exp.write_text('entries:\n  - cases: "gru/small*"\n    tolerance: {abs: 0.5, rel: 0, source: "a loose test"}\n'
                   '    reason: loose\n')
    base = ["run", DATA / "cases", "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", out, "--no-ablation",
            "--artifacts", "full"]
    conformance(*base, "--expectations", exp)
    empty = tmp_path / "none.yaml"
    empty.write_text("entries: []\n")
    again = conformance(*base, "--expectations", empty)
    assert "1 resumed from earlier" in again.stdout, again.stdout  # only the invalid case stays
    latest = {(r["case"], r["target"]): r for r in read_results(out / "results.jsonl")}
    assert all(r["tolerance"]["kind"] == "derived" for r in latest.values() if r["expect"] == "valid")


def test_the_ablation_skips_hangs_and_keeps_to_its_time(tmp_path):
    """Its time limit is tested at 0 s, where it is a fact, not a race: a spent limit starts no
    ablation run and lists every group as not ablated; given time, the same groups get causes."""
    out = tmp_path / "out"
    # the zeros double must answer: its timeout is scaled by the machine's load now (tests/calibration.py)
    args = ["run", DATA / "cases", "--spec", "onnx-14", *_plugins("hang", "zeros"), "--timeout", budget_arg(3),
            "--out", out, "-q"]
    proc = conformance(*args, "--ablation-time", "0")
    assert proc.returncode == 1
    clusters = json.loads((out / "clusters.json").read_text())
    assert all("hostile-hang" not in c["target"] for c in clusters)      # timeouts are not ablated
    zeros = [c for c in clusters if "hostile-zeros" in c["target"]]
    assert zeros and all(c["cause"].startswith("not ablated: the ablation's time budget (0 s)") for c in zeros)
    assert all(c["ablations"] == [] for c in zeros), "no ablation run started"
    proc = conformance(*args)     # resumed: the same pairs, now ablated
    assert proc.returncode == 1 and "resumed from earlier" in proc.stdout
    zeros = [c for c in json.loads((out / "clusters.json").read_text()) if "hostile-zeros" in c["target"]]
    assert zeros and not any(c["cause"].startswith("not ablated") for c in zeros) and zeros[0]["ablations"], zeros


def test_the_fuzzer_keeps_its_budget_with_a_crashing_runtime(tmp_path):
    """The campaign's own clock (from the command's start; the interpreter's start-up comes before
    it): it starts no case after its budget, so it overruns by at most the call under way when the
    budget ran out (its --timeout) and what no timeout bounds, a crashed worker's replacement
    starting and the findings' writing: 5 s on an idle machine, scaled by the load now
    (tests/calibration.py)."""
    budget, timeout, before = 30, 10, budget_s(5)
    proc = conformance("fuzz", "--budget", f"{budget}s", *_plugins("segfault"), "--spec", "onnx-22",
                       "--out", tmp_path / "found", "--no-database", "--seed", "3", "-q", "--jobs", "2",
                       "--timeout", str(timeout))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    elapsed = float(re.search(r"targets in (\d+) s", proc.stdout).group(1))
    # the load during the campaign is what its last steps met: the larger of the calibrations before and after
    slack = max(before, budget_s(5))
    assert elapsed <= budget + timeout + slack, proc.stdout + f"\n(slack {slack:.1f} s)"


def test_a_report_rebuilt_beside_a_torn_clusters_file_warns_and_goes_on(tmp_path):
    out = tmp_path / "out"
    conformance("run", DATA / "cases", "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", out, "-q",
                "--no-ablation", check=0)
    (out / "clusters.json").write_text("")          # what a kill at the wrong moment once left
    proc = conformance("report", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "clusters.json: cannot read JSON" in proc.stderr and "goes on without it" in proc.stderr
    assert (out / "index.html").stat().st_size > 0


def test_a_plugins_native_stderr_goes_with_its_verdict_and_target_never_to_the_terminal(tmp_path):
    """issue 16: a plugin whose C code writes red log lines to fd 2 on import, build and every run."""
    # tests/doubles/native_chatter.py
    imported, built, ran = "NATIVE-IMPORT-MARKER", "NATIVE-BUILD-MARKER", "NATIVE-RUN-MARKER"
    out = tmp_path / "out"
    # --artifacts full: a passing pair's record keeps its detail, runtime_output included
    proc = conformance("run", DATA / "cases", *CASE, "--runtime-plugin", "tests.doubles.native_chatter:NativeChatter",
                       "--runtime", "native-chatter", "--out", out, "--no-ablation", "--artifacts", "full", check=0)
    for marker in (imported, built, ran):
        assert marker not in proc.stdout + proc.stderr, marker
    assert "\x1b[1;31m" not in proc.stdout + proc.stderr
    (rec,) = read_results(out / "results.jsonl")
    # the tail of the 50 lines (serve.OUTPUT_KEPT characters) goes with the verdict
    assert rec["verdict"] == "pass" and rec["runtime_output"].count(ran) >= 40
    (target,) = json.loads((out / "run.json").read_text())["targets"]
    assert imported in target["load_output"] and built in target["load_output"]


def test_a_plugin_that_fails_to_load_says_what_it_printed(tmp_path):
    (tmp_path / "loud_broken.py").write_text("import os\nos.write(2, b'libfoo.so: cannot open shared object')\n"
                                             "raise ImportError('no libfoo')\n")
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", str(DATA / "cases"), "--runtime-plugin",
                           "loud_broken:X", "--out", str(tmp_path / "out"), "-q"], cwd=tmp_path, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ImportError: no libfoo" in proc.stderr and "it printed: 'libfoo.so: cannot open" in proc.stderr
