"""Start-up: the seconds from launching ``conformance run ...`` to its first verdict, and where they go.

    python benchmarks/startup.py [--rounds 5] [--tree OTHER_CHECKOUT] [--phases] [--pyc] \\
        -- run cases/gru --runtime onnxruntime --spec onnx-14 --jobs 1 --fresh -q

Each round launches the command once per tree (this checkout, and each ``--tree``: another
checkout of the suite, e.g. ``git archive HEAD~1 | tar -x -C /tmp/before``), alternating the order
from round to round, and prints the medians side by side: **first verdict** (the first line of
``OUT/results.jsonl``, polled every 5 ms from outside) and **total** (the process's wall time). The
command runs the way the ``conformance`` console script runs it (``__main__`` is a script whose
first line imports the CLI), so the worker processes it spawns behave as they do for a user. Every
tree shares this checkout's oracle cache (``CONFORMANCE_ORACLE_CACHE``), so each measures a warm
oracle; the case and discovery caches are whatever ``~/.cache/rnn-conformance`` holds: run once
before timing a warm cache.

``--phases`` runs the command in-process under a harness that stamps, in seconds from the launch:
the CLI imported, discovery started and done, the corpus loaded, the probe started and measured,
the first worker spawned, the engine started and the first verdict recorded (medians and every
round's value). ``--pyc`` lets the launched processes cache their bytecode (in a folder of their
own, ``PYTHONPYCACHEPREFIX``) even where ``PYTHONDONTWRITEBYTECODE`` is set: a user's machine has
bytecode, a sandbox with that variable compiles every module of the suite at every start.
Timings only: nothing here is asserted (docs/startup.md has the figures and their reading).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: the console script as pip writes it: the CLI imported at the top (what spawned children see)
SCRIPT = """import sys
from conformance.cli import main
if __name__ == '__main__':
    sys.exit(main())
"""

#: the same, with timestamps of the start-up phases appended to $STARTUP_MARKS as one JSON line
HARNESS = """import os, sys, time
T0 = float(os.environ["STARTUP_T0"])
ENTERED = time.time() - T0
from conformance.cli import main
IMPORTED = time.time() - T0
if __name__ == "__main__":
    import atexit, importlib, json
    marks = [("python started", ENTERED), ("CLI imported", IMPORTED)]
    def mark(name):
        marks.append((name, time.time() - T0))
    def around(module, attr, before, after, once=False):
        mod = importlib.import_module(module)
        orig = getattr(mod, attr)
        seen = []
        def wrapped(*a, **k):
            if not (once and seen): mark(before)
            try:
                return orig(*a, **k)
            finally:
                if not (once and seen) and after: mark(after)
                seen.append(1)
        setattr(mod, attr, wrapped)
        cli = sys.modules["conformance.cli"]
        if getattr(cli, attr, None) is orig:
            setattr(cli, attr, wrapped)
    around("conformance.selection", "select_targets", "discovery started", "targets discovered")
    around("conformance.case.load", "load_paths", "corpus load started", "corpus loaded")
    around("conformance.run.probe", "measured", "probe started", "probe measured")
    import conformance.run.engine as engine, conformance.results as results, conformance.isolation.workers as workers
    def first(cls, attr, label):
        orig, seen = getattr(cls, attr), []
        def wrapped(self, *a, **k):
            if not seen:
                seen.append(1); mark(label)
            return orig(self, *a, **k)
        setattr(cls, attr, wrapped)
    first(workers.Pool, "_spawn", "first worker spawned")
    first(engine.Engine, "run", "engine started")
    first(engine.Engine, "_receive", "first runtime answer received")
    first(results.ResultStore, "append", "first verdict recorded")
    def dump():
        mark("exit")
        with open(os.environ["STARTUP_MARKS"], "a") as f:
            f.write(json.dumps(marks) + "\\n")
    atexit.register(dump)
    sys.argv[0] = "conformance"
    main()
"""


def _env(tree: Path, pyc: bool, extra: dict | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), **(extra or {}))
    env.setdefault("CONFORMANCE_ORACLE_CACHE", str(ROOT / "oracles" / "cache"))
    if pyc:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "startup-pyc"
                                         / str(tree).strip("/").replace("/", "_"))
    return env


def _out_of(args: list[str], out: Path) -> list[str]:
    """The command with its --out replaced by ``out``."""
    args = list(args)
    if "--out" in args:
        i = args.index("--out")
        del args[i:i + 2]
    return [*args, "--out", str(out)]


def launch(script: Path, tree: Path, args: list[str], out: Path, pyc: bool, extra: dict | None = None) -> tuple:
    """(seconds to the first line of results.jsonl or None, seconds to exit, exit status)."""
    shutil.rmtree(out, ignore_errors=True)
    results = out / "results.jsonl"
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(script), *_out_of(args, out)], cwd=ROOT,
                            env=_env(tree, pyc, extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = None
    while proc.poll() is None:
        if first is None:
            try:
                if results.stat().st_size > 0:
                    first = time.perf_counter() - start
            except OSError:
                pass
        time.sleep(0.005)
    return first, time.perf_counter() - start, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", action="append", default=[], type=Path,
                        help="another checkout to time beside this one")
    parser.add_argument("--phases", action="store_true", help="stamp the start-up phases (in-process harness)")
    parser.add_argument("--pyc", action="store_true", help="let the launched processes cache bytecode")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- run PATHS ... (conformance's arguments)")
    opts = parser.parse_args()
    args = [a for a in opts.command if a != "--"] or ["run", "cases/gru", "--runtime", "onnxruntime", "--spec",
                                                      "onnx-14", "--jobs", "1", "--fresh", "-q"]
    trees = {"this": ROOT, **{str(t): t.resolve() for t in opts.tree}}
    work = Path(tempfile.mkdtemp(prefix="startup-"))
    script = work / ("harness.py" if opts.phases else "conformance")
    script.write_text(HARNESS if opts.phases else SCRIPT)
    got: dict[str, list] = {name: [] for name in trees}
    for r in range(opts.rounds):
        for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
            marks = work / f"marks-{len(got[name])}-{abs(hash(name))}.jsonl"
            extra = {"STARTUP_T0": repr(time.time()), "STARTUP_MARKS": str(marks)} if opts.phases else None
            first, total, code = launch(script, trees[name], args, work / "out", opts.pyc, extra)
            stamped = json.loads(marks.read_text().splitlines()[-1]) if opts.phases and marks.exists() else []
            got[name].append((first, total, stamped))
            print(f"round {r + 1} {name}: first verdict {first if first is None else round(first, 3)} s, "
                  f"total {total:.3f} s, exit status {code}", file=sys.stderr)
    print(f"conformance {' '.join(args)}  ({opts.rounds} rounds, medians{', bytecode cached' if opts.pyc else ''})")
    base = None
    for name, runs in got.items():
        firsts = [f for f, _, _ in runs if f is not None]
        first, total = (statistics.median(firsts) if firsts else float("nan")), statistics.median(t for _, t, _ in runs)
        base = base or (first, total)
        print(f"  {name}: first verdict {first:.3f} s ({first / base[0]:.2f}×), total {total:.3f} s "
              f"({total / base[1]:.2f}×)")
        if opts.phases:
            labels = list(dict.fromkeys(label for _, _, stamped in runs for label, _ in stamped))
            for label in labels:
                values = [dict(stamped)[label] for _, _, stamped in runs if label in dict(stamped)]
                print(f"    {statistics.median(values):7.3f}  {label}   [{' '.join(f'{v:.2f}' for v in values)}]")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
