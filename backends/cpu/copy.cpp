// backends/cpu/copy.cpp — ops that move bytes unchanged on one device: the reshape family,
// identity and constant (a transfer between devices is the runtime's DeviceRuntime::copy, not a
// kernel). Large copies are split over the thread pool: one core rarely saturates memory
// bandwidth.
#include <cstring>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "ir/tensor_data.h"

namespace ferry::cpu {

namespace {

// Bytes per parallel chunk, at least: below this a memcpy is done before a thread wakes up.
constexpr int64_t kChunkBytes = 128 << 10;

// memmove: overlapping buffers (an in-place reshape) are copied serially, the rest in chunks.
void copyMemory(std::byte *to, const std::byte *from, size_t bytes) {
  if (bytes == 0 || to == from) return;
  const auto t = reinterpret_cast<uintptr_t>(to), f = reinterpret_cast<uintptr_t>(from);
  if (t < f + bytes && f < t + bytes) {
    std::memmove(to, from, bytes);
    return;
  }
  parallelFor(static_cast<int64_t>(bytes), kChunkBytes, [&](int64_t begin, int64_t end) {
    std::memcpy(to + begin, from + begin, static_cast<size_t>(end - begin));
  });
}

}  // namespace

Expected<std::unique_ptr<Kernel>> prepareCopy(const StepSpec &step) {
  const TensorType &x = step.operands[0], &r = step.result;
  if (x.dtype != r.dtype || x.byteSize() != r.byteSize())
    return contractError(step, "operand " + x.str() + " and result " + r.str() +
                                   " do not hold the same bytes");
  return stepKernel(step, [bytes = r.byteSize()](const KernelCall &call) {
    copyMemory(call.result.data, call.operands[0].data, bytes);
    return Status();
  });
}

// The value is copied into the kernel once; each launch copies it into the result.
Expected<std::unique_ptr<Kernel>> prepareConstant(const StepSpec &step) {
  const TensorData &value = attrTensor(step.op, step.attrs, "value");
  if (value.type() != step.result)
    return contractError(step, "its value is " + value.type().str() + " but the result is " +
                                   step.result.str());
  return stepKernel(step, [value](const KernelCall &call) {
    copyMemory(call.result.data, value.bytes().data(), value.byteSize());
    return Status();
  });
}

}  // namespace ferry::cpu
