#!/usr/bin/env bash
# metrics-cost.sh: what turning the broker's metrics on (metrics.listen) costs
# producer and consumer throughput. Runs kafka-producer-perf-test (batch 50)
# and kafka-consumer-perf-test against a fresh broker, alternately without and
# with --metrics.listen, RUNS times each, scraping /metrics during each run
# with metrics on, and prints every run and the medians: throughput, and the
# broker's CPU time per million messages (utime+stime from /proc, which a
# shared machine disturbs less than it disturbs throughput).
#
# Usage: scripts/metrics-cost.sh [RUNS] [MESSAGES]   (defaults 7, 2000000)
# Needs `make build` first (bin/kafka-server and the perf tools).
set -euo pipefail
RUNS=${1:-7}
MESSAGES=${2:-2000000}
BIN=${BIN:-bin}
PORT=${PORT:-19292}
MPORT=${MPORT:-19293}
WORK=$(mktemp -d)
trap 'kill "$BROKER" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
BROKER=

rate() { sed -n 's/.*"msgs_per_sec":\([0-9.]*\).*/\1/p' | tail -1; }

cpu() { # cpu PID: the process's utime+stime in clock ticks
	awk '{print $14+$15}' "/proc/$1/stat"
}

one() { # one MODE: prints "MODE produce_rate consume_rate produce_cpu_ms_per_M consume_cpu_ms_per_M"
	local mode=$1 extra=() dir="$WORK/logs-$1-$RANDOM"
	[ "$mode" = on ] && extra=(--metrics.listen=127.0.0.1:$MPORT)
	"$BIN/kafka-server" --hostname=127.0.0.1 --port=$PORT --log.dir="$dir" \
		--log.flush.interval=10000 "${extra[@]}" 2>"$WORK/broker.log" &
	BROKER=$!
	for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
	if [ "$mode" = on ]; then # scrape during the runs, as Prometheus would
		(while sleep 1; do curl -s "http://127.0.0.1:$MPORT/metrics" >"$WORK/scrape" || true; done) &
		SCRAPER=$!
	fi
	local p c t0 t1 t2 hz
	hz=$(getconf CLK_TCK)
	t0=$(cpu "$BROKER")
	p=$("$BIN/kafka-producer-perf-test" --broker-list=0:127.0.0.1:$PORT --topic=perf --messages="$MESSAGES" --batch-size=50 --progress=false --json | rate)
	t1=$(cpu "$BROKER")
	c=$("$BIN/kafka-consumer-perf-test" --broker-list=0:127.0.0.1:$PORT --topic=perf --messages="$MESSAGES" --fetch-size=1048576 --progress=false --json | rate)
	t2=$(cpu "$BROKER")
	if [ "$mode" = on ]; then
		kill "$SCRAPER"; wait "$SCRAPER" 2>/dev/null || true
		curl -s "http://127.0.0.1:$MPORT/metrics" | grep -E '^kafka_server_(messages_in|bytes_out)_total' >&2
	fi
	kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
	rm -rf "$dir"
	echo "$mode $p $c $(( (t1 - t0) * 1000 / hz * 1000000 / MESSAGES )) $(( (t2 - t1) * 1000 / hz * 1000000 / MESSAGES ))"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

for i in $(seq "$RUNS"); do
	# Alternate the order so that drift on a shared machine hits both.
	if [ $((i % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
	for m in $order; do one "$m" | tee -a "$WORK/results"; done
done
for m in off on; do
	p=$(awk -v m=$m '$1==m {print $2}' "$WORK/results" | median)
	c=$(awk -v m=$m '$1==m {print $3}' "$WORK/results" | median)
	pc=$(awk -v m=$m '$1==m {print $4}' "$WORK/results" | median)
	cc=$(awk -v m=$m '$1==m {print $5}' "$WORK/results" | median)
	echo "median $m: produce $p msg/s ($pc broker CPU ms per million), consume $c msg/s ($cc broker CPU ms per million)"
done
