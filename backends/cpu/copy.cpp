// backends/cpu/copy.cpp — ops that move bytes unchanged: the reshape family, identity, transfer
// (between the arenas of two virtual devices) and constant.
#include <cstring>

#include "backends/cpu/kernels.h"
#include "ir/tensor_data.h"

namespace ferry::cpu {

Status copyBytes(const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  if (x.type->dtype != r.type->dtype || x.bytes() != r.bytes())
    return contractError(call, "operand " + x.type->str() + " and result " + r.type->str() +
                                   " do not hold the same bytes");
  if (r.bytes() > 0) std::memmove(r.data, x.data, r.bytes());
  return Status();
}

Status constant(const KernelCall &call) {
  const TensorData &value = attrTensor(call.op, call.attrs, "value");
  const TensorView &r = call.result;
  if (value.type() != *r.type)
    return contractError(call, "its value is " + value.type().str() + " but the result is " +
                                   r.type->str());
  if (r.bytes() > 0) std::memcpy(r.data, value.bytes().data(), r.bytes());
  return Status();
}

}  // namespace ferry::cpu
