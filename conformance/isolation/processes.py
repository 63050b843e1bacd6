"""Process trees and memory: the reaper that ends every worker group when the main process dies,
resident memory read from /proc, the default memory limit, and throwaway processes for work that
must not touch the main process (discovery: :func:`isolated`). See docs/isolation.md.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys

_CTX = mp.get_context("spawn")
BUILD_TIMEOUT = 300.0  # seconds to import and construct a runtime in a fresh worker
ORACLE = "oracle"      # the binding of the workers that run the oracle (and other suite functions)
#: the job kinds that run in a runtime's worker: one program, the arithmetic probe, several programs
RUNTIME_KINDS = ("run", "probe", "batch", "plan")


def _own_group() -> None:
    """Lead a process group of one's own, and die with the parent (Linux)."""
    try:
        os.setsid()
    except OSError:
        pass
    _die_with_parent(signal.SIGKILL)


def _die_with_parent(sig) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(sig), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent died before the request took effect
        os._exit(1)



def _reap(conn) -> None:
    """Collect worker group ids from ``conn``; when it closes (the main process ended, however),
    kill every group still alive."""
    try:
        os.setsid()  # survive a kill of the main process's group, to do this job
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    groups: set[int] = set()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg is None:
            return  # a clean close: the pool ended its workers itself
        op, pgid = msg
        (groups.add if op == "add" else groups.discard)(pgid)
    for pgid in groups:
        _kill_group(pgid)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


class _Reaper:
    def __init__(self):
        self.conn, child = _CTX.Pipe()
        self.proc = _CTX.Process(target=_reap, args=(child,), daemon=False, name="conformance-reaper")
        self.proc.start()
        child.close()

    def tell(self, op: str, pgid: int) -> None:
        try:
            self.conn.send((op, pgid))
        except (OSError, BrokenPipeError):
            pass

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.conn.close()
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()


def default_memory_limit(jobs: int) -> int:
    """Bytes one worker may hold: half the machine's memory, shared by the workers that may run at
    once (at least 1 GiB). Where the total is unknown, 8 GiB."""
    total = _total_memory()
    if not total:
        return 8 << 30
    return max(1 << 30, total // 2 // max(1, jobs))


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes(pid: int) -> int | None:
    """Resident memory of ``pid`` and its descendants (Linux /proc); None where unreadable."""
    total, seen, todo = 0, set(), [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            if p == pid:
                return None
            continue
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return total


def fmt_bytes(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def isolated(func, *args, timeout: float = BUILD_TIMEOUT):
    """``func(*args)`` in a throwaway process of its own (its own session, killed with everything it
    started when done): for work that imports a runtime, such as discovering its targets, which
    the main process must not do. Raises RuntimeError where the process fails."""
    conn, child = _CTX.Pipe()
    proc = _CTX.Process(target=_isolated_main, args=(child, func, args), daemon=True)
    proc.start()
    child.close()
    assert proc.pid is not None  # a started process has its pid
    try:
        if not conn.poll(timeout):
            raise RuntimeError(f"{getattr(func, '__name__', func)} did not answer within {timeout:g} s")
        ok, value = conn.recv()
    except (EOFError, OSError) as exc:
        proc.join(timeout=5)
        raise RuntimeError(f"{getattr(func, '__name__', func)} died (exit status {proc.exitcode})") from exc
    finally:
        _kill_group(proc.pid)
        proc.kill()
        proc.join(timeout=5)
        conn.close()
    if not ok:
        raise RuntimeError(value)
    return value


def _isolated_main(conn, func, args) -> None:
    _own_group()
    try:
        conn.send((True, func(*args)))
    except Exception as exc:  # noqa: BLE001 - the caller decides what a failure means
        conn.send((False, f"{type(exc).__name__}: {exc}"))


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def flush_streams() -> None:
    """Flush stdout and stderr (before their captured text is read, or the process ends)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a runtime that closed or replaced them
            pass
