// ir/printer.cpp — writes a graph as `.fy` text (and saveModel: the text plus its .npy files).
#include "ir/printer.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "ir/lexer.h"
#include "ir/npy.h"

namespace ferry {

namespace {

bool isIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

std::string npyFileStem(std::string_view valueName) {
  std::string s;
  for (char c : valueName)
    s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ? c : '_';
  // A name of dots only would give a hidden or parent-folder file name.
  if (s.find_first_not_of('.') == std::string::npos) s = "_" + s;
  return s;
}

bool printsInline(const ParamDecl &p, const PrintOptions &options) {
  return p.data.numel() <= options.inlineLimit;
}

// The file each param is printed as `npy(...)` with, indexed like graph.params(); empty for
// params printed otherwise. Data params too large to inline get "<name>.npy" with characters
// outside [A-Za-z0-9_.-] replaced by '_', made unique (".1.npy", ...) against one another and
// against the paths of Npy params, in param order, so the text and saveModel always agree.
std::vector<std::string> npyPaths(const Graph &graph, const PrintOptions &options) {
  std::vector<std::string> paths(graph.params().size());
  std::set<std::string> taken;
  for (size_t i = 0; i < paths.size(); ++i) {
    const ParamDecl &p = graph.params()[i];
    if (p.init.kind == Initializer::Kind::Npy) {
      paths[i] = p.init.path;
      taken.insert(p.init.path);
    }
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    const ParamDecl &p = graph.params()[i];
    if (p.init.kind != Initializer::Kind::Data || printsInline(p, options)) continue;
    std::string stem = npyFileStem(graph.value(p.value).name);
    std::string path = stem + ".npy";
    for (int n = 1; taken.count(path); ++n) path = stem + "." + std::to_string(n) + ".npy";
    taken.insert(path);
    paths[i] = path;
  }
  return paths;
}

class Printer {
 public:
  Printer(const Graph &graph, const PrintOptions &options)
      : g_(graph), options_(options), npyPaths_(npyPaths(graph, options)) {}

  std::string run() {
    const std::string &name = g_.name();
    out_ += "graph " + (isIdentifier(name) ? name : fy::quoteString(name)) + " {\n";
    for (const InputDecl &in : g_.inputs()) {
      line("input " + typed(in.value) + " @" + in.device.str(), in.loc);
    }
    for (size_t i = 0; i < g_.params().size(); ++i) {
      const ParamDecl &p = g_.params()[i];
      std::string s = "param " + typed(p.value) + device(p.pin, p.value) + " = " + init(p, i);
      line(s, p.loc);
    }
    for (NodeId id : g_.order()) node(g_.node(id));
    for (const OutputDecl &o : g_.outputs())
      line("output " + valueRef(g_, o.value) + device(o.pin, o.value), o.loc);
    flushLines();
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  // `inserted` marks a node the compiler made; it is printed with or without locations, since
  // it is part of what the graph says, not where it came from.
  void line(std::string text, const Location &loc, bool inserted = false) {
    std::string where;
    if (options_.locations && loc.known()) {
      // A file name with a line break would end the statement early; it prints as a space
      // (and so reads back as a plain comment).
      where = loc.str();
      for (char &c : where)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    }
    if (inserted) where = where.empty() ? "inserted" : "inserted " + where;
    lines_.push_back({std::move(text), std::move(where)});
  }

  // Writes the statements with their location comments aligned in one column, so the code
  // reads as a block and the origins as another; very long statements are not padded for.
  void flushLines() {
    constexpr size_t kMaxColumn = 72;
    size_t column = 0;
    for (const auto &[text, where] : lines_)
      if (!where.empty() && text.size() <= kMaxColumn) column = std::max(column, text.size());
    for (const auto &[text, where] : lines_) {
      out_ += "  " + text;
      if (!where.empty())
        out_ += std::string(column > text.size() ? column - text.size() : 0, ' ') + "  # " + where;
      out_ += "\n";
    }
    lines_.clear();
  }

  std::string typed(ValueId v) const { return valueRef(g_, v) + " : " + g_.value(v).type.str(); }

  // A pin wins over a placed device; either prints, so that a placed dump reads back pinned.
  std::string device(const std::optional<Device> &pin, ValueId v) const {
    if (pin) return " @" + pin->str();
    if (g_.value(v).device) return " @" + g_.value(v).device->str();
    return "";
  }

  std::string init(const ParamDecl &p, size_t index) const {
    switch (p.init.kind) {
      case Initializer::Kind::Zeros: return "zeros";
      case Initializer::Kind::Ones: return "ones";
      case Initializer::Kind::Randn: return "randn(seed=" + std::to_string(p.init.seed) + ")";
      case Initializer::Kind::Npy: return "npy(" + fy::quoteString(p.init.path) + ")";
      case Initializer::Kind::Data: break;
    }
    if (!npyPaths_[index].empty()) return "npy(" + fy::quoteString(npyPaths_[index]) + ")";
    std::string s = "[";
    for (int64_t i = 0; i < p.data.numel(); ++i) {
      if (i) s += ", ";
      s += tensorElementStr(p.data, i);
    }
    return s + "]";
  }

  void node(const Node &n) {
    const OpInfo &op = n.info();
    std::string s = typed(n.result) + device(n.pinDevice, n.result);
    if (n.pinDType) s += " @" + std::string(dtypeName(*n.pinDType));
    s += " = " + std::string(op.name) + "(";
    bool first = true;
    for (ValueId o : n.operands) {
      s += (first ? "" : ", ") + valueRef(g_, o);
      first = false;
    }
    for (size_t i = 0; i < op.attrs.size() && i < n.attrs.size(); ++i) {
      const AttrSpec &spec = op.attrs[i];
      if (!spec.required && n.attrs[i] == spec.defaultValue) continue;
      s += (first ? "" : ", ") + spec.name + "=" + attrValueStr(n.attrs[i]);
      first = false;
    }
    line(s + ")", n.loc, n.inserted);
  }

  const Graph &g_;
  const PrintOptions &options_;
  std::vector<std::string> npyPaths_;
  std::vector<std::pair<std::string, std::string>> lines_;  // statement, location ("" if none)
  std::string out_;
};

Status ioError(const std::string &path, const std::string &what) {
  return makeError("io", path + ": " + what);
}

// Where saveModel may write an Npy param's file: relative paths inside the model's folder.
bool writableBeside(const std::string &path) {
  std::filesystem::path p(path);
  if (p.empty() || p.is_absolute() || p.has_root_name()) return false;
  for (const auto &part : p)
    if (part == "..") return false;
  return true;
}

}  // namespace

std::string printGraph(const Graph &graph, const PrintOptions &options) {
  return Printer(graph, options).run();
}

std::string valueRef(const Graph &graph, ValueId v) { return "%" + graph.value(v).name; }

Status saveModel(const Graph &graph, const std::string &path, const PrintOptions &options) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  std::vector<std::string> paths = npyPaths(graph, options);
  for (size_t i = 0; i < paths.size(); ++i) {
    // Data params too large to inline, and Npy params (so that the saved folder is complete
    // wherever it is written); an Npy param with an absolute or `..` path is left referring
    // to its file where it is.
    if (paths[i].empty() || !writableBeside(paths[i])) continue;
    fs::path file = dir / paths[i];
    std::error_code ec;
    if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
    if (ec) return ioError(file.string(), "cannot create folder: " + ec.message());
    FERRY_TRY(writeNpy(graph.params()[i].data, file.string()));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return ioError(path, std::string("cannot open file for writing: ") + std::strerror(errno));
  std::string text = printGraph(graph, options);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return ioError(path, "write error");
  return {};
}

}  // namespace ferry
