// tests/tools/manifest_test.cpp — the placement manifest (ferry-compile --emit json, version 3):
// the examples in docs/manifest.md are what emitManifest writes today, every manifest follows the
// schema tables of docs/manifest.md, and the goldens in tests/tools/golden/ match byte for byte.
//
// Each example in docs/manifest.md is a ```sh block holding one ferry-compile command line (run
// from the repository root), directly followed by a ```json block with its output. The tests
// compile the same model with the same options as the tool does (the backends' capability table
// merged in) and call emitManifest, so they need no wiring of main.cpp; ToolWritesTheGoldens
// checks the binary itself.
//
// Regenerating after an intended change of the manifest:
//   FERRY_UPDATE_GOLDEN=1 build/tests/tools_tests --gtest_filter='Manifest*'
// rewrites tests/tools/golden/*.json and the ```json blocks of docs/manifest.md (from
// the command above each); then review the diff, and update the schema tables by hand when a field
// was added (MatchesTheDocumentedSchema fails until every field is documented).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/scratch.h"
#include "ir/parser.h"
#include "json_test_util.h"
#include "passes/compile.h"
#include "passes/lower.h"
#include "runtime/executable.h"
#include "tool_test_util.h"
#include "tools/ferry-compile/device_totals.h"
#include "tools/ferry-compile/json.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using tooltest::contains;
using tooltest::Json;
using tooltest::parseJson;
using tooltest::readFile;

const fs::path kSource = FERRY_SOURCE_DIR;
const fs::path kDoc = kSource / "docs" / "manifest.md";
const fs::path kGoldens = kSource / "tests" / "tools" / "golden";

bool updating() {
  const char *v = std::getenv("FERRY_UPDATE_GOLDEN");
  return v && std::string_view(v) == "1";
}

void writeFile(const fs::path &p, const std::string &text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.flush()) << "cannot write " << p;
}

// --- The examples of docs/manifest.md
// -------------------------------------------------------------

/// A ferry-compile command line of the doc, as the options it stands for.
struct Invocation {
  std::string command;  ///< as written
  std::string model;    ///< relative to the repository root, as locations quote it
  CompileOptions options;
  bool locations = true;
};

// Parses "build/bin/ferry-compile --emit json [flags] MODEL.fy" the way ferry-compile's flags
// (tools/common/compile_flags.cpp) turn into CompileOptions.
Invocation parseCommand(const std::string &command) {
  Invocation inv;
  inv.command = command;
  std::istringstream in(command);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  EXPECT_FALSE(words.empty());
  if (words.empty()) return inv;
  EXPECT_TRUE(words[0].ends_with("ferry-compile")) << command;
  std::string target, emit;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string &w = words[i];
    auto next = [&]() -> std::string {
      EXPECT_LT(i + 1, words.size()) << w << " needs a value: " << command;
      return i + 1 < words.size() ? words[++i] : "";
    };
    if (w == "--emit") {
      emit = next();
    } else if (w == "--devices") {
      Expected<std::vector<Device>> d = parseDeviceList(next());
      EXPECT_TRUE(d.ok()) << command;
      if (d.ok()) inv.options.devices = *d;
    } else if (w == "--target") {
      target = next();
    } else if (w == "--placement") {
      Expected<PlacementPolicy> p = parsePlacementPolicy(next());
      EXPECT_TRUE(p.ok()) << command;
      if (p.ok()) inv.options.placement = *p;
    } else if (w == "--dtype") {
      Expected<DTypePolicy> p = parseDTypePolicy(next());
      EXPECT_TRUE(p.ok()) << command;
      if (p.ok()) inv.options.dtype = *p;
    } else if (w == "--transfers") {  // DIRECTION=ACTION, one
      const std::string budget = next();
      const size_t eq = budget.find('=');
      Expected<BudgetAction> action = parseBudgetAction(budget.substr(eq + 1));
      EXPECT_TRUE(eq != std::string::npos && action.ok()) << command;
      const std::string dir = budget.substr(0, eq);
      Budgets &b = inv.options.budgets;
      BudgetAction &slot = dir == "h2d"   ? b.h2d
                           : dir == "d2h" ? b.d2h
                           : dir == "d2d" ? b.d2d
                                          : b.h2h;
      if (action.ok()) slot = *action;
    } else if (w == "--stop-after") {
      inv.options.stopAfter = next();
    } else if (w == "--no-fallback") {
      inv.options.fallback = false;
    } else if (w == "--no-locations") {
      inv.locations = false;
    } else if (!w.starts_with("-") && w.ends_with(".fy") && inv.model.empty()) {
      inv.model = w;
    } else {
      ADD_FAILURE() << "the test does not know '" << w << "' in: " << command;
    }
  }
  EXPECT_EQ(emit, "json") << command;
  EXPECT_FALSE(inv.model.empty()) << command;
  inv.options.target = inv.options.devices.front();
  if (!target.empty()) {
    Expected<Device> d = parseDevice(target);
    EXPECT_TRUE(d.ok()) << command;
    if (d.ok()) inv.options.target = *d;
  }
  return inv;
}

/// The commands below that compile a model the options reject: two devices under strict placement
/// for the model whose first layer is pinned to the second.
bool rejected(const std::string &command) {
  return contains(command, "--devices cpu,cpu:1 examples/mlp_split.fy") &&
         !contains(command, "--placement auto");
}

/// The compile `ferry-compile` makes for `inv`, run from the repository root: the model parsed
/// under its relative path, the backends' capabilities merged into `options` as main.cpp merges
/// them. nullopt (and a failure) when the model does not parse.
std::optional<CompileResult> compileFor(const Invocation &inv, CompileOptions &options) {
  const fs::path path = kSource / inv.model;
  Expected<Graph> graph =
      parseGraph(readFile(path), inv.model, ParseOptions{.baseDir = path.parent_path().string()});
  EXPECT_TRUE(graph.ok()) << inv.command << ": " << graph.status().message();
  if (!graph.ok()) return std::nullopt;
  options = inv.options;
  Capabilities table = backendCapabilities();
  table.merge(options.capabilities);
  options.capabilities = std::move(table);
  CompileResult result = compile(std::move(graph).value(), options);
  EXPECT_EQ(result.ok(), !rejected(inv.command)) << inv.command;
  return result;
}

/// What `ferry-compile --emit json` writes for `inv`.
std::string manifestFor(const Invocation &inv) {
  CompileOptions options;
  const std::optional<CompileResult> result = compileFor(inv, options);
  if (!result) return "";
  return emitManifest(*result, options, EmitOptions{.locations = inv.locations});
}

/// One example of the doc: its command and the offsets of its JSON text in the doc.
struct DocExample {
  Invocation invocation;
  size_t begin = 0, end = 0;  ///< the JSON text (without the fences)
};

std::vector<DocExample> docExamples(const std::string &doc) {
  std::vector<DocExample> out;
  std::string previousSh;  // the content of the fenced block just before, if it was ```sh
  // Fences open and close at the start of a line.
  for (size_t i = doc.starts_with("```") ? 0 : doc.find("\n```"); i != std::string::npos;
       i = doc.find("\n```", i)) {
    if (doc[i] == '\n') ++i;
    const size_t infoEnd = doc.find('\n', i);
    if (infoEnd == std::string::npos) break;
    const std::string info = doc.substr(i + 3, infoEnd - i - 3);
    const size_t close = doc.find("\n```", infoEnd);
    if (close == std::string::npos) break;
    const size_t begin = infoEnd + 1, end = close + 1;  // the block's text, last newline included
    if (info == "json") {
      EXPECT_NE(previousSh, "") << "a ```json block without a ```sh command before it at offset "
                                << i;
      if (!previousSh.empty()) out.push_back({parseCommand(previousSh), begin, end});
    }
    const size_t between = doc.find_first_not_of(" \n", close + 4);
    previousSh = info == "sh" && between != std::string::npos && doc.compare(between, 3, "```") == 0
                     ? doc.substr(begin, end - begin)
                     : "";
    while (!previousSh.empty() && previousSh.back() == '\n') previousSh.pop_back();
    i = close + 4;
  }
  return out;
}

// The goldens of the doc's examples, one file each.
const std::vector<std::pair<std::string, std::string>> kGoldenCommands = {
    {"mlp.json", "build/bin/ferry-compile --emit json examples/mlp.fy"},
    {"mlp_split.json", "build/bin/ferry-compile --emit json --devices cpu,cpu:1 --placement auto "
                       "--dtype autocast=f16 examples/mlp_split.fy"},
};

// More goldens, not shown in the doc: the cnn, the split perceptron without autocast, and its
// rejection under strict placement (a manifest with outcome "rejected"), and a bias copied to
// another device once, at load (`at_load`, `statistics.load_*`).
const std::vector<std::pair<std::string, std::string>> kMoreGoldens = {
    {"cnn.json", "build/bin/ferry-compile --emit json examples/cnn.fy"},
    {"mlp_split_auto.json",
     "build/bin/ferry-compile --emit json --devices cpu,cpu:1 --placement auto "
     "examples/mlp_split.fy"},
    {"mlp_split_rejected.json",
     "build/bin/ferry-compile --emit json --devices cpu,cpu:1 examples/mlp_split.fy"},
    {"bias_elsewhere.json", "build/bin/ferry-compile --emit json --devices cpu,cpu:1 --placement "
                            "auto examples/bias_elsewhere.fy"},
};

std::vector<std::pair<std::string, std::string>> allGoldens() {
  std::vector<std::pair<std::string, std::string>> all = kGoldenCommands;
  all.insert(all.end(), kMoreGoldens.begin(), kMoreGoldens.end());
  return all;
}

// More compiles whose manifests must follow the schema: every example model under several
// policies, without locations, stopped early, on a (virtual) GPU, with a budget warning.
std::vector<std::string> schemaCommands() {
  std::vector<std::string> out;
  for (const auto &[golden, command] : allGoldens()) out.push_back(command);
  const std::string tool = "build/bin/ferry-compile --emit json ";
  // Each model with the flags it needs where a set of flags below gives no --devices.
  const std::vector<std::pair<std::string, std::string>> models = {
      {"examples/mlp.fy", ""},
      {"examples/cnn.fy", ""},
      {"examples/ops.fy", "--devices cpu,cpu:1 "},
      {"examples/mlp_split.fy", "--devices cpu,cpu:1 --placement auto "},
      {"examples/bias_elsewhere.fy", "--devices cpu,cpu:1 --placement auto "}};
  for (const auto &[model, needs] : models)
    for (const std::string flags :
         {"", "--dtype promote ", "--dtype autocast=f16 ", "--dtype autocast=bf16 --no-locations ",
          "--devices cpu,cpu:1 --target cpu:1 --placement auto ",
          "--devices cpu,cpu:1 --placement auto --dtype autocast=f16 --stop-after placement "})
      out.push_back(tool + flags + (contains(flags, "--devices") ? "" : needs) + model);
  out.push_back(tool + "--devices cpu,cuda:0 --target cuda:0 --placement auto examples/cnn.fy");
  out.push_back(tool + "--devices cpu,cpu:1 --placement auto --transfers h2h=warn "
                       "examples/mlp_split.fy");
  return out;
}

// --- The schema tables of docs/manifest.md ------------------------------------------------------

struct Field {
  std::string name, type;
  bool nullable = false;  ///< "yes" in the null column
  bool optional = false;  ///< "omitted": present only when its meaning says, never null
};

/// Per object (a `### \`name\`` heading followed by a table): its fields in order.
using Schema = std::map<std::string, std::vector<Field>>;

std::vector<std::string> cells(const std::string &row) {
  std::vector<std::string> out;
  std::string cell;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '|' && row[i - 1] != '\\') {
      while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      out.push_back(cell.substr(cell.find_first_not_of(' ') == std::string::npos
                                    ? cell.size()
                                    : cell.find_first_not_of(' ')));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return out;
}

std::string unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '`' && s.back() == '`') s = s.substr(1, s.size() - 2);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

/// The object tables, and the values each `### \`name\` values` table lists (first column).
struct DocSchema {
  Schema objects;
  std::map<std::string, std::set<std::string>> enums;
  std::set<std::string> stabilities;  ///< the words the "stable" columns use
};

DocSchema docSchema(const std::string &doc) {
  DocSchema out;
  std::istringstream in(doc);
  std::string heading;  // the current `### \`name\`` heading's name, "" elsewhere
  bool header = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#")) {
      heading.clear();
      header = false;
      if (line.starts_with("### `")) heading = line.substr(5, line.find('`', 5) - 5);
      if (line.starts_with("### `") && line.ends_with("` values")) heading += " values";
      continue;
    }
    if (heading.empty() || !line.starts_with("|")) continue;
    std::vector<std::string> c = cells(line);
    if (!header) {  // the header row, then the |---| row
      header = true;
      if (!heading.ends_with(" values")) {
        EXPECT_EQ(c, (std::vector<std::string>{"field", "type", "null", "stable", "meaning"}))
            << "the table of `" << heading << "`";
      }
      continue;
    }
    if (line.starts_with("|---")) continue;
    if (heading.ends_with(" values")) {
      out.enums[heading.substr(0, heading.size() - 7)].insert(unquote(c.at(0)));
      continue;
    }
    EXPECT_EQ(c.size(), 5u) << line;
    if (c.size() != 5) continue;
    EXPECT_TRUE(c[2] == "yes" || c[2] == "no" || c[2] == "omitted") << line;
    out.objects[heading].push_back(
        {unquote(c[0]), unquote(c[1]), c[2] == "yes", c[2] == "omitted"});
    out.stabilities.insert(c[3]);
  }
  return out;
}

/// Checks `v` against the documented `type`: string, integer, number, boolean, `array of T`,
/// `map of T` (an object with any keys), `object` (any object), or the name of a documented
/// object. `where` names the place for messages ("nodes[2].device").
void checkType(const DocSchema &schema, const Json &v, const std::string &type,
               const std::string &where);

void checkObject(const DocSchema &schema, const Json &v, const std::string &object,
                 const std::string &where) {
  auto it = schema.objects.find(object);
  ASSERT_NE(it, schema.objects.end()) << "no table documents `" << object << "` (" << where << ")";
  ASSERT_EQ(v.kind, Json::Kind::Object) << where << " is not an object";
  const std::vector<Field> &fields = it->second;
  // Every documented field is present (an "omitted" one may be left out), with its type, in the
  // documented order; nothing else is.
  std::vector<std::string> documented, present;
  for (const Field &f : fields)
    if (!f.optional || v.find(f.name)) documented.push_back(f.name);
  for (const auto &[key, value] : v.members) present.push_back(key);
  EXPECT_EQ(present, documented) << where << ": fields differ from the table of `" << object << "`";
  for (const Field &f : fields) {
    const Json *value = v.find(f.name);
    if (!value) continue;
    const std::string at = where + "." + f.name;
    if (value->isNull()) {
      EXPECT_TRUE(f.nullable) << at << " is null, which the table of `" << object
                              << "` does not allow";
      continue;
    }
    checkType(schema, *value, f.type, at);
    auto values = schema.enums.find(object + "." + f.name);
    if (values != schema.enums.end()) {
      EXPECT_TRUE(values->second.contains(value->text))
          << at << " is \"" << value->text << "\", not one of the documented values";
    }
  }
}

void checkType(const DocSchema &schema, const Json &v, const std::string &type,
               const std::string &where) {
  using K = Json::Kind;
  if (type == "string") {
    EXPECT_EQ(v.kind, K::String) << where;
  } else if (type == "integer") {
    EXPECT_EQ(v.kind, K::Integer) << where;
  } else if (type == "number") {
    EXPECT_TRUE(v.kind == K::Integer || v.kind == K::Number) << where;
  } else if (type == "boolean") {
    EXPECT_EQ(v.kind, K::Bool) << where;
  } else if (type == "object") {
    EXPECT_EQ(v.kind, K::Object) << where;
  } else if (type.starts_with("array of ")) {
    ASSERT_EQ(v.kind, K::Array) << where;
    for (size_t i = 0; i < v.items.size(); ++i)
      checkType(schema, v.items[i], type.substr(9), where + "[" + std::to_string(i) + "]");
  } else if (type.starts_with("map of ")) {
    ASSERT_EQ(v.kind, K::Object) << where;
    for (const auto &[key, value] : v.members)
      checkType(schema, value, type.substr(7), where + "." + key);
  } else {
    checkObject(schema, v, type, where);
  }
}

// --- Consistency of a manifest with itself
// --------------------------------------------------------

int64_t elementBytes(const Json &type) {
  static const std::map<std::string, int64_t> size = {{"bool", 1}, {"u8", 1},  {"i8", 1},
                                                      {"i32", 4},  {"i64", 8}, {"f16", 2},
                                                      {"bf16", 2}, {"f32", 4}, {"f64", 8}};
  int64_t n = size.at(type["dtype"].text);
  for (const Json &d : type["shape"].items) n *= d.integer();
  return n;
}

// Every transfer and cast node is in its list with its bytes and devices; the lists add up to the
// statistics.
void checkLists(const Json &m, const std::string &command) {
  SCOPED_TRACE(command);
  std::map<int64_t, const Json *> transfers, casts;
  for (const Json &t : m["transfers"].items) transfers[t["node"].integer()] = &t;
  for (const Json &c : m["casts"].items) casts[c["node"].integer()] = &c;
  std::map<std::string, const Json *> values;  // every value by name: inputs, params, results
  for (const char *part : {"inputs", "params"})
    for (const Json &v : m[part].items) values[v["name"].text] = &v;
  size_t transferNodes = 0, castNodes = 0;
  std::map<std::string, int64_t> perDevice;
  for (const Json &n : m["nodes"].items) {
    values[n["result"].text] = &n;
    if (!n["device"].isNull()) ++perDevice[n["device"].text];
    const std::string op = n["op"].text;
    if (op != "transfer" && op != "cast") continue;
    auto &list = op == "transfer" ? transfers : casts;
    ++(op == "transfer" ? transferNodes : castNodes);
    auto it = list.find(n["id"].integer());
    ASSERT_NE(it, list.end()) << op << " node " << n["id"].integer() << " is not in the " << op
                              << " list";
    const Json &e = *it->second;
    EXPECT_EQ(e["value"].text, n["result"].text);
    EXPECT_EQ(e["operand"].text, n["operands"].items.at(0).text);
    EXPECT_EQ(e["inserted"].boolean, n["inserted"].boolean);
    EXPECT_EQ(e["bytes"].integer(), elementBytes(n["type"])) << n["result"].text;
    if (elementBytes(n["type"]) > 0) {
      EXPECT_GT(e["bytes"].integer(), 0) << n["result"].text;
    }
    if (op == "transfer") {
      EXPECT_EQ(e["to"].text, n["device"].text);
      EXPECT_EQ(e["reason"]["text"].text, n["device_reason"]["text"].text);
    } else {
      EXPECT_EQ(e["to"].text, n["type"]["dtype"].text);
      EXPECT_EQ(e["device"].text, n["device"].text);
      EXPECT_EQ(e["reason"]["text"].text, n["dtype_reason"]["text"].text);
    }
  }
  // A transfer or cast of a weight runs at load, as its node says.
  for (const Json &n : m["nodes"].items) {
    const std::string op = n["op"].text;
    if (op != "transfer" && op != "cast") continue;
    const auto &list = op == "transfer" ? transfers : casts;
    if (auto it = list.find(n["id"].integer()); it != list.end()) {
      EXPECT_EQ((*it->second)["at_load"].boolean, n["at_load"].boolean) << n["result"].text;
    }
  }
  EXPECT_EQ(transferNodes, transfers.size()) << "a transfer listed that is no transfer node";
  EXPECT_EQ(castNodes, casts.size()) << "a cast listed that is no cast node";
  // Operands and reasons name values of the manifest (a reason may name a value the compile
  // replaced, e.g. the param a folded cast read: those are not checked).
  for (const Json &n : m["nodes"].items)
    for (const Json &o : n["operands"].items)
      EXPECT_TRUE(values.contains(o.text)) << "%" << o.text << " is read but not listed";
  // A reason names a value of the manifest or none.
  auto checkReason = [&](const Json &why, const std::string &of) {
    if (!why["from_value"].isNull()) {
      EXPECT_TRUE(values.contains(why["from_value"].text))
          << of << ": from_value %" << why["from_value"].text << " is not listed";
    }
  };
  for (const auto &[name, v] : values)
    for (const char *why : {"device_reason", "dtype_reason"}) checkReason((*v)[why], name);
  for (const char *part : {"transfers", "casts"})
    for (const Json &e : m[part].items) checkReason(e["reason"], e["value"].text);
  for (const Json &p : m["params"].items) {
    const Json &fold = p["folded_from"];
    if (!fold.isNull() && !fold["param"].isNull()) {
      EXPECT_TRUE(values.contains(fold["param"].text)) << p["name"].text;
    }
  }
  for (const Json &t : m["transfers"].items) {
    const Json *operand = values[t["operand"].text];
    ASSERT_NE(operand, nullptr);
    EXPECT_EQ(t["from"].text, (*operand)["device"].text) << t["value"].text;
  }
  const Json &st = m["statistics"];
  EXPECT_EQ(st.isNull(), m["outcome"].text == "rejected");
  if (m["last_pass"].text != "budget" || st.isNull()) return;  // they describe the final graph
  // Per run: the transfers not at load, by direction too; at load: the others, counted apart.
  int64_t bytes = 0, runTransfers = 0, loadBytes = 0, loadTransfers = 0, loadCasts = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> byDirection;
  for (const Json &t : m["transfers"].items) {
    if (t["at_load"].boolean) {
      ++loadTransfers, loadBytes += t["bytes"].integer();
      continue;
    }
    ++runTransfers, bytes += t["bytes"].integer();
    auto &[count, sum] = byDirection[t["direction"].text];
    ++count, sum += t["bytes"].integer();
  }
  for (const Json &c : m["casts"].items) loadCasts += c["at_load"].boolean;
  EXPECT_EQ(st["transfers"].integer(), runTransfers);
  EXPECT_EQ(st["transfer_bytes"].integer(), bytes);
  EXPECT_EQ(st["load_transfers"].integer(), loadTransfers);
  EXPECT_EQ(st["load_transfer_bytes"].integer(), loadBytes);
  for (const auto &[direction, totals] : st["directions"].members) {
    EXPECT_EQ(totals["transfers"].integer(), byDirection[direction].first) << direction;
    EXPECT_EQ(totals["bytes"].integer(), byDirection[direction].second) << direction;
  }
  EXPECT_EQ(st["casts"].integer(), static_cast<int64_t>(casts.size()));
  EXPECT_EQ(st["load_casts"].integer(), loadCasts);
  std::map<std::string, int64_t> statPerDevice;
  for (const auto &[device, n] : st["nodes_per_device"].members)
    statPerDevice[device] = n.integer();
  EXPECT_EQ(statPerDevice, perDevice);
  // statistics.devices counts the same nodes, less the transfers (each on its destination) and
  // the nodes that run at load: the devices that compute per run, each with its count, and those
  // that only hold weights or workspaces, with none.
  std::map<std::string, int64_t> computing = perDevice;
  for (const Json &n : m["nodes"].items)
    if (n["op"].text == "transfer" || n["at_load"].boolean) --computing[n["device"].text];
  std::erase_if(computing, [](const auto &entry) { return entry.second == 0; });
  const Json *devices = st.find("devices");
  ASSERT_NE(devices, nullptr) << "statistics.devices is missing";
  ASSERT_FALSE(devices->members.empty()) << "statistics.devices is empty";
  std::map<std::string, int64_t> listed;
  for (const auto &[device, totals] : devices->members)
    if (const int64_t nodes = totals["nodes"].integer(); nodes != 0) listed[device] = nodes;
  EXPECT_EQ(listed, computing);
}

// --- The tests
// ------------------------------------------------------------------------------------

TEST(Manifest, DocExamplesAreWhatTheToolWrites) {
  std::string doc = readFile(kDoc);
  ASSERT_FALSE(doc.empty()) << kDoc << " is missing";
  std::vector<DocExample> examples = docExamples(doc);
  ASSERT_GE(examples.size(), 2u) << "docs/manifest.md shows at least two examples";
  bool transferAndCast = false;
  // Back to front, so that rewriting a block keeps the offsets of the ones before it.
  for (size_t i = examples.size(); i-- > 0;) {
    const DocExample &e = examples[i];
    const std::string manifest = manifestFor(e.invocation);
    const Json m = parseJson(manifest);
    transferAndCast |= !m["transfers"].items.empty() && !m["casts"].items.empty();
    if (updating())
      doc.replace(e.begin, e.end - e.begin, manifest);
    else
      EXPECT_EQ(doc.substr(e.begin, e.end - e.begin), manifest)
          << "docs/manifest.md's example for `" << e.invocation.command
          << "` is not what the tool writes (FERRY_UPDATE_GOLDEN=1 rewrites it)";
  }
  EXPECT_TRUE(transferAndCast) << "an example shows an inserted transfer and cast";
  // The goldens are the doc's examples.
  for (const auto &[golden, command] : kGoldenCommands)
    EXPECT_TRUE(std::any_of(examples.begin(), examples.end(),
                            [&](const DocExample &e) { return e.invocation.command == command; }))
        << "docs/manifest.md shows no example for `" << command << "` (tests/tools/golden/"
        << golden << ")";
  if (updating()) writeFile(kDoc, doc);
}

TEST(Manifest, GoldensMatch) {
  for (const auto &[golden, command] : allGoldens()) {
    const std::string manifest = manifestFor(parseCommand(command));
    if (updating()) {
      fs::create_directories(kGoldens);
      writeFile(kGoldens / golden, manifest);
      continue;
    }
    EXPECT_EQ(readFile(kGoldens / golden), manifest)
        << "tests/tools/golden/" << golden << " is not what `" << command
        << "` writes (FERRY_UPDATE_GOLDEN=1 rewrites it)";
  }
}

// The goldens hold nothing that depends on the machine or the run.
TEST(Manifest, GoldensHoldNoPathsPointersOrTimings) {
  for (const auto &[golden, command] : allGoldens()) {
    const std::string text = readFile(kGoldens / golden);
    ASSERT_FALSE(text.empty()) << golden;
    EXPECT_FALSE(contains(text, kSource.string())) << golden;
    EXPECT_FALSE(contains(text, "\"/")) << golden << ": an absolute path";
    EXPECT_FALSE(contains(text, "0x")) << golden << ": a pointer";
    EXPECT_FALSE(contains(text, "pass_seconds") || contains(text, "timings")) << golden;
    // The model is named as the command names it.
    EXPECT_TRUE(contains(text, "\"location\": \"" + parseCommand(command).model + ":")) << golden;
  }
}

// The binary writes the goldens too, run from the repository root; a rejected compile with exit
// status 1, its errors on stderr too.
TEST(Manifest, ToolWritesTheGoldens) {
  const testutil::ScratchDir scratch("manifest_test");
  for (const auto &[golden, command] : allGoldens()) {
    const std::string args = command.substr(command.find(' ') + 1);
    const tooltest::Result r =
        tooltest::runCommand(scratch.path(), FERRY_COMPILE, args, {.workDir = kSource});
    EXPECT_EQ(r.exit, rejected(command) ? 1 : 0) << command << "\n" << r.err;
    EXPECT_EQ(r.out, readFile(kGoldens / golden)) << command;
  }
}

// A rejected compile's manifest: outcome "rejected", the graph as the last pass that judged it
// left it (dtype, which runs after placement's errors: every node with its device and reason), no
// statistics, the errors in diagnostics, each note with the location it talks about.
TEST(Manifest, ARejectedCompileHasItsGraphAndNoStatistics) {
  const std::string command = kMoreGoldens[2].second;
  ASSERT_TRUE(rejected(command));
  const Json m = parseJson(manifestFor(parseCommand(command)));
  EXPECT_EQ(m["outcome"].text, "rejected");
  EXPECT_EQ(m["last_pass"].text, "dtype");
  EXPECT_TRUE(m["statistics"].isNull());
  ASSERT_EQ(m["nodes"].items.size(), 4u);
  for (const Json &n : m["nodes"].items) {
    EXPECT_EQ(n["device"].text, "cpu:1") << n["result"].text;
    EXPECT_NE(n["device_reason"]["kind"].text, "none") << n["result"].text;
  }
  ASSERT_EQ(m["diagnostics"].items.size(), 1u);
  EXPECT_EQ(m["diagnostics"].items[0]["severity"].text, "error");
  EXPECT_EQ(m["diagnostics"].items[0]["code"].text, "device");
  for (const Json &note : m["diagnostics"].items[0]["notes"].items)
    EXPECT_NE(note["line"].text, "0") << note["message"].text;
  EXPECT_TRUE(m["transfers"].items.empty());
}

// A bias left on cpu, read by a layer on cpu:1: its copy is made once, at load. The manifest lists
// it with `at_load`, counts it in `load_transfers`, not in the per-run transfers or directions,
// and holds the copy (not the original, released after loading) in cpu:1's weights.
TEST(Manifest, AWeightCopiedAtLoadIsCountedApart) {
  const std::string command = kMoreGoldens[3].second;
  ASSERT_TRUE(contains(command, "bias_elsewhere.fy"));
  const Json m = parseJson(manifestFor(parseCommand(command)));
  EXPECT_EQ(m["outcome"].text, "compiled");
  ASSERT_EQ(m["transfers"].items.size(), 1u);
  const Json &t = m["transfers"].items[0];
  EXPECT_EQ(t["operand"].text, "fc1.bias");
  EXPECT_EQ(t["direction"].text, "h2h");
  EXPECT_EQ(t["bytes"].integer(), 256 * 4);
  EXPECT_TRUE(t["at_load"].boolean);
  const Json &st = m["statistics"];
  EXPECT_EQ(st["transfers"].integer(), 0);
  EXPECT_EQ(st["transfer_bytes"].integer(), 0);
  EXPECT_EQ(st["directions"]["h2h"]["transfers"].integer(), 0);
  EXPECT_EQ(st["load_transfers"].integer(), 1);
  EXPECT_EQ(st["load_transfer_bytes"].integer(), 256 * 4);
  EXPECT_EQ(st["load_casts"].integer(), 0);
  const Json &devices = st["devices"];
  EXPECT_EQ(devices.find("cpu"), nullptr) << "cpu holds nothing a run reads";
  EXPECT_EQ(devices["cpu:1"]["weight_bytes"].integer(), (256 * 784 + 256) * 4);
  EXPECT_EQ(devices["cpu:1"]["nodes"].integer(), 2);  // linear, relu: the copy is no run's node
}

// statistics.devices says per device what the text dump's summary says: nodes without transfers,
// FLOPs, bytes, weights and the runtime's workspace; unknown workspaces when stopped early.
TEST(Manifest, DeviceStatisticsAreTheSummarys) {
  const Json m = parseJson(manifestFor(parseCommand(kMoreGoldens[1].second)));
  EXPECT_EQ(m["outcome"].text, "compiled");
  const Json &devices = m["statistics"]["devices"];
  ASSERT_EQ(devices.members.size(), 2u);
  // The summary: "@cpu: 0 nodes, 0 FLOP, 0 B read and written, weights 0 B, peak workspace 0 B"
  // and "@cpu:1: 4 nodes, 13 MFLOP, 1.0 MiB read and written, weights 795.0 KiB, peak workspace
  // 130.0 KiB".
  const Json &cpu = devices["cpu"], &cpu1 = devices["cpu:1"];
  EXPECT_EQ(cpu["nodes"].integer(), 0);
  EXPECT_EQ(cpu["flops"].integer(), 0);
  EXPECT_EQ(cpu["weight_bytes"].integer(), 0);
  EXPECT_EQ(cpu["peak_workspace_bytes"].integer(), 0);  // the input is the caller's tensor
  EXPECT_EQ(cpu1["nodes"].integer(), 4);
  EXPECT_NEAR(static_cast<double>(cpu1["flops"].integer()), 13e6, 0.5e6);
  EXPECT_NEAR(static_cast<double>(cpu1["bytes"].integer()), 1.0 * 1024 * 1024, 0.05 * 1024 * 1024);
  EXPECT_EQ(cpu1["weight_bytes"].integer(), (256 * 784 + 256 + 10 * 256 + 10) * 4);
  EXPECT_EQ(cpu1["peak_workspace_bytes"].integer(), 130 * 1024);
  // Stopped before lowering: no workspace.
  const Json stopped = parseJson(manifestFor(
      parseCommand("build/bin/ferry-compile --emit json --devices cpu,cpu:1 --placement auto "
                   "--stop-after simplify examples/mlp_split.fy")));
  EXPECT_EQ(stopped["outcome"].text, "stopped");
  EXPECT_TRUE(stopped["statistics"]["devices"]["cpu:1"]["peak_workspace_bytes"].isNull());
  EXPECT_EQ(stopped["statistics"]["devices"]["cpu:1"]["nodes"].integer(), 4);
}

// ferry-compile lowers the graph once and computes the per-device totals once, for the text
// summary and the manifest both; the manifest writes the totals it is given and computes none
// itself. Without totals (the overload a library caller uses) it lowers for itself, and writes
// the same bytes.
TEST(Manifest, WritesTheDeviceTotalsItIsGiven) {
  CompileOptions options;
  const std::optional<CompileResult> result =
      compileFor(parseCommand(kMoreGoldens[1].second), options);
  ASSERT_TRUE(result && result->ok());
  Expected<Executable> exe = lower(result->graph, options);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  std::map<Device, DeviceTotals> totals = deviceTotals(result->graph, &*exe);
  EXPECT_EQ(emitManifest(*result, options, totals), emitManifest(*result, options));
  ASSERT_TRUE(totals.contains(Device::cpu(1)));
  EXPECT_EQ(totals.at(Device::cpu(1)).workspaceBytes, 130u * 1024);
  // Without an executable deviceTotals lowers nothing: the workspaces are unknown.
  const std::map<Device, DeviceTotals> unlowered = deviceTotals(result->graph, nullptr);
  EXPECT_FALSE(unlowered.at(Device::cpu(1)).workspaceBytes.has_value());
  EXPECT_EQ(unlowered.at(Device::cpu(1)).nodes, totals.at(Device::cpu(1)).nodes);
  // Given totals are written as given.
  totals[Device::cpu(1)].workspaceBytes = 12345;
  totals[Device::cpu(1)].nodes = 7;
  const Json m = parseJson(emitManifest(*result, options, totals));
  EXPECT_EQ(m["statistics"]["devices"]["cpu:1"]["peak_workspace_bytes"].integer(), 12345);
  EXPECT_EQ(m["statistics"]["devices"]["cpu:1"]["nodes"].integer(), 7);
}

TEST(Manifest, MatchesTheDocumentedSchema) {
  const DocSchema schema = docSchema(readFile(kDoc));
  ASSERT_TRUE(schema.objects.contains("manifest")) << "docs/manifest.md has no table `manifest`";
  EXPECT_EQ(schema.stabilities, (std::set<std::string>{"model", "build"}))
      << "the stable columns say `model` or `build`";
  for (const std::string &command : schemaCommands()) {
    const Invocation inv = parseCommand(command);
    const std::string text = manifestFor(inv);
    const Json m = parseJson(text);
    SCOPED_TRACE(command);
    checkObject(schema, m, "manifest", "manifest");
    EXPECT_EQ(m["format"].text, "ferry.graph");
    EXPECT_EQ(m["version"].integer(), kManifestVersion);
    checkLists(m, command);
    // One entity per line: each element of the top-level arrays starts a line of its own.
    size_t elements = 0;
    for (const char *part :
         {"inputs", "params", "nodes", "outputs", "transfers", "casts", "fusion_groups",
          "diagnostics"})
      elements += m[part].items.size();
    EXPECT_EQ(tooltest::count(text, "\n    {"), elements);
    if (!inv.locations) {
      EXPECT_FALSE(contains(text, inv.model)) << "--no-locations still names the model:\n" << text;
      EXPECT_FALSE(contains(text, ".fy:")) << text;
    }
  }
}

// Version 2 only adds: each element of version 1 (emitJson) is the manifest's element without
// the added fields, value for value.
TEST(Manifest, KeepsTheFieldsOfVersion1) {
  const Invocation inv = parseCommand(kGoldenCommands[1].second);
  const fs::path path = kSource / inv.model;
  Expected<Graph> graph = parseGraph(readFile(path), inv.model);
  ASSERT_TRUE(graph.ok());
  CompileOptions options = inv.options;
  CompileResult result = compile(std::move(graph).value(), options);
  ASSERT_TRUE(result.ok());
  const Json v1 = parseJson(emitJson(result.graph));
  const Json v2 = parseJson(emitManifest(result, options));
  EXPECT_EQ(v1["version"].integer(), 1);
  for (const char *part : {"format", "graph"}) EXPECT_EQ(v1[part].text, v2[part].text) << part;
  auto text = [](const Json &v) {  // a canonical form to compare values
    std::function<std::string(const Json &)> str = [&](const Json &j) -> std::string {
      std::string s = std::to_string(static_cast<int>(j.kind)) + ":" + j.text +
                      (j.kind == Json::Kind::Bool ? (j.boolean ? "t" : "f") : "") + "[";
      for (const Json &i : j.items) s += str(i) + ",";
      for (const auto &[k, m] : j.members) s += k + "=" + str(m) + ",";
      return s + "]";
    };
    return str(v);
  };
  for (const char *part : {"inputs", "params", "nodes", "outputs"}) {
    ASSERT_EQ(v1[part].items.size(), v2[part].items.size()) << part;
    for (size_t i = 0; i < v1[part].items.size(); ++i) {
      const Json &old = v1[part].items[i];
      const Json &now = v2[part].items[i];
      ASSERT_LE(old.members.size(), now.members.size());
      for (size_t k = 0; k < old.members.size(); ++k) {
        EXPECT_EQ(old.members[k].first, now.members[k].first) << part << "[" << i << "]";
        EXPECT_EQ(text(old.members[k].second), text(now.members[k].second))
            << part << "[" << i << "]." << old.members[k].first;
      }
    }
  }
}

// The same compile gives the same bytes; a second compile of the same model too.
TEST(Manifest, IsDeterministic) {
  for (const std::string &command : schemaCommands()) {
    const Invocation inv = parseCommand(command);
    EXPECT_EQ(manifestFor(inv), manifestFor(inv)) << command;
  }
}

// Reasons explain every placed value: nothing placed is left with the kind "none", and a chain
// ends at something the user wrote or the compiler decided.
TEST(Manifest, EveryPlacedValueHasADeviceReason) {
  for (const std::string &command : schemaCommands()) {
    const Invocation inv = parseCommand(command);
    const Json m = parseJson(manifestFor(inv));
    for (const char *part : {"inputs", "params", "nodes"})
      for (const Json &v : m[part].items) {
        const Json &why = v["device_reason"];
        if (v["device"].isNull()) continue;
        EXPECT_NE(why["kind"].text, "none")
            << command << ": " << part << " " << v["name"].text << v["result"].text;
        EXPECT_FALSE(why["text"].text.empty()) << command;
      }
  }
}

}  // namespace
}  // namespace ferry
