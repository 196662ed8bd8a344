// Package machdsp speaks the serial protocol of a MachDSP digital galvo
// servo controller, as vortex's driver (vortex/driver/machdsp.hpp, .cpp)
// does: there is no vendor library, only a serial port (USB CDC) opened
// through the operating system's termios API (serial_linux.go, no cgo).
//
// The protocol, read from vortex's driver (its wire format, not its code):
//
//   - every message, either way, starts with a 12-byte header of six
//     little-endian uint16: the message type (MsgHello ... MsgHardReset),
//     the payload's length in bytes, and four parameters; the payload
//     follows. There is no checksum, start marker or escaping: a byte lost
//     or added on the line misaligns every following header. vortex
//     notices only a payload length it has no room for ("header payload
//     size exceeds buffer size", "received header with payload but
//     destination buffer is null"), and so does this driver: it does not
//     check a reply's type either, since vortex does not say the servo
//     echoes the request's type (recv in machdsp.go says more).
//   - the host sends a request and reads one reply (a BlockReadWrite reads
//     two: the read's, then the write's). A reply of type MsgError whose
//     second parameter is not 0 is the servo's error (subsystem, error),
//     reported as "protocol error: <subsystem> (n): <error> (m)".
//   - opening sends MsgHello with the magic 0x1234 as its first parameter;
//     the reply echoes it and carries the firmware's version (major, minor,
//     features). Then the settings are read (MsgParamsRead: a 22-byte
//     payload, Settings) for the buffer and divisor limits.
//   - settings are written one entry at a time (MsgParamsWrite, the entry
//     and up to three values); a block of output samples is one
//     MsgBlockWrite whose payload is the samples, each two uint16 channel
//     codes (0x8000 is zero, 32767 codes full scale).
//
// Reads and writes time out after Timeout (vortex's default 1 s): "serial
// read: timeout". A port whose other end went away reads end of file or an
// I/O error: "serial read: End of file".
package machdsp
