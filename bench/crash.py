#!/usr/bin/env python3
"""Long crash-safety runs: kill -9 strata-server at random moments under a mixed write workload
over every data type (transactions included), restart it, and verify every acknowledged write
and the all-or-nothing of multi-key commands and transactions, cycle after cycle (the harness is
tests/python/crash_workload.py).

With --power-loss each kill is a simulated power cut (tests/python/powerloss.py): every byte the
server wrote but had not fsynced is dropped before the restart, so `appendfsync everysec` really
loses its last second; the run prints the loss window (how long before the cut the oldest lost
acknowledged write was acknowledged) as p50/p99/max over the cycles.

    bench/crash.py --cycles 500                                        # appendfsync always
    bench/crash.py --cycles 200 --appendfsync everysec
    bench/crash.py --cycles 300 --appendfsync everysec --power-loss --min-run 1 --max-run 3
    bench/crash.py --cycles 200 --appendfsync always --power-loss --write-buffer-size 128kb
    bench/crash.py --cycles 200 --appendfsync everysec --power-loss --torn-tails
    bench/crash.py --cycles 100 --seed 42 --writers 8 --max-run 3

Uses $STRATA_SERVER, else ${CARGO_TARGET_DIR:-target}/release/strata-server. Exits non-zero
(printing the seed and cycle) at the first violation.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))

from crash_workload import run_crash_cycles  # noqa: E402
from harness import Server  # noqa: E402
from powerloss import PowerLoss  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--appendfsync", choices=["always", "everysec", "no"], default="always")
    ap.add_argument("--power-loss", action="store_true", help="drop unsynced bytes at each kill")
    ap.add_argument("--torn-tails", action="store_true",
                    help="with --power-loss: sometimes keep part of a log's unsynced tail (torn or zeroed)")
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--min-run", type=float, default=0.2, help="shortest load before a kill (s)")
    ap.add_argument("--max-run", type=float, default=1.5, help="longest load before a kill (s)")
    ap.add_argument("--write-buffer-size", default=None, help="e.g. 128kb: flushes and compactions all the time")
    args = ap.parse_args()
    directives = {"appendfsync": args.appendfsync}
    if args.write_buffer_size:
        directives["write_buffer_size"] = args.write_buffer_size
    server = Server("strata", directives)
    server.start()
    power_loss = PowerLoss(server, torn_tails=args.torn_tails, seed=args.seed) if args.power_loss else None
    started = time.monotonic()
    kind = ("simulated power cut" + (" (torn tails)" if args.torn_tails else "")) if power_loss else "kill -9"
    print(f"seed {args.seed}, appendfsync {args.appendfsync}, {kind}, data dir {server.dir}", flush=True)
    try:
        report = run_crash_cycles(server, args.cycles, writers=args.writers, seed=args.seed,
                                  min_run=args.min_run, max_run=args.max_run,
                                  log=lambda m: print(m, flush=True), power_loss=power_loss)
    except AssertionError as e:
        print(f"FAILED: {e}\nserver log: {server.log_path}", flush=True)
        server.stop()
        sys.exit(1)
    server.cleanup()
    print(f"survived {report.cycles} {kind} cycles in {time.monotonic() - started:.0f}s "
          f"(appendfsync {args.appendfsync}): {report.summary()}")


if __name__ == "__main__":
    main()
