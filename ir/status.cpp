// ir/status.cpp — Status rendering and the abort path of FERRY_CHECK.
#include "ir/status.h"

#include <cstdio>
#include <cstdlib>

namespace ferry {

std::string Status::message() const {
  std::string s = renderText(diags_, RenderOptions{.snippet = false});
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

Status makeError(std::string code, std::string message, Location loc) {
  return Diagnostic{Severity::Error, std::move(code), std::move(loc), std::move(message), {}, {}};
}

Status outOfMemoryWhile(std::string_view what) {
  return makeError("memory", "out of memory while " + std::string(what));
}

namespace detail {

CheckFailure::CheckFailure(const char *file, int line, const char *cond) {
  out_ << file << ":" << line << ": internal error: check failed: " << cond << ": ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", out_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace detail
}  // namespace ferry
