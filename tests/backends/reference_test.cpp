// tests/backends/reference_test.cpp — reference::run over whole graphs: input validation, node
// evaluation in order, params and constants, runtime errors located at the node.
#include <map>
#include <set>
#include <string_view>

#include "reference_util.h"

namespace ferry::reftest {
namespace {

using reference::run;

Location at(int line) { return Location{"mlp.fy", line, 1}; }

/// Adds `op(operands, attrs)` typed by inferType, as a frontend would.
ValueId addNode(Graph &g, std::string_view opName, std::vector<ValueId> operands,
                std::vector<NamedAttr> attrs, std::string name, int line) {
  const OpInfo &info = op(opName);
  Attrs complete = completeAttrs(info, attrs);
  std::vector<TensorType> types;
  for (ValueId v : operands) types.push_back(g.value(v).type);
  InferResult t = inferType(info, types, complete);
  FERRY_CHECK(std::holds_alternative<TensorType>(t)) << std::get<InferError>(t).message;
  NodeId n =
      g.addNode(NodeSpec{info.kind, std::move(operands), std::move(complete), {}, {}, at(line)},
                std::move(name), std::get<TensorType>(t));
  return g.node(n).result;
}

// graph mlp {
//   input %x : f32[2,3]                          # line 2
//   input %idx : i64[1]                          # line 3
//   param %w : f32[2,3] = [1, 0, -1, 0.5, 0.5, 0.5]
//   param %b : f32[2] = [10, 20]
//   %h = linear(%x, %w, %b)                      # [[8, 23], [8, 27.5]]
//   %c = constant(value=f32[]{16})
//   %d = sub(%h, %c)                             # [[-8, 7], [-8, 11.5]]
//   %r = relu(%d)                                # [[0, 7], [0, 11.5]]
//   %s = sum(%r, axes=[1])                       # [7, 11.5]
//   %t = cast(%s, to=i32)                        # [7, 11]
//   %g = gather(%r, %idx)                        # row idx of r
//   %y = softmax(%r)
//   output %t, %g, %y, %w
// }
Graph mlp() {
  Graph g("mlp");
  ValueId x = g.addInput("x", TensorType{DType::F32, {2, 3}}, Device::cpu(), at(2));
  ValueId idx = g.addInput("idx", TensorType{DType::I64, {1}}, Device::cpu(), at(3));
  ValueId w = g.addParam("w", f32({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5}), {}, std::nullopt, at(4));
  ValueId b = g.addParam("b", f32({2}, {10, 20}), {}, std::nullopt, at(5));
  ValueId h = addNode(g, "linear", {x, w, b}, {}, "h", 6);
  ValueId c = addNode(g, "constant", {}, {{"value", f32({}, {16})}}, "c", 7);
  ValueId d = addNode(g, "sub", {h, c}, {}, "d", 8);
  ValueId r = addNode(g, "relu", {d}, {}, "r", 9);
  ValueId s = addNode(g, "sum", {r}, {attrIs("axes", {1})}, "s", 10);
  ValueId t = addNode(g, "cast", {s}, {{"to", DType::I32}}, "t", 11);
  ValueId gathered = addNode(g, "gather", {r, idx}, {}, "g", 12);
  ValueId y = addNode(g, "softmax", {r}, {}, "y", 13);
  for (ValueId out : {t, gathered, y, w}) g.addOutput(out, std::nullopt, at(14));
  return g;
}

std::map<std::string, TensorData> mlpInputs(int64_t row) {
  return {{"x", f32({2, 3}, iotaD(6, 1))}, {"idx", ints(DType::I64, {1}, {row})}};
}

std::vector<std::string> messages(const Status &s) {
  std::vector<std::string> out;
  for (const Diagnostic &d : s.diagnostics()) out.push_back(d.code + ": " + d.message);
  return out;
}

TEST(ReferenceRun, WholeGraph) {
  Graph g = mlp();
  Expected<std::vector<TensorData>> r = run(g, mlpInputs(-1));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_TRUE(sameTensor((*r)[0], ints(DType::I32, {2}, {7, 11}), 0));
  EXPECT_TRUE(sameTensor((*r)[1], f32({1, 2}, {0, 11.5}), 0));
  EXPECT_TRUE(sameTensor((*r)[2],
                         f32({2, 2}, {0.0009110511944006454, 0.9990889488055994,
                                      1.0129990980873921e-05, 0.9999898700090192}),
                         1e-6));
  EXPECT_TRUE(sameTensor((*r)[3], g.params()[0].data, 0));
}

TEST(ReferenceRun, OutputsAreFreshCopies) {
  Graph g = mlp();
  Expected<std::vector<TensorData>> r = run(g, mlpInputs(0));
  ASSERT_TRUE(r.ok()) << r.status().message();
  (*r)[3].set(0, 99);  // the param %w as an output
  EXPECT_EQ(g.params()[0].data.at(0), 1);
}

TEST(ReferenceRun, MissingInputs) {
  Expected<std::vector<TensorData>> r = run(mlp(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(messages(r.status()), (std::vector<std::string>{
                                      "input: missing input 'x': expected f32[2,3]",
                                      "input: missing input 'idx': expected i64[1]",
                                  }));
  EXPECT_EQ(r.status().diagnostics()[0].loc, at(2));
  EXPECT_EQ(r.status().diagnostics()[1].loc, at(3));
}

TEST(ReferenceRun, UnknownInput) {
  std::map<std::string, TensorData> inputs = mlpInputs(0);
  inputs.emplace("z", f32({1}, {0}));
  inputs.emplace("w", f32({2, 3}, iotaD(6)));  // a param, not an input
  Expected<std::vector<TensorData>> r = run(mlp(), inputs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(messages(r.status()), (std::vector<std::string>{
                                      "input: graph 'mlp' has no input 'w'",
                                      "input: graph 'mlp' has no input 'z'",
                                  }));
  ASSERT_EQ(r.status().diagnostics()[0].notes.size(), 1u);
  EXPECT_EQ(r.status().diagnostics()[0].notes[0].message,
            "its inputs are: x : f32[2,3], idx : i64[1]");
}

TEST(ReferenceRun, WrongDTypeAndShape) {
  std::map<std::string, TensorData> inputs = {{"x", tensor(DType::F16, {2, 3}, iotaD(6))},
                                              {"idx", ints(DType::I64, {2}, {0, 1})}};
  Expected<std::vector<TensorData>> r = run(mlp(), inputs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(messages(r.status()),
            (std::vector<std::string>{
                "input: input 'x' has the wrong dtype: expected f32[2,3], got f16[2,3]",
                "input: input 'idx' has the wrong shape: expected i64[1], got i64[2]",
            }));

  inputs = {{"x", ints(DType::I32, {3}, {1, 2, 3})}, {"idx", ints(DType::I64, {1}, {0})}};
  r = run(mlp(), inputs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(messages(r.status()),
            (std::vector<std::string>{
                "input: input 'x' has the wrong dtype and shape: expected f32[2,3], got i32[3]",
            }));
}

TEST(ReferenceRun, RuntimeErrorAtTheNode) {
  Expected<std::vector<TensorData>> r = run(mlp(), mlpInputs(2));
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.status().diagnostics().size(), 1u);
  const Diagnostic &d = r.status().diagnostics()[0];
  EXPECT_EQ(d.code, "runtime");
  EXPECT_EQ(d.loc, at(12));
  EXPECT_EQ(d.message,
            "'gather' index 2 at [0] is out of range for axis 0 of size 2 in f32[2,2]: allowed -2 "
            "to 1");
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].message, "while evaluating %g = gather");
}

TEST(ReferenceRun, InputAsOutputAndNoNodes) {
  Graph g("pass");
  ValueId x = g.addInput("x", TensorType{DType::I64, {2}}, Device::cpu(), at(1));
  g.addOutput(x, std::nullopt, at(2));
  TensorData in = ints(DType::I64, {2}, {int64_t{1} << 60, -3});
  Expected<std::vector<TensorData>> r = run(g, {{"x", in}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], in);
  (*r)[0].setInt(0, 5);
  EXPECT_EQ(in.atInt(0), int64_t{1} << 60);
}

// The ops the table-driven suites (reference_*_test.cpp) give cases to: a new row in
// ir/ops.def fails here until it has a kernel and cases. (evalOp's switch has no default, so a
// missing kernel already fails to compile.)
TEST(ReferenceRun, EveryOpIsCovered) {
  const std::set<std::string_view> tested = {"neg",
                                             "abs",
                                             "exp",
                                             "log",
                                             "sqrt",
                                             "rsqrt",
                                             "tanh",
                                             "sigmoid",
                                             "relu",
                                             "gelu",
                                             "erf",
                                             "silu",
                                             "leaky_relu",
                                             "add",
                                             "sub",
                                             "mul",
                                             "div",
                                             "pow",
                                             "maximum",
                                             "minimum",
                                             "equal",
                                             "less",
                                             "greater",
                                             "where",
                                             "matmul",
                                             "linear",
                                             "conv2d",
                                             "max_pool2d",
                                             "avg_pool2d",
                                             "global_avg_pool",
                                             "batch_norm",
                                             "layer_norm",
                                             "sum",
                                             "mean",
                                             "max",
                                             "softmax",
                                             "log_softmax",
                                             "reshape",
                                             "transpose",
                                             "concat",
                                             "slice",
                                             "gather",
                                             "unsqueeze",
                                             "squeeze",
                                             "flatten",
                                             "expand",
                                             "cast",
                                             "transfer",
                                             "constant",
                                             "identity"};
  for (const OpInfo &o : allOps()) EXPECT_TRUE(tested.contains(o.name)) << o.name;
}

}  // namespace
}  // namespace ferry::reftest
