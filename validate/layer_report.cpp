// Rows are phases in execution order, then the all-to-all total and the layer total; statistics run
// over every (rank, iteration) sample, so max shows the slowest rank's worst iteration.
#include "layer_report.hpp"

#include <cstdio>

#include "json_output.hpp"
#include "stats.hpp"

namespace basp::validate {

bool LayerReport::ok() const {
  for (const auto& run : checks)
    for (const auto& c : run)
      if (!c.ok()) return false;
  return true;
}

namespace {
std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::vector<double> phase_samples(const StrategyMeasurement& m, int phase) {
  std::vector<double> v;
  for (const auto& s : m.samples) v.push_back(s[phase]);
  return v;
}

std::vector<double> wait_samples(const StrategyMeasurement& m, int phase) {
  std::vector<double> v;
  for (const auto& s : m.waits) v.push_back(s[phase]);
  return v;
}

std::vector<double> isolated_samples(const StrategyMeasurement& m, int phase) {
  std::vector<double> v;
  for (const auto& s : m.isolated) v.push_back(s[phase]);
  return v;
}

// Per sample: the exchanges' transfers (only_a2a), the exchanges' waits for their groups
// (only_waits), or the whole layer as it ran (every phase and every wait).
std::vector<double> total_samples(const StrategyMeasurement& m, bool only_a2a, bool only_waits = false) {
  std::vector<double> v;
  for (std::size_t i = 0; i < m.samples.size(); ++i) {
    double t = 0;
    for (int p = 0; p < kPhases; ++p) {
      const double wait = i < m.waits.size() ? m.waits[i][p] : 0.0;
      if (only_waits) t += wait;
      else if (!only_a2a) t += m.samples[i][p] + wait;
      else if (is_all_to_all(Phase(p))) t += m.samples[i][p];
    }
    v.push_back(t);
  }
  return v;
}

void row(std::ostream& out, const StrategyMeasurement& m, const std::string& name, const Stats& st,
         double bytes, const Stats* wait = nullptr, const Stats* alone = nullptr) {
  char b[300];
  const bool a2a = bytes > 0;
  const double algbw = a2a ? bytes / st.median / 1e9 : 0;
  const double busbw = algbw * double(m.group_size - 1) / double(m.group_size);
  std::snprintf(b, sizeof b, "%10s %6d %14s %12s %11.1f %11.1f %11.1f %8s %8s %11s %11s\n",
                strategy_name(m.strategy).c_str(), m.group_size, name.c_str(),
                a2a ? fmt("%.0f", bytes).c_str() : "-", st.min * 1e6, st.median * 1e6, st.max * 1e6,
                a2a ? fmt("%.2f", algbw).c_str() : "-", a2a ? fmt("%.2f", busbw).c_str() : "-",
                wait ? fmt("%.1f", wait->median * 1e6).c_str() : "-",
                alone ? fmt("%.1f", alone->median * 1e6).c_str() : "-");
  out << b;
}
}  // namespace

void print_layer_table(std::ostream& out, const LayerReport& r) {
  const LayerShape& s = r.options.shape;
  out << "# basp-validate layer: the attention layer forward + backward, per phase\n";
  for (const auto& line : header_lines(r.hardware)) out << "#  " << line << "\n";
  out << "#  model " << r.model << ": heads " << s.heads << ", kv heads " << s.kv_heads << ", head dim "
      << s.head_dim << ", hidden " << s.hidden << ", seq " << s.seq << " tokens, micro-batch " << s.batch
      << ", rope theta " << s.rope_theta << "\n";
  out << "#  precision " << r.precision << ", attention key tile " << r.attention_tile << ", warm-up "
      << r.options.warmup << ", timed iterations " << r.options.iters << ", seed " << r.options.seed
      << ", watchdog " << (r.timeout_s > 0 ? fmt("%g s", r.timeout_s) : std::string("off")) << "\n";
  out << "#  statistics over iterations x ranks; bytes = one rank's send buffer; busbw = algbw (P-1)/P\n";
  out << "#  an exchange's time is its transfer, once its group is aligned by a barrier; wait = median time in\n"
         "#  that barrier, waiting for the group's last member (CUDA: not told apart, 0); layer_total has both;\n"
         "#  alone = median of the same exchange timed isolated, after the step, with nothing else running\n#\n";
  char b[300];
  std::snprintf(b, sizeof b, "#%9s %6s %14s %12s %11s %11s %11s %8s %8s %11s %11s\n", "strategy", "group", "phase",
                "bytes", "min", "median", "max", "algbw", "busbw", "wait", "alone");
  out << b;
  std::snprintf(b, sizeof b, "#%9s %6s %14s %12s %11s %11s %11s %8s %8s %11s %11s\n", "", "(P)", "", "(B)", "(us)",
                "(us)", "(us)", "(GB/s)", "(GB/s)", "(us)", "(us)");
  out << b;
  for (const auto& m : r.runs) {
    for (int p = 0; p < kPhases; ++p) {
      const Stats wait = stats_of(wait_samples(m, p)), alone = stats_of(isolated_samples(m, p));
      const bool a2a = is_all_to_all(Phase(p));
      row(out, m, std::string(kPhaseNames[p]), stats_of(phase_samples(m, p)), m.send_bytes[p], a2a ? &wait : nullptr,
          a2a && !m.isolated.empty() ? &alone : nullptr);
    }
    row(out, m, "a2a_total", stats_of(total_samples(m, true)), 0);
    row(out, m, "peer_wait", stats_of(total_samples(m, false, true)), 0);
    row(out, m, "layer_total", stats_of(total_samples(m, false)), 0);
  }
  if (!r.checks.empty() && !r.checks.front().empty()) {
    out << "#\n# check against the double-precision single-device reference (relative L2 error)\n";
    std::snprintf(b, sizeof b, "#%9s %8s %12s %12s %12s %8s\n", "strategy", "tensor", "rel_l2", "max_abs",
                  "tolerance", "result");
    out << b;
    for (std::size_t i = 0; i < r.runs.size(); ++i)
      for (const auto& c : r.checks[i]) {
        std::snprintf(b, sizeof b, " %9s %8s %12.3e %12.3e %12.1e %8s\n",
                      strategy_name(r.runs[i].strategy).c_str(), c.name.c_str(), c.rel_l2, c.max_abs,
                      c.tolerance, c.ok() ? "OK" : "FAILED");
        out << b;
      }
    for (std::size_t i = 0; i < r.runs.size(); ++i)
      for (const auto& c : r.checks[i])
        if (!c.ok() && c.worst_rank >= 0)
          out << "# FAILED: " << strategy_name(r.runs[i].strategy) << " " << c.name
              << " differs from the reference most on rank " << c.worst_rank << "\n";
    if (r.strategies_max_abs_diff)
      out << "# ulysses vs basp: largest absolute difference " << fmt("%.3e", *r.strategies_max_abs_diff)
          << "\n";
    out << "# Check: " << (r.ok() ? "OK" : "FAILED") << "\n";
  } else {
    out << "#\n# Check: not run (--no-check)\n";
  }
}

namespace {
// One phase of one strategy: its statistics and every rank's times; for an exchange, also its wait
// for the group and its time alone.
nlohmann::json phase_json(const StrategyMeasurement& m, int p) {
  const Stats st = stats_of(phase_samples(m, p));
  nlohmann::json per_rank = nlohmann::json::array();
  for (int rank = 0; rank < m.ranks; ++rank) {
    nlohmann::json its = nlohmann::json::array();
    for (int it = 0; it < m.iters; ++it) its.push_back(m.samples[std::size_t(rank * m.iters + it)][p]);
    per_rank.push_back(its);
  }
  nlohmann::json phase = {{"name", kPhaseNames[p]},
                          {"all_to_all", is_all_to_all(Phase(p))},
                          {"backward", is_backward(Phase(p))},
                          {"send_bytes", m.send_bytes[p]},
                          {"min_s", st.min},
                          {"median_s", st.median},
                          {"max_s", st.max},
                          {"times_s", per_rank}};
  if (is_all_to_all(Phase(p))) {  // the wait for the group before the transfer
    const Stats w = stats_of(wait_samples(m, p));
    phase["wait_min_s"] = w.min;
    phase["wait_median_s"] = w.median;
    phase["wait_max_s"] = w.max;
    if (!m.isolated.empty()) {  // the same exchange timed alone, after the step
      const Stats a = stats_of(isolated_samples(m, p));
      phase["isolated_min_s"] = a.min;
      phase["isolated_median_s"] = a.median;
      phase["isolated_max_s"] = a.max;
    }
  }
  return phase;
}

nlohmann::json checks_json(const std::vector<TensorCheck>& checks) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : checks) {
    nlohmann::json check = {{"tensor", c.name},
                            {"rel_l2", c.rel_l2},
                            {"max_abs", c.max_abs},
                            {"tolerance", c.tolerance},
                            {"ok", c.ok()}};
    if (!c.ok() && c.worst_rank >= 0) check["worst_rank"] = c.worst_rank;  // only a failing check names one
    out.push_back(check);
  }
  return out;
}
}  // namespace

nlohmann::json layer_json(const LayerReport& r) {
  const LayerShape& s = r.options.shape;
  nlohmann::json config = {{"model", r.model},
                           {"precision", r.precision},
                           {"heads", s.heads},
                           {"kv_heads", s.kv_heads},
                           {"head_dim", s.head_dim},
                           {"hidden", s.hidden},
                           {"seq", s.seq},
                           {"batch", s.batch},
                           {"rope_theta", s.rope_theta},
                           {"seed", r.options.seed},
                           {"warmup", r.options.warmup},
                           {"iters", r.options.iters},
                           {"check", r.options.check},
                           {"attention_tile", r.attention_tile},
                           {"timeout_s", r.timeout_s},
                           {"ranks", r.hardware.hosts.size()}};
  nlohmann::json results = nlohmann::json::array();
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    const auto& m = r.runs[i];
    nlohmann::json phases = nlohmann::json::array();
    for (int p = 0; p < kPhases; ++p) phases.push_back(phase_json(m, p));
    const nlohmann::json checks = i < r.checks.size() ? checks_json(r.checks[i]) : nlohmann::json::array();
    const Stats a2a = stats_of(total_samples(m, true)), total = stats_of(total_samples(m, false));
    const Stats waits = stats_of(total_samples(m, false, true));
    results.push_back({{"strategy", strategy_name(m.strategy)},
                       {"group_size", m.group_size},
                       {"a2a_median_s", a2a.median},
                       {"peer_wait_median_s", waits.median},
                       {"layer_median_s", total.median},
                       {"phases", phases},
                       {"checks", checks}});
  }
  nlohmann::json j = measurements_document("layer", config, to_json(r.hardware), results, r.ok());
  if (r.strategies_max_abs_diff) j["ulysses_vs_basp_max_abs_diff"] = *r.strategies_max_abs_diff;
  return j;
}

}  // namespace basp::validate
