package profile

// ObjectLoad says when an object was first mapped executable into a process:
// analyses use it to tell objects loaded at start (the executable and the
// libraries the dynamic loader maps before the program runs) from objects
// dlopen'ed later (plug-ins).
type ObjectLoad struct {
	PID  uint32
	Path string // object path as recorded
	Time uint64 // sample clock, ns, of the first Mmap record of Path in PID
}

// RecordedObject is a file a recording mapped, with its build-id.
type RecordedObject struct {
	Path    string
	BuildID []byte
}
