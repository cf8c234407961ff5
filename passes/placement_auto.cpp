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
//
// Budgets (options.budgets) are constraints of the plan, not only a check after it:
//   directions  a copy in a direction set to `error` is forbidden. A plan is scored first by its
//               forbidden copies, then by its estimate; in a move such a copy costs more than any
//               plan's estimate (forbid_), so no move that adds one is kept and a move that removes
//               one is. Before the moves, arc consistency over the network of per-run copies
//               (placement_budget.h) takes out of each free value's devices those no plan without
//               a forbidden copy uses, and the start moves off them: with two devices the one move
//               is still exact, so a plan without forbidden copies is found whenever one exists.
//               A forbidden copy the best plan keeps is an error naming the pins that force it.
//   bytes       a cap on the bytes copied per run (maxTransferBytes) is global, so it is met by
//               re-solving with a price per byte added to every copy (a Lagrangian relaxation):
//               first one so high that bytes come first (the plan with the fewest bytes: exact
//               with two devices), then, when that fits, a bisection on the price for the cheapest
//               plan that fits, and each device alone; then, from the best plan within the cap,
//               parts of the plan just over it are taken over greedily while they fit (fillCap).
//               The best plan found is kept (the fewest bytes when none fits: the budget pass
//               then names its transfers). A heuristic: the cheapest plan within the cap may be
//               one that no price makes optimal (two equal layers, each worth its copy, move
//               together under any price; the greedy fill finds the plan with one). Bytes are
//               counted in the dtypes before the dtype pass, which the budget pass checks again.
// Without `error` directions and a cap none of this runs, and the plan is the same as before.
#include <algorithm>
#include <bit>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "passes/load_time.h"
#include "passes/mincut.h"
#include "passes/placement_budget.h"
#include "passes/placement_impl.h"

namespace ferry::placement {

namespace {

using Kind = Reason::Kind;
constexpr double kInf = MinCut::kInfinity;
constexpr int kMaxSweeps = 8;
constexpr int32_t kSource = 0, kSink = 1;
constexpr size_t kPrefetchAhead = 12;  // values, in record(): see Graph::prefetch
// Bisection steps on the price per byte under a byte cap (each a solve).
constexpr int kCapSteps = 12;
// Groups of values a plan within a byte cap may take over from one beyond it (each a score).
constexpr size_t kMaxFillGroups = 256;

// A plan's standing: its forbidden copies first, then its estimate and the bytes it copies.
struct Score {
  int64_t forbidden = 0;  // per-run copies in a direction the budgets set to `error`
  double seconds = 0;     // the estimate (fixed nodes' compute left out: it never changes)
  double bytes = 0;       // copied per run
};

class AutoPlacer {
 public:
  explicit AutoPlacer(Placer &p) : p_(p), g_(p.graph), k_(p.available), rules_(p) {}

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
    if (rules_.any() || p_.options.budgets.maxTransferBytes) constrain();
    solve();
    if (p_.options.budgets.maxTransferBytes) meetCap();
    if (energy_.forbidden > 0) reportForbidden();
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

  // A copy's cost in a move: its estimate, and under budgets its price per byte, or forbid_.
  double transfer(ValueId v, Label from, Label to) const {
    const double t = p_.options.cost.transferSeconds(p_.devices[from], p_.devices[to], bytes_[v]);
    if (!steer_ || from == to) return t;
    return rules_.forbidden(from, to) ? forbid_ : t + lambda_ * bytes_[v];
  }

  // The score of the current labels.
  Score score() {
    Score s;
    for (ValueId v : free_) s.seconds += own(v, p_.label[v]);
    mark_.assign(p_.devices.size(), -1);
    for (ValueId v : used_) {
      Label lv = p_.label[v];
      for (int32_t u : p_.users(v)) {
        Label l = p_.userLabel(u);
        if (l == lv || mark_[l] == v) continue;
        mark_[l] = v;
        s.seconds += p_.options.cost.transferSeconds(p_.devices[lv], p_.devices[l], bytes_[v]);
        s.bytes += bytes_[v];
        s.forbidden += rules_.forbidden(lv, l);
      }
    }
    return s;
  }
  // Fewer forbidden copies, then a lower estimate (with the price per byte).
  bool better(const Score &a, const Score &b) const {
    if (a.forbidden != b.forbidden) return a.forbidden < b.forbidden;
    const double ea = a.seconds + lambda_ * a.bytes, eb = b.seconds + lambda_ * b.bytes;
    return ea < eb - 1e-12 * eb;
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
      if (p_.label[v] != alpha && own(v, alpha) < kInf && allows(v, alpha)) vertex_[v] = count++;
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
    const Score e = score();
    if (better(e, energy_)) {
      energy_ = e;
      return true;
    }
    for (const auto &[v, l] : changed_) p_.label[v] = l;
    return false;
  }

  void solve() {
    if (steer_) forbid_ = 4 * bound() + 1e-9;
    energy_ = score();
    if (k_ == 2) {
      expand(p_.target == 0 ? 1 : 0);
      return;
    }
    bool improved = true;
    for (int sweep = 0; sweep < kMaxSweeps && improved; ++sweep) {
      improved = false;
      for (size_t a = 0; a < k_; ++a) improved = expand(static_cast<Label>(a)) || improved;
    }
  }

  // --- budgets (see the overview) -------------------------------------------------------------
  void constrain() {
    steer_ = true;
    budgetsBind_ = rules_.any();
    if (rules_.any() && rules_.masks()) {
      buildNetwork();
      std::vector<uint64_t> domain = net_.domain;
      // No plan without a forbidden copy: nothing to take out, the moves keep as few as they can.
      if (propagate(rules_, net_.edges, domain)) {
        allowed_.assign(g_.valueCount(), rules_.all());
        for (ValueId v : free_)
          if (!weight_[v]) allowed_[v] = domain[v];
      }
    }
    // The start on devices a plan may use: with two devices only off the target where the target
    // is ruled out (so that the one move still reaches every plan); with more, also where no
    // operand can be copied to it.
    for (ValueId v : free_) {
      if (weight_[v] || costRow_[v] < 0) continue;
      uint64_t ok = 0;
      for (size_t l = 0; l < k_ && l < 64; ++l)
        if (allows(v, static_cast<Label>(l)) && own(v, static_cast<Label>(l)) < kInf)
          ok |= uint64_t{1} << l;
      if (k_ > 2 && rules_.masks()) {
        uint64_t fit = ok;
        for (ValueId o : g_.producer(v)->operands)
          if (!weight_[o] && p_.label[o] != kNone)
            fit &= rules_.readableFrom(uint64_t{1} << p_.label[o]);
        if (fit) ok = fit;
      }
      const Label l = p_.label[v];
      if (ok == 0 || (l < 64 && (ok >> l & 1))) continue;
      Label pick = static_cast<Label>(std::countr_zero(ok));
      if (p_.cpu != kNone && p_.cpu < 64 && (ok >> p_.cpu & 1)) pick = p_.cpu;
      if (p_.target < 64 && (ok >> p_.target & 1)) pick = p_.target;
      p_.label[v] = pick;
    }
    start_.clear();
    for (ValueId v : free_) start_.push_back(p_.label[v]);
  }

  bool allows(ValueId v, Label l) const {
    return allowed_.empty() || l >= 64 || (allowed_[v] >> l & 1) != 0;
  }

  // The network of per-run copies: a variable per value (weights take no part), then one per
  // output; edges from each value, inputs first and then in node order, to its readers.
  void buildNetwork() {
    const auto values = static_cast<int32_t>(g_.valueCount());
    net_.values = values;
    net_.domain.assign(values + g_.outputs().size(), rules_.all());
    net_.fixed.assign(net_.domain.size(), 0);
    std::vector<uint8_t> free(g_.valueCount(), 0);
    for (ValueId v : free_) free[v] = 1;
    for (int32_t v = 0; v < values; ++v) {
      const Label l = p_.label[v];
      if (l == kNone || weight_[v]) continue;
      if (!free[v]) {
        net_.fixed[v] = 1;
        net_.domain[v] = uint64_t{1} << l;
      } else if (costRow_[v] >= 0) {
        uint64_t d = 0;
        for (size_t k = 0; k < k_; ++k)
          if (own(v, static_cast<Label>(k)) < kInf) d |= uint64_t{1} << k;
        net_.domain[v] = d;
      }
    }
    for (size_t i = 0; i < g_.outputs().size(); ++i)
      if (p_.outputPin[i] != kNone) {
        net_.fixed[values + i] = 1;
        net_.domain[values + i] = uint64_t{1} << p_.outputPin[i];
      }
    net_.edges.clear();
    auto from = [&](ValueId v) {
      if (p_.label[v] == kNone || weight_[v]) return;
      for (int32_t u : p_.users(v)) net_.edges.emplace_back(v, u >= 0 ? u : values + ~u);
    };
    for (const InputDecl &in : g_.inputs()) from(in.value);
    for (NodeId id : g_.order()) from(g_.node(id).result);
  }

  // More than the estimate of any plan (with the price per byte): what a forbidden copy costs in
  // a move. Each free value's dearest device, and each used value copied to every other device
  // over the dearest link.
  double bound() const {
    double latency = 0, perByte = 0;
    constexpr double kBytes = 1e12;
    for (size_t a = 0; a < k_; ++a)
      for (size_t b = 0; b < k_; ++b) {
        if (a == b) continue;
        const double lat = p_.options.cost.transferSeconds(p_.devices[a], p_.devices[b], 0);
        const double big = p_.options.cost.transferSeconds(p_.devices[a], p_.devices[b], kBytes);
        latency = std::max(latency, lat);
        perByte = std::max(perByte, (big - lat) / kBytes);
      }
    perByte = perByte * 1.01 + lambda_;
    double u = 0;
    for (ValueId v : free_) {
      double dearest = 0;
      for (size_t l = 0; l < k_; ++l)
        if (const double c = own(v, static_cast<Label>(l)); c < kInf)
          dearest = std::max(dearest, c);
      u += dearest;
    }
    for (ValueId v : used_) {
      const double copies = static_cast<double>(std::min(p_.users(v).size(), k_ - 1));
      u += copies * (latency + perByte * bytes_[v]);
    }
    return u;
  }

  // The byte cap: see the overview.
  void meetCap() {
    const auto cap = static_cast<double>(*p_.options.budgets.maxTransferBytes);
    if (energy_.bytes <= cap) return;
    budgetsBind_ = true;
    const double bytes0 = energy_.bytes, u = bound();
    Score best = energy_;
    std::vector<Label> bestLabels = labels(), over = bestLabels;
    auto consider = [&] {
      if (!fitsBetter(energy_, best, cap)) return;
      best = energy_;
      bestLabels = labels();
    };
    // The fewest bytes: one byte outweighs any difference in seconds.
    lambda_ = 4 * u + 1e-12;
    restart();
    solve();
    consider();
    p_.ctx.stats.autoFewestTransferBytes = std::llround(energy_.bytes);
    p_.ctx.stats.autoFewestExact = k_ == 2;
    if (energy_.bytes <= cap) {
      double lo = u / std::max(1.0, bytes0) * 1e-6, hi = lambda_;
      for (int step = 0; step < kCapSteps; ++step) {
        lambda_ = std::sqrt(lo * hi);
        restart();
        solve();
        consider();
        if (energy_.bytes > cap) over = labels();
        (energy_.bytes <= cap ? hi : lo) = lambda_;
      }
    }
    lambda_ = 0;
    // Each device alone, where the budgets and the kernels let every free value be.
    for (size_t l = 0; l < k_; ++l) {
      restart();
      for (ValueId v : free_)
        if (!weight_[v] && own(v, static_cast<Label>(l)) < kInf && allows(v, static_cast<Label>(l)))
          p_.label[v] = static_cast<Label>(l);
      energy_ = score();
      consider();
    }
    setLabels(bestLabels);
    energy_ = score();
    if (energy_.bytes <= cap) {
      fillCap(over, cap);
      if (fitsBetter(energy_, best, cap)) return;
      setLabels(bestLabels);
      energy_ = score();
    }
  }

  // From the plan in place (within the cap), takes over parts of `over` (a plan over the cap):
  // the groups of adjacent values whose devices differ, in the order of the seconds each saves
  // per byte it adds, each where the plan stays within the cap. Where several parts of a model
  // weigh the same (two equal layers), no price per byte tells them apart: the price moves them
  // all at once, and this fills the room the cap leaves.
  void fillCap(const std::vector<Label> &over, double cap) {
    std::vector<int32_t> index(g_.valueCount(), -1), parent;  // free value -> its differing index
    std::vector<size_t> differ;
    for (size_t i = 0; i < free_.size(); ++i)
      if (p_.label[free_[i]] != over[i]) {
        index[free_[i]] = static_cast<int32_t>(differ.size());
        differ.push_back(i);
      }
    if (differ.empty()) return;
    parent.resize(differ.size());
    for (size_t d = 0; d < differ.size(); ++d) parent[d] = static_cast<int32_t>(d);
    auto root = [&](int32_t d) {
      while (parent[d] != d) d = parent[d] = parent[parent[d]];
      return d;
    };
    for (size_t d = 0; d < differ.size(); ++d)
      for (int32_t u : p_.users(free_[differ[d]]))
        if (u >= 0 && index[u] >= 0) parent[root(index[u])] = root(static_cast<int32_t>(d));
    std::vector<std::vector<size_t>> groups(differ.size());
    for (size_t d = 0; d < differ.size(); ++d)
      groups[root(static_cast<int32_t>(d))].push_back(differ[d]);
    std::erase_if(groups, [](const std::vector<size_t> &g) { return g.empty(); });
    if (groups.size() > kMaxFillGroups) groups.resize(kMaxFillGroups);
    const Score base = energy_;
    std::vector<std::pair<double, size_t>> order;  // (seconds saved per byte added, group)
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const Score s = swapped(groups[gi], over);
      const double saved = base.seconds - s.seconds, added = s.bytes - base.bytes;
      if (saved > 0 && s.forbidden <= base.forbidden)
        order.emplace_back(added <= 0 ? kInf : saved / added, gi);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto &a, const auto &b) { return a.first > b.first; });
    for (const auto &[ratio, gi] : order) {
      std::vector<Label> kept;
      for (size_t i : groups[gi]) kept.push_back(p_.label[free_[i]]), p_.label[free_[i]] = over[i];
      const Score s = score();
      if (s.forbidden <= energy_.forbidden && s.bytes <= cap &&
          s.seconds < energy_.seconds - 1e-12 * energy_.seconds) {
        energy_ = s;
        continue;
      }
      for (size_t j = 0; j < groups[gi].size(); ++j) p_.label[free_[groups[gi][j]]] = kept[j];
    }
  }
  // The score with `group` (indices into free_) on its devices in `over`; the labels are left as
  // they were.
  Score swapped(const std::vector<size_t> &group, const std::vector<Label> &over) {
    std::vector<Label> kept;
    for (size_t i : group) kept.push_back(p_.label[free_[i]]), p_.label[free_[i]] = over[i];
    const Score s = score();
    for (size_t j = 0; j < group.size(); ++j) p_.label[free_[group[j]]] = kept[j];
    return s;
  }
  void setLabels(const std::vector<Label> &labels) {
    for (size_t i = 0; i < free_.size(); ++i) p_.label[free_[i]] = labels[i];
  }

  // Under a cap: fewer forbidden copies, then within the cap, then fewer seconds (within) or
  // fewer bytes (over).
  static bool fitsBetter(const Score &a, const Score &b, double cap) {
    if (a.forbidden != b.forbidden) return a.forbidden < b.forbidden;
    const bool fa = a.bytes <= cap, fb = b.bytes <= cap;
    if (fa != fb) return fa;
    if (!fa && a.bytes != b.bytes) return a.bytes < b.bytes;
    return a.seconds < b.seconds - 1e-12 * b.seconds;
  }
  std::vector<Label> labels() const {
    std::vector<Label> out;
    out.reserve(free_.size());
    for (ValueId v : free_) out.push_back(p_.label[v]);
    return out;
  }
  void restart() {
    if (start_.empty()) start_ = labels();  // the first solve started from the labels as they are
    for (size_t i = 0; i < free_.size(); ++i) p_.label[free_[i]] = start_[i];
  }

  // The forbidden copies the plan kept: each an error naming what forces it.
  void reportForbidden() {
    std::vector<ForbiddenCopy> copies;
    for (ValueId v : used_) {
      const size_t first = copies.size();
      const Label lv = p_.label[v];
      for (int32_t u : p_.users(v)) {
        const Label l = p_.userLabel(u);
        if (!rules_.forbidden(lv, l)) continue;
        auto c = std::find_if(copies.begin() + static_cast<std::ptrdiff_t>(first), copies.end(),
                              [&](const ForbiddenCopy &f) { return f.to == l; });
        if (c == copies.end()) c = copies.insert(copies.end(), ForbiddenCopy{v, lv, l, {}});
        c->readers.push_back(u >= 0 ? u : net_.values + ~u);
      }
    }
    for (ForbiddenCopy &c : copies)
      if (!net_.fixed.empty())
        std::stable_partition(c.readers.begin(), c.readers.end(),
                              [&](int32_t r) { return net_.fixed[r] != 0; });
    reportForcedCopies(p_, net_, rules_, copies);
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
      text.append(budgetsBind_ ? "; moving data would cost more, or break a budget"
                               : "; moving data would cost more");
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
  Score energy_;
  std::vector<ValueId> mark_;

  Label alpha_ = 0;
  MinCut cut_;
  std::vector<int32_t> vertex_;  // per value: its cut vertex during a move, or -1
  std::vector<int32_t> movers_;
  std::vector<std::vector<int32_t>> stayers_;  // per device: movable users now on it
  std::vector<uint8_t> fixedOn_;               // per device: a fixed user is on it
  std::vector<Label> touched_;
  std::vector<std::pair<ValueId, Label>> changed_;

  // Budgets: see the overview.
  CopyRules rules_;
  bool steer_ = false;        // a budget constrains the plan (an `error` direction or a byte cap)
  bool budgetsBind_ = false;  // ... and may have changed it (said in the reasons)
  double forbid_ = 0;         // a forbidden copy's cost in a move
  double lambda_ = 0;         // seconds per byte added to every copy, under a byte cap
  CopyNetwork net_;
  std::vector<uint64_t> allowed_;  // per value: the devices a plan may use (empty: all)
  std::vector<Label> start_;       // per free value: where the solves start

  // record(): the CostModel texts, per distinct row of estimates (keyed by its bytes in cost_)
  // and device.
  std::unordered_map<std::string_view, size_t> textRow_;
  std::vector<SharedText> texts_;
  std::vector<std::string> names_;  // per device: its name
};

}  // namespace

void placeAuto(Placer &p) { AutoPlacer(p).run(); }

}  // namespace ferry::placement
