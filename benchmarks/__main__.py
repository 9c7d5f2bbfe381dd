"""Run every benchmark: python -m benchmarks [--rows N] [--spark]"""
import subprocess
import sys

args = sys.argv[1:]
spark = "--spark" in args
args = [a for a in args if a != "--spark"]
mods = ["bench_core", "bench_lookup", "bench_mutations", "bench_compaction", "bench_cdc", "bench_peers", "bench_scale"] + (["bench_spark"] if spark else [])
for m in mods:
    print(f"\n=== benchmarks.{m} ===", flush=True)
    subprocess.run([sys.executable, "-m", f"benchmarks.{m}", *args], check=True)
