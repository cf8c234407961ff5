// bench/probes/onednn_conv_layouts.cpp — a probe, not built by CMake: one f32 convolution
// (batch N, C -> O channels, HxH image, KxK kernel, padding P, stride 1) through oneDNN with
// every pair of source and result layouts (any, nchw, nhwc, nChw16c, nChw8c), one OpenMP thread,
// printing the implementation oneDNN picks and the median of 30 runs (reference
// implementations skipped). The evidence for keeping x NCHW for few input channels and for
// leaving few channels in and out to im2col (backends/cpu/onednn_conv.cpp).
//
//   g++ -O2 -std=c++17 bench/probes/onednn_conv_layouts.cpp -ldnnl -o /tmp/conv_layouts
//   OMP_NUM_THREADS=1 /tmp/conv_layouts 1 6 28 5        # LeNet's first conv, batch 32
//   OMP_NUM_THREADS=1 /tmp/conv_layouts 64 64 56 3 1 1  # a residual block's 3x3 conv
#include <oneapi/dnnl/dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstring>
using namespace dnnl; using tag = memory::format_tag; using dt = memory::data_type;
int main(int argc, char **argv) {
  int N = argc > 5 ? atoi(argv[5]) : 32, C = atoi(argv[1]), O = atoi(argv[2]), H = atoi(argv[3]), K = atoi(argv[4]);
  int P = argc > 6 ? atoi(argv[6]) : 0; int Ho = H - K + 1 + 2 * P;
  engine eng(engine::kind::cpu, 0); stream s(eng);
  const char *names[] = {"any", "nchw", "nhwc", "nChw16c", "nChw8c"};
  tag tags[] = {tag::any, tag::nchw, tag::nhwc, tag::nChw16c, tag::nChw8c};
  for (int si = 0; si < 5; ++si) for (int di = 0; di < 5; ++di) {
    memory::desc src({N, C, H, H}, dt::f32, tags[si]), dst({N, O, Ho, Ho}, dt::f32, tags[di]),
        wei({O, C, K, K}, dt::f32, tag::any), bias({O}, dt::f32, tag::x);
    try {
      for (auto alg : {algorithm::convolution_direct}) {
      convolution_forward::desc d(prop_kind::forward_inference, alg, src, wei, bias, dst, {1, 1}, {0, 0}, {P, P}, {P, P});
      convolution_forward::primitive_desc pd(d, eng);
      memory ms(pd.src_desc(), eng), mw(pd.weights_desc(), eng), mb(pd.bias_desc(), eng), md(pd.dst_desc(), eng);
      if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) continue;
      convolution_forward c(pd);
      std::vector<double> t;
      for (int i = 0; i < 30; ++i) { auto t0 = std::chrono::steady_clock::now();
        c.execute(s, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}}); s.wait();
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count()); }
      std::sort(t.begin(), t.end());
      printf("src %-8s dst %-8s %-24s %8.1f us\n", names[si], names[di], pd.impl_info_str(), t[15]);
      }
    } catch (dnnl::error &e) { }
  }
}
