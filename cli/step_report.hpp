// How a simulated step is shown: the human table (with the memory verdict and, on request, the
// busiest links), one JSON object, and CSV rows that `basp sweep` also uses.
#pragma once

#include "step_run.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace basp::cli {

nlohmann::ordered_json config_json(const StepReport& report);
nlohmann::ordered_json result_json(const StepReport& report, const StrategyResult& result, bool links);

// CSV columns shared by simulate and sweep (which puts its varied keys first).
std::string csv_header();
std::string csv_row(const StepReport& report, const StrategyResult& result);

void print_table(const StepReport& report, bool links);

}  // namespace basp::cli
