// tests/frontend/builder_test.cpp — the Builder: types, locations, errors, names, scopes, params.
#include <gtest/gtest.h>

#include <optional>
#include <source_location>
#include <string>
#include <utility>

#include "frontend/builder.h"
#include "ir/printer.h"

namespace ferry {
namespace {

bool contains(const std::string &s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// The node producing `v` in `g` (fails the test when `v` is not a node result).
const Node &producerOf(const Graph &g, ValueId v) {
  const Node *n = g.producer(v);
  EXPECT_NE(n, nullptr) << "%" << g.value(v).name << " has no producer";
  return *n;
}

std::vector<Diagnostic> errorsOf(Builder &&b) {
  Expected<Graph> g = std::move(b).finish();
  EXPECT_FALSE(g.ok());
  if (g.ok()) return {};
  return g.status().diagnostics();
}

TEST(Builder, MlpTypesShapesAndStructure) {
  Builder b("mlp");
  Var x = b.input("x", DType::F32, {32, 784});
  Var w1 = b.param("fc1.weight", DType::F32, {256, 784}, Init::randn(1));
  Var b1 = b.param("fc1.bias", DType::F32, {256}, Init::zeros());
  Var w2 = b.param("fc2.weight", DType::F32, {10, 256}, Init::randn(2));
  Var h = b.linear(x, w1, b1);
  Var a = b.relu(h);
  Var logits = b.linear(a, w2);
  Var y = b.softmax(logits, 1);
  b.output("y", y);

  ASSERT_TRUE(h.valid() && a.valid() && logits.valid() && y.valid());
  EXPECT_EQ(h.type(), (TensorType{DType::F32, {32, 256}}));
  EXPECT_EQ(a.shape(), (Shape{32, 256}));
  EXPECT_EQ(logits.shape(), (Shape{32, 10}));
  EXPECT_EQ(y.dtype(), DType::F32);
  EXPECT_EQ(y.shape(), (Shape{32, 10}));
  EXPECT_EQ(b.diagnostics().diagnostics().size(), 0u);

  Expected<Graph> g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->name(), "mlp");
  EXPECT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->params().size(), 3u);
  ASSERT_EQ(g->order().size(), 4u);
  const OpKind expected[] = {OpKind::Linear, OpKind::Relu, OpKind::Linear, OpKind::Softmax};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(g->node(g->order()[i]).op, expected[i]) << i;
  // The bias is an operand where given and simply absent where not.
  EXPECT_EQ(producerOf(*g, h.id()).operands, (std::vector<ValueId>{x.id(), w1.id(), b1.id()}));
  EXPECT_EQ(producerOf(*g, logits.id()).operands, (std::vector<ValueId>{a.id(), w2.id()}));
  EXPECT_EQ(attrInt(opInfo(OpKind::Softmax), producerOf(*g, y.id()).attrs, "axis"), 1);
  // Unnamed results are numbered; the output carries its name.
  EXPECT_EQ(g->value(h.id()).name, "0");
  EXPECT_EQ(g->value(a.id()).name, "1");
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0].value, y.id());
  EXPECT_EQ(g->value(y.id()).name, "y");
  EXPECT_EQ(g->value(x.id()).device, Device::cpu());
}

TEST(Builder, SmallCnnShapesAndAttributes) {
  Builder b("cnn");
  Var x = b.input("image", DType::F32, {2, 3, 32, 32});
  Var w = b.param("conv.weight", DType::F32, {8, 3, 3, 3}, Init::randn(3));
  Var bias = b.param("conv.bias", DType::F32, {8}, Init::zeros());
  Var c = b.conv2d(x, w, bias, {.stride = {1, 1}, .padding = {1, 1}});
  Var r = b.relu(c);
  Var p = b.maxPool2d(r, {.kernel = {2, 2}});
  Var f = b.flatten(p, 1);
  Var fw = b.param("fc.weight", DType::F32, {10, 8 * 16 * 16}, Init::randn(4));
  Var out = b.linear(f, fw);
  Var g0 = b.globalAvgPool(r);
  b.output("logits", out);
  b.output("pooled", g0);

  EXPECT_EQ(c.shape(), (Shape{2, 8, 32, 32}));
  EXPECT_EQ(p.shape(), (Shape{2, 8, 16, 16}));
  EXPECT_EQ(f.shape(), (Shape{2, 2048}));
  EXPECT_EQ(out.type(), (TensorType{DType::F32, {2, 10}}));
  EXPECT_EQ(g0.shape(), (Shape{2, 8, 1, 1}));

  Expected<Graph> g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Node &conv = producerOf(*g, c.id());
  const OpInfo &ci = opInfo(OpKind::Conv2d);
  EXPECT_EQ(attrInts(ci, conv.attrs, "padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(attrInts(ci, conv.attrs, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(attrInt(ci, conv.attrs, "groups"), 1);
  const Node &pool = producerOf(*g, p.id());
  EXPECT_EQ(attrInts(opInfo(OpKind::MaxPool2d), pool.attrs, "kernel"),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(attrInts(opInfo(OpKind::MaxPool2d), pool.attrs, "stride"), std::vector<int64_t>{});
  EXPECT_EQ(g->outputs().size(), 2u);
  EXPECT_EQ(g->value(g->outputs()[1].value).name, "pooled");
}

TEST(Builder, NodeRecordsTheCallersLocation) {
  Builder b;
  Var x = b.input("x", DType::F32, {4});
  auto [y, here] = std::pair(b.relu(x), std::source_location::current());
  b.output("y", y);
  Expected<Graph> g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Location &loc = producerOf(*g, y.id()).loc;
  EXPECT_EQ(loc.file, here.file_name());
  EXPECT_EQ(loc.line, static_cast<int>(here.line()));
  EXPECT_GT(loc.col, 0);
  EXPECT_TRUE(contains(loc.file.str(), "builder_test.cpp")) << loc.file;
  // Inputs, params and outputs carry their declaration's location too.
  EXPECT_EQ(g->inputs()[0].loc.file, here.file_name());
  EXPECT_EQ(g->inputs()[0].loc.line, static_cast<int>(here.line()) - 1);
  EXPECT_EQ(g->outputs()[0].loc.line, static_cast<int>(here.line()) + 1);
}

TEST(Builder, ShapeMismatchIsReportedAtTheCallersLine) {
  Builder b;
  Var a = b.input("a", DType::F32, {2, 3});
  Var c = b.input("c", DType::F32, {4});
  auto [s, here] = std::pair(b.add(a, c), std::source_location::current());
  EXPECT_FALSE(s.valid());
  ASSERT_EQ(b.diagnostics().errorCount(), 1);
  const Diagnostic &d = b.diagnostics().diagnostics()[0];
  EXPECT_EQ(d.severity, Severity::Error);
  EXPECT_EQ(d.code, "shape");
  EXPECT_EQ(d.loc.file, here.file_name());
  EXPECT_EQ(d.loc.line, static_cast<int>(here.line()));
  EXPECT_TRUE(contains(d.message, "[2,3]")) << d.message;
  EXPECT_TRUE(contains(d.message, "[4]")) << d.message;
  ASSERT_EQ(d.notes.size(), 2u);
  EXPECT_EQ(d.notes[0].message, "operand 0 (a) %a : f32[2,3]");
  EXPECT_EQ(d.notes[1].message, "operand 1 (b) %c : f32[4]");
  std::string text = renderText(d, {.snippet = false});
  EXPECT_TRUE(contains(text, "builder_test.cpp:" + std::to_string(here.line()) + ":")) << text;
  EXPECT_TRUE(contains(text, ": error: ")) << text;
}

// Numbers and bools are scalar literals where an op takes one, promoting as Python scalars do
// in PyTorch, and print as the .fy text writes them.
TEST(Builder, ScalarLiteralsPromoteAsPythonScalarsAndPrintInline) {
  Builder b("lit");
  Var h = b.input("h", DType::F16, {4});
  Var i = b.input("i", DType::I32, {4});
  Var c = b.input("c", DType::Bool, {4});
  Var m = b.mul(h, 0.5);
  Var k = b.add(i, 1);
  Var f = b.add(i, 0.5f);
  Var p = b.pow(2.0, h);
  Var e = b.add(c, 2);
  Var t = b.add(c, true);
  Var w = b.where(c, 1.0, i);
  Var l = b.less(i, int64_t{-3});
  EXPECT_EQ(m.dtype(), DType::F16);  // a float does not widen f16
  EXPECT_EQ(k.dtype(), DType::I32);  // an int keeps i32
  EXPECT_EQ(f.dtype(), DType::F32);  // a float makes an integer tensor the default float
  EXPECT_EQ(p.dtype(), DType::F16);
  EXPECT_EQ(e.dtype(), DType::I64);   // an int promotes bool to i64
  EXPECT_EQ(t.dtype(), DType::Bool);  // a bool promotes nothing
  EXPECT_EQ(w.dtype(), DType::F32);
  EXPECT_EQ(l.dtype(), DType::Bool);
  for (Var v : {m, k, f, p, e, t, w, l}) b.output("o" + std::to_string(v.id()), v);
  Expected<Graph> g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::string text = printGraph(*g, {.locations = false});
  for (const char *line :
       {"= mul(%h, 0.5)", "= add(%i, 1)", "= add(%i, 0.5)", "= pow(2.0, %h)", "= add(%c, 2)",
        "= add(%c, true)", "= where(%c, 1.0, %i)", "= less(%i, -3)"})
    EXPECT_TRUE(contains(text, line)) << line << "\n" << text;
  EXPECT_FALSE(contains(text, "constant")) << text;
  const Node &mul = producerOf(*g, m.id());
  const Node &lit = producerOf(*g, mul.operands[1]);
  ASSERT_TRUE(lit.literal);
  EXPECT_EQ(*lit.literal, DTypeCategory::Floating);
  EXPECT_EQ(g->value(lit.result).type, (TensorType{DType::F16, {}}));
  EXPECT_EQ(lit.loc, mul.loc);  // the call's location
}

TEST(Builder, ScalarLiteralMisuseIsReportedAtTheCallersLine) {
  Builder b;
  Var u = b.input("u", DType::U8, {4});
  auto [bad, here] = std::pair(b.add(u, 300), std::source_location::current());
  EXPECT_FALSE(bad.valid());
  EXPECT_FALSE(b.add(1.0, 2).valid());
  ASSERT_EQ(b.diagnostics().errorCount(), 2);
  const Diagnostic &range = b.diagnostics().diagnostics()[0];
  EXPECT_EQ(range.code, "literal");
  EXPECT_EQ(range.loc.line, static_cast<int>(here.line()));
  EXPECT_EQ(range.message,
            "literal 300 is out of range for u8 (0 to 255), the dtype 'add' computes in");
  EXPECT_EQ(b.diagnostics().diagnostics()[1].message,
            "'add' has only literal operands: at least one must be a tensor (%name)");
}

TEST(Builder, IndependentErrorsAreAllReportedByFinish) {
  Builder b;
  Var a = b.input("a", DType::F32, {2, 3});
  Var c = b.input("c", DType::F32, {4});
  auto [bad1, here1] = std::pair(b.add(a, c), std::source_location::current());
  auto [bad2, here2] = std::pair(b.matmul(a, a), std::source_location::current());
  const int line1 = static_cast<int>(here1.line());
  const int line2 = static_cast<int>(here2.line());
  Var ok = b.relu(a);
  b.output("y", ok);
  EXPECT_FALSE(bad1.valid());
  EXPECT_FALSE(bad2.valid());
  std::vector<Diagnostic> ds = errorsOf(std::move(b));
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].code, "shape");
  EXPECT_EQ(ds[0].loc.line, line1);
  EXPECT_EQ(ds[1].code, "shape");
  EXPECT_EQ(ds[1].loc.line, line2);
  EXPECT_TRUE(contains(ds[1].message, "matmul")) << ds[1].message;
}

TEST(Builder, PoisonedValuesDoNotCascade) {
  Builder b;
  Var a = b.input("a", DType::F32, {2, 3});
  Var c = b.input("c", DType::F32, {4});
  Var bad = b.add(a, c);
  Var r = b.relu(bad);
  Var s = b.add(r, a);
  Var t = b.op(OpKind::Softmax, {s}, {{"nonsense", int64_t{1}}});
  Var n = b.named(t, "t");
  b.output("y", n);
  EXPECT_FALSE(r.valid());
  EXPECT_FALSE(s.valid());
  EXPECT_FALSE(t.valid());
  EXPECT_FALSE(n.valid());
  EXPECT_EQ(b.diagnostics().errorCount(), 1);
  std::vector<Diagnostic> ds = errorsOf(std::move(b));
  // Only the mismatch: neither the poisoned uses nor the lost output ("no outputs") add errors.
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].code, "shape");
}

TEST(Builder, WrongArityThroughOp) {
  Builder b;
  Var x = b.input("x", DType::F32, {2});
  Var r = b.op(OpKind::Relu, {x, x});
  Var s = b.op(OpKind::Add, {x});
  Var c = b.op(OpKind::Concat, {});
  EXPECT_FALSE(r.valid());
  EXPECT_FALSE(s.valid());
  EXPECT_FALSE(c.valid());
  const auto &ds = b.diagnostics().diagnostics();
  ASSERT_EQ(ds.size(), 3u);
  for (const Diagnostic &d : ds) EXPECT_EQ(d.code, "arity") << d.message;
  EXPECT_TRUE(contains(ds[0].message, "'relu' takes 1 operand (x), got 2")) << ds[0].message;
  EXPECT_TRUE(contains(ds[1].message, "'add' takes 2 operands (a, b), got 1")) << ds[1].message;
  EXPECT_TRUE(contains(ds[2].message, "at least 1")) << ds[2].message;
  EXPECT_EQ(ds[0].notes.size(), 2u);
}

TEST(Builder, BadAttributes) {
  Builder b;
  Var x = b.input("x", DType::F32, {2, 3});
  Var unknown = b.op(OpKind::Softmax, {x}, {{"dim", int64_t{1}}});
  Var wrongKind = b.op(OpKind::Softmax, {x}, {{"axis", std::string("last")}});
  Var missing = b.op(OpKind::Reshape, {x});
  Var widened = b.op(OpKind::LayerNorm, {x}, {{"eps", int64_t{1}}});
  EXPECT_FALSE(unknown.valid());
  EXPECT_FALSE(wrongKind.valid());
  EXPECT_FALSE(missing.valid());
  ASSERT_TRUE(widened.valid());
  const auto &ds = b.diagnostics().diagnostics();
  ASSERT_EQ(ds.size(), 3u);
  for (const Diagnostic &d : ds) EXPECT_EQ(d.code, "attr");
  EXPECT_EQ(ds[0].message, "'softmax' has no attribute 'dim'");
  EXPECT_EQ(ds[0].notes.at(0).message, "its attributes are: axis");
  EXPECT_TRUE(contains(ds[1].message, "attribute 'axis' of 'softmax' must be of kind int"))
      << ds[1].message;
  EXPECT_TRUE(contains(ds[2].message, "requires attribute 'shape'")) << ds[2].message;
  b.output("y", widened);
  Expected<Graph> g = std::move(b).finish();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().diagnostics().size(), 3u);
}

TEST(Builder, IntAttributeIsWidenedToFloat) {
  Builder b;
  Var x = b.input("x", DType::F32, {2, 3});
  Var y = b.op(OpKind::LayerNorm, {x}, {{"eps", int64_t{1}}});
  b.output("y", y);
  Expected<Graph> g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Node &n = producerOf(*g, y.id());
  EXPECT_EQ(attrFloat(opInfo(OpKind::LayerNorm), n.attrs, "eps"), 1.0);
  EXPECT_EQ(attrInt(opInfo(OpKind::LayerNorm), n.attrs, "axis"), -1);
}

TEST(Builder, VarsOfAnotherBuilderOrDefaultAreRejected) {
  Builder b;
  Builder other;
  Var x = b.input("x", DType::F32, {2});
  Var foreign = other.input("o", DType::F32, {2});
  auto [r, here] = std::pair(b.relu(foreign), std::source_location::current());
  const int line = static_cast<int>(here.line());
  Var s = b.add(x, Var{});
  Var t = b.layerNorm(x, Var{}, x);
  b.output("y", foreign);
  EXPECT_FALSE(r.valid());
  EXPECT_FALSE(s.valid());
  EXPECT_FALSE(t.valid());
  const auto &ds = b.diagnostics().diagnostics();
  ASSERT_EQ(ds.size(), 4u);
  EXPECT_EQ(ds[0].message, "operand 0 of 'relu' is not a value of this builder");
  EXPECT_EQ(ds[0].code, "operand");
  EXPECT_EQ(ds[0].loc.line, line);
  EXPECT_EQ(ds[0].notes.at(0).message, "it belongs to another Builder");
  EXPECT_EQ(ds[1].message, "operand 1 of 'add' is not a value of this builder");
  EXPECT_EQ(ds[1].notes.at(0).message, "it is a default-constructed Var");
  // An optional operand may be left out only at the end.
  EXPECT_EQ(ds[2].message, "operand 1 of 'layer_norm' is not a value of this builder");
  EXPECT_TRUE(contains(ds[2].notes.at(0).message, "optional operand (weight)"));
  EXPECT_EQ(ds[3].message, "output 'y' is not a value of this builder");
  EXPECT_EQ(other.diagnostics().errorCount(), 0);
}

TEST(Builder, OptionalOperandsMayBeOmittedAtTheEnd) {
  Builder b;
  Var x = b.input("x", DType::F32, {2, 3});
  Var w = b.param("w", DType::F32, {3}, Init::ones());
  Var n0 = b.layerNorm(x);
  Var n1 = b.layerNorm(x, w);
  Var n2 = b.layerNorm(x, w, w);
  b.output("y", b.add(b.add(n0, n1), n2));
  Expected<Graph> g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(producerOf(*g, n0.id()).operands.size(), 1u);
  EXPECT_EQ(producerOf(*g, n1.id()).operands.size(), 2u);
  EXPECT_EQ(producerOf(*g, n2.id()).operands.size(), 3u);
}

TEST(Builder, NamesAreValidatedAndUnique) {
  Builder b;
  Var x = b.input("x", DType::F32, {2});
  auto [x2, here] = std::pair(b.input("x", DType::F32, {3}), std::source_location::current());
  const int line = static_cast<int>(here.line());
  Var p = b.param("x", DType::F32, {2}, Init::zeros());
  Var e = b.input("", DType::F32, {2});
  Var sp = b.input("a b", DType::F32, {2});
  Var ok = b.input("block_1.weight", DType::F32, {2});
  EXPECT_TRUE(x.valid());
  EXPECT_FALSE(x2.valid());
  EXPECT_FALSE(p.valid());
  EXPECT_FALSE(e.valid());
  EXPECT_FALSE(sp.valid());
  EXPECT_TRUE(ok.valid());
  const auto &ds = b.diagnostics().diagnostics();
  ASSERT_EQ(ds.size(), 4u);
  for (const Diagnostic &d : ds) EXPECT_EQ(d.code, "name");
  EXPECT_EQ(ds[0].message, "input name 'x' is already taken by input %x");
  EXPECT_EQ(ds[0].loc.line, line);
  ASSERT_EQ(ds[0].notes.size(), 1u);
  EXPECT_EQ(ds[0].notes[0].loc.line, line - 1);  // where %x was declared
  EXPECT_EQ(ds[1].message, "param name 'x' is already taken by input %x");
  EXPECT_EQ(ds[2].message, "input name is empty");
  EXPECT_TRUE(contains(ds[3].message, "'a b' is not valid")) << ds[3].message;
}

TEST(Builder, NamedRenamesAndRejectsTakenNames) {
  Builder b;
  Var x = b.input("x", DType::F32, {2});
  Var r = b.named(b.relu(x), "hidden");
  Var same = b.named(r, "hidden");
  Var clash = b.named(b.neg(x), "x");
  Var bad = b.named(b.abs(x), "no-dash");
  EXPECT_EQ(r.id(), same.id());
  EXPECT_TRUE(clash.valid());  // the value is fine, only the name was refused
  EXPECT_TRUE(bad.valid());
  ASSERT_EQ(b.diagnostics().errorCount(), 2);
  EXPECT_EQ(b.diagnostics().diagnostics()[0].message,
            "value name 'x' is already taken by input %x");
  EXPECT_TRUE(contains(b.diagnostics().diagnostics()[1].message, "'no-dash' is not valid"));
  Builder b2;
  Var y = b2.named(b2.relu(b2.input("x", DType::F32, {2})), "hidden");
  b2.output("hidden", y);
  Expected<Graph> g = std::move(b2).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->value(y.id()).name, "hidden");
  EXPECT_EQ(g->findValue("hidden"), y.id());
}

// A zero dim makes a tensor empty but does not excuse an absurd dim beside it, and a type has at
// most 64 dims: what the builder takes, the saved executable holds (typeLimitError).
TEST(Builder, AZeroDimHidesNoAbsurdDimAndRanksAreBounded) {
  Builder b;
  Var hidden = b.input("hidden", DType::F32, {0, int64_t{1} << 62, 4});
  Var deep = b.input("deep", DType::F32, Shape(65, 1));
  Var empty = b.input("empty", DType::F32, {0, int64_t{1} << 40});
  Var widest = b.input("widest", DType::F32, Shape(64, 1));
  EXPECT_FALSE(hidden.valid());
  EXPECT_FALSE(deep.valid());
  EXPECT_TRUE(empty.valid());
  EXPECT_TRUE(widest.valid());
  const auto &ds = b.diagnostics().diagnostics();
  ASSERT_EQ(ds.size(), 2u) << renderText(ds, {.snippet = false});
  EXPECT_EQ(ds[0].code, "shape");
  EXPECT_EQ(ds[0].message, "input 'hidden' is too large: f32[0,4611686018427387904,4]");
  EXPECT_EQ(ds[1].code, "shape");
  EXPECT_EQ(ds[1].message.substr(0, 40), "input 'deep' has 65 dims, at most 64: f3");
}

TEST(Builder, BadShapesAndDevices) {
  Builder b;
  Var a = b.input("a", DType::F32, {2, -1});
  Var p = b.param("p", DType::F16, {-3}, Init::zeros());
  Var c = b.input("c", DType::F32, {2}, Device::cuda(5000));
  Var huge = b.input("huge", DType::F64, {1 << 30, 1 << 30, 1 << 30});
  Var ok = b.input("ok", DType::F32, {0, 3});
  Var t = b.transfer(ok, Device{DeviceKind::Cuda, -1});
  EXPECT_FALSE(a.valid());
  EXPECT_FALSE(p.valid());
  EXPECT_FALSE(c.valid());
  EXPECT_FALSE(huge.valid());
  EXPECT_TRUE(ok.valid());
  EXPECT_FALSE(t.valid());
  const auto &ds = b.diagnostics().diagnostics();
  ASSERT_EQ(ds.size(), 5u) << renderText(ds, {.snippet = false});
  EXPECT_EQ(ds[0].code, "shape");
  EXPECT_EQ(ds[0].message, "input 'a' has a negative dim: f32[2,-1]");
  EXPECT_EQ(ds[1].message, "param 'p' has a negative dim: f16[-3]");
  EXPECT_EQ(ds[2].code, "device");
  EXPECT_EQ(ds[2].message, "input 'c' device index 5000 is out of range (0..1023)");
  EXPECT_EQ(ds[3].message, "input 'huge' is too large: f64[1073741824,1073741824,1073741824]");
  EXPECT_EQ(ds[4].code, "device");
  EXPECT_EQ(ds[4].message,
            "attribute 'to' of 'transfer': device index -1 is out of range (0..1023)");
}

TEST(Builder, ScopesPinDeviceAndDTypeAndNest) {
  Builder b;
  Var x = b.input("x", DType::F32, {4});
  Var r0, r1, r2, r3, r4, r5;
  {
    auto onGpu = b.on(Device::cuda(0));
    r0 = b.relu(x);
    {
      auto half = b.computeIn(DType::F16);
      r1 = b.neg(r0);
      {
        auto onHost = b.on(Device::cpu(1));
        r2 = b.abs(r1);
      }
      r3 = b.exp(r2);
    }
    r4 = b.tanh(r3);
  }
  r5 = b.sigmoid(r4);
  b.output("y", r5);
  Expected<Graph> g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto pins = [&](Var v) {
    const Node &n = producerOf(*g, v.id());
    return std::pair(n.pinDevice, n.pinDType);
  };
  using P = std::pair<std::optional<Device>, std::optional<DType>>;
  EXPECT_EQ(pins(r0), (P{Device::cuda(0), std::nullopt}));
  EXPECT_EQ(pins(r1), (P{Device::cuda(0), DType::F16}));
  EXPECT_EQ(pins(r2), (P{Device::cpu(1), DType::F16}));
  EXPECT_EQ(pins(r3), (P{Device::cuda(0), DType::F16}));
  EXPECT_EQ(pins(r4), (P{Device::cuda(0), std::nullopt}));
  EXPECT_EQ(pins(r5), (P{std::nullopt, std::nullopt}));
  // A pin does not change the inferred type.
  EXPECT_EQ(g->value(r1.id()).type, (TensorType{DType::F32, {4}}));
}

TEST(Builder, MovedScopeEndsOnce) {
  Builder b;
  Var x = b.input("x", DType::F32, {4});
  Var r0, r1;
  {
    std::optional<Builder::Scope> held;
    {
      auto s = b.on(Device::cuda(1));
      held.emplace(std::move(s));
    }  // the moved-from scope ends here without popping
    r0 = b.relu(x);
  }
  r1 = b.relu(r0);
  b.output("y", r1);
  Expected<Graph> g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(producerOf(*g, r0.id()).pinDevice, Device::cuda(1));
  EXPECT_EQ(producerOf(*g, r1.id()).pinDevice, std::nullopt);
}

TEST(BuilderDeathTest, ScopesMustEndInReverseOrder) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Builder b;
        std::optional<Builder::Scope> outer(b.on(Device::cuda(0)));
        std::optional<Builder::Scope> inner(b.computeIn(DType::F16));
        outer.reset();
      },
      "reverse order");
}

TEST(BuilderDeathTest, UseAfterFinishIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Builder b;
        b.output("y", b.relu(b.input("x", DType::F32, {2})));
        Expected<Graph> g = std::move(b).finish();
        b.relu(Var{});
      },
      "after finish");
}

TEST(BuilderDeathTest, TypeOfPoisonedVarIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Builder b;
        Var bad = b.add(b.input("a", DType::F32, {2}), b.input("c", DType::F32, {3}));
        (void)bad.type();
      },
      "invalid");
}

TEST(Builder, ParamsWithInitAndData) {
  Builder b;
  Var z = b.param("z", DType::F32, {2, 3}, Init::zeros());
  Var o = b.param("o", DType::F16, {4}, Init::ones(), Device::cuda(0));
  Var r = b.param("r", DType::F32, {5}, Init::randn(7));
  EXPECT_EQ(r.shape(), (Shape{5}));
  TensorData raw = TensorData::fromDoubles(DType::I64, {3}, std::vector<double>{1, 2, 3});
  Var d = b.param("d", raw, Device::cpu(1));
  Var bad = b.param("n", DType::F32, {2}, Init{Initializer::Kind::Npy, 0});
  EXPECT_FALSE(bad.valid());
  EXPECT_EQ(z.type(), (TensorType{DType::F32, {2, 3}}));
  EXPECT_EQ(o.type(), (TensorType{DType::F16, {4}}));
  EXPECT_EQ(d.type(), (TensorType{DType::I64, {3}}));
  ASSERT_EQ(b.diagnostics().errorCount(), 1);
  EXPECT_EQ(b.diagnostics().diagnostics()[0].code, "init");

  Builder ok;
  Var z2 = ok.param("z", DType::F32, {2, 3}, Init::zeros());
  Var o2 = ok.param("o", DType::F16, {4}, Init::ones(), Device::cuda(0));
  Var r2 = ok.param("r", DType::F32, {5}, Init::randn(7));
  Var d2 = ok.param("d", raw, Device::cpu(1));
  ok.output("y", ok.add(ok.sum(z2), ok.sum(r2)));
  ok.output("o", o2);
  ok.output("d", d2);
  Expected<Graph> g = std::move(ok).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const ParamDecl &pz = g->paramOf(z2.id());
  EXPECT_EQ(pz.init.kind, Initializer::Kind::Zeros);
  EXPECT_EQ(pz.data, TensorData::zeros(DType::F32, {2, 3}));
  EXPECT_EQ(pz.pin, std::nullopt);
  const ParamDecl &po = g->paramOf(o2.id());
  EXPECT_EQ(po.init.kind, Initializer::Kind::Ones);
  EXPECT_EQ(po.data.toDoubles(), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(po.pin, Device::cuda(0));
  const ParamDecl &pr = g->paramOf(r2.id());
  EXPECT_EQ(pr.init.kind, Initializer::Kind::Randn);
  EXPECT_EQ(pr.init.seed, 7u);
  EXPECT_EQ(pr.data, TensorData::randn(DType::F32, {5}, 7));
  const ParamDecl &pd = g->paramOf(d2.id());
  EXPECT_EQ(pd.init.kind, Initializer::Kind::Data);
  EXPECT_EQ(pd.data, raw);
  EXPECT_EQ(pd.pin, Device::cpu(1));
  EXPECT_EQ(g->value(d2.id()).name, "d");
}

TEST(Builder, OutputsAreRenamedAndChecked) {
  Builder b;
  Var x = b.input("x", DType::F32, {2});
  Var h = b.relu(x);
  Var k = b.neg(x);
  b.output("hidden", h, Device::cpu());
  b.output("hidden", h);     // the same output again
  b.output("other", h);      // the same value under a second name
  b.output("x", k);          // a name another value has
  b.output("x", x);          // an input under its own name: as it is
  b.output("copy_of_x", x);  // ... and again under another name
  Var w = b.param("w", DType::F32, {2}, Init::zeros());
  b.output("w1", w);  // a param as a pass-through copy ...
  b.output("w2", w);  // ... is still the same value
  const auto &ds = b.diagnostics().diagnostics();
  ASSERT_EQ(ds.size(), 5u) << renderText(ds, {.snippet = false});
  EXPECT_EQ(ds[0].code, "output");
  EXPECT_EQ(ds[0].message, "'hidden' is already an output");
  EXPECT_EQ(ds[0].notes.at(0).loc.line, ds[0].loc.line - 1);
  EXPECT_EQ(ds[1].code, "output");
  EXPECT_EQ(ds[1].message, "output 'other' is %hidden, which is already output 'hidden'");
  EXPECT_EQ(ds[2].code, "name");
  EXPECT_EQ(ds[2].message, "output name 'x' is already taken by input %x");
  EXPECT_EQ(ds[3].message, "output 'copy_of_x' is %x, which is already output 'x'");
  EXPECT_EQ(ds[4].message, "output 'w2' is %w, which is already output 'w1'");
  std::vector<Diagnostic> errors = errorsOf(std::move(b));
  EXPECT_EQ(errors.size(), 5u);

  Builder ok;
  Var x2 = ok.input("x", DType::F32, {2});
  Var w2 = ok.param("w", DType::F32, {2}, Init::ones());
  Var h2 = ok.relu(x2);
  ok.output("hidden", h2, Device::cpu());
  ok.output("w", w2);
  // Renaming an input would change the name it is fed by: the output is a copy instead.
  ok.output("copy_of_x", x2);
  Expected<Graph> g = std::move(ok).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->outputs().size(), 3u);
  EXPECT_EQ(g->outputs()[0].value, h2.id());
  EXPECT_EQ(g->value(h2.id()).name, "hidden");
  EXPECT_EQ(g->outputs()[0].pin, Device::cpu());
  EXPECT_EQ(g->outputs()[1].value, w2.id());
  EXPECT_EQ(g->value(w2.id()).name, "w");
  const Node &copy = producerOf(*g, g->outputs()[2].value);
  EXPECT_EQ(copy.op, OpKind::Identity);
  EXPECT_EQ(copy.operands, std::vector<ValueId>{x2.id()});
  EXPECT_EQ(g->value(g->outputs()[2].value).name, "copy_of_x");
  EXPECT_EQ(g->value(x2.id()).name, "x");
  EXPECT_EQ(g->outputs()[2].pin, std::nullopt);
}

TEST(Builder, FinishWithoutOutputsIsAnError) {
  Builder empty("nothing");
  std::vector<Diagnostic> ds = errorsOf(std::move(empty));
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].code, "output");
  EXPECT_EQ(ds[0].message, "graph 'nothing' has no outputs");

  Builder noOut;
  (void)noOut.relu(noOut.input("x", DType::F32, {2}));
  ds = errorsOf(std::move(noOut));
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].message, "graph 'main' has no outputs");
}

TEST(Builder, TypedOpsCoverTheTable) {
  Builder b;
  Var x = b.input("x", DType::F32, {2, 3});
  Var i = b.input("i", DType::I64, {2});
  Var flag = b.input("flag", DType::Bool, {2, 3});
  Var ge = b.gelu(x, "tanh");
  Var r = ge;
  r = b.silu(b.erf(b.sqrt(b.rsqrt(b.log(b.exp(b.abs(b.neg(r))))))));
  r = b.where(flag, b.maximum(r, x), b.minimum(r, b.pow(x, x)));
  r = b.div(b.mul(b.sub(r, x), x), x);
  Var cmp = b.greater(b.less(x, x), b.equal(x, x));
  Var red = b.mean(b.max(r, {1}, true), {0});
  Var sm = b.logSoftmax(b.softmax(r));
  Var moved = b.transpose(b.reshape(r, {3, 2}));
  Var cat = b.concat({x, x}, 0);
  Var sl = b.slice(cat, {.starts = {0}, .ends = {2}});
  Var ga = b.gather(x, i, 0);
  Var sq = b.squeeze(b.unsqueeze(x, {0}), {0});
  Var ex = b.expand(b.constant(2.0), {2, 3});
  Var ca = b.cast(x, DType::F16);
  Var tr = b.transfer(x, Device::cpu(1));
  Var id = b.identity(x);
  Var bn = b.batchNorm(b.reshape(x, {2, 3, 1, 1}), b.constant(TensorData::full(DType::F32, {3}, 1)),
                       b.constant(TensorData::full(DType::F32, {3}, 0)),
                       b.constant(TensorData::full(DType::F32, {3}, 0)),
                       b.constant(TensorData::full(DType::F32, {3}, 1)));
  Var ap = b.avgPool2d(bn, {.kernel = {1, 1}});
  Var s = b.sum(cmp);
  for (Var v : {r, cmp, red, sm, moved, cat, sl, ga, sq, ex, ca, tr, id, bn, ap, s})
    EXPECT_TRUE(v.valid());
  ASSERT_EQ(b.diagnostics().errorCount(), 0) << renderText(b.diagnostics().diagnostics());
  EXPECT_EQ(cmp.dtype(), DType::Bool);
  EXPECT_EQ(s.type(), (TensorType{DType::I64, {}}));
  EXPECT_EQ(moved.shape(), (Shape{2, 3}));
  EXPECT_EQ(cat.shape(), (Shape{4, 3}));
  EXPECT_EQ(sl.shape(), (Shape{2, 3}));
  EXPECT_EQ(ex.shape(), (Shape{2, 3}));
  EXPECT_EQ(ca.dtype(), DType::F16);
  EXPECT_EQ(red.shape(), (Shape{1}));
  EXPECT_EQ(ap.shape(), (Shape{2, 3, 1, 1}));
  b.output("y", r);
  Expected<Graph> g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(attrString(opInfo(OpKind::Gelu), producerOf(*g, ge.id()).attrs, "approximate"), "tanh");
}

}  // namespace
}  // namespace ferry
