// `simulate --uncertainty` as people read it: each parameter's range with its source, then each
// strategy's figures as low / expected / high (table lines, or the JSON object `uncertainty`).
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>

#include "uncertainty.hpp"

namespace basp::cli {

void print_uncertainty(std::ostream& out, const UncertaintyReport& u);
nlohmann::ordered_json uncertainty_json(const UncertaintyReport& u);

}  // namespace basp::cli
