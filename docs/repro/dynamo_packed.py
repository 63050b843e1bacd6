"""torch.onnx.export(dynamo=True) of a module that packs its input (pack_padded_sequence, then
pad_packed_sequence) is refused by torch.export (a data-dependent guard on the lengths); the TorchScript
exporter writes it (as the ONNX op's sequence_lens). Standalone: torch, onnxscript. docs/converters.md,
finding D1."""
import io

import torch


class Packed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(3, 4)

    def forward(self, x, lengths):
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths.to(torch.int64), enforce_sorted=False)
        y, h = self.rnn(packed)
        return torch.nn.utils.rnn.pad_packed_sequence(y)[0], h


module = Packed().eval()
args = (torch.randn(4, 3, 3), torch.tensor([4, 2, 3], dtype=torch.int32))
torch.onnx.export(module, args, io.BytesIO(), dynamo=False, opset_version=14)
print(f"torch {torch.__version__} TorchScript exporter: writes it")
try:
    torch.onnx.export(module, args, dynamo=True, opset_version=18, verify=False, report=False)
    print(f"torch {torch.__version__} dynamo exporter: writes it")
except Exception as exc:  # noqa: BLE001
    cause = exc.__cause__ or exc
    print(f"torch {torch.__version__} dynamo exporter refuses: {type(cause).__name__}: {' '.join(str(cause).split())[:200]}")
