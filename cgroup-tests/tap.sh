# The shell tests' TAP and assertions, in the manner of systemd's
# test/units/util.sh: each case is a function run in a subshell under
# set -e, so the first failed assertion ends it; it cleans up with a trap
# on EXIT.  Sourced:
#   . "$(dirname "$0")/tap.sh"
#   tap_run case_one case_two
# shellcheck shell=bash
set -eu -o pipefail

diag() { printf '# %s\n' "$*"; }

# run COMMAND...: its output as TAP diagnostics, as it comes; its exit
# status, said if it is not 0.
run() {
	local rc=0
	"$@" 2>&1 | sed -u 's/^/#   /' || rc=${PIPESTATUS[0]}
	[ "$rc" = 0 ] || diag "exit status $rc: $*"
	return "$rc"
}

# version_of PROGRAM: "PROGRAM X.Y.Z", from the first line of its
# --version ("crun version 1.8.1").
version_of() {
	"$1" --version | awk -v p="$1" 'NR == 1 { print p, $NF }'
}

# record_leftovers FILE TOOL MANAGER VALUE LEFT: a row of what a start
# that failed on VALUE left behind, for Documentation/containers.md's
# table (make readme renders it).
record_leftovers() {
	printf '%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$5" >> "$1"
}

# assert_eq GOT WANT WHAT
assert_eq() {
	[ "$1" = "$2" ] && return 0
	diag "$3: \"$1\", want \"$2\""
	return 1
}

# assert_file FILE WANT: FILE reads WANT (one line).
assert_file() {
	assert_eq "$(cat "$1" 2>&1)" "$2" "$1"
}

# assert_grep PATTERN FILE: a line of FILE has the fixed string PATTERN.
assert_grep() {
	grep -qF -- "$1" "$2" && return 0
	diag "$2: no line with \"$1\"; it holds:"
	sed 's/^/#   /' "$2"
	return 1
}

# assert_line LINE FILE: a whole line of FILE is LINE.
assert_line() {
	grep -qxF -- "$1" "$2" && return 0
	diag "$2: no line \"$1\"; it holds:"
	sed 's/^/#   /' "$2"
	return 1
}

# assert_jq FILE EXPR: the jq filter EXPR holds for FILE.
assert_jq() {
	jq -e "$2" "$1" > /dev/null 2>&1 && return 0
	diag "$1: not $2; it holds (samples left out):"
	jq -c 'del(.samples?)' "$1" 2>&1 | sed 's/^/#   /'
	return 1
}

# assert_fails COMMAND...: COMMAND exits non-zero.
assert_fails() {
	# pipefail: the pipeline fails as COMMAND does.
	if "$@" 2>&1 | sed -u 's/^/#   /'; then
		diag "did not fail: $*"
		return 1
	fi
}

# wait_for SECONDS COMMAND...: run COMMAND every 0.2 s until it succeeds
# (status 0), or until SECONDS of the clock have passed (status 1).  The
# clock, not a count of tries: on the debug kernel one try of a jq or a
# journalctl can take a second.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.2
	done
}

# ended PID: PID is no longer a process this shell can signal.  For a
# child of this shell that is once it exited (bash reaps its children);
# for another process, once its parent reaped it.
ended() {
	! kill -0 "$1" 2> /dev/null
}

# not_one FILE: FILE does not read "1" (or cannot be read).
not_one() {
	[ "$(cat "$1" 2> /dev/null)" != 1 ]
}

# say_tasks PID...: each process as TAP diagnostics, for a wait that ran
# out: pid, name, cgroup, state, the signals pending, blocked and caught,
# its wait channel and system call, and the top of its kernel stack.
say_tasks() {
	local pid
	for pid in "$@"; do
		diag "  $pid $(cat "/proc/$pid/comm" 2> /dev/null)" \
			"$(sed -n 's/^0:://p' "/proc/$pid/cgroup" 2> /dev/null)" \
			"$(grep -E '^(State|SigPnd|ShdPnd|SigBlk|SigCgt):' "/proc/$pid/status" 2> /dev/null |
				tr '\t\n' '  ')" \
			"wchan $(cat "/proc/$pid/wchan" 2> /dev/null)" \
			"syscall $(cut -d' ' -f1 "/proc/$pid/syscall" 2> /dev/null)"
		diag "    stack: $(head -n 8 "/proc/$pid/stack" 2> /dev/null |
			sed 's/^\[<[0-9a-f]*>\] //' | tr '\n' ' ')"
	done
}

# systemd_reapply VERB CGROUP: systemctl VERB (daemon-reload or
# daemon-reexec), and wait until PID 1 has re-applied the settings of the
# unit whose cgroup directory is CGROUP, which it does after it answers.
# The sign is memory.oom.group, which it writes on every application (0
# for the units of these tests): set to 1 first, back at 0 once it did.
systemd_reapply() {
	local verb=$1 cg=$2
	echo 1 > "$cg/memory.oom.group"
	run systemctl "$verb"
	wait_for 20 not_one "$cg/memory.oom.group" && return 0
	diag "systemctl $verb: ${cg#/sys/fs/cgroup} not re-applied after 20 s"
	return 1
}

# tap_run CASE...: the plan, then "ok"/"not ok" per case; exit status 1
# if any failed.
tap_run() {
	local n=0 failed=0 rc
	echo "TAP version 13"
	echo "1..$#"
	for t in "$@"; do
		n=$((n + 1))
		set +e
		(set -e; "$t")
		rc=$?
		set -e
		if [ "$rc" = 0 ]; then
			echo "ok $n $t"
		else
			echo "not ok $n $t"
			failed=1
		fi
	done
	return "$failed"
}
