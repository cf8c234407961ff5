// backends/cpu/copy.cpp — ops that move bytes unchanged on one device: the reshape family,
// identity and constant (a transfer between devices is the runtime's DeviceRuntime::copy, not a kernel). Large copies are split over the
// thread pool: one core rarely saturates memory bandwidth.
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

Status copyBytes(const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  if (x.type->dtype != r.type->dtype || x.bytes() != r.bytes())
    return contractError(call, "operand " + x.type->str() + " and result " + r.type->str() +
                                   " do not hold the same bytes");
  copyMemory(r.data, x.data, r.bytes());
  return Status();
}

Status constant(const KernelCall &call) {
  const TensorData &value = attrTensor(call.op, call.attrs, "value");
  const TensorView &r = call.result;
  if (value.type() != *r.type)
    return contractError(call, "its value is " + value.type().str() + " but the result is " +
                                   r.type->str());
  copyMemory(r.data, value.bytes().data(), r.bytes());
  return Status();
}

Expected<std::unique_ptr<Kernel>> prepareCopy(const StepSpec &step) { return stepKernel(step, copyBytes); }
Expected<std::unique_ptr<Kernel>> prepareConstant(const StepSpec &step) { return stepKernel(step, constant); }

}  // namespace ferry::cpu
