// The event loop: waits hold no bandwidth, rates are re-solved when flows start or end, delays and
// dependencies order tasks, and the same input gives the same output bit for bit.
#include "engine.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <stdexcept>

using namespace basp;

TEST_CASE("a lone flow waits - then transfers at link capacity") {
  // System: 100 B over one 10 B/s link after a 1 s wait. Expectations: finish at 1 + 10 = 11 s.
  Engine e({10.0});
  const Hop h{0, 1.0f};
  const TaskId f = e.add_flow({&h, 1}, 100.0, 1.0);
  e.run();
  CHECK(e.ready_time(f) == 0.0);
  CHECK(e.finish_time(f) == Approx(11.0));
}

TEST_CASE("when a flow ends the survivors speed up") {
  // System: 10 B and 30 B on one 10 B/s link from t = 0.
  // Expectations: 5 B/s each until the small one ends at 2 s; then 20 B at 10 B/s: 4 s.
  Engine e({10.0});
  const Hop h{0, 1.0f};
  const TaskId a = e.add_flow({&h, 1}, 10.0, 0.0);
  const TaskId b = e.add_flow({&h, 1}, 30.0, 0.0);
  const RunStats s = e.run();
  CHECK(e.finish_time(a) == Approx(2.0));
  CHECK(e.finish_time(b) == Approx(4.0));
  CHECK(s.flows == 2);
}

TEST_CASE("a waiting flow holds no bandwidth until its wait ends") {
  // System: f1 = 20 B from t = 0, f2 = 10 B after a 1 s wait, one 10 B/s link.
  // Expectations: f1 alone moves 10 B by 1 s; then 5 B/s each: both end at 3 s, in one batch.
  Engine e({10.0});
  const Hop h{0, 1.0f};
  const TaskId a = e.add_flow({&h, 1}, 20.0, 0.0);
  const TaskId b = e.add_flow({&h, 1}, 10.0, 1.0);
  e.run();
  CHECK(e.finish_time(a) == Approx(3.0));
  CHECK(e.finish_time(b) == Approx(3.0));
}

TEST_CASE("dependencies order delays and flows") {
  // System: delay 3 s, then a flow (wait 0.5 s, 20 B at 10 B/s), then a join.
  // Expectations: flow ready at 3, finishes at 3 + 0.5 + 2 = 5.5; join finishes at 5.5.
  Engine e({10.0});
  const Hop h{0, 1.0f};
  const TaskId d = e.add_delay(3.0);
  const TaskId f = e.add_flow({&h, 1}, 20.0, 0.5);
  const TaskId j = e.add_delay(0.0);
  e.depends(f, d);
  e.depends(j, f);
  e.run();
  CHECK(e.ready_time(f) == Approx(3.0));
  CHECK(e.finish_time(f) == Approx(5.5));
  CHECK(e.finish_time(j) == Approx(5.5));
}

TEST_CASE("link bytes count every byte of every flow on every link it crosses") {
  // System: 100 B over links 0 and 1, 50 B split evenly over links 1 and 2, x2 multiplicity.
  // Expectations: link 0: 100, link 1: 100 + 2·25 = 150, link 2: 50.
  Engine e({10.0, 10.0, 10.0});
  const Hop p[] = {{0, 1.0f}, {1, 1.0f}};
  const Hop q[] = {{1, 0.5f}, {2, 0.5f}};
  e.add_flow(p, 100.0, 0.0);
  e.add_flow(q, 50.0, 0.0, 2);
  e.run();
  CHECK(e.link_bytes()[0] == Approx(100.0));
  CHECK(e.link_bytes()[1] == Approx(150.0));
  CHECK(e.link_bytes()[2] == Approx(50.0));
}

TEST_CASE("the same input gives the same output - bit for bit") {
  // System: 300 flows with staggered waits on 6 links, run twice. Expectations: identical times.
  auto once = [] {
    Engine e({10.0, 20.0, 30.0, 15.0, 25.0, 5.0});
    std::vector<TaskId> ids;
    for (int i = 0; i < 300; ++i) {
      const Hop path[] = {{i % 6, 1.0f}, {(i * 7 + 1) % 6, 1.0f}};
      ids.push_back(e.add_flow({path, std::size_t(1 + (i % 3 == 0 && path[0].link != path[1].link))},
                               100.0 + i, 0.01 * (i % 17)));
    }
    e.run();
    std::vector<double> out;
    for (TaskId t : ids) out.push_back(e.finish_time(t));
    return out;
  };
  CHECK(once() == once());
}

TEST_CASE("the room reserved for flows transferring at once changes no result") {
  // System: 300 flows with staggered waits and dependencies on 6 links, run with room for every
  // flow (the default), for 3, and for none (the arrays grow by doubling, and a solve's index
  // with them). Expectations: the same times, batches and solves, bit for bit.
  auto once = [](std::optional<std::size_t> concurrent) {
    Engine e({10.0, 20.0, 30.0, 15.0, 25.0, 5.0});
    if (concurrent) e.expect_concurrent_flows(*concurrent);
    std::vector<TaskId> ids;
    for (int i = 0; i < 300; ++i) {
      const Hop path[] = {{i % 6, 1.0f}, {(i * 7 + 1) % 6, 0.5f}, {(i * 5 + 2) % 6, 1.0f}};
      ids.push_back(e.add_flow({path, std::size_t(1 + i % 3)}, 100.0 + i, 0.01 * (i % 17), 1 + i % 2));
      if (i >= 40) e.depends(ids.back(), ids[std::size_t(i - 40)]);
    }
    const RunStats s = e.run();
    std::vector<double> out{double(s.batches), double(s.solves), s.end_s};
    for (TaskId t : ids) out.push_back(e.finish_time(t));
    for (double b : e.link_bytes()) out.push_back(b);
    return out;
  };
  const std::vector<double> all = once(std::nullopt);
  CHECK(all[1] > 100);  // many solves: the arrays do grow
  CHECK(once(3) == all);
  CHECK(once(0) == all);
}

TEST_CASE("a zero-byte flow finishes when its wait ends") {
  // System: 0 B after a 2 s wait. Expectations: finishes at 2 s without a rate solve.
  Engine e({10.0});
  const Hop h{0, 1.0f};
  const TaskId f = e.add_flow({&h, 1}, 0.0, 2.0);
  const RunStats s = e.run();
  CHECK(e.finish_time(f) == Approx(2.0));
  CHECK(s.solves == 0);
}

TEST_CASE("the longest path of a graph of delays is when its run ends") {
  // System: a (1 s) and b (2 s) from 0; c (3 s) after both; d (0.5 s) after a; e (0 s) after c and
  // d, added before them. Expectations: c ends at 2 + 3 = 5 s, d at 1.5 s, so the path is 5 s, as
  // the event loop finds; a flow in the graph is refused; a cycle is reported.
  Engine e({1.0});
  const TaskId last = e.add_delay(0.0);
  const TaskId a = e.add_delay(1.0), b = e.add_delay(2.0), c = e.add_delay(3.0), d = e.add_delay(0.5);
  e.depends(c, a);
  e.depends(c, b);
  e.depends(d, a);
  e.depends(last, c);
  e.depends(last, d);
  CHECK(e.longest_path_s() == 5.0);
  CHECK(e.run().end_s == 5.0);
  Engine with_flow({1.0});
  const Hop h{0, 1.0f};
  with_flow.add_flow({&h, 1}, 1.0, 0.0);
  CHECK_THROWS_AS(with_flow.longest_path_s(), std::logic_error);
  Engine cycle({});
  const TaskId x = cycle.add_delay(1.0), y = cycle.add_delay(1.0);
  cycle.depends(x, y);
  cycle.depends(y, x);
  CHECK_THROWS_AS(cycle.longest_path_s(), std::logic_error);
}

TEST_CASE("the engine's large blocks are kept for the next engine, within the pool's limit") {
  // System: a pool of 8 MiB; blocks of 4 MiB and 6 MiB given back, then asked for again.
  // Expectations: a block asked for is a kept one of at least its size and at most twice it;
  // a give that would pass the limit lets the largest kept blocks go first; a block over the
  // limit is never kept.
  HugeBlockPool pool(8 << 20);
  void* four = std::aligned_alloc(2 << 20, 4 << 20);
  void* six = std::aligned_alloc(2 << 20, 6 << 20);
  pool.give(four, 4 << 20);
  CHECK(pool.take(2 << 20) == four);   // 4 MiB serves 2 MiB (at most twice)
  CHECK(pool.take(2 << 20) == nullptr);
  pool.give(four, 4 << 20);
  CHECK(pool.take(1 << 20) == nullptr);  // 4 MiB is more than twice 1 MiB
  pool.give(six, 6 << 20);               // 4 + 6 > 8: the 4 MiB block goes
  CHECK(pool.take(4 << 20) == six);
  CHECK(pool.take(4 << 20) == nullptr);
  void* big = std::aligned_alloc(2 << 20, 16 << 20);
  pool.give(big, 16 << 20);  // over the limit: freed at once
  CHECK(pool.take(16 << 20) == nullptr);
  std::free(six);
}

TEST_CASE("a pool block lent for a smaller request comes back at its own size") {
  // System: a pool of 64 MiB holding one 8 MiB block, lent for 6 MiB and given back as the 6 MiB
  // the vector asked for. Expectations: it still serves an 8 MiB request (it is kept as 8 MiB, not
  // shrunk to the request), and it counts 8 MiB against the limit: a 58 MiB block given next
  // passes the limit with it (8 + 58 > 64, but 6 + 58 would not), so the pool lets it go.
  HugeBlockPool pool(64 << 20);
  void* eight = std::aligned_alloc(2 << 20, 8 << 20);
  pool.give(eight, 8 << 20);
  REQUIRE(pool.take(6 << 20) == eight);
  pool.give(eight, 6 << 20);
  REQUIRE(pool.take(8 << 20) == eight);
  pool.give(eight, 8 << 20);
  REQUIRE(pool.take(6 << 20) == eight);
  pool.give(eight, 6 << 20);
  pool.give(std::aligned_alloc(2 << 20, 58 << 20), 58 << 20);
  CHECK(pool.take(6 << 20) == nullptr);  // the 8 MiB block went to make room
  void* big = pool.take(58 << 20);
  CHECK(big != nullptr);
  std::free(big);
}
