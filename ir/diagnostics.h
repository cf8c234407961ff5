// ir/diagnostics.h — source locations and diagnostics: {severity, code, location, message, notes,
// fixes}.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/shared_text.h"

namespace ferry {

/// A source file's name, interned: every node, param and reason carries a Location, and equal
/// names are one string for the life of the process, so a FileName is a pointer — copied and
/// compared without touching the text or a reference count (builder paths are absolute and
/// long, and a large graph copies millions of Locations). A program names few files; each
/// distinct name is kept once, never freed. Names come from files too (a saved executable's
/// locations, an imported model's), so a process that reads many hostile files would keep
/// growing: the names kept stop at kMaxInternedBytes in all, and a name first seen past that is
/// kOverflowName instead (the saved-executable fuzzer's RSS grew to 2 GB before this bound).
/// Converts from and to strings; thread-safe.
class FileName {
 public:
  static constexpr size_t kMaxInternedBytes = size_t{64} << 20;
  static constexpr std::string_view kOverflowName = "<file name not kept: too many distinct names>";

  FileName() = default;
  FileName(std::string_view name);
  FileName(const std::string &name) : FileName(std::string_view(name)) {}
  FileName(const char *name) : FileName(std::string_view(name)) {}

  std::string_view view() const { return name_ ? std::string_view(*name_) : std::string_view(); }
  operator std::string_view() const { return view(); }
  std::string str() const { return std::string(view()); }
  bool empty() const { return !name_; }

  friend bool operator==(FileName a, FileName b) { return a.name_ == b.name_; }
  friend std::ostream &operator<<(std::ostream &out, FileName f) { return out << f.view(); }

 private:
  const std::string *name_ = nullptr;  // null: no file
};

/// Where something came from: a builder call (`std::source_location`), a line of a `.fy`
/// file, or a node of an imported model. `line == 0` means unknown. An imported node has no
/// line: its `node` names it as the model's user knows it (`node 'Gemm_3' (#12, Gemm)`), and
/// its `line` is its index + 1, so that locations still sort in the model's order.
struct Location {
  FileName file;
  int line = 0;
  int col = 0;
  /// An imported node's name, index and op; empty otherwise. Shared, not interned: a model's
  /// node names are many and come from outside, and are freed with the last location that holds
  /// them (FileName's interned names never are).
  SharedText node;

  bool known() const { return line > 0; }
  /// Whether this is a node of an imported model (no source line to quote).
  bool imported() const { return !node.empty(); }
  /// "file:line:col", "file:line" when the column is unknown, "file: node 'N' (#i, Op)" for an
  /// imported node, "<unknown>" when nothing is known.
  std::string str() const;
  bool operator==(const Location &) const = default;
};

enum class Severity { Note, Warning, Error };
std::string_view severityName(Severity s);

/// A note attached to a diagnostic, with the location it talks about (JSON carries it). In text,
/// a note with a known location renders as its own `file:line:col: note:` line, one without as an
/// indented line; a detail (Diagnostic::detail) is always an indented line: a row of the
/// diagnostic's operand table or a reason, which names its locations in its text.
struct Note {
  std::string message;
  Location loc;
  bool detail = false;
};

/// One finding of a pass. `code` is stable (tests and tools match on it), e.g. "parse",
/// "shape", "dtype", "device". Messages start lower-case and have no final period.
struct Diagnostic {
  Severity severity = Severity::Error;
  std::string code;
  Location loc;
  std::string message;
  std::vector<Note> notes;
  std::vector<std::string> fixes;

  Diagnostic &note(std::string message, Location loc = {});
  /// A note that text shows as an indented line under the diagnostic even with a known `loc`.
  Diagnostic &detail(std::string message, Location loc);
  Diagnostic &fix(std::string message);
};

/// Collects every diagnostic of a run; passes report all errors, not only the first.
class DiagnosticEngine {
 public:
  Diagnostic &error(std::string code, Location loc, std::string message);
  Diagnostic &warning(std::string code, Location loc, std::string message);
  Diagnostic &report(Diagnostic d);
  void append(std::span<const Diagnostic> ds);

  bool hasErrors() const { return errors_ > 0; }
  int errorCount() const { return errors_; }
  const std::vector<Diagnostic> &diagnostics() const { return diags_; }
  std::vector<Diagnostic> take();

 private:
  std::vector<Diagnostic> diags_;
  int errors_ = 0;
};

struct RenderOptions {
  /// Print the offending source line and a caret under the column when the file is readable.
  bool snippet = true;
};

/// clang-style text: `file:line:col: error: message [code]`, then notes and fixes.
std::string renderText(const Diagnostic &d, const RenderOptions &options = {});
std::string renderText(std::span<const Diagnostic> ds, const RenderOptions &options = {});
/// A JSON array of objects {severity, code, file, line, col, message, notes[], fixes[]}.
std::string renderJson(std::span<const Diagnostic> ds);

}  // namespace ferry
