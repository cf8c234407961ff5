// tests/cuda/codegen_kernels_test.cpp — the CUDA kernels of reductions, softmax, layer_norm and
// the movement and view ops (backends/cuda/codegen/generators_impl.h), compiled for the host
// through backends/cuda/codegen/emulate.h and run against the reference interpreter: the steps of
// random graphs, hand-picked shapes for the kernels that take a block per row (random graphs'
// rows are short), and gather's error flag.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "backends/cuda/codegen/kernel_source.h"
#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "cuda/codegen_steps.h"

namespace ferry {
namespace {

using cudatest::CollectedStep;
using cudatest::HostKernels;
using cudatest::HandStep;
using cudatest::handStep;
using cudatest::checkAgainstReference;

// The ops whose kernels these tests check.
const OpKind kOps[] = {OpKind::Sum,        OpKind::Mean,      OpKind::Max,      OpKind::Softmax,
                       OpKind::LogSoftmax, OpKind::LayerNorm, OpKind::Reshape,  OpKind::Flatten,
                       OpKind::Squeeze,    OpKind::Unsqueeze, OpKind::Identity, OpKind::Transpose,
                       OpKind::Slice,      OpKind::Expand,    OpKind::Concat,   OpKind::Gather};

// Integers and bool compare exactly, floats within the step's tolerance.

TEST(CudaKernels, EveryNonElementwiseStepOfTheRandomGraphsMatchesTheReferenceOnTheHost) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<CollectedStep> steps =
      cudatest::collectSteps(/*graphs=*/2000, /*elementwise=*/false);
  const size_t kernels = cudatest::expectStepsMatchTheReference(steps);
  EXPECT_GE(kernels, 100u);
  std::map<OpKind, int> occurred;
  int blockSync = 0;
  for (const CollectedStep &s : steps) {
    ++occurred[s.op];
    blockSync += s.kernel.blockSync;
  }
  std::string counts;
  for (OpKind k : kOps)
    counts += " " + std::string(opInfo(k).name) + " " + std::to_string(occurred[k]);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu steps (%d of a block per row), %zu distinct kernels, %.1f s; by op:%s\n",
              steps.size(), blockSync, kernels, seconds, counts.c_str());
  for (OpKind k : kOps) EXPECT_GE(occurred[k], 3) << opInfo(k).name;
  EXPECT_GE(blockSync, 3);
}

// --- hand-built steps ----------------------------------------------------------------------


TEST(CudaKernels, LongRowsTakeABlockEachAndMatchTheReference) {
  testutil::Rng rng(7);
  auto ints = [](std::vector<int64_t> v) { return AttrValue(std::move(v)); };
  const std::vector<HandStep> steps = {
      handStep(OpKind::Sum, {{DType::F32, {3, 500}}}, {{"axes", ints({1})}}, rng),
      handStep(OpKind::Sum, {{DType::I32, {40, 3, 50}}}, {{"axes", ints({0, 2})}}, rng),
      handStep(OpKind::Mean, {{DType::F16, {40, 3, 50}}},
               {{"axes", ints({0, -1})}, {"keepdims", true}}, rng),
      handStep(OpKind::Mean, {{DType::F64, {2, 200}}}, {}, rng),
      handStep(OpKind::Max, {{DType::BF16, {300, 5}}}, {{"axes", ints({0})}}, rng),
      handStep(OpKind::Max, {{DType::I8, {5, 7, 9}}}, {{"axes", ints({1, 2})}}, rng),
      handStep(OpKind::Max, {{DType::Bool, {2, 70}}}, {{"axes", ints({1})}}, rng),
      handStep(OpKind::Sum, {{DType::U8, {100}}}, {}, rng),
      handStep(OpKind::Softmax, {{DType::F32, {4, 300}}}, {}, rng),
      handStep(OpKind::Softmax, {{DType::F16, {70, 3, 2}}}, {{"axis", int64_t{0}}}, rng),
      handStep(OpKind::LogSoftmax, {{DType::F64, {2, 100, 3}}}, {{"axis", int64_t{1}}}, rng),
      handStep(OpKind::LogSoftmax, {{DType::BF16, {2, 1000}}}, {{"axis", int64_t{-1}}}, rng),
      handStep(OpKind::LayerNorm, {{DType::F32, {3, 10, 20}}}, {{"axis", int64_t{1}}}, rng),
      handStep(OpKind::LayerNorm,
               {{DType::F32, {2, 600}}, {DType::F32, {600}}, {DType::F32, {600}}}, {{"eps", 1e-6}},
               rng),
      handStep(OpKind::LayerNorm, {{DType::F16, {4, 64}}, {DType::F16, {64}}}, {}, rng),
      handStep(OpKind::LayerNorm,
               {{DType::F64, {3, 7, 9}}, {DType::F64, {7, 9}}, {DType::F64, {7, 9}}},
               {{"axis", int64_t{-2}}}, rng),
      // Many rows whose outputs are the innermost dims: a thread per output.
      handStep(OpKind::Sum, {{DType::F32, {40, 8200}}}, {{"axes", ints({0})}}, rng),
  };
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    Expected<cuda::KernelSource> k = cuda::stepKernel(steps[i].spec());
    ASSERT_TRUE(k.ok()) << steps[i].what << ": " << k.status().message();
    EXPECT_TRUE(k->blockSync) << steps[i].what;
  }
  EXPECT_EQ(checkAgainstReference(steps), 0);
}

TEST(CudaKernels, ReductionOfALongRowTakesManyRoundsOfItsBlock) {
  testutil::Rng rng(11);
  std::vector<HandStep> steps = {
      handStep(OpKind::Sum, {{DType::F32, {100000}}}, {}, rng),
      handStep(OpKind::Mean, {{DType::F16, {2, 100000}}},
               {{"axes", AttrValue(std::vector<int64_t>{1})}}, rng),
      handStep(OpKind::Max, {{DType::F32, {100000}}}, {}, rng),
      handStep(OpKind::Max, {{DType::F32, {100000}}}, {}, rng),
      handStep(OpKind::Sum, {{DType::I64, {100000}}}, {}, rng),
  };
  // The largest value last, once; then a NaN in the middle of another row, which wins.
  steps[2].inputs[0].set(99999, 3.0);
  steps[3].inputs[0].set(51234, std::numeric_limits<double>::quiet_NaN());
  // Sums that wrap past 2^63.
  for (int64_t i = 0; i < 100000; ++i) steps[4].inputs[0].setInt(i, (int64_t{1} << 62) + i);
  for (const HandStep &h : steps) {
    Expected<cuda::KernelSource> k = cuda::stepKernel(h.spec());
    ASSERT_TRUE(k.ok()) << h.what << ": " << k.status().message();
    EXPECT_TRUE(k->blockSync) << h.what;
    EXPECT_EQ(k->threads, 256) << h.what;
  }
  EXPECT_EQ(checkAgainstReference(steps), 0);
}

TEST(CudaKernels, GatherIndexOutOfRangeSetsTheErrorFlagAndWritesNothingThere) {
  testutil::Rng rng(3);
  auto gather = [&](Shape data, DType indexType, std::vector<int64_t> indices, int64_t axis) {
    HandStep h = handStep(
        OpKind::Gather,
        {{DType::F32, std::move(data)}, {indexType, {static_cast<int64_t>(indices.size())}}},
        {{"axis", axis}}, rng);
    for (size_t i = 0; i < indices.size(); ++i)
      h.inputs[1].setInt(static_cast<int64_t>(i), indices[i]);
    return h;
  };
  const std::vector<HandStep> steps = {
      gather({4, 3}, DType::I64, {1, 4}, 0),      // 4 is past the end
      gather({4, 3}, DType::I32, {-5}, 0),        // -5 is before the start
      gather({4, 3}, DType::I32, {2, -3, 3}, 1),  // axis 1 has 3: 3 is out
      gather({2, 0}, DType::I64, {7}, 0),         // no result elements, still checked
      gather({4, 3}, DType::I64, {-4, 3, 0}, 0),  // all in range
  };
  std::vector<cuda::KernelSource> kernels;
  for (const HandStep &h : steps) {
    Expected<cuda::KernelSource> k = cuda::stepKernel(h.spec());
    ASSERT_TRUE(k.ok()) << h.what << ": " << k.status().message();
    kernels.push_back(*k);
  }
  const HostKernels host(kernels);
  ASSERT_TRUE(host.ok()) << host.errors().substr(0, 4000);
  for (size_t i = 0; i < steps.size(); ++i) {
    const HandStep &h = steps[i];
    Expected<TensorData> want = reference::evalOp(*h.op, h.inputs, h.attrs, h.result);
    const float kUntouched = -99;
    TensorData got = TensorData::full(h.result.dtype, h.result.shape, kUntouched);
    const unsigned flag = host.run(i, {&h.inputs[0], &h.inputs[1]}, got);
    if (i + 1 < steps.size()) {
      ASSERT_FALSE(want.ok()) << h.what;
      EXPECT_EQ(want.status().diagnostics()[0].code, "runtime");
      EXPECT_EQ(flag, 1u) << h.what;
    } else {
      ASSERT_TRUE(want.ok()) << want.status().message();
      EXPECT_EQ(flag, 0u);
      EXPECT_EQ(testutil::compareOutputs({*want}, {got}, 0), "");
    }
  }
  // The elements of an index in range are written, the others are not: step 0 reads rows 1 and 4.
  TensorData got = TensorData::full(DType::F32, {2, 3}, -99);
  EXPECT_EQ(host.run(0, {&steps[0].inputs[0], &steps[0].inputs[1]}, got), 1u);
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(got.at(k), steps[0].inputs[0].at(3 + k));
    EXPECT_EQ(got.at(3 + k), -99);
  }
}

TEST(CudaKernels, ReductionsOverNoElementsGiveZeroNaNOrTheErrorFlag) {
  testutil::Rng rng(9);
  auto axes = AttrValue(std::vector<int64_t>{1});
  // sum: 0; mean: 0/0 = NaN; max: the reference's "runtime" error, the kernel's flag (the shape
  // rule rejects max over no elements, so the step is typed by hand).
  std::vector<HandStep> steps = {
      handStep(OpKind::Sum, {{DType::I32, {3, 0}}}, {{"axes", axes}}, rng),
      handStep(OpKind::Mean, {{DType::F32, {3, 0}}}, {{"axes", axes}}, rng),
      handStep(OpKind::Max, {{DType::F16, {3, 1}}}, {{"axes", axes}}, rng),
  };
  steps[2].operands[0].shape = {3, 0};
  steps[2].inputs[0] = TensorData(DType::F16, {3, 0});
  EXPECT_EQ(checkAgainstReference({steps[0], steps[1]}), 0);
  Expected<cuda::KernelSource> k = cuda::stepKernel(steps[2].spec());
  ASSERT_TRUE(k.ok()) << k.status().message();
  const HostKernels host({*k});
  ASSERT_TRUE(host.ok()) << host.errors().substr(0, 4000);
  Expected<TensorData> want =
      reference::evalOp(*steps[2].op, steps[2].inputs, steps[2].attrs, steps[2].result);
  ASSERT_FALSE(want.ok());
  EXPECT_EQ(want.status().diagnostics()[0].code, "runtime");
  TensorData got(steps[2].result.dtype, steps[2].result.shape);
  EXPECT_EQ(host.run(0, {&steps[2].inputs[0]}, got), 1u);
}

TEST(CudaKernels, StepsOutsideTheContractAreInternalErrors) {
  testutil::Rng rng(5);
  auto expectInternal = [](const StepSpec &spec, const std::string &text) {
    Expected<cuda::KernelSource> k = cuda::stepKernel(spec);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.status().diagnostics()[0].code, "internal");
    EXPECT_NE(k.status().message().find(text), std::string::npos) << k.status().message();
  };
  // mean of integers (the op accepts floats only).
  HandStep mean = handStep(OpKind::Mean, {{DType::F32, {4}}}, {}, rng);
  mean.operands[0].dtype = DType::I32;
  mean.result.dtype = DType::I32;
  expectInternal(mean.spec(), "'mean' of i32[4]");
  // concat of operands of different dtypes: a cast is missing.
  HandStep concat = handStep(OpKind::Concat, {{DType::F32, {2}}, {DType::F32, {3}}}, {}, rng);
  concat.operands[1].dtype = DType::F16;
  expectInternal(concat.spec(), "a cast is missing");
  // Ops without a generated kernel: cuBLASLt runs matmul.
  HandStep mm = handStep(OpKind::Matmul, {{DType::F32, {2, 3}}, {DType::F32, {3, 2}}}, {}, rng);
  expectInternal(mm.spec(), "no CUDA kernel prints 'matmul'");
}

}  // namespace
}  // namespace ferry
