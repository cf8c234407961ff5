// backends/cuda/codegen/source_pieces.cpp — the pieces of kernel source that the hand-written
// templates share (generators_impl.h).
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "backends/cuda/codegen/generators_impl.h"

namespace ferry::cuda {

Status contractError(const StepSpec &step, const std::string &what) {
  return makeError("internal",
                   "CUDA kernel of '" + std::string(step.op.name) + "' on " + step.device.str() +
                       ": " + what,
                   step.loc);
}

std::string ll(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRId64 "LL", v);
  return buf;
}

int32_t blockThreads(int64_t length) {
  int32_t threads = 32;
  while (threads < 256 && threads * int64_t{8} < length) threads *= 2;
  return threads;
}

int64_t gridBlocks(int64_t work) {
  return std::clamp<int64_t>((work + kGridThreads - 1) / kGridThreads, 1, kMaxGridBlocks);
}

std::string floatLiteral(double v, const std::string &type) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return "(" + type + ")" + buf;
}

StridedDims coalesce(const StridedDims &dims) {
  StridedDims out;
  for (size_t d = 0; d < dims.sizes.size(); ++d) {
    if (dims.sizes[d] == 1) continue;
    if (!out.sizes.empty() && out.strides.back() == dims.strides[d] * dims.sizes[d]) {
      out.sizes.back() *= dims.sizes[d];
      out.strides.back() = dims.strides[d];
      continue;
    }
    out.push(dims.sizes[d], dims.strides[d]);
  }
  return out;
}

std::string offsetFunction(const std::string &name, const StridedDims &dims) {
  std::string s = "FERRY_FN ferry_i64 " + name + "(ferry_i64 i) {\n  ferry_i64 o = 0; (void)i;\n";
  char line[160];
  for (size_t d = dims.sizes.size(); d-- > 0;) {
    const int64_t size = dims.sizes[d], stride = dims.strides[d];
    if (d == 0) {
      if (stride != 0) {
        std::snprintf(line, sizeof line, "  o += i * (%" PRId64 "LL);\n", stride);
        s += line;
      }
      break;
    }
    if (stride != 0) {
      std::snprintf(line, sizeof line, "  o += (i %% %" PRId64 "LL) * (%" PRId64 "LL);\n", size,
                    stride);
      s += line;
    }
    std::snprintf(line, sizeof line, "  i /= %" PRId64 "LL;\n", size);
    s += line;
  }
  return s + "  return o;\n}\n";
}

std::string blockReduceFunction(const std::string &name, const std::string &type,
                                const std::string &combine) {
  std::string s = "FERRY_FN " + type + " " + name + "(" + type + " v, " + type + " *red) {\n";
  s += "  const unsigned t = threadIdx.x;\n";
  s += "  red[t] = v;\n";
  s += "  __syncthreads();\n";
  s += "  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {\n";
  s += "    if (t < s) {\n";
  s += "      const " + type + " a = red[t], b = red[t + s];\n";
  s += "      red[t] = " + combine + ";\n";
  s += "    }\n";
  s += "    __syncthreads();\n";
  s += "  }\n";
  s += "  const " + type + " r = red[0];\n";
  s += "  __syncthreads();\n";
  s += "  return r;\n";
  return s + "}\n";
}

std::string kernelSignature(size_t inputs) {
  std::string s = "FERRY_KERNEL ferry_kernel(char *out, char *scratch, unsigned *error";
  for (size_t k = 0; k < inputs; ++k) s += ", const char *in" + std::to_string(k);
  return s + ") {\n  (void)scratch; (void)error;\n";
}

}  // namespace ferry::cuda
