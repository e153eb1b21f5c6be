package render

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// AsmBlock is the machine code of one function holding samples of a
// listing, with the samples at each instruction (report --list --asm, as
// perf annotate shows it).
type AsmBlock struct {
	Function string // whose code it is: the listed function, or the one it was inlined into
	Offset   uint64 // file offset of the first instruction in the object
	Syntax   string // the assembler syntax of Text, e.g. "AT&T"
	Instrs   []AsmInstr
	// Note, when there is no code, says why (kernel code, an object that
	// changed since the recording, ...).
	Note string
}

// AsmInstr is one instruction of an AsmBlock.
type AsmInstr struct {
	Offset      uint64 // file offset in the object
	Addr        uint64 // ELF virtual address, which branch targets in Text use
	Text        string // disassembly
	File        string // source file of the instruction, "" when not known
	Line        int
	Self, Total int // samples, as LineCount counts them
}

// Disassembler returns the code blocks that hold a listing's samples.
type Disassembler func(profile.Listing) []AsmBlock

// asmFold is the longest run of instructions without samples written out
// in full; longer runs are folded into one line.
const asmFold = 12

// writeAsm writes a listing's code: per instruction the self and total
// share of all samples, ">" at the hottest, the address (ELF virtual, as
// objdump prints it, which branch targets use) and the instruction,
// with the source line above each run of instructions compiled from it.
func writeAsm(bw io.Writer, l profile.Listing, blocks []AsmBlock, samples int, read Source) {
	cell := func(n int) string { return cellShare(n, samples) }
	hot := -1
	for _, b := range blocks {
		for _, in := range b.Instrs {
			hot = max(hot, in.Self)
		}
	}
	for _, b := range blocks {
		if b.Note != "" {
			fmt.Fprintf(bw, "(no code: %s)\n", b.Note)
			continue
		}
		name := l.Function
		if b.Function != "" && b.Function != l.Function {
			name = b.Function + ", where " + l.Function + " was inlined"
		}
		fmt.Fprintf(bw, "code of %s at %s+0x%x (%s syntax):\n", name, l.Object, b.Offset, b.Syntax)
		fmt.Fprintf(bw, "%7s %7s\n", "self%", "total%")
		var file string
		line := -1
		for i := 0; i < len(b.Instrs); i++ {
			in := b.Instrs[i]
			if in.Self == 0 && in.Total == 0 {
				j := i
				for j < len(b.Instrs) && b.Instrs[j].Self == 0 && b.Instrs[j].Total == 0 {
					j++
				}
				if j-i > asmFold {
					fmt.Fprintf(bw, "%7s %7s    ... %d instructions without samples\n", "", "", j-i)
					i = j - 1
					line = -1
					continue
				}
			}
			if in.File != file || in.Line != line {
				file, line = in.File, in.Line
				if file != "" {
					text := ""
					if sf := read(file, l.Path); sf != nil && line >= 1 && line <= len(sf.Lines) {
						text = strings.TrimSpace(sf.Lines[line-1])
					}
					fmt.Fprintf(bw, "%7s %7s    %s:%d  %s\n", "", "", filepath.Base(file), line, text)
				}
			}
			mark := " "
			if in.Self == hot && hot > 0 {
				mark = ">"
			}
			fmt.Fprintf(bw, "%7s %7s %s %8x:  %s\n", cell(in.Self), cell(in.Total), mark, in.Addr, in.Text)
		}
	}
}

type asmInstrJSON struct {
	Offset uint64 `json:"offset"`
	Addr   uint64 `json:"addr"`
	Text   string `json:"text"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	countsJSON
}

type asmBlockJSON struct {
	Function     string         `json:"function"`
	Offset       uint64         `json:"offset"`
	Syntax       string         `json:"syntax,omitempty"`
	Note         string         `json:"note,omitempty"`
	Instructions []asmInstrJSON `json:"instructions"`
}

func asmJSON(blocks []AsmBlock, samples int) []asmBlockJSON {
	out := make([]asmBlockJSON, 0, len(blocks))
	for _, b := range blocks {
		j := asmBlockJSON{Function: b.Function, Offset: b.Offset, Syntax: b.Syntax, Note: b.Note, Instructions: []asmInstrJSON{}}
		for _, in := range b.Instrs {
			j.Instructions = append(j.Instructions, asmInstrJSON{Offset: in.Offset, Addr: in.Addr, Text: in.Text, File: in.File, Line: in.Line,
				countsJSON: counts(in.Self, in.Total, samples)})
		}
		out = append(out, j)
	}
	return out
}
