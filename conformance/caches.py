"""The suite's caches on disk: where they live, and entries that are written whole and read back
only when they check (docs/startup.md).

**Where.** Under the suite's cache folder: ``$RNN_CONFORMANCE_CACHE``, else
``$XDG_CACHE_HOME/rnn-conformance``, else ``~/.cache/rnn-conformance`` (beside the history
environments and the WebNN browser), one folder per kind (``cases/``, ``discovery/``); each kind's
own variable (``CONFORMANCE_CASE_CACHE``, ``CONFORMANCE_DISCOVERY_CACHE``) names another folder, or
``off`` to turn that cache off.

**Entries.** An entry is a file named by the digest of its key, holding a format line, the digest of
what it was made from (a case file's bytes; checked by the reader against what it reads now), the
sha256 of its payload, and the payload: a pickle. It is written to a temporary file renamed over
the entry (:func:`conformance.files.write_atomic`), so a reader never sees half of one, and
concurrent writers of the same entry write the same thing. An entry that does not check (absent,
truncated, corrupt, another format, made from other bytes) is a miss: the caller computes the
value again and writes it over. The pickle is read by an unpickler that builds only the classes
the caller names, so a planted file cannot run code. Failing to write an entry costs speed only.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
from collections.abc import Callable
from pathlib import Path

#: the entry format: bump it when the layout below changes
FORMAT = b"rnn-conformance/cache-entry/1"
OFF = ("0", "off", "no", "false")


def root() -> Path:
    """The suite's cache folder (see the module's docstring)."""
    base = os.environ.get("RNN_CONFORMANCE_CACHE")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")) / "rnn-conformance"


def folder(kind: str, env: str) -> Path | None:
    """The folder of one kind of cache: ``$env`` where set (None where it says ``off``), else
    ``root()/kind``."""
    chosen = os.environ.get(env, "").strip()
    if chosen:
        return None if chosen.lower() in OFF else Path(chosen)
    return root() / kind


def digest(*parts: str | bytes) -> str:
    """sha256 of ``parts``, each length-prefixed (no two lists of parts share a digest)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(b"%d:" % len(data) + data)
    return h.hexdigest()


def read(path: Path, made_from: str, allowed: Callable[[str, str], bool]):
    """The payload of the entry at ``path`` if it was made from ``made_from`` and checks, else None.
    ``allowed(module, name)``: whether the pickle may build that class or call that function."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        head, source, check, payload = data.split(b"\n", 3)
        if head != FORMAT or source.decode() != made_from or hashlib.sha256(payload).hexdigest() != check.decode():
            return None
        return _Unpickler(io.BytesIO(payload), allowed).load()
    except Exception:  # noqa: BLE001 - absent, truncated, corrupt or foreign: a miss, written over
        return None


def write(path: Path, made_from: str, value) -> None:
    """Store ``value`` at ``path`` as made from ``made_from``; a failure is ignored."""
    try:
        from conformance.files import write_atomic
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        head = b"\n".join((FORMAT, made_from.encode(), hashlib.sha256(payload).hexdigest().encode()))
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(path, head + b"\n" + payload, sync=False)
    except Exception:  # noqa: BLE001, S110 - a cache that cannot be written costs speed only
        pass


def source_digest(folder_path: Path) -> str:
    """sha256 of every ``.py`` file under ``folder_path`` (names and contents): the code a cached
    value was computed by."""
    h = hashlib.sha256()
    for source in sorted(folder_path.rglob("*.py")):
        h.update(str(source.relative_to(folder_path)).encode() + b"\0" + source.read_bytes() + b"\0")
    return h.hexdigest()


def installed(name: str) -> str:
    """The installed copy of the importable package ``name``, as a string that changes when it is
    installed again, upgraded or removed: its location, and the size and modification time of its
    ``__init__`` and of its folder. Nothing is imported (a dotted name imports its parents)."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return f"{name}: absent"
    places = [spec.origin] if spec.origin else []
    places += list(spec.submodule_search_locations or ())
    facts = []
    for place in places:
        try:
            st = os.stat(place)
            facts.append(f"{place}|{st.st_size}|{st.st_mtime_ns}")
        except OSError:
            facts.append(f"{place}|gone")
    return f"{name}: " + ";".join(facts)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, allowed: Callable[[str, str], bool]):
        super().__init__(file)
        self._allowed = allowed

    def find_class(self, module: str, name: str):
        if self._allowed(module, name):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of this cache's entries")


__all__ = ["FORMAT", "digest", "folder", "installed", "read", "root", "source_digest", "write"]
