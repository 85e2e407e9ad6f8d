// The `basp-validate layer` report: an nccl-tests-style table (configuration header, units row,
// one row per phase per strategy, check table, OK/FAILED footer) and the measurements JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "check.hpp"
#include "hardware.hpp"
#include "layer_run.hpp"

namespace basp::validate {

struct LayerReport {
  std::string model;      // model file name, or "custom"
  std::string precision;  // fp32 | bf16
  LayerRunOptions options;
  long attention_tile = 0;
  double timeout_s = 0;
  Hardware hardware;
  std::vector<StrategyMeasurement> runs;
  std::vector<std::vector<TensorCheck>> checks;   // per run, empty when not checked
  std::optional<double> strategies_max_abs_diff;  // when both ran and were gathered
  bool ok() const;
};

void print_layer_table(std::ostream& out, const LayerReport& r);
nlohmann::json layer_json(const LayerReport& r);

}  // namespace basp::validate
