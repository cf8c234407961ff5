// backends/cpu/cpu_backend.h — the CPU backend: host memory split into virtual devices
// cpu:0 .. cpu:N-1, each with its own arena, and the CPU kernels.
//
// Virtual devices let a graph placed on several devices run, transfers and all, on one host:
// a transfer between cpu:0 and cpu:1 is a real copy between two arenas. With the ownership
// check on (the default in debug builds and in tests), every kernel first checks that each
// operand's bytes lie in an allocation of its node's device, so a missing transfer is an
// error, never a silent read across devices; copies, uploads and downloads check their side(s)
// too. Every copy between two devices (copy() and upload(); run() refuses a `transfer`) is
// counted in the caller's Traffic.
//
// Kernels: every op of the table in every dtype it accepts (backends/cpu/kernels.h lists the
// families); f16/bf16 compute in f32, GEMMs go through OpenBLAS, the rest is vectorised loops
// split over the thread pool (backends/cpu/parallel.h). supports() is false only for pairs a
// compiled graph never asks for (a float-producing op computing in an integer dtype).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.h"

namespace ferry {

class CpuBackend final : public Backend {
 public:
  struct Options {
    /// Virtual devices cpu:0 .. cpu:(devices-1); at least 1.
    int devices = 1;
    /// Check operand ownership before every kernel (see the file comment).
#ifdef NDEBUG
    bool checkOwnership = false;
#else
    bool checkOwnership = true;
#endif
  };

  CpuBackend() : CpuBackend(Options{}) {}
  explicit CpuBackend(Options options);
  ~CpuBackend() override;

  std::span<const Device> devices() const override { return devices_; }
  Expected<std::byte *> allocate(Device device, size_t bytes) override;
  void release(Device device, std::byte *data) override;
  bool owns(Device device, const std::byte *data, size_t bytes) const override;
  Status copy(const TensorView &from, const TensorView &to, Traffic *traffic) override;
  Status upload(std::span<const std::byte> from, Device source, const TensorView &to,
                Traffic *traffic) override;
  Status download(const TensorView &from, std::span<std::byte> to) override;
  KernelCapability capability(OpKind op, DType dtype) const override;
  Status run(const KernelCall &call) override;

  /// Bytes currently allocated on `device`.
  size_t bytesInUse(Device device) const;

 private:
  // One device's memory: its live allocations by start address.
  struct Arena {
    mutable std::mutex mutex;
    std::map<const std::byte *, size_t> blocks;
    size_t inUse = 0;
  };
  Arena &arena(Device device) const;
  Status checkOwnership(const KernelCall &call) const;

  Options options_;
  std::vector<Device> devices_;
  std::vector<std::unique_ptr<Arena>> arenas_;
};

}  // namespace ferry
