// The per-rank bounds on collective calls that the planner's pruning rests on: exact where the
// closed form is (one NVSwitch), and never above a simulated call on any shipped cluster shape.
#include "collective_bounds.hpp"
#include "collective_run.hpp"
#include "helpers.hpp"
#include "topology_file.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

using namespace basp;
using basp::test::data;

namespace {

constexpr double S = 64.0 * 1048576.0;

// The bound on the slowest rank's call: its overheads plus the largest transfer bound.
double slowest_bound_s(const Topology& topo, CollectiveOp op, int groups, Placement placement, double size) {
  const int ranks = static_cast<int>(topo.gpus.size());
  const RankFold fold = RankFold::identity(ranks);
  GroupSet set(make_groups(ranks, groups, placement), fold);
  Router router(topo);
  const std::vector<double> transfer = call_transfer_bounds(router, topo, fold, op, set, size);
  double slowest = 0.0;
  for (int r = 0; r < ranks; ++r)
    slowest = std::max(slowest, call_overhead_s(topo, op, static_cast<int>(set.groups()[set.group_of(r)].size())) +
                                    transfer[r]);
  return slowest;
}

}  // namespace

// System: 8 GPUs on one NVSwitch, 100 GB/s ports, 1 us per hop, launch 5 us, 0.5 us per peer.
// Expectations: a rank's 7 chunks of S/8 leave (and arrive) over its own port after the 2 us path
// latency, which is the simulated time itself: 5 + 7·0.5 + 2 (us) + (7/8)·S / 100 GB/s. A ring
// edge carries (7/8)·S after 7 steps of 2 us (all-gather), twice that for all-reduce.
TEST_CASE("collective bounds: equal to the closed form on one NVSwitch") {
  const Topology t = load_topology(data("nvswitch-8gpu.yaml"));
  CHECK(slowest_bound_s(t, CollectiveOp::alltoall, 1, Placement::contiguous, S) ==
        Approx(8.5e-6 + 2e-6 + S / 8 * 7 / 100e9).epsilon(1e-12));
  CHECK(slowest_bound_s(t, CollectiveOp::allgather, 1, Placement::contiguous, S) ==
        Approx(5.5e-6 + 7 * 2e-6 + S * 7 / 8 / 100e9).epsilon(1e-12));
  CHECK(slowest_bound_s(t, CollectiveOp::allreduce, 1, Placement::contiguous, S) ==
        Approx(5.5e-6 + 14 * 2e-6 + 2 * S * 7 / 8 / 100e9).epsilon(1e-12));
  for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::allreduce})
    CHECK(simulate_collective(t, {.op = op, .size_bytes = S}).time_s ==
          Approx(slowest_bound_s(t, op, 1, Placement::contiguous, S)).epsilon(1e-9));
  // With a local copy of 10 GB/s: groups of one are their launch and copy, one group of 8 its
  // overheads and the copy of S/8, which outlasts the flows; bound and simulation agree.
  Topology c = t;
  c.software.local_copy_Bps = 10e9;
  CHECK(slowest_bound_s(c, CollectiveOp::alltoall, 8, Placement::contiguous, S) ==
        Approx(5e-6 + S / 10e9).epsilon(1e-12));
  CHECK(slowest_bound_s(c, CollectiveOp::alltoall, 1, Placement::contiguous, S) ==
        Approx(8.5e-6 + S / 8 / 10e9).epsilon(1e-12));
  for (int groups : {1, 8})
    CHECK(simulate_collective(c, {.op = CollectiveOp::alltoall, .size_bytes = S, .groups = groups}).time_s ==
          Approx(slowest_bound_s(c, CollectiveOp::alltoall, groups, Placement::contiguous, S)).epsilon(1e-9));
}

// System: every shipped multi-GPU topology at a small size, every collective, one to four groups,
// contiguous and strided, 1 MiB and 64 MiB, with and without a local copy of the all-to-all's own
// slice. Expectations: the simulated call (all groups at once,
// sharing the network) never ends before its slowest rank's bound.
TEST_CASE("collective bounds: never above a simulated call") {
  int checked = 0;
  for (const char* name :
       {"paper-a100-2x4", "dgx-h100", "dgx-a100-superpod", "pcie-8gpu", "gb200-nvl72", "dgx-h100-3tier"}) {
    TopologyOverrides o;
    if (std::string(name) == "gb200-nvl72") o.nodes = 18;
    else if (std::string(name) != "pcie-8gpu") o.nodes = 4;
    Topology t = load_topology(name, o);
    const int ranks = static_cast<int>(t.gpus.size());
    for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::reducescatter,
                            CollectiveOp::allreduce, CollectiveOp::sendrecv})
      for (int groups : {1, 2, 4})
        for (Placement p : {Placement::contiguous, Placement::strided})
          for (double size : {1048576.0, S})
            for (double copy_Bps : {0.0, 50e9}) {  // without and with a local copy
              if (ranks % groups != 0 || (groups == 1 && p == Placement::strided)) continue;
              t.software.local_copy_Bps = copy_Bps;
              CAPTURE(name, static_cast<int>(op), groups, static_cast<int>(p), size, copy_Bps);
              const double simulated =
                  simulate_collective(t, {.op = op, .size_bytes = size, .groups = groups, .placement = p}).time_s;
              const double bound = slowest_bound_s(t, op, groups, p, size);
              CHECK(bound <= simulated * (1 + 1e-9));
              CHECK(bound > 0.0);
              ++checked;
            }
  }
  CHECK(checked == 600);  // 6 topologies × 5 ops × 5 group layouts × 2 sizes × 2 copy rates
}

// System: 32 GPUs of dgx-h100 (4 nodes), one CallBounds handed all-to-alls on one group of 32 and
// on 4 groups of 8, then the groups rebuilt as new objects. Expectations: every call's bound is
// call_transfer_bounds' for its own groups, whichever sets came before, and a rebuilt set with
// the same groups takes the same bound (sets are matched by their groups, not their address).
TEST_CASE("collective bounds: kept per groups and op, never another set's") {
  TopologyOverrides o;
  o.nodes = 4;
  const Topology t = load_topology("dgx-h100", o);
  const int ranks = static_cast<int>(t.gpus.size());
  const RankFold fold = RankFold::identity(ranks);
  Router router(t);
  CallBounds bounds;
  for (int round = 0; round < 2; ++round)
    for (int groups : {1, 4}) {
      GroupSet set(make_groups(ranks, groups, Placement::contiguous), fold);
      const std::vector<double> expected = call_transfer_bounds(router, t, fold, CollectiveOp::alltoall, set, S);
      for (int r : {0, 9, 31}) {
        bounds.select(r);
        CAPTURE(round, groups, r);
        CHECK(bounds.get(router, t, fold, CollectiveOp::alltoall, set, S).transfer_s == expected[r]);
      }
    }
  // The two sets' bounds differ (a global all-to-all crosses the fabric), so a mix-up would show.
  GroupSet one(make_groups(ranks, 1, Placement::contiguous), fold), four(make_groups(ranks, 4, Placement::contiguous), fold);
  CHECK(call_transfer_bounds(router, t, fold, CollectiveOp::alltoall, one, S)[0] >
        call_transfer_bounds(router, t, fold, CollectiveOp::alltoall, four, S)[0]);
}

// System: 64 GPUs of dgx-h100 (8 nodes); sets of 8 groups (contiguous: one node each; strided:
// one GPU of every node, rings across the fabric). One TransferLineStore is asked for every op's
// lines first on a fold into classes, then on the unfolded ranks, which extends what it holds.
// Expectations: every rank's lines equal call_transfer_lines' on the unfolded set, to the bit,
// whichever fold they were first worked out on (a rank's lines do not depend on the fold).
TEST_CASE("collective bounds: a line store extended across folds gives each rank its own lines") {
  TopologyOverrides o;
  o.nodes = 8;
  const Topology t = load_topology("dgx-h100", o);
  const int ranks = static_cast<int>(t.gpus.size());
  const auto contiguous = make_groups(ranks, 8, Placement::contiguous);
  const auto strided = make_groups(ranks, 8, Placement::strided);
  const std::vector<TrafficGroups> traffic{{&contiguous, GroupTraffic::all_pairs},
                                           {&strided, GroupTraffic::nccl_rings},
                                           {&contiguous, GroupTraffic::nccl_rings}};
  const FoldChoice coarse = choose_fold(EngineMode::classes, t, ranks, traffic);
  REQUIRE(coarse.fold.folded());
  const RankFold all = RankFold::identity(ranks);
  Router router(t);
  TransferLineStore store;
  int compared = 0;
  for (const auto* groups : {&contiguous, &strided})
    for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::reducescatter,
                            CollectiveOp::allreduce, CollectiveOp::sendrecv}) {
      GroupSet on_classes(*groups, coarse.fold), on_ranks(*groups, all);
      const int id = store.groups_id(on_classes);
      CHECK(store.groups_id(on_ranks) == id);
      CHECK(store.lines(router, t, id, op, on_classes, coarse.fold.classes())->index.size() ==
            std::size_t(coarse.fold.classes()));
      const TransferLineStore::Lines& extended = *store.lines(router, t, id, op, on_ranks, ranks);
      const std::vector<TransferLines> expected = call_transfer_lines(router, t, all, op, on_ranks);
      REQUIRE(extended.index.size() == std::size_t(ranks));
      REQUIRE(extended.transfer.size() == std::size_t(ranks));  // no period set: each rank's own
      for (int r = 0; r < ranks; ++r) {
        CAPTURE(static_cast<int>(op), groups == &strided, r);
        CHECK(extended.of(r).lines == expected[r].lines);
        CHECK(extended.overhead_s[r] ==
              call_overhead_s(t, op, static_cast<int>(on_ranks.groups()[on_ranks.group_of(r)].size())));
        ++compared;
      }
    }
  CHECK(compared == 2 * 5 * 64);
  // The two sets' all-to-all lines differ (one stays in a node), so a mix-up of ids would show.
  GroupSet a(contiguous, all), b(strided, all);
  CHECK(store.lines(router, t, store.groups_id(a), CollectiveOp::alltoall, a, ranks)->of(0).at(S) <
        store.lines(router, t, store.groups_id(b), CollectiveOp::alltoall, b, ranks)->of(0).at(S));
}

// System: 64 GPUs of dgx-h100 (8 nodes, 2 per leaf, 2 spines) and of dgx-h100-3tier (2 per leaf);
// BASP-like traffic: SP groups of 32 ranks (4 nodes), split into strided all-to-all groups
// (ranks j, j+8, j+16, j+24), and rings through one GPU of every node (ZeRO's replicas).
// The two together repeat only every 4 nodes; each alone repeats more often (the strided groups
// rotate within their SP group, the rings shift by any node the fabric allows); send/recv along
// the rings' groups too.
// Expectations: a store given each call's own period (choose_fold on that traffic alone) gives
// every rank the lines worked out for it directly, to rounding, at any size, whether its group
// set is built on every rank or on the step's fold; it works out fewer lines than ranks, so the
// copies are exercised.
TEST_CASE("collective bounds: each call's own period gives every rank its own lines") {
  int copied = 0;
  for (const bool three_tier : {false, true}) {
    TopologyOverrides o;
    o.nodes = 8;
    o.nodes_per_leaf = 2;
    if (!three_tier) o.spines = 2;
    const Topology t = load_topology(three_tier ? "dgx-h100-3tier" : "dgx-h100", o);
    const int ranks = static_cast<int>(t.gpus.size());
    REQUIRE(ranks == 64);
    // GPUs 0-3 of each node: groups of 4 strided over the SP group and rings through all 8 nodes;
    // GPUs 4-7: groups of 2 and rings of 2 nodes. Ranks of one period then differ in their lines,
    // so a copy from the wrong rank would show.
    std::vector<std::vector<int>> strided, replicas;
    for (int block = 0; block < ranks; block += 32)
      for (int j = 0; j < 8; ++j)
        if (j < 4) {
          strided.push_back({block + j, block + j + 8, block + j + 16, block + j + 24});
        } else {
          strided.push_back({block + j, block + j + 8});
          strided.push_back({block + j + 16, block + j + 24});
        }
    for (int j = 0; j < 8; ++j)
      if (j < 4) {
        replicas.emplace_back();
        for (int node = 0; node < 8; ++node) replicas.back().push_back(8 * node + j);
      } else {
        for (int node = 0; node < 8; node += 2) replicas.push_back({8 * node + j, 8 * node + 8 + j});
      }
    const std::vector<TrafficGroups> every{{&strided, GroupTraffic::all_pairs},
                                           {&replicas, GroupTraffic::nccl_rings},
                                           {&replicas, GroupTraffic::successor}};
    const RankFold all = RankFold::identity(ranks);
    const FoldChoice step = choose_fold(EngineMode::classes, t, ranks, every);
    REQUIRE(step.fold.folded());
    Router router(t);
    TransferLineStore direct, by_period, on_step_fold;
    for (const TrafficGroups& traffic : every) {
      const std::vector<TrafficGroups> alone{traffic};
      const FoldChoice call = choose_fold(EngineMode::classes, t, ranks, alone);
      CAPTURE(three_tier, call.use.why, step.use.why);
      CHECK(call.fold.period < step.fold.period);
      const int id = by_period.groups_id(*traffic.groups);
      const std::vector<CollectiveOp> ops =
          traffic.traffic == GroupTraffic::all_pairs  ? std::vector<CollectiveOp>{CollectiveOp::alltoall}
          : traffic.traffic == GroupTraffic::successor ? std::vector<CollectiveOp>{CollectiveOp::sendrecv}
                                                       : std::vector<CollectiveOp>{CollectiveOp::allgather,
                                                                                   CollectiveOp::reducescatter,
                                                                                   CollectiveOp::allreduce};
      for (CollectiveOp op : ops) {
        GroupSet set(*traffic.groups, all);
        const TransferLineStore::Lines& p = *by_period.lines(router, t, id, op, set, ranks, call.fold.period);
        const TransferLineStore::Lines& d = *direct.lines(router, t, direct.groups_id(set), op, set, ranks);
        REQUIRE(p.index.size() == std::size_t(ranks));
        CHECK(p.transfer.size() == std::size_t(call.fold.period));
        copied += ranks - static_cast<int>(p.transfer.size());
        // As the planner asks: the set built on the step's fold (its rings' representatives and
        // their slowest step taken over the step's orbits), for the step's representatives.
        GroupSet folded(*traffic.groups, step.fold);
        const TransferLineStore::Lines& f = *on_step_fold.lines(router, t, on_step_fold.groups_id(folded), op, folded,
                                                                step.fold.period, call.fold.period);
        REQUIRE(f.index.size() == std::size_t(step.fold.period));
        for (int r = 0; r < ranks; ++r) {
          CAPTURE(static_cast<int>(op), r);
          CHECK(p.overhead_s[r] == d.overhead_s[r]);
          for (double size : {1e3, S, 1e10}) {
            CHECK(p.of(r).at(size) == Approx(d.of(r).at(size)).epsilon(1e-12));
            if (r < step.fold.period) CHECK(f.of(r).at(size) == Approx(d.of(r).at(size)).epsilon(1e-12));
          }
        }
      }
    }
  }
  CHECK(copied > 0);
}

// System: 40 GPUs of dgx-h100 (5 nodes, 2 per leaf: the last leaf half full, no translation);
// four group sets, each asked for every op's lines by two threads at once, each with its own
// router and in the opposite order, from one shared TransferLineStore, first for half the ranks
// and then for all. Expectations: each thread gets, for every rank, the lines a store of its own
// on one thread gives, to the bit (the lines do not depend on which thread or router worked them
// out, nor on another thread working on the same entry); the shared store worked each out once.
TEST_CASE("collective bounds: a line store shared by threads gives each the lines it would work out alone") {
  const Topology t = load_topology("dgx-h100", {.nodes = 5, .nodes_per_leaf = 2, .spines = 2});
  const int ranks = static_cast<int>(t.gpus.size());
  const std::vector<std::vector<std::vector<int>>> sets{
      make_groups(ranks, 5, Placement::contiguous), make_groups(ranks, 5, Placement::strided),
      make_groups(ranks, 8, Placement::strided), make_groups(ranks, 1, Placement::contiguous)};
  const std::vector<CollectiveOp> ops{CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::reducescatter,
                                      CollectiveOp::allreduce, CollectiveOp::sendrecv};
  const RankFold all = RankFold::identity(ranks);
  // What one thread with a store of its own works out, per set and op.
  std::vector<std::vector<TransferLines>> alone;
  std::size_t alone_bytes = 0;
  {
    Router router(t);
    TransferLineStore own;
    for (const auto& groups : sets)
      for (CollectiveOp op : ops) {
        GroupSet set(groups, all);
        const auto l = own.lines(router, t, own.groups_id(set), op, set, ranks);
        alone.emplace_back();
        for (int r = 0; r < ranks; ++r) alone.back().push_back(l->of(r));
      }
    alone_bytes = own.bytes();
  }
  TransferLineStore shared;
  std::vector<std::vector<TransferLines>> got[2];
  auto ask = [&](int thread) {
    Router router(t);
    got[thread].resize(alone.size());
    for (std::size_t k = 0; k < alone.size(); ++k) {
      const std::size_t i = thread == 0 ? k : alone.size() - 1 - k;
      GroupSet set(sets[i / ops.size()], all);
      const int id = shared.groups_id(set);
      const CollectiveOp op = ops[i % ops.size()];
      shared.lines(router, t, id, op, set, ranks / 2);
      const auto l = shared.lines(router, t, id, op, set, ranks);
      for (int r = 0; r < ranks; ++r) got[thread][i].push_back(l->of(r));
    }
  };
  std::thread other(ask, 1);
  ask(0);
  other.join();
  int compared = 0;
  for (int thread : {0, 1})
    for (std::size_t i = 0; i < alone.size(); ++i)
      for (int r = 0; r < ranks; ++r) {
        CAPTURE(thread, i, r);
        CHECK(got[thread][i][r].lines == alone[i][r].lines);
        ++compared;
      }
  CHECK(compared == 2 * 20 * ranks);
  CHECK(shared.bytes() == alone_bytes);  // what each added, counted once: none worked out twice
}
