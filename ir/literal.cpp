// ir/literal.cpp — scalar literal operands: checks, dtype, storage, text.
#include "ir/literal.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace ferry {

namespace {

// The literal's value in `t`, converted as `cast` converts (no range check).
TensorData convert(const Literal &lit, DType t) {
  TensorData out(t, {});
  std::byte *p = out.mutableBytes().data();
  if (lit.kind == DTypeCategory::Floating)
    storeDouble(t, p, lit.d);
  else if (isFloating(t))
    storeDouble(t, p, static_cast<double>(lit.i));
  else
    storeIntWrapping(t, p, lit.i);
  return out;
}

std::pair<int64_t, int64_t> intRange(DType t) {
  switch (t) {
    case DType::Bool: return {0, 1};
    case DType::U8: return {0, 255};
    case DType::I8: return {-128, 127};
    case DType::I32: return {INT32_MIN, INT32_MAX};
    default: return {INT64_MIN, INT64_MAX};
  }
}

double largestFinite(DType t) {
  switch (t) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 0x1.fep127;
    case DType::F32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

// Why `lit` cannot be stored in `t` (the range it would leave, as PyTorch refuses a Python scalar
// that overflows its tensor's dtype), or "" when it can. Rounding is no reason: 0.1 in f16 is f16's
// nearest value, as in PyTorch.
std::string outOfRange(const Literal &lit, DType t) {
  if (lit.kind == DTypeCategory::Bool) return "";
  if (isFloating(t)) {
    double x = lit.kind == DTypeCategory::Floating ? lit.d : static_cast<double>(lit.i);
    if (!std::isfinite(x) || std::isfinite(convert(lit, t).at(0))) return "";
    return "its largest finite value is " + floatStr(largestFinite(t));
  }
  if (lit.kind == DTypeCategory::Floating)
    return "";  // not reached: a float literal makes it float
  auto [lo, hi] = intRange(t);
  if (lit.i >= lo && lit.i <= hi) return "";
  return std::to_string(lo) + " to " + std::to_string(hi);
}

// The shortest decimal, as a double, that reads back (a double rounded to `t`, as the parser
// reads a literal) to the zero-dim float tensor's value.
double shortestDouble(const TensorData &t) {
  const double v = t.at(0);
  const DType dt = t.dtype();
  if (dt == DType::F64 || !std::isfinite(v)) return v;
  std::byte want[8], got[8];
  storeDouble(dt, want, v);
  for (int precision = 0; precision < 17; ++precision) {
    char buf[64];
    auto written =
        std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, precision);
    double d = 0;
    std::from_chars(buf, written.ptr, d);
    storeDouble(dt, got, d);
    if (std::memcmp(got, want, dtypeSize(dt)) == 0) return d;
  }
  return v;
}

const TensorData &valueOf(const Node &n) { return attrTensor(n.info(), n.attrs, "value"); }

// "add, sub, ... and where": the ops that take a literal somewhere, in table order.
std::string literalOps() {
  std::vector<std::string_view> names;
  for (const OpInfo &op : allOps())
    if (takesLiteral(op, 0) || takesLiteral(op, 1)) names.push_back(op.name);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + std::string(names[i]);
  return s;
}

}  // namespace

std::string Literal::str() const {
  switch (kind) {
    case DTypeCategory::Bool: return i ? "true" : "false";
    case DTypeCategory::Integer: return std::to_string(i);
    case DTypeCategory::Floating: break;
  }
  return floatStr(d);
}

bool takesLiteral(const OpInfo &op, size_t i) {
  if (op.operands.size() < 2 || !op.is(OpTrait::Elementwise)) return false;
  if (i >= op.operands.size() && !op.operands.back().variadic) return false;
  return op.operand(i).role == OperandRole::Data;
}

Expected<std::vector<std::optional<TensorData>>>
typeLiterals(const OpInfo &op, std::span<TensorType> types,
             std::span<const std::optional<Literal>> literals, std::span<const Location> at,
             const Location &node) {
  const size_t n = literals.size();
  FERRY_CHECK(types.size() == n && at.size() == n) << "typeLiterals: operand counts differ";
  std::vector<std::optional<TensorData>> values(n);
  const auto count = static_cast<int>(n);
  if (count < op.minOperands || (op.maxOperands >= 0 && count > op.maxOperands)) {
    for (size_t i = 0; i < n; ++i)
      if (literals[i]) types[i] = TensorType{DType::F32, {}};
    return values;
  }
  const std::string opName(op.name);
  DiagnosticEngine diags;
  bool anyTensor = false, anyLiteral = false;
  for (size_t i = 0; i < n; ++i) {
    if (!literals[i]) {
      anyTensor = true;
      continue;
    }
    anyLiteral = true;
    if (takesLiteral(op, i)) continue;
    const OperandSpec &spec = op.operand(i);
    std::string which =
        "operand " + std::to_string(i) + " (" + spec.name + ") of '" + opName + "' must be ";
    std::string found = ", found literal " + literals[i]->str();
    if (spec.role == OperandRole::Bool) {
      diags.error("literal", at[i], which + "a bool tensor (%name)" + found);
    } else if (spec.role == OperandRole::Index) {
      diags.error("literal", at[i], which + "an index tensor (%name of i32 or i64)" + found);
    } else {
      diags.error("literal", at[i], which + "a tensor (%name)" + found)
          .note("literals are data operands of " + literalOps() +
                " (as PyTorch takes Python scalars there)");
    }
  }
  if (diags.hasErrors()) return Status(diags.take());
  if (!anyLiteral) return values;
  if (!anyTensor) {
    diags
        .error("literal", node,
               "'" + opName + "' has only literal operands: at least one must be a tensor (%name)")
        .note("a literal takes its dtype from the tensors it meets, as a Python scalar does in "
              "PyTorch; a tensor of its own is written constant(value=f32[]{1.0})");
    return Status(diags.take());
  }
  ResultType common;
  for (size_t i = 0; i < n; ++i) {
    if (op.operand(i).role != OperandRole::Data) continue;
    if (literals[i])
      common.addWrapped(literals[i]->kind);
    else
      common.add(types[i].dtype, types[i].rank() == 0);
  }
  // Stored in the dtype the op computes in: its operands' common dtype, made floating for
  // PromoteFloat ops (div of integers); comparisons compare in the common dtype.
  DType dtype = common.get();
  if (op.dtypeRule == DTypeRule::PromoteFloat && !isFloating(dtype)) dtype = DType::F32;
  for (size_t i = 0; i < n; ++i) {
    if (!literals[i]) continue;
    if (std::string range = outOfRange(*literals[i], dtype); !range.empty()) {
      diags
          .error("literal", at[i],
                 "literal " + literals[i]->str() + " is out of range for " +
                     std::string(dtypeName(dtype)) + " (" + range + "), the dtype '" + opName +
                     "' computes in")
          .note("a literal does not widen the dtype of the tensors it meets (PyTorch's rule for "
                "Python scalars): cast them to a wider dtype first");
      continue;
    }
    values[i] = convert(*literals[i], dtype);
    types[i] = TensorType{dtype, {}};
  }
  if (diags.hasErrors()) return Status(diags.take());
  return values;
}

std::string literalName(std::string_view reader, const OpInfo &op, size_t i) {
  return std::string(reader) + "." + op.operand(i).name;
}

ValueId addLiteral(Graph &g, DTypeCategory kind, TensorData value, std::string name, Location loc) {
  FERRY_CHECK(value.shape().empty()) << "a literal is zero-dim, got " << value.type().str();
  TensorType type = value.type();
  FERRY_CHECK(opInfo(OpKind::Constant).attrs.size() == 1) << "constant's schema changed";
  NodeSpec spec{OpKind::Constant, {},           Attrs{AttrValue(std::move(value))},
                std::nullopt,     std::nullopt, std::move(loc)};
  NodeId id = g.addNode(std::move(spec), std::move(name), std::move(type));
  g.node(id).literal = kind;
  // The kind its text has: an integer beyond int64 once rounded to a float dtype is written as
  // a float.
  g.node(id).literal = literalOf(g, g.node(id).result).kind;
  return g.node(id).result;
}

bool isLiteral(const Graph &g, ValueId v) {
  const Node *p = g.producer(v);
  return p != nullptr && p->literal.has_value();
}

void addOperandType(ResultType &rt, const Graph &g, ValueId v) {
  if (const Node *p = g.producer(v); p != nullptr && p->literal) {
    rt.addWrapped(*p->literal);
    return;
  }
  const TensorType &t = g.value(v).type;
  rt.add(t.dtype, t.rank() == 0);
}

Literal literalOf(const Graph &g, ValueId v) {
  const Node *n = g.producer(v);
  FERRY_CHECK(n != nullptr && n->literal) << "%" << g.value(v).name << " is not a literal";
  const TensorData &t = valueOf(*n);
  const bool floating = isFloating(t.dtype());
  switch (*n->literal) {
    case DTypeCategory::Bool: return {DTypeCategory::Bool, t.at(0) != 0 ? 1 : 0, 0};
    case DTypeCategory::Integer: {
      if (!floating) return {DTypeCategory::Integer, t.atInt(0), 0};
      const double x = t.at(0);
      if (std::isfinite(x) && x == std::trunc(x) && std::fabs(x) < 0x1p63)
        return {DTypeCategory::Integer, static_cast<int64_t>(x), 0};
      break;  // inf, or beyond int64: written as a float
    }
    case DTypeCategory::Floating: break;
  }
  return {DTypeCategory::Floating, 0,
          floating ? shortestDouble(t) : static_cast<double>(t.atInt(0))};
}

void retypeLiteral(Graph &g, ValueId v, DType dtype) {
  const Literal lit = literalOf(g, v);
  Node &n = g.node(g.value(v).def);
  TensorData data = convert(lit, dtype);
  DTypeCategory kind = std::min(lit.kind, dtypeCategory(dtype));
  if (kind == DTypeCategory::Integer && isFloating(dtype) && !std::isfinite(data.at(0)))
    kind = DTypeCategory::Floating;
  n.attrs[static_cast<size_t>(n.info().attrIndex("value"))] = std::move(data);
  n.literal = kind;
  g.value(v).type = TensorType{dtype, {}};
}

}  // namespace ferry
