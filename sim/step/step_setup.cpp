// Loads what a job runs on (topology file, calibration, model, GPU kind) and resolves the job's
// sizes and settings against it, refusing bad input with the flag that set it.
#include "step_setup.hpp"

#include "input_error.hpp"
#include "topology_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace basp {

namespace {

// What --gpus refusals add when nodes are excluded.
std::string excluded_text(int excluded, int nodes) {
  return excluded == 0 ? "" : " with " + std::to_string(excluded) + " of the " + std::to_string(nodes) + " nodes excluded";
}

}  // namespace

StepSetup prepare_step(const StepConfig& in, const Calibration* given, bool check_job) {
  StepSetup setup;
  StepReport& rep = setup.report;
  rep.config = in;
  StepConfig& c = rep.config;
  TopologyFile file = read_topology_file(in.topology, in.overrides, gpu_kind_names());
  const std::string own = file.templ ? file.templ->calibration : file.explicit_topology.calibration;
  if (given) {
    rep.calibration = *given;
    c.calibration = given->name;
  } else {
    if (c.calibration.empty()) c.calibration = own.empty() ? "none" : own;
    rep.calibration = load_calibration(c.calibration);
  }
  rep.model = load_model(in.model);
  if (check_job) {
    const Topology& e = file.explicit_topology;
    const int per_node = file.templ ? file.templ->node.gpus : e.gpus_per_node;
    const int nodes = file.templ ? file.templ->nodes : e.graph[e.gpus.back()].node + 1;
    const int excluded = static_cast<int>(excluded_nodes(file.outages.exclude_nodes, nodes).size());
    StepConfig job = c;
    resolve_job(job, (file.templ ? file.templ->nodes * per_node : static_cast<int>(e.gpus.size())) - excluded * per_node,
                file.templ ? file.templ->name : e.name, excluded_text(excluded, nodes));
    for (Strategy s : job.strategies) make_layout(job, rep.model, s, job.gpus, per_node);
  }
  rep.cluster = std::make_shared<const ClusterBuilds>(
      std::move(file), [cal = rep.calibration](Topology& t) { apply_calibration(t, cal); });
  rep.gpu_kind = rep.topology().gpu_kind;
  setup.gpu = lookup_gpu_kind(rep.gpu_kind);
  return setup;
}

void resolve_job(StepConfig& c, const StepReport& cluster) {
  resolve_job(c, cluster.gpus(), cluster.topology().name,
              excluded_text(static_cast<int>(cluster.topology().excluded_nodes.size()), cluster.nodes()));
}

void resolve_job(StepConfig& c, int available, const std::string& topology, const std::string& outages) {
  if (c.gpus == 0) c.gpus = available;
  if (c.gpus < 1 || c.gpus > available)
    throw InputError("", 0, "--gpus", std::to_string(c.gpus) + " GPUs asked for; " + topology + " has " +
                                          std::to_string(available) + outages + " (use --nodes to grow a template topology)");
  if (c.sp == 0) {  // every GPU, or dp's only degree when dp is all that is asked for
    const bool dp_only = !c.strategies.empty() && std::all_of(c.strategies.begin(), c.strategies.end(),
                                                              [](Strategy s) { return s == Strategy::dp; });
    c.sp = dp_only ? 1 : c.gpus;
  }
  c.strategies = strategies_at(c.strategies, c.sp);  // at N = 1 every strategy is dp
  if (c.seq < 1) throw InputError("", 0, "--seq", "must be at least 1 token");
  if (c.zero < 0 || c.zero > 3) throw InputError("", 0, "--zero", "ZeRO stages are 0, 1, 2 and 3");
  if (c.zero_group == 0) c.zero_group = c.gpus;
  if (c.zero_group < 1 || c.gpus % c.zero_group != 0)
    throw InputError("", 0, "--zero-group", std::to_string(c.zero_group) + " does not divide the job's " +
                                                std::to_string(c.gpus) + " GPUs");
  if (c.zero == 0 && c.zero_group != c.gpus)
    throw InputError("", 0, "--zero-group", "ZeRO stage 0 shards nothing; hierarchical sharding needs --zero 1, 2 or 3");
  if (c.zero == 0 && c.zero_overlap_comm != OverlapComm::deepspeed_default)
    throw InputError("", 0, "--zero-overlap-comm",
                     "ZeRO stage 0 has no overlap_comm (DeepSpeed all-reduces its gradients after backward, on the "
                     "compute stream); it needs --zero 1, 2 or 3");
  for (const ZeroSetting& z : zero_settings) {
    const double v = c.*z.field, fallback = StepConfig{}.*z.field;
    if (!(v >= 0) || !std::isfinite(v)) {
      const int exponent = static_cast<int>(std::floor(std::log10(fallback)));
      char shown[32];  // as DeepSpeed's documentation writes it: 5e8
      std::snprintf(shown, sizeof shown, "%ge%d", fallback / std::pow(10.0, exponent), exponent);
      throw InputError("", 0, std::string(z.flag),
                       std::string("must be a number of elements, 0 or more (DeepSpeed's default ") + shown + ")");
    }
  }
  if (c.strategies.empty()) throw InputError("", 0, "--strategy", "name at least one strategy");
  if (c.accumulation < 1) throw InputError("", 0, "--accumulation", "must be at least 1 micro-step");
  const Stragglers& s = c.stragglers;
  if (!(s.compute_jitter >= 0.0 && s.compute_jitter < 1.0))
    throw InputError("", 0, "--compute-jitter", "must be at least 0 and below 1 (factors drawn from [1 - j, 1 + j])");
  for (auto [flag, fraction, factor] : {std::tuple{"--slow-gpus", s.slow_gpu_fraction, s.slow_gpu_factor},
                                        std::tuple{"--slow-links", s.slow_link_fraction, s.slow_link_factor}}) {
    if (!(fraction >= 0.0 && fraction <= 1.0))
      throw InputError("", 0, flag, "the fraction must be between 0 and 1");
    if (!(factor >= 1.0 && factor <= 1e6))
      throw InputError("", 0, flag, "the factor must be between 1 (not slowed) and 1e6");
  }
  if (s.any() && c.engine == EngineMode::classes)
    throw InputError("", 0, "--engine",
                     "classes: stragglers and jitter make the ranks differ; use --engine full or auto");
}

}  // namespace basp
