// Package proc reads what /proc says about processes: executable mappings,
// threads, command names, and the vDSO image. It does not open perf events and
// does not symbolize.
package proc

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64
	Perms      string // e.g. "r-xp"
	Offset     uint64
	Inode      uint64
	Path       string
}

// Exec reports whether the mapping is executable.
func (m Mapping) Exec() bool { return len(m.Perms) > 2 && m.Perms[2] == 'x' }

// ErrNoProcess is wrapped when a process does not exist.
var ErrNoProcess = errors.New("no such process")

// Exists reports whether process pid exists.
func Exists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// Maps parses /proc/PID/maps.
func Maps(pid int) ([]Mapping, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("reading mappings of %d: %w", pid, ErrNoProcess)
		}
		return nil, fmt.Errorf("reading mappings of %d: %w", pid, err)
	}
	defer f.Close()
	return ParseMaps(f)
}

// ParseMaps parses the text of a maps file.
func ParseMaps(r interface{ Read([]byte) (int, error) }) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		var m Mapping
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		var err1, err2, err3 error
		m.Start, err1 = strconv.ParseUint(lo, 16, 64)
		m.End, err2 = strconv.ParseUint(hi, 16, 64)
		m.Offset, err3 = strconv.ParseUint(fields[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		m.Perms = fields[1]
		m.Inode, _ = strconv.ParseUint(fields[4], 10, 64)
		if len(fields) > 5 {
			m.Path = strings.Join(fields[5:], " ")
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// Tasks lists the thread ids of process pid.
func Tasks(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("listing threads of %d: %w", pid, ErrNoProcess)
		}
		return nil, fmt.Errorf("listing threads of %d: %w", pid, err)
	}
	var tids []int
	for _, e := range ents {
		if t, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, t)
		}
	}
	return tids, nil
}

// Comm returns the command name of thread tid of process pid.
func Comm(pid, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Children lists the direct child processes of pid (from every thread's
// children file).
func Children(pid int) []int {
	var out []int
	tids, _ := Tasks(pid)
	for _, t := range tids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, t))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// VDSO returns this process's vDSO image and its mapping. The vDSO is the
// same for every process on a running kernel, so the recorder stores its own.
func VDSO() ([]byte, Mapping, error) {
	maps, err := Maps(os.Getpid())
	if err != nil {
		return nil, Mapping{}, err
	}
	for _, m := range maps {
		if m.Path != "[vdso]" {
			continue
		}
		f, err := os.Open("/proc/self/mem")
		if err != nil {
			return nil, m, fmt.Errorf("reading the vDSO: %w", err)
		}
		defer f.Close()
		buf := make([]byte, m.End-m.Start)
		if _, err := f.ReadAt(buf, int64(m.Start)); err != nil {
			return nil, m, fmt.Errorf("reading the vDSO: %w", err)
		}
		return buf, m, nil
	}
	return nil, Mapping{}, fmt.Errorf("this process has no vDSO mapping")
}

// Exe returns the resolved executable path of pid.
func Exe(pid int) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return ""
	}
	return filepath.Clean(p)
}

func readFile(pid int, name string) ([]byte, error) {
	return os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
}

// VDSOImage returns this process's vDSO image and its build-id.
func VDSOImage() (img, buildID []byte, err error) {
	img, _, err = VDSO()
	if err != nil {
		return nil, nil, err
	}
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the vDSO image: %w", err)
	}
	return img, elfx.BuildID(f), nil
}

// BuildIDs caches the build-ids of files by path; Put sets the one of a
// pseudo-object such as "[vdso]". The zero value is ready to use; it is not
// safe for concurrent use.
type BuildIDs struct {
	m map[string][]byte
}

// Get returns the build-id of the file at path (nil when it has none or is
// not a file), reading it once.
func (b *BuildIDs) Get(path string) []byte {
	if id, ok := b.m[path]; ok {
		return id
	}
	var id []byte
	if strings.HasPrefix(path, "/") {
		id = elfx.FileBuildID(path)
	}
	b.Put(path, id)
	return id
}

// Put records the build-id of path.
func (b *BuildIDs) Put(path string, id []byte) {
	if b.m == nil {
		b.m = map[string][]byte{}
	}
	b.m[path] = id
}

// DataRanges returns address ranges where a process keeps data that
// pointers may point to, including data it has not allocated yet: its
// writable mappings (except the main stack; maps is its Maps), the heap's
// whole reach from start_brk (/proc/PID/stat, so before the first malloc),
// and 64 GiB below the lowest high mapping, where later mmaps land.
// Threads' stacks are writable mappings and are included.
func DataRanges(pid int, maps []Mapping) [][2]uint64 {
	const reach = 1 << 36
	var out [][2]uint64
	var lowHigh, highEnd uint64
	for _, m := range maps {
		switch m.Path {
		case "[stack]", "[vvar]", "[vvar_vclock]", "[vdso]", "[vsyscall]":
			continue
		}
		if len(m.Perms) > 1 && m.Perms[1] == 'w' {
			out = append(out, [2]uint64{m.Start, m.End})
		}
		if m.Start >= 0x7000_0000_0000 && m.End <= 0x8000_0000_0000 {
			if lowHigh == 0 || m.Start < lowHigh {
				lowHigh = m.Start
			}
			highEnd = max(highEnd, m.End)
		}
	}
	if lowHigh > reach {
		out = append(out, [2]uint64{lowHigh - reach, highEnd})
	}
	if b, err := readFile(pid, "stat"); err == nil {
		// Fields after the command name, which is in parentheses and may
		// hold spaces; start_brk is field 47.
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 44 {
				if brk, err := strconv.ParseUint(f[44], 10, 64); err == nil && brk > 0 {
					out = append(out, [2]uint64{brk, brk + reach})
				}
			}
		}
	}
	return out
}
