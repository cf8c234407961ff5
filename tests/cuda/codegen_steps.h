// tests/cuda/codegen_steps.h — the steps of random graphs with their generated CUDA kernels,
// random inputs and the reference interpreter's results: what the emulation and NVRTC tests
// check.
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/codegen/gemm_shape.h"
#include "backends/cuda/codegen/kernel_source.h"
#include "backends/cuda/codegen/plan.h"
#include "common/group_shapes.h"
#include "common/random_graph.h"
#include "ir/tensor_data.h"

namespace ferry::cudatest {

struct CollectedStep {
  std::string what;  ///< "seed 12, step 3: linear+relu f32[4,8]", for failures
  cuda::KernelSource kernel;
  /// The kernel's `in` pointers' data, in order (an anchored group's last is its GEMM's output,
  /// computed by the reference).
  std::vector<TensorData> inputs;
  TensorData want;  ///< the reference interpreter's result
  double tolerance = 0;
  // For coverage.
  FusedBody body;
  std::vector<TensorType> operands;
  TensorType result;
  OpKind op = OpKind::Identity;
};

/// Compiles `graphs` random graphs with fusion for the CPU (whose fusion groups are the CUDA
/// target's too) and collects their steps whose kernel kernel_source.h prints: elementwise
/// steps and fused groups when `elementwise`, every other kind of step otherwise.
std::vector<CollectedStep> collectSteps(int graphs, bool elementwise);

/// Every kernel of `kernels` compiled for the host (backends/cuda/codegen/emulate.h, with the
/// compiler that built the tests) into one shared library, loaded: each source in a namespace of
/// its own, with an extern "C" launcher.
class HostKernels {
 public:
  explicit HostKernels(const std::vector<cuda::KernelSource> &kernels);
  ~HostKernels();
  HostKernels(const HostKernels &) = delete;
  HostKernels &operator=(const HostKernels &) = delete;
  /// False when the compiler or the loader failed: errors() says why.
  bool ok() const { return handle_ != nullptr; }
  const std::string &errors() const { return errors_; }
  /// Runs kernel k on `inputs` (its `in` pointers in order), writing `result`, with
  /// `scratchBytes` of zeroed scratch; returns the error flag the kernel left (0: none).
  unsigned run(size_t k, const std::vector<const TensorData *> &inputs, TensorData &result,
               size_t scratchBytes = 0) const;
  /// Runs kernel k on raw pointers (as a device runtime launches it); returns the error flag.
  unsigned run(size_t k, std::byte *out, std::byte *scratch,
               const std::vector<const std::byte *> &in) const;

 private:
  std::vector<cuda::KernelSource> kernels_;
  std::string dir_, errors_;
  void *handle_ = nullptr;
};

/// Runs every step on the host, its kernel compiled once per distinct source (HostKernels), and
/// compares it with the reference's result: floats within the step's tolerance, bool and
/// integers exactly, the error flag clear. The first five differences are gtest failures (with
/// the kernel's source). Returns the number of distinct kernels.
size_t expectStepsMatchTheReference(const std::vector<CollectedStep> &steps, int *failures = nullptr);

/// One step built by hand: its op, complete attributes and types, and inputs.
struct HandStep {
  std::string what;  ///< "conv2d of f32[1,4,6,6] f32[...] groups=2 ..."
  const OpInfo *op = nullptr;
  Attrs attrs;
  std::vector<TensorType> operands;
  TensorType result;
  std::vector<TensorData> inputs;
  Location loc;

  StepSpec spec() const { return {*op, attrs, operands, result, Device::cuda(0), loc}; }
};

/// `kind` on random inputs of `operands` (as collectSteps draws them; a batch_norm's variance,
/// operand 4, positive) with `attrs` completed; the result type from the shape rule.
HandStep handStep(OpKind kind, std::vector<TensorType> operands, std::vector<NamedAttr> attrs,
                  testutil::Rng &rng);

/// Prints each step's kernel, compiles it with NVRTC where the toolkit is, runs it on the host
/// and compares it with the reference (expectStepsMatchTheReference's rules); the number of
/// steps that failed (each a gtest failure).
int checkAgainstReference(const std::vector<HandStep> &steps);

/// One cublasLtMatmul call as cuBLASLt defines it, on the host: D = epilogue(op(A) B + bias),
/// column-major with the shape's leading dimensions and strided batches, elements of `dtype`
/// summed in double and stored once (cuBLASLt sums in f32 or f64 and rounds once).
void hostGemm(const cuda::GemmShape &g, DType dtype, cuda::Epilogue epilogue, const std::byte *a,
              const std::byte *b, const std::byte *bias, std::byte *d);

/// The shapes of group among `steps` (tests/common/group_shapes.h).
testutil::GroupShapes groupShapesOf(const std::vector<CollectedStep> &steps);

}  // namespace ferry::cudatest
