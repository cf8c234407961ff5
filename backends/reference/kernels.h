// backends/reference/kernels.h — internal: the reference kernels by op family and their helpers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ops.h"
#include "ir/status.h"
#include "ir/tensor_data.h"
#include "ir/types.h"

namespace ferry::reference {

/// Everything a kernel sees: the op, its operands, its complete attributes, the node's result
/// type (dtype and shape the kernel must produce) and the location errors are reported at.
struct KernelArgs {
  const OpInfo &op;
  std::span<const TensorData> operands;
  const Attrs &attrs;
  const TensorType &result;
  const Location &loc;

  const TensorData &in(size_t i) const { return operands[i]; }
  bool has(size_t i) const { return i < operands.size(); }
  int64_t intAttr(std::string_view name) const { return attrInt(op, attrs, name); }
  double floatAttr(std::string_view name) const { return attrFloat(op, attrs, name); }
  bool boolAttr(std::string_view name) const { return attrBool(op, attrs, name); }
  const std::vector<int64_t> &intsAttr(std::string_view name) const {
    return attrInts(op, attrs, name);
  }
  /// An error of `code` ("runtime", "attr") at the node's location.
  Status error(std::string code, std::string message) const {
    return makeError(std::move(code), std::move(message), loc);
  }
};

// --- helpers (interpreter.cpp) ------------------------------------------------------------

/// Element `i` of `t` (bounds-checked: the oracle must never read past a buffer).
inline const std::byte *elemPtr(const TensorData &t, int64_t i) {
  FERRY_CHECK(i >= 0 && i < t.numel()) << "element " << i << " of " << t.type().str();
  return t.bytes().data() + i * static_cast<int64_t>(dtypeSize(t.dtype()));
}
inline std::byte *elemPtr(TensorData &t, int64_t i) {
  FERRY_CHECK(i >= 0 && i < t.numel()) << "element " << i << " of " << t.type().str();
  return t.mutableBytes().data() + i * static_cast<int64_t>(dtypeSize(t.dtype()));
}
/// Copies element `src` of `from` to element `dst` of `to` (same dtype): exact for every dtype.
void copyElem(const TensorData &from, int64_t src, TensorData &to, int64_t dst);
/// Element `src` of `from` into element `dst` of `to`, converted as `cast` does (convertElement).
void convertElem(const TensorData &from, int64_t src, TensorData &to, int64_t dst);
inline bool isIntegral(DType t) { return !isFloating(t); }  // bool and integers

/// One result element's running sum, the way torch and ferry's CPU kernels compute it: exactly
/// in 64 bits, wrapping modulo 2^64, when the result and every term are bool/integers (a double
/// would round past 2^53 and saturate); otherwise in double, rounded once when stored.
class Accumulator {
 public:
  explicit Accumulator(bool exact) : exact_(exact) {}
  void add(const TensorData &t, int64_t i) {
    if (exact_)
      bits_ += static_cast<uint64_t>(t.atInt(i));
    else
      value_ += t.at(i);
  }
  void addProduct(const TensorData &x, int64_t i, const TensorData &y, int64_t j) {
    if (exact_)
      bits_ += static_cast<uint64_t>(x.atInt(i)) * static_cast<uint64_t>(y.atInt(j));
    else
      value_ += x.at(i) * y.at(j);
  }
  /// The sum as a double (the exact one converted).
  double value() const {
    return exact_ ? static_cast<double>(static_cast<int64_t>(bits_)) : value_;
  }
  /// Stores the sum into element `o` of `out`, as every conversion to its dtype stores.
  void storeTo(TensorData &out, int64_t o) const {
    if (!exact_) return out.set(o, value_);
    const auto v = static_cast<int64_t>(bits_);
    convertElement(DType::I64, reinterpret_cast<const std::byte *>(&v), out.dtype(),
                   elemPtr(out, o));
  }

 private:
  bool exact_;
  uint64_t bits_ = 0;
  double value_ = 0;
};
/// Whether sums into `result` from `terms` are exact (Accumulator): all bool/integers.
inline bool exactSums(DType result, std::initializer_list<DType> terms) {
  bool exact = isIntegral(result);
  for (DType t : terms) exact = exact && isIntegral(t);
  return exact;
}

/// Row-major multi-index of linear index `i` in `shape`, and back.
std::vector<int64_t> unravel(int64_t i, std::span<const int64_t> shape);
int64_t ravel(std::span<const int64_t> index, std::span<const int64_t> shape);

/// Maps a linear index into a broadcast output shape to the linear index of the element of an
/// operand of shape `in` (NumPy rules: right-aligned, dims of 1 repeat) that it reads.
class BroadcastIndex {
 public:
  BroadcastIndex(std::span<const int64_t> out, std::span<const int64_t> in);
  int64_t operator()(int64_t outIndex) const;

 private:
  Shape out_;
  std::vector<int64_t> strides_;  // per output dim; 0 where the operand broadcasts
};

/// Division rounding toward -inf / +inf (b > 0), for output sizes whose numerator may be < 0.
inline int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

/// A 2-int attribute (kernel, stride, dilation) as {h, w}, each >= `min`; an "attr" error
/// otherwise.
Expected<std::array<int64_t, 2>> pairAttr(const KernelArgs &a, std::string_view name, int64_t min);
/// `padding` as {top, left, bottom, right} from [h, w] or [top, left, bottom, right], each >= 0.
Expected<std::array<int64_t, 4>> padAttr(const KernelArgs &a);

/// FERRY_CHECKs that a kernel's own shape computation agrees with the node's inferred type.
void checkShape(const KernelArgs &a, std::span<const int64_t> computed);

// --- kernels ------------------------------------------------------------------------------

// elementwise.cpp
Expected<TensorData> evalUnary(const KernelArgs &a);
Expected<TensorData> evalBinary(const KernelArgs &a);
Expected<TensorData> evalWhere(const KernelArgs &a);

// linalg.cpp
Expected<TensorData> evalMatmul(const KernelArgs &a);
Expected<TensorData> evalLinear(const KernelArgs &a);
Expected<TensorData> evalConv2d(const KernelArgs &a);

// pool.cpp
Expected<TensorData> evalMaxPool2d(const KernelArgs &a);
Expected<TensorData> evalAvgPool2d(const KernelArgs &a);
Expected<TensorData> evalGlobalAvgPool(const KernelArgs &a);

// normalize.cpp
Expected<TensorData> evalBatchNorm(const KernelArgs &a);
Expected<TensorData> evalLayerNorm(const KernelArgs &a);
Expected<TensorData> evalSoftmax(const KernelArgs &a);  // softmax and log_softmax
Expected<TensorData> evalReduce(const KernelArgs &a);   // sum, mean, max

// movement.cpp
Expected<TensorData> evalCopy(const KernelArgs &a);  // same bytes, the result's shape
Expected<TensorData> evalTranspose(const KernelArgs &a);
Expected<TensorData> evalConcat(const KernelArgs &a);
Expected<TensorData> evalSlice(const KernelArgs &a);
Expected<TensorData> evalGather(const KernelArgs &a);
Expected<TensorData> evalExpand(const KernelArgs &a);
Expected<TensorData> evalCast(const KernelArgs &a);
Expected<TensorData> evalConstant(const KernelArgs &a);

}  // namespace ferry::reference
