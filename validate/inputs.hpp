// Deterministic inputs of the global problem (activations, weights, output gradient), generated
// element by element from a seed so that every rank makes exactly its own slice, and the reference all of it.
#pragma once

#include <cstdint>
#include <vector>

#include "layer_config.hpp"

namespace basp::validate {

enum class InputTensor : std::uint64_t { x = 1, wq, wk, wv, wo, dy };

// Uniform in [-scale, scale): a pure function of (seed, tensor, index).
double input_value(std::uint64_t seed, InputTensor t, std::uint64_t index, double scale);
double input_scale(InputTensor t, const LayerShape& shape);

// Weights are whole on every rank, row-major: wq [hidden][H·dh], wk and wv [hidden][Hkv·dh],
// wo [H·dh][hidden].
std::vector<float> weight(std::uint64_t seed, InputTensor t, const LayerShape& shape);
long weight_rows(InputTensor t, const LayerShape& shape);
long weight_cols(InputTensor t, const LayerShape& shape);

// A rank's tokens of x or dy, [nseq][chunk][hidden], out of the global [B][S][hidden].
std::vector<float> token_slice(std::uint64_t seed, InputTensor t, const LayerShape& shape,
                               const RankPlan& plan);

}  // namespace basp::validate
