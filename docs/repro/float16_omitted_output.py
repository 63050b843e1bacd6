"""onnxconverter_common.float16.convert_float_to_float16(keep_io_types=True) of a GRU whose Y output and
sequence_lens input are both omitted (the name "", as ONNX spells an optional value left out) raises
AttributeError ('NoneType' object has no attribute 'output') in sort_topology, instead of converting:
the omitted input "" is taken for the omitted output "" of the same node. With only one of them
omitted, it converts. Standalone: onnx, onnxconverter-common. docs/converters.md, finding F2."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxconverter_common import __version__, float16

rng = np.random.default_rng(0)
S, N, I, H = 4, 3, 2, 3
for inputs, outputs in (([""], ["", "Y_h"]), ([""], ["Y", "Y_h"]), (["lens"], ["", "Y_h"])):
    weights = [numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)
               for name, shape in (("W", (1, 3 * H, I)), ("R", (1, 3 * H, H)), ("B", (1, 6 * H)))]
    node = helper.make_node("GRU", ["X", "W", "R", "B", *inputs, "initial_h"], outputs, hidden_size=H)
    feeds = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [S, N, I]),
             helper.make_tensor_value_info("initial_h", TensorProto.FLOAT, [1, N, H])]
    if inputs != [""]:
        feeds.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [N]))
    graph = helper.make_graph([node], "gru", feeds,
                              [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, N, H])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model, full_check=True)
    try:
        float16.convert_float_to_float16(model, keep_io_types=True)
        print(f"onnxconverter-common {__version__}, GRU sequence_lens {inputs[0]!r}, outputs {outputs}: converted")
    except Exception as exc:  # noqa: BLE001
        print(f"onnxconverter-common {__version__}, GRU sequence_lens {inputs[0]!r}, outputs {outputs}: "
              f"{type(exc).__name__}: {exc}")
