// A step's equitable cells: every group set's traffic refined together, so that one quotient engine
// holds all the step's calls, where no translation maps the cluster and its traffic onto themselves.
//
// Each group set (ZeRO shards and replicas, the exchange's groups) is a pattern whose flows are
// refined once, with its kind of call (an all-to-all, NCCL's rings or a send to the successor); the
// ring ops share their edges, so a ring pattern's cells serve all-gather, reduce-scatter and
// all-reduce alike. Calls of a pattern then add one flow per flow cell (flow_cells.hpp).
#pragma once

#include "collectives.hpp"
#include "flow_cells.hpp"
#include "rank_fold.hpp"
#include "routing.hpp"
#include "topology.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace basp {

struct CellFold {
  struct Pattern {
    GroupTraffic traffic;
    std::vector<std::vector<int>> groups;
    std::uint32_t flow_begin = 0;  // its flows' first index in the refined traffic
    std::uint32_t flow_count = 0;  // a call's flows (of any of its ops)
    // Every flow of one call, by op (those of its kind), each op's flows in the same order; the
    // op refined (its kind's first) is not here but in `refined`, from flow_begin on.
    std::array<std::optional<CallTraffic>, collective_op_count> calls;
  };
  std::vector<Pattern> patterns;
  CallTraffic refined;  // every pattern's first op's flows, one pattern after another
  FlowCells cells;
  QuotientLinks links;

  // The pattern of these groups and kind of call, or null.
  const Pattern* find(const std::vector<std::vector<int>>& groups, GroupTraffic traffic) const;
  // The flows of one call of `op` on `p`: its traffic and where they start there (flow i of the
  // call is flows[first + i], in cell order from p.flow_begin); null where p has no such op.
  std::pair<const CallTraffic*, std::uint32_t> call(const Pattern& p, CollectiveOp op) const;
  std::size_t bytes() const;  // host memory held, roughly (caches keep folds by size)
};

// The cells of a step's `traffic` over `ranks` ranks of `topo`, with the fabric trunks left out
// when `relax` (without: the retry where one of them bound, which its `why` says); empty where they merge neither ranks nor flows. The fold it returns runs the step
// (or a collective) on them.
std::optional<FoldChoice> cell_choice(const Topology& topo, Router& router, int ranks,
                                      std::span<const TrafficGroups> traffic, bool relax, const std::string& why);

}  // namespace basp
