"""torch.onnx.export(dynamo=True) of torch.nn.LSTM with proj_size writes a model onnx.checker and
onnxruntime reject (shape inference: a Concat of tensors of different ranks), for every direction.
Standalone: torch, onnxscript, onnx, onnxruntime. docs/converters.md, finding D2."""
import onnx
import onnxruntime as ort
import torch

torch.manual_seed(0)
for bidirectional in (False, True):
    lstm = torch.nn.LSTM(3, 4, proj_size=2, bidirectional=bidirectional).eval()
    x = torch.randn(5, 2, 3)
    program = torch.onnx.export(lstm, (x,), dynamo=True, opset_version=18, verify=False, report=False)
    data = program.model_proto.SerializeToString()
    try:
        onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
        checker = "accepted"
    except Exception as exc:  # noqa: BLE001
        checker = "rejected: " + " ".join(str(exc).split())[:200]
    try:
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        session.run(None, {session.get_inputs()[0].name: x.numpy()})
        runtime = "runs"
    except Exception as exc:  # noqa: BLE001
        runtime = "rejects: " + " ".join(str(exc).split())[:200]
    print(f"torch {torch.__version__} bidirectional={bidirectional}: onnx.checker {checker}; onnxruntime {runtime}")
