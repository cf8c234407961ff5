// tests/cuda/codegen_emulation_test.cpp — the CUDA kernels ferry generates, compiled for the host
// through backends/cuda/codegen/emulate.h and run against the reference interpreter: no GPU
// needed. The steps are those of random graphs compiled with fusion (the fusion pass makes the
// same micro-op programs for every fusing target), so every shape of group the pass makes is
// printed, compiled with the host compiler that built this test, loaded and checked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "backends/cuda/codegen/kernel_source.h"
#include "backends/reference/interpreter.h"
#include "cuda/codegen_steps.h"
#include "common/random_graph.h"
#include "common/value_check.h"

namespace ferry {
namespace {

using cudatest::CollectedStep;

TEST(CudaCodegen, EveryFusedGroupOfTheRandomGraphsMatchesTheReferenceOnTheHost) {
  const std::vector<CollectedStep> steps = cudatest::collectSteps(/*graphs=*/400, /*elementwise=*/true);
  // One source per distinct text.
  std::vector<cuda::KernelSource> kernels;
  std::map<std::string, size_t> index;
  std::vector<size_t> kernelOf;
  for (const CollectedStep &s : steps) {
    auto [it, added] = index.emplace(s.kernel.source, kernels.size());
    if (added) kernels.push_back(s.kernel);
    kernelOf.push_back(it->second);
  }
  ASSERT_GE(kernels.size(), 100u);
  const cudatest::HostKernels host(kernels);
  ASSERT_TRUE(host.ok()) << host.errors().substr(0, 4000);
  const cudatest::Coverage coverage = cudatest::coverageOf(steps);
  int failures = 0;
  for (size_t i = 0; i < steps.size() && failures < 5; ++i) {
    const CollectedStep &s = steps[i];
    std::vector<const TensorData *> inputs;
    for (const TensorData &t : s.inputs) inputs.push_back(&t);
    TensorData got(s.want.dtype(), s.want.shape());
    EXPECT_EQ(host.run(kernelOf[i], inputs, got), 0u) << s.what;
    const std::string diff = testutil::compareOutputs({s.want}, {got}, s.tolerance);
    if (!diff.empty()) {
      ++failures;
      ADD_FAILURE() << s.what << ": " << diff << "\n" << kernels[kernelOf[i]].source.substr(cuda::prelude().size());
    }
  }
  std::printf("%zu steps, %zu distinct kernels: %s\n", steps.size(), kernels.size(),
              coverage.str().c_str());
  EXPECT_EQ(failures, 0);
  coverage.expectEveryShape();
}

}  // namespace
}  // namespace ferry
