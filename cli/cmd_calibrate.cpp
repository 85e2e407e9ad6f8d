// `basp calibrate`: fits the topology's link parameters, software overheads (by simulating every
// measured all-to-all) and compute efficiencies to basp-validate measurements, or the parameters a
// step-level file names to its figures (by simulating whole steps); writes a calibration file.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "calibration.hpp"
#include "calibration_writer.hpp"
#include "commands.hpp"
#include "compute_fit.hpp"
#include "gpu_kind.hpp"
#include "input_error.hpp"
#include "link_fit.hpp"
#include "measurements.hpp"
#include "options.hpp"
#include "parameter_names.hpp"
#include "step_fit.hpp"

namespace basp::cli {
namespace {

struct CalibrateArgs {
  TopologyOptions topo;
  std::vector<std::string> measurements;
  std::string out, name, start;
  std::vector<std::string> fit;
  FormatOptions format;
};

void print_quality(const char* what, const fitting::FitQuality& q, const char* samples = "runs") {
  std::printf("# %s fit: %zu %s, R^2 %.6f, relative residual median %.2f%%, max %.2f%%\n", what,
              q.measured.size(), samples, q.r2, 100 * q.median_relative_residual,
              100 * q.max_relative_residual);
}

void print_parameters(const fitting::Measurements& m, const std::string& out_path,
                      const std::vector<FittedParameter>& all) {
  std::printf("# basp calibrate: %zu file(s) -> %s\n", m.sources.size(), out_path.c_str());
  for (const auto& s : m.sources) {
    std::printf("#  %s (fnv1a64 %s, %s: %s)\n", s.path.c_str(), s.hash.c_str(), s.command.c_str(),
                s.hardware.c_str());
    if (!s.provenance.empty()) std::printf("#    provenance: %s\n", s.provenance.c_str());
  }
  std::printf("#\n# %-36s %14s %14s %8s\n", "parameter", "value", "std. error", "");
  for (const auto& p : all) {
    const bool time = p.name.rfind("software.", 0) == 0 || p.name.find("latency") != std::string::npos;
    const bool flops = p.name.find("half_flops") != std::string::npos;
    const double scale = time ? 1e6 : flops ? 1e-9 : 1.0;
    const char* unit = time ? " us" : flops ? " GF" : "   ";
    if (p.free && std::isfinite(p.sigma))
      std::printf("  %-36s %11.5g%s %11.3g%s %8s\n", p.name.c_str(), p.value * scale, unit, p.sigma * scale,
                  unit, "fitted");
    else if (p.free)  // as many runs as free parameters, or a singular fit: no standard error
      std::printf("  %-36s %11.5g%s %14s %8s\n", p.name.c_str(), p.value * scale, unit, "unknown", "fitted");
    else
      std::printf("  %-36s %11.5g%s %14s %8s\n", p.name.c_str(), p.value * scale, unit, "-", "held");
  }
  std::printf("#\n");
}

void print_report(const fitting::LinkFit* links, const fitting::ComputeFit* compute,
                  const fitting::Measurements& m, const std::string& out_path) {
  std::vector<FittedParameter> all;
  if (links) all = links->parameters;
  if (compute) all.insert(all.end(), compute->parameters.begin(), compute->parameters.end());
  print_parameters(m, out_path, all);
  if (links) print_quality("link", links->quality);
  if (compute) print_quality("compute", compute->quality);
}

// Every figure as measured, as simulated with --start, and as simulated with the fitted values.
void print_step_report(const fitting::StepFit& fit, const fitting::Measurements& m,
                       const std::string& out_path) {
  print_parameters(m, out_path, fit.parameters);
  print_quality("step", fit.quality, "figures");
  std::printf("#\n# %-40s %10s %10s %9s %10s %9s\n", "figure", "measured", "at start", "error", "fitted",
              "error");
  for (std::size_t i = 0; i < fit.labels.size(); ++i) {
    const double mv = fit.quality.measured[i], sv = fit.predicted_at_start[i], pv = fit.quality.predicted[i];
    std::printf("  %-40s %10.5g %10.5g %8.2f%% %10.5g %8.2f%%\n", fit.labels[i].c_str(), mv, sv,
                100 * (sv - mv) / mv, pv, 100 * (pv - mv) / mv);
  }
}

nlohmann::json parameters_json(const std::vector<FittedParameter>& ps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : ps)
    out.push_back(
        {{"name", p.name},
         {"value", p.value},
         {"sigma", p.free && std::isfinite(p.sigma) ? nlohmann::json(p.sigma) : nlohmann::json(nullptr)},
         {"free", p.free}});
  return out;
}

void print_parameters_csv(const std::vector<FittedParameter>& all) {
  std::printf("parameter,value,sigma,free\n");
  for (const auto& p : all) {
    char sigma[32] = "";  // empty: held, no standard error
    if (p.free && std::isfinite(p.sigma)) std::snprintf(sigma, sizeof sigma, "%.6g", p.sigma);
    std::printf("%s,%.9g,%s,%s\n", p.name.c_str(), p.value, sigma, p.free ? "true" : "false");
  }
}

// The flags that reshaped the topology, so that the file says what it was fitted on.
std::string overrides_text(const TopologyOptions& t) {
  std::string out;
  const TopologyOverrides& o = t.overrides;
  if (o.nodes) out += " --nodes " + std::to_string(*o.nodes);
  if (o.oversubscription) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", *o.oversubscription);
    out += std::string(" --oversubscription ") + b;
  }
  if (o.nodes_per_leaf) out += " --nodes-per-leaf " + std::to_string(*o.nodes_per_leaf);
  if (o.spines) out += " --spines " + std::to_string(*o.spines);
  if (!t.ecmp.empty()) out += " --ecmp " + t.ecmp;
  if (!t.cross_rail.empty()) out += " --cross-rail " + t.cross_rail;
  return out;
}

// The document's identity (name, topology as reshaped) and the file itself, for either fit.
fitting::CalibrationDocument document_for(const CalibrateArgs& a, const Topology& topo,
                                          const fitting::Measurements& m) {
  fitting::CalibrationDocument doc;
  doc.name = a.name.empty() ? std::filesystem::path(a.out).stem().string() : a.name;
  doc.topology = topo.name + overrides_text(a.topo);
  doc.measurements = &m;
  return doc;
}

void write_calibration_file(const std::string& path, const fitting::CalibrationDocument& doc) {
  std::ofstream out(path);
  if (!out) throw InputError(path, 0, "--out", "cannot open this file for writing");
  out << fitting::calibration_yaml(doc);
}

// Step-level figures: their own fit, from --start, through whole-step simulations.
int run_step_calibrate(const CalibrateArgs& a, const Topology& topo, const fitting::Measurements& m) {
  for (const auto& s : m.sources)
    if (s.command != "step")
      throw InputError(s.path, 0, "command",
                       "step-level figures are fitted on their own: calibrate the comm and compute runs "
                       "first, then pass that file as --start with the step files");
  const Calibration start = load_calibration(a.start.empty() ? "none" : a.start);
  const fitting::StepFit step =
      fitting::fit_step(a.topo.topology, a.topo.resolved_overrides(), start, m, a.fit);
  if (!step.converged)
    std::cerr << "basp: warning: the step fit stopped after " << step.iterations
              << " iterations without converging; check the residuals before using the file\n";
  fitting::CalibrationDocument doc = document_for(a, topo, m);
  doc.step = &step;
  // The start as the user named it (not this machine's resolved path), with its content hash.
  doc.start = start.name;
  if (start.source.empty()) {
    doc.start += " (the documented defaults)";
  } else {
    std::ifstream in(start.source, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    doc.start += " (--start " + a.start + ", fnv1a64 " + fitting::fnv1a_hex(bytes.str()) + ")";
  }
  write_calibration_file(a.out, doc);
  if (a.format.format() == Format::json) {
    nlohmann::json figures = nlohmann::json::array();
    for (std::size_t i = 0; i < step.labels.size(); ++i)
      figures.push_back({{"figure", step.labels[i]},
                         {"measured", step.quality.measured[i]},
                         {"predicted_at_start", step.predicted_at_start[i]},
                         {"predicted", step.quality.predicted[i]}});
    nlohmann::json j = {{"out", a.out},
                        {"topology", topo.name},
                        {"start", doc.start},
                        {"step",
                         {{"parameters", parameters_json(step.parameters)},
                          {"r2", step.quality.r2},
                          {"max_relative_residual", step.quality.max_relative_residual},
                          {"median_relative_residual", step.quality.median_relative_residual},
                          {"figures", figures}}}};
    std::cout << j.dump(1) << "\n";
  } else if (a.format.format() == Format::csv) {
    print_parameters_csv(step.parameters);
  } else {
    print_step_report(step, m, a.out);
  }
  return 0;
}

int run_calibrate(const CalibrateArgs& a) {
  const Topology topo = a.topo.load();
  const fitting::Measurements m = fitting::read_measurements(a.measurements);
  if (!m.steps.empty()) return run_step_calibrate(a, topo, m);
  if (!a.start.empty())
    throw InputError("", 0, "--start", "applies to step-level figures (a step measurements file) only");
  if (m.comm.empty() && m.compute.empty())
    throw InputError("", 0, "--measurements",
                     "no collective or compute runs in these files: give the JSON of "
                     "basp-validate comm and compute, or nccl-tests tables (scripts/nccl-tests-json.sh; "
                     "see docs/calibration.md)");
  // --fit restricts the link fit; compute runs always fit every compute efficiency.
  if (!a.fit.empty()) {
    if (m.comm.empty())
      throw InputError("", 0, "--fit",
                       "applies to link fits (basp-validate comm, nccl-tests tables) and step-level figures; "
                       "compute runs always fit every compute efficiency");
    for (const std::string& f : a.fit)
      if (fitting::selected_parameter(f, {"compute"}))
        throw InputError("", 0, "--fit",
                         "'" + f + "': compute runs always fit every compute efficiency; --fit names link "
                         "and software parameters here");
  }
  std::optional<fitting::LinkFit> links;
  std::optional<fitting::ComputeFit> compute;
  if (!m.comm.empty()) {
    links = fitting::fit_links(topo, Calibration{}, m.comm, a.fit);
    if (!links->converged)
      std::cerr << "basp: warning: the link fit stopped after " << links->iterations
                << " iterations without converging; check the residuals before using the file\n";
  }
  if (!m.compute.empty()) {
    const GpuKind* gpu = lookup_gpu_kind(topo.gpu_kind);
    if (!gpu) throw InputError(topo.source, 0, "gpu", "unknown GPU kind '" + topo.gpu_kind + "'");
    compute = fitting::fit_compute(*gpu, ComputeEfficiency{}, m.compute);
  }
  fitting::CalibrationDocument doc = document_for(a, topo, m);
  doc.links = links ? &*links : nullptr;
  doc.compute = compute ? &*compute : nullptr;
  write_calibration_file(a.out, doc);
  if (a.format.format() == Format::json) {
    nlohmann::json j = {{"out", a.out}, {"topology", topo.name}};
    if (links) {
      nlohmann::json samples = nlohmann::json::array();
      for (std::size_t i = 0; i < links->samples.size(); ++i)
        samples.push_back({{"op", collective_info(links->samples[i].op).name},
                           {"ranks", links->samples[i].ranks},
                           {"groups", links->samples[i].groups},
                           {"size_bytes", links->samples[i].size_bytes},
                           {"measured_s", links->quality.measured[i]},
                           {"predicted_s", links->quality.predicted[i]}});
      j["links"] = {{"parameters", parameters_json(links->parameters)},
                    {"r2", links->quality.r2},
                    {"max_relative_residual", links->quality.max_relative_residual},
                    {"median_relative_residual", links->quality.median_relative_residual},
                    {"samples", samples}};
    }
    if (compute)
      j["compute"] = {{"parameters", parameters_json(compute->parameters)},
                      {"r2", compute->quality.r2},
                      {"max_relative_residual", compute->quality.max_relative_residual},
                      {"median_relative_residual", compute->quality.median_relative_residual}};
    std::cout << j.dump(1) << "\n";
  } else if (a.format.format() == Format::csv) {
    std::vector<FittedParameter> all;
    if (links) all = links->parameters;
    if (compute) all.insert(all.end(), compute->parameters.begin(), compute->parameters.end());
    print_parameters_csv(all);
  } else {
    print_report(links ? &*links : nullptr, compute ? &*compute : nullptr, m, a.out);
  }
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, Chosen& chosen) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Fit link, software and compute parameters to basp-validate measurements");
  args->topo.add_to(*cmd, "");
  cmd->get_option("--topology")->required();
  cmd->add_option("--measurements,-m", args->measurements,
                  "basp-validate --json files (comm runs fit links, compute runs fit efficiencies), or "
                  "step-level figure files")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--out,-o", args->out, "Calibration file to write")->required();
  cmd->add_option("--name", args->name, "Name inside the file (default: the file's stem)");
  cmd->add_option("--start", args->start,
                  "Step figures: calibration (NAME or FILE) to start from; parameters not fitted keep "
                  "its values (default: none, the documented defaults)");
  cmd->add_option("--fit", args->fit,
                  "Parameters to fit, by name or prefix: link fits (links.nic.efficiency, software, ...) "
                  "and step figures (also compute, ...); the others keep the start's or the topology's "
                  "values; default: all. Compute runs always fit every compute efficiency")
      ->delimiter(',');
  args->format.add_to(*cmd);
  cmd->callback([args, &chosen] {
    chosen.check = [args] {
      args->topo.read();
      fitting::read_measurements(args->measurements);
    };
    chosen.run = [args] { return run_calibrate(*args); };
  });
}

}  // namespace basp::cli
