// Package hadamard implements the 16-point random Hadamard transform (RHT)
// that NVFP4 applies to the columnwise operand of inputs and gradients, in
// an exact float32 evaluation order that a CUDA kernel can reproduce bit for
// bit.
//
// The transform of a run x of 16 elements is y = (H16 · diag(s) / 4) · x,
// where H16 is the Sylvester Hadamard matrix, H[i][j] = (-1)^popcount(i&j),
// and s is a ±1 sign vector given as a 16-bit mask (bit j set means s_j =
// -1; TransformerEngine's hard-coded vector is TESignMask). Evaluation
// order, the contract between backends (decided here; the contract page
// does not fix it):
//
//	acc := float32(+0)
//	for j := 0; j < 16; j++ { acc += ±x[j] }   // sign H[i][j]*s_j, float32 add, RNE
//	y[i] = acc * 0.25                          // float32 multiply, RNE
//
// Each term is exact (a sign flip), so only the 16 additions and the final
// multiply round. A butterfly (fast Walsh-Hadamard) evaluation rounds
// differently and must not be used where bytes are compared.
package hadamard
