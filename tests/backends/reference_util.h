// tests/backends/reference_util.h — table-driven cases for the reference interpreter's tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "ir/ops.h"

namespace ferry::reftest {

inline TensorData tensor(DType t, Shape shape, std::vector<double> values) {
  return TensorData::fromDoubles(t, std::move(shape), values);
}
inline TensorData f32(Shape shape, std::vector<double> values) {
  return tensor(DType::F32, std::move(shape), std::move(values));
}
/// Bool/integer tensors set exactly (values beyond 2^53 survive).
inline TensorData ints(DType t, Shape shape, std::vector<int64_t> values) {
  TensorData d(t, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), d.numel());
  for (int64_t i = 0; i < d.numel(); ++i) d.setInt(i, values[i]);
  return d;
}
inline TensorData bools(Shape shape, std::vector<int64_t> values) {
  return ints(DType::Bool, std::move(shape), std::move(values));
}

// Attributes as a test writes them.
inline NamedAttr attrI(std::string n, int64_t v) { return {std::move(n), v}; }
inline NamedAttr attrIs(std::string n, std::vector<int64_t> v) {
  return {std::move(n), std::move(v)};
}
inline NamedAttr attrF(std::string n, double v) { return {std::move(n), v}; }
inline NamedAttr attrB(std::string n, bool v) { return {std::move(n), v}; }
inline NamedAttr attrS(std::string n, std::string v) { return {std::move(n), std::move(v)}; }

inline const OpInfo &op(std::string_view name) {
  const OpInfo *o = findOp(name);
  FERRY_CHECK(o) << "no op " << name;
  return *o;
}

inline Attrs completeAttrs(const OpInfo &info, const std::vector<NamedAttr> &given) {
  Expected<Attrs> a = makeAttrs(info, given, {});
  FERRY_CHECK(a.ok()) << a.status().message();
  return *a;
}

/// evalOp by op name, with `attrs` completed with defaults.
inline Expected<TensorData> eval(std::string_view name, const std::vector<TensorData> &operands,
                                 const std::vector<NamedAttr> &attrs, const TensorType &result) {
  const OpInfo &info = op(name);
  return reference::evalOp(info, operands, completeAttrs(info, attrs), result,
                           Location{"test.fy", 7, 3});
}

/// Same type; bool/integers exactly; floats within `tol` (absolute and relative), NaN == NaN,
/// infinities and signs exactly.
inline ::testing::AssertionResult sameTensor(const TensorData &got, const TensorData &want,
                                             double tol) {
  if (got.type() != want.type())
    return ::testing::AssertionFailure()
           << "type " << got.type().str() << ", want " << want.type().str();
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (!isFloating(got.dtype())) {
      if (got.atInt(i) != want.atInt(i))
        return ::testing::AssertionFailure()
               << "element " << i << " is " << got.atInt(i) << ", want " << want.atInt(i);
      continue;
    }
    double g = got.at(i), w = want.at(i);
    bool ok = std::isnan(w)               ? std::isnan(g)
              : std::isinf(w) || tol == 0 ? g == w && std::signbit(g) == std::signbit(w)
                                          : std::fabs(g - w) <= tol * (1 + std::fabs(w));
    if (!ok)
      return ::testing::AssertionFailure() << "element " << i << " is " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

/// One evalOp call and its hand-computed result (whose type is passed as the result type).
struct Case {
  std::string name;
  std::string op;
  std::vector<TensorData> operands;
  std::vector<NamedAttr> attrs;
  TensorData want;
  double tol = 0;
  /// Also check that inferType agrees with want's type (off for inputs the shape rules reject
  /// on purpose, to exercise evalOp on its own).
  bool checkInfer = true;
};

inline void runCases(const std::vector<Case> &cases) {
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name + " (" + c.op + ")");
    if (c.checkInfer) {
      std::vector<TensorType> types;
      for (const TensorData &t : c.operands) types.push_back(t.type());
      InferResult r = inferType(op(c.op), types, completeAttrs(op(c.op), c.attrs));
      // evalOp FERRY_CHECKs its result type: a disagreement would abort the whole binary.
      if (const auto *e = std::get_if<InferError>(&r)) {
        ADD_FAILURE() << "inferType: " << e->message;
        continue;
      }
      if (std::get<TensorType>(r) != c.want.type()) {
        ADD_FAILURE() << "inferType disagrees: " << std::get<TensorType>(r).str() << ", want "
                      << c.want.type().str();
        continue;
      }
    }
    Expected<TensorData> got = eval(c.op, c.operands, c.attrs, c.want.type());
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(sameTensor(*got, c.want, c.tol));
  }
}

inline std::vector<int64_t> iota(int64_t n, int64_t from = 0) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(from + i);
  return v;
}
inline std::vector<double> iotaD(int64_t n, double from = 0) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(from + static_cast<double>(i));
  return v;
}

}  // namespace ferry::reftest
