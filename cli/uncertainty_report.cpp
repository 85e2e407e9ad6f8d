// Values keep their units: overheads in µs, efficiencies as fractions, times in ms; JSON is SI.
#include "uncertainty_report.hpp"

#include <cstdio>

namespace basp::cli {

namespace {
bool is_time(const ParameterRange& r) { return r.name.rfind("software.", 0) == 0; }

nlohmann::ordered_json band_json(const Band& b) {
  return {{"low", b.low}, {"expected", b.expected}, {"high", b.high}};
}
}  // namespace

void print_uncertainty(std::ostream& out, const UncertaintyReport& u) {
  char b[256];
  out << "#\n# uncertainty: " << u.runs
      << " simulations, network and compute parameters each at the slow end, as expected and at the fast end\n"
      << "# (docs/cost-model.md, \"Uncertainty\")\n";
  std::snprintf(b, sizeof b, "#   %-30s %10s %10s %10s  %s\n", "parameter", "low", "expected", "high", "range");
  out << b;
  for (const ParameterRange& r : u.ranges) {
    const double scale = is_time(r) ? 1e6 : 1.0;
    std::snprintf(b, sizeof b, "#   %-30s %10.4g %10.4g %10.4g  %s%s\n", r.name.c_str(), r.low * scale,
                  r.expected * scale, r.high * scale, r.source.c_str(), is_time(r) ? " (us)" : "");
    out << b;
  }
  std::snprintf(b, sizeof b, "# %-9s %-26s %-32s %-26s %s\n", "strategy", "step ms (low/exp/high)",
                "tokens/s (low/exp/high)", "a2a ms (low/exp/high)", "speedup (low/exp/high)");
  out << b;
  for (const StrategyBands& s : u.strategies) {
    char speedup[64] = "-";
    if (s.speedup_vs_ulysses.expected > 0)
      std::snprintf(speedup, sizeof speedup, "%.3f / %.3f / %.3f", s.speedup_vs_ulysses.low,
                    s.speedup_vs_ulysses.expected, s.speedup_vs_ulysses.high);
    char step[64], tokens[64], a2a[64];
    std::snprintf(step, sizeof step, "%.1f / %.1f / %.1f", s.step_s.low * 1e3, s.step_s.expected * 1e3,
                  s.step_s.high * 1e3);
    std::snprintf(tokens, sizeof tokens, "%.0f / %.0f / %.0f", s.tokens_per_s.low, s.tokens_per_s.expected,
                  s.tokens_per_s.high);
    std::snprintf(a2a, sizeof a2a, "%.1f / %.1f / %.1f", s.a2a_s.low * 1e3, s.a2a_s.expected * 1e3,
                  s.a2a_s.high * 1e3);
    std::snprintf(b, sizeof b, "  %-9s %-26s %-32s %-26s %s\n", std::string(to_string(s.strategy)).c_str(), step,
                  tokens, a2a, speedup);
    out << b;
  }
}

nlohmann::ordered_json uncertainty_json(const UncertaintyReport& u) {
  nlohmann::ordered_json j{{"runs", u.runs}, {"parameters", nlohmann::json::array()}, {"results", nlohmann::json::array()}};
  for (const ParameterRange& r : u.ranges)
    j["parameters"].push_back({{"name", r.name},
                               {"low", r.low},
                               {"expected", r.expected},
                               {"high", r.high},
                               {"source", r.source},
                               {"group", r.network ? "network" : "compute"}});
  for (const StrategyBands& s : u.strategies) {
    nlohmann::ordered_json row{{"strategy", to_string(s.strategy)},
                               {"step_s", band_json(s.step_s)},
                               {"global_batch_s", band_json(s.global_batch_s)},
                               {"tokens_per_s", band_json(s.tokens_per_s)},
                               {"a2a_s", band_json(s.a2a_s)}};
    if (s.speedup_vs_ulysses.expected > 0) row["speedup_vs_ulysses"] = band_json(s.speedup_vs_ulysses);
    j["results"].push_back(row);
  }
  return j;
}

}  // namespace basp::cli
