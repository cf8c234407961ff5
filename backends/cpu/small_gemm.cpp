// backends/cpu/small_gemm.cpp — matmul and linear on small f32/f64 matrices as plain loops.
//
// Below a few thousand multiply-adds a BLAS call costs more than its arithmetic (argument
// checks, packing, the pool's split): on a chain of 4x4 f32 matmuls a whole step, dispatch
// included, took about 200 ns through sgemm and about 90 ns here (bench/README.md,
// "ferry-bench-overhead"). The loops are the textbook ones the compiler vectorises over the
// result's row (matmul) or the shared dimension (linear); everything about the shapes is decided
// when the step is prepared. Sums are accumulated in the element type, as sgemm/dgemm do.
#include <algorithm>
#include <optional>

#include "backends/cpu/kernels.h"

namespace ferry::cpu {

namespace {

// Multiply-adds (m·n·k) up to which the loops are used: 16·16·32. Chosen, not yet measured
// against sgemm at each size (the crossover is the next benchmark to add).
constexpr int64_t kSmallWork = 8192;

struct Geometry {
  int64_t m = 0, n = 0, k = 0;
  bool linear = false;  // b is W [n, k] read transposed, plus an optional bias [n]
  bool bias = false;
};

// The geometry of a step the loops can run, or nothing.
std::optional<Geometry> geometry(const StepSpec &step) {
  const DType t = step.result.dtype;
  if (t != DType::F32 && t != DType::F64) return std::nullopt;
  for (const TensorType &o : step.operands)
    if (o.dtype != t) return std::nullopt;
  Geometry g;
  if (step.op.kind == OpKind::Matmul) {
    const Shape &a = step.operands[0].shape, &b = step.operands[1].shape;
    // A batch of rows times one matrix: every row of `a` in one product.
    if (a.size() < 2 || b.size() != 2 || a.back() != b[0]) return std::nullopt;
    g.k = b[0], g.n = b[1], g.m = numel(a) / std::max<int64_t>(g.k, 1);
  } else if (step.op.kind == OpKind::Linear) {
    const Shape &x = step.operands[0].shape, &w = step.operands[1].shape;
    if (x.empty() || w.size() != 2 || x.back() != w[1]) return std::nullopt;
    g.k = w[1], g.n = w[0], g.m = numel(x) / std::max<int64_t>(g.k, 1);
    g.linear = true;
    g.bias = step.operands.size() > 2;
  } else {
    return std::nullopt;
  }
  // The result must be the one the op gives (rows of `a` or `x` with n columns), and the bias [n].
  Shape want(step.operands[0].shape.begin(), step.operands[0].shape.end() - 1);
  want.push_back(g.n);
  if (g.k == 0 || step.result.shape != want) return std::nullopt;
  if (g.bias && step.operands[2].shape != Shape{g.n}) return std::nullopt;
  if (g.m * g.n * g.k > kSmallWork) return std::nullopt;
  return g;
}

template <class T> class SmallGemm final : public Kernel {
 public:
  explicit SmallGemm(Geometry g) : g_(g) {}

  Status run(const KernelArgs &args) const override {
    const T *a = reinterpret_cast<const T *>(args.operands[0]);
    const T *b = reinterpret_cast<const T *>(args.operands[1]);
    T *c = reinterpret_cast<T *>(args.result);
    const int64_t m = g_.m, n = g_.n, k = g_.k;
    if (!g_.linear) {
      for (int64_t i = 0; i < m; ++i) {
        T *row = c + i * n;
        std::fill_n(row, n, T(0));
        for (int64_t p = 0; p < k; ++p) {
          const T x = a[i * k + p];
          const T *bp = b + p * n;
          for (int64_t j = 0; j < n; ++j) row[j] += x * bp[j];
        }
      }
      return Status();
    }
    const T *bias = g_.bias ? reinterpret_cast<const T *>(args.operands[2]) : nullptr;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const T *x = a + i * k, *w = b + j * k;
        T sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += x[p] * w[p];
        c[i * n + j] = bias ? sum + bias[j] : sum;
      }
    return Status();
  }

 private:
  Geometry g_;
};

}  // namespace

bool smallGemmApplies(const StepSpec &step) { return geometry(step).has_value(); }

std::unique_ptr<Kernel> prepareSmallGemm(const StepSpec &step) {
  const Geometry g = *geometry(step);
  if (step.result.dtype == DType::F32) return std::make_unique<SmallGemm<float>>(g);
  return std::make_unique<SmallGemm<double>>(g);
}

}  // namespace ferry::cpu
