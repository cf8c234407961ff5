# The pooling and movement ops on tensors large enough for their kernels to split the work over
# the pool (tests/alloc/pool_movement_alloc_test.cpp): windows with padding, stride and
# ceil_mode; rank-4 transposes; concats on inner and outer axes; slices with negative steps;
# gathers by i32 and i64 indices held in params, so that they are in range.
graph pool_movement {
  input %x : f32[4,32,40,40] @cpu
  input %h : f16[4,32,40,40] @cpu
  input %y : f32[4,32,40,8] @cpu
  input %z : f32[2,32,40,40] @cpu
  input %row : f32[1,32,1,40] @cpu
  input %wide : f32[4,20000] @cpu
  param %i64 : i64[6] = [3, 0, -1, 2, 1, -4]
  param %i32 : i32[5] = [39, -40, 0, 7, 20]
  param %pick : i32[3] = [1, -1, 0]

  # pooling, f32 and f16 (the f16 rows converted to f32)
  %mp = max_pool2d(%x, kernel=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=true)
  %mph = max_pool2d(%h, kernel=[2, 3], stride=[1, 2], padding=[0, 1, 1, 1], dilation=[2, 1])
  %ap = avg_pool2d(%x, kernel=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=true, count_include_pad=false)
  %aph = avg_pool2d(%h, kernel=[2, 2], padding=[1, 0, 1, 1], count_include_pad=true)
  %gap = global_avg_pool(%x)
  %gaph = global_avg_pool(%h)

  # transposes of rank 4: moving the last dim (tiles), keeping it (rows), reversing
  %nhwc = transpose(%x, perm=[0, 2, 3, 1])
  %hw = transpose(%x, perm=[0, 1, 3, 2])
  %cn = transpose(%x, perm=[1, 0, 2, 3])
  %rev = transpose(%x)

  # concats of 3 operands on the innermost, a middle and the outermost axis
  %cw = concat(%x, %y, %x, axis=-1)
  %cc = concat(%x, %x, %x, axis=1)
  %cb = concat(%x, %z, %x, %z, axis=0)

  # slices with negative steps on several axes
  %s1 = slice(%x, starts=[-1, 0, 39], ends=[-5, 32, -41], axes=[0, 1, 3], steps=[-1, 2, -3])
  %s2 = slice(%x, starts=[2, 30, 5], ends=[40, 0, 35], axes=[2, 1, -1], steps=[3, -2, 1])

  # gathers: whole images by i64, columns by i32, long rows (cut into pieces) by i32
  %g64 = gather(%x, %i64, axis=0)
  %g32 = gather(%x, %i32, axis=3)
  %gw = gather(%wide, %pick, axis=0)

  # expand: new leading dims, repeated dims of 1
  %e = expand(%row, shape=[4, 32, 40, 40])
  %e5 = expand(%row, shape=[2, 1, 32, 40, 40])

  output %mp, %mph, %ap, %aph, %gap, %gaph, %nhwc, %hw, %cn, %rev, %cw, %cc, %cb
  output %s1, %s2, %g64, %g32, %gw, %e, %e5
}
