#!/bin/sh
# The VM test's guest side, /test.sh in the initramfs (tests/vm/run.py):
# tend's main child in a machine where tend is PID 1 on a cgroup v2
# hierarchy with every controller.  It drives tend's CLI and prints one
# line per case on the console for the host to collect:
#   VMTEST ok CASE FIGURES...    VMTEST fail CASE WHY...
#   VMTEST info WHAT...          VMTEST done
# Every CLI call and every wait is bounded, so that a case that hangs
# fails and the next one still runs.  $vmcases (from the kernel command
# line) picks cases by name, separated by commas; by default all run.
export PATH=/bin
export TEND_SOCKET=/run/tend.sock

ok() { echo "VMTEST ok $*"; }
fail() { echo "VMTEST fail $*"; }
info() { echo "VMTEST info $*"; }

# Milliseconds since the kernel started (/proc/uptime, centiseconds).
upms() {
	read -r u _ </proc/uptime
	echo $((${u%.*} * 1000 + (1${u#*.} - 100) * 10))
}
# tend's CLI, at most 20 s per call.
t() { timeout 20 tend "$@"; }
# A number, a string, from the JSON object $2 (the last "KEY": in it).
jnum() { echo "$2" | sed -n "s/.*\"$1\":\(-\{0,1\}[0-9][0-9]*\).*/\1/p"; }
jstr() { echo "$2" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
has() { case "$1" in *"$2"*) return 0 ;; esac; return 1; }
# How many processes' command lines hold "sleep 1000".
count() { ps -o args | grep -c '[s]leep 1000'; }
# Removes a record, killing what runs in it.
drop() { for i in "$@"; do t rm -f "$i" >/dev/null 2>&1; done; }
# The record's cgroup directory: its status's "cgroup", under the mount.
cgdir() { echo "/sys/fs/cgroup$(jstr cgroup "$(t status --json "$1")")"; }

# Ready: the agent answers.  How long it took as the machine's init is
# its log's event=ready ms= (the host reads it); here, from /init's exec
# to the first answer, and when the kernel's entropy pool was ready.
case_ready() {
	i=0
	until tend health >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -le 200 ] || { fail ready "no answer in 10 s"; return; }
		sleep 0.05
	done
	now=$(upms)
	c=$(crng)
	init=$((${VM_INIT_UP%.*} * 1000 + (1${VM_INIT_UP#*.} - 100) * 10))
	fig="init_ms=$init answered_ms=$now init_to_answer_ms=$((now - init)) crng_done_s=$c"
	# The agent must not wait for the kernel's random pool (seeded about
	# a second into a boot without a hardware RNG): slow, and only after
	# the pool was seeded once init ran, is that wait.
	if [ "$c" != no ] && [ $((now - init)) -gt 1000 ]; then
		cms=$((${c%.*} * 1000 + $(echo "${c#*.}000" | cut -c1-3 | sed 's/^0*//') + 0))
		[ $cms -gt $init ] && { fail ready "answered only after the random pool was seeded: $fig"; return; }
	fi
	ok ready "$fig"
	# The first launch with an ID of the agent's making, and one of the
	# CLI's (tend run), as early as a machine's first command comes.
	a=$(upms)
	id=$(t start -- true)
	b=$(upms)
	t run -- true
	info "first_start_ms=$((b - a)) first_run_ms=$(($(upms) - b))" \
	    "crng_done_s=$(crng)"
	drop "$id"
}
# When the kernel's random pool was seeded (s of uptime), or "no".
crng() {
	c=$(dmesg | sed -n 's/^\[ *\([0-9.]*\)\] random: crng init done.*/\1/p')
	echo "${c:-no}"
}

case_run() {
	out=$(t run -- echo hi)
	[ "$out" = hi ] && ok run || fail run "tend run echo hi printed '$out'"
}

# a. health names the hierarchy and its controllers.
case_health() {
	h=$(t health --json) || { fail health "tend health --json failed"; return; }
	has "$h" '"cgroups":{' || { fail health "no cgroups object: $h"; return; }
	mode=$(jstr mode "$h")
	ctl=$(echo "$h" | sed -n 's/.*"controllers":\[\([^]]*\)\].*/\1/p' | tr -d '"')
	[ "$mode" = v2 ] || { fail health "mode '$mode' reason '$(jstr reason "$h")'"; return; }
	for c in memory pids cpu; do
		has ",$ctl," ",$c," || { fail health "no $c in [$ctl]"; return; }
	done
	ok health "mode=$mode root=$(jstr root "$h") controllers=$ctl"
}

# b. A hog over --memory 32M is OOM-killed, said so, its peak near the limit.
case_oom() {
	hog="dd if=/dev/zero of=/dev/null bs=64M count=1"
	r=$(t run --json --memory 32M -- $hog 2>&1)
	has "$r" '"oomKilled":true' && has "$r" '"signal":9' ||
	    { fail oom "run: $r"; return; }
	id=$(t start --memory 32M -- $hog 2>&1) || { fail oom "start: $id"; return; }
	t wait --timeout 15 "$id" >/dev/null 2>&1
	s=$(t status --json "$id")
	peak=$(jnum memoryPeak "$s")
	drop "$id"
	lim=$((32 << 20))
	has "$s" '"oomKilled":true' || { fail oom "status: $s"; return; }
	[ -n "$peak" ] && [ "$peak" -ge $((lim * 8 / 10)) ] &&
	    [ "$peak" -le "$lim" ] || { fail oom "memoryPeak $peak of $lim"; return; }
	ok oom "memoryPeak=$peak limit=$lim"
}

# c. --pids 20 and a fork loop: forks fail inside, the agent unharmed.
case_pids() {
	id=$(t start --pids 20 -- sh -c 'for i in $(seq 60); do sleep 3 & done; wait' 2>&1) ||
	    { fail pids "start: $id"; return; }
	sleep 1
	out=$(t logs "$id" 2>&1)
	pc=$(jnum pidsCurrent "$(t status --json "$id")")
	h=$(t health --json)
	drop "$id"
	has "$out" "fork" || { fail pids "no fork failure in its output: $(echo "$out" | head -c 200)"; return; }
	[ -n "$h" ] || { fail pids "health did not answer"; return; }
	ok pids "pidsCurrent=$pc fork_failures=$(echo "$out" | grep -c fork)"
}

# d. --cpus 0.2: throttled, its usage near the fraction.
case_cpu() {
	id=$(t start --cpus 0.2 -- sh -c 'while :; do :; done' 2>&1) ||
	    { fail cpu "start: $id"; return; }
	t0=$(upms)
	u0=$(jnum cpuUsec "$(t status --json "$id")")
	sleep 3
	s=$(t status --json "$id")
	t1=$(upms)
	st=$(cat "$(cgdir "$id")/cpu.stat" 2>&1)
	t kill -s KILL "$id" >/dev/null 2>&1
	drop "$id"
	u1=$(jnum cpuUsec "$s")
	thr=$(echo "$st" | sed -n 's/^nr_throttled \([0-9]*\)/\1/p')
	[ -n "$u0" ] && [ -n "$u1" ] || { fail cpu "no cpuUsec: $s"; return; }
	# percent of one CPU = usec / (ms * 10)
	pct=$(((u1 - u0) / ((t1 - t0) * 10)))
	[ "${thr:-0}" -gt 0 ] || { fail cpu "nr_throttled '${thr}' (cpu.stat: $st)"; return; }
	[ $pct -ge 10 ] && [ $pct -le 35 ] || { fail cpu "usage ${pct}% of a CPU"; return; }
	ok cpu "usage=${pct}% nr_throttled=$thr elapsed_ms=$((t1 - t0))"
}

# e. Unlimited siblings (busy loops, a memory hog) do not starve the agent.
case_hog() {
	ids=""
	for i in 1 2 3; do
		ids="$ids $(t start -- sh -c 'while :; do :; done')"
	done
	ids="$ids $(t start -- sh -c 'dd if=/dev/zero bs=300M count=1 | sleep 30')"
	sleep 1
	worst=0 n=0
	for i in 1 2 3 4 5 6 7 8 9 10; do
		a=$(upms)
		timeout 5 tend health >/dev/null 2>&1 && n=$((n + 1))
		d=$(($(upms) - a))
		[ $d -gt $worst ] && worst=$d
		sleep 0.1
	done
	drop $ids
	[ $n -eq 10 ] || { fail hog "health answered $n of 10 times"; return; }
	[ $worst -le 1000 ] || { fail hog "slowest health ${worst} ms"; return; }
	ok hog "slowest_health_ms=$worst"
}

# f. freeze and thaw, of one record and of all.
counter='i=0; while :; do i=$((i+1)); echo $i >/tmp/c; sleep 0.05; done'
still() { a=$(cat /tmp/c); sleep 0.5; b=$(cat /tmp/c); [ "$a" = "$b" ]; }
moves() { a=$(cat /tmp/c); sleep 0.5; b=$(cat /tmp/c); [ "$a" != "$b" ]; }
case_freeze() {
	id=$(t start -- sh -c "$counter" 2>&1) || { fail freeze "start: $id"; return; }
	sleep 0.3
	why=""
	if ! t freeze "$id" >/dev/null 2>&1; then why="tend freeze ID failed"
	elif ! still; then why="the counter moved while frozen"
	elif ! has "$(t status --json "$id")" '"frozen":true'; then why="status not frozen"
	elif ! t thaw "$id" >/dev/null 2>&1; then why="tend thaw ID failed"
	elif ! moves; then why="the counter did not move after thaw"
	elif ! t freeze >/dev/null 2>&1; then why="tend freeze (all) failed"
	elif ! still; then why="the counter moved while all frozen"
	elif ! has "$(t status --json "$id")" '"frozen":true'; then why="status not frozen (all)"
	elif ! t thaw >/dev/null 2>&1; then why="tend thaw (all) failed"
	elif ! moves; then why="the counter did not move after thaw (all)"
	fi
	t thaw >/dev/null 2>&1
	drop "$id"
	[ -z "$why" ] && ok freeze || fail freeze "$why"
}

# g. A setsid double-fork escapee goes with rm -f.
case_escapee() {
	id=$(t start -- sh -c 'setsid sh -c "sleep 1000" & sleep 1000' 2>&1) ||
	    { fail escapee "start: $id"; return; }
	sleep 0.5
	before=$(count)
	t rm -f "$id" >/dev/null 2>&1
	end=$(($(upms) + 3000))
	while [ "$(count)" -gt 0 ] && [ "$(upms)" -lt $end ]; do
		sleep 0.1
	done
	left=$(count)
	if [ "$left" -gt 0 ]; then
		fail escapee "$left of $before left after rm -f"
		kill -9 $(ps -o pid,args | sed -n 's/^ *\([0-9]*\) .*[s]leep 1000.*/\1/p') \
		    2>/dev/null
		return
	fi
	ok escapee "killed=$before"
}

# h. A live upgrade as the machine's init, this script its main child:
# the same PID 1 and boot, a process and its cgroup kept, the new version;
# the script's end still ends the machine (the test's last line).
case_upgrade() {
	id=$(t start --memory 64M -- sleep 1000 2>&1) || { fail upgrade "start: $id"; return; }
	s0=$(t status --json "$id")
	h0=$(t health --json)
	a=$(upms)
	r=$(t upgrade --json /bin/tend-new 2>&1) || { fail upgrade "tend upgrade: $r"; drop "$id"; return; }
	took=$(($(upms) - a))
	s1=$(t status --json "$id")
	drop "$id"
	v0=$(jstr version "$h0") v1=$(jstr version "$r")
	[ "$v1" != "$v0" ] && [ "$(jnum upgrades "$r")" = 1 ] && [ "$(jnum pid "$r")" = 1 ] ||
	    { fail upgrade "health after: $r"; return; }
	[ "$(jstr bootId "$r")" = "$(jstr bootId "$h0")" ] || { fail upgrade "another boot: $r"; return; }
	[ "$(jnum pid "$s1")" = "$(jnum pid "$s0")" ] && has "$s1" '"state":"running"' &&
	    [ "$(jstr cgroup "$s1")" = "$(jstr cgroup "$s0")" ] ||
	    { fail upgrade "the process after: $s1 (before: $s0)"; return; }
	ok upgrade "from=$v0 to=$v1 cli_ms=$took"
}

all="ready run health oom pids cpu hog freeze escapee upgrade"
# The cases share the shell's variables: the loop's own are named apart.
for vm_case in $(echo "${vmcases:-$all}" | tr ',' ' '); do
	vm_t0=$(upms)
	case " $all " in
	*" $vm_case "*) "case_$vm_case" ;;
	*) fail "$vm_case" "no such case" ;;
	esac
	info "case=$vm_case ms=$(($(upms) - vm_t0))"
done
info "mem $(free -m | sed -n 's/^Mem: *//p')" \
    "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
    "uptime $(cut -d' ' -f1 /proc/uptime)"
echo "VMTEST done"
