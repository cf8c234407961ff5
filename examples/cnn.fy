# examples/cnn.fy — a small image classifier: two conv / batch-norm / relu blocks, pooling, a
# linear head and softmax; batch 8 of 3x32x32 images, 10 classes.
graph cnn {
  input %image : f32[8,3,32,32] @cpu
  param %conv1.weight : f32[16,3,3,3] = randn(seed=11)
  param %conv1.bias : f32[16] = zeros
  param %bn1.scale : f32[16] = ones
  param %bn1.bias : f32[16] = zeros
  param %bn1.mean : f32[16] = zeros
  param %bn1.var : f32[16] = ones
  param %conv2.weight : f32[32,16,3,3] = randn(seed=12)
  param %bn2.scale : f32[32] = ones
  param %bn2.bias : f32[32] = zeros
  param %bn2.mean : f32[32] = zeros
  param %bn2.var : f32[32] = ones
  param %fc.weight : f32[10,32] = randn(seed=13)
  param %fc.bias : f32[10] = zeros

  # block 1: 32x32 -> 16x16
  %c1 : f32[8,16,32,32] = conv2d(%image, %conv1.weight, %conv1.bias, padding=[1, 1])
  %b1 = batch_norm(%c1, %bn1.scale, %bn1.bias, %bn1.mean, %bn1.var)
  %r1 = relu(%b1)
  %p1 : f32[8,16,16,16] = max_pool2d(%r1, kernel=[2, 2])

  # block 2: a strided convolution, 16x16 -> 8x8
  %c2 : f32[8,32,8,8] = conv2d(%p1, %conv2.weight, stride=[2, 2], padding=[1, 1])
  %b2 = batch_norm(%c2, %bn2.scale, %bn2.bias, %bn2.mean, %bn2.var, eps=0.001)
  %r2 = relu(%b2)

  # head
  %g : f32[8,32,1,1] = global_avg_pool(%r2)
  %f : f32[8,32] = flatten(%g, start=1)
  %logits : f32[8,10] = linear(%f, %fc.weight, %fc.bias)
  %probs : f32[8,10] = softmax(%logits, axis=1)
  output %probs
}
