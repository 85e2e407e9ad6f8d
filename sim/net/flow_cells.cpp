// Colour refinement over ranks, flows and links: each round gives every element the colour of its
// signature (its colour and the sorted colours it touches), compared exactly, until no cell splits.
#include "flow_cells.hpp"

#include <algorithm>
#include <bit>
#include <numeric>
#include <ranges>

namespace basp {
namespace {

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }
std::uint64_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

// Signatures of n elements, one after the other: element i's is words[begin[i] .. begin[i+1]).
struct Signatures {
  std::vector<std::uint64_t> words;
  std::vector<std::size_t> begin{0};
  void clear() {
    words.clear();
    begin.assign(1, 0);
  }
  void close() { begin.push_back(words.size()); }
  std::span<const std::uint64_t> of(std::size_t i) const { return {words.data() + begin[i], begin[i + 1] - begin[i]}; }
};

std::uint64_t mix(std::uint64_t h, std::uint64_t w) {
  h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  return h * 0xbf58476d1ce4e5b9ULL;
}

// Cells of equal signatures, numbered by their first element (so the numbering, and everything
// built from it, depends on nothing but the elements' order). A hash table finds equal signatures;
// signatures are compared word for word, so a hash collision cannot merge two cells.
Cells cells_of(const Signatures& sig, std::size_t n) {
  std::size_t size = 16;
  while (size < 2 * n) size *= 2;
  std::vector<int> slot(size, -1);  // a cell, by its representative's signature
  Cells c;
  c.of.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto words = sig.of(i);
    std::uint64_t h = words.size();
    for (std::uint64_t w : words) h = mix(h, w);
    for (std::size_t k = h & (size - 1);; k = (k + 1) & (size - 1)) {
      if (slot[k] < 0) {
        slot[k] = c.count();
        c.representative.push_back(static_cast<int>(i));
        c.members.push_back(0);
      } else if (!std::ranges::equal(sig.of(c.representative[slot[k]]), words)) {
        continue;
      }
      c.of[i] = slot[k];
      ++c.members[slot[k]];
      break;
    }
  }
  return c;
}

// Incidence lists: for each element of one kind, the (index, share) it touches of another.
struct Incidence {
  std::vector<std::size_t> begin;
  std::vector<std::uint32_t> other;
  std::vector<float> share;
};

Incidence links_to_flows(const CallTraffic& t, std::size_t links) {
  Incidence in;
  in.begin.assign(links + 1, 0);
  for (const Hop& h : t.hops) ++in.begin[h.link + 1];
  std::partial_sum(in.begin.begin(), in.begin.end(), in.begin.begin());
  in.other.resize(t.hops.size());
  in.share.resize(t.hops.size());
  std::vector<std::size_t> next(in.begin.begin(), in.begin.end() - 1);
  for (std::uint32_t f = 0; f < t.flows.size(); ++f)
    for (std::uint32_t h = t.flows[f].hop_begin; h < t.flows[f].hop_begin + t.flows[f].hop_count; ++h) {
      const std::size_t k = next[t.hops[h].link]++;
      in.other[k] = f;
      in.share[k] = t.hops[h].share;
    }
  return in;
}

// Per rank, the flows it sends and then, after `sent[r]` of them, the flows it receives.
Incidence ranks_to_flows(const CallTraffic& t, int ranks, std::vector<std::size_t>& sent) {
  Incidence in;
  in.begin.assign(ranks + 1, 0);
  for (const CallFlow& f : t.flows) {
    ++in.begin[f.from + 1];
    ++in.begin[f.to + 1];
  }
  std::partial_sum(in.begin.begin(), in.begin.end(), in.begin.begin());
  in.other.resize(2 * t.flows.size());
  std::vector<std::size_t> next(in.begin.begin(), in.begin.end() - 1);
  for (std::uint32_t f = 0; f < t.flows.size(); ++f) in.other[next[t.flows[f].from]++] = f;
  sent.resize(ranks);
  for (int r = 0; r < ranks; ++r) sent[r] = next[r] - in.begin[r];
  for (std::uint32_t f = 0; f < t.flows.size(); ++f) in.other[next[t.flows[f].to]++] = f;
  return in;
}

}  // namespace

QuotientLinks quotient_links(const Topology& topo, const FlowCells& cells, const CallTraffic& traffic) {
  QuotientLinks q;
  const int n = topo.link_count();
  q.engine_link.resize(n);
  for (int l = 0; l < n; ++l) q.engine_link[l] = cells.links.of[l];
  for (int c = 0; c < cells.links.count(); ++c)
    q.capacity_Bps.push_back(topo.link(cells.links.representative[c]).capacity_Bps * cells.links.members[c]);
  if (cells.relaxed.empty()) return q;
  q.never_binding.assign(q.capacity_Bps.size(), 0);
  std::vector<char> crossed(n, 0);
  for (const Hop& h : traffic.hops) crossed[h.link] = 1;
  for (int l = 0; l < n; ++l)
    if (cells.relaxed[l] && crossed[l]) {
      q.engine_link[l] = static_cast<int>(q.capacity_Bps.size());
      q.capacity_Bps.push_back(topo.link(l).capacity_Bps);
      q.never_binding.push_back(1);
      q.relaxed_link.push_back(l);
    }
  return q;
}

std::vector<char> fabric_trunks(const Topology& topo) {
  std::vector<char> trunk(topo.link_count(), 0);
  for (int l = 0; l < topo.link_count(); ++l)
    trunk[l] = topo.vertex(topo.link(l).from).kind == VertexKind::fabric_switch &&
               topo.vertex(topo.link(l).to).kind == VertexKind::fabric_switch;
  return trunk;
}

FlowCells equitable_cells(const Topology& topo, int ranks, const CallTraffic& t,
                          std::span<const std::uint64_t> rank_colour, std::vector<char> relaxed,
                          std::span<const std::uint64_t> flow_colour) {
  const std::size_t links = topo.link_count(), flows = t.flows.size();
  const Incidence on_link = links_to_flows(t, links);
  std::vector<std::size_t> sent;
  const Incidence of_rank = ranks_to_flows(t, ranks, sent);

  FlowCells c;
  c.relaxed = std::move(relaxed);
  auto kept = [&](int link) { return c.relaxed.empty() || !c.relaxed[link]; };
  Signatures sig;  // reused by every round: room for the largest of the three kinds' signatures
  sig.words.reserve(std::max({3 * links + t.hops.size(), 5 * flows + t.hops.size(), std::size_t(3 * ranks) + 2 * flows}));
  sig.begin.reserve(std::max({links, flows, std::size_t(ranks)}) + 1);
  for (std::size_t l = 0; l < links; ++l) {
    const Link& link = topo.link(static_cast<int>(l));
    sig.words.insert(sig.words.end(), {bits(link.capacity_Bps), static_cast<std::uint64_t>(link.cls),
                                       std::uint64_t(!kept(static_cast<int>(l)))});
    sig.close();
  }
  c.links = cells_of(sig, links);
  sig.clear();
  for (std::size_t i = 0; i < flows; ++i) {
    const CallFlow& f = t.flows[i];
    sig.words.insert(sig.words.end(), {bits(f.factor), bits(f.divisor), bits(f.wait_s), f.count,
                                       flow_colour.empty() ? 0 : flow_colour[i]});
    sig.close();
  }
  c.flows = cells_of(sig, flows);
  sig.clear();
  for (int r = 0; r < ranks; ++r) {
    sig.words.push_back(rank_colour.empty() ? 0 : rank_colour[r]);
    sig.close();
  }
  c.ranks = cells_of(sig, ranks);

  std::vector<std::uint64_t> pairs;
  for (;;) {
    ++c.rounds;
    const int before = c.links.count() + c.flows.count() + c.ranks.count();
    sig.clear();
    for (std::size_t l = 0; l < links; ++l) {
      sig.words.push_back(c.links.of[l]);
      pairs.clear();
      if (kept(static_cast<int>(l)))
        for (std::size_t k = on_link.begin[l]; k < on_link.begin[l + 1]; ++k)
          pairs.push_back(std::uint64_t(c.flows.of[on_link.other[k]]) << 32 | bits(on_link.share[k]));
      std::sort(pairs.begin(), pairs.end());
      sig.words.insert(sig.words.end(), pairs.begin(), pairs.end());
      sig.close();
    }
    c.links = cells_of(sig, links);
    sig.clear();
    for (const CallFlow& f : t.flows) {
      sig.words.insert(sig.words.end(), {std::uint64_t(c.flows.of[&f - t.flows.data()]),
                                         std::uint64_t(c.ranks.of[f.from]), std::uint64_t(c.ranks.of[f.to])});
      pairs.clear();
      for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h)
        if (kept(t.hops[h].link))
          pairs.push_back(std::uint64_t(c.links.of[t.hops[h].link]) << 32 | bits(t.hops[h].share));
      std::sort(pairs.begin(), pairs.end());
      sig.words.insert(sig.words.end(), pairs.begin(), pairs.end());
      sig.close();
    }
    c.flows = cells_of(sig, flows);
    sig.clear();
    for (int r = 0; r < ranks; ++r) {
      sig.words.push_back(c.ranks.of[r]);
      const std::size_t b = of_rank.begin[r], m = b + sent[r], e = of_rank.begin[r + 1];
      for (auto [lo, hi] : {std::pair{b, m}, std::pair{m, e}}) {
        pairs.clear();
        for (std::size_t k = lo; k < hi; ++k) pairs.push_back(c.flows.of[of_rank.other[k]]);
        std::sort(pairs.begin(), pairs.end());
        sig.words.push_back(pairs.size());  // keeps the sent and received lists apart
        sig.words.insert(sig.words.end(), pairs.begin(), pairs.end());
      }
      sig.close();
    }
    c.ranks = cells_of(sig, ranks);
    if (c.links.count() + c.flows.count() + c.ranks.count() == before) return c;
  }
}

}  // namespace basp
