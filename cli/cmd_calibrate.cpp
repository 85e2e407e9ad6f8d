// `basp calibrate`: fits the topology's link parameters and software overheads to basp-validate
// measurements (by simulating every measured run) and writes a calibration file with the fit report.
#include "calibration.hpp"
#include "calibration_writer.hpp"
#include "commands.hpp"
#include "input_error.hpp"
#include "link_fit.hpp"
#include "measurements.hpp"
#include "options.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace basp::cli {
namespace {

struct CalibrateArgs {
  TopologyOptions topo;
  std::vector<std::string> measurements;
  std::string out, name;
  FormatOptions format;
};

void print_report(const fitting::LinkFit& fit, const fitting::Measurements& m, const std::string& out_path) {
  std::printf("# basp calibrate: %zu all-to-all runs from %zu file(s), %d iterations -> %s\n",
              fit.quality.measured.size(), m.sources.size(), fit.iterations, out_path.c_str());
  for (const auto& s : m.sources) std::printf("#  %s (fnv1a64 %s, %s: %s)\n", s.path.c_str(), s.hash.c_str(), s.command.c_str(), s.hardware.c_str());
  std::printf("#\n# %-28s %14s %14s %8s\n", "parameter", "value", "std. error", "");
  for (const auto& p : fit.parameters) {
    const bool time = p.name.find("efficiency") == std::string::npos;
    const double scale = time ? 1e6 : 1.0;
    const char* unit = time ? " us" : "   ";
    if (p.free)
      std::printf("  %-28s %11.5g%s %11.3g%s %8s\n", p.name.c_str(), p.value * scale, unit, p.sigma * scale, unit, "fitted");
    else
      std::printf("  %-28s %11.5g%s %14s %8s\n", p.name.c_str(), p.value * scale, unit, "-", "held");
  }
  const auto& q = fit.quality;
  std::printf("#\n# fit quality: R^2 %.6f, relative residual median %.2f%%, max %.2f%%\n", q.r2,
              100 * q.median_relative_residual, 100 * q.max_relative_residual);
}

int run_calibrate(const CalibrateArgs& a) {
  const Topology topo = a.topo.load();
  const fitting::Measurements m = fitting::read_measurements(a.measurements);
  if (m.comm.empty())
    throw InputError("", 0, "--measurements", "no all-to-all runs in these files: give the JSON of basp-validate comm "
                                              "(mpirun -np N basp-validate comm -b 1K -e 64M -f 2 --json comm.json)");
  if (!m.compute.empty())
    std::cerr << "basp: note: " << m.compute.size()
              << " compute rows were read but this version fits link and software parameters only; compute "
                 "efficiencies keep their defaults\n";
  const fitting::LinkFit fit = fitting::fit_links(topo, Calibration{}, m.comm);
  fitting::CalibrationDocument doc;
  doc.name = a.name.empty() ? std::filesystem::path(a.out).stem().string() : a.name;
  doc.topology = topo.name;
  doc.measurements = &m;
  doc.links = &fit;
  std::ofstream out(a.out);
  if (!out) throw InputError(a.out, 0, "--out", "cannot open this file for writing");
  out << fitting::calibration_yaml(doc);
  out.close();
  if (a.format.format() == Format::json) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : fit.parameters)
      params.push_back({{"name", p.name}, {"value", p.value},
                        {"sigma", p.free && std::isfinite(p.sigma) ? nlohmann::json(p.sigma) : nlohmann::json(nullptr)},
                        {"free", p.free}});
    nlohmann::json samples = nlohmann::json::array();
    for (std::size_t i = 0; i < m.comm.size(); ++i)
      samples.push_back({{"ranks", m.comm[i].ranks}, {"groups", m.comm[i].groups}, {"size_bytes", m.comm[i].size_bytes},
                         {"measured_s", fit.quality.measured[i]}, {"predicted_s", fit.quality.predicted[i]}});
    std::cout << nlohmann::json{{"out", a.out}, {"topology", topo.name}, {"parameters", params},
                                {"r2", fit.quality.r2}, {"max_relative_residual", fit.quality.max_relative_residual},
                                {"median_relative_residual", fit.quality.median_relative_residual},
                                {"samples", samples}}.dump(1)
              << "\n";
  } else {
    print_report(fit, m, a.out);
  }
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, std::function<int()>& run) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit link and software parameters to basp-validate measurements");
  args->topo.add_to(*cmd, "");
  cmd->get_option("--topology")->required();
  cmd->add_option("--measurements,-m", args->measurements, "basp-validate --json files (comm runs are fitted)")
      ->required()->expected(1, -1);
  cmd->add_option("--out,-o", args->out, "Calibration file to write")->required();
  cmd->add_option("--name", args->name, "Name inside the file (default: the file's stem)");
  args->format.add_to(*cmd);
  cmd->callback([args, &run] { run = [args] { return run_calibrate(*args); }; });
}

}  // namespace basp::cli
