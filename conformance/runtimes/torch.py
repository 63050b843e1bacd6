"""torch: ``torch.nn.RNN``/``GRU``/``LSTM`` and their cells, one target per device (CPU; CUDA where present).

The program (:mod:`conformance.specs.torch`) is a JSON description plus a ``.npz`` state_dict. The
adapter builds the module, loads the weights with ``load_state_dict(strict=True)`` (so a weight of
the wrong shape, a missing or an unknown one is torch's refusal), runs it under ``torch.no_grad()``
in the case dtype, and returns the outputs the description names, in order.

Output shaping done here, beyond what :attr:`Program.transforms` can say (a transpose or a reshape
applied after it): ``output`` [S,B,D*H] (``[B,S,D*H]`` with batch_first) is viewed as [S,B,D,H]
(``[B,S,D,H]``), as torch documents (``output.view(seq_len, batch, num_directions, hidden_size)``);
packed output is first unpacked with ``pad_packed_sequence(total_length=S)``; and where the
description names a ``keep_direction`` (the reverse-only mapping), only that direction of
``output``, ``h_n`` and ``c_n`` is returned. The translator's transforms then bring Y to [S,D,B,H].
"""

from __future__ import annotations

import json
from pathlib import Path

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
        torch = self._torch
        path = Path(model)
        desc = json.loads(path.read_text())
        self._dtype = desc["dtype"]
        dtype = getattr(torch, desc["dtype"])  # float32 | float64 | float16 | bfloat16
        module = self._module(desc).to(device=self._where, dtype=dtype)
        with np.load(path.parent / desc["weights"]) as stored:
            state = {k: self._tensor(stored[k], desc["dtype"]) for k in stored.files}
        module.load_state_dict(state, strict=True)
        module.eval()
        inputs = {k: self._tensor(v, desc["dtype"]) for k, v in feeds.items() if k != "lengths"}
        with torch.no_grad():
            if desc["module"].endswith("Cell"):
                got = self._run_cell(module, desc, inputs)
            else:
                got = self._run_sequence(module, desc, inputs, feeds.get("lengths"))
        return [self._array(got[name], desc["dtype"]) for name in desc["outputs"]]

    def _module(self, desc: dict):
        nn = self._torch.nn
        kind = desc["module"]
        kwargs = {"input_size": desc["input_size"], "hidden_size": desc["hidden_size"], "bias": desc["bias"]}
        if kind.startswith("RNN"):
            kwargs["nonlinearity"] = desc["nonlinearity"]
        if not kind.endswith("Cell"):
            kwargs.update(num_layers=desc["num_layers"], bidirectional=desc["bidirectional"],
                          batch_first=desc["batch_first"])
        return getattr(nn, kind)(**kwargs)

    def _run_cell(self, module, desc: dict, inputs: dict) -> dict:
        x = inputs["input"]
        if desc["module"] == "LSTMCell":
            hx = (inputs["h0"], inputs["c0"]) if "h0" in inputs else None
            h, c = module(x, hx)
            return {"h": h, "c": c}
        return {"h": module(x, inputs.get("h0"))}

    def _run_sequence(self, module, desc: dict, inputs: dict, lengths) -> dict:
        torch = self._torch
        rnn_utils = torch.nn.utils.rnn
        x = inputs["input"]
        batch_first = desc["batch_first"]
        steps = x.shape[1 if batch_first else 0] if x.dim() == 3 else None
        if desc["packed"]:
            lens = torch.as_tensor(np.asarray(lengths).astype(np.int64))  # CPU int64, as torch asks
            x = rnn_utils.pack_padded_sequence(x, lens, batch_first=batch_first, enforce_sorted=False)
        if desc["module"] == "LSTM":
            hx = (inputs["h0"], inputs["c0"]) if "h0" in inputs else None
            output, (h_n, c_n) = module(x, hx)
        else:
            output, h_n = module(x, inputs.get("h0"))
            c_n = None
        if desc["packed"]:
            output, _ = rnn_utils.pad_packed_sequence(output, batch_first=batch_first, total_length=steps)
        d = 2 if desc["bidirectional"] else 1
        output = output.reshape(output.shape[0], output.shape[1], d, desc["hidden_size"])
        keep = desc.get("keep_direction")
        if keep is not None:
            output = output[:, :, keep:keep + 1]
            h_n = h_n[keep:keep + 1]
            c_n = c_n[keep:keep + 1] if c_n is not None else None
        return {"output": output, "h_n": h_n, "c_n": c_n}

    def _tensor(self, arr: np.ndarray, dtype: str):
        torch = self._torch
        arr = np.ascontiguousarray(arr)
        if dtype == "bfloat16":  # ml_dtypes bfloat16 feeds and uint16 weight bits: the same 16-bit patterns
            return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16).to(self._where)
        return torch.from_numpy(arr.copy()).to(self._where)

    def _array(self, tensor, dtype: str) -> np.ndarray:
        tensor = tensor.detach().cpu()
        if dtype == "bfloat16":
            import ml_dtypes
            return tensor.view(self._torch.int16).numpy().view(ml_dtypes.bfloat16)
        return tensor.numpy()


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
