package aravis

import (
	"fmt"
	"unsafe"
)

// PixelFormat is a monochrome GenICam pixel format a line-scan OCT camera
// sends. The codes are the GenICam Pixel Format Naming Convention's (PFNC
// 2.x, as Aravis's arvenums.h/arvbuffer.h ARV_PIXEL_FORMAT_* use them).
type PixelFormat int

// The formats: one value per pixel in 8 bits, or in 16 bits (10, 12 or 16
// significant), or bit-packed (Mono10p: 4 pixels in 5 bytes; Mono12p: 2
// pixels in 3 bytes; least significant bit first, PFNC's "p" layout).
const (
	Mono8 PixelFormat = iota
	Mono10
	Mono12
	Mono16
	Mono10p
	Mono12p
)

var pixelFormats = [...]struct {
	name string
	pfnc uint32
	bits int
}{
	Mono8:   {"Mono8", 0x01080001, 8},
	Mono10:  {"Mono10", 0x01100003, 16},
	Mono12:  {"Mono12", 0x01100005, 16},
	Mono16:  {"Mono16", 0x01100007, 16},
	Mono10p: {"Mono10p", 0x010A0046, 10},
	Mono12p: {"Mono12p", 0x010C0047, 12},
}

// Valid reports whether f is one of the formats.
func (f PixelFormat) Valid() bool { return f >= 0 && int(f) < len(pixelFormats) }

// String is the GenICam name ("Mono12p").
func (f PixelFormat) String() string {
	if !f.Valid() {
		return fmt.Sprintf("PixelFormat(%d)", int(f))
	}
	return pixelFormats[f].name
}

// PFNC is the format's code (what a buffer reports).
func (f PixelFormat) PFNC() uint32 { return pixelFormats[f].pfnc }

// Bits is the bits per pixel on the wire (16 for Mono10 and Mono12, whose
// values sit in 16-bit containers).
func (f PixelFormat) Bits() int { return pixelFormats[f].bits }

// FrameBytes is the bytes of a frame of n pixels.
func (f PixelFormat) FrameBytes(n int) int { return (n*f.Bits() + 7) / 8 }

// ParsePixelFormat is the format named name.
func ParsePixelFormat(name string) (PixelFormat, bool) {
	for i, p := range pixelFormats {
		if p.name == name {
			return PixelFormat(i), true
		}
	}
	return 0, false
}

// LandingOffset is where in a block of n uint16 samples a frame of this
// format lands (bytes from the block's start) so that Widen can turn it
// into n uint16 samples in place: at the start for 16-bit formats, at the
// end for narrower ones (the widening then writes behind what it reads).
func (f PixelFormat) LandingOffset(n int) int { return 2*n - f.FrameBytes(n) }

// Widen turns the frame of n pixels that landed at LandingOffset of block
// (n uint16 samples) into n uint16 samples, in place, front to back: each
// output sample is written at or before bytes already read, so no scratch
// memory is needed. 16-bit formats are left as they are.
func (f PixelFormat) Widen(block []uint16) {
	n := len(block)
	if n == 0 {
		return
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(block))), 2*n)
	src := raw[f.LandingOffset(n):]
	switch f {
	case Mono8:
		for i := range n {
			block[i] = uint16(src[i])
		}
	case Mono10p:
		i, k := 0, 0
		for ; i+4 <= n; i, k = i+4, k+5 {
			b0, b1, b2, b3, b4 := uint16(src[k]), uint16(src[k+1]), uint16(src[k+2]), uint16(src[k+3]), uint16(src[k+4])
			block[i] = b0 | (b1&0x03)<<8
			block[i+1] = b1>>2 | (b2&0x0f)<<6
			block[i+2] = b2>>4 | (b3&0x3f)<<4
			block[i+3] = b3>>6 | b4<<2
		}
		if i < n { // a tail of 1-3 pixels: a bit stream
			var acc uint64
			for j := k; j < len(src); j++ {
				acc |= uint64(src[j]) << (8 * (j - k))
			}
			for ; i < n; i++ {
				block[i] = uint16(acc & 0x3ff)
				acc >>= 10
			}
		}
	case Mono12p:
		i, k := 0, 0
		for ; i+2 <= n; i, k = i+2, k+3 {
			b0, b1, b2 := uint16(src[k]), uint16(src[k+1]), uint16(src[k+2])
			block[i] = b0 | (b1&0x0f)<<8
			block[i+1] = b1>>4 | b2<<4
		}
		if i < n {
			block[i] = uint16(src[k]) | (uint16(src[k+1])&0x0f)<<8
		}
	}
}
