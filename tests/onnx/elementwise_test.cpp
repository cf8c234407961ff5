// tests/onnx/elementwise_test.cpp — the elementwise converters: each op imported, run by the
// reference interpreter and by a Session on cpu, compared with values worked out by hand from
// ONNX's definitions (integer Div truncates, Pow keeps the base's dtype, Clip's optional bounds).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/reference/interpreter.h"
#include "onnx/onnx_model_util.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry::onnx_test {
namespace {

struct Case {
  Model model;
  std::map<std::string, TensorData> inputs;
};

/// Imports, runs the reference interpreter and a cpu Session, checks both give `expected`
/// (within `tol`, relative to max(1, |expected|)), and that the output dtype is `dtype`.
void expectRuns(const Model &m, const std::map<std::string, TensorData> &inputs, DType dtype,
                std::vector<double> expected, double tol = 1e-6) {
  Expected<Graph> g = m.import();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto ref = reference::run(*g, inputs);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  ASSERT_EQ(ref->size(), 1u);
  CompileOptions o;
  Expected<Executable> exe = build(*g, o);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  Expected<Session> s = Session::create(std::move(exe).value());
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<NamedTensor> in;
  for (const auto &[name, t] : inputs) in.push_back({name, Tensor(t)});
  Expected<RunResult> r = s->run(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const TensorData *out : {&(*ref)[0], &r->outputs[0].tensor.data()}) {
    EXPECT_EQ(out->dtype(), dtype);
    std::vector<double> got = out->toDoubles();
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(expected[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << i;
        continue;
      }
      EXPECT_NEAR(got[i], expected[i], tol * std::max(1.0, std::fabs(expected[i])))
          << "element " << i << (out == &(*ref)[0] ? " (reference)" : " (session)");
    }
  }
}

Model unaryModel(const std::string &op, DType t = DType::F32) {
  Model m;
  m.input("x", t, {4});
  m.node(op, {"x"}, {"y"}, op);
  m.output("y");
  return m;
}

TEST(OnnxElementwise, UnaryOps) {
  TensorData x = tensor(DType::F32, {4}, {-2, -0.5, 0.25, 3});
  auto each = [](std::vector<double> v, double (*f)(double)) {
    for (double &e : v) e = f(e);
    return v;
  };
  const std::vector<double> xs{-2, -0.5, 0.25, 3};
  expectRuns(unaryModel("Neg"), {{"x", x}}, DType::F32, {2, 0.5, -0.25, -3});
  expectRuns(unaryModel("Abs"), {{"x", x}}, DType::F32, {2, 0.5, 0.25, 3});
  expectRuns(unaryModel("Relu"), {{"x", x}}, DType::F32, {0, 0, 0.25, 3});
  expectRuns(unaryModel("Exp"), {{"x", x}}, DType::F32, each(xs, [](double v) { return std::exp(v); }));
  expectRuns(unaryModel("Tanh"), {{"x", x}}, DType::F32, each(xs, [](double v) { return std::tanh(v); }));
  expectRuns(unaryModel("Erf"), {{"x", x}}, DType::F32, each(xs, [](double v) { return std::erf(v); }));
  expectRuns(unaryModel("Sigmoid"), {{"x", x}}, DType::F32,
             each(xs, [](double v) { return 1 / (1 + std::exp(-v)); }));
  expectRuns(unaryModel("Reciprocal"), {{"x", x}}, DType::F32, {-0.5, -2, 4, 1.0 / 3});
  TensorData pos = tensor(DType::F32, {4}, {0.25, 1, 4, 9});
  expectRuns(unaryModel("Sqrt"), {{"x", pos}}, DType::F32, {0.5, 1, 2, 3});
  expectRuns(unaryModel("Log"), {{"x", pos}}, DType::F32,
             {std::log(0.25), 0, std::log(4.0), std::log(9.0)});
  // Integer Relu, Abs, Neg stay integers.
  expectRuns(unaryModel("Relu", DType::I32), {{"x", tensor(DType::I32, {4}, {-3, 0, 2, 7})}},
             DType::I32, {0, 0, 2, 7});
}

TEST(OnnxElementwise, LeakyReluAndGelu) {
  TensorData x = tensor(DType::F32, {4}, {-2, -0.5, 0.25, 3});
  Model leaky = unaryModel("LeakyRelu");
  attr(leaky.graph().mutable_node(0)[0], "alpha", 0.1);
  expectRuns(leaky, {{"x", x}}, DType::F32, {-0.2, -0.05, 0.25, 3});
  expectRuns(unaryModel("LeakyRelu"), {{"x", x}}, DType::F32, {-0.02, -0.005, 0.25, 3});  // 0.01
  auto gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  expectRuns(unaryModel("Gelu"), {{"x", x}}, DType::F32, {gelu(-2), gelu(-0.5), gelu(0.25), gelu(3)});
  Model tanhGelu = unaryModel("Gelu");
  attr(tanhGelu.graph().mutable_node(0)[0], "approximate", std::string("tanh"));
  auto gt = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  expectRuns(tanhGelu, {{"x", x}}, DType::F32, {gt(-2), gt(-0.5), gt(0.25), gt(3)});
  // com.microsoft's Gelu is the exact one.
  Model ms = unaryModel("Gelu");
  ms.graph().mutable_node(0)->set_domain("com.microsoft");
  auto *o = ms.proto().add_opset_import();
  o->set_domain("com.microsoft");
  o->set_version(1);
  expectRuns(ms, {{"x", x}}, DType::F32, {gelu(-2), gelu(-0.5), gelu(0.25), gelu(3)});
}

Model binaryModel(const std::string &op, DType a, Shape sa, DType b, Shape sb) {
  Model m;
  std::vector<Dim> da(sa.begin(), sa.end()), db(sb.begin(), sb.end());
  m.input("a", a, da);
  m.input("b", b, db);
  m.node(op, {"a", "b"}, {"y"}, op);
  m.output("y");
  return m;
}

TEST(OnnxElementwise, BinaryOpsBroadcast) {
  TensorData a = tensor(DType::F32, {2, 2}, {1, 2, 3, 4});
  TensorData b = tensor(DType::F32, {2}, {10, 20});
  std::map<std::string, TensorData> in{{"a", a}, {"b", b}};
  expectRuns(binaryModel("Add", DType::F32, {2, 2}, DType::F32, {2}), in, DType::F32, {11, 22, 13, 24});
  expectRuns(binaryModel("Sub", DType::F32, {2, 2}, DType::F32, {2}), in, DType::F32, {-9, -18, -7, -16});
  expectRuns(binaryModel("Mul", DType::F32, {2, 2}, DType::F32, {2}), in, DType::F32, {10, 40, 30, 80});
  expectRuns(binaryModel("Div", DType::F32, {2, 2}, DType::F32, {2}), in, DType::F32, {0.1, 0.1, 0.3, 0.2});
  expectRuns(binaryModel("Less", DType::F32, {2, 2}, DType::F32, {2}),
             {{"a", a}, {"b", tensor(DType::F32, {2}, {2, 2})}}, DType::Bool, {1, 0, 0, 0});
  expectRuns(binaryModel("Greater", DType::F32, {2, 2}, DType::F32, {2}),
             {{"a", a}, {"b", tensor(DType::F32, {2}, {2, 2})}}, DType::Bool, {0, 0, 1, 1});
  expectRuns(binaryModel("Equal", DType::I64, {2, 2}, DType::I64, {2}),
             {{"a", tensor(DType::I64, {2, 2}, {1, 2, 3, 2})}, {"b", tensor(DType::I64, {2}, {1, 2})}},
             DType::Bool, {1, 1, 0, 1});
}

TEST(OnnxElementwise, IntegerDivTruncatesTowardZero) {
  // ONNX (and onnxruntime) integer Div truncates: 7/2 = 3, -7/2 = -3, 7/-2 = -3 (not floor).
  for (DType t : {DType::I32, DType::I64, DType::I8}) {
    expectRuns(binaryModel("Div", t, {4}, t, {4}),
               {{"a", tensor(t, {4}, {7, -7, 7, 100})}, {"b", tensor(t, {4}, {2, 2, -2, 7})}}, t,
               {3, -3, -3, 14});
  }
  expectRuns(binaryModel("Div", DType::U8, {2}, DType::U8, {2}),
             {{"a", tensor(DType::U8, {2}, {255, 9})}, {"b", tensor(DType::U8, {2}, {2, 4})}},
             DType::U8, {127, 2});
}

TEST(OnnxElementwise, PowKeepsTheBasesDtype) {
  // A float base with an integer exponent: the exponent is cast, the result is float.
  expectRuns(binaryModel("Pow", DType::F32, {3}, DType::I64, {3}),
             {{"a", tensor(DType::F32, {3}, {2, 1.5, -2})}, {"b", tensor(DType::I64, {3}, {3, 2, 2})}},
             DType::F32, {8, 2.25, 4});
  // An integer base with a float exponent: the result is the base's integer dtype.
  expectRuns(binaryModel("Pow", DType::I32, {3}, DType::F32, {3}),
             {{"a", tensor(DType::I32, {3}, {2, 3, 9})}, {"b", tensor(DType::F32, {3}, {3, 2, 0.5})}},
             DType::I32, {8, 9, 3});
}

TEST(OnnxElementwise, ClipWithAndWithoutBounds) {
  TensorData x = tensor(DType::F32, {4}, {-2, -0.5, 0.25, 3});
  Model both;
  both.input("x", DType::F32, {4});
  both.initializer("lo", tensor(DType::F32, {}, {-1}));
  both.initializer("hi", tensor(DType::F32, {1}, {1}));  // shape [1]: accepted as a scalar
  both.node("Clip", {"x", "lo", "hi"}, {"y"});
  both.output("y", DType::F32, {4});
  expectRuns(both, {{"x", x}}, DType::F32, {-1, -0.5, 0.25, 1});
  Model maxOnly;
  maxOnly.input("x", DType::F32, {4});
  maxOnly.initializer("hi", tensor(DType::F32, {}, {0}));
  maxOnly.node("Clip", {"x", "", "hi"}, {"y"});
  maxOnly.output("y");
  expectRuns(maxOnly, {{"x", x}}, DType::F32, {-2, -0.5, 0, 0});
  Model none;
  none.input("x", DType::F32, {4});
  none.node("Clip", {"x"}, {"y"});
  none.output("y");
  expectRuns(none, {{"x", x}}, DType::F32, {-2, -0.5, 0.25, 3});
  // min > max gives max everywhere, as ONNX says.
  Model crossed;
  crossed.input("x", DType::F32, {4});
  crossed.initializer("lo", tensor(DType::F32, {}, {2}));
  crossed.initializer("hi", tensor(DType::F32, {}, {1}));
  crossed.node("Clip", {"x", "lo", "hi"}, {"y"});
  crossed.output("y");
  expectRuns(crossed, {{"x", x}}, DType::F32, {1, 1, 1, 1});
}

TEST(OnnxElementwise, CastWhereIdentityDropoutConstant) {
  Model cast = unaryModel("Cast");
  attr(cast.graph().mutable_node(0)[0], "to", int64_t{onnx::TensorProto::INT32});
  expectRuns(cast, {{"x", tensor(DType::F32, {4}, {-2.7, -0.5, 0.25, 3.9})}}, DType::I32,
             {-2, 0, 0, 3});
  Model where;
  where.input("c", DType::Bool, {3});
  where.input("a", DType::F32, {3});
  where.input("b", DType::F32, {1});
  where.node("Where", {"c", "a", "b"}, {"y"});
  where.output("y");
  expectRuns(where,
             {{"c", tensor(DType::Bool, {3}, {1, 0, 1})}, {"a", tensor(DType::F32, {3}, {1, 2, 3})},
              {"b", tensor(DType::F32, {1}, {-1})}},
             DType::F32, {1, -1, 3});
  Model dropout;
  dropout.input("x", DType::F32, {2});
  dropout.initializer("ratio", tensor(DType::F32, {}, {0.5}));
  dropout.initializer("training", tensor(DType::Bool, {}, {0}));
  attr(dropout.node("Dropout", {"x", "ratio", "training"}, {"d"}), "seed", int64_t{3});
  dropout.node("Relu", {"d"}, {"y"});
  dropout.output("y");
  expectRuns(dropout, {{"x", tensor(DType::F32, {2}, {-1, 2})}}, DType::F32, {0, 2});
  Model constant;
  constant.input("x", DType::F32, {3});
  attr(constant.node("Constant", {}, {"c"}), "value_floats", std::vector<double>{1, 2, 3});
  attr(constant.node("Constant", {}, {"k"}), "value_float", 10.0);
  constant.node("Mul", {"c", "k"}, {"ck"});
  constant.node("Add", {"x", "ck"}, {"y"});
  constant.output("y");
  expectRuns(constant, {{"x", tensor(DType::F32, {3}, {1, 1, 1})}}, DType::F32, {11, 21, 31});
}

std::string importErrors(const Model &m) {
  Expected<Graph> g = m.import();
  return g.ok() ? "" : g.status().message();
}

TEST(OnnxElementwise, InvalidTypesAndModesAreReported) {
  EXPECT_NE(importErrors(binaryModel("Add", DType::F32, {2}, DType::I64, {2}))
                .find("Add: input 0 ('a') is f32 and input 1 ('b') is i64: ONNX requires one data "
                      "type for both"),
            std::string::npos)
      << importErrors(binaryModel("Add", DType::F32, {2}, DType::I64, {2}));
  EXPECT_NE(importErrors(unaryModel("Exp", DType::I32))
                .find("Exp: input 0 ('x') is i32, expected a floating type"),
            std::string::npos);
  Model training;
  training.input("x", DType::F32, {2});
  training.initializer("t", tensor(DType::Bool, {}, {1}));
  training.node("Dropout", {"x", "", "t"}, {"y"});
  training.output("y");
  EXPECT_NE(importErrors(training).find("Dropout in training mode"), std::string::npos);
  Model mask;
  mask.input("x", DType::F32, {2});
  mask.node("Dropout", {"x"}, {"y", "m"});
  mask.output("m");
  Expected<Graph> g = mask.import();
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto out = reference::run(*g, {{"x", tensor(DType::F32, {2}, {1, 2})}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].toDoubles(), (std::vector<double>{1, 1}));  // inference mask: all true
  Model strings;
  auto &c = strings.node("Constant", {}, {"y"});
  auto *a = c.add_attribute();
  a->set_name("value_string");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("hi");
  strings.output("y");
  EXPECT_NE(importErrors(strings).find("Constant with value_string"), std::string::npos);
  Model castString = unaryModel("Cast");
  attr(castString.graph().mutable_node(0)[0], "to", int64_t{onnx::TensorProto::STRING});
  EXPECT_NE(importErrors(castString).find("Cast to STRING"), std::string::npos);
}

}  // namespace
}  // namespace ferry::onnx_test
