// backends/backend.h — what a device backend gives the runtime: memory on its devices, copies
// between its devices and to and from the host, the (op, dtype) pairs it has kernels for, and
// running one node's kernel.
//
// The runtime owns the plan (which buffer each value lives in, in which order nodes run); a
// backend only executes what it is told, on memory it allocated. Passes never see a backend:
// they read its capabilities through CompileOptions::capabilities. Adding a backend (CUDA) is a
// new subclass and one entry in the runtime's registry (runtime/backend_registry.cpp).
//
// Every byte that crosses devices goes through copy() or upload(), which count it in the run's
// Traffic: the runtime checks that count against its plan (runtime/session.h).
//
// Tensors handed to a backend are dense and row-major (strides follow from the shape); a
// TensorView does not own its bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "ir/device.h"
#include "ir/dtype.h"
#include "ir/ops.h"
#include "ir/status.h"
#include "ir/types.h"

namespace ferry {

/// A dense tensor in some device's memory, as a kernel sees it. `type` outlives the call.
struct TensorView {
  std::byte *data = nullptr;
  const TensorType *type = nullptr;
  Device device;

  size_t bytes() const { return type->byteSize(); }
};

/// One entry of a backend's capability table.
struct KernelCapability {
  bool supported = false;
  /// The kernel's time over the cost model's estimate for its device kind, relative to the
  /// backend's best-served dtype: `auto` placement multiplies its compute estimate by it. An
  /// f16 GEMM that converts around an f32 one is 1.5; an integer GEMM without BLAS, 40.
  double costFactor = 1;
};

/// What crossed devices during one run, as the backends' copy slots counted it: every copy
/// whose source and destination devices differ adds one copy and its bytes.
struct Traffic {
  int copies = 0;
  int64_t bytes = 0;
};

/// One node's kernel invocation: its op and attributes, operands and the result to write, all
/// on the node's device (a transfer's operand is on the device it copies from).
struct KernelCall {
  const OpInfo &op;
  const Attrs &attrs;
  std::span<const TensorView> operands;
  TensorView result;
  const Location &loc;  ///< the node's source location, for errors
};

class Backend {
 public:
  virtual ~Backend() = default;

  /// The devices this backend drives.
  virtual std::span<const Device> devices() const = 0;

  /// `bytes` of memory on `device`, 64-byte aligned; an error when the device has no room.
  /// Zero bytes give a valid, distinct pointer.
  virtual Expected<std::byte *> allocate(Device device, size_t bytes) = 0;
  /// Returns memory from allocate(); anything else is a bug and fails loudly.
  virtual void release(Device device, std::byte *data) = 0;
  /// Whether [data, data + bytes) lies in one live allocation on `device`.
  virtual bool owns(Device device, const std::byte *data, size_t bytes) const = 0;

  // The three copies. A broken call (sizes that differ, memory that is not the named device's)
  // is an error with code "internal".

  /// Copies `from` into `to`: same dtype and element count, both in allocations of devices of
  /// this backend. A copy between two devices is added to `traffic` (when not null).
  virtual Status copy(const TensorView &from, const TensorView &to, Traffic *traffic) = 0;
  /// Copies host memory (an app's buffer of exactly to.bytes()) into `to`, an allocation of this
  /// backend. `source` is the device the bytes stand for: the host, `cpu`, for an app's buffer,
  /// or a runtime Tensor's device label; when it is not `to.device`, the upload is a copy
  /// between devices and is added to `traffic` (when not null).
  virtual Status upload(std::span<const std::byte> from, Device source, const TensorView &to,
                        Traffic *traffic) = 0;
  /// Copies `from`, an allocation of this backend, into host memory of exactly from.bytes().
  virtual Status download(const TensorView &from, std::span<std::byte> to) = 0;

  /// The capability table: whether this backend has a kernel for `op` computing in `dtype` (the
  /// result's dtype; for comparisons the operands'), and its cost factor. Placement reads it
  /// through CompileOptions::capabilities (runtime/executable.h, backendCapabilities()).
  virtual KernelCapability capability(OpKind op, DType dtype) const = 0;
  bool supports(OpKind op, DType dtype) const { return capability(op, dtype).supported; }

  /// Runs one node on one device. Errors that only data can reveal (an index out of range) come
  /// back as a Status with code "runtime" at the node's location; a broken call (operands in
  /// another device's memory, wrong dtypes) is code "internal". Never a `transfer`: bytes cross
  /// devices through copy(), upload() and download() alone, where they are counted.
  virtual Status run(const KernelCall &call) = 0;
};

}  // namespace ferry
