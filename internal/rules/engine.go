package rules

import (
	"errors"
	"path"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/expr"
)

// Frame is a stack frame as the engine sees it: the source function name and
// an environment that evaluates expressions in that frame.
type Frame struct {
	Function string
	Env      expr.Env
}

// Value is a captured expression at one sample.
type Value struct {
	Expr    string
	Func    string // the rule's function pattern
	Frame   int    // index in the frames of the frame it was evaluated in
	Value   expr.Scalar
	Missing bool  // not available at this sample (optimized out, unreadable)
	Err     error // why it is missing, or a type error in the expression
}

// Outcome is what the rules decide for one sample.
type Outcome struct {
	Record    bool // capturing is on: keep this sample
	Backtrace int  // frames to keep (0: all)
	Values    []Value
	Counts    []string // events counted at this sample
}

// Engine applies a rules file to samples, keeping the capturing state.
type Engine struct {
	file      *File
	capturing bool
}

// NewEngine starts an engine; capturing starts on unless a rule can start it.
func NewEngine(f *File) *Engine { return &Engine{file: f, capturing: !f.StartsStopped} }

// Capturing reports whether samples are being captured.
func (e *Engine) Capturing() bool { return e.capturing }

// Sample applies the rules to a sample of executable exe whose stack is
// frames, innermost first. For each rule of each matching program, the
// frame is the innermost one whose function matches; the rule applies when
// its condition, evaluated in that frame, is true (a condition that cannot
// be evaluated is false). Actions run in file order; start and stop take
// effect at once, so a sample that starts capturing is recorded and one
// that stops it is not.
func (e *Engine) Sample(exe string, frames []Frame) Outcome {
	var out Outcome
	var values []Value
	base := path.Base(exe)
	for _, p := range e.file.Programs {
		if ok, _ := path.Match(p.Glob, base); !ok {
			continue
		}
		for _, r := range p.Rules {
			fi, ok := innermost(frames, r.Func)
			if !ok {
				continue
			}
			fr := frames[fi]
			if r.Cond != nil {
				v, err := expr.Eval(r.Cond, fr.Env)
				if err != nil || v.Float64() == 0 {
					continue
				}
			}
			for _, a := range r.Actions {
				switch a.Kind {
				case Start:
					e.capturing = true
				case Stop:
					e.capturing = false
				case Backtrace:
					if out.Backtrace == 0 || a.Frames > out.Backtrace {
						out.Backtrace = a.Frames
					}
				case Count:
					out.Counts = append(out.Counts, a.Text)
				case Capture:
					v, err := expr.Eval(a.Expr, fr.Env)
					values = append(values, Value{Expr: a.Text, Func: r.Func, Frame: fi, Value: v, Err: err,
						Missing: err != nil && errors.Is(err, expr.ErrMissing)})
				}
			}
		}
	}
	out.Record = e.capturing
	if out.Record {
		out.Values = values
	} else {
		out.Backtrace, out.Counts = 0, nil
	}
	return out
}

func innermost(frames []Frame, glob string) (int, bool) {
	for i, f := range frames {
		if elfx.MatchName(glob, f.Function) {
			return i, true
		}
	}
	return 0, false
}
