// tests/backends/cpu_num_threads_test.cpp — FERRY_NUM_THREADS: the values it takes, the warning
// for the others, and a process whose bad value runs its kernels on the core count instead of
// aborting.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "backends/cpu/num_threads.h"
#include "backends/cpu/parallel.h"
#include "cpu_test_util.h"

namespace ferry {
namespace {

TEST(CpuNumThreads, ParsesWholeNumbersFromOneTo1024) {
  for (const auto &[text, n] :
       std::vector<std::pair<std::string, int>>{{"1", 1}, {"8", 8}, {"1024", 1024}, {"007", 7}}) {
    Expected<int> got = cpu::parseNumThreads(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().message();
    EXPECT_EQ(*got, n) << text;
  }
  for (const std::string bad : {"abc", "0", "-1", "2000", "1025", "", " 4", "4 ", "+4", "4x", "1e3",
                                "99999999999999999999", "0x10"}) {
    Expected<int> got = cpu::parseNumThreads(bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().diagnostics().size(), 1u);
    EXPECT_EQ(got.status().diagnostics()[0].message,
              "FERRY_NUM_THREADS: expected a whole number of threads from 1 to 1024, got '" + bad +
                  "'");
  }
}

TEST(CpuNumThreads, ABadValueFallsBackToTheCoreCountWithAWarning) {
  std::string warning = "stale";
  EXPECT_EQ(cpu::resolveNumThreads(nullptr, 6, warning), 6);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(cpu::resolveNumThreads("", 6, warning), 6);  // set but empty: unset
  EXPECT_EQ(warning, "");
  EXPECT_EQ(cpu::resolveNumThreads("3", 6, warning), 3);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(cpu::resolveNumThreads("abc", 6, warning), 6);
  EXPECT_EQ(warning, "FERRY_NUM_THREADS: expected a whole number of threads from 1 to 1024, got "
                     "'abc'; ignored, using the core count (6 threads)");
  EXPECT_EQ(cpu::resolveNumThreads("0", 0, warning), 1);  // cores unknown: one thread
  EXPECT_EQ(warning, "FERRY_NUM_THREADS: expected a whole number of threads from 1 to 1024, got "
                     "'0'; ignored, using the core count (1 thread)");
  EXPECT_EQ(cpu::resolveNumThreads(nullptr, 5000, warning), 1024);
}

// The variable as a process sees it: set before the first kernel, read once by the pool.
void runKernelsWith(const char *value) {
  setenv(cpu::kNumThreadsEnv, value, 1);
  CpuDevice b(cputest::checked(1));
  const OpInfo &relu = opInfo(OpKind::Relu);
  const TensorData x = TensorData::randn(DType::F32, {1 << 20}, 1);
  for (int i = 0; i < 2; ++i) {
    Expected<TensorData> y =
        cputest::runOnCpu(b, relu, {x}, reftest::completeAttrs(relu, {}), x.type());
    if (!y.ok() || y->at(0) != std::max(0.0, x.at(0))) std::exit(3);
  }
  std::fprintf(stderr, "pool threads: %d\n", cpu::poolThreads());
  std::exit(0);
}

TEST(CpuNumThreadsDeathTest, ABadValueWarnsOnceAndRunsOnTheCoreCount) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the pool is made there
  const int cores = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 1024u));
  for (const char *bad : {"abc", "0", "-1", "2000"}) {
    EXPECT_EXIT(runKernelsWith(bad), ::testing::ExitedWithCode(0),
                "^ferry: warning: FERRY_NUM_THREADS: expected a whole number of threads from 1 to "
                "1024, got '" +
                    std::string(bad) + "'; ignored, using the core count \\(" +
                    std::to_string(cores) + " threads?\\)\npool threads: " + std::to_string(cores) +
                    "\n$")
        << bad;
  }
  EXPECT_EXIT(runKernelsWith("3"), ::testing::ExitedWithCode(0), "^pool threads: 3\n$");
  // One thread is the calling thread alone (it was two: Eigen's pool needs a thread of its own,
  // which was counted besides the caller).
  EXPECT_EXIT(runKernelsWith("1"), ::testing::ExitedWithCode(0), "^pool threads: 1\n$");
}

}  // namespace
}  // namespace ferry
