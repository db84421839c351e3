#!/usr/bin/env bash
# peers.sh: install, start, stop and inspect the paper's peer systems, ActiveMQ and
# RabbitMQ, as plain processes bound to one address with all their state under one
# directory (paper §5 compares Kafka with ActiveMQ and RabbitMQ).
#
# Usage: scripts/peers.sh install|start|run|stop|status activemq|rabbitmq [DIR]
#
#   install  apt-get install the Debian package when missing (non-interactive; the
#            package's own daemon is kept from starting by policy-rc.d); for
#            ActiveMQ also a JDK when javac is missing (the JMS driver is compiled).
#   start    start the server unless it already runs from DIR, and wait until it
#            accepts connections. Idempotent.
#   run      configure as start does, then run the server in the foreground with its
#            output on stdout (the command of a container: scripts/containers.sh).
#   stop     stop the server started from DIR by its PID (RabbitMQ: also the epmd it
#            started). Idempotent: stopping a stopped server succeeds.
#   status   print "NAME running pid=P port=N addr=A dir=DIR" (exit 0) or
#            "NAME stopped dir=DIR" (exit 3).
#
# DIR defaults to ${PEERS_DIR:-${TMPDIR:-/tmp}/kafka-peers}/NAME.
# Environment:
#   PEERS_BIND          address to listen on (default 127.0.0.1)
#   ACTIVEMQ_PORT       OpenWire port (default 61616)
#   ACTIVEMQ_HEAP       JVM heap (default 1G)
#   RABBITMQ_PORT       AMQP port (default 5672)
#   RABBITMQ_DIST_PORT  Erlang distribution port (default RABBITMQ_PORT+20000)
#   RABBITMQ_EPMD_PORT  epmd port (default 4369)
#   RABBITMQ_TOTAL_MEMORY memory RabbitMQ takes as the machine's total (its memory
#                       alarm is 40% of it), e.g. a container's limit "2GB"; default:
#                       what the machine has
#   PEERS_START_TIMEOUT seconds to wait for a server to accept connections (default 120)
#
# The files DIR/pid, DIR/port and DIR/addr describe a running server; DIR/data holds
# everything the server stores (KahaDB for ActiveMQ, Mnesia and queues for RabbitMQ),
# so bytes per message can be measured from it. Logs are DIR/*.out and DIR/log/.
set -euo pipefail

die() { echo "peers.sh: $*" >&2; exit 1; }

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

[ $# -ge 2 ] || usage
ACTION=$1
NAME=$2
case "$NAME" in
activemq) PKG=activemq ;;
rabbitmq) PKG=rabbitmq-server ;;
*) die "unknown peer \"$NAME\" (want activemq or rabbitmq)" ;;
esac
case "$ACTION" in install | start | run | stop | status) ;; *) die "unknown action \"$ACTION\" (want install, start, run, stop or status)" ;; esac

DIR=${3:-${PEERS_DIR:-${TMPDIR:-/tmp}/kafka-peers}/$NAME}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
BIND=${PEERS_BIND:-127.0.0.1}
TIMEOUT=${PEERS_START_TIMEOUT:-120}
# OWNER marks every process this script starts (in its environment), so a PID read
# back from DIR/pid is only ever signalled while it still belongs to this DIR.
OWNER="KAFKA_PEERS_OWNER=$NAME:$DIR"

# ---------------------------------------------------------------- install

installed() { dpkg -s "$PKG" 2>/dev/null | grep -q '^Status: install ok installed'; }

# satisfied: the package is installed, and for ActiveMQ a javac is there too.
satisfied() { installed && { [ "$NAME" != activemq ] || command -v javac >/dev/null 2>&1; }; }

apt_busy() {
	# Another apt or dpkg holds the lock (for example an install running in the
	# background): wait for it instead of starting a second one.
	command -v fuser >/dev/null 2>&1 || return 1
	fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock >/dev/null 2>&1
}

do_install() {
	if satisfied; then
		echo "$NAME: $PKG already installed"
		return 0
	fi
	local deadline=$((SECONDS + 900))
	while apt_busy; do
		[ $SECONDS -lt $deadline ] || die "apt/dpkg stayed busy for 15 minutes"
		echo "$NAME: waiting for another apt/dpkg to finish" >&2
		sleep 5
		if satisfied; then
			echo "$NAME: $PKG installed by the other apt run"
			return 0
		fi
	done
	[ "$(id -u)" -eq 0 ] || die "$PKG is not installed and installing it needs root: sudo apt-get install $PKG"
	# Keep the package from starting its own daemon: policy-rc.d exit 101 makes
	# invoke-rc.d refuse every start. Only a policy this script created is removed.
	local made_policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	local rc=0 extra=(psmisc)
	# The experiments compile their JMS driver with javac at run time.
	if [ "$NAME" = activemq ] && ! command -v javac >/dev/null 2>&1; then
		extra+=(default-jdk-headless)
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends "$PKG" "${extra[@]}"; then
		apt-get update -q && apt-get install -y -q --no-install-recommends "$PKG" "${extra[@]}" || rc=$?
	fi
	[ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
	[ $rc -eq 0 ] || die "apt-get install $PKG failed (exit $rc)"
	satisfied || die "$PKG (or javac) still not installed after apt-get"
	echo "$NAME: installed $PKG"
}

# ---------------------------------------------------------------- processes

# owned PID: true when PID is alive and was started by this script for DIR.
owned() {
	local pid=$1
	[ -n "$pid" ] && [ -r "/proc/$pid/environ" ] || return 1
	tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "$OWNER"
}

read_pid() { [ -s "$DIR/$1" ] && cat "$DIR/$1" || true; }

# port_open ADDR PORT: a TCP connect succeeds.
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# stop_pid PID LABEL: SIGTERM, wait up to 60 s, then SIGKILL.
stop_pid() {
	local pid=$1 label=$2 i
	owned "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 600); do
		owned "$pid" || { echo "$NAME: stopped $label (pid $pid)"; return 0; }
		sleep 0.1
	done
	echo "$NAME: $label (pid $pid) ignored SIGTERM for 60 s; sending SIGKILL" >&2
	kill -KILL "$pid" 2>/dev/null || true
	for i in $(seq 1 100); do
		owned "$pid" || return 0
		sleep 0.1
	done
	die "$label (pid $pid) survived SIGKILL"
}

running() { owned "$(read_pid pid)"; }

# wait_ready PID ADDR PORT LOG READYLOG PATTERN: until the server accepts
# connections and READYLOG holds PATTERN (the server's own "started" line), or fail
# with the tail of its log when it exits or the timeout passes.
wait_ready() {
	local pid=$1 addr=$2 port=$3 log=$4 readylog=$5 pattern=$6
	local deadline=$((SECONDS + TIMEOUT))
	until port_open "$addr" "$port" && grep -qE "$pattern" "$readylog" 2>/dev/null; do
		# Our own child, just started: kill -0 is safe here, and owned would
		# miss it before its exec.
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 40 "$log" >&2 || true
			die "$NAME exited during start-up (log: $log)"
		fi
		if [ $SECONDS -ge $deadline ]; then
			tail -n 40 "$log" >&2 || true
			do_stop >&2 || true
			die "$NAME did not accept connections on $addr:$port within ${TIMEOUT}s (log: $log)"
		fi
		sleep 0.2
	done
}

print_status() {
	if running; then
		echo "$NAME running pid=$(read_pid pid) port=$(cat "$DIR/port") addr=$(cat "$DIR/addr") dir=$DIR"
		return 0
	fi
	echo "$NAME stopped dir=$DIR"
	return 3
}

# ---------------------------------------------------------------- ActiveMQ

activemq_config() {
	local port=$1
	mkdir -p "$DIR/conf" "$DIR/data" "$DIR/tmp"
	# KahaDB, the default store the paper used, with the journal synced
	# periodically: in the paper (§5) every system flushed asynchronously.
	cat >"$DIR/conf/activemq.xml" <<EOF
<beans
  xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <!-- Generated by scripts/peers.sh for $DIR -->
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="peers" useJmx="false"
          persistent="true" dataDirectory="$DIR/data" tmpDataDirectory="$DIR/tmp">
    <persistenceAdapter>
      <kahaDB directory="$DIR/data/kahadb" journalDiskSyncStrategy="periodic" journalDiskSyncInterval="1000"/>
    </persistenceAdapter>
    <transportConnectors>
      <transportConnector name="openwire" uri="tcp://$BIND:$port?maximumConnections=1000&amp;wireFormat.maxFrameSize=104857600"/>
    </transportConnectors>
  </broker>
</beans>
EOF
	# Debian's ActiveMQ logs through log4j 1.2 (slf4j-log4j12).
	cat >"$DIR/conf/log4j.properties" <<EOF
log4j.rootLogger=INFO, logfile
log4j.logger.org.springframework=WARN
log4j.logger.org.apache.xbean=WARN
log4j.appender.logfile=org.apache.log4j.FileAppender
log4j.appender.logfile.file=$DIR/log/activemq.log
log4j.appender.logfile.append=true
log4j.appender.logfile.layout=org.apache.log4j.PatternLayout
log4j.appender.logfile.layout.ConversionPattern=%d | %-5p | %m | %c | %t%n
EOF
	# activemq.jar reads these from activemq.conf; empty files keep it quiet.
	: >"$DIR/conf/login.config"
}

# activemq_prepare writes the configuration and sets CMD to the server's command
# line and PORT to its port.
activemq_prepare() {
	PORT=${ACTIVEMQ_PORT:-61616}
	local jar=/usr/share/activemq/bin/activemq.jar
	[ -e "$jar" ] || die "$jar missing: run '$0 install activemq'"
	command -v java >/dev/null || die "java not found (ActiveMQ needs a JRE)"
	port_open "$BIND" "$PORT" && die "port $BIND:$PORT is already in use (set ACTIVEMQ_PORT)"
	activemq_config "$PORT"
	mkdir -p "$DIR/log"
	: >"$DIR/log/activemq.log" # readiness is read from this start's log only
	echo "$PORT" >"$DIR/port"
	echo "$BIND" >"$DIR/addr"
	CMD=(java "-Xms${ACTIVEMQ_HEAP:-1G}" "-Xmx${ACTIVEMQ_HEAP:-1G}"
		-Djava.awt.headless=true
		-Djava.io.tmpdir="$DIR/tmp"
		-Dlog4j.configuration="file:$DIR/conf/log4j.properties"
		-Dactivemq.home=/usr/share/activemq
		-Dactivemq.base="$DIR"
		-Dactivemq.conf="$DIR/conf"
		-Dactivemq.data="$DIR/data"
		-jar "$jar" start "xbean:file:$DIR/conf/activemq.xml")
}

start_activemq() {
	activemq_prepare
	(
		cd "$DIR"
		exec env "$OWNER" setsid "${CMD[@]}"
	) </dev/null >"$DIR/activemq.out" 2>&1 &
	echo $! >"$DIR/pid"
	wait_ready $! "$BIND" "$PORT" "$DIR/activemq.out" "$DIR/log/activemq.log" 'Apache ActiveMQ .* started'
}

run_activemq() {
	activemq_prepare
	cd "$DIR"
	exec "${CMD[@]}"
}

stop_activemq() {
	stop_pid "$(read_pid pid)" "ActiveMQ"
	rm -f "$DIR/pid"
}

# ---------------------------------------------------------------- RabbitMQ

# rabbitmq_prepare writes the configuration and sets CMD to the server's command
# line (an env invocation), PORT to its port and EPMD_PORT to epmd's.
rabbitmq_prepare() {
	PORT=${RABBITMQ_PORT:-5672}
	local dist=${RABBITMQ_DIST_PORT:-$((PORT + 20000))}
	EPMD_PORT=${RABBITMQ_EPMD_PORT:-4369}
	local server=/usr/lib/rabbitmq/bin/rabbitmq-server
	[ -x "$server" ] || die "$server missing: run '$0 install rabbitmq'"
	command -v epmd >/dev/null || die "epmd not found (it comes with erlang-base)"
	port_open "$BIND" "$PORT" && die "port $BIND:$PORT is already in use (set RABBITMQ_PORT)"
	mkdir -p "$DIR/home" "$DIR/data" "$DIR/log"
	# The Erlang cookie lives in HOME; a private HOME keeps it out of root's.
	if [ ! -s "$DIR/home/.erlang.cookie" ]; then
		(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/home/.erlang.cookie")
	fi
	chmod 400 "$DIR/home/.erlang.cookie"
	cat >"$DIR/rabbitmq.conf" <<EOF
# Generated by scripts/peers.sh for $DIR
listeners.tcp.default = $BIND:$PORT
loopback_users = none
disk_free_limit.absolute = 50MB
log.file.level = info
log.console = false
EOF
	if [ -n "${RABBITMQ_TOTAL_MEMORY:-}" ]; then
		echo "total_memory_available_override_value = $RABBITMQ_TOTAL_MEMORY" >>"$DIR/rabbitmq.conf"
	fi
	echo "[]." >"$DIR/enabled_plugins"
	: >"$DIR/log/rabbit_$PORT@localhost.log" # readiness is read from this start's log only
	: >"$DIR/rabbitmq-env.conf"
	echo "$PORT" >"$DIR/port"
	echo "$BIND" >"$DIR/addr"
	local ip_tuple
	ip_tuple="{$(echo "$BIND" | tr . ,)}"
	CMD=(env
		HOME="$DIR/home"
		RABBITMQ_NODENAME="rabbit_$PORT@localhost"
		RABBITMQ_NODE_IP_ADDRESS="$BIND"
		RABBITMQ_NODE_PORT="$PORT"
		RABBITMQ_DIST_PORT="$dist"
		RABBITMQ_MNESIA_BASE="$DIR/data"
		RABBITMQ_LOG_BASE="$DIR/log"
		RABBITMQ_CONFIG_FILE="$DIR/rabbitmq.conf"
		RABBITMQ_ENABLED_PLUGINS_FILE="$DIR/enabled_plugins"
		RABBITMQ_CONF_ENV_FILE="$DIR/rabbitmq-env.conf"
		RABBITMQ_PID_FILE="$DIR/beam.pid"
		RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface $ip_tuple"
		ERL_EPMD_ADDRESS="$BIND"
		ERL_EPMD_PORT="$EPMD_PORT"
		"$server")
}

# start_epmd PIDFILE starts epmd on the chosen address only, unless one answers
# there, and records its PID in PIDFILE (none: it ends with the container).
start_epmd() {
	local pidfile=$1
	port_open "$BIND" "$EPMD_PORT" && return 0
	(exec env "$OWNER" setsid epmd -address "$BIND" -port "$EPMD_PORT") </dev/null >"$DIR/epmd.out" 2>&1 &
	local i pid=$!
	[ -z "$pidfile" ] || echo "$pid" >"$pidfile"
	for i in $(seq 1 100); do
		port_open "$BIND" "$EPMD_PORT" && return 0
		# Our own child, just started: kill -0, not owned, which misses it
		# until env has exec'd epmd (seen on a loaded fresh machine).
		kill -0 "$pid" 2>/dev/null || die "epmd exited (log: $DIR/epmd.out)"
		sleep 0.1
	done
	die "epmd did not listen on $BIND:$EPMD_PORT within 10 s (log: $DIR/epmd.out)"
}

start_rabbitmq() {
	rabbitmq_prepare
	start_epmd "$DIR/epmd.pid"
	(
		cd "$DIR"
		exec env "$OWNER" setsid "${CMD[@]}"
	) </dev/null >"$DIR/rabbitmq.out" 2>&1 &
	echo $! >"$DIR/pid"
	wait_ready $! "$BIND" "$PORT" "$DIR/rabbitmq.out" "$DIR/log/rabbit_$PORT@localhost.log" 'Server startup complete'
}

run_rabbitmq() {
	rabbitmq_prepare
	start_epmd ""
	cd "$DIR"
	exec "${CMD[@]}"
}

stop_rabbitmq() {
	# The wrapper script turns SIGTERM into an orderly stop of the Erlang VM and
	# waits for it; the VM itself is stopped by its PID if the wrapper is gone.
	stop_pid "$(read_pid pid)" "RabbitMQ"
	stop_pid "$(read_pid beam.pid)" "RabbitMQ VM"
	stop_pid "$(read_pid epmd.pid)" "epmd"
	rm -f "$DIR/pid" "$DIR/beam.pid" "$DIR/epmd.pid"
}

# ---------------------------------------------------------------- actions

do_start() {
	if running; then
		print_status
		return 0
	fi
	installed || die "$PKG is not installed: run '$0 install $NAME'"
	# A stale epmd or VM from a start that failed midway is cleared first.
	do_stop >/dev/null
	"start_$NAME"
	print_status
}

do_run() {
	installed || die "$PKG is not installed: run '$0 install $NAME'"
	"run_$NAME"
}

do_stop() {
	"stop_$NAME"
	echo "$NAME stopped dir=$DIR"
}

case "$ACTION" in
install) do_install ;;
start) do_start ;;
run) do_run ;;
stop) do_stop ;;
status) print_status ;;
esac
