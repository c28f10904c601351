#!/usr/bin/env bash
# bench/thread_cpu.sh BIN LABEL: starts BIN (strata-server, or redis-server with AOF everysec) on a
# free port in a temporary directory, runs one redis-benchmark against it, and prints the server's
# CPU microseconds per operation for each thread name (utime+stime from /proc/<pid>/task/*/stat,
# before and after) and in total, then the benchmark's own line. Per-thread CPU moves less with the
# machine's load than ops/s does: an A/B of two builds is two runs of this, interleaved.
# env: T=incr N=2000000 P=16 R=1000000 C=50 EXTRA="server args" CMD="a custom command (overrides T)"
set -u
BIN=$1; LABEL=${2:-run}
T=${T:-incr}; N=${N:-2000000}; P=${P:-16}; R=${R:-1000000}; C=${C:-50}
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
DIR=$(mktemp -d "${TMPDIR:-/tmp}/thread_cpu.XXXXXX")
if [[ "$BIN" == *redis-server* ]]; then
  $BIN --port $PORT --dir $DIR --save '' --appendonly yes --appendfsync everysec ${EXTRA:-} >/dev/null 2>&1 &
else
  $BIN --port $PORT --dir $DIR ${EXTRA:-} >/dev/null 2>&1 &
fi
PID=$!
for i in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.2; done
snap() { for t in /proc/$PID/task/*; do n=$(tr -d ' ' < $t/comm); read -r -a a < <(sed 's/.*) //' $t/stat); echo "$n ${a[11]} ${a[12]}"; done | awk '{c[$1]+=$2+$3} END{for(k in c) print k, c[k]}' | sort; }
B=$(snap)
if [ -n "${CMD:-}" ]; then
  redis-benchmark -p $PORT -c $C -n $N -P $P -r $R -q $CMD >/tmp/thr.$$.out 2>&1
else
  redis-benchmark -p $PORT -c $C -n $N -P $P -r $R -d 128 -q -t $T >/tmp/thr.$$.out 2>&1
fi
A=$(snap)
TICK=$(getconf CLK_TCK)
join -a2 -e 0 -o 0,1.2,2.2 <(echo "$B") <(echo "$A") | awk -v n=$N -v t=$TICK -v l="$LABEL" '{d=($3-$2)/t*1e6/n; tot+=d; if (d>0.05) printf "%s %-22s %6.2f\n", l, $1, d} END{printf "%s %-22s %6.2f us/op\n", l, "TOTAL", tot}'
tr '\r' '\n' < /tmp/thr.$$.out | grep -v '^\s*$' | tail -1
kill $PID; wait $PID 2>/dev/null; rm -rf $DIR /tmp/thr.$$.out
