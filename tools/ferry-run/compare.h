// tools/ferry-run/compare.h — an output against the expected tensor, as the ONNX backend test
// runner compares them (numpy.testing.assert_allclose): floats within atol + rtol * |expected|,
// NaN where NaN is expected, integers and bools exactly; the dtypes and shapes must be equal.
#pragma once

#include <cstdint>
#include <string>

#include "ir/tensor_data.h"

namespace ferry {

/// The ONNX backend test runner's defaults (onnx/backend/test/loader: rtol 1e-3, atol 1e-7).
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

/// What comparing two tensors found.
struct Comparison {
  /// Why they cannot be compared element by element ("expected f32[2,3], got f32[3,2]"), or "".
  std::string typeMismatch;
  double maxAbs = 0;   ///< the largest |got - expected| (NaN pairs left out)
  double maxRel = 0;   ///< the largest |got - expected| / |expected|; inf where 0 was expected
  int64_t beyond = 0;  ///< elements outside the tolerance (integers: that differ)
  int64_t firstBeyond = -1;  ///< the flat index of the first of them, -1 when none

  bool pass() const { return typeMismatch.empty() && beyond == 0; }
};

/// Compares `got` with `expected`. A float pair passes when both are NaN, both the same
/// infinity, or |got - expected| <= tol.atol + tol.rtol * |expected| (numpy's isclose, with
/// NaNs equal); an integer or bool pair when it is equal.
Comparison compareTensors(const TensorData &got, const TensorData &expected, Tolerance tol);

/// One line about `c`, without the output's name: "max abs error 1.19e-07, max rel error
/// 2.38e-07: pass", "... : FAIL, 3 of 6 elements beyond atol + rtol*|expected| (first at [0,1]:
/// got 1.5, expected 1)", "FAIL: expected f32[2,3], got f32[3,2]".
std::string describeComparison(const Comparison &c, const TensorData &got,
                               const TensorData &expected);

}  // namespace ferry
