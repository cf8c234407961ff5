# examples/ops.fy — every op of ir/ops.def at least once, on small shapes: a parser, printer and
# shape-rule smoke test, and a menu of the text format.
graph ops {
  input %x : f32[2,3] @cpu
  input %img : f32[1,2,6,6] @cpu
  input %n : i32[2,3] @cpu
  param %w : f32[4,3] = randn(seed=3)
  param %b : f32[4] = [0.5, -0.5, 1.0, 0.0]
  param %row : f32[3] = [1.0, 2.0, 3.0]
  param %k : f32[2,2,3,3] = randn(seed=4)
  param %scale : f32[2] = ones
  param %shift : f32[2] = zeros
  param %idx : i64[3] = [2, 0, -1]

  # elementwise unary
  %neg = neg(%x)
  %abs = abs(%neg)
  %exp = exp(%abs)
  %log = log(%exp)
  %sqrt = sqrt(%abs)
  %rsqrt = rsqrt(%exp)
  %tanh = tanh(%x)
  %sig = sigmoid(%x)
  %relu = relu(%x)
  %gelu = gelu(%x, approximate="tanh")
  %erf = erf(%x)
  %silu = silu(%x)
  %leaky = leaky_relu(%x, alpha=0.2)
  %iexp : f32[2,3] = exp(%n)  # integers compute in f32

  # elementwise binary with broadcasting, comparisons, where
  %add = add(%x, %row)
  %sub = sub(%add, %relu)
  %mul = mul(%sub, %sig)
  %div : f32[2,3] = div(%n, %n)  # true division
  %pow = pow(%abs, %row)
  %hi = maximum(%x, %tanh)
  %lo = minimum(%x, %tanh)
  %eq = equal(%x, %relu)
  %lt : bool[2,3] = less(%x, %row)
  %gt = greater(%x, %row)
  %sel = where(%lt, %x, %neg)

  # linear algebra, pooling, normalisation
  %wt : f32[3,4] = transpose(%w, perm=[1, 0])
  %mm : f32[2,4] = matmul(%x, %wt)
  %lin : f32[2,4] = linear(%x, %w, %b)
  %conv : f32[1,2,6,6] = conv2d(%img, %k, padding=[1, 1])
  %mp : f32[1,2,3,3] = max_pool2d(%conv, kernel=[2, 2])
  %ap : f32[1,2,3,3] = avg_pool2d(%conv, kernel=[3, 3], stride=[2, 2], padding=[1, 1], count_include_pad=false)
  %gap : f32[1,2,1,1] = global_avg_pool(%mp)
  %bn = batch_norm(%img, %scale, %shift, %shift, %scale, eps=0.001)
  %ln = layer_norm(%x, %row, %row)

  # reductions
  %sum : f32[3] = sum(%x, axes=[0])
  %isum : i64[] = sum(%n)
  %mean : f32[2,1] = mean(%x, axes=[-1], keepdims=true)
  %max : f32[2] = max(%x, axes=[1])
  %sm = softmax(%x, axis=0)
  %lsm = log_softmax(%x)

  # data movement
  %rs : f32[3,2] = reshape(%x, shape=[3, -1])
  %tr : f32[3,2] = transpose(%x)
  %cat : f32[2,9] = concat(%x, %relu, %neg, axis=1)
  %sl : f32[2,2] = slice(%x, starts=[0], ends=[2], axes=[1])
  %rev : f32[2,3] = slice(%x, starts=[-1], ends=[-4], axes=[1], steps=[-1])
  %g : f32[2,3] = gather(%x, %idx, axis=1)
  %us : f32[2,1,3] = unsqueeze(%x, axes=[1])
  %sq : f32[2,3] = squeeze(%us, axes=[1])
  %fl : f32[6] = flatten(%x)
  %ex : f32[4,2,3] = expand(%x, shape=[4, 2, 3])

  # types, placement, sources
  %h : f16[2,3] = cast(%x, to=f16)
  %hm : f16[2,3] @f32 = mul(%h, %h)  # a compute-dtype pin
  %moved : f32[2,3] @cpu:1 = transfer(%x, to=cpu:1)
  %c : f32[2,3] = constant(value=f32[2,3]{1.0, 2.0, 3.0, 4.0, 5.0, -6.5})
  %mask = constant(value=bool[3]{true, false, true})
  %id = identity(%c)
  %pick = where(%mask, %id, %sel)

  output %pick, %mm, %lin, %ap, %gap, %bn, %ln
  output %sum, %isum, %mean, %max, %sm, %lsm, %log, %sqrt, %rsqrt, %gelu, %erf, %silu, %leaky
  output %iexp, %mul, %div, %pow, %hi, %lo, %eq, %gt, %rs, %tr, %cat, %sl, %rev, %g, %sq
  output %fl, %ex, %hm
  output %moved @cpu:1
}
