# Small GEMMs that the CPU target lowers to its small-GEMM kernel (tests/alloc).
graph small {
  input %x : f32[4,4]
  param %w : f32[4,4] = randn(seed=1)
  param %v : f32[8,4] = randn(seed=2)
  param %b : f32[8] = randn(seed=3)
  %h = matmul(%x, %w)
  %y = linear(%h, %v, %b)
  output %y
}
