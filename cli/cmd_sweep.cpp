// `basp sweep`: `basp simulate` over the cross product of --vary KEY=V1,V2,... (any simulate flag),
// as a table or CSV, with a progress bar when stderr is a terminal. An impossible combination
// becomes a row with its reason; the sweep fails (exit 2) only if every combination does.
#include "commands.hpp"
#include "input_error.hpp"
#include "simulate_options.hpp"
#include "step_report.hpp"
#include "svg_chart.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <unistd.h>

namespace basp::cli {
namespace {

struct Variation {
  std::string key;
  std::vector<std::string> values;
};

struct SweepCommand {
  SimulateArgs args;
  FormatOptions format;
  std::vector<std::string> vary;
  std::string svg_file;
};

// One simulated strategy of one combination, for the plots.
struct SweepPoint {
  std::size_t x;       // index of the first varied key's value
  std::string series;  // strategy, and the other varied keys' values
  double step_ms, tokens_per_s, a2a_percent, speedup;  // speedup 0: no Ulysses baseline
};

// Each figure over the first varied key, one line per strategy (and per value of the other keys).
std::string sweep_svg(const std::vector<Variation>& vars, const std::vector<SweepPoint>& points) {
  std::vector<std::string> names;
  for (const SweepPoint& p : points)
    if (std::find(names.begin(), names.end(), p.series) == names.end()) names.push_back(p.series);
  const std::string x = vars.front().key;
  auto chart = [&](const std::string& title, const std::string& y, double SweepPoint::*figure) {
    Chart c{title + " over " + x, x, y, false, vars.front().values, {}};
    for (std::size_t k = 0; k < names.size(); ++k) {
      ChartSeries s{names[k], {}, true, int(k)};
      for (const SweepPoint& p : points)
        if (p.series == names[k] && p.*figure > 0) s.points.push_back({double(p.x), p.*figure});
      c.series.push_back(std::move(s));
    }
    return c;
  };
  return svg_charts({chart("Step time", "step time (ms)", &SweepPoint::step_ms),
                     chart("Throughput", "tokens/s", &SweepPoint::tokens_per_s),
                     chart("All-to-all share of the step", "all-to-all share (%)", &SweepPoint::a2a_percent),
                     chart("Speedup over Ulysses", "speedup (x)", &SweepPoint::speedup)});
}

std::vector<Variation> parse_variations(const std::vector<std::string>& specs) {
  SimulateArgs scratch;
  CLI::App probe;
  add_simulate_options(probe, scratch);
  std::vector<Variation> out;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw InputError("", 0, "--vary", "'" + spec + "' is not KEY=V1,V2,... (e.g. seq=16K,32K)");
    Variation v;
    v.key = spec.substr(0, eq);
    while (!v.key.empty() && v.key.front() == '-') v.key.erase(v.key.begin());
    if (v.key == "strategy" || v.key == "s")
      throw InputError("", 0, "--vary", "strategies are compared in every row already: give them with --strategy");
    if (probe.get_option_no_throw("--" + v.key) == nullptr)
      throw InputError("", 0, "--vary", "'" + v.key + "' is not a simulate flag (see basp simulate --help)");
    for (const Variation& seen : out)
      if (seen.key == v.key) throw InputError("", 0, "--vary", "'" + v.key + "' is varied twice");
    std::string rest = spec.substr(eq + 1);
    for (std::size_t start = 0; start <= rest.size();) {
      const auto comma = rest.find(',', start);
      const std::string value = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (value.empty()) throw InputError("", 0, "--vary", "'" + spec + "' has an empty value");
      v.values.push_back(value);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    out.push_back(std::move(v));
  }
  if (out.empty()) throw InputError("", 0, "--vary", "give at least one --vary KEY=V1,V2,...");
  return out;
}

// The base arguments with one combination's values applied by CLI11 itself, so each value is
// checked exactly as `basp simulate` checks it.
SimulateArgs apply(const SimulateArgs& base, const std::vector<Variation>& vars, const std::vector<std::size_t>& pick) {
  SimulateArgs a = base;
  // ZeRO settings given for the whole sweep apply to the rows of the stages they serve; only a
  // varied one is refused in a row of another stage.
  a.zero_options.given = {};
  a.zero_options.overlap_given = false;
  CLI::App app;
  add_simulate_options(app, a);
  std::vector<std::string> argv;
  for (std::size_t i = 0; i < vars.size(); ++i) argv.push_back("--" + vars[i].key + "=" + vars[i].values[pick[i]]);
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 parses a reversed vector
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw InputError("", 0, "--vary", e.what());
  }
  return a;
}

void progress(std::size_t done, std::size_t total, const std::string& label) {
  constexpr int width = 30;
  const int filled = static_cast<int>(width * done / total);
  std::fprintf(stderr, "\r[%s%s] %zu/%zu %-40.40s", std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), done, total, label.c_str());
  if (done == total) std::fprintf(stderr, "\r%*s\r", width + 60, "");
  std::fflush(stderr);
}

int run_sweep(const SweepCommand& cmd) {
  const std::vector<Variation> vars = parse_variations(cmd.vary);
  std::size_t total = 1;
  for (const Variation& v : vars) total *= v.values.size();
  if (total > 10000) throw InputError("", 0, "--vary", std::to_string(total) + " combinations: at most 10000");
  const bool bar = ::isatty(STDERR_FILENO) != 0;
  const Format format = cmd.format.format();

  nlohmann::ordered_json json_rows = nlohmann::json::array();
  if (format == Format::csv) {
    for (const Variation& v : vars) std::cout << v.key << ",";
    std::cout << csv_header() << ",error\n";
  } else if (format == Format::table) {
    std::printf("# basp sweep: %zu combinations of", total);
    for (const Variation& v : vars) std::printf(" %s", v.key.c_str());
    std::printf("\n");
    for (const Variation& v : vars) std::printf("%-12s ", v.key.c_str());
    std::printf("%-8s %10s %12s %6s %10s %6s %10s %12s %8s\n", "strategy", "step(ms)", "tokens/s", "MFU%",
                "a2a(ms)", "a2a%", "ZeRO(ms)", "mem/GPU(GB)", "speedup");
  }
  std::vector<std::size_t> pick(vars.size(), 0);
  std::vector<SweepPoint> points;
  std::size_t ok = 0;
  std::string first_error;
  for (std::size_t n = 0; n < total; ++n) {
    std::string label, cells;
    nlohmann::ordered_json varied = nlohmann::json::object();
    for (std::size_t i = 0; i < vars.size(); ++i) {
      const std::string& value = vars[i].values[pick[i]];
      label += vars[i].key + "=" + value + " ";
      varied[vars[i].key] = value;
      char cell[64];
      std::snprintf(cell, sizeof cell, "%-12s ", value.c_str());
      cells += format == Format::csv ? value + "," : std::string(cell);
    }
    if (bar) progress(n, total, label);
    try {
      const SimulateArgs args = apply(cmd.args, vars, pick);
      StepOptions options;
      options.memory_budget_bytes = memory_budget_bytes(args);
      const StepReport rep = simulate_step(to_step_config(args), options);
      ++ok;
      nlohmann::ordered_json results = nlohmann::json::array();
      for (const StrategyResult& r : rep.results) {
        std::string series(to_string(r.strategy));
        for (std::size_t i = 1; i < vars.size(); ++i) series += " " + vars[i].key + "=" + vars[i].values[pick[i]];
        points.push_back({pick[0], series, r.step_s * 1e3, r.tokens_per_s, r.a2a_share * 100,
                          r.speedup_vs_ulysses.value_or(0.0)});
        if (format == Format::csv) {
          std::cout << cells << csv_row(rep, r) << ",\n";
        } else if (format == Format::json) {
          results.push_back(result_json(rep, r, false));
        } else {
          std::printf("%s%-8s %10.2f %12.0f %6.1f %10.2f %6.1f %10.2f %8.1f %-4s %8s\n", cells.c_str(),
                      std::string(to_string(r.strategy)).c_str(), r.step_s * 1e3, r.tokens_per_s, r.mfu * 100,
                      r.a2a_s * 1e3, r.a2a_share * 100, r.zero_comm_s * 1e3, r.memory.total() / 1e9,
                      r.fits ? "ok" : "OVER",
                      r.speedup_vs_ulysses ? (std::to_string(*r.speedup_vs_ulysses).substr(0, 4) + "x").c_str() : "-");
        }
      }
      if (format == Format::json) json_rows.push_back({{"vary", varied}, {"config", config_json(rep)}, {"results", results}});
    } catch (const InputError& e) {
      if (first_error.empty()) first_error = e.what();
      if (format == Format::csv) {
        const std::string header = csv_header();  // one string: begin() and end() of the same
        std::cout << cells << std::string(std::count(header.begin(), header.end(), ','), ',') << ",\"" << e.what()
                  << "\"\n";
      } else if (format == Format::json) {
        json_rows.push_back({{"vary", varied}, {"error", e.what()}});
      } else {
        std::printf("%s-- not possible: %s\n", cells.c_str(), e.what());
      }
    }
    std::fflush(stdout);
    for (std::size_t i = vars.size(); i-- > 0;) {  // odometer: the last key varies fastest
      if (++pick[i] < vars[i].values.size()) break;
      pick[i] = 0;
    }
  }
  if (bar) progress(total, total, "");
  if (format == Format::json) std::cout << nlohmann::ordered_json{{"rows", json_rows}}.dump(2) << "\n";
  if (ok == 0) throw InputError("", 0, "--vary", "no combination could be simulated; the first: " + first_error);
  if (!cmd.svg_file.empty()) write_text_file(cmd.svg_file, "--svg", sweep_svg(vars, points));
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, Chosen& chosen) {
  auto cmd = std::make_shared<SweepCommand>();
  CLI::App* sub = app.add_subcommand("sweep", "Run simulate over combinations: --vary KEY=V1,V2 [--vary ...]");
  add_simulate_options(*sub, cmd->args);
  cmd->format.add_to(*sub);
  sub->add_option("--vary", cmd->vary, "KEY=V1,V2,...: a simulate flag (without --) and its values; repeatable")
      ->required();
  sub->add_option("--svg", cmd->svg_file,
                  "Also plot step time, tokens/s, all-to-all share and speedup over the first varied key to FILE");
  sub->callback([cmd, &chosen] {
    chosen.check = [cmd] {
      parse_variations(cmd->vary);
      to_step_config(cmd->args);
      memory_budget_bytes(cmd->args);
    };
    chosen.run = [cmd] { return run_sweep(*cmd); };
  });
}

}  // namespace basp::cli
