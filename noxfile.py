"""Sessions: conformance (the main job), conformance-all (with the engines), conformance-converters (the
converter targets), conformance-gpu (the GPU packages), tests (every tier), unit (the unit tier, no runtime
installed), smoke, fuzz, history (across releases), bench, lint (ruff and mypy).

Every session installs the pinned, tested versions from constraints.txt (torch pinned so these
machines take the local CPU build).
"""

import hashlib
import os
from pathlib import Path

import nox

nox.options.sessions = ["conformance"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

PYTHON = "3.11"
JOBS = str(max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)))


#: what an environment's packages follow from: when none of it changed, a session does not install again
INSTALLED_FROM = ("constraints.txt", "pyproject.toml")
#: the extras that install the runtimes: the CPU packages, or the GPU ones (onnxruntime-gpu instead of
#: onnxruntime: both distributions provide the `onnxruntime` module and must never be installed together)
RUNTIMES, RUNTIMES_GPU = "runtimes", "runtimes-gpu"


def install(session, extras="runtimes,test,cluster"):
    """The pinned packages, once per change: a stamp in the environment records what they were
    installed from (constraints.txt, pyproject.toml, the extras), and a later call with the same
    skips pip (about a minute of resolving on 2 cores). CONFORMANCE_REINSTALL=1 installs anyway."""
    key = hashlib.sha256("\0".join([extras, *(Path(f).read_text() for f in INSTALLED_FROM)]).encode()).hexdigest()
    stamp = Path(session.virtualenv.location or ".") / ".conformance-installed"
    if stamp.is_file() and stamp.read_text() == key and not os.environ.get("CONFORMANCE_REINSTALL"):
        session.log(f"packages up to date ({' and '.join(INSTALLED_FROM)} unchanged since they were installed; "
                    f"CONFORMANCE_REINSTALL=1 installs again)")
    else:
        if {RUNTIMES, RUNTIMES_GPU} & set(extras.split(",")):
            # these development machines take a local CPU file for it; elsewhere PyPI's wheel, which on
            # Linux x86_64 is the CUDA build
            session.install("-c", "constraints.txt", "torch==2.13.0")
        session.install("-c", "constraints.txt", "-e", f".[{extras}]")
        if session.virtualenv.location:
            stamp.write_text(key)
    if not {RUNTIMES, RUNTIMES_GPU} & set(extras.split(",")):
        return
    # a browser whose WebNN works, cached in ~/.cache/rnn-conformance/ (npm and node needed; without
    # them, or offline, the webnn runtime is a declared gap): docs/webnn.md. Found in under a second
    # when it is there (its probe is cached)
    session.run("python", "-m", "conformance.runtimes.webnn_browser", "--install", success_codes=[0, 1])


def out_of(args, default: str) -> str:
    """The folder a `conformance run` writes: its --out (or --out=DIR) among ``args``, else ``default``."""
    for i, arg in enumerate(args):
        if arg == "--out" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--out="):
            return arg.split("=", 1)[1]
    return default


@nox.session(python=PYTHON)
def conformance(session):
    """Run the corpus on every runtime present; write reports/latest/ (posargs go to `conformance run`).

    The known divergences of the pinned runtimes are in expectations/: the session fails only on a
    divergence none of them covers (exit status 1), as a vendor's CI gate would.
    """
    install(session, "runtimes")
    args = session.posargs or ["cases", "--out", "reports/latest"]
    session.run("conformance", "run", "--jobs", JOBS, *args)
    session.log(f"report: {out_of(args, 'reports/latest')}/index.html (results.jsonl, junit.xml, summary.md beside it)")


@nox.session(name="conformance-all", python=PYTHON)
def conformance_all(session):
    """The corpus on today's runtimes and the engines (the `engines` extra: tract, MNN, IREE, Apache TVM;
    docs/engines.md); write reports/all/ (posargs go to `conformance run`). Gated on expectations/
    like `conformance`."""
    install(session, "runtimes,engines")
    args = session.posargs or ["cases", "--out", "reports/all"]
    session.run("conformance", "run", "--jobs", JOBS, *args)
    session.log(f"report: {out_of(args, 'reports/all')}/index.html")


@nox.session(name="conformance-converters", python=PYTHON)
def conformance_converters(session):
    """The converter targets (the `converters` extra; docs/converters.md): the suite's torch programs
    exported by torch.onnx (TorchScript at opsets 14, 17, 20; dynamo at 18, with and without dynamic axes)
    and converted by openvino.convert_model, and its ONNX programs moved by onnx.version_converter,
    converted to float16 and simplified by onnxsim, each then run by onnxruntime or OpenVINO; writes
    reports/converters/ (posargs go to `conformance run`). Gated on expectations/ like `conformance`."""
    install(session, "runtimes,converters")
    args = session.posargs or ["cases", "--out", "reports/converters"]
    session.run("conformance", "run", "--converter", "all", "--jobs", JOBS, *args)
    session.log(f"report: {out_of(args, 'reports/converters')}/index.html")


@nox.session(name="conformance-gpu", python=PYTHON)
def conformance_gpu(session):
    """The corpus on every runtime present, with the GPU packages (the `runtimes-gpu` extra): onnxruntime-gpu
    instead of onnxruntime (its CUDA execution provider in two precision configurations, and TensorRT's), with
    the CUDA and cuDNN libraries from PyPI; torch's CUDA build; OpenVINO (its GPU plugin where an Intel GPU
    is) and WebNN's browser as `conformance` installs them. Writes reports/gpu/ (posargs go to `conformance
    run`); gated on expectations/ like `conformance`. A GPU that is absent is a declared gap, with its reason
    (docs/targets.md, "GPUs"). For a machine with an NVIDIA GPU: several GB of downloads."""
    install(session, RUNTIMES_GPU)
    args = session.posargs or ["cases", "--out", "reports/gpu"]
    session.run("conformance", "run", "--jobs", JOBS, *args)
    session.log(f"report: {out_of(args, 'reports/gpu')}/index.html")


@nox.session(python=PYTHON)
def production(session):
    """The production tier (cases/production/, docs/production.md) on every runtime present; write
    reports/production/ (posargs go to `conformance run`)."""
    install(session, "runtimes")
    args = session.posargs or ["cases", "--tier", "production", "--out", "reports/production"]
    session.run("conformance", "run", "--jobs", JOBS, "--timeout", "600", *args)
    session.log(f"report: {out_of(args, 'reports/production')}/index.html")


#: what `nox -s tests` installs that tests need (the runtimes, Playwright, Dask's distributed, the converters): a
#: test that needs one of them fails where it is missing instead of skipping (tests/conftest.py, `runtime`); the
#: engines, CUDA, a real DirectML and a WebNN browser stay optional
REQUIRED_RUNTIMES = "onnxruntime,openvino,torch,playwright,distributed,onnxscript,onnxsim,onnxconverter_common"

#: what the coverage figure is of: the suite's own packages (docs/development.md, "Coverage")
COVERAGE = ("--cov=conformance", "--cov=oracles", "--cov-report=term:skip-covered")


@nox.session(python=PYTHON)
def tests(session):
    """The suite's own tests, every tier (tests/unit, tests/runtime, tests/corpus; docs/development.md),
    on the real runtimes (the real converters too), with the coverage of conformance/ and oracles/.
    The fast loop: `nox -s unit` (or `nox -s tests -- tests/unit`)."""
    install(session, "runtimes,test,cluster,converters")
    # -v: each test's name as it runs (a CI log shows progress); -rfEs: every failure, error and skip with
    # its reason in the summary; --durations: the slowest tests at the end
    session.run("pytest", "-v", "-rfEs", "--durations=15", "-p", "no:cacheprovider", *COVERAGE, *session.posargs,
                env={"CONFORMANCE_REQUIRE_RUNTIMES": REQUIRED_RUNTIMES})


@nox.session(python=PYTHON)
def unit(session):
    """The unit tier (tests/unit) in an environment with no runtime installed (the project and its `test`
    extra only): no onnxruntime, OpenVINO, torch, browser, engine or Dask is importable, which is what
    the tier promises. The fast loop while editing (docs/development.md, "The fast loop"), so without the
    coverage measurement (which about doubles its time): `nox -s unit -- --cov=conformance --cov=oracles` adds it."""
    install(session, "test")
    session.run("pytest", "-q", "-rfEs", "--durations=5", "-p", "no:cacheprovider", "tests/unit", *session.posargs)


@nox.session(python=PYTHON)
def smoke(session):
    """A short `conformance run` on a few cases: exits non-zero on any failing verdict."""
    install(session, "runtimes")
    session.run("conformance", "run", "cases", "-k", "basic or cell", "--out", "reports/smoke", "--fresh",
                "--jobs", JOBS, "--quiet", *session.posargs)


@nox.session(python=PYTHON)
def fuzz(session):
    """The differential fuzzer on every runtime present (posargs go to `conformance fuzz`, default
    `--budget 10m`): minimized findings go to reports/fuzz/, and into cases/regressions/ only with
    `-- --keep`; the divergences expectations/ knows and the findings in cases/regressions/ are not
    reported again (`--no-expectations` reports them). Its hypothesis database in
    .hypothesis/conformance-fuzz lets the next campaign continue where this one stopped.

    Exit status 1 from `conformance fuzz` means new findings were written; the session still
    succeeds then, since writing them is its job.
    """
    install(session, "runtimes")
    args = session.posargs or ["--budget", "10m"]
    session.run("conformance", "fuzz", "--jobs", JOBS, *args, success_codes=[0, 1])


#: the default history: 8 release lines of onnxruntime and 6 of OpenVINO, evenly spread over the
#: releases the suite supports (pyproject.toml's `runtimes` extra; older ones need --allow-unsupported)
HISTORY = ["onnxruntime==1.18.0..1.32.0:8", "openvino==2024.0.0..2026.4.1:6"]


@nox.session(python=PYTHON)
def history(session):
    """Conformance across releases (docs/history.md): one cached environment per release of
    onnxruntime and OpenVINO, the corpus's representative subset on each, merged into
    reports/history/ with history.html (posargs go to `conformance history`, e.g.
    `-- onnxruntime==1.20.1,1.32.0 --full`). Needs the package index once per release. Exit status 1
    when the newest releases have a divergence expectations/ does not cover, or a class regresses."""
    # the pinned OpenVINO writes the IR programs every release reads (the translator builds them with
    # OpenVINO's own builders, in this process); each release runs in its own environment
    session.install("-c", "constraints.txt", "-e", ".", "openvino")
    args = session.posargs or HISTORY
    session.run("conformance", "history", "--jobs", JOBS, "--expectations", "expectations", *args)
    session.log("report: reports/history/history.html (index.html beside it)")


@nox.session(python=PYTHON)
def bench(session):
    """Throughput and overhead measurements (benchmarks/)."""
    install(session)
    session.run("python", "benchmarks/run_all.py", *session.posargs)


@nox.session(python=PYTHON)
def lint(session):
    """ruff (pyproject.toml [tool.ruff]: the checks and the line length), mypy ([tool.mypy]), both pinned in
    constraints.txt, and the module-size rule ([tool.conformance.module-size])."""
    session.install("-c", "constraints.txt", "ruff", "mypy", "types-PyYAML", "types-jsonschema")
    session.run("ruff", "check", "conformance", "oracles", "tests", "benchmarks", "noxfile.py")
    session.run("mypy", "conformance", "oracles")
    session.run("python", "tests/module_size.py")   # the module-size rule, in one place
