"""The effective configuration of a target: what it really computes in, measured, not asked for.

A runtime's default precision depends on the machine: OpenVINO's CPU plugin computes float32
models in bf16 on CPUs with AVX512-BF16 or AMX and in f16 on ARM; CUDA may use TF32; CPUs and
libraries differ in flushing subnormals. Three sources say what a target did, each named on what
it produced:

- ``declared``: the runtime's own report on the compiled or loaded object (an adapter's
  ``effective()`` after each run: OpenVINO's compiled ``INFERENCE_PRECISION_HINT``, torch's TF32
  switches on CUDA);
- ``measured``: the arithmetic probe (:mod:`conformance.run.probe`), a float32 case whose outputs
  show how many significand bits survive and whether subnormals are flushed;
- ``assumed``: neither is known, so the model's own type.

This module holds the vocabulary of precisions (one table), reads the host's arithmetic facts, and
names a target's configuration in its id (``precision=default→bf16``).
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Precision:
    """One arithmetic type a runtime may compute in."""

    name: str       # as target ids and OpenVINO write it: f32, bf16, ...
    dtype: str      # the oracle's and numpy's name: float32, bfloat16, ... (tfloat32 has no array type)
    bits: int       # significand bits, the implicit one included
    max_exp: int    # the largest finite value is just below 2**max_exp


#: every precision the suite names, widest first
PRECISIONS = (
    Precision("f64", "float64", 53, 1024),
    Precision("f32", "float32", 24, 128),
    Precision("tf32", "tfloat32", 11, 128),
    Precision("f16", "float16", 11, 16),
    Precision("bf16", "bfloat16", 8, 128),
)
BY_NAME = {p.name: p for p in PRECISIONS}
BY_DTYPE = {p.dtype: p for p in PRECISIONS}

#: spellings runtimes use for them (lower case, without punctuation), beyond name and dtype
_ALIASES = {"fp64": "f64", "double": "f64", "double64": "f64", "fp32": "f32", "float": "f32",
            "fp16": "f16", "half": "f16", "bfloat": "bf16", "tfloat32": "tf32", "highest": "f32",
            "high": "tf32", "medium": "bf16"}


def parse(text) -> Precision | None:
    """A precision from a runtime's spelling of it (``bf16``, ``<Type: 'bfloat16'>``, ``FP32``,
    torch's matmul precision ``high``), or None when the text names none."""
    if text is None:
        return None
    word = str(text).strip()
    quoted = re.search(r"'([^']+)'", word)  # OpenVINO's ov.Type repr: <Type: 'bfloat16'>
    if quoted:
        word = quoted.group(1)
    word = re.sub(r"[^a-z0-9]", "", word.lower())
    word = _ALIASES.get(word, word)
    return BY_NAME.get(word) or BY_DTYPE.get(word)


def of_dtype(dtype: str) -> Precision:
    return BY_DTYPE[dtype]


def narrower(compute: Precision | None, dtype: str) -> bool:
    """Whether computing in ``compute`` loses precision against the model's ``dtype``."""
    return compute is not None and dtype in BY_DTYPE and compute.bits < BY_DTYPE[dtype].bits


def config_label(config: str, precision: str) -> str:
    """The configuration as a target id names it: the configuration asked for, and where a float32
    model computes in another precision, that precision: ``precision=default→bf16``
    (conformance/runtimes/configuration.py ``TargetConfig.label``)."""
    from conformance.runtimes.configuration import TargetConfig
    return TargetConfig(TargetConfig.parse(config).items, precision).label


# -- the host ---------------------------------------------------------------------------------------

#: CPU flags that change which precision runtimes pick, or how they round (as /proc/cpuinfo names
#: them on x86 and ARM): bf16 and fp16 arithmetic, AMX tiles, FMA
ARITHMETIC_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16",
                    "amx_fp16", "amx_tile", "avx_vnni", "asimd", "asimdhp", "fphp", "bf16", "sve",
                    "sve2", "sme")


@cache
def host() -> dict:
    """The machine's arithmetic facts: CPU model, the flags of ARITHMETIC_FLAGS it has, and how
    this process's own float32 arithmetic treats subnormals (numpy, measured)."""
    facts: dict[str, Any] = {"machine": platform.machine(), "system": platform.system(), "cpu": _cpu_model(),
             "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}
    flags = _cpu_flags()
    facts["arithmetic_flags"] = [f for f in ARITHMETIC_FLAGS if f in flags] if flags is not None else None
    facts.update(_subnormals())
    return facts


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


def _cpu_model() -> str:
    for line in _cpuinfo().splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Hardware", "Processor", "cpu model") and value.strip():
            return value.strip()
    return platform.processor() or platform.machine() or "unknown"


def _cpu_flags() -> set[str] | None:
    for line in _cpuinfo().splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return None


def _subnormals() -> dict:
    """Flush-to-zero and denormals-are-zero of this process's float32 arithmetic (numpy on the
    main thread): what the suite's own process does, not what a runtime's threads do."""
    import numpy as np
    tiny = np.float32(2.0 ** -126)
    with np.errstate(all="ignore"):
        ftz = bool(np.float32(tiny) * np.float32(0.5) == 0)
        daz = bool(np.float32(2.0 ** -140) * np.float32(2.0 ** 20) == 0)
    return {"process_flushes_subnormals": ftz, "process_denormals_are_zero": daz}


def describe_host(facts: dict) -> str:
    """'AMD EPYC (x86_64; avx512_bf16, avx512f, ...)' for the report and the terminal."""
    flags = facts.get("arithmetic_flags")
    flags = ", ".join(flags) if flags else "no bf16/fp16 flags" if flags is not None else "flags unknown"
    return f"{facts.get('cpu', '?')} ({facts.get('machine', '?')}; {flags})"


# -- a target's measured configuration, in words --------------------------------------------------

def target_precision(configuration: dict) -> str:
    """The precision a target computes float32 models in: the runtime's own declaration for the
    probe's model where it makes one, else the probe's measurement where it names a precision of
    the table, else '' (unknown). No runtime can loosen its own bound: a probe reading that
    disagrees with the declaration is shown (``summary``), not used, and a significand no
    precision has ("1-bit significand") is a finding about the target, not a precision."""
    declared = configuration.get("declared", {}).get("precision")
    if declared in BY_NAME:
        return declared
    measured = configuration.get("measured", {}).get("precision", "")
    return measured if measured in BY_NAME else ""


def probe_finding(configuration: dict, precision: str) -> str:
    """What the probe read that the judgement does not use, in words ('' where it agrees): a
    precision other than ``precision``, or rounding that is not to nearest."""
    measured = configuration.get("measured") or {}
    if not measured:
        return ""
    if measured.get("precision") != precision:
        return (f"the probe read {measured.get('precision')!r}, not {precision!r}: shown, not used "
                "(a probe cannot widen the bound below what the runtime declares)")
    if measured.get("rounding", "nearest") != "nearest":
        return ("the probe saw rounding that is not to nearest: shown, not used (the bound assumes "
                "round to nearest unless the runtime declares its rounding)")
    return ""


def summary(configuration: dict) -> str:
    """One line: 'computes float32 in bf16 (declared INFERENCE_PRECISION_HINT=bf16; probe: 8
    significand bits); keeps subnormals'."""
    declared = configuration.get("declared", {})
    measured = configuration.get("measured")
    parts = []
    precision = target_precision(configuration)
    parts.append(f"computes float32 in {precision}" if precision else "precision not measured")
    said = [f"{k}={v}" for k, v in declared.items() if k != "precision" and not isinstance(v, (list, dict))]
    if said:
        parts.append("declared " + ", ".join(said))
    if measured:
        bits = measured.get("bits")
        parts.append((f"probe: {bits} significand bits" if bits else f"probe: {measured['precision']}")
                     + ("" if measured["precision"] == precision else f" ({measured['precision']}: "
                        "the declaration and the measurement disagree; judged as declared)"
                        if precision else f" ({measured['precision']}: a finding, not a precision "
                        "to judge by)"))
        if measured.get("rounding", "nearest") != "nearest" and measured["precision"] == precision:
            parts.append("probe: rounds faithfully, not to nearest (shown, not used)")
        parts.append("flushes subnormal results" if measured["flushes_subnormals"] else "keeps subnormal results")
        if measured["denormals_are_zero"]:
            parts.append("reads subnormal inputs as zero")
    else:
        parts.append(f"probe {configuration.get('probe', 'not run')}")
    kernel = activations_label(configuration.get("activations"))
    if kernel:
        beyond = activations_judged(configuration.get("activations"), "")
        parts.append(f"activations: {kernel}" + (" (beyond the model's: judged with them, docs/precision.md)"
                                                 if beyond else ""))
    return "; ".join(parts)


# -- the kernel's measured activations (conformance/run/activations.py), in the judgement's and in words --

def activations_judged(activations: dict | None, op: str) -> dict:
    """{function: k} of ``op``'s measured functions whose k passes the model's own (ACT_ULPS), where
    the judgement must widen the model to them (an op not measured takes the worst of the ops that
    were); {} where the model's own accuracy covers every one."""
    from oracles.precision import ACT_ULPS
    by_op = (activations or {}).get("by_op") or {}
    measured = by_op.get(op)
    if measured is None:
        measured = {}
        for per in by_op.values():
            for fn, info in per.items():
                if info["k"] > measured.get(fn, {"k": -1.0})["k"]:
                    measured[fn] = info
    return {fn: info["k"] for fn, info in measured.items() if info["k"] > ACT_ULPS}


def activations_label(activations: dict | None, op: str | None = None) -> str:
    """'tanh ≤ 125 ulp, sigmoid ≤ 4.1 ulp' (the largest errors measured, in ulps of the kernel's output
    type, over every op or through ``op``); '' where nothing was measured."""
    by_op = (activations or {}).get("by_op") or {}
    ops = [op] if op in by_op else list(by_op)
    worst: dict = {}
    for name in ops:
        for fn, info in by_op[name].items():
            worst[fn] = max(worst.get(fn, 0.0), info["ulps"])
    return ", ".join(f"{fn.lower()} ≤ {worst[fn]:.3g} ulp" for fn in ("Tanh", "Sigmoid") if fn in worst)
