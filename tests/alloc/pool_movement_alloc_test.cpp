// tests/alloc/pool_movement_alloc_test.cpp — launches of the pooling and movement kernels make no
// heap allocation (alloc/alloc_count.h): their geometry is computed when the step is prepared,
// and a launch's temporaries live on the stack or in planned scratch.
#include <gtest/gtest.h>

#include "alloc/alloc_count.h"

namespace ferry::alloctest {
namespace {

// tests/alloc/pool_movement_ops.fy: every pooling and movement op, on tensors large enough that
// the kernels split their work over the pool (when it has more than one thread).
TEST(KernelAllocations, PoolingAndMovementAllocateNothing) {
  const std::map<std::string, long> perOp =
      allocationsPerOp("tests/alloc/pool_movement_ops.fy", CompileOptions{});
  for (const char *op : {"max_pool2d", "avg_pool2d", "global_avg_pool", "transpose", "concat",
                         "slice", "gather", "expand"}) {
    ASSERT_TRUE(perOp.count(op)) << op << " was not compiled to a step: " << str(perOp);
    EXPECT_EQ(perOp.at(op), 0) << op << ": " << str(perOp);
  }
  std::printf("tests/alloc/pool_movement_ops.fy: heap allocations per op in one launch each: %s\n",
              str(perOp).c_str());
}

}  // namespace
}  // namespace ferry::alloctest
