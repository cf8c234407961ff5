// ir/shared_text.cpp — SharedText's storage: one allocation per distinct text made.
#include "ir/shared_text.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "ir/status.h"

namespace ferry {

SharedText::SharedText(std::string_view text) {
  if (text.empty()) return;
  FERRY_CHECK(text.size() <= UINT32_MAX) << "text of " << text.size() << " bytes";
  void *p = std::malloc(sizeof(Rep) + text.size());
  if (!p) throw std::bad_alloc();
  rep_ = new (p) Rep{{1}, static_cast<uint32_t>(text.size())};
  std::memcpy(static_cast<char *>(p) + sizeof(Rep), text.data(), text.size());
}

void SharedText::drop() {
  // The last holder frees it; acquire so every earlier use of the text happens before.
  if (rep_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    rep_->~Rep();
    std::free(rep_);
  }
}

}  // namespace ferry
