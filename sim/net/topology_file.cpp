// Reads topology files (template or explicit form) with strict field checking, applies CLI
// overrides, and writes the explicit form and Graphviz. Field docs: topologies/README.md.
#include "topology_file.hpp"

#include "data_files.hpp"
#include "input_error.hpp"
#include "input_ranges.hpp"
#include "topology_template.hpp"
#include "yaml_fields.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>

namespace basp {
namespace {

// Ranges shared by the YAML fields and the command-line overrides of the same values.
constexpr long max_nodes = 1 << 20;
constexpr long max_nodes_per_leaf = 1 << 16;
constexpr long max_spines = 4096;
constexpr double min_oversubscription = 1e-3, max_oversubscription = 1e3;

void read_common(YamlFields& f, SoftwareCosts& sw, RoutingOptions& routing) {
  if (f.has("software")) {
    YamlFields s = f.map("software");
    sw.launch_s = s.quantity("launch_overhead", ranges::latency, sw.launch_s);
    sw.per_peer_s = s.quantity("per_peer_overhead", ranges::latency, sw.per_peer_s);
    s.reject_unknown();
  } else {
    f.text("software", "");  // mark as known
  }
  if (f.has("routing")) {
    YamlFields r = f.map("routing");
    routing.ecmp = r.choice("ecmp", {"split", "hash"}, "split") == "split" ? EcmpMode::split : EcmpMode::hash;
    routing.cross_rail =
        r.choice("cross_rail", {"pxn", "spine"}, "pxn") == "pxn" ? CrossRail::pxn : CrossRail::spine;
    r.reject_unknown();
  } else {
    f.text("routing", "");
  }
}

TopologyTemplate read_template(YamlFields& f) {
  TopologyTemplate t;
  t.nodes = static_cast<int>(f.integer("nodes", 1, max_nodes));
  YamlFields n = f.map("node");
  const std::string kind = n.choice("kind", {"nvswitch", "nvlink-mesh", "pcie"});
  t.node.kind = kind == "nvswitch" ? NodeKind::nvswitch : kind == "nvlink-mesh" ? NodeKind::nvlink_mesh : NodeKind::pcie;
  t.node.gpus = static_cast<int>(n.integer("gpus", 1, 1024));
  if (t.node.kind != NodeKind::pcie) {
    YamlFields nv = n.map("nvlink");
    t.node.nvlink_Bps = nv.quantity("bandwidth", ranges::bandwidth);
    t.node.nvlink_latency_s = nv.quantity("latency", ranges::latency);
    if (t.node.kind == NodeKind::nvswitch)
      t.node.domain_nodes = static_cast<int>(nv.integer("domain_nodes", 1, 1 << 16, 1));
    nv.reject_unknown();
  }
  YamlFields p = n.map("pcie");
  t.node.pcie_Bps = p.quantity("bandwidth", ranges::bandwidth);
  t.node.pcie_latency_s = p.quantity("latency", ranges::latency);
  t.node.pcie_switches = static_cast<int>(p.integer("switches", 0, 1024, 1));
  t.node.pcie_uplink_Bps = p.quantity("uplink_bandwidth", ranges::bandwidth, t.node.pcie_Bps);
  t.node.sockets = static_cast<int>(p.integer("sockets", 1, 8, 1));
  if (t.node.sockets > 1) {
    t.node.inter_socket_Bps = p.quantity("inter_socket_bandwidth", ranges::bandwidth);
    t.node.inter_socket_latency_s = p.quantity("inter_socket_latency", ranges::latency);
  }
  p.reject_unknown();
  if (n.has("nics")) {
    YamlFields nic = n.map("nics");
    t.node.nics = static_cast<int>(nic.integer("count", 0, 1024));
    if (t.node.nics > 0) t.node.nic_Bps = nic.quantity("bandwidth", ranges::bandwidth);
    if (nic.has("affinity")) {
      for (long j : nic.integers("affinity", 0, 1023)) t.node.nic_of_gpu.push_back(static_cast<int>(j));
    }
    nic.reject_unknown();
  } else {
    n.text("nics", "");
  }
  n.reject_unknown();

  YamlFields fb = f.map("fabric");
  const std::string fk = fb.choice("kind", {"none", "single-switch", "leaf-spine", "rail", "three-tier"});
  t.fabric.kind = fk == "none" ? FabricKind::none
                  : fk == "single-switch" ? FabricKind::single_switch
                  : fk == "leaf-spine" ? FabricKind::leaf_spine
                  : fk == "rail" ? FabricKind::rail
                                 : FabricKind::three_tier;
  if (t.fabric.kind != FabricKind::none) {
    t.fabric.link_Bps = fb.quantity("bandwidth", ranges::bandwidth, 0.0);
    t.fabric.latency_s = fb.quantity("latency", ranges::latency);
  }
  if (t.fabric.kind == FabricKind::leaf_spine || t.fabric.kind == FabricKind::rail ||
      t.fabric.kind == FabricKind::three_tier) {
    t.fabric.nodes_per_leaf = static_cast<int>(fb.integer("nodes_per_leaf", 1, max_nodes_per_leaf));
    t.fabric.oversubscription = fb.number("oversubscription", min_oversubscription, max_oversubscription, 1.0);
    t.fabric.spines = static_cast<int>(fb.integer("spines", 1, max_spines));
  }
  if (t.fabric.kind == FabricKind::three_tier) {
    t.fabric.rails = fb.boolean("rails", true);
    if (!t.fabric.rails) t.fabric.leaves_per_pod = static_cast<int>(fb.integer("leaves_per_pod", 1, max_nodes));
    t.fabric.cores_per_plane = static_cast<int>(fb.integer("cores_per_plane", 1, max_spines, 1));
    t.fabric.spine_oversubscription =
        fb.number("spine_oversubscription", min_oversubscription, max_oversubscription, 1.0);
  }
  fb.reject_unknown();
  return t;
}

Topology read_explicit(YamlFields& f, const std::string& file) {
  Topology topo;
  topo.source = file;
  YamlFields e = f.map("explicit");
  topo.rail_optimized = e.boolean("rail_optimized", false);
  std::map<std::string, VertexId> by_name;
  std::vector<std::pair<VertexId, std::pair<std::string, YamlFields>>> nic_refs;
  for (YamlFields& v : e.maps("vertices")) {
    Vertex vx;
    vx.name = v.text("name");
    const std::string kind = v.choice("kind", {"gpu", "nvswitch", "pcie", "host", "nic", "switch"});
    for (VertexKind k : {VertexKind::gpu, VertexKind::nvswitch, VertexKind::pcie, VertexKind::host,
                         VertexKind::nic, VertexKind::fabric_switch})
      if (to_string(k) == kind) vx.kind = k;
    vx.node = static_cast<int>(v.integer("node", -1, 1 << 20, -1));
    if (vx.kind == VertexKind::nic) vx.rail = static_cast<int>(v.integer("rail", 0, 1 << 16, -1));
    if (by_name.count(vx.name)) v.fail("name", "'" + vx.name + "' is used by two vertices");
    const std::string nic = vx.kind == VertexKind::gpu ? v.text("nic", "") : "";
    v.reject_unknown();
    VertexId id = add_vertex(topo, vx);
    by_name[vx.name] = id;
    if (!nic.empty()) nic_refs.push_back({id, {nic, v}});
  }
  for (auto& [gpu, ref] : nic_refs) {
    auto it = by_name.find(ref.first);
    if (it == by_name.end()) ref.second.fail("nic", "no vertex is named '" + ref.first + "'");
    topo.graph[gpu].nic = static_cast<int>(it->second);
  }
  for (YamlFields& l : e.maps("links")) {
    auto vertex = [&](const char* key) {
      const std::string name = l.text(key);
      auto it = by_name.find(name);
      if (it == by_name.end()) l.fail(key, "no vertex is named '" + name + "'");
      return it->second;
    };
    const VertexId from = vertex("from"), to = vertex("to");
    const double bw = l.quantity("bandwidth", ranges::bandwidth);
    const double lat = l.quantity("latency", ranges::latency);
    const std::string cls = l.choice("class", {"nvlink", "pcie", "host", "nic", "fabric"});
    LinkClass lc = LinkClass::fabric;
    for (LinkClass c : link_classes)
      if (to_string(c) == cls) lc = c;
    if (l.boolean("duplex", false))
      add_duplex(topo, from, to, bw, lat, lc);
    else
      add_link(topo, from, to, bw, lat, lc);
    l.reject_unknown();
  }
  e.reject_unknown();
  return topo;
}

}  // namespace

TopologyFile read_topology_file(const std::string& name_or_path, const TopologyOverrides& o,
                                std::span<const std::string_view> gpu_kinds) {
  const std::string file = resolve_data_file("topologies", name_or_path);
  YamlFields f(load_yaml_file(file), file, "");
  const std::string name = f.text("name");
  f.text("description", "");
  f.text("sources", "");  // free text: where the numbers come from
  const std::string gpu = f.text("gpu");
  if (!gpu_kinds.empty() && std::find(gpu_kinds.begin(), gpu_kinds.end(), gpu) == gpu_kinds.end()) {
    std::string known;
    for (std::string_view k : gpu_kinds) known += (known.empty() ? "" : ", ") + std::string(k);
    f.fail("gpu", "unknown GPU kind '" + gpu + "' (known: " + known + ")");
  }
  const std::string calibration = f.text("calibration", "");
  SoftwareCosts sw;
  RoutingOptions routing;
  TopologyFile result;
  if (f.has("explicit")) {
    Topology& topo = result.explicit_topology;
    read_common(f, sw, routing);
    topo = read_explicit(f, file);
    f.reject_unknown();
    auto template_only = [&](bool given, const char* flag) {
      if (given) throw InputError("", 0, flag, "applies to template topologies only; " + file + " is explicit");
    };
    template_only(o.nodes.has_value(), "--nodes");
    template_only(o.oversubscription.has_value(), "--oversubscription");
    template_only(o.nodes_per_leaf.has_value(), "--nodes-per-leaf");
    template_only(o.spines.has_value(), "--spines");
    topo.name = name;
    topo.gpu_kind = gpu;
    topo.calibration = calibration;
    topo.software = sw;
    topo.routing = routing;
    finalize_topology(topo);
    if (o.ecmp) topo.routing.ecmp = *o.ecmp;
    if (o.cross_rail) topo.routing.cross_rail = *o.cross_rail;
  } else {
    read_common(f, sw, routing);
    TopologyTemplate t = read_template(f);
    f.reject_unknown();
    t.name = name;
    t.source = file;
    t.gpu_kind = gpu;
    t.software = sw;
    t.routing = routing;
    auto in_range = [](auto value, auto min, auto max, const char* flag) {
      if (!(value >= min && value <= max)) {
        std::ostringstream msg;
        msg << value << " is out of range [" << min << ", " << max << "]";
        throw InputError("", 0, flag, msg.str());
      }
      return value;
    };
    if (o.nodes) t.nodes = static_cast<int>(in_range(long(*o.nodes), 1L, max_nodes, "--nodes"));
    if (o.oversubscription)
      t.fabric.oversubscription =
          in_range(*o.oversubscription, min_oversubscription, max_oversubscription, "--oversubscription");
    if (o.nodes_per_leaf)
      t.fabric.nodes_per_leaf = static_cast<int>(in_range(long(*o.nodes_per_leaf), 1L, max_nodes_per_leaf, "--nodes-per-leaf"));
    if (o.spines) t.fabric.spines = static_cast<int>(in_range(long(*o.spines), 1L, max_spines, "--spines"));
    t.calibration = calibration;
    if (o.ecmp) t.routing.ecmp = *o.ecmp;
    if (o.cross_rail) t.routing.cross_rail = *o.cross_rail;
    result.templ = std::move(t);
  }
  result.outages = o.outages;
  return result;
}

Topology build_topology(TopologyFile file) {
  Topology topo = file.templ ? build_topology(*file.templ) : std::move(file.explicit_topology);
  apply_outages(topo, file.outages);
  return topo;
}

Topology load_topology(const std::string& name_or_path, const TopologyOverrides& o,
                       std::span<const std::string_view> gpu_kinds) {
  return build_topology(read_topology_file(name_or_path, o, gpu_kinds));
}

void write_explicit_topology(const Topology& topo, std::ostream& out) {
  const Graph& g = topo.graph;
  out << "# Explicit form of topology '" << topo.name << "' (from " << topo.source << "),\n"
      << "# written by basp topo --explicit: every vertex and directed link.\n"
      << "name: " << topo.name << "\n"
      << "gpu: " << topo.gpu_kind << "\n"
      << (topo.calibration.empty() ? "" : "calibration: " + topo.calibration + "\n")
      << "software:\n"
      << "  launch_overhead: " << format_exact(topo.software.launch_s, "s") << "\n"
      << "  per_peer_overhead: " << format_exact(topo.software.per_peer_s, "s") << "\n"
      << "routing:\n"
      << "  ecmp: " << (topo.routing.ecmp == EcmpMode::split ? "split" : "hash") << "\n"
      << "  cross_rail: " << (topo.routing.cross_rail == CrossRail::pxn ? "pxn" : "spine") << "\n"
      << "explicit:\n"
      << "  rail_optimized: " << (topo.rail_optimized ? "true" : "false") << "\n"
      << "  vertices:\n";
  for (VertexId v = 0; v < boost::num_vertices(g); ++v) {
    const Vertex& x = g[v];
    out << "    - {name: " << x.name << ", kind: " << to_string(x.kind);
    if (x.node >= 0) out << ", node: " << x.node;
    if (x.kind == VertexKind::nic) out << ", rail: " << x.rail;
    if (x.kind == VertexKind::gpu && x.nic >= 0) out << ", nic: " << g[x.nic].name;
    out << "}\n";
  }
  out << "  links:\n";
  for (int id = 0; id < topo.link_count(); ++id) {
    const Link& l = topo.link(id);
    out << "    - {from: " << g[l.from].name << ", to: " << g[l.to].name
        << ", bandwidth: " << format_exact(l.capacity_Bps, "B/s") << ", latency: " << format_exact(l.latency_s, "s")
        << ", class: " << to_string(l.cls) << "}\n";
  }
}

void write_dot(const Topology& topo, std::ostream& out) {
  const Graph& g = topo.graph;
  out << "digraph \"" << topo.name << "\" {\n  rankdir=TB;\n";
  for (VertexId v = 0; v < boost::num_vertices(g); ++v) {
    const Vertex& x = g[v];
    const char* shape = x.kind == VertexKind::gpu ? "box" : x.kind == VertexKind::nic ? "ellipse" : "diamond";
    out << "  \"" << x.name << "\" [shape=" << shape << "];\n";
  }
  // One edge per duplex pair when both directions match, to keep the picture readable.
  for (int id = 0; id < topo.link_count(); ++id) {
    const Link& l = topo.link(id);
    const VertexId a = l.from, b = l.to;
    auto [back, has_back] = boost::edge(b, a, g);
    const bool pair = has_back && topo.link(g[back].id).capacity_Bps == l.capacity_Bps;
    if (pair && a > b) continue;
    char label[64];
    std::snprintf(label, sizeof label, "%.4g GB/s", l.capacity_Bps / 1e9);
    out << "  \"" << g[a].name << "\" -> \"" << g[b].name << "\" [label=\"" << label << "\""
        << (pair ? ", dir=both" : "") << "];\n";
  }
  out << "}\n";
}

}  // namespace basp
