package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/demo"
	"github.com/culprit-dev/culprit/internal/profile"
)

func newDemo() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Record a bundled example program and show why it is slow",
		Long: `Usage: culprit demo

Compiles a small C program (a checksum service answering small and large
requests) with the system's compiler, records it, and answers one question:
why is it slow? The flat profile says where the time goes (checksum), the
calling contexts say why (large requests), and the demo says what perf
record -g would have lost. It keeps the recording in culprit-demo.rec and the
program and its source in culprit-demo/, and ends with three commands to try
next. Needs gcc, and root to record.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// The program and its source stay beside the recording, so
			// that later reports can name its frames and list its lines.
			dir, err := filepath.Abs("culprit-demo")
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("creating %s for the demo program: %w", dir, err)
			}
			bin, err := demo.Build(dir)
			if err != nil {
				return err
			}
			out := c.OutOrStdout()
			rec := "culprit-demo.rec"
			prog := filepath.Join("culprit-demo", filepath.Base(bin))
			fmt.Fprintf(out, "Why is %s slow? It answers small and large requests; both run\nthe same loop, checksum(). Source: %s.c\n", prog, prog)
			steps := [][]string{
				{"record", "-o", rec, "--", bin},
				{"report", "--kernel", "exclude", "--top", "3", rec},
				{"report", "--kernel", "exclude", "--callers", "3", "--top", "4", rec},
			}
			for _, args := range steps {
				shown := append([]string{"culprit"}, args...)
				if args[0] == "record" {
					shown[len(shown)-1] = prog
				}
				fmt.Fprintf(out, "\n$ %s\n", strings.Join(shown, " "))
				root := newRoot(out, c.ErrOrStderr())
				root.SetArgs(args)
				if err := root.Execute(); err != nil {
					return err
				}
			}
			p, err := loadProfile([]string{rec}, io.Discard, false)
			if err != nil {
				return err
			}
			demoAnswer(out, p, rec)
			return nil
		},
	}
}

// demoAnswer prints what the demo's reports show, with their figures: the
// hot function, the calling context that holds most of its time, what a
// frame-pointer unwinder would have lost, the kernel frames left out, and
// the commands to try next.
func demoAnswer(out io.Writer, p *profile.Profile, rec string) {
	user := p.Apply(profile.Filter{Kernel: profile.KernelExclude})
	var hot float64
	for _, r := range user.Flat(profile.ByFunction).Rows {
		if r.Name == "checksum" {
			hot = r.TotalFrac
		}
	}
	share := map[string]float64{}
	for _, r := range user.Callers(profile.ByFunction, 3) {
		if len(r.Path) >= 2 && r.Path[0] == "checksum" {
			share[r.Path[1]] += r.Frac
		}
	}
	fmt.Fprintf(out, "\nWhere: checksum() holds %.0f%% of the time, but both kinds of request call it.\n", 100*hot)
	fmt.Fprintf(out, "Why: large_request calls it for %.0f%% of the time, small_request for %.0f%%:\n", 100*share["large_request"], 100*share["small_request"])
	fmt.Fprintf(out, "large requests are the cost (each asks for twice the work of a small one).\n")
	fmt.Fprintf(out, "\nWhat perf cannot show: checksum() is a leaf without a frame pointer, so\n"+
		"perf record -g charges its samples to main and loses which request called it;\n"+
		"culprit finds the caller in the program's unwind tables.\n")
	if n, all := p.Apply(profile.Filter{Kernel: profile.KernelOnly}).SampleCount(), p.SampleCount(); all > 0 {
		fmt.Fprintf(out, "\nKernel frames (%.1f%% of the samples: interrupts, the scheduler, a hypervisor's\n"+
			"calls) are left out above; add --kernel include to see them.\n", 100*float64(n)/float64(all))
	}
	fmt.Fprintf(out, "\nNext:\n")
	for _, n := range [][2]string{
		{"culprit report --list '^main$' " + rec, "the time under each line of main"},
		{"culprit export --format svg -o demo.svg " + rec, "a flame graph for the browser"},
		{"culprit record -- ./your-program", "your own program (as root)"},
	} {
		fmt.Fprintf(out, "  %-57s %s\n", n[0], n[1])
	}
}
