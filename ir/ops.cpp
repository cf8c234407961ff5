// ir/ops.cpp — the op table built from ir/ops.def, attribute completion, and the generic part
// of type inference (arity, operand roles, accepted dtypes) shared by every op.
#include "ir/ops.h"

#include <charconv>
#include <cstdlib>
#include <sstream>

#include "ir/op_rules.h"

namespace ferry {

namespace {

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<OperandSpec> parseOperandSpecs(std::string_view spec, std::string_view op) {
  std::vector<OperandSpec> out;
  for (std::string_view w : words(spec)) {
    OperandSpec o;
    if (w.ends_with("...")) {
      o.variadic = true;
      w.remove_suffix(3);
    } else if (w.ends_with("?")) {
      o.optional = true;
      w.remove_suffix(1);
    }
    if (size_t colon = w.find(':'); colon != std::string_view::npos) {
      std::string_view role = w.substr(colon + 1);
      FERRY_CHECK(role == "bool" || role == "int") << "op " << op << ": role " << role;
      o.role = role == "bool" ? OperandRole::Bool : OperandRole::Index;
      w = w.substr(0, colon);
    }
    o.name = std::string(w);
    FERRY_CHECK(out.empty() || !out.back().variadic) << "op " << op << ": variadic not last";
    FERRY_CHECK(o.optional || out.empty() || !out.back().optional)
        << "op " << op << ": optional operands must be trailing";
    out.push_back(std::move(o));
  }
  return out;
}

int64_t parseInt(std::string_view s, std::string_view op) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  FERRY_CHECK(ec == std::errc() && end == s.data() + s.size()) << "op " << op << ": int " << s;
  return v;
}

AttrValue parseDefault(AttrKind kind, std::string_view text, std::string_view op) {
  switch (kind) {
    case AttrKind::Bool:
      FERRY_CHECK(text == "true" || text == "false") << "op " << op << ": bool " << text;
      return text == "true";
    case AttrKind::Int: return parseInt(text, op);
    case AttrKind::Float: return std::strtod(std::string(text).c_str(), nullptr);
    case AttrKind::Ints: {
      FERRY_CHECK(text.starts_with("[") && text.ends_with("]")) << "op " << op << ": " << text;
      std::vector<int64_t> xs;
      std::string_view body = text.substr(1, text.size() - 2);
      while (!body.empty()) {
        size_t comma = body.find(',');
        xs.push_back(parseInt(body.substr(0, comma), op));
        body = comma == std::string_view::npos ? "" : body.substr(comma + 1);
      }
      return xs;
    }
    case AttrKind::String: return std::string(text);
    default: FERRY_CHECK(false) << "op " << op << ": no default syntax for " << attrKindName(kind);
  }
  return false;
}

std::vector<AttrSpec> parseAttrSpecs(std::string_view spec, std::string_view op) {
  std::vector<AttrSpec> out;
  for (std::string_view w : words(spec)) {
    size_t colon = w.find(':');
    FERRY_CHECK(colon != std::string_view::npos) << "op " << op << ": attribute " << w;
    size_t eq = w.find('=');
    std::string_view kindName =
        w.substr(colon + 1, eq == std::string_view::npos ? eq : eq - colon - 1);
    std::optional<AttrKind> kind;
    for (int k = 0; k <= static_cast<int>(AttrKind::Tensor); ++k)
      if (attrKindName(static_cast<AttrKind>(k)) == kindName) kind = static_cast<AttrKind>(k);
    FERRY_CHECK(kind) << "op " << op << ": attribute kind " << kindName;
    AttrSpec a{std::string(w.substr(0, colon)), *kind, eq == std::string_view::npos, false};
    if (!a.required) a.defaultValue = parseDefault(*kind, w.substr(eq + 1), op);
    out.push_back(std::move(a));
  }
  return out;
}

OpInfo makeInfo(OpKind kind, std::string_view name, std::string_view operands, OpTrait traits,
                DTypeRule rule, Accepts accepts, InferFn infer, CostFn cost,
                std::string_view attrs) {
  OpInfo info{kind,  name, parseOperandSpecs(operands, name), 0, 0, traits, rule, accepts,
              infer, cost, parseAttrSpecs(attrs, name)};
  for (const OperandSpec &o : info.operands) {
    if (!o.optional) ++info.minOperands;
    ++info.maxOperands;
  }
  if (!info.operands.empty() && info.operands.back().variadic) info.maxOperands = -1;
  return info;
}

const std::vector<OpInfo> &table() {
  static const std::vector<OpInfo> ops = [] {
    std::vector<OpInfo> v;
    using enum OpTrait;  // the traits column names flags unqualified: `Elementwise | Unary`
#define FERRY_OP(e, name, operands, traits, rule, accepts, infer, cost, attrs)                     \
  v.push_back(makeInfo(OpKind::e, name, operands, traits, DTypeRule::rule, Accepts::accepts,       \
                       infer, cost, attrs));
#include "ir/ops.def"
#undef FERRY_OP
    return v;
  }();
  return ops;
}

std::string describeTypes(std::span<const TensorType> ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
  return s;
}

}  // namespace

int OpInfo::attrIndex(std::string_view n) const {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == n) return static_cast<int>(i);
  return -1;
}

const OperandSpec &OpInfo::operand(size_t i) const {
  FERRY_CHECK(!operands.empty()) << name << " has no operands";
  return i < operands.size() ? operands[i] : operands.back();
}

const OpInfo &opInfo(OpKind k) { return table()[static_cast<size_t>(k)]; }

bool hasTrait(OpKind k, OpTrait t) { return opInfo(k).is(t); }

std::span<const OpInfo> allOps() { return table(); }

const OpInfo *findOp(std::string_view name) {
  for (const OpInfo &op : table())
    if (op.name == name) return &op;
  return nullptr;
}

bool acceptsDType(Accepts a, DType t) {
  switch (a) {
    case Accepts::Any: return true;
    case Accepts::Numeric: return t != DType::Bool;
    case Accepts::Float: return isFloating(t);
  }
  return false;
}

std::string_view acceptsDescription(Accepts a) {
  switch (a) {
    case Accepts::Any: return "any dtype";
    case Accepts::Numeric: return "a numeric (non-bool) dtype";
    case Accepts::Float: return "a floating dtype (f16, bf16, f32, f64)";
  }
  return "?";
}

Expected<Attrs> makeAttrs(const OpInfo &op, std::span<const NamedAttr> given, const Location &loc) {
  DiagnosticEngine diags;
  Attrs attrs(op.attrs.size());
  std::vector<bool> seen(op.attrs.size(), false);
  for (const NamedAttr &a : given) {
    int i = op.attrIndex(a.name);
    if (i < 0) {
      std::string known;
      for (const AttrSpec &s : op.attrs) known += (known.empty() ? "" : ", ") + s.name;
      diags.error("attr", loc, "'" + std::string(op.name) + "' has no attribute '" + a.name + "'")
          .detail(known.empty() ? "it takes no attributes" : "its attributes are: " + known, loc);
      continue;
    }
    const AttrSpec &spec = op.attrs[i];
    if (seen[i]) {
      diags.error("attr", loc,
                  "attribute '" + a.name + "' of '" + std::string(op.name) + "' is given twice");
      continue;
    }
    seen[i] = true;
    AttrValue v = a.value;
    if (spec.kind == AttrKind::Float && attrKind(v) == AttrKind::Int)
      v = static_cast<double>(std::get<int64_t>(v));
    if (attrKind(v) != spec.kind) {
      diags.error("attr", loc,
                  "attribute '" + a.name + "' of '" + std::string(op.name) + "' must be of kind " +
                      std::string(attrKindName(spec.kind)) + ", got " +
                      std::string(attrKindName(attrKind(a.value))) + " " + attrValueStr(a.value));
      continue;
    }
    attrs[i] = std::move(v);
  }
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    if (seen[i]) continue;
    if (op.attrs[i].required)
      diags.error("attr", loc,
                  "'" + std::string(op.name) + "' requires attribute '" + op.attrs[i].name + "' (" +
                      std::string(attrKindName(op.attrs[i].kind)) + ")");
    else
      attrs[i] = op.attrs[i].defaultValue;
  }
  if (diags.hasErrors()) return Status(diags.take());
  return attrs;
}

DType ruleDType(DTypeRule rule, DType first, DType common) {
  switch (rule) {
    case DTypeRule::Keep: return first;
    case DTypeRule::Promote: return common;
    case DTypeRule::PromoteFloat: return isFloating(common) ? common : DType::F32;
    case DTypeRule::Compare: return DType::Bool;
    case DTypeRule::SumInt: return isFloating(common) ? common : DType::I64;
    case DTypeRule::FromAttr: break;
  }
  FERRY_CHECK(false) << "ruleDType for FromAttr";
  return common;
}

DType ruleDType(const OpInfo &op, std::span<const TensorType> operands) {
  ResultType common;
  std::optional<DType> first;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (op.operand(i).role != OperandRole::Data) continue;
    if (!first) first = operands[i].dtype;
    common.add(operands[i].dtype, operands[i].rank() == 0);
  }
  FERRY_CHECK(first) << "ruleDType: '" << op.name << "' without data operands";
  return ruleDType(op.dtypeRule, *first, common.get());
}

InferResult inferType(const OpInfo &op, std::span<const TensorType> operands, const Attrs &attrs) {
  const std::string_view name = op.name;
  int n = static_cast<int>(operands.size());
  if (n < op.minOperands || (op.maxOperands >= 0 && n > op.maxOperands)) {
    std::string expected =
        op.maxOperands < 0 ? "at least " + std::to_string(op.minOperands)
        : op.minOperands == op.maxOperands
            ? std::to_string(op.minOperands)
            : std::to_string(op.minOperands) + " to " + std::to_string(op.maxOperands);
    std::string sig;
    for (const OperandSpec &o : op.operands)
      sig += (sig.empty() ? "" : ", ") + o.name + (o.optional ? "?" : o.variadic ? "..." : "");
    return InferError{"arity", "'" + std::string(name) + "' takes " + expected + " operand" +
                                   (expected == "1" ? "" : "s") + " (" + sig + "), got " +
                                   std::to_string(n)};
  }
  FERRY_CHECK(attrs.size() == op.attrs.size()) << name << ": attributes not completed";
  for (int i = 0; i < n; ++i) {
    const OperandSpec &spec = op.operand(i);
    DType t = operands[i].dtype;
    // Built only on failure: inferType runs for every node of every verify.
    auto which = [&] {
      return "operand " + std::to_string(i) + " (" + spec.name + ") of '" + std::string(name) + "'";
    };
    if (spec.role == OperandRole::Bool && t != DType::Bool)
      return InferError{"dtype", which() + " must be bool, got " + operands[i].str()};
    if (spec.role == OperandRole::Index && t != DType::I32 && t != DType::I64)
      return InferError{"dtype", which() + " must be i32 or i64, got " + operands[i].str()};
    if (spec.role == OperandRole::Data && !acceptsDType(op.accepts, t))
      return InferError{"dtype", which() + " must have " +
                                     std::string(acceptsDescription(op.accepts)) + ", got " +
                                     operands[i].str()};
  }
  InferResult r = op.infer(InferArgs{op, operands, attrs});
  if (const auto *t = std::get_if<TensorType>(&r)) {
    for (int64_t d : t->shape)
      FERRY_CHECK(d >= 0) << name << " inferred " << t->str() << " from "
                          << describeTypes(operands);
  }
  return r;
}

bool wrongOperandKind(const OpInfo &op, size_t i, DType t) {
  switch (op.operand(i).role) {
    case OperandRole::Bool: return t != DType::Bool;
    case OperandRole::Index: return t != DType::I32 && t != DType::I64;
    case OperandRole::Data: return false;
  }
  return false;
}

std::optional<TensorType> inferTypeWithKindsFixed(const OpInfo &op,
                                                  std::span<const TensorType> operands,
                                                  const Attrs &attrs) {
  const int n = static_cast<int>(operands.size());
  if (n < op.minOperands || (op.maxOperands >= 0 && n > op.maxOperands)) return std::nullopt;
  std::vector<TensorType> fixed(operands.begin(), operands.end());
  bool any = false;
  for (size_t i = 0; i < fixed.size(); ++i) {
    if (!wrongOperandKind(op, i, fixed[i].dtype)) continue;
    fixed[i].dtype = op.operand(i).role == OperandRole::Bool ? DType::Bool : DType::I64;
    any = true;
  }
  if (!any) return std::nullopt;
  InferResult r = inferType(op, fixed, attrs);
  if (auto *t = std::get_if<TensorType>(&r)) return std::move(*t);
  return std::nullopt;
}

OpCost opCost(const OpInfo &op, std::span<const TensorType> operands, const Attrs &attrs,
              const TensorType &result) {
  return op.cost(InferArgs{op, operands, attrs}, result);
}

const AttrValue &attr(const OpInfo &op, const Attrs &attrs, std::string_view name) {
  int i = op.attrIndex(name);
  FERRY_CHECK(i >= 0 && static_cast<size_t>(i) < attrs.size())
      << "'" << op.name << "' has no attribute '" << name << "'";
  return attrs[i];
}

namespace {
template <class T> const T &typed(const OpInfo &op, const Attrs &attrs, std::string_view name) {
  const AttrValue &v = attr(op, attrs, name);
  const T *p = std::get_if<T>(&v);
  FERRY_CHECK(p) << "attribute '" << name << "' of '" << op.name << "' is "
                 << attrKindName(attrKind(v));
  return *p;
}
}  // namespace

int64_t attrInt(const OpInfo &op, const Attrs &a, std::string_view n) {
  return typed<int64_t>(op, a, n);
}
double attrFloat(const OpInfo &op, const Attrs &a, std::string_view n) {
  return typed<double>(op, a, n);
}
bool attrBool(const OpInfo &op, const Attrs &a, std::string_view n) {
  return typed<bool>(op, a, n);
}
const std::vector<int64_t> &attrInts(const OpInfo &op, const Attrs &a, std::string_view n) {
  return typed<std::vector<int64_t>>(op, a, n);
}
const std::string &attrString(const OpInfo &op, const Attrs &a, std::string_view n) {
  return typed<std::string>(op, a, n);
}
DType attrDType(const OpInfo &op, const Attrs &a, std::string_view n) {
  return typed<DType>(op, a, n);
}
Device attrDevice(const OpInfo &op, const Attrs &a, std::string_view n) {
  return typed<Device>(op, a, n);
}
const TensorData &attrTensor(const OpInfo &op, const Attrs &a, std::string_view n) {
  return typed<TensorData>(op, a, n);
}

}  // namespace ferry
