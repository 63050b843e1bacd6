"""A torch program (conformance/specs/torch.py: a JSON description and a ``.npz`` state_dict) as a
``torch.nn.Module``: what the eager ``torch`` target runs, and what every torch converter
(conformance/converters/) is handed, so that a converter converts exactly the module the eager
target runs.

``Program(desc, weights)`` wraps the RNN/GRU/LSTM module (or its cell) with the weights loaded by
``load_state_dict(strict=True)`` (a weight of the wrong shape, a missing or an unknown one is
torch's refusal) and the module in eval mode (``dropout`` is then the identity). Its ``forward``
takes the program's feeds as tensors, in the description's ``inputs`` order, packs the input from
``lengths`` where the program is packed (``pack_padded_sequence(enforce_sorted=False)``, then
``pad_packed_sequence``), and returns torch's own outputs: ``output`` (padded to the longest length),
``h_n`` and ``c_n`` (``h``, ``c`` for a cell). Only torch operations are in it, so that what a
converter traces is the module and its packing, nothing of the suite's.

:func:`finish` then shapes those outputs in numpy, the same for the eager run and a converted one:
``output`` padded with zeros to the sequence length (pad_packed_sequence's padding value), viewed as
[S,B,D,H] (``[B,S,D,H]`` with batch_first), as torch documents (``output.view(seq_len, batch,
num_directions, hidden_size)``), an unbatched run's batch axis put back, and where the description
names a ``keep_direction`` (the reverse-only mapping) only that direction of every layer kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def read(path) -> tuple[dict, dict]:
    """(description, state_dict arrays) of the program whose description is at ``path``."""
    path = Path(path)
    desc = json.loads(path.read_text())
    with np.load(path.parent / desc["weights"]) as stored:
        weights = {k: stored[k] for k in stored.files}
    return desc, weights


def tensor(torch, arr: np.ndarray, dtype: str, device="cpu"):
    """A feed or a weight as a torch tensor of the program's dtype (bfloat16 from its 16-bit patterns)."""
    arr = np.ascontiguousarray(arr)
    if dtype == "bfloat16" and arr.dtype.itemsize == 2:  # ml_dtypes bfloat16 feeds, uint16 weight bits
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16).to(device)
    return torch.from_numpy(arr.copy()).to(device)


def array(torch, value, dtype: str) -> np.ndarray:
    value = value.detach().cpu()
    if dtype == "bfloat16":
        import ml_dtypes
        return value.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return value.numpy()


def module(torch, desc: dict):
    """The bare torch.nn module the description names (weights not loaded)."""
    nn = torch.nn
    kind = desc["module"]
    kwargs = {"input_size": desc["input_size"], "hidden_size": desc["hidden_size"], "bias": desc["bias"]}
    if kind.startswith("RNN"):
        kwargs["nonlinearity"] = desc["nonlinearity"]
    if not kind.endswith("Cell"):
        kwargs.update(num_layers=desc["num_layers"], bidirectional=desc["bidirectional"],
                      batch_first=desc["batch_first"], dropout=float(desc.get("dropout", 0.0)))
        if desc.get("proj_size"):
            kwargs["proj_size"] = desc["proj_size"]
    return getattr(nn, kind)(**kwargs)


def build(torch, desc: dict, weights: dict, device="cpu"):
    """The program's module (:func:`program_class`) with its weights, in eval mode, in the program's dtype."""
    dtype = getattr(torch, desc["dtype"])  # float32 | float64 | float16 | bfloat16
    inner = module(torch, desc).to(device=device, dtype=dtype)
    inner.load_state_dict({k: tensor(torch, v, desc["dtype"], device) for k, v in weights.items()}, strict=True)
    program = program_class(torch, tuple(desc["inputs"]))(inner, desc)
    program.eval()
    return program


#: the feeds a torch program may have, in order (conformance/specs/torch.py)
FEEDS = ("input", "h0", "c0", "lengths")


def program_class(torch, names: tuple[str, ...] = FEEDS):
    """The wrapper class, made where torch is imported (this module imports numpy only). Its
    ``forward`` takes the program's feeds as named parameters (``forward(self, input, h0, c0)``), as a
    user's module does: exporters name the graph's inputs after them and map ``dynamic_axes`` by them."""
    if not names or any(n not in FEEDS for n in names) or list(names) != sorted(names, key=FEEDS.index):
        raise ValueError(f"a torch program's inputs are some of {FEEDS}, in that order; got {names}")
    nn = torch.nn
    rnn_utils = torch.nn.utils.rnn
    scope: dict = {}
    exec(f"def forward(self, {', '.join(names)}):\n    return self.run(dict(zip(self.names, ({', '.join(names)},))))",
         scope)  # noqa: S102 - the names are checked against FEEDS above

    class Program(nn.Module):  # type: ignore[name-defined]  # torch is imported where this is made
        forward = scope["forward"]

        def __init__(self, inner, desc: dict):
            super().__init__()
            self.rnn = inner
            self.kind = desc["module"]
            self.names = list(desc["inputs"])
            self.packed = bool(desc.get("packed"))
            self.batch_first = bool(desc.get("batch_first"))

        def run(self, given: dict):
            x = given["input"]
            if self.kind.endswith("Cell"):
                if self.kind == "LSTMCell":
                    hx = (given["h0"], given["c0"]) if "h0" in given else None
                    h, c = self.rnn(x, hx)
                    return h, c
                return (self.rnn(x, given.get("h0")),)
            if self.packed:
                lengths = given["lengths"].to(torch.int64).cpu()
                x = rnn_utils.pack_padded_sequence(x, lengths, batch_first=self.batch_first, enforce_sorted=False)
            if self.kind == "LSTM":
                hx = (given["h0"], given["c0"]) if "h0" in given else None
                output, (h_n, c_n) = self.rnn(x, hx)
            else:
                output, h_n = self.rnn(x, given.get("h0"))
                c_n = None
            if self.packed:
                output, _ = rnn_utils.pad_packed_sequence(output, batch_first=self.batch_first)
            return (output, h_n) if c_n is None else (output, h_n, c_n)

    return Program


def returns(desc: dict) -> list[str]:
    """The names of what the module's forward returns, in order."""
    if desc["module"] == "LSTMCell":
        return ["h", "c"]
    if desc["module"].endswith("Cell"):
        return ["h"]
    return ["output", "h_n", "c_n"] if desc["module"] == "LSTM" else ["output", "h_n"]


def steps_of(desc: dict, feeds: dict) -> int | None:
    """The sequence length of the input fed (the padding's length): a program loaded once runs
    inputs of other lengths."""
    x = feeds.get("input")
    if x is None or desc["module"].endswith("Cell"):
        return None
    if desc.get("unbatched") or np.ndim(x) != 3:
        return int(np.shape(x)[0]) if np.ndim(x) >= 1 else None
    return int(np.shape(x)[1 if desc["batch_first"] else 0])


def finish(desc: dict, returned: list[np.ndarray], steps: int | None = None) -> list[np.ndarray]:
    """The module's returns (``returns(desc)`` order) as the program's outputs (``desc["outputs"]``):
    a packed program's output padded with zeros to the sequence length (``steps``, the input's; else
    the description's: pad_packed_sequence stops at the longest length) and viewed per direction, the
    batch axis of an unbatched run put back, the kept direction of a reverse-only program. An unpacked
    output shorter than its input is left short, judged as a wrong shape (a converter that froze the
    traced sequence length returns that many steps at any other length)."""
    got = dict(zip(returns(desc), returned))
    if desc["module"].endswith("Cell"):
        if desc.get("unbatched"):
            got = {k: v[None] for k, v in got.items()}
        return [got[name] for name in desc["outputs"]]
    output, h_n = got["output"], got["h_n"]
    c_n = got.get("c_n")
    if desc.get("unbatched"):
        output = output[:, None] if output.ndim == 2 else output
        h_n = h_n[:, None] if h_n.ndim == 2 else h_n
        c_n = c_n[:, None] if c_n is not None and c_n.ndim == 2 else c_n
    time_axis = 1 if desc["batch_first"] else 0
    steps = steps or desc.get("steps")
    if desc.get("packed") and steps and output.ndim == 3 and output.shape[time_axis] < steps:
        pad = [(0, 0)] * 3
        pad[time_axis] = (0, steps - output.shape[time_axis])
        output = np.pad(output, pad)
    d = 2 if desc["bidirectional"] else 1
    size = desc.get("proj_size") or desc["hidden_size"]
    if output.ndim == 3 and output.shape[2] == d * size:  # else left as it came: judged as a wrong shape
        output = output.reshape(output.shape[0], output.shape[1], d, size)
    keep = desc.get("keep_direction")
    if keep is not None:
        output = output[:, :, keep:keep + 1]
        h_n = h_n[keep::2]
        c_n = c_n[keep::2] if c_n is not None else None
    found = {"output": output, "h_n": h_n, "c_n": c_n}
    return [found[name] for name in desc["outputs"]]
