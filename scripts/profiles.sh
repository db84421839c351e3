#!/usr/bin/env bash
# profiles.sh: the profiling session of paper/profiles.md (issue 14), one
# figure of paper §5 at a time on 127.0.0.1, 200-byte messages.
#
# Usage: scripts/profiles.sh [OUT [FIGURE...]]
#   OUT      output directory (default paper/results/profiles)
#   FIGURE   any of: b1-sync b1-async b50 hot gzip snappy memory (default all)
# Needs `make build` first; BIN=DIR takes the binaries from DIR instead of bin/
# (an older commit's, for a before/after pair).
#
# For each figure the broker is restarted on a temporary log dir and a free
# port with --cpuprofile, so that its profile holds that figure only (the
# consumer figures write their topic first, with a broker that is then
# stopped), and the tool runs with --cpuprofile. Into OUT/FIGURE go
# client-top.txt and broker-top.txt (`go tool pprof -top`, by flat and by
# cumulative share, first lines only), the profiles (*.pprof), the tool's
# JSON line and summary.txt: the tool's own wall rate, CPU seconds of each
# process (client: user+sys of the whole process, from bash's `time`, start
# included; broker: utime+stime from /proc/PID/stat around the tool's run,
# 10 ms ticks), CPU per message, the broker's memory (/proc/PID/status), the
# load average before and after, and a loopback probe run just before (one
# TCP stream of 1 MiB writes through socat). The memory figure samples the
# broker's VmRSS against the log's size while MEM_MESSAGES are produced at
# batch 50 and then consumed. A binary without --cpuprofile (older commits)
# runs unprofiled.
set -eu
case ${1:-} in -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
BIN=${BIN:-bin}
OUT=${1:-paper/results/profiles}
[ $# -gt 0 ] && shift
FIGURES=${*:-b1-sync b1-async b50 hot gzip snappy memory}
for f in $FIGURES; do
	case " b1-sync b1-async b50 hot gzip snappy memory " in *" $f "*) ;; *)
		echo "unknown figure $f (see scripts/profiles.sh --help)" >&2; exit 2 ;; esac
done
N_B1=${N_B1:-2000000}         # batch 1, sync and async
N_B50=${N_B50:-10000000}      # batch 50, and the hot consumer's topic
N_COMP=${N_COMP:-4000000}     # gzip and snappy topics
MEM_MESSAGES=${MEM_MESSAGES:-10000000}
WORK=$(mktemp -d)
BROKER=
trap '[ -n "$BROKER" ] && kill "$BROKER" 2>/dev/null; wait; rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
HZ=$(getconf CLK_TCK)

has_profile() { "$BIN/$1" --help 2>&1 | grep -q -- --cpuprofile; }
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

start_broker() { # start_broker LOGDIR [PROFILE [FLAGS...]]: sets BROKER and PORT
	local dir=$1 prof=()
	[ -n "${2:-}" ] && has_profile kafka-server && prof=(--cpuprofile="$2")
	shift $(($# < 2 ? $# : 2))
	"$BIN/kafka-server" --hostname=127.0.0.1 --port=0 --log.dir="$dir" --enable.zookeeper=false \
		--log.flush.interval=10000 "${prof[@]}" "$@" 2>"$WORK/broker.log" &
	BROKER=$!
	PORT=
	for _ in $(seq 100); do
		PORT=$(sed -n 's/.*msg="broker started".* addr=127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/broker.log")
		[ -n "$PORT" ] && return
		sleep 0.1
	done
	cat "$WORK/broker.log" >&2
	exit 1
}
stop_broker() { kill "$BROKER"; wait "$BROKER" || true; BROKER=; }

probe() { # MB/s of one loopback TCP stream, 1 GiB in 1 MiB writes
	local p=$((20000 + RANDOM % 20000)) t0 t1
	socat -u -b 1048576 TCP-LISTEN:$p,bind=127.0.0.1,reuseaddr OPEN:/dev/null &
	local l=$!
	sleep 0.3
	t0=$(date +%s.%N)
	socat -u -b 1048576 OPEN:/dev/zero,readbytes=1073741824 TCP:127.0.0.1:$p
	wait $l
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", 1073.741824 / (b - a)}'
}

loglines() { # 100,000 log-like lines of 200 bytes (as experiments/payload.go's)
	awk 'BEGIN {
		srand(2011); split("/home /feed /profile/view /search /jobs/view /messages/inbox /groups/home /people/pymk /company/about /settings/privacy", pg, " ")
		split("PageViewEvent SearchEvent AdImpressionEvent ProfileViewEvent ConnectionInviteEvent", ev, " ")
		split("fe01.prod fe02.prod fe03.prod app11.prod app12.prod", sv, " ")
		split("Mozilla/5.0 (X11; Linux x86_64) Firefox/4.0|Mozilla/5.0 (Windows NT 6.1) Chrome/11.0|Mozilla/5.0 (Macintosh) Safari/533|LinkedIn/1.0 iPhone", ua, "|")
		t = 0
		for (i = 0; i < 100000; i++) {
			t += int(rand() * 3000)
			s = sprintf("2011-06-12T10:%02d:%02d.%03dZ %s INFO %s member=%d page=%s?trk=%s ip=10.%d.%d.%d session=%08x%08x ua=\"%s\" latency_ms=%d",
				int(t / 6e7) % 60, int(t / 1e6) % 60, int(t / 1000) % 1000, sv[1 + int(rand() * 5)], ev[1 + int(rand() * 5)],
				int(rand() * 1e8), pg[1 + int(rand() * 10)], substr(pg[1 + int(rand() * 10)], 2), int(rand() * 256), int(rand() * 256),
				int(rand() * 256), int(rand() * 2^32), int(rand() * 2^32), ua[1 + int(rand() * 4)], int(rand() * 500))
			while (length(s) < 200) s = s " "
			print substr(s, 1, 200)
		}
	}' >"$WORK/log-lines.txt"
}

figure() { # figure NAME N TOOL ARGS...: one profiled run of TOOL against a fresh (or prepared) broker
	local name=$1 n=$2 tool=$3 dir="$OUT/$1"
	shift 3
	mkdir -p "$dir"
	local prof=()
	has_profile "$tool" && prof=(--cpuprofile="$dir/client.pprof")
	local mbs l0 t0 t1 cpu
	mbs=$(probe)
	l0=$(load)
	start_broker "$WORK/logs-$name" "$dir/broker.pprof"
	t0=$(ticks "$BROKER")
	TIMEFORMAT='%U %S'
	cpu=$({ time "$BIN/$tool" --broker-list=0:127.0.0.1:$PORT --messages="$n" --progress=false --json \
		"${prof[@]}" "$@" >"$dir/client.json" 2>"$WORK/client.err"; } 2>&1 | awk '{print $1 + $2}')
	t1=$(ticks "$BROKER")
	grep -E '^(VmRSS|VmHWM|RssAnon|RssFile)' "/proc/$BROKER/status" | tr -s ' \t' ' ' >"$WORK/mem"
	stop_broker
	tail -1 "$dir/client.json" | tr -d '{}"' | tr ',' '\n' | sed 's/:/ /' >"$WORK/json"
	{
		echo "figure $name: $tool $* --messages=$n, $(date -u +%FT%TZ)"
		echo "binaries: $BIN (commit $(git -C "$BIN" rev-parse --short HEAD 2>/dev/null || echo unknown))"
		echo "loopback probe before: $mbs MB/s"
		echo "load average before: $l0, after: $(load)"
		awk '{print "tool: " $1, $2}' "$WORK/json"
		echo "client CPU (user+sys, whole process): $cpu s, $(awk -v c="$cpu" -v n="$n" 'BEGIN {printf "%.3f", c * 1e6 / n}') µs per message"
		echo "broker CPU (utime+stime during the run): $(((t1 - t0) * 1000 / HZ)) ms, $(awk -v t=$((t1 - t0)) -v hz="$HZ" -v n="$n" 'BEGIN {printf "%.3f", t / hz * 1e6 / n}') µs per message"
		sed 's/^/broker /' "$WORK/mem"
	} | tee "$dir/summary.txt"
	for p in client broker; do
		[ -s "$dir/$p.pprof" ] || continue
		local b=$tool
		[ $p = broker ] && b=kafka-server
		{ go tool pprof -top -nodecount=25 "$BIN/$b" "$dir/$p.pprof" 2>/dev/null
		  echo; echo "-- by cumulative share:"
		  go tool pprof -top -cum -nodecount=25 "$BIN/$b" "$dir/$p.pprof" 2>/dev/null | sed -n '/flat%/,$p'; } >"$dir/$p-top.txt"
	done
}

fill() { # fill NAME TOOL ARGS...: write a consumer figure's topic with an unprofiled broker
	local name=$1 tool=$2
	shift 2
	start_broker "$WORK/logs-$name"
	"$BIN/$tool" --broker-list=0:127.0.0.1:$PORT "$@" >"$WORK/fill.out" 2>&1 || { cat "$WORK/fill.out" >&2; exit 1; }
	stop_broker
}

memory() { # VmRSS against the log's size, producing MEM_MESSAGES at batch 50 then consuming them
	local dir="$OUT/memory" logs="$WORK/logs-memory" s t0
	mkdir -p "$dir"
	# The flusher every second, so that the consumer sees the tail of the log.
	start_broker "$logs" "" --log.default.flush.interval.ms=1000 --log.default.flush.scheduler.interval.ms=1000
	echo produce >"$WORK/phase"
	t0=$(date +%s)
	(while sleep 1; do
		echo "$(($(date +%s) - t0)) s $(cat "$WORK/phase") log $(du -sm "$logs" | cut -f1) MB" \
			"$(awk '/^(VmRSS|VmHWM|RssAnon|RssFile)/ {printf "%s %s kB ", $1, $2}' /proc/$BROKER/status)"
	done) >"$WORK/samples" &
	s=$!
	"$BIN/kafka-producer-perf-test" --broker-list=0:127.0.0.1:$PORT --topic=mem --messages="$MEM_MESSAGES" \
		--batch-size=50 --progress=false --json >"$WORK/mem-producer.out"
	echo consume >"$WORK/phase"
	"$BIN/kafka-consumer-perf-test" --broker-list=0:127.0.0.1:$PORT --topic=mem --messages="$MEM_MESSAGES" \
		--progress=false --json >"$WORK/mem-consumer.out"
	kill $s; wait $s || true
	{
		echo "memory: $MEM_MESSAGES messages produced at batch 50, then consumed; the broker sampled once a second"
		echo "binaries: $BIN (commit $(git -C "$BIN" rev-parse --short HEAD 2>/dev/null || echo unknown))"
		cat "$WORK/samples"
		echo "after consuming: $(awk '/^(VmRSS|VmHWM|RssAnon|RssFile)/ {printf "%s %s kB ", $1, $2}' /proc/$BROKER/status)"
		echo "producer: $(tail -1 "$WORK/mem-producer.out")"
		echo "consumer: $(tail -1 "$WORK/mem-consumer.out")"
		echo "load average: $(load)"
	} >"$dir/summary.txt"
	stop_broker
	tail -4 "$dir/summary.txt"
}

start=$(date +%s)
{
	echo "command: BIN=$BIN scripts/profiles.sh $OUT $FIGURES"
	echo "binaries: $BIN (commit $(git -C "$BIN" rev-parse --short HEAD 2>/dev/null || echo unknown))"
	echo "messages: N_B1=$N_B1 N_B50=$N_B50 N_COMP=$N_COMP MEM_MESSAGES=$MEM_MESSAGES"
	echo "started: $(date -u +%FT%TZ), load average $(load)"
	echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), Linux $(uname -r), $(go version | cut -d' ' -f3)"
} >"$OUT/run.txt"
for f in $FIGURES; do
	case $f in
	b1-sync) figure b1-sync "$N_B1" kafka-producer-perf-test --topic=b1 --batch-size=1 ;;
	b1-async) figure b1-async "$N_B1" kafka-producer-perf-test --topic=b1 --batch-size=1 --async ;;
	b50) figure b50 "$N_B50" kafka-producer-perf-test --topic=b50 --batch-size=50 ;;
	hot)
		fill hot kafka-producer-perf-test --topic=hot --messages="$N_B50" --batch-size=50 --progress=false
		figure hot "$N_B50" kafka-consumer-perf-test --topic=hot --fetch-size=1048576 ;;
	gzip | snappy)
		[ -s "$WORK/log-lines.txt" ] || loglines
		codec=1
		[ "$f" = snappy ] && codec=2
		fill "$f" kafka-payload-perf-test --topic="$f" --messages="$N_COMP" --batch-size=50 \
			--compression-codec=$codec --payload-file="$WORK/log-lines.txt"
		echo "$f: log of $N_COMP messages: $(du -sm "$WORK/logs-$f" | cut -f1) MB" >"$WORK/size"
		figure "$f" "$N_COMP" kafka-consumer-perf-test --topic="$f" --fetch-size=1048576
		cat "$WORK/size" >>"$OUT/$f/summary.txt" ;;
	memory) memory ;;
	esac
	rm -rf "$WORK"/logs-*
done
echo "finished: $(date -u +%FT%TZ), load average $(load), $(($(date +%s) - start)) s" >>"$OUT/run.txt"
cat "$OUT/run.txt"
