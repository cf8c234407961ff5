// backends/cpu/onednn_gemm.cpp — f32 GEMMs through oneDNN's matmul (see the header for why and
// how it shares the cores). Built with FERRY_ONEDNN when CMake finds Debian's libdnnl-dev; without
// it, make() says null and linalg.cpp keeps OpenBLAS for every GEMM.
#include "backends/cpu/onednn_gemm.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace ferry::cpu {

namespace {

#ifdef FERRY_ONEDNN
constexpr bool kBuiltWithOnednn = true;
#else
constexpr bool kBuiltWithOnednn = false;
#endif

// FERRY_CPU_GEMM's choice, read once; a bad value is warned about and ignored.
bool onednnWanted() {
  const char *value = std::getenv(kCpuGemmEnv);
  if (value == nullptr || *value == '\0') return kBuiltWithOnednn;
  const Expected<bool> on = parseCpuGemm(value);
  if (on) return *on;
  std::fprintf(stderr, "ferry: warning: %s; ignored, using %s\n",
               on.status().diagnostics().front().message.c_str(), kBuiltWithOnednn ? "onednn" : "openblas");
  return kBuiltWithOnednn;
}

std::atomic<bool> &enabled() {
  static std::atomic<bool> on{onednnWanted()};
  return on;
}

}  // namespace

Expected<bool> parseCpuGemm(std::string_view value) {
  if (value == "openblas") return false;
  if (value == "onednn" && kBuiltWithOnednn) return true;
  if (value == "onednn")
    return makeError("environment", std::string(kCpuGemmEnv) + "=onednn: this build of ferry has no oneDNN "
                              "(CMake did not find libdnnl-dev); expected openblas");
  return makeError("environment", std::string(kCpuGemmEnv) + ": expected onednn or openblas, got '" +
                                std::string(value) + "'");
}

Status checkCpuGemmEnv() {
  const char *value = std::getenv(kCpuGemmEnv);
  if (value == nullptr || *value == '\0') return Status();
  const Expected<bool> on = parseCpuGemm(value);
  return on ? Status() : on.status();
}

bool onednnEnabled() { return enabled().load(); }
void setOnednnEnabled(bool on) { enabled().store(on && kBuiltWithOnednn); }

}  // namespace ferry::cpu

#ifdef FERRY_ONEDNN

#include <algorithm>
#include <array>
#include <climits>
#include <new>
#include <optional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "backends/cpu/onednn_impl.h"
#include "backends/cpu/parallel.h"
#include "ir/status.h"

namespace ferry::cpu {

using namespace onednn;

namespace {

// Multiply-adds a panel should hold at least (linalg.cpp's grain for sgemm panels), and the
// fewest rows or columns a panel is given: thinner ones leave oneDNN's kernels mostly tail.
constexpr int64_t kPanelWork = int64_t{1} << 18;
constexpr int64_t kMinPanelRows = 8, kMinPanelCols = 64;
// The most rows a GEMM packs its constant b for: below, oneDNN's copy of b into its layout on
// every call is a large part of the work (packing measured 1.3-1.8x at 16-32 rows, and no gain
// from 64 rows at two threads: bench/README.md, "oneDNN GEMMs").
constexpr int64_t kPackRows = 32;

dnnl::matmul::primitive_desc matmulDesc(const dnnl::memory::desc &src, const dnnl::memory::desc &weights,
                                        const dnnl::memory::desc &bias, const dnnl::memory::desc &dst,
                                        const dnnl::primitive_attr &attr) {
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::matmul::primitive_desc(cpuEngine(), src, weights, bias, dst, attr);
#else
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, bias, dst), attr, cpuEngine());
#endif
}

}  // namespace

// One panel: rows [r0, r0 + m) and columns [c0, c0 + n) of c, its own primitive.
struct Panel {
  dnnl::matmul primitive;
  dnnl::memory::desc src, weights, bias, dst, scratchpad;
  std::shared_ptr<const dnnl::memory> packed;  // b's slice in oneDNN's layout, or null
  int64_t columns = 0;  // n of the panel
  int64_t aOffset = 0, bOffset = 0, biasOffset = 0, cOffset = 0;
  size_t scratchBytes = 0;
  std::string implementation;  // oneDNN's name for it
};

struct OnednnGemm::Impl {
  GemmShape shape;
  std::vector<Panel> panels;
  const float *packedFrom = nullptr;  // constantB, when b is packed
  uint64_t packedBytes = 0;

  void runPanel(const Panel &p, const float *a, const float *b, const float *bias, float *c) const {
    const OneOmpThread one;
    ThreadState &state = threadState();
    Handles handles;
    handles.add(DNNL_ARG_SRC, p.src, a + p.aOffset);
    handles.add(DNNL_ARG_WEIGHTS, p.weights, p.packed ? p.packed->get_data_handle() : b + p.bOffset);
    if (shape.bias) handles.add(DNNL_ARG_BIAS, p.bias, bias + p.biasOffset);
    handles.add(DNNL_ARG_DST, p.dst, c + p.cOffset);
    if (p.scratchBytes > 0) handles.add(DNNL_ARG_SCRATCHPAD, p.scratchpad, state.scratchOf(p.scratchBytes));
    check(dnnl_primitive_execute(p.primitive.get(), state.stream.get(), handles.count(), handles.args()),
          "dnnl_primitive_execute");
  }
};

namespace {

using dims = dnnl::memory::dims;
constexpr auto kF32 = dnnl::memory::data_type::f32;

// `n` columns of b as stored: [k, n] rows ldb apart, or transposed from [n, k].
dnnl::memory::desc plainWeights(const GemmShape &s, int64_t n) {
  return dnnl::memory::desc(dims{s.k, n}, kF32, s.transB ? dims{1, s.ldb} : dims{s.ldb, 1});
}

// The panel of rows [r0, r0 + m) and columns [c0, c0 + n), or nothing when oneDNN declines it;
// b as stored, or (`anyLayout`) in the layout oneDNN picks for it, to be packed.
std::optional<Panel> makePanel(const GemmShape &s, int64_t r0, int64_t m, int64_t c0, int64_t n,
                               bool anyLayout) {
  Panel p;
  p.src = dnnl::memory::desc(dims{m, s.k}, kF32, dims{s.lda, 1});
  p.weights = anyLayout ? dnnl::memory::desc(dims{s.k, n}, kF32, dnnl::memory::format_tag::any)
                        : plainWeights(s, n);
  if (s.bias) p.bias = dnnl::memory::desc(dims{1, n}, kF32, dims{n, 1});
  p.dst = dnnl::memory::desc(dims{m, n}, kF32, dims{s.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s.accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  try {
    const dnnl::matmul::primitive_desc pd = matmulDesc(p.src, p.weights, p.bias, p.dst, attr);
    p.weights = pd.weights_desc();
    p.scratchpad = pd.scratchpad_desc();
    p.scratchBytes = p.scratchpad.get_size();
    p.primitive = dnnl::matmul(pd);
    p.implementation = pd.impl_info_str();
  } catch (const dnnl::error &e) {
    if (e.status == dnnl_out_of_memory) throw std::bad_alloc();
    return std::nullopt;  // no implementation for this shape: the BLAS path takes it
  }
  p.columns = n;
  p.aOffset = r0 * s.lda;
  p.bOffset = s.transB ? c0 * s.ldb : c0;
  p.biasOffset = c0;
  p.cOffset = r0 * s.ldc + c0;
  return p;
}

// The panels of the GEMM (see make()), or nothing when oneDNN declines one.
std::optional<std::vector<Panel>> makePanels(const GemmShape &s, bool anyLayout) {
  // Panels along the rows when each gets kMinPanelRows, else along the columns: row panels keep
  // c's rows whole (oneDNN's brgemm kernels took them; column panels fell back to its older
  // gemm), column panels suit few rows of a wide product.
  // (In double: m·n·k of sizes up to INT_MAX each would overflow int64.)
  const double work = static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  const int64_t want = std::max<int64_t>(1, static_cast<int64_t>(std::min<double>(poolThreads(), work / kPanelWork)));
  const int64_t rowPanels = std::min(want, s.m / kMinPanelRows);
  const int64_t colPanels = std::min(want, s.n / kMinPanelCols);
  const bool byRows = rowPanels >= colPanels;
  const int64_t count = std::max<int64_t>(1, byRows ? rowPanels : colPanels);
  const int64_t length = byRows ? s.m : s.n;
  std::vector<Panel> panels;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t from = length * i / count, to = length * (i + 1) / count;
    std::optional<Panel> p = byRows ? makePanel(s, from, to - from, 0, s.n, anyLayout)
                                    : makePanel(s, 0, s.m, from, to - from, anyLayout);
    if (!p) return std::nullopt;
    panels.push_back(std::move(*p));
  }
  return panels;
}

// Packs b's slice for every panel made in a layout other than b's own (a panel reading the same
// slice alike as the one before shares its copy), taking the copies' bytes from `budget` into
// `bytes`. False, with nothing taken, when they do not fit or oneDNN cannot pack.
bool packPanels(const GemmShape &s, std::vector<Panel> &panels, const float *b, uint64_t &budget,
                uint64_t &bytes) {
  const auto sharesPrevious = [&](size_t i) {
    return i > 0 && panels[i - 1].weights == panels[i].weights && panels[i - 1].bOffset == panels[i].bOffset;
  };
  const auto needsCopy = [&](size_t i) {
    return !sharesPrevious(i) && panels[i].weights != plainWeights(s, panels[i].columns);
  };
  uint64_t need = 0;
  for (size_t i = 0; i < panels.size(); ++i)
    if (needsCopy(i)) need += panels[i].weights.get_size();
  if (need == 0 || need > budget) return false;
  for (size_t i = 0; i < panels.size(); ++i) {
    Panel &p = panels[i];
    if (sharesPrevious(i)) {
      p.packed = panels[i - 1].packed;
    } else if (needsCopy(i)) {
      p.packed = pack(plainWeights(s, p.columns), b + p.bOffset, p.weights);
      if (!p.packed) return false;
    }
  }
  budget -= need;
  bytes = need;
  return true;
}

}  // namespace

std::shared_ptr<const OnednnGemm> OnednnGemm::make(const GemmShape &s, const float *constantB,
                                                   uint64_t *packBudget) {
  if (!onednnEnabled()) return nullptr;
  if (s.m < 1 || s.n < 1 || s.k < 1) return nullptr;
  for (int64_t v : {s.m, s.n, s.k, s.lda, s.ldb, s.ldc})
    if (v > INT_MAX) return nullptr;
  const OneOmpThread one;  // kernels are chosen for the threads they will run on
  auto impl = std::make_unique<Impl>();
  impl->shape = s;
  // Packed weights first, where they pay (few rows) and fit the budget.
  if (constantB && packBudget && s.m <= kPackRows) {
    std::optional<std::vector<Panel>> panels = makePanels(s, /*anyLayout=*/true);
    if (panels && packPanels(s, *panels, constantB, *packBudget, impl->packedBytes)) {
      impl->packedFrom = constantB;
      impl->panels = std::move(*panels);
    }
  }
  if (impl->panels.empty()) {
    std::optional<std::vector<Panel>> panels = makePanels(s, /*anyLayout=*/false);
    if (!panels) return nullptr;
    impl->panels = std::move(*panels);
  }
  return std::make_shared<const OnednnGemm>(std::move(impl));
}

Status OnednnGemm::run(const float *a, const float *b, const float *bias, float *c) const {
  const Impl &g = *impl_;
  if (g.packedFrom && b != g.packedFrom) return movedWeight("GEMM");
  return forEachPanel(g.panels.size(), [&](size_t i) { g.runPanel(g.panels[i], a, b, bias, c); });
}

int OnednnGemm::panels() const { return static_cast<int>(impl_->panels.size()); }
const char *OnednnGemm::implementation() const { return impl_->panels[0].implementation.c_str(); }
uint64_t OnednnGemm::packedBytes() const { return impl_->packedBytes; }

OnednnGemm::OnednnGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnednnGemm::~OnednnGemm() = default;

const char *onednnVersion() {
  static const std::string version = [] {
    const dnnl_version_t *v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  }();
  return version.c_str();
}

}  // namespace ferry::cpu

#else  // no oneDNN in this build

namespace ferry::cpu {

struct OnednnGemm::Impl {};

std::shared_ptr<const OnednnGemm> OnednnGemm::make(const GemmShape &, const float *, uint64_t *) {
  return nullptr;
}
Status OnednnGemm::run(const float *, const float *, const float *, float *) const { return Status(); }
uint64_t OnednnGemm::packedBytes() const { return 0; }
int OnednnGemm::panels() const { return 0; }
const char *OnednnGemm::implementation() const { return ""; }
OnednnGemm::OnednnGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnednnGemm::~OnednnGemm() = default;
const char *onednnVersion() { return ""; }

}  // namespace ferry::cpu

#endif
