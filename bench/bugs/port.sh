# port.sh: sourced by the run.sh of the corpus's servers (bash: /dev/tcp).
#
# bugs_port DIR prints the loopback port a server of the case whose
# OUTDIR is DIR listens on: a number from DIR's path, the same in every
# run of the case (normal and buggy), or the next one when a server
# already listens there. A server keeps its port in a variable (redis's
# server.port, memcached's settings.port); a port that differed between
# the normal and the buggy run would be one more input that differs
# (culprit diagnose lists the run-constant values that differ between the
# two kinds of run), which the bug does not explain.
bugs_port() {
	p=$((20000 + $(printf '%s' "$(cd "$1" && pwd)" | cksum | cut -d' ' -f1) % 20000))
	for _ in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || {
			echo "$p"
			return 0
		}
		p=$((p + 1))
	done
	echo "run.sh: no free loopback port from $((p - 100)) to $((p - 1))" >&2
	return 1
}
