// passes/placement_auto.cpp — cost-based placement: pins are constraints, every other value goes
// where the cost model's estimate of one run is lowest.
//
// The estimate of a placement is the compute time of every node on its device (infinite where
// the device has no kernel; params and constants cost nothing) plus, for every value and every
// other device that reads it, one transfer (the transfer pass inserts one per (value,
// destination)). An output pin reads its value on the pinned device. Weights — params,
// constants, and transfers and casts of them — cost nothing per run: their transfers and casts
// run once, when a Session is created (passes/load_time.h), so they add no terms.
//   1. fix       inputs, pinned params, pinned nodes (a pin without a kernel falls back to cpu
//                first) and transfers are fixed; every other value is free
//   2. start     free values on options.target (a node with no kernel there: cpu, else the
//                first device that has one)
//      contract  a free weight that costs nothing anywhere (an unpinned param, a constant, a cast
//                of a weight every device has a kernel for) follows the first node that reads it
//                and is left out of the moves (exact: anywhere is as cheap per run, and there its
//                first reader needs no copy at load)
//   3. improve   an expansion move towards a device A lets every free value either stay or move
//                to A; the best such move is a minimum s-t cut (source side: stay). Transfer
//                costs paid once per (value, destination) become one auxiliary vertex per value
//                and direction. With two devices one move from the start reaches the exact
//                optimum; with more, moves towards each device repeat while they lower the
//                estimate, so the result is never worse than the start.
//   4. record    Reason CostModel with each node's compute estimates per device
// Ties keep a value where the move found it: on the target when nothing beats it.
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "passes/load_time.h"
#include "passes/mincut.h"
#include "passes/placement_impl.h"

namespace ferry::placement {

namespace {

using Kind = Reason::Kind;
constexpr double kInf = MinCut::kInfinity;
constexpr int kMaxSweeps = 8;
constexpr int32_t kSource = 0, kSink = 1;
constexpr size_t kPrefetchAhead = 12;  // values, in record(): see Graph::prefetch

class AutoPlacer {
 public:
  explicit AutoPlacer(Placer &p) : p_(p), g_(p.graph), k_(p.available) {}

  void run() {
    if (!fix()) {
      for (ValueId v : free_) p_.place(v, p_.target, Kind::Target);
      return;
    }
    if (k_ == 1) {
      for (ValueId v : free_) p_.place(v, 0, Kind::Target);
      return;
    }
    start();
    p_.buildUsers();
    contract();
    bytes_.assign(g_.valueCount(), 0);
    // A weight's transfers run at load: free per run, they add no terms (nor do followers',
    // never apart from their reader).
    for (ValueId v = 0; v < static_cast<ValueId>(g_.valueCount()); ++v)
      if (p_.label[v] != kNone && !p_.users(v).empty() && !weight_[v]) {
        used_.push_back(v);
        bytes_[v] = static_cast<double>(g_.value(v).type.byteSize());
      }
    energy_ = energy();
    if (k_ == 2) {
      expand(p_.target == 0 ? 1 : 0);
    } else {
      bool improved = true;
      for (int sweep = 0; sweep < kMaxSweeps && improved; ++sweep) {
        improved = false;
        for (size_t a = 0; a < k_; ++a) improved = expand(static_cast<Label>(a)) || improved;
      }
    }
    // Last to first: a weight's reader may follow a reader of its own (a param read by a cast
    // of it), and readers come later in free_.
    for (auto f = followers_.rbegin(); f != followers_.rend(); ++f)
      p_.label[f->first] = p_.label[f->second];
    record();
    warnFallbacks();
  }

 private:
  // 1. fix. Returns false when an error makes placement pointless.
  bool fix() {
    costRow_.assign(g_.valueCount(), -1);
    std::vector<TensorType> types;
    bool ok = !p_.ctx.diags.hasErrors();
    weight_.assign(g_.valueCount(), 0);
    for (const ParamDecl &pr : g_.params()) {
      weight_[pr.value] = 1;
      if (!pr.pin) free_.push_back(pr.value);
    }
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      // Runs once at load (a transfer or cast of a weight), or is a constant: costs nothing per
      // run, and its result is a weight.
      const bool atLoad = runsAtLoad(n, weight_) || p_.isSource(n);
      if (atLoad) weight_[n.result] = 1;
      if (n.op == OpKind::Transfer) {
        p_.placeTransfer(n);
      } else if (p_.pin[id] != kNone) {
        Label l = p_.pin[id];
        if (l < k_ && !p_.supports(n, l)) l = p_.runnable(id, l, "pinned" + at(n.loc));
        if (l == p_.pin[id]) p_.place(n.result, l, Reason{Kind::Pinned, -1, n.loc, {}});
      } else {
        free_.push_back(n.result);
        costRow_[n.result] = static_cast<int32_t>(cost_.size() / k_);
        sourceRow_.push_back(atLoad);
        bool any = false, costed = false;
        OpCost c{};
        for (size_t l = 0; l < k_; ++l) {
          double seconds = kInf;
          if (p_.supports(n, static_cast<Label>(l))) {
            // With one device there is nothing to compare: only whether it has a kernel.
            bool free = atLoad || k_ == 1;
            if (!costed && !free) c = opCostOf(n, types), costed = true;
            seconds = free ? 0
                           : p_.options.cost.computeSeconds(p_.devices[l], c) *
                                 p_.options.capabilities.costFactor(p_.devices[l], n.op,
                                                                    p_.computeDType(n));
          }
          cost_.push_back(seconds);
          any = any || seconds < kInf;
        }
        if (!any) {
          std::vector<Label> all(k_);
          for (size_t l = 0; l < k_; ++l) all[l] = static_cast<Label>(l);
          p_.ctx.diags
              .error("device", n.loc,
                     p_.nodeRef(n) + " has no kernel for " +
                         std::string(dtypeName(p_.computeDType(n))) + " on any available device (" +
                         p_.devicesText(all) + ")")
              .fix("compile with a device that has a kernel for it");
          ok = false;
        }
      }
    }
    return ok && !p_.ctx.diags.hasErrors();
  }

  static std::string at(const Location &loc) { return loc.known() ? " at " + loc.str() : ""; }

  OpCost opCostOf(const Node &n, std::vector<TensorType> &types) const {
    // Assigning into a kept vector reuses the shapes' storage: no allocation per node.
    types.resize(n.operands.size());
    for (size_t i = 0; i < n.operands.size(); ++i) types[i] = g_.value(n.operands[i]).type;
    return opCost(n.info(), types, n.attrs, g_.value(n.result).type);
  }

  // 2. start
  void start() {
    for (ValueId v : free_) {
      Label l = p_.target;
      int32_t row = costRow_[v];
      if (row >= 0 && cost_[row * k_ + l] == kInf) {
        l = p_.cpu != kNone && cost_[row * k_ + p_.cpu] < kInf ? p_.cpu : 0;
        while (cost_[row * k_ + l] == kInf) ++l;
      }
      p_.label[v] = l;
    }
  }

  // A free weight that costs nothing on any device (an unpinned param, a constant or a cast of a
  // weight every device has a kernel for) is as cheap per run anywhere: its transfers run at
  // load. Next to the first node that reads it, that node needs no copy at load. It leaves the
  // cut and follows that reader: most weights and biases of a model (in the benchmark's model,
  // two of every three values).
  void contract() {
    size_t kept = 0;
    for (ValueId v : free_) {
      auto users = p_.users(v);
      if (!users.empty() && users[0] >= 0 && costsNothing(v))
        followers_.emplace_back(v, users[0]);
      else
        free_[kept++] = v;
    }
    free_.resize(kept);
  }
  bool costsNothing(ValueId v) const {
    const int32_t row = costRow_[v];
    if (row < 0) return true;  // a param
    if (!sourceRow_[row]) return false;
    for (size_t l = 0; l < k_; ++l)
      if (cost_[row * k_ + l] != 0) return false;
    return true;
  }

  // A free value's own cost on `l`: compute for nodes, nothing for weights.
  double own(ValueId v, Label l) const {
    return costRow_[v] >= 0 ? cost_[costRow_[v] * k_ + l] : 0;
  }

  double transfer(ValueId v, Label from, Label to) const {
    return p_.options.cost.transferSeconds(p_.devices[from], p_.devices[to], bytes_[v]);
  }

  // The estimate of the current labels (fixed nodes' compute left out: it never changes).
  double energy() {
    double e = 0;
    for (ValueId v : free_) e += own(v, p_.label[v]);
    mark_.assign(p_.devices.size(), -1);
    for (ValueId v : used_) {
      Label lv = p_.label[v];
      for (int32_t u : p_.users(v)) {
        Label l = p_.userLabel(u);
        if (l == lv || mark_[l] == v) continue;
        mark_[l] = v;
        e += transfer(v, lv, l);
      }
    }
    return e;
  }

  // --- 3. an expansion move towards `alpha` as a minimum cut ---------------------------------
  // Vertex sides: source = keeps its device, sink = on alpha. Values that cannot move are the
  // terminals themselves: on alpha -> kSink, elsewhere -> kSource.
  int32_t side(ValueId v) const {
    return vertex_[v] >= 0 ? vertex_[v] : p_.label[v] == alpha_ ? kSink : kSource;
  }
  // Pays `stay` when x keeps its device (source side), `move` when it moves to alpha.
  void addUnary(int32_t x, double stay, double move) {
    if (x < 2) return;  // a terminal: a constant
    cut_.addTerminal(x, move, stay);
  }
  // Pays w when x stays and any of `movers` (or a user already on alpha) is on alpha.
  void staysWhileAnyMoves(int32_t x, const std::vector<int32_t> &movers, bool userOnAlpha,
                          double w) {
    if (w <= 0 || x == kSink) return;
    if (userOnAlpha) return addUnary(x, w, 0);
    if (movers.empty()) return;
    if (movers.size() == 1) return cut_.addEdge(x, movers[0], w);
    int32_t aux = cut_.addVertex();
    cut_.addEdge(x, aux, w);
    for (int32_t m : movers) cut_.addEdge(aux, m, kInf);
  }
  // Pays w when any of `stayers` stays.
  void anyStays(const std::vector<int32_t> &stayers, double w) {
    if (w <= 0 || stayers.empty()) return;
    if (stayers.size() == 1) return addUnary(stayers[0], w, 0);
    int32_t aux = cut_.addVertex();
    for (int32_t s : stayers) cut_.addEdge(s, aux, kInf);
    cut_.addTerminal(aux, 0, w);
  }
  // Pays w when x moves and any of `stayers` stays.
  void movesWhileAnyStays(int32_t x, const std::vector<int32_t> &stayers, double w) {
    if (w <= 0 || stayers.empty()) return;
    if (stayers.size() == 1) return cut_.addEdge(stayers[0], x, w);
    int32_t aux = cut_.addVertex();
    for (int32_t s : stayers) cut_.addEdge(s, aux, kInf);
    cut_.addEdge(aux, x, w);
  }

  // The transfer terms of value v. Its users on alpha or moving there need a copy from v's
  // device unless v moves too (exact). Users staying on a device d need a copy from wherever
  // v ends up, a cost a = t(v's device, d) or b = t(alpha, d): exact unless b < a with every
  // user on d free, where it counts as if one of them stays (the move is then checked against
  // the exact estimate before it is kept).
  void transferTerms(ValueId v) {
    Label lv = p_.label[v];
    int32_t x = side(v);
    bool userOnAlpha = false;
    movers_.clear();
    touched_.clear();
    for (int32_t u : p_.users(v)) {
      Label l = p_.userLabel(u);
      int32_t ux = u >= 0 ? vertex_[u] : -1;
      if (ux >= 0) {
        movers_.push_back(ux);
      } else if (l == alpha_) {
        userOnAlpha = true;
        continue;
      }
      if (stayers_[l].empty() && !fixedOn_[l]) touched_.push_back(l);
      if (ux >= 0)
        stayers_[l].push_back(ux);
      else
        fixedOn_[l] = 1;
    }
    if (lv != alpha_) staysWhileAnyMoves(x, movers_, userOnAlpha, transfer(v, lv, alpha_));
    for (Label d : touched_) {
      double a = lv == d ? 0 : transfer(v, lv, d), b = transfer(v, alpha_, d);
      if (x < 2) {
        if (!fixedOn_[d]) anyStays(stayers_[d], x == kSink ? b : a);
      } else if (fixedOn_[d]) {
        addUnary(x, a, b);
      } else {
        anyStays(stayers_[d], a);
        if (b >= a)
          movesWhileAnyStays(x, stayers_[d], b - a);
        else
          addUnary(x, 0, b - a);
      }
      stayers_[d].clear();
      fixedOn_[d] = 0;
    }
  }

  // At most how many edges a move adds: for each used value, at most one per user and
  // auxiliary vertex in each of its three kinds of terms (unary terms are capacities of the
  // vertices, not edges). Reserving the bound costs only address space (pages are touched when
  // edges are written); growing the edge array instead copies it and faults in twice its size.
  size_t edgeBound() const {
    size_t bound = 0;
    for (ValueId v : used_) bound += 3 * p_.users(v).size() + 2 * k_ + 1;
    return bound;
  }

  // Returns whether the move was kept (it lowered the estimate).
  bool expand(Label alpha) {
    alpha_ = alpha;
    vertex_.resize(g_.valueCount(), -1);
    int32_t count = 2;
    for (ValueId v : free_)
      if (p_.label[v] != alpha && own(v, alpha) < kInf) vertex_[v] = count++;
    if (count == 2) return false;
    cut_.clear(count);
    cut_.reserve(edgeBound());
    stayers_.resize(p_.devices.size());
    fixedOn_.assign(p_.devices.size(), 0);
    for (ValueId v : free_)
      if (vertex_[v] >= 0) addUnary(vertex_[v], own(v, p_.label[v]), own(v, alpha));
    for (ValueId v : used_) transferTerms(v);
    cut_.solve(kSource, kSink, MinCut::Ties::LargeSource);

    changed_.clear();
    for (ValueId v : free_) {
      if (vertex_[v] < 0) continue;
      if (!cut_.onSourceSide(vertex_[v])) {
        changed_.emplace_back(v, p_.label[v]);
        p_.label[v] = alpha;
      }
      vertex_[v] = -1;
    }
    if (changed_.empty()) return false;
    double e = energy();
    if (e < energy_ - 1e-12 * energy_) {
      energy_ = e;
      return true;
    }
    for (const auto &[v, l] : changed_) p_.label[v] = l;
    return false;
  }

  // 4. record
  void record() {
    for (const auto &[v, u] : followers_) p_.place(v, p_.label[u], Kind::CostModel, u);
    for (size_t i = 0; i < free_.size(); ++i) {
      // Every free value is written, each a cache miss on a large graph that the hardware does
      // not foresee: asking for the one kPrefetchAhead further on hides most of the wait (at
      // 100k nodes, record takes half the time).
      if (i + kPrefetchAhead < free_.size()) g_.prefetch(free_[i + kPrefetchAhead]);
      ValueId v = free_[i];
      Label l = p_.label[v];
      int32_t row = costRow_[v];
      if (row >= 0 && !sourceRow_[row]) {
        p_.place(v, l, Kind::CostModel, -1);
        g_.deviceReason(v).detail = costText(row, l);
        continue;
      }
      // A weight costs nothing per run anywhere: it sits with (the first of) its users.
      ValueId with = -1;
      bool used = false;
      for (int32_t u : p_.users(v)) {
        used = true;
        if (u >= 0 && p_.userLabel(u) == l) {
          with = u;
          break;
        }
      }
      p_.place(v, l, used ? Kind::CostModel : Kind::Target, with);
    }
  }

  // A node on the cpu next to work on an accelerator that has no kernel for it: it ran there but
  // for that, and its neighbours' data crosses to it and back every run. Said as strict says a
  // fallback (a "fallback" warning), though here no pin was overruled.
  void warnFallbacks() {
    if (p_.cpu == kNone) return;
    for (ValueId v : free_) {
      const int32_t row = costRow_[v];
      if (row < 0 || sourceRow_[row] || p_.label[v] != p_.cpu) continue;
      const double *c = &cost_[static_cast<size_t>(row) * k_];
      Label missing = kNone;
      for (size_t l = 0; l < k_ && missing == kNone; ++l)
        if (c[l] >= kInf && !p_.devices[l].isHost()) missing = static_cast<Label>(l);
      if (missing == kNone) continue;
      const Node &n = *g_.producer(v);
      bool nearAccelerator = false;
      for (ValueId o : n.operands)
        nearAccelerator = nearAccelerator || !p_.devices[p_.label[o]].isHost();
      for (int32_t u : p_.users(v))
        nearAccelerator = nearAccelerator || !p_.devices[p_.userLabel(u)].isHost();
      if (!nearAccelerator) continue;
      const std::string dtype(dtypeName(p_.computeDType(n)));
      p_.ctx.diags
          .warning("fallback", n.loc,
                   p_.nodeRef(n) + " has no kernel for " + dtype + " on " +
                       p_.devices[missing].str() + "; it runs on cpu, its data copied there and back")
          .note("auto placement had no other device for it: " + g_.deviceReason(v).detail.str());
    }
  }

  // The detail of a CostModel reason: "cost model: cuda:0 1.2 µs vs cpu 35 µs". It depends only
  // on the device and the row of estimates, which nodes of one op on the same shapes share, so
  // each distinct text is built once (rows compared bit for bit: equal bits, equal text).
  const SharedText &costText(int32_t row, Label l) {
    const double *c = &cost_[static_cast<size_t>(row) * k_];
    std::string_view bits(reinterpret_cast<const char *>(c), k_ * sizeof(double));
    auto [it, added] = textRow_.try_emplace(bits, textRow_.size());
    if (added) texts_.resize(texts_.size() + k_);
    SharedText &shared = texts_[it->second * k_ + l];
    if (!shared.empty()) return shared;
    if (names_.empty())
      for (size_t d = 0; d < k_; ++d) names_.push_back(p_.devices[d].str());
    char buf[kSecondsTextMax];
    std::string text = "cost model: ";
    text.append(names_[l]).append(" ").append(buf, writeSeconds(buf, c[l]));
    bool cheapest = true, tied = false, first = true;
    for (size_t o = 0; o < k_; ++o) {
      if (o == l) continue;
      text.append(first ? " vs " : ", ").append(names_[o]).append(" ");
      if (c[o] < kInf)
        text.append(buf, writeSeconds(buf, c[o]));
      else
        text.append("(no kernel)");
      cheapest = cheapest && c[o] >= c[l];
      tied = tied || c[o] == c[l];
      first = false;
    }
    // The compute estimates alone do not explain a choice they do not favour: the transfers do.
    if (!cheapest)
      text.append("; moving data would cost more");
    else if (tied)
      text.append("; as fast elsewhere: chosen for its transfers, or kept where placement started "
                  "if those tie too");
    return shared = SharedText(text);
  }

  Placer &p_;
  Graph &g_;
  size_t k_;
  std::vector<ValueId> free_;       // free values: unpinned params, then unpinned nodes in order
  std::vector<int32_t> costRow_;    // per value: its row in cost_ (free nodes), else -1
  std::vector<double> cost_;        // per free node and device: compute seconds (kInf: no kernel)
  std::vector<uint8_t> sourceRow_;  // per row of cost_: a constant or a load-time cast (free)
  std::vector<ValueId> used_;       // values that some node or pinned output reads, weights aside
  std::vector<uint8_t> weight_;     // per value: a weight (load_time.h), its transfers free per run
  std::vector<std::pair<ValueId, ValueId>> followers_;  // (value, the result of its first reader)
  std::vector<double> bytes_;                           // per used value: its size
  double energy_ = 0;
  std::vector<ValueId> mark_;

  Label alpha_ = 0;
  MinCut cut_;
  std::vector<int32_t> vertex_;  // per value: its cut vertex during a move, or -1
  std::vector<int32_t> movers_;
  std::vector<std::vector<int32_t>> stayers_;  // per device: movable users now on it
  std::vector<uint8_t> fixedOn_;               // per device: a fixed user is on it
  std::vector<Label> touched_;
  std::vector<std::pair<ValueId, Label>> changed_;

  // record(): the CostModel texts, per distinct row of estimates (keyed by its bytes in cost_)
  // and device.
  std::unordered_map<std::string_view, size_t> textRow_;
  std::vector<SharedText> texts_;
  std::vector<std::string> names_;  // per device: its name
};

}  // namespace

void placeAuto(Placer &p) { AutoPlacer(p).run(); }

}  // namespace ferry::placement
