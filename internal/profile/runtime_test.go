package profile

import "testing"

func TestRuntimeObject(t *testing.T) {
	for obj, want := range map[string]bool{
		"/usr/lib/x86_64-linux-gnu/libc.so.6": true, "libc.so.6": true, "ld-linux-x86-64.so.2": true,
		"[vdso]": true, "/lib/libpthread.so.0": true, "/bin/prog": false, "libhist.so": false,
		"[kernel.kallsyms]": false, "libcrypto.so.3": false, "": false,
	} {
		if got := RuntimeObject(obj); got != want {
			t.Errorf("RuntimeObject(%q) = %v, want %v", obj, got, want)
		}
	}
}
