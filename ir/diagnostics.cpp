// ir/diagnostics.cpp — collecting diagnostics and rendering them as clang-style text or JSON.
#include "ir/diagnostics.h"

#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_set>

#include "ir/json.h"

namespace ferry {

namespace {
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
}  // namespace

FileName::FileName(std::string_view name) {
  if (name.empty()) return;
  // Node-based: an interned string never moves while more are added.
  static std::mutex mutex;
  static std::unordered_set<std::string, NameHash, std::equal_to<>> names;
  static size_t bytes = 0;  // of the names kept, each counted with a node's worth of overhead
  constexpr size_t kNodeBytes = 64;
  std::lock_guard lock(mutex);
  auto it = names.find(name);
  if (it == names.end()) {
    if (bytes + name.size() + kNodeBytes > kMaxInternedBytes) {
      name = kOverflowName;  // kept once, outside the bound
      it = names.find(name);
      if (it == names.end()) it = names.emplace(name).first;
    } else {
      it = names.emplace(name).first;
      bytes += name.size() + kNodeBytes;
    }
  }
  name_ = &*it;
}

std::string Location::str() const {
  if (imported()) return (file.empty() ? "<input>" : file.str()) + ": " + node.str();
  if (!known()) return file.empty() ? "<unknown>" : file.str();
  std::string s = (file.empty() ? "<input>" : file.str()) + ":" + std::to_string(line);
  if (col > 0) s += ":" + std::to_string(col);
  return s;
}

std::string_view severityName(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "error";
}

Diagnostic &Diagnostic::note(std::string message, Location loc) {
  notes.push_back({std::move(message), std::move(loc)});
  return *this;
}

Diagnostic &Diagnostic::detail(std::string message, Location loc) {
  notes.push_back({std::move(message), std::move(loc), true});
  return *this;
}

Diagnostic &Diagnostic::fix(std::string message) {
  fixes.push_back(std::move(message));
  return *this;
}

Diagnostic &DiagnosticEngine::error(std::string code, Location loc, std::string message) {
  return report({Severity::Error, std::move(code), std::move(loc), std::move(message), {}, {}});
}

Diagnostic &DiagnosticEngine::warning(std::string code, Location loc, std::string message) {
  return report({Severity::Warning, std::move(code), std::move(loc), std::move(message), {}, {}});
}

Diagnostic &DiagnosticEngine::report(Diagnostic d) {
  if (d.severity == Severity::Error) ++errors_;
  diags_.push_back(std::move(d));
  return diags_.back();
}

void DiagnosticEngine::append(std::span<const Diagnostic> ds) {
  for (const Diagnostic &d : ds) report(d);
}

std::vector<Diagnostic> DiagnosticEngine::take() {
  errors_ = 0;
  return std::move(diags_);
}

namespace {

// The source line `loc` points into, when its file is readable.
std::optional<std::string> sourceLine(const Location &loc) {
  if (!loc.known() || loc.file.empty() || loc.imported()) return std::nullopt;
  std::ifstream in(loc.file.str());
  if (!in) return std::nullopt;
  std::string line;
  for (int i = 0; i < loc.line; ++i) {
    if (!std::getline(in, line)) return std::nullopt;
  }
  return line;
}

void renderSnippet(std::ostringstream &out, const Location &loc) {
  std::optional<std::string> line = sourceLine(loc);
  if (!line) return;
  out << "  " << *line << "\n";
  if (loc.col > 0 && static_cast<size_t>(loc.col) <= line->size() + 1) {
    std::string pad;
    for (int i = 0; i + 1 < loc.col; ++i) pad += ((*line)[i] == '\t') ? '\t' : ' ';
    out << "  " << pad << "^\n";
  }
}

}  // namespace

std::string renderText(const Diagnostic &d, const RenderOptions &options) {
  std::ostringstream out;
  if (d.loc.known() || !d.loc.file.empty()) out << d.loc.str() << ": ";
  out << severityName(d.severity) << ": " << d.message;
  if (!d.code.empty()) out << " [" << d.code << "]";
  out << "\n";
  if (options.snippet) renderSnippet(out, d.loc);
  for (const Note &n : d.notes) {
    if (n.loc.known() && !n.detail)
      out << n.loc.str() << ": note: " << n.message << "\n";
    else
      out << "  " << n.message << "\n";
  }
  for (const std::string &f : d.fixes) out << "  fix: " << f << "\n";
  return out.str();
}

std::string renderText(std::span<const Diagnostic> ds, const RenderOptions &options) {
  std::string s;
  for (const Diagnostic &d : ds) s += renderText(d, options);
  return s;
}

std::string renderJson(std::span<const Diagnostic> ds) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < ds.size(); ++i) {
    const Diagnostic &d = ds[i];
    out << (i ? ",\n " : "\n ") << "{\"severity\": " << jsonString(severityName(d.severity))
        << ", \"code\": " << jsonString(d.code) << ", \"file\": " << jsonString(d.loc.file)
        << ", \"line\": " << d.loc.line << ", \"col\": " << d.loc.col
        << (d.loc.imported() ? ", \"node\": " + jsonString(d.loc.node) : std::string())
        << ", \"message\": " << jsonString(d.message) << ", \"notes\": [";
    for (size_t j = 0; j < d.notes.size(); ++j) {
      const Note &n = d.notes[j];
      out << (j ? ", " : "") << "{\"message\": " << jsonString(n.message)
          << ", \"file\": " << jsonString(n.loc.file) << ", \"line\": " << n.loc.line
          << ", \"col\": " << n.loc.col
          << (n.loc.imported() ? ", \"node\": " + jsonString(n.loc.node) : std::string()) << "}";
    }
    out << "], \"fixes\": [";
    for (size_t j = 0; j < d.fixes.size(); ++j) out << (j ? ", " : "") << jsonString(d.fixes[j]);
    out << "]}";
  }
  out << (ds.empty() ? "]" : "\n]");
  return out.str();
}

}  // namespace ferry
