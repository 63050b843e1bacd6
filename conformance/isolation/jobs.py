"""What travels between the pool and its workers (conformance/isolation/workers.py): a :class:`Job`,
its :class:`Outcome`, what a busy worker that has not answered is (:func:`late_verdict`), and the
answers a runtime's ``run_many`` may give per program of a batch (:class:`RanAlone`,
:class:`RanMerged`; conformance/isolation/serve.py reads them, a runtime such as OpenVINO returns
them: they are defined here, below the runtimes, and :mod:`conformance.runtimes.base` names them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.isolation.processes import ORACLE, RUNTIME_KINDS, fmt_bytes


def late_verdict(held: int | None, limit: int | None, timeout: float, late: bool = True) -> tuple[str, str] | None:
    """What a busy worker that has not answered is: ``crash`` when it holds more than the memory
    limit (read first, so a runaway a slow poll catches only after its deadline is still named for
    its memory), ``timeout`` when its deadline has passed (``late``), else None (still working)."""
    if limit and held is not None and held > limit:
        return "crash", (f"memory limit: the worker held {fmt_bytes(held)}, more than the limit of "
                         f"{fmt_bytes(limit)}; worker killed (--memory-limit raises it)")
    if late:
        return "timeout", f"no answer within {timeout:g} s; worker killed"
    return None


@dataclass
class Job:
    key: object                 # caller's handle, returned with the outcome
    kind: str                   # "run" / "probe" (a runtime on a program), "batch" (on several) or "call"
    payload: tuple
    timeout: float

    @property
    def binding(self):
        """The worker this job may run in: its runtime's ref, or the oracle's."""
        return self.payload[0] if self.kind in RUNTIME_KINDS else ORACLE


@dataclass
class Outcome:
    key: object
    status: str                 # ok | error | garbage | crash | timeout
    value: object = None        # ok: the return value
    error: str = ""             # error: "Type: message"; crash: the signal; timeout: the limit
    detail: str = ""            # a traceback tail
    elapsed: float = 0.0        # seconds inside the worker (ok / error)
    effective: dict = field(default_factory=dict)  # run/probe: the runtime's effective() after the call
    describe: dict = field(default_factory=dict)   # probe: the runtime's describe()
    output: str = ""            # what the worker printed (stdout and stderr, native code's included) meanwhile
    again: object = None        # run with a repeat: the second call's outputs (a list), or why there are none (str)
    batched: int = 0            # an outcome taken from a batch's answer: the batch's size
    artefacts: dict = field(default_factory=dict)  # run: what the runtime converted the program into {name: bytes}
    #: crash: the call raised and left its worker unsound (conformance/isolation/soundness.py); the worker
    #: was retired and the jobs it had not started ran on a fresh one
    unsound: bool = False


@dataclass
class RanAlone:
    """An answer of ``run_many`` for one item that ran on its own in that call, not as part of what
    the runtime merged (OpenVINO compiles a batch as one model; an item it refused to read, or whose
    node the merged compile named in its refusal, is compiled by itself): ``answer`` is its outputs
    or the exception it raised, ``why`` says why it ran alone. The suite records such an answer as
    it records a pair run alone, instead of running it a second time (conformance/run/engine.py)."""

    answer: object
    why: str
    #: the configuration it ran in (the runtime's ``effective()`` right after it); None: the call's
    effective: dict | None = None


@dataclass
class RanMerged:
    """An answer of ``run_many`` for one item that ran as part of the batch (merged with others, or
    one after another in the call), with the configuration of its part (the runtime's
    ``effective()`` right after it ran). A call may compile several parts (OpenVINO: one per element
    type and way in), and each pair's record names the configuration its own part ran in, not the
    call's last."""

    answer: object
    effective: dict
