package elfx

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"iter"
)

// maxNotes bounds the note section or segment read for a build-id: build-id
// notes are a few dozen bytes, and a crafted header must not make the
// reader allocate gigabytes.
const maxNotes = 1 << 20

// BuildID returns the GNU build-id of f (the NT_GNU_BUILD_ID note named
// "GNU"), from its note sections or, when it has none (a program whose
// section headers were stripped), from its PT_NOTE segments; nil when it
// has none.
func BuildID(f *elf.File) []byte {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE || s.Size > maxNotes {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := NoteBuildID(data, f.ByteOrder, s.Addralign); id != nil {
			return id
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz == 0 || p.Filesz > maxNotes {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if id := NoteBuildID(data, f.ByteOrder, p.Align); id != nil {
			return id
		}
	}
	return nil
}

// FileBuildID returns the GNU build-id of the ELF file at path, or nil when
// it cannot be read or has none.
func FileBuildID(path string) []byte {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	return BuildID(f)
}

// ntGNUBuildID is the note type of a GNU build-id.
const ntGNUBuildID = 3

// NoteBuildID returns a copy of the descriptor of the first non-empty
// NT_GNU_BUILD_ID note named "GNU" in b, the contents of a note section or
// segment whose alignment is align (see Notes); nil when there is none or
// the notes are malformed.
func NoteBuildID(b []byte, order binary.ByteOrder, align uint64) []byte {
	for n := range Notes(b, order, align) {
		if n.Type == ntGNUBuildID && len(n.Desc) > 0 && n.Name == "GNU" {
			return append([]byte(nil), n.Desc...)
		}
	}
	return nil
}

// Note is one ELF note.
type Note struct {
	Name string // the owner, without its terminating NULs
	Type uint32
	Desc []byte // in the section's memory
}

// Notes yields the notes in b, the contents of a note section or segment
// whose alignment is align: names and descriptors are padded to 8 bytes in
// 8-aligned notes, to 4 otherwise. It stops at the first malformed note.
// Sizes are taken as 64-bit numbers, so no size in a crafted header can
// wrap around: every Desc lies inside b. It is the one reader of notes
// (build-ids here, USDT probes in the tracer).
func Notes(b []byte, order binary.ByteOrder, align uint64) iter.Seq[Note] {
	return func(yield func(Note) bool) {
		pad := uint64(4)
		if align == 8 {
			pad = 8
		}
		for len(b) >= 12 {
			nameSz := uint64(order.Uint32(b[0:]))
			descSz := uint64(order.Uint32(b[4:]))
			typ := order.Uint32(b[8:])
			b = b[12:]
			nameEnd := (nameSz + pad - 1) &^ (pad - 1)
			descEnd := (descSz + pad - 1) &^ (pad - 1)
			if nameEnd > uint64(len(b)) || descSz > uint64(len(b))-nameEnd {
				return
			}
			name := string(bytes.TrimRight(b[:nameSz], "\x00"))
			if !yield(Note{Name: name, Type: typ, Desc: b[nameEnd : nameEnd+descSz : nameEnd+descSz]}) {
				return
			}
			if descEnd >= uint64(len(b))-nameEnd {
				return
			}
			b = b[nameEnd+descEnd:]
		}
	}
}
