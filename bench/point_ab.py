#!/usr/bin/env python3
"""Interleaved A/B of server builds (and Redis) on point operations (issues 12 and 15).

    bench/point_ab.py [--rounds 3] [--workloads pfadd:1/16,pfcount:16] LABEL=BINARY ...

Each round runs every workload at every pipeline depth once against each LABEL=BINARY (a
strata-server, or a redis-server, which runs with AOF everysec), in turn and in the reverse order
every other round, each time on a fresh server in a temporary directory on a free loopback port
(stopped by PID). A run pre-fills what its workload reads, then times one `redis-benchmark -c 50
-r 1000000` run (-n 2,000,000 at -P 16, 300,000 at -P 1) and reads the server's CPU (utime + stime
of all its threads, /proc/<pid>/stat) before and after. It prints each run, then per workload, P
and label the medians of the CPU microseconds per operation and of ops/s. On a shared machine
the CPU per operation moves far less than ops/s: compare it, in the same rounds.

Workloads: ping (PING as a multi-bulk command, redis-benchmark's PING_MBULK: the fixed cost of
a command), pfadd (PFADD hll <rand> into a dense HLL of 20,000 elements), pfcount (PFCOUNT of a
dense HLL of 5,000 elements whose cache is valid), setbit_keys (SETBIT bit:<rand> 7 1),
getbit_keys (GETBIT bit:<rand> 7 after 300,000 such SETBITs), geoadd (GEOADD geo <lon> <lat>
m:<rand>), setbit_big (SETBIT bm <rand> 1 through EVALSHA of a one-line script, since
`__rand_int__` is zero-padded and a bit offset may not be, into a bitmap of 1,000,000 bits).
The rows of bench/run.sh, with 128-byte values: set (SET key:<rand>), get (GET key:<rand> after
1,000,000 such SETs), incr (INCR counter:<rand>), lpush / rpush (onto one list), lpop / rpop (from one
list of 2,500,000 items), sadd (SADD myset element:<rand>), hset (HSET myhash element:<rand>);
and xadd (XADD xs * f <rand> payload <128 B>, one stream).
"""
import argparse, os, re, shutil, statistics, subprocess, sys, tempfile, time



def hll(key, n):
    return ['PFADD %s %s' % (key, ' '.join('e%d' % j for j in range(i, min(n, i + 100))))
            for i in range(0, n, 100)]


SETBIT_SCRIPT = "return redis.call('setbit', KEYS[1], tonumber(ARGV[1]), 1)"
SETBIT_SHA = __import__('hashlib').sha1(SETBIT_SCRIPT.encode()).hexdigest()
# A bitmap of 1,000,000 bits (125 KB: stored in fragments by Strata), bytes of 'A' (0x41).
BITMAP = ['SETBIT bm 999999 1'] + ['SETRANGE bm %d %s' % (o, 'A' * 1000)
                                  for o in range(0, 125000, 1000)]

# The value of the rows of redis-benchmark -t (-d 128).
VALUE = 'x' * 128

# name: (command, pre-fill lines, redis-benchmark run before timing)
WORKLOADS = {
    'ping': (['PING'], [], None),
    'pfadd': (['PFADD', 'hll', '__rand_int__'], hll('hll', 20000), None),
    'pfcount': (['PFCOUNT', 'hllc'], hll('hllc', 5000) + ['PFCOUNT hllc'], None),
    'setbit_keys': (['SETBIT', 'bit:__rand_int__', '7', '1'], [], None),
    'getbit_keys': (['GETBIT', 'bit:__rand_int__', '7'], [],
                    ['-n', '300000', 'SETBIT', 'bit:__rand_int__', '7', '1']),
    'geoadd': (['GEOADD', 'geo', '13.361389', '38.115556', 'm:__rand_int__'], [], None),
    'setbit_big': (['EVALSHA', SETBIT_SHA, '1', 'bm', '__rand_int__'],
                   BITMAP + ['SCRIPT LOAD "%s"' % SETBIT_SCRIPT], None),
    'set': (['SET', 'key:__rand_int__', VALUE], [], None),
    'get': (['GET', 'key:__rand_int__'], [], ['-n', '1000000', 'SET', 'key:__rand_int__', VALUE]),
    'incr': (['INCR', 'counter:__rand_int__'], [], None),
    'lpush': (['LPUSH', 'mylist', VALUE], [], None),
    'rpush': (['RPUSH', 'mylist', VALUE], [], None),
    'lpop': (['LPOP', 'mylist'], [], ['-n', '2500000', 'RPUSH', 'mylist', VALUE]),
    'rpop': (['RPOP', 'mylist'], [], ['-n', '2500000', 'RPUSH', 'mylist', VALUE]),
    'sadd': (['SADD', 'myset', 'element:__rand_int__'], [], None),
    'hset': (['HSET', 'myhash', 'element:__rand_int__', VALUE], [], None),
    'xadd': (['XADD', 'xs', '*', 'f', '__rand_int__', 'payload', VALUE], [], None),
}


from procstat import cpu_seconds as cpu_s, free_port  # noqa: E402


def bench(port, args):
    return subprocess.run(['redis-benchmark', '-p', str(port), '-c', '50', '-P', args[0],
                           '-r', '1000000', '-q'] + args[1:], capture_output=True, text=True)


def run(binary, workload, pipeline, requests):
    d = tempfile.mkdtemp(prefix='point_ab.')
    port = free_port()
    cmd = [binary, '--bind', '127.0.0.1', '--port', str(port), '--dir', d]
    if 'redis-server' in binary:
        cmd += ['--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec']
    else:
        cmd += ['--appendfsync', 'everysec']
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            ping = subprocess.run(['redis-cli', '-p', str(port), 'ping'], capture_output=True)
            if ping.stdout.strip() == b'PONG':
                break
            time.sleep(0.1)
        command, lines, before = WORKLOADS[workload]
        if lines:
            subprocess.run(['redis-cli', '-p', str(port)], input='\n'.join(lines) + '\n',
                           text=True, capture_output=True)
        if before:
            bench(port, ['16'] + before)
        time.sleep(0.5)
        c0 = cpu_s(server.pid)
        out = bench(port, [str(pipeline), '-n', str(requests)] + command).stdout
        c1 = cpu_s(server.pid)
        m = re.search(r'([\d.]+) requests per second', out.replace('\r', '\n'))
        return (c1 - c0) / requests * 1e6, float(m.group(1)) if m else 0.0
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--workloads', default='pfadd:16,pfcount:16,setbit_keys:16')
    ap.add_argument('targets', nargs='+', metavar='LABEL=BINARY')
    a = ap.parse_args()
    targets = [t.split('=', 1) for t in a.targets]
    results = {}
    for r in range(a.rounds):
        for w in a.workloads.split(','):
            name, _, ps = w.partition(':')
            for p in [int(x) for x in (ps or '16').split('/')]:
                n = 2_000_000 if p > 1 else 300_000
                for label, binary in (targets if r % 2 == 0 else targets[::-1]):
                    cpu, rate = run(binary, name, p, n)
                    results.setdefault((name, p, label), []).append((cpu, rate))
                    print(f'[round {r}] {name} P={p} {label}: {cpu:.2f} us/op, {rate:,.0f} ops/s'
                          f' (load {os.getloadavg()[0]:.1f})', flush=True)
    print('\nmedians (CPU us/op of each round in brackets):')
    for (name, p, label), runs in results.items():
        cpus = [c for c, _ in runs]
        print(f'{name:12} P={p:<3} {label:10} {statistics.median(cpus):6.2f} us/op '
              f'[{" ".join("%.2f" % c for c in cpus)}]  '
              f'{statistics.median(r for _, r in runs):>10,.0f} ops/s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
