// Writes trace events as they are produced (a step of thousands of GPUs makes millions), with
// times in microseconds as the format expects.
#include "trace.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <ostream>
#include <string>

namespace basp {
namespace {

constexpr int pids_per_run = 1000000;  // run r: GPUs at r·10⁶ + rank, the network at r·10⁶ + 999999

const char* pass_name(std::uint8_t pass) { return pass == 0 ? "forward" : pass == 1 ? "recompute" : "backward"; }

std::string quoted(std::string_view text) { return nlohmann::json(std::string(text)).dump(); }

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// A part of a template numbers its own ranks; the trace's are the cluster's, node-major.
int node_of(const Topology& topo, int rank) {
  return topo.cluster_ranks.empty() ? topo.node_of_rank(rank) : rank / topo.gpus_per_node;
}

}  // namespace

TraceWriter::TraceWriter(std::ostream& out) : out_(out) { out_ << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"; }

void TraceWriter::event_prefix() {
  if (!first_) out_ << ",\n";
  first_ = false;
}

void TraceWriter::add_run(std::string_view strategy, int run_index, const Topology& topo, const Engine& engine,
                          const StepTasks& tasks, int ranks, const RankFold& fold) {
  constexpr const char* streams[] = {"compute", "sequence-parallel exchange", "ZeRO gather", "ZeRO reduce"};
  const long base = long(run_index) * pids_per_run;
  for (int r = 0; r < ranks; ++r) {
    const long pid = base + r;
    event_prefix();
    out_ << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << pid << ",\"args\":{\"name\":"
         << quoted(std::string(strategy) + " · GPU " + std::to_string(r) + " (node " +
                   std::to_string(node_of(topo, r)) + ")")
         << "}}";
    event_prefix();
    out_ << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << pid << ",\"args\":{\"sort_index\":" << pid << "}}";
    for (int s = 0; s < 4; ++s) {
      event_prefix();
      out_ << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << pid << ",\"tid\":" << s
           << ",\"args\":{\"name\":\"" << streams[s] << "\"}}";
    }
    for (const Span& span : tasks.spans[fold.rank_class(r)]) {
      const double start = engine.ready_time(span.first), end = engine.finish_time(span.last);
      if (!(end > start)) continue;
      event_prefix();
      out_ << "{\"ph\":\"X\",\"pid\":" << pid << ",\"tid\":" << int(span_kind(span.label))
           << ",\"name\":" << quoted(span_name(span.label)) << ",\"ts\":" << number(start * 1e6)
           << ",\"dur\":" << number((end - start) * 1e6) << ",\"args\":{\"layer\":" << span.layer
           << ",\"pass\":\"" << pass_name(span.pass) << "\"}}";
    }
  }
  const long net = base + pids_per_run - 1;
  event_prefix();
  out_ << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << net << ",\"args\":{\"name\":"
       << quoted(std::string(strategy) + " · network (link utilization)") << "}}";
  for (const LinkSample& s : engine.link_samples()) {
    const int id = fold.topology_link(int(s.link));
    const Link& l = topo.link(id);
    event_prefix();
    out_ << "{\"ph\":\"C\",\"pid\":" << net << ",\"name\":"
         << quoted(topo.vertex(l.from).name + " -> " + topo.vertex(l.to).name) << ",\"ts\":" << number(s.time_s * 1e6)
         << ",\"args\":{\"utilization\":"
         << number(s.load_Bps * fold.member_load_factor(int(s.link)) / l.capacity_Bps) << "}}";
  }
}

void TraceWriter::finish() { out_ << "\n]}\n"; }

}  // namespace basp
