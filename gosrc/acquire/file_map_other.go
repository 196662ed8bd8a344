//go:build !unix

package acquire

import (
	"errors"
	"os"
)

var errNoMap = errors.New("mapping files is not supported on this system")

func mapFile(*os.File, int64, int64) ([]byte, error) { return nil, errNoMap }

func unmapFile([]byte) error { return nil }

type fileVersion struct{ size int64 }

func versionOf(f *os.File) (fileVersion, error) {
	st, err := f.Stat()
	if err != nil {
		return fileVersion{}, err
	}
	return fileVersion{size: st.Size()}, nil
}
