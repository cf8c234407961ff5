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
  const size_t kernels = cudatest::expectStepsMatchTheReference(steps);
  EXPECT_GE(kernels, 100u);
  const testutil::GroupShapes shapes = cudatest::groupShapesOf(steps);
  std::printf("%zu steps, %zu distinct kernels: %s\n", steps.size(), kernels, shapes.str().c_str());
  for (const auto &[name, n] : shapes.counts()) EXPECT_GE(n, 3) << name;
}

}  // namespace
}  // namespace ferry
