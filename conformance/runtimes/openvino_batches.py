"""What OpenVINO's batches need besides the adapter's ``run_many`` (conformance/runtimes/openvino.py):
the batch's size, the mark on a batched program's node names and how often a merged compile may be
retried; which program a refusal names, a program's identity on its inputs, and the answer of a
program identical to an earlier one."""

from __future__ import annotations

import re

import numpy as np

from conformance.caches import digest

#: programs one worker call may take (Target.batch): compiled as one model (Adapter.run_many)
BATCH = 8
#: the prefix of a batched program's node names: its index in the batch follows
BATCH_MARK = "batch-item-"
#: how many programs a batch may lose to a merged compile's refusal before the rest run alone
MERGE_RETRIES = 8


def _element_type(model) -> str:
    """A model's element type (its first input's): what the pinned configuration's hint follows."""
    return str(model.inputs[0].get_element_type()) if model.inputs else ""


def _owner(message: str, keys: list) -> int | None:
    """Which of the batch's programs (``keys``: their indexes) owns the node a refusal names:
    OpenVINO names the node it failed on (``node: opset5::GRUSequence <name>``), and run_many
    prefixed every node's friendly name with its program's index. None where it names none of them."""
    found = re.search(rf"node: \S+ {re.escape(BATCH_MARK)}(\d+)\.", message)
    if found and int(found.group(1)) in keys:
        return int(found.group(1))
    return None


def _feeds_key(feeds: dict[str, np.ndarray]) -> str:
    return digest(*(part for name in sorted(feeds) for part in
                    (f"{name}|{feeds[name].dtype.str}|{feeds[name].shape}",
                     np.ascontiguousarray(feeds[name]).tobytes())))


def _copy(answer):
    """A batch's answer for a second program identical to the first (arrays copied: each pair
    owns its outputs)."""
    from conformance.runtimes.base import RanAlone, RanMerged
    if isinstance(answer, RanAlone):
        return RanAlone(_copy(answer.answer), answer.why, answer.effective)
    if isinstance(answer, RanMerged):
        return RanMerged(_copy(answer.answer), answer.effective)
    if isinstance(answer, list):
        return [np.array(a, copy=True) for a in answer]
    return answer


def _last_line(exc: Exception) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip() and not line.startswith("Exception from")]
    return (lines[-1] if lines else f"{type(exc).__name__}: {exc}")[:200]
