// backends/cuda/codegen/elementwise.cpp — the kernel of an elementwise step or fused group,
// printed from its micro-op program (kernel_source.h).
//
// Shape of the kernel: n result elements; every input is read in one of three ways, decided
// here from its shape: dense (the result's shape: element i), one value (loaded once per
// thread), or broadcast (an offset from i through the result's dims, coalesced across all
// inputs and printed as constant divisions, which the compiler turns into multiplications).
// The main loop takes four elements per thread: one 4-element vector load of each dense input and
// one vector store of the result; the n % 4 last elements take a scalar loop. Every micro-op is
// one expression over the values before it, rounded to its dtype (prelude.cpp).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <numeric>

#include "backends/cuda/codegen/generators_impl.h"

namespace ferry::cuda {

namespace {

std::string hexDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

bool isFloatCompute(DType t) { return isFloating(t); }

// `x`, a value in `from`'s compute type, in `to`'s compute type (no rounding to `to`).
std::string convert(const std::string &x, DType from, DType to) {
  const std::string cf = computeType(from), ct = computeType(to);
  if (cf == ct) return x;
  if (to == DType::Bool) return "(ferry_i64)(" + x + " != 0)";
  if (!isFloatCompute(to) && isFloatCompute(from)) return "ferry_f2i((double)" + x + ")";
  return "(" + ct + ")" + x;
}

std::string rounded(const std::string &x, DType t) {
  if (t == DType::F32 || t == DType::F64 || t == DType::I64) return x;
  return std::string("ferry_rnd_") + dtypeSuffix(t) + "(" + x + ")";
}

// The expression of one micro-op over its operands' expressions (already in its compute type).
Expected<std::string> expression(const StepSpec &step, const MicroOp &m,
                                 const std::vector<std::string> &a, DType compute) {
  const OpInfo &op = opInfo(m.op);
  const bool f32 = compute == DType::F16 || compute == DType::BF16 || compute == DType::F32;
  const bool f64 = compute == DType::F64;
  const std::string f = f32 ? "f" : "";      // float literal and math function suffix
  const std::string ct = computeType(compute);
  auto lit = [&](const char *v) { return std::string(v) + (f32 ? "f" : ""); };
  if (op.is(OpTrait::Unary)) {
    const std::string &x = a[0];
    if (!f32 && !f64) {
      switch (m.op) {
        case OpKind::Neg: return "ferry_ineg(" + x + ")";
        case OpKind::Abs: return "ferry_iabs(" + x + ")";
        case OpKind::Relu: return "(" + x + " > 0 ? " + x + " : (ferry_i64)0)";
        default: return contractError(step, "'" + std::string(op.name) + "' has no integer form");
      }
    }
    switch (m.op) {
      case OpKind::Neg: return "(-" + x + ")";
      case OpKind::Abs: return "fabs" + f + "(" + x + ")";
      case OpKind::Exp: return "exp" + f + "(" + x + ")";
      case OpKind::Log: return "log" + f + "(" + x + ")";
      case OpKind::Sqrt: return "sqrt" + f + "(" + x + ")";
      case OpKind::Rsqrt: return (f32 ? "ferry_rsqrtf(" : "ferry_rsqrt(") + x + ")";
      case OpKind::Tanh: return "tanh" + f + "(" + x + ")";
      case OpKind::Sigmoid: return "(" + lit("1.0") + " / (" + lit("1.0") + " + exp" + f + "(-" + x + ")))";
      case OpKind::Relu:
        return "(" + x + " > " + lit("0.0") + " ? " + x + " : (" + x + " != " + x + " ? " + x +
               " : " + lit("0.0") + "))";
      case OpKind::Gelu:
        if (attrString(op, m.attrs, "approximate") == "tanh")
          return "(" + lit("0.5") + " * " + x + " * (" + lit("1.0") + " + tanh" + f + "((" + ct +
                 ")0x1.9884533d43651p-1 * (" + x + " + " + lit("0.044715") + " * " + x + " * " +
                 x + " * " + x + "))))";
        return "(" + lit("0.5") + " * " + x + " * (" + lit("1.0") + " + erf" + f + "(" + x +
               " * (" + ct + ")0x1.6a09e667f3bcdp-1)))";
      case OpKind::Erf: return "erf" + f + "(" + x + ")";
      case OpKind::Silu: return "(" + x + " / (" + lit("1.0") + " + exp" + f + "(-" + x + ")))";
      case OpKind::LeakyRelu:
        return "(" + x + " < " + lit("0.0") + " ? (" + ct + ")" +
               hexDouble(attrFloat(op, m.attrs, "alpha")) + " * " + x + " : " + x + ")";
      default: break;
    }
    return contractError(step, "no CUDA form of '" + std::string(op.name) + "'");
  }
  if (op.dtypeRule == DTypeRule::Compare) {
    const char *c = m.op == OpKind::Equal ? " == " : m.op == OpKind::Less ? " < " : " > ";
    return "(ferry_i64)(" + a[0] + c + a[1] + ")";
  }
  if (m.op == OpKind::Where) return "(" + a[0] + " != 0 ? " + a[1] + " : " + a[2] + ")";
  if (op.is(OpTrait::Binary)) {
    const std::string &x = a[0], &y = a[1];
    if (!f32 && !f64) {
      switch (m.op) {
        case OpKind::Add: return "ferry_iadd(" + x + ", " + y + ")";
        case OpKind::Sub: return "ferry_isub(" + x + ", " + y + ")";
        case OpKind::Mul: return "ferry_imul(" + x + ", " + y + ")";
        case OpKind::Maximum: return "(" + x + " > " + y + " ? " + x + " : " + y + ")";
        case OpKind::Minimum: return "(" + x + " < " + y + " ? " + x + " : " + y + ")";
        case OpKind::Div: return "ferry_f2i((double)" + x + " / (double)" + y + ")";
        case OpKind::Pow: return "ferry_f2i(pow((double)" + x + ", (double)" + y + "))";
        default: break;
      }
      return contractError(step, "'" + std::string(op.name) + "' has no integer form");
    }
    switch (m.op) {
      case OpKind::Add: return "(" + x + " + " + y + ")";
      case OpKind::Sub: return "(" + x + " - " + y + ")";
      case OpKind::Mul: return "(" + x + " * " + y + ")";
      case OpKind::Div: return "(" + x + " / " + y + ")";
      case OpKind::Pow: return "pow" + f + "(" + x + ", " + y + ")";
      case OpKind::Maximum: return (f32 ? "ferry_fmaxf(" : "ferry_fmax(") + x + ", " + y + ")";
      case OpKind::Minimum: return (f32 ? "ferry_fminf(" : "ferry_fmin(") + x + ", " + y + ")";
      default: break;
    }
  }
  return contractError(step, "'" + std::string(op.name) + "' is not elementwise");
}

// How the kernel reads one input.
enum class Access : uint8_t { Unused, Dense, One, Broadcast };

struct Input {
  TensorType type;
  Access access = Access::Unused;
  std::vector<int64_t> strides;  // per coalesced dim of the result (Broadcast)
};

// Strides of `shape` (right-aligned against a result of rank `rank`) per result dim, 0 where it
// broadcasts.
std::vector<int64_t> broadcastStrides(const Shape &shape, size_t rank) {
  std::vector<int64_t> s(rank, 0);
  int64_t stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    const size_t d = shape.size() - 1 - k, r = rank - 1 - k;
    s[r] = shape[d] == 1 ? 0 : stride;
    stride *= shape[d];
  }
  return s;
}

}  // namespace

Expected<KernelSource> elementwiseKernel(const StepSpec &step, size_t computedBefore,
                                         std::span<const int64_t> anchorStrides) {
  // The micro-ops to print: the body (without its anchor), or the step's one op.
  FusedBody single;
  const FusedBody *body = step.body;
  if (!body) {
    std::vector<int32_t> args(step.operands.size());
    std::iota(args.begin(), args.end(), 0);
    single.push_back(MicroOp{step.op.kind, step.attrs, args, step.result, "", step.loc});
    body = &single;
  }
  const bool anchorOutput = computedBefore > 0;
  if (anchorOutput && (body->empty() || !opInfo((*body)[0].op).is(OpTrait::GemmLike)))
    return contractError(step, "no GEMM anchor to read the output of");
  const size_t first = computedBefore;
  if (body->size() <= first) return contractError(step, "no elementwise micro-op");
  const TensorType &result = step.result;
  if (body->back().type != result)
    return contractError(step, "the body's last value is " + body->back().type.str() + ", the result " +
                              result.str());

  // Inputs: the step's operands, then the anchor's output.
  std::vector<Input> inputs;
  for (const TensorType &t : step.operands) inputs.push_back({t});
  if (anchorOutput) inputs.push_back({(*body)[first - 1].type});
  const size_t anchorInput = step.operands.size();
  auto inputOf = [&](int32_t arg) -> int64_t {  // -1: a micro-op
    if (!argIsMicroOp(arg)) return arg;
    return anchorOutput && microOpOf(arg) == first - 1 ? static_cast<int64_t>(anchorInput) : -1;
  };
  for (size_t j = first; j < body->size(); ++j)
    for (int32_t arg : (*body)[j].args) {
      const int64_t in = inputOf(arg);
      if (in < 0 && microOpOf(arg) >= j) return contractError(step, "a micro-op reads a later one");
      if (in < 0 && microOpOf(arg) < first)
        return contractError(step, "micro-op " + std::to_string(j) + " reads a value the GEMM does not output");
      if (in >= static_cast<int64_t>(inputs.size())) return contractError(step, "an operand out of range");
      if (in >= 0) {
        Input &input = inputs[static_cast<size_t>(in)];
        if (!broadcastShapes(input.type.shape, result.shape) ||
            *broadcastShapes(input.type.shape, result.shape) != result.shape)
          return contractError(step, "input " + input.type.str() + " does not broadcast to " +
                                    result.str());
        input.access = input.type.shape == result.shape ? Access::Dense
                       : input.type.numel() == 1         ? Access::One
                                                         : Access::Broadcast;
      }
    }

  // The result's dims, without 1s, coalesced where every broadcast input allows it.
  const size_t rank = result.shape.size();
  if (!anchorStrides.empty()) {  // the GEMM's output, read at the strides given
    if (!anchorOutput || anchorStrides.size() != rank ||
        inputs[anchorInput].type.shape != result.shape)
      return contractError(step, "anchor strides for another shape than the result's");
    inputs[anchorInput].access = Access::Broadcast;
  }
  std::vector<std::vector<int64_t>> strides;  // per input, per dim
  for (const Input &in : inputs)  // an unused input (a GEMM's weight) may have a higher rank
    strides.push_back(in.access == Access::Broadcast ? broadcastStrides(in.type.shape, rank)
                                                     : std::vector<int64_t>(rank, 0));
  if (!anchorStrides.empty())
    strides[anchorInput].assign(anchorStrides.begin(), anchorStrides.end());
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> coalesced(inputs.size());
  for (size_t d = 0; d < rank; ++d) {
    if (result.shape[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < inputs.size() && merge; ++k)
      if (inputs[k].access == Access::Broadcast)
        merge = coalesced[k].back() == strides[k][d] * result.shape[d];
    if (merge) {
      dims.back() *= result.shape[d];
      for (size_t k = 0; k < inputs.size(); ++k)
        if (inputs[k].access == Access::Broadcast) coalesced[k].back() = strides[k][d];
      continue;
    }
    dims.push_back(result.shape[d]);
    for (size_t k = 0; k < inputs.size(); ++k) coalesced[k].push_back(strides[k][d]);
  }

  std::string s = prelude();
  char line[256];
  // Offset functions of the broadcast inputs.
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].access != Access::Broadcast) continue;
    s += "FERRY_FN ferry_i64 ferry_off" + std::to_string(k) + "(ferry_i64 i) {\n  ferry_i64 o = 0;\n";
    for (size_t d = dims.size(); d-- > 0;) {
      const int64_t st = coalesced[k][d];
      if (d == 0) {
        if (st != 0) s += "  o += i * " + std::to_string(st) + "LL;\n";
        break;
      }
      if (st != 0) s += "  o += (i % " + std::to_string(dims[d]) + "LL) * " + std::to_string(st) + "LL;\n";
      s += "  i /= " + std::to_string(dims[d]) + "LL;\n";
    }
    s += "  return o;\n}\n";
  }

  const int64_t n = result.numel();
  // Parameters.
  s += "FERRY_KERNEL ferry_kernel(char *out, char *scratch, unsigned *error";
  for (size_t k = 0; k < inputs.size(); ++k) s += ", const char *in" + std::to_string(k);
  s += ") {\n  (void)scratch; (void)error;\n";
  std::snprintf(line, sizeof line, "  const ferry_i64 n = %" PRId64 "LL;\n", n);
  s += line;
  // One-value inputs, loaded once.
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].access == Access::One) {
      const DType t = inputs[k].type.dtype;
      s += std::string("  const ") + computeType(t) + " one" + std::to_string(k) + " = ferry_ld_" +
           dtypeSuffix(t) + "(((const " + storageType(t) + " *)in" + std::to_string(k) + ")[0]);\n";
    }

  // The element's computation, given how dense inputs are read and where the result goes.
  auto element = [&](bool vector) -> Expected<std::string> {
    std::string e;
    std::vector<std::string> names;  // per micro-op
    std::vector<DType> types;
    auto inputValue = [&](size_t k) {
      const DType t = inputs[k].type.dtype;
      const std::string ld = std::string("ferry_ld_") + dtypeSuffix(t) + "(";
      const std::string ptr = std::string("((const ") + storageType(t) + " *)in" + std::to_string(k) + ")";
      switch (inputs[k].access) {
        case Access::Dense: return vector ? ld + "v" + std::to_string(k) + ".v[j])" : ld + ptr + "[i])";
        case Access::One: return "one" + std::to_string(k);
        default: return ld + ptr + "[ferry_off" + std::to_string(k) + "(i)])";
      }
    };
    for (size_t j = 0; j < body->size(); ++j) {
      names.push_back("m" + std::to_string(j));
      types.push_back((*body)[j].type.dtype);
      if (j < first) continue;
      const MicroOp &m = (*body)[j];
      const OpInfo &op = opInfo(m.op);
      // The dtype it computes in: the result's, or a comparison's operands'.
      DType compute = m.type.dtype;
      std::vector<std::string> args;
      std::vector<DType> argTypes;
      for (int32_t arg : m.args) {
        const int64_t in = inputOf(arg);
        if (in >= 0) {
          args.push_back(inputValue(static_cast<size_t>(in)));
          argTypes.push_back(inputs[static_cast<size_t>(in)].type.dtype);
        } else {
          args.push_back(names[microOpOf(arg)]);
          argTypes.push_back(types[microOpOf(arg)]);
        }
      }
      if (m.op == OpKind::Cast) {
        if (args.size() != 1) return contractError(step, "a cast of " + std::to_string(args.size()) + " operands");
        e += std::string("    const ") + computeType(compute) + " " + names[j] + " = " +
             rounded(convert(args[0], argTypes[0], compute), compute) + ";\n";
        continue;
      }
      if (op.dtypeRule == DTypeRule::Compare) {
        if (argTypes.size() != 2 || argTypes[0] != argTypes[1])
          return contractError(step, "a comparison of different dtypes (a cast is missing)");
        compute = argTypes[0];
      }
      for (size_t i = 0; i < args.size(); ++i) {
        const bool condition = m.op == OpKind::Where && i == 0;
        args[i] = convert(args[i], argTypes[i], condition ? DType::Bool : compute);
      }
      Expected<std::string> x = expression(step, m, args, compute);
      if (!x) return x.status();
      e += std::string("    const ") + computeType(m.type.dtype) + " " + names[j] + " = " +
           rounded(*x, m.type.dtype) + ";\n";
    }
    const std::string st = std::string("ferry_st_") + dtypeSuffix(result.dtype) + "(" + names.back() + ")";
    e += vector ? "    r.v[j] = " + st + ";\n"
                : std::string("    ((") + storageType(result.dtype) + " *)out)[i] = " + st + ";\n";
    return e;
  };

  Expected<std::string> vectorBody = element(true), scalarBody = element(false);
  if (!vectorBody) return vectorBody.status();
  if (!scalarBody) return scalarBody.status();
  s += "  const ferry_i64 nv = n / 4;\n";
  s += "  for (ferry_i64 q = FERRY_TID; q < nv; q += FERRY_STRIDE) {\n";
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].access == Access::Dense) {
      const std::string v = "ferry_vec4<" + std::string(storageType(inputs[k].type.dtype)) + ">";
      s += "    const " + v + " v" + std::to_string(k) + " = ((const " + v + " *)in" +
           std::to_string(k) + ")[q];\n";
    }
  const std::string rv = "ferry_vec4<" + std::string(storageType(result.dtype)) + ">";
  s += "    " + rv + " r;\n";
  s += "    for (int j = 0; j < 4; ++j) {\n    const ferry_i64 i = q * 4 + j; (void)i;\n";
  s += *vectorBody;
  s += "    }\n    ((" + rv + " *)out)[q] = r;\n  }\n";
  s += "  for (ferry_i64 i = nv * 4 + FERRY_TID; i < n; i += FERRY_STRIDE) {\n";
  s += *scalarBody;
  s += "  }\n}\n";

  KernelSource k;
  k.source = std::move(s);
  k.inputs = static_cast<int32_t>(inputs.size());
  k.threads = 256;
  const int64_t work = std::max<int64_t>(1, std::max(n / 4, n % 4));
  k.blocks = std::clamp<int64_t>((work + k.threads - 1) / k.threads, 1, 8192);
  return k;
}

}  // namespace ferry::cuda
