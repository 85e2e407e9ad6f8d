// Reads calibration files (fields in calibrations/README.md) and applies them to a topology; the
// simulator sees only the calibrated capacities, latencies and overheads.
#include "calibration.hpp"

#include "gpu_kind.hpp"

#include "data_files.hpp"
#include "input_error.hpp"
#include "input_ranges.hpp"
#include "yaml_fields.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace basp {

const PhysicalRange* fitted_parameter_range(const std::string& name) {
  const auto ends_with = [&](std::string_view tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  const auto starts_with = [&](std::string_view head) { return name.rfind(head, 0) == 0; };
  if (starts_with("compute.") && ends_with("_half_flops")) return &ranges::flops;
  if (starts_with("compute.")) return &ranges::efficiency;
  if (starts_with("software.") || (starts_with("links.") && ends_with(".latency"))) return &ranges::latency;
  if (starts_with("links.") && ends_with(".efficiency")) return &ranges::efficiency;
  return nullptr;
}

Calibration load_calibration(const std::string& name_or_path) {
  Calibration c;
  if (name_or_path == "none") return c;
  const std::string file = resolve_data_file("calibrations", name_or_path);
  YamlFields f(load_yaml_file(file), file, "");
  c.source = file;
  c.name = f.text("name");
  f.text("description", "");
  f.text("sources", "");
  f.text("topology", "");
  f.text("measurements", "");  // free text: the measurement files it was fitted on
  if (f.has("links")) {
    YamlFields links = f.map("links");
    for (LinkClass cls : link_classes) {
      const std::string key(to_string(cls));
      if (!links.has(key)) continue;
      YamlFields l = links.map(key);
      if (l.has("efficiency")) c.links[cls].efficiency = l.number("efficiency", ranges::efficiency);
      if (l.has("latency")) c.links[cls].latency_s = l.quantity("latency", ranges::latency);
      l.reject_unknown();
    }
    links.reject_unknown();
  }
  if (f.has("software")) {
    YamlFields s = f.map("software");
    if (s.has("launch_overhead")) c.launch_s = s.quantity("launch_overhead", ranges::latency);
    if (s.has("per_peer_overhead")) c.per_peer_s = s.quantity("per_peer_overhead", ranges::latency);
    s.reject_unknown();
  }
  if (f.has("compute")) {
    YamlFields e = f.map("compute");
    ComputeEfficiency& k = c.compute;
    k.gemm = e.number("gemm", ranges::efficiency, k.gemm);
    k.attention_forward = e.number("attention_forward", ranges::efficiency, k.attention_forward);
    k.attention_backward = e.number("attention_backward", ranges::efficiency, k.attention_backward);
    k.memory = e.number("memory", ranges::efficiency, k.memory);
    if (e.has("rotary")) k.rotary = e.number("rotary", ranges::efficiency);
    if (e.has("unpack_heads")) k.unpack_heads = e.number("unpack_heads", ranges::efficiency);
    k.gemm_half_flops = e.number("gemm_half_flops", ranges::flops, 0.0);
    k.attention_forward_half_flops = e.number("attention_forward_half_flops", ranges::flops, 0.0);
    k.attention_backward_half_flops = e.number("attention_backward_half_flops", ranges::flops, 0.0);
    e.reject_unknown();
  }
  if (f.has("fit")) {  // written by `basp calibrate`: checked; the parameters' sigmas range --uncertainty
    YamlFields fit = f.map("fit");
    for (const char* part : {"links", "compute", "step"}) {
      if (!fit.has(part)) continue;
      YamlFields q = fit.map(part);
      q.integer("samples", 1, 1L << 40);
      q.number("r2", -1e300, 1.0);
      q.number("max_relative_residual", 0.0, 1e300);
      q.number("median_relative_residual", 0.0, 1e300);
      q.reject_unknown();
    }
    for (YamlFields& p : fit.maps("parameters")) {
      FittedParameter fp;
      fp.name = p.text("name");
      // The value in its parameter's physical range, as the field it stands for is.
      const PhysicalRange* range = fitted_parameter_range(fp.name);
      if (!range)
        p.fail("name", "'" + fp.name + "' is not a calibration parameter (links.CLASS.efficiency, "
                       "links.CLASS.latency, software.launch_overhead, software.per_peer_overhead, compute.*)");
      fp.value = p.number("value", *range);
      // A number, or "held" (not determined) or "unknown" (no degrees of freedom left).
      const std::string sigma = p.text("sigma");
      char* end = nullptr;
      const double s = std::strtod(sigma.c_str(), &end);
      const bool number = !sigma.empty() && end == sigma.c_str() + sigma.size() && std::isfinite(s) && s >= 0;
      if (!number && sigma != "held" && sigma != "unknown")
        throw InputError(file, p.line(), p.path() + ".sigma", "'" + sigma + "' is not a number >= 0, held or unknown");
      fp.sigma = number ? s : std::numeric_limits<double>::quiet_NaN();
      fp.free = p.boolean("free");
      p.reject_unknown();
      c.fitted.push_back(std::move(fp));
    }
    fit.reject_unknown();
  }
  f.reject_unknown();
  return c;
}

void apply_calibration(Topology& topo, const Calibration& cal) {
  for (Link& l : topo.links) {
    const LinkCalibration& lc = cal.links[l.cls];
    if (lc.efficiency) l.capacity_Bps *= *lc.efficiency;
    if (lc.latency_s) l.latency_s = *lc.latency_s;
  }
  if (cal.launch_s) topo.software.launch_s = *cal.launch_s;
  if (cal.per_peer_s) topo.software.per_peer_s = *cal.per_peer_s;
  // A device-to-device copy is a memory-bound kernel: it reads and writes every byte.
  if (const GpuKind* gpu = lookup_gpu_kind(topo.gpu_kind))
    topo.software.local_copy_Bps = gpu->hbm_Bps * cal.compute.memory / 2.0;
}

}  // namespace basp
