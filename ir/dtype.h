// ir/dtype.h — element types: names, sizes, categories and PyTorch's promotion lattice.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ferry {

/// X(enumerator, name, bytes, category) — the one list every dtype table is generated from.
#define FERRY_DTYPES(X)                                                                            \
  X(Bool, "bool", 1, Bool)                                                                         \
  X(U8, "u8", 1, Integer)                                                                          \
  X(I8, "i8", 1, Integer)                                                                          \
  X(I32, "i32", 4, Integer)                                                                        \
  X(I64, "i64", 8, Integer)                                                                        \
  X(F16, "f16", 2, Floating)                                                                       \
  X(BF16, "bf16", 2, Floating)                                                                     \
  X(F32, "f32", 4, Floating)                                                                       \
  X(F64, "f64", 8, Floating)

enum class DType : uint8_t {
#define FERRY_X(e, name, bytes, cat) e,
  FERRY_DTYPES(FERRY_X)
#undef FERRY_X
};

inline constexpr std::array kAllDTypes = {
#define FERRY_X(e, name, bytes, cat) DType::e,
    FERRY_DTYPES(FERRY_X)
#undef FERRY_X
};

/// PyTorch's type categories, ordered: bool < integer < floating.
enum class DTypeCategory : uint8_t { Bool, Integer, Floating };

std::string_view dtypeName(DType t);
size_t dtypeSize(DType t);
DTypeCategory dtypeCategory(DType t);
inline bool isFloating(DType t) { return dtypeCategory(t) == DTypeCategory::Floating; }
inline bool isInteger(DType t) { return dtypeCategory(t) == DTypeCategory::Integer; }

/// "f32" -> F32; nullopt for anything else (callers report the error with their location).
std::optional<DType> parseDType(std::string_view s);
/// "bool, u8, i8, i32, i64, f16, bf16, f32, f64" — for error messages.
std::string_view dtypeNameList();

/// `torch.promote_types(a, b)` restricted to ferry's dtypes: the smallest type that holds both
/// by category (bool < integer < floating). f16 + bf16 -> f32. Where PyTorch answers with a
/// dtype ferry lacks (u8 + i8 -> i16) the next wider one of ours is used (i32).
DType promoteTypes(DType a, DType b);

/// The dtype a Python scalar of category `kind` stands for in type promotion (PyTorch's "wrapped
/// numbers"): a float is the default float dtype f32, an int i64, a bool bool.
DType wrappedDType(DTypeCategory kind);

/// `torch.result_type`, fed one operand at a time as PyTorch's ResultTypeState is. Operands come
/// in three tiers, each promoted within itself (promoteTypes): dimensioned tensors (rank > 0),
/// zero-dim tensors (rank 0) and wrapped numbers (scalar literals, `add(%x, 1.0)`: see
/// ir/literal.h). A lower tier takes part only when its category (bool < integer < floating) is
/// higher than the result of the tiers above it, and then the result is the promotion of both
/// (c10's combine_categories): f16[4] + f64[] -> f16, u8[4] + i64[] -> u8, i32[4] + f64[] -> f64,
/// bool[4] + i8[] -> i8; f16[4] + 1.0 -> f16, i32[4] + 2 -> i32, i32[4] + 1.0 -> f32 (the
/// default float), bool[4] + 2 -> i64, f16[] + 1.0 -> f16. With one tier only, it decides alone.
class ResultType {
 public:
  void add(DType t, bool zeroDim);
  /// A scalar literal of category `kind` (as its wrappedDType).
  void addWrapped(DTypeCategory kind);
  bool empty() const { return !dim_ && !zero_ && !wrapped_; }
  /// The result dtype; at least one operand must have been added.
  DType get() const;

 private:
  std::optional<DType> dim_, zero_, wrapped_;
};

}  // namespace ferry
