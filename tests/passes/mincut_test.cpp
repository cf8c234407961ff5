// tests/passes/mincut_test.cpp — the maximum flow / minimum s-t cut against known answers and a
// brute-force enumeration of every cut on small random networks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "passes/mincut.h"

namespace ferry {
namespace {

struct Edge {
  int from, to;
  double capacity;
};

// The capacity of the cut whose source side is `inSource`.
double cutCapacity(const std::vector<Edge> &edges, const std::vector<bool> &inSource) {
  double c = 0;
  for (const Edge &e : edges)
    if (inSource[e.from] && !inSource[e.to]) c += e.capacity;
  return c;
}

std::vector<bool> sides(const MinCut &cut, int n) {
  std::vector<bool> s(n);
  for (int v = 0; v < n; ++v) s[v] = cut.onSourceSide(v);
  return s;
}

uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

TEST(MinCut, TextbookNetwork) {
  // CLRS figure 26.6: maximum flow 23; the minimum cut is {s, v1, v2, v4}.
  std::vector<Edge> edges = {{0, 1, 16}, {0, 2, 13}, {2, 1, 4},  {1, 3, 12}, {3, 2, 9},
                             {2, 4, 14}, {4, 3, 7},  {3, 5, 20}, {4, 5, 4}};
  MinCut cut(6);
  for (const Edge &e : edges) cut.addEdge(e.from, e.to, e.capacity);
  EXPECT_DOUBLE_EQ(cut.solve(0, 5), 23);
  EXPECT_EQ(sides(cut, 6), (std::vector<bool>{true, true, true, false, true, false}));
  EXPECT_DOUBLE_EQ(cutCapacity(edges, sides(cut, 6)), 23);
}

TEST(MinCut, TiesGiveTheSmallestOrTheLargestSourceSide) {
  // s -> a -> t with equal capacities: both {s} and {s, a} are minimum cuts.
  for (auto ties : {MinCut::Ties::SmallSource, MinCut::Ties::LargeSource}) {
    MinCut cut(3);
    cut.addEdge(0, 1, 2.5);
    cut.addEdge(1, 2, 2.5);
    EXPECT_DOUBLE_EQ(cut.solve(0, 2, ties), 2.5);
    EXPECT_EQ(cut.onSourceSide(1), ties == MinCut::Ties::LargeSource);
  }
}

TEST(MinCut, InfiniteEdgesAreNeverCut) {
  MinCut cut(4);
  cut.addEdge(0, 1, MinCut::kInfinity);
  cut.addEdge(1, 2, 3);
  cut.addEdge(2, 3, MinCut::kInfinity);
  cut.addEdge(0, 3, 1);
  EXPECT_DOUBLE_EQ(cut.solve(0, 3), 4);
  EXPECT_TRUE(cut.onSourceSide(1));
  EXPECT_FALSE(cut.onSourceSide(2));

  MinCut all(3);
  all.addEdge(0, 1, MinCut::kInfinity);
  all.addEdge(1, 2, MinCut::kInfinity);
  EXPECT_TRUE(std::isinf(all.solve(0, 2)));
}

TEST(MinCut, DisconnectedSinkAndZeroEdges) {
  MinCut cut(4);
  cut.addEdge(0, 1, 5);
  cut.addEdge(1, 2, 0);
  cut.addEdge(3, 2, 7);
  EXPECT_EQ(cut.solve(0, 2), 0);
  EXPECT_TRUE(cut.onSourceSide(1));
  EXPECT_FALSE(cut.onSourceSide(3));  // cannot be reached from the source
}

TEST(MinCut, ClearReusesTheNetwork) {
  MinCut cut(2);
  cut.addEdge(0, 1, 1);
  EXPECT_DOUBLE_EQ(cut.solve(0, 1), 1);
  cut.clear(3);
  int32_t v = cut.addVertex();
  EXPECT_EQ(v, 3);
  cut.addEdge(0, v, 2);
  cut.addEdge(v, 2, 0.5);
  EXPECT_DOUBLE_EQ(cut.solve(0, 2), 0.5);
}

TEST(MinCut, LongPathsDoNotRecurse) {
  // A path far deeper than a recursive search's stack would allow, capacities falling towards
  // the sink, plus shortcuts.
  const int n = 300'000;
  MinCut cut(n);
  for (int v = 0; v + 1 < n; ++v) cut.addEdge(v, v + 1, 1.0 + (n - v) * 1e-6);
  for (int v = 0; v + 1000 < n; v += 1000) cut.addEdge(v, v + 1000, 1e-3);
  double flow = cut.solve(0, n - 1);
  EXPECT_NEAR(flow, 1.0 + 2e-6, 1e-9);  // the last edge; no shortcut passes it
  EXPECT_TRUE(cut.onSourceSide(n - 2));
}

TEST(MinCut, EqualsTheBestOfAllCutsOnRandomNetworks) {
  uint64_t state = 7;
  for (int round = 0; round < 500; ++round) {
    const int n = 2 + static_cast<int>(splitmix(state) % 9);  // up to 10 vertices
    std::vector<Edge> edges;
    const int m = static_cast<int>(splitmix(state) % (3 * n + 1));
    for (int i = 0; i < m; ++i) {
      int a = static_cast<int>(splitmix(state) % n), b = static_cast<int>(splitmix(state) % n);
      double c = static_cast<double>(splitmix(state) % 1000) / 37.0;
      if (splitmix(state) % 10 == 0) c = MinCut::kInfinity;
      edges.push_back({a, b, c});
    }
    const int s = 0, t = n - 1;
    double best = MinCut::kInfinity;
    for (uint32_t mask = 0; mask < (1u << n); ++mask) {
      if (!(mask & (1u << s)) || (mask & (1u << t))) continue;
      std::vector<bool> in(n);
      for (int v = 0; v < n; ++v) in[v] = mask & (1u << v);
      best = std::min(best, cutCapacity(edges, in));
    }
    std::vector<bool> small, large;
    for (auto ties : {MinCut::Ties::SmallSource, MinCut::Ties::LargeSource}) {
      MinCut cut(n);
      for (const Edge &e : edges) cut.addEdge(e.from, e.to, e.capacity);
      double flow = cut.solve(s, t, ties);
      std::vector<bool> side = sides(cut, n);
      (ties == MinCut::Ties::SmallSource ? small : large) = side;
      if (std::isinf(best)) {
        EXPECT_TRUE(std::isinf(flow)) << "round " << round;
        continue;
      }
      EXPECT_NEAR(flow, best, 1e-9 * (1 + best)) << "round " << round;
      EXPECT_TRUE(side[s] && !side[t]) << "round " << round;
      EXPECT_NEAR(cutCapacity(edges, side), best, 1e-9 * (1 + best)) << "round " << round;
    }
    if (std::isinf(best)) continue;
    for (int v = 0; v < n; ++v) EXPECT_LE(small[v], large[v]) << "round " << round;
  }
}

TEST(MinCut, TerminalCapacitiesEqualTheBestOfAllCutsOnRandomNetworks) {
  // Terminal capacities, negative ones (an offset: only the difference decides), infinite ones,
  // mixed with edges at the source and sink, against every cut.
  uint64_t state = 11;
  int infinite = 0, negative = 0;
  for (int round = 0; round < 500; ++round) {
    const int n = 2 + static_cast<int>(splitmix(state) % 9);
    const int s = static_cast<int>(splitmix(state) % n);
    const int t = (s + 1 + static_cast<int>(splitmix(state) % (n - 1))) % n;
    std::vector<Edge> edges;
    const int m = static_cast<int>(splitmix(state) % (2 * n + 1));
    for (int i = 0; i < m; ++i) {
      int a = static_cast<int>(splitmix(state) % n), b = static_cast<int>(splitmix(state) % n);
      double c = static_cast<double>(splitmix(state) % 1000) / 37.0;
      if (splitmix(state) % 12 == 0) c = MinCut::kInfinity;
      edges.push_back({a, b, c});
    }
    std::vector<double> fromSource(n, 0), toSink(n, 0);
    for (int v = 0; v < n; ++v) {
      if (v == s || v == t || splitmix(state) % 3 == 0) continue;
      auto value = [&] {
        double c = (static_cast<double>(splitmix(state) % 2000) - 600) / 29.0;
        if (splitmix(state) % 15 == 0) c = MinCut::kInfinity;
        return c;
      };
      fromSource[v] = value(), toSink[v] = value();
      negative += fromSource[v] < 0 || toSink[v] < 0;
    }
    // The cut's cost: edges leaving the source side, a vertex's toSink on the source side and
    // its fromSource on the sink side.
    auto cost = [&](const std::vector<bool> &in) {
      double c = cutCapacity(edges, in);
      for (int v = 0; v < n; ++v)
        if (v != s && v != t) c += in[v] ? toSink[v] : fromSource[v];
      return c;
    };
    double best = MinCut::kInfinity;
    for (uint32_t mask = 0; mask < (1u << n); ++mask) {
      if (!(mask & (1u << s)) || (mask & (1u << t))) continue;
      std::vector<bool> in(n);
      for (int v = 0; v < n; ++v) in[v] = mask & (1u << v);
      best = std::min(best, cost(in));
    }
    for (auto ties : {MinCut::Ties::SmallSource, MinCut::Ties::LargeSource}) {
      MinCut cut(n);
      for (const Edge &e : edges) cut.addEdge(e.from, e.to, e.capacity);
      for (int v = 0; v < n; ++v)
        if (v != s && v != t) cut.addTerminal(v, fromSource[v], toSink[v]);
      double value = cut.solve(s, t, ties);
      if (std::isinf(best)) {
        ++infinite;
        EXPECT_TRUE(std::isinf(value)) << "round " << round;
        continue;
      }
      std::vector<bool> side = sides(cut, n);
      EXPECT_NEAR(value, best, 1e-9 * (1 + std::abs(best))) << "round " << round;
      EXPECT_TRUE(side[s] && !side[t]) << "round " << round;
      EXPECT_NEAR(cost(side), best, 1e-9 * (1 + std::abs(best))) << "round " << round;
    }
  }
  EXPECT_GT(infinite, 10) << "the rounds include infinite minimum cuts";
  EXPECT_GT(negative, 200) << "the rounds include negative terminal capacities";
}

// One large source capacity at the head of a long chain whose every vertex has a little sink
// capacity: what auto placement builds under a byte cap (a copy priced high ahead of many ops that
// would each run faster elsewhere). Dinic's phases reach one vertex further each, so this took a
// time quadratic in the chain (minutes at this length) before the greedy first pass; now it is
// a moment. Checked for its answer, not timed: a quadratic solve runs into the test's timeout.
TEST(MinCut, ALongChainOfSinkCapacitiesIsFilledInOnePass) {
  constexpr int kChain = 200000;
  MinCut cut(kChain + 2);
  const int s = kChain, t = kChain + 1;
  cut.addTerminal(0, 1e6, 0);
  for (int v = 0; v < kChain; ++v) {
    if (v + 1 < kChain) cut.addEdge(v, v + 1, 1e6);
    cut.addTerminal(v, 0, 1e-5);
  }
  EXPECT_NEAR(cut.solve(s, t, MinCut::Ties::LargeSource), kChain * 1e-5, 1e-9);
  for (int v = 0; v < kChain; v += kChain / 8) EXPECT_TRUE(cut.onSourceSide(v)) << v;
  // The same with the chain reached in reverse order of the arcs' insertion.
  MinCut back(kChain + 2);
  back.addTerminal(kChain - 1, 1e6, 0);
  for (int v = kChain - 1; v >= 0; --v) {
    if (v > 0) back.addEdge(v, v - 1, 1e6);
    back.addTerminal(v, 0, 1e-5);
  }
  EXPECT_NEAR(back.solve(s, t), kChain * 1e-5, 1e-9);
}

TEST(MinCutDeathTest, BadTerminalCapacitiesAbort) {
  MinCut cut(3);
  EXPECT_DEATH(cut.addTerminal(3, 1, 1), "vertex 3 of 3");
  EXPECT_DEATH(cut.addTerminal(1, -MinCut::kInfinity, 0), "terminal capacities");
  EXPECT_DEATH(cut.addTerminal(1, std::nan(""), 0), "terminal capacities");
}

}  // namespace
}  // namespace ferry
