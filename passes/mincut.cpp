// passes/mincut.cpp — Dinic's maximum flow: breadth-first levels, then blocking flows found by an
// iterative depth-first search along edges that go one level up.
#include "passes/mincut.h"

#include <algorithm>
#include <cmath>

#include "ir/status.h"

namespace ferry {

void MinCut::clear(int32_t vertices) {
  FERRY_CHECK(vertices >= 0) << "vertex count " << vertices;
  vertices_ = vertices;
  edge_.clear();
}

void MinCut::addEdge(int32_t from, int32_t to, double capacity) {
  FERRY_CHECK(from >= 0 && from < vertices_ && to >= 0 && to < vertices_)
      << "edge " << from << " -> " << to << " with " << vertices_ << " vertices";
  FERRY_CHECK(capacity >= 0) << "capacity " << capacity;  // also rejects NaN
  // An empty edge can never carry flow; leaving it out keeps the search short.
  if (capacity == 0 || from == to) return;
  edge_.push_back({from, to, capacity});
  edge_.push_back({to, from, 0});
}

bool MinCut::buildLevels(int32_t source, int32_t sink) {
  std::fill(level_.begin(), level_.end(), -1);
  queue_.clear();
  queue_.push_back(source);
  level_[source] = 0;
  for (size_t head = 0; head < queue_.size(); ++head) {
    int32_t v = queue_[head];
    // Levels at or beyond the sink's lead nowhere useful in this phase.
    if (level_[sink] >= 0 && level_[v] >= level_[sink]) break;
    for (int32_t i = start_[v]; i < start_[v + 1]; ++i) {
      const Edge &e = edge_[edges_[i]];
      if (e.residual > 0 && level_[e.to] < 0) {
        level_[e.to] = level_[v] + 1;
        queue_.push_back(e.to);
      }
    }
  }
  return level_[sink] >= 0;
}

double MinCut::blockingFlow(int32_t source, int32_t sink) {
  std::copy(start_.begin(), start_.end() - 1, next_.begin());
  path_.clear();
  double flow = 0;
  int32_t v = source;
  while (true) {
    if (v == sink) {
      double f = kInfinity;
      for (int32_t e : path_) f = std::min(f, edge_[e].residual);
      if (std::isinf(f)) return kInfinity;
      for (int32_t e : path_) {
        edge_[e].residual -= f;
        edge_[e ^ 1].residual += f;
      }
      flow += f;
      // Resume from the tail of the first saturated edge: the path before it is still open.
      size_t k = 0;
      while (edge_[path_[k]].residual > 0) ++k;
      v = edge_[path_[k]].from;
      path_.resize(k);
      continue;
    }
    bool advanced = false;
    for (; next_[v] < start_[v + 1]; ++next_[v]) {
      int32_t e = edges_[next_[v]];
      const Edge &edge = edge_[e];
      if (edge.residual > 0 && level_[edge.to] == level_[v] + 1) {
        path_.push_back(e);
        v = edge.to;
        advanced = true;
        break;
      }
    }
    if (advanced) continue;
    if (v == source) return flow;
    level_[v] = -1;  // a dead end for the rest of this phase
    int32_t e = path_.back();
    path_.pop_back();
    v = edge_[e].from;
    ++next_[v];
  }
}

void MinCut::markSides(int32_t source, int32_t sink, Ties ties) {
  auto n = static_cast<size_t>(vertices_);
  queue_.clear();
  if (ties == Ties::SmallSource) {
    sourceSide_.assign(n, 0);
    sourceSide_[source] = 1;
    queue_.push_back(source);
    for (size_t head = 0; head < queue_.size(); ++head) {
      int32_t v = queue_[head];
      for (int32_t i = start_[v]; i < start_[v + 1]; ++i) {
        const Edge &e = edge_[edges_[i]];
        if (e.residual > 0 && !sourceSide_[e.to]) sourceSide_[e.to] = 1, queue_.push_back(e.to);
      }
    }
    return;
  }
  // Backwards from the sink: u reaches v when the edge u -> v (the pair of v's edge v -> u) has
  // residual capacity left.
  sourceSide_.assign(n, 1);
  sourceSide_[sink] = 0;
  queue_.push_back(sink);
  for (size_t head = 0; head < queue_.size(); ++head) {
    int32_t v = queue_[head];
    for (int32_t i = start_[v]; i < start_[v + 1]; ++i) {
      int32_t e = edges_[i];
      int32_t u = edge_[e].to;
      if (edge_[e ^ 1].residual > 0 && sourceSide_[u]) sourceSide_[u] = 0, queue_.push_back(u);
    }
  }
}

double MinCut::solve(int32_t source, int32_t sink, Ties ties) {
  FERRY_CHECK(source != sink && source >= 0 && sink >= 0 && source < vertices_ && sink < vertices_)
      << "source " << source << ", sink " << sink;
  auto n = static_cast<size_t>(vertices_);
  start_.assign(n + 1, 0);
  for (const Edge &e : edge_) ++start_[e.from + 1];
  for (size_t v = 0; v < n; ++v) start_[v + 1] += start_[v];
  edges_.resize(edge_.size());
  next_.assign(start_.begin(), start_.end() - 1);
  for (size_t i = 0; i < edge_.size(); ++i)
    edges_[next_[edge_[i].from]++] = static_cast<int32_t>(i);
  level_.resize(n);
  double flow = 0;
  while (buildLevels(source, sink)) {
    double f = blockingFlow(source, sink);
    if (std::isinf(f)) {
      flow = kInfinity;
      break;
    }
    flow += f;
  }
  markSides(source, sink, ties);
  return flow;
}

}  // namespace ferry
