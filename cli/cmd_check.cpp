// `basp check`: simulates exactly the layer configuration a basp-validate layer run measured and
// prints measured versus predicted per phase and strategy, with relative errors and the BASP speedup;
// for step-level figures, simulates each step and prints every figure measured versus predicted.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "calibration.hpp"
#include "commands.hpp"
#include "gpu_kind.hpp"
#include "input_error.hpp"
#include "layer_prediction.hpp"
#include "least_squares.hpp"
#include "measurements.hpp"
#include "options.hpp"
#include "step_fit.hpp"

namespace basp::cli {
namespace {

struct CheckArgs {
  TopologyOptions topo;
  std::vector<std::string> measurements;
  std::string calibration;
  FormatOptions format;
};

// The end of every check: the JSON object (`items` under `key`) or the table's last line, with
// the median and max |relative error| over the compared values (phases or figures).
void print_summary(Format format, const Topology& topo, const Calibration& cal, const char* key,
                   const nlohmann::json& items, const std::vector<double>& errors, const char* compared) {
  const double med = fitting::median(errors);
  const double max = errors.empty() ? 0.0 : *std::max_element(errors.begin(), errors.end());
  if (format == Format::json)
    std::cout << nlohmann::json{{"topology", topo.name},
                                {"calibration", cal.name},
                                {key, items},
                                {"median_abs_relative_error", med},
                                {"max_abs_relative_error", max}}
                     .dump(1)
              << "\n";
  else if (format == Format::table)
    std::printf("# relative error over %zu %s: median %.1f%%, max %.1f%%\n", errors.size(), compared,
                100 * med, 100 * max);
}

// Step-level figures: each whole step simulated under the calibration, every figure compared.
int run_step_check(const CheckArgs& a, const Topology& topo, const Calibration& cal,
                   const fitting::Measurements& m) {
  const std::vector<double> predicted =
      fitting::predict_step_figures(a.topo.topology, a.topo.resolved_overrides(), cal, m);
  std::vector<double> errors;
  nlohmann::json figures = nlohmann::json::array();
  if (a.format.format() == Format::table) {
    for (const auto& s : m.sources) {
      if (s.command != "step") continue;
      std::printf("# basp check: %s (fnv1a64 %s; %s)\n", s.path.c_str(), s.hash.c_str(), s.hardware.c_str());
      std::printf("#  provenance: %s\n", s.provenance.c_str());
    }
    std::printf("#  predicted on topology %s with calibration %s\n#\n", topo.name.c_str(), cal.name.c_str());
    std::printf("# %-44s %12s %12s %9s\n", "figure", "measured", "predicted", "error");
  } else if (a.format.format() == Format::csv) {
    std::printf("measurements,figure,measured,predicted,relative_error\n");
  }
  for (std::size_t i = 0; i < m.steps.size(); ++i) {
    const fitting::StepObservation& o = m.steps[i];
    const std::string label = fitting::step_figure_label(o);
    const double err = (predicted[i] - o.value) / o.value;
    errors.push_back(std::abs(err));
    const std::string& path = m.sources[m.step_settings[o.setting].source].path;
    if (a.format.format() == Format::table)
      std::printf("  %-44s %12.5g %12.5g %+8.1f%%\n", label.c_str(), o.value, predicted[i], 100 * err);
    else if (a.format.format() == Format::csv)
      std::printf("%s,%s,%.9g,%.9g,%.6g\n", path.c_str(), label.c_str(), o.value, predicted[i], err);
    figures.push_back({{"measurements", path},
                       {"figure", label},
                       {"measured", o.value},
                       {"predicted", predicted[i]},
                       {"relative_error", err}});
  }
  print_summary(a.format.format(), topo, cal, "figures", figures, errors, "figures");
  return 0;
}

int run_check(const CheckArgs& a) {
  Topology topo = a.topo.load();
  const std::string cal_name = !a.calibration.empty()     ? a.calibration
                               : topo.calibration.empty() ? "none"
                                                          : topo.calibration;
  const Calibration cal = load_calibration(cal_name);
  const fitting::Measurements m = fitting::read_measurements(a.measurements);
  if (!m.steps.empty() && !m.layers.empty())
    throw InputError("", 0, "--measurements", "check layer runs and step-level figures separately");
  if (!m.steps.empty()) return run_step_check(a, topo, cal, m);
  apply_calibration(topo, cal);
  const GpuKind* gpu = lookup_gpu_kind(topo.gpu_kind);
  if (!gpu) throw InputError(topo.source, 0, "gpu", "unknown GPU kind '" + topo.gpu_kind + "'");
  if (m.layers.empty())
    throw InputError("", 0, "--measurements",
                     "no layer runs or step figures in these files: give the JSON of basp-validate layer, "
                     "or a step file");
  nlohmann::json runs = nlohmann::json::array();
  std::vector<double> all_errors;
  if (a.format.format() == Format::csv)
    std::printf("measurements,strategy,group_size,phase,measured_s,measured_min_s,measured_max_s,predicted_s,"
                "relative_error\n");
  for (const fitting::LayerRun& run : m.layers) {
    const auto cmp = fitting::predict_layer(topo, *gpu, cal.compute, run);
    const auto& src = m.sources[run.source];
    if (a.format.format() == Format::table) {
      std::printf("# basp check: %s (fnv1a64 %s; %s)\n", src.path.c_str(), src.hash.c_str(),
                  src.hardware.c_str());
      std::printf(
          "#  layer: heads %d, kv heads %d, head dim %ld, hidden %ld, seq %ld, micro-batch %d, %d ranks, "
          "%s\n",
          run.heads, run.kv_heads, run.head_dim, run.hidden, run.seq, run.batch, run.ranks,
          run.precision.c_str());
      std::printf("#  predicted on topology %s with calibration %s\n#\n", topo.name.c_str(),
                  cal.name.c_str());
      std::printf("#%9s %6s %14s %12s %12s %12s %12s %9s\n", "strategy", "group", "phase", "measured",
                  "min", "max", "predicted", "error");
      std::printf("#%9s %6s %14s %12s %12s %12s %12s %9s\n", "", "(P)", "", "median (us)", "(us)", "(us)",
                  "(us)", "(%)");
    }
    nlohmann::json strategies = nlohmann::json::array();
    for (const auto& s : cmp) {
      nlohmann::json phases = nlohmann::json::array();
      for (const auto& p : s.phases) {
        all_errors.push_back(std::abs(p.relative_error()));
        if (a.format.format() == Format::table)
          std::printf(" %9s %6d %14s %12.1f %12.1f %12.1f %12.1f %+9.1f\n", s.strategy.c_str(), s.group_size,
                      p.name.c_str(), p.measured_s * 1e6, p.measured_min_s * 1e6, p.measured_max_s * 1e6,
                      p.predicted_s * 1e6, 100 * p.relative_error());
        if (a.format.format() == Format::csv)
          std::printf("%s,%s,%d,%s,%.9g,%.9g,%.9g,%.9g,%.6g\n", src.path.c_str(), s.strategy.c_str(),
                      s.group_size, p.name.c_str(), p.measured_s, p.measured_min_s, p.measured_max_s,
                      p.predicted_s, p.relative_error());
        phases.push_back({{"name", p.name},
                          {"measured_s", p.measured_s},
                          {"measured_min_s", p.measured_min_s},
                          {"measured_max_s", p.measured_max_s},
                          {"predicted_s", p.predicted_s},
                          {"relative_error", p.relative_error()}});
        if (p.measured_isolated_s > 0) phases.back()["measured_isolated_s"] = p.measured_isolated_s;
      }
      const double e_a2a = (s.predicted_a2a_s - s.measured_a2a_s) / s.measured_a2a_s;
      const double e_total = (s.predicted_total_s - s.measured_total_s) / s.measured_total_s;
      if (a.format.format() == Format::table) {
        std::printf(" %9s %6d %14s %12.1f %12s %12s %12.1f %+9.1f\n", s.strategy.c_str(), s.group_size,
                    "a2a_total", s.measured_a2a_s * 1e6, "", "", s.predicted_a2a_s * 1e6, 100 * e_a2a);
        std::printf(" %9s %6d %14s %12.1f %12s %12s %12.1f %+9.1f\n", s.strategy.c_str(), s.group_size,
                    "layer_total", s.measured_total_s * 1e6, "", "", s.predicted_total_s * 1e6, 100 * e_total);
      }
      strategies.push_back({{"strategy", s.strategy},
                            {"group_size", s.group_size},
                            {"phases", phases},
                            {"measured_a2a_s", s.measured_a2a_s},
                            {"predicted_a2a_s", s.predicted_a2a_s},
                            {"measured_total_s", s.measured_total_s},
                            {"predicted_total_s", s.predicted_total_s},
                            {"total_relative_error", e_total}});
    }
    nlohmann::json r = {{"measurements", src.path}, {"hash", src.hash}, {"strategies", strategies}};
    const auto find = [&](const char* name) {
      return std::find_if(cmp.begin(), cmp.end(), [&](const auto& s) { return s.strategy == name; });
    };
    if (find("ulysses") != cmp.end() && find("basp") != cmp.end()) {
      const double measured = find("ulysses")->measured_total_s / find("basp")->measured_total_s;
      const double predicted = find("ulysses")->predicted_total_s / find("basp")->predicted_total_s;
      r["speedup"] = {{"measured", measured}, {"predicted", predicted}};
      if (a.format.format() == Format::table)
        std::printf("# BASP speedup over Ulysses (layer): measured %.3fx, predicted %.3fx\n", measured,
                    predicted);
    }
    runs.push_back(r);
  }
  print_summary(a.format.format(), topo, cal, "runs", runs, all_errors, "phases");
  return 0;
}

}  // namespace

void add_check_command(CLI::App& app, Chosen& chosen) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check", "Predict measured layer runs (phase by phase) or step-level figures and compare");
  args->topo.add_to(*cmd, "");
  cmd->get_option("--topology")->required();
  cmd->add_option("--measurements,-m", args->measurements, "basp-validate layer --json files, or step files")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--calibration", args->calibration,
                  "Calibration NAME, FILE or none (default: the topology's)");
  args->format.add_to(*cmd);
  cmd->callback([args, &chosen] {
    chosen.check = [args] {
      args->topo.read();
      fitting::read_measurements(args->measurements);
    };
    chosen.run = [args] { return run_check(*args); };
  });
}

}  // namespace basp::cli
