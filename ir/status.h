// ir/status.h — recoverable errors as values (Status, Expected<T>) and invariant checks
// (FERRY_CHECK).
//
// Two kinds of error, never mixed: what a user can cause (bad input, options, files, API misuse)
// is returned as a Status/Expected carrying diagnostics; a broken invariant of ferry itself is a
// FERRY_CHECK that aborts with file:line.
#pragma once

#include <new>
#include <sstream>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ir/diagnostics.h"

namespace ferry {

namespace detail {
/// Streams a message, then prints it with file:line and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char *file, int line, const char *cond);
  [[noreturn]] ~CheckFailure();
  std::ostream &stream() { return out_; }

 private:
  std::ostringstream out_;
};
}  // namespace detail

}  // namespace ferry

/// Aborts with file:line when an invariant of ferry itself is broken: `FERRY_CHECK(x) << "why"`.
#define FERRY_CHECK(cond)                                                                          \
  if (cond) {                                                                                      \
  } else                                                                                           \
    ::ferry::detail::CheckFailure(__FILE__, __LINE__, #cond).stream()

namespace ferry {

/// Success, or the error diagnostics that explain the failure.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Diagnostic d) { diags_.push_back(std::move(d)); }
  Status(std::vector<Diagnostic> ds) : diags_(std::move(ds)) {}

  bool ok() const { return diags_.empty(); }
  const std::vector<Diagnostic> &diagnostics() const { return diags_; }
  std::vector<Diagnostic> &&takeDiagnostics() && { return std::move(diags_); }
  /// All diagnostics rendered as text without source snippets (for exceptions and logs).
  std::string message() const;

 private:
  std::vector<Diagnostic> diags_;
};

/// A user-facing error with no location (option strings, API arguments).
Status makeError(std::string code, std::string message, Location loc = {});

/// The error for a std::bad_alloc caught while doing `what` ("loading m.ferry"): code "memory",
/// "out of memory while loading m.ferry".
Status outOfMemoryWhile(std::string_view what);

/// Calls `f` (returning a Status or an Expected); a std::bad_alloc out of it comes back as
/// outOfMemoryWhile(what()) instead. The public entry points (parse, compile, load, import,
/// Session::create and run) are wrapped so; `what` is called only on that path.
template <class What, class F> auto catchOutOfMemory(What &&what, F &&f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return outOfMemoryWhile(what());
  }
}

/// A value or the diagnostics that say why there is none.
template <class T> class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status status) : v_(std::move(status)) {
    FERRY_CHECK(!std::get<Status>(v_).ok()) << "Expected built from an ok Status";
  }
  Expected(Diagnostic d) : v_(Status(std::move(d))) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status &status() const { return std::get<Status>(v_); }
  Status takeStatus() && { return std::move(std::get<Status>(v_)); }
  T &value() & { return std::get<T>(v_); }
  const T &value() const & { return std::get<T>(v_); }
  T &&value() && { return std::get<T>(std::move(v_)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ferry

/// Returns the Status of `expr` from the enclosing function when it failed.
#define FERRY_TRY(expr)                                                                            \
  do {                                                                                             \
    if (::ferry::Status ferry_status_ = (expr); !ferry_status_.ok()) return ferry_status_;         \
  } while (0)
