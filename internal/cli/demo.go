package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/demo"
)

func newDemo() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Record a bundled example program and show its report",
		Long: `Demo compiles a small C program with the system's compiler, records it with
culprit record, and prints the flat profile, the calling contexts and main's source lines with
the time below each, so a first run shows what culprit does. It keeps the recording in
culprit-demo.rec, and the program and its source in culprit-demo/, for you
to explore (culprit report --help).`,
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
			steps := [][]string{
				{"record", "-o", rec, "--", bin},
				{"report", "--top", "12", rec},
				{"report", "--callers", "3", "--top", "6", rec},
				{"report", "--list", "^main$", rec},
			}
			for _, args := range steps {
				shown := append([]string{"culprit"}, args...)
				if args[0] == "record" {
					shown[len(shown)-1] = filepath.Join("culprit-demo", filepath.Base(bin))
				}
				fmt.Fprintf(out, "\n$ %s\n", strings.Join(shown, " "))
				root := newRoot(out, c.ErrOrStderr())
				root.SetArgs(args)
				if err := root.Execute(); err != nil {
					return err
				}
			}
			fmt.Fprintf(out, "\nchecksum runs in both request kinds; the calling contexts show that\nlarge_request holds two thirds of it (it asks for twice the work), and main's\nlisting shows the time under each of its calls. Explore further with:\n  culprit report --by line %s\n  culprit report --peek checksum %s\n  culprit export --format pprof -o demo.pb.gz %s && go tool pprof -top demo.pb.gz\n", rec, rec, rec)
			return nil
		},
	}
}
