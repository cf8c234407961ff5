// bench/probes/onednn_panels.cpp — a probe, not built by CMake: the MLP 784-1024-1024-10 at batch
// M on T threads, each layer split into T panels (rows, with SPLITM=1, else columns), one oneDNN
// matmul per panel run with one OpenMP thread, as backends/cpu/onednn_gemm.cpp does; weights as
// stored ([out, in], read transposed) or packed once into oneDNN's layout (third argument 1);
// against cblas_sgemm panels. Prints the median of 300 runs (std::thread started per run for
// both) and the heap allocations per run. The evidence for row panels and for packing only up
// to 32 rows (bench/README.md, "oneDNN GEMMs and convolutions").
//
//   g++ -O2 -std=c++20 bench/probes/onednn_panels.cpp \
//       -I/usr/include/x86_64-linux-gnu/openblas-pthread -ldnnl -lopenblas -fopenmp -o /tmp/panels
//   for m in 16 32 64 128; do SPLITM=1 /tmp/panels $m 2 0; SPLITM=1 /tmp/panels $m 2 1; done
//
// Measured 2026-11-26, the 2-vCPU AMD EPYC (Zen 4) box, oneDNN 2.6.3: see bench/README.md.
#include <cblas.h>
#include <omp.h>
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <thread>
#include <functional>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
static std::atomic<long> news{0};
void *operator new(size_t n) { news++; void *p = malloc(n); if (!p) throw std::bad_alloc(); return p; }
void operator delete(void *p) noexcept { free(p); }
void operator delete(void *p, size_t) noexcept { free(p); }
int main(int argc, char **argv) {
  const int M = argc > 1 ? atoi(argv[1]) : 32, T = argc > 2 ? atoi(argv[2]) : 2;
  const bool reorder = argc > 3 && atoi(argv[3]);
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  engine eng(engine::kind::cpu, 0);
  const int dims[][2] = {{784, 1024}, {1024, 1024}, {1024, 10}};
  std::mt19937 rng(1); std::normal_distribution<float> nd;
  std::vector<std::vector<float>> W(3), B(3), Y(3), Yb(3);
  for (int l = 0; l < 3; ++l) { W[l].resize(dims[l][0] * dims[l][1]); for (auto &v : W[l]) v = nd(rng) * 0.05f;
    B[l].assign(dims[l][1], 0.01f); Y[l].resize(M * dims[l][1]); Yb[l].resize(M*dims[l][1]); }
  std::vector<float> x(M * 784); for (auto &v : x) v = nd(rng);
  // per layer, per panel: a primitive for N/T columns
  struct Panel { matmul prim; memory::desc sd, wd, bd, dd; memory w; int n0, n; size_t scratch; int m0; };
  std::vector<std::vector<Panel>> panels(3);
  for (int l = 0; l < 3; ++l) {
    int K = dims[l][0], N = dims[l][1];
    int P = getenv("SPLITM") ? T : (N >= 64 * T ? T : 1);
    for (int p = 0; p < P; ++p) {
      bool sm = getenv("SPLITM"); int m0 = sm ? M*p/P : 0, m = sm ? M*(p+1)/P - m0 : M;
      int n0 = sm ? 0 : N * p / P, n = sm ? N : N * (p + 1) / P - n0;
      memory::desc sd({m, K}, dt::f32, {K, 1}), wplain({K, n}, dt::f32, memory::dims{1, K}), bd({1, n}, dt::f32, {N, 1}), dd({m, n}, dt::f32, {N, 1});
      memory::desc wd = reorder ? memory::desc({K, n}, dt::f32, tag::any) : wplain;
      primitive_attr attr; post_ops po;
      if (l < 2) po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(po); attr.set_scratchpad_mode(scratchpad_mode::user);
      auto pd = matmul::primitive_desc(matmul::desc(sd, wd, bd, dd), attr, eng);
      Panel pn{matmul(pd), sd, pd.weights_desc(), bd, dd, {}, n0, n, pd.scratchpad_desc().get_size(), m0};
      if (reorder) {
        stream s(eng);
        memory src(wplain, eng, W[l].data() + (size_t)n0 * K); pn.w = memory(pd.weights_desc(), eng);
        dnnl::reorder(src, pn.w).execute(s, src, pn.w); s.wait();
      }
      if (l == 0 && p == 0) printf("impl %s scratch %zu\n", pd.impl_info_str(), pn.scratch);
      panels[l].push_back(std::move(pn));
    }
  }
  std::vector<std::vector<char>> scratch(T, std::vector<char>(1 << 22));
  auto runPanel = [&](int l, int p, int t) {
    Panel &pn = panels[l][p];
    const float *in = l == 0 ? x.data() : Y[l - 1].data();
    int K = dims[l][0], N = dims[l][1];
    dnnl_memory_t ms, mw, mb, md, mscr;
    dnnl_memory_create(&ms, &pn.sd.data, eng.get(), (void *)(in + (size_t)pn.m0 * K));
    dnnl_memory_create(&mw, &pn.wd.data, eng.get(), reorder ? pn.w.get_data_handle() : (void *)(W[l].data() + (size_t)pn.n0 * K));
    dnnl_memory_create(&mb, &pn.bd.data, eng.get(), B[l].data() + pn.n0);
    dnnl_memory_create(&md, &pn.dd.data, eng.get(), Y[l].data() + (size_t)pn.m0 * N + pn.n0);
    memory::desc scd({(long)pn.scratch}, dt::u8, tag::a);
    dnnl_memory_create(&mscr, &scd.data, eng.get(), scratch[t].data());
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}, {DNNL_ARG_SCRATCHPAD, mscr}};
    thread_local stream *s = new stream(eng);
    dnnl_primitive_execute(pn.prim.get(), s->get(), 5, args);
    for (auto m : {ms, mw, mb, md, mscr}) dnnl_memory_destroy(m);
  };
  // two threads with a barrier per layer
  std::barrier bar(T);
  std::function<void(int)> runAll = [&](int t) { omp_set_num_threads(1); for (int l = 0; l < 3; ++l) { if (t < (int)panels[l].size()) runPanel(l, t, t); bar.arrive_and_wait(); } };
  std::function<void(int)> blas = [&](int t) { for (int l = 0; l < 3; ++l) { int K = dims[l][0], N = dims[l][1]; int P = N >= 64*T ? T : 1;
      if (t < P) { int n0 = N*t/P, n = N*(t+1)/P-n0; const float *in = l==0? x.data(): Yb[l-1].data();
        for (int i = 0; i < M; ++i) std::copy_n(B[l].data()+n0, n, Yb[l].data()+i*N+n0);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, n, K, 1, in, K, W[l].data()+(size_t)n0*K, K, 1, Yb[l].data()+n0, N);
        if (l<2) for (int i=0;i<M;++i) for(int j=n0;j<n0+n;++j) Yb[l][i*N+j]=std::max(0.f,Yb[l][i*N+j]); }
      bar.arrive_and_wait(); } };
  for (int variant = 0; variant < 2; ++variant) {
    std::vector<double> times;
    long n0 = 0;
    for (int it = 0; it < 300; ++it) {
      if (it == 10) n0 = news.load();
      auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> th;
      for (int t = 1; t < T; ++t) th.emplace_back(variant ? blas : runAll, t);
      (variant ? blas : runAll)(0);
      for (auto &x : th) x.join();
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    printf("%s M=%d T=%d reorder=%d: %.3f ms, news/run %.1f\n", variant ? "openblas" : "onednn", M, T, reorder, times[150], (news.load() - n0) / 290.0);
  }
  float md = 0; for (size_t i = 0; i < Y[2].size(); ++i) md = std::max(md, std::abs(Y[2][i] - Yb[2][i]));
  printf("max diff %g\n", md);
}
