// Times are written in microseconds with their unit, efficiencies as fractions, all with enough
// digits that reading the file back reproduces the fit's predictions to 1e-6.
#include "calibration_writer.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace basp::fitting {

namespace {
std::string num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.7g", v);
  return b;
}
std::string micros(double s) {
  return num(s * 1e6) + " us";
}
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;  // control characters: YAML would refuse them
  }
  return out + "\"";
}
// Text inside a block scalar: a newline or other control character would end or break it.
std::string one_line(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return s;
}
void quality(std::ostringstream& o, const char* what, const FitQuality& q) {
  o << "  " << what << ":\n";
  o << "    samples: " << q.measured.size() << "\n";
  o << "    r2: " << num(q.r2) << "\n";
  o << "    max_relative_residual: " << num(q.max_relative_residual) << "\n";
  o << "    median_relative_residual: " << num(q.median_relative_residual) << "\n";
}

void link_and_software_values(std::ostringstream& o, const Calibration& c) {
  bool any_link = false;
  for (const LinkCalibration& l : c.links) any_link = any_link || l.efficiency || l.latency_s;
  if (any_link) {
    o << "links:\n";
    for (LinkClass cls : link_classes) {
      const LinkCalibration& l = c.links[cls];
      if (!l.efficiency && !l.latency_s) continue;
      o << "  " << to_string(cls) << ":\n";
      if (l.efficiency) o << "    efficiency: " << num(*l.efficiency) << "\n";
      if (l.latency_s) o << "    latency: " << micros(*l.latency_s) << "\n";
    }
  }
  if (c.launch_s || c.per_peer_s) {
    o << "software:\n";
    if (c.launch_s) o << "  launch_overhead: " << micros(*c.launch_s) << "\n";
    if (c.per_peer_s) o << "  per_peer_overhead: " << micros(*c.per_peer_s) << "\n";
  }
}

// `memory`: written only when it was fitted or held from a start file (a compute microbenchmark
// fit has no memory-bound runs and leaves the default).
void compute_values(std::ostringstream& o, const ComputeEfficiency& e, bool memory) {
  o << "compute:\n";
  o << "  gemm: " << num(e.gemm) << "\n  attention_forward: " << num(e.attention_forward) << "\n";
  o << "  attention_backward: " << num(e.attention_backward) << "\n";
  if (memory) o << "  memory: " << num(e.memory) << "\n";
  if (e.rotary) o << "  rotary: " << num(*e.rotary) << "\n";
  if (e.unpack_heads) o << "  unpack_heads: " << num(*e.unpack_heads) << "\n";
  if (e.gemm_half_flops > 0) o << "  gemm_half_flops: " << num(e.gemm_half_flops) << "\n";
  if (e.attention_forward_half_flops > 0)
    o << "  attention_forward_half_flops: " << num(e.attention_forward_half_flops) << "\n";
  if (e.attention_backward_half_flops > 0)
    o << "  attention_backward_half_flops: " << num(e.attention_backward_half_flops) << "\n";
}

void header(std::ostringstream& o, const CalibrationDocument& d, const std::string& description) {
  o << "# Fitted by `basp calibrate` (least squares through the simulator; calibrations/README.md).\n";
  o << "name: " << quoted(d.name) << "\n";
  o << "description: " << quoted(description) << "\n";
  o << "topology: " << quoted(d.topology) << "\n";
  o << "measurements: |\n";
  for (const MeasurementSource& s : d.measurements->sources) {
    o << "  " << one_line(s.path) << " (fnv1a64 " << s.hash << ", " << one_line(s.command) << ", "
      << one_line(s.hardware) << ")\n";
    o << "    config: " << one_line(s.config) << "\n";
    if (!s.provenance.empty()) o << "    provenance: " << one_line(s.provenance) << "\n";
  }
}
}  // namespace

std::string calibration_yaml(const CalibrationDocument& d) {
  std::ostringstream o;
  if (d.step) {
    header(o, d,
           "fitted by basp calibrate on " + std::to_string(d.step->quality.measured.size()) +
               " step-level figures, starting from " + d.start);
    o << "sources: |\n  Every figure of the files above was simulated as a whole training step (Ulysses and\n"
         "  BASP, every model it names) and the parameters marked free: true minimise the relative\n"
         "  errors. The others (marked free: false, or not fitted at all) keep the start's values:\n"
         "  "
      << one_line(d.start) << "\n";
    link_and_software_values(o, d.step->calibration);
    compute_values(o, d.step->calibration.compute, true);
  } else {
    const std::size_t comm_runs = d.links ? d.links->quality.measured.size() : 0;
    const std::size_t compute_runs = d.compute ? d.compute->quality.measured.size() : 0;
    header(o, d,
           "fitted by basp calibrate on " + std::to_string(comm_runs) + " collective and " +
               std::to_string(compute_runs) + " compute runs");
    o << "sources: |\n  Every collective run of the files above (all-to-alls, and all-gathers and reduce-scatters\n"
         "  of nccl-tests tables) was simulated on the topology (contention included) and the link and\n"
         "  software parameters minimise the relative errors; ";
    if (compute_runs > 0)
      o << "compute efficiencies per\n"
           "  class are e*F/(F + F_half) of the GPU kind's peak (memory-bound kernels: e of its memory\n"
           "  bandwidth), fitted to the compute runs. ";
    else
      o << "no compute runs: compute\n  efficiencies keep the documented defaults. ";
    o << "Parameters marked free: false could not be\n"
         "  told apart by these runs, or were not named by --fit, and keep the topology's (or default)\n"
         "  value.\n";
    if (d.links) link_and_software_values(o, d.links->calibration);
    if (d.compute && compute_runs > 0) compute_values(o, d.compute->efficiency, d.compute->memory_fitted);
  }
  o << "fit:\n";
  if (d.links) quality(o, "links", d.links->quality);
  if (d.compute && !d.compute->quality.measured.empty()) quality(o, "compute", d.compute->quality);
  if (d.step) quality(o, "step", d.step->quality);
  o << "  parameters:\n";
  std::vector<FittedParameter> all;
  if (d.links) all = d.links->parameters;
  if (d.compute) all.insert(all.end(), d.compute->parameters.begin(), d.compute->parameters.end());
  if (d.step) all = d.step->parameters;
  for (const FittedParameter& p : all) {
    o << "    - name: " << p.name << "\n      value: " << num(p.value) << "\n";
    // Free but without a standard error: as many runs as parameters (no degrees of freedom left).
    const std::string sigma = !p.free ? "held" : std::isfinite(p.sigma) ? quoted(num(p.sigma)) : "unknown";
    o << "      sigma: " << sigma << "\n";
    o << "      free: " << (p.free ? "true" : "false") << "\n";
  }
  return o.str();
}

}  // namespace basp::fitting
