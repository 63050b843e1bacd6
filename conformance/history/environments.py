"""One isolated environment per runtime release, cached between runs.

An environment is a virtual environment under the cache folder (``~/.cache/rnn-conformance/history``,
or ``$RNN_CONFORMANCE_CACHE/history``) named ``PACKAGE-VERSION``, holding that release and a numpy it
imports with (and the ml_dtypes that goes with it, for bfloat16), and a link to the suite's
``conformance`` package (only its runtime adapters are imported there). It is made once:
``ready.json`` records what was installed and the import check;
a release that cannot be installed or imported keeps its reason there too and is not tried again
unless ``--retry`` asks.

numpy's major version follows the release's build: the release's wheel goes in first, alone, and
its own metadata (``Requires-Dist``) says which numpy it takes; the pinned numpy (constraints.txt)
where it admits it, else ``numpy<2``. A release built against numpy 1 may not say so: under numpy 2
its import prints "A module that was compiled using NumPy 1.x cannot be run in NumPy 2" and a
``SystemError`` and still exits 0, and every call then crashes. The import check reads what the
import printed (:func:`import_problem`), so such an import fails the check and the environment is
made again with ``numpy<2``; a release that prints it under both is *broken*, with the reason.
A release's version is its module's ``__version__``, else its package metadata's (OpenVINO 2023.0
has no ``openvino.__version__``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from dataclasses import dataclass, field
from pathlib import Path

import conformance
from conformance.history.proxy import environment
from conformance.history.versions import IMPORT_NAMES

#: seconds pip may take to install one release
INSTALL_TIMEOUT = 900
#: what an environment holds, as a number: an environment made by another recipe is made again
RECIPE = 3
#: what an import prints when a module built against numpy 1 meets numpy 2 (then its calls crash)
NUMPY_ABI = ("compiled using NumPy 1.x", "_ARRAY_API not found", "numpy.core.multiarray failed to import")


def cache_root() -> Path:
    base = os.environ.get("RNN_CONFORMANCE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "rnn-conformance")
    return Path(base) / "history"


@dataclass
class Env:
    package: str
    version: str
    folder: Path
    python: str = ""
    error: str = ""                 # why it cannot be used ("" when it can)
    installed: dict = field(default_factory=dict)  # name → version, as pip reports them
    #: "" (ready), "unavailable" (not installed), "broken" (installed; its import or probes show it cannot work)
    state: str = ""
    numpy: dict = field(default_factory=dict)      # the numpy requirement chosen, and why
    #: the adapter modules its targets come from (default: those of ``package`` in versions.PACKAGES)
    modules: tuple = ()

    @property
    def name(self) -> str:
        return f"{self.package}-{self.version}"

    def to_json(self) -> dict:
        return {"package": self.package, "version": self.version, "python": self.python, "error": self.error,
                "state": self.state or ("unavailable" if self.error else "ready"), "installed": self.installed,
                "numpy": self.numpy, **({"modules": list(self.modules)} if self.modules else {})}


def _python_of(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _link_suite(folder: Path, python: Path) -> None:
    """Make the suite's ``conformance`` package importable there (a link beside, and a .pth)."""
    suite = folder / "suite"
    suite.mkdir(exist_ok=True)
    link = suite / "conformance"
    target = Path(conformance.__file__).resolve().parent
    if link.is_symlink() or link.exists():
        if link.resolve() == target:
            return
        link.unlink()
    link.symlink_to(target, target_is_directory=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, env=environment()).stdout.strip()
    Path(site, "rnn_conformance_suite.pth").write_text(str(suite) + "\n")


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in environment().items() if not k.startswith(("PIP_NO_INDEX", "UV_"))}
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env)


def import_problem(returncode: int, stderr: str) -> str:
    """'' when an import went well, else why: the error's last line, or, for an import that exited
    0 but printed a ``SystemError`` (a module built against numpy 1 under numpy 2), that line and
    numpy's own sentence."""
    lines = [ln.strip() for ln in (stderr or "").splitlines() if ln.strip()]
    if returncode != 0:
        return lines[-1][:400] if lines else f"exit status {returncode}"
    errors = [ln for ln in lines if ln.startswith("SystemError")]
    if not errors:
        return ""
    abi = next((ln for ln in lines if any(mark in ln for mark in NUMPY_ABI)), "")
    return f"the import printed {errors[-1][:240]}" + (f" ({abi[:160]})" if abi else "")


def _import_check(python: Path, package: str) -> tuple[str, str]:
    """('' or why the release does not import there, its version): the module's ``__version__``,
    else its package metadata's."""
    module = IMPORT_NAMES[package]
    code = (f"import importlib.metadata, {module}, numpy\n"
            f"print(getattr({module}, '__version__', '') or importlib.metadata.version({package!r}))")
    done = subprocess.run([str(python), "-s", "-c", code], capture_output=True, text=True, timeout=300,
                          env=environment())
    return import_problem(done.returncode, done.stderr), done.stdout.strip()


def numpy_choices(requires: list[str], pinned: str) -> list[tuple[str, str]]:
    """[(numpy requirement, why)] to try, in order, for a release whose metadata lists ``requires``
    (its Requires-Dist): the ``pinned`` numpy (``numpy==X``) unless the release excludes it, then
    ``numpy<2`` (a release built against numpy 1 that does not say so fails the import check)."""
    from packaging.requirements import InvalidRequirement, Requirement
    version = pinned.partition("==")[2]
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.name.lower() == "numpy" and (req.marker is None or req.marker.evaluate({"extra": ""})):
            if version and not req.specifier.contains(version, prereleases=True):
                return [("numpy<2", f"its Requires-Dist says {text}")]
            return [(pinned, f"its Requires-Dist ({text}) admits the pinned {pinned}"),
                    ("numpy<2", f"with {pinned} the import failed, so the release was built against numpy 1")]
    return [(pinned, "its Requires-Dist names no numpy"),
            ("numpy<2", f"with {pinned} the import failed, so the release was built against numpy 1")]


def _requires(python: Path, package: str) -> list[str]:
    """The Requires-Dist of ``package`` as installed there ([] where it cannot be read)."""
    done = subprocess.run([str(python), "-s", "-c", f"import importlib.metadata as m, json; "
                           f"print(json.dumps(m.requires({package!r}) or []))"],
                          capture_output=True, text=True, timeout=120, env=environment())
    try:
        found = json.loads(done.stdout or "[]")
    except ValueError:
        return []
    return [str(x) for x in found] if isinstance(found, list) else []


def _not_installed(done: subprocess.CompletedProcess) -> str:
    return "could not be installed: " + " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:600]


def _pinned(name: str) -> str:
    """``name==VERSION`` as constraints.txt pins it, else as installed here."""
    root = Path(conformance.__file__).resolve().parent.parent / "constraints.txt"
    if root.is_file():
        for line in root.read_text().splitlines():
            if line.startswith(f"{name}=="):
                return line.strip()
    from importlib.metadata import version
    return f"{name}=={version(name)}"


def _read_ready(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def ensure(package: str, version: str, root: Path | None = None, retry: bool = False, log=print) -> Env:
    """The environment of ``package==version``, made if needed."""
    folder = (root or cache_root()) / f"{package}-{version}"
    env = Env(package, version, folder)
    python = _python_of(folder)
    ready = folder / "ready.json"
    data = _read_ready(ready)
    if data.get("recipe") == RECIPE and not (retry and data.get("error")):
        env.python, env.error, env.installed = data.get("python", ""), data.get("error", ""), data.get("installed", {})
        env.state = str(data.get("state") or "") if env.error else ""
        env.numpy = data.get("numpy") or {}
        if not env.error:
            _link_suite(folder, python)
        return env
    log(f"making the environment of {package}=={version} in {folder} ...")
    folder.mkdir(parents=True, exist_ok=True)
    venv.EnvBuilder(with_pip=True, clear=True, symlinks=os.name != "nt").create(folder)
    env.python = str(python)
    error, state = "", ""
    # the release's wheel alone first: its own metadata says which numpy it takes
    done = _pip(python, "install", "-q", "--only-binary", ":all:", "--no-deps", f"{package}=={version}")
    if done.returncode != 0:
        error, state = _not_installed(done), "unavailable"
        choices = []
    else:
        choices = numpy_choices(_requires(python, package), _pinned("numpy"))
    tried: list[str] = []
    for numpy_req, why in choices:
        # ml_dtypes: the bfloat16 arrays the adapters exchange with OpenVINO (pinned beside the pinned
        # numpy; with numpy 1, the newest that supports it)
        dtypes = _pinned("ml_dtypes") if numpy_req.startswith("numpy==") else "ml_dtypes<0.5"
        done = _pip(python, "install", "-q", "--only-binary", ":all:", f"{package}=={version}", numpy_req, dtypes)
        if done.returncode != 0:
            tried.append(f"with {numpy_req}: " + _not_installed(done))
            state = state or "unavailable"
            continue
        problem, _version = _import_check(python, package)
        if not problem:
            tried, state = [], ""
            env.numpy = {"requirement": numpy_req, "why": why}
            break
        tried.append(f"could not be imported (with {numpy_req}): {problem}")
        state = "broken"
    if tried:
        error = "; ".join(tried)[:1200]
    if not error:
        _link_suite(folder, python)
        listed = _pip(python, "list", "--format", "json")
        env.installed = {p["name"]: p["version"] for p in json.loads(listed.stdout or "[]")}
    env.error, env.state = error, state
    ready.write_text(json.dumps({**env.to_json(), "recipe": RECIPE, "host_python": sys.version.split()[0],
                                 "platform": sysconfig.get_platform()}, indent=2))
    return env
