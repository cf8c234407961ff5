// tools/ferry-compile/explain.cpp — ferry-compile --explain.
#include "tools/ferry-compile/explain.h"

#include "passes/compile.h"
#include "passes/explain.h"

namespace ferry {

namespace {

std::string dtypeWhy(const Graph &g, ValueId v) {
  const Reason &r = g.dtypeReason(v);
  const std::string at = r.loc.known() ? " at " + r.loc.str() : "";
  switch (r.kind) {
    case Reason::Kind::None: return "as written or inferred from its operands";
    case Reason::Kind::Pinned: return "pinned" + at;
    case Reason::Kind::Inserted:
      return (r.detail.empty() ? std::string("inserted") : r.detail.str()) +
             (r.from >= 0 ? " for %" + g.value(r.from).name : "") + at;
    default: return r.detail.empty() ? std::string("its op's dtype rule") : r.detail.str();
  }
}

// One alternative to try: its flags as a user would write them, and how it changes the options.
struct Alternative {
  std::string flags;
  void (*apply)(CompileOptions &);
};

const Alternative kAlternatives[] = {
    {"--placement auto", [](CompileOptions &o) { o.placement = PlacementPolicy::Auto; }},
    {"--dtype promote", [](CompileOptions &o) { o.dtype.kind = DTypePolicy::Kind::Promote; }},
    {"without --no-fallback", [](CompileOptions &o) { o.fallback = true; }},
};

bool changes(const Alternative &a, const CompileOptions &o) {
  CompileOptions changed = o;
  a.apply(changed);
  return changed.placement != o.placement || changed.dtype.kind != o.dtype.kind ||
         changed.fallback != o.fallback;
}

std::string cost(const CompileStats &s) {
  return std::to_string(s.transfers) + (s.transfers == 1 ? " transfer" : " transfers") + " (" +
         std::to_string(s.transferBytes) + " bytes per run), " + std::to_string(s.casts) +
         (s.casts == 1 ? " cast" : " casts");
}

}  // namespace

Expected<std::string> explainValues(const Graph &g, const std::vector<std::string> &names) {
  std::string out;
  for (std::string name : names) {
    if (name.starts_with("%")) name.erase(0, 1);
    std::optional<ValueId> v = g.findValue(name);
    if (!v) {
      std::string known;
      size_t listed = 0;
      for (size_t i = 0; i < g.valueCount() && listed < 12; ++i, ++listed)
        known += (known.empty() ? "%" : ", %") + g.value(static_cast<ValueId>(i)).name;
      if (g.valueCount() > 12) known += ", ...";
      return makeError("usage", "--explain: no value %" + name + " in '" + g.name() +
                                    "' (its values: " + known + ")");
    }
    const Value &val = g.value(*v);
    out += "%" + val.name + " : " + val.type.str() +
           (val.device ? " @" + val.device->str() : std::string(" (not placed)")) + "\n";
    out += "  device: " + explainDevice(g, *v) + "\n";
    out += "  dtype:  " + dtypeWhy(g, *v) + "\n";
    out += "  defined at " + definitionSite(g, *v) + "\n";
  }
  return out;
}

std::string suggestOptions(const Graph &model, const CompileOptions &options) {
  auto tryWith = [&](std::initializer_list<const Alternative *> alts) -> std::string {
    CompileOptions o = options;
    std::string flags;
    for (const Alternative *a : alts) {
      if (!changes(*a, options)) return "";
      a->apply(o);
      flags += (flags.empty() ? "" : " and ") + a->flags;
    }
    o.stopAfter.clear();
    CompileResult r = compile(model, o);
    return r.ok() ? "  compiles with " + flags + ": " + cost(r.stats) + "\n" : "";
  };
  std::string out;
  for (const Alternative &a : kAlternatives) out += tryWith({&a});
  if (out.empty())
    for (size_t i = 0; i < std::size(kAlternatives); ++i)
      for (size_t j = i + 1; j < std::size(kAlternatives); ++j)
        out += tryWith({&kAlternatives[i], &kAlternatives[j]});
  if (out.empty())
    return "explain: no change of policy (--placement auto, --dtype promote, fallback) compiles "
           "it; the fixes above say what to change in the model\n";
  return "explain: the model as written is rejected under these options, but it\n" + out;
}

}  // namespace ferry
