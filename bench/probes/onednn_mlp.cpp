// bench/probes/onednn_mlp.cpp — a probe, not built by CMake: the MLP 784-1024-1024-10 (bias, relu)
// at batch M, once with oneDNN's matmul (weights reordered once into its own layout, bias and relu
// as post-ops) and once as ferry's CPU backend runs it today (cblas_sgemm per layer, bias and relu
// after), side by side in one process; medians of 300 runs. It is the evidence for adopting
// oneDNN (Debian's libdnnl-dev) for f32 linear and matmul (issue [fusion], MLP targets).
//
//   apt-get install libdnnl-dev
//   g++ -O2 -std=c++17 bench/probes/onednn_mlp.cpp -I/usr/include/x86_64-linux-gnu/openblas-pthread
//   \
//       -ldnnl -lopenblas -o /tmp/onednn_mlp
//   for t in 1 2; do OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t /tmp/onednn_mlp 32; done
//
// Measured 2026-11-26 on the 2-vCPU AMD EPYC (Zen 4) box, oneDNN 2.6.3 and OpenBLAS 0.3.21 from
// Debian 12 (bench/README.md, "oneDNN for the MLP's GEMMs"):
//   M = 32:  1 thread 1.220 vs 2.520 ms (2.07x), 2 threads 0.612 vs 1.396 ms (2.28x)
//   M = 256: 1 thread 10.34 vs 14.61 ms (1.41x), 2 threads 5.24 vs 9.36 ms (1.79x)
//   M = 32 with the weights in their given layout (no reorder): 2 threads 0.809 vs 1.580 ms
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
int main(int argc, char **argv) {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const int M = argc > 1 ? std::atoi(argv[1]) : 32;
  const int dims[][2] = {{784, 1024}, {1024, 1024}, {1024, 10}};
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<std::vector<float>> W(3), B(3);
  for (int l = 0; l < 3; ++l) {
    W[l].resize(dims[l][0] * dims[l][1]);
    for (auto &v : W[l]) v = nd(rng) * 0.05f;
    B[l].assign(dims[l][1], 0.01f);
  }
  std::vector<float> x(M * 784);
  for (auto &v : x) v = nd(rng);
  // oneDNN: src [M,K] ab, weights [K,N] any (reordered once), bias [1,N], relu post-op on first two
  std::vector<matmul> prims;
  std::vector<memory> wmem, bmem, dmem;
  std::vector<memory> srcs;
  memory src0({{M, 784}, dt::f32, tag::ab}, eng, x.data());
  srcs.push_back(src0);
  for (int l = 0; l < 3; ++l) {
    int K = dims[l][0], N = dims[l][1];
    memory::desc sd({M, K}, dt::f32, tag::ab), wd({K, N}, dt::f32, tag::any),
        bd({1, N}, dt::f32, tag::ab), dd({M, N}, dt::f32, tag::ab);
    primitive_attr attr;
    post_ops po;
    if (l < 2) po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(po);
    auto pd = matmul::primitive_desc(matmul::desc(sd, wd, bd, dd), attr, eng);
    // weights given as [N,K] row-major = [K,N] "ba"
    memory wplain({{K, N}, dt::f32, tag::ba}, eng, W[l].data());
    memory wpacked(pd.weights_desc(), eng);
    reorder(wplain, wpacked).execute(s, wplain, wpacked);
    s.wait();
    wmem.push_back(wpacked);
    bmem.push_back(memory(bd, eng, B[l].data()));
    dmem.push_back(memory(dd, eng));
    prims.push_back(matmul(pd));
    srcs.push_back(dmem.back());
  }
  auto runDnnl = [&] {
    for (int l = 0; l < 3; ++l)
      prims[l].execute(s, {{DNNL_ARG_SRC, srcs[l]},
                           {DNNL_ARG_WEIGHTS, wmem[l]},
                           {DNNL_ARG_BIAS, bmem[l]},
                           {DNNL_ARG_DST, dmem[l]}});
    s.wait();
  };
  std::vector<float> h1(M * 1024), h2(M * 1024), y(M * 10);
  auto runBlas = [&] {
    float *outs[3] = {h1.data(), h2.data(), y.data()};
    const float *in = x.data();
    for (int l = 0; l < 3; ++l) {
      int K = dims[l][0], N = dims[l][1];
      for (int i = 0; i < M; ++i) std::copy(B[l].begin(), B[l].end(), outs[l] + i * N);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.f, in, K, W[l].data(), K, 1.f,
                  outs[l], N);
      if (l < 2)
        for (int i = 0; i < M * N; ++i) outs[l][i] = std::max(outs[l][i], 0.f);
      in = outs[l];
    }
  };
  auto time = [&](auto f) {
    for (int i = 0; i < 20; ++i) f();
    std::vector<double> t;
    for (int i = 0; i < 300; ++i) {
      auto a = std::chrono::steady_clock::now();
      f();
      t.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  double d = time(runDnnl), b = time(runBlas);
  runDnnl();
  runBlas();
  double maxdiff = 0;
  const float *yd = (const float *)dmem[2].get_data_handle();
  for (int i = 0; i < M * 10; ++i) maxdiff = std::max(maxdiff, (double)std::abs(yd[i] - y[i]));
  std::printf("oneDNN %.3f ms  OpenBLAS %.3f ms  ratio %.2f  maxdiff %.2e\n", d, b, b / d, maxdiff);
}
