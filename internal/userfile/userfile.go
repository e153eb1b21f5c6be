// Package userfile is the one policy for the files culprit keeps that hold
// what it read of processes and of the kernel: recordings (command lines,
// sampled memory values, addresses), the kernel-symbol cache (kernel
// addresses) and the archive of recorded objects. They are created 0600
// (directories 0700), as perf writes perf.data; and when culprit runs as
// root through sudo, what it creates is given to the user who ran sudo
// (SUDO_UID, SUDO_GID), who can then read it without sudo.
package userfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Modes of the files and directories culprit creates.
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// owner is the user files are given to: the one who ran sudo, when culprit
// runs as root through it; ok false otherwise.
func owner() (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	u, err1 := strconv.Atoi(os.Getenv("SUDO_UID"))
	g, err2 := strconv.Atoi(os.Getenv("SUDO_GID"))
	if err1 != nil || err2 != nil || u <= 0 {
		return 0, 0, false
	}
	return u, g, true
}

// Own gives a file culprit created to the user who ran sudo, if any.
func Own(f *os.File) error {
	if uid, gid, ok := owner(); ok {
		return f.Chown(uid, gid)
	}
	return nil
}

// OwnPath is Own for a path (not following a final symbolic link).
func OwnPath(path string) error {
	if uid, gid, ok := owner(); ok {
		return os.Lchown(path, uid, gid)
	}
	return nil
}

// MkdirAll creates dir and its missing parents with DirMode, giving each
// one it creates to the user who ran sudo.
func MkdirAll(dir string) error {
	dir = filepath.Clean(dir)
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		made = append(made, d)
		if p := filepath.Dir(d); p == d {
			break
		}
	}
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return err
	}
	for _, d := range made {
		if err := OwnPath(d); err != nil {
			return err
		}
	}
	return nil
}

// CreateTemp creates a new temporary file in dir (pattern as os.CreateTemp),
// FileMode, owned by the user who ran sudo: a file to be renamed into place.
func CreateTemp(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern) // 0600
	if err != nil {
		return nil, err
	}
	if err := Own(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// Replace writes the file at path through write, whole or not at all: the
// bytes go to an unnamed file in path's directory (O_TMPFILE), which gets a
// name only once complete and is then renamed over path. If culprit dies
// while writing, nothing is left behind. On file systems without O_TMPFILE
// a named temporary file is used instead (and removed on failure). The file
// is FileMode and, under sudo, the user's.
func Replace(path string, write func(f *os.File) error) error {
	dir := filepath.Dir(path)
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(FileMode))
	if err != nil {
		f, err := CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
		if err != nil {
			return err
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			os.Remove(f.Name())
		}
		return err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := Own(f); err != nil {
		return err
	}
	if err := write(f); err != nil {
		return err
	}
	// A name for the finished file, then the rename: a file left by a
	// death between the two is whole.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	os.Remove(tmp)
	if err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW); err != nil {
		return fmt.Errorf("naming %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
