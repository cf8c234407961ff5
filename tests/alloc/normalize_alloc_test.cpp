// tests/alloc/normalize_alloc_test.cpp — the normalisation and reduction kernels
// (backends/cpu/normalize.cpp) allocate nothing per launch (alloc/alloc_count.h): their
// temporaries are stack blocks or planned scratch, also when the pool splits the work.
#include <gtest/gtest.h>

#include "alloc/alloc_count.h"

namespace ferry::alloctest {
namespace {

constexpr const char *kNormalizeOps[] = {"batch_norm", "layer_norm", "softmax", "log_softmax",
                                         "sum",        "mean",       "max"};

// tests/alloc/normalize_ops.fy: each op on shapes its kernel splits over the pool, with every
// layout of the work (planes and rows; softmax rows and column blocks; reductions over the
// outputs and over pieces of the reduced rows; floats, f16 and integers).
TEST(NormalizeAllocations, EveryLayoutAllocatesNothing) {
  const std::map<std::string, long> perOp =
      allocationsPerOp("tests/alloc/normalize_ops.fy", CompileOptions{});
  for (const char *op : kNormalizeOps) {
    ASSERT_TRUE(perOp.count(op)) << op << " is not in the compiled model: " << str(perOp);
    EXPECT_EQ(perOp.at(op), 0) << op << ": " << str(perOp);
  }
}

// The same ops in the example models, on their small shapes (one chunk, no split).
TEST(NormalizeAllocations, ExampleModelsAllocateNothing) {
  CompileOptions options;
  options.devices = {Device::cpu(), *parseDevice("cpu:1")};  // ops.fy pins a node on cpu:1
  for (const char *model : {"examples/ops.fy", "examples/cnn.fy", "examples/mlp.fy"}) {
    const std::map<std::string, long> perOp = allocationsPerOp(model, options);
    for (const char *op : kNormalizeOps)
      if (perOp.count(op)) {
        EXPECT_EQ(perOp.at(op), 0) << model << ": " << op << ": " << str(perOp);
      }
  }
}

}  // namespace
}  // namespace ferry::alloctest
