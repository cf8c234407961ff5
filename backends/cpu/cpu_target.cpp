// backends/cpu/cpu_target.cpp — the CPU's capability table and kernel plans.
#include "backends/cpu/cpu_target.h"

#include "backends/cpu/kernels.h"

namespace ferry {

namespace {

Status contract(const StepSpec &step, const std::string &what) {
  return makeError("internal",
                   "step '" + std::string(step.op.name) + "' on " + step.device.str() +
                       " is outside the CPU kernels' contract: " + what,
                   step.loc);
}

}  // namespace

KernelCapability CpuTarget::capability(OpKind op, DType dtype) const {
  if (!cpu::hasKernel(op, dtype)) return {};
  return {true, cpu::kernelCostFactor(op, dtype)};
}

Expected<KernelPlan> CpuTarget::lower(const StepSpec &step) const {
  const OpInfo &op = step.op;
  if (!step.device.isHost()) return contract(step, "the CPU target runs on cpu devices only");
  // Bytes cross devices in the runtime's copies, where they are counted.
  if (op.kind == OpKind::Transfer)
    return contract(step, "a '" + std::string(op.name) + "' is not lowered to a kernel");
  if (step.body) return cpu::planFused(step);
  const auto n = static_cast<int>(step.operands.size());
  if (n < op.minOperands || (op.maxOperands >= 0 && n > op.maxOperands))
    return contract(step, std::to_string(n) + " operands");
  if (step.attrs.size() != op.attrs.size()) return contract(step, "attributes not complete");
  const DType compute = cpu::computeDTypeOf(step);
  if (!cpu::hasKernel(op.kind, compute))
    return contract(step, "no kernel computes it in " + std::string(dtypeName(compute)) +
                              " (placement should have moved or rejected this node)");
  // Data operands of the promoting ops arrive in the dtype the op computes in: the dtype pass
  // inserted the casts (sum of integers widens to i64 by itself, and cast converts).
  const bool promotes = op.dtypeRule == DTypeRule::Promote ||
                        op.dtypeRule == DTypeRule::PromoteFloat ||
                        op.dtypeRule == DTypeRule::Compare;
  if (promotes)
    for (size_t i = 0; i < step.operands.size(); ++i)
      if (op.operand(i).role == OperandRole::Data && step.operands[i].dtype != compute)
        return contract(step, "operand " + std::to_string(i) + " is " + step.operands[i].str() +
                                  ", expected " + std::string(dtypeName(compute)) +
                                  " (a cast is missing)");
  // The kernels assume the types compile() gives; anything else is a bug upstream.
  const InferResult inferred = inferType(op, step.operands, step.attrs);
  if (const auto *e = std::get_if<InferError>(&inferred)) return contract(step, e->message);
  if (std::get<TensorType>(inferred) != step.result)
    return contract(step, "its result is " + step.result.str() + ", the op gives " +
                              std::get<TensorType>(inferred).str());
  return cpu::planKernel(step);
}

}  // namespace ferry
