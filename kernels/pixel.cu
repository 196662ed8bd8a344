// pixel.cu: camera pixel formats widened to uint16 on the device.
//
// A GenICam line-scan camera sends Mono8, Mono10p or Mono12p frames: pixels
// of 8, 10 or 12 bits packed LSB first into a byte stream (GenICam PFNC:
// pixel i occupies bits [i*b, (i+1)*b) of the stream, bit 0 of a byte
// first). The engine uploads the packed bytes (12p: 3/4 of the uint16
// bytes over PCIe) and this kernel widens them into the block's uint16 raw
// spectra, one thread per pixel, so the host never touches the pixels.
// gosrc/ops has its Go twin for the CPU backend (unpackBitsHost); keep the
// two in step. dst and src must not overlap.

extern "C" __global__ void unpack_bits_u16(unsigned short* __restrict__ dst, const unsigned char* __restrict__ src,
                                           unsigned long long n, unsigned int bits, unsigned long long src_bytes) {
	const unsigned int mask = (1u << bits) - 1u;
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)gridDim.x * blockDim.x) {
		unsigned long long bit = i * bits;
		unsigned long long k = bit >> 3;
		unsigned int shift = (unsigned int)(bit & 7);
		// a pixel of at most 16 bits spans at most 3 bytes; never read past the frame
		unsigned int v = src[k];
		if (k + 1 < src_bytes) v |= (unsigned int)src[k + 1] << 8;
		if (k + 2 < src_bytes) v |= (unsigned int)src[k + 2] << 16;
		dst[i] = (unsigned short)((v >> shift) & mask);
	}
}
