"""torch.onnx.export(dynamo=True, dynamic_axes=...) of torch.nn.GRU/LSTM/RNN: a bidirectional GRU or LSTM
(and any RNN) cannot keep its sequence dimension dynamic ("tracing inferred a static shape"), a
bidirectional LSTM that exports returns the wrong batch size at another shape, and a 2-layer LSTM
fails in a Reshape at another shape. Standalone: torch, onnxscript, onnxruntime.
docs/converters.md, findings D3-D5."""
import numpy as np
import onnxruntime as ort
import torch

torch.manual_seed(0)
AXES = {"x": {0: "seq", 1: "batch"}, "y": {0: "seq", 1: "batch"}}


def export(module, x):
    try:
        program = torch.onnx.export(module, (x,), dynamo=True, opset_version=18, input_names=["x"],
                                    output_names=["y"], dynamic_axes=AXES, verify=False, report=False)
    except Exception as exc:  # noqa: BLE001
        cause = exc.__cause__ or exc
        return None, " ".join(str(cause).split())[:220]
    return program.model_proto.SerializeToString(), ""


for name, module in (("GRU forward", torch.nn.GRU(3, 4)), ("GRU bidirectional", torch.nn.GRU(3, 4, bidirectional=True)),
                     ("RNN forward", torch.nn.RNN(3, 4)),
                     ("LSTM bidirectional", torch.nn.LSTM(3, 4, bidirectional=True)),
                     ("LSTM 2 layers", torch.nn.LSTM(3, 4, num_layers=2))):
    module.eval()
    x = torch.randn(3, 2, 3)
    data, refused = export(module, x)
    if data is None:
        print(f"torch {torch.__version__} {name}: refused: {refused}")
        continue
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for shape in ((3, 2), (5, 3)):
        xs = torch.randn(*shape, 3)
        with torch.no_grad():
            want = module(xs)[0].numpy()
        try:
            got = session.run(None, {"x": xs.numpy()})[0]
            said = (f"output {list(got.shape)} (eager {list(want.shape)})" if got.shape != want.shape
                    else f"max |error| {np.max(np.abs(got - want)):.1e}")
        except Exception as exc:  # noqa: BLE001
            said = "onnxruntime fails: " + " ".join(str(exc).split())[:160]
        print(f"torch {torch.__version__} {name} at seq {shape[0]}, batch {shape[1]}: {said}")
