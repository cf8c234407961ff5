// ir/tensor_data.h — a tensor's bytes on the host: param weights, constants, interpreter values.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "ir/types.h"

namespace ferry {

/// Dense row-major host tensor with shared, immutable-by-convention storage (copies share bytes;
/// use clone() before writing to a tensor someone else may hold). Its bytes are 64-byte aligned
/// storage of its own, or a read-only view of bytes it does not own (a saved executable's mapped
/// file), kept alive by the view and its copies; writing to a view first copies it.
class TensorData {
 public:
  TensorData() : TensorData(DType::F32, {}) {}
  /// Zero-filled.
  TensorData(DType dtype, Shape shape);

  static TensorData zeros(DType dtype, Shape shape) { return TensorData(dtype, std::move(shape)); }
  /// `type`'s bytes in `storage`, shared, not copied: storage a caller's own allocator gives (a
  /// Session's output buffers, reused run after run). At least type.byteSize() bytes, 64-byte
  /// aligned; writable (not a view).
  static TensorData fromStorage(TensorType type, std::shared_ptr<std::byte> storage);
  /// Zero-filled, or, when the host cannot allocate it, an error (code "memory") that names
  /// `what` ("output 'y'"), the type and the bytes: for every tensor whose size a model or a file
  /// chose, so that running out of memory is an error and never an abort.
  static Expected<TensorData> allocate(DType dtype, Shape shape, std::string_view what);
  /// allocate()'s error for `type`, for a caller that catches std::bad_alloc itself (and so
  /// builds `what` only when it is needed: Session::run allocates nothing else per output).
  static Status outOfMemory(const TensorType &type, std::string_view what);
  /// randn(), allocated as allocate() is.
  static Expected<TensorData> allocateRandn(DType dtype, Shape shape, uint64_t seed,
                                            std::string_view what);
  static TensorData full(DType dtype, Shape shape, double value);
  /// Each value converted to `dtype` as `storeDouble` does; values.size() must equal numel.
  static TensorData fromDoubles(DType dtype, Shape shape, std::span<const double> values);
  /// Standard normal samples from ferry's own generator (splitmix64 + Box-Muller), so a given
  /// seed yields the same weights on every platform and compiler, forever.
  static TensorData randn(DType dtype, Shape shape, uint64_t seed);
  /// A read-only view of `bytes` (exactly type.byteSize() of them), which stay valid while
  /// `owner` lives: the view and its copies hold it. No byte is copied.
  static TensorData view(TensorType type, std::span<const std::byte> bytes,
                         std::shared_ptr<const void> owner);

  DType dtype() const { return type_.dtype; }
  const Shape &shape() const { return type_.shape; }
  const TensorType &type() const { return type_; }
  int64_t numel() const { return type_.numel(); }
  size_t byteSize() const { return size_; }

  std::span<const std::byte> bytes() const { return {data_.get(), size_}; }
  /// The bytes to write; a view is first copied into storage of its own.
  std::span<std::byte> mutableBytes() {
    if (view_) detach();
    return {data_.get(), size_};
  }
  /// Whether the bytes are a view of someone else's (view()).
  bool isView() const { return view_; }
  /// A deep copy with its own storage.
  TensorData clone() const;

  /// Element `i` (row-major) converted to double.
  double at(int64_t i) const;
  void set(int64_t i, double v);
  std::vector<double> toDoubles() const;
  /// Exact access to bool/integer elements (no trip through double). setInt requires `v` to be
  /// in the dtype's range (callers validate user values; FERRY_CHECK).
  int64_t atInt(int64_t i) const;
  void setInt(int64_t i, int64_t v);

  /// Same dtype, shape and bytes.
  bool operator==(const TensorData &other) const;
  /// Whether the two share one buffer (a copy of the other, not a clone).
  bool sharesBytesWith(const TensorData &other) const { return data_ == other.data_; }

 private:
  void detach();  // a view becomes a copy of its own
  TensorData(TensorType type, std::shared_ptr<std::byte> data, size_t size)
      : type_(std::move(type)), data_(std::move(data)), size_(size) {}

  TensorType type_;
  std::shared_ptr<std::byte> data_;  // the first byte; shares ownership with the storage or owner
  size_t size_ = 0;
  bool view_ = false;
};

/// Reads one element of dtype `t` at `p` as double.
double loadDouble(DType t, const std::byte *p);
/// Writes `v` as dtype `t` at `p`. Floats round to nearest even (f16/bf16 via Eigen). Integers
/// truncate toward zero into int64 (saturating there; NaN becomes 0) and then wrap to the
/// type's width as storeIntWrapping (-1.0 to u8 is 255, as NumPy and PyTorch on x86). bool is
/// `v != 0`.
void storeDouble(DType t, std::byte *p, double v);
/// Reads one element of a bool or integer dtype `t` at `p`, exactly.
int64_t loadInt(DType t, const std::byte *p);
/// Writes `v` as bool or integer dtype `t` at `p`, wrapping modulo 2^bits as C++20, NumPy and
/// PyTorch do for integer-to-integer conversion and integer arithmetic (bool: v != 0).
void storeIntWrapping(DType t, std::byte *p, int64_t v);

/// The one conversion rule of `cast` (kernels, the reference interpreter, compile-time folds):
/// bool/integer to integer wraps exactly through int64; to bool is `v != 0`; float to integer
/// truncates into int64 and wraps, as storeDouble; to a float rounds to nearest even.
void convertElement(DType from, const std::byte *in, DType to, std::byte *out);
/// `n` elements at `in` (dtype `from`) converted into `out` (dtype `to`), each as
/// convertElement does (float to float in blocks, the dtype switches out of the loop).
void convertElements(DType from, const std::byte *in, DType to, std::byte *out, size_t n);
/// `x` converted as convertElements does.
TensorData castTensor(const TensorData &x, DType to);

}  // namespace ferry
