// backends/cpu/cpu_device.h — the CPU device runtime: host memory split into virtual devices
// cpu:0 .. cpu:N-1, each with its own arena, and the CPU kernels prepared once per step.
//
// Virtual devices let a graph placed on several devices run, transfers and all, on one host:
// a transfer between cpu:0 and cpu:1 is a real copy between two arenas, straight from one to
// the other. With the ownership check on (tests, debug builds), every copy checks that its
// source and destination lie in allocations of the devices it names, and a checked Session
// checks every step's operands once per workspace (DeviceRuntime::owns), so a missing transfer
// is an error, never a silent read across devices.
//
// Everything runs synchronously on the calling thread and the kernels' pool: the default
// (null) streams and events of backends/device.h are all the CPU needs.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/device.h"

namespace ferry {

class CpuDevice final : public DeviceRuntime {
 public:
  struct Options {
    /// Virtual devices cpu:0 .. cpu:(devices-1); at least 1.
    int devices = 1;
    /// Check that copies read and write their devices' memory (see the file comment).
#ifdef NDEBUG
    bool checkOwnership = false;
#else
    bool checkOwnership = true;
#endif
  };

  CpuDevice() : CpuDevice(Options{}) {}
  explicit CpuDevice(Options options);
  ~CpuDevice() override;

  std::span<const Device> devices() const override { return devices_; }
  Expected<std::byte *> allocate(Device device, size_t bytes) override;
  void release(Device device, std::byte *data) override;
  bool hostAccessible() const override { return true; }
  /// `host` itself when it is 64-byte aligned (as allocate()'s memory is), else null. Recorded
  /// (for owns()) only with checkOwnership.
  std::byte *borrowHost(Device device, const std::byte *host, size_t bytes) override;
  bool owns(Device device, const std::byte *data, size_t bytes) const override;
  Status copy(Device from, const std::byte *source, Device to, std::byte *destination,
              size_t bytes, Stream stream) override;
  Status upload(const std::byte *host, Device to, std::byte *destination, size_t bytes,
                Stream stream) override;
  Status download(Device from, const std::byte *source, std::byte *host, size_t bytes,
                  Stream stream) override;
  Expected<std::unique_ptr<PreparedKernel>> prepare(const KernelPlan &plan,
                                                    const StepSpec &step) override;
  Status launch(const PreparedKernel &kernel, const KernelArgs &args, Stream stream) override;

  /// Bytes currently allocated on `device` (borrowed host memory is not).
  size_t bytesInUse(Device device) const;

 private:
  // One live block of a device's memory: allocated, or borrowed host memory (lent as many times
  // as `borrows` says, freed by no one here).
  struct Block {
    size_t bytes = 0;
    int borrows = 0;
  };
  // One device's memory: its live blocks by start address.
  struct Arena {
    mutable std::mutex mutex;
    std::map<const std::byte *, Block> blocks;
    size_t inUse = 0;
  };
  Arena &arena(Device device) const;

  Options options_;
  std::vector<Device> devices_;
  std::vector<std::unique_ptr<Arena>> arenas_;
};

}  // namespace ferry
