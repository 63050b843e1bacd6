"""Finding, and where npm is present installing, a browser whose WebNN works.

Order (docs/webnn.md):

1. an explicit path: the environment variable ``CONFORMANCE_WEBNN_BROWSER`` (a Chrome, Chromium
   or Edge executable; ``find(explicit=...)`` in code) wins over everything;
2. a Chrome, Chromium or Edge on this machine that passes the WebNN probe (``createContext()``
   succeeds): Debian's ``chromium`` exposes ``navigator.ml`` but has no WebNN backend, so it fails
   the probe and is skipped, with the reason kept;
3. the browser the project installs: ``@sparticuz/chromium`` (a headless Chromium built with the
   LiteRT/XNNPACK WebNN backend), fetched with ``npm pack`` and unpacked with node's brotli into
   ``~/.cache/rnn-conformance/webnn-chromium-<version>/`` (``$XDG_CACHE_HOME`` respected).

``conformance run`` never installs anything: ``python -m conformance.runtimes.webnn_browser
--install`` does, and ``nox -s conformance`` / ``nox -s tests`` run it (where npm is present).
Probe results are cached per executable (path, size, modification time) in the same folder, so
discovery launches each candidate browser once, not at every run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ENV = "CONFORMANCE_WEBNN_BROWSER"
PACKAGE = "@sparticuz/chromium"
PACKAGE_VERSION = "153.0.0"
#: the flags every launch adds (WebNN is behind a feature flag in Chromium)
FLAGS = ("--enable-features=WebMachineLearningNeuralNetwork",)
#: executables tried on this machine, in order
CANDIDATES = ("google-chrome-stable", "google-chrome", "chrome", "chromium", "chromium-browser",
              "microsoft-edge-stable", "microsoft-edge", "msedge")
WINDOWS_PATHS = (r"C:\Program Files\Google\Chrome\Application\chrome.exe",
                 r"C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe",
                 r"C:\Program Files\Microsoft\Edge\Application\msedge.exe")
MAC_PATHS = ("/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
             "/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge")
DEVICE_TYPES = ("cpu", "gpu", "npu")
PROBE_TIMEOUT = 90.0


class NoBrowser(Exception):
    """No browser with a working WebNN here; the message says what was tried and why each failed."""


@dataclass(frozen=True)
class Browser:
    path: str
    how: str        # "CONFORMANCE_WEBNN_BROWSER" | "found on this machine" | "installed by the project"
    facts: dict     # the WebNN probe's answer (version, contexts, opSupportLimits)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rnn-conformance"


def installed_path() -> Path:
    return cache_dir() / f"webnn-chromium-{PACKAGE_VERSION}" / "chromium"


# -- the probe ------------------------------------------------------------------------------------

def probe(path: str, timeout: float = PROBE_TIMEOUT) -> dict:
    """Launch ``path`` headless, serve the replay page at http://localhost and ask it what WebNN
    offers: ``{"version", "contexts": {deviceType: {...}}, "contextOptionsRead", ...}``, or
    ``{"error": ...}``. Runs in a child process of its own (a browser that hangs costs the timeout)."""
    code = ("import json, sys; from conformance.runtimes.webnn import probe_browser; "
            "print(json.dumps(probe_browser(sys.argv[1])))")
    try:
        done = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                              timeout=timeout, cwd=str(Path(__file__).resolve().parents[2]))
    except subprocess.TimeoutExpired:
        return {"error": f"the WebNN probe did not answer within {timeout:g} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"the WebNN probe failed: {tail[:300]}"}
    return json.loads(lines[-1])


def usable(facts: dict) -> bool:
    return any(c.get("ok") for c in facts.get("contexts", {}).values())


def why_not(facts: dict) -> str:
    if "error" in facts:
        return facts["error"]
    if not facts.get("ml"):
        return "navigator.ml is absent (no WebNN in this build, or the page is not a secure context)"
    errors = sorted({c.get("error", "") for c in facts.get("contexts", {}).values() if not c.get("ok")})
    return "createContext() rejects: " + "; ".join(errors)


def _probe_cached(path: str) -> dict:
    """The probe's answer for ``path``, cached by (path, size, mtime)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return {"error": f"{path}: {exc.strerror}"}
    key = f"{os.path.realpath(path)}|{st.st_size}|{int(st.st_mtime)}"
    store = cache_dir() / "webnn-probe.json"
    try:
        known = json.loads(store.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]
    facts = probe(path)
    if "error" not in facts or "did not answer" not in facts["error"]:
        known[key] = facts
        try:
            store.parent.mkdir(parents=True, exist_ok=True)
            tmp = store.with_suffix(".tmp")
            tmp.write_text(json.dumps(known, indent=1))
            tmp.replace(store)
        except OSError:
            pass
    return facts


def machine_candidates() -> list[str]:
    found: list[str] = []
    for name in CANDIDATES:
        path = shutil.which(name)
        if path and os.path.realpath(path) not in {os.path.realpath(p) for p in found}:
            found.append(path)
    for path in (WINDOWS_PATHS if os.name == "nt" else MAC_PATHS if sys.platform == "darwin" else ()):
        if os.path.exists(path):
            found.append(path)
    return found


def find(explicit: str | None = None) -> Browser:
    """The browser to run WebNN in (see the module's docstring), or NoBrowser with every reason."""
    explicit = explicit or os.environ.get(ENV)
    if explicit:
        facts = _probe_cached(explicit)
        if usable(facts):
            return Browser(explicit, ENV if explicit == os.environ.get(ENV) else "explicit", facts)
        raise NoBrowser(f"{ENV}={explicit}: {why_not(facts)}")
    tried = []
    for path in machine_candidates():
        facts = _probe_cached(path)
        if usable(facts):
            return Browser(path, "found on this machine", facts)
        tried.append(f"{path}: {why_not(facts)}")
    mine = installed_path()
    if mine.exists():
        facts = _probe_cached(str(mine))
        if usable(facts):
            return Browser(str(mine), "installed by the project", facts)
        tried.append(f"{mine}: {why_not(facts)}")
    else:
        tried.append(f"{mine}: not installed (python -m conformance.runtimes.webnn_browser --install; "
                     "needs npm and node)")
    raise NoBrowser("no browser with a working WebNN: " + "; ".join(tried) +
                    f"; set {ENV} to a Chrome, Chromium or Edge whose WebNN works")


# -- the installer --------------------------------------------------------------------------------

def install(log=print) -> Path:
    """Fetch and unpack the project's WebNN-capable Chromium into the cache (once); its path."""
    target = installed_path()
    if target.exists():
        return target
    npm, node = shutil.which("npm"), shutil.which("node")
    if not npm or not node:
        raise NoBrowser("npm and node are needed to install the project's WebNN browser "
                        f"({PACKAGE}@{PACKAGE_VERSION}); neither is needed with {ENV} set")
    folder = target.parent
    with tempfile.TemporaryDirectory(prefix="webnn-chromium-") as tmp:
        log(f"webnn: fetching {PACKAGE}@{PACKAGE_VERSION} with npm pack")
        subprocess.run([npm, "pack", f"{PACKAGE}@{PACKAGE_VERSION}", "--silent"], cwd=tmp, check=True,
                       capture_output=True, timeout=600)
        tgz = next(Path(tmp).glob("*.tgz"))
        with tarfile.open(tgz) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith("package/bin/") and m.isfile()]
            tar.extractall(tmp, members=members, filter="data")
        staging = Path(tmp) / "unpacked"
        staging.mkdir()
        bins = Path(tmp) / "package" / "bin"
        # the package's own lambdafs.js: chromium.br is the executable, *.tar.br are tars; the
        # swiftshader libraries must sit beside the executable (its GPU process loads them)
        script = ("const fs=require('fs'),z=require('zlib');"
                  "for (const [src,dst] of JSON.parse(process.argv[1]))"
                  " fs.writeFileSync(dst, z.brotliDecompressSync(fs.readFileSync(src)));")
        pairs = [(str(bins / "chromium.br"), str(staging / "chromium"))]
        for name in ("swiftshader.tar.br", "fonts.tar.br", "al2023.tar.br"):
            if (bins / name).exists():
                pairs.append((str(bins / name), str(staging / name.removesuffix(".br"))))
        log("webnn: unpacking (brotli, with node)")
        subprocess.run([node, "-e", script, json.dumps(pairs)], check=True, timeout=600)
        with tarfile.open(staging / "swiftshader.tar") as tar:
            tar.extractall(staging, filter="data")
        for name, into in (("fonts.tar", "fonts"), ("al2023.tar", "al2023")):
            if (staging / name).exists():
                with tarfile.open(staging / name) as tar:
                    tar.extractall(staging / into, filter="data")
        for name in ("swiftshader.tar", "fonts.tar", "al2023.tar"):
            (staging / name).unlink(missing_ok=True)
        (staging / "chromium").chmod(0o755)
        folder.parent.mkdir(parents=True, exist_ok=True)
        if folder.exists():
            shutil.rmtree(folder)
        shutil.move(str(staging), str(folder))
    log(f"webnn: installed {target}")
    return target


def main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m conformance.runtimes.webnn_browser",
                                     description="Find (and with --install, install) a browser whose WebNN works.")
    parser.add_argument("--install", action="store_true", help="install the project's browser where none is found")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    log = (lambda *_: None) if args.quiet else (lambda text: print(text, flush=True))
    try:
        browser = find()
        log(f"webnn: {browser.path} ({browser.how}), {browser.facts.get('version', '?')}")
        return 0
    except NoBrowser as exc:
        if not args.install:
            log(f"webnn: {exc}")
            return 1
    try:
        install(log)
        browser = find()
    except (NoBrowser, subprocess.SubprocessError, OSError, StopIteration) as exc:
        log(f"webnn: could not install a WebNN browser: {exc}; the webnn runtime will be a declared gap")
        return 1
    log(f"webnn: {browser.path} ({browser.how}), {browser.facts.get('version', '?')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
