// Hand-solvable max-min fair allocations (progressive filling), first principles only.
// Each case states the system and the expected rates.
#include "maxmin.hpp"

#include <catch2/catch.hpp>

using namespace basp;

namespace {
std::vector<double> solve(const std::vector<double>& cap, const std::vector<std::vector<Hop>>& paths,
                          std::vector<std::uint32_t> mult = {}) {
  std::vector<Hop> hops;
  std::vector<FlowPath> flows;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    flows.push_back({static_cast<std::uint32_t>(hops.size()), static_cast<std::uint32_t>(paths[i].size()),
                     mult.empty() ? 1u : mult[i]});
    hops.insert(hops.end(), paths[i].begin(), paths[i].end());
  }
  std::vector<double> rates(flows.size());
  MaxMinSolver solver(cap.size());
  solver.solve(cap, hops, flows, rates);
  return rates;
}
}  // namespace

TEST_CASE("two flows on one link share it equally") {
  // System: two flows on one link of 10 B/s. Expectations: 5 B/s each (fair share).
  const auto r = solve({10.0}, {{{0, 1.0f}}, {{0, 1.0f}}});
  CHECK(r[0] == Approx(5.0));
  CHECK(r[1] == Approx(5.0));
}

TEST_CASE("three flows on two links: the tighter link freezes first") {
  // System: link A 10 B/s carries f1, f2; link B 6 B/s carries f2, f3.
  // Expectations: B saturates first at 3 B/s (f2 = f3 = 3); f1 takes the rest of A: 7 B/s.
  const auto r = solve({10.0, 6.0}, {{{0, 1.0f}}, {{0, 1.0f}, {1, 1.0f}}, {{1, 1.0f}}});
  CHECK(r[0] == Approx(7.0));
  CHECK(r[1] == Approx(3.0));
  CHECK(r[2] == Approx(3.0));
}

TEST_CASE("a flow bottlenecked upstream leaves capacity to others") {
  // System: f1 crosses U (2 B/s) then D (10 B/s); f2 crosses D only.
  // Expectations: f1 = 2 B/s (held by U), f2 = 8 B/s (the rest of D), not 5/5.
  const auto r = solve({2.0, 10.0}, {{{0, 1.0f}, {1, 1.0f}}, {{1, 1.0f}}});
  CHECK(r[0] == Approx(2.0));
  CHECK(r[1] == Approx(8.0));
}

TEST_CASE("a task standing for m identical flows counts m times") {
  // System: one task of 3 identical flows and one single flow on a link of 8 B/s.
  // Expectations: 4 flows in all, 2 B/s each.
  const auto r = solve({8.0}, {{{0, 1.0f}}, {{0, 1.0f}}}, {3, 1});
  CHECK(r[0] == Approx(2.0));
  CHECK(r[1] == Approx(2.0));
}

TEST_CASE("an evenly split flow uses half of its rate on each path") {
  // System: f1 split evenly over links P and Q (5 B/s each); f2 on P only.
  // Expectations: P saturates when 0.5·r + r = 5: both flows at 10/3 B/s; Q keeps spare capacity.
  const auto r = solve({5.0, 5.0}, {{{0, 0.5f}, {1, 0.5f}}, {{0, 1.0f}}});
  CHECK(r[0] == Approx(10.0 / 3.0));
  CHECK(r[1] == Approx(10.0 / 3.0));
}

TEST_CASE("no link is over capacity and every flow is bottlenecked somewhere") {
  // System: a fixed pseudo-random mix of 200 flows on 20 links.
  // Expectations: feasibility, and each flow crosses a saturated link on which it has a maximal rate.
  std::vector<double> cap;
  for (int l = 0; l < 20; ++l) cap.push_back(1.0 + (l * 7919 % 97));
  std::vector<std::vector<Hop>> paths;
  unsigned x = 12345;
  for (int f = 0; f < 200; ++f) {
    std::vector<Hop> p;
    for (int k = 0; k < 1 + f % 4; ++k) {
      x = x * 1103515245u + 12345u;
      const int link = static_cast<int>((x >> 8) % 20);
      bool dup = false;
      for (const Hop& h : p) dup = dup || h.link == link;
      if (!dup) p.push_back({link, 1.0f});
    }
    paths.push_back(p);
  }
  const auto r = solve(cap, paths);
  std::vector<double> load(cap.size(), 0.0), top(cap.size(), 0.0);
  for (std::size_t f = 0; f < paths.size(); ++f)
    for (const Hop& h : paths[f]) {
      load[h.link] += r[f];
      top[h.link] = std::max(top[h.link], r[f]);
    }
  for (std::size_t l = 0; l < cap.size(); ++l) CHECK(load[l] <= cap[l] * (1 + 1e-9));
  for (std::size_t f = 0; f < paths.size(); ++f) {
    bool bottlenecked = false;
    for (const Hop& h : paths[f])
      bottlenecked = bottlenecked || (load[h.link] >= cap[h.link] * (1 - 1e-9) && r[f] >= top[h.link] * (1 - 1e-9));
    CHECK(bottlenecked);
  }
}

TEST_CASE("many distinct levels: each link saturates in a round of its own") {
  // System: links i = 0..11 of capacity i + 1; flow i crosses link i alone, flow X crosses all.
  // Expectations: link 0 saturates first, at 1/2 (flow 0 and X); then every other link in turn
  // with its one flow left: flow i gets i + 1 − 1/2. Twelve rounds: past the solver's first few,
  // which scan the links, the rest come from its heap; both must agree with the hand solution.
  std::vector<double> cap;
  std::vector<std::vector<Hop>> paths;
  std::vector<Hop> all;
  for (int i = 0; i < 12; ++i) {
    cap.push_back(i + 1.0);
    paths.push_back({{i, 1.0f}});
    all.push_back({i, 1.0f});
  }
  paths.push_back(all);
  const auto r = solve(cap, paths);
  CHECK(r[0] == Approx(0.5).epsilon(1e-12));
  CHECK(r[12] == Approx(0.5).epsilon(1e-12));
  for (int i = 1; i < 12; ++i) CHECK(r[i] == Approx(i + 0.5).epsilon(1e-12));
}
