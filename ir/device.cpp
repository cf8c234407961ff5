// ir/device.cpp — device spelling and parsing.
#include "ir/device.h"

#include <charconv>

namespace ferry {

std::string Device::str() const {
  if (kind == DeviceKind::Cpu) return index == 0 ? "cpu" : "cpu:" + std::to_string(index);
  return "cuda:" + std::to_string(index);
}

Expected<Device> parseDevice(std::string_view s) {
  auto bad = [&](std::string why) -> Expected<Device> {
    return makeError("device", "invalid device '" + std::string(s) + "': " + why);
  };
  std::string_view kind = s.substr(0, s.find(':'));
  DeviceKind k;
  if (kind == "cpu") {
    k = DeviceKind::Cpu;
  } else if (kind == "cuda") {
    k = DeviceKind::Cuda;
  } else {
    return bad("expected 'cpu', 'cpu:N' or 'cuda:N'");
  }
  if (kind.size() == s.size()) {
    if (k == DeviceKind::Cuda) return bad("expected 'cuda:N' with a device index N");
    return Device::cpu();
  }
  std::string_view digits = s.substr(kind.size() + 1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return bad("the index after ':' must be a non-negative integer");
  // Digits only: too many of them for an int is out of range too, not "not an integer".
  int index = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || index > Device::kMaxIndex)
    return bad("index " + std::string(digits) + " is out of range 0.." +
               std::to_string(Device::kMaxIndex));
  return Device{k, index};
}

}  // namespace ferry
