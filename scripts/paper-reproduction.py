#!/usr/bin/env python3
# Prints the tables of docs/paper-reproduction.md from build/cli/basp (run from the repository
# root after scripts/build.sh): shipped | hand | sens | nockpt.
import atexit, json, re, shutil, subprocess, sys, tempfile
B = "build/cli/basp"
MODELS = ["llama-3.2-1b","llama-3.2-3b","llama-3.1-8b","qwen1.5-1.8b","qwen3-1.7b","qwen3-4b","qwen3-8b"]
def run(model, flags):
    out = subprocess.run([B, "simulate", "--model", model, "--checkpointing", "--json"] + flags, capture_output=True, text=True, check=True).stdout
    r = {x["strategy"]: x for x in json.loads(out)["results"]}
    u, b = r["ulysses"], r["basp"]
    return dict(speedup=u["step_s"]/b["step_s"], red=u["a2a_s"]/b["a2a_s"], us=u["a2a_share"], bs=b["a2a_share"], ustep=u["step_s"], bstep=b["step_s"])
def table(flags):
    print("| model | speedup | all-to-all reduction | Ulysses a2a share | BASP a2a share | Ulysses step | BASP step |")
    print("|---|---|---|---|---|---|---|")
    for m in MODELS:
        x = run(m, flags)
        us = "**%.1f %%** (paper 37.7)" % (100*x["us"]) if m == "qwen1.5-1.8b" else "%.1f %%" % (100*x["us"])
        bs = "**%.1f %%** (paper 16)" % (100*x["bs"]) if m == "qwen1.5-1.8b" else "%.1f %%" % (100*x["bs"])
        print("| %s | %.3f× | %.2f× | %s | %s | %.1f ms | %.1f ms |" % (m, x["speedup"], x["red"], us, bs, 1e3*x["ustep"], 1e3*x["bstep"]))
    print()
def met(xs):
    sp = [x["speedup"] for x in xs]; rd = [x["red"] for x in xs]; q = xs[MODELS.index("qwen1.5-1.8b")]
    miss = []
    if min(sp) < 1.12 or max(sp) > 1.36: miss.append("speedup")
    if min(rd) < 1.9 or max(rd) > 3.6: miss.append("reduction")
    if abs(100*q["us"] - 37.7) > 5 or abs(100*q["bs"] - 16) > 5: miss.append("shares")
    return "all met" if not miss else "**missed** (" + ", ".join(miss) + ")"
def sens_row(label, flags):
    xs = [run(m, flags) for m in MODELS]
    q = xs[MODELS.index("qwen1.5-1.8b")]
    print("| %s | %.3f–%.3f | %.2f–%.2f | %.1f | %.1f | %s |" % (label, min(x["speedup"] for x in xs), max(x["speedup"] for x in xs),
          min(x["red"] for x in xs), max(x["red"] for x in xs), 100*q["us"], 100*q["bs"], met(xs)))
hand = open("calibrations/paper-a100-2x4-hand.yaml").read()
def variant(name, key, new):
    text = re.sub(r"(\n\s+%s: )[^\n#]+" % re.escape(key), lambda m: m.group(1) + new, hand, count=1)
    text = text.replace("name: paper-a100-2x4-hand", "name: " + name, 1)
    path = "%s/%s.yaml" % (TMP, name)
    open(path, "w").write(text)
    return ["--calibration", path]
TMP = tempfile.mkdtemp(prefix="basp-sensitivity-")
atexit.register(shutil.rmtree, TMP, True)
what = sys.argv[1] if len(sys.argv) == 2 else ""
if what not in ("shipped", "hand", "sens", "nockpt"):
    sys.exit("usage: scripts/paper-reproduction.py shipped|hand|sens|nockpt")
if what == "shipped": table([])
if what == "hand": table(["--calibration", "paper-a100-2x4-hand"])
if what == "nockpt":
    xs = []
    for m in MODELS:
        out = subprocess.run([B, "simulate", "--model", m, "--json"], capture_output=True, text=True, check=True).stdout
        r = {x["strategy"]: x for x in json.loads(out)["results"]}
        u, b = r["ulysses"], r["basp"]
        xs.append(dict(speedup=u["step_s"]/b["step_s"], red=u["a2a_s"]/b["a2a_s"], us=u["a2a_share"], bs=b["a2a_share"]))
    q = xs[MODELS.index("qwen1.5-1.8b")]
    print("speedups %.2f–%.2f, reductions %.1f–%.1f, qwen shares %.1f / %.1f" % (min(x["speedup"] for x in xs), max(x["speedup"] for x in xs), min(x["red"] for x in xs), max(x["red"] for x in xs), 100*q["us"], 100*q["bs"]))
if what == "sens":
    H = ["--calibration", "paper-a100-2x4-hand"]
    print("| change | speedup (7 models) | a2a reduction | Qwen-1.8B Ulysses share % | BASP share % | targets |")
    print("|---|---|---|---|---|---|")
    sens_row("hand-derived values", H)
    for label, key, val in [("NVLink −20 % (0.28)", "efficiency", "0.28"), ("NVLink +20 % (0.42)", "efficiency", "0.42")]:
        sens_row(label, variant("nv" + val, key, val))
    nic = hand.replace("efficiency: 0.75", "efficiency: @NIC@")
    for label, val in [("NIC −20 % (0.60)", "0.60"), ("NIC +20 % (0.90)", "0.90")]:
        path = "%s/nic%s.yaml" % (TMP, val); open(path, "w").write(nic.replace("@NIC@", val).replace("name: paper-a100-2x4-hand", "name: nic" + val)); sens_row(label, ["--calibration", path])
    for label, key, val in [("launch −20 % (20 µs)", "launch_overhead", "20 us"), ("launch +20 % (30 µs)", "launch_overhead", "30 us"),
                            ("per-peer −20 % (5.6 µs)", "per_peer_overhead", "5.6 us"), ("per-peer +20 % (8.4 µs)", "per_peer_overhead", "8.4 us"),
                            ("GEMM −20 % (0.56)", "gemm", "0.56"), ("GEMM +20 % (0.84)", "gemm", "0.84")]:
        sens_row(label, variant(key + val.replace(" ", ""), key, val))
    for label, val in [("attention −20 % (0.36)", "0.36"), ("attention +20 % (0.54)", "0.54")]:
        path = "%s/att%s.yaml" % (TMP, val)
        open(path, "w").write(hand.replace("attention_forward: 0.45", "attention_forward: " + val).replace("attention_backward: 0.45", "attention_backward: " + val).replace("name: paper-a100-2x4-hand", "name: att" + val))
        sens_row(label, ["--calibration", path])
    for label, flags in [("ZeRO-3 bucket 0 (every module at once)", ["--zero-bucket", "0"]), ("ZeRO-3 bucket 2.5e8", ["--zero-bucket", "2.5e8"]),
                         ("ZeRO-3 bucket 1e9", ["--zero-bucket", "1e9"]), ("persistence threshold 0 (norms gathered)", ["--zero-persistence", "0"]),
                         ("no prefetching (max live 0)", ["--zero-max-live", "0"]), ("max live 5e8", ["--zero-max-live", "5e8"]),
                         ("prefetch bucket 1e7", ["--zero-prefetch", "1e7"]), ("reuse distance 0 (released after each use)", ["--zero-reuse-distance", "0"]),
                         ("compute jitter ±5 % (seed 1)", ["--compute-jitter", "0.05"]), ("one slow GPU ×1.2 (seed 1)", ["--slow-gpus", "0.01:1.2"]),
                         ("one slow link at half its capacity (seed 1)", ["--slow-links", "0.01:2"])]:
        sens_row(label, H + flags)
