package cli

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// The answers --interactive takes from the terminal: an empty line is
// yes, "n" no, and the end of the input (Ctrl-D) no, whatever came before
// on the line.
func TestAskAnswers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"\n", true},
		{"y\n", true},
		{"Yes\n", true},
		{"n\n", false},
		{"no\n", false},
		{"", false},  // Ctrl-D at the prompt
		{"y", true},  // an answer, then the end of the input
		{"n", false}, // the same, no
	} {
		r := &refiner{in: bufio.NewReader(strings.NewReader(c.in)), tty: io.Discard}
		if got := r.ask("go on?"); got != c.want {
			t.Errorf("answer %q: ask = %v, want %v", c.in, got, c.want)
		}
	}
}
