package importer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/culprit-dev/culprit/internal/recording"
)

// The text of perf script, default fields, with call chains:
//
//	hier  8110  2291.537887:     250000 cpu-clock:
//		ffffffff815fcdc4 finish_fault+0x394 ([kernel.kallsyms])
//		            117e worker+0x45 (/tmp/hier)
//		            1192 dispatch_1+0xe (/tmp/hier)
//	<blank line>
//	syscalls  9167 [001]  2347.386094: raw_syscalls:sys_enter: NR 1 (3, 7ffe8adf2e00, 40, ...)
//		...
//
// Quirks handled here, seen in real perf versions or documented field
// settings:
//
//   - The header is "comm [pid/]tid [[cpu]] secs.frac: [period] event: payload".
//     comm may hold spaces and is right-aligned (leading spaces) without call
//     chains; pid/ is printed only with -F +pid, [cpu] only when the CPU was
//     sampled, the period not for tracepoints; the fraction has 6 digits, 9
//     with --ns. Without a pid the thread id stands in for the process.
//   - Without call chains the sampled ip, symbol and dso follow the event on
//     the header line.
//   - Frame lines are "\t addr sym+0xoff (dso)"; +0xoff is missing with some
//     -F settings, the dso with others, sym is "[unknown]" when perf could not
//     name the address, and the dso may hold spaces and parentheses
//     ("(/x/a (deleted))"), as may C++ names. The frames "0 [unknown]
//     ([unknown])" and "ffffffffffffffff [unknown] ([unknown])" that end
//     many call chains are dropped.
//   - perf prints kernel frames ([kernel.kallsyms], a "[module]", or an
//     address at or above 0xffff800000000000) first: whatever follows the
//     first user frame is a user frame ([vsyscall] is user memory).
//   - perf 6.x prints call-chain addresses of user objects relative to their
//     object (0x117e), not as mapped (0x55aa10ff017e), so two objects of a
//     process share addresses. When the addresses show it (an address below
//     mmap_min_addr, or two objects of a process over the same addresses),
//     every object gets an address region of its own in the recording; its
//     frames without a name then read as object+0xoffset.
//   - With --call-graph dwarf, perf prints the functions inlined at an
//     address before the function that holds them, all at that address,
//     with the dso "(inlined)". Each keeps its name as a frame of its own: an
//     inlined function at depth d gets the region (object, d).
//   - Tracepoint payloads: raw_syscalls "NR 1 (...)" / "NR 1 = 64";
//     sched_switch "prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> ..."
//     or, with libtraceevent's plugin, "a:1 [120] S ==> b:2 [120]": a
//     switch sample of the leaving thread, then a switch-in of the next one
//     (not counted as an imported sample); sched_waking and sched_wakeup
//     "comm=a pid=12 prio=120 target_cpu=001" (or "a:12 [120] CPU:001"): a
//     wake-up of pid by the sample's thread.
//   - Sample-less side-band lines (PERF_RECORD_*) and "#" comments (perf
//     script --header) are passed over; CRLF line ends are accepted.
//   - A file cut short: the sample the input ends in is left out.
//
// Names. Nothing but perf's names is known, so the recording carries them:
// a KernelSymbol (kernel frames) or a Symbol of the sample's process (user
// frames) per function, written once at the end of the import. A function's
// own frames give its start (address - offset); its record spans from there
// to the last address a reader looks up in it (the address itself for the
// innermost frame of each list, address-1 for return addresses), so that a
// return address at +0x0 stays in its function and an address perf did not
// name is not swallowed by the function below it. Inlined functions and
// frames without an offset name exactly the one address looked up (Size 1),
// since perf's offset for an inlined function counts from the function that
// holds it.

// Address layout of the recording.
const (
	kernelStart = 0xffff800000000000 // kernel addresses on x86-64 and arm64 are at least this
	minUserAddr = 0x10000            // vm.mmap_min_addr: no mapped user address is lower
	// Region tags: user frames of region r are stored as r<<48 | addr;
	// kernel frames of region r as kernelStart | r<<36 | addr's low 36 bits.
	userShift       = 48
	userMask        = 1<<userShift - 1
	maxUserRegion   = 1<<16 - 1
	kernelShift     = 36
	kernelMask      = 1<<kernelShift - 1
	maxKernelRegion = 1<<11 - 1

	maxLine    = 1 << 20 // longer lines are skipped
	maxSecs    = (1<<64 - 1) / 1_000_000_000
	inlinedDso = "inlined"
)

// PerfScript reads the text output of perf script (default fields, with or
// without call chains) and writes it to w as a recording: a Meta record, a
// Comm per thread, the samples with their stacks, KernelSymbol and Symbol
// records naming every function perf named, and an End record. w is not
// closed.
//
// It reads the input twice (to know the events and how perf printed
// addresses before writing): an input that cannot seek back is copied to a
// temporary file. Lines it cannot parse are skipped and counted; it fails
// only when no sample could be imported at all, saying why. Samples of cpu-clock,
// task-clock and cycles are CPU time (their period is perf's: ns for the
// clocks, cycles for cycles); raw_syscalls:sys_enter/sys_exit and
// syscalls:sys_enter_*/sys_exit_* are system call entries and exits, with
// the system call number when perf prints it; sched:sched_switch is a context
// switch with the leaving thread's state. Other events are counted in
// Stats.Ignored and left out.
func PerfScript(r io.Reader, w *recording.Writer) (Stats, error) {
	if r == nil || w == nil {
		return Stats{}, errors.New("importer: PerfScript needs a reader and a writer")
	}
	pre := &prescan{seen: map[string]bool{}, ranges: map[pidObject]*addrRange{}}
	var im *importer
	err := twoPass(r,
		func(in io.Reader) error {
			p := newParser(pre.sample)
			if err := p.run(in); err != nil {
				return err
			}
			return pre.verdict(p)
		},
		func(in io.Reader) error {
			im = newImporter(w, pre)
			if err := im.begin(); err != nil {
				return err
			}
			p := newParser(im.sample)
			p.stats = &im.stats
			if err := p.run(in); err != nil {
				return err
			}
			return im.end()
		})
	if im == nil {
		return Stats{}, err
	}
	return im.stats, err
}

// twoPass hands the input to first and then, from the same start, to second.
func twoPass(r io.Reader, first, second func(io.Reader) error) error {
	if rs, ok := r.(io.ReadSeeker); ok {
		if pos, err := rs.Seek(0, io.SeekCurrent); err == nil {
			if err := first(rs); err != nil {
				return err
			}
			if _, err := rs.Seek(pos, io.SeekStart); err != nil {
				return fmt.Errorf("rewinding the input: %w", err)
			}
			return second(rs)
		}
	}
	tmp, err := os.CreateTemp("", "culprit-import-*.txt")
	if err != nil {
		return fmt.Errorf("copying the input to a temporary file: %w", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := first(io.TeeReader(r, bw)); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("copying the input to a temporary file: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewinding the temporary copy of the input: %w", err)
	}
	return second(tmp)
}

// ---- parsing ----

type frame struct {
	addr   uint64
	sym    string // "" when perf printed [unknown] or no symbol
	off    uint64
	hasOff bool
	dso    string // between the parentheses; "" when absent, inlinedDso for "(inlined)"
	// Set by prepare:
	depth  int    // 0 for a function's own frame, d for the d-th inlined function out from it
	obj    string // the dso of the frame's group (the holding function's)
	kernel bool
	skip   bool // an end-of-chain marker: 0 or -1 without a name
}

type sample struct {
	comm     string
	pid, tid uint32
	hasPID   bool
	cpu      uint32
	time     uint64 // ns
	period   uint64
	event    string
	payload  string
	frames   []frame
}

type parser struct {
	emit    func(*sample) error
	stats   *Stats
	lineNo  int
	cur     *sample
	buf     sample // cur points here when a sample is open
	headers int    // sample headers parsed
	badLine int    // first line that could not be parsed
	badText string
	content bool // a line other than blank lines and comments was seen
}

func newParser(emit func(*sample) error) *parser {
	return &parser{emit: emit, stats: &Stats{}}
}

func (p *parser) bad(line string) {
	p.stats.Skipped++
	if p.badLine == 0 {
		p.badLine, p.badText = p.lineNo, line
	}
}

func (p *parser) flush() error {
	if p.cur == nil {
		return nil
	}
	s := p.cur
	p.cur = nil
	prepare(s.frames)
	return p.emit(s)
}

func (p *parser) run(in io.Reader) error {
	br := bufio.NewReaderSize(in, 256<<10)
	var acc []byte
	for {
		acc = acc[:0]
		tooLong, newline := false, false
		var rerr error
		for {
			frag, err := br.ReadSlice('\n')
			if len(acc)+len(frag) <= maxLine {
				acc = append(acc, frag...)
			} else {
				tooLong = true
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == nil {
				newline = true
			} else {
				rerr = err
			}
			break
		}
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("reading the input: %w", rerr)
		}
		if rerr == io.EOF && len(acc) == 0 && !tooLong {
			break
		}
		p.lineNo++
		line := string(bytes.TrimRight(acc, "\r\n"))
		if p.lineNo == 1 {
			if err := checkMagic(line); err != nil {
				return err
			}
		}
		if tooLong {
			p.content = true
			p.bad(line[:min(len(line), 80)])
			continue
		}
		last := !newline // the input ends inside this line
		if err := p.line(line, last); err != nil {
			return err
		}
		if last {
			break
		}
	}
	return p.flush()
}

// line handles one line; last is set when the input ends inside it.
func (p *parser) line(line string, last bool) error {
	trimmed := strings.TrimSpace(line)
	if last && strings.HasPrefix(line, "\t") {
		return p.lastLine(line, trimmed) // perhaps a frame line cut after its tab
	}
	if trimmed == "" {
		return p.flush()
	}
	if trimmed[0] == '#' {
		return nil
	}
	p.content = true
	if last {
		return p.lastLine(line, trimmed)
	}
	if line[0] == '\t' {
		if !p.frame(line) {
			p.bad(line)
		}
		return nil
	}
	h, kind := parseHeader(line)
	switch kind {
	case headerSample:
		if err := p.flush(); err != nil {
			return err
		}
		p.open(h)
		return nil
	case headerSideband:
		return p.flush()
	}
	if line[0] == ' ' && p.frame(line) {
		return nil
	}
	p.bad(line)
	return nil
}

// frame adds a frame line to the open sample (a frame outside a sample is
// skipped), and reports whether the line was a frame.
func (p *parser) frame(line string) bool {
	f, ok := parseFrame(line)
	switch {
	case !ok:
		return false
	case p.cur == nil:
		p.bad(line)
	default:
		p.cur.frames = append(p.cur.frames, f)
	}
	return true
}

func (p *parser) open(h sample) {
	p.headers++
	frames := p.buf.frames[:0]
	p.buf = h
	p.buf.frames = frames
	p.cur = &p.buf
	if isCPUEvent(h.event) {
		// Without call chains the ip, symbol and dso follow the event.
		if f, ok := parseFrame(h.payload); ok {
			p.cur.frames = append(p.cur.frames, f)
		}
	}
}

// lastLine handles a line the input ends inside: what it belongs to is cut.
func (p *parser) lastLine(line, trimmed string) error {
	if _, kind := parseHeader(line); kind != headerNone {
		if err := p.flush(); err != nil {
			return err
		}
		if kind == headerSample {
			p.headers++
			p.stats.Truncated = true
		}
		return nil
	}
	if line[0] == '\t' || line[0] == ' ' && trimmed != "" && isHex(trimmed[0]) {
		// A frame of the open sample, or the start of one.
		if p.cur != nil {
			p.cur = nil
			p.stats.Truncated = true
		}
		return nil
	}
	// The start of the next sample's header.
	if err := p.flush(); err != nil {
		return err
	}
	p.stats.Truncated = true
	return nil
}

func checkMagic(line string) error {
	switch {
	case strings.HasPrefix(line, "PERFILE2"), strings.HasPrefix(line, "2ELIFREP"):
		return errors.New("this is a perf.data file, not the text of perf script: convert it first with perf script -i FILE > FILE.txt")
	case strings.HasPrefix(line, recording.Magic):
		return errors.New("this is already a culprit recording")
	}
	return nil
}

type headerKind int

const (
	headerNone headerKind = iota
	headerSample
	headerSideband // PERF_RECORD_* lines of perf script --show-*-events
)

// headerRE matches "comm [pid/]tid [[cpu]] secs.frac:" and what follows. comm is
// lazy so that the first "tid [cpu] time:" group after it is taken.
var headerRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(.*?)\s+(?:(-1|\d{1,10})/)?(-1|\d{1,10})\s+(?:\[(\d{1,10})\]\s+)?(\d{1,11})\.(\d{1,12}):(?:\s+(.*))?$`)
})

func parseHeader(line string) (sample, headerKind) {
	m := headerRE().FindStringSubmatch(line)
	if m == nil {
		return sample{}, headerNone
	}
	var s sample
	s.comm = m[1]
	if m[2] != "" {
		s.pid, s.hasPID = parseID(m[2]), true
	}
	s.tid = parseID(m[3])
	if m[4] != "" {
		v, err := strconv.ParseUint(m[4], 10, 32)
		if err != nil {
			return s, headerNone
		}
		s.cpu = uint32(v)
	}
	secs, err := strconv.ParseUint(m[5], 10, 64)
	if err != nil || secs >= maxSecs {
		return s, headerNone
	}
	frac := m[6]
	if len(frac) > 9 {
		frac = frac[:9]
	}
	ns, _ := strconv.ParseUint(frac, 10, 64)
	for i := len(frac); i < 9; i++ {
		ns *= 10
	}
	s.time = secs*1e9 + ns
	rest := strings.TrimSpace(m[7])
	tok, after := cutField(rest)
	if strings.HasPrefix(tok, "PERF_RECORD_") {
		return s, headerSideband
	}
	if isDigits(tok) {
		s.period, err = strconv.ParseUint(tok, 10, 64)
		if err != nil {
			return s, headerNone
		}
		tok, after = cutField(after)
	}
	if len(tok) < 2 || tok[len(tok)-1] != ':' {
		return s, headerNone
	}
	s.event = tok[:len(tok)-1]
	s.payload = after
	return s, headerSample
}

func parseID(s string) uint32 {
	if s == "-1" {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0
	}
	return uint32(v)
}

// cutField splits s at its first run of blanks.
func cutField(s string) (field, rest string) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseFrame parses "addr [sym[+0xoff]] [(dso)]" with blanks around.
func parseFrame(s string) (frame, bool) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && isHex(s[i]) {
		i++
	}
	if i == 0 || i > 16 || i < len(s) && s[i] != ' ' && s[i] != '\t' {
		return frame{}, false
	}
	addr, err := strconv.ParseUint(s[:i], 16, 64)
	if err != nil {
		return frame{}, false
	}
	f := frame{addr: addr}
	rest := strings.TrimSpace(s[i:])
	if strings.HasSuffix(rest, ")") {
		// The dso is the last balanced parenthesized group, after a blank
		// (or alone); "foo(int)" is a C++ name, not a dso.
		depth, open := 0, -1
	scan:
		for j := len(rest) - 1; j >= 0; j-- {
			switch rest[j] {
			case ')':
				depth++
			case '(':
				depth--
				if depth == 0 {
					open = j
					break scan
				}
			}
		}
		if open == 0 || open > 0 && (rest[open-1] == ' ' || rest[open-1] == '\t') {
			f.dso = rest[open+1 : len(rest)-1]
			if f.dso == "inlined" {
				f.dso = inlinedDso
			}
			rest = strings.TrimSpace(rest[:open])
		}
	}
	if rest == "" || rest == "[unknown]" {
		return f, true
	}
	if j := strings.LastIndex(rest, "+0x"); j > 0 {
		h := rest[j+3:]
		if len(h) > 0 && len(h) <= 16 && allHex(h) {
			f.off, _ = strconv.ParseUint(h, 16, 64)
			f.hasOff = true
			rest = rest[:j]
		}
	}
	if rest == "[unknown]" {
		return f, true
	}
	f.sym = rest
	return f, true
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// prepare sets what frames are. A run of "(inlined)" frames at one address
// followed by a frame of a real dso at the same address are the functions
// inlined into that frame's function, innermost first; a run with no such
// frame after it stands alone, and its last frame has depth 0. perf prints
// kernel frames first: a frame after a user frame is a user frame, whatever
// its address. The 0 and ffffffffffffffff frames without a name that end
// many call chains are skipped.
func prepare(fs []frame) {
	for i := len(fs) - 1; i >= 0; i-- {
		f := &fs[i]
		f.depth, f.obj = 0, f.dso
		if f.dso != inlinedDso || i+1 == len(fs) || fs[i+1].addr != f.addr {
			continue
		}
		next := fs[i+1]
		if next.dso == inlinedDso {
			f.depth, f.obj = next.depth+1, next.obj
		} else {
			f.depth, f.obj = 1, next.dso
		}
	}
	user := false
	for i := range fs {
		f := &fs[i]
		f.skip = f.sym == "" && (f.addr == 0 || f.addr == 1<<64-1)
		if f.skip {
			continue
		}
		if f.obj == inlinedDso || f.obj == "" {
			f.kernel = f.addr >= kernelStart
		} else {
			f.kernel = isKernel(f.addr, f.obj)
		}
		f.kernel = f.kernel && !user
		user = user || !f.kernel
	}
}

// ---- events ----

// eventKind says what a perf event is to culprit.
func eventKind(ev string) (recording.Event, bool) {
	switch {
	case ev == "raw_syscalls:sys_enter", strings.HasPrefix(ev, "syscalls:sys_enter_"):
		return recording.EventSyscallEnter, true
	case ev == "raw_syscalls:sys_exit", strings.HasPrefix(ev, "syscalls:sys_exit_"):
		return recording.EventSyscallExit, true
	case ev == "sched:sched_switch":
		return recording.EventSwitch, true
	case ev == "sched:sched_waking", ev == "sched:sched_wakeup", ev == "sched:sched_wakeup_new":
		return recording.EventWakeup, true
	case isCPUEvent(ev):
		return recording.EventCPU, true
	}
	return 0, false
}

// cpuBase returns the name of a hardware or software event without PMU and
// modifiers: "cpu_core/cycles/u" → "cycles", "cpu-clock:ppp" → "cpu-clock".
func cpuBase(ev string) string {
	if i := strings.IndexByte(ev, '/'); i >= 0 {
		ev = ev[i+1:]
		if j := strings.IndexByte(ev, '/'); j >= 0 {
			ev = ev[:j]
		}
	} else if i := strings.IndexByte(ev, ':'); i >= 0 {
		ev = ev[:i]
	}
	return ev
}

func isCPUEvent(ev string) bool {
	switch cpuBase(ev) {
	case "cpu-clock", "task-clock", "cycles", "cpu-cycles":
		return true
	}
	return false
}

func isCyclesEvent(ev string) bool {
	b := cpuBase(ev)
	return b == "cycles" || b == "cpu-cycles"
}

var nrRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s,(])(?:NR|__NR|__syscall_nr|syscall_nr)(?:\s*[:=]\s*|\s+)(\d{1,10})\b`)
})

// syscallNR finds the system call number in a tracepoint payload: raw_syscalls
// print "NR 1 (...)"; syscalls:sys_enter_* print their arguments only, and
// then 0 is returned.
func syscallNR(payload string) uint64 {
	m := nrRE().FindStringSubmatch(payload)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseUint(m[1], 10, 64)
	return v
}

// wokenTID reads the woken thread from a sched_waking or sched_wakeup
// payload: "comm=a pid=12 prio=120 target_cpu=001", or with
// libtraceevent's plugin "a:12 [120] CPU:001".
func wokenTID(payload string) uint64 {
	if i := strings.Index(payload, "pid="); i >= 0 {
		f, _ := cutField(payload[i+len("pid="):])
		v, _ := strconv.ParseUint(f, 10, 32)
		return v
	}
	f, _ := cutField(payload)
	if i := strings.LastIndexByte(f, ':'); i >= 0 {
		v, _ := strconv.ParseUint(f[i+1:], 10, 32)
		return v
	}
	return 0
}

// nextTID reads the thread a sched_switch payload switches to:
// "... ==> next_comm=b next_pid=2 next_prio=120" or "... ==> b:2 [120]".
func nextTID(payload string) (uint32, bool) {
	i := strings.Index(payload, "==>")
	if i < 0 {
		return 0, false
	}
	rest := payload[i+3:]
	if j := strings.Index(rest, "next_pid="); j >= 0 {
		f, _ := cutField(rest[j+len("next_pid="):])
		v, err := strconv.ParseUint(f, 10, 32)
		return uint32(v), err == nil
	}
	f, _ := cutField(strings.TrimLeft(rest, " \t"))
	if j := strings.LastIndexByte(f, ':'); j >= 0 {
		v, err := strconv.ParseUint(f[j+1:], 10, 32)
		return uint32(v), err == nil
	}
	return 0, false
}

// prevState reads the leaving thread's state from a sched_switch payload, as
// the kernel's task state bits: R 0, S 1, D 2, T 4, t 8, X 16, Z 32, P 64, I
// 128, combined with "|"; the "+" of a preempted runnable thread is dropped.
func prevState(payload string) uint64 {
	var s string
	if i := strings.Index(payload, "prev_state="); i >= 0 {
		s, _ = cutField(payload[i+len("prev_state="):])
	} else if i := strings.Index(payload, "==>"); i >= 0 {
		f := strings.Fields(payload[:i])
		if len(f) > 0 {
			s = f[len(f)-1]
		}
	}
	s = strings.TrimRight(s, "+")
	if v, err := strconv.ParseUint(s, 0, 64); err == nil {
		return v
	}
	var v uint64
	for _, part := range strings.Split(s, "|") {
		switch part {
		case "S":
			v |= 1
		case "D":
			v |= 2
		case "T":
			v |= 4
		case "t":
			v |= 8
		case "X":
			v |= 16
		case "Z":
			v |= 32
		case "P":
			v |= 64
		case "I":
			v |= 128
		}
	}
	return v
}

// ---- frames ----

// userPseudo are the bracketed dsos of user memory.
var userPseudo = map[string]bool{
	"[vdso]": true, "[vdso32]": true, "[vdsox32]": true, "[vsyscall]": true,
	"[vectors]": true, "[sigpage]": true, "[heap]": true, "[stack]": true,
	"[unknown]": true, "[uprobes]": true,
}

func isKernelDso(dso string) bool {
	return dso == "[kernel.kallsyms]" || dso == "[guest.kernel.kallsyms]"
}

// isKernel classifies a frame by its group's dso and its address.
func isKernel(addr uint64, dso string) bool {
	switch {
	case isKernelDso(dso):
		return true
	case dso == "[vsyscall]":
		return false
	case addr >= kernelStart:
		return true
	case userPseudo[dso] || strings.HasPrefix(dso, "[anon") || strings.HasPrefix(dso, "[JIT]") || strings.HasPrefix(dso, "[jit"):
		return false
	}
	// A kernel module, "[nf_tables]", whose addresses perf printed
	// relative to the module.
	return len(dso) > 2 && dso[0] == '[' && dso[len(dso)-1] == ']'
}

// realDso reports whether dso names an object (not absent, unknown or inlined).
func realDso(dso string) bool {
	return dso != "" && dso != "[unknown]" && dso != inlinedDso
}

// ---- pass 1: what the input holds ----

type pidObject struct {
	pid uint32
	obj string
}

type addrRange struct{ lo, hi uint64 }

type prescan struct {
	events   []string // imported events, first seen first
	seen     map[string]bool
	samples  int
	ignored  map[string]int
	cycles   bool
	clocks   bool
	ranges   map[pidObject]*addrRange
	relative bool // user addresses are relative to their objects
}

func (ps *prescan) sample(s *sample) error {
	kind, ok := eventKind(s.event)
	if !ok {
		if ps.ignored == nil {
			ps.ignored = map[string]int{}
		}
		ps.ignored[s.event]++
		return nil
	}
	ps.samples++
	if !ps.seen[s.event] {
		ps.seen[s.event] = true
		ps.events = append(ps.events, s.event)
	}
	if kind == recording.EventCPU {
		if isCyclesEvent(s.event) {
			ps.cycles = true
		} else {
			ps.clocks = true
		}
	}
	pid := s.pid
	if !s.hasPID {
		pid = s.tid
	}
	for _, f := range s.frames {
		if f.skip || f.kernel || !realDso(f.dso) {
			continue
		}
		if f.addr < minUserAddr && strings.HasPrefix(f.dso, "/") {
			ps.relative = true
		}
		k := pidObject{pid, f.dso}
		r := ps.ranges[k]
		if r == nil {
			ps.ranges[k] = &addrRange{f.addr, f.addr}
			continue
		}
		r.lo, r.hi = min(r.lo, f.addr), max(r.hi, f.addr)
	}
	return nil
}

// verdict decides how to write the input, or why it cannot be imported.
func (ps *prescan) verdict(p *parser) error {
	if !ps.relative {
		// Objects of one process over the same addresses: perf printed
		// addresses relative to each object.
		byPID := map[uint32][]addrRange{}
		for k, r := range ps.ranges {
			byPID[k.pid] = append(byPID[k.pid], *r)
		}
		for _, rs := range byPID {
			sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
			for i := 1; i < len(rs); i++ {
				if rs[i].lo <= rs[i-1].hi {
					ps.relative = true
				}
			}
		}
	}
	if ps.samples > 0 {
		return nil
	}
	switch {
	case !p.content:
		return errors.New("no samples: the input is empty (is it the output of perf script?)")
	case len(ps.ignored) > 0:
		var names []string
		for ev, n := range ps.ignored {
			names = append(names, fmt.Sprintf("%s (%d)", ev, n))
		}
		sort.Strings(names)
		return fmt.Errorf("no samples of an event culprit can use: found %s; culprit imports cpu-clock, task-clock, cycles, raw_syscalls:sys_enter/sys_exit, syscalls:sys_enter_*/sys_exit_* and sched:sched_switch", strings.Join(names, ", "))
	case p.headers == 0 && p.badLine != 0:
		return fmt.Errorf("no samples: line %d: expected a perf script sample header such as \"comm  pid/tid [cpu] secs.usecs:  period event:\", found %q (is this the output of perf script?)", p.badLine, clip(p.badText))
	case p.stats.Truncated:
		return errors.New("no samples: the input ends inside its first sample")
	}
	return errors.New("no samples: the input holds no sample header (is it the output of perf script?)")
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// ---- pass 2: writing ----

type symKey struct {
	pid   uint32 // 0 for kernel functions
	obj   string
	name  string
	start uint64
}

// exactKey is an address looked up.
type exactKey struct {
	kernel bool
	pid    uint32 // 0 for kernel addresses
	look   uint64
}

type exactSym struct{ name, obj string }

type symSpan struct{ lo, hi uint64 } // addresses looked up, [lo, hi)

type regionKey struct {
	kernel bool
	obj    string
	depth  int
}

type importer struct {
	w        *recording.Writer
	pre      *prescan
	stats    Stats
	comms    map[uint32]string
	pids     map[uint32]uint32 // each thread's process, as its samples said
	regions  map[regionKey]uint64
	nUser    uint64
	nKernel  uint64
	usyms    map[symKey]*symSpan
	uorder   []symKey
	ksyms    map[symKey]*symSpan
	korder   []symKey
	exact    map[exactKey]exactSym
	eorder   []exactKey
	fallback map[uint64]string // user region → object, for its frames without a name
	forder   []uint64
	kern     []uint64
	user     []uint64
	last     uint64
}

func newImporter(w *recording.Writer, pre *prescan) *importer {
	return &importer{w: w, pre: pre,
		stats:   Stats{Events: map[string]int{}, Ignored: map[string]int{}},
		comms:   map[uint32]string{},
		pids:    map[uint32]uint32{},
		regions: map[regionKey]uint64{},
		usyms:   map[symKey]*symSpan{}, ksyms: map[symKey]*symSpan{},
		exact:    map[exactKey]exactSym{},
		fallback: map[uint64]string{},
	}
}

func (im *importer) begin() error {
	meta := recording.Meta{
		Tool:  "culprit import",
		Event: strings.Join(im.pre.events, ","),
		Extra: map[string]string{"imported_from": "perf script"},
	}
	switch {
	case im.pre.cycles && im.pre.clocks:
		meta.Extra["period_unit"] = "cycles for cycles events, ns for the others"
	case im.pre.cycles:
		meta.Extra["period_unit"] = "cycles"
	}
	return im.w.Write(&meta)
}

func (im *importer) region(k regionKey) uint64 {
	if r, ok := im.regions[k]; ok {
		return r
	}
	var r uint64
	if k.kernel {
		if im.nKernel < maxKernelRegion {
			im.nKernel++
			r = im.nKernel
		}
	} else if im.nUser < maxUserRegion {
		im.nUser++
		r = im.nUser
	}
	im.regions[k] = r // 0: out of regions, addresses are kept as they are
	return r
}

// place returns where a frame is stored in the recording and the base of
// its region (0 when the address is kept as perf printed it).
func (im *importer) place(f *frame) (addr, base uint64) {
	if f.kernel {
		if f.depth == 0 && f.obj != inlinedDso && f.addr >= kernelStart {
			return f.addr, 0
		}
		r := im.region(regionKey{true, f.obj, f.depth})
		if r == 0 {
			return f.addr, 0
		}
		base = kernelStart | r<<kernelShift
		return base | f.addr&kernelMask, base
	}
	if f.depth == 0 && f.obj != inlinedDso && (!im.pre.relative || !realDso(f.obj) || f.addr > userMask) {
		return f.addr, 0 // (addresses above userMask are not relative to an object)
	}
	r := im.region(regionKey{false, f.obj, f.depth})
	if r == 0 {
		return f.addr, 0
	}
	base = r << userShift
	if f.depth == 0 && f.sym == "" {
		if _, ok := im.fallback[r]; !ok {
			im.fallback[r] = f.obj
			im.forder = append(im.forder, r)
		}
	}
	return base | f.addr&userMask, base
}

func (im *importer) sample(s *sample) error {
	kind, ok := eventKind(s.event)
	if !ok {
		im.stats.Ignored[s.event]++
		return nil
	}
	pid := s.pid
	if !s.hasPID {
		pid = s.tid
	}
	if c, ok := im.comms[s.tid]; !ok || c != s.comm {
		im.comms[s.tid] = s.comm
		if err := im.w.Write(&recording.Comm{Time: s.time, PID: pid, TID: s.tid, Name: s.comm}); err != nil {
			return err
		}
	}
	im.kern, im.user = im.kern[:0], im.user[:0]
	for i := range s.frames {
		f := &s.frames[i]
		if f.skip {
			continue
		}
		addr, base := im.place(f)
		list := &im.user
		if f.kernel {
			list = &im.kern
		}
		look := addr
		if len(*list) > 0 {
			look-- // a return address: readers look up the call before it
		}
		*list = append(*list, addr)
		if f.sym == "" {
			continue
		}
		if f.dso == inlinedDso || !f.hasOff || f.off > addr-base {
			// An inlined function (perf's offset is from the function
			// that holds it) or a function of unknown start: name the
			// address looked up only.
			k := exactKey{kernel: f.kernel, look: look}
			if !f.kernel {
				k.pid = pid
			}
			if _, ok := im.exact[k]; !ok {
				im.exact[k] = exactSym{f.sym, f.obj}
				im.eorder = append(im.eorder, k)
			}
			continue
		}
		// A function's own frame: its symbol spans from its start to the
		// last address looked up in it.
		k := symKey{obj: f.obj, name: f.sym, start: addr - f.off}
		syms, order := im.usyms, &im.uorder
		if f.kernel {
			syms, order = im.ksyms, &im.korder
		} else {
			k.pid = pid
		}
		lo, hi := min(look, k.start), look+1
		if hi == 0 {
			hi = look
		}
		if sp := syms[k]; sp != nil {
			sp.lo, sp.hi = min(sp.lo, lo), max(sp.hi, hi)
		} else {
			syms[k] = &symSpan{lo, hi}
			*order = append(*order, k)
		}
	}
	var arg uint64
	switch kind {
	case recording.EventSyscallEnter, recording.EventSyscallExit:
		arg = syscallNR(s.payload)
	case recording.EventSwitch:
		arg = prevState(s.payload)
	case recording.EventWakeup:
		arg = wokenTID(s.payload)
	}
	im.pids[s.tid] = pid
	smp := recording.Sample{Time: s.time, PID: pid, TID: s.tid, CPU: s.cpu, Event: kind, Arg: arg}
	if kind == recording.EventCPU {
		smp.Period = s.period
	}
	if err := im.w.WriteSample(smp, im.kern, im.user); err != nil {
		return err
	}
	if next, ok := nextTID(s.payload); ok && kind == recording.EventSwitch && next != 0 {
		// The thread the CPU switches to enters it.
		npid := im.pids[next]
		if npid == 0 {
			npid = next
		}
		if err := im.w.WriteSample(recording.Sample{Time: s.time, PID: npid, TID: next, CPU: s.cpu, Event: recording.EventSwitchIn}, nil, nil); err != nil {
			return err
		}
	}
	im.stats.Samples++
	im.stats.Events[s.event]++
	im.last = max(im.last, s.time)
	return nil
}

// end names the functions seen and closes the recording with its totals.
func (im *importer) end() error {
	for _, k := range im.korder {
		sp := im.ksyms[k]
		if err := im.w.Write(&recording.KernelSymbol{Addr: sp.lo, Size: sp.hi - sp.lo, Name: k.name, Module: module(k.obj)}); err != nil {
			return err
		}
	}
	for _, k := range im.uorder {
		sp := im.usyms[k]
		if err := im.w.Write(&recording.Symbol{PID: k.pid, Addr: sp.lo, Size: sp.hi - sp.lo, Name: k.name, Object: object(k.obj)}); err != nil {
			return err
		}
	}
	for _, k := range im.eorder {
		y := im.exact[k]
		var err error
		if k.kernel {
			err = im.w.Write(&recording.KernelSymbol{Addr: k.look, Size: 1, Name: y.name, Module: module(y.obj)})
		} else {
			err = im.w.Write(&recording.Symbol{PID: k.pid, Addr: k.look, Size: 1, Name: y.name, Object: object(y.obj)})
		}
		if err != nil {
			return err
		}
	}
	// Frames without a name in an object's region read as object+0xoffset.
	for _, r := range im.forder {
		if err := im.w.Write(&recording.Symbol{Addr: r << userShift, Size: 1 << userShift, Object: im.fallback[r]}); err != nil {
			return err
		}
	}
	return im.w.Write(&recording.End{Time: im.last, Samples: uint64(im.stats.Samples), ExitCode: -1})
}

// module is the KernelSymbol.Module of a kernel frame's dso.
func module(dso string) string {
	if isKernelDso(dso) || !realDso(dso) {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(dso, "["), "]")
}

// object is the Symbol.Object of a user frame's dso.
func object(dso string) string {
	if dso == inlinedDso {
		return ""
	}
	return dso
}
