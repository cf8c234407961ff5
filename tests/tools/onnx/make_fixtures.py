#!/usr/bin/env python3
"""Writes the ONNX fixtures of tests/tools (ferry_onnx_tools_test.cpp): three small models (elementwise ops only) and
folders of test data in the layout of ONNX's backend tests (input_K.pb, output_K.pb).

The tests never run Python: the files are committed. Run this again (with the `onnx` package, e.g.
build/bench-venv/bin/python tests/tools/onnx/make_fixtures.py) only to change them. Outputs are
computed here with numpy, from the ops' definitions.
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save_model(name, nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="ferry-tests")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name + ".onnx"))


def save_set(model, folder, inputs, outputs):
    """`inputs`/`outputs`: lists of (name or "", array)."""
    path = os.path.join(HERE, model, folder)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for k, (name, array) in enumerate(tensors):
            t = numpy_helper.from_array(array, name=name or None)
            with open(os.path.join(path, f"{kind}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def add_relu():
    # Names that are no identifiers, as exporters write them.
    save_model("add_relu",
               [helper.make_node("Add", ["x", "bias"], ["/block/Add_output_0"], name="/block/Add"),
                helper.make_node("Relu", ["/block/Add_output_0"], ["y"], name="/block/Relu")],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                helper.make_tensor_value_info("bias", TensorProto.FLOAT, [3])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    x = np.array([[1.0, -2.0, 3.5], [-0.25, 0.5, -4.0]], dtype=np.float32)
    bias = np.array([0.5, 1.0, -1.0], dtype=np.float32)
    y = np.maximum(x + bias, 0).astype(np.float32)
    save_set("add_relu", "test_data_set_0", [("x", x), ("bias", bias)], [("y", y)])
    # Named, in the other order: matched by name.
    save_set("add_relu", "swapped", [("bias", bias), ("x", x)], [("y", y)])
    # No names: matched by position.
    save_set("add_relu", "unnamed", [("", x), ("", bias)], [("", y)])
    # One element off by 0.01 (beyond rtol 1e-3 of 1.5), the rest exact.
    off = y.copy()
    off[0, 0] += 0.01
    save_set("add_relu", "bad_value", [("x", x), ("bias", bias)], [("y", off)])
    save_set("add_relu", "bad_shape", [("x", x), ("bias", bias)], [("y", y.reshape(3, 2))])
    save_set("add_relu", "bad_dtype", [("x", x), ("bias", bias)], [("y", y.astype(np.float64))])
    save_set("add_relu", "one_input", [("x", x)], [("y", y)])
    save_set("add_relu", "wrong_input_shape", [("x", x.reshape(3, 2)), ("bias", bias)], [("y", y)])


def scale_shift():
    # A symbolic batch dim (--shape input=2,4 fixes it) and initializers (params).
    scale = np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32)
    shift = np.array([0.125, -0.25, 0.5, 0.0], dtype=np.float32)
    save_model("scale_shift",
               [helper.make_node("Mul", ["input", "bn.scale"], ["scaled"], name="Mul_0"),
                helper.make_node("Add", ["scaled", "bn.shift"], ["shifted"], name="Add_1"),
                helper.make_node("Relu", ["shifted"], ["out"], name="Relu_2")],
               [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
               [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 4])],
               [numpy_helper.from_array(scale, "bn.scale"), numpy_helper.from_array(shift, "bn.shift")])
    x = np.array([[1, 2, 3, 4], [-1, 0.5, 0, 2]], dtype=np.float32)
    save_set("scale_shift", "test_data_set_0", [("input", x)],
             [("out", np.maximum(x * scale + shift, 0).astype(np.float32))])


def int_outputs():
    # Integer and bool outputs, compared exactly.
    save_model("int_outputs",
               [helper.make_node("Add", ["a", "b"], ["sum"], name="Add_0"),
                helper.make_node("Equal", ["a", "b"], ["same"], name="Equal_1")],
               [helper.make_tensor_value_info("a", TensorProto.INT64, [4]),
                helper.make_tensor_value_info("b", TensorProto.INT64, [4])],
               [helper.make_tensor_value_info("sum", TensorProto.INT64, [4]),
                helper.make_tensor_value_info("same", TensorProto.BOOL, [4])])
    a = np.array([1, 2, 3, -4], dtype=np.int64)
    b = np.array([1, 5, 3, 4], dtype=np.int64)
    save_set("int_outputs", "test_data_set_0", [("a", a), ("b", b)], [("sum", a + b), ("same", a == b)])
    save_set("int_outputs", "off_by_one", [("a", a), ("b", b)],
             [("sum", a + b + np.array([0, 0, 1, 0])), ("same", a == b)])


if __name__ == "__main__":
    add_relu()
    scale_shift()
    int_outputs()
