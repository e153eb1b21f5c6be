package vprof

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Options are vProf's parameters.
type Options struct {
	// Alpha is the significance level of the Anderson–Darling test (0.05).
	Alpha float64
	// DefaultDiscount is the discount of a variable whose normal and buggy
	// samples the test does not tell apart (0.8).
	DefaultDiscount float64
	// ValidDiscount: a discount 1 − Hellinger below it becomes 0 (0.1).
	ValidDiscount float64
	// MaxTestSamples caps each sample given to the Anderson–Darling test: a
	// larger one is replaced by that many evenly spaced order statistics
	// (its quantiles), which keeps its distribution to within 1/MaxTestSamples.
	// The Hellinger distance always uses every sample. 0: 1000.
	MaxTestSamples int
	// Method ranks the functions: MethodDifferential (the default, "")
	// or MethodVprof, the paper's algorithm.
	Method Method
}

// Method is a ranking method of diagnose.
type Method string

const (
	// MethodDifferential ranks by the growth of each function's share of
	// CPU time over complete call stacks, weighted by the evidence that the
	// function itself changed behaviour (docs/vprof.md).
	MethodDifferential Method = "differential"
	// MethodVprof is vProf's calibrated cost, as the paper describes it.
	MethodVprof Method = "vprof"
)

func (o Options) method() Method {
	if o.Method == "" {
		return MethodDifferential
	}
	return o.Method
}

// DefaultOptions returns vProf's defaults: α = 0.05, DefaultDiscount 0.8,
// ValidDiscount 0.1.
func DefaultOptions() Options {
	return Options{Alpha: 0.05, DefaultDiscount: 0.8, ValidDiscount: 0.1, MaxTestSamples: 1000}
}

// Check reports options out of range.
func (o Options) Check() error {
	switch {
	case !(o.Alpha > 0 && o.Alpha < 1):
		return fmt.Errorf("alpha %g: want a level between 0 and 1, e.g. 0.05", o.Alpha)
	case !(o.DefaultDiscount >= 0 && o.DefaultDiscount <= 1):
		return fmt.Errorf("default discount %g: want a ratio in [0, 1]", o.DefaultDiscount)
	case !(o.ValidDiscount >= 0 && o.ValidDiscount <= 1):
		return fmt.Errorf("valid discount %g: want a ratio in [0, 1]", o.ValidDiscount)
	case o.MaxTestSamples < 0:
		return fmt.Errorf("max test samples %d: want a positive number", o.MaxTestSamples)
	case o.Method != "" && o.Method != MethodDifferential && o.Method != MethodVprof:
		return fmt.Errorf("unknown method %q: use differential or vprof", o.Method)
	}
	return nil
}

// Dimension says what set a discount.
type Dimension string

const (
	DimValue    Dimension = "value"    // the sampled values
	DimDelta    Dimension = "delta"    // differences between consecutive samples of a variable in a thread
	DimDuration Dimension = "duration" // run lengths of equal consecutive samples ("processing cost")
	DimHistory  Dimension = "history"  // the hist-discounter (no variable, several runs of each kind)
	DimDefault  Dimension = "default"  // DefaultDiscount: no dimension told normal from buggy samples
	DimNone     Dimension = "none"     // no discount available
)

// Pattern is an inferred bug pattern (vProf §5.2).
type Pattern string

const (
	MissingConstraint Pattern = "missing-constraint"
	Scalability       Pattern = "scalability"
	WrongConstraint   Pattern = "wrong-constraint"
	NoPattern         Pattern = "none"
)

// Run describes one recording given to the analysis.
type Run struct {
	Path       string `json:"path"`
	Executable string `json:"executable,omitempty"` // "path (build-id …)", set by the caller
	Samples    int    `json:"samples"`              // CPU-time samples
	Values     int    `json:"values"`               // value samples of program variables
	Variables  int    `json:"variables"`            // variables of its schema
	// Schemas are the identities of the schemas its variables were
	// sampled with (recording.ValueSource.Schema), one per executable;
	// empty for recordings that do not carry them.
	Schemas []string `json:"schemas,omitempty"`
	CPU     float64  `json:"cpu"` // seconds of CPU time sampled
}

// NoValuesError is returned for a run without value samples of program
// variables.
type NoValuesError struct {
	Path    string
	Samples int
	Other   int // values of expressions and counters, which vProf does not use
}

func (e *NoValuesError) Error() string {
	name := e.Path
	if name == "" {
		name = "the recording"
	}
	msg := fmt.Sprintf("%s has no value samples of program variables (%d CPU samples", name, e.Samples)
	if e.Other > 0 {
		msg += fmt.Sprintf(", %d values of expressions or counters", e.Other)
	}
	out := e.Path
	if out == "" {
		out = "run.rec"
	}
	return msg + "): vProf compares the values of variables between runs.\n" +
		"Record each run with: culprit record --values -o " + out + " -- CMD ARGS..."
}

// ErrNoRuns is returned when normal or buggy runs are missing.
var ErrNoRuns = errors.New("vprof needs at least one normal and one buggy run")

// varKey identifies a variable across runs: its schema entry without the
// tags. The declaring line tells apart variables of one name in one
// function (a local of an inlined callee is reported in the function it was
// inlined into).
type varKey struct {
	class    recording.SourceKind
	name     string
	function string
	file     string
	line     int
	typ      string
}

func keyOf(vs recording.ValueSource) varKey {
	return varKey{class: vs.Class, name: vs.Name, function: vs.Function, file: vs.File, line: vs.Line, typ: vs.Type}
}

// funcKey identifies a function: its source name and the base name of its
// object, so that runs of one program installed at two paths still match.
type funcKey struct {
	name   string
	object string
}

func objectBase(obj string) string {
	if obj == "" {
		return profile.Unknown
	}
	if strings.HasPrefix(obj, "[") {
		return obj
	}
	return path.Base(obj)
}

type fn struct {
	name   string
	object string // as recorded (path)
	// at is a file offset in object inside the function (from a stack
	// frame), for ReadsFunc; ok when known.
	at     uint64
	atOK   bool
	kernel bool // seen as a kernel frame
	// lines: a frame of it carried a source line (its object has line
	// information, DWARF, for its code).
	lines bool
}

// loc is a source line where a value was read.
type loc struct {
	file     string
	line     int
	function string
}
