package ops

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// PackedBytes is the size of n pixels of bits bits packed LSB first into
// a byte stream (GenICam PFNC's Mono8, Mono10p, Mono12p), rounded up to
// whole bytes.
func PackedBytes(n, bits int) int { return (n*bits + 7) / 8 }

// UnpackBits widens n pixels of bits bits (8 to 16), packed LSB first at
// src (srcBytes long, at least PackedBytes(n, bits)), into n uint16 at
// dst, in stream order: kernels/pixel.cu's unpack_bits_u16 on CUDA, its Go
// twin on the CPU. dst and src must not overlap.
func UnpackBits(s backend.Stream, dst, src uintptr, n, bits, srcBytes int) error {
	const op = "ops.UnpackBits"
	if err := checkCommon(op, s, n, dst, src); err != nil {
		return err
	}
	if bits < 8 || bits > 16 {
		return fmt.Errorf("%s: bits=%d, expected 8 to 16", op, bits)
	}
	if need := PackedBytes(n, bits); srcBytes < need {
		return fmt.Errorf("%s: srcBytes=%d, expected at least %d for %d pixels of %d bits", op, srcBytes, need, n, bits)
	}
	if n == 0 {
		return nil
	}
	end := func(p uintptr, size int) uintptr { return p + uintptr(size) }
	if dst < end(src, srcBytes) && src < end(dst, 2*n) {
		return fmt.Errorf("%s: dst and src overlap, expected separate buffers", op)
	}
	return LaunchByName(s, "unpack_bits_u16", grid1D(n), block1D, dst, src, uint64(n), uint32(bits), uint64(srcBytes))
}

// unpackBitsHost is unpack_bits_u16(unsigned short* dst, const unsigned
// char* src, unsigned long long n, unsigned int bits, unsigned long long
// src_bytes).
func unpackBitsHost(args ...any) error {
	const kernel = "unpack_bits_u16"
	a := newHostArgs(kernel, args, 5)
	dst, src, n := a.ptr(0), a.ptr(1), a.u64(2)
	bits, ok := uint32(0), false
	if a.err == nil {
		bits, ok = args[3].(uint32)
		if !ok {
			a.bad(3, "uint32")
		}
	}
	srcBytes := a.u64(4)
	if a.err != nil {
		return a.err
	}
	out := hostSlice[uint16](dst, n)
	in := hostSlice[uint8](src, srcBytes)
	mask := uint32(1)<<bits - 1
	for i := range out {
		bit := uint64(i) * uint64(bits)
		k := bit >> 3
		v := uint32(in[k])
		if k+1 < srcBytes {
			v |= uint32(in[k+1]) << 8
		}
		if k+2 < srcBytes {
			v |= uint32(in[k+2]) << 16
		}
		out[i] = uint16(v >> (bit & 7) & mask)
	}
	return nil
}

func init() { RegisterHost("unpack_bits_u16", unpackBitsHost) }
