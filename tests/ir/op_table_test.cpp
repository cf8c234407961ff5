// tests/ir/op_table_test.cpp — makeAttrs (defaults, widening, errors) and the op table: every op
// consistent, inferring a sample, and its traits agreeing with its operands, rules and sample.
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

struct Sample {
  OpKind op;
  std::vector<TensorType> operands;
  std::vector<NamedAttr> attrs;
  TensorType want;
};

// One valid call per op, so that a new row in ops.def without a sample here fails
// (EveryOpInfersASample); the trait tests below check each op's traits against its sample.
const std::vector<Sample> &samples() {
  static const TensorType x = T(F32, {2, 3}), img = T(F32, {1, 2, 4, 4});
  static const std::vector<Sample> all = {
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
      {OpKind::LeakyRelu, {x}, {}, x},
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
  return all;
}

TEST(OpTable, EveryOpInfersASample) {
  std::set<OpKind> covered;
  for (const Sample &s : samples()) {
    EXPECT_TRUE(isType(infer(s.op, s.operands, s.attrs), s.want)) << opInfo(s.op).name;
    covered.insert(s.op);
  }
  for (const OpInfo &op : allOps()) EXPECT_TRUE(covered.count(op.kind)) << op.name << " untested";
}

// ---- traits -------------------------------------------------------------------------------

using enum OpTrait;

int64_t numel(const TensorType &t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

size_t dataOperandSpecs(const OpInfo &op) {
  size_t n = 0;
  for (const OperandSpec &o : op.operands) n += o.role == OperandRole::Data;
  return n;
}

// The flops the op table charges for a sample.
double sampleFlops(const Sample &s) {
  const OpInfo &op = opInfo(s.op);
  Expected<Attrs> attrs = makeAttrs(op, s.attrs, Location{});
  EXPECT_TRUE(attrs.ok()) << op.name;
  return attrs.ok() ? opCost(op, s.operands, *attrs, s.want).flops : -1;
}

// The names of the ops that have every trait of `t`, in table order, space-separated.
std::string opsWith(OpTrait t) {
  std::string s;
  for (const OpInfo &op : allOps())
    if (op.is(t)) s += (s.empty() ? "" : " ") + std::string(op.name);
  return s;
}

TEST(OpTraits, SetHelpers) {
  constexpr OpTrait eu = Elementwise | Unary;
  static_assert(hasAll(eu, Unary) && hasAll(eu, eu) && !hasAll(eu, Unary | Binary));
  static_assert(hasAny(eu, Unary | Binary) && !hasAny(eu, Binary | View));
  static_assert(!hasAll(eu, None) && !hasAny(eu, None));
  static_assert((eu & (Unary | View)) == Unary);
  EXPECT_TRUE(opInfo(OpKind::Neg).is(Elementwise | Unary));
  EXPECT_FALSE(opInfo(OpKind::Add).is(Elementwise | Unary));
  EXPECT_TRUE(hasTrait(OpKind::Matmul, GemmLike));
  EXPECT_FALSE(hasTrait(OpKind::Matmul, None));
  EXPECT_FALSE(hasTrait(OpKind::Reshape, Movement));
}

TEST(OpTraits, EveryOpHasAFamily) {
  for (const OpInfo &op : allOps())
    EXPECT_TRUE(hasAny(op.traits, kOpFamilies)) << op.name << " has no family trait";
}

// Unary and Binary refine Elementwise; the reference and CPU kernels of those families take
// exactly one or two data operands.
TEST(OpTraits, RefinementsImplyTheirFamily) {
  for (const OpInfo &op : allOps()) {
    SCOPED_TRACE(std::string(op.name));
    EXPECT_FALSE(op.is(Unary | Binary));
    if (op.is(Unary)) {
      EXPECT_TRUE(op.is(Elementwise));
      EXPECT_EQ(op.minOperands, 1);
      EXPECT_EQ(op.maxOperands, 1);
      EXPECT_EQ(dataOperandSpecs(op), 1u);
    }
    if (op.is(Binary)) {
      EXPECT_TRUE(op.is(Elementwise));
      EXPECT_EQ(op.minOperands, 2);
      EXPECT_EQ(op.maxOperands, 2);
      EXPECT_EQ(dataOperandSpecs(op), 2u);
    }
  }
}

// Pointwise with NumPy broadcasting: [2, 1, 3] with [4, 1] is [2, 4, 3]; one operand keeps its
// shape. A reduction, a GEMM or a view marked Elementwise fails here.
TEST(OpTraits, ElementwiseOpsArePointwiseAndBroadcast) {
  for (const OpInfo &op : allOps()) {
    if (!op.is(Elementwise)) continue;
    SCOPED_TRACE(std::string(op.name));
    ASSERT_GE(op.minOperands, 1);
    std::vector<TensorType> operands;
    for (int i = 0; i < op.minOperands; ++i) {
      const OperandRole role = op.operand(i).role;
      const DType dt = role == OperandRole::Bool ? Bool : role == OperandRole::Index ? I64 : F32;
      operands.push_back(i == 0 ? T(dt, {2, 1, 3}) : T(dt, {4, 1}));
    }
    std::vector<NamedAttr> attrs;
    for (const AttrSpec &a : op.attrs) {
      if (!a.required) continue;
      ASSERT_EQ(a.kind, AttrKind::DType) << "no test value for required attribute " << a.name;
      attrs.push_back({a.name, F32});
    }
    InferResult r = infer(op.kind, operands, attrs);
    ASSERT_TRUE(std::holds_alternative<TensorType>(r)) << std::get<InferError>(r).message;
    const Shape want = operands.size() == 1 ? Shape{2, 1, 3} : Shape{2, 4, 3};
    EXPECT_EQ(std::get<TensorType>(r).shape, want);
  }
}

// GEMMs promote their operands to one dtype (under strict they must already agree), compute in
// the low dtype under autocast and accumulate in f32 — the dtype pass's reason for AutocastLow
// says "(f32 accumulation)", so only GEMMs may be AutocastLow.
TEST(OpTraits, GemmLikeOpsAreTheAutocastLowOps) {
  for (const OpInfo &op : allOps()) {
    SCOPED_TRACE(std::string(op.name));
    EXPECT_EQ(op.is(GemmLike), op.is(AutocastLow));
    if (!op.is(GemmLike)) continue;
    EXPECT_EQ(op.dtypeRule, DTypeRule::Promote);
    EXPECT_TRUE(op.is(SameDTypeOperands));
    EXPECT_GE(op.minOperands, 2);
    EXPECT_FALSE(acceptsDType(op.accepts, Bool));
  }
}

// The strict check compares data operands and then promotes them: it needs at least two data
// operands and the Promote rule.
TEST(OpTraits, SameDTypeOperandsOpsPromoteSeveralDataOperands) {
  for (const OpInfo &op : allOps()) {
    if (!op.is(SameDTypeOperands)) continue;
    SCOPED_TRACE(std::string(op.name));
    EXPECT_GE(dataOperandSpecs(op), 2u);
    EXPECT_EQ(op.dtypeRule, DTypeRule::Promote);
  }
}

// Autocast picks one dtype for an op: never both lists, and never an op whose dtype is an
// attribute (cast, constant).
TEST(OpTraits, AutocastTraitsAreDisjointAndComputeSomething) {
  for (const OpInfo &op : allOps()) {
    SCOPED_TRACE(std::string(op.name));
    EXPECT_FALSE(op.is(AutocastLow | AutocastF32));
    if (hasAny(op.traits, AutocastLow | AutocastF32)) {
      EXPECT_NE(op.dtypeRule, DTypeRule::FromAttr);
      EXPECT_FALSE(hasAny(op.traits, View | Movement | Conversion | Source));
    }
  }
}

// The dtype pass's lists, as eager PyTorch and torch.autocast have them (DESIGN.md "Dtype
// semantics"); a change here changes compiled graphs.
TEST(OpTraits, DTypePassListsAreTorchs) {
  EXPECT_EQ(opsWith(SameDTypeOperands), "matmul linear conv2d batch_norm layer_norm");
  EXPECT_EQ(opsWith(AutocastLow), "matmul linear conv2d");
  EXPECT_EQ(opsWith(AutocastF32),
            "exp log pow batch_norm layer_norm sum mean max softmax log_softmax");
}

// A view is the same bytes in the same order: one operand, the same dtype and element count,
// no arithmetic.
TEST(OpTraits, ViewOpsKeepTheirBytes) {
  for (const Sample &s : samples()) {
    const OpInfo &op = opInfo(s.op);
    if (!op.is(View)) continue;
    SCOPED_TRACE(std::string(op.name));
    EXPECT_EQ(op.maxOperands, 1);
    EXPECT_EQ(op.dtypeRule, DTypeRule::Keep);
    ASSERT_EQ(s.operands.size(), 1u);
    EXPECT_EQ(s.want.dtype, s.operands[0].dtype);
    EXPECT_EQ(numel(s.want), numel(s.operands[0]));
    EXPECT_EQ(sampleFlops(s), 0);
  }
}

// Movement rearranges elements without arithmetic and without changing their dtype (concat
// promotes, and the samples give it one dtype).
TEST(OpTraits, MovementOpsDoNoArithmetic) {
  for (const Sample &s : samples()) {
    const OpInfo &op = opInfo(s.op);
    if (!op.is(Movement)) continue;
    SCOPED_TRACE(std::string(op.name));
    EXPECT_EQ(s.want.dtype, s.operands[0].dtype);
    EXPECT_EQ(sampleFlops(s), 0);
  }
}

// A reduction gives fewer elements than it reads; a normalisation keeps its input's shape; a
// pool is NCHW in and out. Each does arithmetic.
TEST(OpTraits, ReductionNormalizationAndPoolShapes) {
  for (const Sample &s : samples()) {
    const OpInfo &op = opInfo(s.op);
    SCOPED_TRACE(std::string(op.name));
    if (op.is(Reduction)) {
      EXPECT_LT(numel(s.want), numel(s.operands[0]));
    }
    if (op.is(Normalization)) {
      EXPECT_EQ(s.want.shape, s.operands[0].shape);
    }
    if (op.is(Pool)) {
      EXPECT_EQ(s.operands[0].rank(), 4);
      EXPECT_EQ(s.want.rank(), 4);
    }
    if (hasAny(op.traits, Reduction | Normalization | Pool | GemmLike)) {
      EXPECT_GT(sampleFlops(s), 0);
    }
  }
}

// A source is exactly an op that reads nothing.
TEST(OpTraits, SourcesAreTheOpsWithoutOperands) {
  for (const OpInfo &op : allOps()) EXPECT_EQ(op.is(Source), op.maxOperands == 0) << op.name;
}

// A conversion takes one value to another dtype or device (its `to`), the shape unchanged.
TEST(OpTraits, ConversionsChangeOnlyDTypeOrDevice) {
  for (const Sample &s : samples()) {
    const OpInfo &op = opInfo(s.op);
    if (!op.is(Conversion)) continue;
    SCOPED_TRACE(std::string(op.name));
    EXPECT_EQ(op.maxOperands, 1);
    ASSERT_EQ(op.attrs.size(), 1u);
    EXPECT_EQ(op.attrs[0].name, "to");
    EXPECT_TRUE(op.attrs[0].kind == AttrKind::DType || op.attrs[0].kind == AttrKind::Device);
    EXPECT_EQ(s.want.shape, s.operands[0].shape);
  }
}

}  // namespace
}  // namespace ferry
