// ir/ops.h — the op table's types and lookups; the rows themselves are in ir/ops.def.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/attrs.h"
#include "ir/status.h"
#include "ir/types.h"

namespace ferry {

enum class OpKind : uint16_t {
#define FERRY_OP(e, name, operands, traits, rule, accepts, infer, cost, attrs) e,
#include "ir/ops.def"
#undef FERRY_OP
};

/// What kind of op a row of the op table is, as bit flags. Every "which ops are X" question
/// (autocast lists, same-dtype rules, fusion legality, kernel families) reads these instead of
/// listing ops by hand. Each op has at least one family trait (Elementwise to Conversion); the
/// others refine it or say how the dtype pass treats the op.
enum class OpTrait : uint32_t {
  None = 0,
  // Families.
  Elementwise = 1u << 0,    ///< result element i reads only element i of each (broadcast)
                            ///< operand: unary, binary, where, cast; fusable into chains
  GemmLike = 1u << 1,       ///< contracts over an inner dimension: matmul, linear, conv2d
  Pool = 1u << 2,           ///< windows over the spatial dims of NCHW
  Reduction = 1u << 3,      ///< each result element combines many input elements (fewer out)
  Normalization = 1u << 4,  ///< normalises over some dims, shape unchanged: softmax, norms
  View = 1u << 5,           ///< the same bytes in the same order, only the shape may change
  Movement = 1u << 6,       ///< rearranges, selects or repeats elements without arithmetic
  Source = 1u << 7,         ///< reads no operand: its value comes from an attribute
  Conversion = 1u << 8,     ///< changes only the dtype or the device of a value (cast,
                            ///< transfer): the ops placement and the dtype pass insert
  // Refinements of Elementwise.
  Unary = 1u << 9,    ///< elementwise math on one operand, result shape = operand shape
  Binary = 1u << 10,  ///< elementwise on two operands with NumPy broadcasting
  // How the dtype pass treats the op (DESIGN.md "Dtype semantics").
  SameDTypeOperands = 1u << 11,  ///< under strict, data operands of different dtypes are an
                                 ///< error (eager PyTorch does not promote inside these)
  AutocastLow = 1u << 12,  ///< under autocast, computes in the low dtype when it would compute
                           ///< in f16, bf16 or f32 (torch.autocast's lower-precision list)
  AutocastF32 = 1u << 13,  ///< under autocast, computes in f32 when it would compute in f16 or
                           ///< bf16 (torch.autocast's "autocast to float32" list)
};

/// The union of two trait sets.
constexpr OpTrait operator|(OpTrait a, OpTrait b) {
  return static_cast<OpTrait>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
/// The traits in both sets.
constexpr OpTrait operator&(OpTrait a, OpTrait b) {
  return static_cast<OpTrait>(static_cast<uint32_t>(a) & static_cast<uint32_t>(b));
}
/// The family traits; every op has at least one.
inline constexpr OpTrait kOpFamilies = OpTrait::Elementwise | OpTrait::GemmLike | OpTrait::Pool |
                                       OpTrait::Reduction | OpTrait::Normalization | OpTrait::View |
                                       OpTrait::Movement | OpTrait::Source | OpTrait::Conversion;

/// True when `set` holds every trait of `t` (and `t` is not None).
constexpr bool hasAll(OpTrait set, OpTrait t) { return t != OpTrait::None && (set & t) == t; }
/// True when `set` holds at least one trait of `t`.
constexpr bool hasAny(OpTrait set, OpTrait t) { return (set & t) != OpTrait::None; }

/// How an op's result dtype follows from its data operands' dtypes.
enum class DTypeRule : uint8_t {
  Keep,          ///< the first operand's dtype
  Promote,       ///< torch.result_type over the data operands (ResultType)
  PromoteFloat,  ///< result_type, then bool/integer -> f32 (torch.exp(int) is float)
  Compare,       ///< operands promoted to a common type; result bool
  SumInt,        ///< bool/integer -> i64, floats keep theirs (torch.sum)
  FromAttr,      ///< from an attribute (cast: `to`, constant: its value's dtype)
};

/// Which dtypes an op's data operands may have.
enum class Accepts : uint8_t {
  Any,      ///< every dtype
  Numeric,  ///< all but bool
  Float,    ///< f16, bf16, f32, f64
};

enum class OperandRole : uint8_t { Data, Bool, Index };

struct OperandSpec {
  std::string name;
  OperandRole role = OperandRole::Data;
  bool optional = false;
  bool variadic = false;
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required = false;
  AttrValue defaultValue;  ///< meaningful when !required
};

struct OpInfo;

/// What a shape rule sees: the op, its operands' types, its complete attributes.
struct InferArgs {
  const OpInfo &op;
  std::span<const TensorType> operands;
  const Attrs &attrs;
};
/// Why a node's type cannot be inferred: code "shape" or "dtype", and a message naming the
/// operands and the values involved.
struct InferError {
  std::string code;
  std::string message;
};
using InferResult = std::variant<TensorType, InferError>;
using InferFn = InferResult (*)(const InferArgs &);

/// Floating-point operations and bytes read + written by one execution.
struct OpCost {
  double flops = 0;
  double bytes = 0;
};
using CostFn = OpCost (*)(const InferArgs &args, const TensorType &result);

struct OpInfo {
  OpKind kind;
  std::string_view name;
  std::vector<OperandSpec> operands;
  int minOperands = 0;
  int maxOperands = 0;  ///< -1: variadic
  OpTrait traits;       ///< the row's trait column
  DTypeRule dtypeRule;
  Accepts accepts;
  InferFn infer;
  CostFn cost;
  std::vector<AttrSpec> attrs;

  /// Index of attribute `name` in `attrs`, or -1.
  int attrIndex(std::string_view name) const;
  /// The spec of operand `i` (the variadic spec repeats).
  const OperandSpec &operand(size_t i) const;
  /// True when the op has every trait of `t` (`op.is(OpTrait::GemmLike)`).
  bool is(OpTrait t) const { return hasAll(traits, t); }
};

const OpInfo &opInfo(OpKind k);
/// True when op `k` has every trait of `t`.
bool hasTrait(OpKind k, OpTrait t);
std::span<const OpInfo> allOps();
/// Looks an op up by its `.fy` name ("linear"); nullptr when there is none.
const OpInfo *findOp(std::string_view name);

bool acceptsDType(Accepts a, DType t);
/// "any dtype", "a non-bool dtype", "a floating dtype" — for error messages.
std::string_view acceptsDescription(Accepts a);

/// Checks user-written attributes against `op`'s schema and completes them with defaults:
/// unknown names, duplicates, missing required ones and wrong kinds are errors (at `loc`);
/// an int is widened where a float is expected.
Expected<Attrs> makeAttrs(const OpInfo &op, std::span<const NamedAttr> given, const Location &loc);

/// Flops and bytes of one execution of `op` with these operand and result types.
OpCost opCost(const OpInfo &op, std::span<const TensorType> operands, const Attrs &attrs,
              const TensorType &result);

/// The complete result type of `op` on `operands` (arity, accepted dtypes, operand roles and
/// the op's shape rule), or why not.
InferResult inferType(const OpInfo &op, std::span<const TensorType> operands, const Attrs &attrs);

/// True when operand `i` of `op` has a fixed kind that `t` is not: a `:bool` operand (where's
/// condition) that is not bool, an `:int` one (gather's indices) that is not i32 or i64.
bool wrongOperandKind(const OpInfo &op, size_t i, DType t);

/// The type inferType gives once every operand of the wrong kind (wrongOperandKind) has its
/// kind (bool; i64): what a node whose operands' kinds are its only mistake gives when that is
/// fixed, since those operands' dtypes never reach the result. nullopt when no operand is of the
/// wrong kind or inference fails even so.
std::optional<TensorType>
inferTypeWithKindsFixed(const OpInfo &op, std::span<const TensorType> operands, const Attrs &attrs);

/// The dtype `rule` gives for data operands whose first has dtype `first` and whose
/// `torch.result_type` (ResultType, with its zero-dim rule) is `common`. Not for FromAttr,
/// which callers handle.
DType ruleDType(DTypeRule rule, DType first, DType common);
/// The dtype `op`'s rule gives for `operands` (all of them; only data operands count, and at
/// least one must be present).
DType ruleDType(const OpInfo &op, std::span<const TensorType> operands);

// Typed attribute access by name; a missing name or wrong kind is a bug (FERRY_CHECK).
const AttrValue &attr(const OpInfo &op, const Attrs &attrs, std::string_view name);
int64_t attrInt(const OpInfo &op, const Attrs &attrs, std::string_view name);
double attrFloat(const OpInfo &op, const Attrs &attrs, std::string_view name);
bool attrBool(const OpInfo &op, const Attrs &attrs, std::string_view name);
const std::vector<int64_t> &attrInts(const OpInfo &op, const Attrs &attrs, std::string_view name);
const std::string &attrString(const OpInfo &op, const Attrs &attrs, std::string_view name);
DType attrDType(const OpInfo &op, const Attrs &attrs, std::string_view name);
Device attrDevice(const OpInfo &op, const Attrs &attrs, std::string_view name);
const TensorData &attrTensor(const OpInfo &op, const Attrs &attrs, std::string_view name);

}  // namespace ferry
