package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

func TestListingAsm(t *testing.T) {
	ls := []profile.Listing{{Function: "helper", Object: "app", Path: "/usr/bin/app", Self: 50, Total: 60}}
	src := []string{"int helper(int n) {", "\tint s = 0;", "\tfor (int i = 0; i < n; i++)", "\t\ts += i;", "\treturn s;", "}"}
	read := func(file, object string) *SourceFile {
		if file == "/src/h.c" {
			return &SourceFile{Lines: src, FoundAt: file}
		}
		return nil
	}
	var ins []AsmInstr
	for i := 0; i < 30; i++ {
		in := AsmInstr{Offset: 0x1000 + uint64(i), Addr: 0x401000 + uint64(i), Text: fmt.Sprintf("nop%d", i), File: "/src/h.c", Line: 3}
		switch i {
		case 0:
			in.Line = 1
		case 1:
			in.Self, in.Total = 10, 10
		case 2:
			in.Self, in.Total, in.Line = 40, 40, 4
		case 29:
			in.Total, in.Line = 10, 5
		}
		ins = append(ins, in)
	}
	blocks := []AsmBlock{{Function: "worker", Offset: 0x1000, Syntax: "AT&T", Instrs: ins}, {Note: "no more"}}
	dis := func(l profile.Listing) []AsmBlock { return blocks }
	var buf bytes.Buffer
	if err := ListingText(&buf, ls, 100, read, dis, 0); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"code of worker, where helper was inlined at app+0x1000 (AT&T syntax):\n",
		"                   h.c:1  int helper(int n) {\n      .       .     401000:  nop0\n",
		"                   h.c:3  for (int i = 0; i < n; i++)\n  10.0%   10.0%     401001:  nop1\n",
		"                   h.c:4  s += i;\n  40.0%   40.0% >   401002:  nop2\n",
		"    ... 26 instructions without samples\n                   h.c:5  return s;\n      .   10.0%     40101d:  nop29\n",
		"(no code: no more)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("asm listing lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "nop5\n") || strings.Contains(out, "self%  total%   line") {
		t.Errorf("asm listing not folded, or shows the source listing too:\n%s", out)
	}

	buf.Reset()
	if err := ListingJSON(&buf, ls, 100, read, dis, JSONExtra{}); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Listings []struct {
			Code []struct {
				Function     string `json:"function"`
				Note         string `json:"note"`
				Instructions []struct {
					Offset      uint64  `json:"offset"`
					Addr        uint64  `json:"addr"`
					Line        int     `json:"line"`
					SelfSamples int     `json:"self_samples"`
					Self        float64 `json:"self"`
				} `json:"instructions"`
			} `json:"code"`
		} `json:"listings"`
	}
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	c := j.Listings[0].Code
	if len(c) != 2 || len(c[0].Instructions) != 30 || c[0].Instructions[2].SelfSamples != 40 || c[0].Instructions[2].Self != 0.4 ||
		c[0].Instructions[2].Addr != 0x401002 || c[0].Instructions[2].Offset != 0x1002 || c[1].Note != "no more" || c[1].Instructions == nil {
		t.Errorf("asm JSON: %s", buf.String())
	}
}
