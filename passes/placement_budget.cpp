// passes/placement_budget.cpp — the budgets as constraints of auto placement: which copies an
// `error` direction forbids, arc consistency over the network of per-run copies, and the error
// that explains a forbidden copy no plan avoids.
//
// The explanation of one forced copy (reportForcedCopies):
//   1. part     the copy's part of the network: the free values connected to it through free
//               values, and the fixed variables around them (a fixed variable has one device, so
//               nothing propagates through it: a conflict lies within one part); at first only a
//               ball of it around the copy, 4 edges deep, then 16, 64, ... (a ball is a
//               relaxation of the part: what it proves holds for the whole)
//   2. prove    arc consistency over the ball, every pin, declaration and kernel in it in force,
//               must empty a domain; if no ball does, there is no proof (more than two devices)
//   3. shrink   a deletion filter: each of them in turn (kernels first, then the pins farthest
//               from the copy) is lifted, and left lifted when the rest still prove it: what
//               remains is a smallest set in that sense, usually two pins, and near ones
//   4. report   the copy, the pins that force it, the values between them, a fix per pin
#include "passes/placement_budget.h"

#include <algorithm>
#include <bit>
#include <string>

#include "ir/printer.h"

namespace ferry::placement {

namespace {

// Beyond this much work (pins times edges of the part), the pins are named without the search
// for the fewest; and all copies together get at most kMaxExplainWork.
constexpr size_t kMaxShrinkWork = size_t{4} << 20;
constexpr size_t kMaxExplainWork = size_t{64} << 20;
constexpr size_t kMaxInline = 3;   // pins named in the message itself; more go to notes
constexpr size_t kMaxBetween = 6;  // values named between two pins
constexpr size_t kMaxNearby = 4;   // pins named around an unproven copy

std::string at(const Location &loc) { return loc.known() ? " at " + loc.str() : ""; }

uint64_t unionOver(uint64_t mask, const std::vector<uint64_t> &per) {
  uint64_t out = 0;
  while (mask) {
    out |= per[static_cast<size_t>(std::countr_zero(mask))];
    mask &= mask - 1;
  }
  return out;
}

class Explainer {
 public:
  Explainer(Placer &p, const CopyNetwork &net, const CopyRules &rules)
      : p_(p), g_(p.graph), net_(net), rules_(rules) {
    const size_t n = net.size();
    start_.assign(n + 1, 0);
    for (const auto &[a, b] : net.edges) ++start_[a + 1], ++start_[b + 1];
    for (size_t v = 0; v < n; ++v) start_[v + 1] += start_[v];
    incident_.resize(start_[n]);
    std::vector<int32_t> fill(start_.begin(), start_.end() - 1);
    for (size_t e = 0; e < net.edges.size(); ++e) {
      incident_[fill[net.edges[e].first]++] = static_cast<int32_t>(e);
      incident_[fill[net.edges[e].second]++] = static_cast<int32_t>(e);
    }
    local_.assign(n, -1);
  }

  // The first reader whose part proves the copy forced gives the explanation; with none, the
  // copy is reported as not proven, around the first reader.
  void report(const ForbiddenCopy &c) {
    for (int32_t reader : c.readers) {
      std::vector<int32_t> anchors;
      if (prove(c.value, reader, anchors)) {
        reportProven(c, reader, anchors);
        clearPart();
        return;
      }
    }
    collectPart(c.value, c.readers.front(), kUnlimited);
    std::vector<int32_t> nearby;
    for (int32_t v : part_)
      if (net_.fixed[v]) nearby.push_back(v);
    std::sort(nearby.begin(), nearby.end());
    reportUnproven(c, c.readers.front(), nearby);
    clearPart();
  }

 private:
  static constexpr int32_t kUnlimited = INT32_MAX;

  // 2. and 3. for the copy of `value` to `reader`: whether a ball of the part around the copy
  // (radius 4, 16, 64, ... edges, then all of it; cutting the part is a relaxation, so a ball that
  // proves it proves it for the whole) proves the copy forced, and then the anchors that do, as
  // variables of the network in their order. Near pins explain it best, and a small ball is cheap
  // to shrink.
  bool prove(int32_t value, int32_t reader, std::vector<int32_t> &kept) {
    size_t reached = 0;
    for (int32_t radius = 4;; radius = radius > kUnlimited / 4 ? kUnlimited : radius * 4) {
      const bool whole = collectPart(value, reader, radius);
      if (part_.size() > reached) {
        reached = part_.size();
        std::vector<uint64_t> domain(part_.size());
        for (size_t i = 0; i < part_.size(); ++i) domain[i] = net_.domain[part_[i]];
        if (rules_.masks() && !solvable(domain)) {
          std::vector<int32_t> anchors;
          for (size_t i = 0; i < part_.size(); ++i)
            if (net_.fixed[part_[i]] || net_.domain[part_[i]] != rules_.all())
              anchors.push_back(static_cast<int32_t>(i));
          shrink(domain, anchors);
          kept.clear();
          for (int32_t a : anchors) kept.push_back(part_[a]);
          std::sort(kept.begin(), kept.end());
          return true;
        }
      }
      if (whole) return false;
    }
  }

  void clearPart() {
    for (int32_t v : part_) local_[v] = -1;
    part_.clear();
  }

  // 1. part: variables (local index -> variable), edges between local indices in network order,
  // and each variable's distance from the copy; free variables further than `radius` are kept
  // but not gone through. Returns whether that left nothing out.
  bool collectPart(int32_t value, int32_t reader, int32_t radius) {
    clearPart();
    distance_.clear();
    partEdges_.clear();
    std::vector<int32_t> queue;
    bool whole = true;
    auto add = [&](int32_t v, int32_t d) {
      if (local_[v] >= 0) return;
      local_[v] = static_cast<int32_t>(part_.size());
      part_.push_back(v);
      distance_.push_back(d);
      if (net_.fixed[v]) return;
      if (d < radius)
        queue.push_back(v);
      else
        whole = false;
    };
    add(value, 0);
    add(reader, 0);
    std::vector<int32_t> edges;
    for (size_t head = 0; head < queue.size(); ++head) {
      const int32_t v = queue[head];
      for (int32_t i = start_[v]; i < start_[v + 1]; ++i) {
        const int32_t e = incident_[i];
        const auto &[a, b] = net_.edges[e];
        add(a == v ? b : a, distance_[local_[v]] + 1);
        edges.push_back(e);
      }
    }
    // Both ends fixed: the copy's own edge is the part.
    for (int32_t i = start_[value]; i < start_[value + 1]; ++i)
      if (net_.edges[incident_[i]].second == reader) edges.push_back(incident_[i]);
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    for (int32_t e : edges)
      partEdges_.emplace_back(local_[net_.edges[e].first], local_[net_.edges[e].second]);
    return whole;
  }

  bool solvable(std::vector<uint64_t> domain) const {
    return propagate(rules_, partEdges_, domain);
  }

  // 3. shrink: a deletion filter over the anchors (local indices), kernels first, then the pins
  // farthest from the copy.
  void shrink(std::vector<uint64_t> &domain, std::vector<int32_t> &anchors) {
    const size_t work = anchors.size() * std::max<size_t>(partEdges_.size(), 1);
    if (work > kMaxShrinkWork || work > workLeft_) return;
    workLeft_ -= work;
    std::vector<int32_t> order = anchors;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      const bool ka = !net_.fixed[part_[a]], kb = !net_.fixed[part_[b]];
      if (ka != kb) return ka;
      return distance_[a] > distance_[b];
    });
    for (int32_t a : order) {
      const uint64_t kept = domain[a];
      domain[a] = rules_.all();
      if (solvable(domain)) domain[a] = kept;
    }
    std::erase_if(anchors, [&](int32_t a) { return domain[a] == rules_.all(); });
  }
  bool isFixed(int32_t local) const { return net_.fixed[part_[local]] != 0; }

  // --- 4. report ----------------------------------------------------------------------------
  std::string name(int32_t v) const {
    if (v >= net_.values) return valueRef(g_.value(g_.outputs()[v - net_.values].value).name);
    return valueRef(g_.value(v).name);
  }
  Location loc(int32_t v) const {
    if (v >= net_.values) return g_.outputs()[v - net_.values].loc;
    const Value &val = g_.value(v);
    if (val.kind == ValueKind::Input) return g_.inputOf(v).loc;
    const Node *n = g_.producer(v);
    return n ? n->loc : Location{};
  }
  std::string reader(int32_t v) const {
    if (v >= net_.values) return "output " + name(v);
    return p_.nodeRef(*g_.producer(v));
  }
  std::string devices(uint64_t mask) const {
    std::vector<Label> labels;
    for (; mask; mask &= mask - 1) labels.push_back(static_cast<Label>(std::countr_zero(mask)));
    return p_.devicesText(labels);
  }

  // What pins `v` (an anchor): "input %x is declared @cpu at t.fy:2:9".
  std::string describe(int32_t v) const {
    if (v >= net_.values) {
      const OutputDecl &o = g_.outputs()[v - net_.values];
      return "output " + name(v) + " is pinned @" + o.pin->str() + at(o.loc);
    }
    const Value &val = g_.value(v);
    if (val.kind == ValueKind::Input)
      return "input " + name(v) + " is declared @" + g_.inputOf(v).device.str() + at(loc(v));
    const Node &n = *g_.producer(v);
    if (n.op == OpKind::Transfer)
      return p_.nodeRef(n) + " copies to " + p_.devices[p_.label[v]].str() + at(n.loc);
    if (net_.fixed[v]) {
      const Label pin = p_.pin[n.id];
      std::string s = p_.nodeRef(n) + " is pinned @" + p_.devices[pin].str() + at(n.loc);
      if (p_.label[v] != pin)
        s += ", which has no kernel for it: it runs on " + p_.devices[p_.label[v]].str();
      return s;
    }
    return p_.nodeRef(n) + " has a kernel only on " + devices(net_.domain[v]);
  }

  // How to lift the pin of anchor `v`; `other` is the other anchor when there are two (-1).
  std::string lift(int32_t v, int32_t other) const {
    if (v >= net_.values) {
      const OutputDecl &o = g_.outputs()[v - net_.values];
      return "drop the @" + o.pin->str() + " pin of output " + name(v);
    }
    const Value &val = g_.value(v);
    if (val.kind == ValueKind::Input) {
      const uint64_t d = other >= 0 ? net_.domain[other] : 0;
      return "declare input " + name(v) +
             (std::has_single_bit(d) ? " @" + devices(d) : std::string(" on another device"));
    }
    const Node &n = *g_.producer(v);
    if (n.op == OpKind::Transfer) return "remove the transfer " + name(v);
    if (!net_.fixed[v]) return {};  // a kernel: nothing the model can change
    return "drop the @" + p_.devices[p_.pin[n.id]].str() + " pin of " + p_.nodeRef(n);
  }

  std::string head(const ForbiddenCopy &c) const {
    const Device from = p_.devices[c.from], to = p_.devices[c.to];
    return std::string(directionName(transferDirection(from, to))) + " transfer of " +
           name(c.value) + " from " + from.str() + " to " + to.str();
  }
  std::string allow(const ForbiddenCopy &c) const {
    const std::string key(directionKey(transferDirection(p_.devices[c.from], p_.devices[c.to])));
    return "allow " + key + " transfers (--transfers " + key + "=warn)";
  }
  std::string budget(const ForbiddenCopy &c) const {
    const std::string key(directionKey(transferDirection(p_.devices[c.from], p_.devices[c.to])));
    return "budget " + key + "=error";
  }

  // The free values on a shortest path between anchors a and b through the part: one along the
  // data flow when there is one, else one over edges either way.
  std::vector<int32_t> between(int32_t a, int32_t b) const {
    for (bool forward : {true, false}) {
      std::vector<int32_t> path = between(a, b, forward);
      if (!path.empty() || !forward) return path;
    }
    return {};
  }
  std::vector<int32_t> between(int32_t a, int32_t b, bool forward) const {
    const int32_t from = local_[a], to = local_[b];
    std::vector<int32_t> prev(part_.size(), -1), queue{from};
    prev[from] = from;
    for (size_t head = 0; head < queue.size() && prev[to] < 0; ++head) {
      const int32_t v = queue[head];
      if (v != from && isFixed(v)) continue;  // paths go through free values only
      const int32_t var = part_[v];
      for (int32_t i = start_[var]; i < start_[var + 1]; ++i) {
        const auto &[x, y] = net_.edges[incident_[i]];
        if (forward && x != var) continue;
        const int32_t w = local_[x == var ? y : x];
        if (w >= 0 && prev[w] < 0) prev[w] = v, queue.push_back(w);
      }
    }
    std::vector<int32_t> path;
    if (prev[to] < 0) return path;
    for (int32_t v = prev[to]; v != from; v = prev[v]) path.push_back(part_[v]);
    std::reverse(path.begin(), path.end());
    return path;
  }

  // Whether the path from anchor a through `path` to anchor b, on its own, leaves no placement
  // without a forbidden copy (usually; the proof may need more of the part).
  bool forcedAlong(int32_t a, const std::vector<int32_t> &path, int32_t b) const {
    std::vector<int32_t> chain{a};
    chain.insert(chain.end(), path.begin(), path.end());
    chain.push_back(b);
    std::vector<uint64_t> domain;
    for (int32_t v : chain) domain.push_back(net_.domain[v]);
    std::vector<std::pair<int32_t, int32_t>> edges;
    for (size_t i = 0; i + 1 < chain.size(); ++i)
      for (int32_t k = start_[chain[i]]; k < start_[chain[i] + 1]; ++k) {
        const auto &[x, y] = net_.edges[incident_[k]];
        if (x != chain[i + 1] && y != chain[i + 1]) continue;
        const auto at = static_cast<int32_t>(i);
        edges.emplace_back(x == chain[i] ? at : at + 1, x == chain[i] ? at + 1 : at);
        break;
      }
    return !propagate(rules_, edges, domain);
  }

  void reportProven(const ForbiddenCopy &c, int32_t by, const std::vector<int32_t> &anchors) {
    std::string message = head(c) + " is forced";
    if (anchors.size() <= kMaxInline) {
      message += ": ";
      for (size_t i = 0; i < anchors.size(); ++i)
        message += (i == 0 ? "" : i + 1 == anchors.size() ? " and " : ", ") + describe(anchors[i]);
    } else {
      message += " by " + std::to_string(anchors.size()) + " pins, declarations and kernels";
    }
    Diagnostic &d = p_.ctx.diags.error("budget", loc(by), message + " (" + budget(c) + ")");
    if (anchors.size() > kMaxInline)
      for (int32_t a : anchors) d.note(describe(a), loc(a));
    if (std::find(anchors.begin(), anchors.end(), by) == anchors.end())
      d.note("needed on " + p_.devices[c.to].str() + " by " + reader(by));
    if (anchors.size() == 2) {
      const std::vector<int32_t> path = between(anchors[0], anchors[1]);
      if (!path.empty()) {
        std::string names;
        for (size_t i = 0; i < path.size() && i < kMaxBetween; ++i)
          names += (i ? ", " : "") + name(path[i]);
        if (path.size() > kMaxBetween) names += ", ...";
        if (forcedAlong(anchors[0], path, anchors[1]))
          d.note("in between, " + names + ": wherever " +
                 (path.size() == 1 ? "it is" : "they are") +
                 " placed, some copy on the way is in a direction the budgets forbid");
        else
          d.note("they meet through " + names);
      }
    }
    std::string fix;
    for (int32_t a : anchors) {
      const std::string f = lift(a, anchors.size() == 2 ? anchors[a == anchors[0] ? 1 : 0] : -1);
      if (!f.empty()) fix += f + ", or ";
    }
    d.fix(fix + allow(c));
  }

  void reportUnproven(const ForbiddenCopy &c, int32_t by, const std::vector<int32_t> &anchors) {
    Diagnostic &d = p_.ctx.diags.error("budget", loc(by),
                                       head(c) + " (" + budget(c) +
                                           "): auto placement found no plan without it");
    d.note("needed on " + p_.devices[c.to].str() + " by " + reader(by));
    for (size_t i = 0; i < anchors.size() && i < kMaxNearby; ++i)
      d.note("nearby, " + describe(anchors[i]), loc(anchors[i]));
    d.note("with more than two devices auto placement's search is a heuristic; no proof was found "
           "that every plan needs such a copy");
    d.fix("pin the values around it so that none crosses that way, or " + allow(c));
  }

  Placer &p_;
  const Graph &g_;
  const CopyNetwork &net_;
  const CopyRules &rules_;
  std::vector<int32_t> start_, incident_;  // per variable: its edges
  std::vector<int32_t> local_;             // per variable: its index in the part, or -1
  std::vector<int32_t> part_, distance_;
  std::vector<std::pair<int32_t, int32_t>> partEdges_;
  size_t workLeft_ = kMaxExplainWork;
};

}  // namespace

CopyRules::CopyRules(const Placer &p) : k_(p.available) {
  const Budgets &b = p.options.budgets;
  forbidden_.assign(k_ * k_, 0);
  for (size_t from = 0; from < k_; ++from)
    for (size_t to = 0; to < k_; ++to)
      if (from != to &&
          b.action(transferDirection(p.devices[from], p.devices[to])) == BudgetAction::Error)
        forbidden_[from * k_ + to] = 1, any_ = true;
  if (!masks()) return;
  all_ = k_ == 64 ? ~uint64_t{0} : (uint64_t{1} << k_) - 1;
  to_.assign(k_, 0);
  from_.assign(k_, 0);
  for (size_t from = 0; from < k_; ++from)
    for (size_t to = 0; to < k_; ++to)
      if (!forbidden_[from * k_ + to]) {
        to_[from] |= uint64_t{1} << to;
        from_[to] |= uint64_t{1} << from;
      }
}

uint64_t CopyRules::readableFrom(uint64_t on) const { return unionOver(on, to_); }
uint64_t CopyRules::feeding(uint64_t readers) const { return unionOver(readers, from_); }

bool propagate(const CopyRules &rules, std::span<const std::pair<int32_t, int32_t>> edges,
               std::vector<uint64_t> &domain) {
  for (const auto &[a, b] : edges)
    if (domain[a] == 0 || domain[b] == 0) return false;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto &[a, b] : edges) {
      const uint64_t d = domain[b] & rules.readableFrom(domain[a]);
      if (d == domain[b]) continue;
      domain[b] = d;
      if (d == 0) return false;
      changed = true;
    }
    for (auto e = edges.rbegin(); e != edges.rend(); ++e) {
      const auto &[a, b] = *e;
      const uint64_t d = domain[a] & rules.feeding(domain[b]);
      if (d == domain[a]) continue;
      domain[a] = d;
      if (d == 0) return false;
      changed = true;
    }
  }
  return true;
}

void reportForcedCopies(Placer &p, const CopyNetwork &net, const CopyRules &rules,
                        std::span<const ForbiddenCopy> copies) {
  if (net.size() == 0) {  // more devices than the masks hold: the copies alone
    for (const ForbiddenCopy &c : copies) {
      const Device from = p.devices[c.from], to = p.devices[c.to];
      const std::string key(directionKey(transferDirection(from, to)));
      p.ctx.diags
          .error("budget", {},
                 std::string(directionName(transferDirection(from, to))) + " transfer of %" +
                     p.graph.value(c.value).name + " from " + from.str() + " to " + to.str() +
                     " (budget " + key + "=error): auto placement found no plan without it")
          .fix("allow " + key + " transfers (--transfers " + key + "=warn)");
    }
    return;
  }
  Explainer explainer(p, net, rules);
  for (const ForbiddenCopy &c : copies) explainer.report(c);
}

}  // namespace ferry::placement
