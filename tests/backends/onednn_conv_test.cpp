// tests/backends/onednn_conv_test.cpp — the CPU backend's oneDNN convolutions
// (backends/cpu/onednn_conv.h): conv2d against a double direct loop over many geometries
// (channels, groups and depthwise, kernels, strides, dilations, symmetric and asymmetric
// padding, bias), batch panels over the pool (an uneven split too), the shapes make() declines
// and the on/off switch, a constant weight packed once within a byte budget (and refused at
// another address), one convolution run from several threads at once, and a weight reordered at
// each launch when it is not packed.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/onednn_conv.h"
#include "backends/cpu/onednn_gemm.h"
#include "backends/cpu/parallel.h"

namespace ferry::cpu {
namespace {

constexpr float kPad = -7777.0f;  // the words before and after y: must survive a run
constexpr int64_t kGuard = 8;     // words on each side of y
const float kNaN = std::numeric_limits<float>::quiet_NaN();  // y before a run: all overwritten
constexpr uint64_t kLargeBudget = uint64_t{1} << 40;

#define FERRY_NEED_ONEDNN()                                                                        \
  if (*onednnVersion() == '\0') GTEST_SKIP() << "this build of ferry has no oneDNN (no libdnnl-dev)"

// setOnednnEnabled(on) for a scope, the previous choice restored on every way out.
struct OnednnSwitch {
  bool before = onednnEnabled();
  explicit OnednnSwitch(bool on) { setOnednnEnabled(on); }
  ~OnednnSwitch() { setOnednnEnabled(before); }
};

// x [n, c, h, w] through an o×(c/groups)×kh×kw weight; ho and wo follow from the rest.
ConvShape conv(int64_t n, int64_t c, int64_t o, int64_t kh, int64_t kw, int64_t groups = 1,
               int64_t stride = 1, int64_t dilation = 1, std::array<int64_t, 4> pad = {},
               bool bias = false, int64_t h = 11, int64_t w = 10) {
  ConvShape s{n, c, h, w, o, kh, kw, groups};
  s.sh = s.sw = stride, s.dh = s.dw = dilation;
  s.pt = pad[0], s.pl = pad[1], s.pb = pad[2], s.pr = pad[3], s.bias = bias;
  s.ho = (h + s.pt + s.pb - dilation * (kh - 1) - 1) / stride + 1;
  s.wo = (w + s.pl + s.pr - dilation * (kw - 1) - 1) / stride + 1;
  return s;
}

std::string str(const ConvShape &s) {
  auto d = [](int64_t v) { return std::to_string(v); };
  return "n=" + d(s.n) + " c=" + d(s.c) + " h×w=" + d(s.h) + "×" + d(s.w) + " o=" + d(s.o) +
         " k=" + d(s.kh) + "×" + d(s.kw) + " groups=" + d(s.groups) + " out=" + d(s.ho) + "×" +
         d(s.wo) + " stride=" + d(s.sh) + "," + d(s.sw) + " dilation=" + d(s.dh) + "," + d(s.dw) +
         " pad=" + d(s.pt) + "," + d(s.pl) + "," + d(s.pb) + "," + d(s.pr) + (s.bias ? " bias" : "");
}

// One convolution's operands and the result a double direct loop gives.
struct Problem {
  ConvShape s;
  std::vector<float> x, weight, bias;
  std::vector<double> want, bound;  // [n·o·ho·wo]: the reference and the error f32 sums allow
};

// Random operands (weight and bias those of `shareWeight` when given). The bound is
// (K + 4)·u·(Σ|x·w| + |bias|), K = c/groups·kh·kw: K products and a bias summed in f32 in any
// order round at most K + 1 times.
Problem makeProblem(const ConvShape &s, uint32_t seed, const Problem *shareWeight = nullptr) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Problem p{s};
  const int64_t cg = s.c / s.groups, og = s.o / s.groups, k = cg * s.kh * s.kw;
  for (int64_t i = 0; i < s.n * s.c * s.h * s.w; ++i) p.x.push_back(u(rng));
  if (shareWeight) {
    p.weight = shareWeight->weight, p.bias = shareWeight->bias;
  } else {
    for (int64_t i = 0; i < s.o * k; ++i) p.weight.push_back(u(rng));
    for (int64_t i = 0; s.bias && i < s.o; ++i) p.bias.push_back(u(rng));
  }
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oc = 0; oc < s.o; ++oc)
      for (int64_t oy = 0; oy < s.ho; ++oy)
        for (int64_t ox = 0; ox < s.wo; ++ox) {
          double sum = s.bias ? p.bias[oc] : 0, mag = std::fabs(sum);
          const int64_t c0 = oc / og * cg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < s.kh; ++ky)
              for (int64_t kx = 0; kx < s.kw; ++kx) {
                const int64_t iy = oy * s.sh - s.pt + ky * s.dh, ix = ox * s.sw - s.pl + kx * s.dw;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                const double term = double(p.x[((b * s.c + c0 + ci) * s.h + iy) * s.w + ix]) *
                                    p.weight[((oc * cg + ci) * s.kh + ky) * s.kw + kx];
                sum += term, mag += std::fabs(term);
              }
          p.want.push_back(sum), p.bound.push_back((k + 4) * 0x1p-24 * mag);
        }
  return p;
}

// Runs `g` on p's operands (the weight at `weight` when given) into y with kGuard marker words
// on each side; compares y with the reference and the markers with kPad.
::testing::AssertionResult runAndCompare(const OnednnConv &g, const Problem &p,
                                         const float *weight = nullptr) {
  const int64_t size = static_cast<int64_t>(p.want.size());
  std::vector<float> y(size + 2 * kGuard, kPad);
  std::fill(y.begin() + kGuard, y.end() - kGuard, kNaN);
  const Status st = g.run(p.x.data(), weight ? weight : p.weight.data(),
                          p.s.bias ? p.bias.data() : nullptr, &y[kGuard]);
  if (!st.ok()) return ::testing::AssertionFailure() << str(p.s) << ": " << st.message();
  for (int64_t i = 0; i < size; ++i)
    if (!(std::fabs(y[kGuard + i] - p.want[i]) <= p.bound[i]))
      return ::testing::AssertionFailure() << str(p.s) << ": y[" << i << "] = " << y[kGuard + i]
                                           << ", want " << p.want[i] << " within " << p.bound[i];
  for (int64_t i : {int64_t{0}, size + kGuard})
    for (int64_t j = i; j < i + kGuard; ++j)
      if (std::memcmp(&y[j], &kPad, sizeof(float)) != 0)
        return ::testing::AssertionFailure() << str(p.s) << ": marker " << j - kGuard
                                             << " (relative to y) became " << y[j];
  return ::testing::AssertionSuccess();
}

TEST(OnednnConv, EveryGeometryGivesTheConvolutionOfTheReference) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  const int64_t t = poolThreads(), batches[] = {t, t + 1, 2 * t};  // 2, 3, 4 on two threads
  const std::array<int64_t, 4> pads[] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {1, 0, 2, 1}};  // [1]: k/2
  struct Channels { int64_t c, o, groups; };
  int v = 0;  // its bits: stride 2, dilation 2, bias; v % 3 the padding, v / 3 % 3 the batch
  for (Channels ch : {Channels{1, 16, 1}, {3, 16, 1}, {16, 64, 1}, {64, 64, 1}, {16, 6, 2},
                      {64, 16, 2}, {16, 16, 16}, {64, 64, 64}})
    for (auto [kh, kw] : {std::pair{3, 3}, {5, 5}, {1, 1}, {1, 3}})
      for (int rep = 0; rep < 4; ++rep, ++v) {
        std::array<int64_t, 4> pad = pads[v % 3];
        if (v % 3 == 1) pad = {kh / 2, kw / 2, kh / 2, kw / 2};
        const ConvShape s = conv(batches[v / 3 % 3], ch.c, ch.o, kh, kw, ch.groups, 1 + (v & 1),
                                 1 + (v >> 1 & 1), pad, v >> 2 & 1);
        const auto g = OnednnConv::make(s);
        ASSERT_NE(g, nullptr) << str(s);
        EXPECT_EQ(g->panels(), t) << str(s);
        EXPECT_TRUE(runAndCompare(*g, makeProblem(s, v)));
      }
}

TEST(OnednnConv, AnUnevenBatchSplitsIntoOnePanelPerPoolThread) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  const int64_t n = 2 * poolThreads() + 1;
  for (const ConvShape &s : {conv(n, 16, 16, 3, 3, 1, 1, 1, {1, 1, 1, 1}, true),
                             conv(n, 64, 64, 3, 3, 2, 2, 1, {1, 0, 2, 1}),
                             conv(n, 16, 16, 5, 5, 16, 1, 2, {2, 2, 2, 2}, true)})
    for (bool packed : {false, true}) {
      const Problem p = makeProblem(s, 3);
      uint64_t budget = kLargeBudget;
      const auto g = OnednnConv::make(s, packed ? p.weight.data() : nullptr, &budget);
      ASSERT_NE(g, nullptr) << str(s);
      EXPECT_EQ(g->panels(), poolThreads()) << str(s);
      EXPECT_TRUE(runAndCompare(*g, p)) << (packed ? "packed" : "not packed");
    }
}

TEST(OnednnConv, MakesNothingForASmallBatchAnEmptyShapeOrWhenSwitchedOff) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  const ConvShape fine = conv(poolThreads(), 16, 16, 3, 3);
  EXPECT_NE(OnednnConv::make(fine), nullptr) << str(fine);
  for (int64_t ConvShape::*field : {&ConvShape::n, &ConvShape::c, &ConvShape::h, &ConvShape::w,
                                    &ConvShape::o, &ConvShape::kh, &ConvShape::kw, &ConvShape::ho,
                                    &ConvShape::wo}) {
    ConvShape s = fine;
    s.*field = 0;
    EXPECT_EQ(OnednnConv::make(s), nullptr) << str(s);
  }
  // Empty tensors whose output sizes agree with the rest (x of no rows, padded to a result).
  for (const ConvShape &s : {conv(poolThreads(), 0, 16, 3, 3), conv(poolThreads(), 16, 0, 3, 3),
                             conv(poolThreads(), 16, 16, 1, 1, 1, 1, 1, {1, 1, 1, 1}, false, 0, 0),
                             conv(poolThreads(), 16, 16, 0, 0)})
    EXPECT_EQ(OnednnConv::make(s), nullptr) << str(s);
  ConvShape noGroups = fine;
  noGroups.groups = 0;
  EXPECT_EQ(OnednnConv::make(noGroups), nullptr) << "groups 0";
  // Few channels in (under 8 per group) and out (under 16): left to linalg.cpp's path.
  for (const ConvShape &s : {conv(poolThreads(), 1, 6, 5, 5), conv(poolThreads(), 14, 6, 3, 3, 2)})
    EXPECT_EQ(OnednnConv::make(s), nullptr) << str(s);
  EXPECT_NE(OnednnConv::make(conv(poolThreads(), 1, 16, 5, 5)), nullptr);
  {
    OnednnSwitch off(false);
    EXPECT_FALSE(onednnEnabled());
    EXPECT_EQ(OnednnConv::make(fine), nullptr);
  }
  EXPECT_TRUE(onednnEnabled());
  EXPECT_NE(OnednnConv::make(fine), nullptr);
  if (poolThreads() == 1) GTEST_SKIP() << "one pool thread: no batch is smaller than the pool";
  const ConvShape small = conv(poolThreads() - 1, 16, 16, 3, 3);
  EXPECT_EQ(OnednnConv::make(small), nullptr) << str(small);
}

TEST(OnednnConv, PacksAConstantWeightOnceWithinItsBudget) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  const ConvShape s = conv(poolThreads(), 64, 64, 3, 3, 1, 1, 1, {1, 1, 1, 1}, true, 8, 8);
  const Problem p = makeProblem(s, 11);
  uint64_t budget = kLargeBudget;
  const auto g = OnednnConv::make(s, p.weight.data(), &budget);
  ASSERT_NE(g, nullptr) << str(s);
  const uint64_t bytes = g->packedBytes();
  EXPECT_GE(bytes, p.weight.size() * sizeof(float)) << g->implementation();  // a blocked copy
  EXPECT_EQ(budget, kLargeBudget - bytes);
  EXPECT_TRUE(runAndCompare(*g, p));
  EXPECT_TRUE(runAndCompare(*g, p));  // and again, from the same copy
  // The weight at another address (the same values) is refused, and y left as it was.
  const std::vector<float> moved = p.weight;
  std::vector<float> y(p.want.size(), kPad);
  const Status st = g->run(p.x.data(), moved.data(), p.bias.data(), y.data());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.diagnostics()[0].code, "internal");
  EXPECT_EQ(y, std::vector<float>(p.want.size(), kPad));
  // A budget of exactly the copy's bytes takes it all; one byte less, or none, packs nothing.
  for (auto [given, packs] : {std::pair{bytes, bytes}, {bytes - 1, uint64_t{0}}}) {
    budget = given;
    const auto h = OnednnConv::make(s, p.weight.data(), &budget);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->packedBytes(), packs) << "budget " << given;
    EXPECT_EQ(budget, given - packs) << "budget " << given;
    EXPECT_TRUE(runAndCompare(*h, p)) << "budget " << given;
  }
  const auto none = OnednnConv::make(s, p.weight.data(), nullptr);
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->packedBytes(), 0u);
  EXPECT_TRUE(runAndCompare(*none, p, moved.data()));  // read at each launch: any address
}

TEST(OnednnConv, OneConvolutionRunsFromFourThreadsAtOnce) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  const ConvShape s = conv(poolThreads() + 1, 64, 64, 3, 3, 1, 1, 1, {1, 0, 2, 1}, true, 8, 8);
  std::vector<Problem> problems{makeProblem(s, 40)};
  for (uint32_t t = 1; t < 4; ++t) problems.push_back(makeProblem(s, 40 + t, &problems[0]));
  for (bool packed : {false, true}) {  // each thread its own x and y, the weight shared
    uint64_t budget = kLargeBudget;
    const auto g = OnednnConv::make(s, packed ? problems[0].weight.data() : nullptr, &budget);
    ASSERT_NE(g, nullptr) << str(s);
    EXPECT_EQ(g->packedBytes() > 0, packed);
    std::vector<std::optional<::testing::AssertionResult>> failed(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 20 && !failed[t]; ++i)
          if (auto r = runAndCompare(*g, problems[t], problems[0].weight.data()); !r) failed[t] = r;
      });
    for (std::thread &t : threads) t.join();
    for (size_t t = 0; t < 4; ++t)
      EXPECT_FALSE(failed[t]) << (packed ? "packed" : "not packed") << ", thread " << t << ": "
                              << failed[t]->message();
  }
}

TEST(OnednnConv, AWeightNotPackedIsReadAtEachLaunch) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  for (const ConvShape &s : {conv(poolThreads(), 64, 64, 3, 3, 1, 1, 1, {1, 1, 1, 1}, true, 8, 8),
                             conv(poolThreads(), 32, 32, 3, 3, 32, 2, 1, {1, 1, 1, 1}, true, 8, 8)}) {
    const Problem a = makeProblem(s, 50), b = makeProblem(s, 51);
    const auto g = OnednnConv::make(s);
    ASSERT_NE(g, nullptr) << str(s);
    EXPECT_EQ(g->packedBytes(), 0u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(runAndCompare(*g, a)) << "weight a, launch " << i;
      EXPECT_TRUE(runAndCompare(*g, b)) << "weight b, launch " << i;
    }
  }
}

}  // namespace
}  // namespace ferry::cpu
