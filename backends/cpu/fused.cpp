// backends/cpu/fused.cpp — the CPU kernel of a fused step: a fusion group's micro-op program
// (backends/target.h, FusedBody) run in one pass over memory.
//
// Prepared once per step: the body becomes a list of instructions over registers — blocks of
// kBlock elements of a compute type (float for f16, bf16 and f32, double for f64, int64 for bool
// and the integers; elementwise_impl.h) — with the op's block function picked for that type,
// and registers given out by liveness (a value's block is reused once its last reader ran, in
// place where an op allows), so a chain of any length keeps a few blocks in L1.
//
// A launch: the anchor (a GemmLike first micro-op) runs first as its own kernel, prepared with
// the step's plan, writing the result's memory when it has the result's dtype, else planned
// scratch. Then, over blocks of the output split on the pool (each block at a multiple of kBlock,
// so any split gives the same bytes), every operand the elementwise micro-ops read is gathered
// (following broadcasting; a dense operand in compute type is read where it is, a single value
// broadcast everywhere is gathered once per chunk), the instructions run, each reading its
// operands' registers and writing its own (no copy first), and the last register is stored in
// the result's dtype (or the last instruction writes the result itself, when it is stored as
// computed).
//
// Same numbers as the unfused kernels: each micro-op's value is rounded to its own dtype as
// storing it would (f16/bf16 round to nearest even, integers wrap at their width, bool is 0/1),
// and a cast converts as the cast kernel does (convertElements).
#include <cstring>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "backends/cpu/elementwise_impl.h"
#include "backends/cpu/kernels.h"

namespace ferry::cpu {

namespace {

using namespace elementwise;

// The element type of a register.
enum class Compute : uint8_t { F32, F64, I64 };

Compute computeOf(DType t) {
  if (t == DType::F64) return Compute::F64;
  if (t == DType::F16 || t == DType::BF16 || t == DType::F32) return Compute::F32;
  return Compute::I64;
}

DType computeDType(Compute c) {
  return c == Compute::F32 ? DType::F32 : c == Compute::F64 ? DType::F64 : DType::I64;
}

// Whether values of `t` are held in their compute type as they are stored (no rounding needed).
bool storedAsComputed(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::I64; }

constexpr size_t kRegisterBytes = kBlock * 8;  // room for kBlock elements of any compute type

struct Instr;
using RunFn = void (*)(const Instr &in, std::byte *const *regs, int64_t m);

// One micro-op over registers: dst = op(src...). Block functions for the compute type.
struct Instr {
  RunFn run = nullptr;
  int32_t dst = -1;
  std::array<int32_t, 3> src{-1, -1, -1};
  DType dtype = DType::F32;  // the micro-op's (its value is rounded to it)
  DType from = DType::F32;   // cast: the operand's dtype
  void *fn = nullptr;        // the block function (UnaryFn<C>, BinaryFn<C> or CompareFn<C>)
  double alpha = 0;          // leaky_relu
};

template <class C>
constexpr DType kComputeDType = std::is_same_v<C, float>    ? DType::F32
                                : std::is_same_v<C, double> ? DType::F64
                                                            : DType::I64;

template <class C> C *reg(std::byte *const *regs, int32_t r) { return reinterpret_cast<C *>(regs[r]); }

// Rounds a register holding values of `t` computed in C to what storing them as `t` gives.
template <class C> void narrow(C *x, int64_t m, DType t) {
  if (storedAsComputed(t)) return;
  alignas(64) std::byte stored[kBlock * 2];  // half a block of i32 at a time, all of the others
  for (int64_t at = 0; at < m;) {  // in halves when a 4-byte type overflows `stored`
    const int64_t n = std::min<int64_t>(m - at, static_cast<int64_t>(sizeof(stored) / dtypeSize(t)));
    convertElements(kComputeDType<C>, reinterpret_cast<const std::byte *>(x + at), t, stored,
                    static_cast<size_t>(n));
    convertElements(t, stored, kComputeDType<C>, reinterpret_cast<std::byte *>(x + at),
                    static_cast<size_t>(n));
    at += n;
  }
}

// The block functions read their operands where they are and write the destination, which may
// be an operand's register: no copy.
template <class C> void runUnary(const Instr &in, std::byte *const *regs, int64_t m) {
  C *d = reg<C>(regs, in.dst);
  reinterpret_cast<UnaryFn<C>>(in.fn)(d, reg<C>(regs, in.src[0]), m);
  narrow(d, m, in.dtype);
}

template <class C> void runLeakyRelu(const Instr &in, std::byte *const *regs, int64_t m) {
  C *d = reg<C>(regs, in.dst);
  const C *x = reg<C>(regs, in.src[0]);
  const auto a = static_cast<C>(in.alpha);
  for (int64_t i = 0; i < m; ++i) d[i] = x[i] < C(0) ? a * x[i] : x[i];
  narrow(d, m, in.dtype);
}

template <class C> void runBinary(const Instr &in, std::byte *const *regs, int64_t m) {
  C *d = reg<C>(regs, in.dst);
  reinterpret_cast<BinaryFn<C>>(in.fn)(d, reg<C>(regs, in.src[0]), reg<C>(regs, in.src[1]), m);
  narrow(d, m, in.dtype);
}

// Operands in C, the result bool (held as int64 0/1).
template <class C> void runCompare(const Instr &in, std::byte *const *regs, int64_t m) {
  uint8_t out[kBlock];
  reinterpret_cast<CompareFn<C>>(in.fn)(reg<C>(regs, in.src[0]), reg<C>(regs, in.src[1]), out, m);
  int64_t *d = reg<int64_t>(regs, in.dst);
  for (int64_t i = 0; i < m; ++i) d[i] = out[i];
}

template <class C> void runWhere(const Instr &in, std::byte *const *regs, int64_t m) {
  const int64_t *c = reg<int64_t>(regs, in.src[0]);
  const C *a = reg<C>(regs, in.src[1]), *b = reg<C>(regs, in.src[2]);
  C *d = reg<C>(regs, in.dst);
  for (int64_t i = 0; i < m; ++i) d[i] = c[i] != 0 ? a[i] : b[i];
}

// As the cast kernel: the value converted to the target dtype (convertElements), then held in
// the target's compute type.
void runCast(const Instr &in, std::byte *const *regs, int64_t m) {
  const DType fromC = computeDType(computeOf(in.from)), toC = computeDType(computeOf(in.dtype));
  const std::byte *s = regs[in.src[0]];
  std::byte *d = regs[in.dst];
  if (storedAsComputed(in.dtype)) {
    convertElements(fromC, s, in.dtype, d, static_cast<size_t>(m));
    return;
  }
  alignas(64) std::byte stored[kBlock * 4];
  convertElements(fromC, s, in.dtype, stored, static_cast<size_t>(m));
  convertElements(in.dtype, stored, toC, d, static_cast<size_t>(m));
}

// Calls f(C{}) with C the element type of `c`.
template <class F> decltype(auto) withCompute(Compute c, F &&f) {
  switch (c) {
    case Compute::F32: return f(float{});
    case Compute::F64: return f(double{});
    case Compute::I64: return f(int64_t{});
  }
  return f(int64_t{});
}

// Gathers the next m elements of an operand (storage S) along its cursor into compute type.
using GatherFn = void (*)(const TensorView &v, Cursor &cursor, std::byte *out, int64_t m);
template <class S> void gatherAs(const TensorView &v, Cursor &cursor, std::byte *out, int64_t m) {
  gather<S, ComputeOf<S>>(v, cursor, reinterpret_cast<ComputeOf<S> *>(out), m);
}
using StoreFn = void (*)(const std::byte *in, const TensorView &r, int64_t at, int64_t m);
template <class S> void storeAs(const std::byte *in, const TensorView &r, int64_t at, int64_t m) {
  storeBlock<S>(reinterpret_cast<const ComputeOf<S> *>(in), r, at, m, r.type->dtype == DType::Bool);
}

// Results of at least this many bytes are written with non-temporal stores: far past the caches,
// a plain store first reads each line it writes (write-allocate), a third of an elementwise
// chain's memory traffic, and the lines it leaves in the cache are evicted before anyone reads
// them. Smaller results stay in the cache for the step that reads them next.
constexpr size_t kStreamBytes = size_t{32} << 20;

// Stores a register of a type stored as computed (f32, f64, i64) with non-temporal stores where
// the block is 16-byte aligned (every block but a misaligned result's), plainly otherwise; the
// chunk ends with a store fence (FusedKernel::run), before the pool's barrier publishes it.
template <class S> void streamAs(const std::byte *in, const TensorView &r, int64_t at, int64_t m) {
  static_assert(std::is_same_v<S, ComputeOf<S>>);
  std::byte *out = r.data + static_cast<size_t>(at) * sizeof(S);
  const size_t bytes = static_cast<size_t>(m) * sizeof(S);
#if defined(__SSE2__)
  size_t done = 0;
  if (reinterpret_cast<uintptr_t>(out) % 16 == 0) {
#if defined(__AVX512F__)
    if (reinterpret_cast<uintptr_t>(out) % 64 == 0)
      for (; done + 64 <= bytes; done += 64)
        _mm512_stream_si512(reinterpret_cast<__m512i *>(out + done),
                            _mm512_load_si512(reinterpret_cast<const __m512i *>(in + done)));
#endif
    for (; done + 16 <= bytes; done += 16)
      _mm_stream_si128(reinterpret_cast<__m128i *>(out + done),
                       _mm_load_si128(reinterpret_cast<const __m128i *>(in + done)));
  }
  std::memcpy(out + done, in + done, bytes - done);
#else
  std::memcpy(out, in, bytes);
#endif
}

// An operand the elementwise part reads: its walk over the result, its gather, its register,
// whether a block can be read in place (dense, stored in its compute type), and whether it is
// one value broadcast everywhere (gathered once per chunk, never per block).
struct Load {
  int32_t operand = -1;  // step operand index; -1: the anchor's output
  Walk walk;
  GatherFn gather = nullptr;
  int32_t reg = -1;
  bool direct = false;
  bool invariant = false;
  size_t elementSize = 0;
};

class FusedKernel final : public Kernel {
 public:
  Status run(const KernelArgs &args) const override {
    const std::byte *anchorOut = nullptr;
    if (anchor_) {
      std::byte *out = anchorInResult_ ? args.result : args.scratch + anchorOutOffset_;
      FERRY_TRY(anchor_->run(KernelArgs{anchorOperands(args), out, args.scratch}));
      anchorOut = out;
    }
    const TensorView result{args.result, &result_, device_};
    forChunks(result_.numel(), [&](int64_t begin, int64_t end) {
      thread_local std::vector<std::byte> buffer;
      const size_t need = static_cast<size_t>(registers_) * kRegisterBytes + 64;
      if (buffer.size() < need) buffer.resize(need);
      auto *base = reinterpret_cast<std::byte *>(
          (reinterpret_cast<uintptr_t>(buffer.data()) + 63) / 64 * 64);
      std::array<std::byte *, kMaxRegisters> regs;
      for (int32_t r = 0; r < registers_; ++r) regs[static_cast<size_t>(r)] = base + static_cast<size_t>(r) * kRegisterBytes;
      std::array<TensorView, kMaxLoads> views;
      alignas(Cursor) std::byte cursorBytes[kMaxLoads * sizeof(Cursor)];  // trivially destroyed
      auto *cursors = reinterpret_cast<Cursor *>(cursorBytes);
      for (size_t l = 0; l < loads_.size(); ++l) {
        const Load &load = loads_[l];
        views[l] = load.operand < 0
                       ? TensorView{const_cast<std::byte *>(anchorOut), &anchorType_, device_}
                       : TensorView{const_cast<std::byte *>(args.operands[static_cast<size_t>(load.operand)]),
                                    &operandTypes_[static_cast<size_t>(load.operand)], device_};
        new (&cursors[l]) Cursor(load.walk, begin);
        // The first block is the chunk's longest.
        if (load.invariant)
          load.gather(views[l], cursors[l], regs[static_cast<size_t>(load.reg)],
                      std::min(kBlock, end - begin));
      }
      std::array<std::byte *, kMaxRegisters> bound = regs;
      for (int64_t at = begin; at < end; at += kBlock) {
        const int64_t m = std::min(kBlock, end - at);
        for (size_t l = 0; l < loads_.size(); ++l) {
          const Load &load = loads_[l];
          if (load.direct) {
            bound[static_cast<size_t>(load.reg)] = views[l].data + static_cast<size_t>(at) * load.elementSize;
            continue;
          }
          if (load.invariant) continue;
          bound[static_cast<size_t>(load.reg)] = regs[static_cast<size_t>(load.reg)];
          load.gather(views[l], cursors[l], regs[static_cast<size_t>(load.reg)], m);
        }
        // The last instruction writes the result itself when it is stored as computed.
        if (resultDirect_)
          bound[static_cast<size_t>(instrs_.back().dst)] = args.result + static_cast<size_t>(at) * dtypeSize(result_.dtype);
        for (const Instr &in : instrs_) in.run(in, bound.data(), m);
        if (!resultDirect_) store_(bound[static_cast<size_t>(instrs_.back().dst)], result, at, m);
      }
#if defined(__SSE2__)
      if (stream_) _mm_sfence();
#endif
    });
    return Status();
  }

  static constexpr size_t kMaxRegisters = 64;
  static constexpr size_t kMaxLoads = 24;

  std::unique_ptr<Kernel> anchor_;
  std::vector<int32_t> anchorArgs_;  // step operand per anchor operand
  bool anchorInResult_ = false;
  uint64_t anchorOutOffset_ = 0;
  TensorType anchorType_;
  std::vector<TensorType> operandTypes_;
  TensorType result_;
  Device device_;
  std::vector<Load> loads_;
  std::vector<Instr> instrs_;
  int32_t registers_ = 0;
  bool resultDirect_ = false;
  bool stream_ = false;
  StoreFn store_ = nullptr;

 private:
  std::span<const std::byte *const> anchorOperands(const KernelArgs &args) const {
    thread_local std::vector<const std::byte *> pointers;
    pointers.resize(anchorArgs_.size());
    for (size_t i = 0; i < anchorArgs_.size(); ++i)
      pointers[i] = args.operands[static_cast<size_t>(anchorArgs_[i])];
    return pointers;
  }
};

Status bodyError(const StepSpec &step, size_t j, const std::string &what) {
  const MicroOp &m = (*step.body)[j];
  return makeError("internal",
                   "CPU fused kernel of '" + std::string(step.op.name) + "', micro-op " +
                       std::to_string(j) + " ('" + std::string(opInfo(m.op).name) + "' %" + m.name +
                       "): " + what,
                   m.loc);
}

bool hasAnchor(const FusedBody &body) { return opInfo(body[0].op).is(OpTrait::GemmLike); }

// The anchor micro-op as a step of its own, over the step's operand types.
struct AnchorSpec {
  std::vector<TensorType> operands;
  StepSpec spec;
};

AnchorSpec anchorSpec(const StepSpec &step) {
  const MicroOp &a = (*step.body)[0];
  std::vector<TensorType> types;
  for (int32_t arg : a.args) types.push_back(step.operands[static_cast<size_t>(arg)]);
  return {types, StepSpec{opInfo(a.op), a.attrs, {}, a.type, step.device, a.loc}};
}

uint64_t align64(uint64_t n) { return (n + 63) / 64 * 64; }

// The anchor's plan and where its output goes: the result when it has the result's dtype,
// else scratch after the anchor's own.
struct AnchorPlan {
  KernelPlan plan;
  bool inResult = false;
  uint64_t outOffset = 0;
  uint64_t scratchBytes = 0;
};

Expected<AnchorPlan> planAnchor(const StepSpec &step) {
  AnchorSpec a = anchorSpec(step);
  StepSpec spec{a.spec.op, a.spec.attrs, a.operands, a.spec.result, step.device, a.spec.loc};
  if (!hasKernel(spec.op.kind, computeDTypeOf(spec)))
    return bodyError(step, 0, "no CPU kernel computes it in " + std::string(dtypeName(computeDTypeOf(spec))));
  AnchorPlan p;
  p.plan = planKernel(spec);
  p.inResult = spec.result.dtype == step.result.dtype;
  p.outOffset = align64(p.plan.scratchBytes);
  p.scratchBytes = p.inResult ? p.plan.scratchBytes : p.outOffset + align64(spec.result.byteSize());
  return p;
}

// The checks lowering's validate() also makes, those the kernel rests on: a few shapes and
// references, so that a plan written by another build fails here, not in a launch.
Status checkBody(const StepSpec &step) {
  const FusedBody &body = *step.body;
  if (body.size() < 2) return contractError(step, "a fused body of fewer than 2 micro-ops");
  if (body.back().type != step.result)
    return bodyError(step, body.size() - 1, "gives " + body.back().type.str() + ", the step " + step.result.str());
  for (size_t j = 0; j < body.size(); ++j) {
    const MicroOp &m = body[j];
    const OpInfo &op = opInfo(m.op);
    const bool anchor = j == 0 && op.is(OpTrait::GemmLike);
    if (!anchor && !op.is(OpTrait::Elementwise))
      return bodyError(step, j, "not an elementwise op (or a GemmLike first)");
    if (m.type.shape != step.result.shape)
      return bodyError(step, j, "of shape " + m.type.str() + ", the step's is " + step.result.str());
    for (int32_t a : m.args)
      if (argIsMicroOp(a) ? (anchor || microOpOf(a) >= j) : static_cast<size_t>(a) >= step.operands.size())
        return bodyError(step, j, "reads an argument it cannot (" + std::to_string(a) + ")");
    if (!anchor && m.op != OpKind::Cast && m.op != OpKind::Where) {
      const DType compute = op.dtypeRule == DTypeRule::Compare ? DType::Bool : m.type.dtype;
      if (op.dtypeRule != DTypeRule::Compare && !hasKernel(m.op, compute))
        return bodyError(step, j, "no CPU kernel computes it in " + std::string(dtypeName(compute)));
    }
  }
  return Status();
}

}  // namespace

Expected<KernelPlan> planFused(const StepSpec &step) {
  FERRY_TRY(checkBody(step));
  uint64_t scratch = 0;
  if (hasAnchor(*step.body)) {
    Expected<AnchorPlan> a = planAnchor(step);
    if (!a) return a.status();
    scratch = a->scratchBytes;
  }
  return KernelPlan{std::string(kFusedKernel), scratch, {}};
}

Expected<std::unique_ptr<Kernel>> prepareFused(const KernelPlan &plan, const StepSpec &step) {
  if (!step.body) return contractError(step, "the plan '" + plan.kernel + "' is for a fused step");
  FERRY_TRY(checkBody(step));
  const FusedBody &body = *step.body;
  auto k = std::make_unique<FusedKernel>();
  k->operandTypes_.assign(step.operands.begin(), step.operands.end());
  k->result_ = step.result;
  k->device_ = step.device;
  const bool anchored = hasAnchor(body);
  if (anchored) {
    Expected<AnchorPlan> a = planAnchor(step);
    if (!a) return a.status();
    if (plan.scratchBytes < a->scratchBytes)
      return contractError(step, "the plan has " + std::to_string(plan.scratchBytes) +
                                     " scratch bytes, the fused kernel needs " + std::to_string(a->scratchBytes));
    AnchorSpec as = anchorSpec(step);
    StepSpec spec{as.spec.op, as.spec.attrs, as.operands, as.spec.result, step.device, as.spec.loc};
    std::vector<const std::byte *> constants;  // the anchor's operands' (StepSpec::constants)
    if (!step.constants.empty()) {
      for (int32_t arg : body[0].args) constants.push_back(step.constants[static_cast<size_t>(arg)]);
      spec.constants = constants;
      spec.packBudget = step.packBudget;
    }
    Expected<std::unique_ptr<Kernel>> anchor = prepareKernel(a->plan, spec);
    if (!anchor) return anchor.status();
    k->anchor_ = std::move(*anchor);
    for (int32_t arg : body[0].args) k->anchorArgs_.push_back(arg);
    k->anchorInResult_ = a->inResult;
    k->anchorOutOffset_ = a->outOffset;
    k->anchorType_ = body[0].type;
  }

  // The result: written by the last instruction itself when it is stored as computed, unless it
  // is large enough to stream (then stored from the last register with non-temporal stores).
  const bool stream = storedAsComputed(step.result.dtype) && step.result.byteSize() >= kStreamBytes;
  const bool direct = storedAsComputed(step.result.dtype) && !stream;

  // Values: step operands read by elementwise micro-ops (loads), then the micro-ops. Each gets
  // a register for its life: from its load (or its instruction) to its last reader.
  const size_t first = anchored ? 1 : 0;
  std::vector<int64_t> lastUse(body.size(), -1), operandLastUse(step.operands.size(), -1);
  for (size_t j = first; j < body.size(); ++j)
    for (int32_t a : body[j].args)
      (argIsMicroOp(a) ? lastUse[microOpOf(a)] : operandLastUse[static_cast<size_t>(a)]) = static_cast<int64_t>(j);
  std::vector<int32_t> freeRegs;
  int32_t next = 0;
  auto take = [&] {
    if (!freeRegs.empty()) {
      const int32_t r = freeRegs.back();
      freeRegs.pop_back();
      return r;
    }
    return next++;
  };
  std::vector<int32_t> operandReg(step.operands.size(), -1), valueReg(body.size(), -1);
  auto addLoad = [&](int32_t operand, const TensorType &type) -> Status {
    Load load;
    load.operand = operand;
    Expected<Walk> w = walkOf(step, type.shape);
    if (!w) return w.status();
    load.walk = std::move(*w);
    load.gather = withStorage(type.dtype, [](auto s) -> GatherFn { return gatherAs<decltype(s)>; });
    load.reg = take();
    // Read in place: dense (one run with stride 1) and stored in its compute type. The anchor's
    // output shares the result's memory when it is there: gathered, never read in place.
    load.direct = storedAsComputed(type.dtype) && type.shape == step.result.shape &&
                  !(operand < 0 && k->anchorInResult_);
    load.invariant = !load.direct && type.numel() == 1;
    load.elementSize = dtypeSize(type.dtype);
    k->loads_.push_back(std::move(load));
    return Status();
  };
  if (anchored) {
    FERRY_TRY(addLoad(-1, body[0].type));
    valueReg[0] = k->loads_.back().reg;
  }
  for (size_t o = 0; o < step.operands.size(); ++o)
    if (operandLastUse[o] >= 0) {
      FERRY_TRY(addLoad(static_cast<int32_t>(o), step.operands[o]));
      operandReg[o] = k->loads_.back().reg;
    }
  if (k->loads_.size() > FusedKernel::kMaxLoads)
    return contractError(step, std::to_string(k->loads_.size()) + " operands, at most " +
                                   std::to_string(FusedKernel::kMaxLoads));
  // Direct loads point at operand memory, invariant ones hold their value for the whole chunk:
  // their registers are never written, so never reused.
  std::vector<bool> readOnly(static_cast<size_t>(next), false);
  for (const Load &l : k->loads_) readOnly[static_cast<size_t>(l.reg)] = l.direct || l.invariant;

  for (size_t j = first; j < body.size(); ++j) {
    const MicroOp &m = body[j];
    Instr in;
    in.dtype = m.type.dtype;
    std::array<DType, 3> argTypes{};
    for (size_t i = 0; i < m.args.size(); ++i) {
      const int32_t a = m.args[i];
      in.src[i] = argIsMicroOp(a) ? valueReg[microOpOf(a)] : operandReg[static_cast<size_t>(a)];
      argTypes[i] = argIsMicroOp(a) ? body[microOpOf(a)].type.dtype
                                    : step.operands[static_cast<size_t>(a)].dtype;
    }
    // Registers whose last reader is this micro-op are free once it ran; the first operand's
    // may be its destination (ops that read element i before writing it), a cast's never.
    auto dies = [&](size_t i) {
      const int32_t a = m.args[i];
      return argIsMicroOp(a) ? lastUse[microOpOf(a)] == static_cast<int64_t>(j)
                             : operandLastUse[static_cast<size_t>(a)] == static_cast<int64_t>(j);
    };
    std::vector<int32_t> dying;
    for (size_t i = 0; i < m.args.size(); ++i)
      if (dies(i) && std::find(dying.begin(), dying.end(), in.src[i]) == dying.end())
        dying.push_back(in.src[i]);
    // The last one writes the result's memory when it is stored as computed (resultDirect_):
    // a register of its own, which nothing else binds.
    const bool last = j + 1 == body.size() && direct;
    const bool inPlace = !last && m.op != OpKind::Cast && !m.args.empty() && dies(0) &&
                         !readOnly[static_cast<size_t>(in.src[0])] &&
                         computeOf(argTypes[0]) == computeOf(m.type.dtype);
    if (inPlace) {
      in.dst = in.src[0];
      dying.erase(std::find(dying.begin(), dying.end(), in.src[0]));
    } else {
      in.dst = last ? next++ : take();
    }
    if (static_cast<size_t>(in.dst) >= readOnly.size()) readOnly.resize(static_cast<size_t>(in.dst) + 1, false);
    for (int32_t r : dying)
      if (!readOnly[static_cast<size_t>(r)]) freeRegs.push_back(r);
    valueReg[j] = in.dst;

    const OpInfo &op = opInfo(m.op);
    const Compute c = computeOf(m.type.dtype);
    Status bad;
    if (m.op == OpKind::Cast) {
      in.from = argTypes[0];
      in.run = runCast;
    } else if (m.op == OpKind::Where) {
      in.run = withCompute(c, [](auto x) -> RunFn { return runWhere<decltype(x)>; });
    } else if (op.dtypeRule == DTypeRule::Compare) {
      const Compute oc = computeOf(argTypes[0]);
      withCompute(oc, [&](auto x) {
        using C = decltype(x);
        in.fn = reinterpret_cast<void *>(compareBlockFn<C>(m.op));
        in.run = runCompare<C>;
      });
    } else if (m.op == OpKind::LeakyRelu) {
      if (c == Compute::I64) return bodyError(step, j, "leaky_relu computes in floats only");
      in.alpha = attrFloat(op, m.attrs, "alpha");
      in.run = c == Compute::F32 ? runLeakyRelu<float> : runLeakyRelu<double>;
    } else if (op.is(OpTrait::Unary)) {
      bool tanhGelu = false;
      if (m.op == OpKind::Gelu) {
        const std::string &mode = attrString(op, m.attrs, "approximate");
        if (mode != "none" && mode != "tanh")
          return makeError("attr", "'gelu' approximate must be \"none\" or \"tanh\", got \"" + mode + "\"", m.loc);
        tanhGelu = mode == "tanh";
      }
      withCompute(c, [&](auto x) {
        using C = decltype(x);
        in.fn = reinterpret_cast<void *>(unaryBlockFn<C>(m.op, tanhGelu));
        in.run = runUnary<C>;
      });
    } else {
      withCompute(c, [&](auto x) {
        using C = decltype(x);
        in.fn = reinterpret_cast<void *>(binaryBlockFn<C>(m.op));
        in.run = runBinary<C>;
      });
    }
    // Cast, where and leaky_relu (which holds alpha) run without a block function.
    const bool usesFn = m.op != OpKind::Cast && m.op != OpKind::Where && m.op != OpKind::LeakyRelu;
    if (usesFn && in.fn == nullptr)
      return bodyError(step, j, "no CPU block function computes it in " +
                                    std::string(dtypeName(computeDType(c))));
    k->instrs_.push_back(in);
  }
  k->registers_ = next;
  if (static_cast<size_t>(next) > FusedKernel::kMaxRegisters)
    return contractError(step, std::to_string(next) + " registers, at most " +
                                   std::to_string(FusedKernel::kMaxRegisters));
  k->resultDirect_ = direct;
  k->stream_ = stream;
  k->store_ = withStorage(step.result.dtype, [stream](auto s) -> StoreFn {
    using S = decltype(s);
    if constexpr (std::is_same_v<S, ComputeOf<S>>)
      if (stream) return streamAs<S>;
    return storeAs<S>;
  });
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace ferry::cpu
