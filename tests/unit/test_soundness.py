"""The soundness check after a refusal (conformance/isolation/soundness.py), in-process on plain objects:
the canary kept from a call, told apart from garbage, written back from a program's files, and a
runtime's own ``sound()``."""

from __future__ import annotations

import numpy as np

from conformance.isolation.soundness import Canary, check, unsound_text

FEEDS = {"X": np.ones((1, 2, 3), np.float32)}
OUT = [np.array([1.0, 2.0 ** -127, 2.0 ** 20], np.float32), np.array([[np.nan, 3.0]], np.float32)]


class _Runtime:
    def __init__(self, answer=None, raises=None):
        self.answer, self.raises, self.seen = answer, raises, []

    def run(self, model, feeds):
        self.seen.append(model)
        if self.raises:
            raise self.raises
        return self.answer


def test_a_canary_of_bytes_replays_and_accepts_the_same_outputs():
    canary = Canary.of(b"onnx", FEEDS, OUT)
    assert canary is not None and canary.model == b"onnx"
    runtime = _Runtime([o.copy() for o in OUT])
    assert check(runtime, canary, "/nonexistent") == ""
    assert runtime.seen == [b"onnx"]


def test_garbage_or_a_raise_or_another_shape_is_unsound():
    canary = Canary.of(b"onnx", FEEDS, OUT)
    assert "raised RuntimeError: lost" in check(_Runtime(raises=RuntimeError("lost")), canary, "/x")
    assert "changed" in check(_Runtime([OUT[0] * 0, OUT[1]]), canary, "/x")
    assert "NaN and Inf" in check(_Runtime([OUT[0], np.array([[1.0, 3.0]], np.float32)]), canary, "/x")
    assert "shape" in check(_Runtime([OUT[0][:2], OUT[1]]), canary, "/x")
    assert "returned 1 outputs" in check(_Runtime([OUT[0]]), canary, "/x")


def test_a_written_program_travels_as_its_files_and_is_written_back_once(tmp_path):
    program = tmp_path / "program"
    program.mkdir()
    (program / "model.json").write_text("{}")
    (program / "weights.npz").write_bytes(b"w")
    canary = Canary.of(str(program / "model.json"), FEEDS, OUT)
    assert canary is not None and canary.model is None and canary.main == "model.json"
    where = tmp_path / "scratch"
    runtime = _Runtime([o.copy() for o in OUT])
    assert check(runtime, canary, str(where)) == "" and check(runtime, canary, str(where)) == ""
    assert runtime.seen == [str(where / "model.json")] * 2
    assert (where / "weights.npz").read_bytes() == b"w"


def test_the_runtimes_own_check_is_asked_first_and_no_canary_means_nothing_to_tell_by():
    class Lost(_Runtime):
        def sound(self):
            raise RuntimeError("CUDA error: device-side assert triggered")

    class Says(_Runtime):
        def sound(self):
            return "context lost"

    assert "(sound()) raised RuntimeError: CUDA error" in check(Lost(OUT), None, "/x")
    assert "said: context lost" in check(Says(OUT), None, "/x")
    assert check(_Runtime(raises=RuntimeError("anything")), None, "/x") == ""


def test_the_crash_message_says_what_the_call_raised_and_what_the_check_saw():
    text = unsound_text("AcceleratorError: CUDA error", "the target's probe ... raised RuntimeError: x")
    assert text.startswith("the call raised AcceleratorError: CUDA error; then the worker was unsound")
    assert "retired" in text and "fresh one" in text and "SIGSEGV" in text
