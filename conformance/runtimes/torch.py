"""torch: ``torch.nn.RNN``/``GRU``/``LSTM`` and their cells, one target per device (CPU; CUDA where present).

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


class TorchRuntime:
    name = "torch"
    format = "torch"

    def __init__(self, device: str = "CPU"):
        import torch
        self._torch = torch
        torch.set_num_threads(1)
        self.version = torch.__version__
        self.device = device
        self.config = "default"
        self._where = torch.device("cuda" if device == "CUDA" else "cpu")

    def effective(self) -> dict:
        """torch's switches that change float32 arithmetic: TF32 in cuDNN (its RNN kernels) and
        in matmul, and the float32 matmul precision. They matter on CUDA only; on the CPU torch
        computes in the model's type."""
        torch = self._torch
        found = {"cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
                 "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
                 "float32_matmul_precision": torch.get_float32_matmul_precision()}
        if (self.device == "CUDA" and getattr(self, "_dtype", "") == "float32" and found["cudnn.allow_tf32"]
                and torch.cuda.get_device_capability(0)[0] >= 8):  # TF32 exists from Ampere (8.0) on
            found["precision"] = "tf32"
        return found

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


def targets(specs_by_format: dict):
    """CPU always; CUDA where torch sees a GPU, else a declared gap."""
    import torch

    from conformance.runtimes.base import RuntimeRef, Target
    specs = specs_by_format.get("torch", [])
    found, gaps = [], []
    devices = ["CPU"] + (["CUDA"] if torch.cuda.is_available() else [])
    for device in devices:
        ref = RuntimeRef("conformance.runtimes.torch:TorchRuntime", (("device", device),))
        found += [Target("torch", torch.__version__, device, "default", spec, ref, format="torch",
                         description=f"torch.nn RNN/GRU/LSTM modules and cells on {device}")
                  for spec in specs]
    if specs and "CUDA" not in devices:
        reason = (f"CUDA not available (torch {torch.__version__}: torch.cuda.is_available() is False); "
                  f"torch on CUDA not checked")
        gaps.append(("torch", reason))
    return found, gaps
