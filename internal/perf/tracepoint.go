package perf

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// tracefsDirs are where tracefs is found, in order of preference.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// tracefs returns the tracefs mount, mounting it at /sys/kernel/tracing when
// no mount exists (as perf does; it needs root).
func tracefs() (string, error) {
	for _, d := range tracefsDirs {
		if _, err := os.Stat(filepath.Join(d, "events")); err == nil {
			return d, nil
		}
	}
	if err := unix.Mount("nodev", tracefsDirs[0], "tracefs", 0, ""); err != nil {
		for _, d := range tracefsDirs {
			if _, serr := os.Stat(filepath.Join(d, "events")); errors.Is(serr, os.ErrPermission) {
				mode := "restricted"
				if fi, err := os.Stat(d); err == nil {
					mode = fmt.Sprintf("mode %#o, owner uid %d", fi.Mode().Perm(), owner(fi))
				}
				return "", fmt.Errorf("tracepoints need tracefs, which is mounted at %s but not readable by you (%s): run culprit as root, "+
					"or have root remount it for a group of yours: `mount -o remount,gid=GROUP,mode=0750 %s`", d, mode, d)
			}
		}
		return "", fmt.Errorf("tracepoints need tracefs, which is not mounted and could not be mounted (%v): run `mount -t tracefs nodev /sys/kernel/tracing` as root", err)
	}
	return tracefsDirs[0], nil
}

// Tracepoint describes a kernel tracepoint: its id and field offsets.
type Tracepoint struct {
	Name   string // e.g. "raw_syscalls:sys_enter"
	ID     uint64
	fields map[string]field
}

type field struct{ offset, size int }

// OpenTracepoint reads a tracepoint's id and format from tracefs.
func OpenTracepoint(name string) (*Tracepoint, error) {
	sys, ev, ok := strings.Cut(name, ":")
	if !ok {
		return nil, fmt.Errorf("tracepoint %q: want subsystem:event", name)
	}
	dir, err := tracefs()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(dir, "events", sys, ev)
	b, err := os.ReadFile(filepath.Join(base, "id"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("this kernel has no tracepoint %s", name)
		}
		return nil, fmt.Errorf("reading tracepoint %s: %w", name, err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("reading tracepoint %s id: %w", name, err)
	}
	tp := &Tracepoint{Name: name, ID: id, fields: map[string]field{}}
	f, err := os.Open(filepath.Join(base, "format"))
	if err != nil {
		return nil, fmt.Errorf("reading tracepoint %s format: %w", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;"
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var decl string
		var fl field
		for _, part := range strings.Split(line, ";") {
			part = strings.TrimSpace(part)
			switch {
			case strings.HasPrefix(part, "field:"):
				decl = strings.TrimPrefix(part, "field:")
			case strings.HasPrefix(part, "offset:"):
				fl.offset, _ = strconv.Atoi(strings.TrimPrefix(part, "offset:"))
			case strings.HasPrefix(part, "size:"):
				fl.size, _ = strconv.Atoi(strings.TrimPrefix(part, "size:"))
			}
		}
		words := strings.Fields(decl)
		if len(words) == 0 {
			continue
		}
		fname := words[len(words)-1]
		if i := strings.IndexByte(fname, '['); i >= 0 {
			fname = fname[:i]
		}
		tp.fields[fname] = fl
	}
	return tp, sc.Err()
}

// Int reads an integer field from a sample's raw tracepoint data; ok is
// false when the field is unknown or the data too short.
func (tp *Tracepoint) Int(raw []byte, name string) (v uint64, ok bool) {
	f, found := tp.fields[name]
	if !found || f.offset+f.size > len(raw) {
		return 0, false
	}
	switch f.size {
	case 1:
		return uint64(raw[f.offset]), true
	case 2:
		return uint64(le.Uint16(raw[f.offset:])), true
	case 4:
		return uint64(le.Uint32(raw[f.offset:])), true
	case 8:
		return le.Uint64(raw[f.offset:]), true
	}
	return 0, false
}

// Field gives the offset and size of a field of the tracepoint's record.
func (tp *Tracepoint) Field(name string) (offset, size int, ok bool) {
	f, ok := tp.fields[name]
	return f.offset, f.size, ok
}

// owner returns the user ID owning a file.
func owner(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return 0
}
