package process

import "github.com/vortexgo/vortexgo/kernels"

// octPTX returns the PTX of kernels/oct.cu.
func octPTX() ([]byte, error) { return kernels.PTX("oct") }
