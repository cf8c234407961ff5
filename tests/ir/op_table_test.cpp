// tests/ir/op_table_test.cpp — makeAttrs (defaults, widening, errors) and the op table: every op
// consistent and inferring a sample.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/shape_test_util.h"

namespace ferry {
namespace {

using namespace testing_shapes;
using enum DType;

// ---- attributes and the op table ----------------------------------------------------------

Status attrStatus(OpKind k, std::vector<NamedAttr> given) {
  Expected<Attrs> r = makeAttrs(opInfo(k), given, Location{"m.fy", 3, 7});
  EXPECT_FALSE(r.ok());
  return r.ok() ? Status() : std::move(r).takeStatus();
}

TEST(MakeAttrs, CompletesDefaults) {
  const OpInfo &conv = opInfo(OpKind::Conv2d);
  Expected<Attrs> a = makeAttrs(conv, std::vector<NamedAttr>{I("groups", 2)}, Location{});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(attrInts(conv, *a, "stride"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(attrInts(conv, *a, "padding"), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(attrInts(conv, *a, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(attrInt(conv, *a, "groups"), 2);
  const OpInfo &pool = opInfo(OpKind::MaxPool2d);
  Expected<Attrs> p = makeAttrs(pool, std::vector<NamedAttr>{L("kernel", {3, 3})}, Location{});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(attrInts(pool, *p, "stride").empty());
  EXPECT_FALSE(attrBool(pool, *p, "ceil_mode"));
  const OpInfo &gelu = opInfo(OpKind::Gelu);
  Expected<Attrs> g = makeAttrs(gelu, {}, Location{});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(attrString(gelu, *g, "approximate"), "none");
  EXPECT_EQ(
      attrFloat(opInfo(OpKind::LayerNorm), *makeAttrs(opInfo(OpKind::LayerNorm), {}, {}), "eps"),
      1e-5);
}

TEST(MakeAttrs, WidensIntToFloat) {
  const OpInfo &bn = opInfo(OpKind::BatchNorm);
  Expected<Attrs> a = makeAttrs(bn, std::vector<NamedAttr>{I("eps", 1)}, Location{});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(attrKind(attr(bn, *a, "eps")), AttrKind::Float);
  EXPECT_EQ(attrFloat(bn, *a, "eps"), 1.0);
}

TEST(MakeAttrs, Errors) {
  Status unknown = attrStatus(OpKind::Neg, {I("foo", 1)});
  ASSERT_EQ(unknown.diagnostics().size(), 1u);
  EXPECT_EQ(unknown.diagnostics()[0].code, "attr");
  EXPECT_EQ(unknown.diagnostics()[0].message, "'neg' has no attribute 'foo'");
  EXPECT_EQ(unknown.diagnostics()[0].loc, (Location{"m.fy", 3, 7}));
  ASSERT_EQ(unknown.diagnostics()[0].notes.size(), 1u);
  EXPECT_EQ(unknown.diagnostics()[0].notes[0].message, "it takes no attributes");

  Status known = attrStatus(OpKind::Softmax, {I("dim", 1)});
  ASSERT_EQ(known.diagnostics().size(), 1u);
  EXPECT_EQ(known.diagnostics()[0].notes[0].message, "its attributes are: axis");

  Status twice = attrStatus(OpKind::Conv2d, {L("stride", {1, 1}), L("stride", {2, 2})});
  ASSERT_EQ(twice.diagnostics().size(), 1u);
  EXPECT_EQ(twice.diagnostics()[0].message, "attribute 'stride' of 'conv2d' is given twice");

  Status kind = attrStatus(OpKind::Softmax, {S("axis", "last")});
  ASSERT_EQ(kind.diagnostics().size(), 1u);
  EXPECT_EQ(kind.diagnostics()[0].message,
            "attribute 'axis' of 'softmax' must be of kind int, got string \"last\"");

  // A float is never narrowed to an int.
  Status narrow = attrStatus(OpKind::Softmax, {{"axis", 1.0}});
  ASSERT_EQ(narrow.diagnostics().size(), 1u);
  EXPECT_NE(narrow.diagnostics()[0].message.find("must be of kind int, got float 1.0"),
            std::string::npos);

  Status missing = attrStatus(OpKind::Reshape, {});
  ASSERT_EQ(missing.diagnostics().size(), 1u);
  EXPECT_EQ(missing.diagnostics()[0].message, "'reshape' requires attribute 'shape' (ints)");

  // Every error is reported, not only the first.
  Status several = attrStatus(OpKind::Slice, {I("start", 0), L("ends", {1}), L("ends", {2})});
  ASSERT_EQ(several.diagnostics().size(), 3u);
  EXPECT_EQ(several.diagnostics()[0].message, "'slice' has no attribute 'start'");
  EXPECT_EQ(several.diagnostics()[1].message, "attribute 'ends' of 'slice' is given twice");
  EXPECT_EQ(several.diagnostics()[2].message, "'slice' requires attribute 'starts' (ints)");
}

TEST(OpTable, EveryOpIsConsistent) {
  std::set<std::string_view> names;
  ASSERT_FALSE(allOps().empty());
  for (size_t i = 0; i < allOps().size(); ++i) {
    const OpInfo &op = allOps()[i];
    SCOPED_TRACE(std::string(op.name));
    EXPECT_EQ(static_cast<size_t>(op.kind), i);
    EXPECT_FALSE(op.name.empty());
    EXPECT_TRUE(names.insert(op.name).second) << "duplicate name";
    EXPECT_EQ(findOp(op.name), &op);
    EXPECT_EQ(&opInfo(op.kind), &op);
    EXPECT_NE(op.infer, nullptr);
    EXPECT_NE(op.cost, nullptr);
    int required = 0;
    for (const OperandSpec &o : op.operands) {
      EXPECT_FALSE(o.name.empty());
      required += o.optional ? 0 : 1;
    }
    EXPECT_EQ(op.minOperands, required);
    bool variadic = !op.operands.empty() && op.operands.back().variadic;
    EXPECT_EQ(op.maxOperands, variadic ? -1 : static_cast<int>(op.operands.size()));
    EXPECT_LE(op.minOperands, variadic ? op.minOperands : op.maxOperands);
    for (const AttrSpec &a : op.attrs) {
      EXPECT_EQ(op.attrIndex(a.name), &a - op.attrs.data());
      if (!a.required) {
        EXPECT_EQ(attrKind(a.defaultValue), a.kind) << a.name;
      }
    }
  }
  EXPECT_EQ(findOp("no_such_op"), nullptr);
  EXPECT_EQ(findOp("Linear"), nullptr);
  EXPECT_EQ(findOp("linear"), &opInfo(OpKind::Linear));
}

// One valid call per op, so that a new row in ops.def without a test here fails.
TEST(OpTable, EveryOpInfersASample) {
  struct Sample {
    OpKind op;
    std::vector<TensorType> operands;
    std::vector<NamedAttr> attrs;
    TensorType want;
  };
  const TensorType x = T(F32, {2, 3}), img = T(F32, {1, 2, 4, 4});
  const std::vector<Sample> samples = {
      {OpKind::Neg, {x}, {}, x},
      {OpKind::Abs, {x}, {}, x},
      {OpKind::Exp, {x}, {}, x},
      {OpKind::Log, {x}, {}, x},
      {OpKind::Sqrt, {x}, {}, x},
      {OpKind::Rsqrt, {x}, {}, x},
      {OpKind::Tanh, {x}, {}, x},
      {OpKind::Sigmoid, {x}, {}, x},
      {OpKind::Relu, {x}, {}, x},
      {OpKind::Gelu, {x}, {}, x},
      {OpKind::Erf, {x}, {}, x},
      {OpKind::Silu, {x}, {}, x},
      {OpKind::Add, {x, T(F32, {3})}, {}, x},
      {OpKind::Sub, {x, x}, {}, x},
      {OpKind::Mul, {x, x}, {}, x},
      {OpKind::Div, {x, x}, {}, x},
      {OpKind::Pow, {x, x}, {}, x},
      {OpKind::Maximum, {x, x}, {}, x},
      {OpKind::Minimum, {x, x}, {}, x},
      {OpKind::Equal, {x, x}, {}, T(Bool, {2, 3})},
      {OpKind::Less, {x, x}, {}, T(Bool, {2, 3})},
      {OpKind::Greater, {x, x}, {}, T(Bool, {2, 3})},
      {OpKind::Where, {T(Bool, {2, 3}), x, x}, {}, x},
      {OpKind::Matmul, {x, T(F32, {3, 5})}, {}, T(F32, {2, 5})},
      {OpKind::Linear, {x, T(F32, {5, 3})}, {}, T(F32, {2, 5})},
      {OpKind::Conv2d, {img, T(F32, {3, 2, 3, 3})}, {}, T(F32, {1, 3, 2, 2})},
      {OpKind::MaxPool2d, {img}, {L("kernel", {2, 2})}, T(F32, {1, 2, 2, 2})},
      {OpKind::AvgPool2d, {img}, {L("kernel", {4, 4})}, T(F32, {1, 2, 1, 1})},
      {OpKind::GlobalAvgPool, {img}, {}, T(F32, {1, 2, 1, 1})},
      {OpKind::BatchNorm, {img, T(F32, {2}), T(F32, {2}), T(F32, {2}), T(F32, {2})}, {}, img},
      {OpKind::LayerNorm, {x, T(F32, {3}), T(F32, {3})}, {}, x},
      {OpKind::Sum, {x}, {L("axes", {0})}, T(F32, {3})},
      {OpKind::Mean, {x}, {L("axes", {1})}, T(F32, {2})},
      {OpKind::Max, {x}, {}, T(F32, {})},
      {OpKind::Softmax, {x}, {}, x},
      {OpKind::LogSoftmax, {x}, {}, x},
      {OpKind::Reshape, {x}, {L("shape", {3, 2})}, T(F32, {3, 2})},
      {OpKind::Transpose, {x}, {}, T(F32, {3, 2})},
      {OpKind::Concat, {x, x}, {I("axis", 1)}, T(F32, {2, 6})},
      {OpKind::Slice, {x}, {L("starts", {1}), L("ends", {2})}, T(F32, {1, 3})},
      {OpKind::Gather, {x, T(I64, {4})}, {I("axis", 1)}, T(F32, {2, 4})},
      {OpKind::Unsqueeze, {x}, {L("axes", {1})}, T(F32, {2, 1, 3})},
      {OpKind::Squeeze, {T(F32, {2, 1})}, {}, T(F32, {2})},
      {OpKind::Flatten, {img}, {I("start", 1)}, T(F32, {1, 32})},
      {OpKind::Expand, {T(F32, {3})}, {L("shape", {2, 3})}, x},
      {OpKind::Cast, {x}, {{"to", I8}}, T(I8, {2, 3})},
      {OpKind::Transfer, {x}, {{"to", Device::cpu(1)}}, x},
      {OpKind::Constant, {}, {{"value", TensorData(U8, {3})}}, T(U8, {3})},
      {OpKind::Identity, {x}, {}, x},
  };
  std::set<OpKind> covered;
  for (const Sample &s : samples) {
    EXPECT_TRUE(isType(infer(s.op, s.operands, s.attrs), s.want)) << opInfo(s.op).name;
    covered.insert(s.op);
  }
  for (const OpInfo &op : allOps()) EXPECT_TRUE(covered.count(op.kind)) << op.name << " untested";
}

}  // namespace
}  // namespace ferry
