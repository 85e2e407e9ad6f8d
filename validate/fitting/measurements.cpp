// Every field read is checked for presence and type, so a hand-edited or truncated file fails with
// its name and the missing field instead of a JSON exception.
#include "measurements.hpp"

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "input_error.hpp"
#include "input_ranges.hpp"

namespace basp::fitting {

using nlohmann::json;

std::string fnv1a_hex(const std::string& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

namespace {
const json& field(const json& j, const std::string& key, const std::string& path, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw InputError(path, 0, where.empty() ? key : where + "." + key,
                     "missing (is this a basp-validate --json file?)");
  return j.at(key);
}

double number(const json& j, const std::string& key, const std::string& path, const std::string& where) {
  const json& v = field(j, key, path, where);
  if (!v.is_number()) throw InputError(path, 0, where + "." + key, "must be a number");
  return v.get<double>();
}

// A number within its physical range (input_ranges.hpp), refused naming its field otherwise.
double number(const json& j, const std::string& key, const std::string& path, const std::string& where,
              const PhysicalRange& range) {
  return require_in_range(number(j, key, path, where), range, path, 0, where.empty() ? key : where + "." + key);
}

std::string text(const json& j, const std::string& key, const std::string& path, const std::string& where) {
  const json& v = field(j, key, path, where);
  if (!v.is_string()) throw InputError(path, 0, where + "." + key, "must be text");
  return v.get<std::string>();
}

// Informational only: whatever is missing or of another type reads as "?", never an error.
std::string hardware_line(const json& hw) {
  const auto str = [](const json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                  : std::string("?");
  };
  const auto first = [](const json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_array() && !j[key].empty() && j[key][0].is_string()
               ? j[key][0].get<std::string>()
               : std::string();
  };
  if (hw.is_object() && hw.contains("description") && hw["description"].is_string())
    return hw["description"].get<std::string>();  // step files: the cluster in words
  std::ostringstream o;
  o << str(hw, "backend") << ", " << str(hw, "launcher");
  if (hw.is_object() && hw.contains("hosts") && hw["hosts"].is_array())
    o << ", " << hw["hosts"].size() << " ranks on "
      << (first(hw, "hosts").empty() ? "?" : first(hw, "hosts"));
  const std::string device = first(hw, "devices");
  o << ", " << (device.empty() ? str(hw, "cpu_model") : device);
  return o.str();
}
}  // namespace

namespace {
// A whole number within its range (a count: ranks, heads, tokens), refused naming its field otherwise.
int count(const json& j, const std::string& key, const std::string& path, const std::string& where,
          const PhysicalRange& range) {
  const double v = number(j, key, path, where);
  // Checked before the cast: casting a value beyond int (3e9, 1e300) would be undefined.
  if (v != std::floor(v) || !range.contains(v))
    throw InputError(path, 0, where + "." + key,
                     "'" + nlohmann::json(v).dump() + "' is not a whole number in range: " + range.allowed());
  return int(v);
}

// The bandwidths a row may carry for the reader (nccl-tests' algbw and busbw, a kernel's GB/s):
// not fitted, but a file with a negative, denormal or infinite one is not a measurement. A bus
// bandwidth is 0 for a group of one rank (busbw = algbw (P-1)/P: nothing crosses a link).
void check_bandwidths(const json& r, const std::string& path, const std::string& where,
                      std::initializer_list<const char*> keys_in_GBps) {
  for (const char* key : keys_in_GBps)
    if (r.is_object() && r.contains(key)) {
      const double gbps = number(r, key, path, where);
      const bool bus = std::string_view(key) == "busbw_GBps";
      if (!ranges::bandwidth.contains(gbps * 1e9) && !(bus && gbps == 0.0))
        throw InputError(path, 0, where + "." + key,
                         "'" + nlohmann::json(gbps).dump() + " GB/s' is out of range: " + ranges::bandwidth.allowed() +
                             (bus ? " (or 0 for a group of one rank)" : ""));
    }
}

// A collective's size over its time, nccl-tests' algbw: no link carries more than a bandwidth can be.
void check_rate(double size_bytes, double time_s, const std::string& path, const std::string& where) {
  const double rate = size_bytes / time_s;
  if (rate > ranges::bandwidth.max)
    throw InputError(path, 0, where,
                     "size_bytes / time_s is " + nlohmann::json(rate).dump() +
                         " B/s, faster than any link: " + ranges::bandwidth.allowed());
}

// Step-level figures: the setting, then each figure with what it is a figure of.
void read_step(const json& j, const json& results, const std::string& path, std::size_t id, Measurements& m) {
  m.sources[id].provenance = text(j, "provenance", path, "");
  if (m.sources[id].provenance.empty())
    throw InputError(path, 0, "provenance", "say where these figures come from (paper, logs, run)");
  const json& c = field(j, "config", path, "");
  StepSetting set;
  set.topology = text(c, "topology", path, "config");
  set.seq = count(c, "seq", path, "config", ranges::sequence_tokens);
  set.batch = count(c, "batch", path, "config", ranges::micro_batch);
  set.sp = count(c, "sp", path, "config", ranges::gpu_count);
  const double zero = number(c, "zero", path, "config");
  if (zero != 0 && zero != 1 && zero != 2 && zero != 3)
    throw InputError(path, 0, "config.zero", "ZeRO stages are 0, 1, 2 and 3");
  set.zero = int(zero);
  const json& ck = field(c, "checkpointing", path, "config");
  if (!ck.is_boolean()) throw InputError(path, 0, "config.checkpointing", "must be true or false");
  set.checkpointing = ck.get<bool>();
  set.source = id;
  m.step_settings.push_back(set);
  if (results.empty()) throw InputError(path, 0, "results", "a step file needs at least one figure");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string where = "results[" + std::to_string(i) + "]";
    const json& r = results[i];
    StepObservation o;
    o.quantity = text(r, "quantity", path, where);
    o.statistic = text(r, "statistic", path, where);
    o.value = number(r, "value", path, where);
    o.setting = m.step_settings.size() - 1;
    o.row = i;
    const bool per_strategy = o.quantity == "step_s" || o.quantity == "a2a_s" || o.quantity == "a2a_share";
    if (!per_strategy && o.quantity != "speedup" && o.quantity != "a2a_reduction")
      throw InputError(path, 0, where + ".quantity",
                       "'" + o.quantity + "' is not one of step_s, a2a_s, a2a_share, speedup, a2a_reduction");
    if (per_strategy) {
      o.strategy = text(r, "strategy", path, where);
      if (o.strategy != "ulysses" && o.strategy != "basp")
        throw InputError(path, 0, where + ".strategy", "must be ulysses or basp");
    }
    if (o.statistic != "value" && o.statistic != "min" && o.statistic != "max")
      throw InputError(path, 0, where + ".statistic", "must be value (one model), min or max (over models)");
    const json& models = field(r, "models", path, where);
    if (!models.is_array() || models.empty())
      throw InputError(path, 0, where + ".models", "must be a non-empty list of model names");
    for (const json& name : models) {
      if (!name.is_string()) throw InputError(path, 0, where + ".models", "must list model names (text)");
      o.models.push_back(name.get<std::string>());
    }
    if (o.statistic == "value" && o.models.size() != 1)
      throw InputError(path, 0, where + ".models", "statistic value is of exactly one model");
    if (!(o.value > 0)) throw InputError(path, 0, where + ".value", "must be positive");
    // Times are times, speedups and reductions ratios of two times; a share is a fraction below 1.
    const PhysicalRange& range = o.quantity == "a2a_share"                          ? ranges::step_share
                                 : o.quantity == "step_s" || o.quantity == "a2a_s" ? ranges::duration
                                                                                   : ranges::time_ratio;
    require_in_range(o.value, range, path, 0, where + ".value");
    if (o.quantity == "a2a_share" && o.value >= 1)
      throw InputError(path, 0, where + ".value", "a share is a fraction of the step, below 1");
    m.steps.push_back(o);
  }
}

// A published nccl-tests table: one run of `ranks` ranks (the topology's first ones), each row one
// size of one test, its out-of-place time. Names as nccl-tests prints them ("all_gather_perf"
// without "_perf"). sendrecv is left out: nccl-tests pairs ranks differently from `basp collective`.
void read_nccl_tests(const json& j, const json& results, const std::string& path, std::size_t id,
                     Measurements& m) {
  m.sources[id].provenance = text(j, "provenance", path, "");
  if (m.sources[id].provenance.empty())
    throw InputError(path, 0, "provenance", "say where this table comes from (repository, file, commit)");
  const int ranks = count(field(j, "config", path, ""), "ranks", path, "config", ranges::gpu_count);
  if (results.empty()) throw InputError(path, 0, "results", "an nccl-tests file needs at least one row");
  static const std::pair<const char*, CollectiveOp> ops[] = {{"alltoall", CollectiveOp::alltoall},
                                                             {"all_gather", CollectiveOp::allgather},
                                                             {"reduce_scatter", CollectiveOp::reducescatter},
                                                             {"all_reduce", CollectiveOp::allreduce}};
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string where = "results[" + std::to_string(i) + "]";
    const json& r = results[i];
    const std::string op = text(r, "op", path, where);
    const auto it = std::find_if(std::begin(ops), std::end(ops), [&](const auto& o) { return op == o.first; });
    if (it == std::end(ops))
      throw InputError(path, 0, where + ".op",
                       "'" + op + "' is not one of alltoall, all_gather, reduce_scatter, all_reduce");
    CommSample s;
    s.ranks = ranks;
    s.op = it->second;
    s.size_bytes = number(r, "size_bytes", path, where, ranges::buffer_bytes);
    s.time_s = number(r, "time_s", path, where, ranges::duration);
    s.source = id;
    check_rate(s.size_bytes, s.time_s, path, where);
    check_bandwidths(r, path, where, {"algbw_GBps", "busbw_GBps"});
    m.comm.push_back(s);
  }
}

// Appends what one parsed file holds.
void read_one(const json& j, const std::string& path, const std::string& bytes, Measurements& m) {
  if (text(j, "schema", path, "") != "basp-measurements")
    throw InputError(path, 0, "schema", "must be basp-measurements");
  if (number(j, "schema_version", path, "") != 1)
    throw InputError(path, 0, "schema_version", "this basp reads version 1");
  MeasurementSource src{path,
                        fnv1a_hex(bytes),
                        text(j, "command", path, ""),
                        hardware_line(field(j, "hardware", path, "")),
                        "",
                        j.contains("config") ? j.at("config").dump() : std::string("{}")};
  const std::size_t id = m.sources.size();
  m.sources.push_back(src);
  const json& results = field(j, "results", path, "");
  if (!results.is_array()) throw InputError(path, 0, "results", "must be a list");
  if (src.command == "layer") {
    const json& c = field(j, "config", path, "");
    LayerRun run;
    run.precision = text(c, "precision", path, "config");
    run.heads = count(c, "heads", path, "config", ranges::attention_heads);
    run.kv_heads = count(c, "kv_heads", path, "config", ranges::attention_heads);
    run.head_dim = count(c, "head_dim", path, "config", ranges::head_dim);
    run.hidden = count(c, "hidden", path, "config", ranges::hidden_size);
    run.seq = count(c, "seq", path, "config", ranges::sequence_tokens);
    run.batch = count(c, "batch", path, "config", ranges::micro_batch);
    run.ranks = count(c, "ranks", path, "config", ranges::gpu_count);
    run.source = id;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const std::string where = "results[" + std::to_string(i) + "]";
      LayerStrategyRun s{
          text(results[i], "strategy", path, where), count(results[i], "group_size", path, where, ranges::gpu_count), {}};
      if (run.ranks % s.group_size != 0 || run.heads % s.group_size != 0 || run.seq % s.group_size != 0)
        throw InputError(path, 0, where + ".group_size",
                         "must divide the ranks, the heads and the sequence length");
      const json& phases = field(results[i], "phases", path, where);
      if (!phases.is_array() || phases.empty())
        throw InputError(path, 0, where + ".phases", "must be a non-empty list");
      for (std::size_t k = 0; k < phases.size(); ++k) {
        const std::string pw = where + ".phases[" + std::to_string(k) + "]";
        LayerPhase ph{text(phases[k], "name", path, pw), number(phases[k], "median_s", path, pw),
                      number(phases[k], "send_bytes", path, pw, ranges::send_bytes)};
        if (!(ph.median_s > 0)) throw InputError(path, 0, pw + ".median_s", "must be positive");
        require_in_range(ph.median_s, ranges::duration, path, 0, pw + ".median_s");
        // Files written before the validator kept the spread have no min and max.
        ph.min_s = phases[k].contains("min_s") ? number(phases[k], "min_s", path, pw) : ph.median_s;
        ph.max_s = phases[k].contains("max_s") ? number(phases[k], "max_s", path, pw) : ph.median_s;
        if (!(ph.min_s > 0 && ph.min_s <= ph.median_s && ph.median_s <= ph.max_s))
          throw InputError(path, 0, pw, "needs 0 < min_s <= median_s <= max_s");
        require_in_range(ph.min_s, ranges::duration, path, 0, pw + ".min_s");
        require_in_range(ph.max_s, ranges::duration, path, 0, pw + ".max_s");
        if (phases[k].contains("isolated_median_s")) {
          ph.isolated_median_s = number(phases[k], "isolated_median_s", path, pw);
          if (!(ph.isolated_median_s > 0)) throw InputError(path, 0, pw + ".isolated_median_s", "must be positive");
          require_in_range(ph.isolated_median_s, ranges::duration, path, 0, pw + ".isolated_median_s");
        }
        s.phases.push_back(ph);
      }
      run.strategies.push_back(s);
    }
    if (run.strategies.empty())
      throw InputError(path, 0, "results", "a layer file needs at least one strategy");
    m.layers.push_back(run);
    return;
  }
  if (src.command == "step") {
    read_step(j, results, path, id, m);
    return;
  }
  if (src.command == "nccl-tests") {
    read_nccl_tests(j, results, path, id, m);
    return;
  }
  if (src.command != "comm" && src.command != "compute")
    throw InputError(path, 0, "command",
                     "'" + src.command + "' is not one of layer, comm, compute, nccl-tests, step");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string where = "results[" + std::to_string(i) + "]";
    const json& r = results[i];
    if (src.command == "comm") {
      CommSample s;
      s.ranks = count(field(j, "config", path, ""), "ranks", path, "config", ranges::gpu_count);
      s.groups = count(r, "groups", path, where, ranges::gpu_count);
      if (s.ranks % s.groups != 0) throw InputError(path, 0, where + ".groups", "must divide config.ranks");
      s.size_bytes = number(r, "size_bytes", path, where, ranges::buffer_bytes);
      s.time_s = number(r, "median_s", path, where, ranges::duration);
      s.source = id;
      check_rate(s.size_bytes, s.time_s, path, where);
      check_bandwidths(r, path, where, {"algbw_GBps", "busbw_GBps"});
      m.comm.push_back(s);
    } else if (src.command == "compute") {
      ComputeSample s{text(r, "op", path, where), number(r, "flops", path, where, ranges::flops),
                      number(r, "median_s", path, where), id};
      // Files written before memory-bound operations were timed have no bytes.
      if (r.contains("bytes")) s.bytes = number(r, "bytes", path, where, ranges::kernel_bytes);
      check_bandwidths(r, path, where, {"gbps"});
      const bool memory_bound = s.op == "rotary" || s.op == "pack_qkv" || s.op == "unpack_qkv" || s.op == "unpack_o";
      if (s.time_s <= 0 || (memory_bound ? s.bytes <= 0 : s.flops <= 0))
        throw InputError(
            path, 0, where,
            memory_bound ? "bytes and time must be positive" : "flops and time must be positive");
      require_in_range(s.time_s, ranges::duration, path, 0, where + ".median_s");
      m.compute.push_back(s);
    }
  }
}
}  // namespace

Measurements read_measurements(const std::vector<std::string>& paths) {
  Measurements m;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, 0, "--measurements", "cannot open this file");
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string bytes = buf.str();
    json j;
    try {
      j = json::parse(bytes);
    } catch (const json::parse_error& e) {
      // The line of the byte where parsing stopped, so that the message points into the file.
      const std::size_t at = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, bytes.size());
      const int line = 1 + static_cast<int>(std::count(bytes.begin(), bytes.begin() + long(at), '\n'));
      throw InputError(path, line, "", std::string("not JSON: ") + e.what());
    } catch (const json::exception& e) {  // a number beyond double's range (1e7158)
      // The message quotes the number ("parsing '1e7158'"): its first occurrence gives the line.
      const std::string what = e.what(), quote = "parsing '";
      const auto from = what.find(quote);
      const auto to = from == std::string::npos ? from : what.find('\'', from + quote.size());
      const auto at = to == std::string::npos ? to : bytes.find(what.substr(from + quote.size(), to - from - quote.size()));
      const int line = at == std::string::npos ? 1 : 1 + static_cast<int>(std::count(bytes.begin(), bytes.begin() + long(at), '\n'));
      throw InputError(path, line, "", "a number beyond the range of doubles: " + what);
    }
    try {
      read_one(j, path, bytes, m);
    } catch (const json::exception& e) {  // a field of the wrong type deep inside
      throw InputError(path, 0, "", std::string("not a basp-measurements file: ") + e.what());
    }
  }
  return m;
}

}  // namespace basp::fitting
