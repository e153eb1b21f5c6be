package elfx

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// BuildIDPath is the file in the debug directory dir that holds the object
// with build-id id: dir/.build-id/ab/cdef….debug ("" for an empty
// build-id).
func BuildIDPath(dir string, id []byte) string {
	if len(id) == 0 {
		return ""
	}
	h := hex.EncodeToString(id)
	return filepath.Join(dir, ".build-id", h[:2], h[2:]+".debug")
}

// DebugFile finds the separate debug file of the object f read from path
// ("" for an object held in memory): by build-id under each of dirs (the
// file must carry the same build-id), then by .gnu_debuglink next to the
// object, in its .debug subdirectory and under each of dirs (the file's
// CRC must be the one the link records, and its build-id, if both have
// one, the object's). usable says whether an opened candidate has what the
// caller needs (DWARF, a symbol table). It returns the path and the open
// file, which the caller closes, or "" and nil.
func DebugFile(f *elf.File, path string, dirs []string, usable func(*elf.File) bool) (string, *elf.File) {
	id := BuildID(f)
	try := func(p string, match func(*elf.File) bool) *elf.File {
		if path != "" && sameFile(p, path) {
			return nil
		}
		df, err := elf.Open(p)
		if err != nil {
			return nil
		}
		if !usable(df) || !match(df) {
			df.Close()
			return nil
		}
		return df
	}
	if len(id) > 0 {
		for _, d := range dirs {
			p := BuildIDPath(d, id)
			if df := try(p, func(df *elf.File) bool { return bytes.Equal(BuildID(df), id) }); df != nil {
				return p, df
			}
		}
	}
	name, crc, ok := debugLink(f)
	if !ok || path == "" {
		return "", nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	dir := filepath.Dir(abs)
	cands := []string{filepath.Join(dir, name), filepath.Join(dir, ".debug", name)}
	for _, dd := range dirs {
		cands = append(cands, filepath.Join(dd, dir, name))
	}
	for _, p := range cands {
		if c, err := fileCRC(p); err != nil || c != crc {
			continue
		}
		df := try(p, func(df *elf.File) bool {
			did := BuildID(df)
			return len(did) == 0 || len(id) == 0 || bytes.Equal(did, id)
		})
		if df != nil {
			return p, df
		}
	}
	return "", nil
}

func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// debugLink parses .gnu_debuglink: a NUL-terminated file name, padding to 4
// bytes, and the CRC32 of the debug file.
func debugLink(f *elf.File) (string, uint32, bool) {
	s := f.Section(".gnu_debuglink")
	if s == nil {
		return "", 0, false
	}
	b, err := s.Data()
	if err != nil {
		return "", 0, false
	}
	i := bytes.IndexByte(b, 0)
	if i <= 0 {
		return "", 0, false
	}
	name := string(b[:i])
	off := (i + 1 + 3) &^ 3
	if off+4 > len(b) || filepath.Base(name) != name {
		return "", 0, false
	}
	return name, f.ByteOrder.Uint32(b[off:]), true
}

func fileCRC(p string) (uint32, error) {
	fh, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, fh); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// HasDWARF reports whether an ELF file carries DWARF of its own (a
// .debug_info or compressed .zdebug_info section with contents), not only
// a link to a separate debug file.
func HasDWARF(f *elf.File) bool {
	s := f.Section(".debug_info")
	if s == nil {
		s = f.Section(".zdebug_info")
	}
	return s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0
}

// FileHasDWARF is HasDWARF of the ELF file at path; false when it cannot
// be read as one.
func FileHasDWARF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return HasDWARF(f)
}
