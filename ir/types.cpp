// ir/types.cpp — shape helpers and broadcasting.
#include "ir/types.h"

#include <algorithm>
#include <limits>

namespace ferry {

std::string typeLimitError(DType dtype, std::span<const int64_t> shape) {
  if (shape.size() > kMaxRank)
    return "has " + std::to_string(shape.size()) + " dims, at most " + std::to_string(kMaxRank);
  // The loader checks the same product dim by dim (runtime/artifact.cpp, Reader::type).
  int64_t bytes = static_cast<int64_t>(dtypeSize(dtype));
  for (int64_t d : shape) {
    if (d < 0) return "has a negative dim";
    if (d == 0) continue;
    if (bytes > std::numeric_limits<int64_t>::max() / d)
      return "takes 2^63 bytes or more (zero dims counted as 1)";
    bytes *= d;
  }
  return {};
}

int64_t numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shapeStr(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<Shape> broadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> contiguousStrides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeStr(shape); }

}  // namespace ferry
