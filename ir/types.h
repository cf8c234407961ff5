// ir/types.h — shapes and tensor types (dtype + static shape).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace ferry {

/// Static dimensions, outermost first; a scalar has rank 0. Dims are >= 0 (0 is a valid size).
using Shape = std::vector<int64_t>;

/// The most dims a tensor type may have: the parser, the shape rules and the saved executable
/// (docs/artifact.md) share it.
inline constexpr size_t kMaxRank = 64;

/// Why a tensor of `dtype` and `shape` is not one ferry holds, or "" when it is: a negative dim,
/// more than kMaxRank dims, or dims whose product, zero dims counted as 1, times the element
/// size is 2^63 bytes or more. An empty tensor needs no bytes, but its dims still size strides,
/// loops and byte counts, so a zero dim does not excuse an absurd one. Every type the compiler
/// gives meets this, and the loader refuses a file whose types do not: what compiles, loads.
/// The text continues a sentence about the type: "has 65 dims, at most 64".
std::string typeLimitError(DType dtype, std::span<const int64_t> shape);

/// Number of elements (1 for a scalar).
int64_t numel(std::span<const int64_t> shape);
/// "[32,784]"; "[]" for a scalar.
std::string shapeStr(std::span<const int64_t> shape);
/// NumPy/ONNX broadcasting of two shapes; nullopt when a pair of dims is neither equal nor 1.
std::optional<Shape> broadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b);
/// Row-major strides in elements.
std::vector<int64_t> contiguousStrides(std::span<const int64_t> shape);
/// Normalises a possibly negative axis for a tensor of `rank`; nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  int64_t numel() const { return ferry::numel(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  size_t byteSize() const { return static_cast<size_t>(numel()) * dtypeSize(dtype); }
  /// "f32[32,784]"
  std::string str() const;
  bool operator==(const TensorType &) const = default;
};

}  // namespace ferry
