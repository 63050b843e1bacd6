"""A target's configuration as a value, and a target id's parts: the one place either is parsed or
written (docs/targets.md).

A target id is ``[CONVERTER → ]RUNTIME[-VERSION]/DEVICE[/CONFIGURATION]@SPEC``:
``onnxruntime-1.32.0/CPU@onnx-14``, ``openvino-2026.4.1/CPU/precision=default→bf16@onnx-14``,
``torch.onnx-dynamo-2.13.0(opset=18) → onnxruntime-1.32.0/CPU/shape=dynamic@torch``. Its configuration
holds KEY=VALUE items (``/`` or ``,`` between them): what the target is asked to run in, the precision
(``precision=pinned``) and the execution forms (``shape=dynamic``, conformance/runtimes/forms.py), and
where float32 computes in another precision on this machine, that precision after an arrow
(``precision=default→bf16``; ``shape=dynamic/precision→tf32`` where no precision is asked). The arrow
means that alone inside a configuration; between a converter and its runtime it stands with a space on
each side (:data:`CONVERTED`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: inside a configuration: the precision measured on this machine follows it
MEASURED = "→"
#: between the converter that writes a target's program and the runtime that runs it
CONVERTED = " → "


@dataclass(frozen=True)
class TargetConfig:
    """What a target is asked to run in (``items``: its KEY=VALUE pairs, in the order written), the
    precision a float32 model measured to compute in where it is not float32 (``measured``), and the
    converter that writes its program (``converter``, "" for the suite's own)."""

    items: tuple[tuple[str, str | None], ...] = ()   # None: a plugin's own word, not KEY=VALUE
    measured: str = ""
    converter: str = field(default="", compare=True)

    @classmethod
    def parse(cls, text: str | None, converter: str = "", labelled: bool = True) -> TargetConfig:
        """``default``, ``precision=pinned/shape=dynamic``, ``precision=default→bf16``,
        ``shape=dynamic/precision→tf32``: a configuration as written, asked or labelled. ValueError for
        an item that is neither KEY=VALUE nor (``labelled``) a measured precision."""
        items: list[tuple[str, str | None]] = []
        measured = ""
        for raw in str(text or "default").replace(",", "/").split("/"):
            asked, arrow, found = raw.strip().partition(MEASURED)
            asked = asked.strip()
            if arrow:
                measured = found.strip()
            if not asked or asked == "default":
                continue
            key, eq, value = asked.partition("=")
            if not eq:
                if labelled and arrow and key.strip() == "precision":   # shape=dynamic/precision→tf32
                    continue
                if not labelled:
                    raise ValueError(f"{raw.strip()!r} in configuration {text!r} is not KEY=VALUE")
                items.append((key.strip(), None))   # a plugin's own word (``config = "fast"``)
                continue
            items.append((key.strip(), value.strip()))
        return cls(tuple(items), measured, converter)

    # -- what it asks for -------------------------------------------------------------------------------
    @property
    def pairs(self) -> dict[str, str]:
        """The KEY=VALUE items asked for (the precision and the execution forms), in order."""
        return {k: v for k, v in self.items if v is not None}

    @property
    def words(self) -> list[str]:
        """The items that are a plugin's own words, not KEY=VALUE (``fast``)."""
        return [k for k, v in self.items if v is None]

    @property
    def asked(self) -> str:
        """The configuration asked for, as targets and ``--config`` write it: ``default`` or its items."""
        return "/".join(k if v is None else f"{k}={v}" for k, v in self.items) or "default"

    def __str__(self) -> str:
        return self.asked

    @property
    def plain(self) -> tuple[tuple[str, str | None], ...]:
        """The items as a comparison of two configurations reads them: ``precision=default`` is the
        default configuration (``default``), whatever the measured part."""
        return tuple(item for item in self.items if item != ("precision", "default"))

    def without(self, keys) -> TargetConfig:
        """The same without the items of ``keys``."""
        return TargetConfig(tuple((k, v) for k, v in self.items if k not in keys), self.measured, self.converter)

    def only(self, keys) -> TargetConfig:
        """The same with the items of ``keys`` alone."""
        return TargetConfig(tuple((k, v) for k, v in self.items if k in keys), self.measured, self.converter)

    # -- how a target id names it ---------------------------------------------------------------------
    @property
    def label(self) -> str:
        """The configuration as a target id names it: as asked, and where a float32 model computes in
        another precision than f32, that precision: ``precision=default→bf16``,
        ``precision=pinned→bf16/shape=dynamic``, ``shape=dynamic/precision→tf32``."""
        if not self.measured or self.measured == "f32":
            return self.asked
        if not self.items:
            return f"precision=default{MEASURED}{self.measured}"
        if self.items[0][0] == "precision" and self.items[0][1] is not None:   # the arrow right after it
            first, rest = self.items[0], TargetConfig(self.items[1:])
            return f"{first[0]}={first[1]}{MEASURED}{self.measured}" + ("" if not rest.items else f"/{rest.asked}")
        return f"{self.asked}/precision{MEASURED}{self.measured}"


@dataclass(frozen=True)
class TargetName:
    """A target id's parts: ``head`` (the runtime and its version, ``onnxruntime-1.32.0``), ``device``,
    ``config`` (a :class:`TargetConfig`, with the converter), ``spec``."""

    head: str
    device: str
    config: TargetConfig
    spec: str

    @classmethod
    def parse(cls, target_id: str) -> TargetName:
        converter, arrow, rest = str(target_id).rpartition(CONVERTED)
        if not arrow:
            converter, rest = "", str(target_id)
        setup, _, spec = rest.rpartition("@")
        if not setup:
            setup, spec = rest, ""
        head, _, after = setup.partition("/")
        device, _, config = after.partition("/")
        return cls(head, device, TargetConfig.parse(config, converter.strip()), spec)

    def __str__(self) -> str:
        return f"{self.without_spec}@{self.spec}" if self.spec else self.without_spec

    @staticmethod
    def device_part(value: str) -> tuple[str, TargetConfig]:
        """``CPU`` -> (CPU, default); ``CPU/precision=pinned`` -> (CPU, precision=pinned): the part of an
        id after the runtime, as ``--device`` takes it (ValueError for an item that is not KEY=VALUE)."""
        device, _, config = value.partition("/")
        return device.strip(), TargetConfig.parse(config, labelled=False)

    @property
    def without_spec(self) -> str:
        """``onnxruntime-1.32.0/CPU``, ``openvino-2026.4.1/CPU/precision=default→bf16``: one runtime
        configuration (the workers' binding, the terminal's line)."""
        label = self.config.label
        through = f"{self.config.converter}{CONVERTED}" if self.config.converter else ""
        return f"{through}{self.head}/{self.device}" + ("" if label == "default" else f"/{label}")

    @property
    def version(self) -> str:
        """The runtime version the id names (``1.32.0`` of ``onnxruntime-1.32.0``, ``1.17.0`` of
        ``onnx-reference-1.17.0``): what follows the first ``-`` that reads as a PEP 440 version; ""
        where none does (a target with no version)."""
        from packaging.version import InvalidVersion, Version
        for at, char in enumerate(self.head):
            if char == "-":
                try:
                    Version(self.head[at + 1:])
                except InvalidVersion:
                    continue
                return self.head[at + 1:]
        return ""

    @property
    def runtime(self) -> str:
        """The runtime without a version (``onnxruntime``, ``onnx-reference``): the head less a trailing
        ``-<digit>...``."""
        return re.sub(r"-\d[\w.+]*$", "", self.head)
