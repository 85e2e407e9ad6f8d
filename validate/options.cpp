// CLI11 registration of the basp-validate subcommands. Shape flags start from --model's file when
// given (models/*.yaml) and override it; without a model a small default shape is used.
#include "options.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>

#include "input_error.hpp"
#include "model.hpp"
#include "units.hpp"

namespace basp::validate {

namespace {
// nccl-tests sizes: "8", "1K", "128M", "1G" (×1024), or a quantity such as "64 MiB".
double parse_size(const std::string& text, const std::string& flag) {
  if (auto b = parse_binary_multiple(text, true)) return *b;
  if (auto q = parse_quantity(text, Quantity::bytes); q && *q > 0) return *q;
  throw InputError("", 0, flag, "'" + text + "' is not a size (bytes: 8, 1K, 128M, 1G or 64 MiB)");
}

struct RawShape {
  int heads = 0, kv_heads = 0;
  long head_dim = 0, hidden = 0;
  std::string seq = "1024";
  int batch = 2;
  double rope_theta = 10000;
  std::string strategy = "both";
};

void add_shape(CLI::App* c, ValidateOptions& o, RawShape& r) {
  c->add_option("--model", o.model,
                "A shipped model (models/NAME.yaml) or a model file: heads, KV heads, head dim, hidden");
  c->add_option("--heads", r.heads, "Query heads H (default 16, or the model's)")->check(CLI::PositiveNumber);
  c->add_option("--kv-heads", r.kv_heads, "KV heads Hkv (default 4, or the model's)")
      ->check(CLI::PositiveNumber);
  c->add_option("--head-dim", r.head_dim, "Head dimension (default 64, or the model's)")
      ->check(CLI::PositiveNumber);
  c->add_option("--hidden", r.hidden, "Hidden size (default 512, or the model's)")
      ->check(CLI::PositiveNumber);
  c->add_option("--seq", r.seq, "Tokens per sequence S (1024, 4K, 16K)")->capture_default_str();
  c->add_option("--batch,-B", r.batch, "Sequences per micro-batch B")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--rope-theta", r.rope_theta, "Rotary embedding base")->capture_default_str();
  c->add_option("--seed", o.seed, "Seed of the generated inputs")->capture_default_str();
}

void resolve_shape(ValidateOptions& o, const RawShape& r) {
  LayerShape s;
  s.heads = 16;
  s.kv_heads = 4;
  s.head_dim = 64;
  s.hidden = 512;
  if (o.model != "custom") {
    const ModelSpec m = load_model(o.model);
    s.heads = m.heads;
    s.kv_heads = m.kv_heads;
    s.head_dim = m.head_dim;
    s.hidden = m.hidden;
    o.model = m.name;
  }
  if (r.heads) s.heads = r.heads;
  if (r.kv_heads) s.kv_heads = r.kv_heads;
  if (r.head_dim) s.head_dim = r.head_dim;
  if (r.hidden) s.hidden = r.hidden;
  s.seq = parse_tokens(r.seq, "--seq");
  s.batch = r.batch;
  s.rope_theta = r.rope_theta;
  o.shape = s;
  if (r.strategy == "ulysses")
    o.strategies = {LayerStrategy::ulysses};
  else if (r.strategy == "basp")
    o.strategies = {LayerStrategy::basp};
  else
    o.strategies = {LayerStrategy::ulysses, LayerStrategy::basp};
}

// The flags as given, before they are checked and resolved into ValidateOptions.
struct RawOptions {
  std::string backend;
  RawShape shape;
  std::string min_bytes = "1K", max_bytes = "16M";
};

// The flags every subcommand takes.
void add_run_options(CLI::App* c, ValidateOptions& o, RawOptions& raw, bool have_mpi) {
  c->add_option("--backend", raw.backend, "cpu (Eigen + MPI, fp32) or cuda (cuBLAS + kernels + NCCL, bf16)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  c->add_option("--json", o.json_path,
                "Also write the measurements (schema basp-measurements v1) to this file");
  c->add_option("--timeout", o.timeout_s,
                "Seconds a collective may take before the watchdog aborts the run (0: off)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--warmup,-w", o.warmup, "Untimed warm-up iterations")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--iters,-n", o.iters, "Timed iterations")->capture_default_str()->check(CLI::PositiveNumber);
  if (!have_mpi)
    c->add_option("--gpus,-g", o.gpus, "GPUs this process drives, one rank each (0: all visible)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
}

void add_strategy(CLI::App* c, RawShape& r, const std::string& description) {
  c->add_option("--strategy", r.strategy, description)
      ->capture_default_str()
      ->check(CLI::IsMember({"ulysses", "basp", "both"}));
}

void add_attention_tile(CLI::App* c, ValidateOptions& o) {
  c->add_option("--attention-tile", o.attention_tile,
                "Keys per attention tile (CPU: any; CUDA: 32, 64 or 128)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

CLI::App* add_layer_command(CLI::App& app, ValidateOptions& o, RawOptions& raw, bool have_mpi) {
  CLI::App* layer = app.add_subcommand(
      "layer", "The attention layer forward + backward under Ulysses and BASP: check and per-phase times");
  add_run_options(layer, o, raw, have_mpi);
  add_shape(layer, o, raw.shape);
  add_strategy(layer, raw.shape, "ulysses, basp or both");
  layer->add_flag("!--no-check", o.check, "Skip the comparison with the reference (large timing runs)");
  add_attention_tile(layer, o);
  return layer;
}

CLI::App* add_comm_command(CLI::App& app, ValidateOptions& o, RawOptions& raw, bool have_mpi) {
  CLI::App* comm = app.add_subcommand(
      "comm", "All-to-all over all N ranks vs B concurrent K-way groups, swept over sizes");
  add_run_options(comm, o, raw, have_mpi);
  comm->add_option("--minbytes,-b", raw.min_bytes, "Smallest per-rank send buffer")->capture_default_str();
  comm->add_option("--maxbytes,-e", raw.max_bytes, "Largest per-rank send buffer")->capture_default_str();
  comm->add_option("--stepfactor,-f", o.factor, "Size multiplier between rows")
      ->capture_default_str()
      ->check(CLI::Range(1.01, 1e6));
  comm->add_option("--groups,-B", o.groups, "B: the grouped run uses B groups of K = N/B ranks")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return comm;
}

void add_compute_command(CLI::App& app, ValidateOptions& o, RawOptions& raw, bool have_mpi) {
  CLI::App* compute =
      app.add_subcommand("compute", "The layer's GEMMs and attention at one rank's shapes: achieved FLOP/s");
  add_run_options(compute, o, raw, have_mpi);
  add_shape(compute, o, raw.shape);
  add_strategy(compute, raw.shape, "Shapes of ulysses, basp or both");
  compute
      ->add_option("--ranks", o.compute_ranks, "N the shapes are split over (default: the ranks of this run)")
      ->check(CLI::NonNegativeNumber);
  add_attention_tile(compute, o);
}

// Checks the parsed flags and resolves them into `o` (o.command set); throws InputError.
void resolve_options(ValidateOptions& o, const RawOptions& raw, bool have_mpi) {
  o.backend = raw.backend == "cuda" ? Backend::cuda : Backend::cpu;
  if (!have_mpi && o.backend == Backend::cpu)
    throw InputError(
        "", 0, "--backend",
        "this build has no MPI, so only --backend cuda is available (use basp-validate for cpu)");
  if (o.command != Command::comm) resolve_shape(o, raw.shape);
  o.min_bytes = parse_size(raw.min_bytes, "--minbytes");
  o.max_bytes = parse_size(raw.max_bytes, "--maxbytes");
  if (o.max_bytes < o.min_bytes) throw InputError("", 0, "--maxbytes", "must be at least --minbytes");
}
}  // namespace

int parse_options(int argc, char** argv, ValidateOptions& o, bool speak, bool have_mpi) {
  CLI::App app{
      "basp-validate: runs the real Ulysses / BASP attention layer, checks it against a reference and times "
      "it"};
  app.require_subcommand(1);
  app.footer(have_mpi
                 ? "Launch with mpirun -np N (or srun); --backend cuda takes one GPU per rank.\n"
                   "Exit codes: 0 ok, 1 the run failed (check mismatch, hung collective), 2 bad input."
                 : "This build has no MPI: one process drives all local GPUs (--gpus), --backend cuda only.\n"
                   "Exit codes: 0 ok, 1 the run failed (check mismatch, hung collective), 2 bad input.");
  RawOptions raw;
  raw.backend = have_mpi ? "cpu" : "cuda";
  const CLI::App* layer = add_layer_command(app, o, raw, have_mpi);
  const CLI::App* comm = add_comm_command(app, o, raw, have_mpi);
  add_compute_command(app, o, raw, have_mpi);

  std::ostringstream out, err;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    if (speak) std::cout << out.str() << std::flush, std::cerr << err.str() << std::flush;
    return code == 0 ? 0 : 2;
  }
  try {
    o.command = layer->parsed() ? Command::layer : comm->parsed() ? Command::comm : Command::compute;
    resolve_options(o, raw, have_mpi);
  } catch (const InputError& e) {
    if (speak) std::cerr << "basp-validate: error: " << e.what() << "\n";
    return 2;
  }
  return -1;
}

}  // namespace basp::validate
