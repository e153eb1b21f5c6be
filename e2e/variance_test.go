package e2e

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/culprit-dev/culprit/internal/testutil"
)

type varianceJSON struct {
	Intervals  int                `json:"intervals"`
	Mean       float64            `json:"mean_ns"`
	P99        float64            `json:"p99_ns"`
	Rounds     int                `json:"rounds"`
	States     map[string]float64 `json:"states"`
	RoundStart uint64             `json:"round_start_ns"`
	Off        [][2]uint64        `json:"probes_off"`
	LostOut    int                `json:"lost_calls_intervals"`
	Warnings   []string           `json:"warnings"`
	Probes     int                `json:"probes"`
	Height     int                `json:"tree_height"`
	Breadth    int                `json:"tree_breadth"`
	Factors    []varianceFactor   `json:"factors"`
	Ranked     []varianceFactor   `json:"ranked"`
	Variance   float64            `json:"variance_ns2"`
	Rows       []varianceRow      `json:"rows"`
}

// varianceRow is one interval of culprit variance --format json.
type varianceRow struct {
	Start      uint64             `json:"start_ns"`
	Duration   float64            `json:"duration_ns"`
	Key        string             `json:"key"`
	Threads    []uint32           `json:"threads"`
	Goroutines []uint64           `json:"goroutines"`
	Parts      map[string]float64 `json:"parts_ns"`
}

type varianceFactor struct {
	Kind         string             `json:"kind"`
	Names        []string           `json:"names"`
	Contribution float64            `json:"contribution"`
	Leaf         bool               `json:"leaf"`
	Mean         float64            `json:"mean_ns"`
	States       map[string]float64 `json:"states"`
	Holders      map[string]float64 `json:"lock_holders"`
	Sites        []struct {
		Path string `json:"path"`
	} `json:"sites"`
}

// checkShare checks culprit's share of the variance for function fn
// against the share the program measured over the same requests (within 5
// points), and that fn is the first factor when that share is over half:
// on a busy machine the scheduler's delays can outweigh what the program
// sets, and then both measures say so.
func checkShare(t *testing.T, r varianceJSON, fn string, share float64) {
	t.Helper()
	for _, f := range r.Ranked {
		if f.Kind != "variance" || len(f.Names) != 1 || f.Names[0] != fn {
			continue
		}
		t.Logf("%s %.1f%% of the variance, the program's %.1f%%", fn, 100*f.Contribution, 100*share)
		if math.Abs(f.Contribution-share) > 0.05 {
			t.Errorf("%s's share %.3f, the program's %.3f", fn, f.Contribution, share)
		}
		// First for sure only when no other factor can rival it: each
		// share is measured within 0.05 (above), so one over half the
		// variance by less than that can tie with the rest (a queue
		// wait that grew with the machine's load: 51.2% against
		// slow_io's 50.3%).
		if share > 0.55 && (len(r.Factors) == 0 || r.Factors[0].Names[0] != fn) {
			t.Errorf("factors %+v: want %s first", r.Factors, fn)
		}
		return
	}
	t.Errorf("%s is not a factor: %+v", fn, r.Ranked)
}

// varpoolRequests reads the per-request times varpool prints ("req START
// t0 t1 ..."), keeping the requests begun at or after since and not
// overlapping a span when the probes were off (the trap budget's pauses).
func varpoolRequests(t *testing.T, stdout string, since uint64, off [][2]uint64) [][]float64 {
	t.Helper()
	var out [][]float64
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] != "req" {
			continue
		}
		start, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		if start < since {
			continue
		}
		var row []float64
		for _, s := range f[2:] {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("bad line %q", sc.Text())
			}
			row = append(row, v)
		}
		if overlaps(off, start, start+uint64(row[vpHandle])) {
			continue
		}
		out = append(out, row)
	}
	return out
}

// overlaps reports whether from..to overlaps one of the spans.
func overlaps(spans [][2]uint64, from, to uint64) bool {
	for _, s := range spans {
		if from <= s[1] && to >= s[0] {
			return true
		}
	}
	return false
}

// cov is the sample covariance of columns i and j.
func cov(rows [][]float64, i, j int) float64 {
	var mi, mj float64
	for _, r := range rows {
		mi += r[i]
		mj += r[j]
	}
	n := float64(len(rows))
	mi /= n
	mj /= n
	s := 0.0
	for _, r := range rows {
		s += (r[i] - mi) * (r[j] - mj)
	}
	return s / (n - 1)
}

// The columns of varpool's request lines.
const (
	vpHandle = iota
	vpParse
	vpProcess
	vpLookup
	vpCompute
	vpRespond
	vpA
	vpB
)

func varianceRun(t *testing.T, mode, n, workers string) (varianceJSON, [][]float64) {
	t.Helper()
	bin := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	// Every call is traced: the trap budget's windows end as soon as
	// they have spent it, so on a busy machine its pauses could leave
	// fewer than the rounds need (TestVarianceTrapBudgetPauses checks
	// them).
	stdout := mustRun(t, "variance", "--start", "handle", "--round-intervals", "500", "--trap-budget", "0", "-o", out, "--", bin, mode, n, workers)
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	reqs := varpoolRequests(t, stdout, r.RoundStart, r.Off)
	// The program's requests of the last round, outside the trap budget's
	// pauses, are culprit's intervals (the few that began while the probes
	// were being set aside).
	if len(reqs) < 1000 || math.Abs(float64(r.Intervals-len(reqs))) > 0.01*float64(len(reqs)) {
		t.Fatalf("culprit used %d intervals; the program ran %d requests in the last round (want 1000 or more, and the same)", r.Intervals, len(reqs))
	}
	return r, reqs
}

// A thread-pool server where compute's variance dominates, two calls
// below the interval's function: culprit starts from handle's callees,
// breaks process down on the running program, and reports compute first
// with its share of handle's variance within 5 points of the share the
// program measures over the same requests.
func TestVarianceDominantFunction(t *testing.T) {
	testutil.NeedRoot(t)
	r, reqs := varianceRun(t, "dominant", "5000", "8")
	if r.Rounds < 2 || r.Height < 2 {
		t.Errorf("%d rounds, tree height %d: compute is found only by refining process (want 2 rounds or more, height 2)", r.Rounds, r.Height)
	}
	if len(r.Factors) == 0 {
		t.Fatal("no factor reported")
	}
	f := r.Factors[0]
	if f.Kind != "variance" || len(f.Names) != 1 || f.Names[0] != "compute" {
		t.Fatalf("first factor %s %v, want compute; factors %+v", f.Kind, f.Names, r.Factors)
	}
	truth := cov(reqs, vpCompute, vpCompute) / cov(reqs, vpHandle, vpHandle)
	t.Logf("%d intervals, %d rounds, height %d, breadth %d; compute %.1f%% (program %.1f%%)", r.Intervals, r.Rounds, r.Height, r.Breadth, 100*f.Contribution, 100*truth)
	if d := math.Abs(f.Contribution - truth); d > 0.05 {
		t.Errorf("compute holds %.1f%% of the variance per culprit, %.1f%% per the program", 100*f.Contribution, 100*truth)
	}
	if len(f.Sites) != 1 || !strings.Contains(f.Sites[0].Path, "process") {
		t.Errorf("compute's call sites %+v, want one, under process", f.Sites)
	}
}

// A C++ interval named as in a debugger: --start handle is svc::handle,
// each of whose calls is an interval, and its callees (svc::make_shape,
// both instances of geo::Accum::add) are probed from the first round.
func TestVarianceCXXBareName(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.CXX(t, "cxxtrace", []string{"cxxtrace.cc"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout := mustRun(t, "variance", "--start", "handle", "--rounds", "1", "--trap-budget", "0", "-o", out, "--", bin, "1000")
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range append(r.Factors, r.Ranked...) {
		for _, n := range f.Names {
			names[n] = true
		}
	}
	want := counts(t, stdout)["handle"]
	if r.Intervals != want || !names["svc::make_shape"] || !names["geo::Accum<long>::add(long)"] || !names["geo::Accum<double>::add(double)"] {
		t.Errorf("%d intervals, factors %v: want svc::handle's %d calls, its callees svc::make_shape and both geo::Accum::add probed", r.Intervals, names, want)
	}
}

// A trap budget far under what the probes take: the probes are removed
// after the first half-second window (and set again after each pause),
// the pauses are in the report, and the intervals analysed are exactly
// the program's requests that overlap no pause, with the dominant
// callee's share within 5 points of the program's over those requests.
func TestVarianceTrapBudgetPauses(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	// 4 probes, 8 traps a request: any pool serving over 500 requests a
	// second takes more than 4000 traps a second; 40,000 requests last
	// longer than the first window on any machine. A window ends once
	// its traps reach the budget's 2000, about 250 requests: one window
	// outside the pauses is enough intervals, however long a busy
	// machine makes the pauses (with 1000 a second, a run that saw a
	// single pause had 81).
	stdout := mustRun(t, "variance", "--start", "handle", "--rounds", "1", "--trap-budget", "4000", "--window", "500ms", "-o", out, "--", bin, "dominant", "40000", "8")
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Off) == 0 {
		t.Fatal("no pause recorded: the probes' traps stayed under 1000 a second")
	}
	all := varpoolRequests(t, stdout, 0, nil)
	reqs := varpoolRequests(t, stdout, r.RoundStart, r.Off)
	t.Logf("%d pauses; %d intervals; the program's requests %d, %d overlapping no pause", len(r.Off), r.Intervals, len(all), len(reqs))
	if len(reqs) >= len(all) || len(reqs) < 100 {
		t.Fatalf("%d of the program's %d requests overlap no pause: want fewer than all, and 100 or more", len(reqs), len(all))
	}
	if d := math.Abs(float64(r.Intervals - len(reqs))); d > 0.01*float64(len(reqs))+3 {
		t.Fatalf("culprit analysed %d intervals; the program ran %d requests outside the pauses", r.Intervals, len(reqs))
	}
	if len(r.Factors) == 0 || r.Factors[0].Names[0] != "process" {
		t.Fatalf("factors %+v, want process first", r.Factors)
	}
	truth := cov(reqs, vpProcess, vpProcess) / cov(reqs, vpHandle, vpHandle)
	t.Logf("process %.2f%% of the variance, the program's %.2f%%", 100*r.Factors[0].Contribution, 100*truth)
	if d := math.Abs(r.Factors[0].Contribution - truth); d > 0.05 {
		t.Errorf("process holds %.1f%% of the variance per culprit, %.1f%% per the program over the same requests", 100*r.Factors[0].Contribution, 100*truth)
	}
}

// Intervals in which the tracer dropped calls are left out: deeprec's
// middle phase recurses deeper than the shadow stack holds, between two
// phases of shallow rounds 100 ms away (the tracer reads its drop counts
// every 10 ms and marks the span between two reads). Its 10 rounds are
// left out, and at least one shallow phase is kept whole.
func TestVarianceLostCallsLeftOut(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "deeprec", []string{"deeprec.c"}, "-O2", "-g")
	out := rec(t)
	_, stderr, code := run(t, "variance", "--start", "round_", "--functions", "round_,descend", "--trap-budget", "0", "--rounds", "1", "-o", out, "--", bin, "150")
	if code != 0 || !strings.Contains(stderr, "nested deeper than 64 traced calls") {
		t.Fatalf("variance: exit %d, want a warning that calls nested too deep were not recorded\n%s", code, stderr)
	}
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d intervals, %d left out for dropped calls", r.Intervals, r.LostOut)
	if r.Intervals+r.LostOut != 310 || r.LostOut < 10 || r.Intervals < 150 {
		t.Errorf("%d intervals kept, %d left out for dropped calls: want the 10 deep ones of 310 left out, and a shallow phase of 150 kept", r.Intervals, r.LostOut)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "dropped calls") {
		t.Errorf("no warning says intervals were left out: %q", r.Warnings)
	}
	// The deep rounds' calls within the shadow stack's 64 frames (round_
	// and 63 of descend's 80) are recorded whole: the returns of the
	// deeper ones, which the kernel sets no return probe for, are not
	// awaited.
	var rep struct {
		Functions []struct {
			Function   string `json:"function"`
			Calls      int    `json:"calls"`
			Unreturned int    `json:"unreturned"`
		} `json:"functions"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--format", "json", out)), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"round_": 310, "descend": 2*150*8 + 10*63}
	for _, f := range rep.Functions {
		if f.Calls != want[f.Function] || f.Unreturned != 0 {
			t.Errorf("%s: %d calls (%d unreturned), want %d, all returned", f.Function, f.Calls, f.Unreturned, want[f.Function])
		}
		delete(want, f.Function)
	}
	if len(want) > 0 {
		t.Errorf("not traced: %v", want)
	}
}

// Two functions slow in the same requests: their covariance is reported
// as a factor, with 2·Cov's share within 5 points of the program's.
func TestVarianceCovarianceFactor(t *testing.T) {
	testutil.NeedRoot(t)
	r, reqs := varianceRun(t, "together", "3000", "8")
	truth := 2 * cov(reqs, vpA, vpB) / cov(reqs, vpHandle, vpHandle)
	// Culprit's covariance matches the program's over the same requests;
	// it is among the chosen factors when it is a sizeable share (a busy
	// machine's long preemptions can swamp what the program sets, and
	// then the program's own share is small too).
	for _, f := range r.Ranked {
		if f.Kind == "covariance" && strings.Join(f.Names, ",") == "part_a,part_b" {
			t.Logf("%d intervals; (part_a, part_b) %.1f%% (program %.1f%%)", r.Intervals, 100*f.Contribution, 100*truth)
			if d := math.Abs(f.Contribution - truth); d > 0.05 {
				t.Errorf("(part_a, part_b) holds %.1f%% of the variance per culprit, %.1f%% per the program", 100*f.Contribution, 100*truth)
			}
			chosen := false
			for _, c := range r.Factors {
				chosen = chosen || c.Kind == "covariance" && strings.Join(c.Names, ",") == "part_a,part_b"
			}
			if truth > 0.1 && !chosen {
				t.Errorf("(part_a, part_b) holds %.1f%% of the variance but is not among the factors %+v", 100*truth, r.Factors)
			}
			return
		}
	}
	t.Errorf("no covariance factor (part_a, part_b) among %+v (the program's 2·Cov share %.1f%%)", r.Ranked, 100*truth)
}

// Bad input: clear errors, no stack trace.
func TestVarianceBadInput(t *testing.T) {
	bin := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"variance", "--", bin, "dominant", "10", "1"}, "--start"},
		{[]string{"variance", "--start", "handle", "--key", "id", "--", bin, "dominant", "10", "1"}, "--end"},
		{[]string{"variance", "--start", "handle", "-d", "2", "--", bin}, "fraction"},
		{[]string{"variance", "-i", "/nonexistent.rec"}, "nonexistent"},
	} {
		_, stderr, code := run(t, c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("culprit %v: exit %d, stderr %q; want an error naming %q", c.args, code, stderr, c.want)
		}
	}
}

// A key pairs each submit (main thread) with the complete of the same id
// (consumer thread): every request is one interval, and the intervals'
// mean is the program's own mean latency.
func TestVarianceKeyAcrossThreads(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout := mustRun(t, "variance", "--start", "submit", "--end", "complete", "--key", "id", "--rounds", "1", "-o", out, "--", bin, "handoff", "1000")
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	checkLatencies(t, r, stdout, 1000)
}

// checkLatencies checks culprit's intervals against the latencies a
// program printed ("lat ID NS"): one interval per request (want of them),
// and a mean no lower than the program's (its clock reads sit inside the
// probed span) and no higher than 5% + 20 µs (the probes' own time).
func checkLatencies(t *testing.T, r varianceJSON, stdout string, want int) {
	t.Helper()
	n, sum := 0, 0.0
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "lat" {
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				t.Fatalf("bad line %q", l)
			}
			n++
			sum += v
		}
	}
	if n != want || r.Intervals != n {
		t.Fatalf("%d intervals, the program made %d requests (want %d)", r.Intervals, n, want)
	}
	mean := sum / float64(n)
	t.Logf("mean %.0f ns, the program's %.0f ns", r.Mean, mean)
	if r.Mean < mean || r.Mean > mean*1.05+20000 {
		t.Errorf("intervals' mean %.0f ns, the program's mean latency %.0f ns", r.Mean, mean)
	}
}

// Attached to a running server (-p), culprit refines on it and leaves it
// running; calls entered while the probes are being removed are not left
// open (they would nest in each other and deepen the tree). culprit runs
// until a second round has timed its intervals (its "round 2:" line), then
// is interrupted: not for a fixed time, which the trap budget's pauses can
// fill under load (the probes are set at most 5% of the time once over the
// budget, and setting and removing them is slow on a busy machine: at a
// load of 10 a 377 ms window was followed by a 3.6 s pause, and a 4 s run
// ended in it with one round).
func TestVarianceAttach(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	cmd := exec.Command(bin, "dominant", "1000000", "8")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Attach once the server serves: varpool first fills its table of a
	// million requests (144 MB), which takes seconds of page faults on a
	// loaded VM (4.5 s at a load of 23), and a run attached before its
	// workers start sees no call.
	waitThreadsCPU(t, cmd.Process.Pid, 1+8, 0)
	out := rec(t)
	v := exec.Command(culprit, "variance", "--start", "handle", "-p", strconv.Itoa(cmd.Process.Pid), "--rounds", "2", "--round-intervals", "300", "-o", out)
	var errb lockedBuffer
	v.Stderr = &errb
	if err := v.Start(); err != nil {
		t.Fatal(err)
	}
	defer v.Process.Kill()
	waitFor(t, "culprit variance to time a second round", func() bool { return strings.Contains(errb.String(), "culprit: round 2:") })
	if err := interrupt(t, "culprit variance", v, errb.String); err != nil {
		t.Fatalf("culprit variance after SIGINT: %v\n%s", err, errb.String())
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the server did not survive: %v", err)
	}
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	// The analysis is of the last round.
	if r.Rounds != 2 || r.Height != 2 || r.Intervals == 0 {
		t.Errorf("%d rounds, tree height %d, %d intervals: want 2 rounds, height 2 (handle > process > compute), and intervals in the last\n%s", r.Rounds, r.Height, r.Intervals, errb.String())
	}
	if len(r.Factors) == 0 || r.Factors[0].Names[0] != "compute" {
		t.Errorf("factors %+v, want compute first", r.Factors)
	}
}

// With --sched the scheduler's switches and wake-ups are recorded too, and
// each interval's time splits by state: compute's heavy requests (one in
// five, by varpool's generator, repeated here) wait 10 ms in nanosleep,
// which is the sleep state's time (a timer's sleep ends on time whatever
// the load; a busy machine's wait for a CPU after it is runnable, and can
// be the larger part: under two busy loops it was, 2 runs in 3), and the
// states add up to the mean.
func TestVarianceSchedStates(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	const n = 1500
	stdout := mustRun(t, "variance", "--sched", "--trap-budget", "0", "--start", "compute", "--rounds", "1", "-o", out, "--", bin, "dominant", strconv.Itoa(n), "4")
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	reqs, slow := 0, 0
	for _, l := range strings.Split(stdout, "\n") {
		// req START t[handle] t[parse] t[process] t[lookup] t[compute] ...
		if f := strings.Fields(l); len(f) >= 7 && f[0] == "req" {
			reqs++
		}
	}
	x := uint64(88172645463325252) // varpool.c's requests
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if x%5 == 0 {
			slow++
		}
	}
	if reqs != n || r.Intervals+r.LostOut != n || r.LostOut > 0 {
		t.Fatalf("%d intervals (%d left out for lost calls), the program served %d requests (want %d)", r.Intervals, r.LostOut, reqs, n)
	}
	sum := 0.0
	for _, v := range r.States {
		sum += v
	}
	asked := 10e6 * float64(slow) / n // the sleeps asked for, per interval
	t.Logf("%d intervals, mean %.0f ns: %v; %d heavy requests, %.0f ns of sleep asked per interval", r.Intervals, r.Mean, r.States, slow, asked)
	if sl := r.States["sleep"]; slow == 0 || sl < 0.97*asked || sl > 1.2*asked {
		t.Errorf("compute's sleep %.0f ns per interval, the heavy requests asked for %.0f ns", sl, asked)
	}
	if math.Abs(sum-r.Mean) > 0.05*r.Mean {
		t.Errorf("states add up to %.0f ns, the mean is %.0f ns", sum, r.Mean)
	}
}

// Lock contention: with --sched the factor that takes the mutex (chosen
// or not: a loaded machine's preemptions can outweigh it) shows its
// time, apart from waiting for a CPU, as lock wait, and the thread holding the mutex (named "holder") is
// named among the threads whose release ended the waits. Along the
// critical path, the holder's hold_big (probed too) is a node of the tree
// under locked_update, "hold_big (waker)". A wait the holder ended lies
// inside the holder's call, which takes the mutex and releases it, but
// that call includes the holder's own wait for the mutex while a worker
// kept it, and the path gives that part to the worker's locked_update
// (its own waker): so hold_big (waker) has at least the time of the waits
// the holder ended less the time the holder waited for the mutex, which
// the program measures ("holder_wait", over all requests). On a busy
// machine a worker preempted with the mutex makes that part large. Every
// call is traced: a trap budget's pause forgets the holder's calls open
// across it, and the waits they ended would then have no hold_big to
// stand for them.
func TestVarianceLockHolder(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout := mustRun(t, "variance", "--sched", "--trap-budget", "0", "--start", "handle", "--functions", "parse,locked_update,respond,hold_big", "--rounds", "1", "-o", out, "--", bin, "lock", "1500", "2")
	holderWait := -1.0
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "holder_wait" {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("bad line %q", l)
			}
			holderWait = v
		}
	}
	if holderWait < 0 {
		t.Fatalf("varpool printed no holder_wait:\n%s", stdout)
	}
	var r struct {
		Intervals int `json:"intervals"`
		Factors   []struct {
			Names   []string           `json:"names"`
			States  map[string]float64 `json:"states"`
			Holders map[string]float64 `json:"lock_holders"`
		} `json:"ranked"`
		Tree struct {
			Children []struct {
				Label    string  `json:"label"`
				Mean     float64 `json:"mean_ns"`
				Children []struct {
					Label string  `json:"label"`
					Mean  float64 `json:"mean_ns"`
				} `json:"children"`
			} `json:"children"`
		} `json:"tree"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Factors {
		if len(f.Names) != 1 || f.Names[0] != "locked_update" {
			continue
		}
		t.Logf("locked_update: states %v, lock waits ended by %v", f.States, f.Holders)
		total, byHolder, all := 0.0, 0.0, 0.0
		for _, v := range f.States {
			total += v
		}
		for k, v := range f.Holders {
			all += v
			if strings.HasPrefix(k, "holder[") {
				byHolder += v
			}
		}
		// Time waiting for a CPU is the machine's load, not the program's:
		// the lock's share is of the rest.
		if own := total - f.States["runnable"]; own <= 0 || f.States["lock"] < 0.3*own {
			t.Errorf("locked_update's time by state %v: want lock 30%% or more of the time not spent waiting for a CPU", f.States)
		}
		if all == 0 || byHolder < 0.1*all {
			t.Errorf("lock waits ended by %v: want the holder thread named", f.Holders)
		}
		for _, c := range r.Tree.Children {
			if c.Label != "locked_update" {
				continue
			}
			for _, k := range c.Children {
				if k.Label == "hold_big (waker)" {
					// The holder's waits, per interval as the means are.
					own := holderWait / float64(r.Intervals)
					t.Logf("hold_big (waker) %.0f ns of locked_update's %.0f ns; waits the holder ended %.0f ns; the holder's own waits for the mutex %.0f ns", k.Mean, c.Mean, byHolder, own)
					if k.Mean < 0.9*(byHolder-own) || k.Mean > c.Mean {
						t.Errorf("hold_big (waker) %.0f ns under locked_update (%.0f ns): want at least 90%% of the %.0f ns of waits the holder ended less the %.0f ns the holder waited for the mutex", k.Mean, c.Mean, byHolder, own)
					}
					return
				}
			}
			t.Errorf("no hold_big (waker) under locked_update: %+v", c.Children)
			return
		}
		t.Errorf("no locked_update under handle: %+v", r.Tree.Children)
		return
	}
	t.Errorf("locked_update is not a factor: %+v", r.Factors)
}

// A request accepted on one thread, handed to a worker across a queue:
// --queue pairs each enqueue with the dequeue that
// returned its item (by the pointer: enqueue's r is dequeue's return
// value), so every request is one interval from accept_req's entry to
// the worker's serve's return. The worker's slow_io, whose sleeps the
// program sets, is the first factor within 5 points of the share the
// program measures over the same requests, and the time in the queue is a
// bucket of its own whose mean is the program's.
func TestVarianceQueueHandoff(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varqueue", []string{"varqueue.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout := mustRun(t, "variance", "--start", "accept_req", "--end", "serve", "--queue", "enqueue:dequeue", "--queue-key", "r:return",
		"--sched", "--rounds", "1", "-o", out, "--", bin, "600", "8")
	var r struct {
		varianceJSON
		Tree struct {
			Children []struct {
				Kind   string             `json:"kind"`
				Label  string             `json:"label"`
				Mean   float64            `json:"mean_ns"`
				States map[string]float64 `json:"states"`
			} `json:"children"`
		} `json:"tree"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	var n int
	var lat, queued, share float64
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 5 && f[0] == "req":
			a, err1 := strconv.ParseFloat(f[2], 64)
			b, err2 := strconv.ParseFloat(f[3], 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("bad line %q", l)
			}
			n++
			lat += a
			queued += b
		case len(f) == 3 && f[0] == "share" && f[1] == "slow_io":
			share, _ = strconv.ParseFloat(f[2], 64)
		}
	}
	if n != 600 || r.Intervals != n {
		t.Fatalf("%d intervals, the program served %d requests (want 600)", r.Intervals, n)
	}
	lat /= float64(n)
	queued /= float64(n)
	// The program's clock reads sit inside the probed calls: culprit's
	// intervals are longer by the probes' own time, a few µs.
	if r.Mean < lat || r.Mean > lat*1.05+20000 {
		t.Errorf("intervals' mean %.0f ns, the program's mean latency %.0f ns", r.Mean, lat)
	}
	checkShare(t, r.varianceJSON, "slow_io", share)
	for _, c := range r.Tree.Children {
		if c.Label != "queue wait" {
			continue
		}
		// The program times from enqueue's last statement to dequeue's,
		// culprit from their returns: the two differ by the return probes.
		t.Logf("queue wait: mean %.0f ns (%v), the program's %.0f ns", c.Mean, c.States, queued)
		if math.Abs(c.Mean-queued) > 0.1*queued+20000 {
			t.Errorf("queue wait's mean %.0f ns, the program's %.0f ns", c.Mean, queued)
		}
		if math.Abs(c.States["queued"]-c.Mean) > 1 {
			t.Errorf("queue wait's states %v, want all queued", c.States)
		}
		varianceChrome(t, out, n)
		return
	}
	t.Errorf("no queue wait under the interval: %+v", r.Tree.Children)
}

// varianceChrome exports the recording as a Chrome trace and checks that
// it draws the n intervals, each with its critical path nested in it
// (segments covering the interval, the queue wait among them when it is
// not empty) and an arrow from the accepting thread to the worker.
func varianceChrome(t *testing.T, out string, n int) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "trace.json")
	mustRun(t, "export", "--format", "chrome", "-o", js, out)
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name string  `json:"name"`
			Cat  string  `json:"cat"`
			Ph   string  `json:"ph"`
			Ts   float64 `json:"ts"`
			TID  uint32  `json:"tid"`
			ID   uint64  `json:"id"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	type span struct {
		from, to, covered float64
		queued            bool
		depth             int
		segFrom           float64
	}
	spans := map[uint64]*span{}
	flows := map[uint64]uint32{}
	arrows := 0
	for _, e := range tr.TraceEvents {
		switch {
		case e.Cat == "interval" && e.Ph == "b":
			sp := spans[e.ID]
			if sp == nil {
				sp = &span{from: e.Ts}
				spans[e.ID] = sp
			} else {
				sp.segFrom = e.Ts
				sp.queued = sp.queued || e.Name == "queued"
			}
			sp.depth++
		case e.Cat == "interval" && e.Ph == "e":
			sp := spans[e.ID]
			if sp == nil {
				t.Fatalf("an interval ends before it begins: %+v", e)
			}
			sp.depth--
			if sp.depth == 0 {
				sp.to = e.Ts
			} else {
				sp.covered += e.Ts - sp.segFrom
			}
		case e.Cat == "critical_path" && e.Ph == "s":
			flows[e.ID] = e.TID
		case e.Cat == "critical_path" && e.Ph == "f":
			if from, ok := flows[e.ID]; ok && from != e.TID {
				arrows++
			}
		}
	}
	if len(spans) != n || arrows < n {
		t.Fatalf("the Chrome trace has %d intervals and %d arrows between threads; want %d and at least as many", len(spans), arrows, n)
	}
	queued := 0
	for id, sp := range spans {
		if math.Abs(sp.covered-(sp.to-sp.from)) > 0.01 {
			t.Fatalf("interval %d: %.3f µs long, its critical path covers %.3f µs", id, sp.to-sp.from, sp.covered)
		}
		if sp.queued {
			queued++
		}
	}
	// A worker's dequeue can return before the enqueue that woke it
	// (the woken worker preempts the accepting thread): no queue wait.
	if queued == 0 {
		t.Errorf("no interval's critical path has a queued segment")
	}
}

// Intervals marked in the source with culprit/interval.h: the main
// thread marks each request's start, a worker its end, with the request's
// id; culprit pairs the USDT marks by the id (arg1, the register the
// header puts it in), times step_a and step_b on the worker between its
// marks and reports step_b first at the program's own share.
func TestVarianceUSDTMarks(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varmarks", []string{"varmarks.c"}, "-O2", "-g", "-pthread", "-I"+filepath.Join(testutil.Root(), "include"))
	out := rec(t)
	stdout := mustRun(t, "variance", "--start", "usdt:culprit:interval_start", "--end", "usdt:culprit:interval_end", "--key", "arg1",
		"--functions", "step_a,step_b", "--rounds", "1", "-o", out, "--", bin, "600", "8")
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	// The program reads its clock just after the start mark and just
	// before the end mark: the marks' intervals hold the program's.
	checkLatencies(t, r, stdout, 600)
	share := -1.0
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "share" && f[1] == "step_b" {
			share, _ = strconv.ParseFloat(f[2], 64)
		}
	}
	checkShare(t, r, "step_b", share)
}

// A Go program marked with the interval package: the main goroutine
// starts each request, a worker goroutine ends it; culprit pairs the
// marker functions' calls by their id parameter, one interval per
// request with the program's mean latency.
func TestVarianceGoMarks(t *testing.T) {
	testutil.NeedRoot(t)
	// gomarks imports the interval package of this module: built in
	// module mode from the module's root.
	bin := filepath.Join(t.TempDir(), "gomarks")
	build := exec.Command("go", "build", "-o", bin, "./testdata/targets/gomarks")
	build.Dir = testutil.Root()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build gomarks: %v\n%s", err, b)
	}
	out := rec(t)
	stdout := mustRun(t, "variance", "--start", "github.com/culprit-dev/culprit/interval.Start", "--end", "github.com/culprit-dev/culprit/interval.End",
		"--key", "id", "--functions", "main.stepA,main.stepB", "--rounds", "1", "-o", out, "--", bin, "400", "8")
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	checkLatencies(t, r, stdout, 400)
}

// --attach: a request accepted on one thread and replied to by a worker,
// paired by the request's pointer (--key r); the worker's serve call,
// which holds slow_io, joins the interval of its key, so slow_io is a
// factor at the program's own share (of the latency to reply's return,
// over the spans the probes time). Without it slow_io is on no
// interval's thread window and the time is other.
func TestVarianceAttachFunction(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varqueue", []string{"varqueue.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout := mustRun(t, "variance", "--start", "accept_req", "--end", "reply", "--key", "r", "--attach", "serve",
		"--rounds", "1", "-o", out, "--", bin, "400", "8")
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	share := -1.0
	n := 0
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 5 && f[0] == "req":
			n++
		case len(f) == 3 && f[0] == "share_reply" && f[1] == "slow_io":
			share, _ = strconv.ParseFloat(f[2], 64)
		}
	}
	if n != 400 || r.Intervals != n {
		t.Fatalf("%d intervals, the program served %d requests (want 400)", r.Intervals, n)
	}
	checkShare(t, r, "slow_io", share)
}

// A key over a char * parameter pairs by the string: begin gets the name
// in the main thread's buffer, finish a copy at another address on the
// consumer thread, and every request is one interval.
func TestVarianceStringKey(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varnames", []string{"varnames.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout := mustRun(t, "variance", "--start", "begin", "--end", "finish", "--key", "name", "--rounds", "1", "-o", out, "--", bin, "300")
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	checkLatencies(t, r, stdout, 300)
}

// A key through pointers (j->req->hdr.id: two pointer steps and a member
// of a nested struct) is read from memory at the probes, DWARF giving the
// offsets. The two sides hold the id at different addresses and the
// consumer finishes each batch last first, one a ms, so only the ids pair
// starts with ends: a wrong key pairs them in another order (a key of
// j->prio, seen: stddev 1.3 ms against the program's 2.6 ms).
func TestVarianceKeyThroughPointers(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varfields", []string{"varfields.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout := mustRun(t, "variance", "--start", "begin", "--end", "finish", "--key", "j->req->hdr.id", "--rounds", "1", "-o", out, "--", bin, "400")
	var r struct {
		varianceJSON
		Unpaired int     `json:"unpaired"`
		StdDev   float64 `json:"stddev_ns"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	checkLatencies(t, r.varianceJSON, stdout, 400)
	var lat []float64
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "lat" {
			v, _ := strconv.ParseFloat(f[2], 64)
			lat = append(lat, v)
		}
	}
	_, sd := stat.PopMeanStdDev(lat, nil)
	t.Logf("stddev %.0f ns, the program's %.0f ns", r.StdDev, sd)
	if r.Unpaired != 0 || math.Abs(r.StdDev-sd) > 0.05*sd+20000 {
		t.Errorf("%d unpaired, intervals' stddev %.0f ns, the program's %.0f ns: the keys did not pair each request's own start and end", r.Unpaired, r.StdDev, sd)
	}
	// A member that does not exist is refused before the program runs.
	_, errs, code := run(t, "variance", "--start", "begin", "--end", "finish", "--key", "j->req->hdr.nosuch", "-o", rec(t), "--", bin, "8")
	if code == 0 || !strings.Contains(errs, "no member nosuch") || strings.Contains(errs, "lat ") {
		t.Errorf("a key naming no member: exit %d\n%s", code, errs)
	}
}

// The interval's function calls functions that C++ exceptions unwind
// through (nest's recursion, left by parse's throw, caught in handle):
// variance probes them from its first round, and the program runs on as
// untraced (same output, exit 0), with the calls the exceptions left
// counted as such in the recording.
func TestVarianceCXXExceptions(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.CXX(t, "cxxunwind", []string{"cxxunwind.cc"}, "-O2", "-g", "-pthread")
	plain, err := exec.Command(bin, "150").Output()
	if err != nil {
		t.Fatal(err)
	}
	out := rec(t)
	stdout, stderr, code := run(t, "variance", "--start", "svc::handle", "--round-intervals", "50", "--trap-budget", "0", "-o", out, "--", bin, "150")
	if code != 0 || !strings.HasPrefix(stdout, string(plain)) {
		t.Fatalf("variance: exit %d, output\n%s\nuntraced:\n%s\n%s", code, stdout, plain, stderr)
	}
	var r varianceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
		t.Fatal(err)
	}
	want := counts(t, string(plain))
	if r.Intervals != want["handle"] || r.Probes < 3 {
		t.Errorf("%d intervals with %d probed functions, want %d intervals (the program's requests) and handle's callees probed", r.Intervals, r.Probes, want["handle"])
	}
	tr := traceReport(t, out)
	nest, unret := tr.calls("svc::nest")
	if thrown := want["thrown"]; nest != want["nest"] || thrown == 0 || unret != 3*thrown && unret != 4*thrown {
		t.Errorf("svc::nest: %d calls (%d did not return), the program made %d and threw %d times (3 or 4 levels each)", nest, unret, want["nest"], thrown)
	}
}
