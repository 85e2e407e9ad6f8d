// The sweep: for each size, the global run then the grouped run, each timed per iteration as the
// slowest rank's time (a barrier first), then checked once. Rows and JSON follow nccl-tests.
#include "comm_command.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "input_error.hpp"
#include "json_output.hpp"
#include "stats.hpp"

namespace basp::validate {

namespace {
CommRow measure(const ValidateOptions& o, Control& ctl, Exchange& ex, const std::string& mode, int groups,
                double bytes) {
  const int P = ex.group_size();
  const long count = std::max(1L, long(bytes / 4.0 / P)) * P;  // per-rank elements, a multiple of P
  CommRow row;
  row.mode = mode;
  row.group_size = P;
  row.groups = groups;
  row.count = count;
  row.bytes = double(count) * 4.0;
  std::vector<double> mine;
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    ctl.barrier();
    const double t = ex.timed_exchange(count / P);
    if (it >= o.warmup) mine.push_back(t);
  }
  const long wrong = ex.exchange_and_check(count / P);
  const std::vector<double> all = ctl.gather_vector(mine);
  const std::vector<long> wrongs = ctl.gather_vector(std::vector<long>{wrong});
  if (ctl.rank() != 0) return row;
  for (int it = 0; it < o.iters; ++it) {
    double slowest = 0;
    for (int r = 0; r < ctl.size(); ++r) slowest = std::max(slowest, all[std::size_t(r * o.iters + it)]);
    row.times_s.push_back(slowest);
  }
  const Stats st = stats_of(row.times_s);
  row.min_s = st.min;
  row.median_s = st.median;
  row.max_s = st.max;
  for (long w : wrongs) row.wrong += w;
  return row;
}
}  // namespace

int comm_command(const ValidateOptions& o, Control& ctl, Hardware hw, MakeExchange make_exchange) {
  const int N = ctl.size(), B = o.groups;
  if (N % B != 0)
    throw InputError("", 0, "--groups",
                     "the grouped run needs N = K·B: N = " + std::to_string(N) +
                         " ranks is not divisible by B = " + std::to_string(B));
  auto json = open_json_output(o.json_path, ctl);
  const long max_count =
      std::max(1L, long(o.max_bytes / 4.0 / (N / B)));  // per peer, the grouped run's largest
  auto global = make_exchange(0, max_count);
  auto grouped = make_exchange(ctl.rank() / (N / B), max_count);
  std::vector<CommRow> rows;
  for (double bytes = o.min_bytes; bytes <= o.max_bytes * (1 + 1e-9); bytes *= o.factor) {
    rows.push_back(measure(o, ctl, *global, "global", 1, bytes));
    rows.push_back(measure(o, ctl, *grouped, "grouped", B, bytes));
  }
  int failed = 0;
  if (ctl.rank() == 0) {
    auto& out = std::cout;
    out << "# basp-validate comm: all-to-all over N ranks vs B concurrent groups of K = N/B\n";
    for (const auto& line : header_lines(hw)) out << "#  " << line << "\n";
    out << "#  N = " << N << ", B = " << B << ", K = " << N / B << "; fp32 elements; warm-up " << o.warmup
        << ", timed iterations " << o.iters << ", watchdog " << o.timeout_s << " s\n";
    out << "#  size = one rank's send buffer; time = median over iterations of the slowest rank; busbw = "
           "algbw (P-1)/P\n#\n";
    char b[256];
    std::snprintf(b, sizeof b, "#%8s %6s %6s %12s %12s %10s %10s %10s %10s %8s %8s %7s\n", "mode", "groups",
                  "P", "size", "count", "min", "time", "max", "", "algbw", "busbw", "#wrong");
    out << b;
    std::snprintf(b, sizeof b, "#%8s %6s %6s %12s %12s %10s %10s %10s %10s %8s %8s %7s\n", "", "(B)", "",
                  "(B)", "(elements)", "(us)", "(us)", "(us)", "", "(GB/s)", "(GB/s)", "");
    out << b;
    nlohmann::json jrows = nlohmann::json::array();
    for (const auto& r : rows) {
      const double algbw = r.bytes / r.median_s / 1e9, busbw = algbw * (r.group_size - 1) / r.group_size;
      std::snprintf(b, sizeof b, " %8s %6d %6d %12.0f %12ld %10.1f %10.1f %10.1f %10s %8.2f %8.2f %7ld\n",
                    r.mode.c_str(), r.groups, r.group_size, r.bytes, r.count, r.min_s * 1e6, r.median_s * 1e6,
                    r.max_s * 1e6, "", algbw, busbw, r.wrong);
      out << b;
      if (r.wrong) failed = 1;
      jrows.push_back({{"mode", r.mode},
                       {"groups", r.groups},
                       {"group_size", r.group_size},
                       {"size_bytes", r.bytes},
                       {"count", r.count},
                       {"min_s", r.min_s},
                       {"median_s", r.median_s},
                       {"max_s", r.max_s},
                       {"algbw_GBps", algbw},
                       {"busbw_GBps", busbw},
                       {"wrong", r.wrong},
                       {"times_s", r.times_s}});
    }
    out << "# Out of place exchanges checked: " << (failed ? "FAILED (#wrong > 0)" : "OK") << "\n";
    out.flush();
    nlohmann::json config = {{"ranks", N},
                             {"groups", B},
                             {"group_size", N / B},
                             {"min_bytes", o.min_bytes},
                             {"max_bytes", o.max_bytes},
                             {"step_factor", o.factor},
                             {"warmup", o.warmup},
                             {"iters", o.iters},
                             {"timeout_s", o.timeout_s},
                             {"datatype", "fp32"}};
    write_json_output(json.get(), measurements_document("comm", config, to_json(hw), jrows, failed == 0));
  }
  ctl.broadcast(&failed, sizeof failed);
  return failed;
}

}  // namespace basp::validate
