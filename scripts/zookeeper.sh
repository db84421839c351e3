#!/usr/bin/env bash
# zookeeper.sh: run one standalone Apache ZooKeeper (Debian's `zookeeper` package)
# as a plain background process, for development, tests and CI.
#
#   scripts/zookeeper.sh start  [PORT] [DIR]   install if missing, start, wait until it serves
#   scripts/zookeeper.sh stop   [PORT] [DIR]   stop the server started from DIR (by its PID)
#   scripts/zookeeper.sh status [PORT] [DIR]   exit 0 if the server of DIR serves on PORT
#   scripts/zookeeper.sh run    [PORT] [DIR]   configure as start, run in the foreground
#                                              (the command of a container: scripts/containers.sh)
#
# PORT defaults to 2181 and DIR to <project>/data/zookeeper-PORT (data/ is gitignored).
# The server listens on 127.0.0.1 only, keeps everything under DIR (zoo.cfg, data/,
# zookeeper.pid, zookeeper.log), runs without the admin server, and answers the
# four-letter words srvr, ruok, stat, mntr, conf, cons, dump, wchs and envi.
# "Ready" means `srvr` reports `Mode: standalone` (`ruok` answers `imok` earlier,
# before the server accepts sessions). start and stop are idempotent.
#
# Environment: ZK_START_TIMEOUT (seconds, default 90), ZK_HEAP (JVM heap, default 256m),
# ZK_TICK_MS (tickTime, default 500).
# Deviation: a 500 ms tick (ZooKeeper's default is 2000 ms) lets tests use short
# session timeouts (minSessionTimeout 1000 ms) so expiry tests and failover run fast;
# Kafka's default zk.sessiontimeout.ms of 6000 is inside the allowed range.
set -euo pipefail

readonly ZK_JAR=/usr/share/java/zookeeper.jar
readonly SLF4J_JAR=/usr/share/java/slf4j-simple.jar
readonly MAIN_CLASS=org.apache.zookeeper.server.ZooKeeperServerMain
readonly FOUR_LETTER_WORDS=srvr,ruok,stat,mntr,conf,cons,dump,wchs,envi

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
project_dir=$(dirname "$script_dir")

usage() {
	cat >&2 <<EOF
usage: $0 start|stop|status|run [PORT] [DIR]
  start   install Debian's zookeeper if missing, start a standalone server on
          127.0.0.1:PORT with its data under DIR, wait until it serves
  stop    stop the server started from DIR (SIGTERM, then SIGKILL after 15 s)
  status  exit 0 and print the server's srvr output if it serves, 1 otherwise
  run     write the configuration as start does and run the server in the
          foreground, logging to stdout (for containers)
PORT defaults to 2181, DIR to $project_dir/data/zookeeper-PORT.
EOF
	exit 2
}

log() { printf 'zookeeper.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[[ $# -ge 1 && $# -le 3 ]] || usage
command=$1
port=${2:-2181}
[[ $port =~ ^[0-9]+$ ]] && ((port >= 1 && port <= 65535)) || die "invalid port \"$port\" (want 1-65535)"
dir=${3:-$project_dir/data/zookeeper-$port}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
dir=${dir%/}
cfg=$dir/zoo.cfg
pid_file=$dir/zookeeper.pid
log_file=$dir/zookeeper.log

# four_letter WORD prints the server's answer to a four-letter word, or fails
# when nothing answers on 127.0.0.1:$port within 3 seconds.
four_letter() {
	timeout 3 bash -c '
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf "%s" "$2" >&3
		cat <&3
	' four_letter "$port" "$1" 2>/dev/null
}

# port_open succeeds when something accepts TCP connections on 127.0.0.1:$port.
port_open() {
	timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' port_open "$port" 2>/dev/null
}

# serving succeeds when the server on $port reports Mode: standalone.
serving() {
	local out
	out=$(four_letter srvr) || return 1
	[[ $out == *"Mode: standalone"* ]]
}

# alive PID succeeds while PID is a process that has not exited (a zombie
# counts as exited).
alive() {
	local stat
	[[ $1 =~ ^[0-9]+$ ]] || return 1
	{ stat=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
	stat=${stat##*) }
	[[ -n $stat && ${stat:0:1} != [ZX] ]]
}

# is_ours PID succeeds when PID is a live ZooKeeper started with this $cfg: its
# program is java (not a wrapper such as nohup or setsid whose arguments merely
# contain the command) and its arguments end with the main class and $cfg.
# Read once, this is only a snapshot: while a process execs (bash -> nohup ->
# setsid -> java), /proc/PID/cmdline reads as the old program or, for an
# instant, as empty, so "not ours" never means "exited" (see alive).
is_ours() {
	local pid=$1 args=()
	alive "$pid" || return 1
	mapfile -d '' args <"/proc/$pid/cmdline" 2>/dev/null || return 1
	((${#args[@]} >= 2)) || return 1
	[[ ${args[0]##*/} == java && ${args[-2]} == "$MAIN_CLASS" && ${args[-1]} == "$cfg" ]]
}

# our_pid prints the PID of the server started from $dir, if it runs.
our_pid() {
	local pid
	[[ -f $pid_file ]] || return 1
	pid=$(<"$pid_file")
	is_ours "$pid" || return 1
	printf '%s\n' "$pid"
}

# as_root runs a command as root (directly, or through sudo when available).
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo -n "$@"
	else
		die "need root to run: $* (install Debian's zookeeper package first)"
	fi
}

installed() {
	[[ -f $ZK_JAR ]] && dpkg-query -W -f='${Status}' zookeeper 2>/dev/null | grep -q 'install ok installed'
}

# install_zookeeper installs Debian's zookeeper package unless it is present.
# Another apt run (for example a provisioning step still in progress) is waited
# for through dpkg's lock timeout rather than failing.
install_zookeeper() {
	installed && return 0
	command -v apt-get >/dev/null || die "$ZK_JAR is missing and apt-get is not available; install ZooKeeper 3.8"
	log "installing Debian's zookeeper package (apt-get install -y zookeeper)"
	local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=900
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
	if ! as_root "${apt[@]}" install --no-install-recommends zookeeper; then
		log "install failed; refreshing the package lists and retrying"
		as_root "${apt[@]}" update
		as_root "${apt[@]}" install --no-install-recommends zookeeper
	fi
	installed || die "zookeeper installation did not provide $ZK_JAR"
}

write_config() {
	mkdir -p "$dir/data"
	local tick=${ZK_TICK_MS:-500}
	[[ $tick =~ ^[0-9]+$ ]] && ((tick > 0)) || die "invalid ZK_TICK_MS \"$tick\""
	cat >"$cfg.tmp" <<EOF
# Written by scripts/zookeeper.sh; rewritten at every start.
tickTime=$tick
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
minSessionTimeout=1000
maxSessionTimeout=60000
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=$FOUR_LETTER_WORDS
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
EOF
	mv "$cfg.tmp" "$cfg"
}

# find_started_pid prints the PID of the java process started with $cfg; used
# when setsid had to fork so that $! is not the server itself.
find_started_pid() {
	local p
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		if is_ours "$p"; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	return 1
}

# server_cmd sets CMD to the server's command line.
server_cmd() {
	local classpath=$ZK_JAR
	[[ -f $SLF4J_JAR ]] && classpath=$classpath:$SLF4J_JAR
	CMD=(java
		"-Xmx${ZK_HEAP:-256m}" -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true
		-Dzookeeper.admin.enableServer=false
		"-Dzookeeper.4lw.commands.whitelist=$FOUR_LETTER_WORDS"
		-Dorg.slf4j.simpleLogger.showDateTime=true
		-cp "$classpath" "$MAIN_CLASS" "$cfg")
}

start() {
	local pid
	if pid=$(our_pid); then
		if serving; then
			log "already running (pid $pid) on 127.0.0.1:$port, data in $dir"
			return 0
		fi
		log "pid $pid is starting; waiting for it"
		wait_ready "$pid"
		return
	fi
	if serving; then
		log "a ZooKeeper not started from $dir already serves 127.0.0.1:$port; using it"
		return 0
	fi
	if port_open; then
		die "127.0.0.1:$port is in use by something that is not a standalone ZooKeeper"
	fi
	install_zookeeper
	command -v java >/dev/null || die "java not found (Debian's zookeeper depends on default-jre)"
	write_config
	rm -f "$pid_file"
	server_cmd
	local launcher=()
	command -v setsid >/dev/null && launcher=(setsid)
	printf '\n=== %s starting on 127.0.0.1:%s\n' "$(date -u +%FT%TZ)" "$port" >>"$log_file"
	nohup "${launcher[@]}" "${CMD[@]}" >>"$log_file" 2>&1 </dev/null &
	local launched=$! deadline=$((SECONDS + 20))
	# $! execs nohup, setsid and java in turn (same PID) unless setsid had to
	# fork, in which case $! exits at once and the server is its child. Wait
	# for the java process itself: is_ours is false while the PID still runs
	# a wrapper, and "exited" is decided only by alive, never by a cmdline read.
	local gone=0
	pid=
	while ((SECONDS < deadline)); do
		if is_ours "$launched"; then
			pid=$launched
			break
		fi
		if ! alive "$launched"; then
			# setsid forked and its parent exited, or the server died.
			pid=$(find_started_pid) && break
			pid=
			if ((++gone > 20)); then
				log "the server exited during startup; last lines of $log_file:"
				tail -n 30 "$log_file" >&2 || true
				exit 1
			fi
		fi
		sleep 0.05
	done
	if [[ -z $pid ]]; then
		kill -KILL "$launched" 2>/dev/null || true
		die "the launched process (pid $launched) did not become the server within 20 s; see $log_file"
	fi
	printf '%s\n' "$pid" >"$pid_file"
	wait_ready "$pid"
}

# wait_ready waits until the server PID serves. It fails only with nothing
# left running: when PID has exited (decided by alive, never by reading its
# command line), or after killing it when it did not serve in time.
wait_ready() {
	local pid=$1 deadline=$((SECONDS + ${ZK_START_TIMEOUT:-90}))
	while ((SECONDS < deadline)); do
		if serving; then
			log "running (pid $pid) on 127.0.0.1:$port, data in $dir"
			return 0
		fi
		if ! alive "$pid"; then
			log "the server (pid $pid) exited during startup; last lines of $log_file:"
			tail -n 30 "$log_file" >&2 || true
			rm -f "$pid_file"
			exit 1
		fi
		sleep 0.2
	done
	log "the server (pid $pid) did not report Mode: standalone within ${ZK_START_TIMEOUT:-90} s; stopping it; last lines of $log_file:"
	tail -n 30 "$log_file" >&2 || true
	stop >/dev/null 2>&1 || true
	exit 1
}

stop() {
	local pid
	if ! pid=$(our_pid); then
		rm -f "$pid_file"
		log "not running (from $dir)"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + 15))
	while alive "$pid" && ((SECONDS < deadline)); do
		sleep 0.1
	done
	if alive "$pid"; then
		log "pid $pid ignored SIGTERM for 15 s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		while alive "$pid"; do sleep 0.1; done
	fi
	rm -f "$pid_file"
	log "stopped (pid $pid)"
}

status() {
	local pid out
	if ! pid=$(our_pid); then
		log "not running (from $dir)"
		return 1
	fi
	if ! out=$(four_letter srvr) || [[ $out != *"Mode: standalone"* ]]; then
		log "pid $pid runs but does not serve on 127.0.0.1:$port yet"
		return 1
	fi
	printf 'pid %s on 127.0.0.1:%s, data in %s\n%s\n' "$pid" "$port" "$dir" "$out"
}

# run is start's configuration with the server in the foreground.
run() {
	installed || die "$ZK_JAR is missing: install Debian's zookeeper package"
	write_config
	server_cmd
	exec "${CMD[@]}"
}

case $command in
start) start ;;
run) run ;;
stop) stop ;;
status) status ;;
*) usage ;;
esac
