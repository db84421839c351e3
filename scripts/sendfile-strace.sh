#!/usr/bin/env bash
# sendfile-strace.sh: show that the broker's fetch path uses sendfile(2) and
# never copies fetched bytes through user space (paper §3.1).
#
#   scripts/sendfile-strace.sh [MESSAGES]      (default 200000 messages of 200 bytes)
#
# It builds kafka-server and kafka-producer-perf-test, starts a broker on a
# temporary log dir, produces MESSAGES messages, and then attaches
#
#   strace -f -C -yy -e trace=sendfile,write,writev,pwrite64,sendmsg,sendto -p <broker>
#
# while a consumer reads the whole partition in 1 MiB FETCH requests (a small
# client written in bash over /dev/tcp, so that the broker is the only traced
# process). It prints strace's per-syscall summary (-C gives the summary of
# -c as well as each call) and a verdict computed from the calls on the
# consumer's TCP socket: the payload must go out in sendfile calls, and no
# write-family call on a socket may carry a payload-sized buffer (response
# headers are 6 bytes). The same run is then repeated with
# --fetch.use.sendfile=false (the ablation's copying path) for contrast,
# where the payload shows up in write calls.
#
# Exit status 0 when the sendfile path passes. Needs root or ptrace rights;
# installs strace with apt-get if it is missing.
set -euo pipefail

messages=${1:-200000}
readonly topic=strace
readonly fetch_size=$((1 << 20))
# message_bytes is one 200-byte message on disk: size 4, magic 1, CRC 4.
readonly message_bytes=209
readonly payload_min=209 # one 200-byte message with its 9 bytes of framing

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
project_dir=$(dirname "$script_dir")
work=$(mktemp -d)
broker_pid=
cleanup() {
	if [[ -n $broker_pid ]] && kill -0 "$broker_pid" 2>/dev/null; then
		kill -TERM "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

if ! command -v strace >/dev/null; then
	echo "installing strace..." >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends strace >&2 ||
		{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends strace >&2; }
fi

echo "building..." >&2
(cd "$project_dir" && go build -o "$work/bin/" ./broker/cmd/kafka-server ./producer/cmd/kafka-producer-perf-test)

# --- a tiny protocol client in bash -------------------------------------

# be16/be32/be64 print a number as big-endian \x escapes for printf.
be16() { printf '\\x%02x\\x%02x' $((($1 >> 8) & 255)) $(($1 & 255)); }
be32() { be16 $((($1 >> 16) & 65535)); be16 $(($1 & 65535)); }
be64() { be32 $((($1 >> 32) & 0xffffffff)); be32 $(($1 & 0xffffffff)); }
str() { be16 ${#1}; printf '%s' "$1"; }

# read_int N: read N bytes from fd 3 as a big-endian unsigned number.
read_int() {
	local v=0 b
	for b in $(head -c "$1" <&3 | od -An -v -tu1); do v=$(((v << 8) | b)); done
	echo "$v"
}

# latest_offset PORT: the OFFSETS answer for time -1 (the flushed end).
latest_offset() {
	exec 3<>"/dev/tcp/127.0.0.1/$1"
	local body="$(be16 4)$(str "$topic")$(be32 0)$(be64 -1)$(be32 1)"
	printf "$(be32 $((2 + 2 + ${#topic} + 4 + 8 + 4)))$body" >&3
	local size code count offset=0
	size=$(read_int 4)
	code=$(read_int 2)
	count=$(read_int 4)
	((count == 1)) && offset=$(read_int 8)
	exec 3>&-
	echo "$offset"
}

# consume PORT END: fetch [0, END) in FETCH requests of fetch_size bytes;
# prints the number of payload bytes received. A response may end inside a
# message; the next fetch starts at the last whole message it held (every
# message here is message_bytes on disk), since the broker refuses an
# offset inside a message.
consume() {
	exec 3<>"/dev/tcp/127.0.0.1/$1"
	local off=0 size code got=0 whole
	while ((off < $2)); do
		printf "$(be32 $((2 + 2 + ${#topic} + 4 + 8 + 4)))$(be16 1)$(str "$topic")$(be32 0)$(be64 "$off")$(be32 "$fetch_size")" >&3
		size=$(read_int 4)
		code=$(read_int 2)
		if ((code != 0 || size <= 2)); then
			echo "fetch at $off: error code $code, size $size" >&2
			return 1
		fi
		head -c $((size - 2)) <&3 >/dev/null
		whole=$(((size - 2) / message_bytes * message_bytes))
		off=$((off + whole))
		got=$((got + size - 2))
	done
	exec 3>&-
	echo "$got"
}

# --- one traced run ------------------------------------------------------

# run_once NAME [broker flags...]: prints the verdict lines; returns 1 when
# payload went through write calls or no sendfile was seen.
run_once() {
	local name=$1
	shift
	local dir="$work/$name" port end
	mkdir -p "$dir"
	"$work/bin/kafka-server" --log.dir="$dir/logs" --hostname=127.0.0.1 --port=0 \
		--enable.zookeeper=false --log.default.flush.interval.ms=100 \
		--log.default.flush.scheduler.interval.ms=100 "$@" 2>"$dir/broker.log" &
	broker_pid=$!
	for _ in $(seq 300); do
		port=$(sed -n 's/.*msg="broker started".* addr=127.0.0.1:\([0-9]*\).*/\1/p' "$dir/broker.log")
		[[ -n $port ]] && break
		sleep 0.1
	done
	[[ -n $port ]] || { cat "$dir/broker.log" >&2; echo "broker did not start" >&2; return 1; }

	"$work/bin/kafka-producer-perf-test" --broker-list="0:127.0.0.1:$port" --topic="$topic" \
		--messages="$messages" --message-size=200 --batch-size=50 >"$dir/producer.out"
	local want=$((messages * payload_min))
	for _ in $(seq 300); do
		end=$(latest_offset "$port")
		((end >= want)) && break
		sleep 0.1
	done
	((end >= want)) || { echo "only $end of $want bytes visible" >&2; return 1; }

	strace -f -C -yy -e trace=sendfile,write,writev,pwrite64,sendmsg,sendto \
		-o "$dir/strace.out" -p "$broker_pid" 2>"$dir/strace.err" &
	local strace_pid=$!
	# strace -p prints "attached" once it traces the threads.
	for _ in $(seq 100); do
		grep -q "attached" "$dir/strace.err" 2>/dev/null && break
		sleep 0.1
	done
	local got
	got=$(consume "$port" "$end")
	kill -INT "$strace_pid"
	wait "$strace_pid" || true
	kill -TERM "$broker_pid"
	wait "$broker_pid" || true
	broker_pid=

	echo "== $name: consumer fetched $got bytes ($messages messages) in $fetch_size-byte fetches"
	echo "-- strace -c summary of the broker while it served them:"
	sed -n '/% time/,$p' "$dir/strace.out"
	# Calls on TCP sockets: bytes moved by sendfile, and the largest buffer a
	# write-family call returned.
	awk -v min="$payload_min" -v got="$got" -v name="$name" '
		# strace -f splits a call that another thread interrupts into
		# "<unfinished ...>" and "<... resumed>" lines: join them.
		/<unfinished \.\.\.>$/ { pending[$1] = $0; next }
		/resumed>/ { $0 = pending[$1] " " $0; delete pending[$1] }
		!/<TCP:/ && /(write|writev|pwrite64)\(/ {
			# Other writes: name their target (an eventfd of the Go runtime, a log...).
			target = $0; sub(/^[^<]*</, "", target); sub(/>.*$/, "", target)
			other[target]++
		}
		/<TCP:/ && /= [0-9]+$/ {
			n = $NF + 0
			if ($0 ~ /sendfile\(/) { sf++; sfbytes += n }
			else if ($0 ~ /(write|writev|sendmsg|sendto)\(/) {
				w++; wbytes += n
				if (n > wmax) wmax = n
				if (n >= min) big++
			}
		}
		END {
			printf "-- on the consumer socket: %d sendfile calls moved %d bytes; %d write-family calls moved %d bytes, the largest %d bytes; %d payload-sized (>= %d bytes)\n",
				sf, sfbytes, w, wbytes, wmax, big, min
			for (t in other) printf "-- elsewhere: %d write calls to %s\n", other[t], t
			ok = (sf > 0 && sfbytes >= got && big == 0)
			printf "-- verdict (%s): %s\n", name, ok ? "zero-copy: payload only through sendfile" : "payload through user-space writes"
			exit ok ? 0 : 1
		}' "$dir/strace.out"
}

status=0
run_once sendfile || status=1
echo
run_once copy --fetch.use.sendfile=false || true
exit $status
