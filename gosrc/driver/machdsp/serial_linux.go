//go:build linux

package machdsp

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// port is an open serial port: the OS's tty through termios (Linux's
// termios2, so any baud rate, vortex's default 12 Mbaud included), raw,
// 8 data bits, no parity, 1 stop bit, no flow control (asio's
// serial_port, which vortex uses, opens its ports raw and 8N1 too). Reads
// and writes go through the Go runtime's poller, so deadlines bound them
// and Close ends them.
type port struct {
	f    *os.File
	name string
}

// openPort opens and configures name. A port another process (or another
// MachDSP of this one) holds is refused with backend.ErrInUse: the port is
// locked (flock, advisory, and TIOCEXCL, which refuses other opens of the
// tty except by root) as Windows' COM ports always are.
func openPort(name string, baud int) (*port, error) {
	if baud <= 0 {
		return nil, &Error{Msg: fmt.Sprintf("open %s: baud rate %d, expected > 0", name, baud),
			Err: backend.ErrInvalid}
	}
	// O_NONBLOCK: a FIFO (or a modem port waiting for carrier) does not
	// block the open; O_CLOEXEC: a program this process starts does not
	// inherit the port (nor its lock).
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &Error{Msg: fmt.Sprintf("open %s: %s", name, sysText(err)), Err: err}
	}
	fail := func(op string, err error, also ...error) (*port, error) {
		_ = unix.Close(fd)
		return nil, &Error{Msg: fmt.Sprintf("%s %s: %s", op, name, sysText(err)), Err: errors.Join(append(also, err)...)}
	}
	if !isTTY(fd) {
		_ = unix.Close(fd)
		return nil, &Error{Msg: fmt.Sprintf("open %s: %s (not a serial port)", name, sysText(unix.ENOTTY)),
			Err: errors.Join(backend.ErrInvalid, unix.ENOTTY)}
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			_ = unix.Close(fd)
			return nil, &Error{Msg: fmt.Sprintf("open %s: the port is busy: another MachDSP (in this or another "+
				"process) has it open", name), Err: errors.Join(backend.ErrInUse, err)}
		}
		return fail("lock", err)
	}
	_ = unix.IoctlSetInt(fd, unix.TIOCEXCL, 0) // best effort: root may open it anyway
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS2)
	if err != nil {
		return fail("configure", err)
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL |
		unix.IXON | unix.IXOFF | unix.IXANY
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB | unix.CSTOPB | unix.CRTSCTS | unix.CBAUD
	t.Cflag |= unix.CS8 | unix.CREAD | unix.CLOCAL | unix.BOTHER
	t.Ispeed, t.Ospeed = uint32(baud), uint32(baud)
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS2, t); err != nil {
		return fail("configure", err)
	}
	_ = unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIOFLUSH) // stale bytes of an earlier session
	return &port{f: os.NewFile(uintptr(fd), name), name: name}, nil
}

func isTTY(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// flushInput drops what was received and not read.
func (p *port) flushInput() {
	if c, err := p.f.SyscallConn(); err == nil {
		_ = c.Control(func(fd uintptr) { _ = unix.IoctlSetInt(int(fd), unix.TCFLSH, unix.TCIFLUSH) })
	}
}

func (p *port) setReadDeadline(t time.Time) { _ = p.f.SetReadDeadline(t) }

func (p *port) setWriteDeadline(t time.Time) { _ = p.f.SetWriteDeadline(t) }

// close releases the port, then closes it. The lock and the exclusive
// mode belong to the open port (the open file description), which a
// child of fork() shares while it lives, holding its copy of the
// descriptor: both are released explicitly so that the port opens again
// at once, here or elsewhere, whatever such a child does.
func (p *port) close() error {
	if c, err := p.f.SyscallConn(); err == nil {
		_ = c.Control(func(fd uintptr) {
			_ = unix.IoctlSetInt(int(fd), unix.TIOCNXCL, 0)
			_ = unix.Flock(int(fd), unix.LOCK_UN)
		})
	}
	return p.f.Close()
}
