#!/usr/bin/env bash
# containers.sh: run the systems under test (our broker, ZooKeeper, ActiveMQ,
# RabbitMQ) each in its own Docker container, with images built on this machine
# from Debian packages, without any image registry.
#
# Usage: scripts/containers.sh ACTION [SYSTEM DIR [-- ARGS...]]
#
#   install               apt-get install Debian's docker.io and debootstrap when missing.
#   build [SYSTEM...]     build the base image and the images of SYSTEMs (default: all),
#                         each only when its inputs changed (see Images).
#   start                 start dockerd when none answers (see Daemon). Idempotent.
#   start SYSTEM DIR [-- ARGS...]
#                         also build SYSTEM's image if needed, run its container with
#                         DIR mounted at the same path, and wait until it serves.
#                         Prints the status line. Idempotent.
#   stop SYSTEM DIR       stop the container (SIGTERM, 60 s grace), keep its output in
#                         DIR/container.log, and remove it. Idempotent.
#   stop                  end the caller's use of the dockerd this script started, and
#                         stop it unless other callers of 'start' still use it or
#                         containers of this project still run on it. Idempotent.
#   status [SYSTEM DIR]   "SYSTEM running container=C image=I cpus=N memory=M pid=P
#                         addr=A port=N dir=DIR" (exit 0) or "SYSTEM stopped dir=DIR"
#                         (exit 3); without arguments the daemon and every container
#                         of this project.
#   version SYSTEM PACKAGE
#                         print the version of Debian package PACKAGE in SYSTEM's image.
#   clean                 remove every container and image of this project, then stop
#                         the dockerd this script started (whoever still uses it) and
#                         delete its data root.
#
# SYSTEM is kafka (our kafka-server; ARGS are its flags, one of them --port=N),
# zookeeper (ARGS: none; ZK_PORT, default 2181), activemq or rabbitmq (configured
# by scripts/peers.sh exactly as in the process runtime; its environment
# variables, e.g. ACTIVEMQ_PORT, RABBITMQ_PORT, pass through).
#
# Containers: --network host (the servers bind 127.0.0.1 themselves; no bridge,
# no iptables), --init, identical limits --cpus=$CONTAINER_CPUS (default 1) and
# --memory=$CONTAINER_MEMORY (default 2g, no swap), and DIR bind-mounted at its own
# path, so the server's files are measured where the process runtime finds them.
# DIR/container.{name,id,pid,image,image_id,cpus,memory,port} describe a started container
# (pid: its init process on this host, whose /proc/PID/cgroup names the
# container's cgroup, where its CPU time and peak memory are read).
#
# Daemon: when no dockerd answers (DOCKER_HOST, else /var/run/docker.sock), start
# one as a plain process: `dockerd --bridge=none --iptables=false` with its own
# data root ($CONTAINERS_DATA_ROOT, default /var/lib/kafka-containers/docker, where
# the images persist between runs), exec root and PID file under
# $CONTAINERS_RUN (default /run/kafka-containers), listening on the default
# socket so that `docker ps` shows its containers. Only a dockerd this script
# started is ever stopped, by its PID, and only once no other caller of 'start'
# still uses it (each holds a lease, RUN/leases/PID, until its 'stop' or exit).
#
# Images: kafka-exp/base:bookworm from `debootstrap --variant=minbase bookworm`
# (the Debian mirror apt uses here) imported with `docker import`, then
# kafka-exp/SYSTEM:latest from scripts/containers/SYSTEM/Dockerfile (build context
# scripts/; for kafka a directory with the static kafka-server binary). Each image
# carries the label org.netdb11.kafka.inputs, a SHA-256 of its inputs (recipe,
# Dockerfile, the scripts it copies, the binary, the base image's ID); an image
# whose label matches is reused.
#
# Environment: CONTAINER_CPUS, CONTAINER_MEMORY, CONTAINERS_START_TIMEOUT (seconds,
# default 180), DEBIAN_MIRROR (default: the one in apt's sources), GO (default go),
# CONTAINERS_RUN, CONTAINERS_DATA_ROOT, CONTAINERS_SOCKET (a dockerd of its own
# beside the default one), CONTAINERS_LEASE_PID (the process holding the lease).
set -euo pipefail

die() { echo "containers.sh: $*" >&2; exit 1; }
say() { echo "containers.sh: $*" >&2; }

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$SCRIPTS")
SYSTEMS=(kafka zookeeper activemq rabbitmq)
RUN=${CONTAINERS_RUN:-/run/kafka-containers}
DATA_ROOT=${CONTAINERS_DATA_ROOT:-/var/lib/kafka-containers/docker}
CPUS=${CONTAINER_CPUS:-1}
MEMORY=${CONTAINER_MEMORY:-2g}
TIMEOUT=${CONTAINERS_START_TIMEOUT:-180}
# SOCKET is where a dockerd this script starts listens; another socket than the
# default one (CONTAINERS_SOCKET) is for the client here too.
SOCKET=${CONTAINERS_SOCKET:-/var/run/docker.sock}
if [ -n "${CONTAINERS_SOCKET:-}" ]; then export DOCKER_HOST=unix://$SOCKET; fi
SUITE=bookworm
BASE_IMAGE=kafka-exp/base:$SUITE
LABEL=org.netdb11.kafka
# OWNER marks the dockerd this script starts (in its environment), so a PID read
# back from the PID file is only ever signalled while it is still that dockerd.
OWNER="KAFKA_CONTAINERS_OWNER=dockerd:$RUN"

# The docker client of Debian's docker.io matches its daemon (and builds with the
# classic builder, which needs no buildx plugin); any other client is the fallback.
if [ -x /usr/bin/docker ]; then DOCKER_CLI=/usr/bin/docker; else DOCKER_CLI=docker; fi
docker() { command "$DOCKER_CLI" "$@"; }

# ---------------------------------------------------------------- install

do_install() {
	local need=() p
	command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
	command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
	if [ ${#need[@]} -eq 0 ]; then
		echo "docker.io and debootstrap already installed"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || die "installing ${need[*]} needs root: sudo apt-get install ${need[*]}"
	# Keep the packages from starting their own daemons (dockerd, containerd):
	# this script starts dockerd itself. Only a policy this script created is removed.
	local made_policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	local rc=0
	local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=900)
	if ! "${apt[@]}" install --no-install-recommends "${need[@]}"; then
		"${apt[@]}" update && "${apt[@]}" install --no-install-recommends "${need[@]}" || rc=$?
	fi
	[ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
	[ $rc -eq 0 ] || die "apt-get install ${need[*]} failed (exit $rc)"
	for p in dockerd debootstrap; do
		command -v "$p" >/dev/null 2>&1 || die "$p still missing after apt-get install"
	done
	echo "installed ${need[*]}"
}

# ---------------------------------------------------------------- daemon

# answers: a dockerd answers on the client's current DOCKER_HOST.
answers() { timeout 10 "$DOCKER_CLI" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# ours PID: PID is alive and is a dockerd this script started.
ours() {
	local pid=$1
	[ -n "$pid" ] && [ -r "/proc/$pid/environ" ] || return 1
	tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "$OWNER"
}

# our_dockerd prints the PID of the dockerd this script started, if one runs:
# the process carrying the OWNER mark, whatever became of PID files.
our_dockerd() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = dockerd ] || continue
		if ours "${p#/proc/}"; then
			echo "${p#/proc/}"
			return 0
		fi
	done
	return 1
}

# Leases: every caller of 'start' (the process that ran this script, or
# CONTAINERS_LEASE_PID) holds one until its 'stop' or its exit, so that a run
# never stops the dockerd under another run that shares it. A lease is the
# file leases/PID holding the process's start time (PIDs are reused).
LEASE=${CONTAINERS_LEASE_PID:-$PPID}

starttime() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }

lease_take() {
	mkdir -p "$RUN/leases"
	starttime "$LEASE" >"$RUN/leases/$LEASE"
}

lease_drop() { rm -f "$RUN/leases/$LEASE"; }

# live_leases prints how many leases belong to live processes; the others go.
live_leases() {
	local f pid n=0
	for f in "$RUN"/leases/*; do
		[ -e "$f" ] || continue
		pid=${f##*/}
		if [ -s "$f" ] && [ "$(starttime "$pid")" = "$(cat "$f")" ]; then
			n=$((n + 1))
		else
			rm -f "$f"
		fi
	done
	echo "$n"
}

# lock and unlock serialise the daemon's start and stop between concurrent
# invocations of this script.
lock() {
	mkdir -p "$RUN"
	exec 9>"$RUN/lock"
	flock -w 900 9 || die "waited 15 minutes for $RUN/lock"
}
unlock() { exec 9>&-; }

daemon_start() {
	[ "$(id -u)" -ne 0 ] || { lock; lease_take; }
	if answers; then
		[ "$(id -u)" -ne 0 ] || unlock
		return 0
	fi
	if [ -n "${DOCKER_HOST:-}" ] && [ "$DOCKER_HOST" != "unix://$SOCKET" ]; then
		die "no dockerd answers on DOCKER_HOST=$DOCKER_HOST"
	fi
	command -v dockerd >/dev/null 2>&1 || die "dockerd not found: run '$0 install'"
	[ "$(id -u)" -eq 0 ] || die "no dockerd runs and starting one needs root"
	mkdir -p "$RUN" "$DATA_ROOT"
	local log=$RUN/dockerd.log
	# A dockerd of ours that does not answer (still starting, or wedged) is
	# stopped first: a second one on the same data root would fail.
	daemon_stop_ours >/dev/null 2>&1 || true
	# --bridge=none --iptables=false: these machines allow traffic only on
	# loopback and in namespaces we create; containers use the host's network.
	(exec env "$OWNER" setsid dockerd \
		--data-root "$DATA_ROOT" \
		--exec-root "$RUN/exec" \
		--pidfile "$RUN/dockerd.pid" \
		--host "unix://$SOCKET" \
		--bridge=none --iptables=false --ip-masq=false \
		--log-level=warn) </dev/null >"$log" 2>&1 9>&- &
	local pid=$! deadline=$((SECONDS + 60))
	until answers; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$log" >&2 || true
			die "dockerd exited during start-up (log: $log)"
		fi
		if [ $SECONDS -ge $deadline ]; then
			tail -n 20 "$log" >&2 || true
			die "dockerd did not answer within 60 s (log: $log)"
		fi
		sleep 0.2
	done
	unlock
	echo "dockerd started pid=$pid data-root=$DATA_ROOT log=$log"
}

# our_containers: IDs of every container of this project, running or not.
our_containers() { docker ps -aq --filter "label=$LABEL.dir" 2>/dev/null || true; }

daemon_stop_ours() {
	local pid i
	pid=$(our_dockerd) || { echo "dockerd: none started by $0"; return 0; }
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 300); do
		ours "$pid" || break
		sleep 0.1
	done
	if ours "$pid"; then
		say "dockerd (pid $pid) ignored SIGTERM for 30 s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		for i in $(seq 1 100); do ours "$pid" || break; sleep 0.1; done
	fi
	# dockerd stops the containerd it started (under its exec root).
	local cpid
	cpid=$(cat "$RUN/exec/containerd/containerd.pid" 2>/dev/null || true)
	if [ -n "$cpid" ] && [ -r "/proc/$cpid/cmdline" ] && tr '\0' ' ' <"/proc/$cpid/cmdline" | grep -qF "$RUN/exec/containerd"; then
		kill -TERM "$cpid" 2>/dev/null || true
		for i in $(seq 1 100); do [ -e "/proc/$cpid" ] || break; sleep 0.1; done
	fi
	echo "dockerd stopped (pid $pid)"
}

# daemon_stop drops the caller's lease and stops the dockerd this script
# started once no other live caller holds a lease and no container of this
# project runs on it.
daemon_stop() {
	[ "$(id -u)" -eq 0 ] || { echo "dockerd: none started by $0"; return 0; }
	lock
	lease_drop
	if ! our_dockerd >/dev/null; then
		unlock
		echo "dockerd: none started by $0"
		return 0
	fi
	local users left
	users=$(live_leases)
	if [ "$users" -gt 0 ]; then
		unlock
		echo "dockerd left running: $users other user(s) of it ('$0 status')"
		return 0
	fi
	left=$(docker ps -q --filter "label=$LABEL.dir" 2>/dev/null | wc -l)
	if [ "$left" -gt 0 ]; then
		unlock
		echo "dockerd left running: $left container(s) of this project still run ('$0 status')"
		return 0
	fi
	daemon_stop_ours
	unlock
}

# ---------------------------------------------------------------- images

sha() { sha256sum | cut -c1-64; }

image_label() { docker image inspect --format "{{index .Config.Labels \"$LABEL.inputs\"}}" "$1" 2>/dev/null || true; }

# debian_mirror: the Debian archive apt uses on this machine.
debian_mirror() {
	if [ -n "${DEBIAN_MIRROR:-}" ]; then
		echo "$DEBIAN_MIRROR"
		return
	fi
	local m
	m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -v '^\s*#' | grep -oE '(https?|file)://[^ ]*/debian/?( |$)' | head -n 1 | tr -d ' ' || true)
	echo "${m%/}" | grep . || echo http://deb.debian.org/debian
}

build_base() {
	local mirror security inputs
	mirror=$(debian_mirror)
	security=${mirror%/debian}/debian-security
	inputs=$( { declare -f build_base; echo "$SUITE $mirror $security"; } | sha)
	if [ "$(image_label "$BASE_IMAGE")" = "$inputs" ]; then
		say "$BASE_IMAGE up to date"
		return 0
	fi
	command -v debootstrap >/dev/null 2>&1 || die "debootstrap not found: run '$0 install'"
	local root
	root=$(mktemp -d "${TMPDIR:-/tmp}/kafka-base.XXXXXX")
	say "debootstrap --variant=minbase $SUITE from $mirror (a few minutes, once)"
	if ! debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$root.log" 2>&1; then
		tail -n 20 "$root.log" >&2
		rm -rf "$root"
		die "debootstrap failed (log: $root.log)"
	fi
	cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $SUITE main
deb $mirror $SUITE-updates main
deb $security $SUITE-security main
EOF
	# Packages installed in an image must not start their daemons (there is no
	# init system); the containers start the servers themselves.
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$root/etc/apt/apt.conf.d/90kafka-exp"
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	tar -C "$root" -c . | docker import \
		--change "LABEL $LABEL.inputs=$inputs" \
		--change 'ENV LANG=C.UTF-8' \
		--change 'CMD ["/bin/bash"]' \
		- "$BASE_IMAGE" >/dev/null
	rm -rf "$root" "$root.log"
	say "built $BASE_IMAGE"
}

# build_system SYSTEM: its image, from scripts/containers/SYSTEM/Dockerfile.
build_system() {
	local sys=$1 image=kafka-exp/$1:latest ctx base_id inputs tmp=
	local dockerfile=$SCRIPTS/containers/$sys/Dockerfile
	[ -f "$dockerfile" ] || die "$dockerfile missing"
	base_id=$(docker image inspect --format '{{.Id}}' "$BASE_IMAGE")
	if [ "$sys" = kafka ]; then
		tmp=$(mktemp -d "${TMPDIR:-/tmp}/kafka-image.XXXXXX")
		local go=${GO:-go}
		command -v "$go" >/dev/null 2>&1 || go=/usr/local/go/bin/go
		(cd "$REPO" && CGO_ENABLED=0 "$go" build -trimpath -o "$tmp/kafka-server" ./broker/cmd/kafka-server) ||
			{ rm -rf "$tmp"; die "building the static kafka-server failed"; }
		cp "$dockerfile" "$tmp/Dockerfile"
		ctx=$tmp
		inputs=$( { echo "$base_id"; cat "$dockerfile" "$tmp/kafka-server"; } | sha)
	else
		ctx=$SCRIPTS
		inputs=$( { echo "$base_id"; cat "$dockerfile" "$SCRIPTS/peers.sh" "$SCRIPTS/zookeeper.sh"; } | sha)
	fi
	if [ "$(image_label "$image")" = "$inputs" ]; then
		[ -z "$tmp" ] || rm -rf "$tmp"
		say "$image up to date"
		return 0
	fi
	say "building $image"
	local log=${TMPDIR:-/tmp}/kafka-image-$sys.log
	# --network host: apt inside the build reaches the mirror as apt does here.
	if ! DOCKER_BUILDKIT=0 docker build --network host --label "$LABEL.inputs=$inputs" \
		--build-arg "BASE=$BASE_IMAGE" -t "$image" -f "$dockerfile" "$ctx" >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		[ -z "$tmp" ] || rm -rf "$tmp"
		die "building $image failed (log: $log)"
	fi
	[ -z "$tmp" ] || rm -rf "$tmp"
	# The image it replaced, now untagged, goes.
	docker image prune -f --filter "label=$LABEL.inputs" >/dev/null 2>&1 || true
	say "built $image"
}

do_build() {
	local sys
	daemon_start
	build_base
	for sys in "$@"; do
		build_system "$sys"
	done
}

# ---------------------------------------------------------------- containers

check_system() {
	local s
	for s in "${SYSTEMS[@]}"; do [ "$1" = "$s" ] && return 0; done
	die "unknown system \"$1\" (want ${SYSTEMS[*]})"
}

# container_name DIR: one container per system and directory.
container_name() { echo "kafka-exp-$1-$(printf %s "$2" | sha | cut -c1-12)"; }

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

state() { docker inspect --format '{{.State.Status}}' "$1" 2>/dev/null || echo none; }

print_status() {
	local sys=$1 dir=$2 name
	name=$(container_name "$sys" "$dir")
	if [ "$(state "$name")" = running ]; then
		echo "$sys running container=$name image=$(cat "$dir/container.image") cpus=$(cat "$dir/container.cpus")" \
			"memory=$(cat "$dir/container.memory") pid=$(cat "$dir/container.pid") addr=127.0.0.1" \
			"port=$(cat "$dir/container.port") dir=$dir"
		return 0
	fi
	echo "$sys stopped dir=$dir"
	return 3
}

# zk_serving PORT: the ZooKeeper there reports Mode: standalone (it accepts
# connections earlier, before it serves sessions).
zk_serving() {
	timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf srvr >&3 && cat <&3' zk "$1" 2>/dev/null |
		grep -q 'Mode: standalone'
}

# wait_ready NAME PORT [LOG PATTERN]: until PORT accepts connections (and LOG
# holds PATTERN, the server's own "started" line; LOG "zookeeper": srvr says it
# serves), or fail with the container's output when it exits or the timeout passes.
wait_ready() {
	local name=$1 port=$2 log=${3:-} pattern=${4:-} deadline=$((SECONDS + TIMEOUT))
	until port_open 127.0.0.1 "$port" && case "$log" in
		"") true ;;
		zookeeper) zk_serving "$port" ;;
		*) grep -qE "$pattern" "$log" 2>/dev/null ;;
		esac; do
		if [ "$(state "$name")" != running ]; then
			docker logs --tail 40 "$name" >&2 2>&1 || true
			die "$name exited during start-up"
		fi
		if [ $SECONDS -ge $deadline ]; then
			docker logs --tail 40 "$name" >&2 2>&1 || true
			die "$name did not serve on 127.0.0.1:$port within ${TIMEOUT}s"
		fi
		sleep 0.2
	done
}

do_start() {
	local sys=$1 dir=$2
	shift 2
	[ $# -eq 0 ] || [ "$1" != -- ] || shift
	check_system "$sys"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local name image=kafka-exp/$sys:latest
	name=$(container_name "$sys" "$dir")
	daemon_start
	if [ "$(state "$name")" = running ]; then
		print_status "$sys" "$dir"
		return 0
	fi
	do_build "$sys"
	docker rm -f "$name" >/dev/null 2>&1 || true
	local env=() args=() port log= pattern= v
	case "$sys" in
	kafka)
		args=("$@")
		port=$(printf '%s\n' "$@" | sed -n 's/^--port=//p' | tail -n 1)
		[ -n "$port" ] || die "kafka needs --port=N among its flags"
		;;
	zookeeper)
		port=${ZK_PORT:-2181}
		args=("$port" "$dir")
		log=zookeeper
		env=(-e "ZK_HEAP=${ZK_HEAP:-256m}" -e "ZK_TICK_MS=${ZK_TICK_MS:-500}")
		;;
	activemq | rabbitmq)
		args=("$dir")
		for v in PEERS_BIND ACTIVEMQ_PORT ACTIVEMQ_HEAP RABBITMQ_PORT RABBITMQ_DIST_PORT RABBITMQ_EPMD_PORT; do
			[ -z "${!v:-}" ] || env+=(-e "$v=${!v}")
		done
		if [ "$sys" = activemq ]; then
			port=${ACTIVEMQ_PORT:-61616}
			log=$dir/log/activemq.log pattern='Apache ActiveMQ .* started'
		else
			port=${RABBITMQ_PORT:-5672}
			log=$dir/log/rabbit_$port@localhost.log pattern='Server startup complete'
			# RabbitMQ's memory alarm is 40% of what it takes as the machine's
			# memory: the container's limit, not the host's.
			env+=(-e "RABBITMQ_TOTAL_MEMORY=$(echo "$MEMORY" | tr a-z A-Z)B")
		fi
		;;
	esac
	port_open 127.0.0.1 "$port" && die "port 127.0.0.1:$port is already in use"
	case "$log" in "" | zookeeper) ;; *) mkdir -p "$(dirname "$log")" && : >"$log" ;; esac
	echo "$image" >"$dir/container.image"
	echo "$CPUS" >"$dir/container.cpus"
	echo "$MEMORY" >"$dir/container.memory"
	echo "$port" >"$dir/container.port"
	echo "$name" >"$dir/container.name"
	docker run -d --name "$name" \
		--label "$LABEL.dir=$dir" --label "$LABEL.system=$sys" \
		--network host --init \
		--cpus "$CPUS" --memory "$MEMORY" --memory-swap "$MEMORY" \
		--stop-timeout 60 \
		-v "$dir:$dir" \
		"${env[@]}" "$image" "${args[@]}" >"$dir/container.id"
	docker inspect --format '{{.Image}}' "$name" >"$dir/container.image_id"
	docker inspect --format '{{.State.Pid}}' "$name" >"$dir/container.pid"
	wait_ready "$name" "$port" "$log" "$pattern"
	print_status "$sys" "$dir"
}

do_stop_container() {
	local sys=$1 dir=$2 name
	check_system "$sys"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	name=$(container_name "$sys" "$dir")
	if ! answers; then
		echo "$sys stopped dir=$dir"
		return 0
	fi
	if [ "$(state "$name")" != none ]; then
		docker stop -t 60 "$name" >/dev/null 2>&1 || true
		docker logs "$name" >"$dir/container.log" 2>&1 || true
		docker rm -f "$name" >/dev/null
	fi
	rm -f "$dir/container.pid"
	echo "$sys stopped dir=$dir"
}

daemon_status() {
	local pid
	if ! answers; then
		echo "dockerd stopped"
		return 3
	fi
	if pid=$(our_dockerd); then
		echo "dockerd running pid=$pid started-by=$0 users=$(live_leases) data-root=$DATA_ROOT"
	else
		echo "dockerd running (not started by $0)"
	fi
	docker ps -a --filter "label=$LABEL.dir" --format '{{.Names}} {{.Status}} {{.Image}} {{.Label "'"$LABEL.dir"'"}}'
	docker images --format '{{.Repository}}:{{.Tag}} {{.ID}} {{.Size}}' 'kafka-exp/*'
}

do_clean() {
	[ "$(id -u)" -ne 0 ] || lock
	if answers; then
		local ids
		ids=$(our_containers)
		[ -z "$ids" ] || docker rm -f $ids >/dev/null
		ids=$(docker images -q --filter "label=$LABEL.inputs" | sort -u)
		[ -z "$ids" ] || docker rmi -f $ids >/dev/null
		echo "removed the containers and images of this project"
	fi
	if our_dockerd >/dev/null; then
		daemon_stop_ours
		rm -rf "$DATA_ROOT" "$RUN/leases"
		echo "removed $DATA_ROOT"
	fi
}

# ---------------------------------------------------------------- actions

[ $# -ge 1 ] || usage
ACTION=$1
shift
case "$ACTION" in
install) do_install ;;
build)
	[ $# -gt 0 ] || set -- "${SYSTEMS[@]}"
	for s in "$@"; do check_system "$s"; done
	do_build "$@"
	;;
start)
	if [ $# -eq 0 ]; then
		daemon_start
	else
		[ $# -ge 2 ] || usage
		do_start "$@"
	fi
	;;
stop)
	if [ $# -eq 0 ]; then
		daemon_stop
	else
		[ $# -eq 2 ] || usage
		do_stop_container "$@"
	fi
	;;
status)
	if [ $# -eq 0 ]; then
		daemon_status
	else
		[ $# -eq 2 ] || usage
		check_system "$1"
		print_status "$1" "$(cd "$2" 2>/dev/null && pwd || echo "$2")"
	fi
	;;
version)
	[ $# -eq 2 ] || usage
	check_system "$1"
	answers || die "no dockerd answers: run '$0 start'"
	docker run --rm --network none --entrypoint dpkg-query "kafka-exp/$1:latest" -W -f '${Version}' "$2"
	echo
	;;
clean) do_clean ;;
-h | --help | help) usage ;;
*) die "unknown action \"$ACTION\" (want install, build, start, stop, status, version or clean)" ;;
esac
