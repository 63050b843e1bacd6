"""onnxsim.simplify of a GRU whose Y output is omitted (its name "", as ONNX spells an optional output
left out) and whose sequence_lens is omitted too: the simplified model gains a value_info named ""
(the inferred type of the omitted output, float [S, D, N, H]), which onnx.checker's full check then
reads as the type of the omitted optional input "" (sequence_lens): it rejects the model
("sequence_lens typestr: T1, has unsupported type: tensor(float)"). onnxruntime still loads and runs
it, with the input model's results. Standalone: onnx, onnxsim, onnxruntime. docs/converters.md,
finding S1."""
import numpy as np
import onnx
import onnxruntime as ort
import onnxsim
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
S, N, I, H = 4, 3, 2, 3
weights = [numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)
           for name, shape in (("W", (1, 3 * H, I)), ("R", (1, 3 * H, H)), ("B", (1, 6 * H)))]
node = helper.make_node("GRU", ["X", "W", "R", "B", "", "initial_h"], ["", "Y_h"], hidden_size=H)
graph = helper.make_graph([node], "gru", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [S, N, I]),
                                          helper.make_tensor_value_info("initial_h", TensorProto.FLOAT, [1, N, H])],
                          [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, N, H])], weights)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
onnx.checker.check_model(model, full_check=True)
print("the input model: onnx.checker accepts it; onnxruntime runs it:",
      ort.InferenceSession(model.SerializeToString()).run(None, {"X": np.ones((S, N, I), np.float32),
                                                                 "initial_h": np.zeros((1, N, H), np.float32)})[0].shape)
simplified, ok = onnxsim.simplify(model, check_n=0)
print(f"onnxsim {onnxsim.__version__}: check={ok}; value_info of the simplified model:",
      [(v.name, [d.dim_value for d in v.type.tensor_type.shape.dim]) for v in simplified.graph.value_info])
try:
    onnx.checker.check_model(simplified, full_check=True)
    print("onnx.checker accepts the simplified model")
except Exception as exc:  # noqa: BLE001
    print("onnx.checker rejects the simplified model:", str(exc).splitlines()[0][:200])
feeds = {"X": rng.uniform(-1, 1, (S, N, I)).astype(np.float32),
         "initial_h": rng.uniform(-1, 1, (1, N, H)).astype(np.float32)}
try:
    got = ort.InferenceSession(simplified.SerializeToString()).run(None, feeds)[0]
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    print("onnxruntime runs the simplified model; the same Y_h as the input model's:", np.array_equal(got, want))
except Exception as exc:  # noqa: BLE001
    print("onnxruntime rejects the simplified model:", str(exc).splitlines()[0][:200])
