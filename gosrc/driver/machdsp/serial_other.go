//go:build !linux

package machdsp

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// port: the serial API is Linux's termios here; other systems refuse.
type port struct {
	f    *os.File
	name string
}

func openPort(name string, baud int) (*port, error) {
	return nil, &Error{Msg: fmt.Sprintf("open %s: MachDSP's serial port is supported on Linux only", name),
		Err: errors.ErrUnsupported}
}

func (p *port) flushInput()                {}
func (p *port) setReadDeadline(time.Time)  {}
func (p *port) setWriteDeadline(time.Time) {}
func (p *port) close() error               { return nil }
