# The host scripts' shared shell: progress lines, the unpacked source
# committed as the tag "base", and a long build run with progress lines.
# Sourced, after the script has set $label (the prefix of its lines):
#   label=kernel
#   . "$top/qemu/lib.sh"
# shellcheck shell=bash

say() { printf '%s: %s\n' "${label:?}" "$*"; }
die() { printf '%s: error: %s\n' "${label:?}" "$*" >&2; exit 1; }

# tap_check N NAME LOG COMMAND...: the host checks' TAP line N for NAME:
# "ok" if COMMAND exits 0, its output kept in LOG; else "not ok", and
# LOG's last lines as TAP comments.
tap_check() {
	local n=$1 name=$2 log=$3
	shift 3
	if "$@" > "$log" 2>&1; then
		echo "ok $n $name"
	else
		echo "not ok $n $name (log: $log)"
		tail -20 "$log" | sed 's/^/# /'
	fi
}

# commit_as_base SRC VERSION MESSAGE: commit the unpacked tree SRC as the
# tag "base", the starting point qemu/build/apply-series applies a series
# to, and note the Debian VERSION it was unpacked from.
commit_as_base() {
	local src=$1 version=$2 message=$3
	git -C "$src" init -q -b base-branch
	# An automatic gc of an 80k-file base commit would cost minutes of CPU.
	git -C "$src" config gc.auto 0
	# A tree's own .gitignore (the kernel's ends in "/*"): force the add.
	git -C "$src" add -A -f
	git -C "$src" -c user.name=build -c user.email=build@localhost \
		commit -q -m "$message"
	git -C "$src" tag base
	echo "$version" > "$src/.git/debian-version"
}

# base_version SRC: the Debian version SRC was unpacked from, if any.
base_version() {
	cat "$1/.git/debian-version" 2>/dev/null || true
}

# build_with_progress LOG PROGRESS COMMAND...: run COMMAND, its output in
# LOG, with a progress line every 30 s ("Ns, " and what the function
# PROGRESS prints); a command with nothing to do ends at once.  On failure
# the log's first error lines and "error: build failed, see LOG".
build_with_progress() {
	local log=$1 progress=$2 pid start ticks=0
	shift 2
	start=$(date +%s)
	"$@" > "$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		ticks=$((ticks + 1))
		if [ $((ticks % 30)) != 0 ] || ! kill -0 "$pid" 2>/dev/null; then
			continue
		fi
		say "  $(( $(date +%s) - start ))s, $("$progress" "$log")"
	done
	if ! wait "$pid"; then
		grep -E 'error|Error' "$log" | head -20 >&2
		die "build failed, see $log"
	fi
	build_seconds=$(( $(date +%s) - start ))
}

# ccache hashes paths relative to $1 (the build directory), and not
# -fmacro-prefix-map (it only turns the source tree's absolute path into ""
# in __FILE__): so a clean clone elsewhere hits the cache of this one, and
# so does any kernel tree laid out as SRC/../linux beside OBJ/../kernel-obj
# (the objects' directory is where the compiler runs: a source path
# becomes ../linux/... in either).
#
# Depend mode: on a miss ccache takes the headers from the compiler's own
# dependency file (kbuild's -Wp,-MMD, meson's -MD) instead of running the
# preprocessor first; in direct mode a miss costs that extra run, about a
# quarter more CPU per kernel file (mm/page_alloc.c: 3.47 s against 2.71
# s, the plain compiler 2.88 s), which a cold build pays on every file.
ccache_relative_to() {
	export CCACHE_BASEDIR=$1 CCACHE_IGNOREOPTIONS='-fmacro-prefix-map=*' \
		CCACHE_DEPEND=1
}

kbuild_progress() {
	echo "$(grep -c '^  CC' "$1" || true) files compiled"
}

# kbuild_bzimage SRC OBJ LOG JOBS: build bzImage in OBJ from the
# configured kernel tree SRC (qemu/build/kernel, the unpatched tree of
# qemu/build/stock-kernel and qemu/checks/compare-fastpath).
kbuild_bzimage() {
	local src=$1 obj=$2 log=$3 jobs=$4
	say "building bzImage with $jobs jobs (log: $log)"
	build_with_progress "$log" kbuild_progress \
		make -C "$src" O="$obj" -j"$jobs" CC="ccache gcc" \
		KBUILD_BUILD_USER=build KBUILD_BUILD_HOST=qemu bzImage
	say "bzImage ready in ${build_seconds}s: $obj/arch/x86/boot/bzImage"
}
