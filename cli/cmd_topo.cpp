// `basp topo`: what a topology file builds into (devices, links, injection and bisection
// bandwidth, example routes), and its Graphviz or explicit form.
#include "commands.hpp"
#include "input_error.hpp"
#include "options.hpp"
#include "topology_summary.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>
#include <iostream>
#include <memory>

namespace basp::cli {
namespace {

struct TopoArgs {
  TopologyOptions topo;
  FormatOptions format;
  std::string dot_file;
  bool explicit_form = false;
};

int run_topo(const TopoArgs& a) {
  TopologyFile file = a.topo.read();
  // Only the explicit and Graphviz forms need every vertex; the summary builds parts of templates.
  if (a.explicit_form || !a.dot_file.empty()) file = TopologyFile{std::nullopt, build_topology(std::move(file)), {}};
  if (a.explicit_form) {
    write_explicit_topology(file.explicit_topology, std::cout);
    return 0;
  }
  if (!a.dot_file.empty()) {
    std::ostringstream dot;
    write_dot(file.explicit_topology, dot);
    write_text_file(a.dot_file, "--dot", dot.str());
  }
  const TopologySummary s = summarize(file);
  if (a.format.format() == Format::json) {
    nlohmann::ordered_json j;
    j["topology"] = s.name;
    j["source"] = s.source;
    j["gpu"] = s.gpu_kind;
    j["gpus"] = s.gpus;
    j["nodes"] = s.nodes;
    j["gpus_per_node"] = s.gpus_per_node;
    j["vertices"] = s.vertices_by_kind;
    for (const auto& [cls, v] : s.links_by_class) j["links"][cls] = {{"count", v.first}, {"capacity_Bps", v.second}};
    j["scale_up_Bps_per_gpu"] = s.scale_up_Bps_per_gpu;
    j["scale_out_Bps_per_gpu"] = s.scale_out_Bps_per_gpu;
    j["bisection_Bps"] = s.bisection_Bps;
    j["routes"] = nlohmann::json::array();
    for (const auto& r : s.routes)
      j["routes"].push_back({{"label", r.label}, {"src_rank", r.src_rank}, {"dst_rank", r.dst_rank},
                             {"path", r.path}, {"latency_s", r.latency_s}, {"bottleneck_Bps", r.bottleneck_Bps}});
    j["unused_link_classes"] = s.unused_classes;
    j["unused_link_classes_checked_to"] = s.unused_scope;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (a.format.format() == Format::csv) {
    std::cout << "topology,gpus,nodes,gpus_per_node,scale_up_Bps_per_gpu,scale_out_Bps_per_gpu,bisection_Bps\n"
              << s.name << "," << s.gpus << "," << s.nodes << "," << s.gpus_per_node << ","
              << s.scale_up_Bps_per_gpu << "," << s.scale_out_Bps_per_gpu << "," << s.bisection_Bps << "\n";
    return 0;
  }
  std::printf("# topology %s (%s), GPU %s\n", s.name.c_str(), s.source.c_str(), s.gpu_kind.c_str());
  std::printf("GPUs            %d (%d nodes x %d)\n", s.gpus, s.nodes, s.gpus_per_node);
  std::printf("devices        ");
  for (const auto& [kind, n] : s.vertices_by_kind) std::printf(" %s %d", kind.c_str(), n);
  std::printf("\nlinks (directed)\n");
  for (const auto& [cls, v] : s.links_by_class)
    std::printf("  %-8s %7d links, %s in all\n", cls.c_str(), v.first, format_bandwidth(v.second).c_str());
  std::printf("per GPU         scale-up %s, scale-out %s\n", format_bandwidth(s.scale_up_Bps_per_gpu).c_str(),
              format_bandwidth(s.scale_out_Bps_per_gpu).c_str());
  std::printf("bisection       %s (ranks 0..%d -> %d..%d, one direction)\n",
              format_bandwidth(s.bisection_Bps).c_str(), s.gpus / 2 - 1, s.gpus / 2, s.gpus - 1);
  std::printf("routing         ecmp %s, cross-rail %s%s\n", s.routing.ecmp == EcmpMode::split ? "split" : "hash",
              s.routing.cross_rail == CrossRail::pxn ? "pxn" : "spine",
              s.rail_optimized ? " (rail-optimized fabric)" : "");
  std::printf("software        launch %s, per peer %s\n", format_time(s.software.launch_s).c_str(),
              format_time(s.software.per_peer_s).c_str());
  std::printf("example routes\n");
  for (const auto& r : s.routes)
    std::printf("  %-22s rank %d -> %d: %s  (latency %s, bottleneck %s)\n", r.label.c_str(), r.src_rank,
                r.dst_rank, r.path.c_str(), format_time(r.latency_s).c_str(), format_bandwidth(r.bottleneck_Bps).c_str());
  for (const auto& cls : s.unused_classes)
    std::printf("  (no route from rank 0 to %s crosses a %s link with this routing)\n", s.unused_scope.c_str(),
                cls.c_str());
  return 0;
}

}  // namespace

void add_topo_command(CLI::App& app, Chosen& chosen) {
  auto args = std::make_shared<TopoArgs>();
  CLI::App* sub = app.add_subcommand("topo", "Summarize a topology: devices, links, bandwidths, example routes");
  args->topo.add_to(*sub, "paper-a100-2x4");
  args->format.add_to(*sub);
  sub->add_option("--dot", args->dot_file, "Also write the graph in Graphviz form to FILE ('-' for stdout)");
  sub->add_flag("--explicit", args->explicit_form,
                "Print the topology in the explicit YAML form (every vertex and link) instead");
  sub->callback([args, &chosen] {
    chosen.check = [args] { args->topo.read(); };
    chosen.run = [args] { return run_topo(*args); };
  });
}

}  // namespace basp::cli
