// ir/dtype.cpp — dtype names, sizes, categories and promotion.
#include "ir/dtype.h"

#include "ir/status.h"

namespace ferry {

namespace {
struct DTypeRow {
  std::string_view name;
  size_t bytes;
  DTypeCategory category;
};
constexpr DTypeRow kRows[] = {
#define FERRY_X(e, name, bytes, cat) {name, bytes, DTypeCategory::cat},
    FERRY_DTYPES(FERRY_X)
#undef FERRY_X
};
const DTypeRow &row(DType t) { return kRows[static_cast<size_t>(t)]; }
}  // namespace

std::string_view dtypeName(DType t) { return row(t).name; }
size_t dtypeSize(DType t) { return row(t).bytes; }
DTypeCategory dtypeCategory(DType t) { return row(t).category; }

std::optional<DType> parseDType(std::string_view s) {
  for (DType t : kAllDTypes)
    if (dtypeName(t) == s) return t;
  return std::nullopt;
}

std::string_view dtypeNameList() { return "bool, u8, i8, i32, i64, f16, bf16, f32, f64"; }

DType promoteTypes(DType a, DType b) {
  if (a == b) return a;
  DTypeCategory ca = dtypeCategory(a), cb = dtypeCategory(b);
  if (ca != cb) return ca > cb ? a : b;  // the higher category wins whole: i64 + f16 -> f16
  if (ca == DTypeCategory::Floating) {
    // f16 and bf16 are incomparable; both fit in f32.
    if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16))
      return DType::F32;
    return dtypeSize(a) >= dtypeSize(b) ? a : b;
  }
  // Integers: u8 with a signed type needs a signed type wider than 8 bits.
  if (a == DType::U8 || b == DType::U8) {
    DType other = a == DType::U8 ? b : a;
    return other == DType::I8 ? DType::I32 : other;
  }
  return dtypeSize(a) >= dtypeSize(b) ? a : b;
}

DType wrappedDType(DTypeCategory kind) {
  switch (kind) {
    case DTypeCategory::Bool: return DType::Bool;
    case DTypeCategory::Integer: return DType::I64;
    case DTypeCategory::Floating: break;
  }
  return DType::F32;
}

void ResultType::add(DType t, bool zeroDim) {
  std::optional<DType> &slot = zeroDim ? zero_ : dim_;
  slot = slot ? promoteTypes(*slot, t) : t;
}

void ResultType::addWrapped(DTypeCategory kind) {
  DType t = wrappedDType(kind);
  wrapped_ = wrapped_ ? promoteTypes(*wrapped_, t) : t;
}

namespace {
// c10's combine_categories for ferry's dtypes (no complex): a lower tier's result is promoted in
// when its category is higher than the higher tier's; a lower or equal one (a floating higher
// result, or integer over integer/bool) is not.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower || dtypeCategory(*lower) <= dtypeCategory(*higher)) return higher;
  return promoteTypes(*higher, *lower);
}
}  // namespace

DType ResultType::get() const {
  FERRY_CHECK(!empty()) << "result type of no operands";
  return *combine(dim_, combine(zero_, wrapped_));
}

}  // namespace ferry
