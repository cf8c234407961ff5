// tools/common/report.h — what a tool says on stderr: diagnostics, explanations, statistics and
// the files it wrote; clang-style text, capped and escaped so that a binary file fed by mistake
// prints a few readable lines, or (ferry-compile --diagnostics json) one JSON array that holds all
// of it, so that stderr always parses. ferry-compile and ferry-run both write through it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"

namespace ferry {

/// Errors shown before the rest are only counted (as clang's -ferror-limit): a binary file fed
/// to the parser gives thousands, each quoting a line of bytes.
inline constexpr int kMaxErrorsShown = 20;
/// Source lines quoted under a diagnostic are cut after this many bytes.
inline constexpr size_t kMaxSnippetBytes = 200;

/// `s` with every byte that a terminal would not show as text written as `\xNN`: control bytes
/// other than newline and tab, DEL, and bytes that are not part of valid UTF-8 (stray
/// continuation bytes, overlong forms, surrogates, code points past U+10FFFF, cut sequences).
std::string printable(std::string_view s);

/// Collects what a run of a tool says and writes it to stderr, in one format. Text: each
/// diagnostic clang-style with the quoted source line (escaped with printable(), cut after
/// kMaxSnippetBytes), and the informational texts as they are. JSON: one array in the shape of
/// renderJson (ir/diagnostics.h): the diagnostics, then each informational text as a diagnostic
/// of severity "note" whose code says what it is ("explain", "stats", "output", "limit") and
/// whose message is the text. After kMaxErrorsShown errors the remaining diagnostics are
/// counted, not shown, and a line (code "limit") says how many.
class Report {
 public:
  enum class Format { Text, Json };

  /// `program` starts the lines the report writes itself: "ferry-run: error: ...".
  Report(Format format, std::string program) : format_(format), program_(std::move(program)) {}
  Report(const Report &) = delete;
  Report &operator=(const Report &) = delete;

  void diagnostics(std::span<const Diagnostic> ds);
  /// A text that is no diagnostic: `code` says what it is, `text` is printed as it is in text
  /// form, escaped with printable() (end it with a newline).
  void info(std::string code, std::string text);
  /// Writes what was collected to stderr. Text: what came since the last flush (then the "limit"
  /// line, if diagnostics were held back since), so that a tool can flush warnings before it goes
  /// on; the cap counts across flushes. JSON: everything, once, as one array (`[]` when empty);
  /// later calls write nothing.
  void flush();
  /// A usage error (a bad option, an unwritable file, code "usage" or "io"): what was collected
  /// and not yet flushed is dropped and the message alone is written, as one line
  /// ("PROGRAM: error: MESSAGE", escaped); nothing is written after it. Returns exit status 2.
  int usage(const std::string &message, const std::string &code = "usage");

 private:
  struct Entry {
    Diagnostic diagnostic;
    bool info = false;  ///< an informational text, not a diagnostic of the model
  };

  Format format_;
  std::string program_;
  std::vector<Entry> entries_;  ///< not yet written
  int errorsShown_ = 0;
  size_t hidden_ = 0;  ///< diagnostics after kMaxErrorsShown errors, not yet reported
  bool done_ = false;  ///< JSON written, or a usage error: nothing more goes out
};

}  // namespace ferry
