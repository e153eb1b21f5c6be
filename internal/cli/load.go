package cli

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
)

// filterFlags are the flags that select samples, shared by report, diff,
// export, latency and contexts (the last two register fewer of them).
type filterFlags struct {
	kernel     string
	from, to   string
	pids, tids []string
	comms      []string
	focus      string
	ignore     string
	hide       string
	// byEvents names the command (latency, contexts) when it infers
	// function lifetimes from consecutive events and so takes --hide but
	// not --focus or --ignore; see registerHide.
	byEvents string
}

// Help of the stack flags; the regular expressions are Go's (RE2), unanchored.
const (
	focusHelp  = "only the samples with a frame matching this regular expression (function name, source file or file:line; unanchored)"
	ignoreHelp = "drop the samples with a frame matching this regular expression (as --focus)"
	hideHelp   = "remove the frames matching this regular expression (function name, source file or file:line; unanchored) from stacks, charging their time to their callers"
)

// register adds the flags to a command's flag set.
func (f *filterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.kernel, "kernel", "include", "kernel frames: include, exclude (charge kernel time to the calling user code) or only")
	fs.StringVar(&f.from, "from", "", "start of the time window, from the first sample (e.g. 1.5s, 200ms)")
	fs.StringVar(&f.to, "to", "", "end of the time window, from the first sample")
	fs.StringSliceVar(&f.pids, "pid", nil, "only these processes (comma-separated PIDs; report --by process lists them)")
	fs.StringSliceVar(&f.tids, "tid", nil, "only these threads (comma-separated TIDs; report --by thread lists them)")
	fs.StringSliceVar(&f.comms, "comm", nil, "only threads with these names, or of processes with these names (comma-separated)")
	fs.StringVar(&f.focus, "focus", "", focusHelp)
	fs.StringVar(&f.ignore, "ignore", "", ignoreHelp)
	fs.StringVar(&f.hide, "hide", "", hideHelp)
}

// registerHide adds --hide to cmd (latency, contexts), which infers how long
// functions run from the consecutive events of each thread: hiding a frame
// from every stack keeps that continuity, but dropping the events of some
// stacks would join separate calls of a function across the gap and
// overstate their latency. --focus and --ignore are registered hidden so
// that filter rejects them with that reason rather than as unknown flags.
func (f *filterFlags) registerHide(fs *pflag.FlagSet, cmd string) {
	f.byEvents = cmd
	fs.StringVar(&f.hide, "hide", "", hideHelp)
	fs.StringVar(&f.focus, "focus", "", "not supported by "+cmd)
	fs.StringVar(&f.ignore, "ignore", "", "not supported by "+cmd)
	_ = fs.MarkHidden("focus")
	_ = fs.MarkHidden("ignore")
}

// load reads the recordings (see loadProfile) and keeps the samples the
// flags select. With merge, for views that need totals but no time order,
// samples are merged as they are read (loader.Options.Merge) unless
// --from or --to needs their times. When the recordings have samples and none is left, it says
// which selection left none: --pid, --tid and --comm (naming the processes
// recorded), or --focus and --ignore (naming the busiest functions).
func (f *filterFlags) load(paths []string, stderr io.Writer, merge bool) (*profile.Profile, error) {
	q, _, err := f.loadWhole(paths, stderr, merge)
	return q, err
}

// loadWhole is load that also returns everything the recordings hold,
// before the flags' selection (every event kind included).
func (f *filterFlags) loadWhole(paths []string, stderr io.Writer, merge bool) (*profile.Profile, *profile.Profile, error) {
	return f.loadWith(paths, stderr, loader.Options{Merge: merge})
}

// loadStream is loadWhole for views that go through the samples in time
// order (Profile.EachSample) and never look at Profile.Samples: the
// samples are read again from the recordings rather than held
// (loader.Options.Stream).
func (f *filterFlags) loadStream(paths []string, stderr io.Writer) (*profile.Profile, *profile.Profile, error) {
	return f.loadWith(paths, stderr, loader.Options{Stream: true})
}

func (f *filterFlags) loadWith(paths []string, stderr io.Writer, o loader.Options) (*profile.Profile, *profile.Profile, error) {
	flt, err := f.filter()
	if err != nil {
		return nil, nil, err
	}
	o.Merge = o.Merge && !flt.HasFrom && !flt.HasTo
	p, err := loadProfileWith(paths, stderr, o)
	if err != nil {
		return nil, nil, err
	}
	q, err := f.selected(p, flt)
	return q, p, err
}

// selected applies flt to p, saying which selection left no sample.
func (f *filterFlags) selected(p *profile.Profile, flt profile.Filter) (*profile.Profile, error) {
	q := p.Apply(flt)
	if q.HasSamples() || !p.HasSamples() {
		return q, nil
	}
	if flt.HasFrom || flt.HasTo {
		if w := p.Apply(profile.Filter{From: flt.From, To: flt.To, HasFrom: flt.HasFrom, HasTo: flt.HasTo, Kernel: flt.Kernel}); !w.HasSamples() {
			var last uint64
			if err := p.EachSample(func(s *profile.Sample) bool { last = max(last, s.Time); return true }); err != nil {
				return nil, err
			}
			span := time.Duration(0)
			if last > p.StartTime {
				span = time.Duration(last - p.StartTime)
			}
			return nil, usagef("no samples in the window %s: the recording's samples run from 0s to %s after its start; choose --from and --to within that",
				window(f), span.Round(time.Millisecond))
		}
	}
	if len(f.pids)+len(f.tids)+len(f.comms) > 0 {
		if tasks := p.Apply(profile.Filter{PIDs: flt.PIDs, TIDs: flt.TIDs, Comms: flt.Comms}); !tasks.HasSamples() {
			return nil, fmt.Errorf("no samples of the selected %s: the recording has samples of %s",
				selection(f), strings.Join(processList(p), ", "))
		}
	}
	if flt.Focus != nil || flt.Ignore != nil {
		rest := flt
		rest.Focus, rest.Ignore, rest.Hide = nil, nil, nil
		if r := p.Apply(rest); r.HasSamples() {
			return nil, fmt.Errorf("%s: the busiest functions are %s",
				stackSelection(f), strings.Join(busiest(r, 5), ", "))
		}
	}
	return q, nil
}

// window spells the --from and --to flags given.
func window(f *filterFlags) string {
	switch {
	case f.from != "" && f.to != "":
		return "--from " + f.from + " --to " + f.to
	case f.from != "":
		return "--from " + f.from
	}
	return "--to " + f.to
}

// selection describes the --pid, --tid and --comm flags given.
func selection(f *filterFlags) string {
	var parts []string
	for _, x := range []struct {
		name string
		vals []string
	}{{"pid", f.pids}, {"tid", f.tids}, {"comm", f.comms}} {
		if len(x.vals) > 0 {
			parts = append(parts, x.name+" "+strings.Join(x.vals, ","))
		}
	}
	return strings.Join(parts, " and ")
}

// stackSelection says that no sample passed the --focus and --ignore flags.
func stackSelection(f *filterFlags) string {
	switch {
	case f.focus != "" && f.ignore != "":
		return fmt.Sprintf("no sample has a frame matching --focus %q without one matching --ignore %q", f.focus, f.ignore)
	case f.focus != "":
		return fmt.Sprintf("no sample has a frame matching --focus %q", f.focus)
	}
	return fmt.Sprintf("every sample has a frame matching --ignore %q", f.ignore)
}

// lostHint is what an error that found no matching function adds when
// the recording lost samples: the function may have been in them.
func lostHint(lost uint64) string {
	if lost == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d samples lost while recording: it may have been among them; a larger --mmap-pages keeps them)", lost)
}

// busiest names the (at most n) functions with the most samples of their
// own, with their self share, e.g. "worker (66.2%)".
func busiest(p *profile.Profile, n int) []string {
	var out []string
	for _, r := range p.Flat(profile.ByFunction).Rows {
		if len(out) == n || r.Self == 0 {
			break
		}
		out = append(out, fmt.Sprintf("%s (%.1f%%)", r.Name, 100*r.SelfFrac))
	}
	return out
}

// processList names the processes with samples, most samples first, e.g.
// "hier[1234] (950 samples)", at most ten.
func processList(p *profile.Profile) []string {
	rows := p.Flat(profile.ByProcess).Rows
	var out []string
	for i, r := range rows {
		if i == 10 {
			out = append(out, fmt.Sprintf("%d more", len(rows)-i))
			break
		}
		out = append(out, fmt.Sprintf("%s (%d samples)", r.Name, r.Self))
	}
	return out
}

// ids parses a list of PIDs or TIDs given to flag.
func ids(flag string, vals []string) ([]uint32, error) {
	var out []uint32
	for _, v := range vals {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		if err != nil || n == 0 {
			return nil, usagef("--%s %q: want a positive number (or a comma-separated list)", flag, v)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}

func (f *filterFlags) filter() (profile.Filter, error) {
	var out profile.Filter
	k, err := profile.ParseKernelMode(f.kernel)
	if err != nil {
		return out, usageError{err}
	}
	out.Kernel = k
	if f.from != "" {
		d, err := parseOffset(f.from)
		if err != nil {
			return out, usagef("--from %q: %v", f.from, err)
		}
		out.From, out.HasFrom = d, true
	}
	if f.to != "" {
		d, err := parseOffset(f.to)
		if err != nil {
			return out, usagef("--to %q: %v", f.to, err)
		}
		out.To, out.HasTo = d, true
	}
	if out.HasFrom && out.HasTo && out.To <= out.From {
		return out, usagef("--to must be later than --from")
	}
	if out.PIDs, err = ids("pid", f.pids); err != nil {
		return out, err
	}
	if out.TIDs, err = ids("tid", f.tids); err != nil {
		return out, err
	}
	if f.byEvents != "" && (f.focus != "" || f.ignore != "") {
		return out, usagef("%s takes --hide but not --focus or --ignore: it infers how long functions run from the consecutive events of each thread, "+
			"and dropping the events of some stacks would join separate calls across the gap (use culprit report --focus to select stacks)", f.byEvents)
	}
	for _, x := range []struct {
		flag, val string
		re        **regexp.Regexp
	}{{"focus", f.focus, &out.Focus}, {"ignore", f.ignore, &out.Ignore}, {"hide", f.hide, &out.Hide}} {
		if x.val == "" {
			continue
		}
		if *x.re, err = regexp.Compile(x.val); err != nil {
			return out, usagef("--%s %q: %v", x.flag, x.val, err)
		}
	}
	for _, c := range f.comms {
		if c = strings.TrimSpace(c); c == "" {
			return out, usagef("--comm wants a thread or process name")
		}
		out.Comms = append(out.Comms, c)
	}
	return out, nil
}

// loadProfile reads recordings (default culprit.rec), showing progress on a
// terminal for large inputs, and prints what was salvaged from damaged files.
func loadProfile(paths []string, stderr io.Writer, merge bool) (*profile.Profile, error) {
	return loadProfileWith(paths, stderr, loader.Options{Merge: merge})
}

// loadProfileWith is loadProfile with the loader's options (Progress is
// set here).
func loadProfileWith(paths []string, stderr io.Writer, opts loader.Options) (*profile.Profile, error) {
	if len(paths) == 0 {
		paths = []string{"culprit.rec"}
	}
	paths, err := storedPaths(paths, stderr)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil {
			total += st.Size()
		}
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && total > 32<<20 {
		// The total is not known (records, not bytes): a spinner and a count,
		// removed when done.
		pb := mpb.New(mpb.WithOutput(stderr), mpb.WithWidth(3))
		bar := pb.New(0, mpb.SpinnerStyle(), mpb.BarRemoveOnComplete(),
			mpb.PrependDecorators(decor.Name("reading recordings ")),
			mpb.AppendDecorators(decor.CurrentNoUnit(" %d records")))
		opts.Progress = func(n int) { bar.SetCurrent(int64(n)) }
		defer func() { bar.SetTotal(-1, true); pb.Wait() }()
	}
	p, err := loader.Load(paths, opts)
	if err != nil {
		return nil, err
	}
	for _, s := range p.Sources {
		switch {
		case s.Salvage != "":
			warnf(stderr, "%s: %s", s.Path, s.Salvage)
		case !s.Complete:
			warnf(stderr, "%s: no end record (still being written, or the recorder was killed): salvaged the %d samples recorded so far", s.Path, s.Samples)
		}
	}
	for _, w := range p.Warnings {
		warnf(stderr, "%s", w)
	}
	return p, nil
}

// groupingAndFormat checks the --by and --format flags of report and diff.
func groupingAndFormat(by, format string) (profile.Grouping, error) {
	g, err := profile.ParseGrouping(by)
	if err != nil {
		return g, usageError{err}
	}
	if format != "text" && format != "json" {
		return g, usagef("unknown format %q: use text or json", format)
	}
	return g, nil
}

// storedPaths replaces each stored-run reference (@REV, @REV:KEY=VALUE; see
// culprit history) by its recording file. A file whose name starts with @
// is read as a file when it exists.
func storedPaths(paths []string, stderr io.Writer) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if strings.HasPrefix(p, "@") {
			if _, err := os.Stat(p); err != nil {
				f, err := runFile(p, stderr)
				if err != nil {
					return nil, err
				}
				p = f
			}
		}
		out = append(out, p)
	}
	return out, nil
}
