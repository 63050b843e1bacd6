"""openvino.convert_model of torch.nn.LSTM with proj_size: the PyTorch frontend does not convert
aten::lstm with a projection (OpConversionFailure). Standalone: torch, openvino. docs/converters.md,
finding O2."""
import openvino as ov
import torch

lstm = torch.nn.LSTM(3, 4, proj_size=2).eval()
try:
    ov.convert_model(lstm, example_input=(torch.randn(5, 2, 3),))
    print(f"openvino {ov.get_version()}: converted")
except Exception as exc:  # noqa: BLE001
    print(f"openvino {ov.get_version()}: refused: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
