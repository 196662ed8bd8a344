package dl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		names   []string
		wantErr []string // substrings the error must hold; nil means success
	}{
		{"libc loads", []string{"libc.so.6"}, nil},
		{"first missing then libc", []string{"libvg_missing_a.so", "libc.so.6"}, nil},
		{"all missing keeps every reason", []string{"libvg_missing_a.so", "", "libvg_missing_b.so"},
			[]string{"libvg_missing_a.so", "libvg_missing_b.so"}},
		{"no names", nil, []string{"expected at least one"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lib, err := Open(tc.names...)
			if tc.wantErr == nil {
				require.NoError(t, err)
				require.NotNil(t, lib)
				return
			}
			require.Nil(t, lib)
			var oe *OpenError
			require.ErrorAs(t, err, &oe)
			for _, s := range tc.wantErr {
				require.ErrorContains(t, err, s)
			}
		})
	}
}

func TestSym(t *testing.T) {
	lib, err := Open("libc.so.6")
	require.NoError(t, err)
	require.Equal(t, "libc.so.6", lib.Name())

	p, err := lib.Sym("strlen")
	require.NoError(t, err)
	require.NotNil(t, p)

	_, err = lib.Sym("vg_no_such_symbol")
	require.ErrorContains(t, err, `symbol "vg_no_such_symbol"`)

	var nilLib *Library
	_, err = nilLib.Sym("strlen")
	require.ErrorIs(t, err, ErrNilLibrary)
}
