package ops

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// packBits is the reference packing: pixel i's bits-bit value at bits
// [i*bits, (i+1)*bits) of a byte stream, LSB first (GenICam PFNC's Mono10p,
// Mono12p; Mono8 at bits 8), built bit by bit.
func packBits(vals []uint16, bits int) []byte {
	out := make([]byte, PackedBytes(len(vals), bits))
	for i, v := range vals {
		for b := range bits {
			if v>>b&1 != 0 {
				pos := i*bits + b
				out[pos/8] |= 1 << (pos % 8)
			}
		}
	}
	return out
}

func TestUnpackBitsRoundTrips(t *testing.T) {
	s := newStream(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, bits := range []int{8, 10, 12, 14, 16} {
		// counts around the formats' groups (10p packs 4 pixels in 5 bytes, 12p 2 in 3): the tails
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 1023, 4096} {
			vals := make([]uint16, n)
			for i := range vals {
				vals[i] = uint16(rng.UintN(1 << bits))
			}
			vals[0] = uint16(1<<bits - 1) // all ones at the start and end: the masks
			vals[n-1] = uint16(1<<bits - 1)
			packed := packBits(vals, bits)
			src := alloc[uint8](t, len(packed), packed...)
			dst := alloc[uint16](t, n)
			require.NoError(t, UnpackBits(s, dst.Ptr(), src.Ptr(), n, bits, len(packed)))
			require.NoError(t, s.Synchronize())
			require.Equal(t, vals, read[uint16](dst, n), "bits=%d n=%d", bits, n)
		}
	}
}

func TestUnpackBitsKnownBytes(t *testing.T) {
	// GenICam PFNC's own examples of the layouts: Mono12p's 2 pixels in 3
	// bytes (p0 = b0 | (b1 & 0xf) << 8, p1 = b1 >> 4 | b2 << 4) and Mono10p's
	// 4 in 5 (the fifth byte holds p3's high 8 bits).
	s := newStream(t)
	tests := []struct {
		name  string
		bits  int
		bytes []byte
		want  []uint16
	}{
		{"mono12p", 12, []byte{0x21, 0x43, 0x65}, []uint16{0x321, 0x654}},
		{"mono10p", 10, []byte{0xff, 0x03, 0x00, 0xc0, 0xff}, []uint16{0x3ff, 0, 0, 0x3ff}},
		{"mono8", 8, []byte{0, 1, 254, 255}, []uint16{0, 1, 254, 255}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := alloc[uint8](t, len(tc.bytes), tc.bytes...)
			dst := alloc[uint16](t, len(tc.want))
			require.NoError(t, UnpackBits(s, dst.Ptr(), src.Ptr(), len(tc.want), tc.bits, len(tc.bytes)))
			require.NoError(t, s.Synchronize())
			assert.Equal(t, tc.want, read[uint16](dst, len(tc.want)))
		})
	}
}

func TestUnpackBitsRefusesBadArguments(t *testing.T) {
	s := newStream(t)
	src := alloc[uint8](t, 64)
	dst := alloc[uint16](t, 64)
	tests := []struct {
		name              string
		dst, src          uintptr
		n, bits, srcBytes int
		want              string
	}{
		{"bits below 8", dst.Ptr(), src.Ptr(), 4, 7, 64, "bits=7, expected 8 to 16"},
		{"bits above 16", dst.Ptr(), src.Ptr(), 4, 17, 64, "bits=17, expected 8 to 16"},
		{"short source", dst.Ptr(), src.Ptr(), 10, 12, 14, "srcBytes=14, expected at least 15"},
		{"negative count", dst.Ptr(), src.Ptr(), -1, 12, 64, "n=-1"},
		{"null dst", 0, src.Ptr(), 4, 12, 64, "null pointer"},
		{"overlap", src.Ptr() + 8, src.Ptr(), 8, 12, 12, "overlap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := UnpackBits(s, tc.dst, tc.src, tc.n, tc.bits, tc.srcBytes)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	require.NoError(t, UnpackBits(s, dst.Ptr(), src.Ptr(), 0, 12, 0), "nothing to do")
}
