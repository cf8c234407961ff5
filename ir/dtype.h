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

}  // namespace ferry
