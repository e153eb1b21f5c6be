// Package demo holds culprit's bundled example program, compiled with the
// system's C compiler when a newcomer runs `culprit demo`.
package demo

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed demo.c.src
var source []byte

// Build compiles the demo program into dir and returns its path.
func Build(dir string) (string, error) {
	src := filepath.Join(dir, "demo.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", fmt.Errorf("writing the demo source: %w", err)
	}
	bin := filepath.Join(dir, "demo")
	cc := "cc"
	if _, err := exec.LookPath(cc); err != nil {
		cc = "gcc"
	}
	// Frame pointers except in leaf functions: a frame-pointer unwinder
	// (perf record -g) loses the caller of checksum, culprit does not.
	out, err := exec.Command(cc, "-O2", "-g", "-fno-omit-frame-pointer", "-momit-leaf-frame-pointer", "-o", bin, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("compiling the demo with %s (install gcc): %v\n%s", cc, err, out)
	}
	return bin, nil
}
