#!/usr/bin/env python3
"""Disk left behind by a drained list (issue 15, list pops that write only the metadata).

    bench/list_garbage.py [--items 1000000] LABEL=SERVER_BINARY:TOOL_BINARY ...

For each LABEL (a strata-server and the `strata` tool of the same build), on a fresh server in a
temporary directory on a free loopback port (stopped by PID): RPUSH `--items` items of 128 B onto
one list (redis-benchmark -c 50 -P 16), then LPOP them all (same), reading the server's CPU
(/proc/<pid>/stat) around the pops; then the bytes of the directory's live table files (*.sst
at its top; SAVE's copy under backup/ is left out):
right after the pops, after SAVE (a checkpoint), after 70 s more (RocksDB's own compactions),
and, once the server is stopped (SIGTERM: it checkpoints on the way out), after `strata compact`
on the directory. Prints one line per label.
"""
import argparse, glob, os, shutil, signal, subprocess, sys, tempfile, time

from procstat import cpu_seconds, free_port

VALUE = 'x' * 128


def sst_bytes(d):
    # The live table files only: SAVE leaves its copy (hard links) under backup/.
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(d, '*.sst')))


def bench(port, n, *cmd):
    subprocess.run(['redis-benchmark', '-p', str(port), '-c', '50', '-P', '16', '-q',
                    '-n', str(n)] + list(cmd), capture_output=True, text=True)


def run(label, server_bin, tool_bin, items):
    d = tempfile.mkdtemp(prefix='list_garbage.', dir=os.environ.get('TMPDIR'))
    port = free_port()
    server = subprocess.Popen([server_bin, '--bind', '127.0.0.1', '--port', str(port), '--dir', d,
                               '--appendfsync', 'everysec'],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {}
    try:
        for _ in range(100):
            if subprocess.run(['redis-cli', '-p', str(port), 'ping'],
                              capture_output=True).stdout.strip() == b'PONG':
                break
            time.sleep(0.1)
        bench(port, items, 'RPUSH', 'mylist', VALUE)
        subprocess.run(['redis-cli', '-p', str(port), 'SAVE'], capture_output=True)
        out['pushed'] = sst_bytes(d)
        c0 = cpu_seconds(server.pid)
        bench(port, items, 'LPOP', 'mylist')
        c1 = cpu_seconds(server.pid)
        out['cpu_us'] = (c1 - c0) / items * 1e6
        llen = subprocess.run(['redis-cli', '-p', str(port), 'LLEN', 'mylist'],
                              capture_output=True, text=True).stdout.strip()
        out['popped'] = sst_bytes(d)
        subprocess.run(['redis-cli', '-p', str(port), 'SAVE'], capture_output=True)
        out['saved'] = sst_bytes(d)
        time.sleep(70)
        out['waited'] = sst_bytes(d)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    subprocess.run([tool_bin, '-d', d, 'compact'], capture_output=True)
    out['compacted'] = sst_bytes(d)
    shutil.rmtree(d, ignore_errors=True)
    mb = lambda b: b / 1e6
    print(f'{label:8} pop CPU {out["cpu_us"]:.2f} us/op; LLEN after {llen}; table files MB: '
          f'pushed+SAVE {mb(out["pushed"]):.1f}, after pops {mb(out["popped"]):.1f}, '
          f'after SAVE {mb(out["saved"]):.1f}, 70 s later {mb(out["waited"]):.1f}, '
          f'after strata compact {mb(out["compacted"]):.2f} (load {os.getloadavg()[0]:.1f})',
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--items', type=int, default=1_000_000)
    ap.add_argument('targets', nargs='+', metavar='LABEL=SERVER:TOOL')
    a = ap.parse_args()
    for t in a.targets:
        label, bins = t.split('=', 1)
        server_bin, tool_bin = bins.split(':', 1)
        run(label, server_bin, tool_bin, a.items)
    return 0


if __name__ == '__main__':
    sys.exit(main())
