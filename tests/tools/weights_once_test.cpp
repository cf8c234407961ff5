// tests/tools/weights_once_test.cpp — the tools hold a model's weights once: the peak memory of
// ferry-compile and of ferry-run (a .fy model, and its saved executable) stays within 1.2 times
// the weight bytes plus the workspace over what the same command takes for a tiny model; and the
// total param limit refuses a model that declares more weights than it, before allocating them.
#include <string>

#include "tools/tool_test_util.h"

namespace ferry {
namespace {

using tooltest::contains;
using tooltest::Result;
using tooltest::shellQuote;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FERRY_SANITIZED 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define FERRY_SANITIZED 1
#endif
#endif

// One f32[N,N] weight (`ones`: every byte written, none left to lazy zero pages) times a small
// input; the workspace holds the input and the output, f32[4,N] each.
std::string model(int n) {
  const std::string d = std::to_string(n);
  return "graph big {\n  input %x : f32[4," + d + "] @cpu\n  param %w : f32[" + d + "," + d +
         "] = ones\n  %y = matmul(%x, %w)\n  output %y\n}\n";
}

class WeightsOnce : public tooltest::ToolTest {};

// 256 MiB of weights. The baseline is the same command on a 64x64 model (code, libraries, the
// kernels' thread pool: about 10 MB on this box), measured in the same test, so that the bound
// does not depend on the machine. 1.2 times the weights allows for what is not the weights
// (the graph, the executable's plan, allocator slack), never for a second copy (2 times).
TEST_F(WeightsOnce, PeakMemoryIsAboutTheWeightsOnce) {
#ifdef FERRY_SANITIZED
  GTEST_SKIP() << "sanitizers' shadow memory and quarantine inflate the resident set";
#endif
  constexpr int kN = 8192;
  constexpr long kWeightKiB = long{kN} * kN * 4 / 1024;
  constexpr long kWorkspaceKiB = 2 * 4 * kN * 4 / 1024 + 1024;  // x, y and 1 MiB of scratch
  const std::string tiny = shellQuote(write("tiny.fy", model(64)));
  const std::string big = shellQuote(write("big.fy", model(kN)));
  const std::string runFlags = " --random-inputs --iterations 1 --warmup 0";
  struct Case {
    const char *what;
    std::string binary, tinyArgs, bigArgs;
  };
  const Case cases[] = {
      {"ferry-compile -o", FERRY_COMPILE, tiny + " --emit none -o " + path("tiny.ferry"),
       big + " --emit none -o " + path("big.ferry")},
      {"ferry-run .fy", FERRY_RUN, tiny + runFlags, big + runFlags},
      {"ferry-run .ferry", FERRY_RUN, shellQuote(path("tiny.ferry")) + runFlags,
       shellQuote(path("big.ferry")) + runFlags},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    Result small = runTool(c.binary, c.tinyArgs);
    ASSERT_EQ(small.exit, 0) << small.err;
    Result large = runTool(c.binary, c.bigArgs);
    ASSERT_EQ(large.exit, 0) << large.err;
    const long bound = small.maxRssKiB + kWeightKiB * 12 / 10 + kWorkspaceKiB;
    EXPECT_LE(large.maxRssKiB, bound)
        << c.what << ": " << large.maxRssKiB << " KiB at peak for " << kWeightKiB
        << " KiB of weights; the tiny model took " << small.maxRssKiB << " KiB";
  }
}

// The ~260-byte model of five 4 GiB params (each within the per-param limit) is refused by both
// tools for its 20 GiB total, at once, in the memory of a tiny model; --max-total-param-bytes
// sets the limit for .fy models and saved executables alike.
TEST_F(WeightsOnce, TheTotalParamLimitRefusesAModelBeforeAllocatingIt) {
  std::string text = "graph huge {\n";
  for (int i = 0; i < 5; ++i)
    text += "  param %w" + std::to_string(i) + " : f32[1073741824] = ones\n";
  text += "  output %w0, %w1, %w2, %w3, %w4\n}\n";
  const std::string huge = shellQuote(write("huge.fy", text));
  for (const char *binary : {FERRY_COMPILE, FERRY_RUN}) {
    SCOPED_TRACE(binary);
    Result r = runTool(binary, huge + (binary == std::string(FERRY_RUN) ? " --random-inputs" : ""));
    EXPECT_EQ(r.exit, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "huge.fy:6:9: error: the graph's params declare 21474836480 bytes "
                                "together, more than the limit of 17179869184 bytes"))
        << r.err;
#ifndef FERRY_SANITIZED
    EXPECT_LT(r.maxRssKiB, 64 * 1024);
#endif
  }
  const std::string small = shellQuote(write("small.fy", model(16)));
  Result compiled = runTool(FERRY_COMPILE, small + " --max-total-param-bytes 1023");
  EXPECT_EQ(compiled.exit, 1);
  EXPECT_TRUE(contains(compiled.err, "declare 1024 bytes together, more than the limit of 1023"))
      << compiled.err;
  ASSERT_EQ(runTool(FERRY_COMPILE, small + " --emit none --max-total-param-bytes 1024 -o " +
                                       path("small.ferry"))
                .exit,
            0);
  Result loaded = runTool(FERRY_RUN, path("small.ferry") + " --random-inputs --max-total-param-bytes 1023");
  EXPECT_EQ(loaded.exit, 2);
  EXPECT_TRUE(contains(loaded.err, "the weights need more than the limit of 1023 bytes in all"))
      << loaded.err;
  EXPECT_EQ(runTool(FERRY_RUN, path("small.ferry") + " --random-inputs --max-total-param-bytes 1024")
                .exit,
            0);
  Result zero = runTool(FERRY_RUN, small + " --max-total-param-bytes 0");
  EXPECT_EQ(zero.exit, 2);
  EXPECT_TRUE(contains(zero.err, "--max-total-param-bytes: expected a positive integer, got '0'"))
      << zero.err;
}

}  // namespace
}  // namespace ferry
