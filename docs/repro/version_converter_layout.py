"""onnx.version_converter moving a GRU-7 node that carries a layout attribute (which GRU-7 does not
define; here layout=2, which GRU-14 forbids too) to opset 14 or 22 writes layout=0 over it: the
program that onnx.checker rejects comes out as a valid one, which onnxruntime runs, instead of a
refusal. Standalone: onnx, onnxruntime. docs/converters.md, finding V1."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, version_converter

H = 3
node = helper.make_node("GRU", ["X", "W", "R"], ["Y", "Y_h"], hidden_size=H, layout=2)
graph = helper.make_graph([node], "gru", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 3, 2]),
                                          helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 3 * H, 2]),
                                          helper.make_tensor_value_info("R", TensorProto.FLOAT, [1, 3 * H, H])],
                          [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, 3, H])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)])
try:
    onnx.checker.check_model(model, full_check=True)
    print("onnx.checker accepts the GRU-7 model with layout=2")
except Exception as exc:  # noqa: BLE001
    print("onnx.checker rejects the GRU-7 model with layout=2:", str(exc).splitlines()[0][:160])
for to in (14, 22):
    moved = version_converter.convert_version(model, to)
    layout = [helper.get_attribute_value(a) for a in moved.graph.node[0].attribute if a.name == "layout"]
    onnx.checker.check_model(moved, full_check=True)
    ort.InferenceSession(moved.SerializeToString()).run(None, {"X": np.ones((4, 3, 2), np.float32),
                                                               "W": np.ones((1, 3 * H, 2), np.float32),
                                                               "R": np.ones((1, 3 * H, H), np.float32)})
    print(f"onnx {onnx.__version__} convert_version(to={to}): layout={layout}; onnx.checker accepts it; onnxruntime runs it")
