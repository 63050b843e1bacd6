"""The case cache: each case file's cases as the loader built them, so that a run on an unchanged
corpus reads them back instead of parsing, validating and expanding every file again
(docs/startup.md).

**Where.** ``cases/`` under the suite's cache folder (:func:`conformance.caches.root`, by default
``~/.cache/rnn-conformance``); ``$CONFORMANCE_CASE_CACHE`` names another folder, or ``off``.

**Keys.** A file has one entry per way of loading it: its name as given (every ``file:line`` of its
cases names it so), its resolved path (the case ids come from it), the limits, whether tensors are
built, and what the expansion depends on: the suite's version, the source of every module of
:mod:`conformance.case`, the installed PyYAML, jsonschema, numpy and ml_dtypes (tensors are drawn
with numpy's generators) and the Python version. The entry records the sha256 of the file's bytes,
and is used only while the bytes read now have that digest: an edited file is parsed again and its
entry written over.

**Errors.** Only a file that loaded without an error is cached; a file with an error is parsed at
every run, so it reports exactly what it reports without a cache (``file:line``, exit status).
Entries are written whole and checked when read (:mod:`conformance.caches`): a corrupt one is
ignored and written again. The unpickler builds only what a case is made of: :class:`Case`,
:class:`~conformance.case.yamlio.Where`, the line-keeping containers, numpy arrays and dtypes.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import sys
from pathlib import Path

from conformance import caches
from conformance.case.limits import Limits

ENV = "CONFORMANCE_CASE_CACHE"
#: the libraries whose installed copy the cached cases depend on
LIBRARIES = ("yaml", "jsonschema", "numpy", "ml_dtypes")

#: the classes and functions an entry may build or call
ALLOWED = frozenset({
    ("conformance.case.model", "Case"),
    ("conformance.case.yamlio", "Where"), ("conformance.case.yamlio", "LineDict"),
    ("conformance.case.yamlio", "LineList"),
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
})


def allowed(module: str, name: str) -> bool:
    """Whether an entry may name ``module.name``: a piece of a case, or a numpy scalar type (of
    numpy's or ml_dtypes', as bfloat16)."""
    if (module, name) in ALLOWED:
        return True
    if module in ("numpy", "ml_dtypes"):
        import importlib

        import numpy as np
        found = getattr(importlib.import_module(module), name, None)
        return isinstance(found, type) and issubclass(found, np.generic)
    return False


@functools.cache
def fingerprint() -> str:
    """What every entry depends on besides its file: the loader's code, libraries and Python."""
    from conformance import __version__
    return caches.digest(__version__, sys.version, caches.source_digest(Path(__file__).resolve().parent),
                         *(caches.installed(name) for name in LIBRARIES))


@dataclasses.dataclass(frozen=True)
class Entry:
    """The cache entry of one file loaded one way."""

    path: Path      # the entry's file in the cache folder
    digest: str     # sha256 of the case file's bytes as read now

    def get(self) -> list | None:
        """The cached cases for these bytes, or None."""
        from conformance.case.model import Case
        cases = caches.read(self.path, self.digest, allowed)
        if not isinstance(cases, list) or not all(isinstance(c, Case) for c in cases):
            return None
        return cases

    def put(self, cases: list) -> None:
        """Keep ``cases``, the cases of a file that loaded without an error."""
        caches.write(self.path, self.digest, cases)


def entry(path: Path, data: bytes, limits: Limits, materialize: bool) -> Entry | None:
    """The entry of the case file ``path``, whose bytes are ``data``, loaded with ``limits`` and
    ``materialize``; None where the cache is off."""
    folder = caches.folder("cases", ENV)
    if folder is None:
        return None
    try:
        resolved = str(path.resolve())
    except (OSError, RuntimeError):  # a symlink loop: the loader reports it
        resolved = str(path.absolute())
    slot = caches.digest(fingerprint(), str(path), resolved, repr(dataclasses.astuple(limits)), str(bool(materialize)))
    return Entry(folder / slot[:2] / f"{slot}.pickle", hashlib.sha256(data).hexdigest())


__all__ = ["ENV", "Entry", "entry", "fingerprint"]
