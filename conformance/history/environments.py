"""One isolated environment per runtime release, cached between runs.

An environment is a virtual environment under the cache folder (``~/.cache/rnn-conformance/history``,
or ``$RNN_CONFORMANCE_CACHE/history``) named ``PACKAGE-VERSION``, holding that release and a numpy it
imports with (and the ml_dtypes that goes with it, for bfloat16), and a link to the suite's ``conformance`` package (only its runtime adapters are
imported there). It is made once: ``ready.json`` records what was installed and the import check;
a release that cannot be installed or imported keeps its reason there too and is not tried again
unless ``--retry`` asks. numpy is the pinned one first (constraints.txt); where the release was
built against numpy 1 and fails to import with numpy 2, ``numpy<2``.
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
RECIPE = 2


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
    #: the adapter modules its targets come from (default: those of ``package`` in versions.PACKAGES)
    modules: tuple = ()

    @property
    def name(self) -> str:
        return f"{self.package}-{self.version}"

    def to_json(self) -> dict:
        return {"package": self.package, "version": self.version, "python": self.python, "error": self.error,
                "installed": self.installed}


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


def _import_check(python: Path, package: str) -> str:
    """'' when the release imports there, else the error's last line."""
    module = IMPORT_NAMES[package]
    done = subprocess.run([str(python), "-s", "-c", f"import {module}, numpy; print({module}.__version__)"],
                          capture_output=True, text=True, timeout=300, env=environment())
    if done.returncode == 0:
        return ""
    lines = [ln for ln in (done.stderr or done.stdout).strip().splitlines() if ln.strip()]
    return lines[-1][:400] if lines else f"exit status {done.returncode}"


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
        if not env.error:
            _link_suite(folder, python)
        return env
    log(f"making the environment of {package}=={version} in {folder} ...")
    folder.mkdir(parents=True, exist_ok=True)
    venv.EnvBuilder(with_pip=True, clear=True, symlinks=os.name != "nt").create(folder)
    env.python = str(python)
    error = ""
    for numpy_req in (_pinned("numpy"), "numpy<2"):
        # ml_dtypes: the bfloat16 arrays the adapters exchange with OpenVINO (pinned beside the pinned
        # numpy; with numpy 1, the newest that supports it)
        dtypes = _pinned("ml_dtypes") if numpy_req.startswith("numpy==") else "ml_dtypes<0.5"
        done = _pip(python, "install", "-q", "--only-binary", ":all:", f"{package}=={version}", numpy_req, dtypes)
        if done.returncode != 0:
            error = "could not be installed: " + " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:600]
            continue
        error = _import_check(python, package)
        if not error:
            break
        error = f"could not be imported (with {numpy_req}): {error}"
    if not error:
        _link_suite(folder, python)
        listed = _pip(python, "list", "--format", "json")
        env.installed = {p["name"]: p["version"] for p in json.loads(listed.stdout or "[]")}
    env.error = error
    ready.write_text(json.dumps({**env.to_json(), "recipe": RECIPE, "host_python": sys.version.split()[0],
                                 "platform": sysconfig.get_platform()}, indent=2))
    return env
