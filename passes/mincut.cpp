// passes/mincut.cpp — Dinic's maximum flow: breadth-first levels, then blocking flows found by an
// iterative depth-first search along arcs that go one level up. The source and sink have no
// arcs: a vertex's residual capacity from the source or to the sink is a number of its own.
// Before the phases, one greedy pass (greedyFlow) fills sink capacities along depth-first paths
// from the sources: a phase reaches only the sink capacities nearest the sources, so a long chain
// of vertices that each have some, fed by one large source (a copy that is dear, or priced high
// by a budget, ahead of many ops that would each run faster elsewhere), would take a phase per
// vertex, quadratic in its length.
#include "passes/mincut.h"

#include <algorithm>
#include <cmath>

#include "ir/status.h"

namespace ferry {

void MinCut::clear(int32_t vertices) {
  FERRY_CHECK(vertices >= 0) << "vertex count " << vertices;
  vertices_ = vertices;
  edges_.clear();
  fromSource_.assign(static_cast<size_t>(vertices), 0);
  toSink_.assign(static_cast<size_t>(vertices), 0);
}

int32_t MinCut::addVertex() {
  fromSource_.push_back(0);
  toSink_.push_back(0);
  return vertices_++;
}

void MinCut::addEdge(int32_t from, int32_t to, double capacity) {
  FERRY_CHECK(from >= 0 && from < vertices_ && to >= 0 && to < vertices_)
      << "edge " << from << " -> " << to << " with " << vertices_ << " vertices";
  FERRY_CHECK(capacity >= 0) << "capacity " << capacity;  // also rejects NaN
  // An empty edge can never carry flow; leaving it out keeps the search short.
  if (capacity == 0 || from == to) return;
  edges_.push_back({from, to, capacity});
}

void MinCut::addTerminal(int32_t v, double fromSource, double toSink) {
  FERRY_CHECK(v >= 0 && v < vertices_) << "vertex " << v << " of " << vertices_;
  FERRY_CHECK(fromSource > -kInfinity && toSink > -kInfinity)  // also rejects NaN
      << "terminal capacities " << fromSource << ", " << toSink;
  fromSource_[static_cast<size_t>(v)] += fromSource;
  toSink_[static_cast<size_t>(v)] += toSink;
}

// Edges at the terminals become terminal capacities; the others, arcs in both directions.
void MinCut::buildArcs(int32_t source, int32_t sink) {
  const auto n = static_cast<size_t>(vertices_);
  first_.assign(n + 1, 0);
  size_t kept = 0;
  for (const Edge &e : edges_) {
    if (e.from == source && e.to != sink) {
      fromSource_[static_cast<size_t>(e.to)] += e.capacity;
    } else if (e.to == sink && e.from != source) {
      toSink_[static_cast<size_t>(e.from)] += e.capacity;
    } else if (e.from != source && e.to != source && e.from != sink && e.to != sink) {
      // Edges into the source or out of the sink carry no s-t flow: left out.
      ++first_[static_cast<size_t>(e.from) + 1];
      ++first_[static_cast<size_t>(e.to) + 1];
      edges_[kept++] = e;
    }
  }
  edges_.resize(kept);
  for (size_t v = 0; v < n; ++v) first_[v + 1] += first_[v];
  if (const auto arcs = static_cast<size_t>(first_[n]); arcs > arcCapacity_) {
    arc_.reset(new Arc[arcs]);  // default-initialised: not zeroed
    arcCapacity_ = arcs;
  }
  next_.assign(first_.begin(), first_.end() - 1);
  for (const Edge &e : edges_) {
    const int32_t i = next_[static_cast<size_t>(e.from)]++, j = next_[static_cast<size_t>(e.to)]++;
    arc_[static_cast<size_t>(i)] = {e.to, j, e.capacity};
    arc_[static_cast<size_t>(j)] = {e.from, i, 0};
  }
}

bool MinCut::buildLevels() {
  std::fill(level_.begin(), level_.end(), -1);
  queue_.clear();
  for (int32_t v : sources_)
    if (terminal_[static_cast<size_t>(v)] > 0) {
      level_[static_cast<size_t>(v)] = 1;
      queue_.push_back(v);
    }
  sinkLevel_ = INT32_MAX;
  for (size_t head = 0; head < queue_.size(); ++head) {
    const auto v = static_cast<size_t>(queue_[head]);
    const int32_t next = level_[v] + 1;
    if (terminal_[v] < 0) sinkLevel_ = std::min(sinkLevel_, next);
    // Vertices at or beyond the sink's level lead nowhere useful in this phase.
    if (next >= sinkLevel_) continue;
    for (int32_t i = first_[v]; i < first_[v + 1]; ++i) {
      const Arc &a = arc_[static_cast<size_t>(i)];
      if (a.residual > 0 && level_[static_cast<size_t>(a.to)] < 0) {
        level_[static_cast<size_t>(a.to)] = next;
        queue_.push_back(a.to);
      }
    }
  }
  return sinkLevel_ != INT32_MAX;
}

// Depth-first from each source vertex, over arcs with residual capacity to vertices not yet
// visited in this pass: each vertex reached takes what it can into its sink capacity and passes
// the rest on to its children, and tells its parent how much it took in all. A flow on a forest
// of paths, each arc looked at once.
double MinCut::greedyFlow() {
  std::fill(level_.begin(), level_.end(), -1);  // here: -1 unvisited, else visited in this pass
  std::copy(first_.begin(), first_.end() - 1, next_.begin());
  struct Frame {
    int32_t vertex, arc;  // arc: the one it was reached by (-1: a source vertex)
    double left, taken;   // what it may still take, what it took
  };
  std::vector<Frame> stack;
  double flow = 0;
  for (int32_t start : sources_) {
    const auto s = static_cast<size_t>(start);
    if (level_[s] >= 0 || terminal_[s] <= 0) continue;
    level_[s] = 0;
    stack.push_back({start, -1, terminal_[s], 0});
    while (!stack.empty()) {
      Frame &f = stack.back();
      const auto at = static_cast<size_t>(f.vertex);
      bool pushed = false;
      for (int32_t &i = next_[at]; f.left > 0 && i < first_[at + 1]; ++i) {
        const Arc &a = arc_[static_cast<size_t>(i)];
        if (a.residual <= 0 || level_[static_cast<size_t>(a.to)] >= 0) continue;
        const auto to = static_cast<size_t>(a.to);
        level_[to] = 0;
        Frame child{a.to, i, std::min(f.left, a.residual), 0};
        if (terminal_[to] < 0) {  // its own sink capacity first
          const double take = std::min(child.left, -terminal_[to]);
          if (std::isinf(take)) return kInfinity;
          terminal_[to] += take;
          child.left -= take;
          child.taken = take;
        }
        ++i;
        stack.push_back(child);
        pushed = true;
        break;
      }
      if (pushed) continue;
      const Frame done = f;
      stack.pop_back();
      if (done.arc >= 0) {
        Arc &arc = arc_[static_cast<size_t>(done.arc)];
        arc.residual -= done.taken;
        arc_[static_cast<size_t>(arc.rev)].residual += done.taken;
        Frame &parent = stack.back();
        parent.left -= done.taken;
        parent.taken += done.taken;
      } else {
        terminal_[s] -= done.taken;
        flow += done.taken;
      }
    }
  }
  return flow;
}

double MinCut::blockingFlow() {
  std::copy(first_.begin(), first_.end() - 1, next_.begin());
  double flow = 0;
  for (int32_t start : sources_) {
    const auto s = static_cast<size_t>(start);
    path_.clear();
    pathVertex_.assign(1, start);
    int32_t v = start;
    while (terminal_[s] > 0 && level_[s] == 1) {
      const auto at = static_cast<size_t>(v);
      if (terminal_[at] < 0 && level_[at] + 1 == sinkLevel_) {
        double f = std::min(terminal_[s], -terminal_[at]);
        for (int32_t a : path_) f = std::min(f, arc_[static_cast<size_t>(a)].residual);
        if (std::isinf(f)) return kInfinity;
        terminal_[s] -= f;
        terminal_[at] += f;
        for (int32_t a : path_) {
          Arc &arc = arc_[static_cast<size_t>(a)];
          arc.residual -= f;
          arc_[static_cast<size_t>(arc.rev)].residual += f;
        }
        flow += f;
        // Resume from the tail of the first saturated arc: the path before it is still open.
        // With none saturated, the source's or this vertex's terminal capacity is used up.
        size_t k = 0;
        while (k < path_.size() && arc_[static_cast<size_t>(path_[k])].residual > 0) ++k;
        if (k < path_.size()) {
          path_.resize(k);
          pathVertex_.resize(k + 1);
          v = pathVertex_.back();
        }
        continue;
      }
      bool advanced = false;
      for (int32_t &i = next_[at]; i < first_[at + 1]; ++i) {
        const Arc &a = arc_[static_cast<size_t>(i)];
        if (a.residual > 0 && level_[static_cast<size_t>(a.to)] == level_[at] + 1) {
          path_.push_back(i);
          pathVertex_.push_back(a.to);
          v = a.to;
          advanced = true;
          break;
        }
      }
      if (advanced) continue;
      level_[at] = -1;  // a dead end for the rest of this phase
      if (path_.empty()) break;
      path_.pop_back();
      pathVertex_.pop_back();
      v = pathVertex_.back();
      ++next_[static_cast<size_t>(v)];
    }
  }
  return flow;
}

void MinCut::markSides(int32_t source, int32_t sink, Ties ties) {
  const auto n = static_cast<size_t>(vertices_);
  queue_.clear();
  if (ties == Ties::SmallSource) {
    sourceSide_.assign(n, 0);
    sourceSide_[static_cast<size_t>(source)] = 1;
    for (int32_t v : sources_)
      if (terminal_[static_cast<size_t>(v)] > 0 && !sourceSide_[static_cast<size_t>(v)]) {
        sourceSide_[static_cast<size_t>(v)] = 1;
        queue_.push_back(v);
      }
    for (size_t head = 0; head < queue_.size(); ++head) {
      const auto v = static_cast<size_t>(queue_[head]);
      for (int32_t i = first_[v]; i < first_[v + 1]; ++i) {
        const Arc &a = arc_[static_cast<size_t>(i)];
        if (a.residual > 0 && !sourceSide_[static_cast<size_t>(a.to)])
          sourceSide_[static_cast<size_t>(a.to)] = 1, queue_.push_back(a.to);
      }
    }
    return;
  }
  // Backwards from the sink: u reaches v when the arc u -> v (the reverse of v's arc to u) has
  // residual capacity left.
  sourceSide_.assign(n, 1);
  sourceSide_[static_cast<size_t>(sink)] = 0;
  for (size_t v = 0; v < n; ++v)
    if (terminal_[v] < 0) sourceSide_[v] = 0, queue_.push_back(static_cast<int32_t>(v));
  for (size_t head = 0; head < queue_.size(); ++head) {
    const auto v = static_cast<size_t>(queue_[head]);
    for (int32_t i = first_[v]; i < first_[v + 1]; ++i) {
      const Arc &a = arc_[static_cast<size_t>(i)];
      const auto u = static_cast<size_t>(a.to);
      if (arc_[static_cast<size_t>(a.rev)].residual > 0 && sourceSide_[u])
        sourceSide_[u] = 0, queue_.push_back(a.to);
    }
  }
}

double MinCut::solve(int32_t source, int32_t sink, Ties ties) {
  FERRY_CHECK(source != sink && source >= 0 && sink >= 0 && source < vertices_ && sink < vertices_)
      << "source " << source << ", sink " << sink;
  const auto n = static_cast<size_t>(vertices_);
  double cut = 0;
  for (const Edge &e : edges_)
    if (e.from == source && e.to == sink) cut += e.capacity;  // crosses every cut
  buildArcs(source, sink);
  // Flow that goes source -> v -> sink directly is always part of a maximum flow: send it first,
  // leaving each vertex one residual terminal capacity (and a vertex that would have to cut an
  // infinite one on either side makes the minimum cut infinite).
  terminal_.assign(n, 0);
  sources_.clear();
  for (size_t v = 0; v < n; ++v) {
    if (static_cast<int32_t>(v) == source || static_cast<int32_t>(v) == sink) continue;
    const double a = fromSource_[v], b = toSink_[v];
    if (std::isinf(a) && std::isinf(b)) {
      cut = kInfinity;
      continue;
    }
    cut += std::min(a, b);
    terminal_[v] = a - b;
    if (terminal_[v] > 0) sources_.push_back(static_cast<int32_t>(v));
  }
  level_.resize(n);
  next_.resize(n);
  if (!std::isinf(cut)) cut += greedyFlow();
  while (!std::isinf(cut) && buildLevels()) cut += blockingFlow();
  markSides(source, sink, ties);
  return cut;
}

}  // namespace ferry
