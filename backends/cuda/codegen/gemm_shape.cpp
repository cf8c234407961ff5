// backends/cuda/codegen/gemm_shape.cpp — matmul and linear as cuBLASLt's GEMM (gemm_shape.h).
#include "backends/cuda/codegen/gemm_shape.h"

namespace ferry::cuda {

namespace {

Status bad(OpKind op, const std::string &why) {
  return makeError("internal", "the CUDA GEMM of '" + std::string(opInfo(op).name) + "': " + why);
}

}  // namespace

Expected<GemmShape> gemmShape(OpKind op, std::span<const TensorType> operands,
                              const TensorType &result) {
  if (operands.size() < 2) return bad(op, "fewer than two operands");
  const Shape &x = operands[0].shape, &w = operands[1].shape;
  GemmShape g;
  if (op == OpKind::Linear) {
    if (w.size() != 2 || x.empty()) return bad(op, "a weight that is not 2-D, or a 0-D input");
    g.k = w[1];
    g.m = w[0];
    g.n = g.k == 0 ? numel(std::span(x).first(x.size() - 1)) : operands[0].numel() / g.k;
    g.transposeA = true;
    g.lda = g.k;  // the weight [N,K] row-major is K x N column-major
  } else if (op == OpKind::Matmul) {
    if (x.empty() || w.empty()) return bad(op, "a 0-D operand");
    const size_t rx = x.size(), rw = w.size();
    const int64_t rows = rx >= 2 ? x[rx - 2] : 1, cols = rw >= 2 ? w[rw - 1] : 1;
    g.k = x[rx - 1];
    g.m = cols;
    g.n = rows;
    g.lda = cols;  // [K,N] row-major is N x K column-major
    const Shape bx(x.begin(), x.end() - static_cast<std::ptrdiff_t>(std::min<size_t>(rx, 2)));
    const Shape bw(w.begin(), w.end() - static_cast<std::ptrdiff_t>(std::min<size_t>(rw, 2)));
    const Shape rb(result.shape.begin(),
                   result.shape.end() - static_cast<std::ptrdiff_t>((rx >= 2) + (rw >= 2)));
    const int64_t batches = numel(rb);
    const int64_t matX = rows * g.k, matW = g.k * cols, matD = rows * cols;
    auto strideFor = [&](const Shape &b, int64_t mat) -> std::optional<int64_t> {
      if (numel(b) == 1) return 0;
      if (b == rb) return mat;
      return std::nullopt;  // broadcasts partly
    };
    const std::optional<int64_t> sx = strideFor(bx, matX), sw = strideFor(bw, matW);
    if (batches > 1 && sx && sw) {
      g.batch = batches;
      g.strideA = *sw;
      g.strideB = *sx;
      g.strideD = matD;
    } else if (batches > 1) {
      // One call per batch: each result batch index read back in each operand's batch dims.
      const std::vector<int64_t> rs = contiguousStrides(rb);
      for (int64_t b = 0; b < batches; ++b) {
        int64_t offX = 0, offW = 0;
        auto offsetIn = [&](const Shape &ob) {
          int64_t off = 0, stride = 1;
          for (size_t d = 0; d < ob.size(); ++d) {
            const size_t od = ob.size() - 1 - d, r = rb.size() - 1 - d;
            const int64_t index = (b / rs[r]) % rb[r];
            if (ob[od] != 1) off += index * stride;
            stride *= ob[od];
          }
          return off;
        };
        offX = offsetIn(bx) * matX;
        offW = offsetIn(bw) * matW;
        g.calls.push_back({offW, offX, b * matD});
      }
    }
  } else if (op == OpKind::Conv2d) {
    // One group: per image, out[O, P] = W[O, C*kH*kW] col[C*kH*kW, P] with P = Ho*Wo, computed
    // transposed, so that the bias epilogue adds per output channel (cuBLASLt's rows): D = O x P
    // column-major is [P, O] row-major. B is the im2col matrix [P, C*kH*kW] (conv_pool.cpp).
    if (x.size() != 4 || w.size() != 4 || result.shape.size() != 4)
      return bad(op, "x, weight or result not 4-D");
    g.m = w[0];
    g.k = w[1] * w[2] * w[3];
    g.n = result.shape[2] * result.shape[3];
    g.transposeA = true;
    g.lda = g.k;
    if (result.shape[0] > 1) {
      g.batch = result.shape[0];
      g.strideB = g.n * g.k;
      g.strideD = g.n * g.m;
    }
  } else {
    return bad(op, "not a GEMM cuBLASLt runs");
  }
  g.ldb = g.k;  // the input [M,K] row-major is K x M column-major
  g.ldd = g.m;  // the result [M,N] row-major is N x M column-major
  return g;
}

}  // namespace ferry::cuda
