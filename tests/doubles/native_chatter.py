"""A deliberate test double: a runtime plugin whose native code writes to file descriptor 2 (through
libc's ``write``, as a C library such as onnxruntime's logger does, bypassing Python's sys.stderr)
when it is imported, built and run, with ANSI colours. None of it may reach the terminal: the run's
writes go with their verdict (``runtime_output``), the import's and build's with the target
(run.json ``load_output``)."""

from __future__ import annotations

import ctypes

from tests.doubles import ort_cpu

IMPORTED, BUILT, RAN = b"NATIVE-IMPORT-MARKER", b"NATIVE-BUILD-MARKER", b"NATIVE-RUN-MARKER"
_libc = ctypes.CDLL(None)


def _native_stderr(text: bytes) -> None:
    line = b"\x1b[1;31m" + text + b" [E:onnxruntime:, inference_session.cc:1] a red native log line\x1b[m\n"
    _libc.write(2, line, len(line))


_native_stderr(IMPORTED)


class NativeChatter:
    name = "native-chatter"
    format = "onnx"
    version = "test-double"

    def __init__(self):
        _native_stderr(BUILT)

    def run(self, model: bytes, feeds):
        for _ in range(50):
            _native_stderr(RAN)
        return ort_cpu(model, feeds)
