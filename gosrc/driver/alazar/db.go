package alazar

import "fmt"

// The SDK's identifiers for values (AlazarCmd.h) and what vortex knows of
// each board model (its driver's database: alignment, rates, input ranges,
// features), as data.

// boardKinds are the BOARD_TYPE values' model names (AlazarApi.h
// ALAZAR_BOARDTYPES).
var boardKinds = map[uint32]string{
	0: "NONE", 1: "ATS850", 2: "ATS310", 3: "ATS330", 4: "ATS855", 5: "ATS315", 6: "ATS335", 7: "ATS460", 8: "ATS860",
	9: "ATS660", 10: "ATS665", 11: "ATS9462", 12: "ATS9434", 13: "ATS9870", 14: "ATS9350", 15: "ATS9325",
	16: "ATS9440", 17: "ATS9410", 18: "ATS9351", 19: "ATS9310", 20: "ATS9461", 21: "ATS9850", 22: "ATS9625",
	23: "ATG6500", 24: "ATS9626", 25: "ATS9360", 26: "AXI9870", 27: "ATS9370", 28: "ATU7825", 29: "ATS9373",
	30: "ATS9416", 31: "ATS9637", 32: "ATS9120", 33: "ATS9371", 34: "ATS9130", 35: "ATS9352", 36: "ATS9453",
	37: "ATS9146", 38: "ATS9000", 39: "ATST371", 40: "ATS9437", 41: "ATS9618", 42: "ATS9358", 44: "ATS9353",
	45: "ATS9872", 46: "ATS9470", 47: "ATS9628", 48: "ATS9874", 49: "ATS9473", 50: "ATS9280", 51: "ATS4001",
	52: "ATS9182", 53: "ATS9364", 54: "ATS9442", 55: "ATS9376", 56: "ATS9380", 57: "ATS9428",
}

// sampleRateIDs are the SAMPLE_RATE_* identifiers by samples per second.
var sampleRateIDs = map[int]uint32{
	1e3: 0x1, 2e3: 0x2, 5e3: 0x4, 10e3: 0x8, 20e3: 0xA, 50e3: 0xC, 100e3: 0xE, 200e3: 0x10, 500e3: 0x12,
	1e6: 0x14, 2e6: 0x18, 5e6: 0x1A, 10e6: 0x1C, 20e6: 0x1E, 25e6: 0x21, 50e6: 0x22, 100e6: 0x24, 125e6: 0x25,
	160e6: 0x26, 180e6: 0x27, 200e6: 0x28, 250e6: 0x2B, 350e6: 0x94, 370e6: 0x96, 400e6: 0x2D, 500e6: 0x30,
	800e6: 0x32, 1000e6: 0x35, 1200e6: 0x37, 1500e6: 0x3A, 1600e6: 0x3B, 1800e6: 0x3D, 2000e6: 0x3F,
	2400e6: 0x6A, 3000e6: 0x75, 3600e6: 0x7B, 4000e6: 0x80, 5000e6: 0xA0, 10000e6: 0xB0,
}

// impedanceIDs are the IMPEDANCE_* identifiers by ohms.
var impedanceIDs = map[int]uint32{1000000: 0x1, 50: 0x2, 75: 0x4, 300: 0x8}

// inputRangeIDs are the INPUT_RANGE_PM_* identifiers by millivolts.
var inputRangeIDs = map[int]uint32{
	20: 0x1, 40: 0x2, 50: 0x3, 80: 0x4, 100: 0x5, 200: 0x6, 400: 0x7, 500: 0x8, 800: 0x9, 1000: 0xA, 2000: 0xB,
	4000: 0xC, 5000: 0xD, 8000: 0xE, 10000: 0xF, 20000: 0x10, 40000: 0x11, 16000: 0x12, 1250: 0x21, 2500: 0x25,
	125: 0x28, 250: 0x30,
}

// triggerRangeIDs are the ETR_* identifiers by millivolts (0: TTL).
var triggerRangeIDs = map[int]uint32{5000: 0x0, 1000: 0x1, 2500: 0x3, 0: 0x2}

// lookupID returns m[v] or vortex's error for an unsupported value.
func lookupID(m map[int]uint32, v int, what string) (uint32, error) {
	id, ok := m[v]
	if !ok {
		return 0, fmt.Errorf("%q is not a supported value for %s", fmt.Sprint(v), what)
	}
	return id, nil
}

// alignment is a model's record size rules: the least record, and the
// multiple records (and pre-trigger samples) must be of.
type alignment struct{ minRecord, pretrigger, resolution uint32 }

var alignments = map[string]alignment{
	"ATS310": {256, 4, 16}, "ATS330": {256, 4, 16}, "ATS460": {128, 16, 16}, "ATS660": {128, 16, 16},
	"ATS850": {256, 4, 16}, "ATS860": {256, 32, 32}, "ATS9350": {256, 32, 32}, "ATS9351": {256, 32, 32},
	"ATS9120": {256, 32, 32}, "ATS9130": {256, 32, 32}, "ATS9146": {256, 32, 32}, "ATS9182": {512, 64, 64},
	"ATS9360": {256, 128, 128}, "ATS9370": {256, 128, 128}, "ATS9371": {256, 128, 128}, "ATS9373": {256, 128, 128},
	"ATS9416": {256, 128, 128}, "ATS9440": {256, 32, 32}, "ATS9462": {256, 32, 32}, "ATS9625": {256, 32, 32},
	"ATS9626": {256, 32, 32}, "ATS9870": {256, 64, 64}, "AXI9870": {256, 64, 64}, "ATS9352": {256, 32, 32},
	"ATS9353": {256, 32, 32}, "ATS9872": {256, 64, 64}, "ATS9874": {256, 64, 64}, "ATS9628": {256, 32, 32},
	"ATS9428": {256, 128, 128}, "ATS9364": {256, 128, 128},
}

// defaultAlignment is the most conservative, for a model not listed.
var defaultAlignment = alignment{512, 128, 128}

// rates builds a rate list from the standard decades up to (and with)
// the extra rates given.
func rates(from int, extra ...int) []int {
	std := []int{1e3, 2e3, 5e3, 10e3, 20e3, 50e3, 100e3, 200e3, 500e3, 1e6, 2e6, 5e6, 10e6, 20e6}
	var out []int
	for _, r := range std {
		if r >= from {
			out = append(out, r)
		}
	}
	return append(out, extra...)
}

var supportedRates = map[string][]int{
	"ATS310": rates(10e3), "ATS9120": rates(10e3),
	"ATS330":  {10e3, 20e3, 50e3, 100e3, 200e3, 500e3, 1e6, 2e6, 5e6, 10e6, 25e6, 50e6},
	"ATS9130": {10e3, 20e3, 50e3, 100e3, 200e3, 500e3, 1e6, 2e6, 5e6, 10e6, 25e6, 50e6},
	"ATS460":  rates(1e3, 50e6, 100e6, 125e6), "ATS660": rates(1e3, 50e6, 100e6, 125e6),
	"ATS9146": rates(1e3, 50e6, 100e6, 125e6), "ATS9440": rates(1e3, 50e6, 100e6, 125e6),
	"ATS9350": rates(1e3, 50e6, 100e6, 125e6, 250e6, 500e6), "ATS9351": rates(1e3, 50e6, 100e6, 125e6, 250e6, 500e6),
	"ATS9352": rates(1e3, 50e6, 100e6, 125e6, 250e6, 500e6), "ATS9353": rates(1e3, 50e6, 100e6, 125e6, 250e6, 500e6),
	"ATS9360": rates(1e3, 50e6, 100e6, 200e6, 500e6, 800e6, 1000e6, 1200e6, 1500e6, 1800e6),
	"ATS9371": rates(1e3, 50e6, 100e6, 200e6, 500e6, 800e6, 1000e6),
	"ATS9364": rates(1e3, 50e6, 100e6, 200e6, 500e6, 800e6, 1000e6),
	"ATS9373": rates(1e3, 50e6, 100e6, 200e6, 500e6, 800e6, 1000e6, 1200e6, 1500e6, 2000e6, 2400e6, 3000e6, 3600e6, 4000e6),
	"ATS9416": {1e6, 2e6, 5e6, 10e6, 20e6, 50e6, 100e6},
	"ATS9462": rates(1e3, 50e6, 100e6, 125e6, 160e6, 180e6),
	"ATS9625": rates(1e3, 50e6, 100e6, 125e6, 250e6), "ATS9626": rates(1e3, 50e6, 100e6, 125e6, 250e6),
	"ATS9628": rates(1e3, 50e6, 100e6, 125e6, 250e6), "ATS9428": rates(1e3, 50e6, 100e6, 125e6, 250e6),
	"ATS9870": rates(1e3, 50e6, 100e6, 250e6, 500e6, 1000e6), "ATS9872": rates(1e3, 50e6, 100e6, 250e6, 500e6, 1000e6),
	"ATS9874": rates(1e3, 50e6, 100e6, 250e6, 500e6, 1000e6),
}

// InputCombination is an impedance and input range a board supports
// (vortex's info_t::input_combination_t).
type InputCombination struct {
	ImpedanceOhms, InputRangeMillivolts int
}

func combos(ohms int, mv ...int) []InputCombination {
	out := make([]InputCombination, len(mv))
	for i, v := range mv {
		out[i] = InputCombination{ohms, v}
	}
	return out
}

var inputCombinations = map[string][]InputCombination{
	"ATS9350": combos(50, 40, 100, 200, 400, 1000, 2000, 4000), "ATS9870": combos(50, 40, 100, 200, 400, 1000, 2000, 4000),
	"ATS9352": combos(50, 100, 200, 400, 1000, 2000, 4000), "ATS9440": combos(50, 100, 200, 400, 1000, 2000, 4000),
	"ATS9351": combos(50, 400), "ATS9353": combos(50, 400), "ATS9360": combos(50, 400), "ATS9370": combos(50, 400),
	"ATS9371": combos(50, 400), "ATS9373": combos(50, 400), "ATS9364": combos(50, 400),
	"ATS9625": combos(50, 1250), "ATS9626": combos(50, 1250), "ATS9628": combos(50, 1250), "ATS9428": combos(50, 1250),
	"ATS9416": combos(50, 1000), "ATS9874": combos(50, 500),
	"ATS9462": append(combos(50, 200, 400, 800, 2000, 4000), combos(1000000, 200, 400, 800, 2000, 4000, 8000, 16000)...),
}

// Features are what a model can do beyond the basics (vortex's
// info_t::features_t).
type Features struct {
	// SetExternalClockLevel: AlazarSetExternalClockLevel applies.
	SetExternalClockLevel bool
	// ADCCalibrationSamplingRate, when not 0: an external clock is
	// preceded by the internal clock at this rate, which calibrates the ADC.
	ADCCalibrationSamplingRate int
	// DualEdgeSampling: the board samples on both clock edges (channel A).
	DualEdgeSampling bool
	// SampleSkipping: AlazarConfigureSampleSkipping applies.
	SampleSkipping bool
	// DualPortMemory: detected from the board's options.
	DualPortMemory bool
}

var features = map[string]Features{
	"ATS460": {SetExternalClockLevel: true}, "ATS660": {SetExternalClockLevel: true},
	"ATS860": {SetExternalClockLevel: true}, "ATS9350": {SetExternalClockLevel: true},
	"ATS9351": {SetExternalClockLevel: true}, "ATS9352": {SetExternalClockLevel: true},
	"ATS9353": {SetExternalClockLevel: true}, "ATS9462": {SetExternalClockLevel: true},
	"ATS9625": {SetExternalClockLevel: true}, "ATS9626": {SetExternalClockLevel: true},
	"ATS9870": {SetExternalClockLevel: true}, "ATS9872": {SetExternalClockLevel: true},
	"ATS9874": {SetExternalClockLevel: true},
	"ATS9360": {ADCCalibrationSamplingRate: 50e6, SampleSkipping: true},
	"ATS9364": {ADCCalibrationSamplingRate: 50e6, DualEdgeSampling: true, SampleSkipping: true},
	"ATS9371": {ADCCalibrationSamplingRate: 50e6, DualEdgeSampling: true, SampleSkipping: true},
	"ATS9373": {ADCCalibrationSamplingRate: 50e6, DualEdgeSampling: true, SampleSkipping: true},
	"ATS9440": {SetExternalClockLevel: true, SampleSkipping: true},
}
