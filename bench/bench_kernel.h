// bench/bench_kernel.h — one CPU kernel prepared and launched alone, for the kernel benchmarks
// (ferry-bench-cpu-kernels, ferry-bench-conv): its operands random, its plan the CPU target's.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/cpu_target.h"
#include "ir/ops.h"
#include "ir/tensor_data.h"

namespace ferry {

// One step's operands, result and scratch on a CPU device, its kernel prepared.
class BenchKernel {
 public:
  BenchKernel(OpKind kind, std::vector<TensorType> operands, const std::vector<NamedAttr> &given)
      : op_(opInfo(kind)) {
    Expected<Attrs> attrs = makeAttrs(op_, given, loc_);
    FERRY_CHECK(attrs.ok()) << attrs.status().message();
    attrs_ = std::move(*attrs);
    InferResult result = inferType(op_, operands, attrs_);
    FERRY_CHECK(std::holds_alternative<TensorType>(result)) << "bench node does not type-check";
    types_ = std::move(operands);
    types_.push_back(std::get<TensorType>(result));
    uint64_t seed = 1;
    for (const TensorType &t : types_) {
      const TensorData data = TensorData::randn(t.dtype, t.shape, seed++);
      std::byte *p = *backend_.allocate(Device::cpu(), data.byteSize());
      if (data.byteSize() > 0) std::memcpy(p, data.bytes().data(), data.byteSize());
      buffers_.push_back(p);
    }
    const std::span<const TensorType> in(types_.data(), types_.size() - 1);
    const StepSpec step{op_, attrs_, in, types_.back(), Device::cpu(), loc_};
    Expected<KernelPlan> plan = CpuTarget().lower(step);
    FERRY_CHECK(plan.ok()) << plan.status().message();
    Expected<std::unique_ptr<PreparedKernel>> kernel = backend_.prepare(*plan, step);
    FERRY_CHECK(kernel.ok()) << kernel.status().message();
    kernel_ = std::move(*kernel);
    operands_.assign(buffers_.begin(), buffers_.end() - 1);
    scratch_ = *backend_.allocate(Device::cpu(), plan->scratchBytes);
  }
  BenchKernel(const BenchKernel &) = delete;
  BenchKernel &operator=(const BenchKernel &) = delete;
  ~BenchKernel() {
    for (std::byte *p : buffers_) backend_.release(Device::cpu(), p);
    backend_.release(Device::cpu(), scratch_);
  }

  void run() {
    Status s = backend_.launch(*kernel_, KernelArgs{operands_, buffers_.back(), scratch_},
                               Stream{nullptr, Device::cpu()});
    FERRY_CHECK(s.ok()) << s.message();
  }
  int64_t resultElements() const { return types_.back().numel(); }

 private:
  CpuDevice backend_{CpuDevice::Options{.devices = 1, .checkOwnership = false}};
  const OpInfo &op_;
  Attrs attrs_;
  std::vector<TensorType> types_;  // operands, then the result
  std::vector<std::byte *> buffers_;  // operands, then the result
  std::vector<const std::byte *> operands_;
  std::byte *scratch_ = nullptr;
  std::unique_ptr<PreparedKernel> kernel_;
  Location loc_{"bench.fy", 1, 1};
};

}  // namespace ferry
