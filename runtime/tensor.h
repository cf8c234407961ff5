// runtime/tensor.h — a tensor an app hands to or gets from a Session: shape, dtype, the device
// its bytes are on, and shared storage.
//
// A Tensor's bytes are a TensorData's shared host buffer labelled with the device they belong
// to, for every device (cpu, the virtual cpu:N, and cuda:N, whose Session uploads an input from
// them and downloads an output into them: a Tensor does not hold GPU memory yet). Copies of a
// Tensor share bytes (like TensorData); clone() copies them. The label is what the strict input
// check reads: an input declared on cpu:1 refuses a tensor labelled cpu.
#pragma once

#include <string>

#include "ir/device.h"
#include "ir/status.h"
#include "ir/tensor_data.h"

namespace ferry {

class Tensor {
 public:
  /// An f32 scalar 0 on the host.
  Tensor() = default;
  /// `data`'s bytes (shared, not copied) on the host (`cpu`). Use to() for another device.
  Tensor(TensorData data) : data_(std::move(data)) {}

  /// Zero-filled, on the host.
  static Tensor zeros(DType dtype, Shape shape) {
    return Tensor(TensorData(dtype, std::move(shape)));
  }
  /// Reads a NumPy .npy file (ir/npy.h) onto the host.
  static Expected<Tensor> fromNpy(const std::string &path);
  Status writeNpy(const std::string &path) const;

  DType dtype() const { return data_.dtype(); }
  const Shape &shape() const { return data_.shape(); }
  const TensorType &type() const { return data_.type(); }
  Device device() const { return device_; }
  int64_t numel() const { return data_.numel(); }
  size_t byteSize() const { return data_.byteSize(); }

  /// The bytes, shared with every copy of this Tensor.
  const TensorData &data() const { return data_; }
  TensorData &data() { return data_; }
  std::span<const std::byte> bytes() const { return data_.bytes(); }

  /// A copy of the bytes labelled `device` (or this Tensor itself when it is there already): an
  /// error for a device kind this build has no backend for (cuda:N without the CUDA toolkit).
  Expected<Tensor> to(Device device) const;
  /// A copy of the bytes on the same device.
  Tensor clone() const;
  bool sharesStorageWith(const Tensor &other) const;

  /// "f32[2,3] @cpu"
  std::string str() const;

 private:
  Tensor(TensorData data, Device device) : data_(std::move(data)), device_(device) {}
  friend class Session;  // labels its outputs with their devices

  TensorData data_;
  Device device_ = Device::cpu();
};

}  // namespace ferry
