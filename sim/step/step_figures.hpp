// What a simulated step's timelines and link counters reduce to: per-rank times averaged over the
// ranks (a window's middle layer standing for the layers left out), the busiest links, bytes per class.
#pragma once

#include "engine.hpp"
#include "rank_fold.hpp"
#include "step_graph.hpp"
#include "topology.hpp"

#include <array>
#include <string>
#include <cstdint>
#include <span>
#include <vector>

namespace basp {

// Step time, and per rank averaged over ranks: compute-stream busy time, time inside the
// strategy's exchange calls and inside ZeRO calls (summed over calls), and the parts of each not
// overlapped with compute (ZeRO: with compute or the exchanges). Definitions: docs/design.md,
// "Definitions".
struct StepTimes {
  double step_s = 0, compute_s = 0, a2a_s = 0, a2a_exposed_s = 0, zero_comm_s = 0, zero_exposed_s = 0;
  double gradients_s = 0;  // every rank's gradients reduced: its optimizer may start
};

// `tasks` built `window` of the model's `layers` layers (build_step); when fewer, the middle layer's
// figures and its period (forward and backward) are added once for each layer left out.
// Averages over ranks count each rank class `members[c]` times (cells differ in size; empty: once).
StepTimes step_times(const Engine& engine, const StepTasks& tasks, int layers, int window,
                     std::span<const std::uint32_t> members = {});

struct LinkUse {
  int link = -1;           // link id on the whole topology; -1 when a part of it was simulated
  std::string name;        // "from -> to", the cluster's vertex names
  LinkClass cls = LinkClass::fabric;
  double capacity_Bps = 0;
  double bytes = 0;        // over the step
  double utilization = 0;  // bytes / (capacity · step time)
  long links = 1;          // links of the cluster carrying exactly this (a class, on a part)
};

// The `count` links that carried most bytes, most first (ties: lower id first), idle links left out.
std::vector<LinkUse> busiest_links(const Topology& topo, const std::vector<double>& link_bytes, int count,
                                   double step_s);
// The same on a part of a template (cluster_part.hpp), by link class: the `count` classes whose links
// carried most bytes each (ties: lower class first), each named by its representative on the part.
std::vector<LinkUse> busiest_link_classes(const Topology& part, const RankFold& fold,
                                          const std::vector<double>& per_class, int count, double step_s);
}  // namespace basp
