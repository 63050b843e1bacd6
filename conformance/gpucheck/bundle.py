"""The GPU check's bundle: the oracle's results the check needs, computed beforehand on any machine and
carried to the GPU machine (docs/gpu.md, "The check").

The oracle's disk cache is portable (oracles/cache.py: an entry's name is a digest of the problem, the
profile and the oracle's version), so a bundle is a folder of cache entries, gzipped, and a manifest:

    BUNDLE/manifest.json            what it holds, what it left out and why, its size
    BUNDLE/oracle-cache/*.json.gz   the results: every valid corpus case each spec can say, and the
                                    production files (cases/production/) that fit the size budget,
                                    smallest first

The check points ``CONFORMANCE_ORACLE_CACHE`` at ``BUNDLE/oracle-cache``, so its runs read these
results instead of computing them (a result the bundle lacks is computed there, and the check's summary
counts how many were).
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
import shutil
from collections import defaultdict
from pathlib import Path

from conformance import __version__
from conformance.case.load import load_paths
from conformance.files import write_atomic
from conformance.isolation.jobs import Job
from conformance.isolation.workers import Pool
from conformance.specs import SPECS, NotExpressible, translate

#: the specs of the runtimes that have GPU targets (torch on CUDA; onnxruntime's CUDA and TensorRT
#: providers and OpenVINO's GPU plugin through ONNX; OpenVINO's GPU plugin reading its IR; WebNN's gpu)
GPU_SPECS = ("torch", "onnx-14", "openvino-opset5", "webnn-cr-20260122")
#: the production files' results kept, gzipped, by default (all of cases/production/ under one profile
#: is about 270 MB; a lent machine that takes 64 MiB a call gets a smaller budget: docs/gpu.md)
PRODUCTION_BYTES = 128 << 20
#: gzipped bytes per output element of an oracle result (double-double values, bound, sigma, masks),
#: measured on production results: what a file is estimated at before its results are computed
BYTES_PER_ELEMENT = 10.0
MANIFEST = "manifest.json"
CACHE = "oracle-cache"
ORACLE_TIMEOUT = 3600.0


def _problems(cases, specs) -> list[tuple[object, str]]:
    """(case, profile) for every valid case each spec can say, once per profile."""
    seen, out = set(), []
    for case in cases:
        if not case.valid:
            continue
        for spec in specs:
            profile = SPECS[spec].semantics
            if (case.id, profile) in seen or isinstance(translate(SPECS[spec], case), NotExpressible):
                continue
            seen.add((case.id, profile))
            out.append((case, profile))
    return out


def _elements(case) -> int:
    """Output elements of a case: Y [S, D, B, H] and the final states."""
    shape, attrs = case.shape, case.attributes
    directions = 2 if attrs.get("direction") == "bidirectional" else 1
    hidden = int(attrs.get("proj_size") or attrs.get("hidden_size") or 1)
    layers = int(attrs.get("num_layers", 1))
    seq, batch = int(shape.get("seq_length", 1)), int(shape.get("batch_size", 1))
    return directions * batch * hidden * (seq + 2 * layers)


def _shown(path: str) -> str:
    """A case file as the check names it: relative to here where it lies below, else absolute."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def choose(by_file: dict, production_bytes: float, profiles: int) -> tuple[list[str], list[dict]]:
    """(the production files whose results fit ``production_bytes``, smallest first; the files left out,
    each with why), by their estimated gzipped size (BYTES_PER_ELEMENT per output element and profile)."""
    chosen, left_out, budget = [], [], 0.0
    for file, cases in sorted(by_file.items(), key=lambda kv: (sum(_elements(c) for c in kv[1]), kv[0])):
        estimate = BYTES_PER_ELEMENT * sum(_elements(c) for c in cases) * profiles
        if budget + estimate > production_bytes:
            left_out.append({"file": file, "reason": f"its results (about {estimate / 2**20:.0f} MiB gzipped) pass "
                                                     f"the bundle's budget of {production_bytes / 2**20:.0f} MiB"})
            continue
        budget += estimate
        chosen.append(file)
    return chosen, left_out


def _compute(problems, pool, prec: int, console) -> dict:
    """Every problem's result into the oracle's cache (a cache hit computes nothing): {(case id, profile):
    the cache file, or the error}."""
    import oracles
    from conformance.run.judging import oracle_cached, oracle_for
    found, jobs = {}, []
    for case, profile in problems:
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        path = oracles.cache_path(case.op, attrs, case.tensors, profile, prec)
        found[(case.id, profile)] = path
        if oracle_cached(case.op, case.attributes, case.tensors, profile, prec) is None:
            jobs.append(Job((case.id, profile), "call", (oracle_for, (case.op, case.attributes, case.tensors,
                                                                      profile, prec)), ORACLE_TIMEOUT))
    if jobs and console:
        console.print(f"computing {len(jobs)} oracle results ({len(problems) - len(jobs)} in the cache already)")
    for outcome in pool.outcomes(jobs):
        if outcome.status != "ok":
            found[outcome.key] = f"{outcome.status}: {outcome.error}"[:300]
    return found


def prepare(out: Path, case_paths, specs=GPU_SPECS, production_bytes: int = PRODUCTION_BYTES, jobs: int = 1,
            prec: int = 128, console=None) -> dict:
    """Write the bundle into ``out`` (replacing one there): the manifest."""
    out = Path(out)
    unknown = [s for s in specs if s not in SPECS]
    if unknown:
        raise ValueError(f"unknown spec {unknown[0]!r}; the specs are {sorted(SPECS)}")
    corpus, errors = load_paths(case_paths)
    production, perrors = load_paths(case_paths, tier="production")
    production = [c for c in production if "production" in Path(c.file or "").parts]
    by_file: defaultdict[str, list] = defaultdict(list)
    for case in production:
        by_file[_shown(str(case.file))].append(case)
    chosen, left_out = choose(by_file, production_bytes, len(specs))
    problems = _problems(corpus, specs) + _problems([c for f in chosen for c in by_file[f]], specs)
    with Pool(jobs) as pool:
        found = _compute(problems, pool, prec, console)
    if out.exists():
        shutil.rmtree(out)
    (out / CACHE).mkdir(parents=True)
    written, failed, total = 0, [], 0
    for key, path in found.items():
        if isinstance(path, str) or not Path(path).is_file():
            failed.append({"case": key[0], "profile": key[1], "error": path if isinstance(path, str) else "absent"})
            continue
        data = gzip.compress(Path(path).read_bytes(), compresslevel=6, mtime=0)
        (out / CACHE / (Path(path).name + ".gz")).write_bytes(data)
        written += 1
        total += len(data)
    manifest = {"suite": __version__, "created": datetime.datetime.now(datetime.UTC).isoformat(),
                "specs": list(specs), "profiles": sorted({p for _, p in problems}), "prec": prec,
                "corpus_cases": len(corpus), "results": written, "bytes": total,
                "production_files": chosen, "production_left_out": left_out, "failed": failed,
                "case_errors": len(errors) + len(perrors)}
    write_atomic(out / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return manifest


def read(bundle: Path) -> dict:
    """The manifest of a bundle (ValueError where it is not one)."""
    path = Path(bundle) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{bundle} is not a GPU check bundle ({type(exc).__name__}: {exc}); "
                         f"make one with `conformance gpu-check --prepare {bundle}`") from exc
    if not (Path(bundle) / CACHE).is_dir():
        raise ValueError(f"{bundle} has no {CACHE}/ folder")
    return manifest


def environment(bundle: Path) -> dict:
    """The environment a check's commands run in: the bundle's results as the oracle's cache."""
    return dict(os.environ, CONFORMANCE_ORACLE_CACHE=str((Path(bundle) / CACHE).resolve()))
