#!/usr/bin/env bash
# Fault tests (issue 12): three patterns between two network namespaces joined
# by a veth pair, each phase one fault, all three patterns side by side:
#
#   pushpull  PUSH (dials, heartbeats) -> PULL (binds)
#   reqrep    REQ client with Lazy Pirate retries -> idempotent REP
#   broker    broker queue: publisher (dials) -> subscription (binds)
#
#   loss5       5% random loss both ways (iptables -m statistic)
#   partition   10 s of DROP both ways, longer than the heartbeat timeout
#   ratelimit   tc tbf on the sending side's link
#   kill-send   kill -9 of every sender mid-stream, then a restart
#   kill-recv   kill -9 of every receiver mid-stream, then a restart
#   stall-short a proxy stops forwarding for less than the heartbeat timeout
#   stall-reset a proxy stall longer than the heartbeat timeout, then an RST
#               to both sides of every connection
#
# Asserts, per pattern and phase: duplicated == 0, reordered == 0, every
# message sent on a connection that did not die arrived, and what was lost
# on a dead one is within that connection's buffers (fault_peer report); that
# traffic resumes after the fault; that no peer hangs or crashes.
#
#   fault.sh --peer BUILD/tests/fault/fault_peer [--proxy fault_proxy.py]
#            [--python python3] [--minutes N] [--hold SECONDS] [--phases A,B]
#            [--keep]
#
# --phases runs only those (names above); --keep leaves the logs and state
# files in the temporary directory it names.
# --minutes N repeats the phases, each held --hold seconds (soak), for N
# minutes. The settings below can be changed through ZR_FAULT_* variables.
# Needs root for ip netns and iptables: otherwise it says why and exits 77
# (skipped), unless CI=true or ZR_FAULT_REQUIRE=1, where it fails.
# Traffic stays inside the two namespaces it creates (10.77.0.0/24 there).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
peer=
proxy=$here/fault_proxy.py
python=python3
minutes=0
hold=2
keep=0
only=
while (($#)); do
	case $1 in
	--peer) peer=$2; shift 2 ;;
	--proxy) proxy=$2; shift 2 ;;
	--python) python=$2; shift 2 ;;
	--minutes) minutes=$2; shift 2 ;;
	--hold) hold=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--phases) only=$2; shift 2 ;;
	*) echo "usage: fault.sh --peer FAULT_PEER [--proxy P] [--python PY] [--minutes N] [--hold S] [--phases A,B] [--keep]" >&2; exit 1 ;;
	esac
done
[[ -x $peer ]] || { echo "fault.sh: --peer: no program '$peer'" >&2; exit 1; }
peer=$(cd "$(dirname "$peer")" && pwd)/$(basename "$peer")

# ---- settings: every bound below follows from them --------------------------
HB=${ZR_FAULT_HB:-1000,3000}            # heartbeat interval, timeout (ms)
HWM=${ZR_FAULT_HWM:-100}                # SNDHWM = RCVHWM (broker: read_ahead; its publisher keeps 1000)
KBUF=${ZR_FAULT_KBUF:-65536}            # SO_SNDBUF = SO_RCVBUF of the push/pull sockets
RATE=${ZR_FAULT_RATE:-2000}             # push and broker messages per second, 0: unpaced
REQ_RATE=${ZR_FAULT_REQ_RATE:-200}      # requests per second
REQ_TIMEOUT=${ZR_FAULT_REQ_TIMEOUT:-2500} # ms before the REQ client retries on a new socket
PARTITION=${ZR_FAULT_PARTITION:-10}     # s, longer than the heartbeat timeout
# 1 (default): senders close as soon as they stop, without first waiting for
# what they sent to arrive, so the close itself is tested: everything zring
# handed to the kernel must still arrive (a closing connection sends FIN and
# reads to the peer's instead of closing with unread bytes, which sends RST;
# before that fix this lost thousands of messages after the rate limit
# phase). 0: senders pause until everything arrived, then close.
CLOSE_EARLY=${ZR_FAULT_CLOSE_EARLY:-1}
PROXY_BUF=65536    # the proxy's SO_SNDBUF / SO_RCVBUF

skip() {
	if [[ ${CI:-} == true || ${ZR_FAULT_REQUIRE:-0} == 1 ]]; then
		echo "fault.sh: FAIL: $* (CI must run the fault tests)" >&2
		exit 1
	fi
	echo "fault.sh: SKIP: $*" >&2
	exit 77
}
((EUID == 0)) || skip "needs root for ip netns and iptables (running as uid $EUID)"
for t in ip iptables tc; do
	command -v "$t" >/dev/null || skip "no '$t' command (scripts/deps.sh installs iproute2 and iptables)"
done
"$python" -c 'import selectors, socket' 2>/dev/null || skip "no usable python at '$python'"

# ---- namespaces, cleaned up on every exit path -----------------------------
tag=zrf$$
nsa=${tag}a nsb=${tag}b
ipa=10.77.0.1 ipb=10.77.0.2
work=$(mktemp -d "${TMPDIR:-/tmp}/zring-fault.XXXXXX")
failures=()

cleanup() {
	local p
	# Every peer and proxy runs inside this run's namespaces, so what is
	# still there is ours: never a list of old pids, which may be reused.
	for p in $(ip netns pids "$nsa" 2>/dev/null) $(ip netns pids "$nsb" 2>/dev/null); do
		kill -9 "$p" 2>/dev/null
	done
	for p in $(jobs -p); do
		wait "$p" 2>/dev/null
	done
	# Deleting a namespace takes its veth end and its iptables rules along.
	ip netns del "$nsa" 2>/dev/null
	ip netns del "$nsb" 2>/dev/null
	if ((keep)); then
		echo "fault.sh: logs kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ip netns add "$nsa" 2>"$work/ns.err" || skip "ip netns add failed: $(cat "$work/ns.err")"
ip netns add "$nsb" || skip "ip netns add failed"
ip link add "${tag}va" netns "$nsa" type veth peer name "${tag}vb" netns "$nsb" ||
	skip "cannot create a veth pair"
ip -n "$nsa" addr add "$ipa/24" dev "${tag}va"
ip -n "$nsb" addr add "$ipb/24" dev "${tag}vb"
for ns in "$nsa" "$nsb"; do
	ip -n "$ns" link set lo up
done
ip -n "$nsa" link set "${tag}va" up
ip -n "$nsb" link set "${tag}vb" up
ip netns exec "$nsb" iptables -S >/dev/null 2>&1 || skip "iptables does not work in a namespace"

ina() { ip netns exec "$nsa" "$@"; }
inb() { ip netns exec "$nsb" "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# ev TEXT: a timestamped line in the phase's events.log (wall clock ms, as the
# receivers' gap_end_ms), to place a long gap among the driver's steps
ev() { echo "$(now_ms) $*" >>"$dir/events.log"; }

# ---- loss bounds, in messages, of one connection that dies ------------------
# Sender: the socket's queue and the connection's (SNDHWM each), the batch
# being written (256 KiB at most) and the kernel's send buffer. Receiver: the
# kernel's receive buffer, zring's 64 KiB read buffer, one message waiting
# for room, the receive queue (RCVHWM) and the one the app holds. The kernel
# doubles SO_SNDBUF/SO_RCVBUF for its bookkeeping, so 2 x KBUF each. Through
# the proxy, its two sockets' buffers and its one pending read come on top.
# The broker sets no kernel buffers: the namespace's tcp_wmem / tcp_rmem
# maxima bound them; its publisher's SNDHWM is the default 1000.
wire_push=18 # 2-octet frame header + 16-octet payload
wire_broker=27 # "fault" + empty headers + payload, a 2-octet header each
tcp_max() { ina cat "/proc/sys/net/ipv4/$1" | awk '{print $3}'; }
wmem=$(tcp_max tcp_wmem)
rmem=$(tcp_max tcp_rmem)
proxy_bytes=$((2 * 2 * 2 * PROXY_BUF + 65536))
bound_args() { # pattern, via proxy (0/1)
	local extra=0
	(($2)) && extra=$proxy_bytes
	case $1 in
	pushpull) echo "-b $((3 * HWM + 2)) -B $((4 * KBUF + 262144 + 65536 + extra)) -z $wire_push" ;;
	reqrep) echo "-b 1" ;; # only the request in flight when the client died
	broker) echo "-b $((2 * 1000 + HWM + 2)) -B $((wmem + rmem + 262144 + 65536 + extra)) -z $wire_broker" ;;
	esac
}

patterns=(pushpull reqrep broker)
declare -A sroles=([pushpull]=push [reqrep]=req [broker]=bpub)
declare -A rroles=([pushpull]=pull [reqrep]=rep [broker]=bsub)
declare -A ports=([pushpull]=5601 [reqrep]=5602 [broker]=5603)
declare -A spid rpid xpid

# ---- peers ------------------------------------------------------------------
# Each is started as `ip netns exec ... &` itself, never through a shell
# function: then $! is the peer's own pid (ip execs it), and kill -9 hits it.
dir= # the current phase's directory
via_proxy=0

start_receiver() { # pattern
	local p=$1 r=${rroles[$1]}
	ip netns exec "$nsb" "$peer" "$r" -e "tcp://$ipb:${ports[$p]}" -s "$dir/$p.recv" -H "$HB" -w "$HWM" -k "$KBUF" \
		>>"$dir/$p.recv.log" 2>&1 &
	rpid[$p]=$!
}

start_sender() { # pattern
	local p=$1 s=${sroles[$1]} port=${ports[$1]} rate=$RATE
	((via_proxy)) && port=$((port + 10))
	[[ $p == reqrep ]] && rate=$REQ_RATE
	ip netns exec "$nsa" "$peer" "$s" -e "tcp://$ipb:$port" -s "$dir/$p.send" -H "$HB" -w "$HWM" -k "$KBUF" \
		-r "$rate" -t "$REQ_TIMEOUT" >>"$dir/$p.send.log" 2>&1 &
	spid[$p]=$!
}

start_proxy() { # pattern
	local p=$1
	ip netns exec "$nsb" "$python" "$proxy" --listen "$ipb:$((${ports[$p]} + 10))" --to "$ipb:${ports[$p]}" \
		--stall "$proxy_stall" --buf "$PROXY_BUF" >>"$dir/$p.proxy.log" 2>&1 &
	xpid[$p]=$!
}

# report PATTERN: the figures line (and exit status 3 if a check failed)
report() {
	local p=$1
	# shellcheck disable=SC2046 # the bound is several words on purpose
	"$peer" report -p "$p" -S "$dir/$p.send" -R "$dir/$p.recv" $(bound_args "$p" "$via_proxy")
}
field() { # LINE NAME
	local w
	for w in $1; do
		[[ $w == "$2="* ]] && { echo "${w#*=}"; return; }
	done
	echo 0
}
received() { field "$(report "$1" 2>/dev/null)" received; }

# wait_for SECONDS COMMAND...: polls until COMMAND succeeds; 1 on timeout
wait_for() {
	local deadline=$(($(now_ms) + $1 * 1000))
	shift
	until "$@"; do
		(($(now_ms) > deadline)) && return 1
		sleep 0.1
	done
}
all_flowing() { # every pattern has received more than its mark
	local p
	for p in "${patterns[@]}"; do
		(($(received "$p") > ${mark[$p]:-0})) || return 1
	done
}
# stop_pid PID SECONDS: SIGTERM, then kill -9 if it is still there; 1 if it hung
stop_pid() {
	local pid=$1 t=$2
	kill -TERM "$pid" 2>/dev/null || return 0
	if ! wait_for "$t" eval "! kill -0 $pid 2>/dev/null"; then
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 1
	fi
	wait "$pid" 2>/dev/null
	return 0
}

# settle PATTERN: waits until nothing is missing; where a connection died
# (its loss is allowed), until nothing more arrived for 2 s; at most 30 s
settle() {
	local line n last=-1 still=0 i
	for ((i = 0; i < 300; i++)); do
		line=$(report "$1")
		[[ $(field "$line" lost) == 0 ]] && return
		n=$(field "$line" received)
		if [[ $n == "$last" ]]; then
			((++still >= 20 && $(field "$line" conn_deaths) + $(field "$line" epochs) > 1)) && return
		else
			still=0
			last=$n
		fi
		sleep 0.1
	done
	ev "settle: $1 still missing messages after 30 s"
}

fail() {
	failures+=("$*")
	echo "fault.sh: FAIL: $*" >&2
}

declare -A mark recover_ms
rows=()

# mark_now: the receivers' counts, so progress after a fault can be seen
mark_now() {
	local p
	for p in "${patterns[@]}"; do
		mark[$p]=$(received "$p")
	done
}
# resumed NAME: waits for every pattern to move past its mark and records,
# for each, how long after the fault's end its traffic came back
resumed() {
	local t0 p left=("${patterns[@]}") wait_more
	t0=$(now_ms)
	for p in "${patterns[@]}"; do
		recover_ms[$p]=-1
	done
	while ((${#left[@]})) && (($(now_ms) - t0 < 60000)); do
		wait_more=()
		for p in "${left[@]}"; do
			if (($(received "$p") > ${mark[$p]} + 20)); then
				recover_ms[$p]=$(($(now_ms) - t0))
			else
				wait_more+=("$p")
			fi
		done
		left=("${wait_more[@]}")
		((${#left[@]})) && sleep 0.05
	done
	for p in "${left[@]}"; do
		fail "$1: $p did not resume within 60 s of the fault's end"
	done
}

# ---- the faults ---------------------------------------------------------------
drop_all() { # -A or -D
	ina iptables "$1" INPUT -s "$ipb" -j DROP
	inb iptables "$1" INPUT -s "$ipa" -j DROP
}
random_loss() { # -A or -D
	ina iptables "$1" INPUT -m statistic --mode random --probability 0.05 -j DROP
	inb iptables "$1" INPUT -m statistic --mode random --probability 0.05 -j DROP
}

fault_loss5() {
	random_loss -A
	sleep $((hold + 4))
	random_loss -D
}
fault_partition() {
	drop_all -A
	sleep "$PARTITION"
	drop_all -D
}
fault_ratelimit() {
	ina tc qdisc add dev "${tag}va" root tbf rate 256kbit burst 8kb latency 200ms
	sleep $((hold + 3))
	ina tc qdisc del dev "${tag}va" root
}
# kill9 PID...: kill -9 them all at once and reap them; events.log notes how
# long the kernel took, and where the threads of one still there after a
# second wait (seen: tens of seconds in synchronize_rcu_expedited under load)
kill9() {
	local p t
	for p in "$@"; do
		kill -9 "$p" 2>/dev/null
		ev "kill -9 $p"
	done
	sleep 1
	for p in "$@"; do
		[[ -d /proc/$p/task ]] || continue
		for t in /proc/"$p"/task/*; do
			ev "  $p: $(cat "$t/comm" 2>/dev/null) $(cut -d' ' -f3 "$t/stat" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
			cat "$t/stack" >"$dir/stack.tmp" 2>/dev/null && sed 's/^/    /' "$dir/stack.tmp" >>"$dir/events.log"
		done
	done
	for p in "$@"; do
		wait "$p" 2>/dev/null
		ev "reaped $p"
	done
}
fault_kill-send() {
	local p
	kill9 "${spid[@]}"
	for p in "${patterns[@]}"; do
		start_sender "$p"
	done
}
fault_kill-recv() {
	local p
	kill9 "${rpid[@]}"
	for p in "${patterns[@]}"; do
		start_receiver "$p"
	done
}
fault_stall-short() {
	local p
	for p in "${patterns[@]}"; do
		kill -USR2 "${xpid[$p]}"
	done
	sleep $((proxy_stall_s + 1))
}
fault_stall-reset() {
	local p
	for p in "${patterns[@]}"; do
		kill -USR2 "${xpid[$p]}"
	done
	sleep $((proxy_stall_s + 2))
	# The long stall killed the connections (heartbeats); let new ones form
	# and carry traffic, then reset those.
	mark_now
	wait_for 30 all_flowing
	for p in "${patterns[@]}"; do
		kill -USR1 "${xpid[$p]}"
	done
}

# What a phase must show beyond the report's checks.
#   nodeath: no connection may die (so nothing may be lost)
#   death:   the push connection must have died and come back (heartbeats)
declare -A expect=([loss5]=nodeath [partition]=death [ratelimit]=nodeath [kill-send]=any
	[kill-recv]=any [stall-short]=nodeath [stall-reset]=death)

run_phase() { # NAME ROUND INDEX
	local name=$1 round=$2 p line rc
	dir=$work/$round.$3.$name
	mkdir -p "$dir"
	via_proxy=0
	proxy_stall_s=1
	case $name in
	stall-short) via_proxy=1; proxy_stall_s=1 ;;
	stall-reset) via_proxy=1; proxy_stall_s=5 ;;
	esac
	proxy_stall=$proxy_stall_s
	for p in "${patterns[@]}"; do
		mark[$p]=0
		start_receiver "$p"
		((via_proxy)) && start_proxy "$p"
	done
	sleep 0.3
	for p in "${patterns[@]}"; do
		start_sender "$p"
	done
	ev started
	if ! wait_for 30 all_flowing; then
		fail "$name: traffic did not start within 30 s"
	fi
	ev flowing
	sleep "$hold"
	ev fault
	"fault_$name"
	ev fault over
	mark_now
	resumed "$name"
	ev resumed
	sleep "$hold"
	# Senders stop sending but keep their connections (SIGUSR1) until what
	# they sent arrived; only then do they close (SIGTERM: a REQ finishes its
	# request, the others flush for up to LINGER). See CLOSE_EARLY above.
	if ((!CLOSE_EARLY)); then
		ev pausing senders
		for p in "${patterns[@]}"; do
			kill -USR1 "${spid[$p]}" 2>/dev/null
		done
		for p in "${patterns[@]}"; do
			settle "$p"
		done
	fi
	ev stopping senders
	for p in "${patterns[@]}"; do
		stop_pid "${spid[$p]}" 30 || fail "$name: ${sroles[$p]} hung at exit (killed)"
	done
	ev senders stopped
	for p in "${patterns[@]}"; do
		settle "$p"
	done
	ev settled
	for p in "${patterns[@]}"; do
		stop_pid "${rpid[$p]}" 30 || fail "$name: ${rroles[$p]} hung at exit (killed)"
		((via_proxy)) && stop_pid "${xpid[$p]}" 10
	done
	for p in "${patterns[@]}"; do
		line=$(report "$p")
		rc=$?
		if ((rc != 0)); then
			fail "$name: $p: report check failed: $line"
			# What CI needs to tell why: the driver's steps and the peers' lines.
			sed 's/^/  events: /' "$dir/events.log" >&2
			tail -n 5 "$dir/$p".*.log | sed 's/^/  /' >&2
		fi
		case ${expect[$name]} in
		nodeath)
			(($(field "$line" conn_deaths) == 0)) ||
				echo "fault.sh: note: $name: $p: a connection died or a request was retried (a spurious timeout?)" >&2
			;;
		death)
			if [[ $p == pushpull ]] && (($(field "$line" reconnects) < 1)); then
				fail "$name: pushpull: no reconnect seen (heartbeat did not detect the fault)"
			fi
			;;
		esac
		if grep -qE "(ERROR|WARNING): [A-Za-z]+Sanitizer|SUMMARY: [A-Za-z]+Sanitizer|runtime error:" \
			"$dir/$p".*.log 2>/dev/null; then
			fail "$name: $p: sanitizer report in $dir"
			grep -hE -A20 "Sanitizer|runtime error:" "$dir/$p".*.log | head -60 >&2
		fi
		rows+=("$(printf '%-11s %-8s %s recover_ms=%s' "$name" "$p" "$line" "${recover_ms[$p]}")")
		echo "${rows[-1]}"
	done
}

phases=(loss5 partition ratelimit kill-send kill-recv stall-short stall-reset)
if [[ -n $only ]]; then
	IFS=, read -r -a phases <<<"$only"
	for ph in "${phases[@]}"; do
		[[ -n ${expect[$ph]:-} ]] || { echo "fault.sh: no phase '$ph'" >&2; exit 1; }
	done
fi
t_start=$(now_ms)
round=0
while :; do
	round=$((round + 1))
	for i in "${!phases[@]}"; do
		run_phase "${phases[$i]}" "$round" "$i"
	done
	((minutes > 0)) || break
	(($(now_ms) - t_start >= minutes * 60000)) && break
done

# ---- the table ------------------------------------------------------------------
cols=(sent received lost duplicated reordered conn_deaths lost_bound reconnects max_reconnect_ms
	max_gap_ms retries recover_ms)
printf '\n%-11s %-8s' phase pattern
printf ' %9s' sent recv lost dup reord deaths bound reconn reconn_ms gap_ms retries resume_ms
printf '\n'
for r in "${rows[@]}"; do
	read -r -a w <<<"$r"
	printf '%-11s %-8s' "${w[0]}" "${w[1]}"
	for c in "${cols[@]}"; do
		printf ' %9s' "$(field "$r" "$c")"
	done
	printf '\n'
done
if ((round > 1)); then
	# Totals per pattern: counts add up, times and bounds are the worst seen.
	for pat in "${patterns[@]}"; do
		declare -A tot=()
		for r in "${rows[@]}"; do
			read -r -a w <<<"$r"
			[[ ${w[1]} == "$pat" ]] || continue
			for c in "${cols[@]}"; do
				v=$(field "$r" "$c")
				case $c in
				sent | received | lost | duplicated | reordered | conn_deaths | reconnects | retries)
					tot[$c]=$((${tot[$c]:-0} + v)) ;;
				*) ((v > ${tot[$c]:-0})) && tot[$c]=$v ;;
				esac
			done
		done
		printf '%-11s %-8s' total "$pat"
		for c in "${cols[@]}"; do
			printf ' %9s' "${tot[$c]:-0}"
		done
		printf '\n'
		unset tot
	done
fi
echo "fault.sh: $round round(s), $(((($(now_ms) - t_start) + 500) / 1000)) s"
if ((${#failures[@]})); then
	printf 'fault.sh: FAILED: %s\n' "${failures[@]}"
	exit 1
fi
echo "fault.sh: PASS"
