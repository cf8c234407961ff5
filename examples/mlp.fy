# examples/mlp.fy — a two-layer perceptron over flattened 28x28 images, batch 32.
# `make demo` compiles this file, prints the annotated graph, and runs it on the CPU.
graph mlp {
  input %x : f32[32,784] @cpu
  param %fc1.weight : f32[256,784] = randn(seed=1)
  param %fc1.bias : f32[256] = zeros
  param %fc2.weight : f32[10,256] = randn(seed=2)
  param %fc2.bias : f32[10] = zeros
  %h = linear(%x, %fc1.weight, %fc1.bias)
  %a = relu(%h)
  %logits = linear(%a, %fc2.weight, %fc2.bias)
  %probs = softmax(%logits, axis=-1)
  output %probs
}
