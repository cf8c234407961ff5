// passes/mincut.h — maximum flow and a minimum s-t cut on a directed graph (Dinic's algorithm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace ferry {

/// A flow network with double capacities. Vertices are 0..vertexCount()-1; add edges and
/// terminal capacities, call solve(s, t), then ask which side of the minimum cut each vertex is
/// on. Among several minimum cuts it returns the one with the smallest source side (the
/// vertices still reachable from `s` in the residual network) or, when asked, the largest (all
/// vertices that cannot reach `t`), so equal inputs always give the same cut.
///
/// Links to the terminals are capacities of the vertex, not arcs: in the placement networks
/// every vertex has one, and as arcs they made up a third of the network and gave the source
/// and sink a million arcs each. Arcs are kept per vertex, contiguously, so a search reads a
/// vertex's arcs in one sweep. Storage is reused across clear() calls. Search and augmentation
/// are iterative: paths of millions of vertices do not recurse.
class MinCut {
 public:
  /// A capacity no cut may cross. A network whose minimum cut is infinite has no finite answer:
  /// solve() returns kInfinity then.
  static constexpr double kInfinity = std::numeric_limits<double>::infinity();

  explicit MinCut(int32_t vertices = 0) { clear(vertices); }

  /// Forgets all edges and sets the number of vertices, keeping the storage.
  void clear(int32_t vertices);
  /// Room for this many addEdge() calls without reallocating.
  void reserve(size_t edges) { edges_.reserve(edges); }
  int32_t addVertex();
  int32_t vertexCount() const { return vertices_; }
  /// A directed edge `from` -> `to`; capacity >= 0 (kInfinity allowed). Parallel edges add up.
  void addEdge(int32_t from, int32_t to, double capacity);
  /// Adds `fromSource` to the capacity of source -> v and `toSink` to that of v -> sink, for the
  /// source and sink solve() is given (v is neither). Either may be negative as long as their
  /// sums are finite or +kInfinity: a vertex pays the smaller of the two whichever side it is
  /// on, so only their difference decides (an energy term "a if v is on the sink side, b if on
  /// the source side" is addTerminal(v, a, b)).
  void addTerminal(int32_t v, double fromSource, double toSink);

  enum class Ties : uint8_t { SmallSource, LargeSource };

  /// The capacity of the minimum cut (the maximum flow, plus what terminal capacities below zero
  /// take off). Pre: source != sink, both in range. May be called once per clear().
  double solve(int32_t source, int32_t sink, Ties ties = Ties::SmallSource);
  /// After solve(): whether `v` is on the source side of the minimum cut.
  bool onSourceSide(int32_t v) const { return sourceSide_[v] != 0; }

 private:
  void buildArcs(int32_t source, int32_t sink);
  bool buildLevels();
  double greedyFlow();
  double blockingFlow();
  void markSides(int32_t source, int32_t sink, Ties ties);

  int32_t vertices_ = 0;
  struct Edge {
    int32_t from, to;
    double capacity;
  };
  std::vector<Edge> edges_;  // as added; arcs are built from them by solve()
  // Per vertex: source -> v and v -> sink capacities as added; solve() turns them into one
  // residual, terminal_[v] (> 0: from the source, < 0: to the sink).
  std::vector<double> fromSource_, toSink_, terminal_;
  // Arcs of vertex v: arc_[first_[v] .. first_[v+1]); arc `rev` is its reverse, in `to`'s list.
  struct Arc {
    int32_t to, rev;
    double residual;
  };
  std::vector<int32_t> first_;
  // Every arc is written by buildArcs(): storage without a vector's zeroing pass over it.
  std::unique_ptr<Arc[]> arc_;
  size_t arcCapacity_ = 0;
  std::vector<int32_t> sources_;  // vertices the source has residual capacity to
  std::vector<int32_t> level_, next_, queue_, path_, pathVertex_;
  // In the current phase: one more than the level of the nearest vertex with sink capacity.
  int32_t sinkLevel_ = 0;
  std::vector<uint8_t> sourceSide_;
};

}  // namespace ferry
