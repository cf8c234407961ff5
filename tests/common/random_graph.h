// tests/common/random_graph.h — deterministic random graphs for property tests of the IR and
// the passes, and a structural graph comparison.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ferry::testutil {

struct RandomGraphOptions {
  int maxNodes = 12;
  /// Probability that a statement has no known location.
  double unknownLocationRate = 0.2;
  /// May produce params initialised from `npy("<name>.npy")` (see writeNpyParams).
  bool npyParams = true;
  /// Params with raw data have at most this many elements (some above PrintOptions' default
  /// inline limit of 64 exercise the `npy(...)` spelling of large data).
  int64_t maxDataElements = 96;
  /// Probability that a node is marked Node::inserted (drawn from its own sequence, so that it
  /// changes nothing else about the graph).
  double insertedRate = 0.1;
  /// Probability that a binary op or `where` reads a scalar literal (`add(%x, 0.5)`, `2`,
  /// `true`) for one data operand. Drawn from a sequence of its own: a graph without literals is
  /// the graph these options gave before literals existed.
  double literalRate = 0.25;

  // Knobs for graphs that go through compile(); the defaults keep the IR tests' graphs.
  /// Where inputs arrive, and what pins, transfers and placed devices choose from.
  std::vector<Device> devices{Device::cpu(), Device::cpu(1), Device::cuda(0), Device::cuda(1)};
  /// Scales the probability of every device pin (node, param, output); 0: no device pins.
  double pinRate = 1.0;
  /// Probability that a device choice is devices[0] outright (otherwise uniform over devices).
  double firstDeviceBias = 0.0;
  /// Probability that a node pins its compute dtype (`@f16`).
  double dtypePinRate = 0.15;
  /// Only these ops (empty: every op).
  std::vector<OpKind> ops;
  /// Param data includes inf, NaN, 1e300 and extreme integers; off: small values that every
  /// dtype of their category holds exactly (multiples of 1/64 in [-2, 2], integers in [-8, 8]).
  bool extremeValues = true;
  /// A graph compile() is to place: no value has a device yet, no npy params, and no transfer
  /// node carries a pin (its `to` says where it runs).
  bool compileReady = false;
};

/// A valid graph (it passes verify) built through the Graph API, makeAttrs and inferType: random
/// ops and shapes of every dtype, device and dtype pins, placed devices, every kind of param
/// initializer, scalar literal operands, value names with dots, some statements with source
/// locations, some nodes marked inserted. The same seed and options always give the same graph.
Graph randomGraph(uint64_t seed, const RandomGraphOptions &options = {});

/// Writes the data of each Npy-initialised param of `graph` to `dir`/<its path>.
void writeNpyParams(const Graph &graph, const std::string &dir);

/// "" when `a` and `b` are the same graph (names, types, devices, pins, attributes, locations,
/// inserted marks and param data; a param's initializer kind is not compared), else the first
/// difference.
std::string graphDifference(const Graph &a, const Graph &b);

/// splitmix64: the tests' own generator, so that sequences are the same everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  /// Uniform in [0, n); n > 0.
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  /// Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

 private:
  uint64_t state_;
};

}  // namespace ferry::testutil
