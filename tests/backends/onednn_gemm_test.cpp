// tests/backends/onednn_gemm_test.cpp — the CPU backend's oneDNN GEMMs
// (backends/cpu/onednn_gemm.h): products against a double loop over many shapes (b transposed or
// not, bias, accumulate, padded leading dimensions whose padding must survive), row and column
// panels over the pool, a constant b packed once within a byte budget (and refused at another
// address), one GEMM run from several threads at once, the shapes make() declines, the on/off
// switch, and FERRY_CPU_GEMM's values.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/onednn_gemm.h"
#include "backends/cpu/parallel.h"

// libgomp's, the OpenMP runtime oneDNN runs on (backends/cpu/onednn_impl.h declares them too);
// weak, so that a build without oneDNN (and libgomp) links.
extern "C" int omp_get_max_threads(void) __attribute__((weak));
extern "C" void omp_set_num_threads(int) __attribute__((weak));

namespace ferry::cpu {
namespace {

constexpr float kPad = -7777.0f;  // c's padding and the words past its end: must survive a run
constexpr int64_t kGuard = 8;     // words past the end of c
const float kNaN = std::numeric_limits<float>::quiet_NaN();  // a's and b's padding: never read
constexpr uint64_t kLargeBudget = uint64_t{1} << 40;

bool haveOnednn() { return *onednnVersion() != '\0'; }
#define FERRY_NEED_ONEDNN()                                                                        \
  if (!haveOnednn()) GTEST_SKIP() << "this build of ferry has no oneDNN (no libdnnl-dev)"

// setOnednnEnabled(on) for a scope, the previous choice restored on every way out.
struct OnednnSwitch {
  bool before = onednnEnabled();
  explicit OnednnSwitch(bool on) { setOnednnEnabled(on); }
  ~OnednnSwitch() { setOnednnEnabled(before); }
};

// Padded: lda = k + 3, ldb = (transB ? k : n) + 5, ldc = n + 2; else dense.
GemmShape shape(int64_t m, int64_t n, int64_t k, bool transB = false, bool bias = false,
                bool acc = false, bool padded = false) {
  const int64_t pad = padded ? 1 : 0;
  return {m, n, k, k + 3 * pad, (transB ? k : n) + 5 * pad, n + 2 * pad, transB, bias, acc};
}

std::string str(const GemmShape &s) {
  return "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
         " lda=" + std::to_string(s.lda) + " ldb=" + std::to_string(s.ldb) +
         " ldc=" + std::to_string(s.ldc) + (s.transB ? " transB" : "") + (s.bias ? " bias" : "") +
         (s.accumulate ? " accumulate" : "");
}

// One GEMM's operands laid out as its shape says, and the result a double loop gives.
struct Problem {
  GemmShape s;
  std::vector<float> a, b, bias, c;  // c: before a run (NaN in the matrix unless accumulating)
  std::vector<double> want, bound;   // [m·n]: the reference and the error f32 sums allow
};

// Random operands (b and bias those of `shareB` when given). The bound is (k + 4)·u·Σ|terms|: k
// products, bias and c summed in f32 in any order round at most k + 2 times on any path.
Problem makeProblem(const GemmShape &s, uint32_t seed, const Problem *shareB = nullptr) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Problem p{s};
  p.a.assign(s.m * s.lda, kNaN);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t kk = 0; kk < s.k; ++kk) p.a[i * s.lda + kk] = u(rng);
  auto bAt = [&](int64_t kk, int64_t j) { return s.transB ? j * s.ldb + kk : kk * s.ldb + j; };
  if (shareB) {
    p.b = shareB->b, p.bias = shareB->bias;
  } else {
    p.b.assign((s.transB ? s.n : s.k) * s.ldb, kNaN);
    for (int64_t kk = 0; kk < s.k; ++kk)
      for (int64_t j = 0; j < s.n; ++j) p.b[bAt(kk, j)] = u(rng);
    for (int64_t j = 0; s.bias && j < s.n; ++j) p.bias.push_back(u(rng));
  }
  p.c.assign(s.m * s.ldc + kGuard, kPad);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) p.c[i * s.ldc + j] = s.accumulate ? u(rng) : kNaN;
  std::vector<double> b(s.k * s.n), sum(s.n), mag(s.n);  // b as a dense [k, n]
  for (int64_t kk = 0; kk < s.k; ++kk)
    for (int64_t j = 0; j < s.n; ++j) b[kk * s.n + j] = p.b[bAt(kk, j)];
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      const double c0 = s.accumulate ? p.c[i * s.ldc + j] : 0, bias = s.bias ? p.bias[j] : 0;
      sum[j] = c0 + bias, mag[j] = std::fabs(c0) + std::fabs(bias);
    }
    for (int64_t kk = 0; kk < s.k; ++kk)
      for (int64_t j = 0; j < s.n; ++j) {
        const double term = p.a[i * s.lda + kk] * b[kk * s.n + j];
        sum[j] += term, mag[j] += std::fabs(term);
      }
    for (int64_t j = 0; j < s.n; ++j)
      p.want.push_back(sum[j]), p.bound.push_back((s.k + 4) * 0x1p-24 * mag[j]);
  }
  return p;
}

// Runs `g` on p's operands (b at `b` when given) into a copy of p.c; compares the matrix with the
// reference and every other word of c with what it held.
::testing::AssertionResult runAndCompare(const OnednnGemm &g, const Problem &p,
                                         const float *b = nullptr) {
  const GemmShape &s = p.s;
  std::vector<float> c = p.c;
  const Status st = g.run(p.a.data(), b ? b : p.b.data(), s.bias ? p.bias.data() : nullptr, &c[0]);
  if (!st.ok()) return ::testing::AssertionFailure() << str(s) << ": " << st.message();
  for (int64_t w = 0; w < static_cast<int64_t>(c.size()); ++w) {
    const int64_t i = w / s.ldc, j = w % s.ldc;
    if (i < s.m && j < s.n) {
      const double want = p.want[i * s.n + j], bound = p.bound[i * s.n + j];
      if (!(std::fabs(c[w] - want) <= bound))
        return ::testing::AssertionFailure() << str(s) << ": c[" << i << "][" << j << "] = " << c[w]
                                             << ", want " << want << " within " << bound;
    } else if (std::memcmp(&c[w], &p.c[w], sizeof(float)) != 0) {
      return ::testing::AssertionFailure() << str(s) << ": word " << w << " (row " << i
                                           << ", column " << j << ") became " << c[w];
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(OnednnGemm, EveryShapeAndLayoutGivesTheProductOfTheReference) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  int v = 0;  // its 4 bits: transB, bias, accumulate, padded (all 16 mixes, over many shapes)
  for (int64_t k : {1, 3, 784})
    for (int64_t m : {1, 2, 7, 8, 16, 31, 33, 64, 200})
      for (int64_t n : {1, 5, 64, 130, 1024}) {
        const GemmShape s = shape(m, n, k, v & 1, v & 2, v & 4, v & 8);
        const auto g = OnednnGemm::make(s);
        ASSERT_NE(g, nullptr) << str(s);
        EXPECT_TRUE(runAndCompare(*g, makeProblem(s, v++)));
      }
}

TEST(OnednnGemm, RowAndColumnPanelsGiveTheProductOfTheReference) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  // 200 and 33 rows split by rows; 7 and 2 rows (under a row panel's 8) split by columns.
  for (auto [m, n] : {std::pair{200, 64}, {33, 130}, {7, 1024}, {2, 1024}})
    for (int v = 0; v < 4; ++v) {
      const GemmShape s = shape(m, n, 784, v & 1, v & 2, v & 1, v & 2);
      const auto g = OnednnGemm::make(s);
      ASSERT_NE(g, nullptr) << str(s);
      EXPECT_TRUE(poolThreads() == 1 || g->panels() > 1) << str(s) << ": " << g->panels();
      EXPECT_TRUE(runAndCompare(*g, makeProblem(s, 7 + v)));
    }
}

// The calling thread may be the app's: its OpenMP setting is what it was after making and
// running a GEMM (oneDNN is called with one OpenMP thread only inside ferry's calls), and the
// result is right.
TEST(OnednnGemm, LeavesTheCallingThreadsOpenmpSettingAsItWas) {
  FERRY_NEED_ONEDNN();
  if (omp_get_max_threads == nullptr) GTEST_SKIP() << "libgomp is not linked";
  OnednnSwitch on(true);
  const int before = omp_get_max_threads();
  omp_set_num_threads(3);
  const GemmShape s = shape(64, 256, 784, true, true, false, false);
  const auto g = OnednnGemm::make(s);
  ASSERT_NE(g, nullptr) << str(s);
  EXPECT_EQ(omp_get_max_threads(), 3) << "after make()";
  EXPECT_TRUE(runAndCompare(*g, makeProblem(s, 11)));
  EXPECT_EQ(omp_get_max_threads(), 3) << "after run()";
  omp_set_num_threads(before);
}

TEST(OnednnGemm, PacksAConstantBOnceForFewRowsWithinItsBudget) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  int v = 0;  // transB and padded take all four mixes over every 4 shapes
  for (int64_t m : {1, 8, 16, 32})
    for (int64_t n : {130, 1024}) {
      const GemmShape s = shape(m, n, 784, v & 1, v & 2, v & 4, (v ^ v >> 1) & 1);
      const Problem p = makeProblem(s, v++);
      uint64_t budget = kLargeBudget;
      const auto g = OnednnGemm::make(s, p.b.data(), &budget);
      ASSERT_NE(g, nullptr) << str(s);
      const uint64_t bytes = g->packedBytes();
      EXPECT_GE(bytes, static_cast<uint64_t>(s.k * s.n) * sizeof(float)) << str(s);  // all of b
      EXPECT_EQ(budget, kLargeBudget - bytes) << str(s);
      EXPECT_TRUE(runAndCompare(*g, p));
      EXPECT_TRUE(runAndCompare(*g, p));  // and again, from the same copy
      // b at another address (the same values) is refused, and c left as it was.
      const std::vector<float> moved = p.b;
      std::vector<float> c = p.c;
      const Status st = g->run(p.a.data(), moved.data(), s.bias ? p.bias.data() : nullptr, &c[0]);
      ASSERT_FALSE(st.ok()) << str(s);
      EXPECT_EQ(st.diagnostics()[0].code, "internal") << str(s);
      EXPECT_EQ(std::memcmp(c.data(), p.c.data(), c.size() * sizeof(float)), 0) << str(s);
      // A budget of exactly the copy's bytes takes it all; one byte less packs nothing.
      for (auto [given, packs] : {std::pair{bytes, bytes}, {bytes - 1, uint64_t{0}}}) {
        budget = given;
        const auto h = OnednnGemm::make(s, p.b.data(), &budget);
        ASSERT_NE(h, nullptr) << str(s);
        EXPECT_EQ(h->packedBytes(), packs) << str(s) << ", budget " << given;
        EXPECT_EQ(budget, given - packs) << str(s) << ", budget " << given;
      }
    }
}

TEST(OnednnGemm, PacksNothingForManyRowsATinyBudgetOrNoBudget) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  // 64 rows (past the 32 where packing pays), a large budget; 16 rows, 1 byte; 16 rows, none.
  for (int v = 0; v < 6; ++v) {
    const Problem p = makeProblem(shape(v < 2 ? 64 : 16, 130, 784, v & 1, v & 2, v & 1, v & 2), v);
    const uint64_t start = v < 2 ? kLargeBudget : 1;
    uint64_t budget = start;
    const auto g = OnednnGemm::make(p.s, p.b.data(), v < 4 ? &budget : nullptr);
    ASSERT_NE(g, nullptr) << str(p.s);
    EXPECT_EQ(g->packedBytes(), 0u) << str(p.s) << ", case " << v;
    EXPECT_EQ(budget, start) << str(p.s) << ", case " << v;
    const std::vector<float> moved = p.b;  // b read where it is: any address will do
    EXPECT_TRUE(runAndCompare(*g, p, moved.data())) << "case " << v;
  }
}

TEST(OnednnGemm, OneGemmRunsFromFourThreadsAtOnce) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  // b packed (16 rows) or as stored (64 rows, row panels); each thread its own a and c, b shared.
  for (int64_t m : {16, 64}) {
    const GemmShape s = shape(m, 130, 784, true, true, true, true);
    std::vector<Problem> problems{makeProblem(s, 40)};
    for (uint32_t t = 1; t < 4; ++t) problems.push_back(makeProblem(s, 40 + t, &problems[0]));
    uint64_t budget = kLargeBudget;
    const auto g = OnednnGemm::make(s, problems[0].b.data(), &budget);
    ASSERT_NE(g, nullptr) << str(s);
    EXPECT_EQ(g->packedBytes() > 0, m == 16) << str(s);
    std::vector<std::optional<::testing::AssertionResult>> failed(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50 && !failed[t]; ++i)
          if (auto r = runAndCompare(*g, problems[t], problems[0].b.data()); !r) failed[t] = r;
      });
    for (std::thread &t : threads) t.join();
    for (size_t t = 0; t < 4; ++t)
      EXPECT_FALSE(failed[t]) << "thread " << t << ": " << failed[t]->message();
  }
}

TEST(OnednnGemm, MakesNothingForEmptyOrOversizedShapesOrWhenSwitchedOff) {
  FERRY_NEED_ONEDNN();
  OnednnSwitch on(true);
  const int64_t big = int64_t{INT_MAX} + 1;
  GemmShape wideA = shape(1, 1, 1);
  wideA.lda = big;  // rows of a too far apart
  for (const GemmShape &s : {shape(0, 4, 4), shape(4, 0, 4), shape(4, 4, 0), shape(-1, 4, 4),
                             shape(big, 1, 1), shape(1, big, 1), shape(1, 1, big), wideA})
    EXPECT_EQ(OnednnGemm::make(s), nullptr) << str(s);
  const GemmShape fine = shape(8, 64, 16);
  EXPECT_NE(OnednnGemm::make(fine), nullptr);
  {
    OnednnSwitch off(false);
    EXPECT_FALSE(onednnEnabled());
    EXPECT_EQ(OnednnGemm::make(fine), nullptr);
  }
  EXPECT_TRUE(onednnEnabled());
  EXPECT_NE(OnednnGemm::make(fine), nullptr);
}

TEST(CpuGemmEnv, TakesOnednnOrOpenblasAndNamesTheVariableOtherwise) {
  const Expected<bool> openblas = parseCpuGemm("openblas"), onednn = parseCpuGemm("onednn");
  ASSERT_TRUE(openblas.ok()) << openblas.status().message();
  EXPECT_FALSE(*openblas);
  ASSERT_EQ(onednn.ok(), haveOnednn()) << onednn.status().message();  // no oneDNN: an error
  EXPECT_TRUE(!onednn.ok() || *onednn);
  for (const std::string bad : {"", "OneDNN", "blas", " onednn", "onednn ", "openblas\n"}) {
    const Expected<bool> got = parseCpuGemm(bad);
    ASSERT_FALSE(got.ok()) << bad;
    ASSERT_EQ(got.status().diagnostics().size(), 1u);
    EXPECT_EQ(got.status().diagnostics()[0].message,
              "FERRY_CPU_GEMM: expected onednn or openblas, got '" + bad + "'");
  }
}

TEST(CpuGemmEnv, CheckAcceptsUnsetEmptyAndTheTwoNamesOnly) {
  (void)onednnEnabled();  // the process's choice, read before the variable changes below
  const char *was = std::getenv(kCpuGemmEnv);
  const std::optional<std::string> saved = was ? std::optional<std::string>(was) : std::nullopt;
  const std::vector<std::pair<const char *, bool>> cases{
      {nullptr, true}, {"", true}, {"openblas", true}, {"onednn", haveOnednn()}, {"mkl", false}};
  for (auto [value, ok] : cases) {
    value ? setenv(kCpuGemmEnv, value, 1) : unsetenv(kCpuGemmEnv);
    const Status st = checkCpuGemmEnv();
    EXPECT_EQ(st.ok(), ok) << (value ? value : "(unset)") << ": " << st.message();
  }
  saved ? setenv(kCpuGemmEnv, saved->c_str(), 1) : unsetenv(kCpuGemmEnv);
}

}  // namespace
}  // namespace ferry::cpu
