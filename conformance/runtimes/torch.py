"""torch: ``torch.nn.RNN``/``GRU``/``LSTM`` and their cells, one target per device (CPU; CUDA where present),
and on CUDA one per precision configuration: ``default`` (TF32 as torch ships it: cuDNN's float32 RNNs
round their matrix products' operands to TF32) and ``precision=pinned`` (TF32 off in cuDNN and in
matmul, ``float32_matmul_precision='highest'``), as OpenVINO has them (docs/targets.md).

The program (:mod:`conformance.specs.torch`) is a JSON description plus a ``.npz`` state_dict. The
adapter builds it as a module (:mod:`conformance.runtimes.torch_program`: the RNN module with its
weights loaded strictly, in eval mode, in the case dtype, with the input packed where the program is
packed), runs it under ``torch.no_grad()``, and returns the outputs the description names, in order,
shaped by ``torch_program.finish`` (the output padded to the sequence length and viewed per
direction, the reverse-only mapping's direction kept); the translator's transforms then bring Y to
[S,D,B,H]. The torch converters (conformance/converters/) convert the same module.
"""

from __future__ import annotations

import numpy as np

#: the precision configurations of a CUDA device (the CPU computes in the model's type: ``default`` only)
CUDA_CONFIGS = ("default", "precision=pinned")


class TorchRuntime:
    name = "torch"
    format = "torch"

    def __init__(self, device: str = "CPU", config: str = "default"):
        import torch
        self._torch = torch
        torch.set_num_threads(1)
        self.version = torch.__version__
        self.device = device
        self.config = config
        self._where = torch.device("cuda" if device == "CUDA" else "cpu")
        if config == "precision=pinned":  # the legacy switches: they set cuDNN's conv and RNN flags alike
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")

    def effective(self) -> dict:
        """torch's switches that change float32 arithmetic: TF32 in cuDNN (its RNN kernels) and
        in matmul, and the float32 matmul precision. They matter on CUDA only; on the CPU torch
        computes in the model's type."""
        torch = self._torch
        found = {"cudnn.allow_tf32": _flag(lambda: torch.backends.cudnn.allow_tf32),
                 "cuda.matmul.allow_tf32": _flag(lambda: torch.backends.cuda.matmul.allow_tf32),
                 "float32_matmul_precision": torch.get_float32_matmul_precision()}
        rnn = getattr(getattr(torch.backends.cudnn, "rnn", None), "fp32_precision", None)
        if rnn is not None:  # torch 2.9 on: the flag cuDNN's RNNs read ("tf32" or "ieee")
            found["cudnn.rnn.fp32_precision"] = str(rnn)
        tf32 = found["cudnn.rnn.fp32_precision"] == "tf32" if rnn is not None else found["cudnn.allow_tf32"] is True
        if (self.device == "CUDA" and getattr(self, "_dtype", "") == "float32" and tf32
                and torch.cuda.get_device_capability(0)[0] >= 8):  # TF32 exists from Ampere (8.0) on
            found["precision"] = "tf32"
        return found

    def sound(self) -> None:
        """Raises where the device's state is lost (conformance/isolation/soundness.py): on CUDA, a
        device-side assert makes every later call fail, this one too. Nothing to check on the CPU."""
        if self.device != "CUDA":
            return
        torch = self._torch
        torch.cuda.synchronize()
        total = float(torch.ones(8, device=self._where).add(1).sum().item())
        if total != 16.0:
            raise RuntimeError(f"a sum of eight 2s on {self._where} gave {total}")

    def describe(self) -> dict:
        torch = self._torch
        found = {"device": str(self._where), "threads": torch.get_num_threads(),
                 "mkldnn": bool(torch.backends.mkldnn.is_available())}
        if self.device == "CUDA":
            found["device_name"] = torch.cuda.get_device_name(0)
            found["capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
            found["cudnn"] = torch.backends.cudnn.version()
        return found

    def run(self, model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        from conformance.runtimes import torch_program as tp
        torch = self._torch
        desc, weights = tp.read(model)
        self._dtype = desc["dtype"]
        program = tp.build(torch, desc, weights, self._where)
        args = [tp.tensor(torch, feeds[name], desc["dtype"], self._where) for name in desc["inputs"]]
        with torch.no_grad():
            returned = program(*args)
        return tp.finish(desc, [tp.array(torch, r, desc["dtype"]) for r in returned], tp.steps_of(desc, feeds))


def _flag(read):
    """A torch switch's value, or what reading it raised (torch 2.9 on refuses to read a legacy flag
    that the new API set apart for conv and RNN)."""
    try:
        return bool(read())
    except Exception as exc:  # noqa: BLE001 - the read's refusal is the report
        return f"unreadable: {type(exc).__name__}"


def targets(specs_by_format: dict):
    """CPU always; CUDA where torch sees a GPU (in its default and pinned precision), else a declared gap."""
    import torch

    from conformance.runtimes.base import RuntimeRef, Target
    specs = specs_by_format.get("torch", [])
    found, gaps = [], []
    devices = ["CPU"] + (["CUDA"] if torch.cuda.is_available() else [])
    for device in devices:
        for config in CUDA_CONFIGS if device == "CUDA" else ("default",):
            ref = RuntimeRef("conformance.runtimes.torch:TorchRuntime",
                             (("device", device),) + ((("config", config),) if config != "default" else ()))
            found += [Target("torch", torch.__version__, device, config, spec, ref, format="torch",
                             description=f"torch.nn RNN/GRU/LSTM modules and cells on {device}"
                                         + (" with TF32 off" if config != "default" else ""))
                      for spec in specs]
    if specs and "CUDA" not in devices:
        reason = (f"CUDA not available (torch {torch.__version__}: torch.cuda.is_available() is False); "
                  f"torch on CUDA not checked")
        gaps.append(("torch", reason))
    return found, gaps
