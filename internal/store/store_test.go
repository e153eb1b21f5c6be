package store

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// stores opens a fresh SQLite store and a fresh PostgreSQL store (a server
// of the test's own) and runs f on each.
func stores(t *testing.T, f func(t *testing.T, spec string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, t.TempDir()) })
	t.Run("postgres", func(t *testing.T) {
		t.Setenv("XDG_CACHE_HOME", t.TempDir()) // recordings read back are copied there
		f(t, testutil.Postgres(t))
	})
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAddListRemoveGC(t *testing.T) {
	stores(t, func(t *testing.T, spec string) {
		s, err := Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		dir := t.TempDir()
		recA := writeFile(t, dir, "a.rec", "recording A")
		recB := writeFile(t, dir, "b.rec", "recording B")
		r1 := Run{Commit: "c1", CommitTime: 100, Workload: "prog", Command: []string{"./prog", "10"},
			Params: map[string]string{"n": "10"}, Config: "event=cpu-clock freq=999", Samples: 50, CPU: 50e6}
		funcs := []Func{{Name: "work", Object: "prog", Self: 40, Total: 45, SelfNS: 40e6, TotalNS: 45e6},
			{Name: "main", Object: "prog", Self: 10, Total: 50, SelfNS: 10e6, TotalNS: 50e6}}
		traced := []Traced{{Name: "work", Object: "prog", Calls: 100, Estimated: 100, InclTotal: 45e6, InclMean: 45e4,
			InclP50: 44e4, InclP99: 60e4, InclMax: 70e4, ExclTotal: 40e6, ExclMean: 40e4, Sample: 1,
			InclSpread: Spread{Known: true, Min: 1e4, Q1: 3e4, Median: 44e4, Q3: 50e4, Max: 70e4},
			ExclSpread: Spread{Known: true, Min: 1e3, Q1: 2.5e4, Median: 39e4, Q3: 45e4, Max: 65e4}}}
		if err := s.Add(&r1, recA, funcs, traced); err != nil {
			t.Fatal(err)
		}
		r2 := r1
		r2.Commit, r2.CommitTime, r2.Dirty = "c2", 200, true
		if err := s.Add(&r2, recB, funcs[:1], nil); err != nil {
			t.Fatal(err)
		}
		r3 := r1 // the same recording again: one stored copy
		if err := s.Add(&r3, recA, nil, nil); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Runs()
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 3 || runs[0].Commit != "c2" || !runs[0].Dirty || runs[1].Commit != "c1" {
			t.Fatalf("runs = %+v", runs)
		}
		if got := runs[2]; got.Params["n"] != "10" || len(got.Command) != 2 || got.Recording != r1.Recording || got.Size != int64(len("recording A")) {
			t.Errorf("run read back = %+v", got)
		}
		if r1.PairKey() != r2.PairKey() {
			t.Errorf("pair keys differ: %q %q", r1.PairKey(), r2.PairKey())
		}
		got, err := s.Functions(r1.ID)
		if err != nil || len(got) != 2 || got[0] != funcs[0] || got[1] != funcs[1] {
			t.Fatalf("functions = %+v, %v", got, err)
		}
		if got, err := s.TracedCalls(r1.ID); err != nil || len(got) != 1 || got[0] != traced[0] {
			t.Fatalf("traced = %+v, %v", got, err)
		}
		if only, _ := s.Runs("c1"); len(only) != 2 {
			t.Errorf("runs of c1 = %d, want 2", len(only))
		}
		p, err := s.RecordingPath(r2.Recording)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "recording B" {
			t.Errorf("recording read back = %q", b)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Errorf("recording file mode %v, want 0600", st.Mode().Perm())
		}
		if n, err := s.Remove([]int64{r2.ID, 9999}); err != nil || n != 1 {
			t.Fatalf("Remove = %d, %v", n, err)
		}
		if f, _ := s.Functions(r2.ID); len(f) != 0 {
			t.Errorf("statistics of a removed run remain: %+v", f)
		}
		if !s.postgres {
			// Make the unreferenced file old enough for GC.
			old := s.blobPath(r2.Recording)
			if err := os.Chtimes(old, timeAgo(), timeAgo()); err != nil {
				t.Fatal(err)
			}
		}
		n, _, err := s.GC()
		if err != nil || n != 1 {
			t.Fatalf("GC = %d, %v; want 1 recording removed", n, err)
		}
		if _, err := s.RecordingPath(r1.Recording); err != nil {
			t.Errorf("a used recording was collected: %v", err)
		}
		if !s.postgres {
			if _, err := os.Stat(s.blobPath(r2.Recording)); err == nil {
				t.Errorf("the unused recording is still there")
			}
		}
	})
}

// TestConcurrentWriters runs two processes adding runs to one store at the
// same time: every run and every statistic must arrive.
func TestConcurrentWriters(t *testing.T) {
	if spec := os.Getenv("CULPRIT_TEST_WRITER_STORE"); spec != "" {
		return // the writer process runs TestWriterProcess only
	}
	const perWriter = 40
	stores(t, func(t *testing.T, spec string) {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		outs := make([][]byte, 2)
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run=^TestWriterProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), "CULPRIT_TEST_WRITER_STORE="+spec,
					"CULPRIT_TEST_WRITER="+strconv.Itoa(w), "CULPRIT_TEST_WRITER_N="+strconv.Itoa(perWriter),
					"CULPRIT_TEST_WRITER_DIR="+t.TempDir())
				outs[w], errs[w] = cmd.CombinedOutput()
			}()
		}
		wg.Wait()
		for w := range 2 {
			if errs[w] != nil {
				t.Fatalf("writer %d: %v\n%s", w, errs[w], outs[w])
			}
		}
		s, err := Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		runs, err := s.Runs()
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2*perWriter {
			t.Fatalf("%d runs stored, want %d", len(runs), 2*perWriter)
		}
		seen := map[string]bool{}
		for _, r := range runs {
			seen[r.Commit] = true
			f, err := s.Functions(r.ID)
			if err != nil || len(f) != 3 {
				t.Fatalf("run %d (%s): %d functions, %v; want 3", r.ID, r.Commit, len(f), err)
			}
			p, err := s.RecordingPath(r.Recording)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(p); string(b) != "recording of "+r.Commit {
				t.Fatalf("run %s: recording %q", r.Commit, b)
			}
		}
		if len(seen) != 2*perWriter {
			t.Fatalf("%d distinct runs, want %d", len(seen), 2*perWriter)
		}
	})
}

// TestWriterProcess is one writer of TestConcurrentWriters, run in its own
// process.
func TestWriterProcess(t *testing.T) {
	spec := os.Getenv("CULPRIT_TEST_WRITER_STORE")
	if spec == "" {
		t.Skip("run by TestConcurrentWriters")
	}
	w := os.Getenv("CULPRIT_TEST_WRITER")
	n, _ := strconv.Atoi(os.Getenv("CULPRIT_TEST_WRITER_N"))
	dir := os.Getenv("CULPRIT_TEST_WRITER_DIR")
	s, err := Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		commit := fmt.Sprintf("w%s-%d", w, i)
		rec := writeFile(t, dir, commit+".rec", "recording of "+commit)
		r := Run{Commit: commit, CommitTime: int64(i), Workload: "prog", Config: "freq=999"}
		funcs := []Func{{Name: "a", Object: "p", Self: 1}, {Name: "b", Object: "p", Self: 2}, {Name: "c", Object: "p", Self: 3}}
		if err := s.Add(&r, rec, funcs, nil); err != nil {
			t.Fatalf("adding %s: %v", commit, err)
		}
	}
}

func timeAgo() time.Time { return time.Now().Add(-time.Hour) }

// TestMigrateFromVersion1 opens a store written by a culprit that knew only
// the first migration: the second is applied, the runs stay.
func TestMigrateFromVersion1(t *testing.T) {
	stores(t, func(t *testing.T, spec string) {
		all := migrations
		migrations = all[:1]
		s, err := Open(spec)
		if err != nil {
			migrations = all
			t.Fatal(err)
		}
		rec := writeFile(t, t.TempDir(), "a.rec", "A")
		r := Run{Commit: "c1", Workload: "w"}
		// Version 1 has no traced table: add the run by hand.
		_, err = s.db.Exec(s.q(`INSERT INTO runs (commit_hash, commit_time, dirty, workload, command, params, config, recording, size, samples, cpu_ns, added)
			VALUES (?, 0, 0, 'w', '[]', '{}', '', 'h', 1, 0, 0, 0)`), r.Commit)
		s.Close()
		migrations = all
		if err != nil {
			t.Fatal(err)
		}
		s, err = Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var v int
		if err := s.db.QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil || v != len(all) {
			t.Fatalf("schema version %d, %v; want %d", v, err, len(all))
		}
		if runs, err := s.Runs(); err != nil || len(runs) != 1 {
			t.Fatalf("runs after migration: %d, %v", len(runs), err)
		}
		r2 := Run{Commit: "c2", Workload: "w"}
		if err := s.Add(&r2, rec, nil, []Traced{{Name: "f", Calls: 1}}); err != nil {
			t.Fatal(err)
		}
		// Statistics without the spread (as runs stored before it) read
		// back as not known, not as zeros.
		if got, err := s.TracedCalls(r2.ID); err != nil || len(got) != 1 || got[0].InclSpread.Known || got[0].ExclSpread.Known || got[0].Sample != 0 {
			t.Errorf("traced without spread: %+v, %v", got, err)
		}
		// A store newer than this culprit is refused.
		if _, err := s.db.Exec(s.q(`INSERT INTO schema_migrations (version, applied) VALUES (?, 0)`), len(all)+1); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(spec); err == nil || !strings.Contains(err.Error(), "upgrade culprit") {
			t.Errorf("a newer store opened: %v", err)
		}
	})
}

// Sampled expressions are measurements, not inputs: they do not decide
// which runs pair.
func TestPairKeyLeavesOutExpressions(t *testing.T) {
	a := Run{Workload: "w", Params: map[string]string{"n": "10", ExprParam + "q->len": "12.5"}, Config: "freq=999"}
	b := Run{Workload: "w", Params: map[string]string{"n": "10", ExprParam + "q->len": "40"}, Config: "freq=999"}
	c := Run{Workload: "w", Params: map[string]string{"n": "20"}, Config: "freq=999"}
	if a.PairKey() != b.PairKey() || a.PairKey() == c.PairKey() {
		t.Errorf("pair keys %q %q %q", a.PairKey(), b.PairKey(), c.PairKey())
	}
}

// A SQLite store's files hold recordings and what was measured of them:
// created 0600 in 0700 directories, and under sudo (root with SUDO_UID)
// the user's, who can then use the store without sudo.
func TestStoreFilesUsers(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("SUDO_UID", "4321")
	t.Setenv("SUDO_GID", "4322")
	dir := filepath.Join(t.TempDir(), ".culprit")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := writeFile(t, t.TempDir(), "a.rec", "recording A")
	r := Run{Commit: "c1", CommitTime: 100, Workload: "prog", Command: []string{"./prog"}}
	if err := s.Add(&r, rec, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	files := []string{".gitignore", "history.db", "open.lock", filepath.Join("recordings", r.Recording+".rec")}
	for _, name := range append([]string{".", "recordings"}, files...) {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 4321 || st.Gid != 4322 || fi.Mode().Perm() != want {
			t.Errorf("%s: %d:%d %v, want 4321:4322 %v", name, st.Uid, st.Gid, fi.Mode().Perm(), want)
		}
	}
}
