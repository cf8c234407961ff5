// backends/cuda/codegen/reduce.cpp — the kernel of sum, mean and max over any set of axes.
//
// Semantics are the reference's (backends/reference/normalize.cpp, evalReduce): sum of bool or
// integers is exact in 64 bits, wrapping, into i64; floats accumulate in float (f16, bf16, f32)
// or double (f64) and are rounded once when stored; mean is the sum over the count (0/0 = NaN
// over no elements); max is exact (the winning element is stored back unchanged) and propagates
// NaN; max over no elements sets the error flag, as the reference's "runtime" error.
//
// Layout: the input's dims split into kept dims (the result's, in order) and reduced dims, each
// set coalesced (generators_impl.h), so result element o reads the input at
// kept(o) + reduced(r) for r < count. A short row (count <= kBlockRowMin), or result elements
// that are the input's innermost dims when there are many of them (each thread then reads
// next to its neighbours), is a thread's; a long row is a block's: a strided share per thread,
// then a tree in shared memory.
#include <cinttypes>
#include <cstdio>
#include <functional>

#include "backends/cuda/codegen/generators_impl.h"

namespace ferry::cuda {

namespace {

// Result elements that are the input's innermost dims take a thread each from this many up.
constexpr int64_t kColumnOutputsMin = 8192;

}  // namespace

Expected<KernelSource> reduceKernel(const StepSpec &step) {
  const OpKind kind = step.op.kind;
  if (kind != OpKind::Sum && kind != OpKind::Mean && kind != OpKind::Max)
    return contractError(step, "not a reduction");
  if (step.operands.size() != 1) return contractError(step, "expected one operand");
  const TensorType &x = step.operands[0];
  const DType in = x.dtype, res = step.result.dtype;
  const bool floating = isFloating(in);
  // The result dtype each op gives (ir/ops.def): sum of bool/integers is i64, mean is float only.
  const DType want = kind == OpKind::Sum && !floating ? DType::I64 : in;
  if (res != want || (kind == OpKind::Mean && !floating))
    return contractError(step, "'" + std::string(step.op.name) + "' of " + x.str() + " to " +
                                   step.result.str());

  // Which dims are reduced: `axes`, or all of them when empty.
  const int64_t rank = x.rank();
  const std::vector<int64_t> &axes = attrInts(step.op, step.attrs, "axes");
  std::vector<bool> reduced(x.shape.size(), axes.empty());
  for (int64_t axis : axes) {
    if (rank == 0) break;  // a scalar has nothing to reduce
    std::optional<int64_t> n = normalizeAxis(axis, rank);
    if (!n) return contractError(step, "axis " + std::to_string(axis) + " of " + x.str());
    reduced[static_cast<size_t>(*n)] = true;
  }
  const bool keepdims = attrBool(step.op, step.attrs, "keepdims");
  Shape outShape;
  StridedDims keptDims, reducedDims;
  const std::vector<int64_t> strides = contiguousStrides(x.shape);
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (reduced[d])
      reducedDims.push(x.shape[d], strides[d]);
    else
      keptDims.push(x.shape[d], strides[d]);
    if (!reduced[d] || keepdims) outShape.push_back(reduced[d] ? 1 : x.shape[d]);
  }
  if (outShape != step.result.shape)
    return contractError(step, "result " + step.result.str() + " for " + x.str());
  const int64_t outputs = step.result.numel(), count = numel(reducedDims.sizes);
  keptDims = coalesce(keptDims);
  reducedDims = coalesce(reducedDims);

  // How elements load, combine and store.
  const bool exact = !floating;  // bool/integers: in 64 bits, exactly
  const std::string acc = exact ? "ferry_i64" : computeType(in);
  const bool f32 = acc == "float";
  std::string init;
  std::function<std::string(const std::string &, const std::string &)> combined;
  if (kind == OpKind::Max) {
    // The lowest value: INT64_MIN, or -inf.
    init = exact ? "(ferry_i64)0x8000000000000000ull" : "(" + acc + ")ferry_u2f(0xff800000u)";
    combined = [&](const std::string &a, const std::string &b) {
      if (exact) return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
      return (f32 ? "ferry_fmaxf(" : "ferry_fmax(") + a + ", " + b + ")";
    };
  } else {
    init = "(" + acc + ")0";
    combined = [&](const std::string &a, const std::string &b) {
      return exact ? "ferry_iadd(" + a + ", " + b + ")" : a + " + " + b;
    };
  }
  const std::string load = std::string("ferry_ld_") + dtypeSuffix(in) + "(x[base + ferry_red(r)])";
  char countText[64];
  std::snprintf(countText, sizeof countText, "%" PRId64 "LL", count);
  const std::string result = kind == OpKind::Mean ? "acc / (" + acc + ")" + countText : "acc";
  const std::string store = std::string("((") + storageType(res) + " *)out)[o] = ferry_st_" +
                            dtypeSuffix(res) + "(" + result + ");\n";

  const bool innermostOutputs = !keptDims.sizes.empty() && keptDims.strides.back() == 1;
  const bool perThread =
      outputs == 0 || count <= kBlockRowMin || (innermostOutputs && outputs >= kColumnOutputsMin);
  if (!perThread && outputs > INT32_MAX)
    return contractError(step, std::to_string(outputs) + " rows, more than a grid's blocks");

  KernelSource k;
  k.inputs = 1;
  k.threads = kGridThreads;
  std::string s = prelude() + offsetFunction("ferry_kept", keptDims);
  s += offsetFunction("ferry_red", reducedDims);
  if (!perThread) s += blockReduceFunction("ferry_block_reduce", acc, combined("a", "b"));
  s += kernelSignature(1);
  s += std::string("  const ") + storageType(in) + " *x = (const " + storageType(in) + " *)in0;\n";
  if (kind == OpKind::Max && count == 0 && outputs > 0) {
    s += "  (void)x;\n";
    s += "  if (FERRY_TID == 0) atomicOr(error, 1u);  // max over no elements\n";
  } else {
    if (perThread) {
      s += "  for (ferry_i64 o = FERRY_TID; o < " + std::to_string(outputs) +
           "LL; o += FERRY_STRIDE) {\n";
    } else {
      k.blockSync = true;
      k.threads = blockThreads(count);
      s += "  __shared__ " + acc + " ferry_red_shared[" + std::to_string(k.threads) + "];\n";
      s += "  {\n";
      s += "    const ferry_i64 o = blockIdx.x;\n";
    }
    s += "    const ferry_i64 base = ferry_kept(o);\n";
    s += "    " + acc + " acc = " + init + ";\n";
    s += perThread ? std::string("    for (ferry_i64 r = 0; r < ") + countText + "; ++r) {\n"
                   : std::string("    for (ferry_i64 r = threadIdx.x; r < ") + countText +
                         "; r += blockDim.x) {\n";
    s += "      const " + acc + " v = " + load + ";\n";
    s += "      acc = " + combined("acc", "v") + ";\n";
    s += "    }\n";
    if (!perThread) {
      s += "    acc = ferry_block_reduce(acc, ferry_red_shared);\n";
      s += "    if (threadIdx.x == 0)\n  ";
    }
    s += "    " + store;
    s += "  }\n";
  }
  s += "}\n";
  k.source = std::move(s);
  k.blocks = perThread ? gridBlocks(outputs) : outputs;
  return k;
}

}  // namespace ferry::cuda
