// ir/shared_text.h — an immutable string shared by reference.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace ferry {

/// An immutable string that copies by reference: copying one copies a pointer and counts it,
/// so a text that many values carry (a cost model's estimate, a dtype rule, the reason of every
/// weight folded the same way) is stored once, and clearing or overwriting one frees nothing
/// while others hold it. Eight bytes; the empty text allocates nothing. Copies may be used from
/// several threads (the count is atomic); the text never changes.
class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string_view text);
  SharedText(const std::string &text) : SharedText(std::string_view(text)) {}
  SharedText(const char *text) : SharedText(std::string_view(text)) {}
  SharedText(const SharedText &other) noexcept : rep_(other.rep_) { retain(); }
  SharedText(SharedText &&other) noexcept : rep_(other.rep_) { other.rep_ = nullptr; }
  SharedText &operator=(const SharedText &other) noexcept {
    other.retain();
    release();
    rep_ = other.rep_;
    return *this;
  }
  SharedText &operator=(SharedText &&other) noexcept {
    if (this != &other) {
      release();
      rep_ = other.rep_;
      other.rep_ = nullptr;
    }
    return *this;
  }
  ~SharedText() { release(); }

  std::string_view view() const {
    return rep_ ? std::string_view(reinterpret_cast<const char *>(rep_ + 1), rep_->size)
                : std::string_view();
  }
  operator std::string_view() const { return view(); }
  std::string str() const { return std::string(view()); }
  bool empty() const { return rep_ == nullptr; }
  size_t size() const { return rep_ ? rep_->size : 0; }
  void clear() {
    release();
    rep_ = nullptr;
  }

  friend bool operator==(const SharedText &a, const SharedText &b) {
    return a.rep_ == b.rep_ || a.view() == b.view();
  }
  friend bool operator==(const SharedText &a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const SharedText &a, const char *b) { return a.view() == b; }
  friend std::string operator+(const SharedText &a, std::string_view b) {
    std::string s(a.view());
    return s.append(b);
  }
  friend std::string operator+(std::string a, const SharedText &b) { return a.append(b.view()); }
  friend std::string operator+(const char *a, const SharedText &b) {
    return std::string(a).append(b.view());
  }
  friend std::ostream &operator<<(std::ostream &out, const SharedText &t) {
    return out << t.view();
  }

 private:
  struct Rep {  // followed by `size` characters
    std::atomic<uint32_t> refs;
    uint32_t size;
  };
  void retain() const {
    if (rep_) rep_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() {
    if (rep_) drop();  // most reasons carry no text: no call for them
  }
  void drop();

  Rep *rep_ = nullptr;
};

}  // namespace ferry
