// One collective call on B concurrent groups, simulated on its own: the unit behind
// `basp collective`, the benches and the calibration of link parameters.
#pragma once

#include "collectives.hpp"
#include "engine.hpp"
#include "rank_fold.hpp"
#include "topology.hpp"
#include "cluster_part.hpp"

#include <array>
#include <functional>

#include <vector>

namespace basp {

struct CollectiveSpec {
  CollectiveOp op = CollectiveOp::alltoall;
  double size_bytes = 0.0;  // nccl-tests convention, see add_collective
  int ranks = 0;            // ranks taking part (the first ones); 0: every GPU
  int groups = 1;
  Placement placement = Placement::contiguous;
  EngineMode engine = EngineMode::automatic;
};

struct CollectiveResult {
  int ranks = 0, groups = 0, group_size = 0;
  double time_s = 0.0;      // entry at 0 to the last member's return (the slowest group)
  double algbw_Bps = 0.0;   // size / time
  double busbw_Bps = 0.0;   // algbw · the op's bus factor for the group size
  RunStats stats;           // of the whole cluster (a quotient's counts times its class size)
  EngineUse engine;
  double wall_s = 0.0;      // host time to build and simulate
  PerLinkClass<double> class_bytes;  // over the whole cluster
  std::vector<double> link_bytes;  // by link id; empty when a part of the cluster was simulated
};

CollectiveResult simulate_collective(const Topology& topo, const CollectiveSpec& spec);
// The same on a cluster given by its file: a template's class engine runs on a part of it
// (cluster_part.hpp), never building it whole; where classes are not used, on the whole topology.
CollectiveResult simulate_collective(const ClusterBuilds& cluster, const CollectiveSpec& spec, MoveCache* moves = nullptr);

}  // namespace basp
