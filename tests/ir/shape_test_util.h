// tests/ir/shape_test_util.h — what the shape-rule and op-table tests share: type and attribute
// makers, infer() through makeAttrs, and assertions on an InferResult.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <limits>
#include <string>
#include <vector>

#include "ir/ops.h"

namespace ferry::testing_shapes {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

inline TensorType T(DType d, Shape s) { return TensorType{d, std::move(s)}; }

// Attribute makers, one per kind (overloads on int/bool/string literals would be ambiguous).
inline NamedAttr I(std::string n, int64_t v) { return {std::move(n), v}; }
inline NamedAttr L(std::string n, std::vector<int64_t> v) { return {std::move(n), std::move(v)}; }
inline NamedAttr B(std::string n, bool v) { return {std::move(n), v}; }
inline NamedAttr S(std::string n, std::string v) { return {std::move(n), std::move(v)}; }

inline InferResult infer(OpKind k, std::vector<TensorType> operands,
                         std::vector<NamedAttr> given = {}) {
  const OpInfo &op = opInfo(k);
  Expected<Attrs> attrs = makeAttrs(op, given, Location{});
  if (!attrs.ok()) return InferError{"test", "makeAttrs failed: " + attrs.status().message()};
  return inferType(op, operands, *attrs);
}

inline testing::AssertionResult isType(const InferResult &r, const TensorType &want) {
  if (const auto *e = std::get_if<InferError>(&r))
    return testing::AssertionFailure()
           << "expected " << want.str() << ", got error [" << e->code << "] " << e->message;
  const TensorType &got = std::get<TensorType>(r);
  if (got != want)
    return testing::AssertionFailure() << "expected " << want.str() << ", got " << got.str();
  return testing::AssertionSuccess();
}

inline testing::AssertionResult isError(const InferResult &r, const std::string &code,
                                        const std::vector<std::string> &parts) {
  if (const auto *t = std::get_if<TensorType>(&r))
    return testing::AssertionFailure() << "expected a '" << code << "' error, got " << t->str();
  const InferError &e = std::get<InferError>(r);
  if (e.code != code)
    return testing::AssertionFailure()
           << "expected code '" << code << "', got '" << e.code << "': " << e.message;
  for (const std::string &p : parts)
    if (e.message.find(p) == std::string::npos)
      return testing::AssertionFailure() << "message lacks \"" << p << "\": " << e.message;
  if (e.message.empty() || std::isupper(static_cast<unsigned char>(e.message[0])) ||
      e.message.back() == '.')
    return testing::AssertionFailure()
           << "message style (lower-case start, no period): " << e.message;
  return testing::AssertionSuccess();
}

}  // namespace ferry::testing_shapes
