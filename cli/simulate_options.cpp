// Registration of the simulate options and their conversion to a StepConfig. Sequence lengths
// take K (×1024) and M (×1024²) suffixes (parse_tokens), as people write them ("16K", "128K").
#include "simulate_options.hpp"

#include "engine_sizing.hpp"
#include "input_error.hpp"
#include "input_ranges.hpp"
#include "outages.hpp"
#include "units.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>

namespace basp::cli {

ZeroOptions::ZeroOptions() {
  const StepConfig defaults;
  for (std::size_t i = 0; i < zero_settings.size(); ++i) values[i] = defaults.*zero_settings[i].field;
}

void ZeroOptions::add_to(CLI::App& app, const std::string& layouts) {
  for (std::size_t i = 0; i < zero_settings.size(); ++i) {
    const std::string stages = zero_settings[i].first_stage == 3 ? "ZeRO-3" : "ZeRO-1/2/3";
    app.add_option(std::string(zero_settings[i].flag), values[i],
                   stages + layouts + ": " + std::string(zero_settings[i].help))
        ->capture_default_str()
        ->each([this, i](const std::string&) { given[i] = true; });
  }
  app.add_option("--zero-overlap-comm", overlap_comm,
                 "ZeRO-1/2/3" + layouts +
                     ": gradient reductions on a stream of their own beside backward's compute (on) or on the "
                     "compute stream (off); default: DeepSpeed's, on for ZeRO-3 only (its overlap_comm)")
      ->check(CLI::IsMember({"default", "on", "off"}))
      ->capture_default_str()
      ->each([this](const std::string&) { overlap_given = true; });
}

void ZeroOptions::apply(StepConfig& c) const {
  for (std::size_t i = 0; i < zero_settings.size(); ++i) c.*zero_settings[i].field = values[i];
  c.zero_overlap_comm = overlap_comm == "on"    ? OverlapComm::on
                        : overlap_comm == "off" ? OverlapComm::off
                                                : OverlapComm::deepspeed_default;
  if (c.zero == 0 && !overlap_given) c.zero_overlap_comm = OverlapComm::deepspeed_default;
}

void add_simulate_options(CLI::App& app, SimulateArgs& a) {
  a.topo.add_to(app, "paper-a100-2x4");
  a.topo.add_outages_to(app);
  app.add_option("--model,-m", a.model, "Shipped model name (models/NAME.yaml) or a YAML file")->capture_default_str();
  app.add_option("--seq", a.seq, "Tokens per sequence (16384, 16K, 128K)")->capture_default_str();
  app.add_option("--batch", a.batch, "Micro-batch: sequences per SP group (BASP's B)")
      ->check(within(ranges::micro_batch))->capture_default_str();
  app.add_option("--sp", a.sp, "SP group size N (0 = every GPU of the job)")
      ->check(CLI::Range(0, static_cast<int>(ranges::gpu_count.max)))  // 0 here and below: the default
      ->capture_default_str();
  app.add_option("--gpus", a.gpus, "GPUs of the job G = DP x N (0 = every GPU of the topology; grow with --nodes)")
      ->check(CLI::Range(0, static_cast<int>(ranges::gpu_count.max)))->capture_default_str();
  app.add_option("--strategy,-s", a.strategies,
                 "Strategies to compare: ulysses, basp, sp-dp, ring, usp, dp (plain data parallelism, N = 1; at "
                 "N = 1 every strategy is dp)")
      ->delimiter(',')
      ->check(CLI::IsMember(strategy_names()))
      ->capture_default_str();
  app.add_option("--placement", a.placement, "BASP groups: contiguous or strided ranks")
      ->check(CLI::IsMember({"contiguous", "strided"}))->capture_default_str();
  app.add_option("--zero", a.zero, "ZeRO stage 0-3")->check(CLI::Range(0, 3))->capture_default_str();
  app.add_option("--zero-group", a.zero_group,
                 "Shard within groups of M ranks, replicate and all-reduce across them (hpZ/HSDP; 0 = all ranks)")
      ->check(CLI::Range(0, static_cast<int>(ranges::gpu_count.max)))->capture_default_str();
  a.zero_options.add_to(app, "");
  app.add_flag("--checkpointing", a.checkpointing, "Full activation checkpointing (recomputes each layer's forward)");
  app.add_option("--calibration", a.calibration,
                 "Calibration name or file (default: the topology's own; 'none': documented defaults)");
  app.add_option("--replica-batch", a.replica_batch, "sp-dp: sequences per replica (B = the paper's foil)")
      ->check(within(ranges::micro_batch))->capture_default_str();
  app.add_option("--ulysses-degree", a.ulysses_degree, "usp: Ulysses degree U, rings of N/U (0 = GPUs per node)")
      ->check(CLI::Range(0, static_cast<int>(ranges::gpu_count.max)))->capture_default_str();
  app.add_option("--accumulation", a.accumulation,
                 "Micro-steps per optimizer step (gradient accumulation): all but the last end once gradients are "
                 "reduced (ZeRO-2/3) or backward ends (ZeRO-0/1 reduce at the boundary only); throughput, MFU and "
                 "speedup are over the global batch")
      ->check(CLI::Range(1L, 1L << 40))->capture_default_str();
  app.add_option("--layers-simulated", a.layers_simulated,
                 "Layers built into the graph (0 = all, or a window of at least 5 when the graph would exceed "
                 "12M flows; the window's middle layer stands for the rest)")
      ->check(CLI::Range(0, 100000))->capture_default_str();
  app.add_option("--engine", a.engine,
                 "auto: symmetry classes when they are exact, else every rank and flow; classes: demand them; "
                 "full: every rank and flow (docs/symmetry.md)")
      ->check(CLI::IsMember({"auto", "classes", "full"}))->capture_default_str();
  app.add_option("--compute-jitter", a.compute_jitter,
                 "Stragglers: each GPU's compute per layer and pass times a factor drawn from [1-J, 1+J] (0 = none)")
      ->capture_default_str();
  app.add_option("--slow-gpus", a.slow_gpus,
                 "Stragglers: FRACTION:FACTOR, e.g. 0.01:1.5 (that share of the GPUs, at least one, computes FACTOR "
                 "times slower)");
  app.add_option("--slow-links", a.slow_links,
                 "Stragglers: FRACTION:FACTOR (that share of the network's links, NIC ports and fabric trunks, at "
                 "least one, carries 1/FACTOR of its capacity)");
  app.add_option("--seed", a.seed, "Which GPUs and links are slow, and the jitter's draws")->capture_default_str();
  app.add_option("--sim-memory", a.sim_memory,
                 "Host memory one strategy's simulation may hold, by estimate, e.g. 16GiB (default: 3/4 of this "
                 "machine's memory, or of its memory cgroup's limit when lower); a larger scenario is refused "
                 "before it is built");
}

namespace {

// "FRACTION:FACTOR" (both plain numbers); ranges are checked with the rest of the job.
std::pair<double, double> fraction_and_factor(const std::string& text, const std::string& flag) {
  const auto colon = text.find(':');
  auto number = [&](const std::string& part) {
    std::size_t used = 0;
    double v = 0.0;
    try {
      v = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size() || !std::isfinite(v))
      throw InputError("", 0, flag, "'" + text + "' is not FRACTION:FACTOR (e.g. 0.01:1.5)");
    return v;
  };
  if (colon == std::string::npos)
    throw InputError("", 0, flag, "'" + text + "' is not FRACTION:FACTOR (e.g. 0.01:1.5)");
  return {number(text.substr(0, colon)), number(text.substr(colon + 1))};
}

}  // namespace

std::vector<Strategy> parse_strategies(const std::vector<std::string>& names) {
  std::vector<Strategy> out;
  for (const std::string& s : names) {
    const Strategy strategy = *parse_strategy(s);  // CLI11 checked membership
    for (Strategy seen : out)
      if (seen == strategy) throw InputError("", 0, "--strategy", "'" + s + "' is named twice");
    out.push_back(strategy);
  }
  return out;
}

double memory_budget_bytes(const SimulateArgs& a) {
  if (a.sim_memory.empty()) return host_memory_budget_bytes();
  return parse_flag_quantity("--sim-memory", a.sim_memory, ranges::host_memory);
}

StepConfig to_step_config(const SimulateArgs& a) {
  StepConfig c;
  c.topology = a.topo.topology;
  c.overrides = a.topo.overrides;
  if (!a.topo.ecmp.empty()) c.overrides.ecmp = a.topo.ecmp == "split" ? EcmpMode::split : EcmpMode::hash;
  if (!a.topo.cross_rail.empty()) c.overrides.cross_rail = a.topo.cross_rail == "pxn" ? CrossRail::pxn : CrossRail::spine;
  c.model = a.model;
  c.seq = parse_tokens(a.seq, "--seq");
  c.batch = a.batch;
  c.sp = a.sp;
  c.gpus = a.gpus;
  c.strategies = parse_strategies(a.strategies);
  c.placement = a.placement == "strided" ? Placement::strided : Placement::contiguous;
  c.zero = a.zero;
  for (std::size_t i = 0; i < zero_settings.size(); ++i)
    if (a.zero < zero_settings[i].first_stage && a.zero_options.given[i])
      throw InputError("", 0, std::string(zero_settings[i].flag),
                       zero_settings[i].first_stage == 3
                           ? "is a DeepSpeed ZeRO-3 setting; with --zero " + std::to_string(a.zero) +
                                 " it would change nothing (drop it, or use --zero 3)"
                           : "is DeepSpeed's reduce_bucket_size (ZeRO-1/2/3); ZeRO-0 all-reduces in buffers of "
                             "5e8 elements, so with --zero 0 it would change nothing (drop it, or use --zero 1, 2 "
                             "or 3)");
  a.zero_options.apply(c);
  c.zero_group = a.zero_group;
  c.checkpointing = a.checkpointing;
  c.calibration = a.calibration;
  c.replica_batch = a.replica_batch;
  c.ulysses_degree = a.ulysses_degree;
  c.accumulation = a.accumulation;
  c.layers_simulated = a.layers_simulated;
  c.engine = *parse_engine_mode(a.engine);  // CLI11 checked membership
  c.stragglers.compute_jitter = a.compute_jitter;
  if (!a.slow_gpus.empty())
    std::tie(c.stragglers.slow_gpu_fraction, c.stragglers.slow_gpu_factor) =
        fraction_and_factor(a.slow_gpus, "--slow-gpus");
  if (!a.slow_links.empty())
    std::tie(c.stragglers.slow_link_fraction, c.stragglers.slow_link_factor) =
        fraction_and_factor(a.slow_links, "--slow-links");
  c.stragglers.seed = a.seed;
  return c;
}

std::string describe_config(const StepReport& r) {
  const StepConfig& c = r.config;
  char zero3[320] = "";
  const char* stream = zero_plan(c).overlap_comm ? "beside backward" : "on the compute stream";
  if (c.zero == 3)
    std::snprintf(zero3, sizeof zero3,
                  " (reduce buckets of %.3g elements %s, tensors under %.3g kept whole, prefetch %.3g per hook and "
                  "%.3g live, reuse distance %.3g)",
                  c.zero_reduce_bucket, stream, c.zero_persistence, c.zero_prefetch, c.zero_max_live,
                  c.zero_reuse_distance);
  else if (c.zero > 0)
    std::snprintf(zero3, sizeof zero3, " (reduce buckets of %.3g elements %s%s)", c.zero_reduce_bucket, stream,
                  c.zero == 1 && !zero_plan(c).overlap_comm ? ", after backward" : "");
  else
    std::snprintf(zero3, sizeof zero3, " (all-reduce buffers of %.3g elements after backward)",
                  zero0_allreduce_bucket_elements);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "# %s on %s: %d of %d GPUs (%d nodes x %d %s), calibration %s\n"
                "# sequence %ld tokens, micro-batch %d per SP group, SP N=%d, DP %d, ZeRO-%d over %d ranks%s%s, "
                "bf16, %s\n",
                r.model.name.c_str(), r.topology().name.c_str(), c.gpus, r.gpus(), r.nodes(),
                r.topology().gpus_per_node, r.gpu_kind.c_str(), r.calibration.name.c_str(), c.seq, c.batch, c.sp,
                c.gpus / c.sp, c.zero, c.zero == 0 ? c.gpus : c.zero_group,
                c.zero > 0 && c.zero_group != c.gpus ? " (replicated across groups)" : "", zero3,
                c.checkpointing ? "full activation checkpointing" : "no activation checkpointing");
  if (const std::string out = describe_outages(r.topology()); !out.empty())
    return buf + ("# outages: " + out + "; ranks run on the other nodes in order\n");
  return buf;
}

}  // namespace basp::cli
