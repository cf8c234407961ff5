// tools/ferry-compile/report.h — what ferry-compile says on stderr: diagnostics, explanations,
// statistics and the files it wrote; clang-style text, or under --diagnostics json one JSON array
// that holds all of it, so that stderr always parses.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/diagnostics.h"

namespace ferry {

/// Errors shown before the rest are only counted (as clang's -ferror-limit): a binary file fed
/// to the parser gives thousands, each quoting a line of bytes.
inline constexpr int kMaxErrorsShown = 20;
/// Source lines quoted under a diagnostic are cut after this many bytes.
inline constexpr size_t kMaxSnippetBytes = 200;

/// `s` with every byte that a terminal would not show as text written as `\xNN`: control bytes
/// other than newline and tab, DEL, and bytes that are not part of valid UTF-8.
std::string printable(std::string_view s);

/// Collects what a run of ferry-compile says and writes it to stderr at the end, in one format.
/// Text: each diagnostic clang-style with the quoted source line (escaped with printable(), cut
/// after kMaxSnippetBytes), then the informational texts as they are. JSON: one array in the
/// shape of renderJson (ir/diagnostics.h): the diagnostics, then each informational text as a
/// diagnostic of severity "note" whose code says what it is ("explain", "stats", "output",
/// "limit") and whose message is the text. After kMaxErrorsShown errors the remaining
/// diagnostics are counted, not shown, and a last line (code "limit") says how many.
class Report {
 public:
  enum class Format { Text, Json };

  explicit Report(Format format) : format_(format) {}
  Report(const Report &) = delete;
  Report &operator=(const Report &) = delete;

  void diagnostics(std::span<const Diagnostic> ds);
  /// A text that is no diagnostic: `code` says what it is, `text` is printed as it is in text
  /// form (end it with a newline).
  void info(std::string code, std::string text);
  /// Writes what was collected to stderr, once: later calls write nothing. (In JSON an empty
  /// report is `[]`, so that stderr always parses.)
  void flush();
  /// A usage error (a bad option, an unwritable file, code "usage" or "io"): what was collected
  /// is dropped and the message alone is written, as one line; returns exit status 2.
  int usage(const std::string &message, const std::string &code = "usage");

 private:
  struct Entry {
    Diagnostic diagnostic;
    bool info = false;  ///< an informational text, not a diagnostic of the model
  };

  Format format_;
  std::vector<Entry> entries_;
  int errorsShown_ = 0;
  size_t hidden_ = 0;  ///< diagnostics after kMaxErrorsShown errors
  bool written_ = false;
};

}  // namespace ferry
