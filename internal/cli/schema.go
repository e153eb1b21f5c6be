package cli

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"io"
	"os"
	"os/exec"
	"sync"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/vprof"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/schema"
)

func newSchema() *cobra.Command {
	var component, output string
	c := &cobra.Command{
		Use:   "schema BINARY [--component PATH_PREFIX] [-o FILE]",
		Short: "List the variables worth sampling for culprit diagnose (vProf), with how the code uses them",
		Long: `Schema lists the variables of a binary worth sampling with culprit record
--values (vProf's schema), tagged loop, cond or args from its DWARF and code.

Most common uses:
  culprit schema ./server -o server.schema               every variable worth sampling
  culprit schema ./mysqld --component storage/innobase/buf -o buf.schema
  culprit record --values=buf.schema -o buggy.rec -- ./mysqld ...   sample what it lists

The tags and the file format: docs/cli.md (culprit schema), docs/vprof.md.`,
		Example: `  culprit schema ./server -o server.schema
  culprit schema ./mysqld --component storage/innobase/buf -o buf.schema
  culprit record --values=buf.schema -o buggy.rec -- ./mysqld ...`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("give one binary: culprit schema BINARY [--component PATH_PREFIX] [-o FILE]")
			}
			if err := checkBinary(args[0]); err != nil {
				return err
			}
			s, err := schema.Generate(args[0], schema.Options{Component: component})
			if err != nil {
				return err
			}
			stderr := c.ErrOrStderr()
			if s.Len() == 0 && component != "" {
				warnf(stderr, "no variable of %s is declared in a file under %s", args[0], component)
			}
			if err := writeOutput(c.OutOrStdout(), output, s.Write); err != nil {
				return err
			}
			if output != "" && output != "-" {
				g, l, lo, co, a := s.Counts()
				fmt.Fprintf(stderr, "culprit: %d variables (%d globals, %d locals; loop %d, cond %d, args %d) written to %s\n",
					g+l, g, l, lo, co, a, output)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&component, "component", "", "keep the variables declared in files under this path prefix (absolute, or relative as in storage/innobase/buf)")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	return c
}

// valuesSchema resolves culprit record's --values: "auto" (--values alone)
// returns nil, so that every executable is sampled with its own generated
// schema, made by the recorder while the command starts; when the main
// executable has no .debug_info of its own, the schema is tried here, to
// say at once that it has no DWARF; a file is read and checked against the
// main executable. The main executable is -p's, or the command's.
func valuesSchema(values string, pid int, args []string, stderr io.Writer) (*schema.Schema, error) {
	exe := mainExe(pid, args)
	if values == "auto" {
		if exe == "" || elfx.FileHasDWARF(exe) {
			// The recorder makes the schema while the command starts.
			return nil, nil
		}
		if _, err := schema.ForExecutable(exe); err != nil {
			var nd *schema.NoDWARFError
			if errors.As(err, &nd) {
				warnf(stderr, "--values: %s has no DWARF debugging information, so none of its variables can be sampled "+
					"(rebuild it with -g, or install its debug symbols). The recording still holds its CPU profile for "+
					"culprit report, export, latency and contexts; culprit diagnose needs variable values", exe)
			} else if isELF(exe) {
				warnf(stderr, "--values: cannot list the variables of %s: %v", exe, err)
			}
		}
		return nil, nil
	}
	sc, err := schema.ReadFile(values)
	if err != nil {
		return nil, err
	}
	if exe == "" {
		return nil, fmt.Errorf("--values=%s: cannot find the program to check the schema against", values)
	}
	if err := sc.Check(exe, values); err != nil {
		return nil, err
	}
	if sc.BuildID == "" {
		// Checked by name: the schema now describes this build.
		if id := elfx.FileBuildID(exe); len(id) > 0 {
			sc.BuildID = hex.EncodeToString(id)
		} else {
			sc.Binary = exe
		}
	}
	return sc, nil
}

// checkBinary refuses a path that is not a compiled program, saying what
// it is instead.
func checkBinary(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return usagef("%s: no such file: give the path of a program built with -g", path)
	case fi.IsDir():
		return usagef("%s is a directory: give the path of a program built with -g", path)
	case isELF(path):
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	what := "not a compiled program (an ELF file)"
	switch {
	case n == 0:
		what = "empty"
	case bytes.HasPrefix(head, []byte("#!")):
		what = "a script, not a compiled program"
	case bytes.HasPrefix(head, []byte(recording.Magic)):
		what = "a recording, not a program"
	}
	return usagef("%s is %s: give the path of an executable or shared library built with -g", path, what)
}

// mainExe is the path of the main executable: -p's, or the command's
// ("" when it cannot be found).
func mainExe(pid int, args []string) string {
	switch {
	case pid != 0:
		return proc.Exe(pid)
	case len(args) > 0:
		exe, _ := exec.LookPath(args[0])
		return exe
	}
	return ""
}

func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 4)
	_, err = io.ReadFull(f, b)
	return err == nil && string(b) == "\x7fELF"
}

// codeFinder opens the machine code of recorded objects, once each for
// every question diagnose asks of it (blocks, reads, deciders, guards),
// and converts a file offset to its address; an object whose file
// changed since the recording (another build-id) is not read.
type codeFinder struct {
	exes    []profile.Executable
	codes   map[string]*schema.Code
	changed map[string]bool
}

func newCodeFinder(exes []profile.Executable) *codeFinder {
	return &codeFinder{exes: exes, codes: map[string]*schema.Code{}, changed: map[string]bool{}}
}

func (cf *codeFinder) code(object string, offset uint64) (*schema.Code, uint64, bool) {
	c, ok := cf.codes[object]
	if !ok {
		for _, e := range cf.exes {
			if e.Path == object && len(e.BuildID) > 0 && !bytes.Equal(elfx.FileBuildID(object), e.BuildID) {
				cf.codes[object] = nil
				cf.changed[object] = true
				return nil, 0, false
			}
		}
		c, _ = schema.OpenCode(object)
		cf.codes[object] = c
	}
	if c == nil {
		return nil, 0, false
	}
	addr, ok := c.AddrOf(offset)
	return c, addr, ok
}

// blockFinder finds the basic blocks of the recorded programs for
// diagnose's localisation. An object whose file changed since it was
// recorded (another build-id than its recording's) gets none, with one
// warning.
func blockFinder(cf *codeFinder, stderr io.Writer) vprof.BlockFunc {
	warned := map[string]bool{}
	return func(object string, offset uint64) (string, uint64, uint64, bool) {
		c, addr, ok := cf.code(object, offset)
		if !ok {
			if cf.changed[object] && !warned[object] {
				warned[object] = true
				warnf(stderr, "%s changed since it was recorded (another build-id): basic blocks are not given", object)
			}
			return "", 0, 0, false
		}
		b, ok := c.Block(addr)
		return b.Function, b.Start, b.End, ok
	}
}

// byName adapts a question schema.Code answers about the function at an
// address and a name (a global it reads or writes, a parameter it has)
// to the differential method's hook over a recorded object's offset:
// (false, false), no answer, when the object's code cannot be read or
// changed since the recording.
func byName(cf *codeFinder, ask func(c *schema.Code, addr uint64, name string) (bool, bool)) func(object string, offset uint64, name string) (bool, bool) {
	return func(object string, offset uint64, name string) (bool, bool) {
		c, addr, ok := cf.code(object, offset)
		if !ok {
			return false, false
		}
		return ask(c, addr, name)
	}
}

// readsFinder tells the differential method which functions' code reads
// a global; writesFinder, which store into one; paramFinder, which have a
// parameter of a name (DWARF's formal parameters).
func readsFinder(cf *codeFinder) vprof.ReadsFunc   { return byName(cf, (*schema.Code).Reads) }
func writesFinder(cf *codeFinder) vprof.WritesFunc { return byName(cf, (*schema.Code).Writes) }
func paramFinder(cf *codeFinder) vprof.ParamFunc   { return byName(cf, (*schema.Code).Param) }

// shapeFinder tells the differential method whether a function's machine
// code has a loop or a call, from the code of the recorded objects.
func shapeFinder(cf *codeFinder) vprof.ShapeFunc {
	return func(object string, offset uint64) (bool, bool, bool) {
		c, addr, ok := cf.code(object, offset)
		if !ok {
			return false, false, false
		}
		s, ok := c.ShapeAt(addr)
		if !ok || s.Unknown {
			return false, false, false
		}
		return s.Loops > 0, len(s.Calls) > 0, true
	}
}

// boundFinder tells the differential method whether a function's machine
// code does at most a fixed amount of work per call, from the code of the
// recorded objects.
func boundFinder(cf *codeFinder) vprof.BoundFunc {
	return func(object string, offset uint64) (bool, bool) {
		c, addr, ok := cf.code(object, offset)
		if !ok {
			return false, false
		}
		return c.BoundedAt(addr)
	}
}

// loopCallFinder tells the differential method whether a function calls
// a callee from inside one of its loops, from the machine code of the
// recorded objects (the callee named as frames name it: a clone GCC made,
// name.constprop.0, is that function).
func loopCallFinder(cf *codeFinder) vprof.LoopCallFunc {
	return func(object string, offset uint64, callee string) (bool, bool) {
		c, addr, ok := cf.code(object, offset)
		if !ok {
			return false, false
		}
		s, ok := c.ShapeAt(addr)
		if !ok || s.Unknown {
			return false, false
		}
		found := false
		for _, k := range s.Calls {
			if k.Callee != callee && elfx.StripClones(k.Callee) != callee {
				continue
			}
			if k.LoopDepth > 0 {
				return true, true
			}
			found = true
		}
		return false, found
	}
}

// deciderFinder tells the differential method which predicate's answer
// decides calls, from the machine code of the recorded objects.
func deciderFinder(cf *codeFinder) vprof.DecideFunc {
	return func(object string, offset uint64, callee string) (string, bool) {
		c, addr, ok := cf.code(object, offset)
		if !ok {
			return "", false
		}
		return c.Decider(addr, callee)
	}
}

// repairFinder tells the differential method which checks decide to
// rewrite the state a loop is bounded by, from the machine code of the
// recorded objects.
func repairFinder(cf *codeFinder) vprof.RepairFunc {
	return func(object string, loop uint64) []vprof.RepairCheck {
		c, addr, ok := cf.code(object, loop)
		if !ok {
			return nil
		}
		var out []vprof.RepairCheck
		for _, r := range c.RepairsOf(addr) {
			out = append(out, vprof.RepairCheck{Check: r.Check, Callee: r.Callee, Ordered: r.Ordered, Bounds: r.Bounds, Tests: r.Tests})
		}
		return out
	}
}

// branchFinder tells the differential method how the code of the buggy
// runs' program compares its locals with constants (a schema.Comparer:
// the program read when first asked, each function's code analysed the
// first time one of its locals is asked about); nothing when the file
// changed since the recording (another build-id) or cannot be read.
func branchFinder(exe profile.Executable) vprof.BranchFunc {
	var once sync.Once
	var cmp *schema.Comparer
	return func(function, variable, file string, line int) (func(int64) (uint64, bool), bool) {
		once.Do(func() {
			if exe.Path == "" || len(exe.BuildID) > 0 && !bytes.Equal(elfx.FileBuildID(exe.Path), exe.BuildID) {
				return
			}
			cmp, _ = schema.NewComparer(exe.Path)
		})
		if cmp == nil {
			return nil, false
		}
		c, ok := cmp.Of(schema.Key{Function: function, Variable: variable, File: file, Line: line})
		if !ok || c.Unknown || len(c.Known) == 0 {
			return nil, false
		}
		return c.Outcomes, true
	}
}

// thresholdFinder tells the differential method whether the threshold
// deciding a call reads a global, from the code of the recorded objects.
func thresholdFinder(cf *codeFinder) vprof.ThresholdFunc {
	return func(object string, offset uint64, callee, global string) (bool, bool) {
		c, addr, ok := cf.code(object, offset)
		if !ok {
			return false, false
		}
		return c.GuardReads(addr, callee, global)
	}
}

// callFinder answers vprof's question whether a call is direct from the
// machine code of the caller's object.
func callFinder(cf *codeFinder) vprof.CallFunc {
	return func(object string, offset uint64, callee string) (bool, bool) {
		c, addr, ok := cf.code(object, offset)
		if !ok {
			return false, false
		}
		return c.Calls(addr, callee)
	}
}

// guardFinder tells the differential method how a function's code decides
// its calls of a callee, from the machine code of the recorded objects.
func guardFinder(cf *codeFinder) vprof.GuardFunc {
	return func(object string, offset uint64, callee string) (bool, bool, bool) {
		c, addr, ok := cf.code(object, offset)
		if !ok {
			return false, false, false
		}
		return c.Guard(addr, callee)
	}
}
