// Checks that basp::Engine gives the same flow completion times as SimGrid's max-min fluid model
// (CM02, TCP corrections off; docs/design.md, "Cross-checking with SimGrid") on fixed scenarios.
//
// Its own main, not Catch2: SimGrid's engine is a process-wide singleton, so all scenarios go into
// one SimGrid platform on disjoint links (they cannot interact) and one simulation run.
#include "engine.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

namespace sg4 = simgrid::s4u;

constexpr double rel_tol = 1e-6;
constexpr double abs_tol = 1e-12;  // s

struct Flow {
  std::vector<int> links;  // distinct links of the scenario
  std::uint64_t bytes;     // integral: SimGrid takes uint64_t sizes
  double wait_s;           // start delay (stands for route latency + overheads)
};

struct Scenario {
  std::string name;
  std::vector<double> capacity;  // B/s
  std::vector<Flow> flows;
};

// Only mt19937_64's output is standardized, so map it to numbers ourselves (same scenarios everywhere).
double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1p-53;
}
double log_uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::exp(uniform(rng, std::log(lo), std::log(hi)));
}
int below(std::mt19937_64& rng, int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }

Scenario random_scenario(std::uint64_t seed, int links, int flows) {
  std::mt19937_64 rng(seed);
  Scenario s{"random seed " + std::to_string(seed), {}, {}};
  for (int l = 0; l < links; ++l) s.capacity.push_back(log_uniform(rng, 1e8, 1e10));
  std::vector<int> order(links);
  for (int f = 0; f < flows; ++f) {
    // Some flows copy the previous one exactly: identical path, size and start (ties in rate and finish).
    if (f > 0 && below(rng, 5) == 0) {
      s.flows.push_back(s.flows.back());
      continue;
    }
    for (int l = 0; l < links; ++l) order[l] = l;
    const int k = 1 + below(rng, std::min(4, links));
    for (int i = 0; i < k; ++i) std::swap(order[i], order[i + below(rng, links - i)]);  // partial shuffle
    Flow fl{{order.begin(), order.begin() + k}, static_cast<std::uint64_t>(log_uniform(rng, 1e5, 1e8)), 0.0};
    if (below(rng, 4) != 0) fl.wait_s = uniform(rng, 0.0, 1e-3);  // a quarter start at once
    s.flows.push_back(fl);
  }
  return s;
}

// Equal-rate flows finishing at the same instant, then the survivors' rates rising together.
Scenario simultaneous_scenario() {
  Scenario s{"simultaneous finishes", {1e9, 2e9, 4e9}, {}};
  // Five flows share link 0 at 2e8 B/s: four end together at 50 ms, the fifth then gets 1e9 B/s.
  for (int i = 0; i < 4; ++i) s.flows.push_back({{0}, 10'000'000, 0.0});
  s.flows.push_back({{0, 2}, 30'000'000, 0.0});
  // Alone on link 1 for 5 ms, then shares it evenly with a later, smaller flow: both end at 15 ms.
  s.flows.push_back({{1}, 20'000'000, 0.0});
  s.flows.push_back({{1}, 10'000'000, 0.005});
  s.flows.push_back({{2}, 50'000'000, 0.0});  // two equal flows on link 2 end together
  s.flows.push_back({{2}, 50'000'000, 0.0});
  return s;
}

std::vector<double> run_basp(const Scenario& s) {
  basp::Engine engine(s.capacity);
  std::vector<basp::TaskId> task;
  for (const Flow& f : s.flows) {
    std::vector<basp::Hop> hops;
    for (int l : f.links) hops.push_back({l, 1.0f});
    task.push_back(engine.add_flow(hops, static_cast<double>(f.bytes), f.wait_s));
  }
  engine.run();
  std::vector<double> finish;
  for (basp::TaskId t : task) finish.push_back(engine.finish_time(t));
  return finish;
}

// All scenarios in one SimGrid run: one full zone, two hosts per flow, route = the flow's links.
std::vector<std::vector<double>> run_simgrid(const std::vector<Scenario>& scenarios, int argc, char** argv) {
  sg4::Engine engine(&argc, argv);
  // The max-min fluid model without TCP corrections. Set before the platform exists (models are
  // created with it). With zero-latency links TCP-gamma, latency-factor and weight-S have no
  // effect in 3.32; they are set anyway so the check does not rest on that.
  for (const char* cfg : {"network/model:CM02", "network/crosstraffic:0", "network/TCP-gamma:0",
                          "network/bandwidth-factor:1", "network/latency-factor:1", "network/weight-S:0"})
    sg4::Engine::set_config(cfg);

  auto* zone = sg4::create_full_zone("world");
  std::vector<std::vector<double>> finish(scenarios.size());
  for (std::size_t si = 0; si < scenarios.size(); ++si) {
    const Scenario& s = scenarios[si];
    finish[si].assign(s.flows.size(), -1.0);
    std::vector<const sg4::Link*> links;
    for (std::size_t l = 0; l < s.capacity.size(); ++l)  // zero latency: CM02 would weight sharing by it
      links.push_back(zone->create_link("s" + std::to_string(si) + "_l" + std::to_string(l), s.capacity[l])
                          ->set_latency(0.0)->seal());
    for (std::size_t fi = 0; fi < s.flows.size(); ++fi) {
      const Flow& f = s.flows[fi];
      const std::string name = "s" + std::to_string(si) + "_f" + std::to_string(fi);
      sg4::Host* src = zone->create_host(name + "_src", 1e9)->seal();
      sg4::Host* dst = zone->create_host(name + "_dst", 1e9)->seal();
      std::vector<sg4::LinkInRoute> route;
      for (int l : f.links) route.emplace_back(links[l]);
      // Symmetrical, as real platforms are: then crosstraffic:1 would load these links with 5% ack
      // traffic of the reverse route, so this check also proves crosstraffic:0 is in effect.
      zone->add_route(src->get_netpoint(), dst->get_netpoint(), nullptr, nullptr, route, true);
      double* out = &finish[si][fi];
      sg4::Actor::create(name, src, [src, dst, f, out] {
        if (f.wait_s > 0) sg4::this_actor::sleep_for(f.wait_s);
        sg4::Comm::sendto(src, dst, f.bytes);
        *out = sg4::Engine::get_clock();
      });
    }
  }
  zone->seal();
  engine.run();
  return finish;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Scenario> scenarios = {random_scenario(1, 3, 5), random_scenario(2, 6, 20),
                                     random_scenario(3, 8, 35), random_scenario(4, 12, 60),
                                     random_scenario(5, 10, 45), simultaneous_scenario()};
  const auto simgrid = run_simgrid(scenarios, argc, argv);

  bool ok = true;
  for (std::size_t si = 0; si < scenarios.size(); ++si) {
    const Scenario& s = scenarios[si];
    const auto basp = run_basp(s);
    double max_rel = 0.0;
    for (std::size_t fi = 0; fi < s.flows.size(); ++fi) {
      const double a = basp[fi], b = simgrid[si][fi];
      const double diff = std::fabs(a - b), scale = std::max(std::fabs(a), std::fabs(b));
      max_rel = std::max(max_rel, scale > 0 ? diff / scale : 0.0);
      if (!(diff <= rel_tol * scale + abs_tol)) {  // also catches NaN and never-finished (-1) flows
        ok = false;
        std::printf("  MISMATCH %s flow %zu: basp %.12g s, simgrid %.12g s\n", s.name.c_str(), fi, a, b);
      }
    }
    std::printf("%-22s %2zu links %2zu flows  max relative difference %.3g\n", s.name.c_str(),
                s.capacity.size(), s.flows.size(), max_rel);
  }
  std::printf("%s\n", ok ? "all flows agree within 1e-6 relative" : "FAILED: see mismatches above");
  return ok ? 0 : 1;
}
