"""The on-disk cache of oracle results.

A result is stored as ``<sha256>.json`` under ``$CONFORMANCE_ORACLE_CACHE`` (default: the
``cache/`` folder next to this package), and read from ``<sha256>.json.gz`` too where there is no
``.json`` (the portable bundle a GPU check carries: docs/gpu.md). The key hashes everything the
result depends on: the oracle version, op, attributes (canonical JSON), each tensor's dtype, shape
and bytes, the profile and both precisions. Writes go to a temporary file that is then renamed over the target, so
parallel processes never see a half-written file; a file that does not parse is recomputed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .result import OracleResult

ENV = "CONFORMANCE_ORACLE_CACHE"


def directory() -> Path:
    return Path(os.environ.get(ENV) or Path(__file__).resolve().parent / "cache")


def _plain(value):
    """Attributes as JSON-able plain Python (numpy scalars and arrays, bytes, tuples)."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float):
        return float.hex(value)  # exact, and -0.0 / 0.0 stay distinct
    return value


def key(version: str, op: str, attributes: dict, tensors: dict, profile: str, prec: int,
        check_prec: int) -> str:
    digest = hashlib.sha256()
    header: dict[str, Any] = {
        "oracle_version": version,
        "op": op,
        "attributes": {k: _plain(v) for k, v in sorted((attributes or {}).items())},
        "profile": profile,
        "prec": prec,
        "check_prec": check_prec,
        "tensors": {},
    }
    for name in sorted(tensors or {}):
        value = tensors[name]
        if value is None:
            continue
        array = np.ascontiguousarray(value)
        header["tensors"][name] = {
            "dtype": array.dtype.str if array.dtype.kind != "V" else array.dtype.name,
            "dtype_name": array.dtype.name,
            "shape": list(array.shape),
            "sha256": hashlib.sha256(array.tobytes()).hexdigest(),
        }
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), default=repr)
    digest.update(text.encode())
    return digest.hexdigest()


def path_for(cache_key: str) -> Path:
    return directory() / f"{cache_key}.json"


def load(cache_key: str) -> OracleResult | None:
    path = path_for(cache_key)
    try:
        text = path.read_text(encoding="utf-8")
        result = OracleResult.from_json(text)
    except FileNotFoundError:
        packed = path.with_name(path.name + ".gz")   # a portable bundle's entry (conformance gpu-check --prepare)
        if not packed.is_file():
            return None
        try:
            result = OracleResult.from_json(gzip.decompress(packed.read_bytes()).decode("utf-8"))
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None  # corrupt or from an incompatible writer: recompute and overwrite
    result.from_cache = True
    return result


def store(cache_key: str, result: OracleResult) -> Path:
    folder = directory()
    folder.mkdir(parents=True, exist_ok=True)
    target = path_for(cache_key)
    handle, temporary = tempfile.mkstemp(prefix=f".{cache_key[:16]}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(result.to_json())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
