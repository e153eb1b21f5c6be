// Command culprit finds why a program is slow: it records native programs with
// the kernel's perf events and reports where their time goes.
package main

import (
	"os"

	"github.com/culprit-dev/culprit/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
