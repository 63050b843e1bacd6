"""openvino.convert_model of a torch module that packs its input (pack_padded_sequence, then
pad_packed_sequence): for an LSTM the converted model runs every sequence through the whole padded
input: its output past each sequence's length is not zero (torch pads with 0, pad_packed_sequence's
padding_value) and h_n of a shorter sequence is the state after the padding; a GRU's packing is not
converted at all (prim::PackPadded). Standalone: torch, openvino, numpy. docs/converters.md, finding O1."""
import numpy as np
import openvino as ov
import torch

torch.manual_seed(0)


class Packed(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(3, 4)

    def forward(self, x, lengths):
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths.to(torch.int64).cpu(), enforce_sorted=False)
        y, state = self.rnn(packed)
        h = state[0] if isinstance(state, tuple) else state
        return torch.nn.utils.rnn.pad_packed_sequence(y)[0], h


for kind in ("LSTM", "GRU"):
    module = Packed(kind).eval()
    x, lengths = torch.randn(5, 3, 3), torch.tensor([2, 5, 3], dtype=torch.int32)
    with torch.no_grad():
        want_y, want_h = (t.numpy() for t in module(x, lengths))
    try:
        model = ov.convert_model(module, example_input=(x, lengths))
    except Exception as exc:  # noqa: BLE001
        print(f"openvino {ov.get_version()} {kind}: refused: {' '.join(str(exc).split())[-160:]}")
        continue
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled([x.numpy(), lengths.numpy()])
    got_y, got_h = result[compiled.outputs[0]], result[compiled.outputs[1]]
    past = np.concatenate([got_y[int(n):, b] for b, n in enumerate(lengths)])
    print(f"openvino {ov.get_version()} {kind}: largest |Y| past a length {np.max(np.abs(past)):.3f} "
          f"(torch: {np.max(np.abs(np.concatenate([want_y[int(n):, b] for b, n in enumerate(lengths)]))):.3f}); "
          f"|Y - torch| within the lengths {max(np.max(np.abs(got_y[:int(n), b] - want_y[:int(n), b])) for b, n in enumerate(lengths)):.1e}; "
          f"|h_n - torch| per batch entry (lengths {lengths.tolist()}): "
          f"{[float(f'{np.max(np.abs(got_h[:, b] - want_h[:, b])):.1e}') for b in range(len(lengths))]}")
