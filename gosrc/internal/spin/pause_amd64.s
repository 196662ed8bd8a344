#include "textflag.h"

// func pause(n uint32)
// n PAUSE instructions: a polling loop's way of telling the core it spins,
// so that the hyperthread beside it (often a stage making driver calls)
// keeps its share of the core, as the runtime's own procyield does.
TEXT ·pause(SB), NOSPLIT, $0-4
	MOVL	n+0(FP), AX
again:
	PAUSE
	SUBL	$1, AX
	JNZ	again
	RET
