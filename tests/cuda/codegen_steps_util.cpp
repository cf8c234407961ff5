// tests/cuda/codegen_steps_util.cpp — see codegen_steps.h.
#include "cuda/codegen_steps.h"

#include <dlfcn.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "passes/lower.h"
#ifdef FERRY_HAVE_CUDA
#include "backends/cuda/nvrtc.h"
#endif

namespace ferry::cudatest {

namespace {

std::vector<OpKind> generatedOps(bool elementwise) {
  std::vector<OpKind> ops;
  for (const OpInfo &op : allOps())
    if (op.is(OpTrait::Elementwise) || op.is(OpTrait::GemmLike)) ops.push_back(op.kind);
  if (elementwise) {
    for (OpKind k : {OpKind::Softmax, OpKind::Sum, OpKind::Transpose, OpKind::Reshape}) ops.push_back(k);
  } else {
    for (OpKind k : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::Sum, OpKind::Mean, OpKind::Max,
                     OpKind::LayerNorm, OpKind::Transpose, OpKind::Reshape, OpKind::Slice,
                     OpKind::Concat, OpKind::Expand, OpKind::Squeeze, OpKind::Unsqueeze,
                     OpKind::Flatten, OpKind::Gather, OpKind::Identity, OpKind::MaxPool2d,
                     OpKind::AvgPool2d, OpKind::GlobalAvgPool, OpKind::BatchNorm})
      ops.push_back(k);
  }
  return ops;
}

// Small values every dtype of their category holds: multiples of 1/64 in [-2, 2] for floats,
// [-8, 8] for integers ([0, 16] for u8), 0/1 for bool.
TensorData randomTensor(const TensorType &t, testutil::Rng &rng) {
  TensorData d(t.dtype, t.shape);
  for (int64_t i = 0; i < d.numel(); ++i) {
    std::byte *p = d.mutableBytes().data() + static_cast<size_t>(i) * dtypeSize(t.dtype);
    double v = 0;
    if (t.dtype == DType::Bool) v = static_cast<double>(rng.below(2));
    else if (t.dtype == DType::U8) v = static_cast<double>(rng.range(0, 16));
    else if (isFloating(t.dtype)) v = static_cast<double>(rng.range(-128, 128)) / 64;
    else v = static_cast<double>(rng.range(-8, 8));
    storeDouble(t.dtype, p, v);
  }
  return d;
}

double largestMagnitude(const TensorData &t) {
  double m = 0;
  if (!isFloating(t.dtype())) return 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = std::fabs(loadDouble(t.dtype(), t.bytes().data() + static_cast<size_t>(i) * dtypeSize(t.dtype())));
    if (std::isfinite(v)) m = std::max(m, v);
  }
  return m;
}

}  // namespace

std::vector<CollectedStep> collectSteps(int graphs, bool elementwise) {
  std::vector<CollectedStep> out;
  const std::vector<OpKind> ops = generatedOps(elementwise);
  testutil::Rng rng(4242);
  for (int seed = 0; seed < graphs; ++seed) {
    testutil::RandomGraphOptions gen{.maxNodes = 14,
                                     .insertedRate = 0,
                                     .devices = {Device::cpu()},
                                     .pinRate = 0,
                                     .dtypePinRate = 0.1,
                                     .ops = ops,
                                     .extremeValues = false,
                                     .compileReady = true};
    const Graph g = testutil::randomGraph(static_cast<uint64_t>(seed) + 91001, gen);
    CompileOptions options;
    options.dtype = seed % 3 == 0 ? DTypePolicy{DTypePolicy::Kind::Autocast, DType::F16}
                                  : DTypePolicy{DTypePolicy::Kind::Promote, DType::F16};
    options.capabilities = backendCapabilities();
    const CompileResult compiled = compile(g, options);
    if (!compiled.ok()) continue;
    const Expected<Executable> exe = lower(compiled.graph, options);
    if (!exe) continue;
    for (size_t si = 0; si < exe->steps.size(); ++si) {
      const Step &st = exe->steps[si];
      const OpInfo &op = opInfo(st.op);
      const bool isElementwise = !st.body.empty() || op.is(OpTrait::Elementwise);
      if (st.op == OpKind::Transfer || op.is(OpTrait::Source) || isElementwise != elementwise) continue;
      // cuBLASLt runs matmul and linear; a conv2d alone has a generated kernel.
      if (!elementwise && op.is(OpTrait::GemmLike) && st.op != OpKind::Conv2d) continue;
      CollectedStep c;
      for (int32_t o : st.operands) c.operands.push_back(exe->slots[static_cast<size_t>(o)].type);
      c.result = exe->slots[static_cast<size_t>(st.result)].type;
      c.body = st.body;
      c.op = st.op;
      const StepSpec spec{op, st.attrs, c.operands, c.result, Device::cuda(0), st.loc,
                          st.body.empty() ? nullptr : &c.body};
      const bool anchored = !st.body.empty() && opInfo(st.body[0].op).is(OpTrait::GemmLike);
      Expected<cuda::KernelSource> k =
          anchored ? cuda::elementwiseKernel(spec, 1) : cuda::stepKernel(spec);
      c.what = "seed " + std::to_string(seed) + ", step " + std::to_string(si) + ": " +
               stepOpName(st) + " " + c.result.str();
      if (!k) {
        ADD_FAILURE() << c.what << ": " << k.status().message();
        continue;
      }
      c.kernel = std::move(*k);
      for (const TensorType &t : c.operands) c.inputs.push_back(randomTensor(t, rng));
      // The reference, micro-op by micro-op (or the one op).
      std::vector<TensorData> values;
      double scale = 1, roundoff = 0x1p-24;
      bool failed = false;
      auto eval = [&](OpKind k2, const Attrs &attrs, const std::vector<TensorData> &args,
                      const TensorType &type) {
        Expected<TensorData> r = reference::evalOp(opInfo(k2), args, attrs, type);
        if (!r) {
          failed = true;
          return TensorData(type.dtype, type.shape);
        }
        roundoff = std::max(roundoff, testutil::unitRoundoff(type.dtype));
        scale = std::max(scale, largestMagnitude(*r));
        return std::move(*r);
      };
      for (const TensorData &t : c.inputs) scale = std::max(scale, largestMagnitude(t));
      if (st.body.empty()) {
        c.want = eval(st.op, st.attrs, c.inputs, c.result);
      } else {
        for (const MicroOp &m : st.body) {
          std::vector<TensorData> args;
          for (int32_t a : m.args)
            args.push_back(argIsMicroOp(a) ? values[microOpOf(a)] : c.inputs[static_cast<size_t>(a)]);
          values.push_back(eval(m.op, m.attrs, args, m.type));
        }
        c.want = values.back();
        if (anchored) c.inputs.push_back(values[0]);
      }
      if (failed) continue;  // an index out of range: the kernels' error path, tested apart
      const double length = static_cast<double>(std::max<size_t>(1, st.body.size()));
      c.tolerance = roundoff * scale * (8 + 4 * length);
      out.push_back(std::move(c));
    }
  }
  return out;
}

HostKernels::HostKernels(const std::vector<cuda::KernelSource> &kernels) : kernels_(kernels) {
  // A fresh path per library: emulate.h's inline thread-locals are unique symbols, so dlclose
  // never unloads one, and dlopen of a path it has seen returns the old library.
  static std::atomic<int> libraries{0};
  dir_ = (std::filesystem::temp_directory_path() /
          ("ferry.cuda_emulation." + std::to_string(::getpid()) + "." + std::to_string(libraries++)))
             .string();
  std::filesystem::create_directories(dir_);
  const std::string cpp = dir_ + "/kernels.cpp", so = dir_ + "/kernels.so";
  {
    std::ofstream out(cpp);
    out << "#include \"" FERRY_SOURCE_DIR "/backends/cuda/codegen/emulate.h\"\n";
    for (size_t k = 0; k < kernels.size(); ++k) {
      out << "namespace k" << k << " {\n" << kernels[k].source << "}\n";
      out << "extern \"C\" void launch" << k << "(long long blocks, int threads, void **args) {\n"
          << "  ferry_emulate::launch(k" << k << "::ferry_kernel, blocks, threads, "
          << (kernels[k].blockSync ? "true" : "false") << ", args);\n}\n";
    }
  }
  const std::string command = std::string(FERRY_HOST_CXX) + " -std=c++20 -O1 -w -shared -fPIC -o " +
                              so + " " + cpp + " 2> " + dir_ + "/errors.txt";
  if (std::system(command.c_str()) != 0) {
    std::ifstream errors(dir_ + "/errors.txt");
    errors_.assign(std::istreambuf_iterator<char>(errors), {});
    return;
  }
  handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) errors_ = dlerror();
}

HostKernels::~HostKernels() {
  if (handle_) dlclose(handle_);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

unsigned HostKernels::run(size_t k, std::byte *out, std::byte *scratch,
                          const std::vector<const std::byte *> &in) const {
  using Launch = void (*)(long long, int, void **);
  auto launch = reinterpret_cast<Launch>(dlsym(handle_, ("launch" + std::to_string(k)).c_str()));
  std::vector<const char *> pointers;
  for (const std::byte *p : in) pointers.push_back(reinterpret_cast<const char *>(p));
  char *o = reinterpret_cast<char *>(out);
  char *sc = reinterpret_cast<char *>(scratch);
  unsigned error = 0;
  unsigned *errorPointer = &error;
  std::vector<void *> args{&o, &sc, &errorPointer};
  for (const char *&p : pointers) args.push_back(&p);
  launch(kernels_[k].blocks, kernels_[k].threads, args.data());
  return error;
}

unsigned HostKernels::run(size_t k, const std::vector<const TensorData *> &inputs,
                          TensorData &result, size_t scratchBytes) const {
  using Launch = void (*)(long long, int, void **);
  auto launch = reinterpret_cast<Launch>(dlsym(handle_, ("launch" + std::to_string(k)).c_str()));
  std::vector<const char *> in;
  for (const TensorData *t : inputs) in.push_back(reinterpret_cast<const char *>(t->bytes().data()));
  char *out = reinterpret_cast<char *>(result.mutableBytes().data());
  std::vector<std::byte> scratchMemory(scratchBytes + 64);
  char *scratch = reinterpret_cast<char *>(scratchMemory.data());
  unsigned error = 0;
  unsigned *errorPointer = &error;
  std::vector<void *> args{&out, &scratch, &errorPointer};
  for (const char *&p : in) args.push_back(&p);
  launch(kernels_[k].blocks, kernels_[k].threads, args.data());
  return error;
}

size_t expectStepsMatchTheReference(const std::vector<CollectedStep> &steps, int *failed) {
  std::vector<cuda::KernelSource> kernels;
  std::map<std::string, size_t> index;
  std::vector<size_t> kernelOf;
  for (const CollectedStep &s : steps) {
    auto [it, added] = index.emplace(s.kernel.source, kernels.size());
    if (added) kernels.push_back(s.kernel);
    kernelOf.push_back(it->second);
  }
  const HostKernels host(kernels);
  EXPECT_TRUE(host.ok()) << host.errors().substr(0, 4000);
  if (failed) *failed = host.ok() ? 0 : static_cast<int>(steps.size());
  if (!host.ok()) return kernels.size();
  int failures = 0;
  for (size_t i = 0; i < steps.size() && failures < 5; ++i) {
    const CollectedStep &s = steps[i];
    std::vector<const TensorData *> inputs;
    for (const TensorData &t : s.inputs) inputs.push_back(&t);
    TensorData got(s.want.dtype(), s.want.shape());
    const unsigned flag = host.run(kernelOf[i], inputs, got);
    const double tolerance = isFloating(s.want.dtype()) ? s.tolerance : 0;
    std::string diff = testutil::compareOutputs({s.want}, {got}, tolerance);
    if (flag != 0) diff = "the kernel set its error flag (" + std::to_string(flag) + ")";
    if (!diff.empty()) {
      ++failures;
      ADD_FAILURE() << s.what << ": " << diff << "\n"
                    << kernels[kernelOf[i]].source.substr(cuda::prelude().size());
    }
  }
  if (failed) *failed = failures;
  return kernels.size();
}

void hostGemm(const cuda::GemmShape &g, DType dtype, cuda::Epilogue epilogue, const std::byte *a,
              const std::byte *b, const std::byte *bias, std::byte *d) {
  const size_t e = dtypeSize(dtype);
  auto at = [&](const std::byte *p, int64_t i) { return loadDouble(dtype, p + static_cast<size_t>(i) * e); };
  for (int64_t batch = 0; batch < g.batch; ++batch)
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double acc = 0;
        for (int64_t l = 0; l < g.k; ++l)
          acc += at(a, batch * g.strideA + (g.transposeA ? l + i * g.lda : i + l * g.lda)) *
                 at(b, batch * g.strideB + l + j * g.ldb);
        if (bias) acc += at(bias, i);
        switch (epilogue) {
          case cuda::Epilogue::Relu:
          case cuda::Epilogue::ReluBias: acc = acc > 0 ? acc : 0; break;
          case cuda::Epilogue::Gelu:
          case cuda::Epilogue::GeluBias:
            acc = 0.5 * acc * (1 + std::tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
            break;
          default: break;
        }
        storeDouble(dtype, d + static_cast<size_t>(batch * g.strideD + i + j * g.ldd) * e, acc);
      }
}

HandStep handStep(OpKind kind, std::vector<TensorType> operands, std::vector<NamedAttr> attrs,
                  testutil::Rng &rng) {
  HandStep h;
  h.op = &opInfo(kind);
  h.loc = Location{.file = "hand.fy", .line = 7, .col = 3};
  Expected<Attrs> complete = makeAttrs(*h.op, attrs, {});
  EXPECT_TRUE(complete.ok()) << complete.status().message();
  if (complete) h.attrs = *complete;
  h.operands = std::move(operands);
  InferResult r = inferType(*h.op, h.operands, h.attrs);
  EXPECT_TRUE(std::holds_alternative<TensorType>(r)) << h.op->name;
  if (auto *t = std::get_if<TensorType>(&r)) h.result = *t;
  h.what = std::string(h.op->name) + " of";
  for (const TensorType &t : h.operands) h.what += " " + t.str();
  for (const NamedAttr &a : attrs) h.what += " " + a.name + "=" + attrValueStr(a.value);
  for (size_t k = 0; k < h.operands.size(); ++k) {
    TensorData d = randomTensor(h.operands[k], rng);
    if (kind == OpKind::BatchNorm && k == 4)  // a variance: positive
      for (int64_t i = 0; i < d.numel(); ++i) d.set(i, std::fabs(d.at(i)) + 1.0 / 64);
    h.inputs.push_back(std::move(d));
  }
  return h;
}

int checkAgainstReference(const std::vector<HandStep> &steps) {
  std::vector<CollectedStep> collected;
  int failures = 0;
  for (const HandStep &h : steps) {
    CollectedStep c;
    c.what = h.what;
    Expected<cuda::KernelSource> k = cuda::stepKernel(h.spec());
    Expected<TensorData> want = reference::evalOp(*h.op, h.inputs, h.attrs, h.result, h.loc);
    if (!k || !want) {
      ADD_FAILURE() << h.what << ": " << (!k ? k.status() : want.status()).message();
      ++failures;
      continue;
    }
#ifdef FERRY_HAVE_CUDA
    if (Expected<std::string> ptx = cuda::compileToPtx(*k); !ptx) {
      ADD_FAILURE() << h.what << ": " << ptx.status().message();
      ++failures;
    }
#endif
    double scale = largestMagnitude(*want);
    for (const TensorData &t : h.inputs) scale = std::max(scale, largestMagnitude(t));
    c.kernel = std::move(*k);
    c.inputs = h.inputs;
    c.want = std::move(*want);
    c.tolerance = std::max(0x1p-24, testutil::unitRoundoff(h.result.dtype)) * std::max(1.0, scale) * 12;
    c.operands = h.operands;
    c.result = h.result;
    c.op = h.op->kind;
    collected.push_back(std::move(c));
  }
  int ran = 0;
  expectStepsMatchTheReference(collected, &ran);
  return failures + ran;
}

testutil::GroupShapes groupShapesOf(const std::vector<CollectedStep> &steps) {
  testutil::GroupShapes shapes;
  for (const CollectedStep &c : steps) shapes.add(c.body, c.operands, c.result);
  return shapes;
}

}  // namespace ferry::cudatest
