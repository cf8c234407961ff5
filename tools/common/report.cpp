// tools/common/report.cpp — a tool's stderr: diagnostics capped and escaped, the informational
// texts after them, text or one JSON array.
#include "tools/common/report.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "ir/utf8.h"

namespace ferry {

namespace {

std::string hexByte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  return buf;
}

// Line `loc.line` of the file `loc` names, when it can be read.
std::optional<std::string> sourceLine(const Location &loc) {
  if (!loc.known() || loc.file.empty() || loc.imported()) return std::nullopt;
  std::ifstream in(loc.file.str(), std::ios::binary);
  std::string line;
  for (int i = 0; in && i < loc.line; ++i) std::getline(in, line);
  if (!in) return std::nullopt;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// The quoted source line and the caret under the column, as renderText draws them, escaped and
// cut after kMaxSnippetBytes.
std::string snippet(const Location &loc) {
  std::optional<std::string> line = sourceLine(loc);
  if (!line) return "";
  const bool cut = line->size() > kMaxSnippetBytes;
  const std::string shown = line->substr(0, kMaxSnippetBytes);
  std::string out = "  " + printable(shown) + (cut ? "..." : "") + "\n";
  if (loc.col > 0 && static_cast<size_t>(loc.col) <= shown.size() + (cut ? 0 : 1)) {
    // One space per character before the column (a tab stays a tab), counted in the escaped
    // text: a UTF-8 character is one column, an escaped byte four.
    std::string pad;
    for (char c : printable(shown.substr(0, static_cast<size_t>(loc.col) - 1)))
      if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) pad += c == '\t' ? '\t' : ' ';
    out += "  " + pad + "^\n";
  }
  return out;
}

// A diagnostic as clang-style text: renderText's lines with the source line quoted after the
// first, everything escaped.
std::string renderDiagnostic(const Diagnostic &d) {
  const std::string text = renderText(d, RenderOptions{.snippet = false});
  const size_t first = text.find('\n') + 1;
  return printable(text.substr(0, first)) + snippet(d.loc) + printable(text.substr(first));
}

}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7F)) {
      out += s[i];
    } else if (size_t n = c >= 0x80 ? utf8SequenceLength(s, i) : 0; n > 0) {
      out.append(s.substr(i, n));
      i += n - 1;
    } else {
      out += hexByte(c);
    }
  }
  return out;
}

void Report::diagnostics(std::span<const Diagnostic> ds) {
  for (const Diagnostic &d : ds) {
    if (errorsShown_ >= kMaxErrorsShown) {
      ++hidden_;
      continue;
    }
    errorsShown_ += d.severity == Severity::Error;
    entries_.push_back({d, false});
  }
}

void Report::info(std::string code, std::string text) {
  entries_.push_back(
      {Diagnostic{Severity::Note, std::move(code), {}, std::move(text), {}, {}}, true});
}

void Report::flush() {
  if (done_) return;
  if (hidden_ > 0)
    info("limit", program_ + ": " + std::to_string(hidden_) +
                      (hidden_ == 1 ? " more diagnostic" : " more diagnostics") +
                      " not shown (only the first " + std::to_string(kMaxErrorsShown) +
                      " errors are)\n");
  hidden_ = 0;
  if (format_ == Format::Json) {
    done_ = true;
    std::vector<Diagnostic> all;
    const std::string prefix = program_ + ": ";
    for (const Entry &e : entries_) {
      // jsonString (ir/json.h) makes any bytes valid JSON: nothing to escape here.
      all.push_back(e.diagnostic);
      if (!e.info) continue;
      // The text without its final newline and the program name it starts with in text form.
      std::string &m = all.back().message;
      while (!m.empty() && m.back() == '\n') m.pop_back();
      if (m.starts_with(prefix)) m.erase(0, prefix.size());
    }
    std::cerr << renderJson(all) << "\n";
  } else {
    std::string text;
    for (const Entry &e : entries_)
      text += e.info ? printable(e.diagnostic.message) : renderDiagnostic(e.diagnostic);
    std::cerr << text;
  }
  entries_.clear();
  std::cerr.flush();
}

int Report::usage(const std::string &message, const std::string &code) {
  if (!done_) {
    done_ = true;  // what was collected is dropped
    entries_.clear();
    if (format_ == Format::Json)
      std::cerr << renderJson(std::vector<Diagnostic>{
                       Diagnostic{Severity::Error, code, {}, message, {}, {}}})
                << "\n";
    else
      std::cerr << program_ << ": error: " << printable(message) << "\n";
    std::cerr.flush();
  }
  return 2;
}

}  // namespace ferry
