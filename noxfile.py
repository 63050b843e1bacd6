"""Sessions: conformance (the main job), tests, smoke, bench, lint.

Every session installs the pinned, tested versions from constraints.txt (torch pinned so these
machines take the local CPU build).
"""

import os

import nox

nox.options.sessions = ["conformance"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

PYTHON = "3.11"
JOBS = str(max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)))


def install(session, extras="runtimes,test"):
    session.install("-c", "constraints.txt", "torch==2.13.0")
    session.install("-c", "constraints.txt", "-e", f".[{extras}]")


@nox.session(python=PYTHON)
def conformance(session):
    """Run the corpus on every runtime present; write reports/latest/ (posargs go to `conformance run`).

    Exit status 1 from `conformance run` means divergences were found and reported; the session
    still succeeds then, since writing the report is its job. Gate on the exit status of
    `conformance run` itself in CI.
    """
    install(session, "runtimes")
    args = session.posargs or ["cases", "--out", "reports/latest"]
    session.run("conformance", "run", "--jobs", JOBS, *args, success_codes=[0, 1])
    session.log("report: reports/latest/results.jsonl (see README: Reading the results)")


@nox.session(python=PYTHON)
def tests(session):
    """The suite's own tests, on the real runtimes."""
    install(session)
    session.run("pytest", "-q", "-p", "no:cacheprovider", *session.posargs)


@nox.session(python=PYTHON)
def smoke(session):
    """A short `conformance run` on a few cases: exits non-zero on any failing verdict."""
    install(session, "runtimes")
    session.run("conformance", "run", "cases", "-k", "basic", "--out", "reports/smoke", "--fresh",
                "--jobs", JOBS, "--quiet", *session.posargs)


@nox.session(python=PYTHON)
def bench(session):
    """Throughput and overhead measurements (benchmarks/)."""
    install(session)
    session.run("python", "benchmarks/run_all.py", *session.posargs)


@nox.session(python=PYTHON)
def lint(session):
    session.install("ruff")
    session.run("ruff", "check", "conformance", "oracles", "tests", "benchmarks")
