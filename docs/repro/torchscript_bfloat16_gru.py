"""torch.onnx.export(dynamo=False) of a bfloat16 torch.nn.GRU writes an ONNX GRU of type bfloat16 at
opsets 14 to 20, where GRU's type constraint T has no bfloat16 (GRU-22 adds it): onnx.checker and
onnxruntime reject the model. Standalone: torch, onnx, onnxruntime. docs/converters.md, finding T1."""
import io

import onnx
import onnxruntime as ort
import torch

torch.manual_seed(0)
gru = torch.nn.GRU(3, 4).to(torch.bfloat16).eval()
x = torch.randn(5, 2, 3, dtype=torch.bfloat16)
for opset in (14, 17, 20):
    f = io.BytesIO()
    torch.onnx.export(gru, (x,), f, dynamo=False, opset_version=opset, input_names=["x"])
    model = onnx.load_from_string(f.getvalue())
    node = next(n for n in model.graph.node if n.op_type == "GRU")
    try:
        onnx.checker.check_model(model, full_check=True)
        checker = "accepted"
    except Exception as exc:  # noqa: BLE001
        checker = f"rejected: {str(exc).splitlines()[0][:150]}"
    try:
        ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])
        runtime = "loads"
    except Exception as exc:  # noqa: BLE001
        runtime = f"rejects: {str(exc).splitlines()[0][:120]}"
    print(f"torch {torch.__version__} opset {opset}: {node.op_type} node, onnx.checker {checker}; onnxruntime {runtime}")
