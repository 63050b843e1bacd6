"""One case on one target, run as the suite runs it, and what that run executed.

A bug report's program and feeds are the ones the pair actually ran: the case goes through the
Engine on the target (its worker, its configuration), the Engine writes the program it handed the
runtime (``OUT/programs/<case>/<spec>.*``) and records its path (the record's ``program``), and
:func:`program_of` gives the same program's feeds and outputs. A target whose configuration
writes the program in a form (symbolic dimensions, weights as inputs) has it written so by the
Engine and translated so by :func:`program_of`; the calls a form makes around it are
conformance/bugreport/forms.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from conformance.results import MemoryStore, Record
from conformance.run.engine import Engine, Options


@dataclass
class Ran:
    case: Any                            # conformance.case.model.Case
    target: Any                          # conformance.runtimes.base.Target
    record: Record
    program: Any                         # conformance.specs.Program: feeds, outputs, transforms
    files: list[Path] = field(default_factory=list)   # the program's files, as the run wrote them

    @property
    def verdict(self) -> str:
        return str(self.record.verdict)


def program_of(case, target):
    """The program ``target`` runs for ``case``: its spec's translation in the target's program form
    (symbolic dimensions, weights as inputs: conformance/runtimes/forms.py ``program_form``), with
    the feeds and output names the runtime is called with; or NotExpressible."""
    from conformance.runtimes.forms import program_form
    from conformance.specs import SPECS, translate
    return translate(SPECS[target.spec], case, program_form(target.config))


def run_pair(case, target, pool, folder: Path, timeout: float = 120.0, prec: int = 128) -> Ran:
    """``case`` on ``target`` through the Engine, programs written under ``folder``."""
    folder = Path(folder).resolve()
    store = MemoryStore(folder)
    options = Options(out_dir=folder, timeout=timeout, prec=prec, write_programs=True, repeat_under=0.0,
                      batch=False)
    with np.errstate(all="ignore"):
        Engine([case], [target], store, options).run(pool)
    record = Record.from_dict(store.records[-1])   # the engine's line
    return Ran(case, target, record, program_of(case, target), program_files(record))


def program_files(record: Record) -> list[Path]:
    """The files of the program the record ran: its main file and the files its spec wrote beside it
    under the same name (an IR's ``.bin``, torch's ``.npz``, DirectML's buffers), without the
    runtime's own conversions (``artefacts``)."""
    main = record.program
    if not main:
        return []
    path = Path(main)
    if not path.exists():
        return []
    converted = {Path(a).name for a in record.artefacts or []}
    stem = path.name.split(".", 1)[0]
    siblings = [p for p in sorted(path.parent.iterdir())
                if p.is_file() and p.name.split(".", 1)[0] == stem and p.name not in converted]
    return [path] + [p for p in siblings if p != path]
