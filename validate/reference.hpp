// The single-device reference of the global problem: a plain S×S causal attention layer in double
// precision, forward and backward. It shares no code with the distributed path except the inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "layer_config.hpp"

namespace basp::validate {

// Global tensors, row-major: y and dx [B][S][hidden]; weight gradients shaped like the weights.
struct LayerResult {
  std::vector<double> y, dx, dwq, dwk, dwv, dwo;
  std::vector<int> row_rank;  // distributed runs: the rank that computed each row of y and dx
};

LayerResult reference_layer(std::uint64_t seed, const LayerShape& shape);

}  // namespace basp::validate
