package rules

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/expr"
)

const example = `# PCT's hierarchical test, as rules
program hier*
  at worker
    backtrace 4
    capture n
    capture n / 2
    count worker_tick
  at dispatch_2 if n > 0   # conditions are expressions in that frame
    count slow_path

program *
  at shutdown
    stop
`

func TestParseExample(t *testing.T) {
	f, err := Parse("ex.rules", example)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Programs) != 2 || f.Programs[0].Glob != "hier*" || len(f.Programs[0].Rules) != 2 {
		t.Fatalf("parsed %+v", f.Programs)
	}
	w := f.Programs[0].Rules[0]
	if w.Func != "worker" || len(w.Actions) != 4 || w.Actions[0].Frames != 4 || w.Actions[2].Text != "n / 2" {
		t.Errorf("worker rule %+v", w)
	}
	if d := f.Programs[0].Rules[1]; d.CondText != "n > 0" || d.Pos.Line != 8 {
		t.Errorf("dispatch_2 rule %+v", d)
	}
	if f.StartsStopped {
		t.Error("no start action, yet capture starts stopped")
	}
}

func TestErrorsHaveFileLineColumn(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"at worker\n", "x.rules:1:1: at outside a program block"},
		{"program p\n  capture n\n", "x.rules:2:3: capture outside an at block"},
		{"program p\n  at w\n    capture n +\n", "x.rules:3:16: expression ends too early"},
		{"program p\n  at w if n >\n", "x.rules:2:14: expression ends too early"},
		{"program p\n  at w\n    backtrace many\n", "x.rules:3:15: backtrace needs a number"},
		{"program p\n  at w\n    frobnicate\n", `x.rules:3:5: unknown word "frobnicate"`},
		{"program [\n", `x.rules:1:9: bad pattern`},
		{"program p\n  at w\n    count two words\n", "x.rules:3:11: count needs one event name"},
	} {
		_, err := Parse("x.rules", c.text)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want %q…", c.text, err, c.want)
		}
	}
}

func TestIncludes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "common.rules"), []byte("program *\n  at main\n    count ticks\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.rules"), []byte("# top\ninclude common.rules\nprogram x\n  at f\n    start\n"), 0o644)
	f, err := ParseFile(filepath.Join(dir, "main.rules"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Programs) != 2 || !f.StartsStopped {
		t.Errorf("includes: %+v", f)
	}
	os.WriteFile(filepath.Join(dir, "loop.rules"), []byte("include loop.rules\n"), 0o644)
	if _, err := ParseFile(filepath.Join(dir, "loop.rules")); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("include cycle: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "missing.rules"), []byte("\ninclude nowhere.rules\n"), 0o644)
	if _, err := ParseFile(filepath.Join(dir, "missing.rules")); err == nil || !strings.Contains(err.Error(), "missing.rules:2:1: cannot include") {
		t.Errorf("missing include: %v", err)
	}
}

// vars is an environment of integer variables for these tests.
type vars map[string]int64

func (v vars) Var(name string) (expr.Object, error) {
	x, ok := v[name]
	if !ok {
		return nil, &expr.TypeError{Msg: "no variable " + name}
	}
	return scalar(x), nil
}

type scalar int64

func (s scalar) Member(string, bool) (expr.Object, error) { return nil, errors.New("not a struct") }
func (s scalar) Index(int64) (expr.Object, error)         { return nil, errors.New("not an array") }
func (s scalar) Deref() (expr.Object, error)              { return nil, errors.New("not a pointer") }
func (s scalar) Scalar() (expr.Scalar, error)             { return expr.IntValue(int64(s)), nil }

func TestEngine(t *testing.T) {
	f, err := Parse("ex.rules", example)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(f)
	stack := []Frame{{"worker", vars{"n": 20}}, {"dispatch_2", vars{"n": 1}}, {"main", vars{}}}
	o := e.Sample("/bin/hier-test", stack)
	if !o.Record || o.Backtrace != 4 || len(o.Values) != 2 || o.Values[0].Value.I != 20 || o.Values[1].Value.I != 10 {
		t.Errorf("worker sample: %+v", o)
	}
	if strings.Join(o.Counts, ",") != "worker_tick,slow_path" {
		t.Errorf("counts %v", o.Counts)
	}
	// Condition false in the dispatch_2 frame.
	stack[1].Env = vars{"n": 0}
	if o := e.Sample("/bin/hier-test", stack); strings.Join(o.Counts, ",") != "worker_tick" {
		t.Errorf("false condition counted: %v", o.Counts)
	}
	// Another program: only the * rules apply.
	if o := e.Sample("/bin/other", stack); len(o.Values) != 0 || len(o.Counts) != 0 || !o.Record {
		t.Errorf("other program: %+v", o)
	}
	// A missing variable is counted as missing, not guessed.
	o = e.Sample("/bin/hier", []Frame{{"worker", vars{}}})
	if len(o.Values) != 2 || o.Values[0].Err == nil {
		t.Errorf("missing n: %+v", o.Values)
	}
	// stop turns capturing off.
	if o := e.Sample("/bin/x", []Frame{{"shutdown", vars{}}, {"main", vars{}}}); o.Record || e.Capturing() {
		t.Errorf("stop: %+v", o)
	}
	if o := e.Sample("/bin/hier", stack); o.Record || o.Values != nil {
		t.Errorf("after stop: %+v", o)
	}
}

func TestStartStopped(t *testing.T) {
	f, err := Parse("s.rules", "program *\n  at phase2\n    start\n  at phase3\n    stop\n")
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(f)
	seq := []string{"phase1", "phase2", "work", "phase3", "work"}
	want := []bool{false, true, true, false, false}
	for i, fn := range seq {
		if o := e.Sample("/x", []Frame{{fn, vars{}}}); o.Record != want[i] {
			t.Errorf("sample %d in %s: record %v, want %v", i, fn, o.Record, want[i])
		}
	}
}
