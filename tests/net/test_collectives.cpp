// Collectives against closed forms on hand-solvable topologies, oversubscription, BASP's grouped
// all-to-all on the paper cluster, and several collectives sharing the network at once.
#include "collective_run.hpp"
#include "helpers.hpp"
#include "input_error.hpp"
#include "topology_file.hpp"

#include <catch2/catch.hpp>

using namespace basp;
using basp::test::data;

namespace {
double nic_bytes(const Topology& t, const CollectiveResult& r) {
  double sum = 0.0;
  for (int id = 0; id < t.link_count(); ++id)
    if (t.link(id).cls == LinkClass::nic) sum += r.link_bytes[id];
  return sum;
}
constexpr double S = 64.0 * 1048576.0;
}  // namespace

TEST_CASE("all-to-all on one NVSwitch matches its closed form") {
  // System: 8 GPUs, 100 GB/s ports, 1 us per hop, launch 5 us, 0.5 us per peer.
  // Expectations: every port carries 7 flows of S/8 at 100/7 GB/s each:
  // time = 5 + 7·0.5 + 2 (us) + (S/8)·7 / 100 GB/s.
  const Topology t = load_topology(data("nvswitch-8gpu.yaml"));
  const auto r = simulate_collective(t, {.op = CollectiveOp::alltoall, .size_bytes = S});
  CHECK(r.time_s == Approx(8.5e-6 + 2e-6 + S / 8 * 7 / 100e9).epsilon(1e-9));
  CHECK(r.stats.flows == 56);
  CHECK(r.busbw_Bps == Approx(r.algbw_Bps * 7 / 8));
}

TEST_CASE("all-to-all copies each rank's own slice in its HBM, alongside its flows") {
  // System: as above, with a local copy of 10 GB/s (slower than the port's share) or 1 TB/s.
  // Expectations: in groups of one a call is its launch and the copy of the whole buffer:
  // 5 us + S / 10 GB/s. In one group of 8 the copy of S/8 starts after the overheads (8.5 us)
  // and outlasts the flows: 8.5 us + (S/8) / 10 GB/s. At 1 TB/s the flows set the time, as
  // without a copy: 8.5 + 2 us + (S/8)·7 / 100 GB/s.
  Topology t = load_topology(data("nvswitch-8gpu.yaml"));
  t.software.local_copy_Bps = 10e9;
  const auto ones = simulate_collective(t, {.op = CollectiveOp::alltoall, .size_bytes = S, .groups = 8});
  CHECK(ones.time_s == Approx(5e-6 + S / 10e9).epsilon(1e-12));
  CHECK(ones.stats.flows == 0);
  const auto slow = simulate_collective(t, {.op = CollectiveOp::alltoall, .size_bytes = S});
  CHECK(slow.time_s == Approx(8.5e-6 + S / 8 / 10e9).epsilon(1e-12));
  t.software.local_copy_Bps = 1e12;
  const auto fast = simulate_collective(t, {.op = CollectiveOp::alltoall, .size_bytes = S});
  CHECK(fast.time_s == Approx(8.5e-6 + 2e-6 + S / 8 * 7 / 100e9).epsilon(1e-9));
  // Other collectives copy nothing of their own.
  t.software.local_copy_Bps = 10e9;
  CHECK(simulate_collective(t, {.op = CollectiveOp::allgather, .size_bytes = S}).time_s ==
        Approx(5.5e-6 + 7 * 2e-6 + 7.0 / 8 * S / 100e9).epsilon(1e-9));
}

TEST_CASE("ring all-gather - reduce-scatter and all-reduce match their closed forms") {
  // System: as above; one ring 0..7 (one node, one channel), each edge a pipelined flow.
  // Expectations: all-gather = launch + 1 peer + 7 steps of 2 us + (7/8)·S at 100 GB/s;
  // all-reduce moves twice the bytes and pays twice the steps.
  const Topology t = load_topology(data("nvswitch-8gpu.yaml"));
  const double call = 5e-6 + 0.5e-6;
  const auto ag = simulate_collective(t, {.op = CollectiveOp::allgather, .size_bytes = S});
  CHECK(ag.time_s == Approx(call + 7 * 2e-6 + 7.0 / 8 * S / 100e9).epsilon(1e-9));
  CHECK(ag.busbw_Bps == Approx(7.0 / 8 * S / ag.time_s).epsilon(1e-12));  // nccl-tests bus factor
  const auto rs = simulate_collective(t, {.op = CollectiveOp::reducescatter, .size_bytes = S});
  CHECK(rs.time_s == Approx(ag.time_s).epsilon(1e-12));
  const auto ar = simulate_collective(t, {.op = CollectiveOp::allreduce, .size_bytes = S});
  CHECK(ar.time_s == Approx(call + 14 * 2e-6 + 2 * 7.0 / 8 * S / 100e9).epsilon(1e-9));
}

TEST_CASE("4:1 oversubscription slows a spine-bound all-to-all as predicted") {
  // System: 8 single-GPU nodes, 10 GB/s NICs, 4 nodes per leaf, zero latencies and overheads.
  // Expectations: non-blocking, each NIC carries 7 flows of S/8: time = 7·S/(8·10 GB/s).
  // At 4:1 each leaf's uplinks total 10 GB/s for 16 cross-leaf flows: time = (S/8)/(10/16 GB/s),
  // 16/7 times longer.
  const Topology flat = load_topology(data("leaf-spine-8x1.yaml"));
  const Topology over = load_topology(data("leaf-spine-8x1.yaml"), {.oversubscription = 4.0});
  const CollectiveSpec spec{.op = CollectiveOp::alltoall, .size_bytes = S};
  const auto a = simulate_collective(flat, spec);
  const auto b = simulate_collective(over, spec);
  CHECK(a.time_s == Approx(7 * S / (8 * 10e9)).epsilon(1e-9));
  CHECK(b.time_s == Approx((S / 8) / (10e9 / 16)).epsilon(1e-9));
  CHECK(b.time_s / a.time_s == Approx(16.0 / 7.0).epsilon(1e-9));
}

TEST_CASE("BASP's contiguous groups keep the paper cluster's all-to-all off InfiniBand") {
  // System: paper-a100-2x4, 8 ranks, B = 2 groups of K = 4.
  // Expectations: contiguous groups are the two nodes: zero bytes on NIC links, and faster than
  // the 8-way global all-to-all; strided groups span both nodes and do use the NICs.
  const Topology t = load_topology("paper-a100-2x4");
  const auto ulysses = simulate_collective(t, {.op = CollectiveOp::alltoall, .size_bytes = S});
  const auto basp = simulate_collective(t, {.op = CollectiveOp::alltoall, .size_bytes = S, .groups = 2});
  const auto strided = simulate_collective(
      t, {.op = CollectiveOp::alltoall, .size_bytes = S, .groups = 2, .placement = Placement::strided});
  CHECK(nic_bytes(t, basp) == 0.0);
  CHECK(nic_bytes(t, strided) > 0.0);
  CHECK(nic_bytes(t, ulysses) == Approx(2.0 * 8 * 4 * S / 8));  // 32 cross-node flows, 2 NIC hops each
  CHECK(basp.time_s < ulysses.time_s / 5);
  CHECK(basp.group_size == 4);
}

TEST_CASE("groups: contiguous and strided membership and B must divide the ranks") {
  CHECK(make_groups(8, 2, Placement::contiguous) == std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(make_groups(8, 2, Placement::strided) == std::vector<std::vector<int>>{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK_THROWS_AS(make_groups(8, 3, Placement::contiguous), InputError);
}

TEST_CASE("collectives running at once share links") {
  // System: on one NVSwitch (100 GB/s ports), an all-to-all of S alone, then together with an
  // all-gather of S on the same ranks; and two all-to-alls on disjoint halves.
  // Expectations: the all-to-all flows start at 8.5 + 2 us at 100/7 GB/s; the ring flows join at
  // 5.5 + 7·2 us, and then 8 flows share each port at 12.5 GB/s until the all-to-all ends.
  // Disjoint halves on a switch do not interact.
  const Topology t = load_topology(data("nvswitch-8gpu.yaml"));
  const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
  auto run = [&](bool with_allgather) {
    Engine e(link_capacities(t));
    Router router(t);
    const RankFold fold = RankFold::identity(8);
    GroupSet set({all}, fold);
    const auto a2a = add_collectives(e, router, t, fold, CollectiveOp::alltoall, set, S);
    if (with_allgather) add_collectives(e, router, t, fold, CollectiveOp::allgather, set, S);
    e.run();
    double end = 0.0;
    for (TaskId d : a2a.done) end = std::max(end, e.finish_time(d));
    return end;
  };
  CHECK(run(false) == Approx(10.5e-6 + S / 8 / (100e9 / 7)).epsilon(1e-9));
  CHECK(run(true) == Approx(19.5e-6 + (S / 8 - 9e-6 * 100e9 / 7) / 12.5e9).epsilon(1e-9));

  const auto halves = simulate_collective(t, {.op = CollectiveOp::alltoall, .size_bytes = S, .groups = 2});
  const auto half_alone = simulate_collective(t, {.op = CollectiveOp::alltoall, .size_bytes = S, .ranks = 4});
  CHECK(halves.time_s == Approx(half_alone.time_s).epsilon(1e-12));
}

TEST_CASE("multi-node rings give every NIC its own channel even when GPUs share NICs") {
  // System: paper-a100-2x4, GPUs 0-1 on NIC 0 and 2-3 on NIC 1, ring all-gather of 1 GiB on 8 ranks.
  // Expectations: two channels, one entering each node through each NIC: both NIC links of a
  // node carry the same bytes, and busbw approaches the node's 2 x 25 GB/s.
  const Topology t = load_topology("paper-a100-2x4");
  const double size = 1024.0 * 1048576;
  const auto r = simulate_collective(t, {.op = CollectiveOp::allgather, .size_bytes = size});
  std::vector<double> into_nic;  // fabric -> NIC links, in link order
  for (int id = 0; id < t.link_count(); ++id)
    if (t.link(id).cls == LinkClass::nic && t.graph[t.link(id).to].kind == VertexKind::nic)
      into_nic.push_back(r.link_bytes[id]);
  REQUIRE(into_nic.size() == 4);
  for (double b : into_nic) CHECK(b == Approx(into_nic[0]).epsilon(1e-12));
  CHECK(r.busbw_Bps == Approx(50e9).epsilon(0.01));
}

TEST_CASE("a group set's later calls replay its first call's flows exactly") {
  // System: 8 PCIe nodes of 8 GPUs, 2 nodes per leaf, folded into rank classes (groups of one
  // leaf) and unfolded; every op called three times, one after the other, with different sizes.
  // Expectations: a set's second and third calls build their flows from the shape it keeps;
  // fresh sets build each call's flows anew. Both give the same flows, link bytes and finish
  // times, to the bit.
  const Topology t = load_topology("pcie-8gpu", {.nodes = 8, .nodes_per_leaf = 2});
  const std::vector<std::vector<int>> groups = make_groups(64, 4, Placement::contiguous);
  const TrafficGroups described[] = {{&groups, GroupTraffic::all_pairs}, {&groups, GroupTraffic::nccl_rings},
                                     {&groups, GroupTraffic::successor}};
  const FoldChoice folded = choose_fold(EngineMode::automatic, t, 64, described);
  REQUIRE(folded.use.engine == "classes");
  for (const RankFold& fold : {folded.fold, RankFold::identity(64)})
    for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::reducescatter,
                            CollectiveOp::allreduce, CollectiveOp::sendrecv}) {
      auto run = [&](bool one_set) {
        Engine e(fold.quotient_capacities(link_capacities(t)));
        Router router(t);
        GroupSet kept(groups, fold);
        std::vector<TaskId> tail;
        std::vector<TaskId> ends;
        for (double size : {S, 3 * S, S / 7}) {
          GroupSet fresh(groups, fold);
          const GroupCalls c = add_collectives(e, router, t, fold, op, one_set ? kept : fresh, size, tail);
          tail = c.done;
          ends.insert(ends.end(), c.done.begin(), c.done.end());
        }
        const RunStats stats = e.run();
        std::vector<double> out{double(stats.flows), double(e.task_count())};
        for (TaskId d : ends) out.push_back(e.finish_time(d));
        out.insert(out.end(), e.link_bytes().begin(), e.link_bytes().end());
        return out;
      };
      INFO("op " << collective_info(op).name << ", " << fold.classes() << " classes");
      CHECK(run(true) == run(false));
    }
}
