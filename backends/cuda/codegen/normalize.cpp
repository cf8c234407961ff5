// backends/cuda/codegen/normalize.cpp — the kernels of softmax/log_softmax and layer_norm.
//
// Semantics are the reference's (backends/reference/normalize.cpp), computed in float (f16,
// bf16, f32) or double (f64) and rounded to the dtype when stored:
//   - softmax over `axis`: the row's max (NaN ignored, as fmax) is subtracted before exp, then
//     exp(x - max) / sum, or for log_softmax (x - max) - log(sum);
//   - layer_norm over the dims from `axis`: mean, then the population variance of the row about
//     it (two passes, as the reference), y = (x - mean) / sqrt(var + eps), times the weight, plus
//     the bias.
// A row is the elements along the axis for one position of the other dims: softmax's rows step
// by the product of the dims after the axis (1 when it is the last), layer_norm's are dense. A
// row of up to kBlockRowMin elements is a thread's (three passes over it), a longer one a
// block's: each thread a strided share, the statistics combined by trees in shared memory.
#include <cinttypes>
#include <cstdio>

#include "backends/cuda/codegen/generators_impl.h"

namespace ferry::cuda {

namespace {

// The kernel's text around the row-wise loops: loop() opens a loop over the elements `d` of the
// row that the thread takes (all of them, or its strided share of the block's), reduce() combines
// a thread's value over the block with a blockReduceFunction (`v` as it is in a thread's row).
struct RowKernel {
  bool perThread;
  int64_t length;

  std::string loop(const std::string &indent) const {
    const std::string n = std::to_string(length) + "LL";
    return indent + (perThread
                         ? "for (ferry_i64 d = 0; d < " + n + "; ++d) {\n"
                         : "for (ferry_i64 d = threadIdx.x; d < " + n + "; d += blockDim.x) {\n");
  }
  std::string reduce(const std::string &fn, const std::string &v) const {
    return perThread ? v : fn + "(" + v + ", ferry_red_shared)";
  }
};

// The shape of the launch for `rows` rows of `length` elements.
Expected<KernelSource> launchFor(const StepSpec &step, int64_t rows, int64_t length,
                                 RowKernel &row) {
  KernelSource k;
  row.length = length;
  row.perThread = rows == 0 || length <= kBlockRowMin;
  if (row.perThread) {
    k.threads = kGridThreads;
    k.blocks = gridBlocks(rows);
    return k;
  }
  if (rows > INT32_MAX)
    return contractError(step, std::to_string(rows) + " rows, more than a grid's blocks");
  k.blocks = rows;
  k.threads = blockThreads(length);
  k.blockSync = true;
  return k;
}

// The row loop's head: a grid-stride loop over rows (thread per row) or the block's row.
std::string rowHead(const RowKernel &row, int64_t rows) {
  if (row.perThread)
    return "  for (ferry_i64 row = FERRY_TID; row < " + std::to_string(rows) +
           "LL; row += FERRY_STRIDE) {\n";
  return "  {\n    const ferry_i64 row = blockIdx.x;\n";
}

std::string sharedArray(const RowKernel &row, const std::string &type, int32_t threads) {
  if (row.perThread) return "";
  return "  __shared__ " + type + " ferry_red_shared[" + std::to_string(threads) + "];\n";
}

}  // namespace

Expected<KernelSource> softmaxKernel(const StepSpec &step) {
  const bool logSoftmax = step.op.kind == OpKind::LogSoftmax;
  if (step.op.kind != OpKind::Softmax && !logSoftmax) return contractError(step, "not a softmax");
  if (step.operands.size() != 1) return contractError(step, "expected one operand");
  const TensorType &x = step.operands[0];
  if (!isFloating(x.dtype) || step.result != x)
    return contractError(step, "result " + step.result.str() + " for " + x.str());
  // A scalar is a softmax over one element.
  int64_t dim = 1, inner = 1;
  if (!x.shape.empty()) {
    const int64_t attr = attrInt(step.op, step.attrs, "axis");
    std::optional<int64_t> axis = normalizeAxis(attr, x.rank());
    if (!axis) return contractError(step, "axis " + std::to_string(attr) + " of " + x.str());
    dim = x.shape[static_cast<size_t>(*axis)];
    inner = numel(std::span(x.shape).subspan(static_cast<size_t>(*axis) + 1));
  }
  const int64_t rows = dim == 0 ? 0 : x.numel() / dim;
  RowKernel row{};
  Expected<KernelSource> k = launchFor(step, rows, dim, row);
  if (!k) return k;

  const std::string ct = computeType(x.dtype), st = storageType(x.dtype),
                    sfx = dtypeSuffix(x.dtype);
  const bool f32 = ct == "float";
  const std::string f = f32 ? "f" : "";
  std::string s = prelude();
  if (!row.perThread) {
    s += blockReduceFunction("ferry_block_max", ct, "fmax" + f + "(a, b)");
    s += blockReduceFunction("ferry_block_sum", ct, "a + b");
  }
  s += kernelSignature(1);
  s += sharedArray(row, ct, k->threads);
  s += "  const " + st + " *x = (const " + st + " *)in0;\n  " + st + " *y = (" + st + " *)out;\n";
  s += rowHead(row, rows);
  char line[200];
  if (inner == 1)
    std::snprintf(line, sizeof line, "    const ferry_i64 base = row * %" PRId64 "LL;\n", dim);
  else
    std::snprintf(line, sizeof line,
                  "    const ferry_i64 base = (row / %" PRId64 "LL) * %" PRId64
                  "LL + row %% %" PRId64 "LL;\n",
                  inner, dim * inner, inner);
  s += line;
  const std::string at = inner == 1 ? "base + d" : "base + d * " + std::to_string(inner) + "LL";
  const std::string v = "ferry_ld_" + sfx + "(x[" + at + "])";
  s += "    " + ct + " m = (" + ct + ")ferry_u2f(0xff800000u);\n";  // -inf
  s += row.loop("    ") + "      m = fmax" + f + "(m, " + v + ");\n    }\n";
  if (!row.perThread) s += "    m = " + row.reduce("ferry_block_max", "m") + ";\n";
  s += "    " + ct + " sum = 0;\n";
  s += row.loop("    ") + "      sum += exp" + f + "(" + v + " - m);\n    }\n";
  if (!row.perThread) s += "    sum = " + row.reduce("ferry_block_sum", "sum") + ";\n";
  if (logSoftmax) s += "    const " + ct + " logSum = log" + f + "(sum);\n";
  s += row.loop("    ");
  s += "      y[" + at + "] = ferry_st_" + sfx + "(" +
       (logSoftmax ? "(" + v + " - m) - logSum" : "exp" + f + "(" + v + " - m) / sum") + ");\n";
  s += "    }\n  }\n}\n";
  k->source = std::move(s);
  k->inputs = 1;
  return k;
}

Expected<KernelSource> layerNormKernel(const StepSpec &step) {
  if (step.op.kind != OpKind::LayerNorm) return contractError(step, "not a layer_norm");
  if (step.operands.empty() || step.operands.size() > 3)
    return contractError(step, "expected 1 to 3 operands");
  const TensorType &x = step.operands[0];
  if (!isFloating(x.dtype) || step.result != x)
    return contractError(step, "result " + step.result.str() + " for " + x.str());
  const int64_t attr = attrInt(step.op, step.attrs, "axis");
  std::optional<int64_t> axis = normalizeAxis(attr, x.rank());
  if (!axis) return contractError(step, "axis " + std::to_string(attr) + " of " + x.str());
  const int64_t length = numel(std::span(x.shape).subspan(static_cast<size_t>(*axis)));
  for (size_t i = 1; i < step.operands.size(); ++i)
    if (step.operands[i].dtype != x.dtype || step.operands[i].numel() != length)
      return contractError(step, "operand " + std::to_string(i) + " " + step.operands[i].str() +
                                     " for " + x.str() + " (a cast is missing?)");
  const int64_t rows = length == 0 ? 0 : x.numel() / length;
  RowKernel row{};
  Expected<KernelSource> k = launchFor(step, rows, length, row);
  if (!k) return k;

  const std::string ct = computeType(x.dtype), st = storageType(x.dtype),
                    sfx = dtypeSuffix(x.dtype);
  const std::string sqrtFn = ct == "float" ? "sqrtf" : "sqrt";
  const std::string n = "(" + ct + ")" + std::to_string(length) + "LL";
  std::string s = prelude();
  if (!row.perThread) s += blockReduceFunction("ferry_block_sum", ct, "a + b");
  s += kernelSignature(step.operands.size());
  s += sharedArray(row, ct, k->threads);
  s += "  const " + st + " *x = (const " + st + " *)in0;\n  " + st + " *y = (" + st + " *)out;\n";
  if (step.operands.size() > 1) s += "  const " + st + " *w = (const " + st + " *)in1;\n";
  if (step.operands.size() > 2) s += "  const " + st + " *b = (const " + st + " *)in2;\n";
  s += rowHead(row, rows);
  s += "    const ferry_i64 base = row * " + std::to_string(length) + "LL;\n";
  const std::string v = "ferry_ld_" + sfx + "(x[base + d])";
  s += "    " + ct + " sum = 0;\n";
  s += row.loop("    ") + "      sum += " + v + ";\n    }\n";
  s += "    const " + ct + " mean = " + row.reduce("ferry_block_sum", "sum") + " / " + n + ";\n";
  s += "    " + ct + " squares = 0;\n";
  s += row.loop("    ") + "      const " + ct + " c = " + v + " - mean;\n";
  s += "      squares += c * c;\n    }\n";
  s += "    const " + ct + " var = " + row.reduce("ferry_block_sum", "squares") + " / " + n + ";\n";
  s += "    const " + ct + " inv = (" + ct + ")1 / " + sqrtFn + "(var + " +
       floatLiteral(attrFloat(step.op, step.attrs, "eps"), ct) + ");\n";
  s += row.loop("    ") + "      " + ct + " r = (" + v + " - mean) * inv;\n";
  if (step.operands.size() > 1) s += "      r = r * ferry_ld_" + sfx + "(w[d]);\n";
  if (step.operands.size() > 2) s += "      r = r + ferry_ld_" + sfx + "(b[d]);\n";
  s += "      y[base + d] = ferry_st_" + sfx + "(r);\n    }\n  }\n}\n";
  k->source = std::move(s);
  k->inputs = static_cast<int32_t>(step.operands.size());
  return k;
}

}  // namespace ferry::cuda
