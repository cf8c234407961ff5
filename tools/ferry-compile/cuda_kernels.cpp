// tools/ferry-compile/cuda_kernels.cpp — `--emit cuda` (cuda_kernels.h).
#include "tools/ferry-compile/cuda_kernels.h"

#include "backends/cuda/codegen/kernel_source.h"
#include "backends/cuda/codegen/plan.h"

namespace ferry {

namespace {

// The prelude is the same in every kernel: printed once, at the top; each kernel after it.
std::string withoutPrelude(const std::string &source) {
  const std::string &prelude = cuda::prelude();
  return source.starts_with(prelude) ? source.substr(prelude.size()) : source;
}

}  // namespace

std::string emitCudaKernels(const Executable &exe) {
  std::string body;
  int kernels = 0, withCubins = 0;
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    const Step &st = exe.steps[i];
    if (!st.plan.kernel.starts_with("cuda.")) continue;
    const Slot &result = exe.slots[static_cast<size_t>(st.result)];
    body += "\n// ---- step " + std::to_string(i) + ": " + stepOpName(st) + " -> %" + result.name +
            " " + result.type.str() + " @" + result.device.str();
    if (st.loc.known()) body += "  (" + st.loc.str() + ")";
    body += "\n";
    Expected<cuda::CudaPlan> plan = cuda::CudaPlan::decode(st.plan.payload);
    if (!plan) {
      body += "// the plan cannot be read: " + plan.status().diagnostics().front().message + "\n";
      continue;
    }
    // The images are binary: their sizes only.
    auto kernel = [&](const std::string &what, const std::string &source, int64_t blocks,
                      int32_t threads, const std::string &ptx, const std::string &sm80,
                      const std::string &sm90) {
      body += "// " + what + ": " + std::to_string(blocks) + " blocks of " +
              std::to_string(threads) + " threads; PTX " + std::to_string(ptx.size()) + " bytes";
      if (!sm80.empty() || !sm90.empty()) {
        body += ", cubins sm_80 " + std::to_string(sm80.size()) + " and sm_90 " +
                std::to_string(sm90.size()) + " bytes";
        ++withCubins;
      }
      body += "\n" + withoutPrelude(source);
      ++kernels;
    };
    if (st.plan.kernel == cuda::kGemmPlanName)
      body += "// cuBLASLt matmul, epilogue " + std::string(cuda::epilogueName(plan->epilogue)) +
              " (the first " + std::to_string(std::max(1, plan->gemmMicroOps)) +
              " micro-op(s) of the step), " + std::to_string(plan->gemmWorkspaceBytes) +
              " bytes of workspace\n";
    if (!plan->anchorSource.empty())
      kernel("the anchor's kernel", plan->anchorSource, plan->anchorBlocks, plan->anchorThreads,
             plan->anchorPtx, plan->anchorCubinSm80, plan->anchorCubinSm90);
    if (!plan->source.empty())
      kernel(st.plan.kernel == cuda::kKernelPlanName ? "the kernel" : "the rest of the step",
             plan->source, plan->blocks, plan->threads, plan->ptx, plan->cubinSm80,
             plan->cubinSm90);
  }
  std::string how = "compiled by NVRTC to PTX";
  if (withCubins > 0)
    how += (withCubins == kernels ? std::string(" and")
                                  : ", " + std::to_string(withCubins) + " of them") +
           " by nvJitLink to cubins for sm_80 and sm_90";
  std::string head = "// CUDA kernels of '" + exe.name + "': " + std::to_string(kernels) +
                     " generated, " + how + " (in the executable)\n";
  if (body.empty()) return head + "// no step runs on a CUDA device\n";
  return head + "\n// The prelude every kernel starts with:\n" + cuda::prelude() + body;
}

}  // namespace ferry
