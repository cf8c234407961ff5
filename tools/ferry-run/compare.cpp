// tools/ferry-run/compare.cpp — comparing an output with the expected tensor.
#include "tools/ferry-run/compare.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace ferry {

namespace {

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string shortNumber(double v) {
  if (std::isnan(v) || std::isinf(v)) return number(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The flat index `i` of `shape` as "[i0,i1,...]" ("[]" for a scalar).
std::string multiIndex(const Shape &shape, int64_t i) {
  std::string s;
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = shape[d] > 0 ? shape[d] : 1;
    s = std::to_string(i % n) + (s.empty() ? "" : ",") + s;
    i /= n;
  }
  return "[" + s + "]";
}

// A float pair: whether it agrees, and its errors (NaN when either is NaN).
bool closeEnough(double a, double b, Tolerance tol, double &abs, double &rel) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(a) || std::isnan(b)) {
    abs = rel = nan;
    return std::isnan(a) && std::isnan(b);
  }
  if (a == b) {  // equal infinities too, whose difference is NaN
    abs = rel = 0;
    return true;
  }
  abs = std::fabs(a - b);
  rel = b != 0 ? abs / std::fabs(b) : std::numeric_limits<double>::infinity();
  // An infinity matches only itself (numpy's isclose), though rtol * inf would take anything.
  if (std::isinf(a) || std::isinf(b)) return false;
  return abs <= tol.atol + tol.rtol * std::fabs(b);
}

}  // namespace

Comparison compareTensors(const TensorData &got, const TensorData &expected, Tolerance tol) {
  Comparison c;
  if (got.type() != expected.type()) {
    c.typeMismatch = "expected " + expected.type().str() + ", got " + got.type().str();
    return c;
  }
  const bool floating = isFloating(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double abs = 0, rel = 0;
    bool ok = false;
    if (floating) {
      ok = closeEnough(got.at(i), expected.at(i), tol, abs, rel);
    } else {
      const int64_t a = got.atInt(i), b = expected.atInt(i);
      ok = a == b;
      abs = std::fabs(static_cast<double>(a) - static_cast<double>(b));
      rel = ok       ? 0
            : b != 0 ? abs / std::fabs(static_cast<double>(b))
                     : std::numeric_limits<double>::infinity();
    }
    if (!std::isnan(abs)) {
      c.maxAbs = std::max(c.maxAbs, abs);
      c.maxRel = std::max(c.maxRel, rel);
    }
    if (!ok && c.beyond++ == 0) c.firstBeyond = i;
  }
  return c;
}

std::string describeComparison(const Comparison &c, const TensorData &got,
                               const TensorData &expected) {
  if (!c.typeMismatch.empty()) return "FAIL: " + c.typeMismatch;
  std::string s =
      "max abs error " + shortNumber(c.maxAbs) + ", max rel error " + shortNumber(c.maxRel);
  if (c.pass()) return s + ": pass";
  const bool floating = isFloating(expected.dtype());
  const auto value = [&](const TensorData &t) {
    return floating ? number(t.at(c.firstBeyond)) : std::to_string(t.atInt(c.firstBeyond));
  };
  return s + ": FAIL, " + std::to_string(c.beyond) + " of " + std::to_string(expected.numel()) +
         " elements " +
         (floating
              ? "beyond atol + rtol*|expected|"
              : "differ (" + std::string(dtypeName(expected.dtype())) + ": compared exactly)") +
         " (first at " + multiIndex(expected.shape(), c.firstBeyond) + ": got " + value(got) +
         ", expected " + value(expected) + ")";
}

}  // namespace ferry
