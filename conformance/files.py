"""Writing the output folder safely: one writer per folder, whole files or none, clean write errors.

- :class:`OutLock`: an exclusive lock on ``OUT/.conformance.lock`` for a whole run. A second run
  into the same folder stops at once and names the holder's PID. The lock is the operating
  system's (``flock``), so a run that was killed holds nothing: its stale lock file is taken over.
- :func:`write_atomic`: a report file is written to a temporary file beside it and renamed over the
  old one, so a reader (or a kill at any moment) sees the old file or the new one, never a part.
- :class:`WriteError`: a write that failed for lack of space or permission, or a read-only file
  system, with the path, for a one-line message and exit status 2.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

LOCK_NAME = ".conformance.lock"

#: errors that mean the folder cannot take our output, not that the suite is broken
WRITE_ERRNOS = {errno.ENOSPC, errno.EACCES, errno.EROFS, errno.EPERM, errno.EDQUOT, errno.ENOTDIR,
                errno.EISDIR, errno.EFBIG}


class WriteError(Exception):
    """The output folder cannot be written: the message names the path and the reason."""


class Busy(Exception):
    """Another run holds the output folder's lock."""


def write_error(exc: OSError, path: str | os.PathLike[str]) -> WriteError:
    return WriteError(f"cannot write {path}: {exc.strerror or exc} (errno {exc.errno}); what was written before "
                      f"stays valid, and a later run into a writable --out resumes from it")


def is_write_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike[str], data: str | bytes, encoding: str = "utf-8", sync: bool = True
                 ) -> Path:
    """Write ``data`` to ``path`` as a whole: a temporary file in the same folder, flushed and
    renamed over ``path``. Raises WriteError where the folder cannot take it. ``sync=False`` skips
    the fsync, for a cache whose reader checks what it reads (a crash may then leave a file that
    does not check, never half of one under its name while the machine runs)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode(encoding) if isinstance(data, str) else data)
                f.flush()
                if sync:
                    os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; a report is as open() makes it
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        if is_write_error(exc):
            raise write_error(exc, path) from exc
        raise
    return path


class OutLock:
    """Exclusive ownership of an output folder for the life of a run (a context manager)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> OutLock:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if is_write_error(exc):
                raise write_error(exc, self.path) from exc
            raise
        if not _lock(fd):
            holder = _read(fd)
            os.close(fd)
            raise Busy(f"{self.folder} is being written by another run (PID {holder or 'unknown'}); wait for it "
                       f"to finish, or give this run another --out")
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass
            os.close(self._fd)  # closing drops the lock
            self._fd = None

    def __enter__(self) -> OutLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows: a byte-range lock on the file instead
        import msvcrt
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # typeshed: Windows-only
            return True
        except OSError:
            return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _read(fd: int) -> str:
    try:
        os.lseek(fd, 0, 0)
        return os.read(fd, 64).decode(errors="replace").strip()
    except OSError:
        return ""
