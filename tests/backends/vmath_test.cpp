// tests/backends/vmath_test.cpp — backends/cpu/vmath against std:: for every ISA this machine
// runs: each f32 function over every f32 of a range (bit pattern by bit pattern) with its
// largest error in ulp asserted, f64 over random samples against long double, the special values
// (NaN, infinities, signed zeros, subnormals, overflow and underflow), array tails of every
// length up to three vectors, and in-place calls.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/vmath.h"

namespace ferry::cpu {
namespace {

using F32 = VmathTable::F32;
using F64 = VmathTable::F64;

// ---- References: the true value in double (f32) or long double (f64) ------------------------

template <class R> R sigmoidRef(R x) {
  return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
}
template <class R> R siluRef(R x) { return x * sigmoidRef(x); }
// erfc, not 1 + erf: double's 1 + erf(x) is 0 below x = -8.3 where gelu is not.
template <class R> R geluErfRef(R x) { return R(0.5) * x * std::erfc(-x / std::sqrt(R(2))); }
// 1 + tanh u = 2 sigmoid(2u), for the same reason.
template <class R> R geluTanhRef(R x) {
  const R k0 = std::sqrt(R(2) / std::numbers::pi_v<R>);
  return x * sigmoidRef(R(2) * k0 * (x + R(0.044715L) * x * x * x));
}

struct Function {
  const char *name;
  F32 VmathTable::*f32;
  F64 VmathTable::*f64;
  double (*ref)(double);
  long double (*refLong)(long double);
  float lo, hi;   // the f32 sweep: every float in [lo, hi]
  double maxUlp;  // the largest error allowed, f32 and f64
};

// SLEEF's u10 bound, 1 ulp, as this file measures it: against the ulp of the true value, which
// is half the result's just below a power of two (tanh of tiny x gives 1.00000002 there).
constexpr double kU10 = 1.001;

// erf: 2.5 ulp, not 1: SLEEF's scalar erff loses bits near the smallest normals (2.02 ulp at
// -1.26e-38). tanh: 2 ulp in f32, whose polynomial and (1 - e) / (1 + e) are vmath's own. The
// gelus: 5 ulp, a product of several rounded factors (4.15 ulp at x = -13.09, where e^ runs
// shifted).
const Function kFunctions[] = {
    {"exp", &VmathTable::expF32, &VmathTable::expF64, [](double x) { return std::exp(x); },
     [](long double x) { return std::exp(x); }, -104.f, 89.f, kU10},
    {"log", &VmathTable::logF32, &VmathTable::logF64, [](double x) { return std::log(x); },
     [](long double x) { return std::log(x); }, 0.f, 1e6f, kU10},
    {"tanh", &VmathTable::tanhF32, &VmathTable::tanhF64, [](double x) { return std::tanh(x); },
     [](long double x) { return std::tanh(x); }, -20.f, 20.f, 2.0},
    {"erf", &VmathTable::erfF32, &VmathTable::erfF64, [](double x) { return std::erf(x); },
     [](long double x) { return std::erf(x); }, -20.f, 20.f, 2.5},
    {"sigmoid", &VmathTable::sigmoidF32, &VmathTable::sigmoidF64, sigmoidRef<double>,
     sigmoidRef<long double>, -20.f, 20.f, 3.0},
    {"silu", &VmathTable::siluF32, &VmathTable::siluF64, siluRef<double>, siluRef<long double>,
     -20.f, 20.f, 4.0},
    {"gelu_erf", &VmathTable::geluErfF32, &VmathTable::geluErfF64, geluErfRef<double>,
     geluErfRef<long double>, -20.f, 20.f, 5.0},
    {"gelu_tanh", &VmathTable::geluTanhF32, &VmathTable::geluTanhF64, geluTanhRef<double>,
     geluTanhRef<long double>, -20.f, 20.f, 5.0},
    {"sqrt", &VmathTable::sqrtF32, &VmathTable::sqrtF64, [](double x) { return std::sqrt(x); },
     [](long double x) { return std::sqrt(x); }, 0.f, 1e6f, 0.5},
    {"rsqrt", &VmathTable::rsqrtF32, &VmathTable::rsqrtF64,
     [](double x) { return 1 / std::sqrt(x); }, [](long double x) { return 1 / std::sqrt(x); }, 0.f,
     1e6f, 1.5},
};

// The error of `got` in units in the last place of the true value `ref`, for T's precision
// (subnormals: the smallest subnormal's spacing). Infinite when only one side is NaN or
// infinite, or an infinity has the wrong sign; 0 when both are the same special value.
template <class T, class R> double ulpError(T got, R ref) {
  const T rounded = static_cast<T>(ref);
  if (std::isnan(ref) || std::isnan(got))
    return std::isnan(ref) && std::isnan(got) ? 0 : std::numeric_limits<double>::infinity();
  if (std::isinf(rounded) || std::isinf(got))
    return rounded == got ? 0 : std::numeric_limits<double>::infinity();
  constexpr int digits = std::numeric_limits<T>::digits;
  constexpr int minExp = std::numeric_limits<T>::min_exponent - 1;  // of the smallest normal
  const int e = ref == 0 ? minExp : std::max(std::ilogb(ref), minExp);
  const R ulp = std::ldexp(R(1), e - (digits - 1));
  return static_cast<double>(std::fabs(static_cast<R>(got) - ref) / ulp);
}

// Floats in order: -0 and +0 share key 0, the rest of the negatives below it.
int64_t keyOf(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  return u & 0x80000000u ? -static_cast<int64_t>(u & 0x7fffffffu) : static_cast<int64_t>(u);
}
float floatOf(int64_t key) {
  return key < 0 ? std::bit_cast<float>(0x80000000u | static_cast<uint32_t>(-key))
                 : std::bit_cast<float>(static_cast<uint32_t>(key));
}

// The sweep takes every 61st float of the range (a prime: all the low mantissa bits come round),
// ~36 million for exp, in a second or two a function. FERRY_VMATH_STRIDE=1 takes every float
// (minutes a function; bench/README.md records such a run).
int64_t sweepStride() {
  const char *s = std::getenv("FERRY_VMATH_STRIDE");
  return s ? std::max(1L, std::atol(s)) : 61;
}

std::vector<VmathIsa> availableIsas() {
  std::vector<VmathIsa> isas;
  for (VmathIsa isa : {VmathIsa::Scalar, VmathIsa::Avx2, VmathIsa::Avx512})
    if (vmathTable(isa)) isas.push_back(isa);
  return isas;
}

// ---- Every f32 of each range (by sweepStride) through the widest ISA, which the kernels run;
// the narrower ones, which share its formulas, through every 61st of those -----------------

class VmathF32Sweep : public ::testing::TestWithParam<Function> {};

TEST_P(VmathF32Sweep, EveryFloatOfTheRangeWithinItsUlpBound) {
  const Function &fn = GetParam();
  const std::vector<VmathIsa> isas = availableIsas();
  constexpr int64_t kChunk = 4096;
  std::vector<float> x(kChunk), y(kChunk);
  for (VmathIsa isa : isas) {
    const F32 f = vmathTable(isa)->*fn.f32;
    const int64_t stride = sweepStride() * (isa == isas.back() ? 1 : 61);
    double worst = 0;
    float worstX = 0;
    int64_t count = 0;
    for (int64_t k = keyOf(fn.lo); k <= keyOf(fn.hi);) {
      int64_t n = 0;
      for (; n < kChunk && k <= keyOf(fn.hi); ++n, k += stride) x[n] = floatOf(k);
      f(x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double e = ulpError(y[i], fn.ref(x[i]));
        if (e > worst) worst = e, worstX = x[i];
      }
      count += n;
    }
    EXPECT_LE(worst, fn.maxUlp) << fn.name << " on " << vmathIsaName(isa) << ": " << worst
                                << " ulp at x = " << worstX;
    EXPECT_EQ(count, (keyOf(fn.hi) - keyOf(fn.lo)) / stride + 1) << "the sweep missed floats";
    std::printf("%-9s %-6s max %.3f ulp at x = %.9g (%lld floats)\n", fn.name, vmathIsaName(isa),
                worst, static_cast<double>(worstX), static_cast<long long>(count));
  }
}

INSTANTIATE_TEST_SUITE_P(Vmath, VmathF32Sweep, ::testing::ValuesIn(kFunctions),
                         [](const auto &p) { return std::string(p.param.name); });

// ---- f64: random samples (uniform, and log-uniform magnitudes) against long double ----------

class VmathF64Samples : public ::testing::TestWithParam<Function> {};

TEST_P(VmathF64Samples, RandomDoublesWithinItsUlpBound) {
  const Function &fn = GetParam();
  std::mt19937_64 rng(20);
  constexpr int64_t kN = 200000;
  std::vector<double> x(kN), y(kN);
  // The f64 ranges are those of f32 (exp's: of f64's exp), so the results stay in range.
  const double lo = fn.f32 == &VmathTable::expF32 ? -745 : fn.lo;
  const double hi = fn.f32 == &VmathTable::expF32 ? 709 : fn.hi;
  std::uniform_real_distribution<double> uniform(lo, hi), expo(-40, std::log2(std::max(-lo, hi)));
  for (int64_t i = 0; i < kN; ++i) {
    if (i % 2) {
      x[i] = uniform(rng);
    } else {  // small magnitudes too, with the sign the range allows
      const double m = std::exp2(expo(rng));
      x[i] = lo < 0 && i % 4 == 0 ? -std::min(m, -lo) : std::min(m, hi);
    }
  }
  for (VmathIsa isa : availableIsas()) {
    (vmathTable(isa)->*fn.f64)(x.data(), y.data(), kN);
    double worst = 0, worstX = 0;
    for (int64_t i = 0; i < kN; ++i) {
      const double e = ulpError(y[i], fn.refLong(x[i]));
      if (e > worst) worst = e, worstX = x[i];
    }
    EXPECT_LE(worst, fn.maxUlp) << fn.name << " f64 on " << vmathIsaName(isa) << ": " << worst
                                << " ulp at x = " << worstX;
  }
}

INSTANTIATE_TEST_SUITE_P(Vmath, VmathF64Samples, ::testing::ValuesIn(kFunctions),
                         [](const auto &p) { return std::string(p.param.name); });

// ---- Special values: the reference's NaN, infinities and zero signs; finite within the bound --

template <class T, class R>
void expectSpecial(const Function &fn, VmathIsa isa, T x, T got, R ref) {
  const T want = static_cast<T>(ref);
  SCOPED_TRACE(std::string(fn.name) + " on " + vmathIsaName(isa) +
               " at x = " + std::to_string(static_cast<double>(x)));
  EXPECT_EQ(std::isnan(got), std::isnan(want)) << got << " vs " << want;
  if (std::isnan(want)) return;
  if (std::isinf(want) || want == 0) {
    EXPECT_EQ(got, want);
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << got << " vs " << want;
    return;
  }
  EXPECT_LE(ulpError(got, ref), fn.maxUlp) << got << " vs " << want;
}

template <class T> std::vector<T> specialInputs() {
  using L = std::numeric_limits<T>;
  return {L::quiet_NaN(),  -L::quiet_NaN(),  L::infinity(), -L::infinity(), T(0),        -T(0),
          L::denorm_min(), -L::denorm_min(), L::min(),      -L::min(),      L::max(),    -L::max(),
          T(1e-30),        T(-1e-30),        T(88.7228394), T(88.7228),     T(-87.3365), T(-103.97),
          T(-104),         T(-150),          T(9),          T(-9),          T(-14.2),    T(-11),
          T(30),           T(-30),           T(1e6),        T(-1e6)};
}

TEST(Vmath, SpecialValuesAreTheReferences) {
  const std::vector<float> xf = specialInputs<float>();
  const std::vector<double> xd = specialInputs<double>();
  std::vector<float> yf(xf.size());
  std::vector<double> yd(xd.size());
  for (VmathIsa isa : availableIsas()) {
    for (const Function &fn : kFunctions) {
      (vmathTable(isa)->*fn.f32)(xf.data(), yf.data(), static_cast<int64_t>(xf.size()));
      for (size_t i = 0; i < xf.size(); ++i) expectSpecial(fn, isa, xf[i], yf[i], fn.ref(xf[i]));
      (vmathTable(isa)->*fn.f64)(xd.data(), yd.data(), static_cast<int64_t>(xd.size()));
      for (size_t i = 0; i < xd.size(); ++i)
        expectSpecial(fn, isa, xd[i], yd[i], fn.refLong(xd[i]));
    }
  }
}

TEST(Vmath, UnderflowAndOverflowAsStd) {
  for (VmathIsa isa : availableIsas()) {
    const VmathTable &t = *vmathTable(isa);
    const float x[] = {-104.f, -103.2f, -88.f, 88.8f, 200.f};
    float y[5];
    t.expF32(x, y, 5);
    EXPECT_EQ(y[0], 0.f) << vmathIsaName(isa);  // below the smallest subnormal
    EXPECT_TRUE(y[1] > 0 && y[1] < std::numeric_limits<float>::min()) << y[1];  // subnormal
    EXPECT_TRUE(y[2] > 0 && y[2] < std::numeric_limits<float>::min()) << y[2];
    EXPECT_EQ(y[3], std::numeric_limits<float>::infinity());
    EXPECT_EQ(y[4], std::numeric_limits<float>::infinity());
    t.sigmoidF32(x, y, 5);  // tiny, not 1 / (1 + inf) = 0
    EXPECT_GT(y[1], 0.f);
    EXPECT_EQ(y[4], 1.f);
    const float g[] = {-13.f, -9.f};
    t.geluErfF32(g, y, 2);  // erfc keeps them: 1 + erf(x / sqrt 2) would be 0
    EXPECT_LT(y[0], 0.f);
    EXPECT_LT(y[1], 0.f);
    t.geluTanhF32(g + 1, y, 1);
    EXPECT_LT(y[0], 0.f);
  }
}

// ---- Lengths and aliasing: every n up to three vectors, the same bits as one call per element,
// nothing written past n, and in place the same as out of place -------------------------------

TEST(Vmath, EveryLengthGivesTheElementwiseBitsAndWritesNothingPastN) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-6.f, 6.f);
  constexpr int64_t kMax = 3 * 16 + 1;
  std::vector<float> x(kMax);
  for (float &v : x) v = dist(rng);
  for (VmathIsa isa : availableIsas()) {
    for (const Function &fn : kFunctions) {
      const F32 f = vmathTable(isa)->*fn.f32;
      std::vector<float> one(kMax);
      for (int64_t i = 0; i < kMax; ++i) f(&x[i], &one[i], 1);
      for (int64_t n : {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 48, 49}) {
        std::vector<float> y(kMax + 1, -12345.f);
        f(x.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(one[i]))
              << fn.name << " on " << vmathIsaName(isa) << ", n = " << n << ", i = " << i;
        for (int64_t i = n; i <= kMax; ++i)
          ASSERT_EQ(y[i], -12345.f) << fn.name << " wrote element " << i << " of " << n;
      }
      std::vector<float> inPlace(x), outOfPlace(kMax);
      f(inPlace.data(), inPlace.data(), kMax);
      f(x.data(), outOfPlace.data(), kMax);
      for (int64_t i = 0; i < kMax; ++i)
        EXPECT_EQ(std::bit_cast<uint32_t>(inPlace[i]), std::bit_cast<uint32_t>(outOfPlace[i]))
            << fn.name << " in place on " << vmathIsaName(isa) << ", i = " << i;
      std::vector<double> xd(x.begin(), x.end()), yd(kMax), zd(xd);
      (vmathTable(isa)->*fn.f64)(xd.data(), yd.data(), 17);
      (vmathTable(isa)->*fn.f64)(zd.data(), zd.data(), 17);
      for (int64_t i = 0; i < 17; ++i)
        EXPECT_EQ(std::bit_cast<uint64_t>(yd[i]), std::bit_cast<uint64_t>(zd[i]));
      for (int64_t i = 17; i < kMax; ++i) EXPECT_EQ(zd[i], xd[i]) << "f64 wrote past n";
    }
  }
}

// The entry points run the widest ISA (or the one FERRY_VMATH_ISA names).
TEST(Vmath, EntryPointsRunTheChosenIsa) {
  const VmathTable *chosen = vmathTable(vmathIsa());
  ASSERT_NE(chosen, nullptr);
  if (!std::getenv("FERRY_VMATH_ISA")) {
    EXPECT_EQ(vmathIsa(), availableIsas().back());
  }
  float x[33], a[33], b[33];
  for (int i = 0; i < 33; ++i) x[i] = static_cast<float>(i) * 0.37f - 6;
  geluTanhF32(x, a, 33);
  chosen->geluTanhF32(x, b, 33);
  for (int i = 0; i < 33; ++i) EXPECT_EQ(a[i], b[i]);
}

}  // namespace
}  // namespace ferry::cpu
