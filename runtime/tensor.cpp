// runtime/tensor.cpp — Tensor: host bytes with a device label.
#include "runtime/tensor.h"

#include "backends/registry.h"
#include "ir/npy.h"

namespace ferry {

Expected<Tensor> Tensor::fromNpy(const std::string &path) {
  Expected<TensorData> d = readNpy(path);
  if (!d) return d.status();
  return Tensor(std::move(*d));
}

Status Tensor::writeNpy(const std::string &path) const { return ferry::writeNpy(data_, path); }

Expected<Tensor> Tensor::to(Device device) const {
  if (!device.isHost() && !findBackend(builtinBackends(), device.kind))
    return makeError("device", "cannot move " + str() + " to " + device.str() +
                                   ": this build of ferry has no backend for " + device.str());
  if (device == device_) return *this;
  return Tensor(data_.clone(), device);
}

Tensor Tensor::clone() const { return Tensor(data_.clone(), device_); }

bool Tensor::sharesStorageWith(const Tensor &other) const {
  return data_.sharesBytesWith(other.data_);
}

std::string Tensor::str() const { return type().str() + " @" + device_.str(); }

}  // namespace ferry
