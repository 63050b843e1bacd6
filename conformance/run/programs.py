"""The files of a run's programs: each case's folder under ``OUT/programs/`` (named by its id and
content digest), the programs written there per spec and program form, and what a runtime converted
a program into (its artefacts), kept beside it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from conformance.specs import SPECS, NotExpressible


def slug(text: str) -> str:
    """``text`` as a file name: letters, digits and ``_.=-`` kept, the rest one ``_``, at most 150."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)[:150]


class Programs:
    """The program files of one run under ``out_dir``; ``digest_of(case)`` names a case's content."""

    def __init__(self, out_dir, digest_of: Callable[[object], str], write_programs: bool = True):
        self.out_dir, self.digest_of, self.write_programs = Path(out_dir), digest_of, write_programs

    def folder(self, case) -> Path:
        return self.out_dir / "programs" / slug(f"{case.id}-{self.digest_of(case)[:8]}")

    def write(self, case, prog, form: dict | None = None) -> None:
        """A translated program into the case's folder (a program form's into a folder of its own,
        ``shape=dynamic/``)."""
        if isinstance(prog, (NotExpressible, Exception)):
            return
        if not self.write_programs and prog.format == "onnx":
            return
        folder = self.folder(case)
        if form:
            folder = folder / slug("/".join(f"{k}={v}" for k, v in sorted(form.items())))
        folder.mkdir(parents=True, exist_ok=True)
        SPECS[prog.spec].write(prog, folder)

    def artefacts(self, case, target, prog, artefacts: dict) -> list[str]:
        """What the runtime converted the program into (MNN's model, IREE's MLIR), beside the program,
        named ``<spec>.<target's runtime and device>.<name>`` (pruned with its program)."""
        folder = self.folder(case)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, data in sorted(artefacts.items()):
            path = folder / slug(f"{prog.spec}.{target.runtime}-{target.version}-{target.device}.{name}")
            path.write_bytes(data)
            written.append(str(path.relative_to(self.out_dir)))
        return written
