package symbol

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"io"
	"os"
	"path/filepath"

	"github.com/culprit-dev/culprit/internal/userfile"
)

// ErrChanged is wrapped by Archive when the file at a path no longer has
// the build-id recorded for it.
var ErrChanged = errors.New("changed since recording")

// ArchiveError is Archive's error when the archive itself cannot be
// written: every other object would fail the same way.
type ArchiveError struct {
	Dir string
	Err error
}

func (e *ArchiveError) Error() string {
	return fmt.Sprintf("cannot write the archive %s: %v", e.Dir, e.Err)
}

// Archive copies the object at path, whose recorded build-id is buildID,
// into the debug directory dir (ArchivePath), so that it can stand in for
// the object once the file is rebuilt or removed: Symbolizer.Object looks
// there by build-id. It returns the bytes copied, 0 when the copy is
// already there. The copy is written whole or not at all (userfile.Replace),
// so a reader never sees half of it.
func Archive(dir, path string, buildID []byte) (int64, error) {
	if len(buildID) == 0 {
		return 0, fmt.Errorf("%s: no build-id recorded", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if got := elfx.BuildID(ef); !bytes.Equal(got, buildID) {
		return 0, fmt.Errorf("%s: %w (build-id %s on disk, %s recorded)", path, ErrChanged, shortHex(got), shortHex(buildID))
	}
	dest := ArchivePath(dir, buildID)
	if fi, err := os.Stat(dest); err == nil && fi.Mode().IsRegular() {
		if st, err := f.Stat(); err == nil && st.Size() == fi.Size() {
			return 0, nil
		}
	}
	// Copies of the user's programs: 0600, and under sudo the user's.
	if err := userfile.MkdirAll(filepath.Dir(dest)); err != nil {
		return 0, &ArchiveError{dir, err}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	var n int64
	err = userfile.Replace(dest, func(tmp *os.File) error {
		n, err = io.Copy(tmp, f)
		return err
	})
	if err != nil {
		return 0, &ArchiveError{dir, fmt.Errorf("copying %s: %v", path, err)}
	}
	return n, nil
}
