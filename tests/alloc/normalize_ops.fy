# Every op of backends/cpu/normalize.cpp on shapes large enough that the pool splits the work
# (their grain is 1 << 15 elements): batch_norm over planes and over rows, layer_norm with and
# without weight and bias (f32 and f16), softmax and log_softmax on the innermost axis (rows) and
# on a middle one (column blocks), and sum/mean/max over the outputs and over pieces of the
# reduced rows (tests/alloc).
graph normalize_ops {
  input %x : f32[2,16,64,64] @cpu
  input %t : f32[512,128] @cpu
  input %n : i32[512,128] @cpu
  param %ones : f32[16] = ones
  param %zeros : f32[16] = zeros
  param %w : f32[128] = randn(seed=1)
  param %b : f32[128] = randn(seed=2)
  param %var : f32[128] = ones

  # batch_norm: 32 planes of 64x64, then 512 rows of 128 channels
  %bn = batch_norm(%x, %ones, %zeros, %zeros, %ones, eps=0.001)
  %bnrows = batch_norm(%t, %w, %b, %b, %var)

  # layer_norm: rows of 128 with weight and bias; rows of 64x64 without; f16 with its own params
  %ln = layer_norm(%t, %w, %b)
  %ln2 = layer_norm(%x, axis=2)
  %h : f16[512,128] = cast(%t, to=f16)
  %w16 : f16[128] = cast(%w, to=f16)
  %b16 : f16[128] = cast(%b, to=f16)
  %lnh = layer_norm(%h, %w16, %b16)

  # softmax, log_softmax: innermost axis (rows) and axis 1 of [2,16,4096] (column blocks)
  %sm = softmax(%t)
  %smc = softmax(%x, axis=1)
  %lsm = log_softmax(%t, axis=-1)
  %lsmc = log_softmax(%x, axis=1)

  # reductions over the outputs (enough of them) and over pieces of the rows (too few)
  %all : f32[] = sum(%x)
  %s1 : f32[2,1,64,64] = sum(%x, axes=[1], keepdims=true)
  %slast : f32[2,16,64] = sum(%x, axes=[-1])
  %isum : i64[] = sum(%n)
  %icols : i64[128] = sum(%n, axes=[0])
  %m23 : f32[2,16] = mean(%x, axes=[2, 3])
  %m02 : f32[1,16,1,64] = mean(%x, axes=[0, 2], keepdims=true)
  %mall : f32[] = mean(%t)
  %mx0 : f32[128] = max(%t, axes=[0])
  %mx13 : f32[2,1,64,1] = max(%x, axes=[1, 3], keepdims=true)
  %imax : i32[512] = max(%n, axes=[1])
  %iall : i32[] = max(%n)

  output %bn, %bnrows, %ln, %ln2, %lnh, %sm, %smc, %lsm, %lsmc
  output %all, %s1, %slast, %isum, %icols, %m23, %m02, %mall, %mx0, %mx13, %imax, %iall
}
