#!/usr/bin/env bash
# testbed.sh: the paper's testbed emulated on one Linux machine.
#
# Paper §5: the broker ran on one machine and the producer or consumer on
# another, joined by a 1 Gb link. Here every "host" is a network namespace,
# hosts are joined by veth links shaped with tbf, and each host is pinned to a
# CPU (broker hosts core 0, the client host core 1) through a cpuset cgroup
# and taskset, optionally with a memory limit. Traffic never leaves the
# namespaces: no address or route is added to the root namespace, and the
# hosts have no default route.
#
# Usage:
#   testbed.sh install       apt-get install what the testbed and the fault suite
#                            run when missing: iproute2 (ip, tc), iptables,
#                            util-linux (taskset, flock); make test and make
#                            faults call it
#   testbed.sh up [--link=1gbit|10gbit|none] [--hosts=broker,client | --brokers=N]
#                 [--mem=SIZE | --mem=HOST=SIZE,...] [--cpus=HOST=CPU,...]
#   testbed.sh down          remove everything up made (idempotent)
#   testbed.sh status        show what exists
#   testbed.sh info          run id, link and hosts, machine-readable
#   testbed.sh exec HOST -- CMD [ARG...]
#   testbed.sh addr HOST     print the host's address
#   testbed.sh stats HOST    print bytes SENT RECEIVED on the host's link
#   testbed.sh link HOST     print NS DEV PEER_NS PEER_DEV: the qdiscs that count
#                            what the host sends and what it receives
#   testbed.sh twodc up|shape|down   two datacenters, live and analysis (below)
#   testbed.sh cluster up [--brokers=N] ...   ZooKeeper and brokers on their hosts, faults
#                            by hand (kill, pause, isolate, heal, ...): cluster --help
#
# Topology: two hosts share one veth pair; three or more hosts each get a
# veth to a bridge in a switch namespace (a star). tbf shapes the egress of
# both ends of every link, so both directions run at the link rate.
# --brokers=N names the hosts broker1..brokerN and client (N=1: broker, client).
#
# Environment:
#   TESTBED_STATE   state directory (default: <repo>/data/testbed); one run per
#                   directory; down, exec, addr and stats find the run there.
#   TESTBED_SUBNET  first three octets of the /24 used inside (default 10.211.0)
#   TESTBED_ID      run id (default random); names: tb-ID-HOST, cgroup testbed-ID
#   TESTBED_FAIL_AT fail up on purpose after a stage (netns|links|shape|cgroups),
#                   for tests of the cleanup trap.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE_DIR=${TESTBED_STATE:-$ROOT/data/testbed}
STATE=$STATE_DIR/state
SUBNET=${TESTBED_SUBNET:-10.211.0}
CGROOT=/sys/fs/cgroup

die() {
	echo "testbed: $*" >&2
	exit 1
}

say() { echo "testbed: $*" >&2; }

usage() {
	sed -n '/^# Usage:/,/^# Topology:/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

need_root() {
	if ((EUID != 0)); then
		die "must run as root: it creates network namespaces, veth links, tc qdiscs and cgroups (run it with sudo)"
	fi
	local tool
	for tool in ip tc taskset flock iptables; do
		command -v "$tool" >/dev/null || die "missing '$tool' (scripts/testbed.sh install, or apt-get install iproute2 iptables util-linux)"
	done
}

# cmd_install installs the tools need_root wants, from Debian's packages,
# when one is missing (a fresh machine has no iptables: the fault suite's
# partitions, and its tests, need it inside the hosts' namespaces).
cmd_install() {
	local tool pkgs=()
	for tool in ip:iproute2 tc:iproute2 iptables:iptables taskset:util-linux flock:util-linux; do
		command -v "${tool%%:*}" >/dev/null || pkgs+=("${tool#*:}")
	done
	((${#pkgs[@]})) || return 0
	((EUID == 0)) || die "missing ${pkgs[*]}; installing needs root: sudo apt-get install ${pkgs[*]}"
	command -v apt-get >/dev/null || die "missing ${pkgs[*]} and apt-get is not available"
	mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
	say "installing ${pkgs[*]} (apt-get install -y)"
	local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=900)
	"${apt[@]}" install --no-install-recommends "${pkgs[@]}" ||
		{ "${apt[@]}" update && "${apt[@]}" install --no-install-recommends "${pkgs[@]}"; } ||
		die "apt-get install ${pkgs[*]} failed"
}

journal() { echo "$*" >>"$STATE"; }

# field KEY N: field N of every journal line starting with KEY.
field() {
	[[ -f $STATE ]] || return 0
	awk -v k="$1" -v n="$2" '$1 == k { print $n }' "$STATE"
}

lock() {
	mkdir -p "$STATE_DIR"
	exec 9>>"$STATE_DIR/lock"
	flock -w 60 9 || die "another testbed.sh holds $STATE_DIR/lock"
}

# ---------------------------------------------------------------- up

# expand_cpus "0-2,5" -> "0 1 2 5"
expand_cpus() {
	local part out=() parts
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		if [[ $part == *-* ]]; then
			out+=($(seq "${part%-*}" "${part#*-}"))
		else
			out+=("$part")
		fi
	done
	echo "${out[@]}"
}

# lookup "a=1,b=2" KEY -> value, or the whole spec when it has no '='.
lookup() {
	local spec=$1 key=$2 kv
	[[ -n $spec ]] || return 0
	if [[ $spec != *=* ]]; then
		echo "$spec"
		return 0
	fi
	IFS=, read -ra kvs <<<"$spec"
	for kv in "${kvs[@]}"; do
		[[ ${kv%%=*} == "$key" ]] && echo "${kv#*=}"
	done
	return 0
}

# caller_cgroup CONTROLLER: the cgroup path of this process in a v1 hierarchy.
caller_cgroup() {
	awk -F: -v c="$1" '{ split($2, cs, ","); for (i in cs) if (cs[i] == c) print $3 }' /proc/$$/cgroup
}

cgmode() {
	if [[ -f $CGROOT/cgroup.controllers ]]; then
		echo v2
	elif [[ -f $CGROOT/cpuset/cpuset.cpus ]]; then
		echo v1
	else
		echo none
	fi
}

# mkcg DIR: journal then create a cgroup directory.
mkcg() {
	journal "created cg $1"
	mkdir "$1"
}

fail_at() {
	if [[ ${TESTBED_FAIL_AT:-} == "$1" ]]; then
		die "injected failure after stage '$1' (TESTBED_FAIL_AT)"
	fi
}

up_failed() {
	local rc=$?
	trap - EXIT
	say "up failed; removing what it made"
	teardown
	rm -f "$STATE_DIR/lock"
	rmdir "$STATE_DIR" 2>/dev/null || true
	exit $((rc == 0 ? 1 : rc))
}

cmd_up() {
	local link=1gbit hosts_spec="" brokers="" mem="" cpus_spec="" arg
	while (($#)); do
		arg=$1
		shift
		case $arg in
		--link=*) link=${arg#*=} ;;
		--hosts=*) hosts_spec=${arg#*=} ;;
		--brokers=*) brokers=${arg#*=} ;;
		--mem=*) mem=${arg#*=} ;;
		--cpus=*) cpus_spec=${arg#*=} ;;
		--link | --hosts | --brokers | --mem | --cpus)
			(($#)) || die "$arg needs a value"
			set -- "$arg=$1" "${@:2}"
			;;
		*) die "up: unknown argument '$arg'" ;;
		esac
	done

	# tbf: a bucket of 1 ms at the rate (at least 64 KiB, so a GSO packet
	# passes whole instead of being cut up in software) and a 5 ms queue, like
	# a switch port's buffer. A bulk TCP transfer then fills ~99.5% of the
	# link (~95% as payload after the 66 bytes of headers per 1514-byte frame).
	local rate burst
	case $link in
	1gbit) rate=1gbit burst=125000 ;;
	10gbit) rate=10gbit burst=1250000 ;;
	none) rate="" ;;
	*) die "--link must be 1gbit, 10gbit or none, not '$link'" ;;
	esac

	local -a hosts
	if [[ -n $brokers && -n $hosts_spec ]]; then
		die "give --hosts or --brokers, not both"
	elif [[ -n $brokers ]]; then
		[[ $brokers =~ ^[1-9]$ ]] || die "--brokers must be 1..9, not '$brokers'"
		if ((brokers == 1)); then
			hosts=(broker client)
		else
			local i
			for ((i = 1; i <= brokers; i++)); do hosts+=("broker$i"); done
			hosts+=(client)
		fi
	else
		IFS=, read -ra hosts <<<"${hosts_spec:-broker,client}"
	fi
	((${#hosts[@]} >= 2 && ${#hosts[@]} <= 20)) || die "need 2..20 hosts, got ${#hosts[@]}"
	local h seen=" "
	for h in "${hosts[@]}"; do
		[[ $h =~ ^[a-z][a-z0-9]{0,11}$ ]] || die "bad host name '$h' (want [a-z][a-z0-9]{0,11})"
		[[ $seen != *" $h "* ]] || die "host '$h' given twice"
		seen+="$h "
	done
	[[ $SUBNET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "TESTBED_SUBNET must be three octets, not '$SUBNET'"
	if [[ -n $mem ]]; then
		local m
		for h in "${hosts[@]}"; do
			m=$(lookup "$mem" "$h")
			[[ -z $m || $m =~ ^[0-9]+[kKmMgG]?$ ]] || die "bad memory size '$m' for $h (want e.g. 512m, 2g)"
		done
	fi

	# CPUs: broker hosts on the first allowed core, the others on the second.
	local -a allowed
	read -ra allowed <<<"$(expand_cpus "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$$/status)")"
	local -A cpu
	for h in "${hosts[@]}"; do
		cpu[$h]=$(lookup "$cpus_spec" "$h")
		if [[ -z ${cpu[$h]} ]]; then
			if [[ $h == broker* ]]; then
				cpu[$h]=${allowed[0]}
			else
				cpu[$h]=${allowed[1 % ${#allowed[@]}]}
			fi
		fi
		[[ " ${allowed[*]} " == *" ${cpu[$h]} "* ]] || die "cpu '${cpu[$h]}' for $h is not one of: ${allowed[*]}"
	done

	# The range is private to the namespaces, but refuse one the machine uses.
	if ip -o -4 addr show | grep -q " inet $SUBNET\."; then
		die "an interface in the root namespace already uses $SUBNET.0/24; set TESTBED_SUBNET"
	fi
	if ip -4 route show | awk '{print $1}' | grep -q "^$SUBNET\."; then
		die "the root namespace routes $SUBNET.0/24; set TESTBED_SUBNET"
	fi

	lock
	[[ ! -s $STATE ]] || die "already up (state in $STATE); run 'down' first or set TESTBED_STATE"
	local id=${TESTBED_ID:-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')}
	[[ $id =~ ^[a-z0-9]{1,8}$ ]] || die "bad TESTBED_ID '$id' (want [a-z0-9]{1,8})"
	if ip netns list | grep -q "^tb-$id-"; then
		die "namespaces of run $id already exist"
	fi

	trap up_failed EXIT
	trap 'exit 130' INT TERM
	journal "run $id"
	journal "link $link"

	# Hosts: one namespace each, loopback up, no IPv6 (no stray packets on the link).
	local ns
	for h in "${hosts[@]}"; do
		ns=tb-$id-$h
		journal "created ns $ns"
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		noipv6 "$ns"
	done
	fail_at netns

	# Links. peer: the namespace and device whose egress carries what h receives.
	local -A addr peerns peerdev
	local n=1 sw=tb-$id-sw
	if ((${#hosts[@]} == 2)); then
		ip -n "tb-$id-${hosts[0]}" link add eth0 type veth peer name eth0 netns "tb-$id-${hosts[1]}"
		peerns[${hosts[0]}]=tb-$id-${hosts[1]} peerdev[${hosts[0]}]=eth0
		peerns[${hosts[1]}]=tb-$id-${hosts[0]} peerdev[${hosts[1]}]=eth0
	else
		journal "created ns $sw"
		ip netns add "$sw"
		noipv6 "$sw"
		ip -n "$sw" link add br0 type bridge
		ip -n "$sw" link set br0 up
		for h in "${hosts[@]}"; do
			ip -n "$sw" link add "p-$h" type veth peer name eth0 netns "tb-$id-$h"
			ip -n "$sw" link set "p-$h" master br0 up
			peerns[$h]=$sw peerdev[$h]=p-$h
		done
	fi
	for h in "${hosts[@]}"; do
		ns=tb-$id-$h
		addr[$h]=$SUBNET.$n
		n=$((n + 1))
		ip -n "$ns" addr add "${addr[$h]}/24" dev eth0
		ip -n "$ns" link set eth0 up
	done
	wait_links "$id" "${hosts[@]}"
	fail_at links

	# Shaping: tbf on the egress of both ends of every link.
	if [[ -n $rate ]]; then
		for h in "${hosts[@]}"; do
			tc -n "tb-$id-$h" qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 5ms
			if [[ ${peerns[$h]} == "$sw" ]]; then
				tc -n "$sw" qdisc add dev "${peerdev[$h]}" root tbf rate "$rate" burst "$burst" latency 5ms
			fi
		done
	fi
	fail_at shape

	make_cgroups "$id" "$mem" hosts cpu
	fail_at cgroups

	for h in "${hosts[@]}"; do
		journal "host $h tb-$id-$h ${addr[$h]} ${cpu[$h]} ${peerns[$h]} ${peerdev[$h]}"
	done
	journal ready
	trap - EXIT INT TERM
	cmd_info
}

# wait_links ID HOST...: wait until every host's eth0 has its carrier.
wait_links() {
	local id=$1 h try
	shift
	for h in "$@"; do
		for try in $(seq 50); do
			ip -n "tb-$id-$h" link show dev eth0 | grep -q LOWER_UP && continue 2
			sleep 0.1
		done
		die "link of $h did not come up"
	done
}

noipv6() {
	if [[ -d /proc/sys/net/ipv6 ]]; then
		ip netns exec "$1" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6'
	fi
}

# make_cgroups ID MEMSPEC HOSTS_ARRAY_NAME CPU_MAP_NAME
# v1: cpuset (and memory when asked) under this process's own cgroup in each
# hierarchy, so the hosts stay inside whatever contains the caller.
# v2: a child of the root (the only place both controllers can be enabled
# without moving the caller).
make_cgroups() {
	local id=$1 mem=$2
	local -n hs=$3 cpus=$4
	local mode h m dir base
	mode=$(cgmode)
	case $mode in
	v1)
		base=$CGROOT/cpuset$(caller_cgroup cpuset)
		base=${base%/}/testbed-$id
		mkcg "$base"
		cat "$(dirname "$base")/cpuset.cpus" >"$base/cpuset.cpus"
		cat "$(dirname "$base")/cpuset.mems" >"$base/cpuset.mems"
		for h in "${hs[@]}"; do
			mkcg "$base/$h"
			echo "${cpus[$h]}" >"$base/$h/cpuset.cpus"
			cat "$base/cpuset.mems" >"$base/$h/cpuset.mems"
			journal "cgroup $h $base/$h"
		done
		if [[ -n $mem ]]; then
			[[ -f $CGROOT/memory/memory.limit_in_bytes ]] || die "--mem needs the memory cgroup controller"
			base=$CGROOT/memory$(caller_cgroup memory)
			base=${base%/}/testbed-$id
			mkcg "$base"
			for h in "${hs[@]}"; do
				m=$(lookup "$mem" "$h")
				[[ -n $m ]] || continue
				mkcg "$base/$h"
				echo "$m" >"$base/$h/memory.limit_in_bytes"
				journal "cgroup $h $base/$h"
			done
		fi
		;;
	v2)
		local want="+cpuset"
		[[ -z $mem ]] || want+=" +memory"
		if ! echo "$want" >"$CGROOT/cgroup.subtree_control" 2>/dev/null; then
			[[ -z $mem ]] || die "--mem: cannot enable the memory controller in $CGROOT"
			say "warning: cannot enable cpuset in $CGROOT; pinning with taskset only"
			return 0
		fi
		base=$CGROOT/testbed-$id
		mkcg "$base"
		echo "$want" >"$base/cgroup.subtree_control"
		for h in "${hs[@]}"; do
			dir=$base/$h
			mkcg "$dir"
			echo "${cpus[$h]}" >"$dir/cpuset.cpus"
			m=$(lookup "$mem" "$h")
			[[ -z $m ]] || echo "$m" >"$dir/memory.max"
			journal "cgroup $h $dir"
		done
		;;
	none)
		[[ -z $mem ]] || die "--mem needs cgroups, none found under $CGROOT"
		say "warning: no cpuset cgroup; pinning with taskset only"
		;;
	esac
}

# ---------------------------------------------------------------- down

# teardown: kill what runs in the run's namespaces and cgroups, then delete
# them in reverse order of creation. Never fails; safe to repeat.
teardown() {
	set +e
	[[ -f $STATE ]] || return 0
	local -a nss cgs pids
	mapfile -t nss < <(awk '$1 == "created" && $2 == "ns" { print $3 }' "$STATE" | tac)
	mapfile -t cgs < <(awk '$1 == "created" && $2 == "cg" { print $3 }' "$STATE" | tac)
	local sig try ns cg
	for sig in TERM KILL; do
		for try in $(seq 30); do
			pids=()
			for ns in "${nss[@]}"; do
				[[ -e /run/netns/$ns ]] && pids+=($(ip netns pids "$ns" 2>/dev/null))
			done
			for cg in "${cgs[@]}"; do
				[[ -f $cg/cgroup.procs ]] && pids+=($(cat "$cg/cgroup.procs"))
			done
			((${#pids[@]})) || break 2
			((try == 1)) && kill "-$sig" $(printf '%s\n' "${pids[@]}" | sort -u) 2>/dev/null
			sleep 0.1
		done
	done
	((${#pids[@]} == 0)) || say "warning: processes still running: ${pids[*]}"
	for ns in "${nss[@]}"; do
		[[ -e /run/netns/$ns ]] && ip netns del "$ns"
	done
	for cg in "${cgs[@]}"; do
		for try in $(seq 20); do
			[[ -d $cg ]] || break
			rmdir "$cg" 2>/dev/null && break
			sleep 0.1
		done
		[[ ! -d $cg ]] || say "warning: cannot remove cgroup $cg"
	done
	rm -f "$STATE"
	set -e
}

cmd_down() {
	[[ -d $STATE_DIR ]] || return 0
	lock
	teardown
	rm -f "$STATE_DIR/lock"
	rmdir "$STATE_DIR" 2>/dev/null || true
}

# ---------------------------------------------------------------- queries

need_up() {
	[[ -f $STATE ]] && grep -qx ready "$STATE" || die "not up (no run in $STATE_DIR)"
}

# host_field HOST N: field N of the host's journal line (3 ns, 4 addr, 5 cpu, 6 peer ns, 7 peer dev).
host_field() {
	local v
	v=$(awk -v h="$1" -v n="$2" '$1 == "host" && $2 == h { print $n }' "$STATE")
	[[ -n $v ]] || die "no host '$1' (hosts: $(field host 2 | tr '\n' ' '))"
	echo "$v"
}

cmd_info() {
	need_up
	echo "run $(field run 2)"
	echo "link $(field link 2)"
	awk '$1 == "host" { print "host", $2, $4, $5, $3 }' "$STATE"
}

cmd_addr() {
	(($# == 1)) || usage
	need_up
	host_field "$1" 4
}

cmd_exec() {
	(($# >= 1)) || usage
	local h=$1 ns cpu cg
	shift
	[[ ${1:-} == -- ]] && shift
	(($#)) || die "exec: no command"
	need_up
	# A shared hold on the state lock until the command is inside the host's
	# namespace: down (exclusive) either finds it there and kills it, or has
	# finished first and need_up below refuses. The lock's descriptor goes
	# through ip and taskset and is closed by the last shell before the
	# command, so the command itself never holds the lock.
	exec 9>>"$STATE_DIR/lock"
	flock -s -w 60 9 || die "another testbed.sh holds $STATE_DIR/lock"
	need_up
	ns=$(host_field "$h" 3)
	cpu=$(host_field "$h" 5)
	for cg in $(awk -v h="$h" '$1 == "cgroup" && $2 == h { print $3 }' "$STATE"); do
		echo $$ >"$cg/cgroup.procs" || die "cannot join cgroup $cg"
	done
	exec ip netns exec "$ns" taskset -c "$cpu" bash -c 'exec 9>&-; exec "$@"' testbed-exec "$@"
}

# qdisc_bytes NS DEV: bytes sent through the root qdisc, counted per frame
# (GSO packets counted as the segments they become, with their headers).
qdisc_bytes() {
	tc -n "$1" -s qdisc show dev "$2" | awk '/^ *Sent / { print $2; exit }'
}

# cmd_stats HOST: bytes the host sent and received on its link. With shaping
# these are the tbf counters of both ends (every frame with its Ethernet
# header); without, the interface counters (which count a GSO packet's
# headers once).
cmd_stats() {
	(($# == 1)) || usage
	need_up
	local ns pns pdev
	ns=$(host_field "$1" 3)
	pns=$(host_field "$1" 6)
	pdev=$(host_field "$1" 7)
	if [[ $(field link 2) != none ]]; then
		echo "$(qdisc_bytes "$ns" eth0) $(qdisc_bytes "$pns" "$pdev")"
	else
		ip netns exec "$ns" cat /sys/class/net/eth0/statistics/tx_bytes /sys/class/net/eth0/statistics/rx_bytes | paste -sd' '
	fi
}

# cmd_link HOST: where the host's link counters are, so a caller can read them
# with one `tc -n NS -s qdisc show dev DEV` each instead of a run of this script.
cmd_link() {
	(($# == 1)) || usage
	need_up
	echo "$(host_field "$1" 3) eth0 $(host_field "$1" 6) $(host_field "$1" 7)"
}

cmd_status() {
	if [[ ! -f $STATE ]]; then
		echo "not up (no run in $STATE_DIR)"
	else
		echo "run $(field run 2) link $(field link 2) state $STATE"
		grep -qx ready "$STATE" || echo "INCOMPLETE: up did not finish"
		local ns cg h
		for ns in $(field created 3 | grep '^tb-'); do
			if [[ -e /run/netns/$ns ]]; then
				echo "netns  $ns: $(ip -n "$ns" -br link show | awk '$1 != "lo" { printf "%s %s; ", $1, $2 }')"
				tc -n "$ns" qdisc show | awk '/tbf/ { print "       " $0 }'
			else
				echo "netns  $ns: MISSING"
			fi
		done
		for cg in $(awk '$1 == "created" && $2 == "cg" { print $3 }' "$STATE"); do
			if [[ -d $cg ]]; then
				echo "cgroup $cg: $(wc -l <"$cg/cgroup.procs") processes"
			else
				echo "cgroup $cg: MISSING"
			fi
		done
		for h in $(field host 2); do
			echo "host   $h addr $(host_field "$h" 4) cpu $(host_field "$h" 5)"
		done
	fi
	local others
	others=$(ip netns list | awk '{print $1}' | grep '^tb-' | grep -v "^tb-$(field run 2)-" || true)
	[[ -z $others ]] || echo "namespaces of other runs: $(echo "$others" | tr '\n' ' ')"
}

# ---------------------------------------------------------------- cluster
#
# Cluster usage (issue 13: the fault-injection cluster, by hand):
#   testbed.sh cluster up [--brokers=N] [--link=none|1gbit|10gbit] [--bin=DIR]
#                         [--zk.sessiontimeout.ms=MS] [--KEY=VALUE ...]
#       hosts zookeeper, broker1..brokerN (default 3) and client; a standalone
#       ZooKeeper on zookeeper:2181 and bin/kafka-server on each broker host
#       (brokerid = N, port 9092); every other --KEY=VALUE is a server.properties
#       key given to every broker (e.g. --min.insync.replicas=2). Data and logs:
#       $TESTBED_STATE/cluster. Prints the addresses.
#   testbed.sh cluster down            stop everything and remove it, data included
#   testbed.sh cluster status          processes, iptables rules and addresses
#   testbed.sh cluster kill|stop|pause|resume|start HOST
#       SIGKILL, clean stop (SIGTERM, waits), SIGSTOP, SIGCONT, (re)start the
#       server of HOST (brokerN or zookeeper) on its data
#   testbed.sh cluster isolate HOST [PEER ...]
#       drop, inside HOST, every packet to and from each PEER (default: every
#       other host); Jepsen 2013's partition: cluster isolate broker1 broker2 broker3
#   testbed.sh cluster heal [HOST ...] flush what isolate added (default: every host)
#   testbed.sh cluster shape HOST RATE|none
#       tbf at RATE (e.g. 600kbit) on the switch port into HOST (--link=none only)
# Then e.g.:
#   testbed.sh exec client -- bin/kafka-topics --zookeeper=ZK:2181 --create --topic=t --partitions=3 --replication-factor=3
# The harness (kafka-faults) builds the same cluster from Go (experiments/faults).

cluster_dir() { echo "$STATE_DIR/cluster"; }

cluster_usage() {
	sed -n '/^# Cluster usage/,/^# The harness/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# cluster_hosts: the servers' hosts, zookeeper first.
cluster_hosts() { field host 2 | grep -E '^(zookeeper|broker[0-9]+)$'; }

# cluster_spawn HOST: start HOST's server in the background, in its
# namespace, cgroups and CPU, in a session of its own; its pid goes to
# HOST.pid, its output to HOST.log.
cluster_spawn() {
	local h=$1 dir ns cpu
	dir=$(cluster_dir)
	ns=$(host_field "$h" 3)
	cpu=$(host_field "$h" 5)
	[[ -f $dir/$h.args ]] || die "no server on host '$h'"
	local -a args
	mapfile -t args <"$dir/$h.args"
	(
		exec 9>&- # not the state lock: a later run of this script takes it
		for cg in $(awk -v h="$h" '$1 == "cgroup" && $2 == h { print $3 }' "$STATE"); do
			echo "$BASHPID" >"$cg/cgroup.procs"
		done
		exec setsid ip netns exec "$ns" taskset -c "$cpu" "${args[@]}"
	) >>"$dir/$h.log" 2>&1 </dev/null &
	echo $! >"$dir/$h.pid"
}

# cluster_pid HOST: the pid of HOST's server if it runs (a zombie does not:
# whoever inherited it may not have reaped it yet).
cluster_pid() {
	local f p
	f=$(cluster_dir)/$1.pid
	[[ -f $f ]] || return 0
	p=$(cat "$f")
	kill -0 "$p" 2>/dev/null || return 0
	grep -q '^State:[[:space:]]*Z' "/proc/$p/status" 2>/dev/null || echo "$p"
}

# cluster_wait_port HOST PORT SECONDS: wait until HOST:PORT accepts a
# connection from the client host.
cluster_wait_port() {
	local addr try
	addr=$(host_field "$1" 4)
	for ((try = 0; try < $3 * 5; try++)); do
		if ip netns exec "$(host_field client 3)" timeout 1 bash -c "exec 3<>/dev/tcp/$addr/$2" 2>/dev/null; then
			return 0
		fi
		[[ -n $(cluster_pid "$1") ]] || die "$1's server exited (see $(cluster_dir)/$1.log)"
		sleep 0.2
	done
	die "$1:$2 does not accept connections after $3 s (see $(cluster_dir)/$1.log)"
}

# cluster_start HOST: start HOST's server and wait until it serves:
# ZooKeeper answers srvr as a standalone server; a broker accepts
# connections and has registered in ZooKeeper (its log says so).
cluster_start() {
	local h=$1 dir before try
	dir=$(cluster_dir)
	[[ -z $(cluster_pid "$h") ]] || die "$h's server is running (pid $(cluster_pid "$h"))"
	before=$(grep -c 'msg=registered ' "$dir/$h.log" 2>/dev/null || true)
	cluster_spawn "$h"
	case $h in
	zookeeper)
		cluster_wait_port "$h" 2181 60
		for ((try = 0; try < 300; try++)); do
			ip netns exec "$(host_field client 3)" timeout 2 bash -c \
				"exec 3<>/dev/tcp/$(host_field "$h" 4)/2181; printf srvr >&3; cat <&3" 2>/dev/null | grep -q 'Mode: standalone' && return 0
			sleep 0.2
		done
		die "ZooKeeper does not answer srvr after 60 s (see $dir/$h.log)"
		;;
	*)
		cluster_wait_port "$h" 9092 30
		for ((try = 0; try < 300; try++)); do
			(($(grep -c 'msg=registered ' "$dir/$h.log" 2>/dev/null || true) > ${before:-0})) && return 0
			[[ -n $(cluster_pid "$h") ]] || die "$h's server exited (see $dir/$h.log)"
			sleep 0.2
		done
		die "$h has not registered in ZooKeeper after 60 s (see $dir/$h.log)"
		;;
	esac
}

cluster_up_failed() {
	local rc=$?
	trap - EXIT
	say "cluster up failed; removing what it made"
	cluster_down
	exit $((rc == 0 ? 1 : rc))
}

cluster_up() {
	local brokers=3 link=none bin=$ROOT/bin st=3000 arg
	local -a props=()
	for arg in "$@"; do
		case $arg in
		--brokers=*) brokers=${arg#*=} ;;
		--link=*) link=${arg#*=} ;;
		--bin=*) bin=${arg#*=} ;;
		--zk.sessiontimeout.ms=*) st=${arg#*=} ;;
		--*=*) props+=("$arg") ;;
		*) die "cluster up: unknown argument '$arg' (want --KEY=VALUE)" ;;
		esac
	done
	[[ $brokers =~ ^[1-9]$ ]] || die "--brokers must be 1..9, not '$brokers'"
	[[ $st =~ ^[0-9]+$ ]] || die "--zk.sessiontimeout.ms must be milliseconds, not '$st'"
	[[ -x $bin/kafka-server ]] || die "no kafka-server in $bin (make build, or --bin=DIR)"
	local cp=/usr/share/java/zookeeper.jar
	[[ -f $cp ]] || die "ZooKeeper is not installed (scripts/zookeeper.sh start installs Debian's package)"
	[[ ! -f /usr/share/java/slf4j-simple.jar ]] || cp+=:/usr/share/java/slf4j-simple.jar
	command -v java >/dev/null || die "no java (scripts/zookeeper.sh installs a JDK)"
	command -v iptables >/dev/null || die "no iptables (apt-get install iptables)"
	local hosts=zookeeper i
	for ((i = 1; i <= brokers; i++)); do hosts+=,broker$i; done
	hosts+=,client
	cmd_up "--link=$link" "--hosts=$hosts" >/dev/null
	trap cluster_up_failed EXIT
	local dir zk
	dir=$(cluster_dir)
	mkdir -p "$dir/zookeeper/data"
	zk=$(host_field zookeeper 4)
	cat >"$dir/zookeeper/zoo.cfg" <<-CFG
		tickTime=500
		dataDir=$dir/zookeeper/data
		clientPort=2181
		clientPortAddress=$zk
		minSessionTimeout=1000
		maxSessionTimeout=60000
		maxClientCnxns=0
		admin.enableServer=false
		4lw.commands.whitelist=srvr,ruok
	CFG
	printf '%s\n' java -Xmx256m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true -Dzookeeper.admin.enableServer=false \
		-cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zookeeper/zoo.cfg" >"$dir/zookeeper.args"
	cluster_start zookeeper
	for ((i = 1; i <= brokers; i++)); do
		printf '%s\n' "$bin/kafka-server" "--brokerid=$i" "--hostname=$(host_field "broker$i" 4)" --port=9092 \
			"--log.dir=$dir/broker$i/logs" --enable.zookeeper=true "--zk.connect=$zk:2181" "--zk.sessiontimeout.ms=$st" \
			"${props[@]}" >"$dir/broker$i.args"
		cluster_start "broker$i"
	done
	trap - EXIT
	echo "zookeeper $zk:2181"
	for ((i = 1; i <= brokers; i++)); do echo "broker$i $(host_field "broker$i" 4):9092 brokerid=$i"; done
	echo "client $(host_field client 4) (testbed.sh exec client -- CMD)"
	echo "logs $dir/*.log"
}

cluster_down() {
	set +e
	local h p dir
	dir=$(cluster_dir)
	if [[ -f $STATE ]]; then
		for h in $(cluster_hosts); do
			p=$(cluster_pid "$h")
			[[ -z $p ]] || kill -KILL "$p" 2>/dev/null
		done
	fi
	set -e
	cmd_down
	rm -rf "$dir"
	rmdir "$STATE_DIR" 2>/dev/null || true
}

cluster_signal() {
	local what=$1 h=$2 p try
	need_up
	host_field "$h" 2 >/dev/null
	[[ $what == start ]] && { cluster_start "$h"; return; }
	p=$(cluster_pid "$h")
	[[ -n $p ]] || die "$h's server is not running"
	case $what in
	pause) kill -STOP "$p"; return ;;
	resume) kill -CONT "$p"; return ;;
	kill) kill -KILL "$p" ;;
	stop) kill -TERM "$p"; kill -CONT "$p" ;;
	esac
	for try in $(seq 300); do
		[[ -n $(cluster_pid "$h") ]] || return 0
		sleep 0.1
	done
	die "$h's server did not end in 30 s"
}

cluster_isolate() {
	(($# >= 1)) || cluster_usage
	need_up
	local h=$1 peer ns a
	shift
	ns=$(host_field "$h" 3)
	local -a peers=("$@")
	((${#peers[@]})) || mapfile -t peers < <(field host 2 | grep -vx "$h")
	for peer in "${peers[@]}"; do
		a=$(host_field "$peer" 4)
		ip netns exec "$ns" iptables -w -I INPUT -s "$a" -j DROP
		ip netns exec "$ns" iptables -w -I OUTPUT -d "$a" -j DROP
	done
}

cluster_heal() {
	need_up
	local h ns
	local -a hs=("$@")
	((${#hs[@]})) || mapfile -t hs < <(field host 2)
	for h in "${hs[@]}"; do
		ns=$(host_field "$h" 3)
		ip netns exec "$ns" iptables -w -F INPUT
		ip netns exec "$ns" iptables -w -F OUTPUT
	done
}

cluster_shape() {
	(($# == 2)) || cluster_usage
	need_up
	[[ $(field link 2) == none ]] || die "shape needs a cluster up with --link=none"
	local sw=tb-$(field run 2)-sw dev
	dev=$(host_field "$1" 7)
	if [[ $2 == none ]]; then
		tc -n "$sw" qdisc del dev "$dev" root 2>/dev/null || true
	else
		tc -n "$sw" qdisc replace dev "$dev" root tbf rate "$2" burst 16kb latency 200ms
	fi
}

cluster_status() {
	need_up
	local h p n what
	for h in $(field host 2); do
		p=$(cluster_pid "$h")
		n=$(ip netns exec "$(host_field "$h" 3)" iptables -w -S | grep -c -- '-j DROP' || true)
		if [[ -n $p ]]; then
			what="pid $p"
			grep -q '^State:[[:space:]]*T' "/proc/$p/status" 2>/dev/null && what+=" (stopped)"
		elif [[ -f $(cluster_dir)/$h.args ]]; then
			what=down
		else
			what=-
		fi
		printf '%-10s %-12s %-18s iptables DROP rules: %s\n' "$h" "$(host_field "$h" 4)" "$what" "$n"
	done
}

cmd_cluster() {
	(($#)) || cluster_usage
	local sub=$1
	shift
	case $sub in
	up) cluster_up "$@" ;;
	down) cluster_down ;;
	status) cluster_status ;;
	kill | stop | pause | resume | start) (($# == 1)) || cluster_usage; cluster_signal "$sub" "$1" ;;
	isolate) cluster_isolate "$@" ;;
	heal) cluster_heal "$@" ;;
	shape) cluster_shape "$@" ;;
	-h | --help | help) cluster_usage ;;
	*) say "unknown cluster command '$sub'"; cluster_usage ;;
	esac
}

# ---------------------------------------------------------------- twodc
#
# Two datacenters (issue 15, paper §4), by hand:
#   testbed.sh twodc up [--wan=RATE] [--cpus=live=C,analysis=C]
#       hosts live (the user-facing datacenter: its ZooKeeper, brokers and
#       front-end producers) and analysis (the analysis datacenter: its
#       ZooKeeper, broker, the mirror and the consumers), joined by one veth
#       link, the inter-datacenter link, shaped with tbf to RATE in both
#       directions (default 100mbit; none: unshaped). Prints the addresses.
#   testbed.sh twodc shape RATE|none   change the inter-datacenter link's rate
#   testbed.sh twodc down              = testbed.sh down
# A datacenter is one host here: its servers and clients talk over the
# host's own interface. Only the rate of the link between the datacenters is
# emulated: added delay would need netem, which this kernel lacks ("Specified
# qdisc kind is unknown"), so the link has no added latency.
twodc_usage() {
	sed -n '/^# Two datacenters/,/^# qdisc kind/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# twodc_shape RATE: tbf at RATE on both ends of the inter-datacenter link.
twodc_shape() {
	(($# == 1)) || twodc_usage
	need_up
	local h ns burst
	[[ $1 == none || $1 =~ ^[0-9]+[kmg]?bit$ ]] || die "rate must be like 100mbit or none, not '$1'"
	for h in live analysis; do
		ns=$(host_field "$h" 3)
		[[ -n $ns ]] || die "no host $h: not a twodc testbed"
		if [[ $1 == none ]]; then
			tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
		else
			# A bucket of 64 KiB (a GSO packet passes whole) and a 20 ms queue.
			tc -n "$ns" qdisc replace dev eth0 root tbf rate "$1" burst 64kb latency 20ms
		fi
	done
	journal "wan $1"
}

twodc_up() {
	local wan=100mbit cpus="" arg
	for arg in "$@"; do
		case $arg in
		--wan=*) wan=${arg#*=} ;;
		--cpus=*) cpus=${arg#*=} ;;
		*) die "twodc up: unknown argument '$arg'" ;;
		esac
	done
	[[ $wan == none || $wan =~ ^[0-9]+[kmg]?bit$ ]] || die "--wan must be like 100mbit or none, not '$wan'"
	if [[ -z $cpus ]]; then
		# The live datacenter on the first allowed core, the analysis one on the second.
		local -a allowed
		read -ra allowed <<<"$(expand_cpus "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$$/status)")"
		cpus=live=${allowed[0]},analysis=${allowed[1 % ${#allowed[@]}]}
	fi
	local -a up=(--link=none --hosts=live,analysis "--cpus=$cpus")
	cmd_up "${up[@]}" >/dev/null
	if ! twodc_shape "$wan"; then
		cmd_down
		die "shaping the inter-datacenter link failed"
	fi
	say "netem is not available in this kernel: the inter-datacenter link has no added delay"
	echo "live $(host_field live 4)"
	echo "analysis $(host_field analysis 4)"
	echo "wan $wan"
}

cmd_twodc() {
	(($#)) || twodc_usage
	local sub=$1
	shift
	case $sub in
	up) twodc_up "$@" ;;
	shape) twodc_shape "$@" ;;
	down) cmd_down ;;
	-h | --help | help) twodc_usage ;;
	*) say "unknown twodc command '$sub'"; twodc_usage ;;
	esac
}

main() {
	(($#)) || usage
	local cmd=$1
	shift
	case $cmd in
	install) cmd_install ;;
	up) need_root; cmd_up "$@" ;;
	down) need_root; cmd_down ;;
	status) need_root; cmd_status ;;
	info) cmd_info ;;
	addr) cmd_addr "$@" ;;
	exec) need_root; cmd_exec "$@" ;;
	stats) need_root; cmd_stats "$@" ;;
	link) cmd_link "$@" ;;
	cluster) need_root; cmd_cluster "$@" ;;
	twodc) need_root; cmd_twodc "$@" ;;
	-h | --help | help) usage ;;
	*) say "unknown command '$cmd'"; usage ;;
	esac
}

main "$@"
