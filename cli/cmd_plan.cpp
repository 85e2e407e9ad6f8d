// `basp plan`: the best sequence-parallel layout for a job (cluster, model, sequence length,
// global batch), searched over every layout the strategies allow; each plan says how to reproduce it.
#include "commands.hpp"
#include "input_ranges.hpp"
#include "input_error.hpp"
#include "options.hpp"
#include "outages.hpp"
#include "plan.hpp"
#include "simulate_options.hpp"
#include "svg_chart.hpp"
#include "units.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <unistd.h>

namespace basp::cli {
namespace {

struct PlanArgs {
  TopologyOptions topo;
  FormatOptions format;
  std::string model = "llama-3.1-8b";
  std::string seq = "128K";
  long global_batch = 0;
  int gpus = 0;
  std::string memory_limit;
  std::string simulation_memory;
  std::vector<std::string> strategies = strategy_names();
  std::string calibration;
  int top = 10;
  int threads = 0;
  bool exhaustive = false;
  double front_within = 2.0;
  std::string svg_file;
  ZeroOptions zero_options;  // for the layouts of the stages each applies to
};

std::string shown_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The `basp simulate` arguments that reproduce a plan's figures (its strategy's row).
std::vector<std::string> simulate_args(const PlanArgs& a, const PlanReport& r, const PlanCandidate& p) {
  const StepConfig& c = p.config;
  std::vector<std::string> args{"--topology", a.topo.topology};
  const TopologyOverrides& o = a.topo.overrides;
  if (o.nodes) args.insert(args.end(), {"--nodes", std::to_string(*o.nodes)});
  if (o.oversubscription) args.insert(args.end(), {"--oversubscription", shown_number(*o.oversubscription)});
  if (o.nodes_per_leaf) args.insert(args.end(), {"--nodes-per-leaf", std::to_string(*o.nodes_per_leaf)});
  if (o.spines) args.insert(args.end(), {"--spines", std::to_string(*o.spines)});
  if (!a.topo.ecmp.empty()) args.insert(args.end(), {"--ecmp", a.topo.ecmp});
  if (!a.topo.cross_rail.empty()) args.insert(args.end(), {"--cross-rail", a.topo.cross_rail});
  if (!o.outages.exclude_nodes.empty()) args.insert(args.end(), {"--exclude-nodes", o.outages.exclude_nodes});
  if (!o.outages.down_links.empty()) args.insert(args.end(), {"--down-links", o.outages.down_links});
  args.insert(args.end(), {"--model", a.model, "--seq", std::to_string(c.seq), "--gpus", std::to_string(r.gpus),
                           "--calibration", r.setup.report.config.calibration, "--strategy",
                           std::string(to_string(p.strategy)), "--sp", std::to_string(c.sp), "--batch",
                           std::to_string(c.batch), "--zero", std::to_string(c.zero), "--zero-group",
                           std::to_string(c.zero_group)});
  if (p.strategy == Strategy::basp && c.placement == Placement::strided)
    args.insert(args.end(), {"--placement", "strided"});
  if (p.strategy == Strategy::sp_dp) args.insert(args.end(), {"--replica-batch", std::to_string(c.replica_batch)});
  if (p.strategy == Strategy::usp)
    args.insert(args.end(), {"--ulysses-degree", std::to_string(c.ulysses_degree)});
  for (const ZeroSetting& z : zero_settings)  // the settings of its stage that differ from DeepSpeed's defaults
    if (c.zero >= z.first_stage && c.*z.field != StepConfig{}.*z.field)
      args.insert(args.end(), {std::string(z.flag), shown_number(c.*z.field)});
  if (c.zero_overlap_comm != OverlapComm::deepspeed_default)
    args.insert(args.end(), {"--zero-overlap-comm", c.zero_overlap_comm == OverlapComm::on ? "on" : "off"});
  if (c.checkpointing) args.push_back("--checkpointing");
  if (c.accumulation > 1) args.insert(args.end(), {"--accumulation", std::to_string(c.accumulation)});
  return args;
}

// ZeRO as the table shows it: the stage, and its shard group when it shards.
std::string zero_text(const StepConfig& c) {
  return c.zero == 0 ? "0" : std::to_string(c.zero) + "/" + std::to_string(c.zero_group);
}

// The layout in a few words: "N=32 B=4 K=8 contiguous, DP 512 x 2 micro-steps".
std::string layout_text(const PlanCandidate& p) {
  const StepConfig& c = p.config;
  std::string t = "N=" + std::to_string(c.sp);
  switch (p.strategy) {
    case Strategy::basp:
      t += " B=" + std::to_string(c.batch) + " K=" + std::to_string(c.sp / c.batch) +
           (c.placement == Placement::strided ? " strided" : "");
      break;
    case Strategy::sp_dp: t += " replica-batch " + std::to_string(c.replica_batch); break;
    case Strategy::usp: t += " B=" + std::to_string(c.batch) + " U=" + std::to_string(c.ulysses_degree); break;
    default: t += " B=" + std::to_string(c.batch); break;
  }
  return t;
}

nlohmann::ordered_json plan_json(const PlanArgs& a, const PlanReport& r, const Plan& p, int rank) {
  const StepConfig& c = p.candidate.config;
  const StrategyResult& x = p.result;
  nlohmann::ordered_json j;
  j["rank"] = rank;
  j["strategy"] = to_string(p.candidate.strategy);
  j["sp"] = c.sp;
  j["batch"] = c.batch;
  if (p.candidate.strategy == Strategy::basp) {
    j["groups"] = c.batch;
    j["group_size"] = c.sp / c.batch;
    j["placement"] = c.placement == Placement::strided ? "strided" : "contiguous";
  }
  if (p.candidate.strategy == Strategy::sp_dp) j["replica_batch"] = c.replica_batch;
  if (p.candidate.strategy == Strategy::usp) j["ulysses_degree"] = c.ulysses_degree;
  j["dp"] = r.gpus / c.sp;
  j["accumulation"] = p.candidate.config.accumulation;
  j["zero"] = c.zero;
  j["zero_group"] = c.zero_group;
  j["checkpointing"] = c.checkpointing;
  j["global_batch_s"] = p.global_batch_s;
  j["lower_bound_s"] = p.candidate.bound_s;  // per global batch: what pruning compared (docs/plan.md)
  j["step_s"] = x.step_s;
  j["tokens_per_s"] = x.tokens_per_s;
  j["mfu"] = x.mfu;
  j["a2a_share"] = x.a2a_share;
  if (p.speedup_vs_best_ulysses > 0) j["speedup_vs_best_ulysses"] = p.speedup_vs_best_ulysses;
  else j["speedup_vs_best_ulysses"] = nullptr;  // no Ulysses plan to compare with
  j["memory"] = {{"per_gpu_bytes", x.memory.total()},
                 {"limit_bytes", r.memory_limit_bytes},
                 {"headroom_bytes", r.memory_limit_bytes - x.memory.total()},
                 {"fits", x.memory.total() <= r.memory_limit_bytes}};
  j["engine"] = x.engine.engine;
  // ZeRO-0/1 with accumulation: the micro-steps before the boundary, a graph of their own.
  if (x.accumulating_engine) j["accumulating_engine"] = x.accumulating_engine->engine;
  else j["accumulating_engine"] = nullptr;
  j["simulation"] = {{"memory_estimate_bytes", p.candidate.simulation_bytes}, {"engine_bytes", x.engine_bytes}};
  j["simulate_args"] = simulate_args(a, r, p.candidate);
  return j;
}

// Throughput per strategy over SP degree (the best simulated plan of each degree), and the plans
// by memory per GPU with the Pareto front.
std::string plan_svg(const PlanReport& r, const std::vector<Strategy>& strategies) {
  const StepReport& rep = r.setup.report;
  const std::string job = rep.model.name + ", " + std::to_string(rep.config.seq) + " tokens, " +
                          std::to_string(r.gpus) + " GPUs on " + rep.topology().name;
  Chart by_sp{"Best plan per SP degree: " + job, "SP degree N (ranks per sequence group)", "tokens/s", true, {}, {}};
  const std::string within = std::isfinite(r.front_limit_s) ? "; front up to " + format_time(r.front_limit_s)
                                                             : " simulated";
  Chart front{"Throughput against memory per GPU (" + std::to_string(r.plans.size()) + " plans" + within + ")",
              "memory per GPU (GiB)", "tokens/s", false, {}, {}};
  for (std::size_t k = 0; k < strategies.size(); ++k) {
    std::map<int, double> best;
    ChartSeries dots{std::string(to_string(strategies[k])), {}, false, int(k)};
    for (const Plan& p : r.plans) {
      if (p.candidate.strategy != strategies[k]) continue;
      double& b = best[p.candidate.config.sp];
      b = std::max(b, p.result.tokens_per_s);
      dots.points.push_back({p.result.memory.total() / (1024.0 * 1024 * 1024), p.result.tokens_per_s});
    }
    if (best.empty()) continue;
    ChartSeries line{std::string(to_string(strategies[k])), {}, true, int(k)};
    for (auto [n, t] : best) line.points.push_back({double(n), t});
    by_sp.series.push_back(std::move(line));
    front.series.push_back(std::move(dots));
  }
  ChartSeries pareto{"Pareto front", {}, true, 6};
  for (const Plan* p : pareto_front(r.plans, r.front_limit_s))
    pareto.points.push_back({p->result.memory.total() / (1024.0 * 1024 * 1024), p->result.tokens_per_s});
  front.series.push_back(std::move(pareto));
  return svg_charts({by_sp, front});
}

// The question the flags ask; the progress line is the caller's.
PlanQuestion question_of(const PlanArgs& a) {
  PlanQuestion q;
  q.job.topology = a.topo.topology;
  q.job.overrides = a.topo.resolved_overrides();
  q.job.model = a.model;
  q.job.seq = parse_tokens(a.seq, "--seq");
  q.job.gpus = a.gpus;
  q.job.calibration = a.calibration;
  q.global_batch = a.global_batch;
  q.strategies = parse_strategies(a.strategies);
  if (!a.memory_limit.empty())
    q.memory_limit_bytes = parse_flag_quantity("--memory-limit", a.memory_limit, ranges::gpu_memory);
  if (!a.simulation_memory.empty())
    q.simulation_memory_bytes = parse_flag_quantity("--sim-memory", a.simulation_memory, ranges::host_memory);
  q.threads = a.threads;
  q.exhaustive = a.exhaustive;
  q.ranked = a.top;
  q.front_within = a.front_within;
  check_front_within(q.front_within);
  a.zero_options.apply(q.job);
  return q;
}

// On a terminal, the search's progress on one line of stderr.
void show_progress(PlanQuestion& q) {
  if (::isatty(STDERR_FILENO) == 0) return;
  q.progress = [](const PlanProgress& p) {
    // What is left can only shrink (more is left out as the best improves): the ETA is an upper bound.
    const double eta = p.simulated > 0 ? p.elapsed_s / double(p.decided) * double(p.total - p.decided) : 0.0;
    std::fprintf(stderr, "\rplan: %zu/%zu layouts decided, %zu simulated, best %s per batch, at most %.0f s left   ",
                 p.decided, p.total, p.simulated, format_time(p.best_s).c_str(), eta);
    std::fflush(stderr);
  };
}

void print_plan_json(const PlanArgs& a, const PlanQuestion& q, const PlanReport& r) {
  const StepReport& rep = r.setup.report;
  nlohmann::ordered_json j;
  j["config"] = {{"topology", rep.topology().name}, {"gpus", r.gpus}, {"nodes", rep.nodes()},
                 {"excluded_nodes", rep.topology().excluded_nodes}, {"down_links", down_cable_names(rep.topology())},
                 {"gpu", rep.gpu_kind}, {"model", rep.model.name}, {"seq", q.job.seq},
                 {"global_batch", q.global_batch}, {"memory_limit_bytes", r.memory_limit_bytes},
                 {"calibration", rep.config.calibration}, {"strategies", a.strategies},
                 {"front_within", std::isfinite(r.front_limit_s) ? q.front_within : 0.0},
                 {"top", q.ranked}};
  for (const ZeroSetting& z : zero_settings) j["config"][std::string(z.json)] = q.job.*z.field;
  j["config"]["zero_overlap_comm"] = a.zero_options.overlap_comm;
  j["enumerated"] = r.enumerated;
  j["evaluated"] = r.plans.size();
  j["shared_simulations"] =
      std::count_if(r.plans.begin(), r.plans.end(), [](const Plan& p) { return p.shared_simulation; });
  j["pruned"] = r.pruned;
  int feasible = 0;
  for (const Plan& p : r.plans) feasible += p.result.memory.total() <= r.memory_limit_bytes;
  j["feasible"] = feasible;
  j["wall_s"] = r.wall_s;
  j["simulation_memory_bytes"] = r.simulation_memory_bytes;
  j["not_simulated"] = nlohmann::json::array();
  for (const PlanCandidate& c : r.not_simulated)
    j["not_simulated"].push_back({{"strategy", to_string(c.strategy)},
                                  {"layout", layout_text(c)},
                                  {"lower_bound_s", c.bound_s},
                                  {"simulation", {{"memory_estimate_bytes", c.simulation_bytes}}},
                                  {"memory_per_gpu_bytes", c.memory_bytes},
                                  {"simulate_args", simulate_args(a, r, c)}});
  j["plans"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.plans.size(); ++i) j["plans"].push_back(plan_json(a, r, r.plans[i], int(i) + 1));
  j["pareto_front"] = nlohmann::json::array();
  for (const Plan* p : pareto_front(r.plans, r.front_limit_s)) j["pareto_front"].push_back(int(p - r.plans.data()) + 1);
  std::cout << j.dump(2) << "\n";
}

void print_plan_csv(const PlanReport& r) {
  std::cout << "rank,strategy,sp,batch,placement,ulysses_degree,replica_batch,dp,accumulation,zero,zero_group,"
               "checkpointing,global_batch_s,step_s,tokens_per_s,mfu,a2a_share,memory_bytes,speedup_vs_best_ulysses\n";
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const Plan& p = r.plans[i];
    const StepConfig& c = p.candidate.config;
    std::cout << i + 1 << "," << to_string(p.candidate.strategy) << "," << c.sp << "," << c.batch << ","
              << (c.placement == Placement::strided ? "strided" : "contiguous") << "," << c.ulysses_degree << ","
              << c.replica_batch << "," << r.gpus / c.sp << "," << p.candidate.config.accumulation << "," << c.zero
              << "," << c.zero_group << "," << c.checkpointing << "," << shown_number(p.global_batch_s) << ","
              << shown_number(p.result.step_s) << "," << shown_number(p.result.tokens_per_s) << ","
              << shown_number(p.result.mfu) << "," << shown_number(p.result.a2a_share) << ","
              << shown_number(p.result.memory.total()) << "," << shown_number(p.speedup_vs_best_ulysses) << "\n";
  }
}

// The table's head: the question, the cluster, and why layouts were not simulated.
void print_table_head(const PlanQuestion& q, const PlanReport& r) {
  const StepReport& rep = r.setup.report;
  int pruned = 0;
  for (const auto& [why, n] : r.pruned) pruned += n;
  std::printf("# plan: %s, %ld tokens per sequence, %ld sequences per optimizer step\n", rep.model.name.c_str(),
              q.job.seq, q.global_batch);
  std::printf("# on %s: %d GPUs (%d nodes x %d %s), memory limit %s per GPU, calibration %s\n",
              rep.topology().name.c_str(), r.gpus, rep.nodes(), rep.topology().gpus_per_node, rep.gpu_kind.c_str(),
              format_bytes(r.memory_limit_bytes).c_str(), rep.config.calibration.c_str());
  if (const std::string out = describe_outages(rep.topology()); !out.empty())
    std::printf("# outages: %s; ranks run on the other nodes in order\n", out.c_str());
  std::printf("# %d layouts: %zu simulated, %d not (", r.enumerated, r.plans.size(), pruned);
  bool first = true;
  for (const auto& [why, n] : r.pruned) {
    std::printf("%s%d %s", first ? "" : ", ", n, why.c_str());
    first = false;
  }
  std::printf("), in %.2f s\n#\n", r.wall_s);
  std::printf("%4s %-8s %-26s %5s %6s %-9s %4s %11s %12s %6s %6s %10s %8s\n", "rank", "strategy", "layout", "DP",
              "accum", "ZeRO", "ckpt", "per batch", "tokens/s", "MFU", "a2a", "memory", "vs Uly.");
}

// One plan's row, `rank` its place among all simulated plans.
void print_plan_row(const PlanReport& r, const Plan& p, int rank) {
  const StepConfig& c = p.candidate.config;
  const std::string zero = zero_text(c);
  char speedup[16] = "-";
  if (p.speedup_vs_best_ulysses > 0) std::snprintf(speedup, sizeof speedup, "%.3fx", p.speedup_vs_best_ulysses);
  std::printf("%4d %-8s %-26s %5d %6ld %-9s %4s %11s %12.4g %5.1f%% %5.1f%% %10s %8s\n", rank,
              std::string(to_string(p.candidate.strategy)).c_str(), layout_text(p.candidate).c_str(), r.gpus / c.sp,
              p.candidate.config.accumulation, zero.c_str(), c.checkpointing ? "yes" : "no",
              format_time(p.global_batch_s).c_str(), p.result.tokens_per_s, 100 * p.result.mfu,
              100 * p.result.a2a_share, format_bytes(p.result.memory.total()).c_str(), speedup);
}

// The layouts too large to simulate, by bound, and whether one of them might have won.
void print_not_simulated(const PlanReport& r, int top) {
  const PlanCandidate& fastest = r.not_simulated.front();  // by bound
  const bool could_win = fastest.bound_s < r.plans.front().global_batch_s;
  std::printf("#\n# %zu layouts not simulated: each alone would need more than %s of host memory (--sim-memory);\n"
              "# %s; the bests per strategy and the Pareto front cover the simulated layouts only\n",
              r.not_simulated.size(), format_bytes(r.simulation_memory_bytes).c_str(),
              could_win ? "one of them might beat the best plan above" : "none could beat the best plan above");
  std::printf("# %-13s %-26s %-9s %4s %16s %12s %11s\n", "strategy", "layout", "ZeRO", "ckpt", "per batch >=",
              "host memory", "GPU memory");
  for (std::size_t i = 0; i < r.not_simulated.size() && int(i) < top; ++i) {
    const PlanCandidate& c = r.not_simulated[i];
    const std::string zero = zero_text(c.config);
    std::printf("# %-13s %-26s %-9s %4s %16s %12s %11s\n", std::string(to_string(c.strategy)).c_str(),
                layout_text(c).c_str(), zero.c_str(), c.config.checkpointing ? "yes" : "no",
                format_time(c.bound_s).c_str(), format_bytes(c.simulation_bytes).c_str(),
                format_bytes(c.memory_bytes).c_str());
  }
}

void print_plan_table(const PlanArgs& a, const PlanQuestion& q, const PlanReport& r) {
  print_table_head(q, r);
  const int shown = std::min<int>(a.top, static_cast<int>(r.plans.size()));
  for (int i = 0; i < shown; ++i) print_plan_row(r, r.plans[i], i + 1);
  if (shown < int(r.plans.size()))
    std::printf("# ranks 1-%d are exactly the %d fastest layouts that fit (--top); %zu more plans were simulated\n"
                "# to settle the bests per strategy and the Pareto front (--json lists them; their ranks may skip layouts)\n",
                shown, shown, r.plans.size() - std::size_t(shown));
  std::printf("#\n# best per strategy\n");
  for (Strategy s : q.strategies)
    for (std::size_t i = 0; i < r.plans.size(); ++i)
      if (r.plans[i].candidate.strategy == s) {
        print_plan_row(r, r.plans[i], int(i) + 1);
        break;
      }
  if (std::isfinite(r.front_limit_s))
    std::printf("#\n# Pareto front: throughput against memory per GPU (none is faster with less memory), among plans\n"
                "# within %gx the best plan's time (%s per batch; --front-within)\n",
                q.front_within, format_time(r.front_limit_s).c_str());
  else
    std::printf("#\n# Pareto front: throughput against memory per GPU (none is faster with less memory)\n");
  for (const Plan* p : pareto_front(r.plans, r.front_limit_s)) print_plan_row(r, *p, int(p - r.plans.data()) + 1);
  if (!r.not_simulated.empty()) print_not_simulated(r, a.top);
  std::printf("#\n# reproduce the best: basp simulate");
  for (const std::string& arg : simulate_args(a, r, r.plans.front().candidate)) std::printf(" %s", arg.c_str());
  std::printf("\n");
}

int run_plan(const PlanArgs& a) {
  PlanQuestion q = question_of(a);
  show_progress(q);
  const PlanReport r = plan(q);
  if (q.progress) std::fprintf(stderr, "\r%100s\r", "");
  if (!a.svg_file.empty()) write_text_file(a.svg_file, "--svg", plan_svg(r, q.strategies));
  switch (a.format.format()) {
    case Format::json: print_plan_json(a, q, r); break;
    case Format::csv: print_plan_csv(r); break;
    case Format::table: print_plan_table(a, q, r); break;
  }
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, Chosen& chosen) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand(
      "plan", "Search every sequence-parallel layout of a job for the fastest that fits (time per global batch)");
  a->topo.add_to(*sub, "dgx-h100");
  a->topo.add_outages_to(*sub);
  a->format.add_to(*sub);
  sub->add_option("--model,-m", a->model, "Shipped model name (models/NAME.yaml) or a YAML file")->capture_default_str();
  sub->add_option("--seq", a->seq, "Tokens per sequence (16384, 16K, 128K)")->capture_default_str();
  sub->add_option("--global-batch", a->global_batch, "Sequences per optimizer step")
      ->required()->check(CLI::Range(1L, 1L << 40));
  sub->add_option("--gpus", a->gpus, "GPUs of the job (0 = every GPU of the topology)")
      ->check(CLI::Range(0, static_cast<int>(ranges::gpu_count.max)))->capture_default_str();
  sub->add_option("--memory-limit", a->memory_limit,
                  "Memory per GPU a plan may use, e.g. 72GiB (default: the GPU's HBM; the memory model "
                  "counts the runtime's reserve)");
  sub->add_option("--sim-memory", a->simulation_memory,
                  "Host memory the simulations running at once may use, by estimate, e.g. 16GiB (default: 3/4 of "
                  "this machine's memory, or of its memory cgroup's limit when lower); a layout whose simulation "
                  "alone needs more is listed, not simulated");
  sub->add_option("--strategy,-s", a->strategies,
                  "Strategies to search: ulysses, basp, sp-dp, ring, usp, dp (plain data parallelism: every layout "
                  "without sequence parallelism, listed once)")
      ->delimiter(',')->check(CLI::IsMember(strategy_names()))->capture_default_str();
  sub->add_option("--calibration", a->calibration,
                  "Calibration name or file (default: the topology's own; 'none': documented defaults)");
  sub->add_option("--top", a->top,
                  "Plans ranked exactly and shown in the table: the first TOP are the TOP fastest layouts that fit "
                  "(JSON and CSV list every simulated plan)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  sub->add_option("--threads", a->threads, "Configurations simulated at once (0 = every core)")
      ->check(CLI::Range(0, 1024))->capture_default_str();
  sub->add_option("--svg", a->svg_file, "Also draw throughput per strategy over SP degree and the Pareto front to FILE");
  a->zero_options.add_to(*sub, " layouts");
  sub->add_option("--front-within", a->front_within,
                  "The Pareto front covers plans up to this many times the best plan's time; layouts a lower bound "
                  "puts beyond it are not simulated once their strategy has a faster plan (0 = no limit)")
      ->capture_default_str();
  sub->add_flag("--exhaustive", a->exhaustive,
                "Simulate every layout that fits, also those that a simulated plan of their strategy with no more "
                "memory, or the --front-within limit, rules out for sure");
  sub->callback([a, &chosen] {
    chosen.check = [a] { question_of(*a); };
    chosen.run = [a] { return run_plan(*a); };
  });
}

}  // namespace basp::cli
