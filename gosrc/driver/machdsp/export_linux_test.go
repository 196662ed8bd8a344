package machdsp

import "golang.org/x/sys/unix"

// DupForTest is another descriptor of m's open port, as fork() gives a
// child (machdsp_test.go's TestCloseReleasesTheLockOfASharedPort).
func DupForTest(m *MachDSP) int {
	fd := -1
	if c, err := m.p.f.SyscallConn(); err == nil {
		_ = c.Control(func(u uintptr) { fd, _ = unix.Dup(int(u)) })
	}
	return fd
}
