// Chrome trace-event JSON (opens in Perfetto and chrome://tracing): one process per GPU with a
// track per stream, and a counter track of utilization per busy link.
#pragma once

#include "engine.hpp"
#include "rank_fold.hpp"
#include "topology.hpp"
#include "step_graph.hpp"

#include <iosfwd>
#include <string_view>

namespace basp {

class TraceWriter {
 public:
  explicit TraceWriter(std::ostream& out);
  // One simulated step: `ranks` first ranks' spans, and the link samples the engine recorded (on a
  // quotient: of link classes, shown as their representative links; on a part of a template, its
  // links, named as in the cluster).
  void add_run(std::string_view strategy, int run_index, const Topology& topo, const Engine& engine,
               const StepTasks& tasks, int ranks, const RankFold& fold);
  void finish();  // closes the JSON document

 private:
  void event_prefix();
  std::ostream& out_;
  bool first_ = true;
};

}  // namespace basp
