// Package rules reads culprit's rules files — the successor of PCT's dbctl
// scripts — and decides, for each sample, which actions to take: capture a
// backtrace of N frames, capture expressions, count an event, start or stop
// capturing. The grammar is in docs/rules.md. The package parses and
// matches; it reads no program state itself (expressions are evaluated
// through package expr by the caller's environment).
package rules

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/expr"
)

// ActionKind is what a rule does.
type ActionKind int

const (
	Backtrace ActionKind = iota // keep N frames of the stack
	Capture                     // evaluate an expression and record it
	Count                       // count a named event
	Start                       // start capturing
	Stop                        // stop capturing
)

// Action is one action line.
type Action struct {
	Kind   ActionKind
	Frames int       // Backtrace
	Expr   expr.Node // Capture
	Text   string    // Capture: the expression as written; Count: the event name
	Pos    Pos
}

// Pos is a place in a rules file.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// Rule is an `at` block: actions for samples with a matching function on
// the stack (and a true condition in its frame).
type Rule struct {
	Func     string    // glob on source function names
	Cond     expr.Node // nil: always
	CondText string
	Actions  []Action
	Pos      Pos
}

// Program is a `program` block: rules for executables whose base name
// matches Glob.
type Program struct {
	Glob  string
	Rules []*Rule
	Pos   Pos
}

// File is a parsed rules file with its includes resolved.
type File struct {
	Programs []*Program
	// StartsStopped is true when some rule can start capturing: capturing
	// then begins stopped, waiting for it.
	StartsStopped bool
}

// Error is a rules-file error at a position.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ParseFile reads a rules file and the files it includes.
func ParseFile(name string) (*File, error) {
	f := &File{}
	if err := parseInto(f, name, nil, map[string]bool{}); err != nil {
		return nil, err
	}
	return f, nil
}

// Parse parses rules text; name is used in error positions and includes are
// resolved relative to its directory.
func Parse(name, text string) (*File, error) {
	f := &File{}
	if err := parseText(f, name, text, map[string]bool{name: true}); err != nil {
		return nil, err
	}
	return f, nil
}

func parseInto(f *File, name string, from *Pos, seen map[string]bool) error {
	abs, _ := filepath.Abs(name)
	if seen[abs] {
		return &Error{*from, fmt.Sprintf("%s includes itself (include cycle)", name)}
	}
	b, err := os.ReadFile(name)
	if err != nil {
		if from != nil {
			return &Error{*from, fmt.Sprintf("cannot include %s: %v", name, err)}
		}
		return fmt.Errorf("reading rules: %w", err)
	}
	seen[abs] = true
	defer delete(seen, abs)
	return parseText(f, name, string(b), seen)
}

func parseText(f *File, name, text string, seen map[string]bool) error {
	var prog *Program
	var rule *Rule
	sc := bufio.NewScanner(strings.NewReader(text))
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Text()
		if i := strings.Index(raw, "#"); i >= 0 {
			raw = raw[:i]
		}
		trimmed := strings.TrimLeft(raw, " \t")
		col := len(raw) - len(trimmed) + 1
		trimmed = strings.TrimRight(trimmed, " \t")
		if trimmed == "" {
			continue
		}
		pos := Pos{name, line, col}
		word, rest, _ := strings.Cut(trimmed, " ")
		rest = strings.TrimSpace(rest)
		restCol := col + len(trimmed) - len(rest)
		errf := func(c int, format string, args ...any) error {
			return &Error{Pos{name, line, c}, fmt.Sprintf(format, args...)}
		}
		switch word {
		case "include":
			if rest == "" {
				return errf(col, "include needs a file name")
			}
			inc := rest
			if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(name), inc)
			}
			if err := parseInto(f, inc, &pos, seen); err != nil {
				return err
			}
			prog, rule = nil, nil
		case "program":
			if rest == "" {
				return errf(col, "program needs an executable name pattern, e.g. program myserver or program *")
			}
			if _, err := path.Match(rest, ""); err != nil {
				return errf(restCol, "bad pattern %q: %v", rest, err)
			}
			prog = &Program{Glob: rest, Pos: pos}
			f.Programs = append(f.Programs, prog)
			rule = nil
		case "at":
			if prog == nil {
				return errf(col, "at outside a program block: start with a line `program PATTERN`")
			}
			fn, cond, hasCond := strings.Cut(rest, " if ")
			fn = strings.TrimSpace(fn)
			if fn == "" {
				return errf(col, "at needs a function name pattern, e.g. at worker or at *")
			}
			if _, err := path.Match(fn, ""); err != nil {
				return errf(restCol, "bad pattern %q: %v", fn, err)
			}
			rule = &Rule{Func: fn, Pos: pos}
			if hasCond {
				cond = strings.TrimSpace(cond)
				condCol := restCol + strings.Index(rest, " if ") + 4
				for condCol-1 < len(raw) && (raw[condCol-1] == ' ' || raw[condCol-1] == '\t') {
					condCol++
				}
				n, err := expr.Parse(cond)
				if err != nil {
					if se, ok := err.(*expr.SyntaxError); ok {
						return errf(condCol+se.Col-1, "%s", se.Msg)
					}
					return errf(condCol, "%v", err)
				}
				rule.Cond, rule.CondText = n, cond
			}
			prog.Rules = append(prog.Rules, rule)
		case "backtrace", "capture", "count", "start", "stop":
			if rule == nil {
				return errf(col, "%s outside an at block: put it under a line `at FUNCTION`", word)
			}
			a := Action{Pos: pos}
			switch word {
			case "backtrace":
				n, err := strconv.Atoi(rest)
				if err != nil || n < 1 {
					return errf(restCol, "backtrace needs a number of frames ≥ 1, e.g. backtrace 4")
				}
				a.Kind, a.Frames = Backtrace, n
			case "capture":
				if rest == "" {
					return errf(col, "capture needs an expression, e.g. capture j->size")
				}
				n, err := expr.Parse(rest)
				if err != nil {
					if se, ok := err.(*expr.SyntaxError); ok {
						return errf(restCol+se.Col-1, "%s", se.Msg)
					}
					return errf(restCol, "%v", err)
				}
				a.Kind, a.Expr, a.Text = Capture, n, rest
			case "count":
				if rest == "" || strings.ContainsAny(rest, " \t") {
					return errf(restCol, "count needs one event name, e.g. count slow_path")
				}
				a.Kind, a.Text = Count, rest
			case "start", "stop":
				if rest != "" {
					return errf(restCol, "%s takes nothing after it", word)
				}
				a.Kind = Start
				if word == "stop" {
					a.Kind = Stop
				} else {
					f.StartsStopped = true
				}
			}
			rule.Actions = append(rule.Actions, a)
		default:
			return errf(col, "unknown word %q: a line starts with include, program, at, backtrace, capture, count, start or stop", word)
		}
	}
	return sc.Err()
}
