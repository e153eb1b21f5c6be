package introperf

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// Layer is the software layer a binary belongs to.
type Layer int

const (
	LayerUnknown Layer = iota
	LayerMain          // the program's own executable
	LayerLibrary       // a shared object loaded at start (or the vDSO)
	LayerPlugin        // an object dlopen'ed after the program started running
	LayerKernel        // the kernel or a kernel module
)

// String names the layer as reports show it.
func (l Layer) String() string {
	switch l {
	case LayerMain:
		return "main program"
	case LayerLibrary:
		return "library"
	case LayerPlugin:
		return "plug-in"
	case LayerKernel:
		return "kernel"
	}
	return "unknown"
}

// Key is the layer's JSON name: main, library, plugin, kernel or unknown.
func (l Layer) Key() string {
	switch l {
	case LayerMain:
		return "main"
	case LayerLibrary:
		return "library"
	case LayerPlugin:
		return "plugin"
	case LayerKernel:
		return "kernel"
	}
	return "unknown"
}

// External reports whether a root cause in this layer lies outside the
// program's own code (IntroPerf's internal/external classification).
func (l Layer) External() bool { return l == LayerLibrary || l == LayerPlugin || l == LayerKernel }

// Objects is what is known of a run's binaries.
type Objects struct {
	Main    string          // path of the main program's executable, "" when not found
	MainHow string          // how Main was found
	Plugins map[string]bool // object paths dlopen'ed after the program started
	// LoadTimes says whether mapping times were available to find plug-ins.
	LoadTimes bool
	Note      string // why plug-ins could not be told apart, if so
}

// Layer classifies a function's binary.
func (o *Objects) Layer(fn Func) Layer {
	switch {
	case fn.Kernel || fn.Object == profile.KernelObject ||
		(strings.HasPrefix(fn.Object, "[") && fn.Object != "[vdso]" && fn.Object != profile.Unknown &&
			!strings.HasPrefix(fn.Path, "/")):
		return LayerKernel
	case fn.Object == profile.Unknown || fn.Path == "":
		return LayerUnknown
	case o.Main != "" && (fn.Path == o.Main || (filepath.Base(o.Main) == fn.Object && !strings.HasPrefix(fn.Path, "/"))):
		return LayerMain
	case o.Plugins[fn.Path]:
		return LayerPlugin
	}
	return LayerLibrary
}

// classify finds the main executable and the dlopen'ed plug-ins.
//
// Main program: the user object whose basename is that of the recorded
// command (the first Meta with a command); else the object of a user frame
// named "main"; else the object most often found as the outermost user
// frame of a stack.
//
// Plug-in: an object whose first mapping in a process came after that
// process's program started running, taken as the first event whose stack
// holds a user frame of a file other than the dynamic loader (the loader
// maps the libraries a program needs before any code of theirs or of the
// program runs).
// Mappings synthesised when attaching to a running process all predate the
// first event, so an attached recording shows no plug-ins.
func classify(p *profile.Profile, loads []profile.ObjectLoad, started map[uint32]uint64) Objects {
	o := Objects{Plugins: map[string]bool{}}
	var cmd string
	for _, m := range p.Metas {
		if len(m.Command) > 0 {
			cmd = filepath.Base(m.Command[0])
			break
		}
	}
	if cmd != "" {
		for _, f := range p.Frames {
			if !f.Kernel && strings.HasPrefix(f.Object, "/") && filepath.Base(f.Object) == cmd {
				o.Main, o.MainHow = f.Object, "the recorded command "+cmd
				break
			}
		}
	}
	if o.Main == "" {
		for _, f := range p.Frames {
			if !f.Kernel && f.Function == "main" && !f.Inlined && f.Object != "" && f.Object != profile.Unknown {
				o.Main, o.MainHow = f.Object, "the object of main"
				break
			}
		}
	}
	if o.Main == "" {
		count := map[string]int{}
		for _, st := range p.Stacks {
			for k := len(st) - 1; k >= 0; k-- {
				f := p.FrameAt(st[k])
				if f.Kernel {
					continue
				}
				if strings.HasPrefix(f.Object, "/") {
					count[f.Object]++
				}
				break
			}
		}
		best := 0
		var objs []string
		for obj := range count {
			objs = append(objs, obj)
		}
		sort.Strings(objs)
		for _, obj := range objs {
			if count[obj] > best {
				best, o.Main, o.MainHow = count[obj], obj, "the most frequent outermost user frame"
			}
		}
	}
	if len(loads) == 0 {
		o.Note = "no mapping times: plug-ins are not told apart from libraries"
		return o
	}
	if o.Main == "" {
		o.Note = "main program not found: plug-ins are not told apart from libraries"
		return o
	}
	o.LoadTimes = true
	// The program starts running at the first event of each process with a
	// user frame in a file-backed object other than the dynamic loader
	// (started, by starts): the loader maps every library the program
	// needs before it runs any code of theirs (libc's early initialisation
	// comes after that).
	after := map[string]bool{}
	before := map[string]bool{}
	for _, l := range loads {
		st, ok := started[l.PID]
		if !ok || l.Path == o.Main || !strings.HasPrefix(l.Path, "/") {
			continue
		}
		if l.Time > st {
			after[l.Path] = true
		} else {
			before[l.Path] = true
		}
	}
	for path := range after {
		if !before[path] {
			o.Plugins[path] = true
		}
	}
	if len(started) == 0 {
		o.Note = "no event ran the main program: plug-ins are not told apart from libraries"
	}
	return o
}

// starts finds, as every sample of a profile is seen in time order, the
// time each process started running its program (see classify): its
// first sample with a user frame in a file-backed object other than the
// dynamic loader.
type starts struct {
	p     *profile.Profile
	state []int8 // by stack: 0 unknown, 1 running, 2 not yet
	at    map[uint32]uint64
}

func newStarts(p *profile.Profile) *starts {
	return &starts{p: p, state: make([]int8, len(p.Stacks)), at: map[uint32]uint64{}}
}

// see sees sample s.
func (st *starts) see(s *profile.Sample) {
	if _, ok := st.at[s.PID]; ok {
		return
	}
	if n := len(st.p.Stacks); int(s.Stack) >= len(st.state) && int(s.Stack) < n {
		// A streamed selection's stacks are made as its samples are read.
		st.state = append(st.state, make([]int8, n-len(st.state))...)
	}
	if s.Stack < 0 || int(s.Stack) >= len(st.state) {
		return
	}
	if st.state[s.Stack] == 0 {
		st.state[s.Stack] = 2
		for _, fi := range st.p.Stacks[s.Stack] {
			f := st.p.FrameAt(fi)
			if !f.Kernel && strings.HasPrefix(f.Object, "/") && !loaderObject(f.Object) {
				st.state[s.Stack] = 1
				break
			}
		}
	}
	if st.state[s.Stack] == 1 {
		st.at[s.PID] = s.Time
	}
}

// loaderObject reports whether an object path is the dynamic loader.
func loaderObject(path string) bool {
	b := filepath.Base(path)
	for _, p := range []string{"ld-linux", "ld-musl", "ld.so", "ld64.so"} {
		if strings.HasPrefix(b, p) {
			return true
		}
	}
	return false
}
