package backend

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeRecord(t *testing.T) {
	type cfg struct {
		Size  int
		Level float32
	}
	tests := []struct {
		name, record string
		want         cfg
		errText      string
	}{
		{"fields", `{"Size": 3, "Level": 1.5}`, cfg{3, 1.5}, ""},
		{"missing keys keep zero", `{}`, cfg{}, ""},
		{"unknown key", `{"Sise": 3}`, cfg{}, `Sise`},
		{"wrong type", `{"Size": "3"}`, cfg{}, "Size"},
		{"not JSON", `Size=3`, cfg{}, "cfg: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got cfg
			err := DecodeRecord("cfg", tc.record, &got)
			if tc.errText != "" {
				require.ErrorIs(t, err, ErrInvalid)
				require.ErrorContains(t, err, tc.errText)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
