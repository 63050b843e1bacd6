"""A bundle is verified before it is written: ``repro.py`` runs in a fresh interpreter that can
import only the pinned requirements, from a copy of the bundle in a scratch folder.

Two ways, chosen by ``mode``:

- ``venv``: a virtual environment holding exactly ``requirements.txt`` (``pip install -r``, wheels
  only), made once per set of requirements under the suite's cache folder
  (``~/.cache/rnn-conformance/bugreport/venv-<digest>``) and never touched by the suite after;
  ``python -I repro.py`` runs there.
- ``isolated``: this interpreter with ``-I`` (no PYTHONPATH, no user site, no current folder on the
  path) and the suite's own packages (``conformance``, ``oracles``) hidden from imports; first it
  checks that every requirement is installed at its pinned version.

``auto`` makes or reuses the venv and falls back to ``isolated`` where the packages cannot be
installed (no package index), saying why. The verdict of the run: exit status 1 is *reproduced*;
0 is *not reproduced* (the divergence did not show outside the suite); anything else (a traceback,
a missing package, a timeout, an exit status 1 without the line repro.py prints when the divergence
shows) is *not reproduced* with that as the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from dataclasses import asdict, dataclass
from pathlib import Path

from conformance import caches

MODES = ("auto", "venv", "isolated")
#: seconds pip may take to make one environment, and repro.py to run
INSTALL_TIMEOUT = 1200
RUN_TIMEOUT = 600
#: the line repro.py prints when the divergence shows (with exit status 1; a traceback also exits 1)
MARKER = "the divergence shows"
#: what repro.py prints before the runtime's refusal
REFUSED = "refused the model: "
#: the suite's own top-level packages, which the isolated interpreter cannot import
SUITE_PACKAGES = ("conformance", "oracles")
#: run in the isolated interpreter before repro.py: hide the suite, check the pins, run the script
ISOLATED = r"""
import importlib.abc, importlib.metadata as md, runpy, sys
HIDDEN = {hidden!r}
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}} (the suite's packages are hidden)", name=name)
        return None
sys.meta_path.insert(0, Hide())
for line in {requirements!r}:
    name, _, pinned = line.partition("==")
    try:
        found = md.version(name)
    except md.PackageNotFoundError:
        sys.exit(f"requirement {{line}} is not installed here")
    if found.split("+")[0] != pinned.split("+")[0]:
        sys.exit(f"requirement {{line}}: {{found}} is installed here")
sys.argv = ["repro.py"]
runpy.run_path("repro.py", run_name="__main__")
"""


@dataclass
class Verification:
    reproduced: bool
    how: str                     # venv | isolated
    where: str                   # the interpreter that ran it
    exit_code: int | None
    output: str
    reason: str = ""             # why it did not reproduce ("" when it did)
    seconds: float = 0.0
    note: str = ""               # why ``auto`` fell back to ``isolated``

    def to_json(self) -> dict:
        return asdict(self)


def requirements_of(folder: Path) -> list[str]:
    lines = (Path(folder) / "requirements.txt").read_text().splitlines()
    return [ln.split("#", 1)[0].strip() for ln in lines if ln.split("#", 1)[0].strip()]


def _clean_env() -> dict:
    """The environment repro.py runs in: nothing that points Python at the suite."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


def environment_for(requirements: list[str], log=print) -> tuple[Path | None, str]:
    """(the interpreter of the venv holding exactly ``requirements``, "") or (None, why it could not be made)."""
    base = caches.folder("bugreport", "RNN_CONFORMANCE_BUGREPORT_VENVS")
    if base is None:
        return None, "RNN_CONFORMANCE_BUGREPORT_VENVS is off"
    folder = base / f"venv-{caches.digest(*sorted(requirements), sys.version)[:16]}"
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    ready = folder / "ready.txt"
    if ready.is_file():
        return python, ""
    log(f"making a fresh environment for {', '.join(requirements)} in {folder} ...")
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    venv.EnvBuilder(with_pip=True, clear=True, symlinks=os.name != "nt").create(folder)
    try:
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                               "--only-binary", ":all:", *requirements], capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT, env=_clean_env())
    except subprocess.TimeoutExpired:
        return None, f"pip did not install the requirements within {INSTALL_TIMEOUT} s"
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:600]
        shutil.rmtree(folder, ignore_errors=True)
        return None, f"pip could not install the requirements: {tail}"
    ready.write_text("\n".join(requirements) + "\n")
    return python, ""


def _run(command: list[str], folder: Path, timeout: float) -> tuple[int | None, str, float]:
    """``command`` in a scratch copy of ``folder``: (exit status or None on a timeout, output, seconds)."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bugreport-verify-") as tmp:
        copy = Path(tmp) / "bundle"
        shutil.copytree(folder, copy)
        try:
            done = subprocess.run(command, cwd=copy, capture_output=True, text=True, timeout=timeout,
                                  env=_clean_env())
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return None, out, time.perf_counter() - start
    return done.returncode, (done.stdout + done.stderr), time.perf_counter() - start


def verify(folder: Path, mode: str = "auto", timeout: float = RUN_TIMEOUT, log=print, refusal: str = "",
           modules: tuple = ()) -> Verification:
    """Run the bundle's repro.py as :data:`MODES` say; whether it reproduced, and why not. For a
    refused model, ``refusal`` is the runtime's message in the suite: repro.py's refusal must be
    the same one (a script that fails on its own is no reproduction), or an exception of the
    runtime's own ``modules`` (top-level import names)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is none of {MODES}")
    requirements = requirements_of(folder)
    note = ""
    if mode in ("auto", "venv"):
        python, why = environment_for(requirements, log)
        if python is not None:
            return _judge("venv", str(python), *_run([str(python), "-I", "repro.py"], folder, timeout),
                          refusal=refusal, modules=modules)
        if mode == "venv":
            return Verification(False, "venv", "", None, "", f"no fresh environment: {why}")
        note = f"no fresh environment ({why}); ran in this interpreter with the suite's packages hidden"
    source = ISOLATED.format(hidden=SUITE_PACKAGES, requirements=requirements)
    result = _judge("isolated", sys.executable, *_run([sys.executable, "-I", "-c", source], folder, timeout),
                    refusal=refusal, modules=modules)
    result.note = note
    return result


def verify_page(folder: Path, executable: str, timeout: float = RUN_TIMEOUT) -> Verification:
    """A WebNN report's repro.html in a fresh page of the browser ``executable`` (the suite's WebNN
    flags), the bundle served at http://localhost/ (a secure context): its ``window.reproResult``."""
    from playwright.sync_api import Error, sync_playwright

    from conformance.runtimes.webnn_browser import FLAGS
    types = {".html": "text/html; charset=utf-8", ".json": "application/json"}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bugreport-verify-") as tmp:
        copy = Path(tmp) / "bundle"
        shutil.copytree(folder, copy)

        def serve(route):
            path = copy / route.request.url.split("http://localhost/", 1)[1].split("?")[0]
            if path.is_file():
                route.fulfill(status=200, body=path.read_bytes(),
                              content_type=types.get(path.suffix, "application/octet-stream"))
            else:
                route.fulfill(status=404, body=b"")
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=executable, args=list(FLAGS))
                try:
                    page = browser.new_page()
                    page.route("http://localhost/**", serve)
                    page.goto("http://localhost/repro.html")
                    page.wait_for_function("window.reproResult !== null", timeout=timeout * 1000)
                    result = page.evaluate("window.reproResult")
                finally:
                    browser.close()
        except Error as exc:
            return _judge("browser", executable, None, f"the page did not finish: {exc}", time.perf_counter() - start)
    return _judge("browser", executable, int(result["exitCode"]), str(result["output"]), time.perf_counter() - start)


def _judge(how: str, where: str, code: int | None, output: str, seconds: float, refusal: str = "",
           modules: tuple = ()) -> Verification:
    name = "repro.html" if how == "browser" else "repro.py"
    tail = output.strip()[-4000:]
    shown = any(line.startswith(MARKER) for line in output.splitlines())
    refused = output.split(REFUSED, 1)[1].split("\n" + MARKER, 1)[0] if REFUSED in output else ""
    if code == 1 and shown and "Traceback (most recent call last)" not in output:
        # the runtime's refusal: the suite's words (in its exception, or printed by native code before
        # it), or an exception class of the runtime's own modules
        own = modules and refused.split(":", 1)[0].split(".")[0] in modules
        if refusal and not (same_refusal(refusal, refused) or same_refusal(refusal, output) or own):
            return Verification(False, how, where, code, tail,
                                f"{name}'s refusal ({refused[:300]}) is not the one the suite saw ({refusal[:300]})",
                                round(seconds, 2))
        return Verification(True, how, where, code, tail, "", round(seconds, 2))
    if code is None:
        reason = f"{name} did not finish within the time given; its output: {_last(tail)}"
    elif code == 1:
        reason = (f"{name} failed (exit status 1 without the divergence's line) instead of running the program: "
                  f"{_last(tail)}")
    elif code == 0:
        reason = f"{name} ran and the divergence did not show outside the suite ({_last(tail)})"
    else:
        reason = f"{name} failed (exit status {code}) instead of running the program: {_last(tail)}"
    return Verification(False, how, where, code, tail, reason, round(seconds, 2))


def same_refusal(suite: str, repro: str) -> bool:
    """Whether two refusal messages are the runtime's same refusal: they share a run of words at
    least half as long as the shorter message's (up to 40 characters), whatever each wraps it in."""
    import difflib
    a, b = " ".join(suite.split()), " ".join(repro.split())
    if not a or not b:
        return False
    match = difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b))
    return match.size >= min(40, max(8, min(len(a), len(b)) // 2))


def _last(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " / ".join(lines[-3:])[:600] if lines else "no output"
