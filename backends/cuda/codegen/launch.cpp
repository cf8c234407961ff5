// backends/cuda/codegen/launch.cpp — one launch of a CUDA plan as data (launch.h).
#include "backends/cuda/codegen/launch.h"

#include <algorithm>

namespace ferry::cuda {

LaunchSequence launchSequence(std::string_view kernel, const CudaPlan &plan,
                              std::span<const int32_t> anchorOperands, const GemmShape *shape,
                              size_t elementSize, const KernelArgs &args) {
  LaunchSequence seq;
  auto operand = [&](int32_t i) { return args.operands[static_cast<size_t>(i)]; };
  std::vector<const std::byte *> in(args.operands.begin(), args.operands.end());
  if (kernel == kKernelPlanName) {
    seq.kernels.push_back({false, args.result, args.scratch, std::move(in)});
    return seq;
  }
  // The GEMM's or anchor kernel's output: scratch when a tail reads it in another type, else the
  // result itself.
  std::byte *first = plan.gemmOutputOffset >= 0 ? args.scratch + plan.gemmOutputOffset : args.result;
  if (kernel == kGemmPlanName && shape) {
    const GemmShape &g = *shape;
    const std::byte *x = operand(anchorOperands[0]), *w = operand(anchorOperands[1]);
    const std::byte *bias = anchorOperands.size() > 2 ? operand(anchorOperands[2]) : nullptr;
    if (plan.gemmColOffset >= 0) {  // a conv2d: its im2col in scratch is the GEMM's B
      std::byte *col = args.scratch + plan.gemmColOffset;
      seq.prologue = {true, col, args.scratch, {x}};
      x = col;
    }
    const auto bytes = static_cast<int64_t>(elementSize);
    if (g.m > 0 && g.n > 0 && g.k == 0) {
      const int64_t matrices = std::max<int64_t>(g.batch, static_cast<int64_t>(g.calls.size()));
      seq.zeroFill = first;
      seq.zeroBytes = static_cast<size_t>(g.m * g.n * matrices) * elementSize;
    } else if (g.m > 0 && g.n > 0) {
      // cuBLASLt's A is ferry's second operand, its B the first (gemm_shape.h).
      if (g.calls.empty()) {
        seq.gemms.push_back({w, x, first, bias});
      } else {
        for (const auto &[offA, offB, offD] : g.calls)
          seq.gemms.push_back({w + offA * bytes, x + offB * bytes, first + offD * bytes, bias});
      }
    }
  } else if (kernel == kAnchoredPlanName) {
    std::vector<const std::byte *> anchorIn;
    for (int32_t i : anchorOperands) anchorIn.push_back(operand(i));
    seq.kernels.push_back({true, first, args.scratch, std::move(anchorIn)});
  }
  if (!plan.ptx.empty()) {  // the tail: the step's operands, then the GEMM's or anchor's output
    in.push_back(first);
    seq.kernels.push_back({false, args.result, args.scratch, std::move(in)});
  }
  return seq;
}

}  // namespace ferry::cuda
