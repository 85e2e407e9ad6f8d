// Report formatting. Times and sizes carry their unit in the header or the cell; JSON and CSV
// carry SI base units (s, bytes, B/s) with every digit.
#include "step_report.hpp"

#include "simulate_options.hpp"
#include "outages.hpp"
#include "zero_plan.hpp"
#include "units.hpp"

#include <cstdio>

namespace basp::cli {
namespace {

std::string strategy_shape(const StrategyResult& r) {
  const Layout& l = r.layout;
  char buf[64];
  switch (r.strategy) {
    case Strategy::ring: std::snprintf(buf, sizeof buf, "ring %d", l.ring_size); break;
    case Strategy::usp: std::snprintf(buf, sizeof buf, "%d a2a x ring %d", l.a2a_size, l.ring_size); break;
    case Strategy::dp: return "none";
    default:
      std::snprintf(buf, sizeof buf, "%dx%d a2a", l.sp / l.a2a_size, l.a2a_size);
  }
  return buf;
}


std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

namespace {

// "classes" or "full" when every strategy ran on that engine, else "mixed".
std::string engine_ran(const StepReport& r) {
  std::string ran;
  for (const StrategyResult& s : r.results)
    ran = ran.empty() || ran == s.engine.engine ? s.engine.engine : "mixed";
  return ran.empty() ? "full" : ran;
}

nlohmann::ordered_json engine_json(const EngineUse& e) {
  return {{"engine", e.engine},
          {"why", e.why},
          {"rank_classes", e.rank_classes},
          {"link_classes", e.link_classes},
          {"members_per_class", e.members}};
}

}  // namespace

nlohmann::ordered_json config_json(const StepReport& r) {
  const StepConfig& c = r.config;
  const Calibration& cal = r.calibration;
  nlohmann::ordered_json strategies = nlohmann::json::array();
  for (Strategy s : c.strategies) strategies.push_back(std::string(to_string(s)));
  nlohmann::ordered_json links = nlohmann::json::object();
  for (LinkClass cls : link_classes) {
    const LinkCalibration& lc = cal.links[cls];
    if (!lc.efficiency && !lc.latency_s) continue;
    nlohmann::ordered_json j = nlohmann::json::object();
    if (lc.efficiency) j["efficiency"] = *lc.efficiency;
    if (lc.latency_s) j["latency_s"] = *lc.latency_s;
    links[std::string(to_string(cls))] = j;
  }
  nlohmann::ordered_json j = {{"topology", r.topology().name},
                              {"topology_file", r.topology().source},
                              {"gpu", r.gpu_kind},
                              {"nodes", r.nodes()},
                              {"excluded_nodes", r.topology().excluded_nodes},
                              {"down_links", down_cable_names(r.topology())},
                              {"gpus_per_node", r.topology().gpus_per_node},
                              {"model", r.model.name},
                              {"model_file", r.model.source},
                              {"seq", c.seq},
                              {"batch", c.batch},
                              {"sp", c.sp},
                              {"gpus", c.gpus},
                              {"dp", c.gpus / c.sp},
                              {"strategies", strategies},
                              {"placement", c.placement == Placement::strided ? "strided" : "contiguous"},
                              {"zero", c.zero},
                              {"zero_group", c.zero_group},
                              {"checkpointing", c.checkpointing},
                              {"precision", "bf16"},
                              {"replica_batch", c.replica_batch},
                              {"ulysses_degree", c.ulysses_degree},
                              {"accumulation", c.accumulation},
                              {"layers_simulated", c.layers_simulated},
                              {"engine_requested", std::string(to_string(c.engine))},
                              {"stragglers",
                               {{"compute_jitter", c.stragglers.compute_jitter},
                                {"slow_gpus",
                                 {{"fraction", c.stragglers.slow_gpu_fraction}, {"factor", c.stragglers.slow_gpu_factor},
                                  {"ranks", r.slow_gpus}}},
                                {"slow_links",
                                 {{"fraction", c.stragglers.slow_link_fraction}, {"factor", c.stragglers.slow_link_factor},
                                  {"links", r.slow_links}}},
                                {"seed", c.stragglers.seed}}},
                              {"engine", engine_ran(r)},
                              {"calibration",
                               {{"name", cal.name},
                                {"file", cal.source},
                                {"links", links},
                                {"launch_overhead_s", r.topology().software.launch_s},
                                {"per_peer_overhead_s", r.topology().software.per_peer_s},
                                {"local_copy_Bps", r.topology().software.local_copy_Bps},
                                {"compute_efficiency",
                                 {{"gemm", cal.compute.gemm},
                                  {"attention_forward", cal.compute.attention_forward},
                                  {"attention_backward", cal.compute.attention_backward},
                                  {"memory", cal.compute.memory},
                                  {"rotary", cal.compute.rotary_or_memory()}}}}}};
  for (const ZeroSetting& z : zero_settings) j[std::string(z.json)] = c.*z.field;
  j["zero_overlap_comm"] = zero_plan(c).overlap_comm;
  j["baseline"] = nullptr;  // the Ulysses run made only for the speedup column
  if (r.baseline_engine)
    j["baseline"] = {{"strategy", "ulysses"},
                     {"engine", engine_json(*r.baseline_engine)},
                     {"accumulating_engine", r.baseline_accumulating_engine
                                                 ? engine_json(*r.baseline_accumulating_engine)
                                                 : nlohmann::ordered_json(nullptr)}};
  if (!r.as_dp.empty()) {  // asked for, but plain data parallelism at N = 1: simulated once as dp
    j["strategies_as_dp"] = nlohmann::json::array();
    for (Strategy s : r.as_dp) j["strategies_as_dp"].push_back(std::string(to_string(s)));
  }
  return j;
}

nlohmann::ordered_json result_json(const StepReport& rep, const StrategyResult& r, bool links) {
  const MemoryBreakdown& m = r.memory;
  nlohmann::ordered_json j{
      {"strategy", std::string(to_string(r.strategy))},
      {"a2a_group_size", r.layout.a2a_size},
      {"ring_size", r.layout.ring_size},
      {"tokens_per_rank", r.layout.tokens_per_rank},
      {"layers_simulated", r.layers_simulated},
      {"sequences_per_step", r.layout.sequences},
      {"step_s", r.step_s},
      {"accumulation_step_s", r.accumulation_step_s},
      {"global_batch_s", r.global_batch_s},
      {"compute_s", r.compute_s},
      {"a2a_s", r.a2a_s},
      {"a2a_exposed_s", r.a2a_exposed_s},
      {"a2a_share", r.a2a_share},
      {"a2a_wait_s", r.a2a_wait_s},
      {"zero_comm_s", r.zero_comm_s},
      {"zero_exposed_s", r.zero_exposed_s},
      {"memory_per_gpu_bytes", m.total()},
      {"memory",
       {{"states_bytes", m.states},
        {"prefetch_bytes", m.prefetch},
        {"activations_bytes", m.activations},
        {"logits_bytes", m.logits},
        {"buffers_bytes", m.buffers},
        {"runtime_bytes", m.runtime},
        {"hbm_bytes", lookup_gpu_kind(rep.gpu_kind)->hbm_bytes},
        {"fits", r.fits}}},
      {"tokens_per_s", r.tokens_per_s},
      {"mfu", r.mfu},
      {"model_flops_per_gpu", r.model_flops},
      {"speedup_vs_ulysses", r.speedup_vs_ulysses ? nlohmann::ordered_json(*r.speedup_vs_ulysses) : nullptr},
      {"bytes_by_link_class", [&] {
         nlohmann::ordered_json b = nlohmann::json::object();
         for (LinkClass cls : link_classes)
           if (r.class_bytes[cls] > 0) b[std::string(to_string(cls))] = r.class_bytes[cls];
         return b;
       }()},
      {"flows", r.stats.flows},
      {"events", r.stats.events},
      {"engine", engine_json(r.engine)},
      {"accumulating_engine", r.accumulating_engine ? engine_json(*r.accumulating_engine) : nullptr},
      {"wall_s", r.wall_s}};
  if (links) {
    j["busiest_links"] = nlohmann::json::array();
    for (const LinkUse& u : r.busiest_links)
      j["busiest_links"].push_back({{"link", u.link >= 0 ? nlohmann::ordered_json(u.link) : nullptr},
                                    {"name", u.name},
                                    {"class", std::string(to_string(u.cls))},
                                    {"links", u.links},
                                    {"bytes", u.bytes},
                                    {"utilization", u.utilization}});
  }
  return j;
}

std::string csv_header() {
  return "strategy,topology,model,gpus,sp,seq,batch,zero,zero_group,zero_reduce_bucket,zero_persistence,zero_prefetch,zero_max_live,zero_reuse_distance,zero_overlap_comm,checkpointing,a2a_group_size,ring_size,step_s,"
         "accumulation,global_batch_s,compute_s,a2a_s,a2a_exposed_s,a2a_share,zero_comm_s,zero_exposed_s,memory_per_gpu_bytes,fits,"
         "tokens_per_s,mfu,speedup_vs_ulysses,engine,wall_s";
}

std::string csv_row(const StepReport& rep, const StrategyResult& r) {
  const StepConfig& c = rep.config;
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "%s,%s,%s,%d,%d,%ld,%d,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%d,%d,%d,%d,%.17g,%ld,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%d,"
                "%.17g,%.17g,",
                std::string(to_string(r.strategy)).c_str(), rep.topology().name.c_str(), rep.model.name.c_str(), c.gpus,
                c.sp, c.seq, c.batch, c.zero, c.zero_group, c.zero_reduce_bucket, c.zero_persistence, c.zero_prefetch, c.zero_max_live, c.zero_reuse_distance, int(zero_plan(c).overlap_comm), int(c.checkpointing), r.layout.a2a_size, r.layout.ring_size,
                r.step_s, c.accumulation, r.global_batch_s, r.compute_s, r.a2a_s, r.a2a_exposed_s, r.a2a_share, r.zero_comm_s, r.zero_exposed_s,
                r.memory.total(), int(r.fits), r.tokens_per_s, r.mfu);
  std::string row = buf;
  if (r.speedup_vs_ulysses) {
    std::snprintf(buf, sizeof buf, "%.17g", *r.speedup_vs_ulysses);
    row += buf;
  }
  row += "," + r.engine.engine + "," + fixed(r.wall_s, 3);
  return row;
}

namespace {

// One row per strategy: the figures, its memory against the GPU's and its speedup.
void print_result_rows(const StepReport& rep) {
  std::printf("%-8s %-16s %10s %10s %6s %10s %10s %10s %6s %10s %10s %19s %8s\n", "strategy", "exchange", "step",
              "tokens/s", "MFU", "compute", "a2a", "a2a exp.", "a2a %", "ZeRO comm", "ZeRO exp.", "memory/GPU",
              "speedup");
  std::printf("%-8s %-16s %10s %10s %6s %10s %10s %10s %6s %10s %10s %19s %8s\n", "", "", "(ms)", "", "(%)", "(ms)",
              "(ms)", "(ms)", "", "(ms)", "(ms)", "(GB)", "vs ulysses");
  const double hbm = lookup_gpu_kind(rep.gpu_kind)->hbm_bytes;
  for (const StrategyResult& r : rep.results) {
    char memory[64];
    std::snprintf(memory, sizeof memory, "%.1f/%.0f %s", r.memory.total() / 1e9, hbm / 1e9, r.fits ? "fits" : "OVER");
    std::printf("%-8s %-16s %10.2f %10.0f %6.1f %10.2f %10.2f %10.2f %6.1f %10.2f %10.2f %19s %8s\n",
                std::string(to_string(r.strategy)).c_str(), strategy_shape(r).c_str(), r.step_s * 1e3, r.tokens_per_s,
                r.mfu * 100, r.compute_s * 1e3, r.a2a_s * 1e3, r.a2a_exposed_s * 1e3, r.a2a_share * 100,
                r.zero_comm_s * 1e3, r.zero_exposed_s * 1e3, memory,
                r.speedup_vs_ulysses ? (fixed(*r.speedup_vs_ulysses, 2) + "x").c_str() : "-");
  }
}

void print_memory_breakdown(const StepReport& rep) {
  const double hbm = lookup_gpu_kind(rep.gpu_kind)->hbm_bytes;
  std::printf("#\n# memory/GPU (GB): strategy: states + prefetch + activations + logits + buffers + runtime\n");
  for (const StrategyResult& r : rep.results) {
    const MemoryBreakdown& m = r.memory;
    std::printf("#   %-8s %.2f + %.2f + %.2f + %.2f + %.2f + %.2f = %.2f of %.0f%s\n",
                std::string(to_string(r.strategy)).c_str(), m.states / 1e9, m.prefetch / 1e9, m.activations / 1e9,
                m.logits / 1e9, m.buffers / 1e9, m.runtime / 1e9, m.total() / 1e9, hbm / 1e9,
                r.fits ? "" : "  -- does not fit: try --checkpointing, a larger --sp or --zero 3");
  }
}

void print_busiest_links(const StepReport& rep) {
  for (const StrategyResult& r : rep.results) {
    std::printf("#\n# busiest links, %s (utilization = bytes / (capacity x step time)):\n",
                std::string(to_string(r.strategy)).c_str());
    std::printf("#   %-44s %-7s %12s %12s %6s\n", "link", "class", "capacity", "bytes", "util");
    for (const LinkUse& u : r.busiest_links)
      std::printf("#   %-44s %-7s %12s %12s %5.1f%%%s\n", u.name.c_str(), std::string(to_string(u.cls)).c_str(),
                  format_bandwidth(u.capacity_Bps).c_str(), format_bytes(u.bytes).c_str(), u.utilization * 100,
                  u.links > 1 ? ("  (one of " + std::to_string(u.links) + " links alike)").c_str() : "");
  }
}

// Who was slowed, and how long each strategy's exchanges waited for their groups' last member.
void print_stragglers(const StepReport& rep) {
  const Stragglers& s = rep.config.stragglers;
  std::printf("#\n# stragglers (seed %llu): compute jitter %g", (unsigned long long)s.seed, s.compute_jitter);
  if (!rep.slow_gpus.empty())
    std::printf("; %zu GPU%s %gx slower (first: rank %d)", rep.slow_gpus.size(), rep.slow_gpus.size() == 1 ? "" : "s",
                s.slow_gpu_factor, rep.slow_gpus.front());
  if (!rep.slow_links.empty())
    std::printf("; %zu link%s at 1/%g (first: %s)", rep.slow_links.size(), rep.slow_links.size() == 1 ? "" : "s",
                s.slow_link_factor, rep.slow_links.front().c_str());
  std::printf("\n# a2a wait: of a2a, time a GPU waits for its group's last member to enter a call (per GPU, "
              "averaged):\n");
  for (const StrategyResult& r : rep.results)
    std::printf("#   %-8s %.2f ms of %.2f ms (group of %d)\n", std::string(to_string(r.strategy)).c_str(),
                r.a2a_wait_s * 1e3, r.a2a_s * 1e3, r.layout.a2a_size);
}

// What was simulated and how: windows of layers, each graph's engine, and the host time.
void print_simulation_notes(const StepReport& rep) {
  for (const StrategyResult& r : rep.results)
    if (r.layers_simulated < rep.model.layers)
      std::printf("# %s: %d of %d layers simulated (graph size); the other layers repeat the middle one's times "
                  "(links: the simulated layers only)\n",
                  std::string(to_string(r.strategy)).c_str(), r.layers_simulated, rep.model.layers);
  auto engine_line = [](const std::string& what, const EngineUse& e) {
    std::printf("# %s: %s engine, %d rank%s and %d links simulated (%s)\n", what.c_str(), e.engine.c_str(),
                e.rank_classes, e.rank_classes == 1 ? "" : "s", e.link_classes, e.why.c_str());
  };
  const std::string before_boundary = "micro-steps before the accumulation boundary";
  for (const StrategyResult& r : rep.results) {
    const std::string name(to_string(r.strategy));
    engine_line(name, r.engine);
    if (r.accumulating_engine) engine_line(name + " (" + before_boundary + ")", *r.accumulating_engine);
  }
  if (rep.baseline_engine) {
    engine_line("ulysses (baseline for the speedup)", *rep.baseline_engine);
    if (rep.baseline_accumulating_engine)
      engine_line("ulysses (baseline, " + before_boundary + ")", *rep.baseline_accumulating_engine);
  }
  std::printf("# simulated in");
  for (const StrategyResult& r : rep.results) {
    std::printf(" %s %.2f s (%llu flows", std::string(to_string(r.strategy)).c_str(), r.wall_s,
                (unsigned long long)r.stats.flows);
    if (r.engine.members > 1) std::printf(", %llu built", (unsigned long long)(r.stats.flows / r.engine.members));
    std::printf(")");
  }
  std::printf("\n");
}

}  // namespace

void print_table(const StepReport& rep, bool links) {
  std::fputs(("# basp simulate\n" + describe_config(rep)).c_str(), stdout);
  std::printf("# a2a: time inside the strategy's exchange calls, waiting for peers included (ring: KV passing);\n"
              "# exposed: not overlapped with compute. Per GPU, averaged over GPUs.\n#\n");
  print_result_rows(rep);
  if (!rep.as_dp.empty()) {
    std::string names;
    for (Strategy s : rep.as_dp) names += (names.empty() ? "" : ", ") + std::string(to_string(s));
    std::printf("#\n# N = 1: %s keep%s every sequence whole on one rank: plain data parallelism, simulated once "
                "as dp\n", names.c_str(), rep.as_dp.size() == 1 ? "s" : "");
  }
  if (rep.config.accumulation > 1) {
    std::printf("#\n# %ld micro-steps per optimizer step (the last with the optimizer); tokens/s, MFU and speedup are "
                "over the global batch:\n", rep.config.accumulation);
    for (const StrategyResult& r : rep.results)
      std::printf("#   %-8s %.2f ms per global batch (%.2f ms per micro-step that accumulates)\n",
                  std::string(to_string(r.strategy)).c_str(), r.global_batch_s * 1e3, r.accumulation_step_s * 1e3);
  }
  print_memory_breakdown(rep);
  if (links) print_busiest_links(rep);
  if (rep.config.stragglers.any()) print_stragglers(rep);
  print_simulation_notes(rep);
}

}  // namespace basp::cli
