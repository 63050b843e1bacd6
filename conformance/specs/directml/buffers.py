"""DirectML buffer tensors: sizes, strides and the raw bytes a DML_BUFFER_TENSOR_DESC describes.

Bytes go into a buffer and come back out through the descriptor's own Sizes and Strides (numpy
``as_strided`` over the raw little-endian bytes), so a stride that disagrees with how the bytes were
laid out changes what is read.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import as_strided

from conformance.specs.directml.vocabulary import ELEMENT_SIZE, NUMPY_TYPE

UINT32_MAX = 2**32 - 1


class DescriptorError(Exception):
    """A descriptor or buffer that cannot be read as written (the field is named in the text)."""


def packed_strides(sizes) -> list[int]:
    """Row-major strides, in elements, of a tensor with these sizes (the default when Strides is NULL)."""
    strides, step = [], 1
    for size in reversed(list(sizes)):
        strides.append(step)
        step *= max(int(size), 1)
    return strides[::-1]


def calc_buffer_tensor_size(data_type: str, sizes, strides=None) -> int:
    """DMLCalcBufferTensorSize: (index of the last element + 1) * element size, rounded up to 4.

    Without strides the tensor is packed. A tensor with a size below 1 has no elements (DirectML
    rejects it; the validator says so) and needs 0 bytes here.
    """
    element = ELEMENT_SIZE.get(data_type, 0)
    sizes = [int(s) for s in sizes]
    if element == 0 or not sizes or min(sizes) < 1:
        return 0
    if strides is None:
        implied = int(np.prod(sizes, dtype=object)) * element
    else:
        last = sum((s - 1) * int(st) for s, st in zip(sizes, strides))
        implied = (last + 1) * element
    return (implied + 3) & ~3


def tensor_bytes(array: np.ndarray, data_type: str, strides, total: int) -> bytes:
    """The buffer of ``total`` bytes holding ``array`` (shaped like Sizes) where Strides put it."""
    element = NUMPY_TYPE[data_type]
    strides = [int(s) for s in strides]
    needed = calc_buffer_tensor_size(data_type, array.shape, strides)
    if min(strides, default=0) < 0 or needed > total:
        raise DescriptorError(f"Sizes {list(array.shape)} with Strides {strides} need {needed} bytes, "
                              f"but the buffer has {total}")
    buffer = np.zeros(total, dtype=np.uint8)
    if array.size:
        view = as_strided(buffer.view(element)[: total // element.itemsize], shape=array.shape,
                          strides=[s * element.itemsize for s in strides], writeable=True)
        view[...] = array.astype(element)  # int32 lengths become UINT32 bit for bit (two's complement)
    return buffer.tobytes()


def read_tensor(buffer_desc: dict, raw: bytes, where: str) -> np.ndarray:
    """The tensor a DML_BUFFER_TENSOR_DESC describes, read from ``raw`` through its Sizes and
    Strides (a copy). Raises DescriptorError when an element would lie outside the buffer."""
    data_type = buffer_desc["DataType"]
    if data_type not in NUMPY_TYPE:
        raise DescriptorError(f"{where}.DataType = {data_type!r}, which these operators do not bind")
    element = NUMPY_TYPE[data_type]
    sizes = [int(s) for s in buffer_desc["Sizes"]]
    strides = buffer_desc.get("Strides")
    strides = packed_strides(sizes) if strides is None else [int(s) for s in strides]
    last = sum((s - 1) * st for s, st in zip(sizes, strides))
    if min(sizes) < 1 or min(strides) < 0:
        raise DescriptorError(f"{where}: Sizes {sizes} / Strides {strides} describe no readable tensor")
    if (last + 1) * element.itemsize > len(raw):
        raise DescriptorError(
            f"{where}: the last element sits at byte {last * element.itemsize} (Sizes {sizes}, Strides "
            f"{strides}), but the buffer holds {len(raw)} bytes")
    flat = np.frombuffer(raw, dtype=element, count=len(raw) // element.itemsize)
    view = as_strided(flat, shape=sizes, strides=[st * element.itemsize for st in strides],
                      writeable=False)
    return np.array(view)


def write_through(buffer_desc: dict, values: np.ndarray) -> np.ndarray:
    """Write ``values`` into a fresh buffer through the desc's Strides and read them back: what a
    consumer of a written output sees (overlapping strides clobber, as they would on a device)."""
    sizes = [int(s) for s in buffer_desc["Sizes"]]
    strides = buffer_desc.get("Strides")
    strides = packed_strides(sizes) if strides is None else [int(s) for s in strides]
    total = int(buffer_desc["TotalTensorSizeInBytes"])
    raw = tensor_bytes(np.asarray(values).reshape(sizes), buffer_desc["DataType"], strides, total)
    return read_tensor(buffer_desc, raw, "output")


def load_document(path) -> dict:
    """The descriptor document (JSON) at ``path``."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise DescriptorError(f"{path}: cannot read the descriptor: {exc}") from None


def read_binding(folder: Path, binding: dict, field: str) -> bytes:
    """The bytes of an input binding's buffer file, the bound range only (``bytes`` of them)."""
    path = Path(folder) / str(binding.get("file"))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DescriptorError(f"bindings.{field}: cannot read {path.name}: {exc.strerror}") from None
    return raw[: int(binding.get("bytes", len(raw)))]


__all__ = [
    "UINT32_MAX",
    "DescriptorError",
    "calc_buffer_tensor_size",
    "load_document",
    "packed_strides",
    "read_binding",
    "read_tensor",
    "tensor_bytes",
    "write_through",
]
