"""torch.onnx.export(dynamo=True, dynamic_axes=...) of a torch.nn.RNN, GRU or LSTM traced with a sequence of
length 1: the export succeeds and declares the input's sequence dimension dynamic, but torch.export
specialises the size-1 dimension, so the recurrence is unrolled for one step and the output is declared
[1, batch, H]: at any other length the model returns the first step only (an RNN: [1, 3, H] for eager
[5, 3, H]; a GRU or LSTM: [1, 15, H], the steps folded into the batch). Traced at length 2 or 3 the same
export is refused ('tracing inferred a static shape'). Standalone: torch, onnxscript, onnxruntime.
docs/converters.md, finding D4 (traced at seq_length 1; once D6) (the suite's case: cases/regressions/rnn-openvino-fail-d1f11941.yaml)."""
import numpy as np
import onnxruntime as ort
import torch

torch.manual_seed(0)
AXES = {"x": {0: "seq", 1: "batch"}, "y": {0: "seq", 1: "batch"}}


def dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


for name, module in (("RNN relu", torch.nn.RNN(3, 4, nonlinearity="relu")), ("GRU", torch.nn.GRU(3, 4)),
                     ("LSTM", torch.nn.LSTM(3, 4))):
    module.eval()
    model = torch.onnx.export(module, (torch.randn(1, 2, 3),), dynamo=True, opset_version=18, input_names=["x"],
                              output_names=["y"], dynamic_axes=AXES, verify=False, report=False).model_proto
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    xs = torch.randn(5, 3, 3)
    with torch.no_grad():
        want = module(xs)[0].numpy()
    got = session.run(None, {"x": xs.numpy()})[0]
    first = np.abs(got.reshape(-1)[:want[0].size] - want[0].reshape(-1)).max() if got.size >= want[0].size else None
    print(f"torch {torch.__version__} {name} traced at seq 1: declared x {dims(model.graph.input[0])}, "
          f"y {dims(model.graph.output[0])}; at seq 5, batch 3: onnxruntime y {list(got.shape)}, eager {list(want.shape)}"
          + (f" (first step off by {first:.1e})" if first is not None and name.startswith("RNN") else ""))
