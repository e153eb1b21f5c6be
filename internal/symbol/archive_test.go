package symbol

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// An archived copy stands in for a binary that was rebuilt or deleted, with
// the recorded binary's layout, in PIE and non-PIE executables.
func TestArchiveStandsIn(t *testing.T) {
	for _, flags := range [][]string{{"-O2", "-g"}, {"-O2", "-g", "-no-pie"}} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			orig := testutil.C(t, "inline-arch"+strings.Join(flags, ""), []string{"inline.c"}, flags...)
			dir := t.TempDir()
			bin := filepath.Join(dir, "inline")
			copyFile(t, orig, bin)
			id := buildIDFile(t, bin)
			computeAt, _ := elfSym(t, bin, "compute")
			off := fileOffset(t, bin, computeAt+4)

			archive := filepath.Join(dir, "archive")
			if _, err := Archive(archive, bin, nil); err == nil {
				t.Error("archiving without a build-id: no error")
			}
			n, err := Archive(archive, bin, id)
			if err != nil || n == 0 {
				t.Fatalf("Archive: %d bytes, %v", n, err)
			}
			if n, err := Archive(archive, bin, id); err != nil || n != 0 {
				t.Errorf("second Archive: %d bytes, %v; want 0 (already there)", n, err)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(ArchivePath(archive, id)), ".archive-*")); len(leftovers) > 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}

			var ae *ArchiveError
			if _, err := Archive(filepath.Join(bin, "sub"), bin, id); !errors.As(err, &ae) {
				t.Errorf("archive under a file: %v, want *ArchiveError", err)
			}

			// Rebuilt: other code at the same path.
			rebuilt := testutil.C(t, "deep-arch"+strings.Join(flags, ""), []string{"deep.c"}, flags...)
			copyFile(t, rebuilt, bin)
			if _, err := Archive(archive, bin, id); !errors.Is(err, ErrChanged) {
				t.Errorf("archiving a changed file: %v, want ErrChanged", err)
			}
			check := func(state string) {
				t.Helper()
				o, err := New(Options{DebugDirs: []string{archive}}).Object(bin, id)
				if err != nil {
					t.Fatalf("%s: %v", state, err)
				}
				fr := o.Lookup(off)
				if len(fr) == 0 || fr[len(fr)-1].Function != "compute" || fr[0].Line == 0 {
					t.Errorf("%s: compute+4 is %+v", state, fr)
				}
			}
			check("rebuilt")
			if _, err := New(Options{DebugDirs: []string{}}).Object(bin, id); err == nil {
				t.Error("rebuilt, no archive: no error")
			}
			os.Remove(bin)
			check("deleted")
			if _, err := Archive(archive, bin, id); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("archiving a deleted file: %v", err)
			}
		})
	}
}
