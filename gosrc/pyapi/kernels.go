package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

func parseDType(name string) (backend.DType, error) {
	dt, err := backend.ParseDType(name)
	if err != nil {
		return 0, badArg("%v", err)
	}
	return dt, nil
}

// Fill sets n elements of dtype at dst to value, in stream order.
func Fill(s *Stream, dst, n int, dtype string, value float64) error {
	dt, err := parseDType(dtype)
	if err != nil {
		return tag(err)
	}
	if s == nil {
		return tag(badArg("stream=None, expected a Stream"))
	}
	return tag(ops.Fill(s.s, uintptr(dst), n, dt, value))
}

// ScaleOffset computes dst = src*scale + offset over n elements of dtype.
func ScaleOffset(s *Stream, dst, src, n int, dtype string, scale, offset float64) error {
	dt, err := parseDType(dtype)
	if err != nil {
		return tag(err)
	}
	if s == nil {
		return tag(badArg("stream=None, expected a Stream"))
	}
	return tag(ops.ScaleOffset(s.s, uintptr(dst), uintptr(src), n, dt, scale, offset))
}

// Cast converts n elements from srcType at src to dstType at dst.
func Cast(s *Stream, dst int, dstType string, src int, srcType string, n int) error {
	dd, err := parseDType(dstType)
	if err != nil {
		return tag(err)
	}
	sd, err := parseDType(srcType)
	if err != nil {
		return tag(err)
	}
	if s == nil {
		return tag(badArg("stream=None, expected a Stream"))
	}
	return tag(ops.Cast(s.s, uintptr(dst), dd, uintptr(src), sd, n))
}
