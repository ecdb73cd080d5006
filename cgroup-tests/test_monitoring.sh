#!/bin/bash
# The Prometheus textfile collector of contrib/prometheus/, read by
# Debian's prometheus-node-exporter, against the container-pressure
# scenario (container-images/run-scenarios).
#
# The runner calls this script back (RUN_SCENARIOS_OBSERVER) twice: once
# the containers are up with their hogs full (the hogs filling and being
# OOM-killed, the workloads about to start), and once they have ended but
# before their cgroups go.
# Each time it runs the collector, scrapes node_exporter over HTTP, and
# reads every cgroup's files right after.  Then:
# - node_exporter parsed the file (node_textfile_scrape_error 0);
# - every exported cgroup's own and effective limit is its files'
#   (max is +Inf), and the sysctl is the sysctl's (-1 is +Inf);
# - while the containers run, no exported counter is above memory.events
#   read after it (counters only grow); once they ended, every one equals
#   it;
# - the containers' policies are there while they run (failfast-0 at 0,
#   failfast-3 at 3, legacy-max at +Inf), and at the end failfast-0's
#   alloc_retry_fail and some oom_kill are above 0: the numbers an
#   operator is to watch are the ones the kernel counted.
# shellcheck source=cgroup-tests/tap.sh
. "$(dirname "$0")/tap.sh"

contrib=${ALLOC_TEST_CONTRIB:-/job/contrib}
runner=${ALLOC_TEST_CONTAINERS:-/job/containers}/run-scenarios
out=${ALLOC_TEST_RESULTS:-/run/results}/test_monitoring
textfiles=/run/node-exporter
listen=127.0.0.1:9100
scenario=container-pressure

# observe PHASE CGROUP: the runner's call back; PHASE.metrics is what
# node_exporter served, PHASE.files what the cgroups' files said after.
observe() {
	local phase=$1 dir own eff events
	"$contrib/prometheus/alloc-retries-textfile" "$textfiles/alloc_retries.prom"
	curl -fsS "http://$listen/metrics" > "$out/$phase.metrics"
	{
		echo "sysctl $(cat /proc/sys/vm/retry_allocation_attempts)"
		# A container that ended since the scrape took its cgroup
		# with it: it is left out, as the collector leaves it out.
		{ find /sys/fs/cgroup -mindepth 2 -name memory.alloc_retries.effective \
			-printf '%h\n' 2>/dev/null || true; } | while read -r dir; do
			own=$(cat "$dir/memory.alloc_retries" 2>/dev/null) || continue
			eff=$(cat "$dir/memory.alloc_retries.effective" 2>/dev/null) || continue
			events=$(cat "$dir/memory.events" 2>/dev/null) || continue
			printf 'cgroup %s %s %s %s %s\n' "${dir#/sys/fs/cgroup}" "$own" "$eff" \
				"$(awk '$1 == "alloc_retry_fail" { print $2 }' <<< "$events")" \
				"$(awk '$1 == "oom_kill" { print $2 }' <<< "$events")"
		done
	} > "$out/$phase.files"
}

if [ "${1:-}" = running ] || [ "${1:-}" = ended ]; then
	observe "$1"
	exit
fi

# compare PHASE: every exported sample against the files; counters
# exported must be at most the files' (they only grow), and once the
# workloads ended exactly theirs in the scenario's cgroups, where nothing
# runs any more.  Prints one line per mismatch and the number of cgroups
# compared.
compare() {
	awk -v phase="$1" -v scenario="/$scenario/" '
		function lim(v) { return v == "max" ? "+Inf" : v }
		FNR == NR {
			if ($1 == "sysctl") sysctl = $2 == -1 ? "+Inf" : $2
			else { own[$2] = lim($3); eff[$2] = lim($4)
			       fail[$2] = $5; oom[$2] = $6 }
			next
		}
		$1 == "vm_retry_allocation_attempts" && $2 != sysctl {
			print "sysctl exported " $2 ", is " sysctl
		}
		/^memcg_/ {
			name = $0; sub(/\{.*/, "", name)
			path = $0; sub(/^[^"]*"/, "", path); sub(/"\}.*/, "", path)
			gsub(/\\"/, "\"", path); gsub(/\\\\/, "\\", path)
			v = $NF
			if (!(path in own)) next
			seen[path] = 1
			if (name == "memcg_alloc_retries" && v != own[path] ||
			    name == "memcg_alloc_retries_effective" && v != eff[path])
				print path ": " name " exported " v ", file " \
					(name == "memcg_alloc_retries" ? own[path] : eff[path])
			if (name == "memcg_alloc_retry_fail_total") want = fail[path]
			else if (name == "memcg_oom_kill_total") want = oom[path]
			else next
			if (v + 0 > want + 0 || phase == "ended" &&
			    index(path, scenario) && v + 0 != want + 0)
				print path ": " name " exported " v ", memory.events " want
		}
		END { n = 0; for (p in seen) n++; print n " cgroups compared" }
	' "$out/$1.files" "$out/$1.metrics"
}

# exported PHASE METRIC CGROUP_SUFFIX: the value of METRIC for the one
# exported cgroup whose path ends in CGROUP_SUFFIX.
exported() {
	grep "^$2{cgroup=\"[^\"]*$3\"}" "$out/$1.metrics" | awk '{ print $NF }'
}

node_exporter_pid=

stop_node_exporter() {
	[ -z "$node_exporter_pid" ] || kill "$node_exporter_pid" 2>/dev/null || true
	wait "$node_exporter_pid" 2>/dev/null || true
}

# start_node_exporter DIR: node_exporter with its textfile collector on
# DIR, answering on $listen, until the case ends (each case is a
# subshell of its own: its EXIT trap stops it).
start_node_exporter() {
	trap stop_node_exporter EXIT
	prometheus-node-exporter --web.listen-address="$listen" \
		--collector.disable-defaults --collector.textfile \
		--collector.textfile.directory="$1" \
		>> "$out/node-exporter.log" 2>&1 &
	node_exporter_pid=$!
	wait_for 60 curl -fsS "http://$listen/metrics" > /dev/null 2>&1 ||
		diag "nothing answers on $listen after 60 s"
	# Ours, not another one on the port.
	kill -0 "$node_exporter_pid" || { run cat "$out/node-exporter.log"; return 1; }
}

scenario_observed() {
	rm -rf "$out" "$textfiles"
	mkdir -p "$out" "$textfiles"
	start_node_exporter "$textfiles"
	RUN_SCENARIOS_OBSERVER=$(cd "$(dirname "$0")" && pwd)/$(basename "$0") \
		run "$runner" "$out/scenarios" "$scenario"
	for phase in running ended; do
		run test -s "$out/$phase.metrics"
		assert_grep 'node_textfile_scrape_error 0' "$out/$phase.metrics"
		assert_grep 'vm_retry_allocation_attempts ' "$out/$phase.metrics"
	done
}

exported_is_what_the_kernel_says() {
	local phase
	for phase in running ended; do
		compare "$phase" > "$out/$phase.compare"
		run cat "$out/$phase.compare"
		assert_eq "$(grep -vc 'cgroups compared$' "$out/$phase.compare")" 0 \
			"$phase: mismatches"
		# The scenario's containers, at least, were compared.
		[ "$(awk '/cgroups compared$/ { print $1 }' "$out/$phase.compare")" -ge 4 ] ||
			{ diag "$phase: fewer than 4 cgroups compared"; return 1; }
	done
}

policies_and_counts_are_there() {
	local s=$scenario
	assert_eq "$(exported running memcg_alloc_retries_effective "/$s/failfast-0/container")" 0 \
		"failfast-0, effective"
	assert_eq "$(exported running memcg_alloc_retries_effective "/$s/failfast-3/container")" 3 \
		"failfast-3, effective"
	assert_eq "$(exported running memcg_alloc_retries_effective "/$s/legacy-max/container")" +Inf \
		"legacy-max, effective"
	# awk: node_exporter writes 1e+06 and up in exponent form.
	exported ended memcg_alloc_retry_fail_total "/$s/failfast-0" |
		awk '{ exit !($1 > 0) }' ||
		{ diag "failfast-0: alloc_retry_fail 0 at the end"; return 1; }
	grep "^memcg_oom_kill_total{cgroup=\"[^\"]*/$s/" "$out/ended.metrics" |
		awk '{ n += $NF } END { exit !(n > 0) }' ||
		{ diag "$s: no oom_kill exported"; return 1; }
}

# Names any delegated user can give its cgroups: node_exporter must go on
# serving every metric (one bad line and it drops the whole file), the
# ones the text format carries exported, escaped, the other counted.
# (cgroupfs refuses a newline; qemu/checks/prometheus tries one on a
# made-up tree.)
hostile_names_blind_nothing() {
	local name
	# Not local: the EXIT trap runs after the function has returned.
	top=/sys/fs/cgroup/hostile-names
	names=('quote"d' 'back\slash' $'not-utf8-\xff\xfe')
	mkdir -p "$top"
	# After start_node_exporter's trap, which this one replaces.
	start_node_exporter "$textfiles"
	trap 'stop_node_exporter; for name in "${names[@]}"; do
		rmdir "$top/$name" 2> /dev/null; done; rmdir "$top"' EXIT
	echo +memory > "$top/cgroup.subtree_control"
	for name in "${names[@]}"; do
		mkdir "$top/$name"
	done
	"$contrib/prometheus/alloc-retries-textfile" "$textfiles/alloc_retries.prom"
	curl -fsS "http://$listen/metrics" > "$out/hostile.metrics"
	assert_grep 'node_textfile_scrape_error 0' "$out/hostile.metrics"
	assert_grep 'memcg_alloc_retries_effective{cgroup="/hostile-names/quote\"d"}' \
		"$out/hostile.metrics"
	assert_grep 'memcg_alloc_retries_effective{cgroup="/hostile-names/back\\slash"}' \
		"$out/hostile.metrics"
	assert_line 'alloc_retries_textfile_cgroups{state="not_utf8"} 1' \
		"$out/hostile.metrics"
}

# The shipped units, installed as rollout.md says: the service runs the
# collector as node_exporter's user into a directory of its own, Debian's
# textfile directory (root's) gets a link to the file, node_exporter
# reading that directory serves it, and the timer is what starts the
# service.
units_run_it_unprivileged() {
	local debian=/var/lib/prometheus/node-exporter
	local prom=/var/lib/alloc-retries-textfile/alloc_retries.prom
	trap 'stop_node_exporter; systemctl disable --now alloc-retries-textfile.timer
		rm -rf /var/lib/alloc-retries-textfile "$debian/alloc_retries.prom" \
			/usr/local/bin/alloc-retries-textfile \
			/etc/systemd/system/alloc-retries-textfile.*
		systemctl daemon-reload' EXIT
	install -m 755 "$contrib/prometheus/alloc-retries-textfile" /usr/local/bin/
	install -m 644 "$contrib/prometheus/alloc-retries-textfile.service" \
		"$contrib/prometheus/alloc-retries-textfile.timer" /etc/systemd/system/
	ln -sfn "$prom" "$debian/alloc_retries.prom"
	systemctl daemon-reload
	run systemctl start alloc-retries-textfile.service ||
		{ run journalctl -b -q --no-pager -u alloc-retries-textfile.service; return 1; }
	assert_eq "$(stat -c %U "$prom")" prometheus "the file's owner"
	assert_line 'alloc_retries_supported 1.0' "$prom"
	start_node_exporter "$debian"
	curl -fsS "http://$listen/metrics" > "$out/units.metrics"
	assert_line 'alloc_retries_supported 1' "$out/units.metrics"
	assert_grep 'node_textfile_scrape_error 0' "$out/units.metrics"
	run systemctl enable --now alloc-retries-textfile.timer
	assert_eq "$(systemctl is-active alloc-retries-textfile.timer)" active \
		"the timer"
}

tap_run scenario_observed exported_is_what_the_kernel_says \
	policies_and_counts_are_there hostile_names_blind_nothing \
	units_run_it_unprivileged
