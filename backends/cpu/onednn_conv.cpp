// backends/cpu/onednn_conv.cpp — f32 conv2d through oneDNN's convolution (see the header). Built
// with FERRY_ONEDNN; without it, make() says null and linalg.cpp keeps its own paths.
#include "backends/cpu/onednn_conv.h"

#include <utility>

#ifdef FERRY_ONEDNN

#include <algorithm>
#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/onednn_gemm.h"
#include "backends/cpu/onednn_impl.h"
#include "backends/cpu/parallel.h"

namespace ferry::cpu {

using namespace onednn;

namespace {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
constexpr auto kF32 = dnnl::memory::data_type::f32;

uint64_t align64(uint64_t n) { return (n + 63) / 64 * 64; }

// A reorder from one layout to another, with a user-managed scratchpad; none when they are
// the same layout.
struct Reorder {
  std::optional<dnnl::reorder> primitive;
  dnnl::memory::desc scratchpad;

  static Reorder make(const dnnl::memory::desc &from, const dnnl::memory::desc &to) {
    Reorder r;
    if (from == to) return r;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::reorder::primitive_desc pd(cpuEngine(), from, cpuEngine(), to, attr);
    r.scratchpad = pd.scratchpad_desc();
    r.primitive.emplace(pd);
    return r;
  }

  void run(const dnnl::memory::desc &fromDesc, const void *from, const dnnl::memory::desc &toDesc,
           void *to, std::byte *scratch, dnnl::stream &stream) const {
    Handles handles;
    handles.add(DNNL_ARG_FROM, fromDesc, from);
    handles.add(DNNL_ARG_TO, toDesc, to);
    if (scratchpad.get_size() > 0) handles.add(DNNL_ARG_SCRATCHPAD, scratchpad, scratch);
    check(dnnl_primitive_execute(primitive->get(), stream.get(), handles.count(), handles.args()),
          "dnnl_primitive_execute (reorder)");
  }
};

dnnl::convolution_forward::primitive_desc convDesc(const ConvShape &s, const dnnl::memory::desc &src,
                                                   const dnnl::memory::desc &weights,
                                                   const dnnl::memory::desc &bias,
                                                   const dnnl::memory::desc &dst,
                                                   const dnnl::primitive_attr &attr) {
  const dims strides{s.sh, s.sw}, dilates{s.dh - 1, s.dw - 1}, left{s.pt, s.pl}, right{s.pb, s.pr};
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::convolution_forward::primitive_desc(
      cpuEngine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
      weights, bias, dst, strides, dilates, left, right, attr);
#else
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::convolution_direct, src, weights, bias,
                                             dst, strides, dilates, left, right);
  return dnnl::convolution_forward::primitive_desc(desc, attr, cpuEngine());
#endif
}

// The weight as the user stores it: [O, C/groups, kH, kW], with a groups dim first when grouped.
dnnl::memory::desc userWeights(const ConvShape &s) {
  if (s.groups == 1) return dnnl::memory::desc(dims{s.o, s.c, s.kh, s.kw}, kF32, tag::oihw);
  return dnnl::memory::desc(dims{s.groups, s.o / s.groups, s.c / s.groups, s.kh, s.kw}, kF32, tag::goihw);
}

}  // namespace

// One panel: images [n0, n0 + count) of the batch, its own primitive and reorders.
struct ConvPanel {
  dnnl::convolution_forward primitive;
  dnnl::memory::desc userSrc, userDst, src, weights, bias, dst, scratchpad;
  Reorder toSrc, toWeights, fromDst;
  std::shared_ptr<const dnnl::memory> packed;  // the weight in `weights`' layout, or null
  int64_t xOffset = 0, yOffset = 0;
  // Pieces of the thread's buffer: x and y in the primitive's layouts, the weight reordered at
  // launch (when not packed), then the largest scratchpad.
  uint64_t srcAt = 0, dstAt = 0, weightsAt = 0, scratchAt = 0, bufferBytes = 0;
  std::string implementation;
};

struct OnednnConv::Impl {
  ConvShape shape;
  std::vector<ConvPanel> panels;
  const float *packedFrom = nullptr;
  uint64_t packedBytes = 0;

  void runPanel(const ConvPanel &p, const float *x, const float *weight, const float *bias, float *y) const {
    const OneOmpThread one;
    ThreadState &state = threadState();
    std::byte *buffer = state.scratchOf(p.bufferBytes);
    std::byte *scratch = buffer + p.scratchAt;
    const void *src = x + p.xOffset;
    if (p.toSrc.primitive) {
      p.toSrc.run(p.userSrc, src, p.src, buffer + p.srcAt, scratch, state.stream);
      src = buffer + p.srcAt;
    }
    const void *w = weight;
    if (p.packed) {
      w = p.packed->get_data_handle();
    } else if (p.toWeights.primitive) {
      p.toWeights.run(userWeights(shape), weight, p.weights, buffer + p.weightsAt, scratch, state.stream);
      w = buffer + p.weightsAt;
    }
    void *dst = p.fromDst.primitive ? static_cast<void *>(buffer + p.dstAt) : static_cast<void *>(y + p.yOffset);
    {
      Handles handles;
      handles.add(DNNL_ARG_SRC, p.src, src);
      handles.add(DNNL_ARG_WEIGHTS, p.weights, w);
      if (shape.bias) handles.add(DNNL_ARG_BIAS, p.bias, bias);
      handles.add(DNNL_ARG_DST, p.dst, dst);
      if (p.scratchpad.get_size() > 0) handles.add(DNNL_ARG_SCRATCHPAD, p.scratchpad, scratch);
      check(dnnl_primitive_execute(p.primitive.get(), state.stream.get(), handles.count(), handles.args()),
            "dnnl_primitive_execute (convolution)");
    }
    if (p.fromDst.primitive) p.fromDst.run(p.dst, dst, p.userDst, y + p.yOffset, scratch, state.stream);
  }
};

namespace {

// The panel of images [n0, n0 + count), or nothing when oneDNN declines it.
std::optional<ConvPanel> makePanel(const ConvShape &s, int64_t n0, int64_t count) {
  ConvPanel p;
  p.userSrc = dnnl::memory::desc(dims{count, s.c, s.h, s.w}, kF32, tag::nchw);
  p.userDst = dnnl::memory::desc(dims{count, s.o, s.ho, s.wo}, kF32, tag::nchw);
  const dims weightDims = s.groups == 1 ? dims{s.o, s.c, s.kh, s.kw}
                                        : dims{s.groups, s.o / s.groups, s.c / s.groups, s.kh, s.kw};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  try {
    // Few input channels: x as the user holds it (NCHW). oneDNN's own choice, NHWC for its
    // brgconv kernels, ran LeNet's 6->16 5x5 conv at batch 32 in 110 us, its older kernels on
    // NCHW in 89 us; from 16 channels on, its own choice was the fastest or level (make() leaves
    // few channels in and out to linalg.cpp).
    const bool fewChannels = s.c / s.groups < 8;
    const auto pd = convDesc(s, fewChannels ? p.userSrc : dnnl::memory::desc(dims{count, s.c, s.h, s.w}, kF32, tag::any),
                             dnnl::memory::desc(weightDims, kF32, tag::any),
                             s.bias ? dnnl::memory::desc(dims{s.o}, kF32, tag::x) : dnnl::memory::desc(),
                             dnnl::memory::desc(dims{count, s.o, s.ho, s.wo}, kF32, tag::any), attr);
    p.src = pd.src_desc();
    p.weights = pd.weights_desc();
    p.bias = pd.bias_desc();
    p.dst = pd.dst_desc();
    p.scratchpad = pd.scratchpad_desc();
    p.implementation = pd.impl_info_str();
    p.primitive = dnnl::convolution_forward(pd);
    p.toSrc = Reorder::make(p.userSrc, p.src);
    p.toWeights = Reorder::make(userWeights(s), p.weights);
    p.fromDst = Reorder::make(p.dst, p.userDst);
  } catch (const dnnl::error &e) {
    if (e.status == dnnl_out_of_memory) throw std::bad_alloc();
    return std::nullopt;  // no implementation for this shape: linalg.cpp's paths take it
  }
  p.xOffset = n0 * s.c * s.h * s.w;
  p.yOffset = n0 * s.o * s.ho * s.wo;
  uint64_t at = 0;
  p.srcAt = at, at += p.toSrc.primitive ? align64(p.src.get_size()) : 0;
  p.dstAt = at, at += p.fromDst.primitive ? align64(p.dst.get_size()) : 0;
  p.weightsAt = at, at += p.toWeights.primitive ? align64(p.weights.get_size()) : 0;
  p.scratchAt = at;
  p.bufferBytes = at + std::max({p.scratchpad.get_size(), p.toSrc.scratchpad.get_size(),
                                 p.toWeights.scratchpad.get_size(), p.fromDst.scratchpad.get_size()});
  return p;
}

}  // namespace

std::shared_ptr<const OnednnConv> OnednnConv::make(const ConvShape &s, const float *constantWeight,
                                                   uint64_t *packBudget) {
  if (!onednnEnabled()) return nullptr;
  for (int64_t v : {s.n, s.c, s.h, s.w, s.o, s.kh, s.kw, s.ho, s.wo, s.groups})
    if (v < 1 || v > INT_MAX) return nullptr;
  if (s.c % s.groups != 0 || s.o % s.groups != 0) return nullptr;
  // Few channels in and out (LeNet's 1->6 5x5): every layout oneDNN has pads 6 channels to 8 or
  // 16 or runs its slower kernels; with the result's reorder it took 0.27 ms at batch 32 where
  // linalg.cpp's im2col and sgemm take 0.21.
  if (s.c / s.groups < 8 && s.o < 16) return nullptr;
  // Panels over the batch, one per pool thread; a batch smaller than the pool would leave
  // threads idle that linalg.cpp's own paths use.
  const int64_t threads = poolThreads();
  if (s.n < threads) return nullptr;
  const OneOmpThread one;  // kernels are chosen for the threads they will run on
  auto impl = std::make_unique<Impl>();
  impl->shape = s;
  for (int64_t i = 0; i < threads; ++i) {
    const int64_t from = s.n * i / threads, to = s.n * (i + 1) / threads;
    std::optional<ConvPanel> p = makePanel(s, from, to - from);
    if (!p) return nullptr;
    impl->panels.push_back(std::move(*p));
  }
  // The weight packed once, shared by the panels whose layout is the first's, when it fits.
  if (constantWeight && packBudget) {
    uint64_t bytes = 0;
    for (size_t i = 0; i < impl->panels.size(); ++i) {
      const ConvPanel &p = impl->panels[i];
      if (p.toWeights.primitive && (i == 0 || p.weights != impl->panels[0].weights)) bytes += p.weights.get_size();
    }
    if (bytes > 0 && bytes <= *packBudget) {
      bool packed = true;
      for (ConvPanel &p : impl->panels) {
        if (!p.toWeights.primitive) continue;
        const ConvPanel &first = impl->panels[0];
        p.packed = &p != &first && first.packed && first.weights == p.weights
                       ? first.packed
                       : pack(userWeights(s), constantWeight, p.weights);
        packed = packed && p.packed != nullptr;
      }
      if (packed) {
        *packBudget -= bytes;
        impl->packedBytes = bytes;
        impl->packedFrom = constantWeight;
      } else {
        for (ConvPanel &p : impl->panels) p.packed = nullptr;  // reordered at each launch instead
      }
    }
  }
  return std::make_shared<const OnednnConv>(std::move(impl));
}

Status OnednnConv::run(const float *x, const float *weight, const float *bias, float *y) const {
  const Impl &g = *impl_;
  if (g.packedFrom && weight != g.packedFrom) return movedWeight("convolution");
  return forEachPanel(g.panels.size(), [&](size_t i) { g.runPanel(g.panels[i], x, weight, bias, y); });
}

int OnednnConv::panels() const { return static_cast<int>(impl_->panels.size()); }
const char *OnednnConv::implementation() const { return impl_->panels[0].implementation.c_str(); }
uint64_t OnednnConv::packedBytes() const { return impl_->packedBytes; }

OnednnConv::OnednnConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnednnConv::~OnednnConv() = default;

}  // namespace ferry::cpu

#else  // no oneDNN in this build

namespace ferry::cpu {

struct OnednnConv::Impl {};

std::shared_ptr<const OnednnConv> OnednnConv::make(const ConvShape &, const float *, uint64_t *) {
  return nullptr;
}
Status OnednnConv::run(const float *, const float *, const float *, float *) const { return Status(); }
int OnednnConv::panels() const { return 0; }
const char *OnednnConv::implementation() const { return ""; }
uint64_t OnednnConv::packedBytes() const { return 0; }
OnednnConv::OnednnConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnednnConv::~OnednnConv() = default;

}  // namespace ferry::cpu

#endif
