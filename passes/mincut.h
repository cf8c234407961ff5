// passes/mincut.h — maximum flow and a minimum s-t cut on a directed graph (Dinic's algorithm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace ferry {

/// A flow network with double capacities. Vertices are 0..vertexCount()-1; add edges, call
/// solve(s, t), then ask which side of the minimum cut each vertex is on. Among several minimum
/// cuts it returns the one with the smallest source side (the vertices still reachable from `s`
/// in the residual network) or, when asked, the largest (all vertices that cannot reach `t`), so
/// equal inputs always give the same cut.
///
/// Storage is reused across clear() calls, so a caller solving many problems allocates once.
/// Search and augmentation are iterative: paths of millions of vertices do not recurse.
class MinCut {
 public:
  /// A capacity no cut may cross. A network whose minimum cut is infinite has no finite answer:
  /// solve() returns kInfinity then.
  static constexpr double kInfinity = std::numeric_limits<double>::infinity();

  explicit MinCut(int32_t vertices = 0) { clear(vertices); }

  /// Forgets all edges and sets the number of vertices, keeping the storage.
  void clear(int32_t vertices);
  /// Room for this many addEdge() calls without reallocating.
  void reserve(size_t edges) { edge_.reserve(2 * edges); }
  int32_t addVertex() { return vertices_++; }
  int32_t vertexCount() const { return vertices_; }
  /// A directed edge `from` -> `to`; capacity >= 0 (kInfinity allowed). Parallel edges add up.
  void addEdge(int32_t from, int32_t to, double capacity);

  enum class Ties : uint8_t { SmallSource, LargeSource };

  /// The maximum flow from `source` to `sink` (= the capacity of the minimum cut).
  /// Pre: source != sink, both in range. May be called once per clear().
  double solve(int32_t source, int32_t sink, Ties ties = Ties::SmallSource);
  /// After solve(): whether `v` is on the source side of the minimum cut.
  bool onSourceSide(int32_t v) const { return sourceSide_[v] != 0; }

 private:
  bool buildLevels(int32_t source, int32_t sink);
  double blockingFlow(int32_t source, int32_t sink);
  void markSides(int32_t source, int32_t sink, Ties ties);

  int32_t vertices_ = 0;
  struct Edge {
    int32_t from, to;
    double residual;
  };
  // Edge 2k is an added edge, 2k+1 its reverse (capacity 0).
  std::vector<Edge> edge_;
  // Outgoing edges of each vertex in compressed form: edges_[start_[v] .. start_[v+1]).
  std::vector<int32_t> start_, edges_;
  std::vector<int32_t> level_, next_, queue_, path_;
  std::vector<uint8_t> sourceSide_;
};

}  // namespace ferry
