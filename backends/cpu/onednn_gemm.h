// backends/cpu/onednn_gemm.h — internal: f32 GEMMs through oneDNN's matmul, made once when a
// step is prepared, split into panels over ferry's pool.
//
// Why: OpenBLAS 0.3.21 packs the whole weight matrix on every sgemm call; at batch 32 that was
// 37 % of the MLP's profile, and oneDNN's matmul (Debian's libdnnl-dev) ran the same layers
// 1.6-2x faster at one thread with the weights as stored (bench/README.md, "oneDNN for the
// MLP's GEMMs"). How it shares the cores: oneDNN's Debian build threads with OpenMP, whose
// workers spin after each parallel region (as OpenBLAS's own threads did); so every oneDNN call
// here is made with one OpenMP thread (no team is ever started), one call per panel of the
// pool, exactly as linalg.cpp calls sgemm. Results agree with sgemm's to rounding (sums in
// another order), not bit for bit.
//
// Allocation: a launch creates oneDNN's small memory handles and its argument map (a few heap
// allocations per panel; the one exception to "kernels allocate nothing", counted by
// tests/alloc); its scratchpad is one buffer per thread, grown when a larger GEMM first needs it.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "ir/status.h"

namespace ferry::cpu {

/// The variable that picks the f32 GEMMs' library: `onednn` (the default in a build with it) or
/// `openblas` (every GEMM through sgemm, for comparison). Read once, when the first GEMM is
/// prepared; a bad value is ignored with one warning on stderr, as FERRY_NUM_THREADS is.
inline constexpr const char *kCpuGemmEnv = "FERRY_CPU_GEMM";

/// A FERRY_CPU_GEMM value: whether it asks for oneDNN (`onednn`) or not (`openblas`); anything
/// else is an error naming the variable, what it takes and what came. `onednn` in a build
/// without oneDNN is an error too.
Expected<bool> parseCpuGemm(std::string_view value);

/// The environment's FERRY_CPU_GEMM: unset or empty is fine, any other value must parse.
Status checkCpuGemmEnv();

/// Whether f32 GEMMs prepared from now on take oneDNN: FERRY_CPU_GEMM's choice until
/// setOnednnEnabled changes it (tests and benchmarks compare both in one process). Kernels
/// already prepared keep their library.
bool onednnEnabled();
void setOnednnEnabled(bool on);

/// One GEMM's shape: c[m×n] = a[m×k]·b (+ bias[n] on every row) (+ c when accumulating), rows of
/// a and c `lda`/`ldc` elements apart; b is [k, n] with rows `ldb` apart, or with `transB` the
/// [n, k] matrix (W of linear) read transposed.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  bool transB = false, bias = false, accumulate = false;
};

/// A GEMM of one shape, ready to run many times, from any thread, concurrently.
class OnednnGemm {
 public:
  /// The GEMM, or null when oneDNN is not enabled (or not in this build) or has no f32 matmul
  /// for the shape (sizes past its int range, or it declines): then the caller takes its BLAS path. Throws
  /// std::bad_alloc when memory runs out, as operator new does.
  ///
  /// `constantB`: b's bytes when they are the same at every run (a weight, StepSpec::constants).
  /// With at most 32 rows, where it pays, they are packed now, once, into oneDNN's layout for
  /// the shape, a copy the GEMM keeps (packedBytes) when it fits `packBudget` (which it then
  /// takes from), and every run reads the copy.
  static std::shared_ptr<const OnednnGemm> make(const GemmShape &shape, const float *constantB = nullptr,
                                                uint64_t *packBudget = nullptr);

  /// c = a·b as the shape says, `bias` read when the shape has one. Its panels run over the pool
  /// (inline when called from a pool thread). Throws std::bad_alloc when memory runs out. With
  /// b packed, `b` must be the constantB it was packed from: else an "internal" error.
  Status run(const float *a, const float *b, const float *bias, float *c) const;

  /// The panels the GEMM is split into (1 when it is small or the pool has one thread).
  int panels() const;
  /// oneDNN's name for the implementation of the first panel ("brg:avx512_core").
  const char *implementation() const;
  /// Bytes of b's packed copies (0 when b is read where it is).
  uint64_t packedBytes() const;

  struct Impl;
  explicit OnednnGemm(std::unique_ptr<Impl> impl);
  ~OnednnGemm();

 private:
  std::unique_ptr<Impl> impl_;
};

/// Whether this build calls oneDNN ("oneDNN 2.6.3"), for descriptions; empty when it does not.
const char *onednnVersion();

}  // namespace ferry::cpu
