"""The oracle's side of judging a pair: its call (in a worker, or from its disk cache), and what a
pair's judgement depends on besides its inputs (``judge_version``, part of every pair's digest)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

#: the seconds one oracle evaluation may take in its worker
ORACLE_TIMEOUT = 600.0


def oracle_for(op: str, attributes: dict, tensors: dict, profile: str, prec: int):
    """Runs in a worker: the oracle on the canonical case (inputs in layout 0, so no `layout`)."""
    import oracles
    attrs = {k: v for k, v in attributes.items() if k != "layout"}
    return oracles.evaluate(op, attrs, tensors, profile=profile, prec=prec)


def oracle_cached(op: str, attributes: dict, tensors: dict, profile: str, prec: int):
    """The oracle's result where its disk cache holds it (reading it computes nothing and cannot
    hang), else None: the job goes to the oracle's worker. A cache that does not read is a miss."""
    import oracles
    attrs = {k: v for k, v in attributes.items() if k != "layout"}
    try:
        return oracles.cached(op, attrs, tensors, profile=profile, prec=prec)
    except Exception:  # noqa: BLE001 - an invalid problem or an unreadable entry: the worker says why
        return None


@functools.cache
def judge_version() -> str:
    """What judging depends on besides the inputs: the oracle's version, its fast path's model
    (production shapes) and the comparison's code (conformance/compare, its policies, this package,
    the engine and the forms), as a digest."""
    import oracles
    from oracles import fast
    h = hashlib.sha256(f"{oracles.ORACLE_VERSION}+{fast.fingerprint()}".encode())
    here = Path(__file__).resolve().parent.parent.parent
    run = here / "run"
    for path in (sorted((here / "compare").glob("*")) + sorted((run / "judging").glob("*.py"))
                 + [run / "engine.py", run / "activations.py", run / "forms.py", run / "relations.py",
                    run / "planned.py", here / "runtimes" / "effective.py"]):
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:12]
